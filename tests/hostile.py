"""Scripts a hostile kernel runs against the tool channel, shared by tests/attacks and the
benchmark in tests/bench (run them with ``runtime.execute_code``), and the host-side watch
both measure them with."""

from __future__ import annotations

import asyncio
import os
import threading
import time

HUGE_LINE = """
import json, os, socket, time
size = {size}
sock = socket.socket(socket.AF_UNIX)
sock.connect(os.environ["HERMES_RPC_SOCKET"])
chunk = b"x" * (1 << 20)
start = time.perf_counter()
sent = 0
try:
    while sent < size:
        sock.sendall(chunk)
        sent += len(chunk)
    sock.sendall(b"\\n")
except OSError:
    pass
sock.settimeout(10)
data = b""
try:
    while not data.endswith(b"\\n"):
        more = sock.recv(65536)
        if not more:
            break
        data += more
except OSError:
    pass
print(json.dumps({{"elapsed": time.perf_counter() - start, "sent": sent, "reply": data.decode("utf-8", "replace")}}))
"""


def huge_line(size: int) -> str:
    """One connection, one request line of ``size`` bytes with its newline only at the end:
    the host must refuse it once it passes the cap. Sending stops at the first error (the host
    closed the connection). Prints ``{"elapsed", "sent", "reply"}`` as JSON."""
    return HUGE_LINE.format(size=size)


class HostWatch:
    """Samples this process (the host) every ``every`` seconds in a thread: peak RSS and
    thread count; and the event loop's worst lag (a sleep of ``tick`` seconds that came late).
    Used by the rpc attack tests and bench_rpc."""

    def __init__(self, every: float = 0.005, tick: float = 0.005) -> None:
        self.every, self.tick = every, tick
        self.page = os.sysconf("SC_PAGE_SIZE")
        self.rss_before = self.peak_rss = self.rss()
        self.threads_before = self.peak_threads = threading.active_count()
        self.lag = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def rss(self) -> int:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * self.page

    @property
    def rss_growth(self) -> int:
        return self.peak_rss - self.rss_before

    @property
    def thread_growth(self) -> int:
        return self.peak_threads - self.threads_before

    def _sample(self) -> None:
        while not self._stop.wait(self.every):
            self.peak_rss = max(self.peak_rss, self.rss())
            self.peak_threads = max(self.peak_threads, threading.active_count())

    async def _ticks(self) -> None:
        while not self._stop.is_set():
            started = time.perf_counter()
            await asyncio.sleep(self.tick)
            self.lag = max(self.lag, time.perf_counter() - started - self.tick)

    async def during(self, *work):
        """Await ``work`` (awaitables, run together) while sampling; their results."""
        self._thread.start()
        ticker = asyncio.ensure_future(self._ticks())
        try:
            return await asyncio.gather(*work)
        finally:
            self._stop.set()
            await ticker
            self._thread.join()
