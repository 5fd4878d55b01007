"""Which file names are agent instruction files, and the flag a write to one gets.

Kept in the analysis package (it needs nothing else of ours): :mod:`.paths` flags a write to
one, :mod:`hermes_tui.runtime.instructions` guards them after a call.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from collections.abc import Iterable

INSTRUCTION_WRITE = "writes an agent instruction file"
"""How every reason for such a write begins (the gate tells it from other flags by this)."""


def matches(name: str, patterns: Iterable[str]) -> bool:
    """True when the file name ``name`` is one of ``patterns`` (globs), compared case-folded:
    ``agents.md`` is what a tool reads for AGENTS.md on a case-insensitive file system."""
    names, globbed = _compiled(tuple(patterns))
    folded = name.lower()
    return folded in names or (globbed is not None and globbed.fullmatch(folded) is not None)


@functools.lru_cache(maxsize=16)
def _compiled(patterns: tuple[str, ...]) -> tuple[frozenset[str], re.Pattern[str] | None]:
    """The plain names (a set: a folder of 10,000 entries is read in a few milliseconds) and one
    expression for the globs, both case-folded."""
    plain = frozenset(p.lower() for p in patterns if not any(c in p for c in "*?["))
    globs = [fnmatch.translate(p.lower()) for p in patterns if any(c in p for c in "*?[")]
    return plain, re.compile("|".join(globs)) if globs else None


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
