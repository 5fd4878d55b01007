"""Text from outside the app, made safe to show.

Commands, scripts, paths, model replies, tool output, file names and error messages come from
scripts, models, files or the shell. Shown as a ``str`` in a Label, a Static, a DataTable cell
or a notification they would be parsed as Rich/Textual markup: ``tr '[/]' _`` crashes the app
with a MarkupError, ``[@click=app.quit]`` becomes a live action. Shown as a :class:`Text` they
are never parsed; and Rich passes ESC and other control characters to the terminal as they
are, so those are written as visible escapes here.

The same goes for the invisible format characters (issue 31): a bidi override (U+202E) reaches
the terminal as it is and reverses what follows it, so a script's ``print`` or a model's reply
could show ``ls -la`` where ``rm -rf ~`` is written; zero-width spaces, a BOM, the tag
characters (U+E0020..E007F, used to smuggle text a person cannot see to a model) and the line
and paragraph separators hide text the same way. They are all written as escapes
(``\\u202e``), as the approval dialog and the command line already write them
(:func:`hermes_tui.base.text.reveal`). Two format characters are kept: the zero-width
joiner and non-joiner (U+200D, U+200C), which emoji sequences and several scripts need and
which reorder nothing.
"""

from __future__ import annotations

import re

from rich.markup import escape
from rich.text import Text

from hermes_tui.base.text import escape_char

# Newline, tab and CR are kept (Rich drops CR itself); every other C0/C1 control, ESC and DEL
# would reach the terminal raw. Then every format character (Unicode category Cf) but ZWNJ and
# ZWJ, and the line and paragraph separators (Zl, Zp), as of Unicode 14 (Python 3.11;
# tests/test_output_escape.py checks the list against the running Python's unicodedata).
_CONTROL_RE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f]"
)


def _escape(match: re.Match[str]) -> str:
    return escape_char(match.group())


def visible(text: str) -> str:
    """``text`` with its control and invisible format characters written as escapes
    (``\\x1b``, ``\\x00``, ``\\u202e``, ``\\u200b``)."""
    return _CONTROL_RE.sub(_escape, text)


def plain(text: str, style: str = "") -> Text:
    """Untrusted ``text`` as a :class:`Text`: never parsed as markup, control characters visible."""
    return Text(visible(text), style=style)


def escaped(text: str) -> str:
    """For a ``str`` that will be parsed as Rich markup whatever we do (DataTable cells, which
    must stay ``str`` for ``get_row_at``): ``text`` with its markup escaped, controls visible."""
    return escape(visible(text))
