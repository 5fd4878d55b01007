"""An interrupt keeps the kernel and its namespace (issue 15): SIGINT first, the kill only after
``code_execution.interrupt_grace``; timeouts still kill."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from hermes_tui.runtime import KernelStateChanged, Runtime
from hermes_tui.runtime.approvals import ApprovalDecision, ApprovalRequest
from conftest import make_config, pid_running, running_with, wait_for

NOTICE = "[execution interrupted — user sent a new message]\n"


async def interrupt_after(rt: Runtime, code: str, delay: float = 0.4, session: str = "s"):
    """Run ``code``, interrupt it after ``delay`` seconds; the result."""
    task = asyncio.create_task(rt.execute_code(code, session=session))
    await asyncio.sleep(delay)
    assert await rt.interrupt(session) == 1
    return await asyncio.wait_for(task, 30)


@pytest.mark.parametrize("code", [
    "while True:\n    pass",
    "import time\ntime.sleep(60)",
    "import subprocess\nsubprocess.run(['sleep', '60'])",
    "import asyncio\nawait asyncio.sleep(60)",
    "import threading\nthreading.Event().wait()",
])
async def test_an_interrupted_script_leaves_the_namespace_as_it_was(runtime_factory, code: str) -> None:
    rt = await runtime_factory()
    await rt.execute_code("big = list(range(100_000))", session="s")
    result = await interrupt_after(rt, code)
    assert result.status == "interrupted" and result.warning is None
    assert result.output.endswith("KeyboardInterrupt\n" + NOTICE)
    assert "hermes_kernel_driver" not in result.output  # the traceback shows the user's code only
    after = await rt.execute_code("print(len(big))", session="s")
    assert after.output == "100000\n" and after.kernel.reused and not after.kernel.state_reset
    assert after.kernel.id == result.kernel.id


async def test_the_programs_a_script_started_get_sigint_too(runtime_factory, tmp_path: Path) -> None:
    rt = await runtime_factory()
    work = tmp_path / "work"  # beside HERMES_HOME: under Landlock a folder holding it takes no new files
    work.mkdir()
    pid_file = work / "child.pid"
    code = (f"import subprocess, pathlib\np = subprocess.Popen(['sleep', '60.31'])\n"
            f"pathlib.Path({str(pid_file)!r}).write_text(str(p.pid))\np.wait()")
    task = asyncio.create_task(rt.execute_code(code, session="s", cwd=work))  # its workspace: it writes there
    assert await asyncio.to_thread(wait_for, pid_file.exists, 10)
    assert running_with("60.31")
    await rt.interrupt("s")
    result = await asyncio.wait_for(task, 10)
    assert result.status == "interrupted"
    assert await asyncio.to_thread(wait_for, lambda: not running_with("60.31"), 5), "the script's sleep outlived Ctrl+C"
    # The script's objects are still there (the exact returncode is CPython's business: a
    # KeyboardInterrupt landing inside Popen.wait can leave it 0 instead of -2).
    assert (await rt.execute_code("print(p.poll() is not None)", session="s", cwd=work)).output == "True\n"


@pytest.mark.parametrize("code", [
    "import time\nwhile True:\n    try:\n        time.sleep(1)\n    except KeyboardInterrupt:\n        pass",
    "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(60)",
])
async def test_a_script_that_will_not_stop_loses_its_kernel_after_the_grace(runtime_factory, code: str) -> None:
    rt = await runtime_factory("code_execution:\n  interrupt_grace: 0.5\n")
    await rt.execute_code("x = 1", session="s")
    states: list[str] = []
    subscription = rt.subscribe()

    async def watch() -> None:
        async for event in subscription:
            if isinstance(event, KernelStateChanged):
                states.append(event.kernel.state)

    watcher = asyncio.create_task(watch())
    try:
        loop = asyncio.get_running_loop()
        started = loop.time()
        result = await interrupt_after(rt, code)
        assert 0.4 <= loop.time() - started - 0.4 < 5
    finally:
        watcher.cancel()
    assert result.status == "interrupted"
    assert result.warning.startswith("The script did not stop within code_execution.interrupt_grace (0.5s) of the "
                                     "interrupt") and "its state is lost" in result.warning
    assert "interrupting" in states  # the kernels pane shows it during the grace
    after = await rt.execute_code("print('x' in globals())", session="s")
    assert after.output == "False\n" and after.kernel.state_reset


async def test_a_timeout_still_kills(runtime_factory) -> None:
    rt = await runtime_factory()
    await rt.execute_code("x = 1", session="s")
    result = await rt.execute_code("import time\ntime.sleep(60)", session="s", timeout=1)
    assert result.status == "timeout"
    after = await rt.execute_code("print('x' in globals())", session="s")
    assert after.output == "False\n" and after.kernel.state_reset


async def test_sigint_between_scripts_changes_nothing(runtime_factory) -> None:
    rt = await runtime_factory()
    await rt.execute_code("x = 41", session="s")
    (kernel,) = rt.kernels()
    # the host never does this to an idle kernel; a stray one is harmless (the group: under
    # bubblewrap its monitor leads it, and kernel.pid is the driver's own)
    os.killpg(os.getpgid(kernel.pid), signal.SIGINT)
    await asyncio.sleep(0.3)
    after = await rt.execute_code("print(x + 1)", session="s")
    assert after.output == "42\n" and after.kernel.id == kernel.id


async def test_an_interrupt_during_a_tool_call_keeps_the_tool_channel_in_step(runtime_factory, tmp_path: Path) -> None:
    asked: list[ApprovalRequest] = []

    async def never(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    rt = await runtime_factory("approvals:\n  mode: strict\n  timeout: 600\n", approver=never)
    code = "from hermes_tools import terminal\nx = 'kept'\nterminal('echo waits for an answer')"
    task = asyncio.create_task(rt.execute_code(code, session="s", cwd=tmp_path))
    assert await asyncio.to_thread(wait_for, lambda: bool(asked), 10)
    await rt.interrupt("s")
    result = await asyncio.wait_for(task, 10)
    assert result.status == "interrupted" and result.warning is None
    assert "hermes_tools.py" not in result.output and "_next_line" not in result.output  # no staging frames
    assert "<cell 1>" in result.output
    # The next call on the same connection gets its own reply, not the late one of the interrupted call.
    after = await rt.execute_code("from hermes_tools import read_file\nprint(x, read_file('nothing-here')['error'][:40])",
                                  session="s", cwd=tmp_path)
    assert after.output.startswith("kept ") and after.kernel.reused


def test_interrupt_grace_is_a_setting() -> None:
    assert make_config().code_execution.interrupt_grace == 3
    assert make_config("code_execution:\n  interrupt_grace: 0.2\n").code_execution.interrupt_grace == 0.2
    assert make_config("code_execution:\n  interrupt_grace: 5\n").notices == []
