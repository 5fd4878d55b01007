"""Driving the app with Textual's pilot: its sizes, waiting, typing, what is on screen."""

from __future__ import annotations

import asyncio
import contextlib
import io
import time
from collections.abc import Iterator
from pathlib import Path

from rich.console import Console
from textual.app import App
from textual.widget import Widget

from hermes_tui.tui.app import HermesApp
from hermes_tui.tui.screens.approval import ApprovalScreen
from hermes_tui.tui.screens.main import TopBar
from hermes_tui.tui.widgets.conversation import PromptInput, RunBlock, Transcript

from conftest import strict_config


SIZE = (140, 40)


SMALL = (80, 24)


async def wait_until(pilot, predicate, timeout: float = 15.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await pilot.pause(0.05)


def log_text(app: HermesApp) -> str:
    return "\n".join(app.query_one("#output-log").lines)


async def submit(pilot, app: HermesApp, code: str) -> None:
    prompt = app.query_one(PromptInput)
    prompt.focus()
    prompt.insert(code)
    prompt.move_cursor(prompt.document.end)
    await pilot.press("enter")


def dialog_ready(app: HermesApp) -> bool:
    """The approval dialog is up and takes answers (it ignores keys for its first half second)."""
    return isinstance(app.screen, ApprovalScreen) and app.screen.armed


def blocks(app: HermesApp) -> list[RunBlock]:
    return list(app.query(RunBlock))


def make_app(hermes_home: Path, tmp_path: Path, yaml_text: str = "") -> HermesApp:
    """The app with approvals.mode strict (every terminal() call asks) unless the text sets a mode."""
    return HermesApp(strict_config(yaml_text), cwd=str(tmp_path), home=hermes_home)


async def run(pilot, app: HermesApp, code: str) -> None:
    count = len(blocks(app))
    await submit(pilot, app, code)
    await wait_until(pilot, lambda: len(blocks(app)) == count + 1 and blocks(app)[-1].status == "success")


def screen_text(app: HermesApp) -> str:
    """What the terminal shows now, as plain text (the screenshot's characters)."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, color_system=None,
                      record=True, legacy_windows=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text()


async def shows_literally(pilot, app: HermesApp, *texts: str, timeout: float = 5.0) -> None:
    """Each of ``texts`` is on the screen as it is (waiting up to ``timeout`` for a redraw)."""
    deadline = time.monotonic() + timeout
    while True:
        assert app.is_running
        shown = screen_text(app)
        missing = [text for text in texts if text not in shown]
        if not missing:
            return
        assert time.monotonic() < deadline, f"{missing[0]!r} is not on the screen:\n{shown}"
        await pilot.pause(0.05)


def burst(app: App, text: str) -> None:
    """Keys as a fast typist (or a terminal's paste-less burst) sends them: all queued at once,
    none waiting for the one before to be handled (``pilot.press`` waits for idle between keys,
    which hides the race)."""
    from textual import events
    from textual.keys import _character_to_key

    for char in text:
        key = char if char.isalnum() else _character_to_key(char)
        event = events.Key(key, char)
        event.set_sender(app)
        app._driver.send_message(event)


class ConversationApp(App[None]):
    def compose(self):
        from hermes_tui.tui.widgets.conversation import ConversationPane

        yield ConversationPane("hint", id="conversation")


@contextlib.contextmanager
def layouts_asked() -> Iterator[list[Widget]]:
    """The widgets that ask for a layout of the screen (``refresh(layout=True)``) meanwhile."""
    layouts: list[Widget] = []
    original = Widget.refresh

    def spy(self, *regions, **kwargs):
        if kwargs.get("layout"):
            layouts.append(self)
        return original(self, *regions, **kwargs)

    Widget.refresh = spy  # type: ignore[method-assign]
    try:
        yield layouts
    finally:
        Widget.refresh = original  # type: ignore[method-assign]


def topbar(app: HermesApp) -> str:
    return app.query_one(TopBar).render().plain


def transcript(app: HermesApp) -> Transcript:
    return app.main.query_one("#transcript", Transcript)


async def filled(pilot, app: HermesApp, count: int = 60, marks: dict[int, str] | None = None) -> Transcript:
    """The transcript with ``count`` notes (note N says ``marks[N]`` too), scrolled to its end."""
    await wait_until(pilot, lambda: app.agent is not None)
    conversation = app.main.conversation
    for index in range(count):
        conversation.add_note(f"note {index} {(marks or {}).get(index, '')}")
    view = transcript(app)
    await wait_until(pilot, lambda: view.max_scroll_y > 0 and view.scroll_y == view.max_scroll_y)
    return view
