"""Sub-agents (`delegate_task`) against the scripted model server on 127.0.0.1 and real kernels.

The server tells parent and children apart by what their requests hold: the parent's system
prompt says "working in the user's terminal", each child's first message holds its goal.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hermes_tui.storage import sessions as db
from hermes_tui.agent.events import TurnEnded
from hermes_tui.agent.loop import Agent
from hermes_tui.agent.models.providers import resolve_provider
from hermes_tui.agent.subagents import DelegateProgress
from hermes_tui.runtime.approvals import ApprovalDecision, ApprovalRequest
from hermes_tui.storage.writer import SessionStore
from conftest import make_config, open_store_db
from fake_models import FakeModelServer
from helpers.agents import Harness

PARENT = "working in the user's terminal"


def delegate(*tasks: dict) -> dict:
    return {"name": "delegate_task", "arguments": {"tasks": list(tasks)}}


@pytest.fixture
async def parent_agent(hermes_home: Path, tmp_path: Path):
    made = []

    async def make(server: FakeModelServer, extra: str = "", approver=None) -> Harness:
        config = make_config(f"model:\n  provider: custom\n  default: fake\n  base_url: {server.url}\n"
                             f"  max_retries: 0\n{extra}")
        from hermes_tui.runtime import Runtime

        runtime = Runtime(config, home=hermes_home, approver=approver)
        await runtime.start()
        store = SessionStore.open(hermes_home)
        harness = Harness(runtime, store, None)
        harness.agent = Agent(runtime, store, "p1", settings=resolve_provider(config, hermes_home, {}),
                              listener=harness.on_event, cwd=str(tmp_path), subagents=config.agent.subagents)
        await harness.agent.open()
        made.append(harness)
        return harness

    yield make
    for harness in made:
        await harness.agent.aclose()
        await harness.runtime.aclose()
        harness.store.close()


def tool_result(request: dict) -> dict:
    return json.loads([m for m in request["messages"] if m["role"] == "tool"][-1]["content"])


async def test_five_tasks_fan_out_three_at_a_time_and_only_summaries_come_back(
        store_backend: str, parent_agent) -> None:
    tasks = [{"goal": f"count the letters of WORD{i}", "name": f"w{i}"} for i in range(5)]
    page = "lorem ipsum " * 2000  # what a child reads: 24 KB the parent must never see
    children = [{"match": f"WORD{i}", "text": "", "hang": 0.4,
                 "tool_calls": [{"name": "execute_code", "arguments": {"code": f"page = {page!r}\nprint(len(page))"}}]}
                for i in range(5)]
    answers = [{"match": f"WORD{i}", "text": f"WORD{i} has {i + 5} letters."} for i in range(5)]
    with FakeModelServer([{"match": PARENT, "text": "", "tool_calls": [delegate(*tasks)]}, *children, *answers,
                          {"match": PARENT, "text": "All five counted."}]) as server:
        h = await parent_agent(server)
        assert await h.turn("count them", timeout=60) == "done"
        last = server.requests[-1]
    assert server.max_active == 3  # never more than max_concurrency children at once
    results = tool_result(last)["results"]
    assert [r["status"] for r in results] == ["done"] * 5
    assert [r["summary"] for r in results] == [f"WORD{i} has {i + 5} letters." for i in range(5)]
    assert all(r["model_calls"] == 2 and r["tool_calls"] == 1 for r in results)
    assert "lorem ipsum" not in json.dumps(last["messages"])  # the child's reading stays with the child
    progress = [e for e in h.events if isinstance(e, DelegateProgress)]
    assert max(sum(c.status == "running" for c in e.children) for e in progress) <= 3
    assert not [k for k in h.runtime.kernels() if k.subagent and k.state != "dead"]
    listed = await h.store.call(db.list_sessions)
    assert [s.id for s in listed] == ["p1"]  # children are not the user's sessions
    children_stored = [row["id"] for row in await h.store.call(
        lambda conn: conn.execute("SELECT id FROM sessions WHERE id LIKE 'p1::child::%'").fetchall())]
    assert len(children_stored) == 5
    transcript = await h.store.call(db.load_session, children_stored[0])
    assert any("lorem ipsum" in json.dumps(m["tool_calls"] or "") for m in transcript.messages)  # kept, viewable


async def test_a_failing_child_one_out_of_steps_and_one_that_asks(store_backend: str, parent_agent) -> None:
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(choice="once")

    tasks = [{"goal": "FAILS please", "name": "bad"}, {"goal": "LOOPS forever", "name": "loop", "max_steps": 1},
             {"goal": "ASKS to echo", "name": "asker"}]
    script = "from hermes_tools import terminal\nprint(terminal('echo child-ran')['output'])"
    with FakeModelServer([
        {"match": PARENT, "text": "", "tool_calls": [delegate(*tasks)]},
        {"match": "FAILS", "status": 500, "error": "boom"},
        {"match": "LOOPS", "text": "", "tool_calls": [{"name": "read_file", "arguments": {"path": "x"}}]},
        {"match": "ASKS", "text": "", "tool_calls": [{"name": "execute_code", "arguments": {"code": script}}]},
        {"match": "ASKS", "text": "It printed child-ran."},
        {"match": PARENT, "text": "Reported."},
    ]) as server:
        h = await parent_agent(server, "approvals:\n  mode: strict\n", approver)
        assert await h.turn("go", timeout=60) == "done"
        results = {r["name"]: r for r in tool_result(server.requests[-1])["results"]}
    assert results["bad"]["status"] == "error"
    assert results["loop"]["status"] == "budget"  # its max_steps: a normal end, the parent is told
    assert results["asker"]["status"] == "done" and "child-ran" in results["asker"]["summary"]
    assert asked and asked[0].session.startswith("p1::child::") and asked[0].session.endswith("asker")


async def test_children_share_the_parents_ceiling_and_roll_up_their_cost(store_backend: str, parent_agent) -> None:
    from hermes_tui.agent.budget import Budget

    big = {"prompt_tokens": 100_000, "completion_tokens": 1000}  # $0.21 a call at $2/$10
    tasks = [{"goal": f"SPEND{i}", "name": f"s{i}"} for i in range(3)]
    loops = [{"match": f"SPEND{i}", "text": "", "usage": big,
              "tool_calls": [{"name": "read_file", "arguments": {"path": "x"}}]} for i in range(3) for _ in range(4)]
    with FakeModelServer([{"match": PARENT, "text": "", "tool_calls": [delegate(*tasks)], "usage": big}, *loops,
                          {"match": PARENT, "text": "ok"}]) as server:
        h = await parent_agent(server, "  pricing:\n    input_per_mtok: 2\n    output_per_mtok: 10\n")
        h.agent.budget = Budget(1.0)
        await h.turn("spend", timeout=60)
        rows = await h.store.call(db.usage_rows, "p1")
    assert h.agent.totals.cost_usd <= 1.0 + 1e-9  # one ledger for parent and children
    assert len(rows) == h.agent.totals.calls and len(rows) >= 4  # children's calls stored with the parent
    results = tool_result(server.requests[-1])["results"] if server.requests[-1]["messages"][-1]["role"] == "tool" \
        else [e for e in h.events if isinstance(e, DelegateProgress)][-1].children
    statuses = [r["status"] if isinstance(r, dict) else r.status for r in results]
    assert "budget" in statuses


async def test_esc_stops_the_parent_and_every_child(parent_agent) -> None:
    tasks = [{"goal": f"SLEEP{i}", "name": f"z{i}"} for i in range(2)]
    sleepy = [{"match": f"SLEEP{i}", "text": "", "tool_calls": [{"name": "execute_code",
                                                                  "arguments": {"code": "import time; time.sleep(60)"}}]}
              for i in range(2)]
    with FakeModelServer([{"match": PARENT, "text": "", "tool_calls": [delegate(*tasks)]}, *sleepy]) as server:
        h = await parent_agent(server)
        await h.agent.submit("sleep")
        await h.until(lambda: sum(1 for k in h.runtime.kernels() if k.state == "busy") == 2, timeout=30)
        assert all(k.subagent for k in h.runtime.kernels() if k.state == "busy")  # so the end check can fail
        started = time.monotonic()
        await h.agent.interrupt()
        await asyncio.wait_for(h.ended.wait(), 15)
        assert time.monotonic() - started < 10
    assert [e.status for e in h.events if isinstance(e, TurnEnded)][-1] == "interrupted"
    await h.until(lambda: not [k for k in h.runtime.kernels() if k.subagent and k.state != "dead"], timeout=10)


def test_a_run_killed_mid_fan_out_resumes_with_what_finished(
        store_backend: str, hermes_home: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    tasks = [{"goal": "QUICK one", "name": "quick"}, {"goal": "SLOW one", "name": "slow"}]
    with FakeModelServer([{"match": PARENT, "text": "", "tool_calls": [delegate(*tasks)]},
                          {"match": "QUICK", "text": "quick result: 7"}, {"match": "SLOW", "text": "...", "hang": 60},
                          {"match": PARENT, "text": "Went on with what finished."}]) as server:
        (hermes_home / "config.yaml").write_text(f"model:\n  provider: custom\n  default: fake\n  base_url: {server.url}\n"
                                                 "  max_retries: 0\n")
        process = subprocess.Popen([sys.executable, "-m", "hermes_tui", "run", "--session", "fan", "fan out"], cwd=work,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
        try:
            conn = open_store_db(hermes_home)
            deadline = time.monotonic() + 30
            while True:  # the quick child's summary is kept on the running call
                row = conn.execute("SELECT result FROM tool_calls WHERE session_id = 'fan' AND name = 'delegate_task'"
                                   ).fetchone()
                if row and row[0] and "quick result" in row[0]:
                    break
                assert time.monotonic() < deadline and process.poll() is None
                time.sleep(0.05)
            conn.close()
            os.killpg(process.pid, signal.SIGKILL)
        finally:
            process.wait(10)
        resumed = subprocess.run([sys.executable, "-m", "hermes_tui", "resume", "fan"], cwd=work, capture_output=True,
                                 text=True, timeout=90, stdin=subprocess.DEVNULL)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        results = {r["name"]: r for r in tool_result(server.requests[-1])["results"]}
    assert results["quick"]["status"] == "done" and "quick result: 7" in results["quick"]["summary"]
    assert results["slow"]["status"] == "interrupted"


def test_delegate_task_is_refused_inside_a_script_and_sub_agents_get_none() -> None:
    from hermes_tui.agent.subagents import DelegateArgs
    from hermes_tui.agent.tools import declarations
    from hermes_tui.runtime.rpc import FORBIDDEN

    assert "delegate_task" in FORBIDDEN  # SPEC §2: never callable from inside execute_code
    names = [d["function"]["name"] for d in declarations(("execute_code", "delegate_task"))]
    assert names == ["execute_code", "delegate_task"]
    with pytest.raises(ValueError):
        DelegateArgs.model_validate({})
    with pytest.raises(ValueError):
        DelegateArgs.model_validate({"goal": "a", "tasks": [{"goal": "b"}]})
    assert len(DelegateArgs.model_validate({"goal": "one"}).all_tasks()) == 1


def test_headless_run_prints_a_line_per_child_start_and_end(
        store_backend: str, hermes_home: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    tasks = [{"goal": "ALPHA task", "name": "alpha"}, {"goal": "BETA task", "name": "beta"}]
    with FakeModelServer([{"match": PARENT, "text": "", "tool_calls": [delegate(*tasks)]},
                          {"match": "ALPHA", "text": "alpha done"}, {"match": "BETA", "text": "beta done"},
                          {"match": PARENT, "text": "Both finished."}]) as server:
        (hermes_home / "config.yaml").write_text(f"model:\n  provider: custom\n  default: fake\n  base_url: {server.url}\n"
                                                 "  max_retries: 0\n")
        done = subprocess.run([sys.executable, "-m", "hermes_tui", "run", "fan out"], cwd=work, capture_output=True,
                              text=True, timeout=90, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    for name in ("alpha", "beta"):
        assert sum(f"sub-agent {name} started" in line for line in lines) == 1
        assert sum(f"sub-agent {name} done · 1 model call · 0 tool calls" in line for line in lines) == 1
    assert "Both finished." in done.stdout


async def test_a_bad_task_is_refused_and_a_failing_child_leaves_no_orphans(parent_agent) -> None:
    bad = {"name": "delegate_task", "arguments": {"tasks": [{"goal": "x", "tools": ["no_such_tool"]}]}}
    with FakeModelServer([{"match": PARENT, "text": "", "tool_calls": [bad]}, {"match": PARENT, "text": "fixed"}]) \
            as server:
        h = await parent_agent(server)
        assert await h.turn("go") == "done"
        said = [m for m in server.requests[-1]["messages"] if m["role"] == "tool"][-1]["content"]
    assert "no_such_tool" in said and "are not tools a sub-agent can have" in said
    assert not h.agent.children


async def test_a_child_on_an_unpriced_model_is_refused_under_a_ceiling(parent_agent) -> None:
    from hermes_tui.agent.budget import Budget

    tasks = [{"goal": "CHEAP elsewhere", "name": "other", "model": "some-unpriced-model"}]
    with FakeModelServer([{"match": PARENT, "text": "", "tool_calls": [delegate(*tasks)]},
                          {"match": "CHEAP", "text": "spent freely"}, {"match": PARENT, "text": "ok"}]) as server:
        h = await parent_agent(server, "  pricing:\n    input_per_mtok: 1\n    output_per_mtok: 1\n")
        h.agent.budget = Budget(3.0)
        assert await h.turn("go") == "done"
        results = tool_result(server.requests[-1])["results"]
    assert results[0]["status"] == "budget" and results[0]["model_calls"] == 0
    assert not any("CHEAP" in json.dumps(r["messages"]) and PARENT not in json.dumps(r) for r in server.requests)


def test_headless_child_requests_are_refused_with_a_reason_not_lost(
        store_backend: str, hermes_home: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    script = "from hermes_tools import terminal\nprint(terminal('echo from-child').get('error'))"
    tasks = [{"goal": "RUNS a command", "name": "runner"}]
    with FakeModelServer([{"match": PARENT, "text": "", "tool_calls": [delegate(*tasks)]},
                          {"match": "RUNS", "text": "", "tool_calls": [{"name": "execute_code",
                                                                        "arguments": {"code": script}}]},
                          {"match": "RUNS", "text": "The command was refused."},
                          {"match": PARENT, "text": "The child could not run it."}]) as server:
        (hermes_home / "config.yaml").write_text(f"model:\n  provider: custom\n  default: fake\n  base_url: {server.url}\n"
                                                 "  max_retries: 0\napprovals:\n  mode: strict\n")
        done = subprocess.run([sys.executable, "-m", "hermes_tui", "run", "--session", "kid", "go"], cwd=work,
                              capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)
        child_requests = [r for r in server.requests if "RUNS" in json.dumps(r) and PARENT not in json.dumps(r)]
    assert done.returncode == 0, done.stdout + done.stderr
    tool_output = [m for m in child_requests[-1]["messages"] if m["role"] == "tool"][-1]["content"]
    assert "cannot pause a headless run" in tool_output
