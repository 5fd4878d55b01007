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
import os
import sys
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import on, work
from textual.app import SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from hermes_tui import __version__
from hermes_tui.agent.answers import Answer, AnswerBroker
from hermes_tui.agent.events import AgentEvent
from hermes_tui.config import Config
from hermes_tui.config.notes import backend_refusal
from hermes_tui.tui.commands import PALETTE
from hermes_tui.base.paths import hermes_home
from hermes_tui.tui.heap import HeapKeeper
from hermes_tui.tui.widgets.conversation.prompt import PromptInput
from hermes_tui.runtime.events import KernelDied, KernelStarted, KernelStateChanged
from hermes_tui.storage.choice import new_session_id
from hermes_tui.tui.settings import remembered_theme
from hermes_tui.tui.themes import DEFAULT_THEME, THEMES
from hermes_tui.tui.attention import Attention
from hermes_tui.tui.children import ChildTranscripts
from hermes_tui.tui.input_actions import InputActions
from hermes_tui.tui.checkpoint_actions import CheckpointActions
from hermes_tui.tui.saved_outputs import SavedOutputs
from hermes_tui.tui.theme_actions import ThemeActions
from hermes_tui.tui.kernel_actions import KernelActions
from hermes_tui.tui.model_actions import ModelActions
from hermes_tui.tui.screens.main import MainScreen
from hermes_tui.tui.textual_compat import event_loop
from hermes_tui.tui.widgets.safe import visible

if TYPE_CHECKING:
    from textual.driver import Driver

    from hermes_tui.agent.loop import Agent
    from hermes_tui.agent.models.resolve import ProviderSettings
    from hermes_tui.agent.workspace import Workspace
    from hermes_tui.runtime import Runtime
    from hermes_tui.runtime.approvals import ApprovalDecision, ApprovalRequest

# Screens not on the first frame (dialogs, help, the output browser) are imported when first
# opened: the first screen comes up sooner. Notices that quote data (ids, paths, errors) are
# sent with markup=False: an error message holding "[/]" must not crash the app.


APP_SWITCH_INTERVAL = 0.0005
"""Seconds a thread may hold the GIL while another waits for it, in the app's process."""
SHOWN_WAIT = 0.1
"""Seconds a tool call waits at most for its block to be drawn before it runs."""


class HermesApp(InputActions, CheckpointActions, KernelActions, ChildTranscripts, ModelActions, SavedOutputs, ThemeActions,
                Attention):
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

    def get_driver_class(self) -> type[Driver]:
        """Textual's choice, except that on Linux the quit does not wait for its key thread
        (tui/quit_driver.py)."""
        from textual.drivers.linux_driver import LinuxDriver

        chosen = super().get_driver_class()
        if chosen is LinuxDriver:
            from hermes_tui.tui.quit_driver import QuitDriver

            return QuitDriver
        return chosen

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
        self.answers = AnswerBroker(self.show_request, self._withdrawn, self._answered)
        """Requests the dialogs wait on (``hermes-tui approve`` can answer them too)."""
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

            self._workspace = Workspace(self.config, home=self.home, cwd=self.cwd, answers=self.answers,
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
        self.update_topbar()
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
        from hermes_tui.base.lifetime import settle_heap  # full GCs stalled keys (tui/widgets/footer.py)

        self.call_after_refresh(settle_heap)

    async def on_unmount(self) -> None:
        self.heap.release()
        await self.workspace.aclose()
        sys.setswitchinterval(self._switch_interval)

    def update_topbar(self) -> None:
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
        self.update_topbar()
        def listener(event: AgentEvent) -> None:
            self.watch_turn(event)
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
            prompt.input_history.load(await self.workspace.input_history())
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
        problem = await self.workspace.listen_for_injected(opened.agent)
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
        busy = await self.workspace.leave_for(session_id)
        if busy is not None:
            self.main.conversation.add_note(busy, "warning")
            return
        self.main.conversation.action_clear()
        self.open_session(session_id or new_session_id())

    def last_key(self) -> float:
        """``time.monotonic()`` of the last key typed in the input."""
        prompt = self.main.query(PromptInput)
        return prompt.first().last_key_at if prompt else float("-inf")

    def _every_second(self) -> None:
        """The kernels' rows and memory; a full collection of the heap if the app is idle
        (hermes_tui/tui/heap.py)."""
        self.refresh_kernels()
        agent = self.workspace.agent if self._workspace is not None else None
        self.heap.idle(self.last_key(), busy=bool(agent and agent.busy))

    @work(group="runtime", exit_on_error=False)
    async def start_runtime(self) -> None:
        """Ready the runtime (temp dir, cache dir, approval rules, the sandbox's probe); kernels
        start on first use. The top bar then shows the sandbox in force; when none can be
        applied, the conversation says why (no script runs: fail closed)."""
        from hermes_tui.runtime.import_guard import listen

        listen(self._import_refused)
        await self.runtime.start()
        sandbox = self.runtime.sandbox
        self._sandbox = self.runtime.sandbox_label
        self.update_topbar()
        if sandbox.error and not self.runtime.launcher.backend.remote:  # elsewhere, the backend confines
            self.main.conversation.add_note(sandbox.error, "error")
        if (leftovers := await self.runtime.leftovers_note()) is not None:
            self.main.conversation.add_note(leftovers, "warning")

    def _import_refused(self, line: str) -> None:
        """A module the host refused to import (runtime/import_guard.py), said in the conversation.
        Called from whichever thread imported, often while a widget is being built: posted."""
        loop = event_loop(self)
        if loop is not None:
            loop.call_soon_threadsafe(self.main.conversation.add_note, line, "warning")

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

    def show_request(self, request: ApprovalRequest, answer: asyncio.Future[ApprovalDecision]) -> None:
        """How this front end asks (:class:`~hermes_tui.agent.answers.AnswerBroker` calls it): the
        main screen's dialog, one at a time (the others wait). Called from the runtime's tasks,
        so it only posts messages."""
        self.main.post_message(MainScreen.ApprovalNeeded(request, answer))
        self.call_attention("An approval is waiting")

    def _withdrawn(self, request_id: str) -> None:
        self.main.post_message(MainScreen.ApprovalWithdrawn(request_id))

    def _answered(self, request: ApprovalRequest, answer: Answer) -> None:
        """An answer given from a shell: said in the conversation (the toast fades), its dialog closed."""
        self.main.conversation.add_note(answer.said(request), "info")
        self.main.post_message(MainScreen.ApprovalWithdrawn(request.id, f"Answered from {(answer.who or '')[:200]}: "
                                                                        f"{answer.choice}."))

    MAIN_SCREEN_ACTIONS = frozenset({"focus_pane", "toggle_maximize"})
    """Keys of the main screen's panes: on another screen (the output browser, a transcript)
    they would act on panes out of sight, and their footer has no room for them at 80 columns."""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return action not in self.MAIN_SCREEN_ACTIONS or self.screen is self.main

    def action_focus_pane(self, pane: str) -> None:
        self.main.focus_pane(pane)

    def action_toggle_maximize(self) -> None:
        self.main.toggle_maximize()

    # -- other screens --------------------------------------------------------------------

    @work(group="sessions", exclusive=True, exit_on_error=False)
    async def action_sessions(self) -> None:
        """The sessions picker: choose a stored session to continue."""
        await self._session_ready.wait()
        sessions = await self.workspace.sessions()
        from hermes_tui.tui.screens.sessions import SessionsScreen

        chosen = await self.push_screen_wait(SessionsScreen(sessions, current=self.session))
        if chosen == "":
            self.switch_session(None)
        elif chosen and chosen != self.session:
            self.switch_session(chosen)

    HELP_TOPICS = {"rollback": "checkpoints", "checkpoints": "checkpoints", "diff": "checkpoints",
                   "conversation": "conversation", "kernels": "kernels", "output": "output", "browser": "browser"}
    """``/help TOPIC``: the page each word opens."""

    def action_help_topic(self, argument: str = "") -> None:
        """``/help``: the focused pane's keys and commands; ``/help rollback``: that page."""
        topic = argument.strip().lstrip("/").lower()
        if topic and topic not in self.HELP_TOPICS:
            self.main.conversation.add_note(f"No help page for {argument.strip()!r}; /help shows the keys and commands, "
                                            f"and there are pages for: {', '.join(sorted(self.HELP_TOPICS))}.")
            return
        self.action_help(self.HELP_TOPICS[topic] if topic else "conversation")

    def action_help(self, pane: str | None = None) -> None:
        from hermes_tui.tui.screens.dialogs import HelpScreen

        keys = [(b.key, b.description) for b in self.BINDINGS if isinstance(b, Binding)]
        self.push_screen(HelpScreen.for_pane(pane or self.main.focused_help(), keys))

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

