"""Headless runs end to end: the real CLI (`run`, `inspect`, `approve`, `deny`, `resume`) in
subprocesses, against the scripted model server on 127.0.0.1 and real kernels."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hermes_tui.storage import sessions as db
from conftest import open_store_db
from fake_models import FakeModelServer

CLI = [sys.executable, "-m", "hermes_tui"]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    folder = tmp_path / "work"  # outside the checkout: python -m would import the checkout first
    folder.mkdir()
    return folder


def configure(home: Path, server: FakeModelServer, extra: str = "") -> None:
    (home / "config.yaml").write_text(f"model:\n  provider: custom\n  default: fake\n  base_url: {server.url}\n"
                                      f"  max_retries: 0\n{extra}")


def cli(workdir: Path, *argv: str, stdin: str | None = "", timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *argv], capture_output=True, text=True, cwd=workdir, timeout=timeout,
                          input=stdin, env=os.environ.copy())


def code_call(code: str) -> dict:
    return {"name": "execute_code", "arguments": {"code": code}}


def events(output: str) -> list[dict]:
    return [json.loads(line) for line in output.splitlines() if line.strip()]


def test_a_run_pauses_before_its_script_then_approve_and_resume_run_it(
        store_backend: str, hermes_home: Path, workdir: Path) -> None:
    script = "open('made.txt', 'w').write('hello')\nprint('wrote it')"
    with FakeModelServer([{"text": "Writing.", "tool_calls": [code_call(script)]}, {"text": "All done."}]) as server:
        configure(hermes_home, server)
        paused = cli(workdir, "run", "--session", "job1", "make the file")
        assert paused.returncode == 3, paused.stdout + paused.stderr
        assert "paused for approval. session=job1" in paused.stdout
        assert "review: hermes-tui inspect job1 --pending" in paused.stdout
        assert not (workdir / "made.txt").exists()  # nothing ran

        pending = json.loads(cli(workdir, "inspect", "job1", "--pending", "--json").stdout)["pending"]
        assert [(p["kind"], p["text"], p["origin"]) for p in pending] == [("script", script, "automation")]
        assert pending[0]["cwd"] == str(workdir) and pending[0]["answer"] is None

        approved = cli(workdir, "approve", "job1", "--all")
        assert approved.returncode == 0 and "approved (once)" in approved.stdout
        resumed = cli(workdir, "resume", "job1", "--json")
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert (workdir / "made.txt").read_text() == "hello"
    end = events(resumed.stdout)[-1]
    assert end["event"] == "end" and end["status"] == "done" and end["resumed"] is True and end["resumes"] == 1
    assert "All done." in "".join(e["delta"] for e in events(resumed.stdout) if e["event"] == "text")
    log = (hermes_home / "tui" / "approvals.jsonl").read_text().splitlines()
    offline = [json.loads(line) for line in log if '"answer_offline"' in line]
    assert offline and offline[0]["decision"] == "once" and "pid" in offline[0]["who"] and "@" in offline[0]["who"]
    listing = cli(workdir, "inspect", "job1")
    assert "[done · resumed 1x] make the file" in listing.stdout


def test_two_commands_one_approved_and_one_left_pending_ends_blocked(
        store_backend: str, hermes_home: Path, workdir: Path) -> None:
    script = ("from hermes_tools import terminal\nprint(terminal('echo first-ok')['output'].strip())\n"
              "r = terminal('echo second-held')\nprint('second:', r.get('status'))\nprint('script end')")
    with FakeModelServer([{"text": "", "tool_calls": [code_call(script)]}, {"text": "Finished."}]) as server:
        configure(hermes_home, server, "approvals:\n  mode: strict\n")
        assert cli(workdir, "run", "--session", "job2", "--pause-on", "approval", "go").returncode == 3
        assert cli(workdir, "approve", "job2", "--all").returncode == 0  # the script
        again = cli(workdir, "resume", "job2")
        assert again.returncode == 3, again.stdout + again.stderr  # its two terminal() calls wait now
        pending = json.loads(cli(workdir, "inspect", "job2", "--pending", "--json").stdout)["pending"]
        assert sorted(p["text"] for p in pending) == ["echo first-ok", "echo second-held"]
        assert all("runs again from its start" in p["on_resume"] for p in pending)
        chosen = cli(workdir, "approve", "job2", "--all", "--except", "second")
        assert "echo first-ok" in chosen.stdout and "second-held" not in chosen.stdout
        done = cli(workdir, "resume", "job2", "--json")
        assert done.returncode == 0, done.stdout + done.stderr
    finished = [e for e in events(done.stdout) if e["event"] == "tool_finished"][-1]["result"]
    assert "first-ok" in finished["output"] and "second: blocked" in finished["output"]
    assert "script end" in finished["output"]
    assert json.loads(cli(workdir, "inspect", "job2", "--pending", "--json").stdout)["pending"] == []


def test_deny_with_a_reason_reaches_the_model_and_nothing_runs(
        store_backend: str, hermes_home: Path, workdir: Path) -> None:
    with FakeModelServer([{"text": "", "tool_calls": [code_call("open('x.txt', 'w').write('x')")]},
                          {"text": "Understood, I will not."}]) as server:
        configure(hermes_home, server)
        assert cli(workdir, "run", "--session", "job3", "try").returncode == 3
        request_id = json.loads(cli(workdir, "inspect", "job3", "--pending", "--json").stdout)["pending"][0]["id"]
        denied = cli(workdir, "deny", "job3", request_id, "--reason", "not on a Friday")
        assert denied.returncode == 0 and "denied" in denied.stdout
        resumed = cli(workdir, "resume", "job3")
        assert resumed.returncode == 0
        sent = server.requests[-1]["messages"]
    assert not (workdir / "x.txt").exists()
    assert any("not on a Friday" in str(m.get("content")) for m in sent if m["role"] == "tool")
    # The denied call is shown with what it was (issue 32: "→ execute_code: " with nothing after).
    assert "→ execute_code: open('x.txt', 'w').write('x')" in resumed.stdout, resumed.stdout


def test_kill_9_mid_turn_then_resume_goes_on_from_the_last_stored_step(
        store_backend: str, hermes_home: Path, workdir: Path) -> None:
    (workdir / "notes.txt").write_text("the answer is 42\n")
    read = {"name": "read_file", "arguments": {"path": str(workdir / "notes.txt")}}
    with FakeModelServer([{"text": "Reading.", "tool_calls": [read]}, {"text": "thinking...", "hang": 60},
                          {"text": "It says 42."}]) as server:
        configure(hermes_home, server)
        process = subprocess.Popen([*CLI, "run", "--session", "job4", "what do the notes say?"], cwd=workdir,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
        try:
            deadline = time.monotonic() + 30
            while len(server.requests) < 2:  # the second model call is hanging: the file was read and stored
                assert time.monotonic() < deadline and process.poll() is None
                time.sleep(0.05)
            time.sleep(0.3)
            os.killpg(process.pid, signal.SIGKILL)
        finally:
            process.wait(10)
        resumed = cli(workdir, "resume", "job4")
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert "It says 42." in resumed.stdout
        sent = server.requests[-1]["messages"]
    results = [m for m in sent if m["role"] == "tool"]
    assert len(results) == 1 and "the answer is 42" in results[0]["content"]  # not read a second time


def test_budget_exit_code_and_refusals_in_one_line(store_backend: str, hermes_home: Path, workdir: Path) -> None:
    usage = {"prompt_tokens": 100_000, "completion_tokens": 1000}
    with FakeModelServer([{"text": "", "tool_calls": [{"name": "read_file", "arguments": {"path": "nope"}}],
                           "usage": usage}] * 3) as server:
        configure(hermes_home, server, "  pricing:\n    input_per_mtok: 2\n    output_per_mtok: 10\n")
        spent = cli(workdir, "run", "--max-cost", "0.30", "--session", "job5", "loop")
        assert spent.returncode == 4, spent.stdout + spent.stderr
        assert "budget reached" in spent.stdout
        assert cli(workdir, "run").returncode == 2
        nothing = cli(workdir, "approve", "job5")
        assert nothing.returncode == 2 and "--all" in nothing.stderr
        unknown = cli(workdir, "approve", "job5", "abc")
        assert unknown.returncode == 2 and "nothing waits" in unknown.stderr
        missing = cli(workdir, "resume", "nosuch")
        assert missing.returncode == 2 and "no session matches" in missing.stderr


def test_run_and_resume_refuse_a_session_open_in_the_app(
        store_backend: str, hermes_home: Path, workdir: Path) -> None:
    import asyncio

    from hermes_tui.agent.inject import InjectServer

    async def deliver(text: str) -> int:
        return 0

    async def scenario() -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
        server = InjectServer(hermes_home, "held", deliver)
        await server.start()
        try:
            run = await asyncio.to_thread(cli, workdir, "run", "--session", "held", "hi")
            resume = await asyncio.to_thread(cli, workdir, "resume", "held")
            return run, resume
        finally:
            await server.aclose()

    with FakeModelServer([]) as model:
        configure(hermes_home, model)
        conn = open_store_db(hermes_home)
        db.create_session(conn, "held", "custom", "fake", str(workdir))
        db.start_turn(conn, "held", "t1", "user", "hello")
        conn.close()
        run, resume = asyncio.run(scenario())
    for refused in (run, resume):
        assert refused.returncode == 2 and "open in a running hermes-tui" in refused.stderr


def test_a_once_answer_serves_one_request_not_a_repeat_of_the_same_call(
        store_backend: str, hermes_home: Path, workdir: Path) -> None:
    script = "open('count.txt', 'a').write('x')"
    same = {"name": "execute_code", "id": "c1", "arguments": {"code": script}}  # the model repeats its call id
    with FakeModelServer([{"text": "", "tool_calls": [same]}, {"text": "", "tool_calls": [same]},
                          {"text": "", "tool_calls": [same]}, {"text": "stopped"}]) as server:
        configure(hermes_home, server)
        assert cli(workdir, "run", "--session", "once1", "go").returncode == 3
        assert cli(workdir, "approve", "once1", "--all").returncode == 0
        again = cli(workdir, "resume", "once1")
        assert again.returncode == 3, again.stdout + again.stderr  # the repeat is a new question
    assert (workdir / "count.txt").read_text() == "x"  # ran once, as approved


def test_identical_commands_each_take_their_own_answer(store_backend: str, hermes_home: Path, workdir: Path) -> None:
    script = ("from hermes_tools import terminal\n"
              "for n in range(3):\n    print(n, terminal('echo same-text >> same.txt').get('status'))")
    with FakeModelServer([{"text": "", "tool_calls": [code_call(script)]}, {"text": "done"}]) as server:
        configure(hermes_home, server, "approvals:\n  mode: strict\n")
        assert cli(workdir, "run", "--session", "same1", "go").returncode == 3
        assert cli(workdir, "approve", "same1", "--all").returncode == 0  # the script
        assert cli(workdir, "resume", "same1").returncode == 3  # its three commands wait
        ids = [p["id"] for p in json.loads(cli(workdir, "inspect", "same1", "--pending", "--json").stdout)["pending"]]
        assert len(ids) == 3
        assert cli(workdir, "approve", "same1", ids[0]).returncode == 0
        assert cli(workdir, "deny", "same1", ids[2], "--reason", "not the third").returncode == 0
        done = cli(workdir, "resume", "same1", "--json")  # the second was left unanswered
        assert done.returncode == 0, done.stdout + done.stderr
    output = [e for e in events(done.stdout) if e["event"] == "tool_finished"][-1]["result"]["output"]
    assert output.splitlines() == ["0 None", "1 blocked", "2 blocked"]
    assert (workdir / "same.txt").read_text() == "same-text\n"


def test_a_second_resume_of_the_same_session_is_refused_while_one_runs(
        store_backend: str, hermes_home: Path, workdir: Path) -> None:
    with FakeModelServer([{"text": "", "tool_calls": [code_call("print(1)")]}, {"text": "slow", "hang": 10}]) as server:
        # hang: the first resume stays in its model call while a second CLI starts (over 3 s on a loaded CI machine)
        configure(hermes_home, server)
        assert cli(workdir, "run", "--session", "lock1", "go").returncode == 3
        assert cli(workdir, "approve", "lock1", "--all").returncode == 0
        first = subprocess.Popen([*CLI, "resume", "lock1"], cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 stdin=subprocess.DEVNULL, text=True)
        try:
            deadline = time.monotonic() + 30
            while len(server.requests) < 2:  # the first resume is in its model call
                assert time.monotonic() < deadline
                time.sleep(0.05)
            second = cli(workdir, "resume", "lock1")
        finally:
            out, err = first.communicate(timeout=60)
    assert second.returncode == 2 and "being run by another" in second.stderr
    assert first.returncode == 0, out + err


def test_a_turn_stopped_by_its_ceiling_resumes_with_a_higher_one(
        store_backend: str, hermes_home: Path, workdir: Path) -> None:
    usage = {"prompt_tokens": 100_000, "completion_tokens": 1000}
    with FakeModelServer([{"text": "", "tool_calls": [{"name": "read_file", "arguments": {"path": "nope"}}],
                           "usage": usage}, {"text": "finished", "usage": usage}]) as server:
        configure(hermes_home, server, "  pricing:\n    input_per_mtok: 2\n    output_per_mtok: 10\n")
        assert cli(workdir, "run", "--max-cost", "0.30", "--session", "ceil1", "go").returncode == 4
        resumed = cli(workdir, "resume", "ceil1", "--max-cost", "5")
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert "finished" in resumed.stdout


def test_the_ceiling_a_run_started_with_holds_on_resume(store_backend: str, hermes_home: Path, workdir: Path) -> None:
    usage = {"prompt_tokens": 100_000, "completion_tokens": 1000}  # $0.21 a call at $2/$10
    loop = [{"text": "", "usage": usage, "tool_calls": [{"name": "read_file", "arguments": {"path": "nope"}}]}] * 6
    with FakeModelServer([{"text": "", "usage": usage, "tool_calls": [code_call("print(1)")]}, *loop]) as server:
        configure(hermes_home, server, "  pricing:\n    input_per_mtok: 2\n    output_per_mtok: 10\n")
        assert cli(workdir, "run", "--max-cost", "0.50", "--session", "keep1", "go").returncode == 3
        assert cli(workdir, "approve", "keep1", "--all").returncode == 0
        resumed = cli(workdir, "resume", "keep1")  # no --max-cost: the stored one holds
        assert resumed.returncode == 4, resumed.stdout + resumed.stderr
    report = json.loads(cli(workdir, "inspect", "keep1", "--json").stdout)
    assert report["cost_usd"] <= 0.50


def test_a_sub_agent_session_is_not_resumed_on_its_own(store_backend: str, hermes_home: Path, workdir: Path) -> None:
    conn = open_store_db(hermes_home)
    db.create_session(conn, "top::child::abc-kid", "custom", "fake", str(workdir))
    db.start_turn(conn, "top::child::abc-kid", "t1", "automation", "a task")
    conn.close()
    refused = cli(workdir, "resume", "top::child::abc-kid")
    assert refused.returncode == 2 and "hermes-tui resume top" in refused.stderr


def test_a_refusal_names_who_refused(store_backend: str, hermes_home: Path, workdir: Path) -> None:
    with FakeModelServer([{"text": "", "tool_calls": [code_call("print('never')")]}, {"text": "ok"}]) as server:
        configure(hermes_home, server)
        assert cli(workdir, "run", "--session", "who1", "go").returncode == 3
        assert cli(workdir, "deny", "who1", "--all", "--reason", "not today").returncode == 0
        assert cli(workdir, "resume", "who1").returncode == 0
        said = [m for m in server.requests[-1]["messages"] if m["role"] == "tool"][-1]["content"]
    assert "denied by root@" in said or "denied by " + os.environ.get("USER", "") in said
    assert "not today" in said and "denied by the user" not in said


def test_two_calls_of_one_step_pause_once_with_both_pending(
        store_backend: str, hermes_home: Path, workdir: Path) -> None:
    """Issue 32: two tool calls of one reply that both need approval paused one after the
    other, so `approve --all --except ...` never saw both. Now the run pauses once with every
    request of the step pending; one is approved, the other denied, and the resume does each."""
    first = {"name": "terminal", "arguments": {"command": "echo one > one.txt"}}
    second = {"name": "terminal", "arguments": {"command": "echo two > two.txt"}}
    with FakeModelServer([{"text": "", "tool_calls": [first, second]}, {"text": "Done."}]) as server:
        configure(hermes_home, server, "approvals:\n  mode: strict\n")
        paused = cli(workdir, "run", "--session", "both1", "write both")
        assert paused.returncode == 3, paused.stdout + paused.stderr
        pending = json.loads(cli(workdir, "inspect", "both1", "--pending", "--json").stdout)["pending"]
        assert [p["text"] for p in pending] == ["echo one > one.txt", "echo two > two.txt"], pending
        assert not (workdir / "one.txt").exists() and not (workdir / "two.txt").exists()  # asked, not run
        second_id = pending[1]["id"]
        assert cli(workdir, "approve", "both1", "--all", "--except", second_id).returncode == 0
        assert cli(workdir, "deny", "both1", second_id, "--reason", "not two").returncode == 0
        resumed = cli(workdir, "resume", "both1")
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert (workdir / "one.txt").read_text() == "one\n"
    assert not (workdir / "two.txt").exists()
