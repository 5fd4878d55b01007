"""The kernels table: a header and a line per kernel, drawn with Textual's line API.

Textual's ``DataTable`` drew the same thing, but one changed cell re-rendered every cell of the
table through Rich (about 2–4 ms a frame for a single kernel), and a kernel changes state as
each run starts and ends, while the run's output wants the event loop (issue 20). Here a line
is a list of padded strings: a changed row redraws that row, from plain text.

Cells are shown as plain text, never markup: session names, paths and flags come from scripts.
"""

from __future__ import annotations

from typing import ClassVar, Sequence

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

from hermes_tui.tui.textual_compat import scroll_update
from hermes_tui.tui.widgets.safe import visible

PADDING = 1
"""Blank cells either side of each cell's text."""


def cell_text(value: str) -> str:
    """``value`` as one line of a cell: control characters (newlines and tabs too) as escapes."""
    return visible(value).replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")


MIN_CELL = 6
"""A column cut to fit the pane keeps at least this many cells (and its label whole)."""


def fit_cell(text: str, width: int) -> str:
    """``text`` in exactly ``width`` cells: padded, or cut with an ellipsis."""
    if cell_len(text) <= width:
        return set_cell_size(text, width)
    return set_cell_size(text, max(0, width - 1)) + "…" if width > 0 else ""


class KernelTable(ScrollView, can_focus=True):
    """Rows of plain-text cells under a header that stays put; a cursor row picks a kernel
    (Up/Down, Home/End, PgUp/PgDn, a click).

    The columns shown fit the table's width (issue 32: at 80 columns the pane is 30 cells
    wide): the first ``pinned`` of ``order`` always, then as many of the others, in ``order``,
    as fit, the last of them cut with an ellipsis rather than left out. Left/Right move that
    window of columns sideways, a column at a time, so every column can be read."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"kernel-table--header", "kernel-table--cursor",
                                             "kernel-table--even-row"}
    DEFAULT_CSS = """
    KernelTable { background: $surface; color: $foreground; height: 1fr; overflow-x: hidden; }
    KernelTable:focus { background-tint: $foreground 5%; }
    KernelTable > .kernel-table--header { text-style: bold; background: $panel; color: $foreground; }
    KernelTable > .kernel-table--even-row { background: $surface-lighten-1 50%; }
    KernelTable > .kernel-table--cursor {
        background: $block-cursor-blurred-background; color: $block-cursor-blurred-foreground;
        text-style: $block-cursor-blurred-text-style;
    }
    KernelTable:focus > .kernel-table--cursor {
        background: $block-cursor-background; color: $block-cursor-foreground;
        text-style: $block-cursor-text-style;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "cursor_to(0)", "First", show=False),
        Binding("end", "cursor_to(-1)", "Last", show=False),
        Binding("left", "sideways(-1)", "Left", show=False),
        Binding("right", "sideways(1)", "Right", show=False),
    ]

    def __init__(self, columns: Sequence[str], *, order: Sequence[int] | None = None, pinned: int = 0,
                 caps: dict[int, int] | None = None, **kwargs: object) -> None:
        """Args:
            columns: the labels of the cells of a row, in the rows' order.
            order: the columns by index, in the order they are shown (default: as given).
            pinned: how many columns at the start of ``order`` are always shown.
            caps: cells at most for some columns (by index) when not every column fits whole.
        """
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.columns = tuple(columns)
        """The column labels, in the rows' order."""
        self.order = tuple(order) if order is not None else tuple(range(len(self.columns)))
        self.pinned = pinned
        self.caps = dict(caps or {})
        self.skip = 0
        """Columns after the pinned ones moved out of view to the left (Left/Right)."""
        self._shown: list[tuple[int, int]] = []
        """The columns drawn, left to right: (index, cells of text), found for the table's width."""
        self._rows: list[tuple[str, tuple[str, ...]]] = []
        self._widths = [cell_len(label) for label in self.columns]
        self._lines: dict[int, tuple[Strip, Style]] = {}
        """Drawn rows by index (the header at -1), uncropped, each with its style; dropped when
        the row, the widths or the styles change."""
        self._style_key: tuple[Style, ...] | None = None
        self.cursor_row = 0
        """The index of the row the cursor is on."""

    # -- data -----------------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        return len(self._rows)

    def set_rows(self, rows: Sequence[tuple[str, Sequence[str]]]) -> None:
        """Show these rows, each ``(key, cells)``. Rows that did not change are not drawn again;
        the cursor stays on its row's key when that key is still there."""
        selected = self.selected_key
        new = [(key, tuple(cell_text(str(cell)) for cell in cells)) for key, cells in rows]
        widths = [max([cell_len(label)] + [cell_len(cells[index]) for _, cells in new if index < len(cells)])
                  for index, label in enumerate(self.columns)]
        if widths != self._widths or len(new) != len(self._rows):
            self._lines.clear()
            self._widths = widths
            self._rows = new
            self._fit()
            self.refresh()
        else:
            for index, (row, old) in enumerate(zip(new, self._rows)):
                if row != old:
                    self._redraw_row(index)
            self._rows = new
        keys = [key for key, _ in new]
        cursor = keys.index(selected) if selected in keys else min(self.cursor_row, max(0, len(new) - 1))
        moved = cursor != self.cursor_row  # rows came or went above it
        if moved:
            old_row, self.cursor_row = self.cursor_row, cursor
            self._redraw_row(old_row)
            self._redraw_row(cursor)
        self._set_virtual_size()
        if moved:
            self._keep_cursor_in_view()

    def get_row(self, key: str) -> list[str]:
        """The cells of the row of ``key`` as shown."""
        for row_key, cells in self._rows:
            if row_key == key:
                return list(cells)
        raise KeyError(key)

    def get_row_at(self, index: int) -> list[str]:
        """The cells of row ``index`` as shown."""
        return list(self._rows[index][1])

    def key_at(self, index: int) -> str:
        """The key of row ``index``."""
        return self._rows[index][0]

    def get_cell(self, key: str, column: str) -> str:
        """The cell of ``key``'s row under the label ``column``."""
        return self.get_row(key)[self.columns.index(column)]

    @property
    def selected_key(self) -> str | None:
        """The key of the row the cursor is on (None: no rows)."""
        return self._rows[self.cursor_row][0] if 0 <= self.cursor_row < len(self._rows) else None

    def column_width(self, index: int) -> int:
        """The cells column ``index`` takes whole, its padding included."""
        return self._widths[index] + 2 * PADDING

    @property
    def shown_columns(self) -> list[str]:
        """The labels of the columns drawn now, left to right."""
        return [self.columns[index] for index, _ in self._shown]

    def _fit(self) -> bool:
        """Choose the columns drawn for the table's width; True when they changed."""
        width = self.scrollable_content_region.width
        order = list(self.order)
        rest = order[self.pinned:]
        self.skip = max(0, min(self.skip, len(rest) - 1))
        shown: list[tuple[int, int]] = []
        used = 0
        whole = width <= 0 or sum(self.column_width(index) for index in order) <= width
        for index in order[:self.pinned] + rest[self.skip:]:
            need = self._widths[index] if whole else min(self._widths[index], self.caps.get(index, self._widths[index]))
            if width <= 0 or used + need + 2 * PADDING <= width:
                shown.append((index, need))
                used += need + 2 * PADDING
                continue
            room = width - used - 2 * PADDING
            if room >= max(MIN_CELL, cell_len(self.columns[index])):
                shown.append((index, room))  # cut, with an ellipsis
            break
        if not shown and order:  # narrower than the first column: it, cut
            shown.append((order[0], max(1, width - 2 * PADDING)))
        if shown != self._shown:
            self._shown = shown
            self._lines.clear()
            return True
        return False

    def on_resize(self) -> None:
        if self._fit():
            self._set_virtual_size()
            self.refresh()

    # -- the cursor -----------------------------------------------------------------------

    def move_cursor(self, row: int) -> None:
        """Put the cursor on row ``row`` (clamped to the rows there are) and keep it in view."""
        if not self._rows:
            return
        row = max(0, min(row, len(self._rows) - 1))
        if row != self.cursor_row:
            old, self.cursor_row = self.cursor_row, row
            for index in (old, row):
                self._redraw_row(index)
        self._keep_cursor_in_view()

    def _rows_shown(self) -> int:
        """Rows in view: the lines under the header, above a horizontal scrollbar."""
        return max(1, self.scrollable_content_region.height - 1)

    def _keep_cursor_in_view(self) -> None:
        top, shown = self.scroll_offset.y, self._rows_shown()
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False, immediate=True)
        elif self.cursor_row >= top + shown:
            self.scroll_to(y=self.cursor_row - shown + 1, animate=False, immediate=True)

    def action_cursor(self, step: int) -> None:
        self.move_cursor(self.cursor_row + step)

    def action_cursor_to(self, row: int) -> None:
        self.move_cursor(row if row >= 0 else len(self._rows) - 1)

    def action_page(self, direction: int) -> None:
        self.move_cursor(self.cursor_row + direction * self._rows_shown())

    def action_sideways(self, direction: int) -> None:
        """Right: the next column comes into view (the first unpinned one leaves); Left: back."""
        if direction > 0:
            last, width = self._shown[-1] if self._shown else (None, 0)
            rest = list(self.order[self.pinned:])
            if last is None or (last == rest[-1] and width >= self._widths[last]):
                return  # the last column is in view, whole
        elif self.skip == 0:
            return
        self.skip += 1 if direction > 0 else -1
        if self._fit():
            self._set_virtual_size()
            self.refresh()

    def on_click(self, event: events.Click) -> None:
        index = self.scroll_offset.y + event.y - 1
        if event.y >= 1 and index < len(self._rows):  # not the header, nor below the last row
            self.move_cursor(index)

    # -- drawing --------------------------------------------------------------------------

    def _redraw_row(self, index: int) -> None:
        self._lines.pop(index, None)
        self.refresh_line(index + 1)  # (the header is line 0)

    def _set_virtual_size(self) -> None:
        # Rows and column widths set how far the table scrolls; its own size is the pane's,
        # so no layout of the screen is asked (Textual's reactive would ask one).
        size = Size(sum(width + 2 * PADDING for _, width in self._shown), len(self._rows) + 1)
        if size != self.virtual_size:
            self.set_reactive(Widget.virtual_size, size)
            scroll_update(self, size)

    def _styles(self) -> tuple[Style, Style, Style, Style]:
        """The plain, header, even-row and cursor styles (a theme or focus change drops the
        rows drawn with the old ones)."""
        # Full styles: a translucent background (the cursor's, the stripes') blended with the
        # table's, as Textual's own tables draw them.
        get = self.get_component_rich_style
        styles = (self.rich_style, get("kernel-table--header"), get("kernel-table--even-row"),
                  get("kernel-table--cursor"))
        if styles != self._style_key:
            self._style_key = styles
            self._lines.clear()
        return styles

    def _line(self, cells: Sequence[str], style: Style) -> tuple[Strip, Style]:
        pad = " " * PADDING
        text = "".join(pad + fit_cell(cells[index], width) + pad for index, width in self._shown if index < len(cells))
        return Strip([Segment(text, style)], cell_len(text)), style

    def render_lines(self, crop: Region) -> list[Strip]:
        self._frame_styles = self._styles()  # once a frame, not once a line
        return super().render_lines(crop)

    _frame_styles: tuple[Style, Style, Style, Style] | None = None

    def render_line(self, y: int) -> Strip:
        base, header, even, cursor = self._frame_styles or self._styles()
        width, scroll_x = self.size.width, self.scroll_offset.x
        if y == 0:
            index = -1
            cells, style = self.columns, header
        else:
            index = self.scroll_offset.y + y - 1  # (Textual's rounding of a dragged scrollbar)
            if index >= len(self._rows):
                return Strip.blank(width, base)
            cells = self._rows[index][1]
            style = cursor if index == self.cursor_row else base if index % 2 else even  # (as DataTable striped)
        drawn = self._lines.get(index)
        if drawn is None:
            drawn = self._lines[index] = self._line(cells, style)
        line, style = drawn
        return line.crop_extend(scroll_x, scroll_x + width, style)
