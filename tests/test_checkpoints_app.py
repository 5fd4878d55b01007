"""``/checkpoints``, ``/diff`` and ``/rollback`` in the app, with the pilot: a real model server on
127.0.0.1 and real kernels; the question names the files, the pager shows the diff coloured,
the rollback and the conversation rewind are seen on screen."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import OptionList, Static

from fake_models import FakeModelServer
from helpers.models import model_app
from helpers.pilot import SIZE, submit, wait_until
from hermes_tui.tui.screens.checkpoints import CheckpointsScreen, DiffScreen
from hermes_tui.tui.screens.dialogs import ConfirmScreen, HelpScreen
from hermes_tui.tui.widgets.conversation import MessageBlock
from hermes_tui.tui.widgets.pager import Pager

WRITE = "open('made.txt', 'w').write('made by the agent\\n')\nopen('keep.txt', 'a').write('agent line\\n')\n"


def notes(app) -> str:
    return "\n".join(str(w.render()) for w in app.main.conversation.query(Static).filter(".note"))


async def test_checkpoints_diff_and_rollback_with_the_conversation(hermes_home: Path, tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("user line\n")
    (tmp_path / "mine.txt").write_text("untouched\n")
    with FakeModelServer([
        {"text": "Writing.", "tool_calls": [{"name": "execute_code", "arguments": {"code": WRITE}}]},
        {"text": "Wrote made.txt."},
    ]) as server:
        app = model_app(hermes_home, tmp_path, server, session="s-cp")
        async with app.run_test(size=SIZE) as pilot:
            await submit(pilot, app, "make a file")
            await wait_until(pilot, lambda: (tmp_path / "made.txt").exists() and not app.agent.busy)
            (tmp_path / "mine.txt").write_text("edited by hand\n")

            await submit(pilot, app, "/checkpoints")
            await wait_until(pilot, lambda: isinstance(app.screen, CheckpointsScreen))
            shown = [str(o.prompt) for o in app.screen.query_one(OptionList).options]
            assert "before execute_code" in shown[0] and "2 files +2 -0" in shown[0], shown
            assert "before the turn 'make a file'" in shown[1]
            await pilot.press("d")  # the newest: the diff since it, in the pager
            await wait_until(pilot, lambda: isinstance(app.screen, DiffScreen))
            pager = app.screen.query_one(Pager)
            await wait_until(pilot, lambda: "+made by the agent" in str(pager.query_one("#pager-body").render()))
            body = pager.query_one("#pager-body").render()
            assert any(getattr(span.style, "foreground", None) is not None and span.style.foreground.ansi == 2
                       for span in body.spans)  # the added lines in green: coloured as a diff
            await pilot.press("escape")

            await submit(pilot, app, "/rollback 1 --conversation")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            question = app.screen.question
            assert "delete made.txt" in question and "restore keep.txt" in question and "mine.txt" not in question
            await pilot.press("y")
            await wait_until(pilot, lambda: "Rolled back 2 files to checkpoint 1" in notes(app))
            assert not (tmp_path / "made.txt").exists() and (tmp_path / "keep.txt").read_text() == "user line\n"
            assert (tmp_path / "mine.txt").read_text() == "edited by hand\n"
            assert "The conversation went back to before that turn" in notes(app)
            assert not list(app.main.conversation.query(MessageBlock))  # the turn's message is hidden
            assert app.agent.history.messages == []

            await submit(pilot, app, "/rollback nine")
            await wait_until(pilot, lambda: "'nine' is not a checkpoint number" in notes(app))
            await submit(pilot, app, "/diff 77")
            await wait_until(pilot, lambda: "checkpoint 77 is not one of this session's" in notes(app))
            await submit(pilot, app, "/help rollback")
            await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
            assert "--conversation" in app.screen.text and "/rollback N" in app.screen.text
