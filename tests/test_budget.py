"""A hard cost ceiling (``--max-cost``) holds when sub-agents call the model at once, and the
sub-agents a ceiling stopped go on when the run does.

A scripted model server on 127.0.0.1 reports what a provider would: input tokens counted from
what it was sent, output tokens cut to the request's ``max_tokens``. The fan-out that showed it —
``--max-cost 0.5``, three children whose replies would cost $0.33 each — used to end at $0.99;
it must end at or under the ceiling in the agent, headless and in the app, and so must random
fan-outs at random prices (a property test).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_tui.storage import sessions as db
from hermes_tui.agent.budget import MIN_REPLY_TOKENS, Budget, grant
from hermes_tui.agent.loop import Agent
from hermes_tui.agent.models.providers import resolve_provider
from hermes_tui.tui.app import HermesApp
from hermes_tui.storage.writer import SessionStore
from conftest import make_config, open_store_db
from fake_models import FakeModelServer
from helpers.agents import Harness

PARENT = "working in the user's terminal"
PRICES = "  pricing:\n    input_per_mtok: 2\n    output_per_mtok: 10\n"
LONG = {"prompt_tokens": "counted", "completion_tokens": 33_000}
"""A reply that would cost $0.33 at $10 per million output tokens, if nothing cut it."""


def fan_out(children: int, replies_each: int = 1, completion: int = 33_000) -> list[dict]:
    """The parent delegates ``children`` tasks; each child calls a tool ``replies_each - 1``
    times, then answers at length; the parent then sums up."""
    tasks = [{"goal": f"SPEND{i} something", "name": f"s{i}"} for i in range(children)]
    usage = {"prompt_tokens": "counted", "completion_tokens": completion}
    script: list[dict] = [{"match": PARENT, "text": "", "usage": {"prompt_tokens": "counted", "completion_tokens": 50},
                           "tool_calls": [{"name": "delegate_task", "arguments": {"tasks": tasks}}]}]
    for i in range(children):
        script += [{"match": f"SPEND{i}", "text": "", "usage": usage,
                    "tool_calls": [{"name": "read_file", "arguments": {"path": "nothing-here"}}]}] * (replies_each - 1)
        script.append({"match": f"SPEND{i}", "text": f"child {i} is done", "usage": usage})
    script.append({"match": PARENT, "text": "All done.", "usage": usage})
    return script


@asynccontextmanager
async def budgeted_agent(home: Path, cwd: Path, server: FakeModelServer, ceiling: float, extra: str = PRICES,
                         session: str = "p1") -> AsyncIterator[Harness]:
    """A real runtime and store, and an agent of ``session`` held to ``ceiling`` dollars."""
    from hermes_tui.runtime import Runtime

    config = make_config(f"model:\n  provider: custom\n  default: fake\n  base_url: {server.url}\n  max_retries: 0\n"
                         f"{extra}")
    runtime = Runtime(config, home=home)
    await runtime.start()
    store = SessionStore.open(home)
    harness = Harness(runtime, store, None)
    try:
        harness.agent = Agent(runtime, store, session, settings=resolve_provider(config, home, {}),
                              listener=harness.on_event, cwd=str(cwd), subagents=config.agent.subagents,
                              budget=Budget(ceiling))
        await harness.agent.open()
        yield harness
    finally:
        if harness.agent is not None:
            await harness.agent.aclose()
        await runtime.aclose()
        store.close()


async def run_fan_out(home: Path, cwd: Path, server: FakeModelServer, ceiling: float, extra: str = PRICES,
                      session: str = "p1") -> tuple[Agent, list[dict]]:
    async with budgeted_agent(home, cwd, server, ceiling, extra, session) as harness:
        await harness.turn("fan out", timeout=90)
        return harness.agent, await harness.store.call(db.usage_rows, session)


def spent(rows) -> float:
    return sum(row["cost_usd"] or 0.0 for row in rows)


async def test_three_children_at_33_cents_each_stay_under_a_50_cent_ceiling(hermes_home: Path, tmp_path: Path) -> None:
    with FakeModelServer(fan_out(3)) as server:
        agent, rows = await run_fan_out(hermes_home, tmp_path, server, 0.5,
                                        PRICES + "  max_tokens: 100000\n")
        children = [r for r in server.requests if "SPEND" in json.dumps(r["messages"][1:2])]
    assert len(children) == 3  # every child was let call once
    assert all(isinstance(r.get("max_tokens"), int) for r in server.requests)  # the provider enforces the grant
    assert agent.totals.cost_usd <= 0.5 + 1e-9, agent.totals.cost_usd
    assert spent(rows) <= 0.5 + 1e-9
    # The room was shared: no child was granted the whole of what was left.
    granted = sorted(r["max_tokens"] for r in children)
    assert granted[-1] * 10 / 1e6 < 0.5 * 0.6, granted


def test_the_same_fan_out_headless_stays_under_the_ceiling(hermes_home: Path, tmp_path: Path) -> None:
    with FakeModelServer(fan_out(3)) as server:
        (hermes_home / "config.yaml").write_text(f"model:\n  provider: custom\n  default: fake\n  base_url: {server.url}\n"
                                                 f"  max_retries: 0\n{PRICES}  max_tokens: 100000\n")
        done = subprocess.run([sys.executable, "-m", "hermes_tui", "run", "--max-cost", "0.5", "--session", "fan1",
                               "fan out"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL, env=os.environ.copy())
        assert done.returncode in (0, 4), done.stdout + done.stderr  # finished, or stopped at the ceiling
        conn = open_store_db(hermes_home)
        try:
            total = conn.execute("SELECT SUM(cost_usd) FROM usage WHERE session_id = 'fan1'").fetchone()[0]
        finally:
            conn.close()
    assert 0 < total <= 0.5 + 1e-9, total


async def test_the_same_fan_out_in_the_app_stays_under_the_ceiling(hermes_home: Path) -> None:
    from hermes_tui.tui.widgets.conversation import PromptInput
    from helpers.pilot import topbar, wait_until

    with FakeModelServer(fan_out(3)) as server:
        config = make_config(f"model:\n  provider: custom\n  default: fake\n  base_url: {server.url}\n  max_retries: 0\n"
                             f"{PRICES}  max_tokens: 100000\n")
        app = HermesApp(config, cwd=str(hermes_home), home=hermes_home, session="a1", max_cost=0.5)
        async with app.run_test(size=(160, 48)) as pilot:
            prompt = app.query_one(PromptInput)
            prompt.focus()
            prompt.insert("fan out")
            await pilot.press("enter")
            await wait_until(pilot, lambda: app.agent is not None and app.agent.totals.calls >= 4
                             and not app.agent.busy, timeout=120)
            assert app.agent.totals.cost_usd <= 0.5 + 1e-9
            assert "$0.50" in topbar(app)


def test_a_grant_never_passes_the_room_and_refuses_what_cannot_fit() -> None:
    assert grant(0.001, 0.001, 0.0009, 10 / 1e6, 8192) is None  # the input alone nearly fills it
    given_ = grant(1.0, 0.25, 0.01, 10 / 1e6, 100_000)
    assert given_ is not None and given_.worst <= 0.25 + 1e-12 and given_.max_tokens == 23_999
    small = grant(0.05, 0.001, 0.01, 10 / 1e6, 100_000)  # a share under the minimum: the minimum
    assert small is not None and small.max_tokens == MIN_REPLY_TOKENS and small.worst <= 0.05


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(children=st.integers(1, 4), replies_each=st.integers(1, 3), completion=st.integers(10, 200_000),
       input_price=st.floats(0.1, 20), output_price=st.floats(0.5, 80), ceiling=st.floats(0.02, 2.0),
       cap=st.sampled_from(["", "  max_tokens: 100000\n", "  max_tokens: 2000\n"]))
def test_random_fan_outs_at_random_prices_never_end_above_the_ceiling(
        hermes_home: Path, tmp_path: Path, children: int, replies_each: int, completion: int, input_price: float,
        output_price: float, ceiling: float, cap: str) -> None:
    prices = f"  pricing:\n    input_per_mtok: {input_price}\n    output_per_mtok: {output_price}\n{cap}"
    session = f"prop{os.urandom(4).hex()}"
    with FakeModelServer(fan_out(children, replies_each, completion)) as server:
        agent, rows = asyncio.run(run_fan_out(hermes_home, tmp_path, server, ceiling, prices, session))
    assert agent.totals.cost_usd <= ceiling + 1e-9, (agent.totals.cost_usd, ceiling)
    assert spent(rows) <= ceiling + 1e-9


# -- sub-agents a ceiling stopped go on when the run does --------------------------------------


def stopped_fan_out() -> list[dict]:
    """Two children each read a file, then would answer; the ceiling stops them in between."""
    tasks = [{"goal": f"SPEND{i} something", "name": f"s{i}"} for i in range(2)]
    counted = {"prompt_tokens": "counted", "completion_tokens": 50}
    script: list[dict] = [{"match": PARENT, "text": "", "usage": counted,
                           "tool_calls": [{"name": "delegate_task", "arguments": {"tasks": tasks}}]}]
    for i in range(2):
        script.append({"match": f"SPEND{i}", "text": "", "usage": {"prompt_tokens": "counted", "completion_tokens": 20_000},
                       "tool_calls": [{"name": "read_file", "arguments": {"path": f"notes{i}.txt"}}]})
    for i in range(2):
        script.append({"match": f"SPEND{i}", "text": f"child {i} final: {40 + i}", "usage": counted})
    script.append({"match": PARENT, "text": "Both children answered.", "usage": counted})
    return script


def told_the_model(server: FakeModelServer) -> list[str]:
    """Every tool result any model was sent."""
    return [str(m.get("content")) for r in server.requests for m in r["messages"] if m["role"] == "tool"]


async def test_children_the_ceiling_stopped_go_on_when_the_turn_does(hermes_home: Path, tmp_path: Path) -> None:
    for i in range(2):
        (tmp_path / f"notes{i}.txt").write_text(f"note {i}\n")
    with FakeModelServer(stopped_fan_out()) as server:
        async with budgeted_agent(hermes_home, tmp_path, server, 0.05, PRICES + "  max_tokens: 100000\n", "r1") as h:
            assert await h.turn("fan out", timeout=60) == "budget"
            first = [json.loads(c) for c in told_the_model(server) if '"results"' in c]
            assert not first  # the parent's model was not called again: nothing read yet
            await h.agent.set_budget(5.0)
            h.ended.clear()
            assert await h.agent.retry()
            await asyncio.wait_for(h.ended.wait(), 60)
    results = json.loads([c for c in told_the_model(server) if '"results"' in c][-1])["results"]
    assert [(r["status"], r["summary"]) for r in results] == [("done", "child 0 final: 40"), ("done", "child 1 final: 41")]
    # Each child went on with its own conversation: its last request still holds the file it read.
    for i in range(2):
        last = [r for r in server.requests if f"SPEND{i}" in json.dumps(r["messages"][1:2])][-1]
        assert f"note {i}" in json.dumps(last["messages"])
    for text in told_the_model(server):  # the person's advice never reached a model
        assert "Budget reached" not in text and "/budget" not in text and "/retry" not in text


def test_a_headless_run_stopped_at_the_ceiling_resumes_its_children(hermes_home: Path, tmp_path: Path) -> None:
    for i in range(2):
        (tmp_path / f"notes{i}.txt").write_text(f"note {i}\n")
    with FakeModelServer(stopped_fan_out()) as server:
        (hermes_home / "config.yaml").write_text(f"model:\n  provider: custom\n  default: fake\n  base_url: {server.url}\n"
                                                 f"  max_retries: 0\n{PRICES}  max_tokens: 100000\n")

        def cli(*argv: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([sys.executable, "-m", "hermes_tui", *argv], cwd=tmp_path, capture_output=True,
                                  text=True, timeout=120, stdin=subprocess.DEVNULL, env=os.environ.copy())

        stopped = cli("run", "--max-cost", "0.05", "--session", "h1", "fan out")
        assert stopped.returncode == 4, stopped.stdout + stopped.stderr
        # The trial: a shell user was told "/budget 1.00 ... then /retry", which only the app takes.
        assert "hermes-tui resume h1 --max-cost" in stopped.stdout and "/budget" not in stopped.stdout
        resumed = cli("resume", "h1", "--max-cost", "5")
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert "Both children answered." in resumed.stdout
    results = json.loads([c for c in told_the_model(server) if '"results"' in c][-1])["results"]
    assert [r["status"] for r in results] == ["done", "done"]
    assert all("Budget reached" not in text and "/budget" not in text for text in told_the_model(server))


def test_a_delegate_block_whose_children_a_ceiling_stopped_does_not_say_done() -> None:
    from hermes_tui.agent.subagents import COST_STOP
    from hermes_tui.tui.widgets.delegate import DelegateBlock

    block = DelegateBlock({"tasks": [{"goal": "a"}, {"goal": "b"}]}, "call1")
    block.set_tool_result({"results": [
        {"name": "a", "goal": "a", "status": "budget", "summary": "", "stopped": COST_STOP, "session": "p::child::a"},
        {"name": "b", "goal": "b", "status": "done", "summary": "ok", "session": "p::child::b"}]})
    assert block.status == "stopped at a limit"
    block.set_tool_result({"results": [{"name": "a", "goal": "a", "status": "done", "summary": "fine"}]})
    assert block.status == "done"
