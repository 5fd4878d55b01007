"""What ends a host's shell commands and removes its staging dir when the host dies.

Kernels carry their own watchdog (see ``child/driver.py``). Shell commands started by
``terminal()`` and standalone scripts do not, so a ``kill -9`` of the host used to leave them
running under init. One small process per host — ``child/reaper.py`` — is told every such
process group and the staging dir; when the host goes away its stdin reaches EOF and it kills
the groups and removes the dir. If a script kills the reaper, the next registration starts a
new one and tells it everything still registered.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

from hermes_tui.runtime.hardening import spawn

log = logging.getLogger(__name__)

SCRIPT = Path(__file__).parent / "child" / "reaper.py"


class Reaper:
    """The host's side of the reaper process (thread-safe; one per host process)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._groups: set[int] = set()
        self._folders: set[str] = set()

    def watch_group(self, pgid: int) -> None:
        """Kill process group ``pgid`` if the host dies before :meth:`release_group`."""
        self._change(self._groups, True, pgid, f"+g {pgid}")

    def release_group(self, pgid: int) -> None:
        """The group ended (or was ended) by the host: forget it."""
        self._change(self._groups, False, pgid, f"-g {pgid}")

    def watch_folder(self, path: Path) -> None:
        """Remove ``path`` if the host dies before :meth:`release_folder`."""
        self._change(self._folders, True, str(path), f"+d {path}")

    def release_folder(self, path: Path) -> None:
        self._change(self._folders, False, str(path), f"-d {path}")

    def _change(self, registry: set, add: bool, item: object, line: str) -> None:  # type: ignore[type-arg]
        with self._lock:
            (registry.add if add else registry.discard)(item)
            if not add and self._process is None:
                return  # nothing to tell a reaper that never started
            if not self._tell(line):
                log.warning("the reaper cannot be reached; a host crash may leave processes behind")

    def _tell(self, line: str) -> bool:
        """Send one line, (re)starting the reaper if it is gone. Called under the lock.

        Never blocks: the pipe is non-blocking (this runs on the event loop too). A reaper that
        does not read — stopped with SIGSTOP by a script, say — fills its pipe; it is then
        killed and a new one is told everything still registered."""
        if self._process is not None and self._process.poll() is None:
            if self._write(line.encode("utf-8", "surrogateescape") + b"\n"):
                return True
            self._replace()
        return self._start()  # a new reaper is told everything registered, this line included

    def _write(self, data: bytes) -> bool:
        """Write all of ``data`` now, or report that the reaper is not reading (False)."""
        assert self._process is not None and self._process.stdin is not None
        fd = self._process.stdin.fileno()
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(fd, view):]
        except (BlockingIOError, OSError, ValueError):
            return False
        return True

    def _replace(self) -> None:
        """End a reaper that cannot be told (its groups are re-registered with the next)."""
        process, self._process = self._process, None
        if process is not None:
            with contextlib.suppress(OSError):
                process.kill()
            with contextlib.suppress(OSError, ValueError):
                assert process.stdin is not None
                process.stdin.close()
            threading.Thread(target=process.wait, name="hermes-reaper-wait", daemon=True).start()

    def _start(self) -> bool:
        try:
            self._process = spawn(lambda: subprocess.Popen(
                [sys.executable, "-I", "-S", str(SCRIPT)], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, env={}, cwd="/", start_new_session=True, close_fds=True,
            ))
        except OSError as exc:
            log.warning("cannot start the reaper: %s", exc)
            self._process = None
            return False
        assert self._process.stdin is not None
        os.set_blocking(self._process.stdin.fileno(), False)
        lines = [f"+g {g}" for g in self._groups] + [f"+d {d}" for d in self._folders]
        return self._write("".join(line + "\n" for line in lines).encode("utf-8", "surrogateescape"))

    @property
    def pid(self) -> int | None:
        """The reaper's pid (None before the first registration)."""
        return self._process.pid if self._process is not None else None

    def close(self) -> None:
        """End the reaper now (tests); registered groups are NOT killed by this."""
        with self._lock:
            process, self._process = self._process, None
            self._groups.clear()
            self._folders.clear()
        if process is not None:
            with contextlib.suppress(OSError):
                assert process.stdin is not None
                process.stdin.close()
            process.wait()


REAPER = Reaper()
"""The host process's reaper."""


def _after_fork_in_child() -> None:
    # A forked copy of the host is not the host: it must not write into the host's reaper.
    REAPER._process = None  # noqa: SLF001 - deliberately reset the singleton
    REAPER._groups = set()  # noqa: SLF001
    REAPER._folders = set()  # noqa: SLF001


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
