"""The conversation loop against a real model server on 127.0.0.1 and real kernels."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from hermes_tui.agent.loop import (
    Notice,
    ReplyDone,
    ReplyText,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnQueued,
)
from hermes_tui.agent.models.providers import ProviderError, resolve_provider
from hermes_tui.runtime.approvals import ApprovalDecision
from hermes_tui.storage.sessions import load_session
from conftest import make_config
from fake_models import FakeModelServer
from helpers.agents import harness_factory  # noqa: F401 - a fixture


def code_call(code: str, **extra) -> dict:
    return {"name": "execute_code", "arguments": {"code": code, **extra}}


async def test_structured_tool_call_round_trip(store_backend: str, harness_factory):
    with FakeModelServer([
        {"text": "Let me compute.", "tool_calls": [code_call("x = 6 * 7\nprint(x)")]},
        {"text": "The answer is **42**."},
    ]) as server:
        h = await harness_factory(server)
        status = await h.turn("what is 6*7?")
        assert status == "done", h.of(Notice)
        finished = h.of(ToolFinished)
        assert finished[0].exec_result.output == "42\n"
        assert "The answer is **42**." in h.reply_text()
        # The second request carried the tool result back, linked to the call.
        second = server.requests[1]["messages"]
        call_id = second[2]["tool_calls"][0]["id"]
        assert second[3]["role"] == "tool" and second[3]["tool_call_id"] == call_id
        assert json.loads(second[3]["content"])["output"] == "42\n"
        assert {t["function"]["name"] for t in server.requests[0]["tools"]} >= {"execute_code", "terminal", "read_file"}
        # The kernel persists: a later turn sees x.
        server.add({"tool_calls": [code_call("print(x + 1)")]}, {"text": "43"})
        assert await h.turn("and one more?") == "done", h.of(Notice)
    assert len(server.requests) == 4
    later = h.of(ToolFinished)[-1].exec_result
    assert later.status == "success" and later.output == "43\n"
    assert later.kernel.id == finished[0].exec_result.kernel.id and later.kernel.reused
    assert json.loads(server.requests[3]["messages"][-1]["content"])["output"] == "43\n"


async def test_kernel_state_persists_between_turns(harness_factory):
    with FakeModelServer([
        {"tool_calls": [code_call("x = 41")]}, {"text": "set"},
        {"tool_calls": [code_call("print(x + 1)")]}, {"text": "done"},
    ]) as server:
        h = await harness_factory(server)
        await h.turn("set x")
        await h.turn("print x+1")
    assert h.of(ToolFinished)[-1].exec_result.output == "42\n"


async def test_hermes_format_calls_split_across_chunks(harness_factory):
    raw = ('Sure.<tool_call>\n{"name": "execute_code", "arguments": {"code": "print(2 + 2)"}}\n</tool_call>')
    with FakeModelServer([{"text": raw, "chunk": 3}, {"text": "It is 4."}]) as server:
        h = await harness_factory(server, tool_format="hermes")
        assert await h.turn("2+2?") == "done"
    assert h.of(ToolFinished)[0].exec_result.output == "4\n"
    shown = h.reply_text()
    assert "<tool_call" not in shown and "Sure." in shown and "It is 4." in shown
    second = server.requests[1]
    assert "tools" not in second and "<tools>" in second["messages"][0]["content"]
    assert second["messages"][-1]["role"] == "user"
    assert second["messages"][-1]["content"].startswith("<tool_response>")
    assert "<tool_call>" in second["messages"][-2]["content"]


async def test_malformed_calls_go_back_to_the_model_then_stop(harness_factory):
    bad = {"tool_calls": [{"name": "execute_code", "arguments": '{"code": '}]}
    with FakeModelServer([
        {"tool_calls": [{"name": "execute_code", "arguments": {"cod": "print(1)"}}]},
        {"tool_calls": [code_call("print('fixed')")]},
        {"text": "ok"},
        bad, bad, bad,
    ]) as server:
        h = await harness_factory(server)
        assert await h.turn("go") == "done"
        first_error = json.loads(server.requests[1]["messages"][-1]["content"])["error"]
        assert "code: Field required" in first_error and "cod: not an argument" in first_error
        assert h.of(ToolFinished)[-1].exec_result.output == "fixed\n"
        assert await h.turn("again") == "stopped"
    assert "malformed tool calls in a row" in h.of(Notice)[-1].text
    assert "not valid JSON" in json.loads(server.requests[4]["messages"][-1]["content"])["error"]


async def test_provider_errors_are_clear_and_retry_works(store_backend: str, harness_factory):
    with FakeModelServer([
        {"status": 401, "error": "invalid api key"},
        {"status": 503, "error": "overloaded"},
        {"text": "back"},
    ]) as server:
        h = await harness_factory(server)
        assert await h.turn("hello") == "error"
        assert "rejected the API key (HTTP 401: invalid api key)" in h.of(Notice)[-1].text
        assert await h.turn("hello again") == "error"
        assert "HTTP 503: overloaded" in h.of(Notice)[-1].text
        h.ended.clear()
        assert await h.agent.retry()
        await asyncio.wait_for(h.ended.wait(), 10)
    assert h.of(TurnEnded)[-1].status == "done" and "back" in h.reply_text()
    stored = h.store.sync(load_session, "s1")
    assert [m["content"] for m in stored.messages if m["role"] == "user"] == ["hello", "hello again"]
    assert [m["role"] for m in stored.messages] == ["user", "user", "assistant"]  # failed replies left no rows


async def test_unreachable_server_is_a_clear_error(harness_factory):
    server = FakeModelServer()
    server.httpd.server_close()  # the port is closed: nothing listens
    h = await harness_factory(server)
    assert await h.turn("hi") == "error"
    assert "Cannot reach custom at http://127.0.0.1:" in h.of(Notice)[-1].text


async def test_max_steps_bounds_a_turn(harness_factory):
    with FakeModelServer([{"tool_calls": [code_call("pass")]}] * 3) as server:
        h = await harness_factory(server, "agent:\n  max_steps: 2\n")
        assert await h.turn("loop forever") == "stopped"
    assert len(server.requests) == 2 and "agent.max_steps (2" in h.of(Notice)[-1].text


async def test_new_message_interrupts_running_script(store_backend: str, harness_factory):
    with FakeModelServer([
        {"tool_calls": [code_call("kept = 42\nimport time\nprint('started', flush=True)\ntime.sleep(60)")]},
        {"text": "never read"},
        {"text": "second answer"},
    ]) as server:
        h = await harness_factory(server)
        await h.agent.submit("long job")
        await h.until(lambda: h.of(ToolStarted))
        await asyncio.sleep(0.5)
        h.ended.clear()
        await h.agent.submit("stop that, answer this")
        await h.until(lambda: len(h.of(TurnEnded)) == 2, timeout=20)
    assert [e.status for e in h.of(TurnEnded)] == ["interrupted", "done"]
    result = h.of(ToolFinished)[0].exec_result
    assert result.status == "interrupted"
    assert result.output.rstrip().endswith("[execution interrupted — user sent a new message]"), result.output
    # The interrupted result is in the history the model got with the new message.
    messages = server.requests[1]["messages"]
    assert "execution interrupted" in messages[-2]["content"] and messages[-1]["content"] == "stop that, answer this"
    # The script got SIGINT, not a kill: the kernel and what it had defined stay (issue 15).
    after = await h.runtime.execute_code("print(kept)", session="s1", cwd=h.agent.cwd)
    assert after.output == "42\n" and not after.kernel.state_reset


async def test_injected_turn_is_queued_and_whole_script_approved(store_backend: str, harness_factory):
    asked = []

    async def approver(request):
        asked.append(request)
        return ApprovalDecision(choice="once")

    with FakeModelServer([
        {"text": "first", "delay": 0.05, "chunk": 1},
        {"tool_calls": [code_call("print('from injected')")]},
        {"text": "done"},
    ]) as server:
        h = await harness_factory(server, approver=approver)
        await h.agent.submit("slow user turn")
        await asyncio.sleep(0.1)
        ahead = await h.agent.submit("run a check", origin="injected")
        assert ahead == 1 and h.of(TurnQueued)[0].origin == "injected"
        await h.until(lambda: len(h.of(TurnEnded)) == 2, timeout=20)
    assert [e.status for e in h.of(TurnEnded)] == ["done", "done"]
    assert [r.kind for r in asked] == ["script"] and asked[0].origin == "injected"
    assert h.of(ToolFinished)[0].exec_result.output == "from injected\n"


async def test_anthropic_wire(harness_factory):
    with FakeModelServer([
        {"text": "Running.", "tool_calls": [code_call("print(sum(range(5)))")]},
        {"text": "Sum is 10."},
    ]) as server:
        h = await harness_factory(server, provider="anthropic")
        assert await h.turn("sum") == "done"
    assert h.of(ToolFinished)[0].exec_result.output == "10\n"
    second = server.requests[1]
    assert second["system"] and second["tools"][0]["input_schema"]["type"] == "object"
    sent = server.headers[0]
    assert sent.get("x-api-key") == "k-test" or sent.get("authorization") == "Bearer k-test"
    result_block = second["messages"][-1]["content"][0]
    assert result_block["type"] == "tool_result" and "10" in result_block["content"]
    assert second["messages"][-2]["content"][-1]["type"] == "tool_use"
    assert "Sum is 10." in h.reply_text()


async def test_reply_is_stored_before_it_is_shown(store_backend: str, harness_factory):
    seen_stored = []

    with FakeModelServer([{"text": "one two three four five six", "chunk": 2, "delay": 0.01}]) as server:
        h = await harness_factory(server)

        def check(event):
            h.on_event(event)
            if isinstance(event, ReplyText):
                shown = h.reply_text()
                row = h.store.submit(lambda db: db.execute(
                    "SELECT content FROM messages WHERE id = ?", (event.reply_id,)).fetchone()[0]).result()
                seen_stored.append(row.startswith(shown))

        h.agent.listener = check
        assert await h.turn("count") == "done"
    assert seen_stored and all(seen_stored)
    assert h.of(ReplyDone)[-1].text == "one two three four five six"


def test_provider_resolution(hermes_home: Path):
    assert resolve_provider(make_config(), hermes_home, {}) is None
    (hermes_home / ".env").write_text("OPENROUTER_API_KEY=sk-or-from-dotenv\n")
    s = resolve_provider(make_config("model: anthropic/claude-sonnet-4\n"), hermes_home, {})
    assert (s.name, s.base_url, s.api_key) == ("openrouter", "https://openrouter.ai/api/v1", "sk-or-from-dotenv")
    assert "OPENROUTER_API_KEY in" in s.key_source and "sk-or" not in s.key_source
    s = resolve_provider(make_config("model:\n  provider: mine\n  default: m\nproviders:\n  mine:\n"
                                     "    base_url: http://h/v1\n    key_env: MINE_KEY\n"), hermes_home, {"MINE_KEY": "k"})
    assert (s.base_url, s.api_key) == ("http://h/v1", "k")
    s = resolve_provider(make_config("model:\n  provider: ollama\n  default: qwen3\n"), hermes_home, {},
                         model="llama3", base_url="http://127.0.0.1:9/v1")
    assert (s.model, s.base_url, s.kind) == ("llama3", "http://127.0.0.1:9/v1", "openai")
    s = resolve_provider(make_config("model:\n  provider: auto\n  default: m\n  base_url: https://openrouter.ai/api/v1\n"
                                     "tool_format: hermes\n"), hermes_home, {})
    assert (s.name, s.api_key, s.tool_format) == ("openrouter", "sk-or-from-dotenv", "hermes")  # the URL's owner
    assert s.why == "auto: model.base_url is on openrouter.ai, OpenRouter's host"
    s = resolve_provider(make_config("model:\n  provider: openai\n  default: gpt-x\n"), hermes_home, {})
    assert s.missing_key and "OPENAI_API_KEY (not set" in s.key_source
    s = resolve_provider(make_config("model:\n  base_url: http://127.0.0.1:8080/v1\n  default: local\n"), hermes_home, {})
    assert not s.missing_key and s.api_key is None
    with pytest.raises(ProviderError, match="is not known"):
        resolve_provider(make_config("model:\n  provider: nope\n  default: m\n"), hermes_home, {})
    with pytest.raises(ProviderError, match="no model name"):
        resolve_provider(make_config("model:\n  provider: ollama\n"), hermes_home, {})


async def test_new_message_stops_a_top_level_command(store_backend: str, harness_factory):
    with FakeModelServer([
        {"tool_calls": [{"name": "terminal", "arguments": {"command": "sleep 30; echo late"}}]},
        {"text": "never read"},
        {"text": "ok, stopped"},
    ]) as server:
        h = await harness_factory(server, "approvals:\n  mode: off\n")
        await h.agent.submit("wait a while")
        await h.until(lambda: h.of(ToolStarted))
        await asyncio.sleep(0.3)
        started = asyncio.get_running_loop().time()
        await h.agent.submit("stop")
        await h.until(lambda: len(h.of(TurnEnded)) == 2, timeout=20)
        assert asyncio.get_running_loop().time() - started < 10
    assert [e.status for e in h.of(TurnEnded)] == ["interrupted", "done"]
    result = h.of(ToolFinished)[0].result
    assert result["status"] == "interrupted" and "user sent a new message" in result["error"]


async def test_retry_of_an_injected_turn_still_asks_first(store_backend: str, harness_factory):
    asked = []

    async def approver(request):
        asked.append(request)
        return ApprovalDecision(choice="deny", reason="not now")

    with FakeModelServer([
        {"status": 502, "error": "bad gateway"},
        {"tool_calls": [code_call("print('x')")]},
        {"text": "understood"},
    ]) as server:
        h = await harness_factory(server, approver=approver)
        assert await h.turn("injected job", origin="injected") == "error"
        h.ended.clear()
        assert await h.agent.retry()
        await asyncio.wait_for(h.ended.wait(), 20)
    assert [r.kind for r in asked] == ["script"] and asked[0].origin == "injected"
    result = h.of(ToolFinished)[0].exec_result
    assert result.status == "error" and result.tool_calls_made == 0 and "not now" in result.error


async def test_a_missing_key_goes_unsent_and_the_error_names_the_setting(harness_factory, hermes_home: Path):
    with FakeModelServer([{"status": 401, "error": "no key"}]) as server:
        h = await harness_factory(server, provider="openai")  # openai, but at a local server: no key of OpenAI's
        assert await h.turn("hi") == "error"
    assert len(server.requests) == 1 and "authorization" not in server.headers[0]  # it went, without a key
    text = h.of(Notice)[-1].text
    assert text.startswith("openai wants a key (HTTP 401: no key), and none was sent: OPENAI_API_KEY is only "
                           "sent to api.openai.com over HTTPS, not to 127.0.0.1; to send a key to 127.0.0.1, write it "
                           "beside that URL: providers.openai.base_url with its api_key / key_env / key_cmd, or "
                           "model.base_url with model.api_key.")


async def test_history_sent_stays_within_the_context_budget(store_backend: str, harness_factory):
    with FakeModelServer([{"text": "x" * 600} for _ in range(6)]) as server:
        h = await harness_factory(server, "agent:\n  max_context_chars: 1500\n")
        for index in range(6):
            assert await h.turn(f"question {index}") == "done"
    last = server.requests[-1]
    sent = last["messages"][1:]
    assert sent[-1]["content"] == "question 5"  # the newest turn is always there
    assert sum(len(m["content"] or "") for m in sent) <= 1500
    assert [m["role"] for m in sent][0] == "user"  # whole turns are left out, never half of one
    assert "earlier messages of this conversation are left out" in last["messages"][0]["content"]
    stored = h.store.sync(load_session, "s1")
    assert len(stored.messages) == 12  # everything is still stored


async def test_a_fallback_answers_and_the_conversation_says_so(harness_factory):
    with FakeModelServer([{"status": 503, "error": "overloaded"}]) as primary, \
            FakeModelServer([{"text": "From the fallback."}]) as fallback:
        extra = (f"fallback_providers:\n  - provider: custom\n    model: backup-model\n    base_url: {fallback.url}\n")
        h = await harness_factory(primary, extra)
        assert await h.turn("hello") == "done"
    assert h.reply_text() == "From the fallback."
    notes = [n.text for n in h.of(Notice)]
    assert notes == ["custom · fake-model could not answer (HTTP 503: overloaded); custom · backup-model answered "
                     "(fallback_providers[0])."]
    assert h.of(Notice)[0].level == "warning"


async def test_web_tools_without_a_backend_are_not_offered_to_the_model(harness_factory) -> None:
    from fake_models import FakeModelServer

    with FakeModelServer([{"text": "hi"}, {"text": "hi"}]) as server:
        bare = await harness_factory(server)
        assert await bare.turn("hello") == "done"
        configured = await harness_factory(server, session="s2", yaml_extra=(
            "web:\n  search_backend: searxng\n  searxng_url: http://127.0.0.1:9\n  extract_backend: http\n"))
        assert await configured.turn("hello") == "done"
    offered = {t["function"]["name"]: t["function"]["description"] for t in server.requests[0]["tools"]}
    assert "web_search" not in offered and "web_extract" not in offered and "terminal" in offered
    assert "Here web_search and web_extract are off" in offered["execute_code"]
    both = {t["function"]["name"]: t["function"]["description"] for t in server.requests[1]["tools"]}
    assert {"web_search", "web_extract"} <= set(both) and "are off" not in both["execute_code"]
