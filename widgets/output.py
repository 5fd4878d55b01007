"""The execute_code output pane: live output of the running script, or of a chosen run."""

from __future__ import annotations

import time
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Log, Static

from hermes_tui.runtime.models import ExecResult
from hermes_tui.widgets.messages import OpenEntry, OpenInEditor
from hermes_tui.widgets.safe import plain, visible

MAX_LINES = 5_000
"""Lines the pane keeps (the full output is in the record and the spill file)."""
FLUSH_SECONDS = 0.016
FLOOD_FLUSH_SECONDS = 0.1
FLUSH_CHARS = 8_000
"""Characters written to the log per flush at most (~100 lines, every 16 ms)."""
PENDING_LIMIT = 1 << 20
"""Characters waiting for the next flush at most; a burst beyond that is counted, not kept."""
STATUS_STYLE = {"running": "bold $warning", "success": "bold $success", "error": "bold $error",
                "timeout": "bold $error", "interrupted": "bold $warning"}


class OutputPane(Vertical):
    """Streams output in batches (one ``Log.write`` per ~16 ms), bounded to MAX_LINES lines."""

    ALLOW_MAXIMIZE = True
    DEFAULT_CSS = """
    OutputPane { border: round $panel-lighten-2; border-title-color: $primary; }
    OutputPane:focus-within { border: round $primary; }
    OutputPane #output-header { height: 1; padding: 0 1; background: $panel; }
    OutputPane #output-spill { height: auto; padding: 0 1; color: $text-muted; }
    OutputPane Log { height: 1fr; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "open_spill", "Open full output", id="output-open"),
        Binding("y", "copy_spill", "Copy path", id="output-copy"),
        Binding("c", "open_entry", "Open entry", id="output-entry"),
    ]

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.border_title = "execute_code output"
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
        yield Log(max_lines=MAX_LINES, auto_scroll=True, id="output-log")
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
        self.query_one(Log).clear()
        self.query_one("#output-spill", Static).update("")
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
        log = self.query_one(Log)
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

    def finish(self, result: ExecResult) -> None:
        """The run ended: the result's capped output replaces the live view."""
        if result.exec_id != self.exec_id:
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
        log = self.query_one(Log)
        log.clear()
        log.write(result.output)
        notes = []
        if result.stdout_truncated:
            notes.append(f"Output cut to head and tail ({result.stdout_bytes_total:,} bytes in all).")
        if result.stdout_spill_path:
            notes.append(f"Full output: {result.stdout_spill_path}   [o] open  [y] copy path")
        if result.error and result.status != "success":
            notes.append(f"{result.status}: {result.error}")
        if result.warning:
            notes.append(f"warning: {result.warning}")
        self.query_one("#output-spill", Static).update(plain("\n".join(notes)))  # paths and errors: data
        self._refresh_header()

    def _refresh_header(self) -> None:
        if self.exec_id is None:
            return
        end = self.finished if self.finished is not None else time.monotonic()
        elapsed = max(0.0, end - self.started)
        style = STATUS_STYLE.get(self.status, "bold")
        calls = f"tools {self.tool_calls}/{self.max_tool_calls}" if self.max_tool_calls else f"tools {self.tool_calls}"
        limit = f" of {self.timeout:g}s" if self.status == "running" and self.timeout else ""
        if self.status == "running" and self.skipped_total:
            limit += f" · {self.skipped_total / 1e6:.1f} MB too fast to show"
        self.query_one("#output-header", Static).update(Content.assemble(
            (self.status, style), visible(f" · {elapsed:.1f}s{limit} · {calls} · kernel {self.kernel_id or '—'}"
                                          f" · {self.exec_id}")))

    def set_tool_calls(self, count: int) -> None:
        self.tool_calls = count

    # -- actions --------------------------------------------------------------------------

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
