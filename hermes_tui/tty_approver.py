"""Asking for approval on the terminal, for headless commands (``hermes-tui exec``).

Prompts on the controlling terminal: standard input when it is a TTY, else ``/dev/tty``
(so ``hermes-tui exec -`` with a piped script can still ask). With no terminal at all there
is no approver, and the gate denies with a clear message.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from typing import TextIO

from hermes_tui.runtime.approvals import ApprovalDecision, ApprovalRequest, Approver

ANSWERS = {"o": "once", "once": "once", "s": "session", "session": "session",
           "a": "always", "always": "always", "d": "deny", "deny": "deny", "": "deny"}


def _open_terminal() -> tuple[TextIO, TextIO] | None:
    if sys.stdin.isatty():
        return sys.stdin, sys.stderr
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return None
    handle = os.fdopen(fd, "r+", buffering=1, encoding="utf-8", errors="replace")
    return handle, handle


def tty_approver() -> Approver | None:
    """An approver that asks on the terminal, or None when there is no terminal."""
    terminal = _open_terminal()
    if terminal is None:
        return None
    reader, writer = terminal
    lock = asyncio.Lock()  # one question at a time

    def ask(request: ApprovalRequest) -> ApprovalDecision:
        if request.kind == "script":
            writer.write(f"\nhermes-tui: approve this whole script ({request.origin} turn)?\n")
            for number, line in enumerate(request.text.splitlines(), start=1):
                writer.write(f"  {number:>4} | {line}\n")
        else:
            writer.write(f"\nhermes-tui: approve this terminal command?\n  {request.text}\n")
        writer.write(f"  in {request.cwd}  (session {request.session})\n")
        for reason in request.reasons:
            writer.write(f"  why it asks: {reason}\n")
        if request.always_rule:
            writer.write(f"  [a]lways stores the exact rule {request.always_rule!r} in {request.always_file}\n")
        options = " ".join(f"[{c[0]}]{c[1:]}" for c in request.choices)
        while True:
            writer.write(f"  {options} > ")
            writer.flush()
            line = reader.readline()
            if not line:
                return ApprovalDecision(choice="deny", reason="no answer (end of input)")
            choice = ANSWERS.get(line.strip().lower())
            if choice in request.choices:
                reason = None
                if choice == "deny":
                    writer.write("  reason (optional, Enter to skip) > ")
                    writer.flush()
                    reason = reader.readline().strip() or None
                return ApprovalDecision(choice=choice, reason=reason)  # type: ignore[arg-type]
            writer.write(f"  please answer one of: {', '.join(request.choices)}\n")

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        async with lock:
            # A blocking read on a daemon thread: one abandoned at the deadline never keeps
            # the process from exiting (a to_thread worker would).
            loop = asyncio.get_running_loop()
            answer: asyncio.Future[ApprovalDecision] = loop.create_future()

            def work() -> None:
                try:
                    result = ask(request)
                except Exception as exc:  # the terminal went away: deny
                    result = ApprovalDecision(choice="deny", reason=f"terminal error: {exc}")
                loop.call_soon_threadsafe(lambda: answer.done() or answer.set_result(result))

            threading.Thread(target=work, name="hermes-tty-approval", daemon=True).start()
            return await answer

    return approver
