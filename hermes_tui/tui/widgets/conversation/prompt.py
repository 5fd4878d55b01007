"""The conversation's input (:class:`PromptInput`).

With a model, Enter sends the message (Ctrl+J adds a line). Without one, what you type is
Python for the session kernel (Enter runs it once it is a complete statement, as in the
Python REPL). ``!cmd`` runs a terminal command through the approvals; ``/`` starts a command.
Up/Down recall earlier inputs and Ctrl+R searches them (tui/widgets/history_search.py), Tab
completes commands and Python names (tui/widgets/completion.py), and a big paste is a
placeholder until it is sent (tui/widgets/paste.py). After Enter the screen's frames are held
until the run's block is there (:meth:`PromptInput.hold_frames`).
"""

from __future__ import annotations

import codeop
from contextlib import AbstractContextManager
import time
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.widget import Widget
from textual.widgets import TextArea

from hermes_tui.tui.commands import PYTHON_PREFIX
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
from hermes_tui.tui.widgets.history_search import HistorySearch, HistorySearchBar, InputHistory
from hermes_tui.tui.widgets.paste import Pastes, is_big, normalise, remember_shown

if TYPE_CHECKING:
    from textual.widgets.text_area import Location

HOLD_SECONDS = 0.05
"""At most this long after Enter, nothing is drawn until the run's block is there."""
FIND_COMMAND = "/find"
"""The command Ctrl+F types (hermes_tui.tui.commands runs it)."""
INDENT = 4
"""Spaces per indent level (auto-indent adds one; Backspace in an indent removes one)."""


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


def next_indent(line: str) -> str:
    """The indentation of the line after ``line`` in Python, as the REPL gives it: one level
    deeper after a line ending in ``:``, the same otherwise (an empty line ends the block)."""
    if not line.strip():
        return ""
    indent = line[:len(line) - len(line.lstrip())]
    return indent + " " * INDENT if line.rstrip().endswith(":") else indent


class TranscriptHost:
    """What the input asks of the pane it sits in (:class:`~.pane.ConversationPane`, whose base
    this is): to scroll its transcript, and to find in it. The input finds that pane among its
    ancestors by this class; the pane's module imports the input's, not the other way round."""

    find_query = ""
    """The text /find (or Ctrl+F) looked for last."""

    def scroll_transcript(self, how: str) -> None:
        raise NotImplementedError

    def find(self, query: str) -> bool:
        raise NotImplementedError


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
        parent = self.parent  # a container or the screen: a widget
        if isinstance(parent, Widget) and parent.is_attached and self._completions is None:
            self._completions = CompletionList(self, id="prompt-completions")
            self._search_bar = HistorySearchBar(id="prompt-search")
            parent.mount(self._completions, self._search_bar, before=self)
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

    async def _on_key(self, event: events.Key) -> None:  # TextArea's private hook (tui/textual_compat.py)
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

    async def _on_paste(self, event: events.Paste) -> None:  # TextArea's private hook (tui/textual_compat.py)
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

    def _pane(self) -> TranscriptHost | None:
        return next((node for node in self.ancestors if isinstance(node, TranscriptHost)), None)

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
