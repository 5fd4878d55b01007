"""The output browser's index, `hermes-tui cache`, and the browser in the app."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from cache_trees import make_tree

from hermes_tui.runtime.cache import find, plan_prune, scan
from hermes_tui.base.units import parse_duration, parse_size
from hermes_tui.tui.widgets.pager import find_in_file, offset_of_line, read_block

CLI = [sys.executable, "-m", "hermes_tui"]


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=120)


@pytest.fixture
def cache_dir(hermes_home: Path) -> Path:
    return hermes_home / "cache" / "exec"


def test_scan_lists_ours_and_hermes_files(cache_dir: Path) -> None:
    make_tree(cache_dir, records=9_000, hermes_files=1_000)
    entries = scan(cache_dir)
    assert len(entries) == 10_000  # spills are listed with their records, not on their own
    assert [e.when for e in entries] == sorted((e.when for e in entries), reverse=True)
    ours = [e for e in entries if e.kind == "record"]
    theirs = [e for e in entries if e.kind == "file"]
    assert len(ours) == 9_000 and len(theirs) == 1_000
    first = next(e for e in ours if e.title == "print('run 0')")
    assert first.status == "success" and first.session == "s0" and first.kernel == "k0"
    assert first.output_file is not None and first.output_file.name.endswith(".stdout.txt")
    assert len(first.files) == 2
    hermes = next(e for e in theirs if e.id == "stdout-000000000000")
    assert hermes.title == "hermes agent output 0" and hermes.output_file == hermes.path
    errors = [e for e in entries if e.matches(status="error", session="s1")]
    assert errors and all(e.status == "error" and e.session == "s1" for e in errors)
    assert [e.title for e in entries if e.matches("run 1234")] == ["print('run 1234')"]


def test_durations_sizes_and_find(cache_dir: Path) -> None:
    assert parse_duration("7d") == 7 * 86400 and parse_duration("90s") == 90 and parse_duration("2w") == 1209600
    assert parse_size("1G") == 1 << 30 and parse_size("500M") == 500 << 20 and parse_size("10kb") == 10240
    for bad in ("7", "soon", "-1d"):
        with pytest.raises(ValueError, match="not a duration"):
            parse_duration(bad)
    make_tree(cache_dir, records=3, hermes_files=1)
    some = scan(cache_dir)[1]
    assert find(cache_dir, some.id).id == some.id
    assert find(cache_dir, some.id[:15]).id == some.id  # a unique prefix (its minute)
    assert find(cache_dir, "2026") is None  # an ambiguous one
    assert find(cache_dir, str(some.path)).id == some.id
    assert find(cache_dir, "nope") is None


def test_prune_never_takes_what_may_be_in_use(cache_dir: Path) -> None:
    make_tree(cache_dir, records=20, hermes_files=5)
    now = time.time()
    busy_spill = cache_dir / "20991231-000000-deadbeef.stdout.txt"  # being written: no record yet
    busy_spill.write_text("still printing\n")
    entries = scan(cache_dir)
    plan = plan_prune(entries, older_than=3 * 3600, max_size=None, now=now)
    assert all(now - e.when > 3 * 3600 for e in plan.delete)
    assert busy_spill not in [p for e in plan.delete for p in e.files]
    assert any(e.path == busy_spill for e in plan.kept_busy)
    sized = plan_prune(entries, older_than=None, max_size=5_000, now=now)
    remaining = sum(e.disk_bytes for e in entries) - sized.bytes_freed
    assert sized.delete and remaining <= 5_000 and sized.delete[0].when == min(e.when for e in entries if e.path != busy_spill)


def test_cache_cli_ls_show_prune(cache_dir: Path, tmp_path: Path) -> None:
    make_tree(cache_dir, records=30, hermes_files=3)
    listed = cli("cache", "ls", "--json", "--session", "s2")
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert rows and all(r["session"] == "s2" for r in rows)
    assert cli("cache", "ls", "--since", "1h").stdout.startswith("No entries")  # all are older
    spilled = next(e for e in scan(cache_dir) if e.output_file and e.kind == "record")
    head = cli("cache", "show", spilled.id, "--head", "2")
    assert head.stdout == "full output of run 0\n" * 2
    tail = cli("cache", "show", str(spilled.output_file), "--tail", "1")
    assert tail.stdout == "full output of run 0\n"
    inline = next(e for e in scan(cache_dir) if e.output_file is None)
    assert cli("cache", "show", inline.id).stdout == inline.title.split("'")[1] + "\n"
    missing = cli("cache", "show", "nothing-like-this")
    assert missing.returncode == 2 and "no entry" in missing.stderr
    dry = cli("cache", "prune", "--older-than", "2h", "--dry-run")
    assert "would delete" in dry.stdout and len(scan(cache_dir)) == 33
    real = cli("cache", "prune", "--older-than", "2h")
    assert real.returncode == 0 and len(scan(cache_dir)) < 33
    assert all(time.time() - e.when <= 2 * 3600 + 60 for e in scan(cache_dir))
    bad = cli("cache", "prune")
    assert bad.returncode == 2 and "--older-than" in bad.stderr


def test_pager_reads_a_huge_sparse_file_by_offset(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    with big.open("wb") as handle:
        handle.write(b"first line\nsecond line\n")
        handle.truncate(1 << 30)  # 1 GiB, sparse
        tail = b"\nneedle near the end\nlast line\n"
        handle.seek((1 << 30) - len(tail))
        handle.write(tail)
    start, data, total = read_block(big, 0)
    assert start == 0 and data.startswith(b"first line\n") and total == 1 << 30
    start, data, _ = read_block(big, 0, at_end=True)
    assert data.endswith(b"last line\n")
    cancel = threading.Event()
    found = find_in_file(big, b"NEEDLE", 0, True, cancel)
    assert found == (1 << 30) - len(tail) + 1
    assert find_in_file(big, b"second", found, False, cancel) == 11
    assert offset_of_line(big, 2, cancel) == 11
    cancel.set()
    assert find_in_file(big, b"not there at all", 0, True, cancel) is None  # cancelled at once


async def test_browser_lists_live_opens_and_survives_vanished_files(hermes_home: Path, tmp_path: Path) -> None:
    from hermes_tui.tui.app import HermesApp
    from hermes_tui.tui.screens.cache_browser import CacheBrowser, EntryScreen
    from hermes_tui.tui.widgets.pager import Pager

    cache_dir = hermes_home / "cache" / "exec"
    make_tree(cache_dir, records=50, hermes_files=5)
    app = HermesApp(cwd=str(tmp_path), home=hermes_home)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("f9")
        browser = app.screen
        assert isinstance(browser, CacheBrowser)
        loop = asyncio.get_running_loop()

        async def until(predicate, timeout=10.0):
            deadline = loop.time() + timeout
            while not predicate():
                assert loop.time() < deadline, "condition not met in time"
                await pilot.pause(0.05)

        await until(lambda: len(browser.entries) == 55)
        (cache_dir / "stdout-fresh0000001.txt").write_text("written by another process\n")
        await until(lambda: len(browser.entries) == 56)  # live, from watchfiles
        assert browser.shown[0].title == "written by another process"
        browser.query_one("#cache-filter").value = "status:error s1"
        await until(lambda: browser.shown and all(e.status == "error" and "s1" in (e.session or "") for e in browser.shown))
        browser.query_one("#cache-filter").value = ""
        await until(lambda: len(browser.shown) == 56)
        spilled = next(i for i, e in enumerate(browser.shown) if e.kind == "record" and e.output_file)
        browser.query_one("#cache-table").move_cursor(spilled)
        browser.query_one("#cache-table").focus()
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, EntryScreen))
        pager = app.screen.query_one(Pager)
        await until(lambda: pager.file_size > 0)
        pager.path.unlink()  # deleted while open
        await pilot.press("G")
        await until(lambda: pager.problem is not None)
        assert "gone" in pager.problem
        await pilot.press("escape")
        locked = cache_dir / "stdout-locked000001.txt"
        locked.write_text("secret\n")
        locked.chmod(0)
        await until(lambda: any(e.path == locked for e in browser.entries))
        assert app.is_running


async def test_unreadable_and_half_written_entries_show_a_clear_state(hermes_home: Path, tmp_path: Path) -> None:
    from textual.app import App, ComposeResult

    from hermes_tui.runtime.cache import CacheEntry
    from hermes_tui.tui.screens.cache_browser import EntryScreen
    from hermes_tui.tui.widgets.pager import Pager

    not_a_file = tmp_path / "a-directory"  # unreadable as a file, even for root
    not_a_file.mkdir()

    class PagerApp(App[None]):
        def compose(self) -> ComposeResult:
            yield Pager(not_a_file)

    app = PagerApp()
    async with app.run_test() as pilot:
        pager = app.query_one(Pager)
        for _ in range(100):
            if pager.problem:
                break
            await pilot.pause(0.05)
        assert pager.problem and pager.problem.startswith(f"cannot read {not_a_file}")

    half = tmp_path / "20261129-120000-abcdef01.json"
    half.write_text('{"format": "hermes-tui/exec-record/1", "id": "20261129-120000-abcdef01", "status": "succ')
    entry = CacheEntry(id="x", path=half, kind="record", when=0, size=0, title="", files=[half])

    class EntryApp(App[None]):
        def on_mount(self) -> None:
            self.push_screen(EntryScreen(entry))

    app2 = EntryApp()
    async with app2.run_test() as pilot:
        note = ""
        for _ in range(100):
            note = str(app2.screen.query_one("#entry-note").render())
            if note:
                break
            await pilot.pause(0.05)
        assert "cannot be read" in note and "half-written" in note


def test_sizes_say_mib_beside_byte_counts(hermes_home: Path) -> None:
    from hermes_tui.base.units import human_size

    assert human_size(8 << 20, " ") == "8.0 MiB" and human_size(195.3 * 1024) == "195.3KiB" and human_size(12) == "12B"
    folder = hermes_home / "cache" / "exec"
    folder.mkdir(parents=True)
    (folder / "stdout-abc123.txt").write_bytes(b"x" * 1023 + b"\n" + b"y" * (3 * 1024 * 1024 - 1024))
    listed = cli("cache", "ls")
    assert listed.returncode == 0 and "  3.0MiB  " in listed.stdout, listed.stdout
    assert "3.0M " not in listed.stdout


SAME_SECOND = ("20261129-142501-3fa2", "20261129-142501-9bc1")


def _records(folder: Path, sessions: tuple[str, ...]) -> None:
    import json
    from datetime import datetime

    from hermes_tui.runtime.records import RECORD_FORMAT

    folder.mkdir(parents=True, exist_ok=True)
    for i, session in enumerate(sessions):
        exec_id = f"20261129-142502-{i:08x}"
        when = datetime(2026, 11, 29, 14, 25, 2 + i).astimezone().isoformat()
        (folder / f"{exec_id}.json").write_text(json.dumps({
            "format": RECORD_FORMAT, "id": exec_id, "status": "success", "session": session, "kernel_id": "k1",
            "started_at": when, "finished_at": when, "title": f"print({i})", "stdout_bytes_total": 2,
            "stdout_spill_path": None, "stdout_truncated": False, "code": f"print({i})\n", "output": f"{i}\n"}))


def test_cache_ls_shows_session_ids_as_unique_prefixes(hermes_home: Path) -> None:
    from hermes_tui.base.units import unique_prefixes

    long = ("delegate::parent-20261129::child-a", "delegate::parent-20261129::child-b")
    _records(hermes_home / "cache" / "exec", SAME_SECOND + long)
    listed = cli("cache", "ls")
    assert listed.returncode == 0, listed.stderr
    everyone = SAME_SECOND + long
    labels = unique_prefixes(everyone, 16)
    assert len(set(labels.values())) == 4 and all(f"  {labels[s]}  " in listed.stdout for s in everyone)
    for label in labels.values():  # each names one session: a prefix of it and of no other
        assert len([s for s in everyone if s.startswith(label.rstrip("…"))]) == 1, listed.stdout
    assert "20261129-14250 " not in listed.stdout  # the old cut, shared by two sessions


async def test_f9_list_shows_session_ids_as_unique_prefixes(hermes_home: Path, tmp_path: Path) -> None:
    from hermes_tui.tui.app import HermesApp
    from hermes_tui.tui.screens.cache_browser import CacheBrowser
    from hermes_tui.tui.widgets.entry_list import EntryList

    long = ("delegate::parent-20261129::child-a", "delegate::parent-20261129::child-b")
    _records(hermes_home / "cache" / "exec", SAME_SECOND + long)
    app = HermesApp(cwd=str(tmp_path), home=hermes_home)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.press("f9")
        browser = app.screen
        assert isinstance(browser, CacheBrowser)
        for _ in range(200):
            if len(browser.shown) == 4:
                break
            await pilot.pause(0.05)
        table = browser.query_one(EntryList)
        cells = [table.format(row).split()[3] for row in table.rows]
        assert len(set(cells)) == 4, cells
        for cell in cells:  # each names one session: a prefix of it and of no other
            assert len([s for s in SAME_SECOND + long if s.startswith(cell.rstrip("…"))]) == 1, cells


def _spilled(folder: Path, lines: int) -> str:
    """A record whose full output (``line N`` and one ESC sequence) is in a spill file; its id."""
    import json

    from hermes_tui.runtime.records import RECORD_FORMAT

    folder.mkdir(parents=True, exist_ok=True)
    exec_id = "20261129-142502-0000beef"
    spill = folder / f"{exec_id}.stdout.txt"
    spill.write_text("".join(f"line {n}\n" for n in range(lines)) + "clear\x1b[2Jme\n")
    (folder / f"{exec_id}.json").write_text(json.dumps({
        "format": RECORD_FORMAT, "id": exec_id, "status": "success", "session": "s", "kernel_id": "k1",
        "started_at": "2026-11-29T14:25:02+00:00", "finished_at": "2026-11-29T14:25:03+00:00", "title": "t",
        "stdout_bytes_total": spill.stat().st_size, "stdout_spill_path": str(spill), "stdout_truncated": True,
        "code": "", "output": ""}))
    return exec_id


def test_cache_show_head_and_tail_together(hermes_home: Path) -> None:
    exec_id = _spilled(hermes_home / "cache" / "exec", 10)
    both = cli("cache", "show", exec_id, "--head", "3", "--tail", "2")
    assert both.returncode == 0, both.stderr
    assert both.stdout == "line 0\nline 1\nline 2\nline 9\nclear\x1b[2Jme\n"  # a pipe: the bytes as they are
    assert "bytes not shown" in both.stderr
    overlapping = cli("cache", "show", exec_id, "--head", "8", "--tail", "5")
    assert overlapping.stdout == "".join(f"line {n}\n" for n in range(10)) + "clear\x1b[2Jme\n"
    assert "not shown" not in overlapping.stderr


def _on_a_tty(*argv: str, env: dict[str, str]) -> tuple[int, bytes]:
    """Run the CLI with its stdout on a pseudo-terminal; its exit code and what it wrote there."""
    import os
    import pty

    leader, follower = pty.openpty()
    try:
        done = subprocess.run([*CLI, *argv], stdout=follower, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                              env=env, timeout=60)
        os.close(follower)
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the terminal has no writer left
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(leader)
    return done.returncode, seen


def test_cache_show_pages_escaped_text_on_a_terminal_and_never_on_a_pipe(hermes_home: Path, tmp_path: Path) -> None:
    import os

    exec_id = _spilled(hermes_home / "cache" / "exec", 5000)
    paged = tmp_path / "paged.txt"
    env = {**os.environ, "HERMES_HOME": str(hermes_home), "PAGER": f"sh -c 'cat > {paged}'"}
    code, seen = _on_a_tty("cache", "show", exec_id, env=env)
    assert code == 0 and b"line 4999" not in seen  # it went to the pager, not the terminal
    text = paged.read_text()
    assert text.startswith("line 0\n") and "line 4999\n" in text
    assert "clear\\x1b[2Jme" in text and "\x1b" not in text  # the script's text, escaped
    bin_dir = tmp_path / "bin"  # no $PAGER: less -FRX, as git does
    bin_dir.mkdir()
    (bin_dir / "less").write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path}/less-args\ncat > {paged}\n")
    (bin_dir / "less").chmod(0o755)
    env = {**env, "PATH": f"{bin_dir}:{env['PATH']}"}
    del env["PAGER"]
    code, _ = _on_a_tty("cache", "show", exec_id, "--tail", "1", env=env)
    assert code == 0 and (tmp_path / "less-args").read_text() == "-FRX\n" and paged.read_text() == "clear\\x1b[2Jme\n"
    paged.unlink()
    piped = subprocess.run([*CLI, "cache", "show", exec_id], capture_output=True, env=env, timeout=60)
    assert piped.returncode == 0 and not paged.exists() and piped.stdout.endswith(b"clear\x1b[2Jme\n")
