"""The Textual app: wiring only. The workspace below it runs the engine and the conversation;
the main screen draws; the app connects the two and opens the other screens.

Runtime events arrive on one subscription read by an async worker on the app's loop; agent
events are posted to the main screen in order; the approval dialog is how this front end asks
a person (the workspace records every request and answer). Anything that touches a file or
/proc runs in a worker thread or through the runtime, so no frame waits on a kernel, a file
or the network.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import on, work
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from hermes_tui import __version__
from hermes_tui.tui import attention
from hermes_tui.tui.attention import LONG_TURN_SECONDS
from hermes_tui.agent.events import AgentEvent, ToolFinished, TurnEnded, TurnKind, TurnStarted
from hermes_tui.tui.commands import PALETTE, PYTHON_PREFIX, command_argument, parse_command, python_of
from hermes_tui.config import Config
from hermes_tui.config.notes import backend_refusal
from hermes_tui.tui.editor import editor_argv, editor_command
from hermes_tui.tui.heap import HeapKeeper
from hermes_tui.base.paths import exec_cache_dir, hermes_home
from hermes_tui.runtime.events import KernelDied, KernelStarted, KernelStateChanged
from hermes_tui.runtime.hardening import spawn
from hermes_tui.runtime.notices import STOP_NOTICE, SWITCH_NOTICE
from hermes_tui.storage.choice import new_session_id
from hermes_tui.tui.settings import remember_theme, remembered_theme
from hermes_tui.tui.themes import DEFAULT_THEME, THEMES
from hermes_tui.base.units import plural
from hermes_tui.tui.widgets.conversation.blocks import PendingBlock, RunBlock
from hermes_tui.tui.widgets.conversation.prompt import PromptInput
from hermes_tui.tui.widgets.delegate import OpenChild
from hermes_tui.tui.widgets.kernels import KernelsPane
from hermes_tui.tui.screens.main import MainScreen
from hermes_tui.tui.widgets.messages import OpenEntry, OpenInEditor
from hermes_tui.tui.widgets.safe import visible

if TYPE_CHECKING:
    from hermes_tui.storage import sessions as db
    from hermes_tui.agent.loop import Agent
    from hermes_tui.agent.models.resolve import ProviderSettings
    from hermes_tui.agent.workspace import Workspace
    from hermes_tui.runtime import Runtime
    from hermes_tui.runtime.approvals import ApprovalDecision, ApprovalRequest
    from hermes_tui.tui.screens.child_transcript import ChildTranscriptScreen

# Screens not on the first frame (dialogs, help, the output browser) are imported when first
# opened: the first screen comes up sooner. Notices that quote data (ids, paths, errors) are
# sent with markup=False: an error message holding "[/]" must not crash the app.


APP_SWITCH_INTERVAL = 0.0005
"""Seconds a thread may hold the GIL while another waits for it, in the app's process."""
SHOWN_WAIT = 0.1
"""Seconds a tool call waits at most for its block to be drawn before it runs."""


class HermesApp(App[None]):
    """hermes-tui: conversation, live output, kernels, and the approval dialog."""

    TITLE = "hermes-tui"
    CSS_PATH = "app.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f1", "help", "Help", id="help"),
        Binding("f2", "focus_pane('conversation')", "Input", id="focus-conversation"),
        Binding("f3", "focus_pane('output')", "Output", id="focus-output"),
        Binding("f4", "focus_pane('kernels')", "Kernels", id="focus-kernels"),
        # Not Ctrl+R: that is the input's reverse history search (shell muscle memory).
        Binding("f5", "reset_session", "Reset kernel", id="reset-session"),
        Binding("f8", "toggle_maximize", "Maximise", id="maximize"),
        Binding("f9", "open_cache", "Outputs", id="open-cache"),
        Binding("ctrl+o", "sessions", "Sessions", id="sessions"),
        Binding("escape", "stop", "Stop the turn", show=False, id="stop"),
        # Ctrl+C interrupts, as in a terminal; it never offers to quit (Textual's default does).
        Binding("ctrl+c", "stop", "Interrupt", show=False, id="interrupt"),
        Binding("ctrl+t", "cycle_theme", "Theme", id="theme"),
        Binding("ctrl+q", "quit", "Quit", id="quit"),
    ]

    def __init__(
        self, config: Config | None = None, *, session: str | None = None, cwd: str | None = None,
        home: Path | None = None, host_env: dict[str, str] | None = None, provider: ProviderSettings | None = None,
        model_flags: dict[str, str | None] | None = None, provider_problem: str | None = None,
        max_cost: float | None = None,
    ) -> None:
        """Args:
            session: the session to open (stored ones are continued); a new id if None.
            provider: the model (default: resolved from the config and ``model_flags``).
            provider_problem: why the configured model cannot be used, when the caller resolved
                it already (the app then runs without a model and says why).
            max_cost: the session's cost ceiling in US dollars (``--max-cost``; wins over the config
                and over a ceiling ``/budget`` stored with the session).
        """
        super().__init__()
        self.config = config or Config()
        self.session = session or new_session_id()
        self.cwd = cwd or os.getcwd()
        self.home = home or hermes_home()
        self.settings = provider
        self.host_env = host_env
        if provider is None and provider_problem is None:
            from hermes_tui.agent.models.keys import ProviderError
            from hermes_tui.agent.models.resolve import resolve_provider

            try:
                self.settings = resolve_provider(self.config, self.home, host_env, **(model_flags or {}))
            except ProviderError as exc:
                provider_problem = str(exc)
        self.provider_problem = provider_problem
        self.max_cost = max_cost
        self._workspace: Workspace | None = None
        self._session_ready = asyncio.Event()
        self._config_noticed = False
        self._switch_interval = sys.getswitchinterval()
        """Python's, given back when the app ends (the app sets its own while it runs)."""
        self._turn_started: dict[str, float] = {}
        self.heap = HeapKeeper()
        """When the garbage collector walks the whole heap: not while a run's output is shown."""
        self._memory: dict[str, int] = {}
        """Each kernel's resident memory as last read (every second, :meth:`refresh_kernels`)."""
        self._sandbox: str | None = "off" if self.config.code_execution.sandbox == "off" else None
        """The top bar's sandbox label: the runtime's once it probed it (:meth:`start_runtime`);
        before, ``off`` if the config says so, else None (nothing shown)."""
        self._asking: dict[str, tuple[ApprovalRequest, asyncio.Future[ApprovalDecision]]] = {}
        """Requests the dialogs wait on, by id (``hermes-tui approve`` can answer them)."""
        self.main = MainScreen(self.settings, provider_problem)
        for theme in THEMES:
            self.register_theme(theme)
        # The theme is known before the stylesheet is first read: set later (on mount, as it
        # was), it made Textual read and apply all the CSS a second time before the first frame
        # (issue 20). The settings file is read capped and never waited on (a FIFO is refused).
        self.theme = remembered_theme(self.home, {t.name for t in THEMES}, DEFAULT_THEME)

    @property
    def workspace(self) -> Workspace:
        """The runtime, the store and the open session. Built on first use — after the first
        frame, in a normal start: the engine's imports (the loop, the tools, the danger checker)
        must not delay the first screen."""
        if self._workspace is None:
            from hermes_tui.agent.workspace import Workspace

            self._workspace = Workspace(self.config, home=self.home, cwd=self.cwd, ask=self.ask_person,
                                        settings=self.settings, provider_problem=self.provider_problem,
                                        host_env=self.host_env, max_cost=self.max_cost, program="hermes-tui app",
                                        on_store=self._store_news, on_lost=self._session_lost)
        return self._workspace

    @property
    def runtime(self) -> Runtime:
        """The workspace's runtime (kernels, approvals, events)."""
        return self.workspace.runtime

    @property
    def agent(self) -> Agent | None:
        """The open session's agent (None while it opens)."""
        return self.workspace.agent

    def get_default_screen(self) -> Screen[None]:
        return self.main

    async def on_mount(self) -> None:
        # The threads that read a script's output wait for the GIL while the event loop draws:
        # handed over within 0.5 ms instead of Python's 5, a flood of output drawn while keys are
        # pressed keeps its pace (issue 20: about 0.24 -> 0.19 s for 200 MB, docs/speed.md).
        sys.setswitchinterval(APP_SWITCH_INTERVAL)
        self._update_topbar()
        self.set_interval(1.0, self._every_second)
        # The rest after the first frame: readying the runtime imports every tool's modules in
        # a thread (httpx, bs4, tree-sitter...) and opening the session opens sessions.db; done
        # now they would hold the GIL while the first frame is drawn. Keys still work meanwhile
        # (an input sent before the session is open waits for it).
        self.call_after_refresh(self._after_first_frame)

    def _after_first_frame(self) -> None:
        self.follow_events()
        self.start_runtime()
        self.open_session(self.session)
        from hermes_tui.tui.widgets.footer import settle_heap  # full GCs stalled keys (tui/widgets/footer.py)

        self.call_after_refresh(settle_heap)

    async def on_unmount(self) -> None:
        self.heap.release()
        await self.workspace.aclose()
        sys.setswitchinterval(self._switch_interval)

    def _update_topbar(self) -> None:
        label = self.settings.label if self.settings else None
        if self.settings is not None and self.settings.why.startswith("auto"):
            label = f"{label} (auto)"
        self.main.set_topbar(version=__version__, session=self.session, cwd=self.cwd, model=label,
                             approvals=self.config.approvals.mode,
                             # before the runtime exists (the first frame), the config says it
                             yolo=self._workspace.runtime.yolo if self._workspace is not None
                             else self.config.approvals.mode == "off",
                             sandbox=self._sandbox,
                             # a broken config.yaml (or another backend): the modes are not in force
                             halted=backend_refusal(self.config.terminal) is not None)

    # -- the session ----------------------------------------------------------------------

    @work(group="session", exclusive=True, exit_on_error=False)
    async def open_session(self, session_id: str) -> None:
        """Open (or create) a stored session: draw what it holds, listen for injected
        messages, and ask again what was pending."""
        from hermes_tui.agent.workspace import SessionBusy

        self._session_ready.clear()
        self.session = self.main.session = session_id
        self._update_topbar()
        def listener(event: AgentEvent) -> None:
            self._watch_turn(event)
            self.main.post_message(MainScreen.AgentUpdate(event, session_id))

        try:
            opened = await self.workspace.open(session_id, listener)
        except SessionBusy as exc:  # another machine (or process) drives it: say so, open a new one
            self.main.conversation.add_note(f"{exc}. A new session was opened instead.", "warning")
            self.open_session(new_session_id())
            return
        opened.agent.on_tool_shown = self.call_shown
        self.main.set_usage(opened.agent.totals if opened.agent.settings is not None else None)
        prompt = self.main.query_one(PromptInput)
        if not prompt.input_history.loaded and self.workspace.store is not None:  # earlier sessions' inputs: Up, Ctrl+R
            from hermes_tui.storage import sessions as db
            prompt.input_history.load(await self.workspace.store.call(db.load_inputs))
        conversation = self.main.conversation
        if not self._config_noticed:  # config.yaml's start-up notices, once (hermes_tui.config.notes)
            self._config_noticed = True
            for notice in self.config.notices:
                conversation.add_note(notice, "warning")
        for text, level in opened.notes:
            conversation.add_note(text, level)
        if opened.loaded is not None:
            from hermes_tui.tui.widgets.transcript import draw_session

            draw_session(conversation, opened.loaded)
        for text, level in opened.after:
            conversation.add_note(text, level)
        problem = await self.workspace.listen_for_injected(opened.agent, self.answer_from_shell)
        if problem:
            conversation.add_note(problem, "warning")
        self._session_ready.set()
        if opened.loaded is not None and opened.loaded.pending:
            await opened.agent.resume_pending()

    async def call_shown(self) -> None:
        """Return once the tool call that just started is on screen (its block drawn), or
        after SHOWN_WAIT seconds: the frame that shows a run is drawn before the run, not
        while its output wants the CPU (issue 20)."""
        drawn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.main.post_message(MainScreen.AfterFrame(drawn))  # after the call's AgentUpdate: in order
        try:
            await asyncio.wait_for(drawn, SHOWN_WAIT)
        except asyncio.TimeoutError:
            pass

    def _store_news(self, level: str, message: str) -> None:
        """A shared store's server stopped answering or is back, or the session was taken over:
        said in the conversation and as a toast (the session goes on in memory meanwhile)."""
        if not self.is_running:  # said after the app closed (a write given up on the way out)
            return
        self.main.conversation.add_note(message, level)
        self.notify(visible(message), severity="warning" if level != "info" else "information", markup=False)

    def _session_lost(self, session_id: str) -> None:
        """Another process took the open session over: stop driving it (a new session opens;
        ``/resume`` gets it back once the other is done)."""
        if session_id == self.session:
            self.main.conversation.add_note(f"Opening a new session: /resume {session_id} once the other process is "
                                            "done with it.", "warning")
            self.switch_session(None)

    @work(group="session-switch", exclusive=True, exit_on_error=False)
    async def switch_session(self, session_id: str | None) -> None:
        """Leave this session (its kernels idle on) and open another, or a new one. One that
        another process drives is not opened, and this one is not left."""
        if session_id is not None and self.workspace.store is not None:
            from hermes_tui.agent.workspace import busy_message
            from hermes_tui.storage import leases

            holder = leases.live_holder(await self.workspace.store.call(leases.lease_of, session_id),
                                        self.config.store.lease_timeout)
            if holder is not None and holder.owner != self.workspace.lease_owner:
                self.main.conversation.add_note(busy_message(session_id, holder), "warning")
                return
        await self.runtime.interrupt(self.session, SWITCH_NOTICE)
        await self.workspace.close_session()
        self.main.conversation.action_clear()
        self.open_session(session_id or new_session_id())

    def _last_key(self) -> float:
        """``time.monotonic()`` of the last key typed in the input."""
        prompt = self.main.query(PromptInput)
        return prompt.first().last_key_at if prompt else float("-inf")

    def _every_second(self) -> None:
        """The kernels' rows and memory; a full collection of the heap if the app is idle
        (hermes_tui/tui/heap.py)."""
        self.refresh_kernels()
        agent = self.workspace.agent if self._workspace is not None else None
        self.heap.idle(self._last_key(), busy=bool(agent and agent.busy))

    @work(group="runtime", exit_on_error=False)
    async def start_runtime(self) -> None:
        """Ready the runtime (temp dir, cache dir, approval rules, the sandbox's probe); kernels
        start on first use. The top bar then shows the sandbox in force; when none can be
        applied, the conversation says why (no script runs: fail closed)."""
        from hermes_tui.runtime.import_guard import listen

        listen(self._import_refused)
        await self.runtime.start()
        sandbox = self.runtime.sandbox
        self._sandbox = sandbox.label
        self._update_topbar()
        if sandbox.error:
            self.main.conversation.add_note(sandbox.error, "error")

    def _import_refused(self, line: str) -> None:
        """A module the host refused to import (runtime/import_guard.py), said in the conversation.
        Called from whichever thread imported, often while a widget is being built: posted."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self.main.conversation.add_note, line, "warning")

    @work(exclusive=True, group="events", exit_on_error=False)
    async def follow_events(self) -> None:
        """Hand runtime events to the main screen; kernel changes refresh the kernels pane."""
        subscription = self.runtime.subscribe()
        try:
            async for event in subscription:
                if isinstance(event, (KernelStarted, KernelStateChanged, KernelDied)):
                    self.show_kernel_states()
                else:
                    self.main.show_runtime_event(event)
        finally:
            subscription.close()

    def show_kernel_states(self) -> None:
        """A kernel started, changed state or died: its row now, with the memory last read. A
        run starts and ends with a state change, and reading /proc in a thread then (a worker,
        a thread hop) was work on the event loop while the run's output wanted it (issue 20);
        the memory is read again within the second."""
        self.main.show_kernels(self.runtime.kernels(), self._memory)

    @work(exclusive=True, group="kernels", exit_on_error=False)
    async def refresh_kernels(self) -> None:
        """Kernel rows and their memory (read off /proc by the runtime, in a thread)."""
        self._memory = await self.runtime.kernel_memory()
        self.main.show_kernels(self.runtime.kernels(), self._memory)

    async def ask_person(self, request: ApprovalRequest) -> ApprovalDecision:
        """How this front end asks: the main screen's dialog (one at a time; the others wait).
        Called from the runtime's tasks, so it only posts messages."""
        answer: asyncio.Future[ApprovalDecision] = asyncio.get_running_loop().create_future()
        self._asking[request.id] = (request, answer)
        self.main.post_message(MainScreen.ApprovalNeeded(request, answer))
        self.call_attention("An approval is waiting")
        try:
            return await answer
        except asyncio.CancelledError:
            self.main.post_message(MainScreen.ApprovalWithdrawn(request.id))
            raise
        finally:
            self._asking.pop(request.id, None)

    async def answer_from_shell(self, message: dict[str, object]) -> dict[str, object]:
        """``hermes-tui approve`` / ``deny`` for this session (through the inject socket): list the
        requests the dialogs wait on, or answer one as the user would in its dialog."""
        if "pending" in message:
            return {"ok": True, "requests": [request.model_dump(mode="json") for request, _ in self._asking.values()]}
        answer = message.get("answer")
        if not isinstance(answer, dict):
            return {"ok": False, "error": "answer must be an object with id and choice"}
        found = self._asking.get(str(answer.get("id")))
        if found is None:
            return {"ok": False, "error": f"no request {answer.get('id')} is waiting in the app"}
        request, future = found
        choice = answer.get("choice")
        if choice not in request.choices:
            return {"ok": False, "error": f"{choice!r} is not offered for this request (offered: {', '.join(request.choices)})"}
        reason = answer.get("reason")
        who = str(answer.get("who") or "a shell")
        if not future.done():
            from hermes_tui.runtime.approvals import ApprovalDecision

            future.set_result(ApprovalDecision(choice=choice, reason=reason if isinstance(reason, str) else None,
                                               by=who))
        await self.runtime.gate.audit.write(event="answer_from_shell", id=request.id, session=request.session,
                                            decision=choice, why=reason if isinstance(reason, str) else None, who=who,
                                            text=request.text)
        said = f"Answered from {who[:200]}: {choice}" + (f" ({reason[:200]})" if isinstance(reason, str) and reason
                                                          else "") + f" — {request.text[:120]}"
        self.main.conversation.add_note(said, "info")  # stays in the conversation; the toast fades
        self.main.post_message(MainScreen.ApprovalWithdrawn(request.id, f"Answered from {who[:200]}: {choice}."))
        return {"ok": True, "answered": request.id, "choice": choice}

    # -- attention ------------------------------------------------------------------------

    def _watch_turn(self, event: AgentEvent) -> None:
        """A long turn that ends while the terminal is not focused calls the user back."""
        if isinstance(event, TurnStarted):
            self._turn_started[event.turn_id] = time.monotonic()
        elif isinstance(event, TurnEnded):
            started = self._turn_started.pop(event.turn_id, None)
            if started is not None and time.monotonic() - started > LONG_TURN_SECONDS:
                self.call_attention(f"The turn ended ({event.status})")

    def call_attention(self, what: str) -> None:
        """Bell and desktop notification (:mod:`hermes_tui.tui.attention`), only when the terminal
        is not focused and ``ui.notify`` is on."""
        if self.app_focus or not self.config.ui.notify:
            return
        self.write_to_terminal(attention.sequence("hermes-tui", f"{what} in session {self.session}",
                                                  attention.dialect()))

    def write_to_terminal(self, text: str) -> None:
        """Raw text to the terminal (escape sequences the app composed itself; never data)."""
        if not self.is_headless and self._driver is not None:
            self._driver.write(text)

    # -- the input ------------------------------------------------------------------------

    @on(PendingBlock.Removed)
    async def _remove_pending(self, event: PendingBlock.Removed) -> None:
        """Esc on a queued input: it never runs."""
        if self.agent is not None and self.agent.remove_queued(event.block.turn_id):
            await self.main.conversation.drop_pending(event.block.turn_id)
            self.main.conversation.add_note("Removed from the queue: it will not run.")
            self.main.focus_pane("conversation")

    @on(PromptInput.Submitted)
    async def _submitted(self, event: PromptInput.Submitted) -> None:
        text = event.text
        self.remember_input(text)
        if text.lstrip().startswith(("/", "!")):  # a stray blank line before a command is not Python
            text = text.lstrip()
        elif text[:1] in (" ", "\t") and self.agent is not None and self.agent.provider is None:
            # A leading space keeps an input out of the history (as in shells); as Python it
            # would be an IndentationError: the block is run dedented.
            text = textwrap.dedent(text).lstrip("\n")
        if text.startswith("/"):
            # Its answer is a note at the end: scrolled up (PageUp), the view follows the end again,
            # as it does for a message sent (/find then scrolls to what it found).
            self.main.conversation.scroll_transcript("end")
            command = parse_command(text[1:])
            if isinstance(command, str):
                self.main.conversation.add_note(command)
            elif command.takes_argument:
                outcome = getattr(self, f"action_{command.action}")(command_argument(text[1:]))
                if inspect.isawaitable(outcome):  # a worker action returns its Worker: not awaited
                    await outcome
            else:
                await self.run_action(command.action)
        elif text.startswith("!"):
            if text[1:].strip():
                self.send(text[1:].strip(), kind="shell")
            else:
                self.main.conversation.add_note("Type a command after ! (for example: !git status).")
        elif text.lstrip().startswith(PYTHON_PREFIX):  # Python beside the chat: a run in the kernel
            code = python_of(text.lstrip())
            if code.strip():
                self.send(code, kind="python")
            else:
                self.main.conversation.add_note("Type Python after >>> (for example: >>> df.head()).")
        else:
            self.send(text)

    @work(group="send", exit_on_error=False)
    async def send(self, text: str, kind: TurnKind | None = None) -> None:
        """Hand a turn to the agent once the session is open: a message, Python, or a ``!cmd``."""
        await self._session_ready.wait()
        assert self.agent is not None
        await self.agent.submit(text, "user", kind)

    @work(group="history", exit_on_error=False)
    async def remember_input(self, text: str) -> None:
        """Store a submitted input in sessions.db: Up and Ctrl+R find it, in later sessions too."""
        await self._session_ready.wait()
        if self.workspace.store is not None:
            from hermes_tui.storage import sessions as db
            await self.workspace.store.call(db.add_input, self.session, text)

    @on(PromptInput.NamesWanted)
    def _names_wanted(self, event: PromptInput.NamesWanted) -> None:
        self.kernel_names(event)

    @work(group="names", exclusive=True, exit_on_error=False)
    async def kernel_names(self, event: PromptInput.NamesWanted) -> None:
        """Tab on a Python name: the idle session kernel's names (asked without disturbing it;
        None when it is busy or there is none: builtins and keywords only)."""
        event.reply(await self.runtime.kernel_names(self.session))

    @on(PromptInput.CompletionsWanted)
    def _completions_wanted(self, event: PromptInput.CompletionsWanted) -> None:
        self.kernel_completions(event)

    @work(group="names", exclusive=True, exit_on_error=False)
    async def kernel_completions(self, event: PromptInput.CompletionsWanted) -> None:
        """Tab after ``a.b.``, in ``d["`` or in a string: the idle session kernel's attributes,
        keys or paths (asked without disturbing it, running none of the script's code)."""
        event.reply(await self.runtime.kernel_completions(self.session, event.text))

    async def action_retry(self) -> None:
        if self.agent is None or not await self.agent.retry():
            self.main.conversation.add_note(
                "Nothing to retry or continue: /retry (or /continue) sends the conversation again after a failed "
                "request, or after the app stopped in the middle of a turn.")

    @on(PromptInput.StopRequested)
    async def action_stop(self) -> None:
        """Stop the running turn (a running script is interrupted, a reply is cut)."""
        if self.agent is not None and await self.agent.interrupt(STOP_NOTICE):
            self.notify("Stopped the running turn.")

    def action_new_session(self) -> None:
        self.switch_session(None)

    def action_find(self, argument: str = "") -> None:
        """``/find TEXT``: scroll to the newest block holding TEXT (again: the next older);
        ``/find`` alone: the last search again."""
        conversation = self.main.conversation
        query = argument.strip() or conversation.find_query
        if not query:
            conversation.add_note("Type what to find after /find (for example: /find traceback). Ctrl+F does it too.")
            return
        conversation.find(query)

    def action_copy(self, argument: str = "") -> None:
        """``/copy``: the last reply to the clipboard; ``/copy code``, ``/copy output``."""
        self.main.conversation.copy(argument)

    @work(group="reset", exit_on_error=False)
    async def action_reset_session(self) -> None:
        """End this session's kernels (asked first when they hold variables)."""
        mine = [k.id for k in self.runtime.kernels() if self.runtime.session_of(k.id) == self.session]
        if not await self._confirm_loss("reset", mine):
            return
        await self.runtime.dispose_session(self.session)
        self.main.conversation.add_note("Kernel reset: the next input starts a fresh one.")
        self.refresh_kernels()

    MAIN_SCREEN_ACTIONS = frozenset({"focus_pane", "toggle_maximize"})
    """Keys of the main screen's panes: on another screen (the output browser, a transcript)
    they would act on panes out of sight, and their footer has no room for them at 80 columns."""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return action not in self.MAIN_SCREEN_ACTIONS or self.screen is self.main

    def action_focus_pane(self, pane: str) -> None:
        self.main.focus_pane(pane)

    def action_toggle_maximize(self) -> None:
        self.main.toggle_maximize()

    # -- kernels --------------------------------------------------------------------------

    @on(KernelsPane.Action)
    async def _kernel_action(self, event: KernelsPane.Action) -> None:
        kernel_id = event.kernel_id
        if event.action in ("reset", "kill"):
            self.end_kernel(kernel_id, event.action)
        elif event.action == "interrupt":
            session = self.runtime.session_of(kernel_id)
            count = await self.runtime.interrupt(session, STOP_NOTICE) if session else 0
            self.notify(f"Interrupted {plural(count, 'running script')}." if count else "Nothing is running there.")
        elif event.action == "variables":
            self.show_variables(kernel_id)
        self.refresh_kernels()

    @work(group="end-kernel", exit_on_error=False)
    async def end_kernel(self, kernel_id: str, action: str) -> None:
        """Reset or kill one kernel (``k`` is the hard kill), asked first when it holds variables."""
        if not await self._confirm_loss(action, [kernel_id]):
            return
        reason = "was reset by the user" if action == "reset" else "was killed by the user"
        if await self.runtime.kill_kernel(kernel_id, reason):
            self.notify(f"Kernel {visible(kernel_id)} {'reset' if action == 'reset' else 'killed'}.", markup=False)
        self.refresh_kernels()

    async def _confirm_loss(self, action: str, kernel_ids: list[str]) -> bool:
        """True when ending these kernels loses no user variables, or the user said yes."""
        from hermes_tui.tui.screens.dialogs import ConfirmScreen, loss_question

        if not kernel_ids:
            return True
        if isinstance(self.screen, ConfirmScreen):  # F5 again while the question is open
            return False
        names = await self._names_in(kernel_ids)
        if names == 0:
            return True
        if await self.push_screen_wait(ConfirmScreen(loss_question(action, kernel_ids, names), yes=action.capitalize())):
            return True
        self.notify("Cancelled: the kernel keeps its variables.")
        return False

    async def _names_in(self, kernel_ids: list[str]) -> int | None:
        """How many names these kernels hold, asked of each idle one as the variables view asks
        (None: one is running a script, or did not answer, so it cannot be counted)."""
        states = {k.id: k.state for k in self.runtime.kernels()}
        total = 0
        for kernel_id in kernel_ids:
            state = states.get(kernel_id, "dead")
            if state in ("starting", "dead", "error"):
                continue  # no script has run in it, or it is gone: nothing to lose
            if state != "idle":
                return None
            try:
                total += await self.runtime.count_names(kernel_id)  # names only: no user code runs
            except LookupError:
                continue  # it ended meanwhile
            except Exception:  # busy by now, or no answer in time: ask without a count
                return None
        return total

    @work(exclusive=True, group="variables", exit_on_error=False)
    async def show_variables(self, kernel_id: str) -> None:
        try:
            variables = await self.runtime.inspect_kernel(kernel_id)
        except TimeoutError as exc:  # the walk calls each variable's __repr__ and __len__
            self.notify(visible(f"{exc}: one of its variables is slow to show (its __repr__ or __len__); the "
                                "walk was cut short, try again"), severity="warning", markup=False)
            return
        except Exception as exc:  # gone, busy, or it did not answer: say so
            self.notify(visible(str(exc)), severity="warning", markup=False)
            return
        from hermes_tui.tui.screens.dialogs import VariablesScreen

        await self.push_screen(VariablesScreen(kernel_id, variables))

    # -- sub-agents -----------------------------------------------------------------------

    @on(OpenChild)
    def _open_child(self, event: OpenChild) -> None:
        """Enter on a sub-agent's row: its transcript."""
        event.stop()
        self.open_child(event.session, event.name, event.goal)

    @work(group="child-transcript", exit_on_error=False)
    async def open_child(self, session: str | None, name: str, goal: str) -> None:
        """Open a sub-agent's transcript: the screen first (the child's live events wait in it),
        then its stored session, read on the store's thread."""
        from hermes_tui.agent.restore import LoadedSession
        from hermes_tui.tui.screens.child_transcript import ChildTranscriptScreen

        store = self.workspace.store
        if store is None:
            self.notify("No sessions database: the sub-agent's transcript is not stored.", severity="warning")
            return
        if session is None:  # a block drawn from the store: find the child by its name
            session = await store.call(self._child_session_named, self.session, name)
            if session is None:
                self.notify(visible(f"No stored transcript for the sub-agent {name}."), severity="warning",
                            markup=False)
                return
        if self._child_screen(session) is not None:
            return  # it is open already
        screen = ChildTranscriptScreen(session, name, goal)
        await self.push_screen(screen)
        from hermes_tui.storage import sessions as db
        stored = await store.call(db.load_session, session)
        await screen.draw_stored(LoadedSession(stored) if stored is not None else None)

    def _child_screen(self, session: str) -> ChildTranscriptScreen | None:
        """The open transcript of sub-agent ``session``, if any."""
        for screen in self.screen_stack:
            if getattr(screen, "child_session", None) == session:
                return screen  # type: ignore[return-value]
        return None

    @staticmethod
    def _child_session_named(conn: db.Database, parent: str, name: str) -> str | None:
        """The newest stored sub-agent session of ``parent`` named ``name`` (``PARENT::child::CALL-NAME``,
        CALL the call id's last 6 characters): on the store's thread."""
        from hermes_tui.runtime.models import SUBAGENT_SEPARATOR

        prefix = parent + SUBAGENT_SEPARATOR
        rows = conn.execute("SELECT id FROM sessions WHERE substr(id, 1, ?) = ? ORDER BY updated_at DESC",
                            (len(prefix), prefix)).fetchall()
        for (session,) in rows:
            rest = session[len(prefix):]
            if SUBAGENT_SEPARATOR not in rest and rest.endswith("-" + name) and len(rest) - len(name) - 1 <= 10:
                return str(session)
        return None

    @on(MainScreen.AgentUpdate)
    async def _child_event(self, message: MainScreen.AgentUpdate) -> None:
        """A sub-agent's event (after the main screen drew the parent's): to its open transcript
        (a grandchild's, wrapped in its parent's, to its own). A run's end freezes the heap
        once its frame is drawn (hermes_tui/tui/heap.py)."""
        event = message.event
        if isinstance(event, ToolFinished):
            self.call_after_refresh(lambda: self.heap.run_ended(self._last_key()))
        if message.session != self.session:
            return
        from hermes_tui.agent.subagents import ChildEvent

        while isinstance(event, ChildEvent):
            screen = self._child_screen(event.child_session)
            if screen is not None:
                await screen.show_event(event.event)
            event = event.event

    # -- other screens --------------------------------------------------------------------

    @work(group="sessions", exclusive=True, exit_on_error=False)
    async def action_sessions(self) -> None:
        """The sessions picker: choose a stored session to continue."""
        await self._session_ready.wait()
        assert self.workspace.store is not None
        from hermes_tui.storage import sessions as db
        sessions = await self.workspace.store.call(db.list_sessions)  # those with messages (empty ones are noise)
        from hermes_tui.tui.screens.sessions import SessionsScreen

        chosen = await self.push_screen_wait(SessionsScreen(sessions, current=self.session))
        if chosen == "":
            self.switch_session(None)
        elif chosen and chosen != self.session:
            self.switch_session(chosen)

    # -- usage, budget and the model -----------------------------------------------------

    @work(group="usage", exclusive=True, exit_on_error=False)
    async def action_usage(self) -> None:
        """``/usage``: tokens and cost of this session, per turn and per model."""
        await self._session_ready.wait()
        assert self.workspace.store is not None and self.agent is not None
        from hermes_tui.storage import sessions as db
        rows = await self.workspace.store.call(db.usage_rows, self.session)
        from hermes_tui.tui.screens.usage import UsageScreen

        await self.push_screen(UsageScreen(self.session, rows, self.agent.totals))

    async def action_budget(self, argument: str = "") -> None:
        """``/budget``: show the ceilings; ``/budget 5.00`` sets the session's, ``/budget turn 1.00``
        the turn's, ``/budget off`` removes the session's."""
        from hermes_tui.agent.budget import parse_amount

        await self._session_ready.wait()
        agent = self.agent
        assert agent is not None
        note = self.main.conversation.add_note
        if agent.settings is None:
            note("No model is configured: nothing is spent, so there is no budget to set.")
            return
        words = argument.split()
        turn = bool(words) and words[0].lower() == "turn"
        amount = " ".join(words[1:] if turn else words)
        if not amount:
            if turn:
                note("/budget turn needs an amount in US dollars, like /budget turn 1.00 (or /budget turn off).")
            else:
                note(agent.budget.describe(agent.totals.cost_usd, agent.totals.unpriced_calls))
            return
        if amount.lower() in ("off", "none"):
            await agent.set_budget(None, turn=turn)
            note(f"The {'turn' if turn else 'session'} has no cost ceiling now.")
            return
        value = parse_amount(amount)
        if isinstance(value, str):
            note(value)
            return
        await agent.set_budget(value, turn=turn)
        from hermes_tui.agent.usage import dollars

        if turn:
            note(f"Each turn may cost up to {dollars(value)} now (for this session).")
        elif value <= agent.totals.cost_usd:
            note(f"This session has already spent {dollars(agent.totals.cost_usd)}, more than {dollars(value)}: "
                 "no model call will be made until the ceiling is raised.", "warning")
        else:
            note(f"This session may cost up to {dollars(value)} now ({dollars(agent.totals.cost_usd)} spent). "
                 "/retry goes on with a turn the ceiling stopped.")

    @work(group="model", exclusive=True, exit_on_error=False)
    async def action_model(self, argument: str = "") -> None:
        """``/model``: the picker; ``/model NAME`` or ``/model PROVIDER:NAME`` switches directly."""
        from hermes_tui.agent.models.catalog import PROVIDERS
        from hermes_tui.agent.models.choices import parse_choice

        await self._session_ready.wait()
        note = self.main.conversation.add_note
        if argument.strip():
            known = {p.name for p in PROVIDERS} | set(self.config.providers) | {"custom"}
            parsed = parse_choice(argument, self.settings, known)
            if isinstance(parsed, str):
                note(parsed)
                return
            await self._use_model(*parsed)
            return
        picker = await self._model_picker()
        if picker is None:
            note("No model is configured, so there is nothing to pick from: /model PROVIDER:NAME uses one "
                 "(e.g. /model openrouter:anthropic/claude-sonnet-4), or set model.provider and model.default in "
                 "config.yaml (docs/providers.md).")
            return
        chosen = await self.push_screen_wait(picker)
        if chosen is not None and not chosen.current:
            await self._use_model(chosen.provider, chosen.model)

    async def _model_picker(self) -> Screen[object] | None:
        """The picker, or None when there is nothing to offer (no model configured at all)."""
        from hermes_tui.agent.models import choices
        from hermes_tui.tui.screens.model_picker import ModelPicker

        configured = choices.configured_choices(self.config, self.settings)
        listed: list[choices.ModelChoice] = []
        why = None
        if self.agent is not None and self.agent.provider is not None and self.settings is not None:
            self.notify("Asking the provider for its models…")
            listed, why = await choices.endpoint_choices(self.agent.provider, self.settings)
        every = choices.merge(configured, listed)
        if not every:
            return None
        known = {self.settings.name: self.settings} if self.settings else {}
        await asyncio.to_thread(choices.describe, every, known)
        return ModelPicker(every, why)

    async def _use_model(self, provider: str | None, model: str) -> None:
        """Resolve the choice as --provider/--model are resolved, and use it from the next call."""
        from hermes_tui.agent.models.keys import ProviderError
        from hermes_tui.agent.models.resolve import resolve_provider

        note = self.main.conversation.add_note
        try:
            settings = resolve_provider(self.config, self.home, self.host_env, provider=provider, model=model)
        except ProviderError as exc:
            note(f"Cannot use that model: {exc}")
            return
        if settings is None or self.agent is None:
            note("Cannot use that model: no provider is configured (set model.provider in config.yaml).")
            return
        await self.agent.use_model(settings)
        self.settings = self.workspace.settings = settings
        self.provider_problem = None
        self._update_topbar()
        self.main.set_usage(self.agent.totals)
        self.main.set_model(settings)
        note(f"Model: {settings.label} from the next model call.")
        for problem in settings.withheld:
            note(problem, "warning")

    def action_open_cache(self) -> None:
        from hermes_tui.tui.screens.cache_browser import CacheBrowser

        self.push_screen(CacheBrowser(exec_cache_dir(self.home)))

    @on(OpenEntry)
    async def _open_entry(self, event: OpenEntry) -> None:
        from hermes_tui.runtime.cache import find
        from hermes_tui.tui.screens.cache_browser import EntryScreen

        await self.runtime.flush_records()
        entry = await asyncio.to_thread(find, exec_cache_dir(self.home), event.exec_id)
        if entry is None:
            self.notify(f"No saved entry for {visible(event.exec_id)} (pruned?).", severity="warning",
                        markup=False)
            return
        await self.push_screen(EntryScreen(entry))

    @on(OpenInEditor)
    def _open_path(self, event: OpenInEditor) -> None:
        editor = editor_command()
        # A file a script wrote, opened by a program that reads start-up files a script can
        # write (~/.lesskey, ~/.vimrc): it gets a kernel's scrubbed environment and is forked
        # like every child, without the capabilities that read the host (docs/security.md).
        env = self.runtime.launcher.child_env(frozenset(self.config.terminal.env_passthrough))
        try:
            argv = editor_argv(editor, event.path, event.line)  # at the line, for editors that take one
            with self.suspend():
                spawn(lambda: subprocess.Popen(argv, env=env)).wait()
        except Exception as exc:  # no terminal to suspend to (tests), or no such editor
            self.notify(visible(f"Could not open {event.path} with {editor}: {exc}"), severity="error", markup=False)

    def action_help(self, pane: str | None = None) -> None:
        from hermes_tui.tui.screens.dialogs import HelpScreen

        keys = [(b.key, b.description) for b in self.BINDINGS if isinstance(b, Binding)]
        self.push_screen(HelpScreen.for_pane(pane or self.main.focused_help(), keys))

    def action_cycle_theme(self) -> None:
        names = [t.name for t in THEMES]
        current = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(current + 1) % len(names)]
        self.notify(f"Theme: {visible(self.theme)}", markup=False)

    def watch_theme(self, theme: str) -> None:
        if not self.is_running:  # the remembered one, set before the app runs: nothing to redraw or store
            return
        for block in self.main.query(RunBlock):
            block.refresh_theme()
        if theme in {t.name for t in THEMES}:
            self.run_worker(asyncio.to_thread(remember_theme, self.home, theme), group="settings",
                            exit_on_error=False)

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for title, help_text, action in PALETTE:
            yield SystemCommand(title, help_text, partial(self.run_action, action))

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        """A failed worker becomes a notice, never a crash or a silent loss."""
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            error = event.worker.error
            self.notify(visible(f"{event.worker.name or 'task'} failed: {type(error).__name__}: {error}"),
                        severity="error", timeout=10, markup=False)

