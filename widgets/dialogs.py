"""Small screens: the variables of a kernel, and help for the focused pane."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Label, Markdown

from hermes_tui.widgets.dialog import Dialog
from hermes_tui.widgets.safe import escaped, plain


class VariablesScreen(Dialog[None]):
    """A kernel's variables: name, type, short repr, size. Esc closes."""

    DEFAULT_CSS = """
    VariablesScreen > #dialog { width: 90%; height: 80%; }
    VariablesScreen DataTable { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,v", "dismiss", "Close", id="variables-close")]

    def __init__(self, kernel_id: str, variables: list[dict[str, object]]) -> None:
        super().__init__()
        self.kernel_id = kernel_id
        self.variables = variables

    def compose_dialog(self) -> ComposeResult:
        yield Label(plain(f"Variables of kernel {self.kernel_id} ({len(self.variables)})  ·  Esc closes"))
        table: DataTable[str] = DataTable(cursor_type="row", zebra_stripes=True)
        table.add_columns("name", "type", "len", "size", "value")
        for item in self.variables:  # names, types and reprs come from the kernel's objects
            table.add_row(escaped(str(item["name"])), escaped(str(item["type"])),
                          "" if item.get("len") is None else escaped(str(item["len"])),
                          "" if item.get("size") is None else escaped(f"{item['size']} B"), escaped(str(item["repr"])))
        yield table


HELP_DIR = Path(__file__).parent / "help"
"""The help pages, one Markdown file per pane (conversation, output, kernels)."""


def help_page(pane: str) -> str:
    """The help page of ``pane`` (package data: a few hundred bytes, read when asked)."""
    return (HELP_DIR / f"{pane}.md").read_text(encoding="utf-8")


class HelpScreen(Dialog[None]):
    """Help for the pane that has focus."""

    DEFAULT_CSS = """
    HelpScreen > #dialog { width: 80%; height: 80%; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,f1", "dismiss", "Close", id="help-close")]

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    @classmethod
    def for_pane(cls, pane: str, keys: list[tuple[str, str]]) -> HelpScreen:
        """The help page of ``pane`` followed by the keys that work everywhere."""
        listed = "\n".join(f"* `{key}` {description}" for key, description in keys)
        return cls(help_page(pane) + "\n## Everywhere\n\n" + listed + "\n* `ctrl+p` command palette")

    def compose_dialog(self) -> ComposeResult:
        yield Markdown(self.text)
