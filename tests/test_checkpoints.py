"""Checkpoints and rollback (issue 36): a real model server on 127.0.0.1, real kernels, a real
store, real git — a turn whose script writes, deletes and renames with plain Python, a
``patch`` and an approved ``rm``; then the rollback, a hand edit kept, the undo, the
conversation rewind, the headless commands, and what an attacker's files cannot do."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import Approver
from fake_models import FakeModelServer
from helpers.agents import harness_factory  # noqa: F401 - a fixture
from hermes_tui.agent.checkpoints import StoreLog, rollback, rollback_args
from hermes_tui.config import parse_config
from hermes_tui.runtime.checkpoints.book import Checkpoints, RollbackError
from hermes_tui.runtime.checkpoints.shadow import ShadowRepo
from hermes_tui.storage.sessions import load_session

SCRIPT = """
import os
open("a.txt", "w").write("made by the script\\n")
os.remove("b.txt")
os.rename("c.txt", "d.txt")
os.makedirs("deep/er", exist_ok=True)
open("deep/er/new.py", "w").write("print('new')\\n")
"""


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (not .git) with its bytes, and every folder as a marker."""
    out: dict[str, bytes] = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if rel.split("/")[0] in (".git", "hermes-home"):  # the test's HERMES_HOME is beside the files
            continue
        out[rel] = b"<dir>" if path.is_dir() and not path.is_symlink() else (
            b"<link>" + os.readlink(path).encode() if path.is_symlink() else path.read_bytes())
    return out


def seed(work: Path) -> None:
    (work / "b.txt").write_text("b was here\n")
    (work / "c.txt").write_text("c, renamed later\n")
    (work / "e.txt").write_text("line one\nline two\n")
    (work / "f.txt").write_text("removed by rm\n")
    (work / "g.txt").write_text("the user's own file\n")


def the_turn() -> list[dict]:
    return [
        {"tool_calls": [{"name": "execute_code", "arguments": {"code": SCRIPT}},
                        {"name": "patch", "arguments": {"path": "e.txt", "old_string": "line two",
                                                        "new_string": "line 2, patched"}},
                        {"name": "terminal", "arguments": {"command": "rm f.txt"}}]},
        {"text": "Done: wrote, deleted, renamed, patched and removed."},
    ]


async def _session(harness_factory, server, tmp_path: Path, approver=None):
    # approvals.mode strict: every terminal() command is asked (the turn's `rm f.txt` is approved)
    h = await harness_factory(server, "approvals:\n  mode: strict\n", approver=approver or Approver("once"))
    h.runtime.checkpoints.log = StoreLog(h.store)
    h.runtime.checkpoints.sessions.add("s1")
    return h


async def test_a_turn_is_rolled_back_exactly_a_hand_edit_is_kept_and_the_rollback_undone(
        harness_factory, tmp_path: Path) -> None:
    seed(tmp_path)
    before = tree(tmp_path)
    approver = Approver("once")
    server = FakeModelServer([*the_turn(), {"tool_calls": [{"name": "execute_code",
                                                            "arguments": {"code": "print('still here')"}}]},
                              {"text": "ok"}])
    with server:
        h = await _session(harness_factory, server, tmp_path, approver)
        assert await h.turn("change the files") == "done"
        await _rolled_back_and_undone(h, tmp_path, before, approver)
        assert await h.turn("anything changed?") == "done"  # the kernel is told, in its next result
    from hermes_tui.agent.loop import ToolFinished

    result = h.of(ToolFinished)[-1].exec_result
    assert result.output == "still here\n" and "rollback to checkpoint" in (result.warning or "")


async def _rolled_back_and_undone(h, tmp_path: Path, before: dict[str, bytes], approver: Approver) -> None:
    book: Checkpoints = h.runtime.checkpoints
    assert any(r.kind == "terminal" and r.text == "rm f.txt" for r in approver.asked)
    after_turn = tree(tmp_path)
    assert after_turn["a.txt"] == b"made by the script\n" and "b.txt" not in after_turn and "d.txt" in after_turn
    assert after_turn["e.txt"] == b"line one\nline 2, patched\n" and "f.txt" not in after_turn

    await book.settle()  # the lines are counted off the calls' path
    rows = await book.log.all("s1")
    reasons = [row.reason for row in rows]
    assert reasons == ["turn", "execute_code", "patch", "terminal"], reasons
    ledger = {row.reason: set(next(iter(row.changed.values()), {})) for row in rows}
    assert ledger["execute_code"] == {"a.txt", "b.txt", "c.txt", "d.txt", "deep/er/new.py"}
    assert ledger["patch"] == {"e.txt"} and ledger["terminal"] == {"f.txt"} and ledger["turn"] == set()
    assert rows[1].turn_id == rows[0].turn_id and rows[2].call_id and rows[2].files == 1 and rows[2].lines == (1, 1)

    (tmp_path / "g.txt").write_text("the user's own file, edited by hand\n")  # between turns: the user's
    plan = await book.plan("s1", 1, None, str(tmp_path))
    assert sorted(plan.lines(str(tmp_path))) == sorted([
        "delete a.txt", "recreate b.txt", "recreate c.txt", "delete d.txt", "delete deep/er/new.py",
        "restore e.txt", "recreate f.txt"])
    done = await rollback(book, h.store, plan, conversation=False)
    assert not done.problems
    restored = tree(tmp_path)
    assert restored == {**before, "g.txt": b"the user's own file, edited by hand\n"}  # deep/ is gone too
    assert done.before is not None and done.before.reason == "rollback"
    assert f"/rollback {done.before.n} undoes this" in " ".join(done.notes())

    undo = await book.plan("s1", done.before.n, None, str(tmp_path))
    await rollback(book, h.store, undo, conversation=False)
    assert tree(tmp_path) == {**after_turn, "g.txt": b"the user's own file, edited by hand\n"}


async def test_rollback_with_the_conversation_hides_the_turn_and_the_undo_shows_it_again(
        store_backend: str, harness_factory, tmp_path: Path) -> None:
    """On SQLite and on a shared PostgreSQL store: the rows, the rewind and the undo."""
    seed(tmp_path)
    with FakeModelServer([{"text": "first answer"}, *the_turn()]) as server:
        h = await _session(harness_factory, server, tmp_path)
        assert await h.turn("just talk") == "done"
        assert await h.turn("change the files") == "done"
    book = h.runtime.checkpoints
    rows = await book.log.all("s1")
    second_turn = [row for row in rows if row.reason == "turn"][1]
    plan = await book.plan("s1", second_turn.n, None, str(tmp_path))
    done = await rollback(book, h.store, plan, conversation=True)
    assert done.rewound is not None and done.rewound[0] >= 3
    stored = await h.store.call(load_session, "s1")
    assert [m["content"] for m in stored.messages if m["role"] == "user"] == ["just talk"]
    assert "b.txt" in tree(tmp_path)
    # The rollback's own checkpoint remembers the conversation as it was: rolling back to it
    # shows the hidden messages again.
    undo = await book.plan("s1", done.before.n, None, str(tmp_path))
    again = await rollback(book, h.store, undo, conversation=True)
    assert again.rewound is not None and again.rewound[1] >= 3
    stored = await h.store.call(load_session, "s1")
    assert [m["content"] for m in stored.messages if m["role"] == "user"] == ["just talk", "change the files"]
    assert "b.txt" not in tree(tmp_path)


def _shadow(home: Path, work: Path, cap: int = 10 << 20) -> ShadowRepo:
    return ShadowRepo(home, str(work), max_file_size=cap, exclude=[str(home)])


def test_the_workspaces_own_git_repository_is_never_touched(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    git = ["git", "-C", str(work), "-c", "user.name=u", "-c", "user.email=u@x"]
    subprocess.run([*git, "init", "-q"], check=True)
    (work / "tracked.txt").write_text("v1\n")
    subprocess.run([*git, "add", "tracked.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    marker = tmp_path / "hook-ran"
    hook = work / ".git" / "hooks" / "post-index-change"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    (work / "tracked.txt").write_text("v2, not committed\n")
    (work / "untracked.txt").write_text("new\n")

    def state() -> tuple[str, str]:
        status = subprocess.run([*git, "--no-optional-locks", "status", "--porcelain"], capture_output=True,
                                text=True).stdout
        digest = hashlib.sha256()
        for path in sorted((work / ".git").rglob("*")):
            if path.is_file():
                digest.update(path.as_posix().encode() + path.read_bytes())
        return status, digest.hexdigest()

    first = state()
    marker.unlink(missing_ok=True)
    repo = _shadow(home, work)
    shot = repo.snapshot("one")
    (work / "tracked.txt").write_text("v3\n")
    repo.snapshot("two")
    repo.restore(shot.commit, repo.changes(shot.commit, ["tracked.txt"]))
    assert (work / "tracked.txt").read_text() == "v2, not committed\n"
    assert state() == first and not marker.exists()
    assert ".git/HEAD" not in repo.files(shot.commit) and "untracked.txt" in repo.files(shot.commit)


def test_a_huge_file_is_not_captured_and_a_rollback_says_so(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    (work / "small.txt").write_text("small\n")
    book = Checkpoints(parse_config("checkpoints:\n  max_file_size: 1K\n").checkpoints, home)
    repo = book.repo(str(work))
    assert repo is not None
    first = repo.snapshot("one")
    (work / "huge.bin").write_bytes(b"x" * 5000)
    (work / "small.txt").write_text("changed\n")
    second = repo.snapshot("two")
    assert second.skipped == {"huge.bin": 5000} and set(second.changed) == {"small.txt"}
    assert "huge.bin" not in repo.files(second.commit)
    from hermes_tui.runtime.checkpoints.book import Checkpoint

    rows = [Checkpoint("s", 1, time.time(), "execute_code", commits={repo.root: first.commit},
                       changed={repo.root: {"small.txt": [1, 1]}}, skipped={repo.root: second.skipped})]
    plan = book.plan_from(rows, 1, None, str(work))
    assert plan.lines(str(work)) == ["restore small.txt",
                                     "not captured (over checkpoints.max_file_size), left as it is: huge.bin (4.9KiB)"]
    repo.restore(first.commit, plan.changes[repo.root])
    assert (work / "small.txt").read_text() == "small\n" and (work / "huge.bin").stat().st_size == 5000
    (work / "huge.bin").write_bytes(b"y" * 10)  # under the cap again: captured from now on
    assert "huge.bin" in repo.files(repo.snapshot("three").commit)


def test_a_link_planted_where_a_folder_was_is_replaced_never_written_through(tmp_path: Path) -> None:
    home, work, outside = tmp_path / "home", tmp_path / "work", tmp_path / "outside"
    (work / "sub").mkdir(parents=True)
    outside.mkdir()
    (work / "sub" / "x.txt").write_text("inside\n")
    repo = _shadow(home, work)
    first = repo.snapshot("one")
    (work / "sub" / "x.txt").unlink()
    (work / "sub").rmdir()
    (work / "sub").symlink_to(outside)  # a script's trap: the restore would write x.txt there
    repo.snapshot("two")
    problems = repo.restore(first.commit, repo.changes(first.commit, None))
    assert problems == []
    assert not (work / "sub").is_symlink() and (work / "sub" / "x.txt").read_text() == "inside\n"
    assert list(outside.iterdir()) == []


def test_gitattributes_in_the_workspace_cannot_change_the_bytes_kept(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    (work / ".gitattributes").write_text("* text eol=crlf\n*.txt filter=evil ident\n")
    data = b"one\r\ntwo\nthree $Id$\r\n"
    (work / "f.txt").write_bytes(data)
    repo = _shadow(home, work)
    first = repo.snapshot("one")
    (work / "f.txt").write_bytes(b"changed\n")
    repo.snapshot("two")
    repo.restore(first.commit, repo.changes(first.commit, ["f.txt"]))
    assert (work / "f.txt").read_bytes() == data
    # A planted repository config (a command git would run) is put back before git runs.
    (repo.git_dir / "config").write_text("[core]\n\tfsmonitor = touch " + str(tmp_path / "pwned") + "\n")
    (work / "f.txt").write_bytes(b"again\n")
    repo.snapshot("three")
    assert not (tmp_path / "pwned").exists()


KILL_SNAPSHOT = """
import sys
from pathlib import Path
from hermes_tui.runtime.checkpoints.shadow import ShadowRepo
ShadowRepo(Path(sys.argv[1]), sys.argv[2], max_file_size=1 << 30).snapshot("killed")
"""


def test_kill_9_mid_snapshot_leaves_a_valid_repository(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    for d in range(40):
        (work / f"d{d}").mkdir(parents=True)
        for f in range(100):
            (work / f"d{d}" / f"f{f}.txt").write_text(f"{d} {f}\n" * 50)
    for attempt in range(3):
        child = subprocess.Popen([sys.executable, "-c", KILL_SNAPSHOT, str(home), str(work)], start_new_session=True)
        time.sleep(0.15 + 0.1 * attempt)
        os.killpg(child.pid, signal.SIGKILL)  # git too, wherever it was
        child.wait()
    repo = _shadow(home, work)
    shot = repo.snapshot("after the kills")
    assert len(repo.files(shot.commit)) == 4000
    env = {"GIT_DIR": str(repo.git_dir), "PATH": os.environ["PATH"]}
    fsck = subprocess.run(["git", "fsck", "--no-dangling"], env=env, capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr
    (work / "d1" / "f1.txt").write_text("changed\n")
    assert set(repo.snapshot("and on").changed) == {"d1/f1.txt"}


def test_rollback_arguments_are_read_or_refused_in_one_line() -> None:
    args = rollback_args("3 --conversation --files a.py 'b c.txt'")
    assert not isinstance(args, str) and args.n == 3 and args.conversation and args.files == ["a.py", "b c.txt"]
    for bad, says in (("", "needs a checkpoint number"), ("x", "not a checkpoint number"),
                      ("2 --nope", "'--nope' is not understood"), ("2 --files", "at least one path"),
                      ("2 'open", "No closing quotation")):
        refusal = rollback_args(bad)
        assert isinstance(refusal, str) and says in refusal and "/rollback N" in refusal, refusal


async def test_checkpoints_are_off_when_configured_or_for_a_big_folder_outside_git(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.mkdir()
    for i in range(10_001):
        (big / f"{i}").touch()
    book = Checkpoints(parse_config("").checkpoints, tmp_path / "home")
    assert book.roots(str(big)) == [] and "holds more than 10,000 files" in " ".join(book.take_notes("s"))
    forced = Checkpoints(parse_config("checkpoints:\n  enabled: true\n").checkpoints, tmp_path / "home")
    assert forced.roots(str(big)) == [str(big.resolve())]
    off = Checkpoints(parse_config("checkpoints:\n  enabled: false\n").checkpoints, tmp_path / "home")
    off.log = object()  # type: ignore[assignment]
    off.sessions.add("s")
    assert not off.active and await off.begin("s", "turn", cwd=str(big)) is None


def _cli(home: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HERMES_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "hermes_tui", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)


async def test_the_headless_commands_list_diff_and_roll_back(store_backend: str, harness_factory, hermes_home: Path,
                                                              tmp_path: Path) -> None:
    seed(tmp_path)
    with FakeModelServer(the_turn()) as server:
        h = await _session(harness_factory, server, tmp_path)
        assert await h.turn("change the files") == "done"
    await h.runtime.checkpoints.settle()
    await h.agent.aclose()  # the session's lease is released: a shell may roll it back
    listed = _cli(hermes_home, "checkpoints", "s1", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [r["reason"] for r in rows] == ["turn", "execute_code", "patch", "terminal"]
    assert rows[2]["files"] == 1 and rows[2]["added"] == 1 and rows[2]["removed"] == 1
    text = _cli(hermes_home, "checkpoints", "s1", cwd=tmp_path).stdout
    assert "before patch e.txt" in text and "1 file +1 -1" in text
    diff = _cli(hermes_home, "diff", "s1", "3", cwd=tmp_path)
    assert diff.returncode == 0 and "-line two" in diff.stdout and "+line 2, patched" in diff.stdout
    asked = _cli(hermes_home, "rollback", "s1", "3", cwd=tmp_path)  # no tty, no --yes: nothing written
    assert "restore e.txt" in asked.stdout and "run with --yes" in asked.stderr
    assert "patched" in (tmp_path / "e.txt").read_text()
    only = _cli(hermes_home, "rollback", "s1", "1", "--files", "b.txt", "--yes", cwd=tmp_path)
    assert only.returncode == 0, only.stderr
    assert (tmp_path / "b.txt").read_text() == "b was here\n" and "d.txt" in os.listdir(tmp_path)
    whole = _cli(hermes_home, "rollback", "s1", "1", "--yes", cwd=tmp_path)
    assert whole.returncode == 0 and "Rolled back 6 files to checkpoint 1" in whole.stdout, whole.stdout
    assert (tmp_path / "e.txt").read_text() == "line one\nline two\n" and not (tmp_path / "a.txt").exists()
    for bad, says in ((("diff", "s1", "99"), "checkpoint 99 is not one of this session's"),
                      (("rollback", "nope", "1"), "no session matches 'nope'"),
                      (("diff", "s1", "zero"), "'zero' is not a checkpoint number")):
        failed = _cli(hermes_home, *bad, cwd=tmp_path)
        assert failed.returncode != 0 and says in failed.stderr and "Traceback" not in failed.stderr, failed.stderr


async def test_a_call_that_changes_too_many_files_has_a_bounded_ledger(harness_factory, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_tui.runtime.checkpoints import book as book_module

    monkeypatch.setattr(book_module, "LEDGER_MAX", 3)
    many = "for i in range(6):\n    open(f'n{i}.txt', 'w').write(str(i))\n"
    with FakeModelServer([{"tool_calls": [{"name": "execute_code", "arguments": {"code": many}}]},
                          {"text": "made six"}]) as server:
        h = await _session(harness_factory, server, tmp_path)
        assert await h.turn("many files") == "done"
    book = h.runtime.checkpoints
    await book.settle()
    rows = await book.log.all("s1")
    assert list(rows[1].changed.values()) == [{"*": [6, 0]}]  # one entry, not one per file
    plan = await book.plan("s1", 1, None, str(tmp_path))  # every file that differs is put back
    assert sorted(plan.lines(str(tmp_path))) == [f"delete n{i}.txt" for i in range(6)]


async def test_the_models_own_unflagged_command_is_its_doing(harness_factory, tmp_path: Path) -> None:
    (tmp_path / "g.txt").write_text("one\n")
    with FakeModelServer([{"tool_calls": [{"name": "terminal", "arguments": {"command": "echo two >> g.txt"}}]},
                          {"text": "appended"}]) as server:
        h = await harness_factory(server)  # approvals manual: an append is not flagged, nobody is asked
        h.runtime.checkpoints.log = StoreLog(h.store)
        h.runtime.checkpoints.sessions.add("s1")
        assert await h.turn("append") == "done"
    book = h.runtime.checkpoints
    await book.settle()
    rows = await book.log.all("s1")
    assert [(r.reason, r.detail) for r in rows] == [("turn", "append"), ("terminal", "echo two >> g.txt")]
    assert list(rows[1].changed.values()) == [{"g.txt": [1, 0]}]
    plan = await book.plan("s1", 1, None, str(tmp_path))
    assert plan.lines(str(tmp_path)) == ["restore g.txt"]


async def test_without_git_checkpoints_are_off_said_once_and_calls_run(harness_factory, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_tui.runtime.checkpoints import shadow

    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))  # git cannot be found; python is run by path
    # git is looked for once per process: a fresh look-up under this PATH, for this test only
    monkeypatch.setattr(shadow, "git_program", functools.cache(shadow.git_program.__wrapped__))
    with FakeModelServer([{"tool_calls": [{"name": "execute_code", "arguments": {"code": "print(6 * 7)"}}]},
                          {"text": "42"},
                          {"tool_calls": [{"name": "execute_code", "arguments": {"code": "print(7)"}}]},
                          {"text": "7"}]) as server:
        h = await _session(harness_factory, server, tmp_path)
        assert await h.turn("one") == "done"
        assert await h.turn("two") == "done"
    from hermes_tui.agent.loop import ToolFinished

    first, second = (event.exec_result for event in h.of(ToolFinished))
    assert first.output == "42\n" and "Checkpoints are off: checkpoints need git" in (first.warning or "")
    assert second.output == "7\n" and "git" not in (second.warning or "")
    assert await h.runtime.checkpoints.log.all("s1") == []


def test_a_git_planted_in_the_folder_is_never_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_tui.runtime.checkpoints import shadow

    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    marker = tmp_path / "planted-git-ran"
    planted = work / "git"
    planted.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    planted.chmod(0o755)
    # an empty PATH entry (a trailing ':') and '.' mean the folder git runs in
    monkeypatch.setenv("PATH", ".:" + os.environ["PATH"] + ":")
    monkeypatch.setattr(shadow, "git_program", functools.cache(shadow.git_program.__wrapped__))
    (work / "f.txt").write_text("x\n")
    shot = _shadow(home, work).snapshot("one")
    assert shot.commit and not marker.exists()


def test_a_negated_gitignore_cannot_bring_hermes_home_into_a_snapshot(tmp_path: Path) -> None:
    work = tmp_path / "work"
    home = work / "hermes-home"
    (home / "tui").mkdir(parents=True)
    (home / ".env").write_text("OPENAI_API_KEY=sk-secret\n")
    (work / ".gitignore").write_text("!/hermes-home/\n!hermes-home/**\n")
    (work / "f.txt").write_text("x\n")
    repo = _shadow(home, work)
    first = repo.snapshot("one")
    (work / "g.txt").write_text("y\n")
    second = repo.snapshot("two")
    assert not [p for p in repo.files(second.commit) if p.startswith("hermes-home")]
    changes = repo.changes(first.commit, None)
    assert [c.path for c in changes] == ["g.txt"]  # never "delete hermes-home/.env"
    assert (home / ".env").exists()


def test_a_private_file_stays_private_and_a_nested_repository_is_left_alone(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    (work / "vendored").mkdir(parents=True)
    subprocess.run(["git", "-C", str(work / "vendored"), "init", "-q"], check=True)
    (work / "vendored" / "lib.py").write_text("v = 1\n")
    secret = work / ".env"
    secret.write_text("TOKEN=1\n")
    secret.chmod(0o600)
    repo = _shadow(home, work)
    first = repo.snapshot("one")
    assert repo.files(first.commit) == [".env"]  # the repository of its own is not captured
    assert repo.snapshot("again").commit == first.commit  # and is not seen as a change every time
    secret.write_text("TOKEN=2\n")
    (work / "vendored" / "lib.py").write_text("v = 2\n")
    repo.snapshot("two")
    changes = repo.changes(first.commit, None)
    assert [(c.path, c.action) for c in changes] == [(".env", "restore")]
    assert repo.restore(first.commit, changes) == []
    assert secret.read_text() == "TOKEN=1\n" and (secret.stat().st_mode & 0o777) == 0o600


async def test_a_store_that_fails_never_stops_the_call(tmp_path: Path) -> None:
    class Down:
        async def last(self, session: str) -> int:
            raise ConnectionError("the server is down")

        async def save(self, checkpoint, keep: int) -> None:
            raise ConnectionError("the server is down")

        async def all(self, session: str) -> list:
            return []

    book = Checkpoints(parse_config("").checkpoints, tmp_path / "home")
    book.log = Down()
    book.sessions.add("s")
    (tmp_path / "w").mkdir()
    assert await book.begin("s", "execute_code", cwd=str(tmp_path / "w")) is None
    book._numbers["s"] = 4  # the number is known: the save is what fails
    assert await book.begin("s", "execute_code", cwd=str(tmp_path / "w")) is None
    notes = " ".join(book.take_notes("s"))
    assert "could not be read (ConnectionError: the server is down)" in notes
    assert "Checkpoint 5 could not be stored (ConnectionError: the server is down)" in notes
