"""Big pastes in the input: a placeholder token stands for the text until it is sent.

A paste of more than :data:`PASTE_LINES` lines shows in the input as ``[pasted 2,000 lines]``
(``[pasted 2,000 lines #2]`` for a second one of the same size). The token is expanded to the
whole text when the input is submitted, so the text runs (or is sent) whole; the transcript
block of that input shows the tokens again and expands on a click or Enter.
"""

from __future__ import annotations

import re
from collections import OrderedDict

PASTE_LINES = 20
"""A paste of more lines than this is shown as a placeholder."""
_TOKEN_RE = re.compile(r"\[pasted [\d,]+ lines(?: #\d+)?\]")
_SHOWN_KEPT = 32
_shown: OrderedDict[str, str] = OrderedDict()


def normalise(text: str) -> str:
    """A pasted text with Windows / old Mac line ends made ``\\n``."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def line_count(text: str) -> int:
    """Lines in ``text`` (a last line without a newline counts; a trailing newline adds none)."""
    return len(text.splitlines())


def is_big(text: str) -> bool:
    """True when a paste of ``text`` is shown as a placeholder."""
    return line_count(text) > PASTE_LINES


class Pastes:
    """The placeholder tokens of one input and the texts they stand for."""

    def __init__(self) -> None:
        self._texts: dict[str, str] = {}

    def add(self, text: str, current: str = "") -> str:
        """Keep ``text``; returns its token, unique among the tokens in ``current`` (what the
        input holds now: a token deleted from it is free again)."""
        base = f"pasted {line_count(text):,} lines"
        token, number = f"[{base}]", 1
        while token in self._texts and token in current:
            number += 1
            token = f"[{base} #{number}]"
        self._texts[token] = text
        return token

    @property
    def tokens(self) -> list[str]:
        return list(self._texts)

    def has_tokens(self, text: str) -> bool:
        """True when ``text`` holds one of this input's tokens."""
        return any(token in text for token in self._texts)

    def expand(self, text: str) -> str:
        """``text`` with each token of this input replaced by the text it stands for (a token
        typed by hand, or one from another input, stays as it is)."""
        if not self._texts:
            return text
        return _TOKEN_RE.sub(lambda match: self._texts.get(match.group(), match.group()), text)

    def token_ending(self, before: str) -> str | None:
        """The token ``before`` (the text left of the cursor) ends with, if any."""
        return next((token for token in self._texts if before.endswith(token)), None)

    def clear(self) -> None:
        self._texts.clear()


def remember_shown(full: str, shown: str) -> None:
    """``full`` was submitted as ``shown`` (with placeholders): its transcript block shows that."""
    _shown[full] = shown
    _shown.move_to_end(full)
    while len(_shown) > _SHOWN_KEPT:
        _shown.popitem(last=False)


def shown_for(full: str) -> str | None:
    """How a submitted text was shown in the input, when it held a big paste (else None)."""
    return _shown.get(full)
