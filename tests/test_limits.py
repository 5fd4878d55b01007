"""Timeouts, floods and the host's death: the limits of SPEC §2 with real processes."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import pid_running, running_with, wait_for

from hermes_tui.runtime import Runtime

HOST = Path(__file__).parent / "host_process.py"
pytestmark = pytest.mark.slow


async def test_timeout_kills_a_script_that_ignores_sigterm(runtime: Runtime) -> None:
    await runtime.execute_code("x = 1", session="s")
    kernel_pid = runtime.kernels()[0].pid
    started = time.monotonic()
    result = await runtime.execute_code(
        "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('stubborn', flush=True)\ntime.sleep(120)",
        session="s",
        timeout=1,
    )
    elapsed = time.monotonic() - started
    assert result.status == "timeout"
    assert result.error == "Script timed out after 1s and was killed."
    assert result.output == "stubborn\nScript timed out after 1s and was killed.\n"
    assert result.exit_code == -signal.SIGKILL
    assert 5.5 <= elapsed < 9, elapsed  # SIGTERM at 1 s, SIGKILL 5 s later
    assert not pid_running(kernel_pid)
    after = await runtime.execute_code("print('x' in globals())", session="s")
    assert after.output == "False\n" and after.kernel.state_reset and "timed out" in after.warning


async def test_timeout_takes_sleeping_grandchildren_too(runtime: Runtime) -> None:
    result = await runtime.execute_code(
        "import subprocess, time\n"
        "p = subprocess.Popen(['sleep', '300.17'])\n"
        "q = subprocess.Popen(['sh', '-c', 'trap \"\" TERM; sleep 300.18; :'])\n"
        "print(p.pid, q.pid, flush=True)\n"
        "time.sleep(120)",
        session="s",
        timeout=1.5,
    )
    assert result.status == "timeout"
    assert "timed out after 1.5s" in result.error
    for marker in ("300.17", "300.18"):
        assert wait_for(lambda marker=marker: not running_with(marker), timeout=2), f"grandchild {marker} survived"


async def test_a_quick_sigterm_death_is_not_held_for_the_grace(runtime: Runtime) -> None:
    started = time.monotonic()
    result = await runtime.execute_code("import time\ntime.sleep(60)", session="s", timeout=1)
    assert result.status == "timeout"
    assert time.monotonic() - started < 3  # the group died at SIGTERM: no 5 s wait


def test_flood_of_200_mb_is_capped_spilled_whole_and_memory_stays_flat(hermes_home: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(HOST), "flood", "200"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    result = report["result"]
    total = 200 * 1024 * 1024
    assert result["status"] == "success"
    assert result["stdout_truncated"] is True and result["stdout_bytes_total"] == total
    omitted = total - 20_000 - 30_000
    assert f"\n\n... [OUTPUT TRUNCATED - {omitted} bytes omitted out of {total} total] ...\n\n" in result["output"]
    spill = Path(result["stdout_spill_path"])
    assert spill.parent == hermes_home / "cache" / "exec"
    assert spill.stat().st_size == total
    chunk = bytes(range(256)) * 256
    digest = hashlib.sha256()
    with spill.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    assert digest.hexdigest() == hashlib.sha256(chunk * (total // len(chunk))).hexdigest()
    assert report["rss_growth_kib"] < 20 * 1024, report["rss_growth_kib"]


def test_kill_9_of_the_host_leaves_no_process_behind(hermes_home: Path) -> None:
    host = subprocess.Popen([sys.executable, str(HOST), "orphans"], stdout=subprocess.PIPE, text=True)
    try:
        pids = json.loads(host.stdout.readline())
        assert len(pids) == 5 and all(pid_running(pid) for pid in pids)
        os.kill(host.pid, signal.SIGKILL)
        host.wait(10)
        for pid in pids:
            assert wait_for(lambda pid=pid: not pid_running(pid), timeout=5), f"pid {pid} outlived the host"
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()


async def test_caller_cancelling_does_not_leave_the_script_running(runtime: Runtime) -> None:
    task = asyncio.create_task(runtime.execute_code("import time\ntime.sleep(60)", session="s"))
    await asyncio.sleep(0.5)
    pid = runtime.kernels()[0].pid
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(wait_for, lambda: not pid_running(pid), 8)
