"""The conversation pane: messages, streamed replies, tool calls, notes, and the input.

With a model, Enter sends the message (Ctrl+J adds a line). Without one, what you type is
Python for the session kernel (Enter runs it once it is a complete statement, as in the
Python REPL). ``!cmd`` runs a terminal command through the approvals; ``/`` starts a command.
Up/Down recall earlier inputs and Ctrl+R searches them (widgets/history_search.py), Tab
completes commands and Python names (widgets/completion.py), and a big paste is a
placeholder until it is sent (widgets/paste.py).

The pane draws the agent's events (:meth:`ConversationPane.show_event`): it keeps which
block a streaming reply or a running tool call is drawn in.
"""

from __future__ import annotations

import asyncio
import codeop
from contextlib import AbstractContextManager
import importlib.util
import re
import time
from typing import TYPE_CHECKING, Any, ClassVar

from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.text import Text
from textual import events
from textual.app import ComposeResult, RenderResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.geometry import Size
from textual.message import Message
from textual.scrollbar import ScrollBar
from textual.widgets import Label, Static, TextArea

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
from hermes_tui.tui.commands import PYTHON_PREFIX
from hermes_tui.base.units import human_size, plural
from hermes_tui.tui.widgets.completion import (
    Candidate,
    CompletionList,
    asks_kernel,
    common_prefix,
    insertable,
    name_candidates,
    slash_candidates,
    slash_prefix,
    word_before,
)
from hermes_tui.tui.widgets.delegate import DelegateBlock
from hermes_tui.tui.widgets.focus_frame import FocusFrame
from hermes_tui.tui.widgets.history_search import HistorySearch, HistorySearchBar, InputHistory
from hermes_tui.tui.widgets.messages import OpenEntry
from hermes_tui.tui.widgets.paste import Pastes, is_big, normalise, remember_shown, shown_for
from hermes_tui.tui.widgets.safe import plain, visible

if TYPE_CHECKING:
    from collections.abc import Callable

    from textual.widget import AwaitMount, Widget
    from textual.widgets.text_area import Location
    from textual.widgets import Markdown

    from hermes_tui.runtime.models import ExecResult
    from hermes_tui.tui.widgets.reply import ReplyBlock

MAX_BLOCKS = 200
"""Blocks kept in the transcript (older ones are pruned: memory stays bounded)."""
PAGE_SETTLE = 0.3
"""Seconds for a page of a stored session to render (replies' Markdown) before it is measured."""
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
    Chat mode (a model is set): Enter sends; Ctrl+J adds a line.

    Up on the first line (Down on the last) walks the inputs of this and earlier sessions,
    keeping what was being typed; Ctrl+R searches them. ``/`` at the start lists the commands;
    Tab completes a command, or a Python name, attribute, dict key or path (in a string) from
    the session kernel. Spaces typed at the start of an auto-indented line are taken as its
    indent (:meth:`_absorbs_space`). A paste of more than
    20 lines shows as a ``[pasted N lines]`` token and is sent whole."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "history_search", "Search history", show=False, id="history-search"),
        # The transcript scrolls from the input, which keeps the focus (issue 32): PageUp/PageDown
        # always (a page of a 12-line input is rarely wanted), Ctrl+Home/Ctrl+End always, and
        # Home/End when the input is empty (in typed text they move the cursor, as before).
        Binding("pageup", "transcript('page_up')", "Scroll up", show=False, id="transcript-page-up"),
        Binding("pagedown", "transcript('page_down')", "Scroll down", show=False, id="transcript-page-down"),
        Binding("ctrl+home", "transcript('top')", "Top", show=False, id="transcript-top"),
        Binding("ctrl+end", "transcript('end')", "End", show=False, id="transcript-end"),
        Binding("home", "home_or_top", "Line start", show=False, id="input-home"),
        Binding("end", "end_or_bottom", "Line end", show=False, id="input-end"),
        Binding("ctrl+f", "find", "Find", id="conversation-find"),
    ]

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

    class NamesWanted(Message):
        """Tab on a Python name: whoever runs the kernel answers with :meth:`reply` (the idle
        session kernel's variables, or None when it is busy or there is none)."""

        def __init__(self, prompt: PromptInput, prefix: str) -> None:
            super().__init__()
            self.prompt = prompt
            self.prefix = prefix
            self.state = (prompt.text, prompt.cursor_location)
            """The input when Tab was pressed: an answer that comes after more typing is dropped."""

        def reply(self, names: list[dict[str, object]] | None) -> None:
            self.prompt.offer_names(self, names)

    class CompletionsWanted(Message):
        """Tab after ``a.b.``, in ``d["`` or in a string: whoever runs the kernel answers with
        :meth:`reply` (the idle session kernel's completions of :attr:`text`, the input left of
        the cursor, or None when it is busy or there is none)."""

        def __init__(self, prompt: PromptInput, text: str) -> None:
            super().__init__()
            self.prompt = prompt
            self.text = text
            self.state = (prompt.text, prompt.cursor_location)
            """The input when Tab was pressed: an answer that comes after more typing is dropped."""

        def reply(self, items: list[dict[str, object]] | None) -> None:
            self.prompt.offer_completions(self, items)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.input_history = InputHistory()
        """Previous inputs (the app loads the stored ones and stores new ones)."""
        self.pastes = Pastes()
        self._search: HistorySearch | None = None
        self._completions: CompletionList | None = None
        self._search_bar: HistorySearchBar | None = None
        self._names: list[Candidate] = []
        self._start: Location = (0, 0)
        """Where the text the names popup completes starts (it narrows as more is typed)."""
        self._empty_ok = False
        """The names popup stays open with nothing typed after :attr:`_start` (``os.``)."""
        self._indent_credit: tuple[Location, int] | None = None
        """After an auto-indent: where the cursor was left, and how many typed spaces are still
        taken as that indent (not added to it)."""
        self._slash_closed = False

    def on_mount(self) -> None:
        # Hidden until used: mounted right after the first frame (issue 20); until then a key
        # that would open them is handled as if they were closed.
        self.call_after_refresh(self._popups_ready)

    def _popups_ready(self) -> None:
        self._mount_popups()
        self._refresh_popup()  # a "/" typed before the first frame opens its popup now

    def _mount_popups(self) -> CompletionList | None:
        """The completion popup (mounted now, with the search bar, if it is not yet)."""
        # (Not once the app is closing: a quit right after the first frame mounts nothing.)
        if self.parent is not None and self.parent.is_attached and self._completions is None:
            self._completions = CompletionList(self, id="prompt-completions")
            self._search_bar = HistorySearchBar(id="prompt-search")
            self.parent.mount(self._completions, self._search_bar, before=self)
        return self._completions

    @staticmethod
    def _handled(event: events.Key) -> None:
        event.stop()
        event.prevent_default()

    _key_seen: events.Key | None = None
    """The last key this input was sent (:meth:`saw`)."""

    def saw(self, event: events.Key) -> bool:
        """True when ``event`` was sent to this input (not to a pane it bubbled up from)."""
        return event is self._key_seen

    def take_key(self, event: events.Key) -> None:
        """A key sent to another pane that reached the screen once an earlier key of the same
        burst had moved the focus here (:meth:`MainScreen.on_key`): handled as if typed here
        (Enter sends, Tab completes, a key this input binds reaches its binding). Sent again,
        from the app as the terminal's keys are, to this input's own queue: the keys after it
        follow it there, in order, and what the input posts on it (:class:`Submitted`) is its
        own and bubbles up to the app."""
        key = events.Key(event.key, event.character)
        key.set_sender(self.app)
        self.post_message(key)

    async def _on_key(self, event: events.Key) -> None:
        self._key_seen = event
        self.last_key_at = time.monotonic()
        if self._search is not None and self._search_key(event):
            return
        popup = self._completions
        if popup is not None and popup.active:
            if event.key in ("up", "down"):
                self._handled(event)
                popup.move(-1 if event.key == "up" else 1)
                return
            if event.key == "tab" or (event.key == "enter" and self._completes_something()):
                self._handled(event)
                self.accept_completion()
                return
            if event.key == "escape":
                self._handled(event)
                self._slash_closed = popup.kind == "slash"
                popup.close()
                return
            if not event.is_printable and event.key != "backspace":
                popup.close()
        if event.key == "escape" or (event.key == "ctrl+c" and not self.selected_text):
            # Esc, or Ctrl+C with nothing selected (with a selection it copies): interrupt, as
            # in a terminal. Ctrl+C never offers to quit; Ctrl+Q quits.
            event.stop()
            event.prevent_default()
            self.post_message(self.StopRequested())
            return
        if self._absorbs_space(event):
            self._handled(event)
            return
        if event.key in ("up", "down") and self._walk_history(event.key == "up"):
            self._handled(event)
            return
        if event.key == "tab" and self._tab():
            self._handled(event)
            return
        if event.key == "ctrl+j" and self.chat:
            # A new line; in a ``>>>`` input indented as Python mode's Enter does (``if x:``: 4 more).
            event.stop()
            event.prevent_default()
            code = self._code_before_cursor() if self.python_prefixed else None
            indent = next_indent(code) if code else ""
            self.insert("\n" + indent)
            self._indent_credit = (self.cursor_location, len(indent)) if indent else None
            return
        if event.key == "enter":
            end = (self.document.line_count - 1, len(self.document[self.document.line_count - 1]))
            text = self.text
            pasted = self.pastes.has_tokens(text)
            if not self.chat and "\n" in text and not text.rsplit("\n", 1)[1].strip():
                text = text.rsplit("\n", 1)[0] + "\n"  # Enter on an empty (indented) line ends the block
            ready = bool(text.strip()) if self.chat or pasted else is_complete(text)
            if (self.cursor_location == end or self.chat) and ready:
                event.stop()
                event.prevent_default()
                shown = text.rstrip("\n")
                text = self.pastes.expand(shown).rstrip("\n")  # a paste runs whole
                if self.chat:
                    text = text.lstrip()  # a message's leading spaces (or a Tab's) never reach the model
                if text != shown:
                    remember_shown(text, shown)
                if not self.chat and not text.lstrip().startswith("/"):
                    self.hold_frames()
                self.clear()
                self.pastes.clear()
                self.input_history.add(text)
                # The keys of a sent input are done: a dialog its run opens says "you were
                # typing" only for keys typed after it (they would otherwise be answers).
                self.last_key_at = float("-inf")
                self.post_message(self.Submitted(text))
                return
            if not self.chat and not self.text.lstrip().startswith(("!", "/")):
                event.stop()
                event.prevent_default()
                indent = next_indent(self.document[self.cursor_location[0]][:self.cursor_location[1]])
                self.insert("\n" + indent)
                self._indent_credit = (self.cursor_location, len(indent)) if indent else None
                return
        await super()._on_key(event)
        if event.is_printable:
            self._refresh_popup()

    # -- the frame after Enter --------------------------------------------------------------

    _held: AbstractContextManager[None] | None = None
    _held_size: Size | None = None

    def hold_frames(self) -> None:
        """Draw nothing until the run just sent has its block (:meth:`release_frames`), or
        for HOLD_SECONDS at most: the input cleared and the run's block then come in one
        frame, drawn at once and before the run starts. Drawn on its own, the cleared input
        would take the frame that comes at once, and the block's would wait for Textual's
        next tick of 60 a second, 20-30 ms into the run, while the run's output wants the CPU
        (issue 20)."""
        if self._held is None:
            self._held_size = self.app.size
            self._held = self.app.batch_update()
            self._held.__enter__()
            self.set_timer(HOLD_SECONDS, self.release_frames)

    def on_unmount(self) -> None:
        self.release_frames()

    def release_frames(self) -> None:
        """Draw again (the run's block is mounted, or it is queued, or the hold timed out)."""
        held, self._held = self._held, None
        if held is not None:
            held.__exit__(None, None, None)
            if self.app.size != self._held_size:  # resized meanwhile: that frame was not drawn
                self.app.screen.refresh()

    # -- history --------------------------------------------------------------------------

    def _set_text(self, text: str, cursor: Location | None = None) -> None:
        """Replace what is typed (undoable), the cursor at ``cursor`` (default: the end)."""
        self.replace(text, (0, 0), self.document.end, maintain_selection_offset=False)
        self.move_cursor(cursor or self.document.end)

    def _walk_history(self, older: bool) -> bool:
        """Up on the first line / Down on the last: the older / newer input. Elsewhere (or at
        either end of the history) the key moves the cursor as usual."""
        if not self.selection.is_empty:
            return False
        row = self.cursor_location[0]
        if row != (0 if older else self.document.line_count - 1):
            return False
        entry = self.input_history.back(self.text) if older else self.input_history.forward(self.text)
        if entry is None:
            return False
        # Up leaves the cursor on the first line, Down on the last: pressing on walks further.
        first = entry.split("\n", 1)[0]
        self._set_text(entry, (0, len(first)) if older else None)
        return True

    def action_history_search(self) -> None:
        """Ctrl+R: search the history, newest first (Ctrl+R again: the next older match)."""
        if self._search is None:
            if self._completions is not None:
                self._completions.close()
            self._search = HistorySearch(self.input_history)
            self._show_search()
        else:
            self._show_search(failed=not self._search.older())

    def _show_search(self, failed: bool = False) -> None:
        self._mount_popups()
        if self._search_bar is not None and self._search is not None:
            self._search_bar.show(self._search, failed)
            self._search_bar.add_class("-active")

    def _search_key(self, event: events.Key) -> bool:
        """A key during a Ctrl+R search: True when the search took it."""
        search = self._search
        assert search is not None
        key = event.key
        if key == "ctrl+r":
            return False  # the binding: the next older match
        if key in ("escape", "ctrl+c", "ctrl+g"):
            self._end_search(accept=False)
        elif key == "enter":
            self._end_search(accept=True)
        elif key == "backspace":
            search.type(search.query[:-1])
            self._show_search()
        elif key == "up":
            self._show_search(failed=not search.older())
        elif key == "down":
            search.newer()
            self._show_search()
        elif event.is_printable and event.character:
            search.type(search.query + event.character)
            self._show_search()
        else:  # another key (Left, Home, Tab...): take the match and let the key act on it
            self._end_search(accept=True)
            return False
        self._handled(event)
        return True

    def _end_search(self, accept: bool) -> None:
        """Close the search: Enter puts the match in the input, Esc leaves the input as it was."""
        search, self._search = self._search, None
        if self._search_bar is not None:
            self._search_bar.remove_class("-active")
        if accept and search is not None and search.match is not None:
            self.input_history.go(search.match, self.text)
            self._set_text(self.input_history.entries[search.match])

    # -- completion -----------------------------------------------------------------------

    @property
    def python_prefixed(self) -> bool:
        """A model answers and the input starts with ``>>>``: the rest is Python for the session
        kernel (:func:`hermes_tui.tui.commands.python_of`)."""
        return self.chat and self.text.lstrip().startswith(PYTHON_PREFIX)

    @property
    def python(self) -> bool:
        """What is typed is Python: all input without a model, a ``>>>`` input with one. Tab
        completes and new lines are indented as Python only then."""
        return not self.chat or self.python_prefixed

    def _code_before_cursor(self) -> str | None:
        """The cursor's line left of the cursor as the kernel will read it: in a ``>>>`` input
        without its prompt (``>>>`` and one space on its first line, a pasted REPL prompt
        ``>>> ``/``... `` starting a later one, as :func:`~hermes_tui.tui.commands.python_of` takes
        them off). Only the start is cut, so offsets counted back from the cursor hold in the
        input too. None when the cursor is in the prompt itself."""
        row, column = self.cursor_location
        line = self.document[row][:column]
        if not self.python_prefixed:
            return line
        full = self.document[row]
        first = next(index for index in range(self.document.line_count) if self.document[index].strip())
        if row == first:
            prompt = len(full) - len(full.lstrip()) + len(PYTHON_PREFIX)
            prompt += full[prompt:prompt + 1] == " "
        else:
            prompt = next((len(p) for p in (">>> ", "... ", ">>>", "...") if full.startswith(p)), 0)
        return line[prompt:] if column >= prompt else None

    def _tab(self) -> bool:
        """Tab: complete a command or a Python name; False where Tab indents as before. In an
        empty input it does nothing (it used to put in spaces nobody sees)."""
        if not self.selection.is_empty:
            return False
        if not self.text.strip():
            return True
        at_end = self.cursor_location == self.document.end
        prefix = slash_prefix(self.text) if at_end else None
        if prefix is not None:
            found = slash_candidates(prefix)
            self._slash_closed = False
            if len(found) == 1:
                self._set_text(found[0].value + " ")
            elif found and (popup := self._mount_popups()) is not None:
                popup.offer("slash", found)
            return True
        if not self.python or self.text.lstrip().startswith(("!", "/")):
            return False  # a message to the model: Tab indents as before
        line = self._code_before_cursor()
        if line is None:
            return True  # in the ``>>>`` itself: nothing to complete
        if asks_kernel(line):  # an attribute, a dict key, a path in a string
            self.post_message(self.CompletionsWanted(self, line))
            return True
        word = word_before(line)
        if word is None:
            return True  # after "." that is no attribute (1.): nothing to complete, and no indent
        if not word:
            return False  # Tab at the start of a line or after a space indents
        self.post_message(self.NamesWanted(self, word))
        return True

    def offer_names(self, request: PromptInput.NamesWanted, names: list[dict[str, object]] | None) -> None:
        """The answer to :class:`NamesWanted`: one match completes, several show the popup."""
        if (self.text, self.cursor_location) != request.state or self._search is not None:
            return  # typed on since Tab: the answer is stale
        row, column = self.cursor_location
        self._offer(name_candidates(request.prefix, names), (row, column - len(request.prefix)), empty_ok=False)

    def offer_completions(self, request: PromptInput.CompletionsWanted,
                          items: list[dict[str, object]] | None) -> None:
        """The answer to :class:`CompletionsWanted`: one match completes (a dict key with its
        closing ``"]``), several show the popup."""
        if (self.text, self.cursor_location) != request.state or self._search is not None or not items:
            return
        found = [Candidate(str(item.get("name", "")), str(item.get("type", "")), str(item.get("close", "")))
                 for item in items if insertable(item)]
        if not found:
            return
        replace = items[0].get("replace", 0)
        row, column = self.cursor_location
        size = replace if isinstance(replace, int) and 0 <= replace <= column else 0
        self._offer(found, (row, column - size), empty_ok=True)

    def _offer(self, found: list[Candidate], start: Location, empty_ok: bool) -> None:
        """Complete the text from ``start`` to the cursor: the one match, or the part all
        matches share and the popup of them."""
        self._start, self._empty_ok = start, empty_ok
        if len(found) == 1:
            self._complete_with(found[0])
            return
        popup = self._mount_popups() if found else None
        if popup is None:
            return
        typed = self._token() or ""
        shared = common_prefix([c.value for c in found])
        if len(shared) > len(typed):
            self._replace_token(shared)
        self._names = found
        popup.offer("names", found)

    def _token(self) -> str | None:
        """What is typed from where the completion started to the cursor (None when the cursor
        left that line or went back past the start)."""
        row, column = self.cursor_location
        start_row, start = self._start
        if row != start_row or column < start:
            return None
        return self.document[row][start:column]

    def _replace_token(self, value: str) -> None:
        row, column = self.cursor_location
        start = min(self._start[1], column) if self._start[0] == row else column
        result = self.replace(value, (row, start), (row, column), maintain_selection_offset=False)
        self.move_cursor(result.end_location)

    def _complete_with(self, chosen: Candidate) -> None:
        """Put ``chosen`` in place of the typed text, and its ``close`` unless it follows."""
        self._replace_token(chosen.value)
        if chosen.close:
            row, column = self.cursor_location
            if not self.document[row][column:].startswith(chosen.close[0]):
                self.insert(chosen.close)

    def _completes_something(self) -> bool:
        """Enter on the popup completes unless the highlighted item is what is typed already."""
        popup = self._completions
        chosen = popup.highlighted_candidate if popup is not None else None
        if popup is None or chosen is None:
            return False
        typed = self.text.strip() if popup.kind == "slash" else self._token()
        return typed != chosen.value

    def accept_completion(self, index: int | None = None) -> None:
        """Put the highlighted candidate (or item ``index``) in the input; closes the popup."""
        popup = self._completions
        if popup is None or not popup.active:
            return
        if index is not None:
            popup.highlighted = index
        chosen, kind = popup.highlighted_candidate, popup.kind
        popup.close()
        if chosen is not None:
            if kind == "slash":
                self._set_text(chosen.value + " ")
            elif self._token() is not None:
                self._complete_with(chosen)
        self.focus()

    def _refresh_popup(self) -> None:
        """After typing: the commands popup follows a ``/`` being typed; the names popup narrows."""
        if self._search is not None:
            return
        text = self.text
        prefix = slash_prefix(text) if self.cursor_location == self.document.end else None
        if prefix is not None:
            if not self._slash_closed and (popup := self._mount_popups()) is not None:
                popup.offer("slash", slash_candidates(prefix))
            return
        if not text.startswith("/"):
            self._slash_closed = False
        popup = self._completions
        if popup is None:
            return
        if popup.kind == "names":
            typed = self._token()
            gone = typed is None or (not typed and not self._empty_ok)
            popup.offer("names", [] if typed is None or gone else [c for c in self._names if c.value.startswith(typed)])
        elif popup.active:
            popup.close()

    # -- editing --------------------------------------------------------------------------

    def _absorbs_space(self, event: events.Key) -> bool:
        """After Enter auto-indents a line (``if x:`` then Enter: 4 spaces), spaces typed at
        the start of that line are taken as the indent already there, up to its width (the
        cursor stays): a user who types the indent out of habit ends with 4 spaces, not 8.
        More spaces than that indent deeper; any other key ends this."""
        credit, self._indent_credit = self._indent_credit, None
        if credit is None or event.key != "space" or not self.python or not self.selection.is_empty:
            return False
        at, left = credit
        if left <= 0 or self.cursor_location != at:
            return False
        self._indent_credit = (at, left - 1)
        return True

    def action_delete_left(self) -> None:
        """Backspace; right after a paste's placeholder it deletes the whole placeholder. In
        Python, in a line's leading spaces (an indent), it deletes back to the previous indent
        level (a multiple of 4), as IPython does; elsewhere one character."""
        row, column = self.cursor_location
        before = self.document[row][:column]
        token = self.pastes.token_ending(before) if self.selection.is_empty else None
        if token:
            self.delete((row, column - len(token)), (row, column), maintain_selection_offset=False)
            self.move_cursor((row, column - len(token)))
        elif self.selection.is_empty and self.python and not self.read_only and before and not before.strip(" "):
            level = column - (column % INDENT or INDENT)
            self.delete((row, level), (row, column), maintain_selection_offset=False)
            self.move_cursor((row, level))
        else:
            super().action_delete_left()
        self._refresh_popup()

    async def _on_paste(self, event: events.Paste) -> None:
        """A paste of more than 20 lines goes in as a placeholder (expanded when sent);
        a smaller one is inserted by TextArea's own handler."""
        text = normalise(event.text)
        if self._search is not None:
            event.prevent_default()  # the search takes typed keys, not pastes
            return
        if self.read_only or not is_big(text):
            return
        event.stop()
        event.prevent_default()
        token = self.pastes.add(text, self.text)
        start, end = self.selection
        result = self.replace(token, start, end, maintain_selection_offset=False)
        self.move_cursor(result.end_location)
        self.focus()


    # -- the transcript, from the input -------------------------------------------------------

    def _pane(self) -> ConversationPane | None:
        return next((node for node in self.ancestors if isinstance(node, ConversationPane)), None)

    def action_transcript(self, how: str) -> None:
        """Scroll the transcript (``page_up``, ``page_down``, ``top``, ``end``); the focus stays here."""
        pane = self._pane()
        if pane is not None:
            pane.scroll_transcript(how)

    def action_home_or_top(self) -> None:
        """Home: the start of the line; in an empty input, the top of the transcript."""
        if self.text:
            self.action_cursor_line_start()
        else:
            self.action_transcript("top")

    def action_end_or_bottom(self) -> None:
        """End: the end of the line; in an empty input, the end of the transcript."""
        if self.text:
            self.action_cursor_line_end()
        else:
            self.action_transcript("end")

    def action_find(self) -> None:
        """Ctrl+F: in an empty input, ``/find `` (with the last search, so Ctrl+F again runs it);
        on ``/find TEXT``, search now (again: the next older match), the input kept as it is."""
        pane = self._pane()
        if pane is None:
            return
        text = self.text.strip()
        if text.lower().startswith(FIND_COMMAND) and text[len(FIND_COMMAND):].strip():
            pane.find(text[len(FIND_COMMAND):].strip())
        elif not text or text.lower() == FIND_COMMAND:
            self._set_text(f"{FIND_COMMAND} {pane.find_query}")
        elif pane.find_query:
            pane.find(pane.find_query)
        else:
            self.notify("Ctrl+F searches the conversation: in an empty input it types /find; add the text.")


FIND_COMMAND = "/find"
"""The command Ctrl+F types (hermes_tui.tui.commands runs it)."""

INDENT = 4
"""Spaces per indent level (auto-indent adds one; Backspace in an indent removes one)."""


def next_indent(line: str) -> str:
    """The indentation of the line after ``line`` in Python, as the REPL gives it: one level
    deeper after a line ending in ``:``, the same otherwise (an empty line ends the block)."""
    if not line.strip():
        return ""
    indent = line[:len(line) - len(line.lstrip())]
    return indent + " " * INDENT if line.rstrip().endswith(":") else indent


PREVIEW_LINES = 8
PREVIEW_CHARS = 1000
"""A run's output shows under its block up to this many lines and characters."""


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

    @property
    def content(self) -> Group:
        """What the block draws: its code, status line, warning and first lines of output."""
        return Group(*self._parts())

    def render(self) -> RenderResult:
        return self.content

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        # A block's height is what the layout that found it gave it; Textual's reactive for its
        # new virtual size would lay the whole screen out once more (see Transcript).
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


class QuietScrollBar(ScrollBar):
    """A scrollbar whose new size asks for no second layout of the screen. Textual sets a
    widget's new virtual size as a reactive that lays the whole screen out again; a scrollbar
    has nothing inside to lay out, and the layout that sized it has placed it. The transcript's
    height changes each time Enter shrinks the input, and that second layout came in the run's
    first frames (issue 20)."""

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        return super()._size_updated(size, virtual_size, container_size, layout=False)


class Transcript(VerticalScroll):
    """The scrolled blocks. When the view is at the bottom it stays there as the blocks grow
    (a run's result and warnings, a reply's Markdown); scrolled up, it stays where the user
    put it, until scrolled to the bottom again. Nor does it move while a block of it has the
    focus (the user reads it, or opens it with Enter). Short content stays at the top.

    Following is Textual's anchor: the layout that finds the blocks' new height puts the view
    at their end in the same pass. Scrolled there afterwards, the screen would be laid out and
    drawn a second time for each change, while a run's output wants the CPU (issue 20)."""

    _held_at: float | None = None
    """Where the view was held when a block took the focus (None: not held)."""
    _moved = False
    """The user moved the view while a block held it: it stays put until scrolled to the end."""

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        # Textual sets a container's new virtual size (found by a layout of the screen) as a
        # reactive that asks for a layout again: a second layout of the whole screen for
        # each one needed. The layout that found the size has placed every block (and the
        # view, anchored) at it already.
        changed = super()._size_updated(size, virtual_size, container_size, layout=False)
        long = self.max_scroll_y > 0
        if long and not self.is_anchored and self._held_at is None and not self._moved:
            self.anchor()  # the blocks outgrew the view: follow them from now on
        elif not long and self.is_anchored:
            # Anchored, Textual would draw short content at the bottom of the view.
            self.anchor(False)
            self.scroll_to(y=0, animate=False, immediate=True)
        return changed

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        """The vertical scrollbar, a :class:`QuietScrollBar` (made as Textual makes its own)."""
        if self._vertical_scrollbar is None:
            bar = self._vertical_scrollbar = QuietScrollBar(vertical=True, name="vertical",
                                                            thickness=self.scrollbar_size_vertical)
            bar.display = False
            self.app._start_widget(self, bar)
        return self._vertical_scrollbar

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self._moved and self._held_at is None and new_value >= self.max_scroll_y > 0:
            self._moved = False  # scrolled back to the end: follow it again
            self.anchor()

    def follow_end(self) -> None:
        """Follow the end from now on (a stored session was drawn): anchored once its blocks
        outgrow the view (anchored while short, Textual draws them at the bottom)."""
        self._held_at, self._moved = None, False
        self.anchor(self.max_scroll_y > 0)

    def to_end(self) -> None:
        """Scroll to the end (a block was added, a reply streams), unless a block of it has the
        focus (the user reads it) or the user scrolled it up from the input."""
        if self._held_at is None and not self._moved:
            self.scroll_end(animate=False)

    def stay(self) -> None:
        """The user moves the view (PageUp, /find): it stays where it is put as blocks come,
        until it is scrolled to the end again."""
        if self.max_scroll_y > 0:  # (short, there is nowhere to move: it follows on)
            self.release_anchor()
            self._moved = True

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        if self._held_at is None and self.scroll_y >= self.max_scroll_y:  # following: hold still
            self.release_anchor()
            self._held_at = self.scroll_y

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        if self._held_at is not None:
            self.call_after_refresh(self._let_go)

    def _let_go(self) -> None:
        """The focus left the blocks: follow again, unless the user moved the view meanwhile."""
        focused = self.screen.focused if self.is_attached else None
        if self._held_at is None or (focused is not None and self in focused.ancestors):
            return
        held_at, self._held_at = self._held_at, None
        if self.scroll_y != held_at:
            self._moved = True
        elif self.max_scroll_y > 0:
            self.anchor()


HOLD_SECONDS = 0.05
"""At most this long after Enter, nothing is drawn until the run's block is there."""

HINT_LINES = 2
"""Rows the hint above the input may take."""


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


class ConversationPane(FocusFrame, Vertical):
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
            found = next(((block.text, "the last reply") for block in blocks
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
        """Draw one agent event (they arrive in order, each after it was stored)."""
        if isinstance(event, TurnStarted):
            pending = self._pending.pop(event.turn_id, None)
            if pending is not None:  # it runs now: the placeholder goes
                await pending.remove()
            if event.kind == "message" or event.origin != "user":  # typed Python and !cmd show as their run
                self.add_message(event.text, event.origin)
            if self.busy_hint is not None:
                self.set_hint(self.busy_hint)
        elif isinstance(event, TurnQueued):
            what = "injected message" if event.origin == "injected" else \
                "command" if event.text.startswith("!") else "input"
            block = self._pending[event.turn_id] = PendingBlock(event.turn_id, event.text, what)
            self._append(block)
            self.query_one(PromptInput).release_frames()
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
        elif isinstance(event, ToolStarted) and event.name == "delegate_task":
            self._delegates[event.call_id] = self.add_delegate(event.call_id, event.arguments)
        elif isinstance(event, DelegateProgress):
            block = self._delegates.get(event.call_id)
            if block is None:  # drawn from the store while it ran: a block of its own
                block = self._delegates[event.call_id] = self.add_delegate(event.call_id, {})
            block.update_children(event.children)
        elif isinstance(event, ToolFinished) and event.call_id in self._delegates:
            self._delegates.pop(event.call_id).set_tool_result(event.result)
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
        output = tool_output_note(result)
        if output is not None:
            self._append(output)


def tool_output_note(result: dict[str, object]) -> Static | None:
    """The note under a direct tool call's block: its output, capped to its head and tail
    (None when it printed nothing). Drawn live and when a stored session is drawn again."""
    output = str(result.get("output") or result.get("content") or "")
    if not output:
        return None
    half = MAX_NOTE_CHARS // 2
    return note(output if len(output) <= MAX_NOTE_CHARS else output[:half] + "\n…\n" + output[-half:])


def __getattr__(name: str) -> object:
    """``ReplyBlock`` lives in :mod:`hermes_tui.tui.widgets.reply` (Textual's Markdown and markdown-it
    are imported with the first reply, not before the first frame); still importable from here."""
    if name == "ReplyBlock":
        from hermes_tui.tui.widgets.reply import ReplyBlock

        return ReplyBlock
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
