"""Getting the user's attention when the app waits on them and they are looking elsewhere.

When an approval waits, or a turn that took longer than :data:`LONG_TURN_SECONDS` ends, while
the terminal does not have the focus (Textual asks the terminal to report focus changes), the
app rings the bell and sends a desktop notification in the terminal's own dialect:

* OSC 9 (``ESC ] 9 ; text BEL``): iTerm2, WezTerm, kitty, Ghostty, Windows Terminal;
* OSC 777 (``ESC ] 777 ; notify ; title ; text BEL``): foot, urxvt and VTE terminals (GNOME).

An unknown terminal gets the bell only: some read OSC 9 as something else (ConEmu's progress
bar). ``ui.notify: false`` turns all of it off. The texts are fixed words of the app and a
session id (letters, digits, ``.-_``): nothing a script or a model wrote reaches the terminal.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping
from typing import Literal

from hermes_tui.agent.events import AgentEvent, TurnEnded, TurnStarted
from hermes_tui.tui.app_parts import AppParts
from hermes_tui.tui.textual_compat import driver_write

LONG_TURN_SECONDS = 10.0
"""A turn that took longer than this is worth a notification when it ends unseen."""

Dialect = Literal["osc9", "osc777", "bell"]

_OSC9_PROGRAMS = ("iterm.app", "wezterm", "ghostty", "vscode")
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f;]")


def dialect(env: Mapping[str, str] | None = None) -> Dialect:
    """Which notification the terminal understands, from the variables terminals set."""
    env = os.environ if env is None else env
    program = env.get("TERM_PROGRAM", "").lower()
    term = env.get("TERM", "").lower()
    if program in _OSC9_PROGRAMS or "kitty" in term or env.get("KITTY_WINDOW_ID") or env.get("WT_SESSION") \
            or "ghostty" in term:
        return "osc9"
    if env.get("VTE_VERSION") or term.startswith(("foot", "rxvt")):
        return "osc777"
    return "bell"


def clean(text: str, limit: int = 200) -> str:
    """``text`` with control characters and ``;`` (a field separator of OSC 777) replaced."""
    return _UNSAFE.sub(" ", text)[:limit]


def sequence(title: str, body: str, kind: Dialect) -> str:
    """What to write to the terminal: the bell, and the notification when it has one."""
    title, body = clean(title), clean(body)
    if kind == "osc9":
        return f"\x1b]9;{title}: {body}\x07\x07"
    if kind == "osc777":
        return f"\x1b]777;notify;{title};{body}\x07\x07"
    return "\x07"


class Attention(AppParts):
    """A part of :class:`~hermes_tui.tui.app.HermesApp`: the bell and the notification."""

    _turn_started: dict[str, float]

    def watch_turn(self, event: AgentEvent) -> None:
        """A long turn that ends while the terminal is not focused calls the user back."""
        if isinstance(event, TurnStarted):
            self._turn_started[event.turn_id] = time.monotonic()
        elif isinstance(event, TurnEnded):
            started = self._turn_started.pop(event.turn_id, None)
            if started is not None and time.monotonic() - started > LONG_TURN_SECONDS:
                self.call_attention(f"The turn ended ({event.status})")

    def call_attention(self, what: str) -> None:
        """Bell and desktop notification, only when the terminal is not focused and
        ``ui.notify`` is on."""
        if self.app_focus or not self.config.ui.notify:
            return
        self.write_to_terminal(sequence("hermes-tui", f"{what} in session {self.session}", dialect()))

    def write_to_terminal(self, text: str) -> None:
        """Raw text to the terminal (escape sequences the app composed itself; never data)."""
        if not self.is_headless:
            driver_write(self, text)
