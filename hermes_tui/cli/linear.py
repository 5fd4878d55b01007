"""``hermes-tui --linear``: the workspace as plain lines, for screen readers and dumb terminals.

Every event is printed once, in order, as whole lines (the headless printer's: a run's start,
its result and output, a reply as it streams, notices); nothing is redrawn, no cursor moves,
and no colour is written unless ``--color`` asks (then only SGR colour codes). Input is read a
line at a time, with readline's editing and history when the terminal can take it (not with
``TERM=dumb``, nor in Emacs). An approval is a numbered question read from the same input:
``1 once, 2 session, 3 always, 4 deny`` (and ``5 deny all`` of a script's requests). The kernels
pane is ``/kernels``, the output browser ``/outputs`` and ``/show ID``.

Everything that came from a script or a model is printed through :func:`~hermes_tui.base.text.shown`
(control characters made visible): it can never drive the terminal or a screen reader.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from hermes_tui.agent.events import ToolFinished, TurnEnded, TurnQueued
from hermes_tui.base.text import shown
from hermes_tui.base.units import plural
from hermes_tui.cli.headless import Printer

if TYPE_CHECKING:
    from hermes_tui.agent.events import AgentEvent
    from hermes_tui.agent.models.providers import ProviderSettings
    from hermes_tui.agent.workspace import Workspace
    from hermes_tui.config import Config
    from hermes_tui.runtime.approvals import ApprovalDecision, ApprovalRequest

HISTORY_LINES = 1000
"""Input lines kept in ``$HERMES_HOME/tui/linear_history`` (readline's history)."""
NUMBERS = {"once": "1", "session": "2", "always": "3", "deny": "4", "deny all": "5"}
"""The number of each answer, the same in every question (the app's dialog numbers them alike)."""
HELP = """\
Type Python (with no model), a message (with a model), or !command for the shell.
  /kernels        the session kernels: state, idle time left, runs
  /outputs [N]    the newest N saved outputs (default 20)
  /show ID        one saved output, whole (an id or a unique prefix from /outputs)
  /budget [USD]   the cost ceilings, or set the session's
  /interrupt      stop the running turn (Ctrl+C does too)
  /help           this list
  /quit           leave (Ctrl+D does too); the session is stored
An approval is a numbered question: type its number (1 once, 2 session, 3 always, 4 deny, 5 deny all)."""

SGR = {"tool": "\x1b[36m", "result": "\x1b[2m", "error": "\x1b[31m", "notice": "\x1b[33m", "ask": "\x1b[1m"}
RESET = "\x1b[0m"


class LinearPrinter(Printer):
    """The headless printer's plain lines, coloured by kind when asked (``--color``: SGR codes
    only, never a cursor movement)."""

    def __init__(self, out: TextIO, color: bool) -> None:
        super().__init__(False, out)
        self.color = color

    def line(self, text: str) -> None:
        if self.color:
            kind = ("tool" if text.startswith("→") else
                    "error" if text.startswith("← error") or text.startswith("← timeout") else
                    "result" if text.startswith("←") else "notice" if text.startswith("!") else None)
            if kind is not None:
                text = f"{SGR[kind]}{text}{RESET}"
        super().line(text)

    def __call__(self, event: AgentEvent) -> None:
        super().__call__(event)
        # A command's output (`!ls`, a model's terminal call): the headless printer leaves it
        # to the stored transcript; here it is what the person asked to see.
        if isinstance(event, ToolFinished) and event.exec_result is None:
            output = event.result.get("output") if isinstance(event.result, dict) else None
            if isinstance(output, str) and output.strip():
                self.line(shown(output.rstrip("\n"), one_line=False))

    def say(self, text: str, kind: str | None = None) -> None:
        """A line of our own (already safe), coloured as ``kind`` when asked."""
        super().line(f"{SGR[kind]}{text}{RESET}" if self.color and kind in SGR else text)


class LineReader:
    """Lines typed, read by one daemon thread with ``input()`` (readline's editing and history
    when it is on) only when a prompt is wanted: nothing is echoed into the output while a turn
    prints. Each line belongs to the prompt it was typed at: an answer typed at ``answer>``
    after its question was withdrawn (interrupted, timed out) is dropped, never taken as the
    next input. After the end of input every read returns None at once."""

    def __init__(self, loop: asyncio.AbstractEventLoop, prompts: bool = True,
                 on_dropped: Callable[[], None] | None = None) -> None:
        self.loop = loop
        self.prompts = prompts
        """Show the prompts (not when the input is a pipe or a file: nobody is typing)."""
        self.on_dropped = on_dropped
        """Called when a line typed at a withdrawn question is dropped (to say so)."""
        self._wanted = threading.Condition()
        self._prompt: str | None = None
        self._shown: str | None = None
        """The prompt ``input()`` is waiting at, if it is."""
        self._waiter: tuple[asyncio.Future[str | None], str] | None = None
        self._ended = False
        threading.Thread(target=self._run, name="hermes-linear-input", daemon=True).start()

    async def read(self, prompt: str) -> str | None:
        """The next line typed at ``prompt`` (None at the end of input)."""
        while True:
            if self._ended:
                return None
            waiter: asyncio.Future[str | None] = self.loop.create_future()
            with self._wanted:
                self._waiter = (waiter, prompt)
                if self._shown is None:  # else a prompt is up: its line comes first
                    self._prompt = prompt
                    self._wanted.notify()
            try:
                line = await waiter
            finally:
                with self._wanted:
                    if self._waiter is not None and self._waiter[0] is waiter:
                        self._waiter = None
            if line is not _OTHER_PROMPT:
                return line

    def _run(self) -> None:
        while True:
            with self._wanted:
                while self._prompt is None:
                    self._wanted.wait()
                prompt, self._prompt = self._prompt, None
                self._shown = prompt
            try:
                line: str | None = input(prompt if self.prompts else "")
            except EOFError:
                line = None
            except Exception:  # noqa: BLE001 (the terminal went away): the end of input
                line = None
            if line is not None and prompt != PROMPT:
                _forget_last_line()  # an answer or a reason: not input worth recalling with Up
            with self._wanted:
                self._shown = None
                waiter = self._waiter
            self.loop.call_soon_threadsafe(self._deliver, waiter, line, prompt)
            if line is None:
                return

    def _deliver(self, waiter: tuple[asyncio.Future[str | None], str] | None, line: str | None, prompt: str) -> None:
        if line is None:
            self._ended = True
        dropped = self.on_dropped if line and line.strip() and self.on_dropped is not None else None
        if waiter is None or waiter[0].done():
            if dropped is not None:
                dropped()
            return
        future, wanted = waiter
        if line is not None and wanted != prompt:  # typed at a question that was withdrawn
            if dropped is not None:
                dropped()
            future.set_result(_OTHER_PROMPT)  # the reader asks again, at its own prompt
            return
        future.set_result(line)


PROMPT = "> "
ANSWER_PROMPT = "answer> "
REASON_PROMPT = "reason (optional, Enter to skip)> "
_OTHER_PROMPT: Any = object()
"""What a read gets for a line typed at another prompt (it reads again)."""


def _forget_last_line() -> None:
    readline = sys.modules.get("readline")  # only when it was started: importing it would turn it on
    if readline is not None:
        with contextlib.suppress(ValueError):
            count = readline.get_current_history_length()
            if count:
                readline.remove_history_item(count - 1)


def readline_wanted(stdin: TextIO, env: dict[str, str] | os._Environ[str]) -> bool:
    """Whether readline may edit the line: a terminal that understands it (not ``TERM=dumb``,
    nor Emacs's shell, where readline's redrawing would be noise)."""
    return stdin.isatty() and env.get("TERM", "dumb") not in ("dumb", "") and "INSIDE_EMACS" not in env


def start_readline(history: Path) -> None:
    """readline's editing and history (kept in ``history``, 0600); never bracketed-paste
    escapes. Nothing if the module is missing."""
    try:
        import readline
    except ImportError:
        return
    readline.parse_and_bind("set enable-bracketed-paste off")
    readline.set_history_length(HISTORY_LINES)
    with contextlib.suppress(OSError):
        readline.read_history_file(str(history))
    import atexit

    def save() -> None:
        with contextlib.suppress(OSError):
            history.parent.mkdir(parents=True, exist_ok=True)
            readline.write_history_file(str(history))
            os.chmod(history, 0o600)

    atexit.register(save)


@dataclass
class LinearSession:
    """One session driven line by line."""

    workspace: Workspace
    session: str
    printer: LinearPrinter
    reader: LineReader
    turn_done: asyncio.Event = field(default_factory=asyncio.Event)
    questions: asyncio.Lock = field(default_factory=asyncio.Lock)

    def listen(self, event: AgentEvent) -> None:
        if isinstance(event, TurnQueued):
            self.printer.say(f"(queued: {plural(event.position, 'turn')} ahead)")
        self.printer(event)
        if isinstance(event, TurnEnded):
            if event.status not in ("done",):
                self.printer.say(f"[turn {event.status}]", "notice")
            agent = self.workspace.agent
            if agent is None or not agent.busy:
                self.turn_done.set()

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        """An approval, asked as a numbered question on the input."""
        async with self.questions:
            try:
                return await self._question(request)
            except asyncio.CancelledError:  # the run was interrupted, or nobody answered in time
                self.printer.say("(the question was withdrawn: it is denied; press Enter for the prompt)", "notice")
                raise

    async def _question(self, request: ApprovalRequest) -> ApprovalDecision:
        from hermes_tui.cli.tty_approver import ANSWERS, describe_request
        from hermes_tui.runtime.approvals import ApprovalDecision, run_of

        offered = [*request.choices, *(["deny all"] if run_of(request) else [])]
        options = ", ".join(f"{NUMBERS[choice]} {choice}" for choice in offered)
        self.printer.say(describe_request(request, numbered=True).rstrip("\n"), "ask")
        while True:
            self.printer.say(f"answer: {options}", "ask")
            line = await self.reader.read(ANSWER_PROMPT)
            if line is None:
                return ApprovalDecision(choice="deny", reason="no answer (end of input)")
            choice = ANSWERS.get(line.strip().lower())
            if choice == "deny all" and choice in offered:
                return ApprovalDecision(choice="deny", whole_run=True)
            if choice is not None and choice in request.choices:
                reason = None
                if choice == "deny":
                    reason = ((await self.reader.read(REASON_PROMPT)) or "").strip() or None
                return ApprovalDecision(choice=choice, reason=reason)
            self.printer.say(f"please answer with a number: {options}")

    async def command(self, line: str) -> bool:
        """A slash command; False to leave."""
        name, _, argument = line[1:].strip().partition(" ")
        name, argument = name.lower(), argument.strip()
        if name in ("quit", "exit", "q"):
            return False
        if name == "help":
            self.printer.say(HELP)
        elif name == "kernels":
            for row in kernel_table(self.workspace.runtime.kernels(), time.time()):
                self.printer.say(row)
        elif name == "outputs":  # the cache is read in a thread: the loop keeps the lease and the kernels going
            await asyncio.to_thread(self.outputs, argument)
        elif name == "show":
            await asyncio.to_thread(self.show, argument)
        elif name == "budget":
            from hermes_tui.agent.commands import budget_command

            agent = self.workspace.agent
            if agent is not None:
                for text, level in await budget_command(agent, argument):
                    self.printer.say(shown(text, one_line=False), "notice" if level != "info" else None)
        elif name == "interrupt":
            await self.interrupt()
        else:
            self.printer.say(f"unknown command /{shown(name)}: /help lists them", "notice")
        return True

    def outputs(self, argument: str) -> None:
        """``/outputs [N]`` (blocking)."""
        from hermes_tui.base.paths import exec_cache_dir
        from hermes_tui.cli.cache_cmd import output_rows

        count = int(argument) if argument.isdigit() and int(argument) > 0 else 20
        rows = output_rows(exec_cache_dir(self.workspace.home), count)
        for row in rows or ["no saved outputs yet"]:
            self.printer.say(row)

    def show(self, key: str) -> None:
        """``/show ID``, streamed (blocking)."""
        from hermes_tui.base.paths import exec_cache_dir
        from hermes_tui.cli.cache_cmd import output_chunks

        if not key:
            self.printer.say("/show needs an id from /outputs", "notice")
            return
        try:
            for chunk in output_chunks(exec_cache_dir(self.workspace.home), key):
                self.printer.out.write(shown(chunk, one_line=False))
        except LookupError as exc:
            self.printer.say(shown(str(exc)), "notice")
            return
        self.printer.say("")

    async def interrupt(self) -> None:
        agent = self.workspace.agent
        if agent is not None and agent.busy:
            from hermes_tui.runtime.notices import STOP_NOTICE

            await agent.interrupt(STOP_NOTICE)
        else:
            self.printer.say("(nothing is running: /quit or Ctrl+D leaves)")

    async def run(self) -> None:
        opened = await self.workspace.open(self.session, self.listen)
        for text, level in opened.notes + opened.after:
            self.printer.say(f"! {shown(text)}", "notice" if level != "info" else None)
        while True:
            line = await self.reader.read(PROMPT)
            if line is None:
                self.printer.say("")
                return
            text = line.strip()
            if not text:
                continue
            if text.startswith("/"):
                if not await self.command(text):
                    return
                continue
            kind = "shell" if text.startswith("!") else None
            self.turn_done.clear()
            await opened.agent.submit(text[1:].strip() if kind else line, "user", kind)  # type: ignore[arg-type]
            await self.turn_done.wait()


def kernel_table(kernels: list[Any], now: float) -> list[str]:
    """``/kernels`` as plain rows: id, state, session, idle time left, runs, sandbox."""
    if not kernels:
        return ["no kernels yet: the first run starts one"]
    rows = [("id", "state", "session", "idle left", "runs", "sandbox")]
    for info in kernels:
        left = "-" if info.idle_deadline is None else f"{max(0, int(info.idle_deadline.timestamp() - now))}s"
        rows.append((shown(info.id), info.state, shown(info.session), left, str(info.execution_count),
                     shown(info.sandbox)))
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]


def run_linear(config: Config, *, home: Path, session: str, settings: ProviderSettings | None,
               provider_problem: str | None, max_cost: float | None, color: bool) -> None:
    """Drive ``session`` line by line until /quit or the end of input (blocking)."""
    from hermes_tui.base.paths import tui_dir

    if readline_wanted(sys.stdin, os.environ):
        start_readline(tui_dir(home) / "linear_history")
    asyncio.run(_main(config, home=home, session=session, settings=settings, provider_problem=provider_problem,
                      max_cost=max_cost, color=color))


async def _main(config: Config, *, home: Path, session: str, settings: ProviderSettings | None,
                provider_problem: str | None, max_cost: float | None, color: bool) -> None:
    from hermes_tui.agent.workspace import Workspace

    printer = LinearPrinter(sys.stdout, color)
    loop = asyncio.get_running_loop()
    holder: list[LinearSession] = []

    async def ask(request: ApprovalRequest) -> ApprovalDecision:
        return await holder[0].ask(request)

    workspace = Workspace(config, home=home, cwd=os.getcwd(), ask=ask, settings=settings,
                          provider_problem=provider_problem, max_cost=max_cost, program="hermes-tui --linear")
    reader = LineReader(loop, prompts=sys.stdin.isatty(),
                        on_dropped=lambda: printer.say("(that answer came after its question was withdrawn: not used)"))
    linear = LinearSession(workspace, session, printer, reader)
    holder.append(linear)
    model = f"model {settings.model}" if settings is not None else "no model: type Python, or !command"
    printer.say(f"hermes-tui (linear) · session {session} · {shown(model)} · approvals {config.approvals.mode} · "
                "/help lists the commands")
    if provider_problem:
        printer.say(f"! {shown(provider_problem)}", "notice")

    def on_sigint() -> None:  # Ctrl+C stops the running turn; at the prompt it only says how to leave
        loop.create_task(linear.interrupt())

    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    try:
        await linear.run()
    finally:
        workspace.approvals.closing = True
        await workspace.aclose()
