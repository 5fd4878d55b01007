"""Keeping the host's secrets out of reach of the processes it starts (issue 13).

The host holds the model keys (in its environment and its memory). Every kernel, shell
command and helper it starts runs as the same user, and on these machines that user is root.
Two things together make the host unreadable to them:

* **The host is not dumpable** (``prctl(PR_SET_DUMPABLE, 0)``). ``/proc/<host>/environ``,
  ``/mem``, ``/fd``, ``ptrace`` and ``process_vm_readv`` then need a capability, even for a
  process of the same user.
* **No child holds such a capability.** Root holds them all, so being non-dumpable alone
  stops nothing there. Every child the host starts on a script's behalf is spawned from one
  dedicated thread that has dropped :data:`DROPPED` from its bounding set and from its
  effective, permitted, inheritable and ambient sets. Capabilities are per thread, a child
  inherits them from the thread that forks it, and a capability out of the bounding set
  cannot come back on ``execve`` (not for root, not through a setuid binary). Where the
  bounding set cannot be changed (no CAP_SETPCAP), the thread sets ``no_new_privs`` instead,
  so ``execve`` grants nothing the thread does not hold.

Which capabilities: on Linux 6.x reading another process's ``environ`` (ptrace "read" mode)
is allowed by CAP_SYS_PTRACE, CAP_SYS_ADMIN or CAP_PERFMON (measured: each one alone is
enough); CAP_SYS_RAWIO reads all memory through ``/proc/kcore``; CAP_SYS_MODULE and CAP_BPF
run code in the kernel. A normal user holds none of them: only the first step applies, and
it is enough. Linux only; elsewhere both steps are skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from hermes_tui.runtime import lineage

log = logging.getLogger(__name__)

CAP_SYS_MODULE = 16
CAP_SYS_RAWIO = 17
CAP_SYS_PTRACE = 19
CAP_SYS_ADMIN = 21
CAP_PERFMON = 38
CAP_BPF = 39
DROPPED = (CAP_SYS_MODULE, CAP_SYS_RAWIO, CAP_SYS_PTRACE, CAP_SYS_ADMIN, CAP_PERFMON, CAP_BPF)
"""Capabilities no child of the host may hold: each reads another process or runs code in the kernel."""

_PR_GET_DUMPABLE = 3
_PR_SET_DUMPABLE = 4
_PR_CAPBSET_READ = 23
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_GET_NO_NEW_PRIVS = 39
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_LOWER = 3
_CAP_VERSION_3 = 0x20080522

T = TypeVar("T")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


_local = threading.local()
_c = lineage.libc
_prctl = lineage.prctl


def make_undumpable() -> bool:
    """Make this process non-dumpable (process-wide, idempotent). True when it is now."""
    if _prctl(_PR_SET_DUMPABLE, 0) != 0:
        log.warning("cannot make the host non-dumpable (errno %s)", ctypes.get_errno())
    return not is_dumpable()


def is_dumpable() -> bool:
    """True when this process may be read through /proc by processes of the same user."""
    return _prctl(_PR_GET_DUMPABLE) != 0


def _caps() -> tuple[_CapHeader, ctypes.Array[_CapData]] | None:
    """This thread's capability sets (None if they cannot be read)."""
    libc = _c()
    if libc is None:
        return None
    header = _CapHeader(_CAP_VERSION_3, 0)
    data = (_CapData * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        return None
    return header, data


def _bit(cap: int) -> tuple[int, int]:
    return cap // 32, 1 << (cap % 32)


def children_could_hold(cap: int) -> bool:
    """True when a program this thread executes could hold ``cap``."""
    caps = _caps()
    if caps is None:
        return False
    _, data = caps
    word, bit = _bit(cap)
    held = (data[word].effective | data[word].permitted | data[word].inheritable) & bit
    libc = _c()
    # Root gets its bounding set on execve, whatever else the thread holds.
    root = libc is not None and libc.geteuid() == 0
    in_bounding = _prctl(_PR_CAPBSET_READ, cap) == 1
    return bool(held) or (root and in_bounding and _prctl(_PR_GET_NO_NEW_PRIVS) != 1)


def drop_for_children() -> None:
    """Make sure no program executed from THIS thread can hold a capability of :data:`DROPPED`.

    Permanent for the thread. Never raises: a failure is logged, and children are then only
    as safe as the host's non-dumpable flag makes them.
    """
    if getattr(_local, "dropped", False):
        return
    _local.dropped = True
    if not any(children_could_hold(cap) for cap in DROPPED):
        return  # a normal user: nothing to drop
    bounded = all(_prctl(_PR_CAPBSET_DROP, cap) == 0 for cap in DROPPED)
    if not bounded and _prctl(_PR_SET_NO_NEW_PRIVS, 1) != 0:
        log.warning("cannot keep capabilities from child processes (errno %s)", ctypes.get_errno())
    for cap in DROPPED:
        _prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_LOWER, cap)
    caps = _caps()
    libc = _c()
    if caps is None or libc is None:
        return
    header, data = caps
    for cap in DROPPED:
        word, bit = _bit(cap)
        data[word].effective &= ~bit
        data[word].permitted &= ~bit
        data[word].inheritable &= ~bit
    if libc.capset(ctypes.byref(header), data) != 0:
        log.warning("cannot drop capabilities for child processes (errno %s)", ctypes.get_errno())


_spawner: ThreadPoolExecutor | None = None
_spawner_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    """The one thread children are forked from (started on first use)."""
    global _spawner
    with _spawner_lock:
        if _spawner is None:
            _spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hermes-spawn",
                                          initializer=_become_spawner)
        return _spawner


def _become_spawner() -> None:
    _local.spawner = True
    drop_for_children()
    libc = _c()
    root = libc is not None and libc.geteuid() == 0
    if libc is not None and not lineage.enter_domain(root=root):
        log.warning("Landlock is not available: %s", "a root script could still write /proc/sys, and kernels "
                    "can read other processes of this user" if root else
                    "kernels can read the environment of other processes of this user")
    lineage.mark_thread()


def warm_spawner() -> None:
    """Start the spawner thread now (a runtime's start), not with the first kernel. Blocking."""
    _executor().submit(int).result()


def spawn(start: Callable[[], T]) -> T:
    """Run ``start`` (a ``Popen``) on the spawner thread and return what it returns. Blocking.

    Every process the host starts for a script — kernels, shell commands, ripgrep,
    interpreter probes — is forked there, from a thread without :data:`DROPPED`; sandboxed
    ones from a thread of their own (:func:`spawn_restricted`).
    """
    if getattr(_local, "spawner", False):
        return start()
    return _executor().submit(start).result()


def spawn_restricted(start: Callable[[], T], restrict: Callable[[], None] | None, *, marked: bool = True) -> T:
    """Run ``start`` (a ``Popen``) on a new thread that first gives up :data:`DROPPED` and runs
    ``restrict`` (a Landlock domain, a seccomp filter: the thread keeps them for good, and the
    child inherits them; the thread ends then, so no thread of the host is in a sandbox's
    domain, where its processes could signal it). Not the spawner thread: its own Landlock
    domain would keep bubblewrap from mounting. ``marked``: the thread loads the mark
    (:func:`.lineage.mark_thread`) first, as every thread that starts a script's processes does.
    Blocking; what either raises is raised here."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            drop_for_children()
            if marked:
                lineage.mark_thread()
            if restrict is not None:
                restrict()
            outcome.append((True, start()))
        except BaseException as exc:  # handed to the caller
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name="hermes-spawn-sandboxed", daemon=True)
    thread.start()
    thread.join()
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


async def spawn_apart(start: Callable[[], T]) -> T:
    """Run ``start`` (a ``Popen``) on a new thread that gives up :data:`DROPPED` and nothing
    else: no mark, outside the spawner's Landlock domain, so no kernel may read the process
    (its ``environ``, its memory). For the user's own helpers that handle secrets (``key_cmd``)."""
    return await asyncio.to_thread(spawn_restricted, start, None, marked=False)


async def spawn_async(start: Callable[[], T]) -> T:
    """:func:`spawn` for the event loop: waits without blocking it."""
    return await asyncio.wrap_future(_executor().submit(start))


class Spawned:
    """A child started by :func:`open_process`: its output as asyncio streams."""

    def __init__(self, popen: subprocess.Popen[bytes], stdout: asyncio.StreamReader,
                 stderr: asyncio.StreamReader) -> None:
        self.popen = popen
        self.stdout = stdout
        self.stderr = stderr

    @property
    def returncode(self) -> int | None:
        return self.popen.returncode

    async def wait(self) -> int:
        """Wait for the exit (in a thread: the loop never blocks on it)."""
        return await asyncio.to_thread(self.popen.wait)

    async def communicate(self) -> tuple[bytes, bytes]:
        """All of stdout and stderr, then the exit."""
        out, err = await asyncio.gather(self.stdout.read(), self.stderr.read())
        await self.wait()
        return out, err

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.popen.kill()


async def open_process(argv: list[str], env: dict[str, str], *, new_session: bool = False,
                       confinement: Any = None, apart: bool = False) -> Spawned:
    """``asyncio.create_subprocess_exec`` for a child of a script's: forked by the spawner
    (asyncio would fork from the loop's thread, which keeps its capabilities), stdin empty,
    stdout and stderr read as streams. ``new_session``: in its own process group (so it and
    whatever it starts can be killed together). ``confinement``: a ``sandbox.Confinement`` to
    run it in (not imported here: the sandbox starts its processes through this module).
    ``apart``: the user's own helper (``key_cmd``), started by :func:`spawn_apart` where no
    kernel can read it."""
    if confinement is None or confinement.tier == "off":
        spawner = spawn_apart if apart else spawn_async
        popen = await spawner(lambda: subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                                       stderr=subprocess.PIPE, env=env, start_new_session=new_session))
    else:
        try:
            popen = await asyncio.to_thread(confinement.start, lambda: subprocess.Popen(
                [*confinement.prefix, *argv], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env={**env, **confinement.env}, start_new_session=new_session,
                pass_fds=confinement.fds))
        finally:
            confinement.close()
    loop = asyncio.get_running_loop()
    streams: list[asyncio.StreamReader] = []
    for pipe in (popen.stdout, popen.stderr):
        reader = asyncio.StreamReader(limit=1 << 20, loop=loop)
        protocol = asyncio.StreamReaderProtocol(reader)
        await loop.connect_read_pipe(lambda protocol=protocol: protocol, pipe)  # type: ignore[misc]
        streams.append(reader)
    return Spawned(popen, streams[0], streams[1])


def drop_writable_import_paths() -> None:
    """Take the working directory and the launching script's folder off ``sys.path``.

    ``python -m hermes_tui`` puts the working directory first on ``sys.path`` — the folder
    where scripts write their files — and a console script puts its ``bin`` folder there: a
    ``whatthepatch.py`` planted in either would be imported by the host on first use. The
    host's own code comes from its installed package, never from those folders."""
    unsafe = {"", os.getcwd()}
    if sys.argv and sys.argv[0]:
        unsafe.add(os.path.dirname(os.path.abspath(sys.argv[0])))
    sys.path[:] = [entry for entry in sys.path if (os.path.abspath(entry) if entry else "") not in unsafe]


def harden_host() -> None:
    """What an entry point does first, before any thread: the process becomes non-dumpable
    and the calling thread (and every thread started after) gives up :data:`DROPPED`."""
    make_undumpable()
    drop_for_children()


def started_by_this_host(pid: int) -> bool:
    """True when process ``pid`` is one the host started or one of its descendants (a kernel,
    a script's subprocess): something that must not speak for the user (answer an approval).

    Four signs, any one enough: it carries the mark (more seccomp filters than this process:
    :mod:`.lineage`; a filter is never shed, whatever the process or the host's own
    ``no_new_privs``); ``pid`` descends from this process; its bounding set lacks capabilities
    of :data:`DROPPED` that this process's has (only the spawner thread drops them); it has
    ``no_new_privs`` and this process has not. An unknown pid counts as ours: refused.
    """
    peer, mine = lineage.status(pid), lineage.status("self")
    if not peer:
        return True
    try:  # the mark: more seccomp filters than this process (lineage.carries_the_mark, from what is read)
        if int(peer.get("Seccomp_filters", "0")) > int(mine.get("Seccomp_filters", "0")):
            return True
    except ValueError:
        pass
    try:
        peer_bound, my_bound = int(peer.get("CapBnd", "0"), 16), int(mine.get("CapBnd", "0"), 16)
    except ValueError:
        return True
    dropped = sum(1 << cap for cap in DROPPED)
    if (my_bound & dropped) & ~peer_bound:
        return True
    if peer.get("NoNewPrivs") == "1" and mine.get("NoNewPrivs") != "1":
        return True
    return lineage.descends_from(pid, os.getpid())
