"""The process's own start and end: when the garbage collector runs, and how a command ends.

``hermes-tui`` starts with collection off (:func:`hermes_tui.cli.main`): the imports and the
start make a few hundred thousand objects that all stay alive, and the full collections they
set off cost about 20 ms for nothing. :func:`settle_heap` turns it on once the start is over.
:func:`end_process` ends a command whose work is written and closed, without Python's
teardown of every module and object (issue 38).
"""

from __future__ import annotations

import contextlib
import gc
import sys
from typing import NoReturn


def settle_heap() -> None:
    """After start-up: keep what is alive now out of later collections (instant; the little
    start-up garbage it keeps is not worth a full collection now), and collect again from now
    on."""
    gc.freeze()
    gc.enable()


def end_process(code: int) -> NoReturn:
    """End a process whose command is done, without Python's own finalization.

    Everything the command keeps must be written and closed by then (the app's unmount closed
    the workspace; exec's runtime ended its kernels and wrote its records), and the exit
    handlers run here as at a normal exit. What is skipped is the teardown of every object and
    module (0.3 s or more for the full-screen app, 50–100 ms for ``exec``), the join of
    Textual's key thread (tui/quit_driver.py) and of a daemon thread still importing the tools'
    modules (runtime/tools/dispatch.py)."""
    import atexit
    import os

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
