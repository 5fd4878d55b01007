"""Issue 32, items 7, 8 and 17 (third part), at 80x24: the transcript scrolls from the input,
/find and Ctrl+F search it, /copy and ``y`` copy a block's text (OSC 52), every footer key is
in sight, the conversation takes half the width, the kernels table fits its pane (a sub-agent's
kernel under its parent's), and the pager's and a dialog's status lines are never cut."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from rich.cells import cell_len
from textual import events

from hermes_tui.tui.app import HermesApp
from hermes_tui.runtime.cache import CacheEntry
from hermes_tui.runtime.approvals import ApprovalRequest, FileChange
from hermes_tui.runtime.models import KernelInfo
from hermes_tui.tui.screens.approval import ApprovalScreen
from hermes_tui.tui.screens.cache_browser import EntryScreen
from hermes_tui.tui.screens.child_transcript import ChildTranscriptScreen
from hermes_tui.tui.widgets.conversation import ConversationPane, PromptInput, ReplyBlock, RunBlock, Transcript
from hermes_tui.tui.widgets.delegate import ChildRow
from hermes_tui.tui.widgets.footer import KeysFooter
from hermes_tui.tui.widgets.kernels import KernelsPane
from hermes_tui.tui.widgets.pager import Pager

from fake_models import FakeModelServer
from helpers.pilot import make_app, submit, wait_until
from helpers.models import model_app
from helpers.pilot import burst

SMALL = (80, 24)
PARENT = "working in the user's terminal"


def transcript(app: HermesApp) -> Transcript:
    return app.main.query_one("#transcript", Transcript)


def notices(app: HermesApp) -> list[str]:
    """What the app said in toasts, oldest first."""
    return [n.message for n in app._notifications]


async def filled(pilot, app: HermesApp, count: int = 60, marks: dict[int, str] | None = None) -> Transcript:
    """The transcript with ``count`` notes (note N says ``marks[N]`` too), scrolled to its end."""
    await wait_until(pilot, lambda: app.agent is not None)
    conversation = app.main.conversation
    for index in range(count):
        conversation.add_note(f"note {index} {(marks or {}).get(index, '')}")
    view = transcript(app)
    await wait_until(pilot, lambda: view.max_scroll_y > 0 and view.scroll_y == view.max_scroll_y)
    return view


def in_view(view: Transcript, block) -> bool:
    top = block.virtual_region.y
    return view.scroll_y <= top < view.scroll_y + view.scrollable_content_region.height


# -- item 7: the transcript from the input --------------------------------------------------


async def test_pageup_from_the_input_scrolls_the_transcript_and_the_input_keeps_the_focus(
        hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        view = await filled(pilot, app)
        prompt = app.query_one(PromptInput)
        prompt.focus()
        end = view.scroll_y
        await pilot.press("pageup")
        await pilot.pause()
        assert view.scroll_y < end and app.focused is prompt
        up = view.scroll_y
        app.main.conversation.add_note("a block that comes while the user reads above")
        await pilot.pause(0.2)
        assert view.scroll_y == up  # it stays where the user put it
        await pilot.press("pagedown")
        await pilot.pause()
        assert view.scroll_y > up and app.focused is prompt
        await pilot.press("home")  # in an empty input: the top of the transcript
        await pilot.pause()
        assert view.scroll_y == 0 and app.focused is prompt
        await pilot.press("ctrl+end")
        await pilot.pause()
        assert view.scroll_y == view.max_scroll_y
        app.main.conversation.add_note("followed again")
        await wait_until(pilot, lambda: view.scroll_y == view.max_scroll_y and view.max_scroll_y > end)
        prompt.insert("x = 1")
        await pilot.press("home")  # in typed text Home is the start of the line, as before
        await pilot.pause()
        assert prompt.cursor_location == (0, 0) and view.scroll_y == view.max_scroll_y
        await pilot.press("ctrl+home")  # Ctrl+Home scrolls whatever is typed
        await pilot.pause()
        assert view.scroll_y == 0 and prompt.text == "x = 1" and app.focused is prompt


async def test_find_scrolls_to_the_newest_match_then_older_ones_and_says_when_none(
        hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        view = await filled(pilot, app, marks={7: "the NEEDLE is here", 40: "another needle"})
        await submit(pilot, app, "/find needle")
        blocks = list(view.children)
        await wait_until(pilot, lambda: blocks[40].has_class("-found"))
        await pilot.pause()
        assert in_view(view, blocks[40]) and not in_view(view, blocks[7])
        assert any("1 of 2" in text for text in notices(app))
        prompt = app.query_one(PromptInput)
        assert app.focused is prompt and prompt.text == ""
        await pilot.press("ctrl+f")  # an empty input: /find with the last search, ready to run
        assert prompt.text == "/find needle"
        await pilot.press("ctrl+f")  # again: the next older match, the input kept
        await wait_until(pilot, lambda: blocks[7].has_class("-found"))
        await pilot.pause()
        assert in_view(view, blocks[7]) and not blocks[40].has_class("-found")
        assert prompt.text == "/find needle" and any("2 of 2" in text for text in notices(app))
        prompt.clear()
        await submit(pilot, app, "/find [b]no such text[/b]")
        await wait_until(pilot, lambda: any("Nothing in the conversation matches" in text for text in notices(app)))
        assert "'[b]no such text[/b]'" in notices(app)[-1]  # the query as typed, never markup
        assert not view.query(".-found")


async def test_copy_puts_a_reply_a_code_block_or_an_output_on_the_clipboard(
        hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await wait_until(pilot, lambda: app.agent is not None)
        await submit(pilot, app, "print('the output ' * 2)")
        await wait_until(pilot, lambda: app.query(RunBlock) and app.query(RunBlock).last().status == "success")
        reply = "Here it is:\n\n```python\nprint('copied code')\n```\n\nDone [bold]x[/bold]."
        app.main.conversation.add_reply(reply)
        await wait_until(pilot, lambda: app.query(ReplyBlock))
        await submit(pilot, app, "/copy")
        await wait_until(pilot, lambda: app.clipboard == reply)
        await submit(pilot, app, "/copy code")
        await wait_until(pilot, lambda: app.clipboard == "print('copied code')")
        await submit(pilot, app, "/copy output")
        await wait_until(pilot, lambda: app.clipboard == "the output the output \n")
        assert any("Copied the last run's output" in text for text in notices(app))
        app.copy_to_clipboard("")
        run = app.query(RunBlock).last()
        run.focus()
        await pilot.press("y")  # on a run's block: its output
        await wait_until(pilot, lambda: app.clipboard == "the output the output \n")
        assert app.query_one(PromptInput).text == ""  # the key was the block's, not typed


# -- item 8: 80x24 -------------------------------------------------------------------------


def footer_shown(footer: KeysFooter) -> str:
    """The footer's text as it is on screen: its lines, each cut to its width."""
    lines = footer.render().plain.split("\n")[:footer.size.height]
    return "\n".join(line[:footer.size.width] for line in lines)


async def test_every_footer_key_is_in_sight_at_80x24_and_f8_maximises_the_conversation(
        hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await wait_until(pilot, lambda: app.agent is not None)
        for pane in ("f4", "f3", "f2"):  # the kernels pane, the output pane, the input
            await pilot.press(pane)
            await pilot.pause()
            footer = app.main.query_one(KeysFooter)
            shown = footer_shown(footer)
            assert footer.keys and all(f" {key.display} {key.description}" in shown for key in footer.keys), shown
        assert " f8 Maximise" in shown and " ^f Find" in shown
        conversation = app.main.query_one(ConversationPane)
        await pilot.press("f8")
        await pilot.pause()
        assert app.main.maximized is conversation and conversation.outer_size.width == 80
        assert app.focused is app.query_one(PromptInput)
        await pilot.press("f8")
        await pilot.pause()
        assert app.main.maximized is None


async def test_the_conversation_takes_half_the_width_at_80_columns(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        assert app.main.query_one(ConversationPane).outer_size.width >= 40
        assert app.main.query_one("#right").outer_size.width >= 30  # the output and kernels keep room
    wide = make_app(hermes_home, tmp_path)
    async with wide.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        assert wide.main.query_one(ConversationPane).outer_size.width == 64  # wide: as it was (2fr of 5)


def kernel_info(kernel_id: str, session: str, state: str = "idle") -> KernelInfo:
    now = datetime(2026, 12, 1, 12, 0, 0)
    return KernelInfo(id=kernel_id, key=kernel_id, session=session, mode="project", interpreter="/usr/bin/python3",
                      cwd="/home/user/project", pid=4242, state=state, started_at=now, last_used=now,
                      execution_count=3, idle_deadline=now + timedelta(minutes=29), subagent="::child::" in session,
                      sandbox="workspace-write·bwrap")


async def test_the_kernels_table_fits_its_pane_at_80x24_with_a_header_on_the_state_column(
        hermes_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(HermesApp, "_every_second", lambda self: None)  # the rows below stay
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        pane = app.main.query_one(KernelsPane)
        table = pane.table()
        pane.update_kernels([kernel_info("k1", "20261201-120000-abcd", "busy"),
                             kernel_info("k2", "20261201-120000-abcd::child::0a1b2c3d4e-alpha")],
                            {"k1": 40 << 20}, now=datetime(2026, 12, 1, 12, 0, 5))
        await pilot.pause()
        width = table.scrollable_content_region.width
        assert 0 < table.virtual_size.width <= width  # every column drawn fits: nothing to scroll to
        header = table.render_line(0).text
        assert header.split()[:2] == ["state", "id"] and "session" in header
        child = table.render_line(2).text  # under the header and its parent's row
        assert child.split()[1] == "k2" and "└ alpha" in child
        assert cell_len(header.rstrip()) <= width


async def test_the_pager_status_and_a_dialog_title_are_not_cut_at_80x24(hermes_home: Path, tmp_path: Path) -> None:
    path = tmp_path / "stdout.txt"
    path.write_text("".join(f"line {n} {'needle' if n == 250_000 else 'x' * 40}\n" for n in range(300_000)))
    entry = CacheEntry(id="x", path=path, kind="file", when=0, size=path.stat().st_size, title="row", files=[path])
    app = HermesApp(cwd=str(tmp_path), home=hermes_home)
    async with app.run_test(size=SMALL) as pilot:
        await app.push_screen(EntryScreen(entry))
        await wait_until(pilot, lambda: app.screen.query(Pager) and app.screen.query_one(Pager).file_size > 0)
        pager = app.screen.query_one(Pager)
        await pilot.press("slash", *"needle", "enter")
        await wait_until(pilot, lambda: "at byte" in str(pager.query_one("#pager-status").render()))
        await pilot.pause()
        status = pager.query_one("#pager-status")
        text = status.content.plain
        assert re.fullmatch(r"line 250,001 · byte [\d,]+ of [\d,]+ \(\d+%\) · 'needle' at byte [\d,]+", text), text
        assert status.region.right <= 80 and cell_len(text) <= status.content_size.width * status.content_size.height
        footer = app.screen.query_one(KeysFooter)  # the screen's keys, every one in sight
        assert all(f" {key.display} {key.description}" in footer_shown(footer) for key in footer.keys)
        assert "Copy path" in footer_shown(footer) and "Previous" in footer_shown(footer)
        await pilot.press("escape")

        request = ApprovalRequest(kind="file", text="write_file config/*.yaml", cwd=str(tmp_path), session="s",
                                  origin="user", reasons=["writes outside the working dir"],
                                  choices=["once", "deny"], deadline=1_000_300.0, diff="--- a\n+++ b\n",
                                  files=[FileChange(path=f"/home/user/project/config/{n}.yaml", size=10)
                                         for n in range(12)])
        app.push_screen(ApprovalScreen(request, position=2, total=3, clock=lambda: 1_000_000.0, arming=0))
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.query("#title"))
        await pilot.pause()
        title = app.screen.query_one("#title")
        words = title.content.plain
        assert words.endswith("request 2 of 3")
        assert title.region.right <= app.screen.query_one("#countdown").region.x
        assert cell_len(words) <= title.content_size.width * title.content_size.height


# -- item 17: a sub-agent's kernel, under its parent's --------------------------------------


async def test_a_real_sub_agents_kernel_shows_under_its_parents_at_80x24(hermes_home: Path, tmp_path: Path) -> None:
    flag = tmp_path / "go"
    waits = f"import os, time\nwhile not os.path.exists({str(flag)!r}): time.sleep(0.05)\nprint('child ran')"
    tasks = [{"goal": "run the ALPHA script", "name": "alpha"}]
    with FakeModelServer([
        {"match": "first", "text": "", "tool_calls": [{"name": "execute_code", "arguments": {"code": "x = 1"}}]},
        {"match": PARENT, "text": "", "tool_calls": [{"name": "delegate_task", "arguments": {"tasks": tasks}}]},
        {"match": "ALPHA", "text": "", "tool_calls": [{"name": "execute_code", "arguments": {"code": waits}}]},
        {"match": "child ran", "text": "alpha is done."},
        {"match": PARENT, "text": "All done."},
    ]) as server:
        app = model_app(hermes_home, tmp_path, server, session="s-kernels")
        async with app.run_test(size=SMALL) as pilot:
            await wait_until(pilot, lambda: app.agent is not None)
            await submit(pilot, app, "first run some code, then fan out")
            pane = app.main.query_one(KernelsPane)
            table = pane.table()

            def rows() -> list[str]:
                return [table.render_line(y).text for y in range(1, table.row_count + 1)]

            try:
                await wait_until(pilot, lambda: table.row_count == 2, 60)
                await pilot.pause(0.2)
                parent, child = rows()
                kernels = {info.id: info for info in app.runtime.kernels()}
                assert kernels[parent.split()[1]].session == "s-kernels"
                assert kernels[child.split()[1]].session.startswith("s-kernels::child::")
                assert "s-kernels" in parent and "└ alpha" in child  # drawn, in the 80-column layout
            finally:
                flag.write_text("go")
            await wait_until(pilot, lambda: any("All done." in b.text for b in app.query(ReplyBlock)), 60)
            await wait_until(pilot, lambda: table.row_count == 1)  # its kernel ends with the sub-agent


# -- the trial: the first Enter after a sub-agent's transcript closes ------------------------


def typed_at_once(app: HermesApp, text: str) -> None:
    """``text`` and Enter as a terminal hands them to the app, in one read: all queued at once,
    sent to the widget focused then (``pilot.press`` waits for each key, which hides the race)."""
    burst(app, text)
    enter = events.Key("enter", "\r")
    enter.set_sender(app)
    app._driver.send_message(enter)


async def test_the_first_enter_after_a_sub_agents_transcript_closes_sends(hermes_home: Path, tmp_path: Path) -> None:
    """Esc on a sub-agent's transcript gives the focus back to its row; ``plain words`` and Enter
    typed then went to the row: the first key moved the focus to the input, the words followed,
    and Enter, checked against the input's bindings by then, was lost (a second Enter sent)."""
    tasks = [{"goal": "find the ALPHA number", "name": "alpha"}]
    with FakeModelServer([
        {"match": PARENT, "text": "", "tool_calls": [{"name": "delegate_task", "arguments": {"tasks": tasks}}]},
        {"match": "ALPHA", "text": "ALPHA is 42."},
        {"match": PARENT, "text": "Found it."},
        {"match": "plain words", "text": "Heard the plain words."},
        {"match": "more words", "text": "Heard more words."},
    ]) as server:
        app = model_app(hermes_home, tmp_path, server, session="s-enter")
        async with app.run_test(size=SMALL) as pilot:
            await wait_until(pilot, lambda: app.agent is not None)
            await submit(pilot, app, "fan out please")
            await wait_until(pilot, lambda: any("Found it." in b.text for b in app.main.query(ReplyBlock)), 60)
            prompt = app.main.query_one(PromptInput)
            row = app.main.query_one(ChildRow)
            await pilot.click(ChildRow)
            await wait_until(pilot, lambda: isinstance(app.screen, ChildTranscriptScreen) and app.screen.drawn)
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.screen is app.main)
            assert app.focused is row  # Textual gives the focus back to the row
            typed_at_once(app, "plain words")
            await wait_until(pilot, lambda: prompt.text == "")  # the first Enter sent it
            await wait_until(pilot, lambda: any("Heard the plain words." in b.text for b in app.main.query(ReplyBlock)))
            assert prompt.text == "" and app.focused is prompt and app.screen is app.main
            # Enter on the row (the keyboard's way in), then keys typed one by one: the same.
            row.focus()
            await pilot.press("enter")
            await wait_until(pilot, lambda: isinstance(app.screen, ChildTranscriptScreen) and app.screen.drawn)
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.screen is app.main)
            await pilot.press(*"more words", "enter")
            await wait_until(pilot, lambda: any("Heard more words." in b.text for b in app.main.query(ReplyBlock)))
            assert prompt.text == "" and app.screen is app.main


async def test_a_command_typed_while_scrolled_up_shows_its_answer(hermes_home: Path, tmp_path: Path) -> None:
    """Final trial: PageUp, then /budget: its note was added out of sight until Ctrl+End."""
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        view = await filled(pilot, app)
        prompt = app.query_one(PromptInput)
        prompt.focus()
        await pilot.press("pageup")
        await pilot.pause()
        assert view.scroll_y < view.max_scroll_y
        prompt.insert("/budget")
        await pilot.press("enter")
        await wait_until(pilot, lambda: "no budget to set" in str(list(app.query("#transcript > *"))[-1].render()))
        await pilot.pause(0.3)
        assert view.scroll_y == view.max_scroll_y  # the answer is in sight
