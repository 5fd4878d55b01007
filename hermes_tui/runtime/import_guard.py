"""The host's imports, closed once it has started (issue 31).

The host holds the keys, and it imports some modules only when first needed: a Pygments lexer
with the first code block in that language, an encoding with the first page in that charset,
Textual's Markdown with the first reply. With ``code_execution.sandbox: off`` a script can
write site-packages, so such a module may be one a script changed, and it would run in the host.

:func:`close_imports` (called by :func:`~hermes_tui.runtime.tools.dispatch.preload` in a
program that asked with :func:`arm`, before its first kernel can start) puts an
:class:`ImportGuard` first on ``sys.meta_path``. From then on every module imported from a file
is checked before it runs, and refused (``ImportError``, one logged line) when what it would
run was made or changed after that moment:

* the file itself: its ``st_ctime`` (and that of what a symbolic link there points to) is
  later. ctime cannot be set from user space (``utime`` sets only mtime and atime), and a
  write, a rename into place, a new hard link or a ``chmod`` each move it;
* a folder on its way, from the ``sys.path`` entry down: one the host had already imported
  from must be the same folder (same device and inode: not renamed away for another); one it
  had not must not have changed since (its ctime, which a new entry, a rename in or out, or a
  rename of the folder itself moves). So a folder of old files moved in its place is refused,
  and so is a new ``pygments.py`` put earlier on ``sys.path`` (its file is new);
* its cached bytecode (``__pycache__/*.pyc``): one made or changed later is not used (the
  module is compiled from its unchanged source instead), since a ``.pyc`` carries the source's
  mtime and size, which a script can copy.

The moment is read from ``CLOCK_REALTIME_COARSE``, the clock file times are taken from, so a
change made after it never carries an earlier time. A process that can set the system clock
back (root with the sandbox off) could get past the times: it can also read the host's memory
there (docs/security.md).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec, SourceFileLoader
from pathlib import Path
from types import ModuleType
from typing import Any

log = logging.getLogger(__name__)

_CLOCK_REALTIME_COARSE = 5
"""Linux's id of the clock file times come from (Python does not name it)."""

Listener = Callable[[str], None]


def _now_ns() -> int:
    """Now, as the kernel stamps a file changed from now on (coarse: never later than that)."""
    try:
        return time.clock_gettime_ns(_CLOCK_REALTIME_COARSE)
    except (OSError, AttributeError):  # not Linux: the fine clock, a tick later at most
        return time.time_ns()


class _SourceOnlyLoader(SourceFileLoader):
    """Compiles the module from its source and never reads or writes its ``.pyc``: the one
    cached may have been changed by a script (its header can match the unchanged source)."""

    def get_data(self, path: str) -> bytes:
        if not path.endswith(".py"):
            raise OSError(f"{path}: bytecode changed after hermes-tui started; compiling the source")
        return super().get_data(path)

    def set_data(self, path: str, data: object, *, _mode: int = 0o666) -> None:  # writes nothing
        pass


class ImportGuard(MetaPathFinder):
    """A finder first on ``sys.meta_path``: asks the finders after it where a module is, and
    refuses the module when its file, its folders or its bytecode changed after ``since_ns``.

    ``known`` maps the folders modules were imported from before (and the ``sys.path``
    entries) to their ``(st_dev, st_ino)`` then. ``checked`` holds every name it was asked
    for and its verdict (``ok``, ``no file``, ``not found``, ``refused``), for tests."""

    def __init__(self, since_ns: int, known: dict[str, tuple[tuple[int, int], ...]]) -> None:
        self.since_ns = since_ns
        self.known = known
        self.checked: dict[str, str] = {}
        self.refused: list[str] = []
        """Each refusal's line, in order."""
        self.listeners: list[Listener] = []
        self.loaded_at_close: frozenset[str] = frozenset(sys.modules)
        """The modules imported before it (what a test compares ``sys.modules`` with)."""
        self.in_flight_at_close: frozenset[str] = frozenset()
        """The imports under way in other threads as it was put in place: found before it, so
        not checked (no kernel had started yet)."""
        self._told: set[str] = set()
        self._lock = threading.Lock()

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        """The spec the other finders give, once checked; ImportError if it must not run."""
        spec = self._find(fullname, path, target)
        if spec is None:
            self.checked[fullname] = "not found"
            return None
        origin = spec.origin if spec.has_location else None
        if origin is None:  # built in, frozen, or a namespace package: no file of its own
            self.checked[fullname] = "no file"
            return spec
        why = self.changed(fullname, origin)
        if why is not None:
            self.checked[fullname] = "refused"
            line = self._refuse(fullname, origin, why)
            raise ImportError(line, name=fullname, path=origin)
        self.checked[fullname] = "ok"
        if isinstance(spec.loader, SourceFileLoader) and spec.cached and self._later(spec.cached, missing=False):
            spec.loader = _SourceOnlyLoader(spec.loader.name, spec.loader.path)
        return spec

    def _find(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None) -> ModuleSpec | None:
        for finder in list(sys.meta_path):
            if finder is self:
                continue
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                return spec
        return None

    def changed(self, fullname: str, origin: str) -> str | None:
        """Why the module at ``origin`` must not be imported now, or None."""
        file = origin if os.path.lexists(origin) else _archive(origin)  # a zipped module: its archive
        if file is None or self._later(file):
            return f"{file or origin} was made or changed after hermes-tui started"
        for folder in _folders(fullname, file):
            why = self._folder_changed(folder)
            if why is not None:
                return why
        return None

    def _folder_changed(self, folder: str) -> str | None:
        try:
            now = _identity(folder)
        except OSError:
            return f"{folder} cannot be read"
        known = self.known.get(folder)
        if known is not None:
            return None if now == known else f"{folder} was replaced after hermes-tui started"
        if self._later(folder):
            return f"{folder} changed after hermes-tui started"
        return None

    def _later(self, path: str, *, missing: bool = True) -> bool:
        """True when ``path`` (or what a link there points to) changed after start; a path
        that cannot be read counts as changed unless ``missing`` is False and it is absent."""
        try:
            found = os.lstat(path)
            times = [found.st_ctime_ns]
            if stat.S_ISLNK(found.st_mode):
                times.append(os.stat(path).st_ctime_ns)
        except FileNotFoundError:
            return missing
        except OSError:
            return True
        return max(times) >= self.since_ns  # the same tick counts: the coarse clock may not have moved

    def _refuse(self, fullname: str, origin: str, why: str) -> str:
        line = (f"hermes-tui refused to import {fullname} ({origin}): {why}; a script may have planted it "
                f"(restart hermes-tui to use it)")
        with self._lock:
            first = origin not in self._told
            self._told.add(origin)
            if first:
                self.refused.append(line)
        if first:  # one line per file, however often it is asked for
            log.warning("%s", line)
            for listener in list(self.listeners):
                try:
                    listener(line)
                except Exception:  # a listener's failure must not turn a refusal into another error
                    log.exception("import guard listener failed")
        return line


def _archive(path: str) -> str | None:
    """The file above ``path`` that holds it (a zip archive, for a module imported from one)."""
    probe = os.path.dirname(path)
    while probe and probe != os.path.dirname(probe):
        if os.path.lexists(probe):
            return None if os.path.isdir(probe) else probe
        probe = os.path.dirname(probe)
    return None


def _identity(folder: str) -> tuple[tuple[int, int], ...]:
    """The folder's (device, inode), and its target's when it is a symbolic link."""
    found = os.lstat(folder)
    ids = [(found.st_dev, found.st_ino)]
    if stat.S_ISLNK(found.st_mode):
        target = os.stat(folder)
        ids.append((target.st_dev, target.st_ino))
    return tuple(ids)


def _folders(fullname: str, file: str) -> list[str]:
    """The folders the import went through: the file's, then each parent package's, down from
    the ``sys.path`` entry (the folder holding the top package, or the top module's folder)."""
    folders: list[str] = []
    name, here = fullname, file
    while True:
        folder = os.path.dirname(here)
        if folder not in folders:
            folders.append(folder)
        parent = name.rpartition(".")[0]
        if not parent:
            if os.path.basename(here).startswith("__init__."):  # a top package: its sys.path entry too
                folders.append(os.path.dirname(folder))
            return folders
        module = sys.modules.get(parent)
        above = getattr(module, "__file__", None)
        if not above:  # a namespace package (no file): its folders mirror its dotted name
            for _ in parent.split("."):
                folder = os.path.dirname(folder)
                folders.append(folder)
            return folders
        name, here = parent, above


def snapshot(modules: Iterable[ModuleType], entries: Iterable[str]) -> dict[str, tuple[tuple[int, int], ...]]:
    """The identity of every folder the loaded ``modules`` came through, and of each ``sys.path``
    entry: what :class:`ImportGuard` compares a later import's folders with."""
    known: dict[str, tuple[tuple[int, int], ...]] = {}
    folders: set[str] = {entry for entry in entries if entry}
    for module in modules:
        file = getattr(module, "__file__", None)
        name = getattr(module, "__name__", None)
        if isinstance(file, str) and isinstance(name, str):
            folders.update(_folders(name, file))
    for folder in folders:
        try:
            known[folder] = _identity(folder)
        except OSError:
            pass
    return known


_GUARD: ImportGuard | None = None
_ARMED: dict[str, Any] | None = None
_LISTENERS: list[Listener] = []
_CLOSING = threading.Lock()
_WROTE_BYTECODE = sys.dont_write_bytecode


def guard() -> ImportGuard | None:
    """The guard in force, if the imports were closed."""
    return _GUARD


def arm(*, also: Iterable[str] = (), home: Path | None = None) -> None:
    """Ask for the imports to be closed when this program's runtime starts (its ``preload``,
    before any kernel): called by the programs that hold keys and run scripts (the app,
    ``run``/``resume``, ``exec``), not by tests or ``doctor``.

    ``also``: modules the program will need later and imports then (the app's lexers for runs
    and shell commands). ``home``: the ``HERMES_HOME`` whose approvals log gets a line for each
    refusal too."""
    global _ARMED
    _ARMED = {"also": tuple(also), "home": home}


def listen(listener: Listener) -> None:
    """Call ``listener(line)`` on each refusal, from the thread that imported (the app shows it).
    A bound method is held weakly: an app that ended is not called, nor kept."""
    held = _weakly(listener)
    _LISTENERS.append(held)
    if _GUARD is not None:
        _GUARD.listeners.append(held)


def _weakly(listener: Listener) -> Listener:
    if not hasattr(listener, "__self__"):
        return listener
    method = weakref.WeakMethod(listener)

    def call(line: str) -> None:
        alive = method()
        if alive is not None:
            alive(line)

    return call


def armed_imports() -> tuple[str, ...]:
    """The modules the program said it will need (:func:`arm`'s ``also``), to import ahead."""
    return tuple(_ARMED["also"]) if _ARMED is not None else ()


def close_if_armed(*, ahead: bool = True) -> ImportGuard | None:
    """:func:`close_imports` when the program asked with :func:`arm`; else nothing.
    ``ahead=False``: without importing :func:`armed_imports` (the caller does, in a thread)."""
    if _ARMED is None:
        return None
    also = _ARMED["also"] if ahead else ()
    home = _ARMED["home"]
    if home is None:
        return close_imports(also=also)
    from hermes_tui.runtime.approvals import audit_path

    return close_imports(also=also, audit=audit_path(home))


def close_imports(*, also: Iterable[str] = (), audit: Path | None = None) -> ImportGuard:
    """Check every later import (:class:`ImportGuard`), then import ``also`` (checked too).
    Idempotent.

    The host stops writing bytecode too: a ``__pycache__`` it made in a package's folder would
    change that folder, and the next module from there would be refused."""
    global _GUARD
    import importlib

    with _CLOSING:
        found = _GUARD
        if found is None:
            found = _put_in_place()
            found.listeners.extend(_LISTENERS)
            if audit is not None:
                found.listeners.append(_audit_writer(audit))
            _GUARD = found
    for name in also:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    return found


def _put_in_place() -> ImportGuard:
    """A guard whose moment is now, first on ``sys.meta_path``."""
    found = ImportGuard(_now_ns(), snapshot(list(sys.modules.values()), list(sys.path)))
    sys.dont_write_bytecode = True
    sys.meta_path.insert(0, found)
    # Another thread may be importing now (the app's first model call imports the provider's
    # SDK on the event loop): what it found before the guard is put in place is written down.
    found.in_flight_at_close = _in_flight()
    found.loaded_at_close = frozenset(sys.modules)
    return found


@contextlib.contextmanager
def checked_meanwhile() -> Iterator[ImportGuard | None]:
    """Imports checked as if closed now, until the block ends (a runtime's preload in a
    program that did not :func:`arm`: a library's host). With the imports closed already,
    nothing more. If the block saw a refusal, or did not end normally (an error, or it was
    never run and is collected), the guard stays: what it did not import must not be imported
    unchecked later."""
    with _CLOSING:
        if _GUARD is not None:
            found = None
        else:
            found = _put_in_place()
    try:
        yield found
    except BaseException:  # the imports were not all done (or never begun): the guard stays
        raise
    if found is not None and not found.refused:
        with _CLOSING:
            with contextlib.suppress(ValueError):
                sys.meta_path.remove(found)
            if not any(isinstance(finder, ImportGuard) for finder in sys.meta_path):
                sys.dont_write_bytecode = _WROTE_BYTECODE


def _in_flight() -> frozenset[str]:
    """The modules whose import has begun and not ended (their import locks), in any thread."""
    import importlib._bootstrap as bootstrap

    locks = getattr(bootstrap, "_module_locks", {})
    return frozenset(name for name in list(locks) if isinstance(name, str))


def _audit_writer(path: Path) -> Listener:
    """A listener appending each refusal to the approvals log (one JSON line, as the gate's)."""
    from hermes_tui.runtime.approvals import AuditLog

    audit = AuditLog(path)

    def write(line: str) -> None:
        entry = {"at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "event": "import_refused", "reason": line}
        try:
            audit._append(json.dumps(entry, ensure_ascii=False) + "\n")  # noqa: SLF001 (sync: any thread)
        except OSError as exc:
            log.warning("the approvals log cannot be written: %s", exc)

    return write


def open_imports() -> None:
    """Remove the guard (tests that closed the imports in their own process)."""
    global _GUARD, _ARMED
    with _CLOSING:
        if _GUARD is not None and _GUARD in sys.meta_path:
            sys.meta_path.remove(_GUARD)
        _GUARD = None
        _ARMED = None
        sys.dont_write_bytecode = _WROTE_BYTECODE
