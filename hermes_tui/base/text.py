"""Text from outside made safe to show: hidden characters escaped, a URL's password masked.

A command holding a control character, NUL, an ANSI escape or an invisible format character
(zero-width space, a bidi override, an odd space) does not read as what it runs; nor does a
word that mixes ASCII with letters or signs that look like ASCII ones (Cyrillic ``а``, Greek
``ο``, fullwidth ``ｒｍ``, a division slash ``∕``, a minus sign ``−rf``). Such commands are
flagged (:mod:`hermes_tui.runtime.danger`, through :func:`hidden_characters`), and the approval
dialog shows them through :func:`reveal`. A word wholly in another script (``echo привет``) or
a dash between words (``echo a – b``) is not hidden.

Everything the command line prints about a command, a path or a title goes through
:func:`shown` (:func:`reveal`, and one line): printed raw, an ESC sequence in one
(``\\x1b[1A\\x1b[2K``) moves the cursor and erases what was shown, a CR overwrites the start
of the line, and a bidi override reorders it: the terminal would show ``ls -la`` where
``rm -rf ~`` is meant. So the command line and the app show the same text.

:func:`redact_url` masks the password of a URL (``store.url`` in an error, the store in
``doctor``): in its user part or a ``password=`` / ``sslpassword=`` parameter.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

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


def shown(text: object, *, one_line: bool = True) -> str:
    """``text`` safe to print: hidden characters escaped; with ``one_line``, newlines as ``\\n``
    too (a listing row or an error line stays one line)."""
    revealed = reveal(str(text))
    return revealed.replace("\n", "\\n") if one_line else revealed


# -- a URL's password --------------------------------------------------------------------------

SECRET_PARAMETERS = frozenset({"password", "sslpassword"})
"""libpq parameters that hold a secret (masked, scrubbed)."""


_USERINFO = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^:@/?#]*):(?P<password>.*)@")
"""``scheme://user:PASSWORD@``, the password running to the LAST ``@``: whatever it holds (an
unencoded ``/``, ``#``, ``?`` or ``@`` that makes the URL unreadable), none of it is shown."""


def userinfo_password(url: str) -> str | None:
    """The password of ``scheme://user:PASSWORD@...`` as written (to the last ``@``), or None."""
    found = _USERINFO.match(url)
    return found.group("password") if found else None


def redact_url(url: str) -> str:
    """``url`` without its password (in the user part, or a ``password=`` / ``sslpassword=``
    parameter). A URL Python cannot even split is shown only up to its scheme."""
    url = _USERINFO.sub(lambda m: f"{m.group('scheme')}{m.group('user')}:***@", url, count=1)
    try:
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
    except ValueError:
        return url.partition("://")[0] + "://(not shown: not a valid URL)"
    query_text = urlencode([(k, "***" if k in SECRET_PARAMETERS else v) for k, v in query], safe="/:*")
    masked = urlunsplit((parts.scheme, parts.netloc, parts.path, query_text, parts.fragment))
    if not parts.netloc and url.startswith(f"{parts.scheme}:///"):  # postgresql:///db (the default host)
        masked = masked.replace(f"{parts.scheme}:", f"{parts.scheme}://", 1)
    return masked
