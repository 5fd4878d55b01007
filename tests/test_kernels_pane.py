"""The kernels pane refreshes every second: the same kernels change only their cells (a rebuilt
table is laid out and restyled again, which a flood of output cannot afford); new or gone
kernels rebuild it, and the selected row stays selected. Reset (F5, /reset, the pane's r) and
kill (the pane's k) ask first when a kernel's variables would be lost (Ctrl+R is the input's),
and at 80x24 the table shows its useful columns first and fits its pane."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from rich.cells import cell_len
from textual.app import App, ComposeResult

from hermes_tui.runtime.models import KernelInfo
from hermes_tui.tui.app import HermesApp
from hermes_tui.tui.screens.dialogs import ConfirmScreen, loss_question
from hermes_tui.tui.widgets.kernel_table import KernelTable
from hermes_tui.tui.widgets.kernels import KernelsPane

from conftest import pid_running
from helpers.pilot import blocks, make_app, submit, wait_until
from helpers.pilot import SMALL, run

NOW = datetime(2026, 11, 30, 12, 0, 0)


def kernel(kernel_id: str, state: str = "idle", idle: float = 5, runs: int = 1) -> KernelInfo:
    return KernelInfo(id=kernel_id, key=kernel_id, session="s1", mode="project", interpreter="python3", cwd="/tmp",
                      pid=100, state=state, started_at=NOW - timedelta(minutes=5), last_used=NOW - timedelta(seconds=idle),
                      execution_count=runs, idle_deadline=NOW + timedelta(minutes=29))


class Host(App[None]):
    def compose(self) -> ComposeResult:
        yield KernelsPane()


async def test_the_same_kernels_redraw_only_their_changed_rows_and_new_ones_all() -> None:
    app = Host()
    async with app.run_test() as pilot:
        pane = app.query_one(KernelsPane)
        table = pane.table()
        pane.update_kernels([kernel("k1"), kernel("k2")], {"k1": 10 << 20}, now=NOW)
        await pilot.pause()
        table.move_cursor(row=1)
        await pilot.pause()
        drawn: list[str] = []
        line = table._line
        table._line = lambda cells, style: (drawn.append(cells[1]), line(cells, style))[1]  # type: ignore[method-assign]

        later = NOW + timedelta(seconds=3)
        pane.update_kernels([kernel("k1", idle=8, runs=2), kernel("k2", state="busy")], {"k1": 12 << 20}, now=later)
        await pilot.pause()
        assert sorted(drawn) == ["k1", "k2"]  # both rows changed; the header did not
        assert table.get_row("k1")[2:5] == ["11s", "28m57s", "12 MB"] and table.get_cell("k1", "runs") == "2"
        assert table.get_row("k2")[0] == "●" and table.get_row("k2")[2] == "—"
        assert table.cursor_row == 1 and pane.selected_id() == "k2"

        drawn.clear()  # one kernel ends its run: its row alone is drawn again
        pane.update_kernels([kernel("k1", idle=8, runs=2), kernel("k2", idle=1)], {"k1": 12 << 20}, now=later)
        await pilot.pause()
        assert drawn == ["k2"] and table.get_row("k2")[0] == "○"

        drawn.clear()
        pane.update_kernels([kernel("k1"), kernel("k2"), kernel("k3")], {}, now=later)
        await pilot.pause()
        assert sorted(drawn) == ["id", "k1", "k2", "k3"]  # a new row: all of them, the header too
        assert table.row_count == 3 and pane.selected_id() == "k2"
        assert pane.border_subtitle == "3 live"


class Recording(Host):
    def __init__(self) -> None:
        super().__init__()
        self.actions: list[tuple[str, str]] = []

    def on_kernels_pane_action(self, message: KernelsPane.Action) -> None:
        self.actions.append((message.kernel_id, message.action))


async def test_the_table_is_driven_by_keys_and_clicks_and_shows_names_as_text() -> None:
    app = Recording()
    async with app.run_test(size=(80, 12)) as pilot:
        pane = app.query_one(KernelsPane)
        hostile = kernel("k3")
        hostile.session = "[b]x[/b]\x1b]0;owned\x07"
        hostile.cwd = "/tmp/a\nb"
        pane.update_kernels([kernel("k1"), kernel("k2"), hostile], {}, now=NOW)
        table = pane.table()
        table.focus()
        await pilot.pause()
        await pilot.press("down", "down", "down")  # the last row stops the cursor
        assert pane.selected_id() == "k3"
        await pilot.press("home")
        assert pane.selected_id() == "k1"
        await pilot.press("end", "up", "i")
        await pilot.pause()
        assert app.actions == [("k2", "interrupt")]
        await pilot.click(table, offset=(3, 1))  # the first row (the header is line 0)
        assert pane.selected_id() == "k1"
        drawn = table.render_line(3).text  # k3's row
        assert table.get_cell("k3", "session") == "[b]x[/b]\\x1b]0;owned\\x07"  # shown, never interpreted
        assert "[b]x[/b]\\x1b]0;" in drawn and "\x1b" not in drawn  # (cut to fit the pane)
        assert table.get_cell("k3", "cwd") == "/tmp/a\\nb"  # one line per row
        assert table.scroll_x == 0 and "cwd" not in table.shown_columns
        await pilot.press("right")
        assert table.skip == 1  # wider than the pane: Right moves the columns sideways
        for _ in range(12):
            await pilot.press("right")
        assert table.shown_columns[:2] == ["state", "id"] and "python" in table.shown_columns
        assert table.virtual_size.width <= table.scrollable_content_region.width


async def test_the_cursor_stays_in_view_above_the_sideways_scrollbar() -> None:
    app = Recording()
    async with app.run_test(size=(40, 10)) as pilot:  # 12 columns: a sideways scrollbar takes a row
        pane = app.query_one(KernelsPane)
        pane.update_kernels([kernel(f"k{n:02}") for n in range(20)], {}, now=NOW)
        table = pane.table()
        table.focus()
        await pilot.pause()
        shown = table.scrollable_content_region.height - 1  # rows under the header

        def cursor_in_view() -> bool:
            return table.scroll_offset.y <= table.cursor_row < table.scroll_offset.y + shown

        for key in ["down"] * 9 + ["end", "pageup", "home", "pagedown"]:
            await pilot.press(key)
            assert cursor_in_view(), (key, table.cursor_row, table.scroll_offset.y, shown)
        await pilot.press("end")
        selected = pane.selected_id()
        # A kernel added above it: the cursor stays on its kernel, and in view.
        pane.update_kernels([kernel("k00a")] + [kernel(f"k{n:02}") for n in range(20)], {}, now=NOW)
        await pilot.pause()
        assert pane.selected_id() == selected and cursor_in_view()
        await pilot.click(table, offset=(3, shown))  # the last row in view
        assert pane.selected_id() == table.key_at(table.scroll_offset.y + shown - 1)


# -- reset and kill, asked first when variables would be lost ----------------------------------

def question(app: HermesApp) -> str:
    assert isinstance(app.screen, ConfirmScreen)
    return app.screen.question


def alive(app: HermesApp) -> list[str]:
    return [k.id for k in app.runtime.kernels()]


async def test_f5_resets_after_asking_when_the_kernel_holds_variables(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await run(pilot, app, "a = 1\nb = 2\nimport json\n")
        kernel = alive(app)[0]
        await pilot.press("f5")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert question(app) == loss_question("reset", [kernel], 3)
        assert "3 names" in question(app)
        await pilot.press("n")  # no: the kernel and its names stay
        await wait_until(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        assert alive(app) == [kernel]
        await pilot.press("f5")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("escape")  # Esc says no too
        await wait_until(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        await run(pilot, app, "print(a + b)")
        assert alive(app) == [kernel] and blocks(app)[-1].result.output == "3\n"
        await pilot.press("f5")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("enter")  # Enter confirms
        await wait_until(pilot, lambda: not alive(app))
        assert any("Kernel reset" in str(n.render()) for n in app.query(".note"))


async def test_slash_reset_asks_and_y_confirms(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await run(pilot, app, "kept = 'x'")
        await submit(pilot, app, "/reset")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert "1 name " in question(app)
        await pilot.press("y")
        await wait_until(pilot, lambda: not alive(app))


async def test_ctrl_r_does_not_reset(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    assert not any(b.key == "ctrl+r" for b in app.BINDINGS)  # the input's reverse search has it
    async with app.run_test(size=SMALL) as pilot:
        await run(pilot, app, "kept = 1")
        kernel = alive(app)[0]
        await pilot.press("ctrl+r")
        await pilot.pause(0.3)
        assert alive(app) == [kernel] and not isinstance(app.screen, ConfirmScreen)


async def test_a_kernel_without_variables_is_reset_without_asking(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await run(pilot, app, "print('nothing kept')")
        assert alive(app)
        await pilot.press("f5")
        await wait_until(pilot, lambda: not alive(app))
        assert not isinstance(app.screen, ConfirmScreen)
        await run(pilot, app, "print('again')")
        await pilot.press("f4")
        await pilot.press("k")  # the kernels pane's kill: nothing to lose, nothing asked
        await wait_until(pilot, lambda: not alive(app))
        assert not isinstance(app.screen, ConfirmScreen)


async def test_kernels_pane_reset_and_kill_ask_first(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await run(pilot, app, "x = 1")
        pane = app.query_one(KernelsPane)
        await wait_until(pilot, lambda: bool(pane.kernels))
        kernel, pid = pane.kernels[0].id, pane.kernels[0].pid
        await pilot.press("f4")
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert question(app).startswith(f"Reset kernel {kernel}? 1 name ")
        await pilot.press("n")
        await wait_until(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        assert alive(app) == [kernel]
        await pilot.press("k")  # the hard kill, asked first
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert question(app).startswith(f"Kill kernel {kernel}? 1 name ")
        await pilot.press("y")
        await wait_until(pilot, lambda: not alive(app))
        assert not pid_running(pid)


async def test_killing_a_busy_kernel_asks_without_a_count(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await submit(pilot, app, "import time\nprint('sleeping', flush=True)\ntime.sleep(30)\n")
        pane = app.query_one(KernelsPane)
        await wait_until(pilot, lambda: pane.kernels and pane.kernels[0].state == "busy")
        await pilot.press("f4")
        await pilot.press("k")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert "Its variables will be lost" in question(app) and not re.search(r"\d+ name", question(app))
        await pilot.press("y")
        await wait_until(pilot, lambda: not alive(app))
        await wait_until(pilot, lambda: blocks(app)[-1].status == "interrupted")


# -- the table at 80x24 ------------------------------------------------------------------------

async def test_kernels_table_shows_the_useful_columns_first(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path, "code_execution:\n  kernel_idle_timeout: 600\n")
    async with app.run_test(size=SMALL) as pilot:
        await run(pilot, app, "pass")
        pane = app.query_one(KernelsPane)
        await wait_until(pilot, lambda: pane.kernels and pane.memory)
        table = app.query_one("#kernel-table", KernelTable)
        labels = list(table.columns)
        assert labels[:5] == ["state", "id", "idle", "reaped in", "memory"]
        assert labels[5:] == ["session", "mode", "sandbox", "pid", "runs", "flags", "cwd", "python", "where"]
        await pilot.pause()
        # Issue 32: the columns drawn fit the pane; at 80 columns state, id, the session (a
        # sub-agent's kernel shows there under its parent's) and memory; Right shows the next.
        assert table.shown_columns == ["state", "id", "session", "memory"]
        assert table.virtual_size.width <= table.scrollable_content_region.width
        table.action_sideways(1)
        assert table.shown_columns[:3] == ["state", "id", "memory"] and "idle" in table.shown_columns
        row = table.get_row_at(0)
        assert row[1] == pane.kernels[0].id and row[4].endswith("MB") and re.fullmatch(r"\d+m\d\ds", row[3])


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
