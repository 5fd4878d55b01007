"""``/checkpoints`` (the session's checkpoints: d shows the diff since one, r rolls back to it)
and ``/diff N`` (the diff in the pager, coloured)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from hermes_tui.tui.screens.dialog import Dialog
from hermes_tui.tui.widgets.footer import KeysFooter
from hermes_tui.tui.widgets.pager import Pager
from hermes_tui.tui.widgets.safe import plain


class CheckpointsScreen(Dialog["tuple[str, int] | None"]):
    """The checkpoints, newest first; dismisses with ``("diff", N)``, ``("rollback", N)`` or None.

    Args:
        lines: one line per checkpoint, oldest first (``agent.checkpoints.listing``).
        numbers: each line's checkpoint number.
    """

    DEFAULT_CSS = """
    CheckpointsScreen > #dialog { width: 95%; max-width: 140; height: 80%; border: round $primary; padding: 0 1; }
    CheckpointsScreen OptionList { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss(None)", "Close", id="checkpoints-close"),
        Binding("d,enter", "pick('diff')", "Diff since", id="checkpoints-diff"),
        Binding("r", "pick('rollback')", "Roll back to", id="checkpoints-rollback"),
    ]

    def __init__(self, lines: list[str], numbers: list[int], session: str) -> None:
        super().__init__()
        self.lines = lines
        self.numbers = numbers
        self.session = session

    def compose_dialog(self) -> ComposeResult:
        yield Label(Text.assemble(("Checkpoints", "bold"), plain(
            f" of {self.session} ({len(self.lines)}) — d diff since · r roll back to · Esc closes")))
        # Newest first: the one a user wants is nearly always recent. Each line is plain text (a
        # turn's words, a command): never markup.
        options = [Option(plain(line), id=str(n)) for line, n in zip(reversed(self.lines), reversed(self.numbers))]
        yield OptionList(*options, id="checkpoint-list")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.action_pick("diff")

    def action_pick(self, what: str) -> None:
        chosen = self.query_one(OptionList).highlighted_option
        if chosen is not None and chosen.id is not None:
            self.dismiss((what, int(chosen.id)))


class DiffScreen(Screen[None]):
    """The diff from checkpoint N to the files now, in the pager (its file is removed on close)."""

    DEFAULT_CSS = """
    DiffScreen #diff-title { height: 1; padding: 0 1; background: $panel; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "app.pop_screen", "Back", id="diff-back")]

    def __init__(self, path: Path, title: str) -> None:
        super().__init__()
        self.path = path
        self.title_text = title

    def compose(self) -> ComposeResult:
        yield Static(plain(self.title_text, "bold"), id="diff-title")
        yield Pager(self.path, syntax="diff", id="diff-pager")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one(Pager).focus()

    def on_unmount(self) -> None:
        self.path.unlink(missing_ok=True)
