"""hermes-tui reaper: ends what a dead host left running.

Started once per host process, run BY PATH (stdlib only), in its own session so that a
Ctrl+C or a kill of the host's process group does not take it down too. It reads lines from
the host on stdin:

    +g PGID   a process group to kill if the host dies (a shell command, a standalone script)
    -g PGID   that group ended normally: forget it
    +d PATH   a directory to remove if the host dies (the host's staging dir)
    -d PATH   forget it

On EOF (the host is gone, even by SIGKILL) it SIGKILLs every group it still knows and removes
every directory, then exits. It holds no secret: the host starts it with an empty environment.
"""

import os
import shutil
import signal
import stat
import sys


def _undumpable():
    """Nobody else of this user may write to our stdin through /proc/<pid>/fd/0."""
    try:
        import ctypes
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except Exception:
        pass


def _staging_dir(path):
    """Only a host staging dir may be removed: $TMPDIR/hermes-tui-*, a real dir of ours."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return (os.path.basename(path).startswith("hermes-tui-") and stat.S_ISDIR(info.st_mode)
            and info.st_uid == os.geteuid())


def main():
    _undumpable()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    groups = set()  # type: set[int]
    folders = set()  # type: set[str]
    for raw in sys.stdin.buffer:
        line = raw.rstrip(b"\n").decode("utf-8", "surrogateescape")
        op, _, value = line.partition(" ")
        if op in ("+g", "-g") and value.isdigit() and int(value) > 1:
            (groups.add if op == "+g" else groups.discard)(int(value))
        elif op in ("+d", "-d") and value.startswith("/"):
            (folders.add if op == "+d" else folders.discard)(value)
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass
    for folder in folders:
        if _staging_dir(folder):
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
