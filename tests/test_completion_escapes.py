"""Issue 32 trial: a completion never puts a control character into the input.

A file named ``\\x1b[2Jclear.txt`` offered by path completion went into the input raw and
cleared the terminal. The driver leaves such names out, and the input refuses any kernel
candidate that is not printable (the script can replace the driver's answers).
"""

from __future__ import annotations

from pathlib import Path

from hermes_tui.runtime.child import driver
from hermes_tui.tui.widgets.completion import insertable

from helpers.pilot import make_app
from helpers.prompt import popup, ready, run, type_text

SIZE = (120, 40)


def test_the_driver_offers_no_path_with_a_control_or_bidi_character(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "d").mkdir()
    for name in ("\x1b[2Jclear.txt", "bell\x07.txt", "flip\u202eexe.txt", "plain.txt"):
        (tmp_path / "d" / name).write_text("")
    monkeypatch.chdir(tmp_path)
    offered = [item["name"] for item in driver.complete("open('./d/", {})]
    assert offered == ["./d/plain.txt"]


def test_the_input_takes_no_candidate_that_is_not_printable() -> None:
    assert insertable({"name": "alpha", "type": "file"})
    assert not insertable({"name": "\x1b]52;c;AAAA\x07x", "type": "file"})
    assert not insertable({"name": "x", "type": "\x1b[31mred"})
    assert not insertable({"name": "x", "close": "\u202e"})
    assert not insertable({"name": 7})


async def test_tab_on_a_folder_holding_an_escape_named_file_puts_no_escape_in_the_input(hermes_home: Path, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "\x1b[2Jclear.txt").write_text("")
    (tmp_path / "d" / "zz.txt").write_text("")
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        prompt = await ready(pilot, app)
        await run(pilot, app, "x = 1")  # a kernel to ask
        prompt.focus()
        await type_text(pilot, "open('./d/")
        await pilot.press("tab")
        await pilot.pause(0.5)
        if popup(app).display:  # several offered: Enter takes the highlighted (first) one
            await pilot.press("enter")
            await pilot.pause(0.3)
        assert "\x1b" not in prompt.text
        assert prompt.text == "open('./d/zz.txt"
