"""The screen's layout at 80x24 and wider: a maximised pane fits and the focus keys restore it,
help scrolls, and the top bar shortens part by part and keeps what matters (approvals, YOLO)."""

from __future__ import annotations

from pathlib import Path

from hermes_tui.agent.models.resolve import ProviderSettings
from hermes_tui.tui.app import HermesApp
from hermes_tui.tui.widgets.conversation import PromptInput
from hermes_tui.tui.screens.dialogs import HelpScreen
from hermes_tui.tui.screens.main import topbar_line

from helpers.pilot import make_app, wait_until
from helpers.pilot import SMALL


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

