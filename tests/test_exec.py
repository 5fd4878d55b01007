"""execute_code in real session kernels: state, errors, exits, crashes, capture, records."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from conftest import pid_running, running_with, wait_for

from hermes_tui.runtime import ExecFinished, ExecOutput, ExecStarted, KernelStarted, Runtime


async def test_state_persists_and_reset_starts_fresh(runtime: Runtime) -> None:
    first = await runtime.execute_code("x = 41", session="s1")
    assert first.status == "success" and first.output == ""
    assert first.kernel.reused is False and first.kernel.execution_count == 1
    second = await runtime.execute_code("print(x + 1)", session="s1")
    assert second.output == "42\n"
    assert second.kernel.reused is True and second.kernel.id == first.kernel.id
    assert second.kernel.execution_count == 2
    third = await runtime.execute_code("print(x)", session="s1", reset=True)
    assert third.status == "error"
    assert "NameError: name 'x' is not defined" in third.output
    assert third.error == "NameError: name 'x' is not defined"
    assert third.kernel.id != first.kernel.id
    assert third.kernel.state_reset is True and third.kernel.reused is False
    assert third.warning is None  # the user asked for the reset: nothing to warn about


async def test_sessions_do_not_share_state(runtime: Runtime) -> None:
    await runtime.execute_code("secret = 1", session="a")
    other = await runtime.execute_code("print('secret' in globals())", session="b")
    assert other.output == "False\n"


async def test_exception_keeps_the_kernel_and_shows_the_traceback(runtime: Runtime) -> None:
    await runtime.execute_code("import math\nkept = 7", session="s")
    result = await runtime.execute_code("print('before')\ndef f():\n    return 1 / 0\nf()", session="s")
    assert result.status == "error" and result.exit_code == 1
    assert result.error == "ZeroDivisionError: division by zero"
    assert result.output.startswith("before\n--- stderr ---\nTraceback (most recent call last):")
    assert 'File "<cell 2>", line 4, in <module>' in result.output
    assert "return 1 / 0" in result.output  # the script's own source line
    assert "hermes_kernel_driver" not in result.output  # the driver's frames are hidden
    after = await runtime.execute_code("print(kept, math.pi > 3)", session="s")
    assert after.output == "7 True\n" and after.kernel.reused


async def test_syntax_error_is_a_result(runtime: Runtime) -> None:
    result = await runtime.execute_code("def broken(:\n  pass", session="s")
    assert result.status == "error"
    assert result.error.startswith("SyntaxError")
    assert "SyntaxError" in result.output


async def test_stderr_only_on_failure_and_capped(runtime: Runtime) -> None:
    quiet = await runtime.execute_code("import sys\nsys.stderr.write('warning!\\n')\nprint('ok')", session="s")
    assert quiet.status == "success" and quiet.output == "ok\n"
    noisy = await runtime.execute_code(
        "import sys\nsys.stderr.write('E' * 50_000)\nraise ValueError('boom')", session="s"
    )
    stderr = noisy.output.split("--- stderr ---\n", 1)[1]
    assert len(stderr.encode()) <= 10_000 + 200  # 10,000 bytes plus the marker
    assert "STDERR TRUNCATED" in stderr
    assert stderr.rstrip().endswith("ValueError: boom")  # the traceback survives the cap


async def test_output_of_c_code_and_subprocesses_is_captured(runtime: Runtime) -> None:
    code = (
        "import os, subprocess, ctypes\n"
        "print('py', flush=True)\n"
        "os.write(1, b'fd1\\n')\n"
        "ctypes.CDLL(None).puts(b'libc')\n"
        "ctypes.CDLL(None).fflush(None)\n"
        "subprocess.run(['echo', 'child'])\n"
    )
    result = await runtime.execute_code(code, session="s")
    assert result.output == "py\nfd1\nlibc\nchild\n"


async def test_namespace_is_main(runtime: Runtime) -> None:
    await runtime.execute_code("class Point:\n    def __init__(self, x): self.x = x", session="s")
    result = await runtime.execute_code(
        "import pickle\nprint(__name__, pickle.loads(pickle.dumps(Point(3))).x)\n"
        "if __name__ == '__main__':\n    print('main block')",
        session="s",
    )
    assert result.output == "__main__ 3\nmain block\n"


async def test_top_level_await(runtime: Runtime) -> None:
    result = await runtime.execute_code("import asyncio\nawait asyncio.sleep(0.01)\nprint('awaited')", session="s")
    assert result.status == "success" and result.output == "awaited\n"


async def test_sys_exit_ends_the_kernel_and_says_so(runtime: Runtime) -> None:
    await runtime.execute_code("x = 1", session="s")
    pid = runtime.kernels()[0].pid
    ok = await runtime.execute_code("print('bye')\nimport sys\nsys.exit()", session="s")
    assert ok.status == "success" and ok.exit_code == 0 and ok.output == "bye\n"
    assert "sys.exit(0)" in ok.warning and "state is gone" in ok.warning
    assert wait_for(lambda: not pid_running(pid))
    fresh = await runtime.execute_code("print('x' in globals())", session="s")
    assert fresh.output == "False\n" and fresh.kernel.state_reset
    assert "ended with sys.exit()" in fresh.warning
    bad = await runtime.execute_code("raise SystemExit(4)", session="s")
    assert bad.status == "error" and bad.exit_code == 4 and bad.error == "Script called sys.exit(4)."
    text = await runtime.execute_code("import sys; sys.exit('fatal: no input')", session="s")
    assert text.exit_code == 1 and "fatal: no input" in text.output


async def test_os_exit_and_segfault_are_error_results_and_the_next_call_works(runtime: Runtime) -> None:
    await runtime.execute_code("x = 1", session="s")
    exited = await runtime.execute_code("print('last words', flush=True)\nimport os\nos._exit(3)", session="s")
    assert exited.status == "error" and exited.exit_code == 3
    assert exited.output.startswith("last words\n")
    assert "exited with code 3" in exited.error
    after = await runtime.execute_code("print('alive')", session="s")
    assert after.status == "success" and after.output == "alive\n"
    assert after.kernel.state_reset and "exited with code 3" in after.warning

    crashed = await runtime.execute_code("import ctypes\nctypes.string_at(0)", session="s")
    assert crashed.status == "error" and crashed.exit_code == -11
    assert "SIGSEGV" in crashed.error
    again = await runtime.execute_code("print(2 + 2)", session="s")
    assert again.output == "4\n" and again.status == "success"


async def test_late_bytes_are_not_credited_to_the_next_script(runtime: Runtime, tmp_path: Path) -> None:
    go = tmp_path / "go"
    events = runtime.subscribe()
    first = await runtime.execute_code(
        "import os, threading, time\n"
        "def late():\n"
        f"    while not os.path.exists({str(go)!r}):\n"
        "        time.sleep(0.01)\n"
        "    print('LATE', flush=True)\n"
        "threading.Thread(target=late, daemon=True).start()\n"
        "print('first')",
        session="s",
    )
    assert first.output == "first\n"
    go.touch()  # only now, with the first script over, does its thread print
    stray = ""
    while "LATE" not in stray:  # the host read the bytes between the two scripts, credited to none
        event = await asyncio.wait_for(events.get(), 10)
        if isinstance(event, ExecOutput) and event.exec_id is None:
            stray += event.text
    events.close()
    assert stray == "LATE\n"
    second = await runtime.execute_code("print('second')", session="s")
    assert second.output == "second\n"
    third = await runtime.execute_code("print('third')", session="s")
    assert third.output == "third\n"


async def test_script_that_closes_stdout_still_finishes(runtime: Runtime) -> None:
    result = await runtime.execute_code("import os\nprint('x', flush=True)\nos.close(1)", session="s", timeout=20)
    assert result.status == "success" and result.output == "x\n"
    after = await runtime.execute_code("print('still here')", session="s", timeout=20)
    assert after.status == "success"


async def test_large_script_larger_than_a_pipe(runtime: Runtime) -> None:
    code = "data = " + repr("z" * 3_000_000) + "\nprint(len(data))"
    result = await runtime.execute_code(code, session="s")
    assert result.output == "3000000\n"


async def test_every_execution_writes_a_record(runtime: Runtime, hermes_home: Path) -> None:
    result = await runtime.execute_code("print('recorded')", session="rec")
    await runtime.flush_records()
    record_file = hermes_home / "cache" / "exec" / f"{result.exec_id}.json"
    record = json.loads(record_file.read_text())
    assert record["id"] == result.exec_id
    assert record["session"] == "rec" and record["kernel_id"] == result.kernel.id
    assert record["code"] == "print('recorded')"
    assert record["status"] == "success" and record["output"] == "recorded\n"
    assert record["stdout_bytes_total"] == 9 and record["stdout_spill_path"] is None
    assert record["started_at"] <= record["finished_at"]


async def test_output_is_spilled_when_cut(runtime: Runtime, hermes_home: Path) -> None:
    result = await runtime.execute_code("for i in range(20000):\n    print(f'line {i:06d}')", session="s")
    expected = "".join(f"line {i:06d}\n" for i in range(20000)).encode()
    assert result.stdout_truncated and result.stdout_bytes_total == len(expected)
    spill = Path(result.stdout_spill_path)
    assert spill.parent == hermes_home / "cache" / "exec"
    assert spill.read_bytes() == expected
    assert f"bytes omitted out of {len(expected)} total] ..." in result.output
    assert result.output.startswith("line 000000\n") and result.output.endswith("line 019999\n")


async def test_interrupt_ends_a_running_script_and_keeps_the_kernel(runtime: Runtime) -> None:
    await runtime.execute_code("x = 1", session="s")
    task = asyncio.create_task(
        runtime.execute_code("import time\nprint('working', flush=True)\ntime.sleep(60)", session="s")
    )
    await asyncio.sleep(0.5)
    assert await runtime.interrupt("s") == 1
    result = await asyncio.wait_for(task, 10)
    assert result.status == "interrupted" and result.warning is None
    assert result.output == ("working\n--- stderr ---\nTraceback (most recent call last):\n"
                             '  File "<cell 2>", line 3, in <module>\n    time.sleep(60)\nKeyboardInterrupt\n'
                             "[execution interrupted — user sent a new message]\n")
    after = await runtime.execute_code("print('x' in globals())", session="s")
    assert after.output == "True\n" and not after.kernel.state_reset and after.kernel.reused


async def test_dispose_session_ends_its_kernels_and_subagents(runtime: Runtime) -> None:
    await runtime.execute_code("1", session="p")
    await runtime.execute_code("1", session="p::child::helper")
    await runtime.execute_code("1", session="other")
    pids = {k.session: k.pid for k in runtime.kernels()}
    await runtime.dispose_session("p")
    assert {k.session for k in runtime.kernels()} == {"other"}
    # SIGKILLed with their group; the kernel inside the sandbox's wrapper is gone a moment after
    # the wrapper (seen still there once, on a loaded CI machine)
    for _ in range(100):
        if not pid_running(pids["p"]) and not pid_running(pids["p::child::helper"]):
            break
        await asyncio.sleep(0.05)
    assert not pid_running(pids["p"]) and not pid_running(pids["p::child::helper"])
    assert pid_running(pids["other"])


async def test_kill_kernel_by_id(runtime: Runtime) -> None:
    first = await runtime.execute_code("v = 1", session="s")
    assert await runtime.kill_kernel(first.kernel.id)
    assert runtime.kernels() == []
    after = await runtime.execute_code("print('v' in globals())", session="s")
    assert after.output == "False\n" and "killed by the user" in after.warning
    assert not await runtime.kill_kernel("k999")


async def test_events_follow_an_execution(runtime: Runtime) -> None:
    events = runtime.subscribe()
    result = await runtime.execute_code("print('hello')\nprint('world')", session="ev")
    seen = []
    while (event := events.get_nowait()) is not None:
        seen.append(event)
    events.close()
    kinds = [type(e).__name__ for e in seen]
    assert kinds[0] == "KernelStarted" and isinstance(seen[0], KernelStarted)
    started = next(e for e in seen if isinstance(e, ExecStarted))
    assert started.exec_id == result.exec_id and started.code.startswith("print('hello')")
    text = "".join(e.text for e in seen if isinstance(e, ExecOutput) and e.exec_id == result.exec_id)
    assert text == "hello\nworld\n"
    finished = [e for e in seen if isinstance(e, ExecFinished)]
    assert finished[-1].result == result
    assert kinds.index("ExecStarted") < kinds.index("ExecOutput") < kinds.index("ExecFinished")


async def test_live_output_arrives_while_the_script_runs(runtime: Runtime) -> None:
    events = runtime.subscribe()
    task = asyncio.create_task(
        runtime.execute_code("import time\nprint('tick', flush=True)\ntime.sleep(1.5)\nprint('done')", session="s")
    )
    event = await asyncio.wait_for(events.get(), 10)
    while not (isinstance(event, ExecOutput) and "tick" in event.text):
        event = await asyncio.wait_for(events.get(), 10)
    assert not task.done()  # seen live, before the script ended
    assert (await task).output == "tick\ndone\n"
    events.close()


async def test_working_directory_and_cwd_on_sys_path(runtime: Runtime, tmp_path: Path) -> None:
    (tmp_path / "localmod.py").write_text("VALUE = 'imported from cwd'\n")
    result = await runtime.execute_code(
        "import os, localmod\nprint(os.getcwd())\nprint(localmod.VALUE)", session="s", cwd=tmp_path
    )
    assert result.output == f"{tmp_path}\nimported from cwd\n"
    strict = await runtime.execute_code("import os\nprint(os.getcwd())", session="s", mode="strict")
    assert strict.output.strip() != str(tmp_path) and "hermes-tui-" in strict.output


async def test_secrets_do_not_reach_the_kernel(runtime_factory, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    monkeypatch.setenv("HERMES_INTERNAL_THING", "nope")
    monkeypatch.setenv("LANG", "C.UTF-8")
    rt = await runtime_factory()
    result = await rt.execute_code(
        "import os\nprint(sorted(k for k in os.environ if 'KEY' in k or k.startswith('HERMES_')))\n"
        "print(os.environ.get('LANG'))",
        session="s",
    )
    assert result.output == "['HERMES_HOME', 'HERMES_RPC_FD', 'HERMES_RPC_SOCKET', 'HERMES_SANDBOX']\nC.UTF-8\n"


async def test_kernel_dies_with_the_runtime(hermes_home: Path) -> None:
    async with Runtime(home=hermes_home) as rt:
        await rt.execute_code("import subprocess\np = subprocess.Popen(['sleep', '300.21'])", session="s")
        assert wait_for(lambda: running_with("300.21"))
        kernel_pid = rt.kernels()[0].pid
    assert wait_for(lambda: not pid_running(kernel_pid) and not running_with("300.21"))


async def test_bad_cwd_and_arguments(runtime: Runtime, tmp_path: Path) -> None:
    import pytest

    missing = tmp_path / "missing"
    result = await runtime.execute_code("print(1)", session="s", cwd=missing)
    assert result.status == "error" and str(missing) in result.error
    with pytest.raises(ValueError, match="mode must be 'project' or 'strict'"):
        await runtime.execute_code("1", mode="fast")
    with pytest.raises(ValueError, match="timeout must be"):
        await runtime.execute_code("1", timeout=0)


def test_pid_helpers_work() -> None:
    assert pid_running(os.getpid())


async def test_concurrent_first_calls_share_one_start(hermes_home: Path) -> None:
    rt = Runtime(home=hermes_home)
    try:
        results = await asyncio.gather(rt.start(), rt.execute_code("x = 1", session="a"),
                                       rt.execute_code("print('b')", session="b"))
        assert results[1].status == "success" and results[2].output == "b\n"
        assert len(rt.kernels()) == 2
    finally:
        await rt.aclose()
