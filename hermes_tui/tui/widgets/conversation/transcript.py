"""The conversation's scrolled blocks (:class:`Transcript`): it follows its end as blocks come,
and stays where the user put it once scrolled up. Its sizes ask for no second layout of the
screen (issue 20).

(Drawing a stored session back into the pane is tui/widgets/transcript.py.)
"""

from __future__ import annotations

from textual import events
from textual.containers import VerticalScroll
from textual.geometry import Size
from textual.scrollbar import ScrollBar

from hermes_tui.tui.textual_compat import vertical_scrollbar


class QuietScrollBar(ScrollBar):
    """A scrollbar whose new size asks for no second layout of the screen. Textual sets a
    widget's new virtual size as a reactive that lays the whole screen out again; a scrollbar
    has nothing inside to lay out, and the layout that sized it has placed it. The transcript's
    height changes each time Enter shrinks the input, and that second layout came in the run's
    first frames (issue 20)."""

    # Widget's private hook, checked by tui/textual_compat.py (as Transcript's below)
    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        return super()._size_updated(size, virtual_size, container_size, layout=False)


class Transcript(VerticalScroll):
    """The scrolled blocks. When the view is at the bottom it stays there as the blocks grow
    (a run's result and warnings, a reply's Markdown); scrolled up, it stays where the user
    put it, until scrolled to the bottom again. Nor does it move while a block of it has the
    focus (the user reads it, or opens it with Enter). Short content stays at the top.

    Following is Textual's anchor: the layout that finds the blocks' new height puts the view
    at their end in the same pass. Scrolled there afterwards, the screen would be laid out and
    drawn a second time for each change, while a run's output wants the CPU (issue 20)."""

    _held_at: float | None = None
    """Where the view was held when a block took the focus (None: not held)."""
    _moved = False
    """The user moved the view while a block held it: it stays put until scrolled to the end."""

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        # Textual sets a container's new virtual size (found by a layout of the screen) as a
        # reactive that asks for a layout again: a second layout of the whole screen for
        # each one needed. The layout that found the size has placed every block (and the
        # view, anchored) at it already. (Widget's private hook: tui/textual_compat.py.)
        changed = super()._size_updated(size, virtual_size, container_size, layout=False)
        long = self.max_scroll_y > 0
        if long and not self.is_anchored and self._held_at is None and not self._moved:
            self.anchor()  # the blocks outgrew the view: follow them from now on
        elif not long and self.is_anchored:
            # Anchored, Textual would draw short content at the bottom of the view.
            self.anchor(False)
            self.scroll_to(y=0, animate=False, immediate=True)
        return changed

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        """The vertical scrollbar, a :class:`QuietScrollBar` (made as Textual makes its own)."""
        return vertical_scrollbar(self, lambda: QuietScrollBar(vertical=True, name="vertical",
                                                               thickness=self.scrollbar_size_vertical))

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self._moved and self._held_at is None and new_value >= self.max_scroll_y > 0:
            self._moved = False  # scrolled back to the end: follow it again
            self.anchor()

    def follow_end(self) -> None:
        """Follow the end from now on (a stored session was drawn): anchored once its blocks
        outgrow the view (anchored while short, Textual draws them at the bottom)."""
        self._held_at, self._moved = None, False
        self.anchor(self.max_scroll_y > 0)

    def to_end(self) -> None:
        """Scroll to the end (a block was added, a reply streams), unless a block of it has the
        focus (the user reads it) or the user scrolled it up from the input."""
        if self._held_at is None and not self._moved:
            self.scroll_end(animate=False)

    def stay(self) -> None:
        """The user moves the view (PageUp, /find): it stays where it is put as blocks come,
        until it is scrolled to the end again."""
        if self.max_scroll_y > 0:  # (short, there is nowhere to move: it follows on)
            self.release_anchor()
            self._moved = True

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        if self._held_at is None and self.scroll_y >= self.max_scroll_y:  # following: hold still
            self.release_anchor()
            self._held_at = self.scroll_y

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        if self._held_at is not None:
            self.call_after_refresh(self._let_go)

    def _let_go(self) -> None:
        """The focus left the blocks: follow again, unless the user moved the view meanwhile."""
        focused = self.screen.focused if self.is_attached else None
        if self._held_at is None or (focused is not None and self in focused.ancestors):
            return
        held_at, self._held_at = self._held_at, None
        if self.scroll_y != held_at:
            self._moved = True
        elif self.max_scroll_y > 0:
            self.anchor()
