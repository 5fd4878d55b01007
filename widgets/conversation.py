"""The conversation pane: messages, streamed replies, tool calls, notes, and the input.

With a model, Enter sends the message (Ctrl+J adds a line). Without one, what you type is
Python for the session kernel (Enter runs it once it is a complete statement, as in the
Python REPL). ``!cmd`` runs a terminal command through the approvals; ``/`` starts a command.

The pane draws the agent's events (:meth:`ConversationPane.show_event`): it keeps which
block a streaming reply or a running tool call is drawn in.
"""

from __future__ import annotations

import codeop
import importlib.util
import time
from typing import TYPE_CHECKING, ClassVar

from rich.console import Group, RenderableType
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Label, Markdown, Static, TextArea

from hermes_tui.agent.events import (
    AgentEvent,
    Notice,
    ReplyDone,
    ReplyText,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnQueued,
    TurnStarted,
)
from hermes_tui.runtime.models import ExecResult
from hermes_tui.units import plural
from hermes_tui.widgets.messages import OpenEntry
from hermes_tui.widgets.safe import plain, visible

if TYPE_CHECKING:
    from textual.widgets.markdown import MarkdownStream

MAX_BLOCKS = 200
"""Blocks kept in the transcript (older ones are pruned: memory stays bounded)."""
MAX_NOTE_CHARS = 4000
"""A tool's output longer than this shows as its head and tail (the result keeps it all)."""
STATUS_MARK = {"success": ("✓", "green"), "error": ("✗", "red"), "timeout": ("⧗", "red"),
               "interrupted": ("■", "yellow"), "running": ("…", "yellow")}


def is_complete(text: str) -> bool:
    """True when Enter should run ``text`` rather than start a new line."""
    stripped = text.strip()
    if not stripped:
        return False
    if stripped.startswith(("!", "/")) or text.endswith("\n"):
        return True  # a command, or Enter on an empty line after a block
    try:
        return codeop.compile_command(text, "<input>", "single") is not None
    except (SyntaxError, ValueError, OverflowError):
        return True  # let the kernel report the error


def prompt_language() -> str | None:
    """``python`` when Textual can parse it. With tree-sitter installed (the runtime reads shell
    commands with tree-sitter-bash) but not its Python grammar, asking for it would raise;
    without it the input is plain text either way."""
    return "python" if importlib.util.find_spec("tree_sitter_python") else None


def code_theme(widget: object) -> str:
    """A Pygments style that reads well on the app's current theme."""
    try:
        dark = widget.app.current_theme.dark  # type: ignore[attr-defined]
    except Exception:
        dark = True
    return "monokai" if dark else "friendly"


class PromptInput(TextArea):
    """The input. Python mode: Enter runs a complete statement, otherwise adds a line.
    Chat mode (a model is set): Enter sends; Ctrl+J adds a line."""

    chat = False
    """True when a model answers: Enter sends whatever is typed."""
    last_key_at = float("-inf")
    """``time.monotonic()`` of the last key typed here (a dialog that opens now says so)."""

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class StopRequested(Message):
        """Esc or Ctrl+C in the input: stop the running turn."""

    async def _on_key(self, event: events.Key) -> None:
        self.last_key_at = time.monotonic()
        if event.key == "escape" or (event.key == "ctrl+c" and not self.selected_text):
            # Esc, or Ctrl+C with nothing selected (with a selection it copies): interrupt, as
            # in a terminal. Ctrl+C never offers to quit; Ctrl+Q quits.
            event.stop()
            event.prevent_default()
            self.post_message(self.StopRequested())
            return
        if event.key == "ctrl+j" and self.chat:
            event.stop()
            event.prevent_default()
            self.insert("\n")
            return
        if event.key == "enter":
            end = (self.document.line_count - 1, len(self.document[self.document.line_count - 1]))
            text = self.text
            if not self.chat and "\n" in text and not text.rsplit("\n", 1)[1].strip():
                text = text.rsplit("\n", 1)[0] + "\n"  # Enter on an empty (indented) line ends the block
            ready = bool(text.strip()) if self.chat else is_complete(text)
            if (self.cursor_location == end or self.chat) and ready:
                event.stop()
                event.prevent_default()
                text = text.rstrip("\n")
                self.clear()
                # The keys of a sent input are done: a dialog its run opens says "you were
                # typing" only for keys typed after it (they would otherwise be answers).
                self.last_key_at = float("-inf")
                self.post_message(self.Submitted(text))
                return
            if not self.chat and not self.text.lstrip().startswith(("!", "/")):
                event.stop()
                event.prevent_default()
                self.insert("\n" + next_indent(self.document[self.cursor_location[0]][:self.cursor_location[1]]))
                return
        await super()._on_key(event)


def next_indent(line: str) -> str:
    """The indentation of the line after ``line`` in Python, as the REPL gives it: one level
    deeper after a line ending in ``:``, the same otherwise (an empty line ends the block)."""
    if not line.strip():
        return ""
    indent = line[:len(line) - len(line.lstrip())]
    return indent + "    " if line.rstrip().endswith(":") else indent


class RunBlock(Static, can_focus=True):
    """One run in the transcript; Enter (or a click) shows its output in the output pane."""

    DEFAULT_CSS = """
    RunBlock { margin: 0 0 1 0; padding: 0 1; border-left: thick $panel-lighten-2; height: auto; }
    RunBlock:focus { border-left: thick $primary; background: $boost; }
    """

    class Selected(Message):
        def __init__(self, block: RunBlock) -> None:
            super().__init__()
            self.block = block

    def __init__(self, code: str, kind: str = "python", title: str | None = None) -> None:
        super().__init__()
        self.code = code
        self.title = title
        self.kind = kind
        self.result: ExecResult | None = None
        self.exec_id: str | None = None
        self.status = "running"
        self.summary = "running…"

    def on_mount(self) -> None:
        self._render_block()

    def set_result(self, result: ExecResult) -> None:
        self.result, self.exec_id, self.status = result, result.exec_id, result.status
        parts = [result.status, f"{result.duration_seconds:.2f}s", plural(result.tool_calls_made, "tool call")]
        if result.kernel.id:
            parts.append(f"kernel {result.kernel.id}")
        if result.stdout_truncated:
            parts.append("output cut")
        if result.error and result.status != "success":
            parts.append(result.error.splitlines()[0][:120])
        self.summary = " · ".join(parts)
        self._render_block()

    def set_tool_result(self, result: dict[str, object], interrupted: bool = False) -> None:
        """The outcome of a direct tool call (a dict with ``error`` / ``exit_code``)."""
        error = result.get("error")
        exit_code = result.get("exit_code")
        if interrupted or result.get("status") in ("blocked", "interrupted"):
            status = "interrupted"
        elif error or exit_code not in (None, 0):
            status = "error"
        else:
            status = "success"
        self.set_summary(status, str(error)[:300] if error else f"exit {exit_code}" if exit_code is not None else "done")

    def set_summary(self, status: str, summary: str) -> None:
        self.status, self.summary = status, summary
        self._render_block()

    def _render_block(self) -> None:
        from rich.syntax import Syntax  # Pygments loads on the first run, not at start-up

        mark, colour = STATUS_MARK.get(self.status, ("•", "white"))
        parts: list[RenderableType] = []
        # Code, titles and summaries (error messages) came from a model, a script or the shell:
        # as Text, never markup, with control characters visible.
        if self.title:
            parts.append(plain(self.title, "bold"))
        if self.kind == "text":
            parts.append(plain(self.code))
        else:
            parts.append(Syntax(visible(self.code), "bash" if self.kind == "shell" else "python",
                                background_color="default", word_wrap=True, theme=code_theme(self)))
        parts.append(Text.assemble((f"{mark} ", colour), plain(self.summary, "dim")))
        self.update(Group(*parts))

    def refresh_theme(self) -> None:
        """Re-highlight for the current theme (dark or light)."""
        self._render_block()

    def on_click(self) -> None:
        self.post_message(self.Selected(self))

    def key_enter(self) -> None:
        self.post_message(self.Selected(self))

    def key_c(self) -> None:
        """Open this run's saved entry in the output browser."""
        if self.exec_id:
            self.post_message(OpenEntry(self.exec_id))


class MessageBlock(Static):
    """A message from the user, or one injected from outside (marked as such)."""

    DEFAULT_CSS = """
    MessageBlock { margin: 0 0 1 0; padding: 0 1; background: $boost; height: auto; }
    MessageBlock.injected { border-left: thick $warning; }
    """

    def __init__(self, text: str, origin: str = "user") -> None:
        label = {"user": ("you", "bold $primary"), "injected": ("injected", "bold $warning")}.get(
            origin, (origin, "bold $secondary"))
        super().__init__(Text.assemble((label[0] + "  ", "bold"), plain(text)), classes=origin)
        self.text = text
        self.origin = origin


class ReplyBlock(Markdown):
    """The model's reply, rendered as Markdown while it streams."""

    DEFAULT_CSS = """
    ReplyBlock { margin: 0 0 1 0; padding: 0 1; height: auto; }
    ReplyBlock.interrupted, ReplyBlock.error { border-left: thick $warning; }
    """

    def __init__(self, text: str = "") -> None:
        super().__init__(visible(text))
        self.text = text
        self._stream: MarkdownStream | None = None

    async def add(self, delta: str) -> None:
        """More of the reply (appended through Textual's Markdown stream, which batches)."""
        self.text += delta
        if self._stream is None:
            self._stream = Markdown.get_stream(self)
        await self._stream.write(visible(delta))

    async def finish(self, text: str, status: str) -> None:
        """The reply is complete (or was cut: ``status`` interrupted / error)."""
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None
        if text != self.text:
            self.text = text
            await self.update(visible(text))
        if status != "done":
            self.add_class(status)


def tool_block(name: str, arguments: dict[str, object]) -> RunBlock:
    """The block of one tool call (not yet mounted)."""
    if name == "execute_code":
        title = "execute_code" + (" (reset)" if arguments.get("reset") else "")
        return RunBlock(str(arguments.get("code", "")), title=title)
    if name == "terminal":
        return RunBlock(str(arguments.get("command", "")), kind="shell", title="terminal")
    shown = ", ".join(f"{k}={v!r}"[:200] for k, v in arguments.items() if v not in (None, False))
    return RunBlock(f"{name}({shown})", kind="text")


def note(text: str, level: str = "info") -> Static:
    """A line from the app (``level`` info, warning or error sets its colour)."""
    return Static(plain(text), classes=f"note {level}")


class ConversationPane(Vertical):
    """Transcript of runs and notes, and the input."""

    ALLOW_MAXIMIZE = True
    DEFAULT_CSS = """
    ConversationPane { border: round $panel-lighten-2; border-title-color: $primary; }
    ConversationPane:focus-within { border: round $primary; }
    ConversationPane #transcript { height: 1fr; }
    ConversationPane .note { color: $text-muted; margin: 0 0 1 0; padding: 0 1; }
    ConversationPane .note.warning { color: $warning; }
    ConversationPane .note.error { color: $error; }
    ConversationPane #hint { color: $text-muted; width: 1fr; height: auto; max-height: 2; padding: 0 1; }
    ConversationPane PromptInput { height: auto; min-height: 3; max-height: 12; }
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

    def compose(self) -> ComposeResult:
        yield VerticalScroll(id="transcript")
        yield Label(plain(self.label), id="hint")  # it may name the model, or say why it failed
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
        block = ReplyBlock(text)
        self._append(block)
        return block

    def add_tool(self, name: str, arguments: dict[str, object]) -> RunBlock:
        """A tool call: its script or command highlighted, other tools as name and arguments."""
        return self._append_block(tool_block(name, arguments))

    def extend(self, widgets: list[Static | Markdown]) -> None:
        """Append many blocks in one mount (drawing a stored session)."""
        transcript = self.query_one("#transcript", VerticalScroll)
        transcript.mount_all(widgets[-MAX_BLOCKS:])
        self._prune(transcript)
        transcript.scroll_end(animate=False)

    def _append_block(self, block: RunBlock) -> RunBlock:
        self._append(block)
        return block

    def _append(self, widget: Static | Markdown) -> None:
        transcript = self.query_one("#transcript", VerticalScroll)
        transcript.mount(widget)
        self._prune(transcript)
        transcript.scroll_end(animate=False)

    @staticmethod
    def _prune(transcript: VerticalScroll) -> None:
        children = list(transcript.children)
        if len(children) > MAX_BLOCKS:
            for old in children[: len(children) - MAX_BLOCKS]:
                old.remove()

    def set_hint(self, text: str) -> None:
        """The line above the input (what typing does now)."""
        self.query_one("#hint", Label).update(plain(text))

    def follow(self) -> None:
        """Keep the newest line in view (a streaming reply grows)."""
        self.query_one("#transcript", VerticalScroll).scroll_end(animate=False)

    def action_clear(self) -> None:
        self.query_one("#transcript", VerticalScroll).remove_children()
        self._replies.clear()
        self._tools.clear()

    # -- the agent's events -------------------------------------------------------------

    async def show_event(self, event: AgentEvent) -> None:
        """Draw one agent event (they arrive in order, each after it was stored)."""
        if isinstance(event, TurnStarted):
            if event.kind == "message" or event.origin != "user":  # typed Python and !cmd show as their run
                self.add_message(event.text, event.origin)
            if self.busy_hint is not None:
                self.set_hint(self.busy_hint)
        elif isinstance(event, TurnQueued):
            what = "injected message" if event.origin == "injected" else "message"
            self.add_note(f"⋯ {what} queued ({event.position} ahead): {event.text[:120]}")
        elif isinstance(event, ReplyText):
            block = self._replies.get(event.reply_id)
            if block is None:
                block = self._replies[event.reply_id] = self.add_reply()
            await block.add(event.delta)
            self.follow()
        elif isinstance(event, ReplyDone):
            reply = self._replies.pop(event.reply_id, None)
            if reply is not None:
                await reply.finish(event.text, event.status)
        elif isinstance(event, ToolStarted):
            self._tools[event.call_id] = self.add_tool(event.name, event.arguments)
        elif isinstance(event, ToolFinished):
            run = self._tools.pop(event.call_id, None) or self.add_tool(event.name, {})
            if event.exec_result is not None:
                run.set_result(event.exec_result)
            else:
                self.show_tool_result(run, event.result)
        elif isinstance(event, Notice):
            self.add_note(event.text, event.level)
        elif isinstance(event, TurnEnded):
            self.set_hint(self.label)

    def show_tool_result(self, block: RunBlock, result: dict[str, object]) -> None:
        """A direct tool call's outcome on its block, and its output (capped) as a note."""
        block.set_tool_result(result)
        output = str(result.get("output") or result.get("content") or "")
        if output:
            half = MAX_NOTE_CHARS // 2
            self.add_note(output if len(output) <= MAX_NOTE_CHARS else output[:half] + "\n…\n" + output[-half:])
