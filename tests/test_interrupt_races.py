"""Interrupts that race the script's start, a second interrupt, names asked of a kernel without
running the user's code, clean interrupt tracebacks, and a tool channel that an interrupt
never garbles (review of issue 15)."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import signal
import socket
import threading
import time
from pathlib import Path

import pytest

from hermes_tui.runtime import Runtime
from conftest import wait_for

NOTICE = "[execution interrupted — user sent a new message]\n"
TOOLS_TEMPLATE = Path(__file__).resolve().parent.parent / "hermes_tui" / "runtime" / "child" / "hermes_tools.py"

SLOW_REPR = """
import time

class Slow:
    def __init__(self, seconds, stubborn=False):
        self.seconds, self.stubborn = seconds, stubborn

    def __repr__(self):
        end = time.monotonic() + self.seconds
        while time.monotonic() < end:
            try:
                time.sleep(0.02)
            except KeyboardInterrupt:
                if not self.stubborn:
                    raise
        return 'slow'

    def __len__(self):
        time.sleep(self.seconds)
        return 1

    def __sizeof__(self):
        time.sleep(self.seconds)
        return 1
"""


def only_kernel(rt: Runtime) -> str:
    (kernel,) = rt.kernels()
    return kernel.id


# -- an interrupt that comes before the script runs ---------------------------------------

async def test_an_interrupt_while_the_kernel_starts_never_runs_the_script_and_keeps_the_kernel(runtime_factory) -> None:
    rt = await runtime_factory("code_execution:\n  interrupt_grace: 1\n")
    task = asyncio.create_task(rt.execute_code("import time\nx = 1\ntime.sleep(5)", session="s"))
    await asyncio.sleep(0.005)  # the kernel is starting
    assert await rt.interrupt("s") == 1
    started = time.monotonic()
    result = await asyncio.wait_for(task, 30)
    assert time.monotonic() - started < 0.9  # not the grace, then a kill
    assert result.status == "interrupted" and result.warning is None and result.output == NOTICE
    after = await rt.execute_code("print('x' in globals())", session="s")
    assert after.output == "False\n" and not after.kernel.state_reset and after.kernel.id == result.kernel.id


async def test_interrupts_right_after_the_script_was_sent_never_lose_the_kernel(runtime_factory) -> None:
    rt = await runtime_factory("code_execution:\n  interrupt_grace: 1\n")
    await rt.execute_code("keep = 1", session="s")
    for ticks in (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 30):
        task = asyncio.create_task(rt.execute_code("import time\ntime.sleep(3)", session="s"))
        for _ in range(ticks):
            await asyncio.sleep(0)
        while not await rt.interrupt("s"):  # not under way yet: a loop tick later
            await asyncio.sleep(0)
        result = await asyncio.wait_for(task, 30)
        assert result.status == "interrupted" and result.warning is None, (ticks, result.warning)
    after = await rt.execute_code("print(keep)", session="s")
    assert after.output == "1\n" and not after.kernel.state_reset


async def test_a_script_queued_behind_a_slow_variables_request_is_still_interrupted(runtime_factory) -> None:
    # The kernel is busy in a stubborn __repr__ (it swallows KeyboardInterrupt) when the script
    # arrives: the first SIGINT cannot reach the script; a repeated one does, once it starts.
    rt = await runtime_factory("code_execution:\n  interrupt_grace: 3\n")
    await rt.execute_code(SLOW_REPR + "s = Slow(1.2, stubborn=True)\nkeep = 42", session="s")
    with pytest.raises(TimeoutError):
        await rt.inspect_kernel(only_kernel(rt), timeout=0.2)
    task = asyncio.create_task(rt.execute_code("import time\ntime.sleep(30)", session="s"))
    await asyncio.sleep(0.2)
    assert await rt.interrupt("s") == 1
    result = await asyncio.wait_for(task, 30)
    assert result.status == "interrupted" and result.warning is None, result.warning
    after = await rt.execute_code("print(keep)", session="s")
    assert after.output == "42\n" and not after.kernel.state_reset


# -- a second interrupt -------------------------------------------------------------------

async def test_a_second_interrupt_during_the_grace_kills_at_once_and_counts(runtime_factory) -> None:
    rt = await runtime_factory("code_execution:\n  interrupt_grace: 20\n")
    await rt.execute_code("x = 1", session="s")
    code = "import time\nwhile True:\n    try:\n        time.sleep(1)\n    except KeyboardInterrupt:\n        pass"
    task = asyncio.create_task(rt.execute_code(code, session="s"))
    await asyncio.sleep(0.4)
    assert await rt.interrupt("s") == 1
    await asyncio.sleep(0.3)
    assert not task.done()
    started = time.monotonic()
    assert await rt.interrupt("s") == 1  # during the grace: still running, not "nothing"
    result = await asyncio.wait_for(task, 10)
    assert time.monotonic() - started < 3
    assert result.status == "interrupted"
    assert result.warning.startswith("The script was interrupted a second time") and "state is lost" in result.warning
    after = await rt.execute_code("print('x' in globals())", session="s")
    assert after.output == "False\n" and after.kernel.state_reset


# -- names without running the user's code -------------------------------------------------

async def test_tab_completion_names_never_run_the_users_code(runtime_factory) -> None:
    rt = await runtime_factory()
    code = SLOW_REPR + """
class Meta(type):
    def __getattribute__(cls, name):
        raise RuntimeError(name)

class Odd(metaclass=Meta):
    @property
    def __class__(self):
        raise RuntimeError('no')

s = Slow(6)
o = Odd()
keep = 42
globals()[7] = 'not a name'
"""
    await rt.execute_code(code, session="s")
    started = time.monotonic()
    names = await rt.kernel_names("s")
    assert time.monotonic() - started < 1
    assert names is not None
    by_name = {item["name"]: item["type"] for item in names}
    assert by_name["s"] == "Slow" and by_name["o"] == "Odd" and by_name["keep"] == "int" and "Slow" in by_name
    assert all(set(item) == {"name", "type"} for item in names)
    assert await rt.count_names(only_kernel(rt)) == len(names)
    result = await asyncio.wait_for(rt.execute_code("print(keep)", session="s"), 2)
    assert result.output == "42\n"


async def test_count_names_counts_the_users_names_and_refuses_a_busy_kernel(runtime_factory) -> None:
    rt = await runtime_factory()
    await rt.execute_code("a = 1\nb = [2]\ndef f():\n    pass", session="s")
    kernel_id = only_kernel(rt)
    assert await rt.count_names(kernel_id) == 3
    with pytest.raises(LookupError):
        await rt.count_names("k99")
    task = asyncio.create_task(rt.execute_code("import time\ntime.sleep(1)", session="s"))
    await asyncio.sleep(0.3)
    with pytest.raises(RuntimeError):
        await rt.count_names(kernel_id)
    await task


async def test_no_request_is_sent_while_one_is_unanswered_and_the_variables_view_is_bounded(runtime_factory) -> None:
    rt = await runtime_factory()
    await rt.execute_code(SLOW_REPR + "s = Slow(1.5, stubborn=True)\nkeep = 42", session="s")
    kernel_id = only_kernel(rt)
    with pytest.raises(TimeoutError):
        await rt.inspect_kernel(kernel_id, timeout=0.2)
    # The kernel still walks the stubborn __repr__: nothing more is queued behind it.
    assert await rt.kernel_names("s") is None
    with pytest.raises(RuntimeError):
        await rt.count_names(kernel_id)
    with pytest.raises(RuntimeError):
        await rt.inspect_kernel(kernel_id)
    assert await asyncio.to_thread(wait_for, lambda: not rt._pool.get(kernel_id).answering, 5)
    assert {item["name"] for item in await rt.kernel_names("s")} >= {"s", "keep", "Slow"}
    # Many slow values: the view comes back within about a second, every name listed.
    await rt.execute_code("\n".join(f"s{i} = Slow(0.5)" for i in range(8)), session="s")
    started = time.monotonic()
    variables = await rt.inspect_kernel(kernel_id)
    assert time.monotonic() - started < 2.5
    shown = {item["name"]: item for item in variables}
    assert all(f"s{i}" in shown for i in range(8)) and shown["keep"]["type"] == "int"
    assert any(item["repr"] == "<not shown: too slow>" for item in variables)


async def test_a_variables_request_given_up_on_is_cut_short(runtime_factory) -> None:
    rt = await runtime_factory()
    await rt.execute_code(SLOW_REPR + "s = Slow(30)\nkeep = 42", session="s")
    kernel_id = only_kernel(rt)
    with pytest.raises(TimeoutError):
        await rt.inspect_kernel(kernel_id, timeout=0.3)
    started = time.monotonic()
    result = await asyncio.wait_for(rt.execute_code("print(keep)", session="s"), 5)
    assert result.output == "42\n" and time.monotonic() - started < 2


# -- the tool channel under an interrupt ----------------------------------------------------

def load_tools_module():
    spec = importlib.util.spec_from_file_location("hermes_tools_under_test", TOOLS_TEMPLATE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class InterruptAfterRead:
    """A socket whose n-th consuming read is followed at once by SIGINT (to this process, or to
    another of its threads: Python still runs the handler in the main thread): the
    KeyboardInterrupt lands right after the bytes were taken off the socket."""

    def __init__(self, sock: socket.socket, nth: int, send) -> None:
        self.sock, self.nth, self.reads, self.send = sock, nth, 0, send

    def recv(self, size: int, flags: int = 0) -> bytes:
        data = self.sock.recv(size, flags)
        if not flags & socket.MSG_PEEK:
            self.reads += 1
            if self.reads == self.nth:
                self.send()
        return data

    def __getattr__(self, name: str):
        return getattr(self.sock, name)


@pytest.mark.parametrize("target", ["process", "another thread"])
def test_an_interrupt_right_after_a_read_loses_no_bytes(tmp_path: Path, target: str) -> None:
    assert threading.current_thread() is threading.main_thread()
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        pytest.skip("SIGINT is not Python's default handler here")
    tools = load_tools_module()
    path = str(tmp_path / "channel.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    conn = tools._Connection(path)
    host, _ = server.accept()
    idle = threading.Event()
    bystander = threading.Thread(target=idle.wait, daemon=True)
    bystander.start()

    def send() -> None:
        if target == "process":
            os.kill(os.getpid(), signal.SIGINT)
        else:
            signal.pthread_kill(bystander.ident, signal.SIGINT)
        # Until the main thread has run the handler (a KeyboardInterrupt here, before the fix;
        # after it, the held handler notes it), so no signal is left to land later.
        handler = signal.getsignal(signal.SIGINT)
        deadline = time.monotonic() + 5
        while not getattr(getattr(handler, "__self__", None), "came", False) and time.monotonic() < deadline:
            time.sleep(0.001)
    try:
        conn.sock.settimeout(5)
        conn.sock = InterruptAfterRead(conn.sock, nth=2, send=send)
        first = b'{"id": 1, "result": {"first": "' + b"x" * 100 + b'"}}\n'
        host.sendall(first[:20])
        time.sleep(0.05)

        def rest() -> None:
            time.sleep(0.1)
            host.sendall(first[20:])

        sender = threading.Thread(target=rest)
        sender.start()
        with pytest.raises(KeyboardInterrupt):
            conn.wait(1)  # the interrupt lands right after the rest of reply 1 was read
        sender.join()
        host.sendall(b'{"id": 2, "result": {"second": 2}}\n')
        assert conn.wait(2) == {"second": 2}
    finally:
        idle.set()
        host.close()
        conn.close()
        server.close()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back
