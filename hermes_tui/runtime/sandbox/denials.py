"""Telling a command that failed on the sandbox from one that failed by itself.

A sandboxed write outside the roots fails with EROFS (bubblewrap's read-only mounts) or
EACCES (Landlock); a connection without ``network`` fails to resolve or to make a socket
(EPERM). Programs print these in their own words, so the output is read for the usual forms,
and a path it names counts only if the sandbox really keeps it from being written (outside
every writable root, or protected): a plain "Permission denied" inside the workspace is the
command's own business.
"""

from __future__ import annotations

import os
import re

from hermes_tui.base.fsutil import real_path
from hermes_tui.runtime.sandbox.paths import Layout, inside

_ERRORS = ("Read-only file system", "Permission denied", "Operation not permitted")
_NETWORK = re.compile(
    r"Temporary failure in name resolution|Could not resolve host|Name or service not known|Network is unreachable"
    r"|Failed to establish a new connection|getaddrinfo failed|Could not resolve proxy|socket: Operation not permitted"
    r"|Errno 1\] Operation not permitted|No address associated with hostname", re.IGNORECASE)
SCAN_CHARS = 64_000
"""Only the last this many characters of a command's output are read."""
LINE_CHARS = 4096
"""A longer line is not read for a path (every step here is linear: a script's output must
not stall the host's event loop)."""


def explain(output: str, layout: Layout, *, cwd: str, network: bool, home: str) -> str | None:
    """Why the sandbox stopped this command, in words (``write to ~/.bashrc is outside the
    workspace``), or None when its output shows no sandbox denial."""
    text = output[-SCAN_CHARS:]
    for line in text.splitlines():
        if len(line) > LINE_CHARS:
            continue
        for path in _named_paths(line):
            why = write_refusal(path, layout, cwd=cwd, home=home)
            if why is not None:
                return why
    if not network and _NETWORK.search(text):
        return "the network is closed to sandboxed commands (code_execution.network: false)"
    return None


def _named_paths(line: str) -> list[str]:
    """The paths a line names beside an error, in the usual forms: ``bash: /x: Read-only file
    system``, ``touch: cannot touch '/x': Permission denied``, Python's ``...: '/x'``."""
    found: list[str] = []
    for error in _ERRORS:
        at = line.find(error)
        if at < 0:
            continue
        after = line[at + len(error):].lstrip()
        if after.startswith(":"):
            quoted = after[1:].strip()
            closing = _QUOTES.get(quoted[:1])
            if closing is not None and quoted.find(closing, 1) > 0:
                found.append(quoted[1:quoted.find(closing, 1)])
        before = line[:at].rstrip().rstrip(":").rstrip()
        opening = next((o for o, c in _QUOTES.items() if before.endswith(c)), None)
        if opening is not None:
            start = before.rfind(opening, 0, len(before) - 1)
            if start >= 0:
                found.append(before[start + 1:-1])
        elif before and not before.endswith("]"):  # not Python's "[Errno 13]"
            found.append(before.split()[-1])
    return found


_QUOTES = {"'": "'", '"': '"', "\u2018": "\u2019"}
"""Opening quote -> closing quote (GNU tools quote ‘so’ in a UTF-8 locale)."""


def _real(raw: str, cwd: str) -> str | None:
    try:
        return real_path(os.path.normpath(os.path.join(cwd, os.path.expanduser(raw.strip()))))
    except (OSError, ValueError):
        return None


def _shown(path: str, home: str) -> str:
    return "~" + path[len(home):] if home != "/" and inside(path, home) else path


def read_refusal(raw: str, layout: Layout, *, cwd: str, home: str) -> str | None:
    """Why a sandboxed process could not read ``raw`` (a secret on the deny list), or None."""
    path = _real(raw, cwd)
    return None if path is None else real_read_refusal(path, layout, home)


def real_read_refusal(path: str, layout: Layout, home: str) -> str | None:
    """:func:`read_refusal` of a path with no symbolic link left in it (what an open
    descriptor's link in ``/proc/self/fd`` names): not looked up again."""
    if any(inside(path, p) for p in layout.hidden):
        return f"{_shown(path, home)} is hidden from sandboxed processes (a secret)"
    return None


def write_refusal(raw: str, layout: Layout, *, cwd: str, home: str) -> str | None:
    """Why a sandboxed process could not write ``raw``, in words, or None if it could."""
    path = _real(raw, cwd)
    if path is None:
        return None
    shown = _shown(path, home)
    if any(inside(path, p) for p in layout.protected + layout.git):
        return f"write to {shown} is protected (read-only in the sandbox)"
    if any(inside(path, p) for p in layout.hidden):
        return f"{shown} is hidden from sandboxed commands (a secret)"
    if not any(inside(path, root) for root in layout.writable):
        if layout.read_only:
            return f"write to {shown}: the sandbox is read-only (code_execution.sandbox), only TMPDIR is writable"
        return f"write to {shown} is outside the workspace"
    return None
