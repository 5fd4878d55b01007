"""The focus frame of a pane: its border in ``$primary`` while focus is inside it.

Drawn with an inline border colour instead of a ``:focus-within`` rule (issue 20). Textual
answers a focus change inside a node that has a ``:focus-within`` rule by restyling that node
and every node under it; for the conversation pane that is the whole transcript, so every
focus change cost more the longer the session ran, and during a flood of output that main-thread
work held the GIL the capture thread needed. A border colour set inline repaints the pane's
region only: no restyle, no new layout.
"""

from __future__ import annotations

from textual import events
from textual.color import Color
from textual.widget import Widget


class FocusFrame(Widget):
    """A pane whose border turns ``$primary`` while one of its widgets has focus.

    Subclasses keep their CSS border (its type and resting colour); only the colour changes.
    """

    _framed = False

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._draw_frame(force=True))

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self._draw_frame()

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        # Focus may have moved to another widget of this pane: ask where it is now.
        self._draw_frame()

    def _draw_frame(self, force: bool = False) -> None:
        framed = self.has_focus_within
        if framed == self._framed and not force:
            return
        self._framed = framed
        border = self.styles.inline
        if not framed:
            border.clear_rule("border_top")
            border.clear_rule("border_right")
            border.clear_rule("border_bottom")
            border.clear_rule("border_left")
            self.refresh()
            return
        kind = self.styles.border_top[0] or "round"
        self.styles.border = (kind, Color.parse(self.app.get_css_variables()["primary"]))
