"""A host killed with SIGKILL leaves nothing running and, by the next start, nothing on disk
(issue 13, "The host survives a hostile script")."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from hermes_tui.runtime import Runtime
from hermes_tui.runtime.hardening import spawn
from hermes_tui.runtime.leftovers import MARKER, hold, make_staging_dir
from hermes_tui.runtime.reaper import REAPER
from conftest import make_config, pid_running, wait_for

HOST = Path(__file__).parent.parent / "host_process.py"


def _pids_running(argv0: str, argument: str) -> list[int]:
    """Pids whose command line is exactly ``argv0 argument``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                words = handle.read().split(b"\0")
        except OSError:
            continue
        if len(words) >= 2 and words[0].endswith(argv0.encode()) and words[1] == argument.encode():
            found.append(int(entry))
    return found


def test_kill_9_of_the_host_ends_its_shell_commands_and_removes_its_staging_dir() -> None:
    tag = f"311.{random.randrange(10**6):06d}"  # a sleep no other test runs
    host = subprocess.Popen([sys.executable, str(HOST), "shell", tag], stdout=subprocess.PIPE, text=True)
    try:
        staging = Path(json.loads(host.stdout.readline())["staging"])
        assert wait_for(lambda: _pids_running("sleep", tag), timeout=20), "the shell command never started"
        sleepers = _pids_running("sleep", tag)
        assert staging.is_dir()
        os.kill(host.pid, signal.SIGKILL)
        host.wait(10)
        for pid in sleepers:
            assert wait_for(lambda pid=pid: not pid_running(pid), timeout=5), f"sleep {tag} outlived the host"
        assert wait_for(lambda: not staging.exists(), timeout=5), "the staging dir outlived the host"
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()
        for pid in _pids_running("sleep", tag):
            os.kill(pid, signal.SIGKILL)


async def test_a_start_removes_staging_dirs_no_live_host_holds(hermes_home: Path) -> None:
    stale, lock = make_staging_dir()
    os.close(lock)  # its host died
    (stale / "k1").mkdir()
    (stale / "k1" / "hermes_tools.py").write_text("TOKEN = 'old'\n")
    held, lock = make_staging_dir()  # a live host holds its own
    lookalike = Path(tempfile.mkdtemp(prefix="hermes-tui-"))  # named like one, but no host made it
    # "hermes-tui-" and 8 name characters is a staging dir's name; this one is longer, so it is
    # never one, whatever the number
    checkout = Path(tempfile.gettempdir()) / f"hermes-tui-checkout-{random.randrange(10**6):06d}"
    checkout.mkdir()
    (checkout / MARKER).touch()
    try:
        async with Runtime(make_config(), home=hermes_home) as rt:
            await rt.tidied()  # swept beside the start, which does not wait for it (issue 38)
            assert not stale.exists(), "a dead host's staging dir was kept"
            assert held.is_dir(), "a live host's staging dir was removed"
            assert lookalike.is_dir() and checkout.is_dir(), "a folder no host made was removed"
    finally:
        os.close(lock)
        for folder in (stale, held, lookalike, checkout):
            if folder.exists():
                subprocess.run(["rm", "-rf", str(folder)], check=True)


def test_a_script_cannot_write_orders_to_the_reaper(tmp_path: Path) -> None:
    """The reaper is not dumpable: its stdin is not reachable through /proc/<pid>/fd/0."""
    REAPER.watch_folder(tmp_path / "nothing")  # makes sure it runs
    pid = REAPER.pid
    assert pid is not None
    reader = (f"try:\n    open('/proc/{pid}/fd/0', 'w').write('+d /tmp\\n')\n    print('wrote')\n"
              f"except OSError as e:\n    print(type(e).__name__)")
    child = spawn(lambda: subprocess.Popen([sys.executable, "-c", reader], stdout=subprocess.PIPE, text=True))
    try:
        assert child.communicate(timeout=30)[0].strip() == "PermissionError"
    finally:
        REAPER.release_folder(tmp_path / "nothing")


async def test_a_symlink_named_like_a_staging_dir_is_not_followed(hermes_home: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious")
    (victim / MARKER).touch()  # so only the link check stands between the sweep and the victim
    # exactly a staging dir's name: "hermes-tui-" and 8 name characters
    link = Path(tempfile.gettempdir()) / f"hermes-tui-link{random.randrange(10**4):04d}"
    link.symlink_to(victim)
    try:
        async with Runtime(make_config(), home=hermes_home):
            pass
        assert (victim / "keep.txt").read_text() == "precious"
    finally:
        link.unlink()


async def test_a_spill_cut_short_by_a_dead_host_is_removed_at_the_next_start(hermes_home: Path) -> None:
    host = subprocess.Popen([sys.executable, str(HOST), "spilling"], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "HERMES_HOME": str(hermes_home)})
    try:
        cache = Path(json.loads(host.stdout.readline())["cache"])
        os.kill(host.pid, signal.SIGKILL)
        host.wait(10)
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()
    (partial,) = cache.glob(".*.part")
    assert not list(cache.glob("*.stdout.txt")), "a partial spill carried a whole file's name"
    other = cache / ".20261129-000000-deadbeef.stdout.txt.part"  # another host is writing this one
    other.write_bytes(b"y" * 10)
    lock = hold(other)
    try:
        async with Runtime(make_config(), home=hermes_home) as rt:
            await rt.tidied()
            assert not partial.exists(), "the dead host's partial spill was kept"
            assert other.exists(), "a live host's spill was removed while being written"
    finally:
        os.close(lock)


async def test_a_whole_spill_carries_its_name_and_no_part_is_left(runtime: Runtime) -> None:
    result = await runtime.execute_code("print('x' * 100_000)", session="s")
    assert result.stdout_spill_path and Path(result.stdout_spill_path).stat().st_size == 100_001
    assert not list(runtime.cache_dir.glob(".*.part"))


async def test_a_stopped_reaper_never_freezes_the_host(runtime: Runtime) -> None:
    """A script can SIGSTOP the reaper (same user): its pipe fills, and the host must neither
    block on it nor lose track of what to kill."""
    await runtime.execute_code("1", session="s")
    stopped = REAPER.pid
    assert stopped is not None
    os.kill(stopped, signal.SIGSTOP)
    try:
        for n in range(7000):  # 7,000 lines fill a 64 KiB pipe
            REAPER.watch_group(10_000_000 + n)
            REAPER.release_group(10_000_000 + n)
        assert REAPER.pid != stopped, "the stopped reaper was kept"
        result = await asyncio.wait_for(runtime.execute_code(
            "from hermes_tools import terminal\nprint(terminal('echo ok')['output'])", session="t"), 30)
    finally:
        with contextlib.suppress(OSError):
            os.kill(stopped, signal.SIGCONT)
            os.kill(stopped, signal.SIGKILL)
    assert result.output.strip() in ("ok", "") and result.status == "success"
