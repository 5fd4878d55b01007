"""What marks a process as one the host started, and keeps it apart from everything else.

Every process the host starts for a script — kernels, shell commands, what they start — is
forked from a thread that took on two things for good, which each child inherits and can
never shed (not by a double fork, ``setsid``, ``exec``, nor as root):

* **A mark** (:func:`mark_thread`): a seccomp filter that allows everything. It changes
  nothing a process may do, but ``/proc/<pid>/status`` counts a process's filters
  (``Seccomp_filters``, Linux 5.9) and a filter can never be removed. A peer with more
  filters than the host is one of its children's (:func:`carries_the_mark`): how the app's
  socket tells a script from the user even when every other sign is gone (a host started
  with ``no_new_privs``, a child that double-forked away).
* **A Landlock domain** (:func:`enter_domain`): a process in a domain may not ptrace, nor
  read ``/proc/<pid>/environ``, ``mem`` or ``fd`` of, a process outside it (Landlock checks
  every ptrace access, reading ``environ`` included, whatever the uid). That keeps kernels
  out of the shell that launched the app (a normal user's shell is dumpable and the same
  uid), of ``key_cmd`` (started apart, from a thread outside the domain), and of other
  apps' kernels (each app's domain is its own). For root, the domain also refuses writes
  under ``/proc`` and ``/sys``: a capability-less root process can still write
  ``core_pattern`` and have the kernel start its program with every capability.

Both need ``no_new_privs`` on the thread (:func:`no_new_privs`): a setuid program (``sudo``)
does not raise a script's process. Linux only; elsewhere nothing is applied.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import sys

log = logging.getLogger(__name__)

_PR_SET_NO_NEW_PRIVS = 38
_PR_GET_NO_NEW_PRIVS = 39
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_BPF_RET_K = 0x06
_SECCOMP_RET_ALLOW = 0x7FFF0000

_SYS_LANDLOCK_CREATE_RULESET = 444
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1
_FS_WRITE = (1 << 1) | (1 << 4) | (1 << 5) | sum(1 << bit for bit in range(6, 13))
"""write_file, remove_dir, remove_file and make_* (char, dir, reg, sock, fifo, block, sym)."""
_FS_REFER = 1 << 13  # ABI 2
_FS_TRUNCATE = 1 << 14  # ABI 3
KERNEL_CONTROL = frozenset({"proc", "sys"})
"""Top-level folders no child of a root host may write: /proc/sys/kernel/core_pattern,
modprobe and /sys/kernel/uevent_helper start programs with every capability."""

_libc: ctypes.CDLL | None = None


def libc() -> ctypes.CDLL | None:
    """The C library (None off Linux)."""
    global _libc
    if _libc is None and sys.platform.startswith("linux"):
        _libc = ctypes.CDLL(None, use_errno=True)  # the program's own symbols: libc's (find_library runs ldconfig)
    return _libc


def prctl(option: int, arg2: int = 0, arg3: int = 0) -> int:
    """``prctl(option, arg2, arg3)`` (-1 off Linux)."""
    lib = libc()
    if lib is None:
        return -1
    return int(lib.prctl(ctypes.c_int(option), ctypes.c_ulong(arg2), ctypes.c_ulong(arg3), ctypes.c_ulong(0),
                         ctypes.c_ulong(0)))


def status(pid: int | str) -> dict[str, str]:
    """The fields of ``/proc/<pid>/status`` (empty when the process is gone)."""
    fields: dict[str, str] = {}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                name, _, value = line.partition(":")
                fields[name] = value.strip()
    except OSError:
        pass
    return fields


def no_new_privs() -> bool:
    """Set ``no_new_privs`` on this thread (for good). True when it is set."""
    if prctl(_PR_GET_NO_NEW_PRIVS) == 1:
        return True
    return prctl(_PR_SET_NO_NEW_PRIVS, 1) == 0


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


def mark_thread() -> bool:
    """Load the mark — an allow-everything seccomp filter — on this thread; every process it
    starts from now on carries it. True when loaded."""
    if not no_new_privs():
        return False
    program = (_SockFilter * 1)(_SockFilter(_BPF_RET_K, 0, 0, _SECCOMP_RET_ALLOW))
    prog = _SockFprog(1, ctypes.cast(program, ctypes.POINTER(_SockFilter)))
    lib = libc()
    if lib is None or lib.prctl(ctypes.c_int(_PR_SET_SECCOMP), ctypes.c_ulong(_SECCOMP_MODE_FILTER),
                                  ctypes.c_void_p(ctypes.addressof(prog)), ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
        log.warning("cannot mark the processes the app starts (seccomp, errno %s): the app's socket "
                    "then knows a script only by its ancestry", ctypes.get_errno())
        return False
    return True


def filters(pid: int | str) -> int | None:
    """How many seccomp filters process ``pid`` runs under (None: unknown)."""
    try:
        return int(status(pid)["Seccomp_filters"])
    except (KeyError, ValueError):
        return None


def carries_the_mark(pid: int) -> bool:
    """True when ``pid`` runs under more seccomp filters than this process: it descends from a
    thread that loaded :func:`mark_thread` (or from something more confined than the app)."""
    theirs, mine = filters(pid), filters("self")
    return theirs is not None and mine is not None and theirs > mine


@functools.cache  # read by every sandbox label (per run, per kernels listing): the kernel's ABI is fixed
def domains_available() -> bool:
    """True when this kernel has Landlock (:func:`enter_domain` can work)."""
    lib = libc()
    if lib is None:
        return False
    return int(lib.syscall(_SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                            ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION))) >= 1


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def enter_domain(*, root: bool) -> bool:
    """Put this thread (and what it forks) in a Landlock domain of its own: every write as
    before, except, for ``root``, under ``/proc`` and ``/sys``. True when in force (False
    where Landlock is missing: Linux < 5.13 or disabled)."""
    lib = libc()
    if lib is None:
        return False
    syscall = lib.syscall
    abi = syscall(_SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                  ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION))
    if abi < 1:
        return False
    handled = _FS_WRITE | (_FS_REFER if abi >= 2 else 0) | (_FS_TRUNCATE if abi >= 3 else 0)
    attr = _RulesetAttr(handled)
    ruleset = syscall(_SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)),
                      ctypes.c_uint32(0))
    if ruleset < 0:
        return False
    try:
        allowed = [name for name in sorted(os.listdir("/")) if name not in KERNEL_CONTROL] if root else [""]
        for name in allowed:
            folder = os.path.join("/", name)
            if not os.path.isdir(folder):
                continue
            try:
                fd = os.open(folder, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                rule = _PathBeneath(handled, fd)
                syscall(_SYS_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH),
                        ctypes.byref(rule), ctypes.c_uint32(0))
            finally:
                os.close(fd)
        if not no_new_privs():
            return False
        return syscall(_SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) == 0
    finally:
        os.close(ruleset)


def parent_of(pid: int) -> int | None:
    """The parent of ``pid`` (None if it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    try:  # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        return int(stat[stat.rindex(b")") + 2:].split()[1])
    except (ValueError, IndexError):
        return None


def descends_from(pid: int, ancestor: int, limit: int = 64) -> bool:
    """True when ``pid`` is ``ancestor`` or one of its descendants (parents walked up to
    ``limit`` steps)."""
    current: int | None = pid
    for _ in range(limit):
        if current == ancestor:
            return True
        if current is None or current <= 1:
            return False
        current = parent_of(current)
    return False


def children_of(pid: int) -> list[int]:
    """The children of ``pid`` (every thread's)."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", "rb") as handle:
                found += [int(word) for word in handle.read().split()]
        except (OSError, ValueError):
            continue
    return found


def _namespace_pid(pid: int) -> int | None:
    """``pid``'s number in its own (innermost) pid namespace."""
    try:
        return int(status(pid)["NSpid"].split()[-1])
    except (KeyError, ValueError, IndexError):
        return None


def host_pid(inner: int, root: int, depth: int = 4) -> int | None:
    """The pid, as this process sees it, of the descendant of ``root`` (within ``depth``
    generations) that calls itself ``inner`` in its own pid namespace (a kernel under
    bubblewrap reports its namespace's pid). None if there is none."""
    level = [root]
    for _ in range(depth + 1):
        for pid in level:
            if _namespace_pid(pid) == inner:
                return pid
        level = [child for pid in level for child in children_of(pid)]
    return None
