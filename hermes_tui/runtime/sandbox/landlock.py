"""Landlock (Linux ≥ 5.13): unprivileged, per-process file system, TCP and signal rules.

Landlock grants: a ruleset names the accesses it *handles*, and each rule allows some of them
beneath one file or folder; everything handled and not allowed is refused, for the process
that restricts itself and everything it starts, for root too. Rules only add up, so "write
this folder but not that file inside it" is written as its complement: every sibling on the
way down gets the rights, the path itself and the folders leading to it do not
(:func:`add_complement`). Those folders then take no new entries directly.

Only three system calls, the same numbers on every architecture; ``ctypes`` calls them (the
Landlock packages on PyPI are pre-releases). The ABI version says what the kernel supports:
2 adds REFER (renames across folders), 3 TRUNCATE, 4 TCP bind/connect, 6 scoping of signals
and abstract Unix sockets to the sandbox.
"""

from __future__ import annotations

import ctypes
import os
import stat
from collections.abc import Iterable

from hermes_tui.runtime.sandbox.paths import inside

SYS_CREATE_RULESET = 444
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_ALL = sum(1 << bit for bit in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
MAKE_DEVICE = (1 << 6) | (1 << 11)  # char, block
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
FILE_ONLY = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE
"""Rights a rule on a file (not a folder) may carry."""

NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

_PR_SET_NO_NEW_PRIVS = 38

_libc: ctypes.CDLL | None = None


def libc() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)  # the program's own symbols: libc's (find_library runs ldconfig)
    return _libc


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi() -> int:
    """The Landlock ABI version of this kernel (0: none, or disabled)."""
    try:
        version = libc().syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(int(version), 0)


def write_rights(version: int) -> int:
    """Every right that writes, as far as ABI ``version`` knows them."""
    rights = WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_ALL
    if version >= 2:
        rights |= REFER
    if version >= 3:
        rights |= TRUNCATE
    return rights


class Ruleset:
    """A Landlock ruleset being built: an fd that :meth:`restrict` applies to the calling
    process (in a child, between fork and exec). Close it when the child has started."""

    def __init__(self, fs: int = 0, net: int = 0, scoped: int = 0, version: int | None = None) -> None:
        version = abi() if version is None else version
        if version < 1:
            raise OSError("Landlock is not available (Linux 5.13 or newer with Landlock enabled is needed)")
        attr = _RulesetAttr(fs, net if version >= 4 else 0, scoped if version >= 6 else 0)
        size = 24 if version >= 6 else 16 if version >= 4 else 8
        self.fs = fs
        self.fd = int(libc().syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size),
                                     ctypes.c_uint32(0)))
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "cannot create a Landlock ruleset")
        self.rules = 0

    def allow(self, path: str, rights: int) -> None:
        """Allow ``rights`` beneath ``path`` (file rights only, for a file). Missing: skipped."""
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            return
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISLNK(mode):
                return
            if not stat.S_ISDIR(mode):
                rights &= FILE_ONLY
            rights &= self.fs
            if not rights:
                return
            rule = _PathBeneath(rights, fd)
            if libc().syscall(SYS_ADD_RULE, ctypes.c_int(self.fd), ctypes.c_int(_RULE_PATH_BENEATH),
                              ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
                raise OSError(ctypes.get_errno(), f"cannot add a Landlock rule for {path}")
            self.rules += 1
        finally:
            os.close(fd)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def add_complement(ruleset: Ruleset, root: str, rights: int, excluded: Iterable[str]) -> None:
    """Allow ``rights`` beneath ``root`` except beneath each of ``excluded`` (real paths).

    Where an excluded path lies inside ``root``, the rights go to each entry beside it and
    beside the folders leading to it, not to those folders themselves: they keep their entries
    but take no new ones (a file created there after this would get no rights)."""
    inner = [path for path in excluded if inside(path, root)]
    if not inner:
        ruleset.allow(root, rights)
        return
    if root in inner:
        return
    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        child = os.path.join(root, name)
        if any(inside(path, child) for path in inner):
            if os.path.isdir(child) and not os.path.islink(child):
                add_complement(ruleset, child, rights, inner)
        else:
            ruleset.allow(child, rights)


def restrict_self(ruleset_fd: int) -> None:
    """Apply a ruleset to this process (and what it starts). For a child before exec."""
    lib = libc()
    if lib.prctl(ctypes.c_int(_PR_SET_NO_NEW_PRIVS), ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0),
                 ctypes.c_ulong(0)) != 0:
        raise OSError(ctypes.get_errno(), "cannot set no_new_privs")
    if lib.syscall(SYS_RESTRICT_SELF, ctypes.c_int(ruleset_fd), ctypes.c_uint32(0)) != 0:
        raise OSError(ctypes.get_errno(), "cannot apply the Landlock ruleset")
