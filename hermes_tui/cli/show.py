"""Untrusted text on the terminal: what every command prints about a command, a path or a title.

Commands, rule patterns, script titles, session titles, paths and error messages can come from
a script or a model. Printed raw, an ESC sequence in one (``\\x1b[1A\\x1b[2K``) moves the
cursor and erases what was shown, a CR overwrites the start of the line, and a bidi override
reorders it: the terminal would show ``ls -la`` where ``rm -rf ~`` is meant. Everything
such goes through :func:`shown`, which reuses the approval dialog's
:func:`~hermes_tui.runtime.danger.text.reveal` (controls, invisible and look-alike characters
written as ``\\x1b``, ``\\u202e``...), so the command line and the app show the same text.
"""

from __future__ import annotations


def shown(text: object, *, one_line: bool = True) -> str:
    """``text`` safe to print: hidden characters escaped; with ``one_line``, newlines as ``\\n``
    too (a listing row or an error line stays one line)."""
    # Imported here: it loads the runtime package, which a plain `hermes-tui sessions` never needs.
    from hermes_tui.runtime.danger.text import reveal

    revealed = reveal(str(text))
    return revealed.replace("\n", "\\n") if one_line else revealed
