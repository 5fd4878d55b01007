"""``/usage``: what this session's model calls used and cost, per turn and per model."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Label, Static

from hermes_tui.agent.usage import Line, Totals, by_model, by_turn, dollars, tokens
from hermes_tui.tui.screens.dialog import Dialog
from hermes_tui.tui.screens.main import usage_text
from hermes_tui.tui.widgets.safe import plain, visible


def breakdown_table(title: str, lines: list[Line]) -> Table:
    """One breakdown as a table (labels are data: they go in as Text, never markup)."""
    table = Table(title=title, title_justify="left", expand=True, show_edge=False, pad_edge=False)
    table.add_column(title.split()[-1], ratio=1, overflow="ellipsis", no_wrap=True)
    for name in ("calls", "in", "out", "cached", "cost", "time"):
        table.add_column(name, justify="right", no_wrap=True)
    for line in lines:
        mark = " ~" if line.estimated_calls else ""
        table.add_row(Text(visible(line.label)), str(line.calls), tokens(line.tokens_in) + mark,
                      tokens(line.tokens_out) + mark, tokens(line.cached), line.cost, f"{line.seconds:.1f}s")
    return table


class UsageScreen(Dialog[None]):
    """The session's usage: totals, then per turn and per model. Esc closes."""

    DEFAULT_CSS = """
    UsageScreen > #dialog { width: 90%; height: auto; max-height: 85%; padding: 0 1; }
    UsageScreen VerticalScroll { height: auto; max-height: 100%; }
    UsageScreen Static { margin-bottom: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "dismiss", "Close", id="usage-close")]

    def __init__(self, session: str, rows: list[dict[str, Any]], totals: Totals) -> None:
        super().__init__()
        self.session = session
        self.rows = rows
        self.totals = totals

    def compose_dialog(self) -> ComposeResult:
        yield Label(plain(f"Usage of session {self.session}  ·  Esc closes"))
        summary = Text(f"{self.totals.calls} model call{'s' if self.totals.calls != 1 else ''} · ")
        summary.append_text(usage_text(self.totals))
        if self.totals.unpriced_calls:
            summary.append(f" · {self.totals.unpriced_calls} with no known price (set model.pricing)")
        if self.totals.estimated_calls:
            summary.append(" · ~ estimated: the server reported no counts")
        with VerticalScroll():
            yield Static(summary, id="usage-summary")
            if not self.rows:
                yield Static("No model call yet.", id="usage-empty")
                return
            yield Static(breakdown_table("Per turn", by_turn(self.rows)), id="usage-turns")
            yield Static(breakdown_table("Per model", by_model(self.rows)), id="usage-models")


def price_label(input_per_mtok: float | None, output_per_mtok: float | None) -> str:
    """``$3.00/$15.00 per Mtok`` or ``price ?``."""
    if input_per_mtok is None or output_per_mtok is None:
        return "price ?"
    return f"{dollars(input_per_mtok)}/{dollars(output_per_mtok)} per Mtok"
