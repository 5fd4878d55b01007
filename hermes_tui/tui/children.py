"""Sub-agents' transcripts in the app: Enter on a sub-agent's row opens its screen, and its
live events (wrapped in its parent's) reach the screen that is open for it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import on, work

from hermes_tui.agent.events import ToolFinished
from hermes_tui.tui.app_parts import AppParts
from hermes_tui.tui.screens.main import MainScreen
from hermes_tui.tui.widgets.delegate import OpenChild
from hermes_tui.tui.widgets.safe import visible

if TYPE_CHECKING:
    from hermes_tui.tui.screens.child_transcript import ChildTranscriptScreen


class ChildTranscripts(AppParts):
    """A part of :class:`~hermes_tui.tui.app.HermesApp`."""

    @on(OpenChild)
    def _open_child(self, event: OpenChild) -> None:
        """Enter on a sub-agent's row: its transcript."""
        event.stop()
        self.open_child(event.session, event.name, event.goal)

    @work(group="child-transcript", exit_on_error=False)
    async def open_child(self, session: str | None, name: str, goal: str) -> None:
        """Open a sub-agent's transcript: the screen first (the child's live events wait in it),
        then its stored session, read on the store's thread."""
        from hermes_tui.tui.screens.child_transcript import ChildTranscriptScreen

        if self.workspace.store is None:
            self.notify("No sessions database: the sub-agent's transcript is not stored.", severity="warning")
            return
        if session is None:  # a block drawn from the store: find the child by its name
            session = await self.workspace.child_session(self.session, name)
            if session is None:
                self.notify(visible(f"No stored transcript for the sub-agent {name}."), severity="warning",
                            markup=False)
                return
        if self.child_screen(session) is not None:
            return  # it is open already
        screen = ChildTranscriptScreen(session, name, goal)
        await self.push_screen(screen)
        await screen.draw_stored(await self.workspace.load(session))

    def child_screen(self, session: str) -> ChildTranscriptScreen | None:
        """The open transcript of sub-agent ``session``, if any."""
        for screen in self.screen_stack:
            if getattr(screen, "child_session", None) == session:
                return screen  # type: ignore[return-value]
        return None

    @on(MainScreen.AgentUpdate)
    async def _child_event(self, message: MainScreen.AgentUpdate) -> None:
        """A sub-agent's event (after the main screen drew the parent's): to its open transcript
        (a grandchild's, wrapped in its parent's, to its own). A run's end freezes the heap
        once its frame is drawn (hermes_tui/tui/heap.py)."""
        event = message.event
        if isinstance(event, ToolFinished):
            self.call_after_refresh(lambda: self.heap.run_ended(self.last_key()))
        if message.session != self.session:
            return
        from hermes_tui.agent.subagents import ChildEvent

        while isinstance(event, ChildEvent):
            screen = self.child_screen(event.child_session)
            if screen is not None:
                await screen.show_event(event.event)
            event = event.event
