"""The conversation pane (:class:`ConversationPane`): the transcript, the hint line above the
input, and the input.

The pane draws the agent's events (:meth:`ConversationPane.show_event`, a handler for each
event type): it keeps which block a streaming reply or a running tool call is drawn in. It
also scrolls, finds in and copies from the transcript (issue 32), and draws a stored session a
page at a time (:meth:`ConversationPane.extend`).
"""

from __future__ import annotations

import asyncio
import importlib.util
from typing import TYPE_CHECKING, Any, ClassVar

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Label, Static

from hermes_tui.agent.events import (
    AgentEvent,
    DelegateProgress,
    Notice,
    ReplyDone,
    ReplyText,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnQueued,
    TurnStarted,
)
from hermes_tui.tui.widgets.conversation.blocks import (
    MessageBlock,
    PendingBlock,
    RunBlock,
    block_text,
    code_blocks,
    copy_text,
    note,
    tool_block,
    tool_output_note,
)
from hermes_tui.tui.widgets.conversation.prompt import PromptInput, TranscriptHost
from hermes_tui.tui.widgets.conversation.transcript import Transcript
from hermes_tui.tui.widgets.delegate import DelegateBlock
from hermes_tui.tui.widgets.focus_frame import FocusFrame
from hermes_tui.tui.widgets.safe import plain, visible

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from textual.widget import AwaitMount, Widget
    from textual.widgets import Markdown

    from hermes_tui.tui.widgets.reply import ReplyBlock

MAX_BLOCKS = 200
"""Blocks kept in the transcript (older ones are pruned: memory stays bounded)."""
PAGE_SETTLE = 0.3
"""Seconds for a page of a stored session to render (replies' Markdown) before it is measured."""
HINT_LINES = 2
"""Rows the hint above the input may take."""


def prompt_language() -> str | None:
    """``python`` when Textual can parse it. With tree-sitter installed (the runtime reads shell
    commands with tree-sitter-bash) but not its Python grammar, asking for it would raise;
    without it the input is plain text either way."""
    return "python" if importlib.util.find_spec("tree_sitter_python") else None


def wrapped_rows(text: str, width: int) -> int:
    """Rows ``text`` takes wrapped at words to ``width`` cells (a longer word is folded)."""
    rows, used = 1, 0
    for word in text.split(" "):
        size = cell_len(word)
        if used == 0:
            used = size
        elif used + 1 + size <= width:
            used += 1 + size
        else:
            rows, used = rows + 1, size
        while used > width:
            rows, used = rows + 1, used - width
    return rows


def fit_hint(text: str, width: int, rows: int = HINT_LINES) -> str:
    """``text`` shortened to ``rows`` rows of ``width``: its `` · ``-separated parts are dropped
    from the end (no word is cut), the first one always kept."""
    parts = text.split(" · ")
    for count in range(len(parts), 1, -1):
        shown = " · ".join(parts[:count])
        if wrapped_rows(shown, width) <= rows:
            return shown
    return parts[0]


class Hint(Label):
    """The line above the input: it shortens to the pane's width (:func:`fit_hint`)."""

    def __init__(self, text: str, **kwargs: Any) -> None:
        super().__init__(plain(text), **kwargs)  # it may name the model, or say why it failed
        self.text = text

    def show(self, text: str) -> None:
        self.text = text
        self._fit()

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        width = self.content_size.width
        self.update(plain(fit_hint(self.text, width) if width > 0 else self.text))


class ConversationPane(FocusFrame, Vertical, TranscriptHost):
    """Transcript of runs and notes, and the input."""

    ALLOW_MAXIMIZE = True
    DEFAULT_CSS = """
    ConversationPane { border: round $panel-lighten-2; border-title-color: $primary; }
    ConversationPane #transcript { height: 1fr; }
    ConversationPane .note { color: $text-muted; margin: 0 0 1 0; padding: 0 1; }
    ConversationPane .note.warning { color: $warning; }
    ConversationPane .note.error { color: $error; }
    ConversationPane #hint { color: $text-muted; width: 1fr; height: auto; max-height: 2; padding: 0 1; }
    ConversationPane PromptInput { height: auto; min-height: 3; max-height: 12; }
    ConversationPane #transcript .-found { background: $warning 25%; }
    /* One row per candidate: a long description ends in an ellipsis instead of wrapping
       (at 80x24 wrapped descriptions left room for four commands). */
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("ctrl+l", "clear", "Clear", id="conversation-clear")]

    def __init__(self, label: str, *, busy_hint: str | None = None, chat: bool = False, **kwargs: object) -> None:
        """Args:
            label: the hint above the input while nothing runs.
            busy_hint: the hint while a turn runs (None: the hint does not change).
            chat: a model answers: Enter sends what is typed (else Python runs when complete).
        """
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.border_title = "conversation"
        self.label = label
        self.busy_hint = busy_hint
        self.chat = chat
        self._replies: dict[int, ReplyBlock] = {}
        self._tools: dict[str, RunBlock] = {}
        self._delegates: dict[str, DelegateBlock] = {}
        """``delegate_task`` calls running, by call id (their children's rows update live)."""
        self._pending: dict[str, PendingBlock] = {}
        """Inputs queued behind the running turn, by turn id."""
        self.find_query = ""
        """The text /find (or Ctrl+F) looked for last."""
        self._found: Widget | None = None
        """The block it found last (marked ``-found``)."""

    def compose(self) -> ComposeResult:
        yield Transcript(id="transcript")
        yield Hint(self.label, id="hint")
        prompt = PromptInput.code_editor(language=prompt_language(), id="prompt", show_line_numbers=False, theme="css")
        assert isinstance(prompt, PromptInput)  # code_editor is a classmethod: it makes a PromptInput
        prompt.chat = self.chat
        yield prompt

    def add_run(self, code: str, kind: str = "python") -> RunBlock:
        return self._append_block(RunBlock(code, kind))

    def add_note(self, text: str, level: str = "info") -> None:
        """A line from the app (``level`` info, warning or error sets its colour)."""
        self._append(note(text, level))

    def add_message(self, text: str, origin: str = "user") -> MessageBlock:
        """A user's (or injected) message."""
        block = MessageBlock(text, origin)
        self._append(block)
        return block

    def add_reply(self, text: str = "") -> ReplyBlock:
        """A reply block that streams."""
        from hermes_tui.tui.widgets.reply import ReplyBlock  # Markdown (markdown-it) loads with the first reply

        block = ReplyBlock(text)
        self._append(block)
        return block

    def add_tool(self, name: str, arguments: dict[str, object]) -> RunBlock:
        """A tool call: its script or command highlighted, other tools as name and arguments."""
        return self._append_block(tool_block(name, arguments))

    def add_delegate(self, call_id: str, arguments: dict[str, object]) -> DelegateBlock:
        """A ``delegate_task`` call: a row per sub-agent (:mod:`hermes_tui.tui.widgets.delegate`)."""
        block = DelegateBlock(arguments, call_id)
        self._append(block)
        return block

    _older: Callable[[int], list[Widget]] | None = None
    _head: Widget | None = None
    _paging = False
    _watching = False

    def extend(self, widgets: list[Widget], *, older: Callable[[int], list[Widget]] | None = None,
               head: Widget | None = None) -> None:
        """Append many blocks in one mount (drawing a stored session).

        Args:
            older: ``older(room)`` gives the blocks before these, a page at a time (at most
                ``room``; none once there are no more): drawn when the transcript is scrolled
                to its top, until it holds MAX_BLOCKS blocks.
            head: a line drawn above them; older pages go below it.
        """
        transcript = self.query_one("#transcript", Transcript)
        self._older, self._head = older, head
        transcript.mount_all(([head] if head is not None else []) + widgets[-MAX_BLOCKS:])
        self._prune(transcript)
        transcript.follow_end()  # the newest stays in view while replies render their Markdown
        if older is not None:
            if not self._watching:
                self._watching = True
                self.watch(transcript, "scroll_y", self._scrolled, init=False)
            self.set_timer(PAGE_SETTLE, self._scrolled)  # a first page that does not fill the view

    def _scrolled(self, _y: float | None = None) -> None:
        """Scrolled to the top (or nothing to scroll yet): draw the next older page."""
        transcript = self.query_one("#transcript", VerticalScroll)
        if self._older is not None and not self._paging and transcript.scroll_y <= 0:
            self._paging = True
            self.run_worker(self._draw_older(transcript, transcript.max_scroll_y <= 0), group="older-page",
                            exit_on_error=False)

    async def _draw_older(self, transcript: VerticalScroll, short: bool) -> None:
        """Draw the next older page above what is shown. The view stays where it was: on the
        block that was at the top, or at the end when the transcript was ``short`` (all of it
        in view)."""
        older = self._older
        blocks = older(MAX_BLOCKS - len(transcript.children)) if older is not None else []
        if not blocks:
            self._older = None
            self._paging = False
            return
        anchor = None if short else next((c for c in transcript.children if c is not self._head), None)
        head = self._head if self._head is not None and self._head.parent is transcript else None
        try:
            await (transcript.mount_all(blocks, after=head) if head is not None else transcript.mount_all(blocks, before=0))
        finally:
            self.call_after_refresh(self._keep_view, transcript, anchor)

    def _keep_view(self, transcript: VerticalScroll, anchor: Widget | None) -> None:
        self._paging = False
        if anchor is None:
            transcript.scroll_end(animate=False)
            self.set_timer(PAGE_SETTLE, self._scrolled)  # still short (once its replies rendered)? the next
        elif anchor.parent is transcript:
            transcript.scroll_to_widget(anchor, animate=False, top=True, immediate=True)
            self._scrolled()  # still at the top: the next one

    def _append_block(self, block: RunBlock) -> RunBlock:
        self._append(block)
        return block

    def _append(self, widget: Static | Markdown | DelegateBlock) -> None:
        transcript = self.query_one("#transcript", Transcript)
        self._mounting = transcript.mount(widget)
        self._prune(transcript)
        transcript.to_end()

    _mounting: AwaitMount | None = None

    async def mounted(self, timeout: float) -> None:
        """Return once the newest block is mounted (it is laid out in the next frame), or
        after ``timeout`` seconds (the mount goes on)."""
        mounting, self._mounting = self._mounting, None
        if mounting is not None:
            waiting = asyncio.ensure_future(mounting)
            waiting.add_done_callback(lambda task: task.cancelled() or task.exception())  # (seen, if it failed)
            await asyncio.wait([waiting], timeout=timeout)

    @staticmethod
    def _prune(transcript: VerticalScroll) -> None:
        children = list(transcript.children)
        if len(children) > MAX_BLOCKS:
            for old in children[: len(children) - MAX_BLOCKS]:
                old.remove()

    def set_hint(self, text: str) -> None:
        """The line above the input (what typing does now)."""
        self.query_one("#hint", Hint).show(text)

    def follow(self) -> None:
        """Keep the newest line in view (a streaming reply grows)."""
        self.query_one("#transcript", Transcript).to_end()

    async def drop_pending(self, turn_id: str) -> None:
        """Remove the placeholder of a queued input (it was taken out of the queue)."""
        block = self._pending.pop(turn_id, None)
        if block is not None:
            await block.remove()

    # -- scrolling, finding and copying (issue 32) ----------------------------------------------

    def scroll_transcript(self, how: str) -> None:
        """Scroll the transcript: ``page_up``, ``page_down``, ``top`` or ``end``. Scrolled up, it
        stays where it was put while blocks come, until scrolled to the end again (or a message
        is sent)."""
        transcript = self.query_one("#transcript", Transcript)
        if how == "end":
            transcript.follow_end()
            transcript.scroll_end(animate=False, immediate=True)
            return
        if how == "page_down":
            transcript.scroll_page_down(animate=False)
        else:
            transcript.stay()
            if how == "top":
                transcript.scroll_home(animate=False)
            else:
                transcript.scroll_page_up(animate=False)

    def on_prompt_input_submitted(self, event: PromptInput.Submitted) -> None:
        """Something was sent: the transcript follows its end again (the message, its run); a
        command (``/find``, ``/copy``) leaves the view where it is."""
        if not event.text.lstrip().startswith("/") and self.query("#transcript"):
            transcript = self.query_one("#transcript", Transcript)
            if transcript._moved and transcript._held_at is None:
                transcript.follow_end()

    def find(self, query: str) -> bool:
        """``/find TEXT`` (or Ctrl+F): scroll to the newest block holding ``query`` (any case),
        marked; the same search again goes to the next older one (from the oldest: the newest
        again). Says how many blocks match, or that none does. True when one was found."""
        transcript = self.query_one("#transcript", Transcript)
        needle = query.casefold()
        matches = [block for block in reversed(transcript.children) if needle in block_text(block).casefold()]
        if self._found is not None:
            self._found.remove_class("-found")
        if not matches:
            self.find_query, self._found = query, None
            self.notify(visible(f"Nothing in the conversation matches {query!r}."), severity="warning", markup=False)
            return False
        index = 0
        if query == self.find_query and self._found in matches:
            index = (matches.index(self._found) + 1) % len(matches)
        block = matches[index]
        self.find_query, self._found = query, block
        block.add_class("-found")
        transcript.stay()
        transcript.scroll_to_widget(block, animate=False, top=True, immediate=True)
        more = " · Ctrl+F: the next older" if len(matches) > 1 else ""
        self.notify(visible(f"{query!r}: {index + 1} of {len(matches)} (newest first){more}"), markup=False)
        return True

    def copy(self, what: str = "") -> bool:
        """``/copy``: the newest reply; ``/copy code``: the newest code block (a reply's fenced
        block, or a run's code); ``/copy output``: the newest run's output. To the clipboard
        through the terminal (OSC 52). True when something was copied."""
        what = what.strip().lower()
        blocks = list(reversed(self.query_one("#transcript", Transcript).children))
        found: tuple[str, str] | None = None
        if what in ("", "reply"):
            # (a ReplyBlock, known by name: widgets/reply.py is imported after the first frame)
            found = next(((block.text, "the last reply") for block in blocks  # type: ignore[attr-defined]
                          if type(block).__name__ == "ReplyBlock" and getattr(block, "text", "").strip()), None)
        elif what == "code":
            for block in blocks:
                if type(block).__name__ == "ReplyBlock" and (fences := code_blocks(getattr(block, "text", ""))):
                    found = (fences[-1], "the last code block")
                elif isinstance(block, RunBlock) and block.kind != "text" and block.code.strip():
                    found = (block.code, "the last run's code")
                if found is not None:
                    break
        elif what == "output":
            run = next((block for block in blocks if isinstance(block, RunBlock) and block.result is not None
                        and block.result.output.strip()), None)
            if run is not None and run.result is not None:
                cut = " (its head and tail: the whole output is in the output browser, F9)" \
                    if run.result.stdout_truncated else ""
                found = (run.result.output, "the last run's output" + cut)
        else:
            self.notify(visible(f"/copy {what}: copy what? /copy (the last reply), /copy code, /copy output."),
                        severity="warning", markup=False)
            return False
        if found is None:
            self.notify({"code": "No code block or run to copy yet.", "output": "No run's output to copy yet."}.get(
                what, "No reply to copy yet."), severity="warning")
            return False
        copy_text(self, *found)
        return True

    def action_clear(self) -> None:
        self._found = None
        self._pending.clear()
        self._older = self._head = None
        transcript = self.query_one("#transcript", Transcript)
        transcript.remove_children()
        transcript.follow_end()
        self._replies.clear()
        self._tools.clear()
        self._delegates.clear()

    # -- the agent's events -------------------------------------------------------------

    async def show_event(self, event: AgentEvent) -> None:
        """Draw one agent event (they arrive in order, each after it was stored): by the handler
        for its type in :attr:`_SHOWN` (an event of another type draws nothing)."""
        handler = next((found for kind in type(event).__mro__ if (found := self._SHOWN.get(kind)) is not None), None)
        if handler is not None:
            await handler(self, event)

    async def _turn_started(self, event: TurnStarted) -> None:
        pending = self._pending.pop(event.turn_id, None)
        if pending is not None:  # it runs now: the placeholder goes
            await pending.remove()
        if event.kind == "message" or event.origin != "user":  # typed Python and !cmd show as their run
            self.add_message(event.text, event.origin)
        if self.busy_hint is not None:
            self.set_hint(self.busy_hint)

    async def _turn_queued(self, event: TurnQueued) -> None:
        what = "injected message" if event.origin == "injected" else \
            "command" if event.text.startswith("!") else "input"
        block = self._pending[event.turn_id] = PendingBlock(event.turn_id, event.text, what)
        self._append(block)
        self.query_one(PromptInput).release_frames()

    async def _reply_text(self, event: ReplyText) -> None:
        block = self._replies.get(event.reply_id)
        if block is None:
            block = self._replies[event.reply_id] = self.add_reply()
        await block.add(event.delta)
        self.follow()

    async def _reply_done(self, event: ReplyDone) -> None:
        reply = self._replies.pop(event.reply_id, None)
        if reply is not None:
            await reply.finish(event.text, event.status)

    async def _tool_started(self, event: ToolStarted) -> None:
        if event.name == "delegate_task":
            self._delegates[event.call_id] = self.add_delegate(event.call_id, event.arguments)
        else:
            self._tools[event.call_id] = self.add_tool(event.name, event.arguments)

    async def _delegate_progress(self, event: DelegateProgress) -> None:
        block = self._delegates.get(event.call_id)
        if block is None:  # drawn from the store while it ran: a block of its own
            block = self._delegates[event.call_id] = self.add_delegate(event.call_id, {})
        block.update_children(event.children)

    async def _tool_finished(self, event: ToolFinished) -> None:
        if event.call_id in self._delegates:
            self._delegates.pop(event.call_id).set_tool_result(event.result)
            return
        run = self._tools.pop(event.call_id, None) or self.add_tool(event.name, {})
        if event.exec_result is not None:
            run.set_result(event.exec_result)
        else:
            self.show_tool_result(run, event.result)

    async def _notice(self, event: Notice) -> None:
        self.add_note(event.text, event.level)

    async def _turn_ended(self, event: TurnEnded) -> None:
        self.set_hint(self.label)

    _SHOWN: ClassVar[dict[type[AgentEvent], Callable[[Any, Any], Awaitable[None]]]] = {
        TurnStarted: _turn_started,
        TurnQueued: _turn_queued,
        ReplyText: _reply_text,
        ReplyDone: _reply_done,
        ToolStarted: _tool_started,
        DelegateProgress: _delegate_progress,
        ToolFinished: _tool_finished,
        Notice: _notice,
        TurnEnded: _turn_ended,
    }
    """The handler of each event type :meth:`show_event` draws."""

    def show_tool_result(self, block: RunBlock, result: dict[str, object]) -> None:
        """A direct tool call's outcome on its block, and its output (capped) as a note."""
        block.set_tool_result(result)
        output = tool_output_note(result)
        if output is not None:
            self._append(output)
