"""Usage, cost and hard budgets, against a real model server on 127.0.0.1 and real kernels.

The server reports usage in each shape providers use (an OpenAI stream asked for it, one that
puts it on its last chunk, one that never sends it, a whole reply, Anthropic's with cache
tokens, OpenRouter's own cost); the tests read what was stored (in SQLite and, where the
store is what is tested, in PostgreSQL too), what the CLI lists and what the app shows.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_tui.storage import sessions as db
from hermes_tui.agent.budget import Budget, parse_amount
from hermes_tui.agent.events import Notice, TurnEnded, UsageUpdated
from hermes_tui.agent.loop import Agent
from hermes_tui.agent.models.providers import resolve_provider
from hermes_tui.agent.usage import CallUsage, Pricing, from_anthropic, from_openai, table_prices
from hermes_tui.storage.writer import SessionStore
from conftest import make_config
from fake_models import FakeModelServer
from helpers.agents import Harness

PRICES = "  pricing:\n    input_per_mtok: 2\n    output_per_mtok: 10\n    cache_read_per_mtok: 0.5\n"


class Session(Harness):
    """The harness of the loop's tests, with /retry and the stored usage rows."""

    async def retry(self, timeout: float = 30) -> str:
        self.ended.clear()
        assert await self.agent.retry()
        await asyncio.wait_for(self.ended.wait(), timeout)
        return [e for e in self.events if isinstance(e, TurnEnded)][-1].status

    async def usage(self) -> list[dict]:
        return await self.store.call(db.usage_rows, self.agent.session_id)


@pytest.fixture
async def open_session(hermes_home: Path, tmp_path: Path):
    made = []

    async def make(server: FakeModelServer, model_yaml: str = "", *, provider: str = "custom",
                   model: str = "fake-model", budget: Budget | None = None, session: str = "s1",
                   agent_yaml: str = "") -> Session:
        text = (f"model:\n  provider: {provider}\n  default: {model}\n  base_url: {server.url}\n  max_retries: 0\n"
                + model_yaml + agent_yaml)
        if provider == "anthropic":
            text += "  key_env: ANTHROPIC_API_KEY\n"
        config = make_config(text)
        from hermes_tui.runtime import Runtime

        runtime = Runtime(config, home=hermes_home)
        await runtime.start()
        store = SessionStore.open(hermes_home)
        settings = resolve_provider(config, hermes_home, {"ANTHROPIC_API_KEY": "k-test"})
        holder = Session(runtime, store, None)
        agent = Agent(runtime, store, session, settings=settings, listener=holder.on_event, cwd=str(tmp_path),
                      budget=budget, max_context_tokens=config.agent.max_context_tokens)
        holder.agent = agent
        await agent.load()
        await agent.open()
        made.append(holder)
        return holder

    yield make
    for holder in made:
        await holder.agent.aclose()
        await holder.runtime.aclose()
        holder.store.close()


def code_call(code: str) -> dict:
    return {"name": "execute_code", "arguments": {"code": code}}


# -- what each provider shape reports --------------------------------------------------------

async def test_openai_stream_asked_for_usage_is_stored_and_priced(store_backend: str, open_session) -> None:
    usage = {"prompt_tokens": 1500, "completion_tokens": 120, "prompt_tokens_details": {"cached_tokens": 1000},
             "completion_tokens_details": {"reasoning_tokens": 40}}
    with FakeModelServer([{"text": "hello", "usage": usage}]) as server:
        s = await open_session(server, PRICES)
        assert await s.turn("hi") == "done"
        assert server.requests[0]["stream_options"] == {"include_usage": True}
        [row] = await s.usage()
    assert (row["input_tokens"], row["output_tokens"], row["cache_read_tokens"], row["reasoning_tokens"]) == \
        (1500, 120, 1000, 40)
    # 500 plain input at $2, 1000 cached at $0.5, 120 output at $10 (per million)
    assert row["cost_usd"] == pytest.approx((500 * 2 + 1000 * 0.5 + 120 * 10) / 1e6)
    assert row["cost_source"] == "config" and row["estimated"] == 0 and row["latency_s"] > 0
    assert row["model"] == "fake-model" and row["provider"] == "custom"
    updated = s.of(UsageUpdated)[-1]
    assert updated.totals.tokens_in == 1500 and updated.totals.calls == 1


async def test_usage_on_the_last_chunk_and_a_whole_reply_are_read(store_backend: str, open_session) -> None:
    with FakeModelServer([{"text": "a", "usage_mode": "last_chunk", "usage": {"prompt_tokens": 700, "completion_tokens": 9}},
                          ]) as server:
        s = await open_session(server)
        assert await s.turn("one") == "done"
        rows = await s.usage()
    assert (rows[0]["input_tokens"], rows[0]["output_tokens"], rows[0]["estimated"]) == (700, 9, 0)
    with FakeModelServer([{"text": "b", "usage": {"prompt_tokens": 321, "completion_tokens": 12}, "reasoning": "mull"}]) \
            as server:
        s = await open_session(server, "  streaming: false\n", session="s2")
        assert await s.turn("two") == "done"
        rows = await s.usage()
        stored = await s.store.call(db.load_session, "s2")
    assert (rows[0]["input_tokens"], rows[0]["output_tokens"]) == (321, 12)
    assert [m["reasoning"] for m in stored.messages if m["role"] == "assistant"] == ["mull"]


async def test_a_server_that_never_reports_usage_is_estimated_and_marked(store_backend: str, open_session) -> None:
    with FakeModelServer([{"text": "x" * 400, "usage_mode": "never"}]) as server:
        s = await open_session(server, PRICES)
        assert await s.turn("hello there") == "done"
        [row] = await s.usage()
    assert row["estimated"] == 1
    assert row["output_tokens"] == 100  # 400 characters, 4 to a token
    assert row["input_tokens"] > 100  # the system prompt and the tools were sent too
    assert row["cost_usd"] is not None and row["cost_usd"] > 0


async def test_anthropic_cache_tokens_are_added_to_input_and_priced_from_the_table(
        store_backend: str, open_session) -> None:
    usage = {"input_tokens": 200, "output_tokens": 50, "cache_read_input_tokens": 3000,
             "cache_creation_input_tokens": 500}
    with FakeModelServer([{"text": "bonjour", "usage": usage, "reasoning": "let me think"}]) as server:
        s = await open_session(server, provider="anthropic", model="claude-sonnet-4-5")
        assert await s.turn("hi") == "done"
        [row] = await s.usage()
        stored = await s.store.call(db.load_session, "s1")
    assert (row["input_tokens"], row["cache_read_tokens"], row["cache_write_tokens"], row["output_tokens"]) == \
        (3700, 3000, 500, 50)
    prices = table_prices("claude-sonnet-4-5", "anthropic", None)
    assert prices is not None and row["cost_source"] == "table"
    expected = (200 * prices.input_per_mtok + 3000 * prices.cache_read_per_mtok
                + 500 * prices.cache_write_per_mtok + 50 * prices.output_per_mtok) / 1e6
    assert row["cost_usd"] == pytest.approx(expected)
    assert [m["reasoning"] for m in stored.messages if m["role"] == "assistant"] == ["let me think"]


async def test_a_cost_the_provider_reports_wins_and_an_unknown_price_stays_unknown(
        store_backend: str, open_session) -> None:
    with FakeModelServer([{"text": "a", "usage": {"prompt_tokens": 10000, "completion_tokens": 2000, "cost": 0.0421}},
                          {"text": "b", "usage": {"prompt_tokens": 10, "completion_tokens": 2}}]) as server:
        s = await open_session(server, PRICES)
        await s.turn("one")
        s.agent.settings.pricing = None  # the second call: no configured price, none in the table for a local server
        await s.turn("two")
        rows = await s.usage()
    assert (rows[0]["cost_usd"], rows[0]["cost_source"]) == (0.0421, "provider")
    assert (rows[1]["cost_usd"], rows[1]["cost_source"]) == (None, "unknown")
    assert s.agent.totals.unpriced_calls == 1 and s.agent.totals.cost_usd == pytest.approx(0.0421)


def test_usage_readers_take_what_the_sdks_give() -> None:
    read = from_openai({"prompt_tokens": 50, "completion_tokens": 5, "prompt_cache_hit_tokens": 30})
    assert read is not None and read.cache_read_tokens == 30  # DeepSeek's field
    assert from_openai({"prompt_tokens": 0, "completion_tokens": 0}) is None
    assert from_openai({"prompt_tokens": 5, "completion_tokens": 1, "cost": True}).reported_cost is None
    anthropic = from_anthropic({"input_tokens": 1, "output_tokens": 2})
    assert (anthropic.input_tokens, anthropic.output_tokens) == (1, 2)
    assert Pricing(1, 2).cost(CallUsage(1_000_000, 1_000_000)) == 3


# -- hard budgets ----------------------------------------------------------------------------

async def test_a_session_ceiling_stops_a_tool_loop_with_status_budget_then_budget_and_retry_go_on(
        store_backend: str, open_session) -> None:
    big = {"prompt_tokens": 100_000, "completion_tokens": 1000}  # $0.21 a call at $2/$10 per million
    replies = [{"text": "", "tool_calls": [code_call(f"n = {i}")], "usage": big} for i in range(6)]
    with FakeModelServer([*replies, {"text": "finished", "usage": big}]) as server:
        s = await open_session(server, PRICES, budget=Budget(0.50))
        status = await s.turn("keep going")
        assert status == "budget"
        spent = s.agent.totals.cost_usd
        assert 0 < spent <= 0.50
        notice = [n for n in s.of(Notice) if "Budget reached" in n.text][-1]
        assert "/budget 1.00" in notice.text and "/retry" in notice.text and "agent.max_cost_usd" in notice.text
        rows = await s.usage()
        assert len(rows) == len(server.requests) == 2  # the third call would have passed $0.50
        stored = await s.store.call(db.load_session, "s1")
        assert stored.turns[-1]["status"] == "budget"
        assert sum(1 for m in stored.messages if m["role"] == "tool") == 2  # nothing lost
        # /budget raises it, /retry goes on from where it stopped
        await s.agent.set_budget(5.0)
        assert await s.retry() == "done"
        assert "finished" in (await s.store.call(db.load_session, "s1")).messages[-1]["content"]
        assert (await s.store.call(db.load_session, "s1")).info.max_cost_usd == 5.0


async def test_a_turn_ceiling_stops_the_turn_and_the_session_ceiling_survives_resume(
        store_backend: str, open_session) -> None:
    big = {"prompt_tokens": 100_000, "completion_tokens": 1000}
    replies = [{"text": "", "tool_calls": [code_call("x = 1")], "usage": big} for _ in range(4)]
    with FakeModelServer(replies) as server:
        s = await open_session(server, PRICES, budget=Budget(None, 0.30))
        assert await s.turn("go") == "budget"
        assert any("agent.max_turn_cost_usd" in n.text for n in s.of(Notice))
        assert len(server.requests) == 1
        await s.agent.set_budget(7.5)
    with FakeModelServer([]) as server:
        again = await open_session(server, PRICES, budget=Budget(1.0))  # the config says 1.00; /budget said 7.50
        assert again.agent.budget.max_cost_usd == 7.5
        assert again.agent.totals.calls == 1 and again.agent.totals.cost_usd == pytest.approx(0.21)


async def test_an_unknown_price_cannot_be_held_to_a_ceiling_and_says_so_once(open_session) -> None:
    with FakeModelServer([{"text": "a"}, {"text": "b"}]) as server:
        s = await open_session(server, budget=Budget(0.01))
        assert await s.turn("one") == "done"
        assert await s.turn("two") == "done"
    said = [n.text for n in s.of(Notice) if "cannot be held" in n.text]
    assert len(said) == 1 and "model.pricing" in said[0]


def test_budget_amounts_are_read_or_refused_with_what_is_allowed() -> None:
    assert parse_amount("$5.00") == 5.0 and parse_amount("1,000") == 1000.0
    for bad in ("five", "0", "-1", "nan", "inf"):
        said = parse_amount(bad)
        assert isinstance(said, str) and "/budget" in said


async def test_max_context_tokens_leaves_out_the_oldest_turns_counted_as_the_provider_counts(open_session) -> None:
    # The provider counts 1 token per character here: 3,000 characters of history is 3,000 tokens.
    per_char = [{"text": "r" * 1000, "usage": {"prompt_tokens": 0, "completion_tokens": 1}} for _ in range(4)]
    with FakeModelServer(per_char) as server:
        s = await open_session(server, agent_yaml="agent:\n  max_context_tokens: 2500\n")
        s.agent.history.calibrate(1, 1)
        for text in ("a" * 1000, "b" * 1000, "c" * 1000):
            await s.turn(text)
        sent = server.requests[-1]["messages"]
    assert not any(m.get("content", "").startswith("a" * 50) for m in sent if isinstance(m.get("content"), str))
    assert any("agent.max_context_tokens" in (m.get("content") or "") for m in sent if m["role"] == "system")


# -- what the user sees outside the app ------------------------------------------------------

async def test_sessions_json_and_listing_give_tokens_and_cost(
        store_backend: str, open_session, hermes_home: Path, tmp_path: Path) -> None:
    with FakeModelServer([{"text": "a", "usage": {"prompt_tokens": 1000, "completion_tokens": 100}}]) as server:
        s = await open_session(server, PRICES)
        await s.turn("count me")
    env = {**os.environ, "HERMES_HOME": str(hermes_home)}
    listed = subprocess.run([sys.executable, "-m", "hermes_tui", "sessions", "--json"], capture_output=True,
                            text=True, env=env, cwd=tmp_path, timeout=30)
    [record] = [json.loads(line) for line in listed.stdout.splitlines()]
    assert (record["tokens_in"], record["tokens_out"]) == (1000, 100)
    assert record["cost_usd"] == pytest.approx(0.003)
    text = subprocess.run([sys.executable, "-m", "hermes_tui", "sessions"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=30).stdout
    assert "1.1k tok" in text and "$0.00" in text
    exported = subprocess.run([sys.executable, "-m", "hermes_tui", "export", "latest"], capture_output=True,
                              text=True, env=env, cwd=tmp_path, timeout=30).stdout
    assert json.loads(exported)["tokens_in"] == 1000


# -- what an untrusted endpoint may report -----------------------------------------------------

async def test_impossible_counts_and_costs_are_not_believed(store_backend: str, open_session) -> None:
    replies = [{"text": "a", "usage": {"prompt_tokens": 1e30, "completion_tokens": 10}},
               {"text": "b", "usage": {"prompt_tokens": 1000, "completion_tokens": 10, "cost": 1e30}}]
    with FakeModelServer(replies) as server:
        s = await open_session(server, PRICES, budget=Budget(5.0))
        assert await s.turn("one") == "done"
        assert await s.turn("two") == "done"
        rows = await s.usage()
    assert rows[0]["estimated"] == 1 and rows[0]["input_tokens"] < 100_000  # estimated, not 1e30
    assert rows[1]["cost_source"] == "config" and rows[1]["cost_usd"] == pytest.approx((1000 * 2 + 10 * 10) / 1e6)
    assert s.agent.totals.cost_usd < 1  # the session is not locked out by a forged cost
    assert from_openai({"prompt_tokens": float("inf"), "completion_tokens": 1}) is None
    assert from_openai({"prompt_tokens": 10, "completion_tokens": float("nan")}) is None
    assert from_anthropic({"input_tokens": 10 ** 12, "output_tokens": 1}) is None


def test_budget_advice_always_helps() -> None:
    from hermes_tui.agent.budget import suggest

    turn = Budget(None, 0.05).refuse(0.0, 0.0, 0.1162)
    assert turn is not None and "/retry starts" not in turn  # nothing spent this turn: /retry cannot help
    amount = float(turn.split("/budget turn ")[1].split()[0])
    assert amount >= 0.1162
    session = Budget(0.50).refuse(0.42, 0.0, 0.24)
    assert session is not None and float(session.split("/budget ")[1].split()[0]) >= 0.66
    assert float(suggest(1.0)) == 2.0
    assert "at most" in str(parse_amount("1e308"))
