"""Which file names are agent instruction files, and the flag a write to one gets.

Kept in the analysis package (it needs nothing else of ours): :mod:`.paths` flags a write to
one, :mod:`hermes_tui.runtime.instructions` guards them after a call.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable

INSTRUCTION_WRITE = "writes an agent instruction file"
"""How every reason for such a write begins (the gate tells it from other flags by this)."""


def matches(name: str, patterns: Iterable[str]) -> bool:
    """True when the file name ``name`` is one of ``patterns`` (globs; names compared exactly,
    as a case-sensitive file system does, and also case-folded: ``agents.md`` is read by tools
    on a case-insensitive one)."""
    for pattern in patterns:
        if fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(name.lower(), pattern.lower()):
            return True
    return False


def reason_for(path: str, patterns: Iterable[str], how: str = "writes") -> str | None:
    """The flag for writing ``path`` when its name is an instruction file's, else None."""
    name = os.path.basename(path.rstrip("/"))
    if name and matches(name, patterns):
        return f"{INSTRUCTION_WRITE.replace('writes', how, 1)} ({name}): it steers the next agent that opens " \
               "this folder; always asked"
    return None


def is_instruction_reason(reason: str) -> bool:
    """True for a reason made by :func:`reason_for` (any verb)."""
    return f" {INSTRUCTION_WRITE.split(' ', 1)[1]} (" in reason
