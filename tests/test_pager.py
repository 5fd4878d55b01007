"""The pager of saved output: its line number (it follows every jump), `e`, which opens the editor
at that line (or, for a record kept whole, its output's text at the line on screen), Esc and F1,
and a body that fills its rows again after a prompt."""

from __future__ import annotations

import contextlib
import json
import re
import sys
import threading
from pathlib import Path

import pytest
from helpers.pilot import SMALL, make_app, wait_until
from textual.app import App, ComposeResult
from textual.widgets import Label, Static

from hermes_tui.runtime.cache import CacheEntry
from hermes_tui.tui.editor import editor_argv
from hermes_tui.tui.screens.cache_browser import CacheBrowser, EntryScreen
from hermes_tui.tui.screens.dialogs import HelpScreen
from hermes_tui.tui.widgets.messages import OpenInEditor
from hermes_tui.tui.widgets.pager import BLOCK, Pager, line_at, read_block

LINES = 50_000  # ~2.3 MB: far jumps leave the block the pager holds, so the number is counted


def numbered_file(path: Path) -> Path:
    path.write_text("".join(f"row {n:05d}: some output\n" for n in range(1, LINES + 1)))
    return path


def offset_of(path: Path, line: int) -> int:
    return path.read_bytes().index(f"row {line:05d}:".encode())


def status(pager: Pager) -> str:
    return str(pager.query_one("#pager-status", Label).content)


def top_row(pager: Pager) -> int | None:
    """The number written on the top line of the view."""
    found = re.match(r"row (\d+):", str(pager.query_one("#pager-body", Static).content))
    return int(found.group(1)) if found else None


def shown_line(pager: Pager) -> int | None:
    found = re.match(r"line ([\d,]+) ·", status(pager))
    return int(found.group(1).replace(",", "")) if found else None


class PagerApp(App[None]):
    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def compose(self) -> ComposeResult:
        yield Pager(self.path)


def test_line_at_counts_from_an_anchor(tmp_path: Path) -> None:
    path = numbered_file(tmp_path / "out.txt")
    far = offset_of(path, 40_000)
    assert line_at(path, 0) == 1
    assert line_at(path, far) == 40_000
    assert line_at(path, far + 3) == 40_000  # inside the line
    assert line_at(path, far, anchor=(offset_of(path, 39_000), 39_000)) == 40_000
    assert line_at(path, offset_of(path, 10), anchor=(far, 40_000)) == 10  # backwards
    cancelled = threading.Event()
    cancelled.set()
    assert line_at(path, far, cancel=cancelled) is None


async def test_the_status_shows_the_line_on_screen_after_every_jump(tmp_path: Path) -> None:
    path = numbered_file(tmp_path / "out.txt")
    assert path.stat().st_size > 4 * BLOCK
    app = PagerApp(path)
    async with app.run_test(size=(100, 20)) as pilot:
        pager = app.query_one(Pager)

        async def shows(line: int) -> None:
            await wait_until(pilot, lambda: top_row(pager) == line and shown_line(pager) == line, timeout=10)

        await shows(1)
        await pilot.press("colon", *"1000", "enter")  # go to line 1000
        await shows(1000)
        # A jump by byte offset into the middle of line 30,000: the old "line 1,000" must go.
        await pilot.press("number_sign", *str(offset_of(path, 30_000) + 5), "enter")
        await shows(30_000)
        assert "1,000" not in status(pager), status(pager)
        await pilot.press("down")
        await shows(30_001)
        await pilot.press("up", "up")
        await shows(29_999)
        await pilot.press("pagedown")
        await shows(29_999 + pager._height() - 1)
        await pilot.press("G")
        await shows(LINES - pager._height() + 1)
        await pilot.press("g")
        await shows(1)
        await pilot.press("slash", *"row 45678", "enter")
        await shows(45_678)
        await pilot.press("colon", *"20000", "enter")  # a line jump back, out of the block
        await shows(20_000)
        assert "45678" not in status(pager)  # the search's message went with the move


class EntryApp(App[None]):
    def __init__(self, entry: CacheEntry) -> None:
        super().__init__()
        self.entry = entry

    def on_mount(self) -> None:
        self.push_screen(EntryScreen(self.entry))


async def test_e_asks_for_the_editor_at_the_line_on_screen(tmp_path: Path) -> None:
    path = numbered_file(tmp_path / "stdout-0000000000001.txt")
    entry = CacheEntry(id="x", path=path, kind="file", when=0, size=path.stat().st_size, title="row", files=[path])
    asked: list[OpenInEditor] = []
    app = EntryApp(entry)
    async with app.run_test(size=(100, 24), message_hook=lambda m: asked.append(m) if isinstance(m, OpenInEditor) else None) as pilot:
        await wait_until(pilot, lambda: app.screen.query(Pager) and app.screen.query_one(Pager).file_size > 0)
        pager = app.screen.query_one(Pager)
        await pilot.press("number_sign", *str(offset_of(path, 41_234)), "enter")
        await wait_until(pilot, lambda: top_row(pager) == 41_234)
        await pilot.press("e")
        await wait_until(pilot, lambda: bool(asked))
        assert (asked[0].path, asked[0].line) == (str(path), 41_234)


def fake_editor(folder: Path, name: str) -> tuple[Path, Path]:
    """An executable called ``name`` that writes its arguments (JSON) to a file, and that file."""
    folder.mkdir(exist_ok=True)
    record = folder / f"{name}.argv.json"
    script = folder / name
    script.write_text(f"#!{sys.executable}\nimport json, sys\n"
                      f"open({str(record)!r}, 'w').write(json.dumps(sys.argv[1:]))\n")
    script.chmod(0o755)
    return script, record


@pytest.mark.parametrize(("name", "extra", "expected"), [
    ("vim", "", ["+41234", "{path}"]),
    ("code", " --wait", ["--wait", "--goto", "{path}:41234"]),
    ("my-editor", " -x", ["-x", "{path}"]),  # one we do not know: no guessing at its syntax
])
async def test_e_opens_the_editor_at_the_line_on_screen(hermes_home: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch, name: str, extra: str,
                                                        expected: list[str]) -> None:
    from hermes_tui.tui.app import HermesApp

    # A name with a space and a semicolon: it is one argument, never read by a shell.
    path = numbered_file(tmp_path / "out; echo x.txt")
    editor, record = fake_editor(tmp_path / "bin", name)
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", f"{editor}{extra}")
    entry = CacheEntry(id="x", path=path, kind="file", when=0, size=path.stat().st_size, title="row", files=[path])
    app = HermesApp(cwd=str(tmp_path), home=hermes_home)
    monkeypatch.setattr(app, "suspend", contextlib.nullcontext)  # no terminal to hand over in a test
    async with app.run_test(size=(120, 30)) as pilot:
        await app.push_screen(EntryScreen(entry))
        await wait_until(pilot, lambda: app.screen.query(Pager) and app.screen.query_one(Pager).file_size > 0)
        pager = app.screen.query_one(Pager)
        await pilot.press("colon", *"41234", "enter")
        await wait_until(pilot, lambda: top_row(pager) == 41_234)
        await pilot.press("e")
        await wait_until(pilot, record.exists)
        assert json.loads(record.read_text()) == [part.format(path=path) for part in expected]


@pytest.mark.parametrize(("command", "line", "expected"), [
    ("vim", 12, ["vim", "+12", "/f.txt"]),
    ("/usr/bin/nvim -u NONE", 12, ["/usr/bin/nvim", "-u", "NONE", "+12", "/f.txt"]),
    ("nano", 3, ["nano", "+3", "/f.txt"]),
    ("emacs -nw", 3, ["emacs", "-nw", "+3", "/f.txt"]),
    ("micro", 3, ["micro", "+3", "/f.txt"]),
    ("kak", 3, ["kak", "+3", "/f.txt"]),
    ("less", 3, ["less", "+3", "/f.txt"]),
    ("hx", 3, ["hx", "/f.txt:3"]),
    ("code --wait", 3, ["code", "--wait", "--goto", "/f.txt:3"]),
    ("'/opt/My Editor/ed'", 3, ["/opt/My Editor/ed", "/f.txt"]),  # unknown: no line
    ("vim", None, ["vim", "/f.txt"]),
    ("vim", 0, ["vim", "/f.txt"]),
])
def test_editor_argv(command: str, line: int | None, expected: list[str]) -> None:
    assert editor_argv(command, "/f.txt", line) == expected


def test_editor_argv_keeps_the_path_one_argument_and_never_an_option(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert editor_argv("vim", "+!touch x", 5) == ["vim", "+5", str(tmp_path / "+!touch x")]
    assert editor_argv("vim", "-c", None) == ["vim", str(tmp_path / "-c")]
    assert editor_argv("hx", "/a:7", 5) == ["hx", "/a:7"]  # FILE:LINE would be ambiguous
    with pytest.raises(ValueError):
        editor_argv("   ", "/f.txt", 5)


def numbered_rows(path: Path, lines: int = 5_000) -> Path:
    """A file of ``lines`` numbered rows (5,000: a block or two of the pager's)."""
    path.write_text("".join(f"row {n:05d}: some output\n" for n in range(1, lines + 1)))
    return path


def shown_keys(screen) -> list[tuple[str, str]]:
    """The (key, description) pairs the footer shows, in its order (one per action)."""
    keys: list[tuple[str, str]] = []
    actions: set[str] = set()
    for binding in (b.binding for b in screen.active_bindings.values()):
        if binding.show and binding.action not in actions:
            actions.add(binding.action)
            keys.append((binding.key, binding.description))
    return keys


# -- Esc leaves the pager of a cut output, and the footer shows it first ----------------------

async def test_esc_goes_back_from_the_pager_and_the_footer_shows_it_first(tmp_path: Path) -> None:
    path = numbered_rows(tmp_path / "stdout-0000000000001.txt")
    entry = CacheEntry(id="x", path=path, kind="file", when=0, size=path.stat().st_size, title="row", files=[path])
    app = EntryApp(entry)
    async with app.run_test(size=SMALL) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, EntryScreen) and app.screen.query_one(Pager).file_size > 0)
        screen = app.screen
        assert isinstance(app.focused, Pager)
        assert shown_keys(screen)[0] == ("escape", "Back"), shown_keys(screen)
        # Esc first closes an open prompt (the pager keeps the screen) ...
        await pilot.press("colon")
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen and not screen.query_one("#pager-prompt").has_class("visible")
        # ... and with nothing to cancel it goes back, as in the view of an uncut record.
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, EntryScreen))


# -- F1 over the output browser and the pager shows their help --------------------------------

async def test_f1_in_the_browser_and_the_pager_shows_their_help(hermes_home: Path, tmp_path: Path) -> None:
    path = numbered_rows(tmp_path / "stdout-0000000000001.txt")
    entry = CacheEntry(id="x", path=path, kind="file", when=0, size=path.stat().st_size, title="row", files=[path])
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("f9")
        await wait_until(pilot, lambda: isinstance(app.screen, CacheBrowser))
        await pilot.press("f1")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
        text = app.screen.text
        assert text.startswith("# Output browser") and "Conversation" not in text and "`f2`" not in text
        assert "`ctrl+q` Quit" in text
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, CacheBrowser))
        await app.push_screen(EntryScreen(entry))
        await wait_until(pilot, lambda: isinstance(app.screen, EntryScreen) and app.screen.query_one(Pager).file_size > 0)
        await pilot.press("f1")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
        assert app.screen.text.startswith("# Saved output") and "`:` goes to a line" in app.screen.text
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, EntryScreen))


# -- After a prompt, the pager fills its whole body again -------------------------------------

class EagerPager(Pager):
    """Reads its block at once: the read ends before the screen is laid out again (as it can in
    a terminal: there the bug showed; in the pilot the thread is slower than the layout)."""

    def load(self, offset: int, then_end: bool = False) -> None:  # type: ignore[override]
        start, data, size = read_block(self.path, max(0, offset - BLOCK // 4), at_end=then_end)
        self._loaded(start, data, size, offset, then_end)


class EagerPagerApp(App[None]):
    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def compose(self):
        yield EagerPager(self.path)


async def test_the_pager_redraws_its_whole_body_after_a_prompt(tmp_path: Path) -> None:
    path = numbered_rows(tmp_path / "out.txt")
    app = EagerPagerApp(path)
    async with app.run_test(size=SMALL) as pilot:
        pager = app.query_one(Pager)
        body = pager.query_one("#pager-body", Static)

        def rows() -> list[str]:
            return str(body.content).split("\n")

        await wait_until(pilot, lambda: pager.file_size > 0)
        for keys, first in ((("colon", *"1000"), "row 01000"), (("number_sign", *"0"), "row 00001"),
                            (("slash", *"row 02000"), "row 02000"), (("question_mark", *"row 00500"), "row 00500")):
            await pilot.press(*keys, "enter")
            await wait_until(pilot, lambda: rows()[0].startswith(first))
            await pilot.pause()
            await pilot.pause()
            height = body.size.height
            assert height == SMALL[1] - 1  # the prompt is gone: the body has its rows back ...
            assert len(rows()) == height, (keys, len(rows()), height)  # ... and fills them
            assert app.screen.get_widget_at(1, height - 1)[0] is body


# -- `e` on a record kept whole opens its output's text, at the line on screen ----------------

async def test_e_on_an_uncut_record_opens_its_output_at_the_line_on_screen(hermes_home: Path, tmp_path: Path) -> None:
    from helpers.pilot import blocks, submit

    from hermes_tui.tui.widgets.messages import OpenInEditor

    asked: list[OpenInEditor] = []
    app = make_app(hermes_home, tmp_path)
    hook = lambda m: asked.append(m) if isinstance(m, OpenInEditor) else None  # noqa: E731
    async with app.run_test(size=SMALL, message_hook=hook) as pilot:
        await submit(pilot, app, 'for i in range(1, 101): print("out", i)\n')
        await wait_until(pilot, lambda: blocks(app) and blocks(app)[-1].status == "success", timeout=60)
        block = blocks(app)[-1]
        block.focus()
        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(app.screen, EntryScreen) and app.screen.record)
        screen = app.screen
        assert not screen.query(Pager)  # kept whole in the record: shown inline
        view = screen.query_one("#entry-inline")
        await pilot.pause()
        view.scroll_to(y=30, animate=False, immediate=True)
        await pilot.pause()
        await pilot.press("e")
        await wait_until(pilot, lambda: bool(asked))
        path = Path(asked[0].path)
        assert path.suffix == ".txt" and path.read_text() == "".join(f"out {i}\n" for i in range(1, 101))
        assert asked[0].line == 31  # "out 31" is the top line on screen
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, EntryScreen))
        await pilot.pause()
        assert not path.exists()  # the copy goes with the screen
