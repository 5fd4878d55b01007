"""Approval gate behaviour the policy tests left unchecked (found by mutation testing):
the dict a blocked terminal() returns, the audit log refusing a symlink, the timeout a fresh
gate applies, a restored request's once-answer, and the `why` of an unflagged command."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from hermes_tui.runtime import Runtime
from hermes_tui.runtime.approvals import ApprovalDecision, ApprovalGate, ApprovalRequest, audit_path

from conftest import Approver, make_config, strict_config


def audit_entries(home: Path) -> list[dict]:
    return [json.loads(line) for line in audit_path(home).read_text().splitlines()]


async def test_a_denied_terminal_call_returns_the_blocked_result_to_the_script(hermes_home: Path,
                                                                               tmp_path: Path) -> None:
    rt = await Runtime(strict_config(), home=hermes_home, approver=Approver("deny")).start()
    try:
        result = await rt.execute_code(
            "import json\nfrom hermes_tools import terminal\nprint(json.dumps(terminal('echo hi')))",
            session="s", cwd=tmp_path)
    finally:
        await rt.aclose()
    assert json.loads(result.output) == {"output": "", "exit_code": -1, "status": "blocked",
                                         "error": "BLOCKED: denied by the user"}


async def test_a_symlinked_audit_log_is_refused_with_a_clear_error(hermes_home: Path, tmp_path: Path) -> None:
    target = tmp_path / "bashrc"
    target.write_text("# mine\n")
    log_path = audit_path(hermes_home)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.symlink_to(target)
    approver = Approver("once")
    gate = ApprovalGate(approver, strict_config(), hermes_home)
    await gate.load_rules()
    refusal = await gate.check_terminal("echo hi", cwd=str(tmp_path), session="s", kernel=None, exec_id=None)
    assert refusal == f"the approvals log cannot be written: it is a symbolic link ({log_path})"
    assert approver.asked == [] and target.read_text() == "# mine\n"


async def test_a_new_gate_applies_the_configured_timeout(hermes_home: Path, tmp_path: Path) -> None:
    async def never(request: ApprovalRequest) -> ApprovalDecision:
        await asyncio.sleep(3600)
        raise AssertionError

    seen: list[ApprovalRequest] = []

    async def recording(request: ApprovalRequest) -> ApprovalDecision:
        seen.append(request)
        return await never(request)

    # No load_rules(): the timeout of the config it was built from applies at once.
    gate = ApprovalGate(recording, strict_config("approvals:\n  timeout: 0.5\n"), hermes_home)
    started = time.time()
    refusal = await gate.check_terminal("echo hi", cwd=str(tmp_path), session="s", kernel=None, exec_id=None)
    assert refusal == "no answer within 0.5s (approvals.timeout); denied"
    assert time.time() - started < 3
    assert len(seen) == 1 and seen[0].deadline - seen[0].created_at < 1.5


async def test_a_restored_request_is_asked_once_and_its_rerun_passes_once(hermes_home: Path, tmp_path: Path) -> None:
    approver = Approver("once")
    gate = ApprovalGate(approver, strict_config(), hermes_home)
    await gate.load_rules()
    pending = ApprovalRequest(kind="terminal", text="echo restored", cwd=str(tmp_path), session="s",
                              reasons=["why it asked"], deadline=time.time() - 5, session_rule="echo restored")
    assert await gate.ask_restored(pending) is None
    assert len(approver.asked) == 1
    assert approver.asked[0].reasons == ["why it asked", "asked again: the app stopped while this waited; if "
                                         "allowed, its tool call runs again from the start"]
    assert approver.asked[0].deadline > time.time()
    check = dict(cwd=str(tmp_path), session="s", kernel=None, exec_id=None)
    # the re-run of its tool call is not asked twice ...
    assert await gate.check_terminal("echo restored", **check) is None
    assert len(approver.asked) == 1
    assert audit_entries(hermes_home)[-1]["why"] == "approved after a restart"
    # ... but only once: the next identical call asks again
    assert await gate.check_terminal("echo restored", **check) is None
    assert len(approver.asked) == 2
    # another session has no once-answer
    await gate.ask_restored(pending)
    assert await gate.check_terminal("echo restored", **{**check, "session": "other"}) is None
    assert len(approver.asked) == 4


async def test_an_unflagged_command_in_manual_mode_is_logged_with_why(hermes_home: Path, tmp_path: Path) -> None:
    approver = Approver("deny")
    gate = ApprovalGate(approver, make_config("approvals:\n  mode: manual\n"), hermes_home)
    await gate.load_rules()
    assert await gate.check_terminal("echo hi", cwd=str(tmp_path), session="s", kernel=None, exec_id=None) is None
    assert approver.asked == []
    [entry] = audit_entries(hermes_home)
    assert (entry["event"], entry["decision"], entry["why"], entry["text"]) == (
        "auto", "allow", "not flagged (approvals.mode manual)", "echo hi")


async def _gate(home: Path, approver, yaml_text: str = "") -> ApprovalGate:
    gate = ApprovalGate(approver, strict_config(yaml_text), home)
    await gate.load_rules()
    return gate


async def test_a_typed_unflagged_command_runs_and_the_log_says_why(hermes_home: Path, tmp_path: Path) -> None:
    approver = Approver("deny")
    gate = await _gate(hermes_home, approver)
    refusal = await gate.check_terminal("echo hi", cwd=str(tmp_path), session="s", kernel=None, exec_id=None,
                                        typed=True)
    assert refusal is None and approver.asked == []
    (entry,) = audit_entries(hermes_home)
    assert (entry["event"], entry["decision"], entry["why"]) == ("auto", "allow",
                                                                  "typed by the user (!cmd), not flagged")


async def test_a_file_request_names_every_file_and_logs_their_content_hashes(hermes_home: Path,
                                                                             tmp_path: Path) -> None:
    from hermes_tui.runtime.approvals import FileChange

    approver = Approver("session")
    gate = await _gate(hermes_home, approver)
    files = [FileChange(path="/p/a.txt", size=1, sha256="aa" * 32), FileChange(path="/p/b.txt", sha256="bb" * 32)]
    refusal = await gate.check_file("patch", files, "diff", ["writes two files"], cwd=str(tmp_path), session="s",
                                    kernel=None, exec_id=None)
    assert refusal is None and approver.asked[0].text == "patch /p/a.txt /p/b.txt"
    again = await gate.check_file("patch", files, "diff", ["writes two files"], cwd=str(tmp_path), session="s",
                                  kernel=None, exec_id=None)
    assert again is None and len(approver.asked) == 1  # the session answer covers the same content
    auto = [e for e in audit_entries(hermes_home) if e["event"] == "auto"]
    assert auto[-1]["sha256"] == ["aa" * 32, "bb" * 32] and auto[-1]["text"] == "patch /p/a.txt /p/b.txt"
    assert (auto[-1]["decision"], auto[-1]["why"]) == ("allow", "allowed for this session")


async def test_in_off_mode_a_file_request_is_allowed_and_logged(hermes_home: Path, tmp_path: Path) -> None:
    from hermes_tui.runtime.approvals import FileChange

    approver = Approver("deny")
    gate = await _gate(hermes_home, approver, 'approvals:\n  mode: "off"\n')
    refusal = await gate.check_file("write_file", [FileChange(path="/p/x")], "d", ["protected"], cwd=str(tmp_path),
                                    session="s", kernel=None, exec_id=None)
    assert refusal is None and approver.asked == []
    (entry,) = audit_entries(hermes_home)
    assert (entry["event"], entry["decision"], entry["why"]) == ("auto", "allow", "approvals.mode is off")


async def test_a_broken_approver_denies(hermes_home: Path, tmp_path: Path) -> None:
    async def broken(request: ApprovalRequest) -> ApprovalDecision:
        raise RuntimeError("the dialog crashed")

    gate = await _gate(hermes_home, broken)
    refusal = await gate.check_terminal("echo hi", cwd=str(tmp_path), session="s", kernel=None, exec_id=None)
    assert refusal == "the approver failed (the dialog crashed); denied"


async def test_the_log_says_where_an_always_rule_went_and_when_it_could_not_go(
        hermes_home: Path, tmp_path: Path, caplog) -> None:
    from hermes_tui.runtime.rules import allowlist_path

    gate = await _gate(hermes_home, Approver("always"))
    assert await gate.check_terminal("make", cwd=str(tmp_path), session="s", kernel=None, exec_id=None) is None
    once_gate = await _gate(hermes_home, Approver("once"))
    assert await once_gate.check_terminal("make test", cwd=str(tmp_path), session="s", kernel=None,
                                          exec_id=None) is None
    decisions = [e for e in audit_entries(hermes_home) if e["event"] == "decision"]
    assert [(d["decision"], d["stored_in"]) for d in decisions] == [
        ("always", str(allowlist_path(hermes_home))), ("once", None)]
    broken = "rules:\n  - exact: 'unclosed\n"
    allowlist_path(hermes_home).write_text(broken)
    gate = await _gate(hermes_home, Approver("always"))
    assert await gate.check_terminal("make all", cwd=str(tmp_path), session="s", kernel=None, exec_id=None) is None
    assert allowlist_path(hermes_home).read_text() == broken
    (lost,) = [e for e in audit_entries(hermes_home) if e["event"] == "rule_not_saved"]
    assert "nothing was changed" in lost["why"]
    assert any('the "always" rule was not saved' in r.getMessage() for r in caplog.records)


async def test_a_typed_command_in_manual_mode_is_logged_as_typed(hermes_home: Path, tmp_path: Path) -> None:
    """Issue 32 trial: the log said 'not flagged (approvals.mode manual)' for a !cmd the person typed."""
    gate = ApprovalGate(Approver("deny"), make_config("approvals:\n  mode: manual\n"), hermes_home)
    await gate.load_rules()
    assert await gate.check_terminal("echo hi", cwd=str(tmp_path), session="s", kernel=None, exec_id=None,
                                     typed=True) is None
    [entry] = audit_entries(hermes_home)
    assert entry["why"] == "typed by the user (!cmd), not flagged"
