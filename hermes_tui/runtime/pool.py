"""KernelPool: which kernel runs a script, and when kernels end.

A kernel is reused while its key (session, mode, interpreter, cwd, tool set) matches. Idle
kernels are reaped after ``kernel_idle_timeout`` seconds. Live top-level kernels are capped
at ``max_session_kernels``: one more evicts the least recently used IDLE kernel, never a busy
one (if all are busy the new kernel starts anyway and the result says so; the excess goes as
soon as a kernel is idle). Sub-agent kernels (``PARENT::child::NAME``) don't count and end
with their parent session.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import signal
import time
from collections import OrderedDict
from collections.abc import Coroutine
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from hermes_tui.config import CodeExecutionConfig
from hermes_tui.runtime.events import (
    EventBus,
    KernelDied,
    KernelEvicted,
    KernelReaped,
    KernelStarted,
    KernelStateChanged,
)
from hermes_tui.runtime.kernel import Kernel, KernelKey
from hermes_tui.runtime.launch import Launcher
from hermes_tui.runtime.models import KernelInfo, is_subagent_session, parent_session
from hermes_tui.base.units import plural

END_GRACE = 0.1
"""Seconds kernels ended together (the runtime closing, the app quitting) have after SIGTERM
before SIGKILL: an idle kernel ends at once; the quit stays under 0.3 s (issue 38)."""
_LOST_MEMORY = 512
"""Keys whose lost state is remembered (so the next result can say so); bounded."""


@dataclass(slots=True)
class Lease:
    """A kernel handed to one execution; give it back with :meth:`KernelPool.release`."""

    kernel: Kernel
    reused: bool
    state_reset: bool
    warnings: list[str]


class KernelPool:
    """Owns every kernel of a runtime.

    Args:
        config: the ``code_execution`` section (read on each decision, so changes apply).
        launcher: readies a new kernel before its process starts (environment, tool channel).
        staging_root: private directory under which each kernel gets its own.
        bus: where kernel events go.
    """

    def __init__(
        self,
        config: CodeExecutionConfig,
        *,
        launcher: Launcher,
        staging_root: Path,
        bus: EventBus,
    ) -> None:
        self.config = config
        self.launcher = launcher
        self.staging_root = staging_root
        self.bus = bus
        self.loop = asyncio.get_running_loop()
        self._kernels: dict[str, Kernel] = {}
        self._by_key: dict[KernelKey, Kernel] = {}
        self._idle_timers: dict[str, asyncio.TimerHandle] = {}
        self._lost: OrderedDict[KernelKey, tuple[str, bool]] = OrderedDict()
        self._spawn_lock = asyncio.Lock()
        self.allowed_names: frozenset[str] = frozenset()
        """Names let into new kernels by exact name now (kernels started with others are stale)."""
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Task[object]] = set()
        self.closed = False

    # -- handing out kernels --------------------------------------------------------------

    async def acquire(self, key: KernelKey, *, reset: bool = False) -> Lease:
        """A live kernel for ``key``, locked for one execution. Raises KernelStartError."""
        warnings: list[str] = []
        state_reset = False
        if reset and (old := self._by_key.get(key)) is not None:
            async with old.lock:  # wait for a running script rather than kill it
                self.retire(old, "was reset")
                await old.shutdown()
        while True:
            kernel = self._by_key.get(key)
            if kernel is None:
                async with self._spawn_lock:
                    kernel = self._by_key.get(key)
                    if kernel is None:
                        lost = self._lost.pop(key, None)
                        if lost is not None:
                            reason, involuntary = lost
                            state_reset = True
                            if involuntary:
                                warnings.append(
                                    f"The previous kernel of this session {reason}; "
                                    "this script ran in a fresh kernel without its state."
                                )
                        kernel = await self._spawn(key, warnings)
            await kernel.lock.acquire()
            if kernel.alive and kernel.end_reason is None:
                break
            kernel.lock.release()  # it ended while we waited: it is retired, take a new one
            self.retire(kernel, describe_exit(kernel.exited.result()) if kernel.exited.done() else "ended")
        self._cancel_idle(kernel)
        reused = kernel.execution_count > 0
        kernel.state = "busy"
        kernel.idle_deadline = None
        self._changed(kernel)
        return Lease(kernel, reused, state_reset, warnings)

    def interrupting(self, kernel: Kernel) -> None:
        """``kernel``'s script was sent SIGINT and has ``interrupt_grace`` seconds to stop."""
        if kernel.alive and kernel.end_reason is None:
            kernel.state = "interrupting"
            self._changed(kernel)

    def release(self, lease: Lease) -> None:
        """Give a kernel back after its execution; arms the idle timer."""
        kernel = lease.kernel
        kernel.last_used = time.time()
        kernel.last_used_monotonic = time.monotonic()
        if kernel.alive and kernel.end_reason is None:
            kernel.state = "idle"
            timeout = self.config.kernel_idle_timeout
            kernel.idle_deadline = kernel.last_used + timeout
            self._idle_timers[kernel.id] = self.loop.call_later(timeout, self._reap, kernel, timeout)
            self._changed(kernel)
        kernel.lock.release()
        self._trim_over_cap()

    async def _spawn(self, key: KernelKey, warnings: list[str]) -> Kernel:
        if not is_subagent_session(key.session):
            self._make_room(warnings)
        kernel_id = f"k{next(self._ids)}"
        kernel = Kernel(
            kernel_id,
            key,
            env={},
            staging_dir=self.staging_root / kernel_id,
            loop=self.loop,
            publish=self.bus.publish,
        )
        try:  # a channel opened for a kernel that never starts is closed
            await self.launcher.prepare_kernel(kernel)
            self.allowed_names = kernel.allowed_names  # older kernels may now be stale
            if kernel.new_skill_env:
                warnings.append(skill_env_warning(kernel.new_skill_env))
            await kernel.start()  # KernelStartError goes to the caller (who falls back)
        except BaseException:
            await kernel.close_rpc()
            if kernel.place is not None:
                place, kernel.place = kernel.place, None
                await place.backend.release(place)
            raise
        self._kernels[kernel_id] = kernel
        self._by_key[key] = kernel
        kernel.exited.add_done_callback(lambda _: self._on_exit(kernel))
        self.bus.publish(KernelStarted(kernel=self.info(kernel)))
        return kernel

    # -- ending kernels -------------------------------------------------------------------

    def _top_level(self) -> list[Kernel]:
        return [k for k in self._kernels.values() if not is_subagent_session(k.key.session) and k.alive]

    def _eviction_candidate(self) -> Kernel | None:
        idle = [k for k in self._top_level() if k.state == "idle" and not k.lock.locked() and k.end_reason is None]
        return min(idle, key=lambda k: k.last_used_monotonic, default=None)

    def _make_room(self, warnings: list[str]) -> None:
        cap = self.config.max_session_kernels
        while len([k for k in self._top_level() if k.end_reason is None]) >= cap:
            victim = self._eviction_candidate()
            if victim is None:
                warnings.append(
                    f"All session kernels are busy ({plural(cap, 'kernel')} at most, "
                    "code_execution.max_session_kernels): started one more; the least recently used goes once "
                    "it is idle."
                )
                return
            self._evict(victim, cap)

    def _trim_over_cap(self) -> None:
        cap = self.config.max_session_kernels
        while len([k for k in self._top_level() if k.end_reason is None]) > cap:
            victim = self._eviction_candidate()
            if victim is None:
                return
            self._evict(victim, cap)

    def _evict(self, kernel: Kernel, cap: int) -> None:
        reason = f"was evicted to stay within max_session_kernels={cap}"
        self.retire(kernel, reason)
        self.bus.publish(KernelEvicted(kernel_id=kernel.id, reason=reason))
        self.background(kernel.shutdown())

    def _reap(self, kernel: Kernel, timeout: float) -> None:
        self._idle_timers.pop(kernel.id, None)
        if kernel.state != "idle" or kernel.lock.locked() or not kernel.alive:
            return
        reason = f"was reaped after {timeout:g}s idle"
        self.retire(kernel, reason)
        self.bus.publish(KernelReaped(kernel_id=kernel.id, idle_seconds=timeout))
        self.background(kernel.shutdown())

    def retire(self, kernel: Kernel, reason: str, *, remember: bool = True) -> None:
        """Take ``kernel`` out of service now (the process may still be ending).

        The next call for its key gets a new kernel; with ``remember``, that call's result
        says the state was reset and (unless the user asked for it) why.
        """
        if kernel.end_reason is not None:
            return
        kernel.end_reason = reason
        self._cancel_idle(kernel)
        if self._by_key.get(kernel.key) is kernel:
            del self._by_key[kernel.key]
            if remember and kernel.execution_count:
                self._lost[kernel.key] = (reason, reason != "was reset")
                self._lost.move_to_end(kernel.key)
                while len(self._lost) > _LOST_MEMORY:
                    self._lost.popitem(last=False)

    def _on_exit(self, kernel: Kernel) -> None:
        self.background(kernel.close_rpc())
        if kernel.place is not None:  # its container goes with its session's last kernel
            place, kernel.place = kernel.place, None
            self.background(place.backend.release(place))
        returncode = kernel.exited.result()
        self.retire(kernel, describe_exit(returncode))
        self._kernels.pop(kernel.id, None)
        self.bus.publish(KernelDied(kernel_id=kernel.id, returncode=returncode, reason=kernel.end_reason or ""))

    def _cancel_idle(self, kernel: Kernel) -> None:
        timer = self._idle_timers.pop(kernel.id, None)
        if timer is not None:
            timer.cancel()

    # -- queries and commands -------------------------------------------------------------

    def get(self, kernel_id: str) -> Kernel | None:
        """The live kernel with this id, if any."""
        return self._kernels.get(kernel_id)

    def of_session(self, session: str, *, with_subagents: bool = True) -> list[Kernel]:
        """Live kernels of ``session`` (and its sub-agents' kernels)."""
        return [
            k for k in self._kernels.values()
            if k.key.session == session or (with_subagents and parent_session(k.key.session) == session)
        ]

    def info(self, kernel: Kernel, next_to_evict: bool = False) -> KernelInfo:
        """A snapshot of ``kernel``."""
        key = kernel.key
        return KernelInfo(
            id=kernel.id,
            key=str(key),
            session=key.session,
            mode=key.mode,
            interpreter=key.interpreter,
            cwd=key.cwd,
            pid=kernel.driver_pid or kernel.pid,
            state=kernel.state,  # type: ignore[arg-type]
            started_at=datetime.fromtimestamp(kernel.started_at),
            last_used=datetime.fromtimestamp(kernel.last_used),
            execution_count=kernel.execution_count,
            idle_deadline=datetime.fromtimestamp(kernel.idle_deadline) if kernel.idle_deadline else None,
            subagent=is_subagent_session(key.session),
            next_to_evict=next_to_evict,
            stale_env=kernel.allowed_names != self.allowed_names,
            skill_env=sorted(kernel.skill_env),
            tools=list(key.tools),
            sandbox=kernel.place.backend.sandbox_label if kernel.place is not None
            else kernel.sandbox.label if kernel.sandbox is not None else "off",
            where=kernel.where,
        )

    def infos(self) -> list[KernelInfo]:
        """Every live kernel, oldest first, marking the next one to evict at the cap."""
        at_cap = len(self._top_level()) >= self.config.max_session_kernels
        victim = self._eviction_candidate() if at_cap else None
        return [self.info(k, k is victim) for k in self._kernels.values()]

    async def end_kernels(self, kernels: list[Kernel], reason: str, *, remember: bool = True) -> None:
        """End these kernels now, all at once, and wait until they are gone: SIGTERM to each
        group, SIGKILL to what is left after :data:`END_GRACE`."""
        for kernel in kernels:
            self.retire(kernel, reason, remember=remember)
        await asyncio.gather(*(k.shutdown(END_GRACE) for k in kernels), return_exceptions=True)

    async def close(self) -> None:
        """End every kernel and wait for it."""
        self.closed = True
        await self.end_kernels(list(self._kernels.values()), "was closed with the runtime", remember=False)
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _changed(self, kernel: Kernel) -> None:
        if self.bus.active:
            self.bus.publish(KernelStateChanged(kernel=self.info(kernel)))

    def background(self, coroutine: Coroutine[object, object, object]) -> None:
        """Run ``coroutine`` as a task the pool waits for when it closes."""
        task: asyncio.Task[object] = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def describe_exit(returncode: int | None) -> str:
    """'exited with code 3' / 'was killed by SIGSEGV' for a process that ended by itself."""
    if returncode is None:
        return "ended"
    if returncode < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-returncode).name}"
        return f"was killed by signal {-returncode}"
    return f"exited with code {returncode}"


def skill_env_warning(granted: dict[str, str]) -> str:
    """What a result says when skills let variables into its kernel for the first time."""
    by_skill: dict[str, list[str]] = {}
    for name, skill in sorted(granted.items()):
        by_skill.setdefault(skill, []).append(name)
    said = "; ".join(f"{', '.join(names)} (asked for by $HERMES_HOME/{skill})" for skill, names in by_skill.items())
    return (f"This kernel's environment holds variables that only a skill lets in: {said}. "
            "If you did not install that skill, remove it and reset the kernel.")
