"""Searching and copying the conversation: /find and Ctrl+F scroll to the newest match, then
older ones, and say when none; /copy and ``y`` put a reply, a code block or a run's output on the
clipboard (OSC 52)."""

from __future__ import annotations

from pathlib import Path

from hermes_tui.tui.app import HermesApp
from hermes_tui.tui.widgets.conversation import PromptInput, ReplyBlock, RunBlock, Transcript

from helpers.pilot import SMALL, filled, make_app, submit, wait_until


def notices(app: HermesApp) -> list[str]:
    """What the app said in toasts, oldest first."""
    return [n.message for n in app._notifications]


def in_view(view: Transcript, block) -> bool:
    top = block.virtual_region.y
    return view.scroll_y <= top < view.scroll_y + view.scrollable_content_region.height


async def test_find_scrolls_to_the_newest_match_then_older_ones_and_says_when_none(
        hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        view = await filled(pilot, app, marks={7: "the NEEDLE is here", 40: "another needle"})
        await submit(pilot, app, "/find needle")
        blocks = list(view.children)
        await wait_until(pilot, lambda: blocks[40].has_class("-found"))
        await pilot.pause()
        assert in_view(view, blocks[40]) and not in_view(view, blocks[7])
        assert any("1 of 2" in text for text in notices(app))
        prompt = app.query_one(PromptInput)
        assert app.focused is prompt and prompt.text == ""
        await pilot.press("ctrl+f")  # an empty input: /find with the last search, ready to run
        assert prompt.text == "/find needle"
        await pilot.press("ctrl+f")  # again: the next older match, the input kept
        await wait_until(pilot, lambda: blocks[7].has_class("-found"))
        await pilot.pause()
        assert in_view(view, blocks[7]) and not blocks[40].has_class("-found")
        assert prompt.text == "/find needle" and any("2 of 2" in text for text in notices(app))
        prompt.clear()
        await submit(pilot, app, "/find [b]no such text[/b]")
        await wait_until(pilot, lambda: any("Nothing in the conversation matches" in text for text in notices(app)))
        assert "'[b]no such text[/b]'" in notices(app)[-1]  # the query as typed, never markup
        assert not view.query(".-found")


async def test_copy_puts_a_reply_a_code_block_or_an_output_on_the_clipboard(
        hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await wait_until(pilot, lambda: app.agent is not None)
        await submit(pilot, app, "print('the output ' * 2)")
        await wait_until(pilot, lambda: app.query(RunBlock) and app.query(RunBlock).last().status == "success")
        reply = "Here it is:\n\n```python\nprint('copied code')\n```\n\nDone [bold]x[/bold]."
        app.main.conversation.add_reply(reply)
        await wait_until(pilot, lambda: app.query(ReplyBlock))
        await submit(pilot, app, "/copy")
        await wait_until(pilot, lambda: app.clipboard == reply)
        await submit(pilot, app, "/copy code")
        await wait_until(pilot, lambda: app.clipboard == "print('copied code')")
        await submit(pilot, app, "/copy output")
        await wait_until(pilot, lambda: app.clipboard == "the output the output \n")
        assert any("Copied the last run's output" in text for text in notices(app))
        app.copy_to_clipboard("")
        run = app.query(RunBlock).last()
        run.focus()
        await pilot.press("y")  # on a run's block: its output
        await wait_until(pilot, lambda: app.clipboard == "the output the output \n")
        assert app.query_one(PromptInput).text == ""  # the key was the block's, not typed
