"""The footer, and the garbage collector's settings: what kept keys slow during a flood.

Measured with tests/bench/bench_ui.py (200 MB of output while keys move the focus):

- Textual's ``Footer`` rebuilds itself on every focus change: a dozen ``FooterKey`` widgets
  mounted, each styled through the whole stylesheet, then removed. That was 60 % of the event
  loop's time during the flood (profiled: ``Stylesheet.apply`` from ``FooterKey``'s
  ``compact`` watcher) and the reason a key pressed right after another waited up to 110 ms.
  It also leaked: each old key stayed in the footer's watcher list. :class:`KeysFooter` is one
  widget that draws the keys as text and redraws only when they change. Keys that do not fit
  on one line go on a second (and a third): at 80 columns every key stays in sight (issue 32).
- A full collection of the garbage collector walks every object the app made at start-up
  (~100,000: Textual, Rich, pydantic, the runtime) although they live as long as the app.
  :func:`hermes_tui.base.lifetime.settle_heap` moves them out of the collector's sight once
  the first screen is up (``gc.freeze``).
"""

from __future__ import annotations

from typing import NamedTuple

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.geometry import Size
from textual.widget import Widget


class FooterKey(NamedTuple):
    """One key drawn in the footer."""

    key: str
    display: str
    description: str
    enabled: bool


MAX_LINES = 3
"""Lines the footer may take; keys past them are cut (none are, at 80 columns)."""


def footer_lines(keys: tuple[FooterKey, ...] | list[FooterKey], width: int) -> list[list[FooterKey]]:
    """``keys`` in lines of at most ``width`` cells, broken between keys, never inside one."""
    lines: list[list[FooterKey]] = [[]]
    used = 0
    for key in keys:
        size = key_cells(key)
        if lines[-1] and used + size > width:
            lines.append([])
            used = 0
        lines[-1].append(key)
        used += size
    return lines


def key_cells(key: FooterKey) -> int:
    """Cells ``key`` takes in the footer: `` F1 `` and ``Help ``."""
    return cell_len(f" {key.display} ") + (cell_len(f"{key.description} ") if key.description else 0)


class KeysFooter(Widget, can_focus=False):
    """The keys that work where the focus is, on as many lines as they need (MAX_LINES at
    most); a click on one presses it."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"footer--key", "footer--description"}
    DEFAULT_CSS = """
    KeysFooter {
        dock: bottom;
        height: auto;
        max-height: 3;
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
        self._spans: list[tuple[int, int, int, FooterKey]] = []
        """Where each key is drawn: (line, first column, column after it, key)."""

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
            lines = len(self.lines())
            self.keys = tuple(keys)
            self.refresh(layout=len(self.lines()) != lines)  # a line more or less: the screen's layout

    def lines(self, width: int | None = None) -> list[list[FooterKey]]:
        """The keys as drawn in ``width`` cells (default: the footer's width), line by line."""
        width = width if width is not None else self.size.width
        return footer_lines(self.keys, width or 10_000)[:MAX_LINES]

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(footer_lines(self.keys, width or 10_000)[:MAX_LINES])

    def on_resize(self) -> None:
        self.refresh(layout=True)  # the keys may need more (or fewer) lines at the new width

    def render(self) -> Text:
        key_style = self.get_component_rich_style("footer--key", partial=True)
        description_style = self.get_component_rich_style("footer--description", partial=True)
        text = Text(no_wrap=True, overflow="crop", end="")
        self._spans = []
        for row, keys in enumerate(self.lines()):
            if row:
                text.append("\n")
            line = Text(no_wrap=True, overflow="crop", end="")
            for key in keys:
                start, column = len(line), line.cell_len
                line.append(f" {key.display} ", key_style)
                if key.description:
                    line.append(f"{key.description} ", description_style)
                if not key.enabled:
                    line.stylize("dim", start)
                self._spans.append((row, column, line.cell_len, key))
            text.append_text(line)
        return text

    def key_at(self, x: int, y: int = 0) -> FooterKey | None:
        """The key drawn at column ``x`` of line ``y``, if any."""
        for row, start, end, key in self._spans:
            if row == y and start <= x < end:
                return key
        return None

    def on_mouse_down(self, event: events.MouseDown) -> None:
        key = self.key_at(event.x, event.y)
        if key is None:
            return
        if key.enabled:
            self.app.simulate_key(key.key)
        else:
            self.app.bell()
