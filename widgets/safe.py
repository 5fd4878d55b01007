"""Text from outside the app, made safe to show.

Commands, scripts, paths, model replies, tool output, file names and error messages come from
scripts, models, files or the shell. Shown as a ``str`` in a Label, a Static, a DataTable cell
or a notification they would be parsed as Rich/Textual markup: ``tr '[/]' _`` crashes the app
with a MarkupError, ``[@click=app.quit]`` becomes a live action. Shown as a :class:`Text` they
are never parsed; and Rich passes ESC and other control characters to the terminal as they
are, so those are written as visible escapes here.
"""

from __future__ import annotations

import re

from rich.markup import escape
from rich.text import Text

# Newline, tab and CR are kept (Rich drops CR itself); every other C0/C1 control, ESC and DEL
# would reach the terminal raw.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """``text`` with its control characters written as escapes (``\\x1b``, ``\\x00``)."""
    return _CONTROL_RE.sub(lambda match: f"\\x{ord(match.group()):02x}", text)


def plain(text: str, style: str = "") -> Text:
    """Untrusted ``text`` as a :class:`Text`: never parsed as markup, control characters visible."""
    return Text(visible(text), style=style)


def escaped(text: str) -> str:
    """For a ``str`` that will be parsed as Rich markup whatever we do (DataTable cells, which
    must stay ``str`` for ``get_row_at``): ``text`` with its markup escaped, controls visible."""
    return escape(visible(text))
