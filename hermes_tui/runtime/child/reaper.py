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
import sys


def main():
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    groups = set()
    folders = set()
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
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
