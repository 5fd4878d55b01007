"""Textual's private hooks, in one place (issue 33): THE list of what hermes-tui uses of
Textual beyond its public API, why, and a check that each is still there.

Most are used for speed (docs/speed.md, issue 20): Textual's public ways lay the whole screen
out again, or wait for its next frame tick, where the app needs neither. ``pyproject.toml`` pins
Textual to the release line they were tested with (:data:`TESTED`); :func:`check` runs at
import and fails with :class:`TextualChanged`, naming the hook, if an upgrade renamed or
removed one or changed the parameters we pass, rather than failing later, deep in a frame.

Our modules call the accessors below (:func:`line_split`, :func:`start_widget`,
:func:`vertical_scrollbar`, :func:`draw_now`, :func:`scroll_update`, :func:`driver_write`,
:func:`event_loop`) instead of reaching into Textual. The hooks that must stay method
overrides or a subclass's own state (``Widget._size_updated``, ``TextArea._on_key``,
``Log._render_line``, ``Log._lines``…) cannot be wrapped: they are checked here all the same,
and each place that uses one says so in a comment pointing here.

This module imports only Textual modules the first frame imports already.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

from textual.app import App
from textual.drivers.linux_driver import LinuxDriver
from textual.screen import Screen
from textual.scrollbar import ScrollBar
from textual.widget import Widget
from textual.widgets import Log, TextArea

if TYPE_CHECKING:
    import asyncio

    from textual.geometry import Size

TESTED = ">=8.2,<8.3"
"""The Textual releases these hooks were tested with (the pin in pyproject.toml)."""


class TextualChanged(ImportError):
    """The installed Textual lacks a private hook hermes-tui relies on (see the module's list)."""


@dataclass(frozen=True)
class Hook:
    """One private name of Textual's that we use."""

    owner: type | ModuleType
    """The Textual class (or module) that defines it."""
    name: str
    kind: Literal["method", "attribute", "function"]
    """``method``: looked up on the class, called or overridden; ``attribute``: instance state
    the owner's ``__init__`` sets; ``function``: a module's function."""
    params: tuple[str, ...]
    """Parameters we pass or our override takes (besides ``self``), checked by name."""
    users: str
    """Which of our modules use it."""
    why: str

    @property
    def label(self) -> str:
        return f"{self.owner.__name__.rpartition('.')[2]}.{self.name}"


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("textual")
    except Exception:  # pragma: no cover
        return "unknown"


def _message(what: str) -> str:
    return (f"hermes-tui does not work with this Textual: {what}. Textual {_version()} is installed; "
            f"hermes-tui is tested with textual{TESTED} (its private hooks: hermes_tui/tui/textual_compat.py).")


def _line_split_module() -> ModuleType:
    try:
        from textual import _line_split
    except ImportError as error:  # pragma: no cover - only with another Textual
        raise TextualChanged(_message("the module textual._line_split is gone")) from error
    return _line_split


HOOKS: tuple[Hook, ...] = (
    # -- the transcript and its blocks: no second layout of the screen per size (issue 20) ---
    Hook(Widget, "_size_updated", "method", ("size", "virtual_size", "container_size", "layout"),
         "widgets/conversation/transcript.py (Transcript, QuietScrollBar), "
         "widgets/conversation/blocks.py (RunBlock): overrides",
         "Textual sets a widget's new virtual size as a reactive that lays the whole screen out "
         "again; the overrides pass layout=False, as the layout that found the size placed them"),
    Hook(Widget, "_vertical_scrollbar", "attribute", (),
         "widgets/conversation/transcript.py (Transcript.vertical_scrollbar), via vertical_scrollbar()",
         "where Widget keeps its vertical scrollbar: the transcript's is a QuietScrollBar, made "
         "as Textual makes its own"),
    Hook(App, "_start_widget", "method", ("parent", "widget"),
         "widgets/conversation/transcript.py, via vertical_scrollbar()",
         "starts a widget that is not mounted as a child (a scrollbar), as Widget does for its own"),
    # -- the main screen: a run's first frame drawn as Enter's frame hold ends (issue 20) -----
    Hook(Screen, "_on_timer_update", "method", (), "screens/main.py (MainScreen.draw_now), via draw_now()",
         "what Textual's frame tick calls to lay out and draw; a tick during the hold drew nothing "
         "and the run's frame waited up to 17 ms for the next"),
    Hook(Widget, "_layout_required", "attribute", (), "screens/main.py, via draw_now()",
         "forces the layout in that draw: the new block's own request is still queued"),
    Hook(App, "_batch_count", "attribute", (), "screens/main.py, via draw_now()",
         "non-zero inside App.batch_update: no draw then"),
    # -- virtual sizes set without a layout of the screen ------------------------------------
    Hook(Widget, "_scroll_update", "method", ("virtual_size",),
         "widgets/output.py (OutputLog), widgets/kernel_table.py (KernelTable), via scroll_update()",
         "what Textual does on a resize: updates the scrollbars for a new virtual size set with "
         "set_reactive (the reactive would lay the whole screen out, each flush of a flood)"),
    # -- the output pane's log: wrapped lines, escapes shown, writes without a layout --------
    Hook(Log, "_render_line", "method", ("y", "scroll_x", "width"), "widgets/output.py (OutputLog): override",
         "draws a row of wrapped lines (Log draws one line a row)"),
    Hook(Log, "_process_line", "method", ("line",), "widgets/output.py (OutputLog): override",
         "every control character shown as an escape (Textual's filter passes ESC, DEL, C1), "
         "plain ASCII lines without regular expressions"),
    Hook(Log, "_prune_max_lines", "method", (), "widgets/output.py (OutputLog): override and call",
         "the wrapped rows' counts pruned with the lines"),
    Hook(Log, "_lines", "attribute", (), "widgets/output.py (OutputLog): the log's raw lines",
         "OutputLog.write and clear do what Log's do, without its layout of the screen"),
    Hook(Log, "_width", "attribute", (), "widgets/output.py (OutputLog)", "the widest line (write, clear)"),
    Hook(Log, "_render_line_cache", "attribute", (), "widgets/output.py (OutputLog)",
         "drawn lines dropped as they change (write, clear, wrap toggled)"),
    Hook(Log, "_updates", "attribute", (), "widgets/output.py (OutputLog.clear)",
         "Log's count of changes, bumped as Log.clear does"),
    Hook(Log, "_clear_y", "attribute", (), "widgets/output.py (OutputLog)",
         "the offset of the text selection's lines (clear, drawing a selection)"),
    Hook(_line_split_module(), "line_split", "function", ("input_string",),
         "widgets/output.py (OutputLog.write), via line_split",
         "splits written data at \\n, \\r\\n and \\r as Log.write does"),
    # -- the input: keys and pastes before TextArea's own handling ---------------------------
    Hook(TextArea, "_on_key", "method", ("event",), "widgets/conversation/prompt.py (PromptInput): override",
         "Enter sends, Tab completes, the history search takes keys; calls TextArea's after"),
    Hook(TextArea, "_on_paste", "method", ("event",), "widgets/conversation/prompt.py (PromptInput): override",
         "a big paste goes in as a placeholder; a small one is left to TextArea's handler, which "
         "Textual runs after ours"),
    # -- the app ------------------------------------------------------------------------------
    Hook(App, "_driver", "attribute", (), "attention.py (Attention.write_to_terminal), via driver_write()",
         "bell and desktop-notification escape sequences written to the terminal; Textual has no "
         "public way to write raw text"),
    # -- the quit: no wait for the key thread (issue 38) --------------------------------------
    Hook(LinuxDriver, "disable_input", "method", (), "quit_driver.py (QuitDriver): override",
         "at quit, does what Textual's does without joining the key thread (up to 0.2 s)"),
    Hook(LinuxDriver, "exit_event", "attribute", (), "quit_driver.py (QuitDriver.disable_input)",
         "the event the key thread stops on"),
    Hook(LinuxDriver, "_disable_mouse_support", "method", (), "quit_driver.py (QuitDriver.disable_input)",
         "the mouse reporting turned off, as Textual's disable_input does"),
    Hook(App, "_exit", "attribute", (), "quit_driver.py (QuitDriver.disable_input)",
         "set by App.exit: a quit, not a suspend (whose key thread must stop before the editor runs)"),
    Hook(App, "_loop", "attribute", (), "app.py (HermesApp._import_refused), via event_loop()",
         "the app's event loop, to post from whichever thread imported a refused module"),
)
"""Every private hook of Textual's that hermes-tui uses."""


def _init_names(owner: type) -> set[str]:
    """The names the ``__init__`` methods of ``owner`` and its bases use."""
    names: set[str] = set()
    for cls in owner.__mro__:
        code = getattr(vars(cls).get("__init__"), "__code__", None)
        if code is not None:
            names.update(code.co_names)
    return names


def problem(hook: Hook) -> str | None:
    """What is wrong with ``hook`` in the installed Textual (None: it is as tested)."""
    if hook.kind == "attribute":
        assert isinstance(hook.owner, type)
        if hook.name in _init_names(hook.owner) or any(hook.name in vars(c) for c in hook.owner.__mro__):
            return None
        return f"{hook.label} (an attribute, used by {hook.users}) is gone"
    found = getattr(hook.owner, hook.name, None)
    if not callable(found):
        return f"{hook.label} (a {hook.kind}, used by {hook.users}) is gone"
    try:
        params = inspect.signature(found).parameters
    except (TypeError, ValueError):  # pragma: no cover
        return f"{hook.label}'s parameters cannot be read"
    missing = [name for name in hook.params if name not in params]
    if missing:
        return f"{hook.label} (used by {hook.users}) no longer takes {', '.join(missing)}"
    return None


def check(hooks: tuple[Hook, ...] = HOOKS) -> None:
    """Raise :class:`TextualChanged` naming the first hook the installed Textual lacks."""
    for hook in hooks:
        what = problem(hook)
        if what is not None:
            raise TextualChanged(_message(what))


check()


# -- the accessors ---------------------------------------------------------------------------

line_split: Callable[[str], list[tuple[str, str]]] = _line_split_module().line_split
"""Data split into (line, ending) pairs at ``\\n``, ``\\r\\n`` and ``\\r``, as ``Log.write`` does."""


def start_widget(app: App[Any], parent: Widget, widget: Widget) -> None:
    """Start ``widget``, which is not mounted as a child of ``parent`` (a scrollbar), as Textual
    starts its own."""
    app._start_widget(parent, widget)


def vertical_scrollbar(widget: Widget, make: Callable[[], ScrollBar]) -> ScrollBar:
    """``widget``'s vertical scrollbar; the first time, ``make()`` makes it (hidden) and it is
    started, where Textual would make its own ``ScrollBar``."""
    bar = widget._vertical_scrollbar
    if bar is None:
        bar = widget._vertical_scrollbar = make()
        bar.display = False
        start_widget(widget.app, widget, bar)
    return bar


def draw_now(screen: Screen[Any]) -> bool:
    """Lay ``screen`` out and draw it now, as Textual's frame tick would (True: drawn; not while
    the screen is not the current one or the app batches its updates)."""
    if screen.is_current and not screen.app._batch_count:
        screen._layout_required = True
        screen._on_timer_update()
        return True
    return False


def scroll_update(view: Widget, size: Size) -> None:
    """Update ``view``'s scrollbars for its new virtual ``size`` (set with ``set_reactive``, so
    that the screen is not laid out again), as Textual does on a resize."""
    view._scroll_update(size)


def driver_write(app: App[Any], text: str) -> None:
    """Write ``text`` to the terminal, raw (nothing when the app has no driver)."""
    driver = app._driver
    if driver is not None:
        driver.write(text)


def event_loop(app: App[Any]) -> asyncio.AbstractEventLoop | None:
    """The app's event loop (None before it runs)."""
    return app._loop
