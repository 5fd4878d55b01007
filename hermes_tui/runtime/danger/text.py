"""Characters a person cannot see in a command: found, and shown escaped.

A command holding a control character, NUL, an ANSI escape or an invisible format character
(zero-width space, a bidi override, an odd space) does not read as what it runs; nor does a
word that mixes ASCII with letters or signs that look like ASCII ones (Cyrillic ``а``, Greek
``ο``, fullwidth ``ｒｍ``, a division slash ``∕``, a minus sign ``−rf``). Such commands are
flagged, and the approval dialog shows them through :func:`reveal`. A word wholly in another
script (``echo привет``) or a dash between words (``echo a – b``) is not hidden.
"""

from __future__ import annotations

import re
import unicodedata

_SUSPECT_RE = re.compile(r"[^\x20-\x7e\n\t]")
_TOKEN_RE = re.compile(r"[^ \n\t]+")
_ALWAYS_LOOKALIKE = ("FULLWIDTH", "MATHEMATICAL", "LATIN LETTER SMALL CAPITAL", "MODIFIER LETTER")
_LOOKALIKE_SCRIPTS = ("CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE", "COPTIC", "LATIN SMALL LETTER DOTLESS",
                      "LATIN SMALL LETTER SCRIPT", "LATIN LETTER")
_LOOKALIKE_SIGNS = ("SLASH", "SOLIDUS", "HYPHEN", "DASH", "MINUS", "SEMICOLON", "VERTICAL LINE", "AMPERSAND",
                    "TILDE", "FULL STOP", "QUOTATION", "APOSTROPHE", "DOLLAR", "LESS-THAN", "GREATER-THAN",
                    "COLON", "ASTERISK", "PERCENT", "EQUALS", "PARENTHESIS", "COMMA", "NUMBER SIGN")


def _invisible(char: str) -> bool:
    if char < " " or char == "\x7f" or 0x80 <= ord(char) < 0xA0:
        return char not in "\n\t"  # C0 / C1 controls, DEL, ESC, NUL
    category = unicodedata.category(char)
    return category in ("Cf", "Co", "Cs", "Cn", "Zl", "Zp", "Zs")  # zero-width, bidi, odd spaces


def _lookalike(char: str, mixed: bool) -> bool:
    name = unicodedata.name(char, "")
    if name.startswith(_ALWAYS_LOOKALIKE):
        return True
    if not mixed:
        return False
    category = unicodedata.category(char)
    if category.startswith("L"):
        return name.startswith(_LOOKALIKE_SCRIPTS)
    return category[0] in "PS" and any(sign in name for sign in _LOOKALIKE_SIGNS)


def _hidden_in(token: str) -> set[str]:
    mixed = any(c.isascii() and c.isalnum() for c in token) or any(c in "-/." for c in token)
    return {c for c in _SUSPECT_RE.findall(token) if _invisible(c) or _lookalike(c, mixed)}


def escape_char(char: str) -> str:
    """``\\x1b``, ``\\u202e``, ``\\U000e0041``: one character as it is shown escaped."""
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def hidden_characters(text: str) -> list[str]:
    """The distinct characters of ``text`` a reader would not see as they are, escaped."""
    if not _SUSPECT_RE.search(text):
        return []
    found: dict[str, None] = {}
    for char in text:  # spaces that are not ASCII split nothing for a reader: check them whole
        if char not in " \n\t" and _invisible(char):
            found[escape_char(char)] = None
    for token in _TOKEN_RE.findall(text):
        for char in sorted(_hidden_in(token)):
            found[escape_char(char)] = None
    return list(found)


def reveal(text: str) -> str:
    """``text`` with every hidden character (see :func:`hidden_characters`) written as an escape
    (``\\x1b``, ``\\u200b``, ``\\u0430``); everything else, newlines and tabs included, unchanged."""
    if not _SUSPECT_RE.search(text):
        return text

    def token(match: re.Match[str]) -> str:
        hidden = _hidden_in(match.group())
        return "".join(escape_char(c) if c in hidden else c for c in match.group())

    return _TOKEN_RE.sub(token, text)
