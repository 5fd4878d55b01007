"""What every command shares: the exit codes, the one error a command raises for bad input, and
the one-line messages for the failures of the machine around it (a file, a database).

Exit codes: 0 success, 1 a script failed, 2 usage or config error (or a file or database that
cannot be used), 130 interrupted. This module imports nothing from the project, so any command
module may import it.
"""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

_DAMAGED = ("file is not a database", "database disk image is malformed", "malformed database schema")


class UsageError(Exception):
    """Bad command-line input; the message is one line for the user.

    ``hermes_tui.cli.main`` prints it as ``hermes-tui: <message>`` on stderr and exits with
    ``EXIT_USAGE``.
    """


def database_problem(path: Path | str, exc: sqlite3.Error) -> str:
    """One line for a sessions database that cannot be used: what is wrong and what to do.
    ``path``: its file, or the store's redacted URL when it has none."""
    detail = str(exc) or type(exc).__name__
    if any(text in detail for text in _DAMAGED):
        rename = f" (e.g. rename it to {path.name}.broken)" if isinstance(path, Path) else ""
        return (f"the sessions database {path} is not a usable SQLite database ({detail}); move it aside"
                f"{rename} and the next run starts a new one; "
                "`sqlite3 FILE .recover` may get its sessions back")
    if "locked" in detail or "busy" in detail:
        return f"the sessions database {path} is locked by another process ({detail}); try again when it is done"
    if "readonly" in detail or "unable to open" in detail:
        return (f"the sessions database {path} cannot be opened for writing ({detail}); check the permissions "
                "of it and its folder, or set HERMES_HOME to a directory you can write")
    return f"the sessions database {path} cannot be used ({detail})"


def os_problem(exc: OSError, home: Path | None = None) -> str:
    """One line for a file the command could not use: the path, the system's reason, and, for a
    path under ``home`` (``HERMES_HOME``) that cannot be written, what to do about it."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    where = exc.filename
    line = f"{where}: {reason}" if where is not None else reason
    if exc.filename2 is not None:
        line = f"{where} -> {exc.filename2}: {reason}"
    if home is not None and where is not None and _under(Path(str(where)), home) and exc.errno in (
            errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.ENOENT, errno.ENOSPC, errno.EDQUOT):
        line += (f" (HERMES_HOME is {home}: it must be a directory you can write; "
                 "fix its permissions or set HERMES_HOME to another one)")
    return line


def _under(path: Path, home: Path) -> bool:
    return path == home or home in path.parents
