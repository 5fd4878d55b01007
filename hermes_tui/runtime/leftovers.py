"""Finding what a dead host left behind, and removing it at the next start.

A live host holds an exclusive ``flock`` on each thing it is still writing: its staging dir,
and a spill file while it is written (as ``.NAME.part`` until it is whole). The kernel drops
a lock when its holder dies, however it dies, so "the lock can be taken" means "nobody is
using this any more": no pid files, no guessing from ages, no race with a second host
sharing the same ``HERMES_HOME``.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

log = logging.getLogger(__name__)

STAGING_PREFIX = "hermes-tui-"
"""Staging dirs are ``$TMPDIR/hermes-tui-XXXXXXXX``."""
MARKER = ".hermes-tui-staging"
"""A file every staging dir holds: a folder merely named like one (a checkout in /tmp) is
never removed."""
_STAGING_NAME = re.compile(re.escape(STAGING_PREFIX) + r"[a-z0-9_]{8}")


def make_staging_dir() -> tuple[Path, int]:
    """A new private staging dir under ``$TMPDIR``, marked and held: (path, lock fd)."""
    root = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX))
    fd = hold(root)  # held before marked: another host's sweep never takes a dir that is starting
    try:
        (root / MARKER).touch(mode=0o600)
    except OSError:
        os.close(fd)
        raise
    return root, fd


def hold(path: Path) -> int:
    """Open ``path`` (a file or a directory) and hold an exclusive lock on it for as long
    as the returned descriptor stays open. Raises OSError if it cannot be opened."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)  # a FIFO never waits
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise
    return fd


def abandoned(path: Path) -> bool:
    """True when ``path`` is ours (same owner, not a link) and nobody holds its lock."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    if not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)) or info.st_uid != os.geteuid():
        return False
    try:
        fd = hold(path)
    except OSError:
        return False  # a live host holds it (or it vanished)
    os.close(fd)
    return True


def stale_staging_dirs(tempdir: Path, keep: Path | None = None) -> Iterator[Path]:
    """Staging dirs under ``tempdir`` that no live host holds (``keep`` excluded)."""
    try:
        entries = list(os.scandir(tempdir))
    except OSError:
        return
    for entry in entries:
        if not _STAGING_NAME.fullmatch(entry.name) or Path(entry.path) == keep:
            continue
        with contextlib.suppress(OSError):
            if (entry.is_dir(follow_symlinks=False) and os.path.isfile(os.path.join(entry.path, MARKER))
                    and abandoned(Path(entry.path))):
                yield Path(entry.path)


def sweep_staging(tempdir: Path, keep: Path | None = None) -> list[Path]:
    """Remove the staging dirs dead hosts left under ``tempdir``; returns them. Blocking."""
    removed = []
    for folder in stale_staging_dirs(tempdir, keep):
        shutil.rmtree(folder, ignore_errors=True)
        log.info("removed %s, left by a host that is gone", folder)
        removed.append(folder)
    return removed


def sweep_partial_spills(cache_dir: Path, made_before: float | None = None) -> list[Path]:
    """Remove the ``.*.part`` spill files no live writer holds (a host died while a script's
    output was being saved); returns them. Blocking. ``made_before``: only files last changed
    before then (a runtime sweeping beside its own first scripts leaves their spills alone,
    which exist unlocked for an instant between their open and their lock)."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(cache_dir))
    except OSError:
        return removed
    for entry in entries:
        if not (entry.name.startswith(".") and entry.name.endswith(".part")):
            continue
        if made_before is not None:
            try:
                if entry.stat(follow_symlinks=False).st_ctime >= made_before:
                    continue
            except OSError:
                continue
        if abandoned(Path(entry.path)):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    return removed
