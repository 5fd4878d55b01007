"""The execute_code output pane: live output of the running script, or of a chosen run."""

from __future__ import annotations

import time
from bisect import bisect_right
from itertools import accumulate
from typing import TYPE_CHECKING, ClassVar

from rich.cells import cell_len, chop_cells
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.geometry import Size
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Log, Static

from hermes_tui.runtime.events import ExecFinished, ExecOutput, ExecStarted, RuntimeEvent, ToolCallMade
from hermes_tui.tui.textual_compat import line_split, scroll_update
from hermes_tui.tui.widgets.focus_frame import FocusFrame
from hermes_tui.tui.widgets.messages import OpenEntry, OpenInEditor
from hermes_tui.tui.widgets.safe import plain, visible

if TYPE_CHECKING:
    from hermes_tui.runtime.models import ExecResult
    from typing_extensions import Self

MAX_LINES = 5_000
"""Lines the pane keeps (the full output is in the record and the spill file)."""
FLUSH_SECONDS = 0.016
FLOOD_FLUSH_SECONDS = 0.1
FLUSH_CHARS = 8_000
"""Characters written to the log per flush at most (~100 lines, every 16 ms)."""
PENDING_LIMIT = 1 << 20
"""Characters waiting for the next flush at most; a burst beyond that is counted, not kept."""
FINISH_WAIT = 0.25
"""Seconds a run's end waits for the agent's report of it before it is drawn anyway."""
STATUS_STYLE = {"running": "bold $warning", "success": "bold $success", "error": "bold $error",
                "timeout": "bold $error", "interrupted": "bold $warning"}


def header_line(status: str, elapsed: str, limit: str, skipped: str | None, calls: str, kernel: str,
                exec_id: str, room: int) -> str:
    """The header after ``status`` (which is styled apart): what fits in ``room`` cells. The
    exec id goes first, then the kernel, the time limit, the tool count and the flood note: a
    narrow pane shows whole words, never a cut."""
    candidates: list[list[str | None]] = [
        [elapsed + limit, skipped, calls, kernel, exec_id],
        [elapsed + limit, skipped, calls, kernel],
        [elapsed + limit, skipped, calls],
        [elapsed, skipped, calls],
        [elapsed, skipped],
        [elapsed],
    ]
    for parts in candidates:
        line = "".join(f" · {part}" for part in parts if part)
        if cell_len(status + line) <= room:
            return line
    return ""


class OutputLog(Log):
    """A :class:`Log` that wraps long lines at its width (``wrap``), and whose writes repaint
    only itself: Textual's ``Log.write`` changes ``virtual_size``, which lays out the whole
    screen again, every flush of a flood. ``lines`` stay the raw lines either way.

    It overrides and uses Log's private state and hooks (``_lines``, ``_width``,
    ``_render_line_cache``, ``_updates``, ``_clear_y``, ``_render_line``, ``_process_line``,
    ``_prune_max_lines``): each is checked at import by tui/textual_compat.py."""

    DEFAULT_CSS = """
    OutputLog.-wrap { overflow-x: hidden; }
    """

    def __init__(self, *, wrap: bool = True, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._wrap = wrap
        self._counts: list[int] = []
        """Rows of each line at ``_wrap_width`` (for a prefix of ``_lines``)."""
        self._starts: list[int] | None = None
        """The first row of each line (prefix sums of ``_counts``), when up to date."""
        self._wrap_width = 0
        self.set_class(wrap, "-wrap")

    @property
    def wrap(self) -> bool:
        """Long lines wrap at the log's width (else they scroll sideways)."""
        return self._wrap

    @wrap.setter
    def wrap(self, wrap: bool) -> None:
        at_end = self.is_vertical_scroll_end
        self._wrap = wrap
        self.set_class(wrap, "-wrap")
        self._forget_rows(0)
        self._render_line_cache.clear()
        self._set_virtual_size()
        self.refresh()
        if at_end:
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    @classmethod
    def _process_line(cls, line: str) -> str:  # Log's private hook (tui/textual_compat.py)
        """A line as drawn: Textual's filter only replaces \\x00-\\x14, so ESC, DEL and the C1
        controls would reach the terminal raw; every control is shown as an escape first."""
        if line.isascii() and line.isprintable():  # most output: nothing to replace (each line is
            return line  # processed for its width and its rows: two regex passes each, issue 20)
        return super()._process_line(visible(line))

    # -- rows ------------------------------------------------------------------------------

    def _forget_rows(self, first: int) -> None:
        del self._counts[first:]
        self._starts = None

    def _content_width(self) -> int:
        return max(1, self.scrollable_content_region.width)

    def _rows_of(self, line: str, width: int) -> int:
        text = self._process_line(line)
        if text.isascii():  # one cell a character
            return max(1, -(-len(text) // width))
        return max(1, len(chop_cells(text, width)))

    def _row_starts(self) -> list[int]:
        width = self._content_width()
        if width != self._wrap_width:
            self._wrap_width = width
            self._forget_rows(0)
        if len(self._counts) < len(self._lines):  # only lines added since: a flush costs its own lines
            rows_of = self._rows_of
            self._counts.extend(rows_of(line, width) for line in self._lines[len(self._counts):])
            self._starts = None
        if self._starts is None:
            self._starts = list(accumulate(self._counts, initial=0))
        return self._starts

    @property
    def row_count(self) -> int:
        """Rows of content as drawn (wrapped lines count once per row)."""
        if not self._wrap:
            return self.line_count
        total = self._row_starts()[-1]
        return total - (1 if self._lines and self._lines[-1] == "" else 0)

    def _set_virtual_size(self) -> None:
        """The scrollable size, set without a layout of the screen (the log's own size does
        not change, only how far it scrolls): what Textual does on a resize."""
        if self._wrap:
            size = Size(self._content_width(), self.row_count)
        else:
            size = Size(self._width, self.line_count)
        if size != self.virtual_size:
            self.set_reactive(Widget.virtual_size, size)
            scroll_update(self, size)

    def on_resize(self, event: events.Resize) -> None:
        if self._wrap and self._content_width() != self._wrap_width:
            at_end = self.is_vertical_scroll_end
            self._set_virtual_size()
            self.refresh()
            if at_end:
                self.scroll_end(animate=False, immediate=True, x_axis=False)

    # -- writing ---------------------------------------------------------------------------

    def write(self, data: str, scroll_end: bool | None = None) -> Self:
        """Append ``data``; follow the end if the log was showing it."""
        at_end = self.is_vertical_scroll_end
        if data:
            lines = self._lines
            if not lines:
                lines.append("")
            first = len(lines) - 1  # the last line may be continued
            self._forget_rows(first)
            for line, ending in line_split(data):
                lines[-1] += line
                if ending:
                    lines.append("")
            process = self._process_line
            self._width = max(self._width, *(cell_len(process(line)) for line in lines[first:]))
            for y in range(first, len(lines)):
                self._render_line_cache.discard(y)
        if self.max_lines is not None and len(self._lines) > self.max_lines:
            self._prune_max_lines()
        self._set_virtual_size()
        self.refresh()
        follow = self.auto_scroll if scroll_end is None else scroll_end
        if follow and at_end and not self.is_vertical_scrollbar_grabbed:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        return self

    def _prune_max_lines(self) -> None:  # Log's private hook (tui/textual_compat.py)
        if self.max_lines is not None and len(self._lines) > self.max_lines:
            del self._counts[:len(self._lines) - self.max_lines]
            self._starts = None
        super()._prune_max_lines()

    def clear(self) -> Self:
        """Empty the log (what ``Log.clear`` does, without a layout of the screen; Log's private
        state: tui/textual_compat.py)."""
        self._forget_rows(0)
        self._lines.clear()
        self._width = 0
        self._render_line_cache.clear()
        self._updates += 1
        self._clear_y = 0
        self._set_virtual_size()
        self.refresh()
        return self

    # -- drawing ---------------------------------------------------------------------------

    def _render_line(self, y: int, scroll_x: int, width: int) -> Strip:  # Log's private hook (tui/textual_compat.py)
        if not self._wrap:
            return super()._render_line(y, scroll_x, width)
        rich_style = self.rich_style
        starts = self._row_starts()
        if y >= self.row_count:
            return Strip.blank(width, rich_style)
        index = bisect_right(starts, y) - 1
        part = y - starts[index]
        text = self._process_line(self._lines[index])
        wrap = self._wrap_width
        if text.isascii():
            offset = part * wrap
            piece = text[offset:offset + wrap]
        else:
            pieces = chop_cells(text, wrap)
            piece = pieces[part] if part < len(pieces) else ""
            offset = sum(len(p) for p in pieces[:part])
        line_text = Text(piece, no_wrap=True)
        line_text.stylize(rich_style)
        selection = self.text_selection
        if selection is not None and (span := selection.get_span(index - self._clear_y)) is not None:
            start, end = span
            end = len(text) if end == -1 else end
            start, end = max(start - offset, 0), min(end - offset, len(piece))
            if start < end:
                line_text.stylize(self.screen.get_component_rich_style("screen--selection"), start, end)
        strip = Strip(line_text.render(self.app.console), cell_len(piece))
        # Offsets name the raw line and column: a selection copies the unwrapped text.
        return strip.crop_extend(0, width, rich_style).apply_offsets(offset, index)


class OutputPane(FocusFrame, Vertical):
    """Streams output in batches (one ``Log.write`` per ~16 ms), bounded to MAX_LINES lines."""

    ALLOW_MAXIMIZE = True
    DEFAULT_CSS = """
    OutputPane { border: round $panel-lighten-2; border-title-color: $primary; }
    OutputPane #output-header { height: 1; padding: 0 1; background: $panel; }
    OutputPane #output-spill { height: auto; padding: 0 1; color: $text-muted; }
    OutputPane Log { height: 1fr; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "open_spill", "Open full output", id="output-open"),
        Binding("y", "copy_spill", "Copy path", id="output-copy"),
        Binding("c", "open_entry", "Open entry", id="output-entry"),
        # One key, two descriptions: the footer shows whether long lines wrap now.
        Binding("w", "wrap(False)", "Wrap: on", id="output-wrap"),
        Binding("w", "wrap(True)", "Wrap: off", id="output-nowrap"),
    ]


    def show_runtime_event(self, event: RuntimeEvent, session: str) -> None:
        """A runtime event: a script of ``session`` starts here; output, tool-call counts and the
        end of the execution shown here follow."""
        if isinstance(event, ExecStarted):
            if event.session == session:
                self.begin(event.exec_id, event.kernel_id, event.timeout, event.max_tool_calls)
        elif isinstance(event, ExecOutput):
            self.feed(event.exec_id, event.text, event.skipped_bytes)
        elif isinstance(event, ToolCallMade):
            if event.exec_id == self.exec_id and self.status == "running":
                self.set_tool_calls(event.calls)
        elif isinstance(event, ExecFinished):
            self.ended(event.result)

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.border_title = "execute_code output"
        self._note_rows = 0
        """Rows the notes under the header take."""
        self.exec_id: str | None = None
        self.status = "idle"
        self.started = 0.0
        self.finished: float | None = None
        self.kernel_id: str | None = None
        self.tool_calls = 0
        self.max_tool_calls = 0
        self.timeout = 0.0
        self.spill_path: str | None = None
        self._pending: list[str] = []
        self._pending_size = 0
        self._skipped = 0
        self._flush_scheduled = False
        self._skipping = False
        self.skipped_total = 0
        """Live characters not drawn in this run (too fast to show)."""

    def compose(self) -> ComposeResult:
        yield Static("no script has run yet", id="output-header")
        yield OutputLog(max_lines=MAX_LINES, auto_scroll=True, id="output-log")
        yield Static("", id="output-spill")

    def on_mount(self) -> None:
        self.set_interval(0.25, self._refresh_header)

    # -- live -----------------------------------------------------------------------------

    def begin(self, exec_id: str, kernel_id: str | None, timeout: float, max_tool_calls: int) -> None:
        """A new run starts: clear and follow it."""
        self.exec_id, self.kernel_id = exec_id, kernel_id
        self.status, self.started, self.finished = "running", time.monotonic(), None
        self.timeout, self.max_tool_calls, self.tool_calls = timeout, max_tool_calls, 0
        self.spill_path = None
        self._pending.clear()
        self._pending_size = self._skipped = self.skipped_total = 0
        self._skipping = False
        self.query_one(OutputLog).clear()
        self._show_notes("\n" * max(0, self._note_rows - 1) if self._note_rows else "")
        self._refresh_header()

    def feed(self, exec_id: str | None, text: str, skipped: int = 0) -> None:
        """Live output of ``exec_id``; shown at most every 16 ms."""
        if exec_id is not None and exec_id != self.exec_id:
            return
        self._skipped += skipped
        if self._pending_size + len(text) > PENDING_LIMIT:
            self._skipped += len(text.encode())
            return
        self._pending.append(text)
        self._pending_size += len(text)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            # In a flood, draw less often: the keyboard stays responsive.
            self.set_timer(FLOOD_FLUSH_SECONDS if self._skipping else FLUSH_SECONDS, self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        text = "".join(self._pending)
        self._pending.clear()
        self._pending_size = 0
        if len(text) > FLUSH_CHARS:
            # A flood: nobody reads 60 screens a second. Show its newest lines, count the rest.
            keep = text[-FLUSH_CHARS:]
            keep = keep[keep.find("\n") + 1:] if "\n" in keep[:-1] else keep
            self._skipped += len(text) - len(keep)
            text = keep
        log = self.query_one(OutputLog)
        if self._skipped:
            if not self._skipping:
                log.write("\n… [output too fast to show live: the newest lines follow; all of it is in the result] …\n")
            self._skipping = True
            self.skipped_total += self._skipped
            self._skipped = 0
        else:
            self._skipping = False
        if text:
            log.write(text)

    def ended(self, result: ExecResult) -> None:
        """The runtime says the run shown here ended. Its result is drawn when the agent has
        stored it and says so too (:meth:`finish`), with the run's block, in one frame: drawn
        now, its frame came between the end and the block's result, and the block waited for
        it (issue 20). A run nobody else reports (or whose report waits on a store that is not
        answering) is drawn after FINISH_WAIT seconds."""
        if result.exec_id == self.exec_id and self.status == "running":
            self.set_timer(FINISH_WAIT, lambda: self.finish(result))

    def finish(self, result: ExecResult) -> None:
        """The run ended: the result's capped output replaces the live view (once: both the
        runtime and the agent say a run ended, and drawing its output twice cost the event loop
        a few ms of a flood, issue 20)."""
        if result.exec_id != self.exec_id or (self.status != "running" and self.finished is not None):
            return
        self.show(result)

    def show(self, result: ExecResult) -> None:
        """Show a finished run (also one picked in the conversation)."""
        self.exec_id, self.kernel_id = result.exec_id, result.kernel.id
        self.status = result.status
        self.tool_calls = result.tool_calls_made
        self.finished = time.monotonic()
        self.started = self.finished - result.duration_seconds
        self.spill_path = result.stdout_spill_path
        self._pending.clear()
        self._pending_size = self._skipped = 0
        log = self.query_one(OutputLog)
        log.clear()
        log.write(result.output)
        notes = []
        if result.stdout_truncated:
            notes.append(f"Output cut to head and tail ({result.stdout_bytes_total:,} bytes in all).")
        if result.stdout_spill_path:
            kind = "Full output" if result.stdout_spill_bytes is None else "Saved output (its first part)"
            notes.append(f"{kind}: {result.stdout_spill_path}   [o] open  [y] copy path")
        if result.error and result.status != "success":
            notes.append(f"{result.status}: {result.error}")
        if result.warning:
            notes.append(f"warning: {result.warning}")
        self._show_notes("\n".join(notes))
        self._refresh_header()

    def _show_notes(self, text: str) -> None:
        """The lines under the header (output cut, where the full output is, the error). Each
        change of their height lays out and redraws the whole screen, and a run's output waits
        on that (issue 20): a new run blanks the last run's notes but keeps their rows, and
        notes as tall as those before need no layout."""
        spill = self.query_one("#output-spill", Static)
        width = spill.content_size.width
        shown = plain(text)  # paths and errors: data
        rows = len(shown.wrap(self.app.console, width)) if text and width > 0 else 0
        spill.update(shown, layout=width <= 0 or rows != self._note_rows)
        self._note_rows = rows

    def _refresh_header(self) -> None:
        if self.exec_id is None:
            return
        end = self.finished if self.finished is not None else time.monotonic()
        elapsed = max(0.0, end - self.started)
        calls = f"tools {self.tool_calls}/{self.max_tool_calls}" if self.max_tool_calls else f"tools {self.tool_calls}"
        limit = f" of {self.timeout:g}s" if self.status == "running" and self.timeout else ""
        skipped = (f"{self.skipped_total / 1e6:.1f} MB too fast to show"
                   if self.status == "running" and self.skipped_total else None)
        header = self.query_one("#output-header", Static)
        room = header.size.width - 2 if header.size.width else 1 << 16  # its padding: one cell each side
        line = header_line(self.status, f"{elapsed:.1f}s", limit, skipped, calls,
                           visible(f"kernel {self.kernel_id or '—'}"), visible(self.exec_id), room)
        # One row, always: no layout of the screen for it (it changes four times a second).
        header.update(Content.assemble((self.status, STATUS_STYLE.get(self.status, "bold")), line),
                      layout=False)

    def on_resize(self, event: events.Resize) -> None:
        self._refresh_header()

    def set_tool_calls(self, count: int) -> None:
        self.tool_calls = count

    # -- actions --------------------------------------------------------------------------

    def action_wrap(self, wrap: bool) -> None:
        """Wrap long lines at the pane's width, or not (they scroll sideways)."""
        self.query_one(OutputLog).wrap = wrap
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "wrap":  # of the two ``w`` bindings, the one that changes something
            return bool(parameters) and parameters[0] != self.query_one(OutputLog).wrap
        return True

    def action_open_spill(self) -> None:
        if self.spill_path:
            self.post_message(OpenInEditor(self.spill_path))
        else:
            self.notify("This run's output was not cut: everything is shown here.")

    def action_open_entry(self) -> None:
        if self.exec_id and self.status != "running":
            self.post_message(OpenEntry(self.exec_id))
        else:
            self.notify("No finished run to open yet.")

    def action_copy_spill(self) -> None:
        if self.spill_path:
            self.app.copy_to_clipboard(self.spill_path)
            self.notify(f"Copied {visible(self.spill_path)}", markup=False)
        else:
            self.notify("No full-output file for this run.")
