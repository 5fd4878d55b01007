"""A child process scripts or commands run in, and the one way to run it to its end.

:class:`ChildProcess` has its own session and process group, stdout and stderr on pipes read
by a :class:`~hermes_tui.runtime.process.Pump`, and a kill that takes the whole group.
:func:`run_to_end` spawns one, waits for its outcome under a timeout and an optional stop
signal, and ends the group when either fires (or when the caller is cancelled): both the
standalone fallback of ``execute_code`` and ``terminal()`` use it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from hermes_tui.runtime.capture import STDERR_HEAD, STDERR_MARKER, STDERR_TAIL, HeadTailCapture
from hermes_tui.runtime.hardening import spawn
from hermes_tui.runtime.process import CellCapture, CellOutcome, Pump, group_alive, kill_group
from hermes_tui.runtime.reaper import REAPER

if TYPE_CHECKING:
    from hermes_tui.runtime.sandbox import Confinement

KILL_GRACE = 5.0
"""Seconds between SIGTERM and SIGKILL of a process group (SPEC §2)."""
INTERRUPT_REPEAT = 0.1
"""Seconds between the SIGINTs of one interrupt during its grace: one that lands before the
script has started (the kernel still reading it) is not the end of the interrupt."""

EndedBy = Literal["timeout", "interrupt"] | None
"""Why a wait ended early (None: the process finished by itself)."""


class ChildProcess:
    """A child in its own process group whose output a :class:`Pump` reads.

    Its group is registered with the host's reaper, which kills it if the host dies.

    Args:
        label: shown in thread names and events (the kernel id, or None for standalone).
        loop: the event loop callbacks run on.
        publish: receives live-output events (on ``loop``).
    """

    reaped = True
    """Registered with the reaper (a kernel has its own watchdog instead)."""

    def __init__(self, label: str | None, *, loop: asyncio.AbstractEventLoop, publish: Any) -> None:
        self.label = label
        self.loop = loop
        self.publish = publish
        self.proc: subprocess.Popen[bytes] | None = None
        self.pump: Pump | None = None
        self.env: dict[str, str] = {}
        """The environment the process starts with (frozen)."""
        self._first_cell: CellCapture | None = None
        self.exited: asyncio.Future[int | None] = loop.create_future()

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def alive(self) -> bool:
        return self.proc is not None and not self.exited.done()

    def spawn(
        self,
        argv: list[str],
        *,
        cwd: str,
        env: dict[str, str],
        pass_fds: tuple[int, ...] = (),
        ctrl_fd: int | None = None,
        merge_stderr: bool = False,
        confinement: Confinement | None = None,
        stdin_data: bytes | None = None,
    ) -> None:
        """Start the process (blocking: run it in a thread) and its pump. ``confinement``:
        run it in the sandbox (sandbox.py); released here whether or not it started.
        ``stdin_data``: its stdin is a pipe that gets these bytes (from a thread of its own) and
        is then held open until it ends (a backend's client: its spec, then the far end kills
        what it started when that pipe closes)."""
        if confinement is not None:
            argv = [*confinement.prefix, *argv]
            env = {**env, **confinement.env}
            pass_fds = (*pass_fds, *confinement.fds)

        def start() -> subprocess.Popen[bytes]:
            return subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL if stdin_data is None else subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
                cwd=cwd,
                env=env,
                start_new_session=True,  # own group: a timeout kills grandchildren too
                pass_fds=pass_fds,
                bufsize=0,
            )

        try:
            # Forked from a spawner thread: the child cannot read the host (hardening.py), and
            # a confined one starts in the sandbox (sandbox/core.py).
            self.proc = confinement.start(start) if confinement is not None else spawn(start)
        finally:
            if confinement is not None:
                confinement.close()
        if stdin_data is not None and self.proc.stdin is not None:
            # Its own copy of the descriptor: closing the pipe here at the child's end never
            # leaves the thread writing to a number that meanwhile names another file.
            threading.Thread(target=_feed, args=(os.dup(self.proc.stdin.fileno()), stdin_data),
                             name="hermes-stdin", daemon=True).start()
        if self.reaped:
            REAPER.watch_group(self.proc.pid)
        pump = Pump(
            self.proc,
            loop=self.loop,
            kernel_id=self.label,
            ctrl_fd=ctrl_fd,
            publish=self.publish,
            on_reply=self._on_reply,
            on_exit=self._on_exit,
            wrapped=confinement is not None and confinement.tier == "bwrap",
        )
        if self._first_cell is not None:  # begun before the spawn: no early byte is lost
            pump.cell = self._first_cell
        self.pump = pump
        pump.start()

    def _on_reply(self, message: dict[str, Any]) -> None:
        """A control reply that is not an execution's ``done`` (loop thread)."""

    def _on_exit(self, returncode: int | None) -> None:
        if self.proc is not None and self.proc.stdin is not None:
            self.proc.stdin.close()
        if self.reaped and self.proc is not None:
            REAPER.release_group(self.proc.pid)
        if not self.exited.done():
            self.exited.set_result(returncode)

    def begin(self, exec_id: str, marker: bytes | None, stdout: HeadTailCapture) -> asyncio.Future[CellOutcome]:
        """Credit output from now on to a new execution; its outcome arrives on the future.

        Called before the process is spawned, the execution gets its output from the first byte.
        """
        future: asyncio.Future[CellOutcome] = self.loop.create_future()
        stderr = HeadTailCapture(STDERR_HEAD, STDERR_TAIL, marker=STDERR_MARKER)
        cell = CellCapture(exec_id, marker, stdout, stderr, future)
        if self.pump is None:
            self._first_cell = cell
        else:
            self.pump.begin_cell(cell)
        return future

    async def terminate(self, grace: float = KILL_GRACE) -> int | None:
        """SIGTERM the whole group, SIGKILL it after ``grace`` seconds; wait for the end."""
        if self.proc is None:
            return None
        pgid = self.proc.pid
        if self.pump is not None:
            self.pump.terminating = True
        try:
            if kill_group(pgid, signal.SIGTERM):
                deadline = time.monotonic() + grace
                # Looked at soon, then less often: an idle kernel is gone within a few ms of
                # SIGTERM, and a look every 20 ms made every close wait 10-35 ms for it. /proc
                # is searched only once the process itself has been reaped and its group is
                # still there (a search costs ms, more while the tools' imports run: issue 38),
                # and in a thread: the event loop never waits on it.
                pause = 0.002
                while time.monotonic() < deadline and kill_group(pgid, 0):
                    if (self.pump is None or self.pump.returncode is not None) and not await asyncio.to_thread(
                            group_alive, pgid):
                        break
                    await asyncio.sleep(pause)
                    pause = min(pause * 2, 0.02)
            kill_group(pgid, signal.SIGKILL)
        finally:
            if self.pump is not None:
                self.pump.terminating = False
        return await self.exited

    def interrupt(self) -> bool:
        """SIGINT to the whole group, as Ctrl+C in a terminal: the script gets KeyboardInterrupt,
        the programs it started get SIGINT. False if the group is gone."""
        return self.proc is not None and kill_group(self.proc.pid, signal.SIGINT)

    async def kill(self) -> int | None:
        """SIGKILL the whole group now and wait for the end."""
        if self.proc is None:
            return None
        kill_group(self.proc.pid, signal.SIGKILL)
        return await self.exited


async def wait_or_end(
    child: ChildProcess, outcome: asyncio.Future[CellOutcome], timeout: float,
    stop: asyncio.Future[Any] | None = None, *, before_end: Callable[[EndedBy], None] | None = None,
    interrupt_grace: float | None = None, on_interrupt: Callable[[], None] | None = None,
    hard_stop: asyncio.Future[Any] | None = None,
) -> EndedBy:
    """Wait for ``outcome``; when ``timeout`` passes or ``stop`` is set first, end the group
    (SIGTERM, SIGKILL after :data:`KILL_GRACE`) and say which of the two it was.

    With ``interrupt_grace``, a ``stop`` first sends SIGINT to the group (``on_interrupt`` is
    told) and waits that long for the script to end by itself — then the process lives on;
    only a script still running after the grace has its group ended. SIGINT is sent again
    every :data:`INTERRUPT_REPEAT` seconds of the grace (the kernel raises KeyboardInterrupt
    once per script; a SIGINT that came before the script started is not lost). ``hard_stop``
    set during the grace (a second interrupt) ends the group at once. ``before_end`` is told
    why just before the group is ended (so never when the interrupt sufficed)."""
    waiters: set[asyncio.Future[Any]] = {outcome} if stop is None else {outcome, stop}
    done, _ = await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    if outcome in done:
        return None
    ended_by: EndedBy = "interrupt" if stop is not None and stop in done else "timeout"
    grace = KILL_GRACE
    if ended_by == "interrupt" and interrupt_grace and child.interrupt():
        if on_interrupt is not None:
            on_interrupt()
        if await _interrupt_grace(child, outcome, interrupt_grace, hard_stop):
            return ended_by
        if hard_stop is not None and hard_stop.done():
            grace = 0.0  # interrupted again: no SIGTERM grace either
    if before_end is not None:
        before_end(ended_by)
    await child.terminate(grace)
    return ended_by


async def _interrupt_grace(child: ChildProcess, outcome: asyncio.Future[CellOutcome], grace: float,
                           hard_stop: asyncio.Future[Any] | None) -> bool:
    """Wait up to ``grace`` seconds for ``outcome``, repeating SIGINT meanwhile; True if it came."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    waiters: set[asyncio.Future[Any]] = {outcome} if hard_stop is None else {outcome, hard_stop}
    while True:
        left = deadline - loop.time()
        if left <= 0:
            return outcome.done()
        done, _ = await asyncio.wait(waiters, timeout=min(INTERRUPT_REPEAT, left),
                                     return_when=asyncio.FIRST_COMPLETED)
        if outcome in done:
            return True
        if done:  # interrupted again
            return False
        if not child.interrupt():  # the group is gone: its outcome is on the way
            await asyncio.wait({outcome}, timeout=max(0.0, deadline - loop.time()))
            return outcome.done()


async def run_to_end(
    child: ChildProcess, argv: list[str], *, cwd: str, env: dict[str, str], outcome: asyncio.Future[CellOutcome],
    timeout: float, stop: asyncio.Future[Any] | None = None, merge_stderr: bool = False,
    cancel_grace: float = KILL_GRACE, pass_fds: tuple[int, ...] = (), confinement: Confinement | None = None,
    stdin_data: bytes | None = None,
) -> EndedBy:
    """Spawn ``child`` (in a thread) and wait for it as :func:`wait_or_end` does.

    ``outcome`` comes from ``child.begin(...)`` called before this, so no early byte is lost.
    Raises ``OSError`` when the process cannot start. If the caller is cancelled, the group
    is ended (``cancel_grace`` seconds before SIGKILL) before the cancellation goes on.
    """
    await asyncio.to_thread(child.spawn, argv, cwd=cwd, env=env, merge_stderr=merge_stderr, pass_fds=pass_fds,
                            confinement=confinement, stdin_data=stdin_data)
    try:
        return await wait_or_end(child, outcome, timeout, stop)
    except asyncio.CancelledError:  # whoever waited is gone: so is the process
        await asyncio.shield(child.terminate(cancel_grace))
        raise


def _feed(fd: int, data: bytes) -> None:
    """Write ``data`` to ``fd`` (a copy of a child's stdin) and close the copy; a child gone
    early is fine."""
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except OSError:
        pass
    finally:
        os.close(fd)
