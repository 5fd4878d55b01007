"""The transcript follows its newest block (and a last block that grows) with no second layout
of the screen.

A layout of the screen redraws every widget on it (the kernels table included). Each run typed
in the conversation used to lay it out twice per change: once for the change, once more because
Textual set the blocks' new height as a reactive that asked again, and once more to scroll to the
end. Those layouts ran while the run's output wanted the CPU.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from hermes_tui.tui.widgets.conversation import ConversationPane, PromptInput

from helpers.pilot import filled, make_app, wait_until
from helpers.pilot import layouts_asked
from helpers.pilot import ConversationApp, SMALL


def at_end(transcript) -> bool:
    return transcript.max_scroll_y > 0 and transcript.scroll_y == transcript.max_scroll_y


async def longer_than_the_view(app: ConversationApp, pilot, notes: int = 12):
    """The pane and its transcript, holding ``notes`` notes (more than the view shows), at its end."""
    pane = app.query_one(ConversationPane)
    transcript = pane.query_one("#transcript")
    for n in range(notes):
        pane.add_note(f"note {n}")
    await wait_until(pilot, lambda: at_end(transcript))
    # The prompt mounts its popups into the pane after the first frame; under load that
    # mount's layout of the pane can come late, inside what a test measures.
    await wait_until(pilot, lambda: bool(pane.query("#prompt-search")) and pane.query_one("#prompt-search").is_mounted)
    await pilot.pause()
    return pane, transcript


async def grow(pilot, block, lines: int, status: str = "success", word: str = "line", first: str = "") -> None:
    """``block`` ends with ``lines`` more lines under its status; two frames to lay them out."""
    block.set_summary(status, (first or status) + "\n" + "\n".join(f"{word} {n}" for n in range(lines)))
    await pilot.pause()
    await pilot.pause()


async def test_a_new_block_and_its_result_each_lay_the_screen_out_once() -> None:
    app = ConversationApp()
    async with app.run_test(size=SMALL) as pilot:
        pane, transcript = await longer_than_the_view(app, pilot)
        with layouts_asked() as layouts:
            block = pane.add_run("print('hello')")
            await pilot.pause()
            await pilot.pause()
            joined = [type(widget).__name__ for widget in layouts]
            layouts.clear()
            block.set_summary("success", "success · 0.01s\n" + "\n".join(f"line {n}" for n in range(6)))
            await pilot.pause()
            await pilot.pause()
            ended = [type(widget).__name__ for widget in layouts]
        # The mount, then the result: nothing asks again once the layout has placed them.
        assert joined == ["Transcript"], joined
        assert ended == ["RunBlock"], ended
        assert at_end(transcript), (transcript.scroll_y, transcript.max_scroll_y)  # the newest in view
        assert block.region.height == 8  # drawn at its height: the code, the status, the six lines


async def test_short_content_stays_at_the_top_and_long_content_follows_its_end() -> None:
    app = ConversationApp()
    async with app.run_test(size=SMALL) as pilot:
        pane = app.query_one(ConversationPane)
        transcript = pane.query_one("#transcript")
        first = pane.add_run("print(1)")
        await pilot.pause()
        await pilot.pause()
        assert transcript.scroll_y == 0 and first.region.y == transcript.content_region.y  # not at the bottom
        for n in range(20):
            pane.add_note(f"note {n}")
        await wait_until(pilot, lambda: at_end(transcript))
        pane.action_clear()  # a new session: short again, at the top again
        again = pane.add_run("print(2)")
        await pilot.pause()
        await pilot.pause()
        assert transcript.scroll_y == 0 and again.region.y == transcript.content_region.y


async def test_a_focused_block_holds_the_view_until_the_focus_leaves() -> None:
    app = ConversationApp()
    async with app.run_test(size=SMALL) as pilot:
        pane, transcript = await longer_than_the_view(app, pilot)
        reading = pane.add_run("print('read me')")
        running = pane.add_run("import time\ntime.sleep(20)")
        await pilot.pause()
        await wait_until(pilot, lambda: at_end(transcript))  # (each block is scrolled to once drawn)
        reading.focus()
        await pilot.pause()
        held = transcript.scroll_y
        # The last run ends while the user reads the one before: its lines do not move the view.
        await grow(pilot, running, 10, "interrupted", word="warning")
        assert transcript.scroll_y == held < transcript.max_scroll_y
        pane.query_one("#prompt").focus()  # done reading: it follows again
        await wait_until(pilot, lambda: at_end(transcript))
        await grow(pilot, running, 14, "interrupted", word="warning")
        assert at_end(transcript)


async def test_a_focused_block_holds_the_view_when_blocks_are_added_too() -> None:
    app = ConversationApp()
    async with app.run_test(size=SMALL) as pilot:
        pane, transcript = await longer_than_the_view(app, pilot)
        reading = pane.add_run("print('read me')")
        await pilot.pause()
        await wait_until(pilot, lambda: at_end(transcript))
        reading.focus()
        await pilot.pause()
        held = transcript.scroll_y
        for n in range(5):  # notes, a queued input's placeholder...: added while the user reads
            pane.add_note(f"later {n}")
        await pilot.pause()
        await pilot.pause()
        assert transcript.scroll_y == held < transcript.max_scroll_y


async def test_moved_while_held_the_view_stays_after_the_focus_leaves() -> None:
    app = ConversationApp()
    async with app.run_test(size=SMALL) as pilot:
        pane = app.query_one(ConversationPane)
        transcript = pane.query_one("#transcript")
        block = pane.add_run("print(1)")  # short: at the top
        await pilot.pause()
        block.focus()
        await pilot.pause()
        await grow(pilot, block, 40, first="done")  # now long
        assert transcript.scroll_y == 0 < transcript.max_scroll_y
        transcript.scroll_to(y=5, animate=False, immediate=True)  # the user reads on
        await pilot.pause()
        pane.query_one("#prompt").focus()
        await pilot.pause()
        await pilot.pause()
        await grow(pilot, block, 44, first="done")
        assert transcript.scroll_y == 5  # where the user put it
        transcript.scroll_end(animate=False, immediate=True)  # back at the end: it follows again
        await pilot.pause()
        await grow(pilot, block, 50, first="done")
        assert at_end(transcript)


async def test_scrolled_up_the_view_stays_while_blocks_are_added() -> None:
    app = ConversationApp()
    async with app.run_test(size=SMALL) as pilot:
        pane, transcript = await longer_than_the_view(app, pilot, 20)
        transcript.scroll_to(y=3, animate=False, immediate=True)
        await pilot.pause()
        run = pane.add_run("print(1)")
        await pilot.pause()
        run.set_summary("success", "done\nmore\nlines")
        await pilot.pause()
        await pilot.pause()
        # A new run is the user's own input: it is brought into view (as before); its result
        # growing while the user reads elsewhere is not.
        assert at_end(transcript)
        transcript.scroll_to(y=3, animate=False, immediate=True)
        await pilot.pause()
        run.set_summary("success", "done\n" + "\n".join(f"more {n}" for n in range(8)))
        await pilot.pause()
        await pilot.pause()
        assert transcript.scroll_y == 3


# -- a run's block is drawn before the run starts --------------------------------------------

async def test_a_typed_runs_block_is_on_screen_before_its_script_starts(hermes_home, tmp_path, monkeypatch) -> None:
    # Drawn 20-30 ms into the run instead, the frame competed with the run's output for the CPU:
    # a flood took 1.2x as long as with no app (issue 20).
    from hermes_tui.tui.widgets.output import OutputPane
    from helpers.pilot import blocks, make_app
    from helpers.pilot import run

    app = make_app(hermes_home, tmp_path)
    seen_at_start: list[tuple[int, str]] = []
    begin = OutputPane.begin

    def spy(pane, *args, **kwargs):  # called as the runtime starts the script (ExecStarted)
        block = blocks(app)[-1] if blocks(app) else None
        seen_at_start.append((block.region.height if block is not None else -1, app.query_one("#prompt").text))
        return begin(pane, *args, **kwargs)

    monkeypatch.setattr(OutputPane, "begin", spy)
    async with app.run_test(size=SMALL) as pilot:
        for code in ("x = 41", "print(x + 1)", "print('a')\nprint('b')\n"):
            await run(pilot, app, code)
        assert "42" in str(blocks(app)[1].content.renderables[-1])
    assert len(seen_at_start) == 3
    assert all(height >= 2 and text == "" for height, text in seen_at_start), seen_at_start


async def test_after_enter_the_screen_draws_again_when_no_block_comes() -> None:
    # Enter holds the frames until the run's block is mounted; with no run (no agent here), the
    # hold ends by itself and what changes is drawn.
    from hermes_tui.tui.widgets.conversation import HOLD_SECONDS, PromptInput

    app = ConversationApp()
    async with app.run_test(size=SMALL) as pilot:
        pane = app.query_one(ConversationPane)
        prompt = pane.query_one(PromptInput)
        prompt.focus()
        prompt.insert("print(1)")
        await pilot.press("enter")
        assert prompt.text == ""
        pane.add_note("drawn")
        note = pane.query(".note").last()
        await pilot.pause(HOLD_SECONDS * 3)
        await wait_until(pilot, lambda: note.region.height == 1, timeout=2)


async def test_a_multi_line_input_sent_lays_the_screen_out_once() -> None:
    # Enter shrinks the input, so the transcript (and its scrollbar) grows. Textual's scrollbar
    # asked for a second layout of the whole screen for its new size (issue 20).
    from hermes_tui.tui.widgets.conversation import PromptInput

    app = ConversationApp()
    async with app.run_test(size=SMALL) as pilot:
        pane, transcript = await longer_than_the_view(app, pilot)
        prompt = pane.query_one(PromptInput)
        prompt.focus()
        prompt.insert("a = 1\nb = 2\nc = 3\nd = 4\nprint(a + b + c + d)")
        await pilot.pause()
        await pilot.pause()
        tall = transcript.region.height
        with layouts_asked() as layouts:
            await pilot.press("enter")
            pane.add_run("a = 1\nb = 2\nc = 3\nd = 4\nprint(a + b + c + d)")
            await pilot.pause(0.1)  # the frame hold ends (no agent here to end it sooner)
            await pilot.pause()
            await pilot.pause()
        assert transcript.region.height > tall  # the input shrank, the transcript grew
        assert transcript.vertical_scrollbar.region.height == transcript.region.height
        assert not [w for w in layouts if type(w).__name__.endswith("ScrollBar")], layouts
        assert at_end(transcript)


@contextlib.contextmanager
def frames_after_a_call_started(app) -> Iterator[list[str]]:
    """What the main screen does once a tool call's block is mounted (``MainScreen._after_frame``):
    "release", each frame drawn ("draw"; "drawn now" when ``draw_now`` drew one itself), then
    "released" if the run's block was laid out by then, or "released, no block"."""
    from hermes_tui.tui.screens.main import MainScreen
    from helpers.pilot import blocks

    steps: list[str] = []
    after, tick, now = MainScreen._after_frame, MainScreen._on_timer_update, MainScreen.draw_now

    def spy_now(screen):
        drew = now(screen)
        if drew:
            steps.append("drawn now")
        return drew

    async def spy_after(screen, message):
        steps.append("release")
        await after(screen, message)
        steps.append("released" if blocks(app) and blocks(app)[-1].region.height >= 2 else "released, no block")

    def spy_tick(screen):
        steps.append("draw")
        return tick(screen)

    handlers = MainScreen._decorated_handlers
    saved = {key: list(value) for key, value in handlers.items()}
    MainScreen._on_timer_update = spy_tick  # type: ignore[method-assign]
    MainScreen.draw_now = spy_now  # type: ignore[method-assign]
    for key, value in handlers.items():
        handlers[key] = [(spy_after if f is after else f, s) for f, s in value]
    try:
        yield steps
    finally:
        MainScreen._on_timer_update = tick  # type: ignore[method-assign]
        MainScreen.draw_now = now  # type: ignore[method-assign]
        handlers.clear()
        handlers.update(saved)


async def test_a_runs_first_frame_is_drawn_as_the_hold_ends_not_at_the_next_tick(hermes_home, tmp_path) -> None:
    # Textual draws on a timer of 60 ticks a second; a tick that came while Enter held the
    # frames drew nothing, and the run's frame (and the run) waited up to 17 ms for the next.
    from helpers.pilot import blocks, make_app, submit

    app = make_app(hermes_home, tmp_path)
    with frames_after_a_call_started(app) as steps:
        async with app.run_test(size=SMALL) as pilot:
            await pilot.pause()
            for code in ("x = 41", "print(x + 1)", "a = 1\nb = 2\nprint(a + b)\n"):
                steps.clear()
                await submit(pilot, app, code)
                await wait_until(pilot, lambda: blocks(app) and blocks(app)[-1].status == "success", timeout=30)
                # The frame is drawn by the release itself, with the block in it: a timer tick
                # that also comes meanwhile (a loaded machine) is no matter.
                start = steps.index("release")
                end = next(i for i, step in enumerate(steps) if step.startswith("released") and i > start)
                assert "drawn now" in steps[start:end] and steps[end] == "released", steps


async def test_a_models_tool_call_is_on_screen_before_it_runs(hermes_home, tmp_path) -> None:
    # A model's calls hold no frames (no input is cleared): the frame drawn for each call must
    # still hold its new block before the agent is told it is on screen.
    from fake_models import FakeModelServer
    from hermes_tui.tui.widgets.conversation import RunBlock
    from helpers.pilot import submit
    from helpers.models import model_app

    calls = [{"name": "execute_code", "arguments": {"code": f"print({n})"}} for n in range(3)]
    with FakeModelServer([{"text": "three runs", "tool_calls": calls}, {"text": "done"}]) as server:
        app = model_app(hermes_home, tmp_path, server)
        with frames_after_a_call_started(app) as steps:
            async with app.run_test(size=SMALL) as pilot:
                await pilot.pause()
                await submit(pilot, app, "run three")
                await wait_until(pilot, lambda: len(app.query(RunBlock)) == 3
                                 and all(b.status == "success" for b in app.query(RunBlock)), timeout=30)
    released = [step for step in steps if step.startswith("released")]
    assert released == ["released"] * 3, steps


async def test_the_conversation_follows_a_growing_last_block() -> None:
    from hermes_tui.tui.widgets.conversation import ConversationPane

    app = ConversationApp()
    async with app.run_test(size=SMALL) as pilot:
        pane = app.query_one(ConversationPane)
        transcript = pane.query_one("#transcript")
        for n in range(12):
            pane.add_note(f"note {n}")
        block = pane.add_run("import time\ntime.sleep(20)")
        await pilot.pause()
        await wait_until(pilot, lambda: transcript.max_scroll_y > 0 and transcript.scroll_y == transcript.max_scroll_y)
        # The run is interrupted: its block gains lines (the summary, the warnings).
        block.set_summary("interrupted", "interrupted\n" + "\n".join(f"warning {n}: state was lost" for n in range(6)))
        await pilot.pause()
        await pilot.pause()
        assert transcript.scroll_y == transcript.max_scroll_y, (transcript.scroll_y, transcript.max_scroll_y)
        # Scrolled up to read, the view stays where the user put it.
        transcript.scroll_home(animate=False, immediate=True)
        await pilot.pause()
        block.set_summary("interrupted", "interrupted\n" + "\n".join(f"warning {n}" for n in range(12)))
        await pilot.pause()
        await pilot.pause()
        assert transcript.scroll_y == 0


# -- from the input: PageUp, Home, Ctrl+End; and an answer typed while scrolled up ------------

async def test_pageup_from_the_input_scrolls_the_transcript_and_the_input_keeps_the_focus(
        hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        view = await filled(pilot, app)
        prompt = app.query_one(PromptInput)
        prompt.focus()
        end = view.scroll_y
        await pilot.press("pageup")
        await pilot.pause()
        assert view.scroll_y < end and app.focused is prompt
        up = view.scroll_y
        app.main.conversation.add_note("a block that comes while the user reads above")
        await pilot.pause(0.2)
        assert view.scroll_y == up  # it stays where the user put it
        await pilot.press("pagedown")
        await pilot.pause()
        assert view.scroll_y > up and app.focused is prompt
        await pilot.press("home")  # in an empty input: the top of the transcript
        await pilot.pause()
        assert view.scroll_y == 0 and app.focused is prompt
        await pilot.press("ctrl+end")
        await pilot.pause()
        assert view.scroll_y == view.max_scroll_y
        app.main.conversation.add_note("followed again")
        await wait_until(pilot, lambda: view.scroll_y == view.max_scroll_y and view.max_scroll_y > end)
        prompt.insert("x = 1")
        await pilot.press("home")  # in typed text Home is the start of the line, as before
        await pilot.pause()
        assert prompt.cursor_location == (0, 0) and view.scroll_y == view.max_scroll_y
        await pilot.press("ctrl+home")  # Ctrl+Home scrolls whatever is typed
        await pilot.pause()
        assert view.scroll_y == 0 and prompt.text == "x = 1" and app.focused is prompt


async def test_a_command_typed_while_scrolled_up_shows_its_answer(hermes_home: Path, tmp_path: Path) -> None:
    """Final trial: PageUp, then /budget: its note was added out of sight until Ctrl+End."""
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        view = await filled(pilot, app)
        prompt = app.query_one(PromptInput)
        prompt.focus()
        await pilot.press("pageup")
        await pilot.pause()
        assert view.scroll_y < view.max_scroll_y
        prompt.insert("/budget")
        await pilot.press("enter")
        await wait_until(pilot, lambda: "no budget to set" in str(list(app.query("#transcript > *"))[-1].render()))
        await pilot.pause(0.3)
        assert view.scroll_y == view.max_scroll_y  # the answer is in sight
