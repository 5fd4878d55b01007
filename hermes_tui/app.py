"""The Textual app: wires runtime events to the panes. No business logic lives here.

Runtime events arrive on one subscription read by an async worker on the app's loop; the
approval dialog is the runtime's Approver; anything that touches a file or /proc runs in a
worker thread or through the runtime, so no frame waits on a kernel, a file or the network.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sqlite3
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from rich.markup import escape
from textual.widgets import Footer, Static
from textual.worker import Worker, WorkerState

from hermes_tui import __version__
from hermes_tui import store as db
from hermes_tui.agent.loop import (
    Agent,
    AgentEvent,
    Notice,
    ReplyDone,
    ReplyText,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnQueued,
    TurnStarted,
)
from hermes_tui.agent.providers import ProviderError, ProviderSettings, resolve_provider
from hermes_tui.config import Config
from hermes_tui.paths import exec_cache_dir, hermes_home, tui_dir
from hermes_tui.runtime import (
    ExecFinished,
    ExecOutput,
    ExecStarted,
    KernelDied,
    KernelStarted,
    KernelStateChanged,
    Runtime,
)
from hermes_tui.runtime.approvals import ApprovalDecision, ApprovalRequest
from hermes_tui.themes import DEFAULT_THEME, THEMES

if TYPE_CHECKING:
    from hermes_tui.widgets.approval import ApprovalScreen

# Screens not on the first frame (dialogs, help, the output browser) are imported when first
# opened: the first screen comes up sooner.
from hermes_tui.widgets.conversation import ConversationPane, PromptInput, ReplyBlock, RunBlock
from hermes_tui.widgets.kernels import KernelsPane
from hermes_tui.widgets.messages import OpenEntry, OpenInEditor
from hermes_tui.widgets.output import OutputPane

INPUT_HINT = "No model: type Python · !cmd · /help · to chat, add model: to config.yaml"

HELP = {
    "conversation": """# Conversation

With a **model** (`model:` in `$HERMES_HOME/config.yaml`, or `--model`): Enter sends the
message, Ctrl+J adds a line. The model answers in Markdown and acts through `execute_code`
(Python in this session's kernel, calling the seven tools) and the file, web and terminal tools.
A new message while a turn runs interrupts it first; injected messages (`hermes-tui inject`)
wait their turn and have every script approved first.

With **no model**, type **Python**: it runs in this session's kernel, where variables and
imports persist. Enter runs the input once it is a complete statement (as in the Python REPL);
an empty line ends a block.

* `!cmd` runs a shell command (asks for approval, like `terminal()` in scripts)
* `Esc` or `/stop` stops the running turn · `/retry` sends the conversation again after a
  failed request · `/sessions` (`Ctrl+O`) picks a stored session · `/new` starts a new one
* `/reset` starts a fresh kernel · `/kernels` · `/cache` (the output browser, also F9) · `/help` · `/quit`
* Select a run (click, or Tab to it and Enter) to show its output in the output pane; `c` on
  a run opens its saved entry.

Every session is stored in `$HERMES_HOME/tui/sessions.db`: `hermes-tui --resume` continues the
latest, `hermes-tui export ID --format sharegpt` writes it out.""",
    "output": """# execute_code output

Live output of the running script (batched, the last 5,000 lines), then the result: at most
the first 20,000 and last 30,000 bytes, with a marker where output was cut.

* `o` opens the full output (in `$EDITOR`, or `less`) · `y` copies its path · `c` opens the
  run's entry in the output browser (pager, search, delete)""",
    "kernels": """# Kernels

○ idle · ● busy · ◍ starting · ⨂ dead · ☹ error. *reaped in* counts down to the idle reaper
(`code_execution.kernel_idle_timeout`); *next-evicted* marks the kernel a new one would replace
at `max_session_kernels`; *stale-env* means allowed variables changed since it started.

* `r` reset · `i` interrupt · `k` kill · `v` variables (asked of an idle kernel)""",
}


class HermesApp(App[None]):
    """hermes-tui: conversation, live output, kernels, and the approval dialog."""

    TITLE = "hermes-tui"
    CSS = """
    Screen { layout: vertical; }
    #topbar { height: 1; background: $panel; color: $text; padding: 0 1; }
    #topbar .yolo { color: $error; text-style: bold reverse; }
    #main { height: 1fr; }
    ConversationPane { width: 2fr; min-width: 30; }
    #right { width: 3fr; }
    .chat ConversationPane { width: 3fr; }
    .chat #right { width: 2fr; }
    OutputPane { height: 2fr; }
    KernelsPane { height: 1fr; min-height: 6; }
    """

    BINDINGS = [
        Binding("f1", "help", "Help", id="help"),
        Binding("f2", "focus_pane('conversation')", "Input", id="focus-conversation"),
        Binding("f3", "focus_pane('output')", "Output", id="focus-output"),
        Binding("f4", "focus_pane('kernels')", "Kernels", id="focus-kernels"),
        Binding("f8", "toggle_maximize", "Maximise", id="maximize"),
        Binding("f9", "open_cache", "Outputs", id="open-cache"),
        Binding("ctrl+o", "sessions", "Sessions", id="sessions"),
        Binding("escape", "stop", "Stop the turn", show=False, id="stop"),
        Binding("ctrl+t", "cycle_theme", "Theme", id="theme"),
        Binding("ctrl+r", "reset_session", "Reset kernel", id="reset-session"),
        Binding("ctrl+q", "quit", "Quit", id="quit"),
    ]

    def __init__(
        self,
        config: Config | None = None,
        *,
        session: str | None = None,
        cwd: str | None = None,
        home: Path | None = None,
        host_env: dict[str, str] | None = None,
        provider: ProviderSettings | None = None,
        model_flags: dict[str, str | None] | None = None,
        provider_problem: str | None = None,
    ) -> None:
        """Args:
            session: the session to open (stored ones are continued); a new id if None.
            provider: the model (default: resolved from the config and ``model_flags``).
            provider_problem: why the configured model cannot be used, when the caller resolved
                it already (the app then runs without a model and says why).
        """
        super().__init__()
        self.config = config or Config()
        self.session = session or db.new_session_id()
        self.cwd = cwd or os.getcwd()
        self.home = home or hermes_home()
        self.runtime = Runtime(self.config, home=self.home, host_env=host_env, approver=self.approve)
        self.provider_problem = provider_problem
        self.settings = provider
        if provider is None and provider_problem is None:
            try:
                self.settings = resolve_provider(self.config, self.home, host_env, **(model_flags or {}))
            except ProviderError as exc:
                self.provider_problem = str(exc)
        self.store: db.SessionStore | None = None
        self.agent: Agent | None = None
        self._inject = None
        self._session_ready = asyncio.Event()
        self._closing = False
        self._replies: dict[int, ReplyBlock] = {}
        self._tools: dict[str, RunBlock] = {}
        self._approval_lock = asyncio.Lock()
        self._waiting_approvals = 0
        self._dialogs: dict[str, ApprovalScreen] = {}

    # -- layout ---------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="topbar")
        with Horizontal(id="main"):
            yield ConversationPane(self._hint(), id="conversation")
            with Vertical(id="right"):
                yield OutputPane(id="output")
                yield KernelsPane(id="kernels")
        yield Footer()

    async def on_mount(self) -> None:
        for theme in THEMES:
            self.register_theme(theme)
        self.theme = await asyncio.to_thread(self._remembered_theme)
        self._update_topbar()
        prompt = self.query_one(PromptInput)
        prompt.chat = self.settings is not None
        self.screen.set_class(prompt.chat, "chat")  # with a model, the conversation gets the room
        prompt.focus()
        self.follow_events()
        self.start_runtime()  # after the first frame: the screen does not wait for it
        self.open_session(self.session)
        self.set_interval(1.0, self.refresh_kernels)
        self.set_interval(0.25, self._live_tool_calls)

    async def on_unmount(self) -> None:
        self._closing = True
        await self._close_session()
        await self.runtime.aclose()
        if self.store is not None:
            await asyncio.to_thread(self.store.close)

    def _hint(self) -> str:
        if self.settings is not None:
            return f"{self.settings.label} · Enter sends · Ctrl+J new line · !cmd · /help"
        if self.provider_problem:
            return f"Model not usable ({self.provider_problem}) — input runs Python"
        return INPUT_HINT

    # -- the session ----------------------------------------------------------------------

    @work(group="session", exclusive=True, exit_on_error=False)
    async def open_session(self, session_id: str) -> None:
        """Open (or create) a stored session: draw what it holds, answer what was pending,
        and listen for injected messages."""
        self._session_ready.clear()
        if self.store is None:
            try:
                self.store = await asyncio.to_thread(db.SessionStore.open, self.home)
            except (OSError, sqlite3.Error) as exc:  # the app still works; this session is not kept
                self.store = await asyncio.to_thread(db.SessionStore, Path(":memory:"))
                self.query_one(ConversationPane).add_note(
                    f"The sessions database {db.sessions_db_path(self.home)} cannot be opened ({exc}); "
                    "this session is kept in memory only and will not survive a restart.", "error")
        self.session = session_id
        self._update_topbar()
        agent = Agent(
            self.runtime, self.store, session_id, settings=self.settings, cwd=self.cwd,
            listener=lambda event: self.post_message(self.AgentUpdate(event, session_id)),
            max_steps=self.config.agent.max_steps, max_invalid=self.config.agent.max_invalid_tool_calls,
            system_prompt=self.config.agent.system_prompt, max_context_chars=self.config.agent.max_context_chars,
        )
        loaded = await agent.load()  # None for a new session
        await agent.open()
        self.agent = agent
        conversation = self.query_one(ConversationPane)
        if self.provider_problem:
            conversation.add_note(f"The configured model cannot be used: {self.provider_problem}", "error")
        elif self.settings is not None and self.settings.missing_key:
            conversation.add_note(f"No API key for {self.settings.name}: {self.settings.key_source}.", "warning")
        if loaded is not None:
            from hermes_tui.widgets.transcript import draw_session

            draw_session(conversation, loaded)
        from hermes_tui.inject import InjectServer

        server = InjectServer(self.home, session_id, self._injected)
        try:
            await server.start()
            self._inject = server  # listening: `hermes-tui inject` reaches this app
        except OSError as exc:
            conversation.add_note(f"hermes-tui inject is not available for this app: {exc}", "warning")
        self._session_ready.set()
        if loaded is not None and loaded.pending:
            await agent.resume_pending()

    async def _close_session(self) -> None:
        if self._inject is not None:
            await self._inject.aclose()
            self._inject = None
        if self.agent is not None:
            await self.agent.aclose()
            self.agent = None

    async def _injected(self, text: str) -> int:
        await self._session_ready.wait()
        assert self.agent is not None
        return await self.agent.submit(text, "injected")

    @work(group="session-switch", exclusive=True, exit_on_error=False)
    async def switch_session(self, session_id: str | None) -> None:
        """Leave this session (its kernels idle on) and open another, or a new one."""
        await self.runtime.interrupt(self.session)
        await self._close_session()
        self.query_one(ConversationPane).action_clear()
        self._replies.clear()
        self._tools.clear()
        self.open_session(session_id or db.new_session_id())

    # -- agent events ---------------------------------------------------------------------

    class AgentUpdate(Message):
        """An agent event, delivered in order on the app's loop."""

        def __init__(self, event: AgentEvent, session: str) -> None:
            super().__init__()
            self.event = event
            self.session = session

    @on(AgentUpdate)
    async def _show_agent_event(self, message: AgentUpdate) -> None:
        event = message.event
        if message.session != self.session:
            return  # a late event of the session the app just left
        try:
            conversation = self.query_one(ConversationPane)
        except NoMatches:
            return  # the app is closing: the screen is gone (the event is stored all the same)
        if isinstance(event, TurnStarted):
            if self.settings is not None or event.origin != "user":
                conversation.add_message(event.text, event.origin)  # typed Python shows as its run block
            if self.settings is not None:
                conversation.set_hint(f"… {self.settings.model} is working · a new message interrupts · /help")
        elif isinstance(event, TurnQueued):
            what = "injected message" if event.origin == "injected" else "message"
            conversation.add_note(f"⋯ {what} queued ({event.position} ahead): {event.text[:120]}")
        elif isinstance(event, ReplyText):
            block = self._replies.get(event.reply_id)
            if block is None:
                block = self._replies[event.reply_id] = conversation.add_reply()
            await block.add(event.delta)
            conversation.follow()
        elif isinstance(event, ReplyDone):
            block = self._replies.pop(event.reply_id, None)
            if block is not None:
                await block.finish(event.text, event.status)
        elif isinstance(event, ToolStarted):
            self._tools[event.call_id] = conversation.add_tool(event.name, event.arguments)
        elif isinstance(event, ToolFinished):
            block = self._tools.pop(event.call_id, None) or conversation.add_tool(event.name, {})
            if event.exec_result is not None:
                self.query_one(OutputPane).finish(event.exec_result)
                block.set_result(event.exec_result)
            else:
                show_tool_result(conversation, block, event.result)
        elif isinstance(event, Notice):
            conversation.add_note(event.text, event.level)
        elif isinstance(event, TurnEnded):
            conversation.set_hint(self._hint())

    @work(group="runtime", exit_on_error=False)
    async def start_runtime(self) -> None:
        """Ready the runtime (temp dir, cache dir, approval rules); kernels start on first use."""
        await self.runtime.start()
        self._update_topbar()

    def _update_topbar(self) -> None:
        yolo = " [reverse bold red] YOLO: approvals off [/]" if self.runtime.yolo else ""
        model = escape(self.settings.label) if self.settings else "no model"
        self.query_one("#topbar", Static).update(
            f"[bold]hermes-tui[/] {__version__} · session [b]{escape(self.session)}[/] · {model} · {escape(self.cwd)}"
            f" · approvals {self.config.approvals.mode}{yolo}"
        )

    # -- runtime events -------------------------------------------------------------------

    @work(exclusive=True, group="events", exit_on_error=False)
    async def follow_events(self) -> None:
        """Read runtime events and hand them to the panes."""
        subscription = self.runtime.subscribe()
        output = self.query_one(OutputPane)
        try:
            async for event in subscription:
                if isinstance(event, ExecStarted):
                    if event.session == self.session:
                        output.begin(event.exec_id, event.kernel_id, event.timeout, event.max_tool_calls)
                elif isinstance(event, ExecOutput):
                    output.feed(event.exec_id, event.text, event.skipped_bytes)
                elif isinstance(event, ExecFinished):
                    output.finish(event.result)
                elif isinstance(event, (KernelStarted, KernelStateChanged, KernelDied)):
                    self.refresh_kernels()
        finally:
            subscription.close()

    def _live_tool_calls(self) -> None:
        output = self.query_one(OutputPane)
        if output.status == "running" and output.exec_id:
            calls = self.runtime.tool_calls(output.exec_id)
            if calls is not None:
                output.set_tool_calls(calls)

    @work(exclusive=True, group="kernels", exit_on_error=False)
    async def refresh_kernels(self) -> None:
        """Kernel rows and their memory (read off /proc by the runtime, in a thread)."""
        memory = await self.runtime.kernel_memory()
        self.query_one(KernelsPane).update_kernels(self.runtime.kernels(), memory)

    # -- approvals ------------------------------------------------------------------------

    class ApprovalNeeded(Message):
        """From the runtime's approver (any task) to the app: ask, and set ``answer``."""

        def __init__(self, request: ApprovalRequest, answer: asyncio.Future[ApprovalDecision]) -> None:
            super().__init__()
            self.request = request
            self.answer = answer

    class ApprovalWithdrawn(Message):
        """The gate stopped waiting (approvals.timeout): close that dialog."""

        def __init__(self, request_id: str) -> None:
            super().__init__()
            self.request_id = request_id

    async def approve(self, request: ApprovalRequest) -> ApprovalDecision:
        """The runtime's Approver. It runs in the runtime's tasks, so it only posts messages:
        the dialog is opened by the app itself (one at a time; the others queue). The request
        is stored before it is shown, so it survives a crash of the app."""
        store, agent = self.store, self.agent
        if store is not None and agent is not None and request.session == agent.session_id:
            await store.call(db.add_approval, request.session, agent.current_call_id, request.model_dump(mode="json"))
        answer: asyncio.Future[ApprovalDecision] = asyncio.get_running_loop().create_future()
        self.post_message(self.ApprovalNeeded(request, answer))
        try:
            decision = await answer
        except asyncio.CancelledError:
            self.post_message(self.ApprovalWithdrawn(request.id))
            if store is not None and not self._closing:  # closing: it stays pending for --resume
                store.submit(db.answer_approval, request.id, "deny", "no answer in time", "withdrawn")
            raise
        if store is not None:
            await store.call(db.answer_approval, request.id, decision.choice, decision.reason)
        return decision

    @on(ApprovalNeeded)
    def _approval_needed(self, message: ApprovalNeeded) -> None:
        self._waiting_approvals += 1
        self.ask_approval(message.request, message.answer)

    @work(group="approvals", exit_on_error=False)
    async def ask_approval(self, request: ApprovalRequest, answer: asyncio.Future[ApprovalDecision]) -> None:
        async with self._approval_lock:
            self._waiting_approvals -= 1
            if answer.done():  # withdrawn while it waited in line
                return
            from hermes_tui.widgets.approval import ApprovalScreen

            screen = ApprovalScreen(request, waiting=self._waiting_approvals)
            self._dialogs[request.id] = screen
            try:
                decision = await self.push_screen_wait(screen)
            finally:
                self._dialogs.pop(request.id, None)
            if not answer.done():
                answer.set_result(decision or ApprovalDecision(choice="deny"))

    @on(ApprovalWithdrawn)
    def _approval_withdrawn(self, message: ApprovalWithdrawn) -> None:
        screen = self._dialogs.get(message.request_id)
        if screen is not None and screen.is_current:
            screen.dismiss(None)
            self.notify("No answer in time: the request was denied.", severity="warning")

    # -- the input ------------------------------------------------------------------------

    @on(PromptInput.Submitted)
    async def _submitted(self, event: PromptInput.Submitted) -> None:
        text = event.text
        if text.startswith("/"):
            await self._command(text[1:].strip())
        elif text.startswith("!"):
            self.run_command(text[1:].strip())
        else:
            self.send(text)

    @work(group="send", exit_on_error=False)
    async def send(self, text: str, origin: str = "user") -> None:
        """Hand a message to the agent (once the session is open): a model turn, or Python."""
        await self._session_ready.wait()
        assert self.agent is not None
        await self.agent.submit(text, origin)

    @work(group="exec", exit_on_error=False)
    async def run_command(self, command: str) -> None:
        """Run ``!cmd`` through the approval gate."""
        conversation = self.query_one(ConversationPane)
        if not command:
            conversation.add_note("Type a command after ! (for example: !git status).")
            return
        block = conversation.add_run(command, kind="shell")
        result = await self.runtime.terminal(command, session=self.session, cwd=self.cwd)
        show_tool_result(conversation, block, result)

    async def _command(self, text: str) -> None:
        conversation = self.query_one(ConversationPane)
        name = text.split()[0].lower() if text else "help"
        if name == "reset":
            await self.action_reset_session()
        elif name == "kernels":
            self.action_focus_pane("kernels")
        elif name == "cache":
            self.action_open_cache()
        elif name == "help":
            self.action_help("conversation")
        elif name == "stop":
            await self.action_stop()
        elif name == "retry":
            if self.agent is None or not await self.agent.retry():
                conversation.add_note("Nothing to retry: /retry sends the conversation again after a failed request.")
        elif name == "sessions":
            self.action_sessions()
        elif name == "new":
            self.switch_session(None)
        elif name in ("quit", "exit"):
            self.exit()
        else:
            conversation.add_note(f"Unknown command /{name}. Commands: /stop /retry /sessions /new /reset /kernels "
                                  "/cache /help /quit")

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        """A failed worker becomes a notice, never a crash or a silent loss."""
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            error = event.worker.error
            self.notify(f"{event.worker.name or 'task'} failed: {type(error).__name__}: {error}",
                        severity="error", timeout=10)

    # -- pane messages --------------------------------------------------------------------

    @on(RunBlock.Selected)
    def _show_run(self, event: RunBlock.Selected) -> None:
        if event.block.result is not None:
            self.query_one(OutputPane).show(event.block.result)

    @on(KernelsPane.Action)
    async def _kernel_action(self, event: KernelsPane.Action) -> None:
        kernel_id = event.kernel_id
        if event.action in ("reset", "kill"):
            reason = "was reset by the user" if event.action == "reset" else "was killed by the user"
            if await self.runtime.kill_kernel(kernel_id, reason):
                self.notify(f"Kernel {kernel_id} {reason.split(' by ')[0].replace('was ', '')}.")
        elif event.action == "interrupt":
            session = self.runtime.session_of(kernel_id)
            count = await self.runtime.interrupt(session) if session else 0
            self.notify(f"Interrupted {count} running script(s)." if count else "Nothing is running there.")
        elif event.action == "variables":
            self.show_variables(kernel_id)
        self.refresh_kernels()

    @work(exclusive=True, group="variables", exit_on_error=False)
    async def show_variables(self, kernel_id: str) -> None:
        try:
            variables = await self.runtime.inspect_kernel(kernel_id)
        except (LookupError, RuntimeError, Exception) as exc:
            self.notify(str(exc), severity="warning")
            return
        from hermes_tui.widgets.dialogs import VariablesScreen

        await self.push_screen(VariablesScreen(kernel_id, variables))

    @on(PromptInput.StopRequested)
    async def action_stop(self) -> None:
        """Stop the running turn (a running script is interrupted, a reply is cut)."""
        if self.agent is not None and await self.agent.interrupt():
            self.notify("Stopped the running turn.")

    @work(group="sessions", exclusive=True, exit_on_error=False)
    async def action_sessions(self) -> None:
        """The sessions picker: choose a stored session to continue."""
        await self._session_ready.wait()
        assert self.store is not None
        sessions = [s for s in await self.store.call(db.list_sessions) if s.messages]  # empty ones are noise
        from hermes_tui.widgets.sessions import SessionsScreen

        chosen = await self.push_screen_wait(SessionsScreen(sessions, current=self.session))
        if chosen == "":
            self.switch_session(None)
        elif chosen and chosen != self.session:
            self.switch_session(chosen)

    def action_open_cache(self) -> None:
        from hermes_tui.widgets.cache_browser import CacheBrowser

        self.push_screen(CacheBrowser(exec_cache_dir(self.home)))

    @on(OpenEntry)
    async def _open_entry(self, event: OpenEntry) -> None:
        from hermes_tui.cache import find
        from hermes_tui.widgets.cache_browser import EntryScreen

        await self.runtime.flush_records()
        entry = await asyncio.to_thread(find, exec_cache_dir(self.home), event.exec_id)
        if entry is None:
            self.notify(f"No saved entry for {event.exec_id} (pruned?).", severity="warning")
            return
        await self.push_screen(EntryScreen(entry))

    @on(OpenInEditor)
    def _open_path(self, event: OpenInEditor) -> None:
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "less"
        try:
            with self.suspend():
                subprocess.call([*shlex.split(editor), event.path])
        except Exception as exc:  # no terminal to suspend to (tests), or no such editor
            self.notify(f"Could not open {event.path} with {editor}: {exc}", severity="error")

    # -- actions --------------------------------------------------------------------------

    def action_focus_pane(self, pane: str) -> None:
        if pane == "conversation":
            self.query_one(PromptInput).focus()
        elif pane == "output":
            self.query_one("#output-log").focus()
        else:
            self.query_one("#kernel-table").focus()

    def action_toggle_maximize(self) -> None:
        screen = self.screen
        if screen.maximized is not None:
            screen.minimize()
            return
        pane = self._focused_pane()
        if pane is not None:
            screen.maximize(pane, container=False)

    def _focused_pane(self) -> ConversationPane | OutputPane | KernelsPane | None:
        focused = self.focused
        return next((w for w in (focused, *(focused.ancestors if focused else ()))
                     if isinstance(w, (ConversationPane, OutputPane, KernelsPane))), None)

    def action_help(self, pane: str | None = None) -> None:
        if pane is None:
            pane = {OutputPane: "output", KernelsPane: "kernels"}.get(type(self._focused_pane()), "conversation")
        from hermes_tui.widgets.dialogs import HelpScreen

        keys = "\n".join(f"* `{b.key}` {b.description}" for b in self.BINDINGS)
        self.push_screen(HelpScreen(HELP[pane] + "\n\n## Everywhere\n\n" + keys + "\n* `ctrl+p` command palette"))

    def action_cycle_theme(self) -> None:
        names = [t.name for t in THEMES]
        current = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(current + 1) % len(names)]
        self.notify(f"Theme: {self.theme}")

    async def action_reset_session(self) -> None:
        await self.runtime.dispose_session(self.session)
        self.query_one(ConversationPane).add_note("Kernel reset: the next input starts a fresh one.")
        self.refresh_kernels()

    def watch_theme(self, theme: str) -> None:
        for block in self.query(RunBlock):
            block.refresh_theme()
        if theme in {t.name for t in THEMES}:
            self.run_worker(asyncio.to_thread(self._remember_theme, theme), group="settings", exit_on_error=False)

    def get_system_commands(self, screen: Screen) -> object:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Reset kernel", "Start a fresh kernel for this session", self.action_reset_session)
        yield SystemCommand("Focus kernels", "Show and act on kernels", lambda: self.action_focus_pane("kernels"))
        yield SystemCommand("Focus output", "The execute_code output pane", lambda: self.action_focus_pane("output"))
        yield SystemCommand("Next theme", "Switch between dark, light and high contrast", self.action_cycle_theme)
        yield SystemCommand("Help", "Keys and commands of the focused pane", self.action_help)
        yield SystemCommand("Output browser", "Every saved output in $HERMES_HOME/cache/exec", self.action_open_cache)
        yield SystemCommand("Sessions", "Continue a stored conversation", self.action_sessions)
        yield SystemCommand("New session", "Start a new conversation", lambda: self.switch_session(None))

    # -- settings -------------------------------------------------------------------------

    def _settings_path(self) -> Path:
        return tui_dir(self.home) / "settings.json"

    def _remembered_theme(self) -> str:
        try:
            name = json.loads(self._settings_path().read_text()).get("theme")
        except (OSError, ValueError, AttributeError):
            name = None
        return name if name in {t.name for t in THEMES} else DEFAULT_THEME

    def _remember_theme(self, theme: str) -> None:
        path = self._settings_path()
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            data = {}
        if data.get("theme") == theme:
            return
        data["theme"] = theme
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=1))


def show_tool_result(conversation: ConversationPane, block: RunBlock, result: dict[str, object]) -> None:
    """A direct tool call's outcome on its block, and its output (capped) as a note."""
    block.set_tool_result(result)
    output = str(result.get("output") or result.get("content") or "")
    if output:
        conversation.add_note(output if len(output) <= 4000 else output[:2000] + "\n…\n" + output[-2000:])
