"""Sub-agents on screen: the delegate block, the child's transcript screen, the kernels pane.

Layout tests post the agent's events straight to the main screen (as the workspace's listener
does); end-to-end tests run real fan-outs against the scripted model server (a child's kernel
drawn under its parent's at 80x24, and the first Enter typed after a child's transcript closes).
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

from textual import events
from textual.app import App, ComposeResult

from hermes_tui.agent.events import ReplyDone, ReplyText, ToolFinished, ToolStarted, TurnEnded, TurnStarted
from hermes_tui.agent.subagents import ChildEvent, ChildState, DelegateProgress
from hermes_tui.tui.app import HermesApp
from hermes_tui.runtime.models import KernelInfo
from hermes_tui.tui.screens.child_transcript import ChildTranscriptScreen
from hermes_tui.tui.widgets.conversation import PromptInput, ReplyBlock, RunBlock
from hermes_tui.tui.widgets.delegate import ChildRow, DelegateBlock, child_row_text
from hermes_tui.tui.widgets.kernels import KernelsPane
from hermes_tui.tui.screens.main import MainScreen

from fake_models import FakeModelServer
from helpers.pilot import burst, make_app, SIZE, SMALL, submit, wait_until
from helpers.models import model_app

PARENT = "working in the user's terminal"
HOSTILE = "[bold red]boom[/] [@click=app.quit]x[/] \x1b[31m"


def post(app: HermesApp, event) -> None:
    app.main.post_message(MainScreen.AgentUpdate(event, app.session))


def child(name: str, status: str = "running", session: str | None = None, **kw) -> ChildState:
    return ChildState(name, kw.pop("goal", f"the goal of {name}"), session or f"SID::child::abc123-{name}",
                      status=status, **kw)


def row_text(app: HermesApp, index: int) -> str:
    return str(app.query(ChildRow)[index].render())


async def start_delegate(pilot, app: HermesApp, children: list[ChildState]) -> DelegateBlock:
    tasks = [{"goal": c.goal, "name": c.name} for c in children]
    post(app, TurnStarted("t1", "fan out", "user"))
    post(app, ToolStarted("t1", "call-1", "delegate_task", {"tasks": tasks}))
    post(app, DelegateProgress("t1", "call-1", children))
    await wait_until(pilot, lambda: len(app.query(ChildRow)) == len(children))
    return app.query_one(DelegateBlock)


async def test_delegate_block_shows_a_row_per_child_and_ticks_only_while_one_runs(
        hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.main.session == app.session and app.agent is not None)
        app.main.session = app.session
        now = time.time()
        goal = "count the letters of every word in the first chapter\nand more lines after"
        block = await start_delegate(pilot, app, [
            child("alpha", steps=2, tool_calls=1, cost_usd=0.0042, started_at=now - 5, goal=goal),
            child("beta", "waiting"),
        ])
        assert not [b for b in app.query(RunBlock)]  # no plain tool block for delegate_task
        first, second = row_text(app, 0), row_text(app, 1)
        assert first.startswith("● alpha") and first.count("\n") == 1
        assert "2 steps · 1 tool call · $0.0042 · 5s" in first
        assert "count the letters of every word in the first chapter…" in first and "more lines" not in first
        assert second.startswith("○ beta") and "0 steps" in second and "—" in second
        assert block.ticking  # alpha runs: the elapsed time ticks
        await pilot.pause(1.3)
        assert "· 6s" in row_text(app, 0) or "· 7s" in row_text(app, 0)
        post(app, DelegateProgress("t1", "call-1", [
            child("alpha", "done", steps=3, tool_calls=2, cost_usd=0.01, started_at=now - 5, ended_at=now, goal=goal),
            child("beta", "error", started_at=now - 2, ended_at=now, unpriced=True)]))
        await wait_until(pilot, lambda: row_text(app, 1).startswith("✗ beta"))
        assert row_text(app, 0).startswith("✓ alpha") and "3 steps · 2 tool calls · $0.01 · 5s" in row_text(app, 0)
        assert "· ? · 2s" in row_text(app, 1)  # unpriced and nothing priced: "?"
        assert not block.ticking  # none runs: no timer
        post(app, ToolFinished("t1", "call-1", "delegate_task", {"results": [
            {"name": "alpha", "goal": goal, "status": "done", "summary": "s", "model_calls": 3, "tool_calls": 2,
             "cost_usd": 0.01, "seconds": 5}]}))
        await wait_until(pilot, lambda: block.status == "done")
        assert "2 sub-agents · 2 ended" in str(block.query_one(".delegate-title").render())


async def test_hostile_names_and_goals_are_shown_as_text(hermes_home: Path, tmp_path: Path) -> None:
    state = child("x", goal=HOSTILE, started_at=time.time())
    assert "[bold red]boom[/]" in child_row_text(state).plain and "\\x1b" in child_row_text(state).plain
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.agent is not None)
        await start_delegate(pilot, app, [state])
        assert "[@click=app.quit]x[/]" in row_text(app, 0)
        await pilot.click(ChildRow)
        await wait_until(pilot, lambda: isinstance(app.screen, ChildTranscriptScreen) and app.screen.drawn)
        title = str(app.screen.query_one("#child-title").render())
        assert "[bold red]boom[/]" in title and "\\x1b" in title
        assert app.is_running  # no markup ran


async def test_enter_opens_a_live_read_only_transcript_and_esc_closes_it(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.agent is not None)
        session = f"{app.session}::child::abc123-alpha"
        await start_delegate(pilot, app, [child("alpha", session=session, started_at=time.time())])
        app.query(ChildRow).first().focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ChildTranscriptScreen) and app.screen.drawn)
        screen = app.screen
        assert screen.child_session == session
        assert "alpha" in str(screen.query_one("#child-title").render())
        assert screen.query_one("#child-output")  # its own output pane
        # The child's events reach its open transcript (wrapped as the parent's listener sends them).
        post(app, ChildEvent("t1", session, TurnStarted("c1", "the goal of alpha", "user")))
        post(app, ChildEvent("t1", session, ReplyText("c1", 1, "ALPHA is ")))
        post(app, ChildEvent("t1", session, ReplyDone("c1", 1, "ALPHA is **42**.", "done")))
        post(app, ChildEvent("t1", "someone::child::else", ReplyDone("c9", 1, "not mine", "done")))
        await wait_until(pilot, lambda: any("ALPHA is **42**." in b.text for b in screen.query(ReplyBlock)))
        assert not any("not mine" in b.text for b in screen.query(ReplyBlock))
        assert not any("ALPHA" in b.text for b in app.main.query(ReplyBlock))  # not in the parent's
        assert not screen.query_one("#prompt").display  # read-only: no input
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is app.main)
        post(app, ChildEvent("t1", session, TurnEnded("c1", "done")))  # closed: dropped quietly
        await pilot.pause(0.1)
        assert app.screen is app.main


class KernelsApp(App[None]):
    def compose(self) -> ComposeResult:
        yield KernelsPane()


def kernel(kernel_id: str, session: str) -> KernelInfo:
    now = datetime(2025, 1, 1, 12, 0, 0)
    return KernelInfo(id=kernel_id, key=kernel_id, session=session, mode="local", interpreter="python3", cwd="/tmp",
                      pid=1, state="idle", started_at=now, last_used=now, execution_count=0, idle_deadline=None,
                      subagent="::child::" in session)


async def test_kernels_pane_groups_child_kernels_under_their_parent() -> None:
    app = KernelsApp()
    async with app.run_test(size=(140, 20)) as pilot:
        pane = app.query_one(KernelsPane)
        pane.update_kernels([
            kernel("k1", "main"), kernel("k2", "other"), kernel("k3", "main::child::aaaaaa-research"),
            kernel("k4", "other::child::bbbbbb-[b]x[/b]"), kernel("k5", "main::child::aaaaaa-code"),
            kernel("k6", "gone::child::cccccc-orphan"),
        ], {}, now=datetime(2025, 1, 1, 12, 0, 1))
        await pilot.pause()
        table = pane.table()
        ids = [table.key_at(row) for row in range(table.row_count)]
        assert ids == ["k1", "k5", "k3", "k2", "k4", "k6"]
        sessions = [table.get_row_at(row)[5] for row in range(table.row_count)]
        assert sessions[:3] == ["main", "└ code", "└ research"]
        assert sessions[4] == "└ [b]x[/b]"  # a name, never markup
        assert "└ [b]x[/b]" in table.render_line(5).text  # drawn as it is (row 4, under the header)
        assert sessions[5] == "orphan (sub-agent of gone)"  # its parent has no kernel: it says whose it is
        assert "sub-agent" in table.get_cell(table.key_at(1), "flags")


async def test_a_real_fan_out_enter_on_a_child_opens_its_stored_reply(hermes_home: Path, tmp_path: Path) -> None:
    tasks = [{"goal": "find the ALPHA number", "name": "alpha"}, {"goal": "find the BETA number", "name": "beta"}]
    with FakeModelServer([
        {"match": PARENT, "text": "", "tool_calls": [{"name": "delegate_task", "arguments": {"tasks": tasks}}]},
        {"match": "ALPHA", "text": "ALPHA is 42, said the child."},
        {"match": "BETA", "text": "BETA is 7."},
        {"match": PARENT, "text": "Both found."},
    ]) as server:
        app = model_app(hermes_home, tmp_path, server, session="s-fan")
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.agent is not None)
            from helpers.pilot import submit

            await submit(pilot, app, "fan out please")
            await wait_until(pilot, lambda: any("Both found." in b.text for b in app.main.query(ReplyBlock)), 60)
            block = app.main.query_one(DelegateBlock)
            assert block.status == "done"
            rows = list(app.main.query(ChildRow))
            assert [r.state.name for r in rows] == ["alpha", "beta"]
            assert all(r.state.status == "done" and r.state.steps == 1 for r in rows)
            assert str(rows[0].render()).startswith("✓ alpha")
            assert not block.ticking
            rows[0].focus()
            await pilot.press("enter")
            await wait_until(pilot, lambda: isinstance(app.screen, ChildTranscriptScreen) and app.screen.drawn)
            screen = app.screen
            assert screen.child_session.startswith("s-fan::child::") and screen.child_session.endswith("-alpha")
            await wait_until(pilot, lambda: any("ALPHA is 42, said the child." in b.text
                                                for b in screen.query(ReplyBlock)))
            assert not any("BETA is 7." in b.text for b in screen.query(ReplyBlock))
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.screen is app.main)
            # Drawn again from the store (the session reopened): the block and its rows come back
            # from the call's stored result (which names each child's session), and a row opens its child.
            app.switch_session("s-fan")
            await wait_until(pilot, lambda: app.main.query(DelegateBlock) and app.main.query(ChildRow)
                             and app.main.query(DelegateBlock).first() is not block)
            stored_rows = list(app.main.query(ChildRow))
            assert [r.state.name for r in stored_rows] == ["alpha", "beta"]
            assert str(stored_rows[1].render()).startswith("✓ beta") and stored_rows[1].session.endswith("-beta")
            stored_rows[1].focus()
            await pilot.press("enter")
            await wait_until(pilot, lambda: isinstance(app.screen, ChildTranscriptScreen) and app.screen.drawn)
            assert app.screen.child_session.endswith("-beta")
            await wait_until(pilot, lambda: any("BETA is 7." in b.text for b in app.screen.query(ReplyBlock)))
            await pilot.press("escape")


# -- at 80x24: a sub-agent's kernel under its parent's; the first Enter after its transcript --

async def test_a_real_sub_agents_kernel_shows_under_its_parents_at_80x24(hermes_home: Path, tmp_path: Path) -> None:
    flag = tmp_path / "go"
    waits = f"import os, time\nwhile not os.path.exists({str(flag)!r}): time.sleep(0.05)\nprint('child ran')"
    tasks = [{"goal": "run the ALPHA script", "name": "alpha"}]
    with FakeModelServer([
        {"match": "first", "text": "", "tool_calls": [{"name": "execute_code", "arguments": {"code": "x = 1"}}]},
        {"match": PARENT, "text": "", "tool_calls": [{"name": "delegate_task", "arguments": {"tasks": tasks}}]},
        {"match": "ALPHA", "text": "", "tool_calls": [{"name": "execute_code", "arguments": {"code": waits}}]},
        {"match": "child ran", "text": "alpha is done."},
        {"match": PARENT, "text": "All done."},
    ]) as server:
        app = model_app(hermes_home, tmp_path, server, session="s-kernels")
        async with app.run_test(size=SMALL) as pilot:
            await wait_until(pilot, lambda: app.agent is not None)
            await submit(pilot, app, "first run some code, then fan out")
            pane = app.main.query_one(KernelsPane)
            table = pane.table()

            def rows() -> list[str]:
                return [table.render_line(y).text for y in range(1, table.row_count + 1)]

            try:
                await wait_until(pilot, lambda: table.row_count == 2, 60)
                await pilot.pause(0.2)
                parent, child = rows()
                kernels = {info.id: info for info in app.runtime.kernels()}
                assert kernels[parent.split()[1]].session == "s-kernels"
                assert kernels[child.split()[1]].session.startswith("s-kernels::child::")
                assert "s-kernels" in parent and "└ alpha" in child  # drawn, in the 80-column layout
            finally:
                flag.write_text("go")
            await wait_until(pilot, lambda: any("All done." in b.text for b in app.query(ReplyBlock)), 60)
            await wait_until(pilot, lambda: table.row_count == 1)  # its kernel ends with the sub-agent


def typed_at_once(app: HermesApp, text: str) -> None:
    """``text`` and Enter as a terminal hands them to the app, in one read: all queued at once,
    sent to the widget focused then (``pilot.press`` waits for each key, which hides the race)."""
    burst(app, text)
    enter = events.Key("enter", "\r")
    enter.set_sender(app)
    app._driver.send_message(enter)


async def test_the_first_enter_after_a_sub_agents_transcript_closes_sends(hermes_home: Path, tmp_path: Path) -> None:
    """Esc on a sub-agent's transcript gives the focus back to its row; ``plain words`` and Enter
    typed then went to the row: the first key moved the focus to the input, the words followed,
    and Enter, checked against the input's bindings by then, was lost (a second Enter sent)."""
    tasks = [{"goal": "find the ALPHA number", "name": "alpha"}]
    with FakeModelServer([
        {"match": PARENT, "text": "", "tool_calls": [{"name": "delegate_task", "arguments": {"tasks": tasks}}]},
        {"match": "ALPHA", "text": "ALPHA is 42."},
        {"match": PARENT, "text": "Found it."},
        {"match": "plain words", "text": "Heard the plain words."},
        {"match": "more words", "text": "Heard more words."},
    ]) as server:
        app = model_app(hermes_home, tmp_path, server, session="s-enter")
        async with app.run_test(size=SMALL) as pilot:
            await wait_until(pilot, lambda: app.agent is not None)
            await submit(pilot, app, "fan out please")
            await wait_until(pilot, lambda: any("Found it." in b.text for b in app.main.query(ReplyBlock)), 60)
            prompt = app.main.query_one(PromptInput)
            row = app.main.query_one(ChildRow)
            await pilot.click(ChildRow)
            await wait_until(pilot, lambda: isinstance(app.screen, ChildTranscriptScreen) and app.screen.drawn)
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.screen is app.main)
            assert app.focused is row  # Textual gives the focus back to the row
            typed_at_once(app, "plain words")
            await wait_until(pilot, lambda: prompt.text == "")  # the first Enter sent it
            await wait_until(pilot, lambda: any("Heard the plain words." in b.text for b in app.main.query(ReplyBlock)))
            assert prompt.text == "" and app.focused is prompt and app.screen is app.main
            # Enter on the row (the keyboard's way in), then keys typed one by one: the same.
            row.focus()
            await pilot.press("enter")
            await wait_until(pilot, lambda: isinstance(app.screen, ChildTranscriptScreen) and app.screen.drawn)
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.screen is app.main)
            await pilot.press(*"more words", "enter")
            await wait_until(pilot, lambda: any("Heard more words." in b.text for b in app.main.query(ReplyBlock)))
            assert prompt.text == "" and app.screen is app.main
