"""A run's output under its block (a cut one points to its saved file), wrapping in the output pane, a header that
shortens, a stored session drawn a page at a time, and the footer that leaked its keys."""

from __future__ import annotations

import asyncio
import gc
import sys
from pathlib import Path

from textual.app import App, ComposeResult
from textual.widget import Widget

from hermes_tui.tui.app import HermesApp
from hermes_tui.config import parse_config
from hermes_tui.runtime.models import ExecResult, KernelRef
from hermes_tui.tui.widgets.conversation import MAX_BLOCKS, MessageBlock, ReplyBlock, RunBlock, output_preview
from hermes_tui.tui.screens.cache_browser import EntryScreen
from hermes_tui.tui.widgets.output import OutputLog, OutputPane, header_line
from hermes_tui.tui.widgets.pager import Pager

sys.path.insert(0, str(Path(__file__).resolve().parent / "bench"))

from bench_ui import make_session  # noqa: E402
from helpers.pilot import SMALL, layouts_asked, make_app


def result(output: str, exec_id: str = "20260101-000000-abcd1234") -> ExecResult:
    return ExecResult(status="success", output=output, duration_seconds=0.5, exec_id=exec_id,
                      kernel=KernelRef(id="k1", reused=False, execution_count=1, state_reset=False))


async def wait_until(pilot, predicate, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await pilot.pause(0.02)


# -- the preview under a run ---------------------------------------------------------------

def test_short_output_shows_whole_under_its_block() -> None:
    preview = output_preview("one\ntwo\n")
    assert preview is not None and preview.plain == "one\ntwo"
    assert output_preview("") is None and output_preview("\n\n") is None


def test_long_output_shows_its_first_lines_and_how_many_more() -> None:
    preview = output_preview("\n".join(f"line {i}" for i in range(20)) + "\n")
    assert preview is not None
    lines = preview.plain.split("\n")
    assert lines[:8] == [f"line {i}" for i in range(8)] and "line 8" not in preview.plain
    assert lines[8].startswith("… 12 more lines")
    wide = output_preview("x" * 5000)
    assert wide is not None and wide.plain.count("x") == 1000 and "4,000 more characters" in wide.plain


def test_preview_is_text_never_markup() -> None:
    preview = output_preview("[bold red]not markup[/] [@click=app.quit]x[/] \x1b[2J")
    assert preview is not None
    assert preview.plain.startswith("[bold red]not markup[/] [@click=app.quit]x[/]") and "\\x1b[2J" in preview.plain
    assert not preview.spans  # no style came from the text


class RunApp(App[None]):
    def compose(self) -> ComposeResult:
        yield RunBlock("print('hi')")
        yield OutputPane()

    def on_run_block_selected(self, event: RunBlock.Selected) -> None:
        self.query_one(OutputPane).show(event.block.result)


async def test_run_block_draws_the_preview_and_enter_opens_the_whole_output() -> None:
    output = "".join(f"row {i}\n" for i in range(30))
    app = RunApp()
    async with app.run_test(size=(100, 40)) as pilot:
        block = app.query_one(RunBlock)
        block.set_result(result(output))
        await pilot.pause()
        shown = "\n".join(line.text for line in block.render_lines(block.region.reset_offset))
        assert "row 0" in shown and "row 7" in shown and "row 8" not in shown and "22 more lines" in shown
        block.focus()
        await pilot.press("enter")
        await pilot.pause()
        log = app.query_one(OutputLog)
        assert list(log.lines[:30]) == [f"row {i}" for i in range(30)]


# -- the output pane: wrapping, the header, writes without layout --------------------------

class PaneApp(App[None]):
    def compose(self) -> ComposeResult:
        yield OutputPane()

    def on_mount(self) -> None:
        from textual.widgets import Footer

        self.mount(Footer())


async def test_long_lines_wrap_and_w_toggles_it_with_the_footer_saying_so() -> None:
    app = PaneApp()
    async with app.run_test(size=(60, 20)) as pilot:
        pane = app.query_one(OutputPane)
        log = app.query_one(OutputLog)
        pane.show(result("a" * 200 + "\nshort\n"))
        await pilot.pause()
        width = log.scrollable_content_region.width
        assert log.wrap and log.lines[0] == "a" * 200  # the raw line is kept
        assert log.row_count == -(-200 // width) + 1 and log.virtual_size.height == log.row_count
        assert log.virtual_size.width <= width  # nothing to scroll sideways
        strips = [log.render_line(y).text for y in range(log.row_count)]
        assert "".join(strips[:-1]).replace(" ", "") == "a" * 200 and strips[-1].startswith("short")
        log.focus()
        await pilot.pause()
        assert app.screen.active_bindings["w"].binding.description == "Wrap: on"
        await pilot.press("w")
        await pilot.pause()
        assert not log.wrap and log.row_count == 2 and log.virtual_size.width >= 200
        assert app.screen.active_bindings["w"].binding.description == "Wrap: off"
        await pilot.press("w")
        assert log.wrap


async def test_live_writes_wrap_and_repaint_without_a_layout_of_the_screen() -> None:
    app = PaneApp()
    async with app.run_test(size=(60, 20)) as pilot:
        pane = app.query_one(OutputPane)
        log = app.query_one(OutputLog)
        pane.begin("x1", "k1", 30, 0)
        await pilot.pause()
        with layouts_asked() as layouts:
            for index in range(20):
                log.write(f"line {index} " + "b" * 150 + "\n")
            log.write("partial")
            log.write(" line\n")
        assert not layouts, layouts  # Log.write set virtual_size: a layout of the screen each time
        width = log.scrollable_content_region.width
        assert log.lines[20] == "partial line"
        assert log.row_count == 20 * -(-(len("line 10 ") + 150) // width) + 1 - (20 - 10) * 0 or log.row_count > 40
        await pilot.pause()
        assert log.scroll_y == log.max_scroll_y  # it follows the end


async def test_a_new_run_blanks_the_last_runs_notes_and_keeps_their_rows() -> None:
    # Each change of the notes' height laid out and redrew the whole screen twice per run, while
    # the run's output waited (issue 20): the rows stay, the text does not.
    app = PaneApp()
    async with app.run_test(size=(100, 20)) as pilot:
        pane = app.query_one(OutputPane)
        spill = app.query_one("#output-spill")
        await pilot.pause()
        resting = spill.size.height  # no notes yet
        cut = result("head ... tail", exec_id="x1").model_copy(update={
            "stdout_truncated": True, "stdout_bytes_total": 5_000_000, "stdout_spill_path": "/tmp/x1.stdout.txt"})
        pane.begin("x1", "k1", 30, 0)
        pane.finish(cut)
        await pilot.pause()
        assert "Output cut to head and tail (5,000,000 bytes in all)." in str(spill.render())
        assert "Full output: /tmp/x1.stdout.txt" in str(spill.render()) and spill.size.height == 2

        with layouts_asked() as layouts:
            pane.begin("x2", "k1", 30, 0)
            assert str(spill.render()).strip() == ""  # nothing of the last run is left to mislead
            await pilot.pause()
            assert spill.size.height == 2
            pane.finish(cut.model_copy(update={"exec_id": "x2", "stdout_spill_path": "/tmp/x2.stdout.txt"}))
            await pilot.pause()
        assert spill not in layouts
        assert "Full output: /tmp/x2.stdout.txt" in str(spill.render())

        pane.begin("x3", "k1", 30, 0)
        pane.finish(result("small", exec_id="x3"))  # no notes: their rows go
        await pilot.pause()
        assert str(spill.render()).strip() == "" and spill.size.height == resting


def test_header_shortens_by_whole_parts() -> None:
    args = ("running", "1.5s", " of 30s", None, "tools 2/50", "kernel k7f3a", "20260101-000000-abcd1234")
    full = header_line(*args, room=200)
    assert full == " · 1.5s of 30s · tools 2/50 · kernel k7f3a · 20260101-000000-abcd1234"
    for room in range(12, 80):
        line = header_line(*args, room=room)
        assert len("running" + line) <= room
        assert full.startswith(line) or line in (" · 1.5s · tools 2/50", " · 1.5s")  # whole parts only


async def test_header_fits_the_pane_at_80_columns() -> None:
    app = HermesApp(cwd=str(Path.cwd()))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        pane = app.query_one(OutputPane)
        pane.show(result("x\n", exec_id="20260101-000000-abcd1234"))
        await pilot.pause()
        header = app.query_one("#output-header")
        text = "".join(s.text for s in header.render_lines(header.region.reset_offset)[:1]).strip()
        assert text.startswith("success · ")
        assert len(text) <= header.size.width - 2
        parts = text.split(" · ")
        assert all(part in ("success", "tools 0", "kernel k1", "20260101-000000-abcd1234") or part.endswith("s")
                   for part in parts), parts


# -- a stored session, a page at a time ------------------------------------------------------


def stored_session_app(home: Path, messages: int) -> HermesApp:
    """The app opening a stored session of ``messages`` messages (as ``--resume`` does)."""
    make_session(home, messages)
    config = parse_config("model:\n  provider: custom\n  default: m\n  base_url: http://127.0.0.1:9/v1\n")
    return HermesApp(config, cwd=str(home), home=home, session="big")


async def test_a_long_stored_session_draws_its_newest_page_then_older_ones_on_scrolling_up(tmp_path: Path) -> None:
    app = stored_session_app(tmp_path, 1200)
    async with app.run_test(size=(120, 40)) as pilot:
        transcript = app.query_one("#transcript")
        await wait_until(pilot, lambda: any(isinstance(b, ReplyBlock) and "reply 299" in b.text
                                            for b in transcript.children))
        await pilot.pause(0.5)
        first = len(transcript.children)
        assert first <= 40  # not the 80 newest messages (~120 blocks) of before
        assert transcript.scroll_y == transcript.max_scroll_y > 0  # the newest in view
        head = transcript.children[0]
        assert "1200 messages stored" in str(head.render()) and "scroll up" in str(head.render())
        oldest_reply = next(b for b in transcript.children if isinstance(b, ReplyBlock))
        transcript.scroll_home(animate=False, immediate=True)
        await wait_until(pilot, lambda: len(transcript.children) > first)
        await pilot.pause(0.3)
        assert transcript.children[0] is head  # older pages go below the head line
        assert oldest_reply.region.y - transcript.region.y <= 2  # the view stays on what was at the top
        for _ in range(40):  # keep scrolling up: the pane stops at MAX_BLOCKS
            transcript.scroll_home(animate=False, immediate=True)
            await pilot.pause(0.1)
        assert len(transcript.children) <= MAX_BLOCKS
        assert "not drawn here" in str(head.render())
        app.query_one("#transcript").remove_children()


async def test_a_stored_session_shorter_than_the_view_draws_all_of_it(tmp_path: Path) -> None:
    app = stored_session_app(tmp_path, 12)
    async with app.run_test(size=(120, 150)) as pilot:
        transcript = app.query_one("#transcript")
        # The first page (10 blocks) does not fill 150 rows: the rest follows without scrolling.
        await wait_until(pilot, lambda: any(isinstance(b, MessageBlock) and b.text == "question 0"
                                            for b in transcript.children))
        assert sum(isinstance(b, ReplyBlock) for b in transcript.children) == 6
        head = transcript.children[0]
        assert "12 messages stored" in str(head.render()) and "scroll up" not in str(head.render())


# -- the footer ------------------------------------------------------------------------------

def footer_text(app: HermesApp) -> str:
    from hermes_tui.tui.widgets.footer import KeysFooter

    return str(app.query_one(KeysFooter).render())


async def test_footer_shows_the_keys_of_the_focused_pane_and_a_click_presses_one() -> None:
    from hermes_tui.tui.widgets.footer import KeysFooter

    app = HermesApp(cwd=str(Path.cwd()))
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        assert "Help" in footer_text(app) and "Interrupt" not in footer_text(app)
        await pilot.press("f4")
        await wait_until(pilot, lambda: "Interrupt" in footer_text(app))
        assert "Kill" in footer_text(app)
        await pilot.press("f2")
        await wait_until(pilot, lambda: "Interrupt" not in footer_text(app))
        footer = app.query_one(KeysFooter)
        column = next(start for _row, start, _end, key in footer._spans if key.description == "Kernels")
        await pilot.click(KeysFooter, offset=(column + 1, 0))
        await wait_until(pilot, lambda: app.focused is not None and app.focused.id == "kernel-table")


async def test_focus_changes_leave_no_widgets_behind() -> None:
    app = HermesApp(cwd=str(Path.cwd()))
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        for index in range(30):
            await pilot.press("f4" if index % 2 == 0 else "f2")
            await pilot.pause(0.02)
        await pilot.pause(0.3)
        gc.collect()
        gone = [o for o in gc.get_objects() if isinstance(o, Widget) and not o.is_attached]
        assert len(gone) < 20, len(gone)  # Textual's footer left ~12 keys behind per change


def rendered(renderable, width: int = 200) -> str:
    """What a Rich renderable shows, as plain text."""
    import io

    from rich.console import Console

    console = Console(width=width, file=io.StringIO(), record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


async def test_the_preview_of_a_cut_output_points_to_the_saved_file(hermes_home: Path, tmp_path: Path) -> None:
    from helpers.pilot import blocks, submit

    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await submit(pilot, app, 'for i in range(200000): print("line", i)\n')
        await wait_until(pilot, lambda: blocks(app) and blocks(app)[-1].status == "success", timeout=60)
        block = blocks(app)[-1]
        assert block.result is not None and block.result.stdout_truncated
        shown = rendered(block.content)
        assert "output pane" not in shown, shown
        assert "is saved: c (or F9) opens it in the pager" in shown
        block.focus()
        await pilot.press("c")  # what it says works: the saved entry, with the whole output in the pager
        await wait_until(pilot, lambda: isinstance(app.screen, EntryScreen))
        await wait_until(pilot, lambda: app.screen.query(Pager) and app.screen.query_one(Pager).file_size > 0)
