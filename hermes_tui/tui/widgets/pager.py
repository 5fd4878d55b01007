"""A pager for files of any size: pages are read by byte offset in a thread, never whole.

Like ``less``: the view starts at a byte offset and shows the lines from there. Moving reads
the neighbouring block when needed; jumping to a line or searching scans the file in a thread
with progress, and Esc cancels. The status line shows the number of the top line on screen,
counted from the nearest line whose number is known (in a thread when that is outside the
block). The file may be unreadable, still growing, or deleted while it is open: the pager says
so instead of failing.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.actions import SkipAction
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input, Label, Static

from hermes_tui.tui.widgets.safe import plain, visible

BLOCK = 256 << 10
"""Bytes read around the view at a time."""
SCAN_CHUNK = 4 << 20
LINE_CHARS = 1000


def read_block(path: Path, start: int, size: int = BLOCK, at_end: bool = False) -> tuple[int, bytes, int]:
    """(start, bytes, file size) of a block (the last one with ``at_end``). Blocking; raises OSError."""
    with path.open("rb") as handle:
        handle.seek(0, 2)
        total = handle.tell()
        start = max(0, total - size) if at_end else max(0, min(start, total))
        handle.seek(start)
        return start, handle.read(size), total


def find_in_file(path: Path, needle: bytes, start: int, forward: bool, cancel: threading.Event,
                 progress=None) -> int | None:
    """Offset of the next (or previous) occurrence of ``needle``, case-insensitive. Blocking."""
    needle = needle.lower()
    with path.open("rb") as handle:
        handle.seek(0, 2)
        total = handle.tell()
        overlap = max(0, len(needle) - 1)
        if forward:
            position = start
            while position < total and not cancel.is_set():
                handle.seek(position)
                data = handle.read(SCAN_CHUNK + overlap).lower()
                found = data.find(needle)
                if found >= 0:
                    return position + found
                position += SCAN_CHUNK
                if progress:
                    progress(min(position, total) / max(total, 1))
        else:
            end = start
            while end > 0 and not cancel.is_set():
                begin = max(0, end - SCAN_CHUNK)
                handle.seek(begin)
                data = handle.read(end - begin + overlap).lower()
                found = data.rfind(needle, 0, end - begin + min(overlap, total - end) + 0)
                if found >= 0 and begin + found < start:
                    return begin + found
                end = begin
                if progress:
                    progress(1 - end / max(start, 1))
    return None


def offset_of_line(path: Path, line: int, cancel: threading.Event, progress=None) -> int | None:
    """Byte offset where 1-based ``line`` starts (None if cancelled or past the end). Blocking."""
    if line <= 1:
        return 0
    seen = 0
    with path.open("rb") as handle:
        handle.seek(0, 2)
        total = handle.tell()
        handle.seek(0)
        position = 0
        while not cancel.is_set():
            data = handle.read(SCAN_CHUNK)
            if not data:
                return None
            count = data.count(b"\n")
            if seen + count >= line - 1:
                index = -1
                for _ in range(line - 1 - seen):
                    index = data.index(b"\n", index + 1)
                return position + index + 1
            seen += count
            position += len(data)
            if progress:
                progress(position / max(total, 1))
    return None


def line_at(path: Path, offset: int, anchor: tuple[int, int] = (0, 1),
            cancel: threading.Event | None = None) -> int | None:
    """1-based number of the line that holds byte ``offset``. Blocking; raises OSError.

    ``anchor`` is a known (byte offset, line number) pair: only the bytes between it and
    ``offset`` are read. None if cancelled.
    """
    start, line = anchor
    low, high = sorted((start, offset))
    newlines = 0
    with path.open("rb") as handle:
        handle.seek(low)
        remaining = high - low
        while remaining > 0:
            if cancel is not None and cancel.is_set():
                return None
            data = handle.read(min(SCAN_CHUNK, remaining))
            if not data:  # the file shrank under us
                break
            newlines += data.count(b"\n")
            remaining -= len(data)
    return line + newlines if offset >= start else max(1, line - newlines)


def diff_style(line: str) -> str:
    """The colour of one line of a unified diff."""
    if line.startswith(("diff --git", "+++ ", "--- ", "# ")):
        return "bold"
    if line.startswith("@@"):
        return "cyan"
    if line.startswith("+"):
        return "green"
    if line.startswith("-"):
        return "red"
    return ""


class PagerBody(Static):
    """The lines on screen. When its height changes (the prompt closes, the terminal is
    resized) the pager draws again: the lines it drew were for the old height."""

    def on_resize(self) -> None:
        for pager in self.ancestors:
            if isinstance(pager, Pager):
                pager.redraw()
                break


class Pager(Widget, can_focus=True):
    """Shows ``path`` from a byte offset. Keys: arrows/PgUp/PgDn, g/G start/end, : line,
    # byte offset, / ? search forward/backward, n N next/previous, Esc cancels a scan or a
    prompt (with neither, Esc is left to the screen: back)."""

    DEFAULT_CSS = """
    Pager { height: 1fr; }
    Pager #pager-body { height: 1fr; }
    /* It wraps (at 80 columns a search's status is longer than a line): never cut. */
    Pager #pager-status { width: 1fr; height: auto; max-height: 3; background: $panel; padding: 0 1; }
    Pager #pager-prompt { display: none; }
    Pager #pager-prompt.visible { display: block; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        # First, so that the footer shows it first (visible at 80 columns). With no scan or
        # prompt to cancel, Esc is not the pager's: it goes on to the screen (back).
        Binding("escape", "cancel", "Back", id="pager-cancel"),
        Binding("down,j", "move(1)", "Down", show=False, id="pager-down"),
        Binding("up,k", "move(-1)", "Up", show=False, id="pager-up"),
        Binding("pagedown,space", "page(1)", "Page down", show=False, id="pager-pgdn"),
        Binding("pageup,b", "page(-1)", "Page up", show=False, id="pager-pgup"),
        Binding("g,home", "jump_start", "Start", id="pager-start"),
        Binding("G,end", "jump_end", "End", id="pager-end"),
        Binding("colon", "ask('line')", "Line", id="pager-line"),
        Binding("number_sign", "ask('byte')", "Byte", id="pager-byte"),
        Binding("slash", "ask('search')", "Search", id="pager-search"),
        Binding("question_mark", "ask('search-back')", "Search back", id="pager-search-back"),
        Binding("n", "again(True)", "Next", id="pager-next"),
        Binding("N", "again(False)", "Previous", id="pager-prev"),
    ]

    class Problem(Message):
        """The file could not be read (gone, denied...)."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, path: Path, *, syntax: str | None = None, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.path = path
        self.syntax = syntax
        """``diff``: lines coloured as a unified diff (added, removed, hunks, files)."""
        self.position = 0
        self.block_start = 0
        self.block = b""
        self.file_size = 0
        self.problem: str | None = None
        self.status = ""
        self.last_search: tuple[bytes, bool] | None = None
        self.highlight: bytes | None = None
        self.line: int | None = 1
        """The number of the top line on screen (None while it is being counted)."""
        self._anchor = (0, 1)
        """A known (byte offset, line number) pair, the one nearest the view."""
        self._counting: int | None = None
        self._count_cancel = threading.Event()
        self._asking = ""
        self._cancel = threading.Event()
        self._shown = False
        """A block was read and drawn (until then there is nothing to draw again)."""

    def compose(self) -> ComposeResult:
        with Vertical():
            yield PagerBody(id="pager-body")
            yield Input(id="pager-prompt")
            yield Label("", id="pager-status")

    def on_mount(self) -> None:
        self.load(0)

    # -- reading --------------------------------------------------------------------------

    @work(exclusive=True, group="pager-read", thread=True, exit_on_error=False)
    def load(self, offset: int, then_end: bool = False) -> None:
        """Read the block around ``offset`` (in a thread) and show it."""
        try:
            start, data, size = read_block(self.path, max(0, offset - BLOCK // 4), at_end=then_end)
        except FileNotFoundError:
            self.app.call_from_thread(self._failed, f"{self.path} is gone (deleted or pruned)")
            return
        except OSError as exc:
            self.app.call_from_thread(self._failed, f"cannot read {self.path}: {exc.strerror or exc}")
            return
        self.app.call_from_thread(self._loaded, start, data, size, offset, then_end)

    def _failed(self, text: str) -> None:
        self.problem = text
        self.query_one("#pager-body", Static).update(plain(text, "bold red"))
        self._set_status(text)
        self.post_message(self.Problem(text))

    def _loaded(self, start: int, data: bytes, size: int, offset: int, then_end: bool) -> None:
        self.problem = None
        self.block_start, self.block, self.file_size = start, data, size
        self._shown = True
        if then_end:
            end = size - 1 if self.block.endswith(b"\n") else size
            self.position = self._back_lines(self._line_start(max(0, end)), max(0, self._height() - 1))
        else:
            self.position = self._line_start(min(offset, size))
        self._draw()

    def _height(self) -> int:
        return max(1, self.query_one("#pager-body").size.height or self.size_height_default())

    @staticmethod
    def size_height_default() -> int:
        return 20

    def _line_start(self, offset: int) -> int:
        """Start of the line that holds ``offset`` (within the block)."""
        local = offset - self.block_start
        if local <= 0:
            return offset if local == 0 else self.block_start
        previous = self.block.rfind(b"\n", 0, local)
        return self.block_start + previous + 1 if previous >= 0 else self.block_start

    def _back_lines(self, offset: int, count: int) -> int:
        local = offset - self.block_start
        for _ in range(count):
            if local <= 0:
                break
            previous = self.block.rfind(b"\n", 0, local - 1)
            local = previous + 1 if previous >= 0 else 0
        return self.block_start + max(0, local)

    def _visible(self) -> tuple[list[str], int]:
        """The lines on screen and the offset after them."""
        height = self._height()
        local = self.position - self.block_start
        lines: list[str] = []
        while len(lines) < height and local < len(self.block):
            end = self.block.find(b"\n", local)
            if end < 0:
                end = len(self.block)
            raw = self.block[local:end]
            text = raw.decode("utf-8", "replace")
            lines.append(text if len(text) <= LINE_CHARS else text[:LINE_CHARS] + " …")
            local = end + 1
        return lines, self.block_start + local

    def _line_in_block(self, offset: int) -> int | None:
        """The number of the line holding ``offset``, when it and a known one are in the block."""
        end = self.block_start + len(self.block)
        for start, line in (self._anchor, (0, 1)):
            if offset == start:
                return line
            if self.block_start <= start <= end and self.block_start <= offset <= end:
                low, high = sorted((start - self.block_start, offset - self.block_start))
                newlines = self.block.count(b"\n", low, high)
                return line + newlines if offset >= start else line - newlines
        return None

    def _update_line(self) -> None:
        """Set :attr:`line` for the view, or start counting it in a thread."""
        line = self._line_in_block(self.position)
        if line is not None:
            self.line = line
            self._anchor = (self.position, line)
        else:
            self.line = None
            if self._counting != self.position:
                self._counting = self.position
                self._count_cancel.set()
                self._count_cancel = threading.Event()
                self.count_line(self.position, self._anchor, self._count_cancel)

    @work(exclusive=True, group="pager-count", thread=True, exit_on_error=False)
    def count_line(self, offset: int, anchor: tuple[int, int], cancel: threading.Event) -> None:
        """Count the number of the line at ``offset`` from ``anchor`` (in a thread)."""
        try:
            line = line_at(self.path, offset, anchor, cancel)
        except OSError:
            line = None  # reading the view reports the problem
        if line is not None:
            self.app.call_from_thread(self._counted, offset, line)

    def _counted(self, offset: int, line: int) -> None:
        self._anchor = (offset, line)
        if self._counting == offset:
            self._counting = None
        if not self.problem:
            self._draw()

    async def line_on_screen(self) -> int | None:
        """The number of the top line on screen, counted now if it is not known yet."""
        if self.problem:
            return None
        if self.line is not None:
            return self.line
        try:
            return await asyncio.to_thread(line_at, self.path, self.position, self._anchor)
        except OSError:
            return None

    def _draw(self) -> None:
        self._update_line()
        lines, after = self._visible()
        # The file's bytes as text: never markup, and no control character reaches the terminal.
        if self.syntax == "diff":
            body = Text(no_wrap=True, overflow="ellipsis")
            for index, line in enumerate(lines):
                body.append(visible(line), diff_style(line))
                if index < len(lines) - 1:
                    body.append("\n")
        else:
            body = Text(visible("\n".join(lines)), no_wrap=True, overflow="ellipsis")
        if self.highlight:
            body.highlight_words([visible(self.highlight.decode("utf-8", "replace"))], style="reverse",
                                 case_sensitive=False)
        self.query_one("#pager-body", Static).update(body)
        percent = 100 if self.file_size == 0 else min(100, int(after * 100 / self.file_size))
        line = "line …" if self.line is None else f"line {self.line:,}"
        self._set_status(f"{line} · byte {self.position:,} of {self.file_size:,} ({percent}%)"
                         + (f" · {self.status}" if self.status else ""))

    def redraw(self) -> None:
        """Draw the view again (for a new height), once there is one to draw."""
        if self._shown and not self.problem:
            self._draw()

    def _set_status(self, text: str) -> None:
        self.query_one("#pager-status", Label).update(plain(text))  # it quotes paths and searches

    def _needs(self, offset: int, span: int = BLOCK // 2) -> bool:
        return not (self.block_start <= offset and offset + span <= self.block_start + len(self.block)) and (
            offset + span <= self.file_size or self.block_start + len(self.block) < self.file_size or offset < self.block_start)

    # -- moving ---------------------------------------------------------------------------

    def action_move(self, lines: int) -> None:
        if self.problem:
            return
        self.status = ""
        if lines > 0:
            target = self.position
            for _ in range(lines):
                local = target - self.block_start
                end = self.block.find(b"\n", local)
                if end < 0:
                    break
                target = self.block_start + end + 1
            if target >= self.file_size:
                return
        else:
            target = self._back_lines(self.position, -lines)
        self.position = target
        if self._needs(target):
            self.load(target)
        else:
            self._draw()

    def action_page(self, direction: int) -> None:
        self.action_move(direction * max(1, self._height() - 1))

    def action_jump_start(self) -> None:
        self.status = ""
        self.load(0)

    def action_jump_end(self) -> None:
        self.status = ""
        self.load(10**18, then_end=True)  # re-reads the size: a growing file shows its new end

    def action_ask(self, what: str) -> None:
        prompt = self.query_one("#pager-prompt", Input)
        self._asking = what
        prompt.placeholder = {"line": "go to line…", "byte": "go to byte offset…",
                              "search": "search forward…", "search-back": "search backward…"}[what]
        prompt.value = ""
        prompt.add_class("visible")
        prompt.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        prompt = self.query_one("#pager-prompt", Input)
        prompt.remove_class("visible")
        self.focus()
        value = event.value.strip()
        if not value:
            return
        self.status = ""
        if self._asking in ("line", "byte"):
            if not value.replace(",", "").isdigit():
                self.status = f"{value!r} is not a number"
                self._draw()
                return
            number = int(value.replace(",", ""))
            if self._asking == "byte":
                self.load(number)
            else:
                self.scan_line(number)
        else:
            self.last_search = (value.encode(), self._asking == "search")
            self.search(value.encode(), self._asking == "search")

    def action_again(self, same_direction: bool) -> None:
        if self.last_search:
            needle, forward = self.last_search
            self.search(needle, forward if same_direction else not forward)

    def action_cancel(self) -> None:
        """Esc: close the prompt, or cancel a scan; with neither, the screen's Esc (back)."""
        prompt = self.query_one("#pager-prompt", Input)
        scanning = any(w.node is self and w.group == "pager-scan" and not w.is_finished for w in self.workers)
        if prompt.has_class("visible"):
            self._cancel.set()
            prompt.remove_class("visible")
            self.focus()
        elif scanning:
            self._cancel.set()
        else:
            raise SkipAction()

    @work(exclusive=True, group="pager-scan", thread=True, exit_on_error=False)
    def search(self, needle: bytes, forward: bool) -> None:
        """Find the next match in a thread, with progress; Esc cancels."""
        self._cancel = cancel = threading.Event()
        start = self.position + 1 if forward else self.position
        label = needle.decode("utf-8", "replace")

        def progress(fraction: float) -> None:
            self.app.call_from_thread(self._progress, f"searching {label!r}: {fraction:.0%} (Esc cancels)")

        try:
            found = find_in_file(self.path, needle, start, forward, cancel, progress)
        except OSError as exc:
            self.app.call_from_thread(self._failed, f"cannot read {self.path}: {exc.strerror or exc}")
            return
        if cancel.is_set():
            self.app.call_from_thread(self._progress, "search cancelled")
        elif found is None:
            self.app.call_from_thread(self._progress, f"{label!r} not found {'after' if forward else 'before'} here")
        else:
            self.highlight = needle
            self.app.call_from_thread(self._found, found, f"{label!r} at byte {found:,}")

    @work(exclusive=True, group="pager-scan", thread=True, exit_on_error=False)
    def scan_line(self, line: int) -> None:
        """Find where a line starts (counting from the top, in a thread)."""
        self._cancel = cancel = threading.Event()

        def progress(fraction: float) -> None:
            self.app.call_from_thread(self._progress, f"counting lines: {fraction:.0%} (Esc cancels)")

        try:
            offset = offset_of_line(self.path, line, cancel, progress)
        except OSError as exc:
            self.app.call_from_thread(self._failed, f"cannot read {self.path}: {exc.strerror or exc}")
            return
        if offset is None:
            self.app.call_from_thread(self._progress, "cancelled" if cancel.is_set() else f"the file has fewer than {line} lines")
        else:
            self.app.call_from_thread(self._found, offset, "", line)

    def _progress(self, text: str) -> None:
        self.status = text
        self._draw() if not self.problem else self._set_status(text)

    def _found(self, offset: int, text: str, line: int | None = None) -> None:
        self.status = text
        if line is not None:  # a jump to a line: its number is known
            self._anchor = (offset, line)
        self.load(offset)
