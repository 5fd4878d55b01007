"""Small screens: the variables of a kernel, and help for the focused pane."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, Markdown


class VariablesScreen(ModalScreen[None]):
    """A kernel's variables: name, type, short repr, size. Esc closes."""

    DEFAULT_CSS = """
    VariablesScreen { align: center middle; }
    VariablesScreen > Vertical { width: 90%; height: 80%; border: thick $primary; background: $surface; }
    VariablesScreen DataTable { height: 1fr; }
    """
    BINDINGS = [Binding("escape,q,v", "dismiss", "Close", id="variables-close")]

    def __init__(self, kernel_id: str, variables: list[dict[str, object]]) -> None:
        super().__init__()
        self.kernel_id = kernel_id
        self.variables = variables

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"Variables of kernel {self.kernel_id} ({len(self.variables)})  ·  Esc closes")
            table: DataTable[str] = DataTable(cursor_type="row", zebra_stripes=True)
            table.add_columns("name", "type", "len", "size", "value")
            for item in self.variables:
                table.add_row(str(item["name"]), str(item["type"]), "" if item.get("len") is None else str(item["len"]),
                              "" if item.get("size") is None else f"{item['size']} B", str(item["repr"]))
            yield table


class HelpScreen(ModalScreen[None]):
    """Help for the pane that has focus."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Vertical { width: 80%; height: 80%; border: thick $primary; background: $surface; padding: 0 1; }
    """
    BINDINGS = [Binding("escape,q,f1", "dismiss", "Close", id="help-close")]

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Markdown(self.text)
