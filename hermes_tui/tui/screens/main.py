"""The main screen: the top bar, the conversation, the live output and the kernels.

It draws what it is told — agent events, runtime events, kernel rows — and asks the user the
approvals the workspace hands it, one dialog at a time. It touches no process, socket or file:
the app wires it to the runtime and the agent.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, TypeAlias

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.reactive import Reactive
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input, TextArea

from hermes_tui.agent.events import AgentEvent, ToolFinished, UsageUpdated
from hermes_tui.agent.usage import Totals, dollars, tokens
from hermes_tui.runtime.events import RuntimeEvent
from hermes_tui.tui.textual_compat import draw_now
from hermes_tui.tui.widgets.conversation.blocks import RunBlock
from hermes_tui.tui.widgets.conversation.pane import ConversationPane
from hermes_tui.tui.widgets.conversation.prompt import PromptInput
from hermes_tui.tui.widgets.footer import KeysFooter
from hermes_tui.tui.widgets.kernels import KernelsPane
from hermes_tui.tui.widgets.output import OutputPane
from hermes_tui.tui.widgets.safe import visible

if TYPE_CHECKING:
    from hermes_tui.agent.models.resolve import ProviderSettings
    from hermes_tui.runtime.approvals import ApprovalDecision, ApprovalRequest
    from hermes_tui.runtime.models import KernelInfo
    from hermes_tui.tui.screens.approval import ApprovalScreen

Pane: TypeAlias = ConversationPane | OutputPane | KernelsPane
INPUT_HINT = "No model: type Python · !cmd · /help · to chat, add model: to config.yaml"
TYPING_WINDOW = 1.0
"""A key in the input this recently (seconds) before a dialog opens means the user was typing."""
MOUNT_WAIT = 0.05
"""Seconds the screen waits at most for a tool call's block to be mounted before drawing."""


def short_model(label: str) -> str:
    """The model's own name out of a label: ``openrouter · anthropic/claude-sonnet-4 (auto)``
    gives ``claude-sonnet-4``."""
    parts = label.removesuffix(" (auto)").split(" · ")
    return (parts[1] if len(parts) > 1 else parts[0]).rsplit("/", 1)[-1]


def model_hints(settings: ProviderSettings) -> tuple[str, str]:
    """The line under the conversation with a model: idle, and while a turn runs."""
    return (f"{settings.label} · Enter sends · Ctrl+J new line · >>> Python · !cmd · /help",
            f"… {settings.model} is working · a new message interrupts · /help")


def gauge_style(fraction: float) -> str:
    """The context gauge's colour: green, then yellow past half, red past 80 %."""
    return "bold red" if fraction >= 0.8 else "bold yellow" if fraction >= 0.5 else "bold green"


def usage_text(totals: Totals, short: bool = False) -> Text:
    """``ctx 12% · 8.1k tok · $0.04 of $5.00``: the context filled, the session's tokens and cost
    (``?`` for calls with no known price), the ceiling when there is one."""
    parts: list[Text] = []
    fraction = totals.context_fraction
    if fraction is not None:
        parts.append(Text.assemble("" if short else "ctx ", (f"{fraction:.0%}", gauge_style(fraction))))
    elif totals.context_tokens:
        parts.append(Text(("" if short else "ctx ") + tokens(totals.context_tokens)))
    if not short:
        parts.append(Text(f"{tokens(totals.tokens_in + totals.tokens_out)} tok"))
    cost = totals.cost
    if totals.max_cost_usd is not None:
        cost += f" of {dollars(totals.max_cost_usd)}"
    parts.append(Text(cost))
    return Text(" · ").join(parts)


WARNING_BADGE = "reverse bold red"
"""The style of what must not be missed in the top bar: YOLO, and a sandbox that is off or unavailable."""
SANDBOX_BADGES = ("off", "unavailable")
"""Sandbox labels (their first part) shown as a warning badge: scripts run unconfined (``off``,
``off·/proc open``), or nothing runs at all."""


def sandbox_text(label: str, brief: bool = False) -> str:
    """``sandbox: workspace-write·bwrap``; ``brief``: the mechanism alone (``sandbox: bwrap``)."""
    return f"sandbox: {visible(label.rsplit('·', 1)[-1] if brief else label)}"


def topbar_line(width: int, *, version: str, session: str, model: str | None, cwd: str, approvals: str,
                yolo: bool, usage: Totals | None = None, sandbox: str | None = None, halted: bool = False) -> Text:
    """The top bar's text for ``width`` cells: it shortens instead of being cut mid-word. The
    working dir goes first, then the sandbox's label shortens to its mechanism, then the model's
    label to the model's name, then the app's name and the words around the session go; the usage
    (context, tokens, cost), the sandbox, the approvals mode and the YOLO badge always stay (the
    usage shortens to the gauge and the cost under 100 cells). ``sandbox``: the runtime's label
    once it is probed (None: not yet, nothing shown); ``off`` and ``unavailable`` are warning
    badges. ``halted``: nothing runs at all (a broken config.yaml, a ``terminal.backend`` not
    ``local``): a badge says so, for the modes shown are then not what is in force."""
    # Session names, model names and paths are data: assembled as Text, never markup.
    label = visible(model) if model else "no model"
    short, session, cwd = visible(short_model(label)) if model else label, visible(session), visible(cwd)
    badge = sandbox if sandbox and sandbox.split("·", 1)[0] in SANDBOX_BADGES else None  # off·/proc open too
    # Each warning badge, whole and short.
    badges = (([("nothing runs: see the conversation", "nothing runs")] if halted else [])
              + ([(sandbox_text(badge), sandbox_text(badge))] if badge else [])
              + ([("YOLO: approvals off", "YOLO")] if yolo else []))

    def confined(brief: bool) -> Text:
        return Text(sandbox_text(sandbox, brief) + " · ") if sandbox and not badge else Text()

    def tail(brief: bool) -> Text:
        line = confined(brief) + Text(f"approvals {approvals}")
        if usage is not None:
            line = usage_text(usage, short=width < 100) + Text(" · ") + line
        for whole, _ in badges:
            line.append(" ").append(f" {whole} ", WARNING_BADGE)
        return line

    brand = ("hermes-tui", "bold")
    heads = (
        (brand, f" {version} · session ", (session, "bold"), f" · {label} · {cwd} · "),
        (brand, f" {version} · session ", (session, "bold"), f" · {label} · "),
        (brand, f" {version} · session ", (session, "bold"), f" · {short} · "),
        (brand, " · session ", (session, "bold"), f" · {short} · "),
        ((session, "bold"), f" · {short} · "),
    )
    full, brief = tail(False), tail(True)
    for head, ending in [*((head, full) for head in heads[:2]), *((head, brief) for head in heads[1:])]:
        line = Text.assemble(*head) + ending
        if line.cell_len <= width:
            return line
    ending = brief
    if badges and ending.cell_len > width // 2:  # the sandbox, the approvals mode, short badges
        ending = confined(True) + Text(f"approvals {approvals}")
        for _, brief_badge in badges:
            ending.append(" ").append(f" {brief_badge} ", WARNING_BADGE)
    first, room = Text.assemble(*heads[-1]), width - ending.cell_len
    if room > 1:
        first.truncate(room, overflow="ellipsis")
    line = (first if room > 1 else Text()) + ending
    line.truncate(width)  # narrower than the tail alone (under 45 cells): cut
    return line


class TopBar(Widget):
    """The line at the top: version, session, model, working dir, usage, sandbox, approvals
    mode (and YOLO)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.parts: dict[str, object] = {"version": "", "session": "", "model": None, "cwd": "",
                                         "approvals": "", "yolo": False, "usage": None,
                                         "sandbox": None, "halted": False}

    def render(self) -> Text:
        width = self.content_size.width or 10_000  # not laid out yet: the whole line
        return topbar_line(width, **self.parts)  # type: ignore[arg-type]


class MainScreen(Screen[None]):
    """The four areas of the workstation (the approval dialog opens over them). Its layout is
    in the app's stylesheet, ``hermes_tui/tui/app.tcss``.

    Args:
        settings: the model (None: the input runs Python; the conversation gets less room).
        provider_problem: why the configured model cannot be used, if it cannot.
    """

    focused: Reactive[Widget | None] = Reactive(None, repaint=False)
    """Textual's, without its repaint of the whole screen on every focus change (issue 20): a
    full-screen render per key held the GIL the output capture needed during a flood. What
    looks different when focus moves repaints itself (``:focus`` styles, the panes' frames)."""

    class AgentUpdate(Message):
        """An agent event of ``session``, delivered in order."""

        def __init__(self, event: AgentEvent, session: str) -> None:
            super().__init__()
            self.event = event
            self.session = session

    class AfterFrame(Message):
        """Set ``drawn`` once what the messages before this one changed is drawn: the tool call's
        block mounted first (MOUNT_WAIT seconds at most), then drawn at once (:meth:`draw_now`),
        or after the screen's next refresh when it cannot be (another screen is on top)."""

        def __init__(self, drawn: asyncio.Future[None]) -> None:
            super().__init__()
            self.drawn = drawn

    class ApprovalNeeded(Message):
        """Ask the user about ``request`` and set ``answer``."""

        def __init__(self, request: ApprovalRequest, answer: asyncio.Future[ApprovalDecision]) -> None:
            super().__init__()
            self.request = request
            self.answer = answer

    class ApprovalWithdrawn(Message):
        """The gate stopped waiting (approvals.timeout), or the request was answered elsewhere
        (``hermes-tui approve``): close that dialog and say why."""

        def __init__(self, request_id: str, note: str = "No answer in time: the request was denied.") -> None:
            super().__init__()
            self.request_id = request_id
            self.note = note

    AUTO_FOCUS = "#prompt"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]
    """Classes by the screen's width: ``-narrow`` under 100 columns (app.tcss gives the
    conversation half the width there)."""

    def __init__(self, settings: ProviderSettings | None, provider_problem: str | None = None) -> None:
        # With a model, the conversation gets the room (the .chat rules in app.tcss).
        super().__init__(classes="chat" if settings is not None else None)
        self.chat = settings is not None
        self.topbar = TopBar(id="topbar")
        """Set before it is mounted too: the app fills it in before the first frame."""
        self.busy_hint: str | None
        if settings is not None:
            self.hint, self.busy_hint = model_hints(settings)
        else:
            self.hint = f"Model not usable ({provider_problem}) — input runs Python" if provider_problem else INPUT_HINT
            self.busy_hint = None
        self.session = ""
        """The session whose events are drawn (late events of another one are dropped)."""
        self._approval_lock = asyncio.Lock()
        # A burst: requests that arrive while others are open or waiting. Its dialogs say
        # "request N of M" and it rings the bell once; it ends when none is left.
        self._pending_approvals = 0
        """Requests asked and not yet answered (the one shown included)."""
        self._answered_in_burst = 0
        self._rang = False
        self._dialogs: dict[str, ApprovalScreen] = {}
        self._waiting: dict[str, tuple[ApprovalRequest, asyncio.Future[ApprovalDecision]]] = {}
        """Requests asked and not yet answered, by id (the one shown included)."""

    def compose(self) -> ComposeResult:
        yield self.topbar
        with Horizontal(id="main"):
            yield ConversationPane(self.hint, busy_hint=self.busy_hint, chat=self.chat, id="conversation")
            with Vertical(id="right"):
                yield OutputPane(id="output")
                yield KernelsPane(id="kernels")

        yield KeysFooter()  # one widget, not a dozen rebuilt per focus change (footer.py)

    @property
    def conversation(self) -> ConversationPane:
        return self.query_one(ConversationPane)

    def set_topbar(self, *, version: str, session: str, model: str | None, cwd: str, approvals: str,
                   yolo: bool, sandbox: str | None = None, halted: bool = False) -> None:
        """The line at the top: version, session, model, working dir, sandbox (its label; None:
        not probed yet), approvals mode, and whether nothing runs at all (it shortens to fit the
        screen: :func:`topbar_line`)."""
        topbar = self.topbar
        topbar.parts = {**topbar.parts, "version": version, "session": session, "model": model, "cwd": cwd,
                        "approvals": approvals, "yolo": yolo, "sandbox": sandbox, "halted": halted}
        topbar.refresh()

    def set_model(self, settings: ProviderSettings) -> None:
        """The model changed (``/model``): the hints under the conversation name the new one."""
        self.hint, self.busy_hint = model_hints(settings)
        conversation = self.conversation
        conversation.label, conversation.busy_hint = self.hint, self.busy_hint
        conversation.set_hint(self.hint)

    def set_usage(self, totals: Totals | None) -> None:
        """The session's usage in the top bar (None: none shown, as with no model)."""
        topbar = self.topbar
        topbar.parts = {**topbar.parts, "usage": totals}
        topbar.refresh()

    # -- what the engine and the agent say ------------------------------------------------

    @on(AgentUpdate)
    async def _agent_update(self, message: AgentUpdate) -> None:
        if message.session != self.session:
            return  # a late event of the session the app just left
        event = message.event
        if isinstance(event, UsageUpdated):
            self.set_usage(event.totals)
            return
        await self.conversation.show_event(event)
        if isinstance(event, ToolFinished) and event.exec_result is not None:
            self.query_one(OutputPane).finish(event.exec_result)

    @on(AfterFrame)
    async def _after_frame(self, message: AfterFrame) -> None:
        def drawn() -> None:
            if not message.drawn.done():
                message.drawn.set_result(None)
        await self.conversation.mounted(MOUNT_WAIT)
        self.query_one(PromptInput).release_frames()  # the block is mounted: drawn now, with the input cleared
        if self.draw_now():
            drawn()
        else:
            self.call_after_refresh(drawn)

    def draw_now(self) -> bool:
        """Lay the screen out and draw it now, not at Textual's next frame tick (True: drawn).
        Textual draws on a timer of 60 ticks a second, and a tick that comes while frames are
        held (Enter's, 1 ms after the key) draws nothing but still counts: the run's frame then
        waited up to 17 ms for the next one, and the run with it (issue 20). The layout is
        forced: the new block's own request for one is still queued behind this message, and
        without it a one-line input's frame would show the input cleared but not the block.
        Textual's private hooks (what the tick calls): tui/textual_compat.py."""
        return draw_now(self)

    def show_runtime_event(self, event: RuntimeEvent) -> None:
        """Live output of this session's scripts, and their tool-call count."""
        self.query_one(OutputPane).show_runtime_event(event, self.session)
        for screen in self.app.screen_stack:  # a sub-agent's open transcript: its scripts' output
            if screen is not self and getattr(screen, "child_session", None) is not None:
                screen.show_runtime_event(event)  # type: ignore[attr-defined]

    def show_kernels(self, kernels: list[KernelInfo], memory: dict[str, int]) -> None:
        """Kernel rows (and each one's resident memory)."""
        self.query_one(KernelsPane).update_kernels(kernels, memory)

    @on(RunBlock.Selected)
    def _show_run(self, event: RunBlock.Selected) -> None:
        if event.block.result is not None:
            self.query_one(OutputPane).show(event.block.result)

    # -- approvals ------------------------------------------------------------------------

    @on(ApprovalNeeded)
    def _approval_needed(self, message: ApprovalNeeded) -> None:
        self._pending_approvals += 1
        self._waiting[message.request.id] = (message.request, message.answer)
        for screen in self._dialogs.values():  # the one shown now: "request 1 of 3" becomes "1 of 4"
            screen.set_position(self._answered_in_burst + 1, self._answered_in_burst + self._pending_approvals)
        self._ask(message.request, message.answer)

    @work(group="approvals", exit_on_error=False)
    async def _ask(self, request: ApprovalRequest, answer: asyncio.Future[ApprovalDecision]) -> None:
        async with self._approval_lock:  # one dialog at a time; the others wait in line
            try:
                if not answer.done():  # else it was withdrawn while it waited
                    await self._show_dialog(request, answer)
            finally:
                self._waiting.pop(request.id, None)
                self._pending_approvals -= 1
                self._answered_in_burst += 1
                if not self._pending_approvals:  # the burst is over
                    self._answered_in_burst, self._rang = 0, False

    async def _show_dialog(self, request: ApprovalRequest, answer: asyncio.Future[ApprovalDecision]) -> None:
        from hermes_tui.tui.screens.approval import ApprovalScreen

        if not self._rang:  # once per burst: three queued requests ring once, not three times
            self._rang = True
            self.app.bell()
        prompt = self.query_one(PromptInput)
        screen = ApprovalScreen(request, position=self._answered_in_burst + 1,
                                total=self._answered_in_burst + self._pending_approvals,
                                typing=time.monotonic() - prompt.last_key_at < TYPING_WINDOW)
        self._dialogs[request.id] = screen
        try:
            decision = await self.app.push_screen_wait(screen)
        finally:
            self._dialogs.pop(request.id, None)
        if not answer.done():
            if decision is None:
                from hermes_tui.runtime.approvals import ApprovalDecision

                decision = ApprovalDecision(choice="deny")
            answer.set_result(decision)
        if decision is not None and decision.whole_run:
            self._deny_queued_of_run(request, decision)

    def _deny_queued_of_run(self, request: ApprovalRequest, decision: ApprovalDecision) -> None:
        """"Deny all of this script": the requests of the same run waiting in line are denied
        at once, before the next dialog opens (the gate refuses its later ones unasked)."""
        from hermes_tui.runtime.approvals import run_of

        run = run_of(request)
        if run is None:
            return
        for other, answer in list(self._waiting.values()):
            if other.id != request.id and run_of(other) == run and not answer.done():
                answer.set_result(decision.model_copy())

    @on(ApprovalWithdrawn)
    def _approval_withdrawn(self, message: ApprovalWithdrawn) -> None:
        screen = self._dialogs.get(message.request_id)
        if screen is not None and screen.is_current:
            screen.dismiss(None)
            self.notify(visible(message.note), severity="warning", markup=False)

    # -- panes ----------------------------------------------------------------------------

    def focus_pane(self, pane: str) -> None:
        """Focus the input (``conversation``), the output log (``output``) or the kernels table.
        Another pane maximised is restored first: focus never goes to a hidden widget."""
        target: Widget
        if pane == "kernels":
            target = self.query_one(KernelsPane).table()
        elif pane == "conversation":
            target = self.query_one(PromptInput)
        elif pane == "output":
            target = self.query_one("#output-log")
        else:
            raise KeyError(pane)
        if self.maximized is not None and self.maximized is not target and self.maximized not in target.ancestors:
            self.minimize()
        # Now, not after the messages already queued (Widget.focus defers): the rest of a burst
        # of keys that was forwarded to the input must reach the input, not the old pane.
        self.set_focus(target)
        if self.focused is not target:  # not focusable this instant (being laid out): as before
            target.focus()

    def on_key(self, event: events.Key) -> None:
        """A printable key typed while no text field has focus (a run was clicked, say) goes to
        the input, unless the focused pane binds it (``r`` in the kernels pane, ``o`` in the output).

        The rule for a burst (fast typing): the first key that is forwarded moves the focus to
        the input at once, so every key after it goes to the input too, pane keys included
        (``print("wow")`` typed into the output pane keeps its ``w`` and ``o``), and so do
        Enter, Tab and the other keys the input handles itself: a terminal hands the app
        ``plain words`` and Enter in one read, all sent to the pane focused then (a sub-agent's
        row, focused again when its transcript closes), and that Enter, checked against the
        input's bindings by then, was lost. A pane key pressed first, or on its own, is the pane's."""
        focused = self.focused
        prompt = self.query_one(PromptInput)
        if focused is prompt and not prompt.read_only and not prompt.saw(event):
            # Sent to the pane that had the focus before an earlier key of the same burst moved
            # it here: the input takes it, as typed there.
            event.stop()
            event.prevent_default()
            prompt.take_key(event)
            return
        if not event.is_printable or not event.character:
            return
        if isinstance(focused, (TextArea, Input)):
            return
        bound = self.active_bindings
        handlers = [node for node in ((focused, *focused.ancestors) if focused else ())
                    if any(hasattr(node, f"key_{name}") or hasattr(node, f"_key_{name}") for name in event.name_aliases)]
        if handlers or any(key in bound for key in event.aliases):
            return
        self.focus_pane("conversation")  # at once: the next keys of a burst go to the input
        self._forward(event, prompt)

    @staticmethod
    def _forward(event: events.Key, prompt: PromptInput) -> None:
        """Type the printable ``event`` into the input (and keep it from any pane's binding)."""
        event.stop()
        event.prevent_default()
        prompt.last_key_at = time.monotonic()
        prompt.insert(event.character or "")

    def toggle_maximize(self) -> None:
        """Maximise the focused pane, or bring the layout back."""
        if self.maximized is not None:
            self.minimize()
            return
        pane = self.focused_pane()
        if pane is not None:
            self.maximize(pane, container=False)

    def focused_pane(self) -> Pane | None:
        """The pane that holds the focus, if any."""
        focused = self.focused
        return next((w for w in (focused, *(focused.ancestors if focused else ()))
                     if isinstance(w, (ConversationPane, OutputPane, KernelsPane))), None)

    def focused_help(self) -> str:
        """Which help page fits the focused pane: conversation, output or kernels."""
        pages: dict[type, str] = {OutputPane: "output", KernelsPane: "kernels"}
        return pages.get(type(self.focused_pane()), "conversation")
