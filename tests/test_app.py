"""The app's flows with the pilot: real runtime, real kernels, the dialog answered by keys."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hermes_tui.tui.screens.approval import ApprovalScreen
from hermes_tui.tui.widgets.conversation import PromptInput, is_complete
from hermes_tui.tui.screens.dialogs import ConfirmScreen, HelpScreen, VariablesScreen
from hermes_tui.tui.widgets.kernels import KernelsPane

from conftest import pid_running
from helpers.pilot import SIZE, blocks, dialog_ready, log_text, make_app, submit, wait_until

def test_enter_runs_only_complete_input() -> None:
    assert is_complete("x = 1") and is_complete("!ls") and is_complete("/help")
    assert not is_complete("def f():") and not is_complete("for i in range(3):\n    print(i)")
    assert is_complete("for i in range(3):\n    print(i)\n") and not is_complete("   ")


async def test_run_code_shows_output_and_keeps_state(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, app, "x = 41")
        await wait_until(pilot, lambda: blocks(app) and blocks(app)[-1].status == "success")
        await submit(pilot, app, "for i in range(3):\n    print(x + i)\n")
        await wait_until(pilot, lambda: len(blocks(app)) == 2 and blocks(app)[-1].status == "success")
        await wait_until(pilot, lambda: log_text(app).startswith("41\n42\n43"))
        assert "success" in str(app.query_one("#output-header").render())
        await submit(pilot, app, "1 / 0")
        await wait_until(pilot, lambda: len(blocks(app)) == 3 and blocks(app)[-1].status == "error")
        await wait_until(pilot, lambda: "ZeroDivisionError" in log_text(app))
        blocks(app)[1].focus()
        await pilot.press("enter")  # a past run's output comes back
        await wait_until(pilot, lambda: log_text(app).startswith("41\n42\n43"))


async def test_live_output_streams_while_the_script_runs(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, app, "import time\nprint('tick', flush=True)\ntime.sleep(2)\nprint('tock')\n")
        await wait_until(pilot, lambda: "tick" in log_text(app))
        assert blocks(app)[-1].status == "running" and "running" in str(app.query_one("#output-header").render())
        await wait_until(pilot, lambda: blocks(app)[-1].status == "success")
        await wait_until(pilot, lambda: log_text(app).startswith("tick\ntock"))


@pytest.mark.parametrize(
    ("keys", "expected", "asked_twice"),
    [(["o"], "ran", True), (["2"], "ran", False), (["a"], "ran", False), (["d"], "blocked", True),
     (["escape"], "blocked", True), (["r", "n", "o", "enter"], "blocked", True)],
)
async def test_terminal_in_a_script_asks_in_a_dialog(
    hermes_home: Path, tmp_path: Path, keys: list[str], expected: str, asked_twice: bool
) -> None:
    app = make_app(hermes_home, tmp_path)
    code = ("from hermes_tools import terminal\n"  # "ran" only when it ran and succeeded, not for any failure
            "print([r.get('status') or ('ran' if r['output'] == 'hi\\n' and r['exit_code'] == 0 else f'failed {r}')\n"
            "       for r in (terminal('echo hi') for _ in range(2))])\n")
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, app, code)
        await wait_until(pilot, lambda: dialog_ready(app))
        assert app.screen.request.text == "echo hi"
        for key in keys:
            await pilot.press(key)
        if asked_twice:
            await wait_until(pilot, lambda: dialog_ready(app))
            await pilot.press("1")
        await wait_until(pilot, lambda: blocks(app)[-1].status == "success")
        await wait_until(pilot, lambda: log_text(app).startswith(f"['{expected}', 'ran']"))
    if keys == ["a"]:
        assert "exact: echo hi" in (hermes_home / "tui" / "allowlist.yaml").read_text()
    if keys[0] == "r":
        assert "denied by the user: no" in (hermes_home / "tui" / "approvals.jsonl").read_text()


async def test_unanswered_dialog_is_denied_and_closed(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path, "approvals:\n  timeout: 1\n")
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, app, "from hermes_tools import terminal\nprint(terminal('echo hi')['error'])\n")
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await wait_until(pilot, lambda: blocks(app)[-1].status == "success", timeout=10)
        assert not isinstance(app.screen, ApprovalScreen)
        await wait_until(pilot, lambda: "no answer within 1s" in log_text(app))


async def test_injected_turn_asks_for_the_whole_script(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        task = asyncio.create_task(app.runtime.execute_code("print('from outside')", session="tui",
                                                             origin="injected", cwd=tmp_path))
        await wait_until(pilot, lambda: dialog_ready(app))
        assert app.screen.request.kind == "script" and app.screen.request.text == "print('from outside')"
        await pilot.press("o")
        result = await asyncio.wait_for(task, 15)
        assert result.output == "from outside\n"


async def test_kernels_pane_actions_and_variables(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path, "code_execution:\n  kernel_idle_timeout: 60\n")
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, app, "answer = 42\nitems = [1, 2, 3]\n")
        await wait_until(pilot, lambda: blocks(app) and blocks(app)[-1].status == "success")
        pane = app.query_one(KernelsPane)
        await wait_until(pilot, lambda: pane.kernels and pane.kernels[0].idle_deadline is not None)
        table = app.query_one("#kernel-table")
        first = str(table.get_cell(pane.kernels[0].id, "reaped in"))
        await pilot.pause(2.2)
        second = str(table.get_cell(pane.kernels[0].id, "reaped in"))
        assert first != second and int(second[:-1]) < int(first[:-1])  # the countdown goes down
        await pilot.press("f4")
        await pilot.press("v")
        await wait_until(pilot, lambda: isinstance(app.screen, VariablesScreen))
        rows = [app.screen.query_one("DataTable").get_row_at(i) for i in range(2)]
        assert [r[0] for r in rows] == ["answer", "items"] and rows[1][2] == "3"
        await pilot.press("escape")
        pid = pane.kernels[0].pid
        await pilot.press("k")  # kill: it holds variables, so it asks first
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_until(pilot, lambda: not pane.kernels)
        assert not pid_running(pid)
        await submit(pilot, app, "import time\nprint('still', flush=True)\ntime.sleep(30)\n")
        await wait_until(pilot, lambda: "still" in log_text(app))
        await pilot.press("f4")
        await wait_until(pilot, lambda: pane.kernels and pane.kernels[0].state == "busy")
        await pilot.press("i")  # interrupt
        await wait_until(pilot, lambda: blocks(app)[-1].status == "interrupted")
        await wait_until(pilot, lambda: "[execution interrupted" in log_text(app))


async def test_commands_help_theme_and_maximise(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, app, "/help")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.press("escape")
        await submit(pilot, app, "/nonsense")
        await wait_until(pilot, lambda: app.query(".note") and
                         "Unknown command /nonsense" in str(app.query(".note").last().render()))
        theme = app.theme
        await pilot.press("ctrl+t")
        assert app.theme != theme
        await pilot.press("f8")
        assert app.screen.maximized is not None
        await pilot.press("f8")
        assert app.screen.maximized is None
    await asyncio.sleep(0.2)
    again = make_app(hermes_home, tmp_path)
    async with again.run_test(size=SIZE) as pilot:
        assert again.theme == app.theme  # remembered


async def test_input_typed_while_a_script_runs_waits_its_turn(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, app, "import time\ntime.sleep(1.5)\nfirst = 'done'\n")
        await wait_until(pilot, lambda: blocks(app) and app.runtime.kernels() and
                         app.runtime.kernels()[0].state == "busy")
        await submit(pilot, app, "print(first)")
        from hermes_tui.tui.widgets.conversation import PendingBlock

        await wait_until(pilot, lambda: bool(app.query(PendingBlock)))
        await wait_until(pilot, lambda: len(blocks(app)) == 2 and blocks(app)[-1].status == "success", timeout=15)
        assert blocks(app)[0].status == "success"  # not interrupted: the REPL queues input
        assert log_text(app).startswith("done")


@pytest.mark.parametrize("key", ["escape", "ctrl+c"])
async def test_esc_or_ctrl_c_interrupts_and_the_kernel_keeps_its_variables(hermes_home: Path, tmp_path: Path,
                                                                        key: str) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, app, "kept = 41")
        await wait_until(pilot, lambda: blocks(app) and blocks(app)[-1].status == "success")
        await submit(pilot, app, "import time\ntime.sleep(30)\n")
        await wait_until(pilot, lambda: len(blocks(app)) == 2 and app.runtime.kernels()[0].state == "busy")
        await pilot.press(key)
        await wait_until(pilot, lambda: blocks(app)[-1].status == "interrupted", timeout=10)
        stopped = blocks(app)[-1].result
        assert stopped.output.endswith("[execution interrupted — stopped by the user]\n")  # not "a new message"
        assert stopped.error == "Execution interrupted: stopped by the user"
        await submit(pilot, app, "print(kept + 1)")
        await wait_until(pilot, lambda: len(blocks(app)) == 3 and blocks(app)[-1].status == "success")
        assert log_text(app).startswith("42")
        await pilot.press("ctrl+c")  # nothing runs: Ctrl+C does nothing, and never offers to quit
        await pilot.pause(0.2)
        assert app.is_running and not any("quit" in str(n.message).lower() for n in app._notifications)


async def test_bang_runs_a_terminal_command_through_approvals(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, app, "!echo from-the-shell")  # typed, not flagged: the gate lets it run unasked
        await wait_until(pilot, lambda: blocks(app)[-1].status == "success")
        await wait_until(pilot, lambda: app.query(".note") and "from-the-shell" in str(app.query(".note").last().render()))


async def test_yolo_badge(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path, "approvals:\n  mode: off\n")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "YOLO" in str(app.query_one("#topbar").render())


async def test_tool_calls_count_up_live_in_the_header(hermes_home: Path, tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "f.txt").write_text("x\n")
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        # The count comes from ToolCallMade events, not from asking the runtime on a timer.
        monkeypatch.setattr(app.runtime, "tool_calls", lambda exec_id: None)
        await submit(pilot, app, "import time\nfrom hermes_tools import read_file\n"
                                 "for _ in range(3):\n    read_file('f.txt')\ntime.sleep(2)\n")
        await wait_until(pilot, lambda: "tools 3/50" in str(app.query_one("#output-header").render()))
        assert blocks(app)[-1].status == "running"


async def test_a_failing_task_becomes_a_notice(hermes_home: Path, tmp_path: Path, monkeypatch) -> None:
    app = make_app(hermes_home, tmp_path)

    async def broken(*args, **kwargs):
        raise OSError("disk on fire")

    async with app.run_test(size=SIZE) as pilot:
        monkeypatch.setattr(app.runtime, "kernel_memory", broken)
        app.refresh_kernels()
        await wait_until(pilot, lambda: any("disk on fire" in str(n.message) for n in app._notifications))
        assert app.is_running


async def test_the_input_behaves_like_the_python_repl(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one(PromptInput)
        prompt.focus()
        await pilot.press(*"def f(a, b):", "enter")
        assert prompt.text == "def f(a, b):\n    "  # one level deeper after a ':'
        await pilot.press(*"return a * b", "enter")
        assert prompt.text == "def f(a, b):\n    return a * b\n    "
        await pilot.press("enter")  # the empty line ends the block: it runs
        await wait_until(pilot, lambda: blocks(app) and blocks(app)[-1].status == "success")
        await submit(pilot, app, "f(6, 7)")  # a bare expression shows its value
        await wait_until(pilot, lambda: len(blocks(app)) == 2 and blocks(app)[-1].status == "success")
        assert log_text(app).startswith("42")
        await submit(pilot, app, "None")
        await wait_until(pilot, lambda: len(blocks(app)) == 3 and blocks(app)[-1].status == "success")
        assert blocks(app)[-1].result.output == ""
        await submit(pilot, app, "\n!echo after-a-blank-line")  # a stray leading newline is not Python
        await wait_until(pilot, lambda: any("after-a-blank-line" in str(n.render()) for n in app.query(".note")))


async def test_a_queued_input_shows_as_pending_and_esc_on_it_removes_it(hermes_home: Path, tmp_path: Path) -> None:
    from hermes_tui.tui.widgets.conversation import PendingBlock

    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, app, "import time\ntime.sleep(2)\n")
        await wait_until(pilot, lambda: app.runtime.kernels() and app.runtime.kernels()[0].state == "busy")
        await submit(pilot, app, "print('never')")
        await submit(pilot, app, "print('runs')")
        await wait_until(pilot, lambda: len(app.query(PendingBlock)) == 2)
        first = app.query(PendingBlock).first()
        assert "pending input: print('never')" in str(first.render())
        first.focus()
        await pilot.press("escape")
        await wait_until(pilot, lambda: len(app.query(PendingBlock)) == 1)
        await wait_until(pilot, lambda: len(blocks(app)) == 2 and blocks(app)[-1].status == "success", timeout=15)
        assert blocks(app)[0].status == "success" and blocks(app)[-1].code == "print('runs')"
        assert not app.query(PendingBlock)  # the one that ran lost its placeholder
        assert any("Removed from the queue" in str(n.render()) for n in app.query(".note"))


async def test_a_running_block_shows_its_code_while_it_runs(hermes_home: Path, tmp_path: Path) -> None:
    from rich.console import Group
    from rich.syntax import Syntax

    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, app, "import time\ntime.sleep(2)\n")
        await wait_until(pilot, lambda: blocks(app) and app.runtime.kernels() and
                         app.runtime.kernels()[0].state == "busy")
        content = blocks(app)[-1].content
        parts = content.renderables if isinstance(content, Group) else [content]
        shown = "\n".join(p.code if isinstance(p, Syntax) else str(p) for p in parts)
        assert "time.sleep(2)" in shown and "running" in shown


async def test_a_script_that_swallows_the_interrupt_is_killed_and_its_block_says_the_state_is_lost(
        hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path, "code_execution:\n  interrupt_grace: 0.5\n")
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, app, "import time\nwhile True:\n    try:\n        time.sleep(1)\n    except KeyboardInterrupt:\n        pass\n")
        await wait_until(pilot, lambda: blocks(app) and app.runtime.kernels() and app.runtime.kernels()[0].state == "busy")
        await pilot.press("escape")
        await wait_until(pilot, lambda: blocks(app)[-1].status == "interrupted", timeout=10)
        await pilot.pause(0.1)
        from rich.console import Console

        console = Console(width=200, color_system=None)
        with console.capture() as captured:
            console.print(blocks(app)[-1].content)
        shown = captured.get()
        assert "state is lost" in shown and "⚠" in shown  # in the conversation, not only in the output pane
