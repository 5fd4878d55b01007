"""The kernel pool: reuse keys, LRU eviction of idle kernels, idle reaping, sub-agents,
and the standalone fallback when no kernel can start."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from conftest import pid_running

from hermes_tui.runtime import KernelEvicted, KernelReaped
from hermes_tui.runtime import kernel as kernel_module


async def test_eviction_takes_the_least_recently_used_idle_kernel(runtime_factory) -> None:
    rt = await runtime_factory("code_execution:\n  max_session_kernels: 2\n")
    events = rt.subscribe()
    await rt.execute_code("v = 'a'", session="a")
    await rt.execute_code("v = 'b'", session="b")
    await rt.execute_code("print(v)", session="a")  # a is now more recent than b
    infos = {k.session: k for k in rt.kernels()}
    assert infos["b"].next_to_evict and not infos["a"].next_to_evict
    b_pid = infos["b"].pid
    await rt.execute_code("v = 'c'", session="c")
    assert sorted(k.session for k in rt.kernels()) == ["a", "c"]
    assert await asyncio.to_thread(lambda: not pid_running(b_pid))
    evicted = [e for e in iter(events.get_nowait, None) if isinstance(e, KernelEvicted)]
    assert [e.kernel_id for e in evicted] == [infos["b"].id]
    assert "max_session_kernels=2" in evicted[0].reason
    kept = await rt.execute_code("print(v)", session="a")
    assert kept.output == "a\n" and kept.kernel.reused
    lost = await rt.execute_code("print('v' in globals())", session="b")
    assert lost.output == "False\n" and lost.kernel.state_reset
    assert "evicted to stay within max_session_kernels=2" in lost.warning
    events.close()


async def test_a_busy_kernel_is_never_evicted(runtime_factory) -> None:
    rt = await runtime_factory("code_execution:\n  max_session_kernels: 1\n")
    busy = asyncio.create_task(rt.execute_code("import time\ntime.sleep(1.5)\nprint('finished')", session="busy"))
    await asyncio.sleep(0.5)
    other = await rt.execute_code("print('other')", session="other")
    assert other.output == "other\n"
    assert "are busy" in other.warning and "max_session_kernels" in other.warning
    result = await busy
    assert result.status == "success" and result.output == "finished\n"
    # Back under the cap as soon as one is idle: only one kernel stays.
    await asyncio.sleep(0.2)
    assert len(rt.kernels()) == 1


async def test_subagent_kernels_do_not_count_against_the_cap(runtime_factory) -> None:
    rt = await runtime_factory("code_execution:\n  max_session_kernels: 1\n")
    await rt.execute_code("x = 1", session="main")
    await rt.execute_code("y = 2", session="main::child::research")
    await rt.execute_code("z = 3", session="main::child::coder")
    sessions = {k.session: k for k in rt.kernels()}
    assert set(sessions) == {"main", "main::child::research", "main::child::coder"}
    assert sessions["main::child::coder"].subagent and not sessions["main"].subagent
    still = await rt.execute_code("print(x)", session="main")
    assert still.output == "1\n" and still.kernel.reused
    await rt.dispose_session("main::child::research")
    assert set(k.session for k in rt.kernels()) == {"main", "main::child::coder"}


async def test_idle_kernels_are_reaped(runtime_factory) -> None:
    rt = await runtime_factory("code_execution:\n  kernel_idle_timeout: 2\n")
    events = rt.subscribe()
    first = await rt.execute_code("kept = 1", session="s")
    info = rt.kernels()[0]
    assert info.state == "idle"
    assert info.idle_deadline is not None
    assert timedelta(seconds=1.5) < info.idle_deadline - datetime.now() <= timedelta(seconds=2)
    await asyncio.sleep(1.0)
    reused = await rt.execute_code("print(kept)", session="s")  # use re-arms the timer
    assert reused.output == "1\n" and reused.kernel.id == first.kernel.id
    await asyncio.sleep(1.2)
    assert rt.kernels(), "reaped although it was used 1.2 s ago"
    event = await asyncio.wait_for(_next(events, KernelReaped), 5)
    assert event.kernel_id == first.kernel.id and event.idle_seconds == 2
    await asyncio.sleep(0.1)
    assert rt.kernels() == [] and not pid_running(info.pid)
    fresh = await rt.execute_code("print('kept' in globals())", session="s")
    assert fresh.output == "False\n" and "reaped after 2s idle" in fresh.warning
    events.close()


async def test_reuse_key_separates_working_dirs_and_modes(runtime_factory, tmp_path: Path) -> None:
    rt = await runtime_factory()
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    a = await rt.execute_code("v = 1", session="s", cwd=one)
    b = await rt.execute_code("print('v' in globals())", session="s", cwd=two)
    c = await rt.execute_code("print('v' in globals())", session="s", mode="strict")
    d = await rt.execute_code("print(v)", session="s", cwd=one)
    assert len({a.kernel.id, b.kernel.id, c.kernel.id}) == 3
    assert b.output == c.output == "False\n"
    assert d.output == "1\n" and d.kernel.id == a.kernel.id


async def test_standalone_fallback_when_no_kernel_can_start(
    runtime_factory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "driver.py"
    broken.write_text("import sys\nsys.stderr.write('driver cannot run here\\n')\nsys.exit(7)\n")
    monkeypatch.setattr(kernel_module, "DRIVER_SOURCE", broken)
    rt = await runtime_factory()
    result = await rt.execute_code("import os\nx = 5\nprint('standalone', x)", session="s")
    assert result.status == "success" and result.output == "standalone 5\n"
    assert result.kernel.id is None
    assert "standalone process" in result.warning and "NOT persist" in result.warning
    assert "exited with code 7" in result.warning and "driver cannot run here" in result.warning
    second = await rt.execute_code("print(x)", session="s")
    assert second.status == "error" and "NameError" in second.error
    timed = await rt.execute_code("import time\ntime.sleep(30)", session="s", timeout=1)
    assert timed.status == "timeout"


async def _next(events, kind):
    while True:
        event = await events.get()
        if isinstance(event, kind):
            return event
