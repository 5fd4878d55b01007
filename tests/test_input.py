"""The input as people expect it, with the pilot: history on Up/Down and Ctrl+R (stored in
sessions.db across sessions), slash-command and Python-name completion, big pastes shown as a
placeholder and run whole, keys typed into a pane or after a click on a run that go to the input,
the no-model hint that shortens by whole parts, and Backspace that removes an indent level."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from textual import events

from hermes_tui.storage import sessions as db
from hermes_tui.storage import opening
from hermes_tui.tui.app import HermesApp
from hermes_tui.tui.commands import COMMANDS
from hermes_tui.tui.widgets.conversation import MessageBlock, PastedRunBlock, PromptInput, RunBlock
from hermes_tui.tui.screens.dialogs import ConfirmScreen, HelpScreen
from hermes_tui.tui.widgets.history_search import HistorySearchBar, InputHistory

from conftest import open_store_db, strict_config
from fake_models import FakeModelServer
from helpers.pilot import blocks, burst, log_text, make_app, SIZE, SMALL, submit, wait_until
from helpers.prompt import popup, ready, run, type_text


def bar_text(app: HermesApp) -> str:
    return str(app.query_one(HistorySearchBar).render())


def paste(app: HermesApp, text: str) -> None:
    """What the terminal sends for a paste (the app hands it to the focused widget)."""
    app.post_message(events.Paste(text))


def shown_text(block: RunBlock) -> str:
    """What a run block draws: its title, code (or text) and summary, as plain text."""
    from rich.console import Group
    from rich.syntax import Syntax

    content = block.content
    parts = content.renderables if isinstance(content, Group) else [content]
    return "\n".join(part.code if isinstance(part, Syntax) else str(part) for part in parts)


def stored_inputs(home: Path) -> list[str]:
    conn = open_store_db(home)
    try:
        return db.load_inputs(conn)
    finally:
        conn.close()


# -- history ----------------------------------------------------------------------------------


async def test_up_and_down_walk_the_history_and_keep_what_was_typed(
        store_backend: str, hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        prompt = await ready(pilot, app)
        await run(pilot, app, "a = 1")
        await run(pilot, app, "for i in range(2):\n    b = i\n")
        await run(pilot, app, "c = 3")
        await run(pilot, app, "c = 3")  # a repeat is kept once
        prompt.focus()
        await type_text(pilot, "dra")
        await pilot.press("up")
        assert prompt.text == "c = 3"
        await pilot.press("up")  # a multi-line entry comes back whole, the cursor on its first line
        assert prompt.text == "for i in range(2):\n    b = i" and prompt.cursor_location[0] == 0
        await pilot.press("up")
        assert prompt.text == "a = 1"
        await pilot.press("up")  # the oldest: Up stays there
        assert prompt.text == "a = 1"
        await pilot.press("down")  # Down leaves the cursor on the last line: Down again walks on
        assert prompt.text.startswith("for i") and prompt.cursor_location[0] == 1
        await pilot.press("down")
        assert prompt.text == "c = 3"
        await pilot.press("up")
        assert prompt.text.startswith("for i") and prompt.cursor_location[0] == 0
        await pilot.press("down")  # not on the last line yet: Down moves the cursor
        assert prompt.text.startswith("for i") and prompt.cursor_location[0] == 1
        await pilot.press("down")
        assert prompt.text == "c = 3"
        await pilot.press("down")  # past the newest: what was being typed comes back
        assert prompt.text == "dra"
        await pilot.press("down")
        assert prompt.text == "dra"
        # In a multi-line input, Up off the first line moves the cursor, as in IPython.
        prompt.clear()
        prompt.insert("x = [\n    1,\n]")
        await pilot.press("up")
        assert prompt.text == "x = [\n    1,\n]" and prompt.cursor_location[0] == 1
        await pilot.press("up", "up")
        assert prompt.text == "c = 3"
    assert stored_inputs(hermes_home) == ["a = 1", "for i in range(2):\n    b = i", "c = 3"]


async def test_history_comes_from_earlier_sessions(store_backend: str, hermes_home: Path, tmp_path: Path) -> None:
    first = make_app(hermes_home, tmp_path)
    async with first.run_test(size=SIZE) as pilot:
        await ready(pilot, first)
        await run(pilot, first, "from_before = 'one'")
        await submit(pilot, first, "/kernels")  # commands are inputs too
        await wait_until(pilot, lambda: stored_inputs(hermes_home)[-1:] == ["/kernels"])
    second = make_app(hermes_home, tmp_path)  # a new session, the same HERMES_HOME
    async with second.run_test(size=SIZE) as pilot:
        prompt = await ready(pilot, second)
        assert second.session != first.session
        await pilot.press("up")
        assert prompt.text == "/kernels"
        await pilot.press("up")
        assert prompt.text == "from_before = 'one'"


def test_history_is_bounded_and_skips_repeats(store_backend: str, hermes_home: Path) -> None:
    conn = open_store_db(hermes_home)
    try:
        assert db.add_input(conn, "s1", "one", limit=3)
        assert not db.add_input(conn, "s1", "one", limit=3)  # the same again: kept once
        assert not db.add_input(conn, "s1", "   ", limit=3)
        for text in ("two", "three\nlines\nhere", "four"):
            db.add_input(conn, "s2", text, limit=3)
        assert db.load_inputs(conn) == ["two", "three\nlines\nhere", "four"]
        assert conn.execute("SELECT COUNT(*) FROM input_history").fetchone()[0] == 3
    finally:
        conn.close()
    history = InputHistory(limit=2)
    history.add("late")
    history.load(["early", "late"])  # stored ones go first; the repeat at the seam once
    assert history.entries == ["early", "late"]


def test_an_older_database_gets_the_history_table(hermes_home: Path) -> None:  # a SQLite file: SQLite only
    path = opening.sessions_db_path(hermes_home)
    path.parent.mkdir(parents=True, exist_ok=True)
    old = sqlite3.connect(path)
    old.executescript("CREATE TABLE sessions (id TEXT PRIMARY KEY, title TEXT, created_at REAL NOT NULL, "
                      "updated_at REAL NOT NULL, provider TEXT, model TEXT, cwd TEXT);")
    old.close()
    conn = opening.connect(path)
    try:
        db.add_input(conn, None, "print(1)")
        assert db.load_inputs(conn) == ["print(1)"]
    finally:
        conn.close()


async def test_ctrl_r_searches_the_history(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        prompt = await ready(pilot, app)
        for code in ("alpha = 1", "beta = 2", "alphabet = 3", "[x for x in 'cheap']"):
            await run(pilot, app, code)
        prompt.focus()
        await type_text(pilot, "draft")
        await pilot.press("ctrl+r")
        assert app.query_one(HistorySearchBar).display
        await type_text(pilot, "alp")
        assert "alphabet = 3" in bar_text(app) and "alp" in bar_text(app)
        assert prompt.text == "draft"  # the input is untouched until Enter
        await pilot.press("ctrl+r")  # the next older match
        assert "alpha = 1" in bar_text(app) and "alphabet" not in bar_text(app)
        await pilot.press("ctrl+r")  # none older: the match stays, the bar says so
        assert "alpha = 1" in bar_text(app) and "no older match" in bar_text(app)
        await pilot.press("enter")
        assert prompt.text == "alpha = 1" and not app.query_one(HistorySearchBar).display
        assert len(blocks(app)) == 4  # Enter accepted the match; it did not run it
        await pilot.press("down")  # the walk goes on from the match
        assert prompt.text == "beta = 2"
        await pilot.press("down", "down", "down")
        assert prompt.text == "draft"
        # Esc cancels and leaves the input as it was; markup in entries is shown as text.
        prompt.clear()
        await type_text(pilot, "kept")
        await pilot.press("ctrl+r")
        await type_text(pilot, "che")
        assert "[x for x in 'cheap']" in bar_text(app)
        await pilot.press("escape")
        assert prompt.text == "kept" and not app.query_one(HistorySearchBar).display
        await pilot.press("ctrl+r")
        await type_text(pilot, "zzz")
        assert "no match" in bar_text(app)
        await pilot.press("enter")
        assert prompt.text == "kept"


# -- completion -------------------------------------------------------------------------------


async def test_slash_shows_the_commands_and_completes(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        prompt = await ready(pilot, app)
        await type_text(pilot, "/")
        assert popup(app).display and [c.value for c in popup(app).candidates] == [f"/{c.name}" for c in COMMANDS]
        assert "stop the running turn" in str(popup(app).get_option_at_index(0).prompt)
        await type_text(pilot, "re")  # narrows as you type
        assert [c.value for c in popup(app).candidates] == ["/retry", "/reset"]
        await pilot.press("down", "tab")
        assert prompt.text == "/reset " and not popup(app).display
        prompt.clear()
        await type_text(pilot, "/he")
        assert [c.value for c in popup(app).candidates] == ["/help"]
        await pilot.press("enter")  # Enter on the highlighted one completes it
        assert prompt.text == "/help " and not isinstance(app.screen, HelpScreen)
        await pilot.press("enter")  # and Enter again runs it
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, HelpScreen))
        prompt.focus()
        await type_text(pilot, "/s")
        assert popup(app).display
        await pilot.press("escape")  # Esc closes the popup (it does not stop a turn)
        assert not popup(app).display and prompt.text == "/s"
        await type_text(pilot, "e")
        assert not popup(app).display  # closed for this command
        await pilot.press("tab")  # Tab completes the only match
        assert prompt.text == "/sessions "
        prompt.clear()
        await type_text(pilot, "/zz")
        assert not popup(app).display
        await pilot.press("backspace", "backspace")
        assert popup(app).display and len(popup(app).candidates) == len(COMMANDS)


async def test_tab_completes_python_names_from_the_idle_kernel(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        prompt = await ready(pilot, app)
        # No kernel yet: builtins and keywords.
        await type_text(pilot, "isins")
        await pilot.press("tab")
        await wait_until(pilot, lambda: prompt.text == "isinstance")
        prompt.clear()
        await run(pilot, app, "alpha_value = 41\nalpha_other = 'x'\nglobals()['[red]odd'] = 1")
        kernel = app.runtime.kernels()[0]
        prompt.focus()
        await type_text(pilot, "print(alpha_v")
        await pilot.press("tab")
        await wait_until(pilot, lambda: prompt.text == "print(alpha_value")
        # Several: the shared start is completed and the popup lists them with their types.
        prompt.clear()
        await type_text(pilot, "alp")
        await pilot.press("tab")
        await wait_until(pilot, lambda: popup(app).display)
        assert prompt.text == "alpha_"
        assert [c.value for c in popup(app).candidates] == ["alpha_other", "alpha_value"]
        assert "str" in str(popup(app).get_option_at_index(0).prompt)
        await type_text(pilot, "v")  # it narrows as you type
        assert [c.value for c in popup(app).candidates] == ["alpha_value"]
        await pilot.press("backspace")  # and widens again
        assert [c.value for c in popup(app).candidates] == ["alpha_other", "alpha_value"]
        await pilot.press("up", "down", "enter")
        assert prompt.text == "alpha_value" and not popup(app).display
        await pilot.press("enter")
        await wait_until(pilot, lambda: blocks(app)[-1].status == "success" and "41" in log_text(app))
        # Asking did not disturb the kernel: same process, its count only the runs'.
        assert app.runtime.kernels()[0].pid == kernel.pid and app.runtime.kernels()[0].execution_count == 2
        # Tab after a space still indents; after a "." it does nothing.
        prompt.clear()
        await type_text(pilot, "x = ")
        await pilot.press("tab")
        assert prompt.text == "x =     "
        prompt.clear()
        await type_text(pilot, "alpha_value.")
        await pilot.press("tab")
        await pilot.pause(0.3)
        assert prompt.text == "alpha_value."


async def test_a_busy_kernel_is_not_asked(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        prompt = await ready(pilot, app)
        await run(pilot, app, "alpha_value = 1")
        await submit(pilot, app, "import time\nprint('sleeping', flush=True)\ntime.sleep(30)\n")
        await wait_until(pilot, lambda: "sleeping" in log_text(app))
        prompt.focus()
        await type_text(pilot, "alpha_v")
        await pilot.press("tab")
        await pilot.pause(0.5)
        assert prompt.text == "alpha_v"  # the running script was not disturbed to ask
        prompt.clear()
        await type_text(pilot, "prin")
        await pilot.press("tab")
        await wait_until(pilot, lambda: prompt.text == "print")
        assert blocks(app)[-1].status == "running"
        prompt.clear()
        await pilot.press("escape")  # Esc still stops the turn (no popup open)
        await wait_until(pilot, lambda: blocks(app)[-1].status == "interrupted")


# -- big pastes -------------------------------------------------------------------------------

BIG = "n = 0\n" + "n += 1\n" * 1998 + "print('total', n)\n"  # 2,000 lines


async def test_a_big_paste_is_a_placeholder_and_runs_whole(
        store_backend: str, hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        prompt = await ready(pilot, app)
        paste(app, "three\nsmall\nlines")
        await wait_until(pilot, lambda: prompt.text == "three\nsmall\nlines")
        prompt.clear()
        await type_text(pilot, "x = 1 ")
        paste(app, BIG)
        await wait_until(pilot, lambda: "[pasted" in prompt.text)
        assert prompt.text == "x = 1 [pasted 2,000 lines]"
        await pilot.press("backspace")  # Backspace after the placeholder takes it whole
        assert prompt.text == "x = 1 "
        prompt.clear()
        paste(app, BIG.replace("\n", "\r\n"))
        await wait_until(pilot, lambda: prompt.text == "[pasted 2,000 lines]")
        await pilot.press("enter")
        await wait_until(pilot, lambda: blocks(app) and blocks(app)[-1].status == "success")
        await wait_until(pilot, lambda: "total 1998" in log_text(app))
        block = blocks(app)[-1]
        assert isinstance(block, PastedRunBlock) and block.code == BIG.rstrip("\n")
        assert "[pasted 2,000 lines]" in shown_text(block) and "n += 1" not in shown_text(block)
        block.focus()
        await pilot.press("enter")  # Enter (or a click) shows the whole text
        assert "n += 1" in shown_text(block)
        await pilot.click(block)
        assert "n += 1" not in shown_text(block)
        # The history keeps the whole input.
        assert stored_inputs(hermes_home)[-1] == BIG.rstrip("\n")
        await run(pilot, app, "typed = 1")  # a run typed without a paste is drawn as before
        assert type(blocks(app)[-1]) is RunBlock
        prompt.focus()
        paste(app, BIG)
        paste(app, BIG)
        await wait_until(pilot, lambda: prompt.text == "[pasted 2,000 lines][pasted 2,000 lines #2]")


async def test_a_big_pasted_message_is_sent_whole_and_collapsed(hermes_home: Path, tmp_path: Path) -> None:
    text = "\n".join(f"line {i}: [b]not markup[/b]" for i in range(1, 26))
    with FakeModelServer([{"text": "Read it."}]) as server:
        yaml_text = f"model:\n  provider: custom\n  default: fake-model\n  base_url: {server.url}\n  max_retries: 0\n"
        app = HermesApp(strict_config(yaml_text), cwd=str(tmp_path), home=hermes_home)
        async with app.run_test(size=SIZE) as pilot:
            prompt = await ready(pilot, app)
            await type_text(pilot, "summarise: ")
            paste(app, text)
            await wait_until(pilot, lambda: prompt.text == "summarise: [pasted 25 lines]")
            await pilot.press("enter")
            await wait_until(pilot, lambda: bool(server.requests))
            assert server.requests[0]["messages"][-1]["content"] == "summarise: " + text
            await wait_until(pilot, lambda: bool(app.query(MessageBlock)))
            message = app.query_one(MessageBlock)
            shown = str(message.render())
            assert "summarise: [pasted 25 lines]" in shown and "line 7" not in shown
            message.focus()
            await pilot.press("enter")
            assert "line 25: [b]not markup[/b]" in str(message.render())


def test_history_keeps_no_leading_space_input_nor_huge_ones_and_forgets_a_deleted_session(
        store_backend: str, hermes_home: Path) -> None:
    conn = open_store_db(hermes_home)
    try:
        db.create_session(conn, "s1", None, None, None)
        assert not db.add_input(conn, "s1", " token = 'sk-secret'")  # a leading space: kept out, as in shells
        assert not db.add_input(conn, "s1", "x" * (db.INPUT_MAX_CHARS + 1))
        assert db.add_input(conn, "s1", "kept = 1")
        assert db.add_input(conn, None, "elsewhere = 2")
        assert db.load_inputs(conn) == ["kept = 1", "elsewhere = 2"]
        db.delete_session(conn, "s1")
        assert db.load_inputs(conn) == ["elsewhere = 2"]
    finally:
        conn.close()
    history = InputHistory()
    assert not history.add(" secret = 1") and history.entries == []


async def test_a_leading_space_keeps_python_out_of_the_history_and_it_still_runs(hermes_home: Path) -> None:
    app = HermesApp(cwd=str(hermes_home))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        prompt = app.query_one(PromptInput)
        prompt.insert(" hidden_token = 'abc'")
        await pilot.press("enter")
        for _ in range(200):
            await pilot.pause(0.05)
            if app.query(RunBlock) and app.query(RunBlock).last().status != "running":
                break
        assert app.query(RunBlock).last().status == "success"  # not an IndentationError
        assert " hidden_token = 'abc'" not in prompt.input_history.entries


async def test_tab_in_an_empty_input_puts_nothing_in(hermes_home: Path, tmp_path: Path) -> None:
    """Issue 32: Tab in an empty input put four spaces there that nobody sees."""
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        prompt = await ready(pilot, app)
        await pilot.press("tab")
        await pilot.pause(0.1)
        assert prompt.text == ""
        await type_text(pilot, "if x:")
        await pilot.press("enter", "tab")  # inside a block Tab still indents
        assert prompt.text == "if x:\n" + " " * 8


async def test_a_message_s_leading_whitespace_never_reaches_the_model(hermes_home: Path, tmp_path: Path) -> None:
    with FakeModelServer([{"text": "Hi."}]) as server:
        app = HermesApp(strict_config(f"model:\n  provider: custom\n  default: fake\n  base_url: {server.url}\n"
                                      "  max_retries: 0\n"), cwd=str(tmp_path), home=hermes_home)
        async with app.run_test(size=SIZE) as pilot:
            prompt = await ready(pilot, app)
            prompt.insert("    hello there")
            await pilot.press("enter")
            await wait_until(pilot, lambda: bool(server.requests))
            await pilot.pause(0.2)
        sent = [m for m in server.requests[-1]["messages"] if m["role"] == "user"]
    assert sent[-1]["content"] == "hello there", sent


# -- A burst typed into a pane goes whole to the input ----------------------------------------

async def test_a_burst_typed_into_a_pane_goes_whole_to_the_input(hermes_home: Path, tmp_path: Path) -> None:
    from hermes_tui.tui.widgets.conversation import PromptInput

    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        prompt = app.query_one(PromptInput)
        # f3: the output pane (w, o, y, c are its keys); f4: the kernels pane (r, i, k, v).
        for pane, text in (("f3", 'print("wow yo")'), ("f4", "print(2)")):
            await pilot.press(pane)
            await pilot.pause()
            burst(app, text)
            await pilot.pause()
            await pilot.pause()
            assert app.focused is prompt and prompt.text == text, prompt.text
            prompt.clear()
        # A pane's own key pressed on its own still is the pane's: w toggles the output's wrapping.
        await pilot.press("f3")
        await pilot.pause()
        output = app.query_one("#output-log")
        wrapped = output.wrap
        await pilot.press("w")
        await pilot.pause()
        assert output.wrap is not wrapped and prompt.text == "" and app.focused is not prompt
        # pilot.press (each key handled before the next) gives the same.
        await pilot.press(*"print(7)")
        assert app.focused is prompt and prompt.text == "print(7)", prompt.text


# -- The no-model hint shortens at 80x24 instead of being cut mid-sentence --------------------

async def test_the_no_model_hint_shortens_without_cutting_a_word(hermes_home: Path, tmp_path: Path) -> None:
    from hermes_tui.tui.widgets.conversation import wrapped_rows
    from hermes_tui.tui.screens.main import INPUT_HINT

    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=(64, 24)) as pilot:  # (at 80 columns the pane has room for it: issue 32)
        hint = app.query_one("#hint")
        await pilot.pause()
        await pilot.pause()
        shown = str(hint.render())
        width = hint.content_size.width
        assert width < len(INPUT_HINT) // 2  # the case: it does not fit in two rows
        assert shown.startswith("No model: type Python") and INPUT_HINT.startswith(shown)
        assert INPUT_HINT[len(shown):].startswith(" · ")  # whole parts dropped from the end
        assert wrapped_rows(shown, width) <= hint.region.height <= 2, (shown, width)
    wide = make_app(hermes_home, tmp_path)
    async with wide.run_test(size=(200, 40)) as pilot:  # room for it all: all of it
        await pilot.pause()
        await pilot.pause()
        assert str(wide.query_one("#hint").render()) == INPUT_HINT


# -- Backspace in an indent removes a whole indent level --------------------------------------

async def test_backspace_in_an_indent_removes_a_level(hermes_home: Path, tmp_path: Path) -> None:
    from hermes_tui.tui.widgets.conversation import PromptInput

    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        prompt = app.query_one(PromptInput)
        prompt.focus()
        await pilot.press(*"if a:", "enter", *"if b:", "enter")
        assert prompt.text == "if a:\n    if b:\n        "
        await pilot.press("backspace")
        assert prompt.text == "if a:\n    if b:\n    "
        await pilot.press("backspace")
        assert prompt.text == "if a:\n    if b:\n"
        await pilot.press("backspace")  # at the start of the line: joins it to the one before
        assert prompt.text == "if a:\n    if b:"
        prompt.clear()
        # 6 spaces (the first 4 typed are taken as the auto-indent, issue 32): back to 4
        await pilot.press(*"if a:", "enter", *["space"] * 6)
        await pilot.press("backspace")
        assert prompt.text == "if a:\n    "
        await pilot.press(*"x = 1")  # after text, one character
        await pilot.press("backspace", "backspace")
        assert prompt.text == "if a:\n    x ="


# -- Typed keys after a click on a run go to the input -----------------------------------------

async def test_typing_after_clicking_a_run_goes_to_the_input(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await run(pilot, app, "x = 6")
        await pilot.click(RunBlock)
        await wait_until(pilot, lambda: isinstance(app.focused, RunBlock))
        await pilot.press(*"print(x * 7)")
        prompt = app.query_one(PromptInput)
        assert app.focused is prompt and prompt.text == "print(x * 7)"
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(blocks(app)) == 2 and blocks(app)[-1].status == "success")
        assert blocks(app)[-1].result.output == "42\n"
        await pilot.press("f4")  # a pane's own keys stay its own: r asks to reset the kernel
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        assert prompt.text == ""
        await pilot.press("a")  # a key the kernels pane does not bind goes to the input
        assert app.focused is prompt and prompt.text == "a"
