"""Which inputs the input history keeps (its own module: the input's history widget needs this
rule, not the store, before the first frame; issue 20)."""

from __future__ import annotations

INPUT_MAX_CHARS = 16_384
"""A longer input (a big paste) is not kept in the history: it ran, it is in its session."""


def worth_keeping(text: str) -> bool:
    """False for an input the history does not keep: blank, over :data:`INPUT_MAX_CHARS`, or
    typed with a leading space."""
    return bool(text.strip()) and not text.startswith(" ") and len(text) <= INPUT_MAX_CHARS
