"""When the garbage collector walks the whole heap: not while a run's output is shown (issue 20).

Python's full collection walks every object the app keeps alive, and a long session's
transcript (its blocks, the lines drawn for them, Textual's caches) is most of them. In
``tests/bench/bench_ui.py``'s 40 rounds the full collections grew from 10 ms to 109 ms as the
transcript filled, and a key pressed during one waited for it.

:class:`HeapKeeper` freezes what is alive each time a run ends (``gc.freeze``: instant), so
the collections Python makes while the next run's output is shown walk only what is new. What
was frozen and later became cyclic garbage (a pruned block, a closed dialog) is collected in
full when the app is idle, or after ``every`` runs at a pause in typing (twice as many at the
latest): memory stays bounded.
Garbage without cycles is freed at once, frozen or not (reference counting).
"""

from __future__ import annotations

import gc
import time

SETTLE_EVERY = 30
"""Runs ended between two full collections at most (when the app is never idle meanwhile)."""
TYPING_SECONDS = 0.5
"""A key typed this recently: the user is typing (a full collection would make a key wait)."""
IDLE_SECONDS = 2.0
"""No run ended and no key was typed for this long: the app is idle."""


class HeapKeeper:
    """Freeze the heap as runs end; collect it in full when idle (see the module's doc)."""

    def __init__(self, every: int = SETTLE_EVERY) -> None:
        self.every = every
        self.frozen_runs = 0
        """Runs ended (each froze the heap) since the last full collection."""
        self.settled = 0
        """Full collections made."""
        self.last_run_end = float("-inf")
        """``time.monotonic()`` when a run last ended."""

    def run_ended(self, last_key: float = float("-inf")) -> None:
        """A run ended: freeze what is alive. After ``every`` runs that froze it, collect in
        full instead, at a run's end with no key typed for TYPING_SECONDS (a key pressed meanwhile
        would wait for it), or after twice as many runs whatever the keys (``last_key``:
        ``time.monotonic()`` of the last key)."""
        self.last_run_end = now = time.monotonic()
        self.frozen_runs += 1
        due = self.frozen_runs >= self.every and now - last_key >= TYPING_SECONDS
        if due or self.frozen_runs >= 2 * self.every:
            self.settle()
        else:
            gc.freeze()

    def idle(self, last_key: float = float("-inf"), busy: bool = False) -> bool:
        """Called now and then: collect in full if runs froze the heap since the last time and
        nothing ran or was typed for IDLE_SECONDS (``last_key``: ``time.monotonic()`` of the
        last key; ``busy``: a turn is running). True if it collected."""
        quiet = time.monotonic() - max(self.last_run_end, last_key) >= IDLE_SECONDS
        if self.frozen_runs and quiet and not busy:
            self.settle()
            return True
        return False

    def settle(self) -> None:
        """Collect everything, frozen included, then freeze what is still alive."""
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        self.frozen_runs = 0
        self.settled += 1

    def release(self) -> None:
        """The app ends: give everything frozen back to the collector."""
        gc.unfreeze()
        self.frozen_runs = 0
