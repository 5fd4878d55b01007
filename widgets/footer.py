"""The footer, and the garbage collector's settings: what kept keys slow during a flood.

Measured with tests/bench/bench_ui.py (200 MB of output while keys move the focus):

- Textual's ``Footer`` rebuilds itself on every focus change: a dozen ``FooterKey`` widgets
  mounted, each styled through the whole stylesheet, then removed. That was 60 % of the event
  loop's time during the flood (profiled: ``Stylesheet.apply`` from ``FooterKey``'s
  ``compact`` watcher) and the reason a key pressed right after another waited up to 110 ms.
  It also leaked: each old key stayed in the footer's watcher list. :class:`KeysFooter` is one
  widget that draws the keys as one line of text and redraws only when they change.
- A full collection of the garbage collector walks every object the app made at start-up
  (~100,000: Textual, Rich, pydantic, the runtime) although they live as long as the app.
  :func:`settle_heap` moves them out of the collector's sight once the first screen is up
  (``gc.freeze``).
"""

from __future__ import annotations

import gc
from typing import NamedTuple

from rich.text import Text
from textual import events
from textual.widget import Widget


class FooterKey(NamedTuple):
    """One key drawn in the footer."""

    key: str
    display: str
    description: str
    enabled: bool


class KeysFooter(Widget, can_focus=False):
    """The keys that work where the focus is, on one line; a click on one presses it."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"footer--key", "footer--description"}
    DEFAULT_CSS = """
    KeysFooter {
        dock: bottom;
        height: 1;
        color: $footer-foreground;
        background: $footer-background;
        text-wrap: nowrap;
        text-overflow: clip;
        & > .footer--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        & > .footer--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id)
        self.keys: tuple[FooterKey, ...] = ()
        self._spans: list[tuple[int, int, FooterKey]] = []

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: object) -> None:
        if self.is_attached and screen is self.screen:
            self.update_keys()

    def update_keys(self) -> None:
        """Read the screen's active bindings; redraw only if the keys shown changed."""
        keys: list[FooterKey] = []
        seen_actions: set[str] = set()
        for _node, binding, enabled, _tooltip in self.screen.active_bindings.values():
            if not binding.show or binding.action in seen_actions:
                continue  # one key per action, as Textual's footer shows them
            seen_actions.add(binding.action)
            keys.append(FooterKey(binding.key, self.app.get_key_display(binding), binding.description, enabled))
        if tuple(keys) != self.keys:
            self.keys = tuple(keys)
            self.refresh()

    def render(self) -> Text:
        key_style = self.get_component_rich_style("footer--key", partial=True)
        description_style = self.get_component_rich_style("footer--description", partial=True)
        line = Text(no_wrap=True, overflow="crop", end="")
        self._spans = []
        for key in self.keys:
            start = len(line)
            line.append(f" {key.display} ", key_style)
            if key.description:
                line.append(f"{key.description} ", description_style)
            if not key.enabled:
                line.stylize("dim", start)
            self._spans.append((start, len(line), key))
        return line

    def key_at(self, x: int) -> FooterKey | None:
        """The key drawn at column ``x``, if any."""
        for start, end, key in self._spans:
            if start <= x < end:
                return key
        return None

    def on_mouse_down(self, event: events.MouseDown) -> None:
        key = self.key_at(event.x)
        if key is None:
            return
        if key.enabled:
            self.app.simulate_key(key.key)
        else:
            self.app.bell()


def settle_heap() -> None:
    """After start-up: keep what is alive now out of later collections (instant; the little
    start-up garbage it keeps is not worth a full collection at the first frame), and collect
    again from now on (``hermes-tui`` starts with collection off: hermes_tui.cli.main)."""
    gc.freeze()
    gc.enable()
