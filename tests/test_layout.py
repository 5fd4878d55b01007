"""The screen's layout at 80x24 and wider: a maximised pane fits and the focus keys restore it,
help scrolls, the top bar shortens part by part and keeps what matters (approvals, YOLO), every
footer key is in sight, the conversation takes half the width, and the pager's and a dialog's
status lines are never cut."""

from __future__ import annotations

import re
from pathlib import Path

from rich.cells import cell_len

from hermes_tui.agent.models.resolve import ProviderSettings
from hermes_tui.runtime.approvals import ApprovalRequest, FileChange
from hermes_tui.runtime.cache import CacheEntry
from hermes_tui.tui.app import HermesApp
from hermes_tui.tui.screens.approval import ApprovalScreen
from hermes_tui.tui.screens.cache_browser import EntryScreen
from hermes_tui.tui.widgets.conversation import ConversationPane, PromptInput
from hermes_tui.tui.widgets.footer import KeysFooter
from hermes_tui.tui.widgets.pager import Pager
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


# -- every key and status line in sight at 80x24 -----------------------------------------------

def footer_shown(footer: KeysFooter) -> str:
    """The footer's text as it is on screen: its lines, each cut to its width."""
    lines = footer.render().plain.split("\n")[:footer.size.height]
    return "\n".join(line[:footer.size.width] for line in lines)


async def test_every_footer_key_is_in_sight_at_80x24_and_f8_maximises_the_conversation(
        hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await wait_until(pilot, lambda: app.agent is not None)
        for pane in ("f4", "f3", "f2"):  # the kernels pane, the output pane, the input
            await pilot.press(pane)
            await pilot.pause()
            footer = app.main.query_one(KeysFooter)
            shown = footer_shown(footer)
            assert footer.keys and all(f" {key.display} {key.description}" in shown for key in footer.keys), shown
        assert " f8 Maximise" in shown and " ^f Find" in shown
        conversation = app.main.query_one(ConversationPane)
        await pilot.press("f8")
        await pilot.pause()
        assert app.main.maximized is conversation and conversation.outer_size.width == 80
        assert app.focused is app.query_one(PromptInput)
        await pilot.press("f8")
        await pilot.pause()
        assert app.main.maximized is None


async def test_the_conversation_takes_half_the_width_at_80_columns(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        assert app.main.query_one(ConversationPane).outer_size.width >= 40
        assert app.main.query_one("#right").outer_size.width >= 30  # the output and kernels keep room
    wide = make_app(hermes_home, tmp_path)
    async with wide.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        assert wide.main.query_one(ConversationPane).outer_size.width == 64  # wide: as it was (2fr of 5)


async def test_the_pager_status_and_a_dialog_title_are_not_cut_at_80x24(hermes_home: Path, tmp_path: Path) -> None:
    path = tmp_path / "stdout.txt"
    path.write_text("".join(f"line {n} {'needle' if n == 250_000 else 'x' * 40}\n" for n in range(300_000)))
    entry = CacheEntry(id="x", path=path, kind="file", when=0, size=path.stat().st_size, title="row", files=[path])
    app = HermesApp(cwd=str(tmp_path), home=hermes_home)
    async with app.run_test(size=SMALL) as pilot:
        await app.push_screen(EntryScreen(entry))
        await wait_until(pilot, lambda: app.screen.query(Pager) and app.screen.query_one(Pager).file_size > 0)
        pager = app.screen.query_one(Pager)
        await pilot.press("slash", *"needle", "enter")
        await wait_until(pilot, lambda: "at byte" in str(pager.query_one("#pager-status").render()))
        await pilot.pause()
        status = pager.query_one("#pager-status")
        text = status.content.plain
        assert re.fullmatch(r"line 250,001 · byte [\d,]+ of [\d,]+ \(\d+%\) · 'needle' at byte [\d,]+", text), text
        assert status.region.right <= 80 and cell_len(text) <= status.content_size.width * status.content_size.height
        footer = app.screen.query_one(KeysFooter)  # the screen's keys, every one in sight
        assert all(f" {key.display} {key.description}" in footer_shown(footer) for key in footer.keys)
        assert "Copy path" in footer_shown(footer) and "Previous" in footer_shown(footer)
        await pilot.press("escape")

        request = ApprovalRequest(kind="file", text="write_file config/*.yaml", cwd=str(tmp_path), session="s",
                                  origin="user", reasons=["writes outside the working dir"],
                                  choices=["once", "deny"], deadline=1_000_300.0, diff="--- a\n+++ b\n",
                                  files=[FileChange(path=f"/home/user/project/config/{n}.yaml", size=10)
                                         for n in range(12)])
        app.push_screen(ApprovalScreen(request, position=2, total=3, clock=lambda: 1_000_000.0, arming=0))
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.query("#title"))
        await pilot.pause()
        title = app.screen.query_one("#title")
        words = title.content.plain
        assert words.endswith("request 2 of 3")
        assert title.region.right <= app.screen.query_one("#countdown").region.x
        assert cell_len(words) <= title.content_size.width * title.content_size.height
