"""The sessions picker: stored conversations, newest first; Enter continues one."""

from __future__ import annotations

import time
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from hermes_tui.storage.sessions import SessionInfo
from hermes_tui.base.units import noun
from hermes_tui.tui.screens.dialog import Dialog
from hermes_tui.tui.widgets.safe import visible


class SessionsScreen(Dialog[str | None]):
    """Pick a session (dismisses with its id; Esc with None)."""

    DEFAULT_CSS = """
    SessionsScreen > #dialog { width: 90%; max-width: 120; height: 80%; border: round $primary; padding: 0 1; }
    SessionsScreen OptionList { height: 1fr; }
    SessionsScreen .hint { color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "Close"),
                                              Binding("n", "new", "New session")]

    def __init__(self, sessions: list[SessionInfo], current: str | None = None) -> None:
        super().__init__()
        self.sessions = sessions
        self.current = current

    def compose_dialog(self) -> ComposeResult:
        yield Label(f"[b]Sessions[/b] ({len(self.sessions)}) — Enter continues one · n new · Esc closes")
        options = [Option(self._line(s), id=s.id) for s in self.sessions]
        yield OptionList(*options, id="session-list")
        if not self.sessions:
            yield Label("No stored sessions yet.", classes="hint")

    def _line(self, info: SessionInfo) -> Text:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.updated_at))
        line = Text.assemble((f"{visible(info.id)}  ", "bold" if info.id == self.current else ""), (f"{when}  ", "dim"),
                             (f"{info.messages:>4} {noun(info.messages, 'msg'):<4}  ", "dim"),
                             visible(info.title or "(empty)"))
        if info.interrupted:
            line.append("  ⚠ interrupted", style="yellow")
        if info.id == self.current:
            line.append("  (open)", style="dim")
        return line

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_new(self) -> None:
        self.dismiss("")
