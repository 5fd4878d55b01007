"""Small file helpers shared by the runtime's modules."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

_UMASK = os.umask(0o022)
os.umask(_UMASK)


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> bool:
    """Write ``data`` to ``path`` via a temp file in the same dir and a rename. Blocking.

    Readers never see a half-written file. Parent dirs are made. The file gets ``mode`` if
    given, else keeps an existing file's mode, else the usual ``0666 & ~umask``. Returns True
    when the file was created.
    """
    try:
        existing = stat.S_IMODE(path.stat().st_mode)
        created = False
    except FileNotFoundError:
        existing = 0o666 & ~_UMASK
        created = True
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(temp, existing if mode is None else mode)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    return created
