"""The kernels pane refreshes every second: the same kernels change only their cells (a rebuilt
table is laid out and restyled again, which a flood of output cannot afford); new or gone
kernels rebuild it, and the selected row stays selected."""

from __future__ import annotations

from datetime import datetime, timedelta

from textual.app import App, ComposeResult

from hermes_tui.runtime.models import KernelInfo
from hermes_tui.widgets.kernels import KernelsPane

NOW = datetime(2026, 11, 30, 12, 0, 0)


def kernel(kernel_id: str, state: str = "idle", idle: float = 5, runs: int = 1) -> KernelInfo:
    return KernelInfo(id=kernel_id, key=kernel_id, session="s1", mode="project", interpreter="python3", cwd="/tmp",
                      pid=100, state=state, started_at=NOW - timedelta(minutes=5), last_used=NOW - timedelta(seconds=idle),
                      execution_count=runs, idle_deadline=NOW + timedelta(minutes=29))


class Host(App[None]):
    def compose(self) -> ComposeResult:
        yield KernelsPane()


async def test_the_same_kernels_update_their_cells_and_new_ones_rebuild_the_table() -> None:
    app = Host()
    async with app.run_test() as pilot:
        pane = app.query_one(KernelsPane)
        table = pane.table()
        pane.update_kernels([kernel("k1"), kernel("k2")], {"k1": 10 << 20}, now=NOW)
        await pilot.pause()
        table.move_cursor(row=1)
        cleared: list[int] = []
        original_clear = table.clear
        table.clear = lambda *a, **k: (cleared.append(1), original_clear(*a, **k))[1]  # type: ignore[method-assign]

        later = NOW + timedelta(seconds=3)
        pane.update_kernels([kernel("k1", idle=8, runs=2), kernel("k2", state="busy")], {"k1": 12 << 20}, now=later)
        await pilot.pause()
        assert cleared == []  # cells changed in place
        assert table.get_row("k1")[2:5] == ["11s", "28m57s", "12 MB"] and table.get_row("k1")[8] == "2"
        assert table.get_row("k2")[0] == "●" and table.get_row("k2")[2] == "—"
        assert table.cursor_row == 1 and pane.selected_id() == "k2"

        pane.update_kernels([kernel("k1"), kernel("k2"), kernel("k3")], {}, now=later)
        await pilot.pause()
        assert cleared == [1] and table.row_count == 3 and pane.selected_id() == "k2"
        assert pane.border_subtitle == "3 live"
