"""The blocks of the conversation's transcript: a run (:class:`RunBlock`, and
:class:`PastedRunBlock` for an input that held a big paste), a message, a queued input
(:class:`PendingBlock`) and a note; a tool call's block (:func:`tool_block`). Also what /find
and /copy read of them (:func:`block_text`, :func:`code_blocks`, :func:`copy_text`).

A reply's block is :class:`~hermes_tui.tui.widgets.reply.ReplyBlock` (Textual's Markdown loads
with the first reply), a ``delegate_task`` call's :class:`~hermes_tui.tui.widgets.delegate.DelegateBlock`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, ClassVar

from rich.console import Group, RenderableType
from rich.text import Text
from textual.app import RenderResult
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.widgets import Static

from hermes_tui.base.units import human_size, plural
from hermes_tui.tui.widgets.delegate import DelegateBlock
from hermes_tui.tui.widgets.messages import OpenEntry
from hermes_tui.tui.widgets.paste import shown_for
from hermes_tui.tui.widgets.safe import plain, visible

if TYPE_CHECKING:
    from textual.widget import Widget

    from hermes_tui.runtime.models import ExecResult

MAX_NOTE_CHARS = 4000
"""A tool's output longer than this shows as its head and tail (the result keeps it all)."""
STATUS_MARK = {"success": ("✓", "green"), "error": ("✗", "red"), "timeout": ("⧗", "red"),
               "interrupted": ("■", "yellow"), "running": ("…", "yellow")}
PREVIEW_LINES = 8
PREVIEW_CHARS = 1000
"""A run's output shows under its block up to this many lines and characters."""


def code_theme(widget: object) -> str:
    """A Pygments style that reads well on the app's current theme."""
    try:
        dark = widget.app.current_theme.dark  # type: ignore[attr-defined]
    except Exception:
        dark = True
    return "monokai" if dark else "friendly"


def output_preview(output: str, cut: bool = False, saved: bool = True, total: int = 0,
                   saved_bytes: int | None = None) -> Text | None:
    """The first lines of a run's output (None when it printed nothing), and how much more
    there is, and where to read the rest: the output pane, or for an output that was ``cut``
    (the result holds its head and tail only) the saved file in the pager (``saved``: the
    whole output, ``total`` bytes, was written to a file; ``saved_bytes``: only its first
    bytes were, the file stopping at a spill cap). Output is data: a Text, never markup, with control
    characters visible."""
    output = output.rstrip("\n")
    if not output.strip():
        return None
    head = "\n".join(output.split("\n", PREVIEW_LINES)[:PREVIEW_LINES])
    head = head[:PREVIEW_CHARS]
    preview = plain(head)
    more_lines = output.count("\n") - head.count("\n")
    if cut:
        size = f" ({human_size(total, ' ')})" if total else ""
        if saved and saved_bytes is not None:
            where = (f"output cut · only its first {human_size(saved_bytes, ' ')} of {human_size(total, ' ')} is saved "
                     "(a spill cap): c (or F9) opens that in the pager")
        elif saved:
            where = f"output cut · the whole output{size} is saved: c (or F9) opens it in the pager"
        else:
            where = f"output cut · the whole output{size} was not saved: Enter or click shows its head and tail"
        preview.append(f"\n… {where}", "dim italic")
    elif len(head) < len(output):
        count, unit = (more_lines, "line") if more_lines else (len(output) - len(head), "character")
        more = f"{count:,} more {unit}" + ("s" if count != 1 else "")
        preview.append(f"\n… {more} · Enter or click: the whole output in the output pane", "dim italic")
    return preview


class RunBlock(Static, can_focus=True):
    """One run in the transcript, and the first lines of its output; Enter (or a click) shows
    all of its output in the output pane."""

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
        self._highlighted: tuple[str, Text] | None = None
        """The code as highlighted for a Pygments style: (style, text)."""

    def _code(self) -> Text:
        """The code, highlighted once per style: a ``Syntax`` in the block would run Pygments
        again on every render (each layout of the transcript, each status change), on the
        event loop, while a flood of output wants it (issue 20)."""
        from rich.syntax import Syntax  # Pygments loads on the first run, not at start-up

        style = code_theme(self)
        if self._highlighted is None or self._highlighted[0] != style:
            code = visible(self.code)
            syntax = Syntax(code, "bash" if self.kind == "shell" else "python", background_color="default",
                            word_wrap=True, theme=style)
            text = syntax.highlight(code)
            text.rstrip()
            self._highlighted = (style, text)
        return self._highlighted[1]

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
        self._changed()

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
        self._changed()

    def _changed(self) -> None:
        """The block's state changed: draw it again (its height may change). Not yet in the
        DOM (a live run's block before it joins the transcript, a stored session's blocks),
        nothing is asked: :meth:`render` draws the state as it is when the block is laid out.
        Asked before mounting, a refresh would lay the screen out a second time after the
        mount's own layout, on the event loop, while the run's output wants the CPU (issue 20)."""
        if self.is_attached:
            self.refresh(layout=True)

    @property  # type: ignore[misc]  # read-only here: the block draws its state; nothing sets it
    def content(self) -> Group:
        """What the block draws: its code, status line, warning and first lines of output."""
        return Group(*self._parts())

    def render(self) -> RenderResult:
        return self.content

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        # A block's height is what the layout that found it gave it; Textual's reactive for its
        # new virtual size would lay the whole screen out once more (see Transcript). Widget's
        # private hook, checked by tui/textual_compat.py.
        return super()._size_updated(size, virtual_size, container_size, layout=False)

    def _body(self) -> Text:
        """The code (or a tool call's name and arguments) as drawn."""
        return plain(self.code) if self.kind == "text" else self._code()

    def _parts(self) -> list[RenderableType]:
        mark, colour = STATUS_MARK.get(self.status, ("•", "white"))
        parts: list[RenderableType] = []
        # Code, titles and summaries (error messages) came from a model, a script or the shell:
        # as Text, never markup, with control characters visible.
        if self.title:
            parts.append(plain(self.title, "bold"))
        parts.append(self._body())
        parts.append(Text.assemble((f"{mark} ", colour), plain(self.summary, "dim")))
        result = self.result
        if result is not None and result.warning:  # e.g. the kernel was killed and its state is lost
            parts.append(Text.assemble(("⚠ ", "bold yellow"), plain(result.warning, "yellow")))
        if result is not None and (preview := output_preview(
                result.output, cut=result.stdout_truncated, saved=result.stdout_spill_path is not None,
                total=result.stdout_bytes_total, saved_bytes=result.stdout_spill_bytes)) is not None:
            parts.append(preview)
        return parts

    def refresh_theme(self) -> None:
        """Re-highlight for the current theme (dark or light)."""
        self._changed()

    def on_click(self) -> None:
        self.post_message(self.Selected(self))

    def key_enter(self) -> None:
        self.post_message(self.Selected(self))

    def key_c(self) -> None:
        """Open this run's saved entry in the output browser."""
        if self.exec_id:
            self.post_message(OpenEntry(self.exec_id))

    def key_y(self) -> None:
        """Copy this run's output to the clipboard (its code when it printed nothing)."""
        output = self.result.output if self.result is not None else ""
        text, what = (output, "its output") if output.strip() else (self.code, "its code")
        if self.result is not None and self.result.stdout_truncated and output.strip():
            what += " (its head and tail: c opens the whole output)"
        copy_text(self, text, what)


class MessageBlock(Static):
    """A message from the user, or one injected from outside (marked as such)."""

    DEFAULT_CSS = """
    MessageBlock { margin: 0 0 1 0; padding: 0 1; background: $boost; height: auto; }
    MessageBlock.injected { border-left: thick $warning; }
    """

    def __init__(self, text: str, origin: str = "user") -> None:
        label = {"user": ("you", "bold $primary"), "injected": ("injected", "bold $warning")}.get(
            origin, (origin, "bold $secondary"))
        self.label = label[0]
        self.text = text
        self.origin = origin
        self.shown = shown_for(text) if origin == "user" else None
        """The message as it was typed, a big paste as its placeholder (None: it held none)."""
        self.expanded = False
        super().__init__(self._content(), classes=origin)
        self.can_focus = self.shown is not None

    def _content(self) -> Text:
        if self.shown is None or self.expanded:
            return Text.assemble((self.label + "  ", "bold"), plain(self.text))
        return Text.assemble((self.label + "  ", "bold"), plain(self.shown),
                             ("\n(click or Enter: show the whole text)", "dim"))

    def toggle_paste(self) -> None:
        """Show the whole text of a big paste, or its placeholder again."""
        if self.shown is not None:
            self.expanded = not self.expanded
            self.update(self._content())

    def on_click(self) -> None:
        self.toggle_paste()

    def key_enter(self) -> None:
        self.toggle_paste()


class PastedRunBlock(RunBlock):
    """The run of an input that held a big paste: drawn as it was typed (the paste as its
    ``[pasted N lines]`` placeholder) until a click or Enter shows the whole text."""

    def __init__(self, code: str, shown: str, kind: str = "python", title: str | None = None) -> None:
        super().__init__(code, kind, title)
        self.shown = shown
        self.expanded = False

    def _body(self) -> Text:
        if self.expanded:
            return super()._body()
        return plain(self.shown + "\n(click or Enter: show the whole text)")

    def toggle_paste(self) -> None:
        self.expanded = not self.expanded
        self._changed()

    def on_click(self) -> None:
        self.toggle_paste()  # RunBlock's own click (show the output) follows

    def key_enter(self) -> None:
        self.toggle_paste()
        super().key_enter()


def pasted_run(code: str, kind: str = "python", title: str | None = None) -> RunBlock:
    """A run's block: a :class:`PastedRunBlock` when ``code`` was submitted with a big paste."""
    shown = shown_for(code)
    return PastedRunBlock(code, shown, kind, title) if shown is not None else RunBlock(code, kind, title)


def tool_block(name: str, arguments: dict[str, object]) -> RunBlock:
    """The block of one tool call (not yet mounted); ``delegate_task``'s is a
    :class:`~hermes_tui.tui.widgets.delegate.DelegateBlock` (it answers what is asked of a run's)."""
    if name == "delegate_task":
        return DelegateBlock(arguments)  # type: ignore[return-value]
    if name == "execute_code":
        title = "execute_code" + (" (reset)" if arguments.get("reset") else "")
        return pasted_run(str(arguments.get("code", "")), title=title)
    if name == "terminal":
        return RunBlock(str(arguments.get("command", "")), kind="shell", title="terminal")
    shown = ", ".join(f"{k}={v!r}"[:200] for k, v in arguments.items() if v not in (None, False))
    return RunBlock(f"{name}({shown})", kind="text")


class PendingBlock(Static, can_focus=True):
    """Input waiting for the running turn to end; Esc (or Delete) on it takes it out of the queue."""

    DEFAULT_CSS = """
    PendingBlock { color: $text-muted; padding: 0 1; border-left: thick $panel; height: auto; }
    PendingBlock:focus { border-left: thick $warning; background: $boost; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,delete", "remove", "Remove from the queue")]

    class Removed(Message):
        def __init__(self, block: PendingBlock) -> None:
            super().__init__()
            self.block = block

    def __init__(self, turn_id: str, text: str, what: str) -> None:
        first = text.splitlines()[0] if text.strip() else text
        more = " …" if len(first) > 120 or "\n" in text.strip() else ""
        super().__init__(plain(f"⋯ pending {what}: {first[:120]}{more}  (Esc on it removes it)"))
        self.turn_id = turn_id

    def action_remove(self) -> None:
        self.post_message(self.Removed(self))


def block_text(block: Widget) -> str:
    """The text of a transcript block, as /find searches it and /copy copies it: a message or a
    reply as written, a run's code, status and output, a note's text."""
    if isinstance(block, RunBlock):
        output = block.result.output if block.result is not None else ""
        return "\n".join(part for part in (block.title or "", block.code, block.summary, output) if part)
    text = getattr(block, "text", None)
    if isinstance(text, str):
        return text
    if isinstance(block, Static):
        content = block.content
        return content.plain if isinstance(content, Text) else str(content)
    return " ".join(block_text(child) for child in block.children)


FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n(.*?)^ {0,3}\1[`~]*[ \t]*$", re.MULTILINE | re.DOTALL)


def code_blocks(markdown: str) -> list[str]:
    """The fenced code blocks of a reply, in order (their text, without the fences)."""
    return [match.group(2).rstrip("\n") for match in FENCE.finditer(markdown)]


def copy_text(widget: Widget, text: str, what: str) -> None:
    """Put ``text`` on the clipboard (OSC 52, through the terminal) and say what was copied."""
    widget.app.copy_to_clipboard(text)
    widget.notify(f"Copied {what}: {plural(text.count(chr(10)) + 1, 'line')}, {plural(len(text), 'character')}.",
                  markup=False)


def note(text: str, level: str = "info") -> Static:
    """A line from the app (``level`` info, warning or error sets its colour)."""
    return Static(plain(text), classes=f"note {level}")


def tool_output_note(result: dict[str, object]) -> Static | None:
    """The note under a direct tool call's block: its output, capped to its head and tail
    (None when it printed nothing). Drawn live and when a stored session is drawn again."""
    output = str(result.get("output") or result.get("content") or "")
    if not output:
        return None
    half = MAX_NOTE_CHARS // 2
    return note(output if len(output) <= MAX_NOTE_CHARS else output[:half] + "\n…\n" + output[-half:])
