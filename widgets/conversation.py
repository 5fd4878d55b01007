"""The conversation pane: runs and notes, and the input at the bottom.

Without a model, what you type is Python for the session kernel (Enter runs it once it is a
complete statement, as in the Python REPL); ``!cmd`` runs a terminal command through the
approvals; ``/reset /kernels /cache /help /quit`` are commands.
"""

from __future__ import annotations

import codeop

from rich.console import Group
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Label, Static, TextArea

from hermes_tui.runtime.models import ExecResult
from hermes_tui.widgets.messages import OpenEntry

MAX_BLOCKS = 200
"""Blocks kept in the transcript (older ones are pruned: memory stays bounded)."""
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


def code_theme(widget: object) -> str:
    """A Pygments style that reads well on the app's current theme."""
    try:
        dark = widget.app.current_theme.dark  # type: ignore[attr-defined]
    except Exception:
        dark = True
    return "monokai" if dark else "friendly"


class PromptInput(TextArea):
    """A Python editor line: Enter runs a complete statement, otherwise adds a line."""

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            end = (self.document.line_count - 1, len(self.document[self.document.line_count - 1]))
            if self.cursor_location == end and is_complete(self.text):
                event.stop()
                event.prevent_default()
                text = self.text.rstrip("\n")
                self.clear()
                self.post_message(self.Submitted(text))
                return
        await super()._on_key(event)


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

    def __init__(self, code: str, kind: str = "python") -> None:
        super().__init__()
        self.code = code
        self.kind = kind
        self.result: ExecResult | None = None
        self.exec_id: str | None = None
        self.status = "running"
        self.summary = "running…"

    def on_mount(self) -> None:
        self._render_block()

    def set_result(self, result: ExecResult) -> None:
        self.result, self.exec_id, self.status = result, result.exec_id, result.status
        parts = [result.status, f"{result.duration_seconds:.2f}s", f"{result.tool_calls_made} tool calls"]
        if result.kernel.id:
            parts.append(f"kernel {result.kernel.id}")
        if result.stdout_truncated:
            parts.append("output cut")
        if result.error and result.status != "success":
            parts.append(result.error.splitlines()[0][:120])
        self.summary = " · ".join(parts)
        self._render_block()

    def set_summary(self, status: str, summary: str) -> None:
        self.status, self.summary = status, summary
        self._render_block()

    def _render_block(self) -> None:
        from rich.syntax import Syntax  # Pygments loads on the first run, not at start-up

        mark, colour = STATUS_MARK.get(self.status, ("•", "white"))
        code = Syntax(self.code, "bash" if self.kind == "shell" else "python", background_color="default",
                      word_wrap=True, theme=code_theme(self))
        self.update(Group(code, Text.assemble((f"{mark} ", colour), (self.summary, "dim"))))

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


class ConversationPane(Vertical):
    """Transcript of runs and notes, and the input."""

    ALLOW_MAXIMIZE = True
    DEFAULT_CSS = """
    ConversationPane { border: round $panel-lighten-2; border-title-color: $primary; }
    ConversationPane:focus-within { border: round $primary; }
    ConversationPane #transcript { height: 1fr; }
    ConversationPane .note { color: $text-muted; margin: 0 0 1 0; padding: 0 1; }
    ConversationPane #hint { color: $text-muted; height: 1; padding: 0 1; }
    ConversationPane PromptInput { height: auto; min-height: 3; max-height: 12; }
    """

    BINDINGS = [Binding("ctrl+l", "clear", "Clear", id="conversation-clear")]

    def __init__(self, label: str, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.border_title = "conversation"
        self.label = label

    def compose(self) -> ComposeResult:
        yield VerticalScroll(id="transcript")
        yield Label(self.label, id="hint")
        yield PromptInput.code_editor(language="python", id="prompt", show_line_numbers=False, theme="css")

    def add_run(self, code: str, kind: str = "python") -> RunBlock:
        block = RunBlock(code, kind)
        self._append(block)
        return block

    def add_note(self, text: str) -> None:
        self._append(Static(text, classes="note", markup=False))

    def _append(self, widget: Static) -> None:
        transcript = self.query_one("#transcript", VerticalScroll)
        transcript.mount(widget)
        children = list(transcript.children)
        if len(children) > MAX_BLOCKS:
            for old in children[: len(children) - MAX_BLOCKS]:
                old.remove()
        transcript.scroll_end(animate=False)

    def action_clear(self) -> None:
        self.query_one("#transcript", VerticalScroll).remove_children()
