"""The output browser: every entry of ``$HERMES_HOME/cache/exec``, live, and one entry in full."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import ClassVar, cast

from rich.cells import cell_len
from rich.syntax import Syntax
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Input, Label, Static

from hermes_tui.runtime.cache import CacheEntry, CacheError, delete_entry, load_record, scan
from hermes_tui.base.units import human_size, noun, parse_duration, unique_prefixes
from hermes_tui.tui.widgets.conversation.blocks import code_theme
from hermes_tui.tui.screens.dialogs import ConfirmScreen, HelpScreen
from hermes_tui.tui.widgets.entry_list import EntryList
from hermes_tui.tui.widgets.footer import KeysFooter
from hermes_tui.tui.widgets.messages import OpenInEditor
from hermes_tui.tui.widgets.pager import Pager
from hermes_tui.tui.widgets.safe import plain, visible

SORTS = ("time", "size", "status", "session")
COLUMNS = ("time", "status", "session", "kernel", "output", "id", "first line")
WIDTHS = (19, 11, 16, 6, 10, 26, 70)
MARKER_NOTE = ("This run printed {total:,} bytes. The result kept the first 20,000 and the last 30,000, "
               "with an OUTPUT TRUNCATED marker between them; below is the full output from {path}.")


GLOBAL_KEYS = ("help", "theme", "quit")
"""The ids of the app's keys that also work over the browser (its help lists them)."""


def show_help(screen: Screen[None], page: str) -> None:
    """F1: the help page of this screen (not the conversation's), with the app's keys that work here."""
    keys = [(b.key, b.description) for b in getattr(screen.app, "BINDINGS", ())
            if isinstance(b, Binding) and b.id in GLOBAL_KEYS]
    screen.app.push_screen(HelpScreen.for_pane(page, keys))


def parse_filter(text: str) -> tuple[str, dict[str, object]]:
    """'error session:s1 since:2d boom' -> ('boom', {status, session, since}); bad tokens raise ValueError."""
    words: list[str] = []
    options: dict[str, object] = {}
    for token in text.split():
        key, _, value = token.partition(":")
        if value and key in ("status", "session"):
            options[key] = value
        elif value and key == "since":
            options["since"] = time.time() - parse_duration(value)
        elif token in ("success", "error", "timeout", "interrupted"):
            options["status"] = token
        else:
            words.append(token)
    return " ".join(words), options


async def confirm_and_delete(screen: Screen[None], entry: CacheEntry) -> bool:
    """Ask, then delete every file of ``entry`` (off the loop). True if it was deleted."""
    names = ", ".join(p.name for p in entry.files)
    if not await screen.app.push_screen_wait(ConfirmScreen(f"Delete {names}?", yes="Delete", default=False)):
        return False
    await asyncio.to_thread(delete_entry, entry)
    screen.notify(f"Deleted {visible(entry.id)}.", markup=False)
    return True


class EntryScreen(Screen[None]):
    """One entry: what ran, and its whole output in the pager (or the record's capped output)."""

    DEFAULT_CSS = """
    EntryScreen #entry-head { height: auto; max-height: 14; padding: 0 1; background: $panel; }
    EntryScreen #entry-note { color: $warning; padding: 0 1; height: auto; }
    EntryScreen #entry-inline { height: 1fr; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "app.pop_screen", "Back", id="entry-back"),
        Binding("c", "copy_path", "Copy path", id="entry-copy"),
        Binding("e", "edit", "Open in $EDITOR", id="entry-edit"),
        Binding("D", "delete", "Delete", id="entry-delete"),
        Binding("f1", "help", "Help", id="entry-help"),
    ]

    def __init__(self, entry: CacheEntry) -> None:
        super().__init__()
        self.entry = entry
        self.record: dict[str, object] = {}
        self._output_copy: str | None = None
        """The text file ``e`` wrote the record's output to (removed when the screen closes)."""

    def compose(self) -> ComposeResult:
        entry = self.entry
        when = datetime.fromtimestamp(entry.when).strftime("%Y-%m-%d %H:%M:%S")
        yield Static(Text.assemble(plain(entry.id, "bold"), plain(
            f" · {entry.status or entry.kind} · {when} · session {entry.session or '—'}"
            f" · kernel {entry.kernel or '—'} · {entry.size:,} {noun(entry.size, 'byte')}"
            f" · {entry.output_file or entry.path}")),
            id="entry-title")
        yield Static(id="entry-head")
        yield Static(id="entry-note")
        if entry.output_file is not None:
            yield Pager(entry.output_file, id="entry-pager")
        else:
            with VerticalScroll(id="entry-inline"):
                yield Static(id="entry-output", markup=False)
        yield KeysFooter()  # every key in sight at 80 columns: a second line when needed

    def on_mount(self) -> None:
        self.load_record()
        pager = self.query("#entry-pager")
        if pager:
            pager.first().focus()

    @work(thread=True, exit_on_error=False)
    def load_record(self) -> None:
        if self.entry.kind != "record":
            return
        try:  # capped, regular files only: a record swapped for a FIFO or a huge file since the listing
            record = load_record(self.entry.path)
        except FileNotFoundError:
            self.app.call_from_thread(self._note, "The record is gone (deleted or pruned).")
            return
        except CacheError as exc:
            self.app.call_from_thread(self._note, f"{exc}.")
            return
        self.app.call_from_thread(self._show_record, record)

    def _note(self, text: str) -> None:
        self.query_one("#entry-note", Static).update(plain(text))  # paths and OS errors

    def _show_record(self, record: dict[str, object]) -> None:
        self.record = record
        code = str(record.get("code") or "")
        self.query_one("#entry-head", Static).update(
            Syntax(visible(code), "python", line_numbers=True, word_wrap=True, background_color="default",
                   theme=code_theme(self)))
        if self.entry.output_file is not None and record.get("stdout_truncated"):
            self._note(MARKER_NOTE.format(total=int(cast(int, record.get("stdout_bytes_total") or 0)),
                                          path=self.entry.output_file))
        elif record.get("stdout_truncated"):
            self._note("The output was cut (see the marker) and the full text was not saved.")
        outputs = self.query("#entry-output")
        if outputs:
            outputs.first(Static).update(plain(str(record.get("output") or "(no output)")))

    def action_copy_path(self) -> None:
        path = str(self.entry.output_file or self.entry.path)
        self.app.copy_to_clipboard(path)
        self.notify(f"Copied {visible(path)}", markup=False)

    async def action_edit(self) -> None:
        """Open the output in the user's editor at the top line on screen: the saved output
        file (the pager's), or for an output kept in the record a text file of it (not the
        record's JSON); the record itself only when it could not be read."""
        pagers = self.query(Pager)
        if pagers:
            line = await pagers.first().line_on_screen()
            self.post_message(OpenInEditor(str(self.entry.output_file or self.entry.path), line))
            return
        output = self.record.get("output")
        if not isinstance(output, str):
            self.post_message(OpenInEditor(str(self.entry.path)))
            return
        try:
            path = await asyncio.to_thread(self._write_output, output)
        except OSError as exc:
            self.notify(visible(f"Could not write the output to a file: {exc}"), severity="error", markup=False)
            return
        self.post_message(OpenInEditor(path, self._inline_line(output)))

    def _write_output(self, output: str) -> str:
        """The record's output in a private temporary text file (removed when the screen
        closes). Blocking."""
        if self._output_copy is None:
            name = re.sub(r"[^A-Za-z0-9_.-]", "_", self.entry.id)[:80]
            handle, self._output_copy = tempfile.mkstemp(prefix=f"hermes-output-{name}-", suffix=".txt")
            os.close(handle)
        Path(self._output_copy).write_text(output, encoding="utf-8", errors="replace")
        return self._output_copy

    def _inline_line(self, output: str) -> int:
        """The 1-based line of ``output`` at the top of the scrolled view (long lines wrap)."""
        view = self.query_one("#entry-inline", VerticalScroll)
        width = max(1, self.query_one("#entry-output", Static).content_size.width)
        top = int(view.scroll_y)
        row = 0
        for number, line in enumerate(output.split("\n"), 1):
            row += max(1, -(-cell_len(line) // width))
            if row > top:
                return number
        return 1

    def on_unmount(self) -> None:
        if self._output_copy is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._output_copy)

    def action_help(self) -> None:
        show_help(self, "pager")

    @work(exit_on_error=False)
    async def action_delete(self) -> None:
        if await confirm_and_delete(self, self.entry):
            self.app.pop_screen()


class CacheBrowser(Screen[None]):
    """Every saved output, newest first, filtered as you type, updated live."""

    DEFAULT_CSS = """
    CacheBrowser #cache-title { width: 1fr; height: auto; max-height: 3; padding: 0 1; background: $panel; }
    CacheBrowser #cache-filter { margin: 0 0; }
    CacheBrowser #cache-header { height: 1; text-style: bold; color: $primary; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Back", id="cache-back"),
        Binding("ctrl+s", "sort", "Sort", id="cache-sort"),
        Binding("ctrl+f", "focus_filter", "Filter", id="cache-filter"),
        Binding("ctrl+d", "delete", "Delete", id="cache-delete"),
        Binding("f1", "help", "Help", id="cache-help"),
    ]

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = folder
        self.entries: list[CacheEntry] = []
        self.shown: list[CacheEntry] = []
        self.sort = "time"
        self.loaded_in: float | None = None

    def compose(self) -> ComposeResult:
        yield Label(plain(f"Saved outputs · {self.folder}"), id="cache-title")
        yield Input(placeholder="filter: text, or status:error session:NAME since:2d", id="cache-filter")
        columns = EntryList(WIDTHS, id="cache-table")
        yield Static(columns.format(COLUMNS), id="cache-header")
        yield columns
        yield KeysFooter()  # every key in sight at 80 columns: a second line when needed

    def on_mount(self) -> None:
        self.query_one(EntryList).focus()
        self.reload()
        self.watch_folder()

    @work(exclusive=True, group="cache-scan", thread=True, exit_on_error=False)
    def reload(self) -> None:
        started = time.perf_counter()
        entries = scan(self.folder)
        self.app.call_from_thread(self._loaded, entries, time.perf_counter() - started)

    @work(exclusive=True, group="cache-watch", exit_on_error=False)
    async def watch_folder(self) -> None:
        """Live: another process (Hermes Agent, a second app) writes here too."""
        from watchfiles import awatch

        await asyncio.to_thread(self.folder.mkdir, parents=True, exist_ok=True)
        async for _ in awatch(self.folder, debounce=200, step=50, recursive=False):
            self.reload()

    def _loaded(self, entries: list[CacheEntry], seconds: float) -> None:
        self.entries = entries
        self.loaded_in = seconds
        self._fill()

    def _fill(self) -> None:
        try:
            text, options = parse_filter(self.query_one("#cache-filter", Input).value)
        except ValueError as exc:
            self.query_one("#cache-title", Label).update(plain(f"filter: {exc}"))
            return
        shown = [e for e in self.entries if e.matches(text, **options)]  # type: ignore[arg-type]
        key = {"time": lambda e: -e.when, "size": lambda e: -e.size, "status": lambda e: (e.status or "", -e.when),
               "session": lambda e: (e.session or "", -e.when)}[self.sort]
        shown.sort(key=key)
        selected = self._selected_id()
        self.shown = shown
        # A session id longer than its column shows as a prefix no other listed one shares.
        sessions = unique_prefixes((e.session or "—" for e in shown), WIDTHS[2])
        table = self.query_one(EntryList)
        widths = (*WIDTHS[:2], max([WIDTHS[2], *map(len, sessions.values())]), *WIDTHS[3:])
        if widths != table.widths:
            table.widths = widths
            self.query_one("#cache-header", Static).update(table.format(COLUMNS))
        rows: list[tuple[str, ...]] = [
            (datetime.fromtimestamp(e.when).strftime("%Y-%m-%d %H:%M:%S"), e.status or e.kind, sessions[e.session or "—"],
             e.kernel or "—", human_size(e.size, " "), e.id, e.title) for e in shown]
        index = next((i for i, e in enumerate(shown) if e.id == selected), 0) if selected else 0
        table.set_rows(rows, cursor=index)
        self.query_one("#cache-title", Label).update(plain(
            f"Saved outputs · {self.folder} · {len(shown):,} of {len(self.entries):,} · sorted by {self.sort}"))

    def _selected_id(self) -> str | None:
        cursor = self.query_one(EntryList).cursor
        return self.shown[cursor].id if 0 <= cursor < len(self.shown) else None

    @on(Input.Changed, "#cache-filter")
    def _filter(self) -> None:
        self._fill()

    @on(Input.Submitted, "#cache-filter")
    def _to_table(self) -> None:
        self.query_one(EntryList).focus()

    @on(EntryList.Selected)
    def _open(self, event: EntryList.Selected) -> None:
        if 0 <= event.index < len(self.shown):
            self.app.push_screen(EntryScreen(self.shown[event.index]))

    def action_sort(self) -> None:
        self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]
        self._fill()

    def action_focus_filter(self) -> None:
        self.query_one("#cache-filter", Input).focus()

    def action_close(self) -> None:
        self.app.pop_screen()

    def action_help(self) -> None:
        show_help(self, "browser")

    @work(exit_on_error=False)
    async def action_delete(self) -> None:
        cursor = self.query_one(EntryList).cursor
        if not 0 <= cursor < len(self.shown):
            return
        if await confirm_and_delete(self, self.shown[cursor]):
            self.reload()
