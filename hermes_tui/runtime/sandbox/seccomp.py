"""The seccomp filter every sandboxed process runs under (both mechanisms).

Built with libseccomp through ``pyseccomp`` (it picks the syscall numbers and the checks of
the architecture; a call from another ABI — 32-bit ``int 0x80``, x32 — is killed), exported
once as BPF bytes: bubblewrap loads them (``--seccomp FD``), the Landlock mechanism loads them
in the child before exec.

What it refuses (EPERM unless said): new sockets (``socket``) of every family without
``network``, and with it every family but IPv4, IPv6 and netlink — a Unix socket reaches the
user's tmux, the app's own socket or a Docker daemon, an escape rather than a network;
``socketpair`` stays (the tool channel is one). io_uring (ENOSYS: it would open sockets
without ``socket``); ptrace and reading other processes' memory; the kernel keyrings; new user
namespaces, mounts and ``setns``; loading code or filters into the kernel (modules, BPF,
kexec, perf); ``TIOCSTI``/``TIOCLINUX`` (typing into a terminal); ``userfaultfd``.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import functools
import os
import tempfile
from collections.abc import Iterator

AF_INET, AF_INET6, AF_NETLINK = 2, 10, 16
AF_UNIX, AF_KEY, AF_PACKET, AF_VSOCK = 1, 15, 17, 40
CLONE_NEWUSER = 0x10000000
TIOCSTI, TIOCLINUX = 0x5412, 0x541C
INT = 0xFFFFFFFF
"""The kernel reads these arguments as 32-bit ints: the checks mask the upper half, or a
caller could pass ``(1 << 32) | AF_UNIX`` past a plain comparison."""

REFUSED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "keyctl", "add_key", "request_key", "bpf",
    "perf_event_open", "userfaultfd", "mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen",
    "fsmount", "fsconfig", "fspick", "mount_setattr", "unshare", "setns", "kexec_load", "kexec_file_load",
    "init_module", "finit_module", "delete_module", "swapon", "swapoff", "reboot", "acct", "quotactl",
    "open_by_handle_at", "name_to_handle_at", "syslog", "vhangup", "lookup_dcookie",
)
NOT_THERE = ("io_uring_setup", "io_uring_enter", "io_uring_register", "clone3")
"""Answered ENOSYS, as if the kernel lacked them: programs fall back (glibc's threads to
``clone``, which is checked; clone3's flags sit in memory a filter cannot read)."""


class SeccompUnavailable(Exception):
    """libseccomp (or pyseccomp) is missing; the message says what to install."""


SONAMES = {"c": "libc.so.6", "seccomp": "libseccomp.so.2"}
"""The libraries pyseccomp looks for as it is imported, by the names they have on Linux."""


@contextlib.contextmanager
def _sonames_first() -> Iterator[None]:
    """``ctypes.util.find_library`` answers :data:`SONAMES` when they load, meanwhile: it runs
    ``ldconfig -p`` for each name otherwise, about 3 ms of every runtime's start."""
    original = ctypes.util.find_library

    def find(name: str) -> str | None:
        soname = SONAMES.get(name)
        if soname is not None:
            try:
                ctypes.CDLL(soname)
            except OSError:
                pass
            else:
                return soname
        return original(name)

    ctypes.util.find_library = find
    try:
        yield
    finally:
        ctypes.util.find_library = original


@functools.lru_cache(maxsize=4)
def program(network: bool) -> bytes:
    """The filter as BPF bytes (``struct sock_filter`` array), built once per setting."""
    try:
        with _sonames_first():
            import pyseccomp as sc
    except (ImportError, OSError, RuntimeError) as exc:  # OSError/RuntimeError: no libseccomp.so
        raise SeccompUnavailable(f"libseccomp cannot be loaded ({exc}); install libseccomp2") from None
    deny = sc.ERRNO(errno.EPERM)
    rules = sc.SyscallFilter(sc.ALLOW)
    if network:
        for family in (AF_UNIX, AF_KEY, AF_PACKET, AF_VSOCK):
            rules.add_rule(deny, "socket", sc.Arg(0, sc.MASKED_EQ, INT, family))
    else:
        rules.add_rule(deny, "socket")
    for name in REFUSED:
        _refuse(rules, deny, name)
    for name in NOT_THERE:
        _refuse(rules, sc.ERRNO(errno.ENOSYS), name)
    rules.add_rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER))
    for request in (TIOCSTI, TIOCLINUX):
        rules.add_rule(deny, "ioctl", sc.Arg(1, sc.MASKED_EQ, INT, request))
    with tempfile.TemporaryFile() as out:
        rules.export_bpf(out)
        out.seek(0)
        return out.read()


def _refuse(rules: object, action: int, name: str) -> None:
    try:
        rules.add_rule(action, name)  # type: ignore[attr-defined]
    except (OSError, ValueError, RuntimeError):  # a call this architecture does not have
        pass


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class Loader:
    """Loads a filter into the calling process: prepared in the parent, :meth:`load` runs in
    the child between fork and exec (no allocation there but ctypes' call)."""

    _PR_SET_SECCOMP = 22
    _SECCOMP_MODE_FILTER = 2

    def __init__(self, code: bytes) -> None:
        from hermes_tui.runtime.sandbox.landlock import libc

        self._buffer = ctypes.create_string_buffer(code, len(code))
        self._prog = _SockFprog(len(code) // 8, ctypes.cast(self._buffer, ctypes.c_void_p).value)
        self._libc = libc()

    def load(self) -> None:
        """Install the filter (no_new_privs must be set already)."""
        if self._libc.prctl(ctypes.c_int(self._PR_SET_SECCOMP), ctypes.c_ulong(self._SECCOMP_MODE_FILTER),
                            ctypes.c_void_p(ctypes.addressof(self._prog)), ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
            raise OSError(ctypes.get_errno(), "cannot load the seccomp filter")


def pipe_of(code: bytes) -> int:
    """A pipe's read end holding ``code`` (what ``bwrap --seccomp FD`` reads); inheritable."""
    read, write = os.pipe()
    try:
        view = memoryview(code)
        while view:
            view = view[os.write(write, view):]
    finally:
        os.close(write)
    os.set_inheritable(read, True)
    return read
