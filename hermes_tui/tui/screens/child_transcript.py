"""A sub-agent's transcript: read-only, live while the child runs, with its own output pane.

The app reads the child's stored session (a worker: widgets never touch the database), opens
this screen, and forwards the child's events to it while it is open (:meth:`show_event`);
events that arrive before the stored part is drawn wait, then follow it. Esc closes it.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Static

from hermes_tui.agent.events import AgentEvent, ToolFinished
from hermes_tui.agent.restore import LoadedSession
from hermes_tui.runtime.events import RuntimeEvent
from hermes_tui.tui.widgets.conversation.blocks import RunBlock
from hermes_tui.tui.widgets.conversation.pane import ConversationPane
from hermes_tui.tui.widgets.conversation.prompt import PromptInput
from hermes_tui.tui.widgets.delegate import one_line
from hermes_tui.tui.widgets.footer import KeysFooter
from hermes_tui.tui.widgets.output import OutputPane
from hermes_tui.tui.widgets.safe import plain

READ_ONLY_HINT = "read-only · Enter on a run shows its output · Esc closes"


class ChildTranscriptScreen(Screen[None]):
    """The conversation of sub-agent ``child_session`` (named ``name``, working on ``goal``)."""

    DEFAULT_CSS = """
    ChildTranscriptScreen { layout: vertical; }
    ChildTranscriptScreen #child-title { height: auto; max-height: 3; background: $panel; padding: 0 1; }
    ChildTranscriptScreen #child-main { height: 1fr; }
    ChildTranscriptScreen #child-conversation { width: 3fr; }
    ChildTranscriptScreen #child-output { width: 2fr; }
    ChildTranscriptScreen #child-conversation PromptInput { display: none; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Close", id="child-close")]
    AUTO_FOCUS = "#transcript"

    def __init__(self, child_session: str, name: str, goal: str) -> None:
        super().__init__()
        self.child_session = child_session
        self.child_name = name
        self.goal = goal
        self.drawn = False
        """True once the stored part is drawn (live events are shown as they come from then on)."""
        self._waiting: list[AgentEvent] = []

    def compose(self) -> ComposeResult:
        # The name and the goal come from the model: Text, never markup.
        yield Static(Text.assemble(("sub-agent ", "bold"), plain(self.child_name, "bold"), ("  ", ""),
                                   plain(one_line(self.goal, 200))), id="child-title")
        with Horizontal(id="child-main"):
            yield ConversationPane("loading the stored transcript…", id="child-conversation")
            yield OutputPane(id="child-output")
        yield KeysFooter()

    def on_mount(self) -> None:
        pane = self.conversation
        pane.border_title = "sub-agent conversation (read-only)"
        prompt = pane.query_one(PromptInput)
        prompt.read_only = True
        prompt.can_focus = False

    @property
    def conversation(self) -> ConversationPane:
        return self.query_one("#child-conversation", ConversationPane)

    @property
    def output(self) -> OutputPane:
        return self.query_one("#child-output", OutputPane)

    async def draw_stored(self, loaded: LoadedSession | None) -> None:
        """The stored transcript (None: nothing stored yet), then what came meanwhile."""
        from hermes_tui.tui.widgets.transcript import draw_session

        pane = self.conversation
        pane.label = READ_ONLY_HINT
        pane.set_hint(READ_ONLY_HINT)
        if loaded is not None:
            draw_session(pane, loaded)
        else:
            pane.add_note("Nothing is stored for this sub-agent yet.")
        self.drawn = True
        waiting, self._waiting = self._waiting, []
        for event in waiting:
            await self.show_event(event)

    async def show_event(self, event: AgentEvent) -> None:
        """One event of the child's own conversation (it is running)."""
        if not self.drawn:
            self._waiting.append(event)
            return
        await self.conversation.show_event(event)
        if isinstance(event, ToolFinished) and event.exec_result is not None:
            self.output.show(event.exec_result)

    def show_runtime_event(self, event: RuntimeEvent) -> None:
        """Live output of the child's scripts."""
        self.output.show_runtime_event(event, self.child_session)

    @on(RunBlock.Selected)
    def _show_run(self, event: RunBlock.Selected) -> None:
        event.stop()
        if event.block.result is not None:
            self.output.show(event.block.result)

    @on(PromptInput.StopRequested)
    def _no_stop(self, event: PromptInput.StopRequested) -> None:
        event.stop()  # this screen is read-only: Esc closes it, never stops the parent's turn
        self.dismiss(None)

    def action_close(self) -> None:
        self.dismiss(None)
