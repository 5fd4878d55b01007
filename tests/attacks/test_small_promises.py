"""Issue 31, item 8: the smaller promises, each tried as an attack on the real app.

* Bidi and other invisible format characters in a script's output, a model's reply or a file
  in the cache reach the screen escaped (``\\u202e``), never raw: a right-to-left override
  would reverse what follows it on the user's terminal.

(The spill caps, "deny all of this script" and a broken config.yaml at start have their own
files: test_spill_caps.py, test_deny_all.py, test_broken_config.py.)
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

from hermes_tui.tui.screens.cache_browser import CacheBrowser, EntryScreen
from hermes_tui.tui.widgets.output import OutputLog
from hermes_tui.tui.widgets.safe import visible

from fake_models import FakeModelServer
from helpers.pilot import make_app, SIZE, submit, wait_until
from helpers.pilot import screen_text
from helpers.models import model_app, replies

BIDI = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069",
        "\u200e", "\u200f", "\u061c"]
"""Every bidi control (embeddings, overrides, isolates, marks)."""
HIDDEN = [*BIDI, "\u200b", "\u2060", "\ufeff", "\u2028", "\u2029", "\U000e0041", "\u00ad"]
"""And the other invisible ones: zero-width space, word joiner, BOM, separators, a tag, soft hyphen."""


def raw_hidden(text: str) -> list[str]:
    """The invisible characters that would reach the terminal as they are."""
    return sorted({f"U+{ord(c):04X}" for c in text if c in HIDDEN})


def test_every_format_character_of_this_python_is_escaped_but_the_joiners() -> None:
    """The shared helper's list is Unicode's: every Cf, Zl and Zp character, ZWJ/ZWNJ kept."""
    kept = {"\u200c", "\u200d"}
    missed = [f"U+{code:04X}" for code in range(0x110000)
              if unicodedata.category(chr(code)) in ("Cf", "Zl", "Zp") and chr(code) not in kept
              and visible(chr(code)) == chr(code)]
    assert not missed, missed
    assert visible("\u202e") == "\\u202e" and visible("\U000e0041") == "\\U000e0041"
    assert visible("👩\u200d💻 ok") == "👩\u200d💻 ok"  # an emoji sequence stays whole


async def test_a_script_printing_a_bidi_override_shows_it_escaped(hermes_home: Path, tmp_path: Path) -> None:
    # The script builds the characters itself: nothing hidden is in what is typed.
    code = ("print('invoice_' + chr(0x202e) + 'fdp.exe', ''.join(chr(c) for c in "
            f"{[ord(c) for c in HIDDEN]!r}), 'end')")
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, app, code)
        log = app.query_one(OutputLog)
        await wait_until(pilot, lambda: any("end" in line for line in log.lines) and "invoice_" in screen_text(app))
        await pilot.pause(0.2)
        shown = screen_text(app)
        assert not raw_hidden(shown), raw_hidden(shown)
        assert "invoice_\\u202efdp.exe" in shown  # in the output pane (and the run's block)
        for wrap in (False, True):  # both ways of drawing the log
            log.wrap = wrap
            await pilot.pause(0.1)
            drawn = "".join(segment.text for y in range(log.size.height) for segment in log.render_line(y))
            assert "\\u202e" in drawn and not raw_hidden(drawn), raw_hidden(drawn)


async def test_a_model_reply_with_a_bidi_override_shows_it_escaped(hermes_home: Path, tmp_path: Path) -> None:
    reply = ("All done. Run `" + "\u202e" + "~ fr- mr" + "\u202c" + "` to clean up.\n\n"
             "- item \u2066hidden\u2069 **bold\u200f**\n")
    with FakeModelServer([{"text": reply, "chunk": 5}]) as server:
        app = model_app(hermes_home, tmp_path, server, session="s-bidi")
        async with app.run_test(size=SIZE) as pilot:
            await submit(pilot, app, "tidy up")
            await wait_until(pilot, lambda: "to clean up" in replies(app))
            await pilot.pause(0.3)
            shown = screen_text(app)
            assert not raw_hidden(shown), raw_hidden(shown)
            assert "\\u202e~ fr- mr\\u202c" in shown


async def test_a_file_in_the_cache_shows_its_bidi_characters_escaped(hermes_home: Path, tmp_path: Path) -> None:
    """A Hermes Agent output file (any script can write the folder): its title in the browser
    (its first line) and its text in the pager."""
    folder = hermes_home / "cache" / "exec"
    folder.mkdir(parents=True)
    (folder / "stdout-0badc0de.txt").write_text("title \u202egnp.exe\nsafe \u202etxt.exe\u202c line\nzero\u200bwidth\n")
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f9")
        browser = app.screen
        assert isinstance(browser, CacheBrowser)
        await wait_until(pilot, lambda: len(browser.entries) == 1 and "gnp.exe" in screen_text(app))
        shown = screen_text(app)
        assert not raw_hidden(shown), raw_hidden(shown)
        assert "title \\u202egnp.exe" in shown
        browser.query_one("#cache-table").focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, EntryScreen) and "width" in screen_text(app))
        shown = screen_text(app)
        assert not raw_hidden(shown), raw_hidden(shown)
        assert "safe \\u202etxt.exe\\u202c line" in shown
