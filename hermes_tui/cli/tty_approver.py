"""Asking for approval on the terminal, for headless commands (``hermes-tui exec``).

Prompts on the controlling terminal: standard input when it is a TTY, else ``/dev/tty``
(so ``hermes-tui exec -`` with a piped script can still ask). With no terminal at all there
is no approver, and the gate denies with a clear message.

One daemon thread reads the terminal and hands each line to the question being asked now, so
a question abandoned at its deadline never swallows the answer meant for the next one, and
never keeps the process from exiting.
"""

from __future__ import annotations

import asyncio
import os
import queue
import sys
import threading
from typing import TextIO

from hermes_tui.runtime.approvals import ApprovalDecision, ApprovalRequest, Approver, FileChange, run_of
from hermes_tui.base.text import reveal
from hermes_tui.base.units import human_size

ANSWERS = {"o": "once", "once": "once", "1": "once", "s": "session", "session": "session", "2": "session",
           "a": "always", "always": "always", "3": "always", "d": "deny", "deny": "deny", "4": "deny", "": "deny",
           "x": "deny all", "deny all": "deny all", "5": "deny all"}
"""What may be typed, and the answer it is ("deny all": of this script run, offered for a request of one)."""


class _Terminal:
    def __init__(self, reader: TextIO, writer: TextIO) -> None:
        self.reader, self.writer = reader, writer
        self.current: queue.SimpleQueue[str | None] | None = None
        self._thread: threading.Thread | None = None

    def start_reading(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._read, name="hermes-tty", daemon=True)
            self._thread.start()

    def _read(self) -> None:
        while True:
            try:
                line = self.reader.readline()
            except (OSError, ValueError):
                line = ""
            target = self.current
            if target is not None:
                target.put(line if line else None)
            if not line:
                return

    def write(self, text: str) -> None:
        self.writer.write(text)
        self.writer.flush()


def _open_terminal() -> _Terminal | None:
    if sys.stdin.isatty():
        return _Terminal(sys.stdin, sys.stderr)
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return None
    handle = os.fdopen(fd, "r+", buffering=1, encoding="utf-8", errors="replace")
    return _Terminal(handle, handle)


def _size(change: FileChange) -> str:
    if change.size is None:
        return "new file"
    return human_size(change.size, " ")


def describe_request(request: ApprovalRequest, numbered: bool = False) -> str:
    """The question, every untrusted part through :func:`reveal`: a command, script, path or
    diff holding ESC or other control characters must not drive the terminal it is shown on.
    ``numbered``: the answers named by their numbers (``hermes-tui --linear``), not letters."""
    always, deny_all = ("3 (always)", "5 (deny all)") if numbered else ("[a]lways", "[x]")
    lines = []
    if request.kind == "script":
        lines.append(f"\nhermes-tui: approve this whole script ({request.origin} turn)?")
        lines += [f"  {number:>4} | {reveal(line)}" for number, line in enumerate(request.text.splitlines(), start=1)]
    elif request.kind == "file":
        lines.append(f"\nhermes-tui: allow {reveal(request.file_question())} ({request.origin} turn)?")
        lines += [f"  {reveal(change.path)}  ({_size(change)})" for change in request.files]
        lines += [f"  | {reveal(line)}" for line in (request.diff or "(no diff)").splitlines()]
    else:
        command = reveal(request.text).replace("\n", "\n  ")
        question = "run this command outside the sandbox" if request.kind == "sandbox" else \
            "approve this terminal command"
        lines.append(f"\nhermes-tui: {question}?\n  {command}")
    on = f" on {reveal(request.where)}" if request.where else ""
    lines.append(f"  in {reveal(request.cwd)}{on}  (session {reveal(request.session)})")
    lines += [f"  why it asks: {reveal(reason)}" for reason in request.reasons]
    if request.always_rule:
        lines.append(f"  {always} stores the exact rule {reveal(repr(request.always_rule))} in "
                     f"{reveal(str(request.always_file))}")
    if run_of(request):
        lines.append(f"  {deny_all} denies this and every other request of script {reveal(str(request.exec_id))}; its later "
                     "ones are refused without asking")
    return "\n".join(lines) + "\n"


def _ask(terminal: _Terminal, lines: queue.SimpleQueue[str | None], request: ApprovalRequest) -> ApprovalDecision:
    terminal.write(describe_request(request))
    offered: list[str] = [*request.choices, *(["deny all"] if run_of(request) else [])]
    options = " ".join(f"[{c[0]}]{c[1:]}" for c in request.choices)
    if run_of(request):
        options += " [x] deny all of this script"
    while True:
        terminal.write(f"  {options} > ")
        line = lines.get()
        if line is None:
            return ApprovalDecision(choice="deny", reason="no answer (end of input)")
        choice = ANSWERS.get(line.strip().lower())
        if choice == "deny all" and choice in offered:
            return ApprovalDecision(choice="deny", whole_run=True)
        if choice in request.choices:
            reason = None
            if choice == "deny":
                terminal.write("  reason (optional, Enter to skip) > ")
                reason = (lines.get() or "").strip() or None
            return ApprovalDecision(choice=choice, reason=reason)
        terminal.write(f"  please answer one of: {', '.join(offered)}\n")


def tty_approver() -> Approver | None:
    """An approver that asks on the terminal, or None when there is no terminal."""
    terminal = _open_terminal()
    if terminal is None:
        return None
    lock = asyncio.Lock()  # one question at a time

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        async with lock:
            loop = asyncio.get_running_loop()
            answer: asyncio.Future[ApprovalDecision] = loop.create_future()
            lines: queue.SimpleQueue[str | None] = queue.SimpleQueue()
            terminal.current = lines
            terminal.start_reading()

            def work() -> None:
                try:
                    result = _ask(terminal, lines, request)
                except Exception as exc:  # the terminal went away: deny
                    result = ApprovalDecision(choice="deny", reason=f"terminal error: {exc}")
                loop.call_soon_threadsafe(lambda: answer.done() or answer.set_result(result))  # type: ignore[func-returns-value]  # `or` as `if`

            threading.Thread(target=work, name="hermes-tty-question", daemon=True).start()
            try:
                return await answer
            except asyncio.CancelledError:
                terminal.write("\n  (no answer in time: denied)\n")
                raise
            finally:
                if terminal.current is lines:
                    terminal.current = None
                lines.put(None)  # release the question's thread

    return approver
