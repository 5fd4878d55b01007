"""A list of many rows drawn with the Line API: only the visible rows are rendered, so
10,000 (or 100,000) entries appear at once and scroll smoothly."""

from __future__ import annotations

from typing import ClassVar

from rich.segment import Segment
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from hermes_tui.tui.widgets.safe import visible


class EntryList(ScrollView, can_focus=True):
    """Rows of fixed-width columns with a cursor; Enter (or a click on the cursor row) selects."""

    DEFAULT_CSS = """
    EntryList { height: 1fr; }
    EntryList > .entry-list--cursor { background: $accent 40%; text-style: bold; }
    EntryList:focus > .entry-list--cursor { background: $accent 70%; }
    """
    COMPONENT_CLASSES = {"entry-list--cursor"}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("down", "move(1)", "Down", show=False, id="list-down"),
        Binding("up", "move(-1)", "Up", show=False, id="list-up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="list-pgdn"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="list-pgup"),
        Binding("home", "edge(0)", "First", show=False, id="list-first"),
        Binding("end", "edge(1)", "Last", show=False, id="list-last"),
        Binding("enter", "select", "Open", id="list-open"),
    ]

    class Selected(Message):
        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def __init__(self, widths: tuple[int, ...], **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.widths = widths
        self.rows: list[tuple[str, ...]] = []
        self.cursor = 0

    @property
    def row_count(self) -> int:
        return len(self.rows)

    def format(self, cells: tuple[str, ...]) -> str:
        """One line: every cell padded or cut to its column's width."""
        parts = []
        for cell, width in zip(cells, self.widths):
            cell = visible(cell.replace("\n", " "))  # a raw segment: a control character would reach the terminal
            parts.append(cell[: width - 1] + "…" if len(cell) > width else cell.ljust(width))
        return " ".join(parts)

    def set_rows(self, rows: list[tuple[str, ...]], cursor: int = 0) -> None:
        self.rows = rows
        self.cursor = max(0, min(cursor, len(rows) - 1))
        self.virtual_size = Size(sum(self.widths) + len(self.widths), len(rows))
        self._follow()
        self.refresh()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        if index >= len(self.rows):
            return Strip.blank(width, self.rich_style)
        style = self.get_component_rich_style("entry-list--cursor") if index == self.cursor else self.rich_style
        text = self.format(self.rows[index])
        return Strip([Segment(text, style)]).crop_extend(scroll_x, scroll_x + width, style)

    def _follow(self) -> None:
        height = max(1, self.scrollable_content_region.height)
        top = self.scroll_offset.y
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False)

    def move_cursor(self, row: int) -> None:
        if self.rows:
            self.cursor = max(0, min(row, len(self.rows) - 1))
            self._follow()
            self.refresh()

    def action_move(self, step: int) -> None:
        self.move_cursor(self.cursor + step)

    def action_page(self, direction: int) -> None:
        self.move_cursor(self.cursor + direction * max(1, self.scrollable_content_region.height - 1))

    def action_edge(self, end: int) -> None:
        self.move_cursor(len(self.rows) - 1 if end else 0)

    def action_select(self) -> None:
        if self.rows:
            self.post_message(self.Selected(self.cursor))

    def on_click(self, event: events.Click) -> None:
        index = self.scroll_offset.y + event.y
        if 0 <= index < len(self.rows):
            if index == self.cursor:
                self.post_message(self.Selected(index))
            self.move_cursor(index)
