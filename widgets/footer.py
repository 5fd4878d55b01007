"""The footer, and the garbage collector's settings: what kept keys slow during a flood.

Measured with tests/bench/bench_ui.py (200 MB of output while keys move the focus): the event
loop stalled 60-230 ms at a time, and nearly every long stall was a full (generation 2)
collection of the garbage collector, not the output pane. Two causes:

- Textual's ``Footer`` rebuilds its keys on every focus change, and each new key binds its
  ``compact`` to the footer: a watcher that stays in the footer's list after the key is
  removed (it is dropped only when ``compact`` changes, which it never does here). Every
  focus change leaked a dozen widgets: the heap grew, and every full collection got slower.
- A full collection walks every object the app made at start-up (~100,000: Textual, Rich,
  pydantic, the runtime) although they live as long as the app. :func:`settle_heap` moves them
  out of the collector's sight once the first screen is up (``gc.freeze``).
"""

from __future__ import annotations

import gc

from textual.widgets import Footer as TextualFooter


class Footer(TextualFooter):
    """Textual's footer, without the leak of its old keys."""

    async def recompose(self) -> None:
        await super().recompose()
        # Watchers of ``compact`` set by keys that are gone now (the widget, its styles, its
        # message queue and caches stayed alive through them).
        for watchers in getattr(self, "__watchers", {}).values():
            watchers[:] = [(node, callback) for node, callback in watchers
                           if not (getattr(node, "_closing", False) or getattr(node, "_closed", False))]


def settle_heap() -> None:
    """After start-up: keep what is alive now out of later collections (instant; the little
    start-up garbage it keeps is not worth a full collection at the first frame)."""
    gc.freeze()
