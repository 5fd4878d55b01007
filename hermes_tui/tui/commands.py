"""The input's slash commands: their names, what each does, and how a typed line is read.

Each command names an action of the app (``/stop`` runs ``action_stop``), so the command
list, the help and the error for an unknown command all come from one table. A command that
takes words after its name (``/budget 5.00``, ``/model NAME``) gets them as the action's one
argument.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SlashCommand:
    """One ``/name``: the app action it runs and a line of help."""

    name: str
    action: str
    help: str
    takes_argument: bool = False
    """The words after the name are passed to the action (as one string, maybe empty)."""


PYTHON_PREFIX = ">>>"
"""Typed first (with a model), the rest of the input runs as Python in the session's kernel."""


def python_of(text: str) -> str:
    """The code of a ``>>>`` input: the prefix taken off, and a pasted REPL session's prompts
    too (``>>> `` and ``... `` at the start of each line), so ``>>> x = 1`` runs ``x = 1``."""
    lines = text[len(PYTHON_PREFIX):].split("\n")
    lines[0] = lines[0][1:] if lines[0].startswith(" ") else lines[0]
    out = [lines[0]]
    for line in lines[1:]:
        for prompt in (">>> ", "... ", ">>>", "..."):
            if line.startswith(prompt):
                line = line[len(prompt):]
                break
        out.append(line)
    return textwrap.dedent("\n".join(out)).strip("\n")


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("stop", "stop", "stop the running turn"),
    SlashCommand("retry", "retry", "send the conversation again after a failed request"),
    SlashCommand("continue", "retry", "go on with a turn the app stopped in (killed mid-reply)"),
    SlashCommand("sessions", "sessions", "pick a stored session"),
    SlashCommand("model", "model", "pick the model (or /model NAME, /model PROVIDER:NAME)", takes_argument=True),
    SlashCommand("usage", "usage", "tokens and cost, per turn and per model"),
    SlashCommand("budget", "budget", "the cost ceiling: /budget 5.00, /budget turn 1.00, /budget off",
                 takes_argument=True),
    SlashCommand("new", "new_session", "start a new session"),
    SlashCommand("reset", "reset_session", "start a fresh kernel (F5)"),
    SlashCommand("find", "find", "search the conversation: /find TEXT (Ctrl+F; again: the next older match)",
                 takes_argument=True),
    SlashCommand("copy", "copy", "copy the last reply to the clipboard (/copy code, /copy output)",
                 takes_argument=True),
    SlashCommand("checkpoints", "checkpoints", "this session's checkpoints (what the agent changed; d diff, r roll back)"),
    SlashCommand("diff", "diff", "the diff since checkpoint N: /diff N", takes_argument=True),
    SlashCommand("rollback", "rollback", "put files back to checkpoint N: /rollback N [--conversation] "
                 "[--files PATH ...] (/help rollback)", takes_argument=True),
    SlashCommand("kernels", "focus_pane('kernels')", "focus the kernels pane"),
    SlashCommand("cache", "open_cache", "the output browser"),
    SlashCommand("help", "help_topic", "keys and commands (/help rollback: checkpoints and rollback)",
                 takes_argument=True),
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
    ("Model", "Pick the model the conversation talks to", "model"),
    ("Usage", "Tokens and cost of this session, per turn and per model", "usage"),
    ("Checkpoints", "What the agent changed, checkpoint by checkpoint: diff or roll back", "checkpoints"),
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
    if not command.takes_argument and len(words) > 1:
        return f"/{command.name} takes nothing after it ({command.help})."
    return command


def command_argument(text: str) -> str:
    """The words after the command's name in ``text`` (what follows ``/``), stripped."""
    parts = text.strip().split(None, 1)
    return parts[1].strip() if len(parts) > 1 else ""
