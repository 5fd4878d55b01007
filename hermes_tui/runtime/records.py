"""Execution records in ``$HERMES_HOME/cache/exec``: one small JSON file per execution.

``<exec_id>.json`` holds what the cache browser lists (session, kernel, code, status, times,
byte counts, the capped output, the spill path). ``<exec_id>.stdout.txt`` is the full stdout,
written only when the output was cut. Hermes Agent's own ``stdout-<hash>.txt`` files live in
the same directory; these names never collide with them.
"""

from __future__ import annotations

import json
import logging
import queue
import secrets
import threading
import time
from pathlib import Path
from typing import Any

from hermes_tui.base.fsutil import atomic_write

log = logging.getLogger(__name__)

RECORD_FORMAT = "hermes-tui/exec-record/1"
RECORD_SUFFIX = ".json"
SPILL_SUFFIX = ".stdout.txt"


def new_exec_id() -> str:
    """A new execution id, sortable by start time: ``20261129-105416-1a2b3c4d``."""
    return time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(4)


def record_path(cache_dir: Path, exec_id: str) -> Path:
    """Where the JSON record of ``exec_id`` lives."""
    return cache_dir / f"{exec_id}{RECORD_SUFFIX}"


def spill_path(cache_dir: Path, exec_id: str) -> Path:
    """Where the full stdout of ``exec_id`` goes when it is cut."""
    return cache_dir / f"{exec_id}{SPILL_SUFFIX}"


def write_record(path: Path, record: dict[str, Any]) -> None:
    """Write ``record`` as JSON atomically (temp file + rename), mode 0600. Blocking."""
    data = json.dumps({"format": RECORD_FORMAT, **record}, ensure_ascii=False, indent=1)
    atomic_write(path, data.encode("utf-8"), mode=0o600)


class RecordWriter:
    """Writes execution records on one background thread, in order.

    ``execute_code`` never waits on the disk: a record lands a moment after its result is
    returned. :meth:`flush` waits until every record submitted so far is on disk (the runtime
    calls it when it closes). A record that cannot be written is logged, never raised.
    """

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[Path, dict[str, Any]] | threading.Event | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self.failures = 0

    def submit(self, path: Path, record: dict[str, Any]) -> None:
        """Queue ``record`` to be written to ``path``."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="hermes-records", daemon=True)
            self._thread.start()
        self._queue.put((path, record))

    def flush(self, timeout: float | None = 30.0) -> None:
        """Block until everything submitted before this call is written."""
        if self._thread is None:
            return
        done = threading.Event()
        self._queue.put(done)
        done.wait(timeout)

    def close(self) -> None:
        """Write what is queued, then stop the thread. Blocking."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(30.0)
            self._thread = None

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            if isinstance(item, threading.Event):
                item.set()
                continue
            path, record = item
            try:
                write_record(path, record)
            except OSError as exc:
                self.failures += 1
                log.warning("could not write execution record %s: %s", path, exc)
