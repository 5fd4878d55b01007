"""The input's slash commands: their names, what each does, and how a typed line is read.

Each command names an action of the app (``/stop`` runs ``action_stop``), so the command
list, the help and the error for an unknown command all come from one table.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SlashCommand:
    """One ``/name``: the app action it runs and a line of help."""

    name: str
    action: str
    help: str


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("stop", "stop", "stop the running turn"),
    SlashCommand("retry", "retry", "send the conversation again after a failed request"),
    SlashCommand("sessions", "sessions", "pick a stored session"),
    SlashCommand("new", "new_session", "start a new session"),
    SlashCommand("reset", "reset_session", "start a fresh kernel (F5)"),
    SlashCommand("kernels", "focus_pane('kernels')", "focus the kernels pane"),
    SlashCommand("cache", "open_cache", "the output browser"),
    SlashCommand("help", "help('conversation')", "keys and commands"),
    SlashCommand("quit", "quit", "leave the app"),
)
ALIASES = {"exit": "quit"}

PALETTE: tuple[tuple[str, str, str], ...] = (
    ("Reset kernel", "Start a fresh kernel for this session (F5; asks first if it holds variables)", "reset_session"),
    ("Focus kernels", "Show and act on kernels", "focus_pane('kernels')"),
    ("Focus output", "The execute_code output pane", "focus_pane('output')"),
    ("Next theme", "Switch between dark, light and high contrast", "cycle_theme"),
    ("Help", "Keys and commands of the focused pane", "help"),
    ("Output browser", "Every saved output in $HERMES_HOME/cache/exec", "open_cache"),
    ("Sessions", "Continue a stored conversation", "sessions"),
    ("New session", "Start a new conversation", "new_session"),
)
"""The app's entries in the command palette (Ctrl+P): title, help, action."""
_BY_NAME = {c.name: c for c in COMMANDS}


def parse_command(text: str) -> SlashCommand | str:
    """The command ``text`` (what follows ``/``) names, or the one-line error to show."""
    words = text.split()
    name = words[0].lower() if words else "help"
    command = _BY_NAME.get(ALIASES.get(name, name))
    if command is None:
        return f"Unknown command /{name}. Commands: " + " ".join(f"/{c.name}" for c in COMMANDS)
    return command
