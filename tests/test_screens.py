"""Issue 15 with the pilot: reset and kill ask before variables are lost, reset on F5 (Ctrl+R
is the input's), typed keys find the input, maximise fits and restores, and an 80x24 terminal
reaches everything (help scrolls, the kernels table's useful columns first, the top bar
shortens)."""

from __future__ import annotations

import re
from pathlib import Path

from hermes_tui.tui.widgets.kernel_table import KernelTable

from hermes_tui.agent.models.resolve import ProviderSettings
from hermes_tui.tui.app import HermesApp
from hermes_tui.tui.widgets.conversation import PromptInput, RunBlock
from hermes_tui.tui.screens.dialogs import ConfirmScreen, HelpScreen, loss_question
from hermes_tui.tui.widgets.kernels import KernelsPane
from hermes_tui.tui.screens.main import topbar_line

from conftest import pid_running
from helpers.pilot import blocks, make_app, submit, wait_until
from helpers.pilot import SMALL, run

def question(app: HermesApp) -> str:
    assert isinstance(app.screen, ConfirmScreen)
    return app.screen.question


def alive(app: HermesApp) -> list[str]:
    return [k.id for k in app.runtime.kernels()]


async def test_f5_resets_after_asking_when_the_kernel_holds_variables(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await run(pilot, app, "a = 1\nb = 2\nimport json\n")
        kernel = alive(app)[0]
        await pilot.press("f5")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert question(app) == loss_question("reset", [kernel], 3)
        assert "3 names" in question(app)
        await pilot.press("n")  # no: the kernel and its names stay
        await wait_until(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        assert alive(app) == [kernel]
        await pilot.press("f5")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("escape")  # Esc says no too
        await wait_until(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        await run(pilot, app, "print(a + b)")
        assert alive(app) == [kernel] and blocks(app)[-1].result.output == "3\n"
        await pilot.press("f5")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("enter")  # Enter confirms
        await wait_until(pilot, lambda: not alive(app))
        assert any("Kernel reset" in str(n.render()) for n in app.query(".note"))


async def test_slash_reset_asks_and_y_confirms(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await run(pilot, app, "kept = 'x'")
        await submit(pilot, app, "/reset")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert "1 name " in question(app)
        await pilot.press("y")
        await wait_until(pilot, lambda: not alive(app))


async def test_ctrl_r_does_not_reset(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    assert not any(b.key == "ctrl+r" for b in app.BINDINGS)  # the input's reverse search has it
    async with app.run_test(size=SMALL) as pilot:
        await run(pilot, app, "kept = 1")
        kernel = alive(app)[0]
        await pilot.press("ctrl+r")
        await pilot.pause(0.3)
        assert alive(app) == [kernel] and not isinstance(app.screen, ConfirmScreen)


async def test_a_kernel_without_variables_is_reset_without_asking(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await run(pilot, app, "print('nothing kept')")
        assert alive(app)
        await pilot.press("f5")
        await wait_until(pilot, lambda: not alive(app))
        assert not isinstance(app.screen, ConfirmScreen)
        await run(pilot, app, "print('again')")
        await pilot.press("f4")
        await pilot.press("k")  # the kernels pane's kill: nothing to lose, nothing asked
        await wait_until(pilot, lambda: not alive(app))
        assert not isinstance(app.screen, ConfirmScreen)


async def test_kernels_pane_reset_and_kill_ask_first(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await run(pilot, app, "x = 1")
        pane = app.query_one(KernelsPane)
        await wait_until(pilot, lambda: bool(pane.kernels))
        kernel, pid = pane.kernels[0].id, pane.kernels[0].pid
        await pilot.press("f4")
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert question(app).startswith(f"Reset kernel {kernel}? 1 name ")
        await pilot.press("n")
        await wait_until(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        assert alive(app) == [kernel]
        await pilot.press("k")  # the hard kill, asked first
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert question(app).startswith(f"Kill kernel {kernel}? 1 name ")
        await pilot.press("y")
        await wait_until(pilot, lambda: not alive(app))
        assert not pid_running(pid)


async def test_killing_a_busy_kernel_asks_without_a_count(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await submit(pilot, app, "import time\nprint('sleeping', flush=True)\ntime.sleep(30)\n")
        pane = app.query_one(KernelsPane)
        await wait_until(pilot, lambda: pane.kernels and pane.kernels[0].state == "busy")
        await pilot.press("f4")
        await pilot.press("k")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert "Its variables will be lost" in question(app) and not re.search(r"\d+ name", question(app))
        await pilot.press("y")
        await wait_until(pilot, lambda: not alive(app))
        await wait_until(pilot, lambda: blocks(app)[-1].status == "interrupted")


async def test_typing_after_clicking_a_run_goes_to_the_input(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await run(pilot, app, "x = 6")
        await pilot.click(RunBlock)
        await wait_until(pilot, lambda: isinstance(app.focused, RunBlock))
        await pilot.press(*"print(x * 7)")
        prompt = app.query_one(PromptInput)
        assert app.focused is prompt and prompt.text == "print(x * 7)"
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(blocks(app)) == 2 and blocks(app)[-1].status == "success")
        assert blocks(app)[-1].result.output == "42\n"
        await pilot.press("f4")  # a pane's own keys stay its own: r asks to reset the kernel
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        assert prompt.text == ""
        await pilot.press("a")  # a key the kernels pane does not bind goes to the input
        assert app.focused is prompt and prompt.text == "a"


async def test_a_maximised_pane_fits_the_screen(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        for key, pane in (("f2", "#conversation"), ("f3", "#output"), ("f4", "#kernels")):
            await pilot.press(key, "f8")
            await pilot.pause()
            widget = app.query_one(pane)
            assert app.screen.maximized is widget
            for node in (widget, *widget.query("*")):
                if node.display and node.region.area:
                    assert node.region.right <= 80 and node.region.bottom <= 24, (node, node.region)
            assert widget.region.width == 80
            await pilot.press("f8")
            assert app.screen.maximized is None


async def test_focus_keys_restore_a_maximised_pane_first(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        prompt = app.query_one(PromptInput)
        await pilot.press("f3", "f8")
        assert app.screen.maximized is app.query_one("#output")
        await pilot.press("f2")
        await pilot.pause()
        assert app.screen.maximized is None and app.focused is prompt and prompt.region.area
        await pilot.press("f4", "f8")
        await pilot.press("z")  # typing while the kernels pane fills the screen: back to the input
        await pilot.pause()
        assert app.screen.maximized is None and app.focused is prompt and prompt.text == "z"
        await pilot.press("f8", "f3")  # the input maximised, then F3: the output is shown again
        await pilot.pause()
        assert app.screen.maximized is None and app.focused is app.query_one("#output-log")


async def test_help_scrolls_on_a_small_screen(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("f1")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.pause()
        scroll = app.screen.query_one("#help-scroll")
        assert "`f5` Reset kernel" in app.screen.text and "ctrl+r" not in app.screen.text
        assert scroll.max_scroll_y > 0 and app.focused is scroll
        await pilot.press("end")
        await wait_until(pilot, lambda: scroll.scroll_y == scroll.max_scroll_y)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_kernels_table_shows_the_useful_columns_first(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path, "code_execution:\n  kernel_idle_timeout: 600\n")
    async with app.run_test(size=SMALL) as pilot:
        await run(pilot, app, "pass")
        pane = app.query_one(KernelsPane)
        await wait_until(pilot, lambda: pane.kernels and pane.memory)
        table = app.query_one("#kernel-table", KernelTable)
        labels = list(table.columns)
        assert labels[:5] == ["state", "id", "idle", "reaped in", "memory"]
        assert labels[5:] == ["session", "mode", "sandbox", "pid", "runs", "flags", "cwd", "python"]
        await pilot.pause()
        # Issue 32: the columns drawn fit the pane; at 80 columns state, id, the session (a
        # sub-agent's kernel shows there under its parent's) and memory; Right shows the next.
        assert table.shown_columns == ["state", "id", "session", "memory"]
        assert table.virtual_size.width <= table.scrollable_content_region.width
        table.action_sideways(1)
        assert table.shown_columns[:3] == ["state", "id", "memory"] and "idle" in table.shown_columns
        row = table.get_row_at(0)
        assert row[1] == pane.kernels[0].id and row[4].endswith("MB") and re.fullmatch(r"\d+m\d\ds", row[3])


def test_topbar_shortens_in_order() -> None:
    parts = {"version": "0.1.0", "session": "20261130-120000-abcd", "cwd": "/home/user/projects/a-long-name",
             "model": "openrouter · anthropic/claude-sonnet-4 (auto)", "approvals": "smart", "yolo": False}
    full = str(topbar_line(200, **parts))
    assert full.endswith("· /home/user/projects/a-long-name · approvals smart") and "claude-sonnet-4 (auto)" in full
    no_cwd = str(topbar_line(len(full) - 1, **parts))
    assert "/home/user" not in no_cwd and "openrouter · anthropic/claude-sonnet-4 (auto)" in no_cwd
    short = str(topbar_line(len(no_cwd) - 1, **parts))
    assert "openrouter" not in short and " · claude-sonnet-4 · approvals smart" in short
    for width in range(20, 120):
        line = topbar_line(width, **{**parts, "approvals": "off", "yolo": True})
        assert line.cell_len <= width or width < 30, (width, str(line))
        assert "approvals off" in str(line) and "YOLO" in str(line), (width, str(line))


async def test_topbar_fits_80_columns_and_keeps_yolo(hermes_home: Path, tmp_path: Path) -> None:
    deep = tmp_path / "a" / "rather" / "deep" / "working" / "directory"
    deep.mkdir(parents=True)
    settings = ProviderSettings(name="openrouter", kind="openai", model="anthropic/claude-sonnet-4",
                                base_url="http://127.0.0.1:9", api_key="test-key", key_source="test")
    app = HermesApp(make_app(hermes_home, tmp_path, "approvals:\n  mode: off\n").config, cwd=str(deep),
                    home=hermes_home, provider=settings)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        topbar = app.query_one("#topbar")
        text = topbar.render()
        assert text.cell_len <= topbar.content_size.width == 78
        shown = str(text)
        assert "approvals off" in shown and "YOLO" in shown and str(deep) not in shown
        assert "claude-sonnet-4" in shown and app.session in shown
        # The model's label says "openrouter"; the top bar only has room for the model's own name.
        assert "openrouter" not in shown
