"""The verdict on one command: why it is flagged, and why it is refused outright."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Analysis:
    """The verdict on one command."""

    hard: list[str] = field(default_factory=list)
    """Why it is refused outright (never asked, never allowlisted)."""
    flags: list[str] = field(default_factory=list)
    """Why it is flagged (asks even in ``manual`` mode; no "always")."""
    runs: list[tuple[str, ...]] = field(default_factory=list)
    """The commands that run once wrappers are unwrapped (``sudo env /usr/bin/git push`` runs
    ``("git", "push")``): program names without their folder, as read (approvals.deny matches these)."""

    def add(self, reason: str, hard: bool = False) -> None:
        """Record ``reason`` once (in ``hard`` when it is refused outright)."""
        target = self.hard if hard else self.flags
        if reason not in target:
            target.append(reason)

    @property
    def flagged(self) -> bool:
        """True when it must ask (or is refused)."""
        return bool(self.flags or self.hard)
