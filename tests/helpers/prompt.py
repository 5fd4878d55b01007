"""The input with the pilot: typing key by key, the completion popup, runs submitted from it."""

from __future__ import annotations

from hermes_tui.tui.app import HermesApp
from hermes_tui.tui.widgets.completion import CompletionList
from hermes_tui.tui.widgets.conversation import PromptInput

from helpers.pilot import blocks, submit, wait_until


def prompt_of(app: HermesApp) -> PromptInput:
    return app.query_one(PromptInput)


def popup(app: HermesApp) -> CompletionList:
    return app.query_one(CompletionList)


async def type_text(pilot, text: str) -> None:
    """Type ``text`` key by key (what a person does, unlike ``insert``)."""
    for char in text:
        await pilot.press("enter" if char == "\n" else char)


async def run(pilot, app: HermesApp, code: str) -> None:
    """Submit Python and wait for its run to end."""
    count = len(blocks(app))
    await submit(pilot, app, code)
    await wait_until(pilot, lambda: len(blocks(app)) > count and blocks(app)[-1].status != "running")


async def ready(pilot, app: HermesApp) -> PromptInput:
    """The input focused, once the session is open (the stored history is loaded by then)."""
    await wait_until(pilot, lambda: app._session_ready.is_set())
    prompt = prompt_of(app)
    prompt.focus()
    await pilot.pause()
    return prompt
