"""Script output never reaches the terminal raw: the output pane shows ESC and the other
control characters as visible escapes, wrapped or not (Textual's Log only filters \\x00-\\x14)."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult

from hermes_tui.tui.widgets.output import OutputLog

HOSTILE = "a\x1b]0;owned\x07 b \x1b[2J c \x9b31m d \x7f e\tf\n"


class LogApp(App[None]):
    def compose(self) -> ComposeResult:
        yield OutputLog(id="log")


@pytest.mark.parametrize("wrap", [True, False])
async def test_control_characters_in_output_are_shown_as_escapes(wrap: bool) -> None:
    app = LogApp()
    async with app.run_test(size=(80, 10)) as pilot:
        log = app.query_one(OutputLog)
        log.wrap = wrap
        log.write(HOSTILE)
        await pilot.pause()
        assert log.lines[0] == HOSTILE[:-1]  # the raw line is kept (copy, search)
        text = "".join(segment.text for segment in log.render_line(0))
        assert not any(ord(ch) < 0x20 or 0x7f <= ord(ch) <= 0x9f for ch in text), repr(text)
        assert text.startswith("a\\x1b]0;owned\\x07 b \\x1b[2J c \\x9b31m d \\x7f e")
        assert log.row_count == 1 if wrap else log.line_count == 1


async def test_a_long_line_of_escapes_wraps_by_its_visible_width() -> None:
    app = LogApp()
    async with app.run_test(size=(40, 10)) as pilot:
        log = app.query_one(OutputLog)
        log.write("\x1b" * 30 + "\n")  # 120 visible cells
        await pilot.pause()
        width = log.scrollable_content_region.width
        rows = [("".join(segment.text for segment in log.render_line(y))).rstrip() for y in range(log.row_count)]
        assert "".join(rows) == "\\x1b" * 30 and log.row_count == -(-120 // width)
