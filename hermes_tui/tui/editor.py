"""The command line that opens a file in the user's editor, at a line when the editor takes one.

The editor is ``$VISUAL``, else ``$EDITOR``, else ``less``; it may carry arguments
(``code --wait``). The result is an argv list, never a shell string: the path is one
argument, made absolute so that no editor takes it for an option or a ``+command``.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping

PLUS_LINE = frozenset({"vi", "vim", "nvim", "gvim", "view", "nano", "pico", "emacs", "emacsclient",
                       "micro", "kak", "joe", "mg", "less"})
"""Editors that take ``+LINE`` before the file."""
PATH_COLON_LINE = frozenset({"hx", "helix", "subl", "zed"})
"""Editors that take ``FILE:LINE``."""
GOTO_PATH_COLON_LINE = frozenset({"code", "code-insiders", "codium", "cursor"})
"""Editors that take ``--goto FILE:LINE``."""


def editor_command(environ: Mapping[str, str] = os.environ) -> str:
    """The user's editor command: ``$VISUAL``, else ``$EDITOR``, else ``less``."""
    return environ.get("VISUAL") or environ.get("EDITOR") or "less"


def editor_argv(command: str, path: str, line: int | None = None) -> list[str]:
    """The argv that opens ``path`` with ``command`` (at 1-based ``line`` if the editor is one
    we know takes a line; any other editor opens the file at its top).

    Raises:
        ValueError: ``command`` is empty or badly quoted.
    """
    argv = shlex.split(command)
    if not argv:
        raise ValueError("the editor command is empty")
    path = os.path.abspath(path)
    name = os.path.basename(argv[0])
    if line is None or line < 1:
        return [*argv, path]
    if name in PLUS_LINE:
        return [*argv, f"+{line}", path]
    if ":" not in path:  # else FILE:LINE is ambiguous
        if name in PATH_COLON_LINE:
            return [*argv, f"{path}:{line}"]
        if name in GOTO_PATH_COLON_LINE:
            return [*argv, "--goto", f"{path}:{line}"]
    return [*argv, path]
