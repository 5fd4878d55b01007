"""The base of the app's modal dialogs: centred over the app, the content in one framed box."""

from __future__ import annotations

from typing import TypeVar

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen

ResultT = TypeVar("ResultT")


class Dialog(ModalScreen[ResultT]):
    """A modal screen, centred, whose content (:meth:`compose_dialog`) sits in one framed box.

    The box is ``#dialog``: a subclass sizes it, and may change its border, with a
    ``<Subclass> > #dialog { ... }`` rule (same specificity as the rule here; a subclass's
    DEFAULT_CSS wins the tie).

    Esc is bound by each screen, not here: Textual lists a base class's keys first, so an Esc
    binding here would move Esc to the top of the Keys panel of the screens that bind it last
    (approval, confirm), and some screens bind Esc together with other keys under one binding id.
    """

    DEFAULT_CSS = """
    Dialog { align: center middle; }
    Dialog > #dialog { border: thick $primary; background: $surface; }
    /* A dialog's lines of text (its title, what its keys do) wrap at the box's width: a Label is
       as wide as its text, and was cut at 80 columns. */
    Dialog > #dialog > Label { width: 1fr; height: auto; }
    """

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield from self.compose_dialog()

    def compose_dialog(self) -> ComposeResult:
        """The content of the framed box."""
        yield from ()
