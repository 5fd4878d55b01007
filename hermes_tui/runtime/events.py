"""Typed events the runtime emits, and the bounded subscription the app reads them from.

Events are published on the runtime's event loop. A subscriber that falls behind never makes
the host's memory grow: its queue holds at most ``max_events`` events and ``max_output_bytes``
of output text; past that, output events are dropped (counted in ``dropped``) and, if the
queue is full of other events, the oldest go.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from hermes_tui.runtime.models import ExecResult, KernelInfo


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeEvent:
    """Base of every event; ``at`` is ``time.time()`` when it was made."""

    at: float = field(default_factory=time.time)


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelStarted(RuntimeEvent):
    """A kernel process is up and ready."""

    kernel: KernelInfo


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelStateChanged(RuntimeEvent):
    """A kernel went idle, busy, ... (``kernel.state``)."""

    kernel: KernelInfo


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelReaped(RuntimeEvent):
    """A kernel was idle for ``kernel_idle_timeout`` seconds and was stopped."""

    kernel_id: str
    idle_seconds: float


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelEvicted(RuntimeEvent):
    """A kernel was stopped to make room under ``max_session_kernels``."""

    kernel_id: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelDied(RuntimeEvent):
    """A kernel process ended (for any reason: reset, timeout, crash, kill, exit)."""

    kernel_id: str
    returncode: int | None
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecStarted(RuntimeEvent):
    """An execution began on a kernel (``kernel_id`` None for a standalone run)."""

    exec_id: str
    session: str
    kernel_id: str | None
    code: str
    timeout: float
    max_tool_calls: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecOutput(RuntimeEvent):
    """Live output, coalesced (~16 ms). ``exec_id`` None: printed between executions.

    ``skipped_bytes`` counts output left out of the live stream to keep it bounded (the
    result and the spill file still have it).
    """

    exec_id: str | None
    kernel_id: str | None
    stream: Literal["stdout", "stderr"]
    text: str
    skipped_bytes: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallMade(RuntimeEvent):
    """A running script called a tool (counted against ``max_tool_calls``; refused calls
    past the limit are not counted)."""

    exec_id: str
    session: str
    tool: str
    calls: int
    """Tool calls this execution has made so far, this one included."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecFinished(RuntimeEvent):
    """An execution ended; ``result`` is what ``execute_code`` returned."""

    result: ExecResult


class Subscription:
    """An async iterator over runtime events with a bounded queue. Close it when done."""

    def __init__(self, bus: EventBus, max_events: int, max_output_bytes: int) -> None:
        self._bus = bus
        self._queue: deque[RuntimeEvent] = deque()
        self._max_events = max_events
        self._max_output_bytes = max_output_bytes
        self._output_bytes = 0
        self._waiter: asyncio.Future[None] | None = None
        self.closed = False
        self.dropped = 0
        """Events dropped because this subscriber fell behind."""

    def _put(self, event: RuntimeEvent) -> None:
        if isinstance(event, ExecOutput):
            if self._output_bytes + len(event.text) > self._max_output_bytes:
                self.dropped += 1
                return
            self._output_bytes += len(event.text)
        if len(self._queue) >= self._max_events:
            self._forget(self._queue.popleft())
            self.dropped += 1
        self._queue.append(event)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _forget(self, event: RuntimeEvent) -> None:
        if isinstance(event, ExecOutput):
            self._output_bytes -= len(event.text)

    def get_nowait(self) -> RuntimeEvent | None:
        """The next event if one is queued, else None."""
        if not self._queue:
            return None
        event = self._queue.popleft()
        self._forget(event)
        return event

    async def get(self) -> RuntimeEvent:
        """Wait for the next event. Raises ``StopAsyncIteration`` once closed and drained."""
        while not self._queue:
            if self.closed:
                raise StopAsyncIteration
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self.get_nowait()  # type: ignore[return-value]

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> RuntimeEvent:
        return await self.get()

    def close(self) -> None:
        """Stop receiving; a waiting ``get`` ends once the queue is drained."""
        self.closed = True
        self._bus._unsubscribe(self)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


class EventBus:
    """Fans events out to subscriptions. Call :meth:`publish` on the event loop's thread."""

    def __init__(self) -> None:
        self._subscribers: list[Subscription] = []

    def subscribe(self, max_events: int = 10_000, max_output_bytes: int = 8 << 20) -> Subscription:
        """A new subscription receiving every event published from now on."""
        subscription = Subscription(self, max_events, max_output_bytes)
        self._subscribers.append(subscription)
        return subscription

    @property
    def active(self) -> bool:
        """True when someone is subscribed (so building an event is worth it)."""
        return bool(self._subscribers)

    def publish(self, event: RuntimeEvent) -> None:
        """Deliver ``event`` to every open subscription."""
        for subscription in self._subscribers:
            subscription._put(event)

    def close(self) -> None:
        """Close every subscription."""
        for subscription in list(self._subscribers):
            subscription.close()

    def _unsubscribe(self, subscription: Subscription) -> None:
        if subscription in self._subscribers:
            self._subscribers.remove(subscription)
