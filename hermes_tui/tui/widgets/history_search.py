"""The input's history: Up/Down walk it, Ctrl+R searches it (newest first).

:class:`InputHistory` holds the inputs of this and earlier sessions (the app loads them from
``sessions.db`` and stores each new one there); :class:`HistorySearchBar` is the line above the
input that shows a reverse search's query and match.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from hermes_tui.storage.inputs import worth_keeping
from hermes_tui.tui.widgets.safe import plain, visible

HISTORY_LIMIT = 10_000
"""Inputs kept (the newest)."""


class InputHistory:
    """Previous inputs, oldest first, and where Up/Down stand in them.

    Walking keeps what was typed at each place (the line being written when Up was first
    pressed comes back past the newest entry), as prompt_toolkit does.
    """

    def __init__(self, limit: int = HISTORY_LIMIT) -> None:
        self.limit = limit
        self.entries: list[str] = []
        self.loaded = False
        """The stored history was read (it is read once, when the first session opens)."""
        self._index = 0
        self._working: dict[int, str] = {}

    @property
    def index(self) -> int:
        """Where the walk stands: ``len(entries)`` is the line being written."""
        return self._index

    def load(self, older: list[str]) -> None:
        """Put the stored inputs (oldest first) before the ones added since start-up."""
        merged = list(older)
        for entry in self.entries:
            if not merged or merged[-1] != entry:
                merged.append(entry)
        self.entries = merged[-self.limit:]
        self.loaded = True
        self.reset()

    def add(self, text: str) -> bool:
        """Record a submitted input; False for a repeat of the newest or one the history does
        not keep (:func:`hermes_tui.storage.inputs.worth_keeping`: blank, huge, or a leading space)."""
        self.reset()
        if not worth_keeping(text) or (self.entries and self.entries[-1] == text):
            return False
        self.entries.append(text)
        del self.entries[:-self.limit]
        self.reset()
        return True

    def reset(self) -> None:
        """Back to the line being written (after a submit)."""
        self._index = len(self.entries)
        self._working.clear()

    def back(self, current: str) -> str | None:
        """The older entry (None at the oldest); ``current`` is kept for when the walk comes back."""
        if self._index <= 0:
            return None
        self._working[self._index] = current
        self._index -= 1
        return self._working.get(self._index, self.entries[self._index])

    def forward(self, current: str) -> str | None:
        """The newer entry, or the line that was being written; None when already there."""
        if self._index >= len(self.entries):
            return None
        self._working[self._index] = current
        self._index += 1
        default = self.entries[self._index] if self._index < len(self.entries) else ""
        return self._working.get(self._index, default)

    def go(self, index: int, current: str) -> None:
        """Stand at entry ``index`` (a search took it): Up goes on from there."""
        self._working[self._index] = current
        self._working.pop(index, None)
        self._index = index

    def search(self, query: str, before: int | None = None, skip: frozenset[str] = frozenset()) -> int | None:
        """The index of the newest entry older than ``before`` that holds ``query`` (case is
        ignored unless the query has capitals), skipping texts in ``skip``; None if none does."""
        start = len(self.entries) if before is None else before
        folded = query if query != query.lower() else None
        for index in range(min(start, len(self.entries)) - 1, -1, -1):
            entry = self.entries[index]
            if entry in skip:
                continue
            if (query in entry) if folded else (query.lower() in entry.lower()):
                return index
        return None


class HistorySearch:
    """One Ctrl+R search: the query, the match, and the matches already shown."""

    def __init__(self, history: InputHistory) -> None:
        self.history = history
        self.query = ""
        self.match: int | None = None
        self._seen: list[int] = []

    @property
    def text(self) -> str | None:
        """The matched entry (None: no match yet)."""
        return self.history.entries[self.match] if self.match is not None else None

    def type(self, query: str) -> None:
        """The query changed: the newest match (a longer query keeps the match if it still fits)."""
        grown = query.startswith(self.query) and self.match is not None
        self.query = query
        if grown and self.match is not None:
            found = self.history.search(query, self.match + 1)
        else:
            found = self.history.search(query)
        self.match = found
        self._seen = [found] if found is not None else []

    def older(self) -> bool:
        """The next older match (Ctrl+R again); False when there is none (the match stays)."""
        before = self.match if self.match is not None else None
        skip = frozenset(self.history.entries[i] for i in self._seen)
        found = self.history.search(self.query, before, skip)
        if found is None:
            return False
        self.match = found
        self._seen.append(found)
        return True

    def newer(self) -> bool:
        """Back to the previous (newer) match."""
        if len(self._seen) < 2:
            return False
        self._seen.pop()
        self.match = self._seen[-1]
        return True


class HistorySearchBar(Static):
    """The line above the input during Ctrl+R: the query and the entry it matches."""

    DEFAULT_CSS = """
    HistorySearchBar { display: none; height: auto; max-height: 4; padding: 0 1; background: $boost; }
    HistorySearchBar.-active { display: block; }
    """

    MATCH_LINES = 3

    def show(self, search: HistorySearch, failed: bool = False) -> None:
        """Draw the query and the match (its first lines, the query highlighted)."""
        head = Text.assemble(("history search" + (" (no older match)" if failed else ""), "bold"), ": ")
        head.append_text(plain(search.query, "reverse"))
        text = search.text
        if text is None:
            head.append("  no match" if search.query else "  type to search, Ctrl+R: older, Enter: use, Esc: cancel",
                        style="dim")
            self.update(head)
            return
        lines = text.split("\n")
        shown = visible("\n".join(lines[: self.MATCH_LINES]))
        body = Text(shown)
        if search.query:
            body.highlight_words([visible(search.query)], "bold underline",
                                 case_sensitive=search.query != search.query.lower())
        if len(lines) > self.MATCH_LINES:
            body.append(f"\n… ({len(lines):,} lines)", style="dim")
        self.update(Text.assemble(head, "\n", body))
