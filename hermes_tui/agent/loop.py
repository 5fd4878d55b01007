"""The turn loop: a message in, model replies and tool calls out, everything stored first.

One :class:`Agent` serves one session. Turns are queued and run one at a time; a message
typed by the user while a turn runs interrupts it (a running script ends with SPEC's
``[execution interrupted — user sent a new message]``), injected ones wait their turn.

Durability: each thing the app shows — the user's message, the reply as it streams, a tool
call, its result — is committed to the sessions database *before* the event that shows it is
sent, so ``kill -9`` loses nothing that was on screen. :meth:`Agent.load` rebuilds a session
(:mod:`.restore`); :meth:`Agent.resume_pending` asks a pending approval again and the turn goes on.

With no model configured the agent runs what is typed as Python (an ``execute_code`` call per
turn), and a ``!cmd`` typed by the user is a turn too (a ``terminal`` call): both are stored
the same way, so they survive ``--resume`` and appear in ``export``.

The events it sends are in :mod:`.events`; what the model is sent, in :mod:`.history`.
"""

from __future__ import annotations

import asyncio
import json
import math
import secrets
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hermes_tui.storage import sessions as db
from hermes_tui.storage.writer import SessionStore
from hermes_tui.agent.approvals import ApprovalRecorder, ask_again
from hermes_tui.agent.budget import DEFAULT_MAX_REPLY_TOKENS, INPUT_MARGIN, MIN_REPLY_TOKENS, Budget, Grant, grant
from hermes_tui.agent.events import (
    Listener,
    SHELL_PREFIX,
    Notice,
    ReplyDone,
    ReplyStatus,
    ReplyText,
    ToolFinished,
    ToolStarted,
    ToolStatus,
    TurnEnded,
    TurnKind,
    TurnQueued,
    TurnStarted,
    TurnStatus,
    UsageUpdated,
)
from hermes_tui.agent.models.hermes_format import HermesStreamParser, new_call_id
from hermes_tui.agent.history import History
from hermes_tui.agent.models.providers import Provider, ProviderError, ProviderSettings, make_provider
from hermes_tui.agent.restore import LoadedSession, PendingCall, load_session
from hermes_tui.agent.tools import MODEL_TOOLS, InvalidCall, ToolCall, declarations, validate_call, web_tools_off
from hermes_tui.agent.usage import (
    CallUsage, Tally, Totals, context_window, dollars, estimate_cost, request_chars, warm_prices,
)
from hermes_tui.config import SubagentsConfig
from hermes_tui.runtime.executor import INTERRUPT_NOTICE
from hermes_tui.runtime.models import ExecResult, Origin
from hermes_tui.runtime.tools.dispatch import HEAVY_IMPORTS, preloaded_blocking
from hermes_tui.base.units import plural

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from hermes_tui.runtime import Runtime

SYSTEM_PROMPT = (
    "You are an agent working in the user's terminal through hermes-tui. You act by writing Python: "
    "execute_code runs a script in a persistent kernel (variables and imports persist between calls) "
    "where `from hermes_tools import ...` gives web_search, web_extract, read_file, write_file, "
    "search_files, patch and terminal. Batch many steps into one script and print only what you need. "
    "Shell commands may need the user's approval; a denied one returns status 'blocked' with the reason. "
    "Reply in Markdown."
)
MAX_RESULT_CHARS = 100_000
"""A tool result longer than this reaches the model cut head and tail (the full one is stored)."""
NOT_RUN = {"error": "not run: the turn was interrupted"}


@dataclass
class _Turn:
    id: str
    text: str
    origin: Origin
    """user, injected or automation: decides what is approved first (kept on retry and resume)."""
    kind: TurnKind = "message"
    step: str = "new"
    """new, retry (send the history again) or resume (answer what was pending)."""
    interrupted: bool = False
    spent: float = 0.0
    """What this turn's priced model calls cost (``agent.max_turn_cost_usd``)."""
    notice: str = INTERRUPT_NOTICE
    """How an interrupted script of this turn ends (why it was interrupted)."""
    task: asyncio.Future[Any] | None = None
    """The model's stream or a top-level tool call now running (cancelled on interrupt)."""



def usage_row(usage: CallUsage) -> dict[str, Any]:
    """A model call's usage as the store keeps it."""
    return {"provider": usage.provider, "model": usage.model, "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens, "cache_read_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens, "reasoning_tokens": usage.reasoning_tokens,
            "cost_usd": usage.cost_usd, "cost_source": usage.cost_source, "estimated": int(usage.estimated),
            "latency_s": usage.latency_s}


def _content(result: dict[str, Any]) -> str:
    """A tool result as the model reads it: JSON, cut in the middle past ``MAX_RESULT_CHARS``."""
    content = json.dumps(result, ensure_ascii=False, default=str)
    if len(content) > MAX_RESULT_CHARS:
        half = MAX_RESULT_CHARS // 2
        content = (content[:half] + f"\n... [{len(content) - MAX_RESULT_CHARS} characters cut] ...\n"
                   + content[-half:])
    return content


# -- the agent -----------------------------------------------------------------------------


class Agent:
    """The conversation of one session.

    Args:
        runtime: runs the tools (and owns the approval gate).
        store: the sessions database.
        session_id: this session's id (also the kernels' session name).
        settings: the model, or None to run typed input as Python.
        listener: receives every event of :mod:`.events`, after it is stored.
        cwd: the working directory of scripts and commands.
        max_steps: model calls per turn (``agent.max_steps``).
        max_invalid: malformed tool calls in a row before the turn is stopped.
        system_prompt: replaces the built-in one.
        approvals: records this session's approvals (the runtime's approver); None when the
            runtime's approver records nothing.
        budget: the cost ceilings (``agent.max_cost_usd``, ``max_turn_cost_usd``, ``--max-cost``).
        max_context_tokens: tokens of conversation sent at most (``agent.max_context_tokens``).
        subagents: ``agent.subagents`` (``delegate_task``: :mod:`.subagents`).
        depth: 0 for the user's agent, 1 for its sub-agents...; ``delegate_task`` is offered
            while ``depth < subagents.max_depth``.
        tool_names: the tools the model is given (a sub-agent's task may narrow them).
        ledger: a sub-agent's parent: its spending is the parent's (ceilings, totals, usage rows).
    """

    def __init__(
        self, runtime: Runtime, store: SessionStore, session_id: str, *, settings: ProviderSettings | None,
        listener: Listener, cwd: str, max_steps: int = 30, max_invalid: int = 3, system_prompt: str | None = None,
        provider: Provider | None = None, max_context_chars: int = 400_000,
        approvals: ApprovalRecorder | None = None, budget: Budget | None = None, max_context_tokens: int | None = None,
        subagents: SubagentsConfig | None = None, depth: int = 0, tool_names: tuple[str, ...] = MODEL_TOOLS,
        ledger: Agent | None = None,
    ) -> None:
        self.runtime = runtime
        self.store = store
        self.session_id = session_id
        self.settings = settings
        self.provider = provider or (make_provider(settings) if settings else None)
        self.listener = listener
        self.cwd = cwd
        self.max_steps = max_steps
        self.max_invalid = max_invalid
        self.approvals = approvals
        self.history = History(max_context_chars, max_context_tokens)
        """What the model is sent (the newest turns within ``max_context_chars``; all is stored)."""
        self.budget = budget or Budget()
        self.totals = Totals(max_cost_usd=self.budget.max_cost_usd)
        """What this session's model calls used and cost (kept across ``--resume``)."""
        self.reserved = 0.0
        """What model calls running now (this agent's and its sub-agents') could cost at most:
        held against the cost ceilings until each is counted (kept on the root agent)."""
        self.holding = False
        """This agent's model call holds a reservation now (it is not waiting for a share)."""
        self._retired: list[Provider] = []
        self.paused = False
        """Set by :meth:`pause`: the running turn stops at its next tool result, unstored."""
        self.subagents = subagents or SubagentsConfig()
        self.depth = depth
        self.ledger = ledger
        self.web_off = web_tools_off(runtime.config.web)
        """Web tools with no backend: not declared to the model (issue 32)."""
        self.tool_names = tuple(t for t in tool_names if t not in self.web_off) + (
            ("delegate_task",) if depth < self.subagents.max_depth else ())
        self.children: set[Agent] = set()
        """Sub-agents running now (interrupted with this agent)."""
        self._ask_inner_first = True
        self.tools: list[dict[str, Any]] = []
        """The tools declared to the model (built in :meth:`open`)."""
        self._system = system_prompt or SYSTEM_PROMPT
        self._queue: deque[_Turn] = deque()
        self._wake = asyncio.Event()
        self._current: _Turn | None = None
        self._worker: asyncio.Task[None] | None = None
        self._last_failed: _Turn | None = None
        self._pending: list[PendingCall] = []
        self.on_tool_shown: Callable[[], Awaitable[None]] | None = None
        """A front end's wait until the tool call just started (:class:`ToolStarted`) is on
        screen; the call's tool runs after it. The app draws a run's block first, so the frame
        that shows it does not compete with the run's output for the CPU (issue 20)."""

    # -- lifecycle ----------------------------------------------------------------------

    async def open(self) -> None:
        """Create the session row if new; start serving queued turns."""
        if self.settings is not None:
            # The runtime's start imports what the tools and httpx's transport need, in a thread:
            # it ends before this agent imports anything (two threads importing the same modules
            # at once hand one of them a half-made module: "partially initialized module 'httpx'").
            await self.runtime.start()
            self.totals.context_window = await asyncio.to_thread(self._prepare, self.settings)
        await self.store.call(db.create_session, self.session_id, self.settings.name if self.settings else None,
                              self.settings.model if self.settings else None, self.cwd)
        if self.approvals is not None:
            self.approvals.attach(self.session_id, self.store)
        if self._worker is None:
            self._worker = asyncio.create_task(self._serve(), name=f"agent-{self.session_id}")

    async def aclose(self) -> None:
        """Stop serving (a running turn is cancelled; what it showed is stored)."""
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)
            self._worker = None
        if self.approvals is not None:
            self.approvals.detach(self.session_id)
        for provider in [*self._retired, *([self.provider] if self.provider else [])]:
            await provider.aclose()

    def _prepare(self, settings: ProviderSettings) -> int | None:
        """Off the loop, one agent at a time: import the provider's SDK, build the tools'
        schemas (importing every tool: httpx, the HTML parser), read the price table; returns
        the model's context window. Sub-agents opening at once would otherwise import the same
        modules from several threads, and an import cycle across threads hands one of them a
        half-made module ("partially initialized module 'httpx'")."""
        # The runtime's imports ahead of the tools first, whole: a model's requests import
        # httpx's transport too, and must not meet that thread halfway.
        preloaded_blocking()
        with HEAVY_IMPORTS:
            if self.provider is not None:
                self.provider.load_sdk()
                if not self.tools:
                    self.tools = declarations(self.tool_names, self.web_off)
            warm_prices()
            return context_window(settings.model, settings.name, settings.base_url, settings.context_length)

    async def use_model(self, settings: ProviderSettings) -> None:
        """Talk to ``settings`` from the next model call on (``/model``); recorded in the session."""
        if self.provider is not None:
            self._retired.append(self.provider)  # a running call finishes on it; closed with the agent
        self.settings = settings
        self.provider = make_provider(settings)
        self.totals.context_window = await asyncio.to_thread(self._prepare, settings)
        await self.store.call(db.set_session_model, self.session_id, settings.name, settings.model)
        self.listener(UsageUpdated("", None, self.totals))

    async def set_budget(self, max_cost_usd: float | None, *, turn: bool = False) -> None:
        """Change a ceiling for this session (``/budget``): the session's is stored with it."""
        if turn:
            self.budget.max_turn_cost_usd = max_cost_usd
            self.budget.turn_setting = "/budget turn"
        else:
            self.budget.max_cost_usd = self.totals.max_cost_usd = max_cost_usd
            self.budget.session_setting = "/budget"
            await self.store.call(db.set_session_budget, self.session_id, max_cost_usd)
        self.listener(UsageUpdated("", None, self.totals))

    def pause(self) -> None:
        """Stop the running turn where it waits for approval (a headless run pausing): the tool
        call that asked is not recorded as finished, so ``resume`` runs it again once it is
        answered; the turn ends with status ``paused`` and stays resumable."""
        self.paused = True

    @property
    def busy(self) -> bool:
        """True while a turn runs."""
        return self._current is not None

    # -- turns in -----------------------------------------------------------------------

    async def submit(self, text: str, origin: Origin = "user", kind: TurnKind | None = None) -> int:
        """Queue a turn; returns how many turns are ahead of it (0 = runs now).

        ``kind``: ``message`` (to the model), ``python`` (run as a script) or ``shell`` (``text``
        is a command for ``terminal``); by default a message with a model, Python without.
        A message typed by the user while a turn runs interrupts that turn first (SPEC §6: its
        script gets SIGINT, so the kernel keeps its state); Python and shell commands typed
        while something runs wait their turn, as a REPL queues input — Esc or Ctrl+C
        interrupts. Injected and automation turns wait.
        """
        kind = kind or ("message" if self.provider is not None else "python")
        turn = _Turn(id=secrets.token_hex(6), text=text, origin=origin, kind=kind)
        ahead = len(self._queue) + (1 if self._current else 0)
        if origin == "user" and kind == "message" and self._current is not None:
            await self.interrupt()
            ahead = len(self._queue)
        self._queue.append(turn)
        if ahead:
            self.listener(TurnQueued(turn.id, self._shown(turn), origin, ahead))
        self._wake.set()
        return ahead

    def remove_queued(self, turn_id: str) -> bool:
        """Take a turn that has not started out of the queue; False if it is not waiting."""
        for turn in self._queue:
            if turn.id == turn_id and turn.step == "new":
                self._queue.remove(turn)
                return True
        return False

    async def interrupt(self, notice: str = INTERRUPT_NOTICE) -> bool:
        """End the running turn: a running script ends as interrupted (``notice`` closes its
        output: SPEC's for a new message, :data:`STOP_NOTICE` for Esc), a streaming reply stops."""
        turn = self._current
        if turn is None:
            return False
        again = turn.interrupted
        turn.interrupted = True
        turn.notice = notice
        # Forwarded every time: a script that started after the first Esc (its start was being
        # stored) still gets it, and a second Esc during the grace ends it at once.
        await self.runtime.interrupt(self.session_id, notice)
        for child in list(self.children):
            await child.interrupt(notice)
        if again:
            return False
        if turn.task is not None and not turn.task.done():
            turn.task.cancel()  # the model's stream, or a top-level command (its process group is killed)
        return True

    async def retry(self) -> bool:
        """Send the conversation to the model again after a failed request."""
        turn = self._last_failed
        if turn is None or self._current is not None or self.provider is None:
            return False
        self._last_failed = None
        self._queue.appendleft(_Turn(id=turn.id, text="", origin=turn.origin, step="retry"))
        self._wake.set()
        return True

    @staticmethod
    def _shown(turn: _Turn) -> str:
        return SHELL_PREFIX + turn.text if turn.kind == "shell" else turn.text

    async def _serve(self) -> None:
        while True:
            while not self._queue:
                self._wake.clear()
                await self._wake.wait()
            turn = self._queue.popleft()
            self._current = turn
            status: TurnStatus
            try:
                if turn.step == "retry":
                    await self._go_on_with_children(turn)
                    status = await self._steps(turn)
                elif turn.step == "resume":
                    status = await self._resume(turn)
                else:
                    status = await self._run(turn)
            except asyncio.CancelledError:
                if self._worker is not None and self._worker.cancelling():
                    raise
                status = "interrupted"
            except _Paused:
                status = "paused"
            except Exception as exc:  # a bug must not lose the session: say it, keep going
                self.listener(Notice(turn.id, f"The turn failed: {type(exc).__name__}: {exc}"))
                status = "error"
            finally:
                self._current = None
                if self.depth == 0:  # checkpoints from now on belong to no turn (a !cmd's are in their own)
                    self.runtime.checkpoints.turn(self.session_id, None)
            if status in ("error", "budget"):
                self._last_failed = turn
            await self.store.call(db.end_turn, turn.id, status)
            self.listener(TurnEnded(turn.id, status))

    async def _run(self, turn: _Turn) -> TurnStatus:
        shown = self._shown(turn)
        if self.depth == 0:  # a checkpoint before the turn (stored first): /rollback N goes back to here
            book = self.runtime.checkpoints
            book.turn(self.session_id, turn.id)
            await book.begin(self.session_id, "turn", " ".join(shown.split())[:60], cwd=self.cwd, turn_id=turn.id,
                             mode=self.runtime.config.code_execution.mode, hold=False)
        await self.store.call(db.start_turn, self.session_id, turn.id, turn.origin, shown)
        self.history.append({"role": "user", "content": shown, "origin": turn.origin})
        self.history.trim()
        self.listener(TurnStarted(turn.id, shown, turn.origin, queued=len(self._queue), kind=turn.kind))
        if turn.kind == "message":
            return await self._steps(turn)
        # Python typed with no model, or a !cmd: stored as a reply that calls execute_code or
        # terminal, so a resumed session, an export and the model read it like a model's call.
        name, arguments = ("terminal", {"command": turn.text}) if turn.kind == "shell" else \
            ("execute_code", {"code": turn.text})
        call = ToolCall(new_call_id(), name, json.dumps(arguments))
        message_id = await self.store.call(db.add_message, self.session_id, turn.id, "assistant", None,
                                           tool_calls=[call.as_openai()])
        self.history.append({"role": "assistant", "content": None, "tool_calls": [call.as_openai()]})
        await self._run_calls(turn, message_id, [call])
        return "interrupted" if turn.interrupted else "done"

    # -- the model loop -----------------------------------------------------------------

    async def _steps(self, turn: _Turn) -> TurnStatus:
        invalid_streak = 0
        for _ in range(self.max_steps):
            if turn.interrupted:
                return "interrupted"
            refused, granted = self._over_budget(turn)
            if refused is not None:
                self.listener(Notice(turn.id, refused, "warning"))
                return "budget"
            owner = self.root  # the call's worst case is held against the ceiling while it runs:
            held = granted.worst if granted else 0.0  # sub-agents calling at once must not all fit the same room
            owner.reserved += held
            self.holding = True
            try:
                reply = await self._reply(turn, granted.max_tokens if granted else None)
            finally:
                owner.reserved -= held
                self.holding = False
            if reply is None:
                return "interrupted" if turn.interrupted else "error"
            message_id, text, calls = reply
            if not calls:
                return "done"
            invalid = await self._run_calls(turn, message_id, calls)
            invalid_streak = invalid_streak + invalid if invalid == len(calls) else 0
            if turn.interrupted:
                return "interrupted"
            if invalid_streak >= max(self.max_invalid, 1):
                self.listener(Notice(turn.id, f"The model sent {plural(invalid_streak, 'malformed tool call')} in a row; "
                                              "the turn was stopped. Rephrase, or /retry."))
                return "stopped"
        self.listener(Notice(turn.id, f"The turn reached agent.max_steps ({plural(self.max_steps, 'model call')}) and was "
                                      "stopped. Say 'continue' to go on, or raise agent.max_steps.", "warning"))
        return "stopped"

    def _over_budget(self, turn: _Turn) -> tuple[str | None, Grant | None]:
        """Why the next model call may not be made (not even a short reply fits under a
        ceiling), or None with what the call may spend: its ``max_tokens`` and the worst case to
        hold while it runs (None with no ceiling or no known price). A sub-agent is held to its
        parent's ceilings, with what the parent and all its children have spent and what their
        calls running now hold; what is left is shared with the other agents that may call."""
        owner = self.root
        if not owner.budget.active or self.settings is None:
            return None, None
        system, messages, tools = self.history.request(self._system, self.tools, self.settings.tool_format == "hermes")
        sent = math.ceil(self.history.tokens_for(request_chars(system, messages, tools)) * INPUT_MARGIN)
        prices = self._prices(sent)
        if prices is None and self.ledger is not None and owner.settings is not None \
                and self.settings.model != owner.settings.model:
            # A sub-agent on another model with no known price would spend past the ceiling unseen.
            return (f"No price is known for {self.settings.model}, so a sub-agent cannot use it while a cost ceiling "
                    "is set: give the task no model (the parent's is priced), or set model.pricing."), None
        if prices is None:
            if not owner.budget.warned_unpriced:
                owner.budget.warned_unpriced = True
                self.listener(Notice(turn.id, f"No price is known for {self.settings.model}, so the cost ceiling "
                                              "cannot be held: set model.pricing (input_per_mtok, output_per_mtok) "
                                              "to enforce it.", "warning"))
            return None, None
        input_cost, output_price = prices
        cap = self.settings.max_tokens or DEFAULT_MAX_REPLY_TOKENS
        current = owner._current if self.ledger is not None else turn  # a sub-agent spends its root's turn
        session_spent = owner.totals.cost_usd + owner.reserved
        turn_spent = (current.spent if current else 0.0) + owner.reserved
        minimum = input_cost + min(MIN_REPLY_TOKENS, cap) * output_price
        refused = owner.budget.refuse(session_spent, turn_spent, minimum)
        if refused is not None:
            return refused, None
        room = owner.budget.room(session_spent, turn_spent)
        granted = grant(room, room / owner._callers(), input_cost, output_price, cap)
        if granted is None:  # refuse() and grant() agree up to a float's rounding: refused with the room's figure
            return owner.budget.refuse(session_spent, turn_spent, max(minimum, room) + 1e-9), None
        return None, granted

    def _prices(self, input_tokens: int) -> tuple[float, float] | None:
        """The input's worst cost and an output token's price, on the dearest model of the
        chain that may answer (a fallback may cost more than the main model); None when the
        main model's price is not known."""
        found = None
        for settings in (self.settings, *(self.settings.fallbacks if self.settings else ())):
            assert settings is not None
            price = estimate_cost(input_tokens, 0, settings.model, settings.name, settings.base_url, settings.pricing)
            per_mtok = estimate_cost(input_tokens, 1_000_000, settings.model, settings.name, settings.base_url,
                                     settings.pricing)
            if price is None or per_mtok is None:
                if found is None:
                    return None
                continue
            pair = (price, (per_mtok - price) / 1_000_000)
            found = pair if found is None else (max(found[0], pair[0]), max(found[1], pair[1]))
        return found

    def _callers(self) -> int:
        """Agents of this tree that may make a model call next and hold nothing now: each
        running agent with no sub-agent running under it (a parent waits for its children). A
        sub-agent counts from when its parent starts it, before its turn is under way: the
        first of three children to call must not take the room of the two still starting."""
        count, stack = 0, [self]
        while stack:
            agent = stack.pop()
            if agent.children:
                stack.extend(agent.children)
            elif (agent._current is not None or agent.ledger is not None) and not agent.holding:
                count += 1
        return max(count, 1)

    @property
    def root(self) -> Agent:
        """The user's agent this one works for (itself, or its sub-agents' top parent)."""
        agent = self
        while agent.ledger is not None:
            agent = agent.ledger
        return agent

    def make_child(self, session: str, settings: ProviderSettings | None, listener: Listener, max_steps: int,
                   tool_names: tuple[str, ...], system_prompt: str) -> Agent:
        """A sub-agent of this agent (:mod:`.subagents`): its spending is this agent's. On the
        same model it starts from what this agent learnt of it (tokens per character of a
        request), so its first calls are not estimated as free."""
        child = Agent(self.runtime, self.store, session, settings=settings, listener=listener, cwd=self.cwd,
                      max_steps=max_steps, system_prompt=system_prompt, approvals=self.approvals,
                      depth=self.depth + 1, subagents=self.subagents, tool_names=tool_names, ledger=self)
        if settings is not None and self.settings is not None and settings.model == self.settings.model:
            child.history.tokens_per_char = self.history.tokens_per_char
        return child

    def absorb(self, usage: CallUsage) -> None:
        """A sub-agent's call: counted in this session's and this turn's spending (not its
        context: the child's conversation is not this one's)."""
        Tally.add(self.totals, usage)
        if self._current is not None:
            self._current.spent += usage.cost_usd or 0.0
        self.listener(UsageUpdated(self._current.id if self._current else "", None, self.totals))

    def judge_refusal(self, estimate: float) -> str | None:
        """Why this session's ceilings leave no room for an approval judge's call estimated at
        ``estimate`` dollars (None: they do, or there is none)."""
        owner = self.root
        if not owner.budget.active:
            return None
        current = owner._current
        passed = owner.budget.over(owner.totals.cost_usd + owner.reserved,
                                   (current.spent if current else 0.0) + owner.reserved, estimate)
        return None if passed is None else \
            f"the cost ceiling is reached: {passed}, and the judge's call could cost up to {dollars(estimate)}"

    async def charge_judge(self, usage: CallUsage) -> None:
        """An approval judge's call (``approvals.mode: smart``): stored in this session's usage,
        under the turn it judged for, and counted under its ceilings."""
        owner = self.root
        turn = owner._current.id if owner._current is not None else None
        await self.store.call(db.add_usage, owner.session_id, turn, None, usage_row(usage))
        owner.absorb(usage)

    def intent(self) -> str | None:
        """What the person asked in the turn under way (None for an injected turn: its words
        are not the person's)."""
        turn = self.root._current
        if turn is None or turn.origin == "injected":
            return None
        return turn.text

    async def _account(self, turn: _Turn, reply_id: int, usage: CallUsage, sent_chars: int) -> None:
        """Store a call's usage with its reply, count it, and tell the front end. A sub-agent's
        is stored in its parent's session, under the parent's turn: a turn's cost includes its
        children's."""
        owner = self.root
        owner_turn = owner._current.id if self.ledger is not None and owner._current is not None else turn.id
        await self.store.call(db.add_usage, owner.session_id, owner_turn, reply_id if owner is self else None,
                              usage_row(usage))
        self.totals.add(usage)
        turn.spent += usage.cost_usd or 0.0
        if not usage.estimated:
            self.history.calibrate(usage.input_tokens, sent_chars)
        self.listener(UsageUpdated(turn.id, usage, self.totals))
        if self.ledger is not None:
            owner.absorb(usage)

    async def _reply(self, turn: _Turn, max_tokens: int | None = None) -> tuple[int, str, list[ToolCall]] | None:
        """One model call, streamed into a stored reply; None if it failed or was interrupted.
        ``max_tokens``: the longest reply the provider may send (a cost ceiling's grant)."""
        assert self.provider is not None and self.settings is not None
        reply_id = await self.store.call(db.add_message, self.session_id, turn.id, "assistant", "", status="streaming")
        stream = _StreamedText(self, turn.id, reply_id)
        hermes = self.settings.tool_format == "hermes"
        parser = HermesStreamParser() if hermes else None

        async def on_text(piece: str) -> None:
            stream.add(parser.feed(piece) if parser else piece)

        system, messages, tools = self.history.request(self._system, self.tools, hermes)
        sent_chars = request_chars(system, messages, tools)
        status: ReplyStatus = "done"
        error, result = None, None
        try:
            result = await _interruptible(turn, self.provider.complete(system, messages, tools, on_text,
                                                                          max_tokens))
        except _Interrupted:
            status = "interrupted"
        except ProviderError as exc:
            status, error = "error", str(exc)
        if parser is not None:
            stream.add(parser.finish())
        calls = [*result.calls, *(parser.calls if parser else ())] if result is not None else []
        text = stream.text
        if status == "interrupted":
            text = (text + "\n\n" if text else "") + "*[interrupted]*"
        await stream.close(text, status, [c.as_openai() for c in calls] or None,
                           result.reasoning if result is not None else None)
        if result is not None and result.usage is not None:
            await self._account(turn, reply_id, result.usage, sent_chars)
        if result is not None and result.note:
            self.listener(Notice(turn.id, result.note, "warning"))  # e.g. which fallback provider answered
        if error is not None:
            self.listener(Notice(turn.id, error))
        if status != "done":
            if status == "interrupted" and text.strip():  # what it said before the cut is context
                self.history.append({"role": "assistant", "content": text})
            return None
        self.history.append({"role": "assistant", "content": text or None,
                             "tool_calls": [c.as_openai() for c in calls] or None})
        return reply_id, text, calls

    # -- tool calls ---------------------------------------------------------------------

    async def _run_calls(self, turn: _Turn, message_id: int | None, calls: list[ToolCall]) -> int:
        """Run the calls in order (after an interrupt the rest are not run); returns how many
        were malformed."""
        invalid = 0
        for index, call in enumerate(calls):
            if turn.interrupted:
                await self._finish_call(turn, call, NOT_RUN, "interrupted")
                continue
            try:
                parsed = validate_call(call, self.tool_names)
            except InvalidCall as exc:
                invalid += 1
                await self.store.call(db.start_tool_call, self.session_id, turn.id, message_id or 0, call.id,
                                      call.name or "?", call.arguments)
                await self._finish_call(turn, call, {"error": f"{exc}. Fix the call and try again."}, "invalid")
                continue
            await self.store.call(db.start_tool_call, self.session_id, turn.id, message_id or 0, call.id, call.name,
                                  call.arguments)
            self.listener(ToolStarted(turn.id, call.id, call.name, parsed.model_dump()))
            if self.on_tool_shown is not None:
                await self.on_tool_shown()
            try:
                await self._execute(turn, call, parsed.model_dump())
            except _Paused:
                await self._ask_ahead(turn, message_id, calls[index + 1:])
                raise
        return invalid

    async def _ask_ahead(self, turn: _Turn, message_id: int | None, calls: list[ToolCall]) -> None:
        """The run paused at a call: the step's later calls ask their questions now too (none
        runs), so a person answers every request of the step at once. Each is stored as
        started, so its pending request is kept for the resume, which runs them in order."""
        for call in calls:
            try:
                parsed = validate_call(call, self.tool_names)
            except InvalidCall:
                continue  # said, and stored, when the resume reaches it
            await self.store.call(db.start_tool_call, self.session_id, turn.id, message_id or 0, call.id, call.name,
                                  call.arguments)
            await self.runtime.ask_ahead(call.name, parsed.model_dump(), session=self.session_id, cwd=self.cwd,
                                         origin=turn.origin, call_id=call.id)

    async def _execute(self, turn: _Turn, call: ToolCall, args: dict[str, Any]) -> None:
        if turn.interrupted:  # interrupted while the call's start was being stored: it never runs
            await self._finish_call(turn, call, NOT_RUN, "interrupted")
            return
        if call.name == "delegate_task":
            from hermes_tui.agent.subagents import DelegateArgs, delegate

            outcome = await delegate(self, turn, call.id, DelegateArgs.model_validate(args))
            status: ToolStatus = "interrupted" if turn.interrupted else "success"
            await self._finish_call(turn, call, outcome, status)
            return
        if call.name == "execute_code":
            result = await self.runtime.execute_code(args["code"], reset=args["reset"], session=self.session_id,
                                                     cwd=self.cwd, origin=turn.origin, call_id=call.id,
                                                     display=turn.kind == "python")  # typed: as the REPL does
            await self._finish_call(turn, call, result.model_dump(mode="json"), result.status, result)
            return
        given = {k: v for k, v in args.items() if v is not None}
        try:
            outcome = dict(await _interruptible(turn, self.runtime.call_tool(
                call.name, given, session=self.session_id, cwd=self.cwd, origin=turn.origin, call_id=call.id,
                typed=turn.kind == "shell")))
            status = "error" if outcome.get("error") else "success"
        except _Interrupted:
            outcome = {"output": "", "exit_code": -1, "status": "interrupted", "error": turn.notice}
            status = "interrupted"
        await self._finish_call(turn, call, outcome, status)

    async def _finish_call(self, turn: _Turn, call: ToolCall, result: dict[str, Any], status: ToolStatus,
                           exec_result: ExecResult | None = None) -> None:
        if self.paused:  # not finished: its approval is pending and resume runs it again
            raise _Paused
        content = _content(result)
        await self.store.call(db.finish_tool_call, self.session_id, turn.id, call.id, status, result, content,
                              exec_result.exec_id if exec_result else None)
        self.history.append({"role": "tool", "tool_call_id": call.id, "content": content})
        self.listener(ToolFinished(turn.id, call.id, call.name or "?", result, exec_result))

    async def _go_on_with_children(self, turn: _Turn) -> None:
        """A turn goes on after it stopped (``/retry``, ``resume``): if it stopped after a
        ``delegate_task`` whose children the cost ceiling stopped, those children go on first,
        each with its own conversation, and the model reads their new results in its place."""
        from hermes_tui.agent.subagents import resume_stopped, stopped_at_the_ceiling

        messages = self.history.messages
        tail = len(messages)
        while tail and messages[tail - 1]["role"] == "tool":
            tail -= 1
        if not tail or tail == len(messages):
            return
        names = {c.get("id"): (c.get("function") or {}).get("name") for c in messages[tail - 1].get("tool_calls") or ()}
        for message in messages[tail:]:
            call_id = message.get("tool_call_id")
            # no id (a malformed row): the new result could be stored nowhere (`id = NULL`)
            if call_id is None or names.get(call_id) != "delegate_task" or turn.interrupted:
                continue
            try:
                outcome = json.loads(message["content"])
            except (TypeError, ValueError):  # cut to MAX_RESULT_CHARS: left as it is
                continue
            if not stopped_at_the_ceiling(outcome):
                continue
            result = await resume_stopped(self, turn, call_id, outcome)
            message["content"] = content = _content(result)
            await self.store.call(db.replace_tool_result, self.session_id, call_id, result, content)
            self.listener(ToolFinished(turn.id, call_id, "delegate_task", result, None))

    # -- restoring a session ------------------------------------------------------------

    async def load(self) -> LoadedSession | None:
        """Read this session back (None if it is new): the history the model sees, interrupted
        turns marked, and tool calls whose approval was pending (answer them with
        :meth:`resume_pending`)."""
        loaded = await load_session(self.store, self.session_id)
        if loaded is None:
            return None
        for row in loaded.stored.usage:  # what was spent before: budgets and the top bar go on from it
            self.totals.add(CallUsage.from_row(row))
        if loaded.stored.info.max_cost_usd is not None and self.budget.session_setting != "--max-cost":
            self.budget.max_cost_usd = self.totals.max_cost_usd = loaded.stored.info.max_cost_usd
            self.budget.session_setting = "/budget"
        self.history.replace(list(loaded.history))
        self._pending = list(loaded.pending)
        turns = loaded.stored.turns
        if not loaded.pending and turns and (turns[-1]["id"] in loaded.interrupted_turns
                                             or turns[-1]["status"] in ("budget", "error")):
            # The app died in its newest turn (a reply cut, a call never finished), or the turn
            # stopped at a ceiling or failed: /continue (or /retry) goes on with it, as
            # `hermes-tui resume` does for a headless run.
            self._last_failed = _Turn(id=turns[-1]["id"], text="", origin=turns[-1]["origin"], step="retry")
        return loaded

    async def reread(self) -> LoadedSession | None:
        """Read the conversation back after a rewind (``/rollback --conversation``): the model
        is sent what the store shows now (hidden messages left out)."""
        loaded = await load_session(self.store, self.session_id)
        self.history.replace(list(loaded.history) if loaded is not None else [])
        return loaded

    def continue_turn(self, turn_id: str, origin: Origin) -> None:
        """Go on with a turn the process died in (no approval was waiting): the model is sent
        the conversation as stored, as :meth:`retry` does."""
        self._queue.append(_Turn(id=turn_id, text="", origin=origin, step="retry"))
        self._wake.set()

    async def resume_pending(self, ask_inner_first: bool = True) -> None:
        """Queue the turns with pending approvals: each approval is asked again, its tool call
        runs (or is refused), and the turn goes on with the model.

        ``ask_inner_first=False`` (a headless resume, whose answers were given beforehand): a
        ``terminal()`` call that was pending inside a script (its own question, or "run outside
        the sandbox?") is not asked before the script runs again; the script re-runs and each of
        its commands is answered when it comes (an approved one runs, a refused one gets
        ``BLOCKED`` while the rest of the script goes on).
        """
        self._ask_inner_first = ask_inner_first
        for turn_id, origin in dict.fromkeys((p.turn_id, p.origin) for p in self._pending):
            self._queue.append(_Turn(id=turn_id, text="", origin=origin, step="resume"))
        self._wake.set()

    async def _resume(self, turn: _Turn) -> TurnStatus:
        pending = [p for p in self._pending if p.turn_id == turn.id]
        self._pending = [p for p in self._pending if p.turn_id != turn.id]
        for item in pending:
            if turn.interrupted:
                await self._finish_call(turn, item.call, NOT_RUN, "interrupted")
                continue
            # A command a script ran: a terminal() call, or one the sandbox stopped ("run outside the
            # sandbox?"). Either way the script itself had been allowed and ran up to it.
            inner = (item.request is not None and item.request.kind in ("terminal", "sandbox")
                     and item.request.exec_id is not None)
            if item.request is not None and (self._ask_inner_first or not inner):
                self.listener(Notice(turn.id, "This approval was waiting when the session stopped (the app closed, "
                                              "or a headless run paused). If it is allowed, "
                                              f"{item.call.name} runs again from its start and the turn goes on.",
                                     "warning"))
                refused = await ask_again(self.runtime, self.store, item)
                if refused is not None:
                    self.listener(ToolStarted(turn.id, item.call.id, item.call.name, _arguments_of(item.call)))
                    await self._finish_call(turn, item.call, refused, "blocked")
                    continue
            elif inner and item.call.name == "execute_code":
                # The script had been allowed to run (it reached the command that waited): its
                # re-run passes the script's own check once; its commands are asked as they come.
                code = _arguments_of(item.call).get("code")
                if isinstance(code, str):
                    self.runtime.allow_once(self.session_id, code)
            await self._run_calls(turn, None, [item.call])
        if self.provider is None or turn.interrupted:
            return "interrupted" if turn.interrupted else "done"
        return await self._steps(turn)


class _Interrupted(Exception):
    """The turn was interrupted while this step ran."""


class _Paused(Exception):
    """The turn paused at a request for approval (:meth:`Agent.pause`)."""


async def _interruptible(turn: _Turn, step: Any) -> Any:
    """Run ``step`` as the turn's current task: :meth:`Agent.interrupt` cancels it and this
    raises :class:`_Interrupted`; cancelling the caller (the app closing) cancels it too."""
    task = asyncio.ensure_future(step)
    turn.task = task
    try:
        await asyncio.wait({task})
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        turn.task = None
    if task.cancelled():
        if turn.interrupted:
            raise _Interrupted
        raise asyncio.CancelledError
    return task.result()


class _StreamedText:
    """A streaming reply: each piece is committed to the database, then shown (batched while
    a commit is in flight, so a fast stream costs few writes)."""

    def __init__(self, agent: Agent, turn_id: str, reply_id: int) -> None:
        self.agent = agent
        self.turn_id = turn_id
        self.reply_id = reply_id
        self.text = ""
        self._shown = 0
        self._flushing: asyncio.Task[None] | None = None

    def add(self, piece: str) -> None:
        if not piece:
            return
        self.text += piece
        if self._flushing is None or self._flushing.done():
            self._flushing = asyncio.ensure_future(self._flush())

    async def _flush(self) -> None:
        while self._shown < len(self.text):
            snapshot = self.text
            await self.agent.store.call(db.update_message, self.reply_id, snapshot, "streaming")
            self.agent.listener(ReplyText(self.turn_id, self.reply_id, snapshot[self._shown:]))
            self._shown = len(snapshot)

    async def close(self, text: str, status: ReplyStatus, tool_calls: list[dict[str, Any]] | None,
                    reasoning: str | None = None) -> None:
        if self._flushing is not None:
            await asyncio.shield(self._flushing)
        if not text and not tool_calls and status != "done":  # failed before a word: nothing to keep
            await self.agent.store.call(db.delete_message, self.reply_id)
            return
        await self.agent.store.call(db.update_message, self.reply_id, text, status, tool_calls, reasoning)
        if text.startswith(self.text[: self._shown]) and len(text) > self._shown:
            self.agent.listener(ReplyText(self.turn_id, self.reply_id, text[self._shown:]))
        self.agent.listener(ReplyDone(self.turn_id, self.reply_id, text, status))


def _arguments_of(call: Any) -> dict[str, Any]:
    """A stored call's arguments as a dict (empty when they do not parse as a JSON object):
    what a resumed call that was denied shows of itself."""
    try:
        arguments = json.loads(call.arguments or "{}")
    except (json.JSONDecodeError, TypeError):
        return {}
    return arguments if isinstance(arguments, dict) else {}
