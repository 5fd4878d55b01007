"""Issue 31, item 8: a script that floods the user with approval dialogs (32 threads each
calling terminal()) can be denied whole, with one answer: "deny all of this script".

That answer denies the request shown, every request of the same run waiting behind it, and
refuses the run's later requests without a dialog (each result says so); the next run asks
again. The audit log keeps a request and a decision line for every one of them.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from hermes_tui.runtime.approvals import ApprovalDecision, ApprovalRequest, audit_path
from hermes_tui.tui.screens.approval import ApprovalScreen

from conftest import strict_config
from helpers.pilot import dialog_ready, make_app, SIZE, submit, wait_until

FLOOD = """
import threading
from hermes_tools import terminal
results = [None] * 32
def call(i):
    results[i] = terminal(f"echo flood-{i}")
threads = [threading.Thread(target=call, args=(i,)) for i in range(32)]
for t in threads: t.start()
for t in threads: t.join()
later = terminal("echo later")
blocked = [r for r in results if r.get("status") == "blocked"]
print("blocked", len(blocked), "of", len(results))
print("ran", sum("flood-" in (r.get("output") or "") for r in results))
print("first:", blocked[0]["error"] if blocked else None)
print("later:", later.get("status"), later.get("error"))
"""


def audit(home: Path) -> list[dict]:
    return [json.loads(line) for line in audit_path(home).read_text().splitlines()]


async def test_deny_all_of_this_script_in_the_dialog_ends_a_flood_of_requests(
        hermes_home: Path, tmp_path: Path, monkeypatch) -> None:
    shown: list[str] = []
    mount = ApprovalScreen.on_mount

    def counted(screen: ApprovalScreen) -> None:
        shown.append(screen.request.text)
        mount(screen)

    monkeypatch.setattr(ApprovalScreen, "on_mount", counted)
    app = make_app(hermes_home, tmp_path, "approvals:\n  timeout: 120\n")
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, app, FLOOD)
        await wait_until(pilot, lambda: dialog_ready(app))
        # The flood is queued behind the first dialog ("request 1 of N").
        await wait_until(pilot, lambda: dialog_ready(app) and app.screen.total >= 8)
        dialog = app.screen
        assert dialog.query_one("#deny_run").label.plain == "5 Deny all"
        started = time.monotonic()
        await pilot.press("x")
        log = app.query_one("#output-log")
        await wait_until(pilot, lambda: any(line.startswith("later:") for line in log.lines), timeout=30)
        took = time.monotonic() - started
        output = "\n".join(log.lines)
        assert not isinstance(app.screen, ApprovalScreen)
        assert len(shown) <= 2, shown  # the one answered (and at most one that opened as it closed)
        assert "blocked 32 of 32" in output and "ran 0" in output, output
        assert "with every other request of this script" in output or "with every request of this script" in output
        later = next(line for line in output.splitlines() if line.startswith("later:"))
        assert "blocked" in later and "refused without asking until the run ends" in later, later
        assert took < 30  # no dialog waited out its 120 s
        # The next run is another script: it asks again.
        shown.clear()
        await submit(pilot, app, "from hermes_tools import terminal\nprint('next:', terminal('echo again')['output'])")
        await wait_until(pilot, lambda: dialog_ready(app))
        assert app.screen.request.text == "echo again"
        await pilot.press("1")
        await wait_until(pilot, lambda: any(line.startswith("next: again") for line in log.lines))
    entries = audit(hermes_home)
    asked = [e for e in entries if e["event"] == "request" and e["text"].startswith("echo flood-")]
    decided = {e["id"]: e for e in entries if e["event"] == "decision"}
    assert len(asked) == 32  # every request is in the log ...
    assert all(decided[e["id"]]["decision"] == "deny" and decided[e["id"]].get("scope") == "run" for e in asked)
    later = next(e for e in entries if e["event"] == "request" and e["text"] == "echo later")
    assert decided[later["id"]]["decision"] == "deny" and "refused without asking" in decided[later["id"]]["why"]


async def test_the_gate_withdraws_the_run_s_waiting_questions_for_any_front_end(hermes_home: Path,
                                                                               tmp_path: Path) -> None:
    """A front end that asks one question at a time (the TTY prompt): the gate itself withdraws
    the run's other questions and refuses its later ones; another run is asked as usual."""
    from hermes_tui.runtime import Runtime

    asked: list[ApprovalRequest] = []
    withdrawn: list[str] = []
    lock = asyncio.Lock()

    async def one_at_a_time(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        try:
            async with lock:
                await asyncio.sleep(0.3)  # the others queue up meanwhile
                if request.text.startswith("echo flood-"):
                    return ApprovalDecision(choice="deny", whole_run=True, reason="stop this")
                return ApprovalDecision(choice="once")
        except asyncio.CancelledError:
            withdrawn.append(request.text)
            raise

    rt = await Runtime(strict_config("approvals:\n  timeout: 120\n"), home=hermes_home,
                       approver=one_at_a_time).start()
    try:
        started = time.monotonic()
        result = await rt.execute_code(FLOOD, session="flood", cwd=tmp_path)
        took = time.monotonic() - started
        again = await rt.execute_code("from hermes_tools import terminal\nprint(terminal('echo again')['output'])",
                                      session="flood", cwd=tmp_path)
    finally:
        await rt.aclose()
    assert "blocked 32 of 32" in result.output and "ran 0" in result.output, result.output
    assert "stop this" in result.output
    assert "later: blocked" in result.output and "refused without asking" in result.output
    answered = [r for r in asked if r.text.startswith("echo flood-") and r.text not in withdrawn]
    assert len(answered) == 1, [r.text for r in answered]  # one answer for the whole run
    assert took < 30
    assert again.output.strip() == "again"
