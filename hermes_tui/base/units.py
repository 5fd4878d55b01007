"""Units on the command line and in config.yaml: durations (``7d``) and sizes (``1G``), sizes
for people, and counts for people (``1 tool call``, ``2 tool calls``).

Imports nothing from the project, so config, cache, the widgets and the commands can all use it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from os.path import commonprefix


def human_size(size: float, sep: str = "") -> str:
    """'12B', '195.3KiB', '1.2GiB' (``sep`` goes between number and unit): binary units, named as
    such (KiB, MiB, GiB), wherever a size is shown, so it never reads as 10^6 beside an exact byte
    count."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f}{sep}{unit}" if unit == "B" else f"{size:.1f}{sep}{unit}"
        size /= 1024
    return f"{size}"


def unique_prefixes(names: Iterable[str], width: int) -> dict[str, str]:
    """How each name shows in a column about ``width`` wide: whole when it fits, else its shortest
    prefix (at least ``width - 1`` characters) that no other of ``names`` starts with, and '…'.

    A label can be longer than ``width``: a cut that two names share (``20261129-1425…`` for two
    sessions started in the same minute) would name neither; a column sizes itself to its labels.
    """
    distinct = sorted(set(names))
    labels = {}
    for index, name in enumerate(distinct):
        if len(name) <= width:
            labels[name] = name
            continue
        # In sorted order a name shares its longest prefix with a neighbour.
        shared = max((len(commonprefix([name, distinct[other]])) for other in (index - 1, index + 1)
                      if 0 <= other < len(distinct)), default=0)
        keep = max(width - 1, shared + 1)
        labels[name] = name if keep >= len(name) else name[:keep] + "…"
    return labels


def noun(count: int, word: str, plural: str | None = None) -> str:
    """``word`` as ``count`` of it is said: 'kernel' for 1, 'kernels' for 0 or 2.

    The plural is ``plural`` when given, else English's regular one: 'entry' -> 'entries',
    'match' -> 'matches', 'key' -> 'keys', 'file' -> 'files'. Only the last word changes
    ('tool call' -> 'tool calls').
    """
    if count == 1:
        return word
    if plural is not None:
        return plural
    if len(word) > 1 and word.endswith("y") and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    return word + "s"


def plural(count: int, word: str, plural: str | None = None) -> str:
    """The count and its noun: '1 tool call', '2 tool calls', '0 entries' (see :func:`noun`)."""
    return f"{count} {noun(count, word, plural)}"


DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$", re.IGNORECASE)
SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


def parse_duration(text: str) -> float:
    """'90s', '30m', '12h', '7d', '2w' in seconds; raises ValueError with what is allowed."""
    match = DURATION_RE.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a duration: use a number and s, m, h, d or w (e.g. 7d, 12h)")
    return float(match.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[match.group(2).lower()]


def parse_size(text: str) -> int:
    """'500K', '200M', '1G', '1.5GB' in bytes; raises ValueError with what is allowed."""
    match = SIZE_RE.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a size: use a number and K, M, G or T (e.g. 500M, 1G)")
    return int(float(match.group(1)) * 1024 ** " kmgt".index(match.group(2).lower() or " "))


def short_duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``2h10m``: a duration in its two largest units (never negative)."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m"
