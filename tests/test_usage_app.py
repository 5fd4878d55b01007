"""Usage, budgets, the model picker and attention in the app (pilot, a real model server)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from hermes_tui.tui import attention
from hermes_tui.storage import sessions as db
from hermes_tui.tui.app import HermesApp
from hermes_tui.tui.widgets.conversation import PromptInput, ReplyBlock
from conftest import make_config
from fake_models import FakeModelServer
from helpers.pilot import topbar

PRICED = "  context_window: 10000\n  pricing:\n    input_per_mtok: 3\n    output_per_mtok: 15\n"


def app_for(server: FakeModelServer, home: Path, extra: str = PRICED, session: str = "u1") -> HermesApp:
    config = make_config(f"model:\n  provider: custom\n  default: fake-model\n  base_url: {server.url}\n"
                         f"  max_retries: 0\n{extra}")
    return HermesApp(config, cwd=str(home), home=home, session=session)


async def wait_until(pilot, predicate, timeout: float = 15.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "condition not met in time"
        await pilot.pause(0.05)


async def type_line(pilot, app: HermesApp, text: str) -> None:
    prompt = app.query_one(PromptInput)
    prompt.focus()
    prompt.insert(text)
    await pilot.press("enter")


def shown(widget) -> str:
    """What a Static shows, as text (its Rich renderable printed)."""
    from rich.console import Console

    console = Console(width=140, color_system=None)
    with console.capture() as capture:
        console.print(widget.content)
    return capture.get()


def notes(app: HermesApp) -> str:
    return "\n".join(str(block.render()) for block in app.query("#transcript > *"))


async def test_the_top_bar_shows_context_tokens_and_cost_and_usage_breaks_it_down(hermes_home: Path) -> None:
    with FakeModelServer([{"text": "one", "usage": {"prompt_tokens": 2000, "completion_tokens": 500}},
                          {"text": "two", "usage": {"prompt_tokens": 8500, "completion_tokens": 100}}]) as server:
        app = app_for(server, hermes_home)
        async with app.run_test(size=(150, 40)) as pilot:
            await wait_until(pilot, lambda: app.agent is not None)
            assert "ctx" not in topbar(app) and "$0.00" in topbar(app)
            await type_line(pilot, app, "first")
            await wait_until(pilot, lambda: "ctx 25%" in topbar(app))
            assert "2.5k tok" in topbar(app) and "$0.0135" in topbar(app)  # 2000 x $3 + 500 x $15 per million
            await type_line(pilot, app, "second")
            await wait_until(pilot, lambda: "ctx 86%" in topbar(app))  # red past 80 %
            await type_line(pilot, app, "/usage")
            await wait_until(pilot, lambda: app.screen.__class__.__name__ == "UsageScreen")
            turns, models = shown(app.screen.query_one("#usage-turns")), shown(app.screen.query_one("#usage-models"))
            assert "1. first" in turns and "2. second" in turns and "custom · fake-model" in models
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.screen is app.main)


async def test_budget_command_sets_shows_and_refuses_with_what_is_allowed(hermes_home: Path) -> None:
    with FakeModelServer([]) as server:
        app = app_for(server, hermes_home)
        async with app.run_test(size=(150, 40)) as pilot:
            await wait_until(pilot, lambda: app.agent is not None)
            await type_line(pilot, app, "/budget 2.50")
            await wait_until(pilot, lambda: "of $2.50" in topbar(app))
            await type_line(pilot, app, "/budget lots")
            await wait_until(pilot, lambda: "/budget needs an amount in US dollars" in notes(app))
            await type_line(pilot, app, "/budget")
            await wait_until(pilot, lambda: "Session ceiling: $2.50" in notes(app))
            await type_line(pilot, app, "/budget off")
            await wait_until(pilot, lambda: "of $" not in topbar(app))
            await type_line(pilot, app, "/usage now")
            await wait_until(pilot, lambda: "/usage takes nothing after it" in notes(app))
            stored = await app.workspace.store.call(db.load_session, "u1")
            assert stored is None or stored.info.max_cost_usd is None


async def test_model_picker_lists_the_endpoint_models_and_the_choice_is_used_next(hermes_home: Path) -> None:
    with FakeModelServer([{"text": "from the new one"}]) as server:
        server.models = ["fake-model", "other-model", "[red]not markup[/red]"]
        app = app_for(server, hermes_home)
        async with app.run_test(size=(150, 40)) as pilot:
            await wait_until(pilot, lambda: app.agent is not None)
            await type_line(pilot, app, "/model")
            await wait_until(pilot, lambda: app.screen.__class__.__name__ == "ModelPicker")
            picker = app.screen
            assert [c.model for c in picker.shown] == ["fake-model", "other-model", "[red]not markup[/red]"]
            assert "[red]not markup[/red]" in str(picker.query_one("OptionList").get_option_at_index(2).prompt)
            await pilot.press(*"other")
            await wait_until(pilot, lambda: [c.model for c in picker.shown] == ["other-model"])
            await pilot.press("enter")
            await wait_until(pilot, lambda: "other-model" in topbar(app))
            await type_line(pilot, app, "hello")
            await wait_until(pilot, lambda: any("from the new one" in b.text for b in app.query(ReplyBlock)))
            assert server.requests[-1]["model"] == "other-model"
            stored = await app.workspace.store.call(db.load_session, "u1")
            assert stored.info.model == "other-model"


async def test_model_by_name_and_a_wrong_one_says_why(hermes_home: Path) -> None:
    with FakeModelServer([{"text": "ok"}]) as server:
        app = app_for(server, hermes_home)
        async with app.run_test(size=(150, 40)) as pilot:
            await wait_until(pilot, lambda: app.agent is not None)
            await type_line(pilot, app, "/model llama3:8b")  # not a provider name: the whole is a model
            await wait_until(pilot, lambda: "llama3:8b" in topbar(app))
            await type_line(pilot, app, "/model nosuchprovider-x:m")
            await wait_until(pilot, lambda: "nosuchprovider-x:m" in topbar(app))  # a model of the current provider
            await type_line(pilot, app, "/model openrouter:some/model")
            await wait_until(pilot, lambda: "openrouter" in topbar(app) or "Cannot use that model" in notes(app))


async def test_a_long_turn_ending_while_the_terminal_is_away_calls_the_user(hermes_home: Path, monkeypatch) -> None:
    monkeypatch.setattr("hermes_tui.tui.attention.LONG_TURN_SECONDS", 0.0)
    monkeypatch.setenv("TERM_PROGRAM", "WezTerm")  # a terminal that takes OSC 9 notifications
    with FakeModelServer([{"text": "done", "hang": 1.0}]) as server:
        app = app_for(server, hermes_home)
        called: list[str] = []
        async with app.run_test(size=(150, 40)) as pilot:
            await wait_until(pilot, lambda: app.agent is not None)
            written: list[str] = []
            monkeypatch.setattr(app, "write_to_terminal", written.append)
            original = app.call_attention
            monkeypatch.setattr(app, "call_attention", lambda what: (called.append(what), original(what)))
            await type_line(pilot, app, "hello")
            app.app_focus = False  # the user went to another window while the model thinks
            await wait_until(pilot, lambda: bool(called))
            app.app_focus = True
        assert called == ["The turn ended (done)"]
        assert written == ["\x1b]9;hermes-tui: The turn ended (done) in session u1\x07\x07"]


def test_notifications_speak_the_terminal_s_dialect_and_carry_no_control_characters() -> None:
    assert attention.dialect({"TERM_PROGRAM": "iTerm.app"}) == "osc9"
    assert attention.dialect({"TERM": "xterm-kitty"}) == "osc9"
    assert attention.dialect({"VTE_VERSION": "7600", "TERM": "xterm-256color"}) == "osc777"
    assert attention.dialect({"TERM": "xterm-256color"}) == "bell"
    hostile = "done\x1b]52;c;AAAA\x07; rm"
    for kind in ("osc9", "osc777", "bell"):
        sent = attention.sequence("hermes-tui", hostile, kind)  # type: ignore[arg-type]
        assert "\x1b]52" not in sent and sent.count("\x1b") <= 1
    assert attention.sequence("t", "b", "osc777") == "\x1b]777;notify;t;b\x07\x07"
    assert attention.sequence("t", "b", "bell") == "\x07"


async def test_an_approval_waiting_while_the_terminal_is_away_calls_the_user(hermes_home: Path, monkeypatch) -> None:
    from hermes_tui.runtime.approvals import ApprovalRequest

    monkeypatch.setenv("VTE_VERSION", "7600")  # a GNOME terminal: OSC 777
    monkeypatch.delenv("TERM_PROGRAM", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    with FakeModelServer([]) as server:
        app = app_for(server, hermes_home)
        async with app.run_test(size=(150, 40)) as pilot:
            await wait_until(pilot, lambda: app.agent is not None)
            written: list[str] = []
            monkeypatch.setattr(app, "write_to_terminal", written.append)
            app.app_focus = False
            request = ApprovalRequest(kind="terminal", text="make deploy", cwd=str(hermes_home), session="u1",
                                      origin="user", reasons=["a test"], choices=["once", "deny"],
                                      deadline=time.time() + 600)
            asking = asyncio.ensure_future(app.answers.ask(request))
            await wait_until(pilot, lambda: bool(written))
            assert written == ["\x1b]777;notify;hermes-tui;An approval is waiting in session u1\x07\x07"]
            assert "make deploy" not in written[0]  # the command is the script's text: never sent out
            app.app_focus = True
            asking.cancel()
            await asyncio.gather(asking, return_exceptions=True)


async def test_model_with_no_model_configured_says_how_instead_of_an_empty_picker(
        hermes_home: Path, tmp_path: Path) -> None:
    from hermes_tui.tui.app import HermesApp
    from hermes_tui.tui.widgets.conversation import PromptInput
    from hermes_tui.tui.screens.model_picker import ModelPicker

    app = HermesApp(cwd=str(tmp_path), home=hermes_home)
    async with app.run_test(size=(120, 40)) as pilot:
        prompt = app.query_one(PromptInput)
        prompt.focus()
        prompt.insert("/model")
        await pilot.press("enter")
        for _ in range(100):
            shown = "\n".join(str(block.render()) for block in app.query("#transcript > *"))
            if "No model is configured" in shown:
                break
            await pilot.pause(0.05)
        assert not isinstance(app.screen, ModelPicker)
        assert "/model PROVIDER:NAME" in shown and "model.provider" in shown
