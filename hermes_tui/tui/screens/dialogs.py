"""Small screens: the variables of a kernel, a yes/no question, and help for the focused pane."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Button, DataTable, Label, Markdown

from hermes_tui.base.units import plural
from hermes_tui.tui.screens.dialog import Dialog
from hermes_tui.tui.widgets.safe import escaped, plain


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


class ConfirmScreen(Dialog[bool]):
    """A yes/no question: ``y`` or Enter says yes, ``n`` or Esc says no.

    Args:
        question: the question (plain text: it may quote ids).
        yes: the label of the yes button ("Reset", "Kill", "Delete").
        no: the label of the no button.
        default: the answer Enter gives (its button has the focus): yes to end a kernel the
            user asked to end, no to delete files.
    """

    DEFAULT_CSS = """
    ConfirmScreen > #dialog { width: 70; max-width: 100%; height: auto; border: thick $error; padding: 1; }
    ConfirmScreen #question { width: 100%; }
    ConfirmScreen Horizontal { height: auto; margin-top: 1; }
    ConfirmScreen Button { margin-right: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("y,enter", "answer(True)", "Yes", id="confirm-yes"),
                                              Binding("n,escape", "answer(False)", "No", id="confirm-no")]

    def __init__(self, question: str, *, yes: str = "Yes", no: str = "Keep", default: bool = True) -> None:
        super().__init__()
        self.question = question
        self.yes = yes
        self.no = no
        self.default = default

    def compose_dialog(self) -> ComposeResult:
        yield Label(plain(self.question), id="question")
        with Horizontal():
            yield Button(plain(f"y {self.yes}"), id="yes", variant="error")
            yield Button(plain(f"n {self.no}"), id="no", variant="primary")

    def on_mount(self) -> None:
        # Enter presses the focused button: the default answer (the keys say y and n)
        self.query_one("#yes" if self.default else "#no", Button).focus()

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")


def loss_question(action: str, kernel_ids: list[str], names: int | None) -> str:
    """What to ask before ``action`` ("reset", "kill") ends kernels that hold user variables.

    Args:
        action: the verb, as the user chose it.
        kernel_ids: the kernels it ends (one, or a session's with its sub-agents').
        names: how many names they hold; None when one of them is running a script and could
            not be asked (then the question says "its variables" without a count).
    """
    one = len(kernel_ids) == 1
    target = f"kernel {kernel_ids[0]}" if one else f"{len(kernel_ids)} kernels ({', '.join(kernel_ids)})"
    if names is None:
        loss = ("Its variables will be lost: it is running a script." if one
                else "Their variables will be lost: one is running a script.")
    else:
        loss = f"{plural(names, 'name')} defined in {'it' if one else 'them'} (variables, functions, imports) will be lost."
    return f"{action.capitalize()} {target}? {loss}"


HELP_DIR = Path(__file__).parent / "help"
"""The help pages, one Markdown file per pane (conversation, output, kernels)."""


def help_page(pane: str) -> str:
    """The help page of ``pane`` (package data: a few hundred bytes, read when asked)."""
    return (HELP_DIR / f"{pane}.md").read_text(encoding="utf-8")


class HelpScreen(Dialog[None]):
    """Help for the pane that has focus."""

    DEFAULT_CSS = """
    HelpScreen > #dialog { width: 80%; height: 80%; padding: 0 1; }
    HelpScreen #help-scroll { height: 1fr; }
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
        # A small terminal (80x24) shows part of a page: it scrolls (arrows, PgUp/PgDn, Home/End).
        with VerticalScroll(id="help-scroll"):
            yield Markdown(self.text)

    def on_mount(self) -> None:
        self.query_one("#help-scroll").focus()
