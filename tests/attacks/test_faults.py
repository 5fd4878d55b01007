"""Clear failures: a broken machine around the app ends in one line, never a traceback, a hang
or a read without end; and text from a script or a model never drives the terminal or the markup.

* a garbage, truncated or FIFO ``sessions.db`` under ``sessions`` / ``export`` / ``--resume``;
* ``exec`` with a ``HERMES_HOME`` that cannot be written (under a file, on /proc, and as an
  unprivileged user on a tree owned by root — these machines run as root, where chmod stops
  nothing);
* ``allowlist.yaml``, ``config.yaml`` and cache entries that are a FIFO, a link to /dev/zero,
  huge or corrupt;
* control characters in commands, rules, titles, paths and errors the CLI prints, and markup
  in names the app shows.

Every CLI run here is a real process with its address space and file size capped, so the old
unbounded reads fail fast instead of filling the machine, and with a timeout, so a hang fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import io
import json
import os
import resource
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from hermes_tui.storage import sessions as db
from hermes_tui.storage import opening
from hermes_tui.runtime.records import RECORD_FORMAT

CLI = [sys.executable, "-m", "hermes_tui"]
MEMORY_CAP = 2 << 30
"""Address space of each CLI run: an unbounded read hits it in a second or two."""
OUTPUT_CAP = 64 << 20
"""Bytes a CLI run may write to a file (its captured stdout too): endless output is killed."""
ESC_COMMAND = "ls -la\x1b[1A\x1b[2K\rrm -rf ~"
"""Shown raw, the terminal moves up, erases the line and returns: it reads as `rm -rf ~`'s
disguise. Shown escaped, every byte of it is visible."""
NOBODY = 65534


def _limits() -> None:  # runs in the child, before exec
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
    resource.setrlimit(resource.RLIMIT_FSIZE, (OUTPUT_CAP, OUTPUT_CAP))


def run(*argv: str, env: dict[str, str] | None = None, timeout: float = 60, limits: bool = True,
        cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``hermes-tui ARGV`` as a real process; stdout and stderr through files (capped), never pipes
    that would hold endless output in this process."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen([*CLI, *argv], stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                   env={**os.environ, **(env or {})}, preexec_fn=_limits if limits else None,
                                   start_new_session=True, cwd=cwd)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise AssertionError(f"hermes-tui {' '.join(argv)} hung (killed after {timeout:g} s)") from None
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(argv, process.returncode, out.read().decode(errors="replace"),
                                           err.read().decode(errors="replace"))


def one_line_failure(done: subprocess.CompletedProcess[str], *needles: str) -> str:
    """Exit 2 and exactly one line on stderr, ``hermes-tui: ...``, holding every needle."""
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hermes-tui: "), done.stderr[-3000:]
    assert done.returncode == 2, (done.returncode, done.stderr)
    for needle in needles:
        assert needle in lines[0]
    return lines[0]


@pytest.fixture
def fifos() -> Iterator[Callable[[Path], Path]]:
    """Make FIFOs; at the end, open each for writing once, so a reader stuck on one (the old
    code, in a thread of this process) gets end of file instead of hanging for ever."""
    made: list[Path] = []

    def make(path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(path)
        made.append(path)
        return path

    yield make
    release(made)


def release(fifos: list[Path]) -> None:
    """Let a reader blocked opening one of ``fifos`` go (it reads end of file), then remove them.

    Released for a second, over and over: a reader let go from one may next open another.
    """
    for _ in range(20):
        for fifo in fifos:
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass  # no reader waiting, or gone
        time.sleep(0.05)
    for fifo in fifos:
        fifo.unlink(missing_ok=True)


def within(seconds: float, fn: Callable[[], object]) -> object:
    """``fn()`` run in a thread; fails if it takes longer than ``seconds`` (a hang)."""
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the test
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds:g} s: it hangs"
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box.get("value")


# -- 1. the sessions database ---------------------------------------------------------------

def _garbage(path: Path) -> None:
    path.write_bytes(os.urandom(8192))


def _truncated(path: Path) -> None:
    """A real database cut in half (a disk that filled, a copy that stopped)."""
    conn = opening.connect(path)
    for number in range(60):
        session = f"s{number:03d}"
        db.create_session(conn, session, None, None, None)
        for _ in range(20):
            db.add_message(conn, session, None, "user", "x" * 500)
    conn.close()
    with path.open("r+b") as handle:
        handle.truncate(path.stat().st_size // 2)


def _fifo(path: Path) -> None:
    os.mkfifo(path)


@pytest.mark.parametrize("damage", [_garbage, _truncated, _fifo], ids=["random-bytes", "truncated", "fifo"])
@pytest.mark.parametrize("argv", [["sessions"], ["export", "latest"], ["export", "s001", "-o", "out.json"],
                                  ["--resume"], ["--resume", "s059"]], ids=" ".join)
def test_a_broken_sessions_database_is_one_line(hermes_home: Path, tmp_path: Path, damage, argv: list[str]) -> None:
    path = opening.sessions_db_path(hermes_home)
    path.parent.mkdir(parents=True)
    damage(path)
    line = one_line_failure(run(*argv, cwd=tmp_path), f"the sessions database {path}", "move it aside")
    assert "starts a new one" in line


# -- 2. exec with a HERMES_HOME that cannot be written ----------------------------------------

@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "s.py"
    path.write_text("print('ran')\n")
    return path


def test_exec_under_a_file_is_one_line(tmp_path: Path, script: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder\n")
    home = tmp_path / "a-file" / "home"  # ENOTDIR, for root too
    config = tmp_path / "config.yaml"
    config.write_text("approvals:\n  mode: manual\n")
    done = run("--config", str(config), "exec", str(script), env={"HERMES_HOME": str(home)})
    one_line_failure(done, f"HERMES_HOME ({home}) cannot be written", "Not a directory",
                     "set HERMES_HOME to a directory you can write")
    assert "ran" not in done.stdout
    # Without --config the config file is the first thing that cannot be read: one line too.
    one_line_failure(run("exec", str(script), env={"HERMES_HOME": str(home)}), "config", "Not a directory")


def test_exec_on_a_read_only_filesystem_is_one_line(script: Path) -> None:
    home = "/proc/hermes-tui-test-home"  # procfs: no folder can be made there, not even by root
    assert not os.path.exists(home)
    one_line_failure(run("exec", str(script), env={"HERMES_HOME": home}), f"HERMES_HOME ({home}) cannot be written")


def _as_nobody(argv: list[str], home: Path, timeout: float = 60) -> tuple[int, str]:
    """``hermes_tui.cli.main(argv)`` in a forked child that dropped to uid/gid 65534.

    The interpreter lives under /root (mode 0700 here), so nobody cannot start a new one: the
    child is a fork of this process, with everything it needs imported first.
    """
    import hermes_tui.cli

    for name in ("hermes_tui.cli.exec_cmd", "hermes_tui.base.text", "hermes_tui.cli.tty_approver", "hermes_tui.config",
                 "hermes_tui.base.paths", "hermes_tui.runtime", "hermes_tui.base.fsutil",
                 "traceback"):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 99
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            os.environ["HERMES_HOME"] = str(home)
            captured = io.StringIO()
            sys.stdout = sys.stderr = captured
            try:
                code = hermes_tui.cli.main(argv)
            except BaseException as exc:  # reported as the traceback it would have been
                import traceback

                captured.write("Traceback (most recent call last):\n" + "".join(traceback.format_exception(exc)))
                code = 1
            os.write(write_end, json.dumps({"code": code, "stderr": captured.getvalue()}).encode())
        finally:
            os._exit(code)
    os.close(write_end)
    chunks = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            ready, _, _ = select.select([read_end], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, "the command run as nobody hung"
            chunk = os.read(read_end, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_end)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
    answer = json.loads(b"".join(chunks) or b'{"code": -1, "stderr": "no answer"}')
    return answer["code"], answer["stderr"]


@pytest.fixture
def root_owned_tree() -> Iterator[Path]:
    """A folder tree owned by root that everyone may read and nobody else may write (outside
    pytest's temp dir, whose parent is 0700)."""
    base = Path(tempfile.mkdtemp(prefix="hermes-faults-"))
    try:
        base.chmod(0o755)
        yield base
    finally:
        shutil.rmtree(base)


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping to another user needs root (these machines run as root)")
def test_exec_as_a_user_who_cannot_write_home_is_one_line(root_owned_tree: Path) -> None:
    home = root_owned_tree / "home"
    home.mkdir(mode=0o755)
    (home / "cache").mkdir(mode=0o755)  # partly there: a write, not a mkdir, is what fails
    script = root_owned_tree / "s.py"
    script.write_text("print('ran')\n")
    script.chmod(0o644)
    code, stderr = _as_nobody(["exec", str(script)], home)
    assert "Traceback" not in stderr, stderr[-3000:]
    lines = stderr.splitlines()
    assert code == 2 and len(lines) == 1, stderr
    assert lines[0].startswith(f"hermes-tui: exec: HERMES_HOME ({home}) cannot be written")
    assert "Permission denied" in lines[0]
    assert sorted(p.name for p in home.rglob("*")) == ["cache"]  # nothing written as nobody


# -- 3. allowlist.yaml, config.yaml and cache entries that are not plain small files --------

def _device(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _huge_rules(path: Path) -> None:
    rule = "- exact: echo this rule pads the file out\n  added_at: '2026-11-29T10:00:00+0000'\n"
    path.write_text("rules:\n" + rule * ((3 << 20) // len(rule)))  # ~3 MiB of valid rules


def _no_list(path: Path) -> None:
    path.write_text("rules: 5\n")


def _not_utf8(path: Path) -> None:
    path.write_bytes(b"rules:\n- exact: \xff\xfe\n")


@pytest.mark.parametrize(("damage", "problem"), [
    (_fifo, "it is a FIFO (named pipe), not a regular file"),
    (_device, "it is a character device, not a regular file"),
    (_huge_rules, "over the 1 MiB allowed for allowlist.yaml"),
    (_no_list, "has no list under `rules:`"),
    (_not_utf8, "is not UTF-8 text"),
], ids=["fifo", "dev-zero", "huge", "rules-not-a-list", "not-utf8"])
def test_a_broken_allowlist_is_one_warning_and_no_rules(hermes_home: Path, damage, problem: str) -> None:
    path = hermes_home / "tui" / "allowlist.yaml"
    path.parent.mkdir()
    damage(path)
    done = run("approvals", "rules")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"warning: {path} "), done.stderr[-3000:]
    assert problem in lines[0] and "its rules are ignored" in lines[0]
    assert "No allow rules" in done.stdout


def test_a_broken_allowlist_gives_no_rules_without_hanging(hermes_home: Path, fifos) -> None:
    from hermes_tui.runtime.rules import load_allowlist

    path = fifos(hermes_home / "tui" / "allowlist.yaml")
    rules, problem = within(10, lambda: load_allowlist(path))  # type: ignore[misc]
    assert rules == [] and "FIFO" in problem


def _huge_config(path: Path) -> None:
    path.write_text("# padding\n" * (1 << 20))  # 10 MiB of comments


@pytest.mark.parametrize(("damage", "problem"), [
    (_fifo, "it is a FIFO (named pipe), not a regular file"),
    (_device, "it is a character device, not a regular file"),
    (_huge_config, "over the 8 MiB allowed for a config file"),
], ids=["fifo", "dev-zero", "huge"])
def test_a_config_file_that_is_not_a_plain_file_is_one_line(hermes_home: Path, damage, problem: str) -> None:
    path = hermes_home / "config.yaml"
    damage(path)
    one_line_failure(run("cache", "ls"), f"config error: config file {path} cannot be used", problem)


def _record(folder: Path, exec_id: str, **fields: object) -> Path:
    record = {"format": RECORD_FORMAT, "id": exec_id, "status": "success", "session": "s", "kernel_id": "k1",
              "started_at": datetime.now().astimezone().isoformat(), "title": "print('hello')",
              "stdout_bytes_total": 6, "stdout_spill_path": None, "stdout_truncated": False,
              "code": "print('hello')\n", "output": "hello\n", **fields}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{exec_id}.json"
    path.write_text(json.dumps(record, indent=1))
    return path


@pytest.fixture
def hostile_cache(hermes_home: Path, tmp_path: Path, fifos) -> Path:
    """cache/exec with one good record and what a script could leave there instead of files."""
    folder = hermes_home / "cache" / "exec"
    _record(folder, "20261129-100000-0000good")
    fifos(folder / "20261129-100001-0000fifo.json")
    fifos(folder / "stdout-fifo.txt")
    (folder / "stdout-zero.txt").symlink_to("/dev/zero")
    elsewhere = _record(tmp_path / "elsewhere", "20261129-100002-0000link")
    (folder / elsewhere.name).symlink_to(elsewhere)  # a link is not an entry: it could point at a secret
    # A record that names /dev/zero as its full output (there is no <id>.stdout.txt next to it).
    _record(folder, "20261129-100003-0000zero", stdout_spill_path="/dev/zero", stdout_truncated=True,
            output="the capped output\n")
    # A record too big to read whole, laid out so its small fields are not in the head.
    big = {"format": RECORD_FORMAT, "code": "x" * (17 << 20), "id": "20261129-100004-00000big",
           "stdout_bytes_total": 1}
    (folder / "20261129-100004-00000big.json").write_text(json.dumps(big))
    return folder


def test_cache_ls_skips_what_is_not_a_file_and_says_so(hostile_cache: Path) -> None:
    done = run("cache", "ls")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    listed = done.stdout.splitlines()
    assert len(listed) == 2 and "0000good" in done.stdout and "0000zero" in done.stdout, done.stdout
    skipped = sorted(done.stderr.splitlines())
    assert skipped == sorted([
        "hermes-tui: cache: skipped 20261129-100001-0000fifo.json: it is a FIFO (named pipe), not a regular file",
        "hermes-tui: cache: skipped stdout-fifo.txt: it is a FIFO (named pipe), not a regular file",
        "hermes-tui: cache: skipped stdout-zero.txt: it is a symbolic link, not a regular file",
        "hermes-tui: cache: skipped 20261129-100002-0000link.json: it is a symbolic link, not a regular file",
        "hermes-tui: cache: skipped 20261129-100004-00000big.json: it is 17 MiB, over the 16 MiB allowed for a record",
    ]), done.stderr


def test_cache_show_never_streams_a_device_a_record_names(hostile_cache: Path) -> None:
    done = run("cache", "show", "20261129-100003-0000zero")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == "the capped output\n"
    fifo = hostile_cache / "20261129-100001-0000fifo.json"
    one_line_failure(run("cache", "show", str(fifo)), "cache show: no entry")


def test_scan_and_records_never_hang_or_read_without_end(hostile_cache: Path) -> None:
    from hermes_tui.runtime.cache import CacheError, find, load_record, scan

    problems: list[str] = []
    entries = within(20, lambda: scan(hostile_cache, problems))
    assert sorted(e.id for e in entries) == ["20261129-100000-0000good", "20261129-100003-0000zero"]  # type: ignore[union-attr]
    assert len(problems) == 5
    zero = within(20, lambda: find(hostile_cache, "20261129-100003-0000zero"))
    assert zero.output_file is None and zero.spill is None  # type: ignore[union-attr]
    with pytest.raises(CacheError, match="17 MiB, over the 16 MiB"):
        within(20, lambda: load_record(hostile_cache / "20261129-100004-00000big.json"))
    with pytest.raises(CacheError, match="FIFO"):
        within(20, lambda: load_record(hostile_cache / "20261129-100001-0000fifo.json"))


def test_read_capped_reads_at_most_the_cap(tmp_path: Path, fifos) -> None:
    from hermes_tui.base.fsutil import FileRefused, read_capped

    small = tmp_path / "small"
    small.write_bytes(b"x" * 100)
    assert read_capped(small, 100) == b"x" * 100
    with pytest.raises(FileRefused, match="it is 101 bytes, over the 100 bytes hermes-tui reads"):
        small.write_bytes(b"x" * 101)
        read_capped(small, 100)
    # /proc files say they are empty and are not: the cap holds on what is read, not the size.
    with pytest.raises(FileRefused, match="grew past"):
        read_capped("/proc/self/maps", 10)
    with pytest.raises(FileRefused, match="FIFO"):
        within(10, lambda: read_capped(fifos(tmp_path / "fifo"), 10))
    link = tmp_path / "link"
    link.symlink_to(small)
    assert len(read_capped(link, 1000)) == 101
    with pytest.raises(FileRefused, match="symbolic link"):
        read_capped(link, 1000, follow_symlinks=False)


def test_settings_in_a_fifo_read_as_defaults_and_are_replaced(hermes_home: Path, fifos) -> None:
    from hermes_tui.tui.settings import remember_theme, remembered_theme, settings_path

    path = fifos(settings_path(hermes_home))
    assert within(10, lambda: remembered_theme(hermes_home, {"a", "b"}, "a")) == "a"
    within(10, lambda: remember_theme(hermes_home, "b"))
    assert path.is_file() and remembered_theme(hermes_home, {"a", "b"}, "a") == "b"


# -- 4. big config files: the C loader --------------------------------------------------------

def test_config_and_allowlist_load_with_the_c_loader(hermes_home: Path, monkeypatch) -> None:
    from hermes_tui.config import load_config
    from hermes_tui.runtime.rules import add_rule, allowlist_path, load_allowlist

    if not getattr(yaml, "__with_libyaml__", False):
        pytest.skip("PyYAML was built without libyaml here")
    used: list[str] = []

    class Spy(yaml.CSafeLoader):  # type: ignore[misc,name-defined]
        def __init__(self, stream: object) -> None:
            used.append("C")
            super().__init__(stream)

    monkeypatch.setattr(yaml, "CSafeLoader", Spy)
    (hermes_home / "config.yaml").write_text("command_allowlist:\n" + "".join(
        f"  - 'git log -n {i} *'\n" for i in range(20_000)))
    assert len(load_config().command_allowlist) == 20_000
    add_rule(allowlist_path(hermes_home), "make test")
    assert [r.pattern for r in load_allowlist(allowlist_path(hermes_home))[0]] == ["make test"]
    assert len(used) == 2  # the config and the allowlist (add_rule found no file to read)
    monkeypatch.delattr(yaml, "CSafeLoader")  # PyYAML without libyaml: the Python loader, same result
    assert len(load_config().command_allowlist) == 20_000


# -- 5. control characters the CLI prints ------------------------------------------------------

def no_raw_controls(text: str) -> None:
    """Nothing that would drive a terminal: no ESC, no CR."""
    assert "\x1b" not in text and "\r" not in text, repr(text[-2000:])


def test_sessions_list_escapes_titles(hermes_home: Path) -> None:
    conn = opening.connect(opening.sessions_db_path(hermes_home))
    db.create_session(conn, "s1", None, None, None)
    db.start_turn(conn, "s1", "t1", "injected", ESC_COMMAND)
    conn.close()
    done = run("sessions")
    assert done.returncode == 0, done.stderr
    no_raw_controls(done.stdout)
    assert "ls -la\\x1b[1A\\x1b[2K" in done.stdout  # the title is the first line (a CR ends it)


def test_cache_ls_escapes_titles_and_ids(hermes_home: Path) -> None:
    _record(hermes_home / "cache" / "exec", "20261129-100000-0000good", title=ESC_COMMAND, session="\x1b[2Js")
    done = run("cache", "ls")
    assert done.returncode == 0, done.stderr
    no_raw_controls(done.stdout)
    assert "ls -la\\x1b[1A\\x1b[2K\\x0drm -rf ~" in done.stdout and "\\x1b[2Js" in done.stdout


def test_approvals_rules_and_log_escape_commands(hermes_home: Path) -> None:
    (hermes_home / "tui").mkdir()
    (hermes_home / "tui" / "allowlist.yaml").write_text(yaml.safe_dump({"rules": [{"exact": ESC_COMMAND}]}))
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"command_allowlist": ["echo \x1b]0;title\x07 *"]}))
    log = [{"at": "2026-11-29T10:00:00", "event": "request", "kind": "terminal", "session": "s\x1b[2J",
            "origin": "user", "text": ESC_COMMAND, "reasons": ["deletes \x1b[8m files"]},
           {"at": "2026-11-29T10:00:01", "event": "decision", "decision": "allow", "why": "ok\x1b[1A",
            "stored_in": "/x\x1b[2K"},
           {"at": "2026-11-29T10:00:02", "event": "auto", "decision": "refused", "kind": "terminal",
            "text": ESC_COMMAND, "why": ["hard \x1b[1A"]}]
    (hermes_home / "tui" / "approvals.jsonl").write_text("".join(json.dumps(e) + "\n" for e in log))
    rules = run("approvals", "rules")
    assert rules.returncode == 0, rules.stderr
    no_raw_controls(rules.stdout)
    assert "exact  ls -la\\x1b[1A\\x1b[2K\\x0drm -rf ~" in rules.stdout
    assert "glob   echo \\x1b]0;title\\x07 *" in rules.stdout
    shown = run("approvals", "log")
    assert shown.returncode == 0, shown.stderr
    no_raw_controls(shown.stdout)
    assert shown.stdout.count("ls -la\\x1b[1A\\x1b[2K\\x0drm -rf ~") == 2
    assert "[s\\x1b[2J/user]" in shown.stdout and "deletes \\x1b[8m files" in shown.stdout
    assert "ok\\x1b[1A (stored in /x\\x1b[2K)" in shown.stdout and "hard \\x1b[1A" in shown.stdout
    revoke = run("approvals", "revoke", "nope\x1b[2J")
    assert revoke.returncode == 1
    no_raw_controls(revoke.stderr)


def test_errors_and_exec_notes_escape_what_they_quote(tmp_path: Path) -> None:
    missing = run("exec", str(tmp_path / "gone\x1b[2J.py"))
    one_line_failure(missing, "no such file", "gone\\x1b[2J.py")
    no_raw_controls(missing.stderr)
    failing = tmp_path / "f.py"
    failing.write_text("raise RuntimeError('boom \\x1b[1A\\x1b[2K\\r' + 'hidden')\n")
    done = run("exec", str(failing), limits=False)  # a kernel: no address-space cap
    assert done.returncode == 1
    no_raw_controls(done.stderr)
    assert "f.py: error: RuntimeError: boom \\x1b[1A\\x1b[2K" in done.stderr


def test_the_terminal_prompt_shows_an_escape_sequence_escaped(tmp_path: Path) -> None:
    from helpers.terminal import on_a_terminal

    (tmp_path / "t.py").write_text("from hermes_tools import terminal\n"
                                   "print(terminal('echo rm -rf ~\\x1b[1A\\x1b[2K\\rls -la').get('status'))\n")
    seen, out = on_a_terminal(tmp_path, 1, "d\n")  # deny, no reason
    assert b"\x1b[1A" not in seen and b"\x1b[2K" not in seen and b"\r" not in seen.replace(b"\r\n", b"\n")
    assert b"echo rm -rf ~\\x1b[1A\\x1b[2K\\x0dls -la" in seen
    assert out == "blocked\n"


# -- 6. markup in names the app shows -----------------------------------------------------------

MARKUP_NAME = "[/]x [bold]b[/bold] [@click=app.quit]q[/]"


async def test_cache_browser_rows_entry_and_notices_show_markup_literally(hermes_home: Path, tmp_path: Path) -> None:
    from helpers.pilot import wait_until
    from helpers.pilot import shows_literally

    from hermes_tui.tui.app import HermesApp
    from hermes_tui.tui.screens.cache_browser import CacheBrowser, EntryScreen
    from hermes_tui.tui.widgets.messages import OpenInEditor

    folder = hermes_home / "cache" / "exec"
    _record(folder, "20261129-100000-0000good", title=f"print('{MARKUP_NAME}')", session="[/]s",
            id="[bold]id[/bold]")
    (folder / "stdout-[bold]x.txt").write_text(f"{MARKUP_NAME}\n")
    app = HermesApp(cwd=str(tmp_path), home=hermes_home)
    async with app.run_test(size=(180, 40), notifications=True) as pilot:
        await pilot.press("f9")
        browser = app.screen
        assert isinstance(browser, CacheBrowser)
        await wait_until(pilot, lambda: len(browser.entries) == 2)
        await shows_literally(pilot, app, f"print('{MARKUP_NAME}')", "[/]s", "[bold]id[/bold]", "stdout-[bold]x",
                              MARKUP_NAME)
        browser.query_one("#cache-table").move_cursor(next(
            i for i, e in enumerate(browser.shown) if e.kind == "record"))
        browser.query_one("#cache-table").focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, EntryScreen))
        await shows_literally(pilot, app, "[bold]id[/bold] · success", "session [/]s")
        await pilot.press("escape", "escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, CacheBrowser))
        # A path with markup in a notice: the editor cannot start here (no terminal to suspend to).
        app.post_message(OpenInEditor(f"/tmp/{MARKUP_NAME}.txt"))
        await wait_until(pilot, lambda: any("Could not open" in str(n.message) for n in app._notifications))
        assert any(f"/tmp/{MARKUP_NAME}.txt" in str(n.message) for n in app._notifications)
        await pilot.pause(0.2)
        await shows_literally(pilot, app, "/tmp/[/]x")
        assert app.is_running


async def test_cache_browser_lists_around_fifos_and_device_links(hostile_cache: Path, hermes_home: Path,
                                                                 tmp_path: Path) -> None:
    from helpers.pilot import wait_until

    from hermes_tui.tui.app import HermesApp
    from hermes_tui.tui.screens.cache_browser import CacheBrowser

    app = HermesApp(cwd=str(tmp_path), home=hermes_home)
    async with app.run_test(size=(160, 40)) as pilot:
        try:
            await pilot.press("f9")
            browser = app.screen
            assert isinstance(browser, CacheBrowser)
            await wait_until(pilot, lambda: len(browser.entries) == 2, timeout=20)
            assert {e.id for e in browser.entries} == {"20261129-100000-0000good", "20261129-100003-0000zero"}
            assert app.is_running
        finally:  # the old code sits in open() on a FIFO: let it go, or the app never exits
            release([path for path in hostile_cache.iterdir() if path.is_fifo()])


def test_sqlite_and_os_errors_have_their_own_line() -> None:
    from hermes_tui.cli.errors import database_problem, os_problem

    path = Path("/h/tui/sessions.db")
    assert "is locked by another process" in database_problem(path, sqlite3.OperationalError("database is locked"))
    assert "cannot be opened for writing" in database_problem(
        path, sqlite3.OperationalError("attempt to write a readonly database"))
    denied = PermissionError(13, "Permission denied", "/h/cache/exec")
    assert os_problem(denied, Path("/h")).startswith("/h/cache/exec: Permission denied (HERMES_HOME is /h:")
    assert os_problem(denied, Path("/elsewhere")) == "/h/cache/exec: Permission denied"


def test_a_fifo_or_huge_dotenv_never_hangs_provider_resolution(hermes_home: Path) -> None:
    """A script can put a FIFO where $HERMES_HOME/.env goes: the app reads it at start."""
    from hermes_tui.agent.models.providers import resolve_provider
    from conftest import make_config

    config = make_config("model: anthropic/claude-sonnet-4\n")
    os.mkfifo(hermes_home / ".env")
    try:
        settings = within(10, lambda: resolve_provider(config, hermes_home, {"OPENROUTER_API_KEY": "sk-from-env"}))
    finally:
        (hermes_home / ".env").unlink()
    assert settings.api_key == "sk-from-env"  # the rest of the resolution goes on
    (hermes_home / ".env").write_bytes(b"A=" + b"x" * (2 << 20) + b"\n")
    settings = resolve_provider(config, hermes_home, {"OPENROUTER_API_KEY": "sk-from-env"})
    assert settings.api_key == "sk-from-env"


def test_always_on_a_broken_allowlist_keeps_the_users_rules(hermes_home: Path) -> None:
    """A typo in allowlist.yaml must not make the next "always" rewrite it with one rule."""
    from hermes_tui.runtime.rules import RulesNotSaved, add_rule, allowlist_path, remove_rule

    path = allowlist_path(hermes_home)
    path.parent.mkdir(parents=True, exist_ok=True)
    broken = "rules:\n  - exact: make test\n  - exact: 'pytest -q\n"  # an unclosed quote
    path.write_text(broken)
    with pytest.raises(RulesNotSaved, match="nothing was changed"):
        add_rule(path, "ls -la")
    with pytest.raises(RulesNotSaved):
        remove_rule(path, "make test")
    assert path.read_text() == broken
    done = run("approvals", "revoke", "make test", env={"HERMES_HOME": str(hermes_home)})
    assert done.returncode == 2 and "nothing was changed" in one_line_failure(done)
    assert path.read_text() == broken


async def test_execute_code_answers_with_an_error_when_the_runtime_cannot_start(
        hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import make_config

    from hermes_tui.runtime import Runtime

    monkeypatch.setattr(tempfile, "tempdir", str(hermes_home / "no" / "such" / "tmp"))
    rt = Runtime(make_config(), home=hermes_home)
    try:
        failed = await rt.execute_code("print(1)", session="s")
        assert failed.status == "error" and failed.error.startswith("the host could not start the runtime: ")
        assert "\n" not in failed.error and "Traceback" not in failed.error
        monkeypatch.undo()  # the temp dir is back: the next call starts the runtime after all
        ok = await rt.execute_code("print(1)", session="s")
        assert ok.output == "1\n"
    finally:
        await rt.aclose()


async def test_a_search_through_a_huge_one_line_file_answers_and_leaves_no_ripgrep(
        hermes_home: Path, tmp_path: Path) -> None:
    """A minified bundle: one 8 MiB line with a match in it, and a normal file beside it."""
    from conftest import make_config

    from hermes_tui.runtime import Runtime
    from hermes_tui.runtime.tools.search import ripgrep

    if ripgrep() is None:
        pytest.skip("ripgrep is not installed")
    (tmp_path / "bundle.min.js").write_bytes(b"var a=1;" * (1 << 20) + b"NEEDLE;" + b"x" * 1000 + b"\n")
    (tmp_path / "notes.txt").write_text("one\nNEEDLE here\n")
    async with Runtime(make_config(), home=hermes_home) as rt:
        result = await asyncio.wait_for(rt.call_tool("search_files", {"pattern": "NEEDLE", "path": str(tmp_path),
                                                                      "context": 1}, session="s"), 30)
    assert result["total"] == 2, result
    (long_match,) = [m for m in result["matches"] if m["path"].endswith("bundle.min.js")]
    assert long_match["line"] == 1 and "too long to show" in long_match["text"]
    (short,) = [m for m in result["matches"] if m["path"].endswith("notes.txt")]
    assert short["line"] == 2 and short["before"] == ["one\n"] or short["before"] == ["one"]


def test_reading_a_huge_one_line_file_holds_a_bounded_amount(tmp_path: Path) -> None:
    """read_file streams a big file; a single 200 MB line must not be held whole either."""
    big = tmp_path / "dump.json"
    with big.open("wb") as handle:
        handle.write(b"first\n")
        for _ in range(200):
            handle.write(b"[" * (1 << 20))
        handle.write(b"\nlast\n")
    probe = (
        "import resource, sys\n"
        "from pathlib import Path\n"
        "from hermes_tui.runtime.tools.files import _read_pinned\n"
        "from hermes_tui.runtime.tools.opening import pin_regular\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        f"path = Path({str(big)!r})\n"
        "pinned = pin_regular(path)\n"
        "result = _read_pinned(pinned.open(path), pinned.status.st_size, 1, 10, path)\n"
        "grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before\n"
        "print(result['total_lines'], grown // 1024, result['content'].splitlines()[1][-60:])\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    lines, grown_mib, shown = done.stdout.split(" ", 2)
    assert lines == "3" and int(grown_mib) < 50, done.stdout
    assert "line cut at 2000 chars of 209,715,201 bytes" in shown
