"""The turn loop: a message in, model replies and tool calls out, everything stored first.

One :class:`Agent` serves one session. Turns are queued and run one at a time; a message
typed by the user while a turn runs interrupts it (a running script ends with SPEC's
``[execution interrupted — user sent a new message]``), injected ones wait their turn.

Durability: each thing the app shows — the user's message, the reply as it streams, a tool
call, its result — is committed to the sessions database *before* the event that shows it is
sent, so ``kill -9`` loses nothing that was on screen. :meth:`Agent.load` rebuilds a session,
marks a turn the app died in as interrupted and keeps a tool call whose approval was pending:
:meth:`Agent.resume_pending` asks it again and the turn goes on.

With no model configured the agent runs what is typed as Python (an ``execute_code`` call per
turn), stored the same way.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hermes_tui import store as db
from hermes_tui.agent.hermes_format import (
    HermesStreamParser,
    format_call,
    new_call_id,
    system_prompt_tools,
    tool_response,
)
from hermes_tui.agent.providers import Provider, ProviderError, ProviderSettings, make_provider
from hermes_tui.agent.tools import InvalidCall, ToolCall, declarations, validate_call
from hermes_tui.runtime.approvals import ApprovalRequest
from hermes_tui.runtime.executor import INTERRUPT_NOTICE
from hermes_tui.runtime.models import ExecResult

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
RESTART_NOTE = "[interrupted: the app stopped before this tool call finished]"


# -- events --------------------------------------------------------------------------------


@dataclass
class AgentEvent:
    """Something the conversation pane shows. Sent only after it is stored."""

    turn_id: str


@dataclass
class TurnStarted(AgentEvent):
    text: str
    origin: str
    queued: int = 0
    """Turns still waiting after this one."""


@dataclass
class TurnQueued(AgentEvent):
    text: str
    origin: str
    position: int


@dataclass
class ReplyText(AgentEvent):
    """More of the assistant's reply (``delta``) for the reply block ``reply_id``."""

    reply_id: int
    delta: str


@dataclass
class ReplyDone(AgentEvent):
    reply_id: int
    text: str
    status: str
    """done, interrupted or error."""


@dataclass
class ToolStarted(AgentEvent):
    call_id: str
    name: str
    arguments: dict[str, Any]


@dataclass
class ToolFinished(AgentEvent):
    call_id: str
    name: str
    result: dict[str, Any]
    exec_result: ExecResult | None = None


@dataclass
class Notice(AgentEvent):
    text: str
    level: str = "error"


@dataclass
class TurnEnded(AgentEvent):
    status: str
    """done, interrupted, error or stopped (agent.max_steps / too many bad calls)."""


@dataclass
class PendingCall:
    """A tool call whose approval was pending when the app stopped."""

    turn_id: str
    origin: str
    call: ToolCall
    request: ApprovalRequest | None
    """The approval to ask again; None for a later call of the same reply (it just runs)."""
    approval_id: str | None


@dataclass
class _Turn:
    id: str
    text: str
    origin: str
    """user, injected or automation: decides what is approved first (kept on retry and resume)."""
    kind: str = "new"
    """new, retry (send the history again) or resume (answer what was pending)."""
    interrupted: bool = False
    task: asyncio.Future[Any] | None = None
    """The model's stream or a top-level tool call now running (cancelled on interrupt)."""
    call_id: str | None = None


@dataclass
class LoadedSession:
    """What :meth:`Agent.load` found: the stored rows to draw and what is left to do."""

    stored: db.StoredSession
    interrupted_turns: list[str] = field(default_factory=list)
    pending: list[PendingCall] = field(default_factory=list)


# -- the agent -----------------------------------------------------------------------------


Listener = Callable[[AgentEvent], None]


class Agent:
    """The conversation of one session.

    Args:
        runtime: runs the tools (and owns the approval gate).
        store: the sessions database.
        session_id: this session's id (also the kernels' session name).
        settings: the model, or None to run typed input as Python.
        listener: receives every :class:`AgentEvent`, after it is stored.
        cwd: the working directory of scripts and commands.
        max_steps: model calls per turn (``agent.max_steps``).
        max_invalid: malformed tool calls in a row before the turn is stopped.
        system_prompt: replaces the built-in one.
    """

    def __init__(
        self, runtime: Any, store: db.SessionStore, session_id: str, *, settings: ProviderSettings | None,
        listener: Listener, cwd: str, max_steps: int = 30, max_invalid: int = 3, system_prompt: str | None = None,
        provider: Provider | None = None, max_context_chars: int = 400_000,
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
        self.history: list[dict[str, Any]] = []
        """What the model is sent (the newest turns within ``max_context_chars``; all is stored)."""
        self.max_context_chars = max_context_chars
        self.omitted = 0
        """Older messages left out of :attr:`history` to keep it within the budget."""
        self.tools: list[dict[str, Any]] = []
        """The tools declared to the model (built in :meth:`open`)."""
        self._system = system_prompt or SYSTEM_PROMPT
        self._queue: deque[_Turn] = deque()
        self._wake = asyncio.Event()
        self._current: _Turn | None = None
        self._worker: asyncio.Task[None] | None = None
        self._last_failed: _Turn | None = None
        self._pending: list[PendingCall] = []

    # -- lifecycle ----------------------------------------------------------------------

    async def open(self) -> None:
        """Create the session row if new; start serving queued turns."""
        if self.provider is not None and not self.tools:
            # In a thread: building the schemas imports every tool (httpx, the HTML parser).
            self.tools = await asyncio.to_thread(declarations)
        await self.store.call(db.create_session, self.session_id, self.settings.name if self.settings else None,
                              self.settings.model if self.settings else None, self.cwd)
        if self._worker is None:
            self._worker = asyncio.create_task(self._serve(), name=f"agent-{self.session_id}")

    async def aclose(self) -> None:
        """Stop serving (a running turn is cancelled; what it showed is stored)."""
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)
            self._worker = None
        if self.provider is not None:
            await self.provider.aclose()

    @property
    def current_call_id(self) -> str | None:
        """The tool call running now (approvals asked now belong to it)."""
        return self._current.call_id if self._current else None

    # -- turns in -----------------------------------------------------------------------

    async def submit(self, text: str, origin: str = "user") -> int:
        """Queue a turn; returns how many turns are ahead of it (0 = runs now).

        A message typed by the user while a turn runs interrupts that turn first; injected
        and automation turns wait.
        """
        turn = _Turn(id=secrets.token_hex(6), text=text, origin=origin)
        ahead = len(self._queue) + (1 if self._current else 0)
        if origin == "user" and self._current is not None:
            await self.interrupt()
            ahead = len(self._queue)
        self._queue.append(turn)
        if ahead:
            self.listener(TurnQueued(turn.id, text, origin, ahead))
        self._wake.set()
        return ahead

    async def interrupt(self) -> bool:
        """End the running turn: a running script ends as interrupted, a streaming reply stops."""
        turn = self._current
        if turn is None or turn.interrupted:
            return False
        turn.interrupted = True
        await self.runtime.interrupt(self.session_id)  # a script ends with SPEC's notice
        if turn.task is not None and not turn.task.done():
            turn.task.cancel()  # the model's stream, or a top-level command (its process group is killed)
        return True

    async def retry(self) -> bool:
        """Send the conversation to the model again after a failed request."""
        turn = self._last_failed
        if turn is None or self._current is not None or self.provider is None:
            return False
        self._last_failed = None
        self._queue.appendleft(_Turn(id=turn.id, text="", origin=turn.origin, kind="retry"))
        self._wake.set()
        return True

    async def _serve(self) -> None:
        while True:
            while not self._queue:
                self._wake.clear()
                await self._wake.wait()
            turn = self._queue.popleft()
            self._current = turn
            try:
                if turn.kind == "retry":
                    status = await self._steps(turn)
                elif turn.kind == "resume":
                    status = await self._resume(turn)
                else:
                    status = await self._run(turn)
            except asyncio.CancelledError:
                if self._worker is not None and self._worker.cancelling():
                    raise
                status = "interrupted"
            except Exception as exc:  # a bug must not lose the session: say it, keep going
                self.listener(Notice(turn.id, f"The turn failed: {type(exc).__name__}: {exc}"))
                status = "error"
            finally:
                self._current = None
            if status == "error":
                self._last_failed = turn
            await self.store.call(db.end_turn, turn.id, status)
            self.listener(TurnEnded(turn.id, status))

    async def _run(self, turn: _Turn) -> str:
        await self.store.call(db.start_turn, self.session_id, turn.id, turn.origin, turn.text)
        self.history.append({"role": "user", "content": turn.text, "origin": turn.origin})
        self._trim()
        self.listener(TurnStarted(turn.id, turn.text, turn.origin, queued=len(self._queue)))
        if self.provider is None:  # no model: what was typed is the script
            call = ToolCall(new_call_id(), "execute_code", json.dumps({"code": turn.text}))
            # Stored as a reply that calls execute_code: a resumed session and an export read
            # it the same way as a model's call.
            message_id = await self.store.call(db.add_message, self.session_id, turn.id, "assistant", None,
                                               tool_calls=[call.as_openai()])
            await self._run_calls(turn, message_id, [call])
            return "interrupted" if turn.interrupted else "done"
        return await self._steps(turn)

    # -- the model loop -----------------------------------------------------------------

    async def _steps(self, turn: _Turn) -> str:
        invalid_streak = 0
        for _ in range(self.max_steps):
            if turn.interrupted:
                return "interrupted"
            reply = await self._reply(turn)
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
                self.listener(Notice(turn.id, f"The model sent {invalid_streak} malformed tool calls in a row; "
                                              "the turn was stopped. Rephrase, or /retry."))
                return "stopped"
        self.listener(Notice(turn.id, f"The turn reached agent.max_steps ({self.max_steps} model calls) and was "
                                      "stopped. Say 'continue' to go on, or raise agent.max_steps.", "warning"))
        return "stopped"

    async def _reply(self, turn: _Turn) -> tuple[int, str, list[ToolCall]] | None:
        """One model call, streamed into a stored reply; None if it failed or was interrupted."""
        assert self.provider is not None and self.settings is not None
        reply_id = await self.store.call(db.add_message, self.session_id, turn.id, "assistant", "", status="streaming")
        stream = _StreamedText(self, turn.id, reply_id)
        hermes = self.settings.tool_format == "hermes"
        parser = HermesStreamParser() if hermes else None

        async def on_text(piece: str) -> None:
            stream.add(parser.feed(piece) if parser else piece)

        system, messages, tools = self._request(hermes)
        status, error, result = "done", None, None
        try:
            result = await _interruptible(turn, self.provider.complete(system, messages, tools, on_text))
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
        await stream.close(text, status, [c.as_openai() for c in calls] or None)
        if error is not None:
            self.listener(Notice(turn.id, error))
        if status != "done":
            if status == "interrupted" and text.strip():  # what it said before the cut is context
                self.history.append({"role": "assistant", "content": text})
            return None
        self.history.append({"role": "assistant", "content": text or None,
                             "tool_calls": [c.as_openai() for c in calls] or None})
        return reply_id, text, calls

    def _trim(self) -> None:
        """Drop the oldest whole turns while the history is over ``max_context_chars``: memory
        stays bounded however long the session runs, and the request stays under the model's
        context. The newest turn is always kept."""
        def size(message: dict[str, Any]) -> int:
            calls = message.get("tool_calls")
            return len(message.get("content") or "") + (len(json.dumps(calls)) if calls else 0)

        total = sum(size(m) for m in self.history)
        while total > self.max_context_chars:
            cut = next((i for i, m in enumerate(self.history) if i > 0 and m["role"] == "user"), None)
            if cut is None:
                break
            total -= sum(size(m) for m in self.history[:cut])
            self.omitted += cut
            del self.history[:cut]

    def _request(self, hermes: bool) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
        """System prompt, messages and tools as the provider is sent them."""
        system = self._system
        if self.omitted:
            system += (f"\n\n({self.omitted} earlier messages of this conversation are left out to stay within "
                       "agent.max_context_chars.)")
        if not hermes:
            messages = []
            for m in self.history:
                item = {k: v for k, v in m.items() if k in ("role", "content", "tool_calls", "tool_call_id") and v is not None}
                if item["role"] == "assistant" and "content" not in item:
                    item["content"] = None
                messages.append(item)
            return system, messages, self.tools
        # Raw models: tools in the system prompt, calls as <tool_call> text, results as
        # <tool_response> in a user message (every OpenAI-compatible server accepts that role).
        names = {}
        rendered: list[dict[str, Any]] = []
        for m in self.history:
            if m["role"] == "assistant":
                parts = [m.get("content") or ""]
                for call in m.get("tool_calls") or ():
                    names[call["id"]] = call["function"]["name"]
                    parts.append(format_call(ToolCall(call["id"], call["function"]["name"], call["function"]["arguments"])))
                rendered.append({"role": "assistant", "content": "\n".join(p for p in parts if p)})
            elif m["role"] == "tool":
                rendered.append({"role": "user",
                                 "content": tool_response(names.get(m["tool_call_id"], "tool"), m.get("content") or "")})
            else:
                rendered.append({"role": m["role"], "content": m.get("content") or ""})
        return system + "\n\n" + system_prompt_tools(self.tools), rendered, []

    # -- tool calls ---------------------------------------------------------------------

    async def _run_calls(self, turn: _Turn, message_id: int | None, calls: list[ToolCall]) -> int:
        """Run the calls in order (after an interrupt the rest are not run); returns how many
        were malformed."""
        invalid = 0
        for call in calls:
            if turn.interrupted:
                await self._finish_call(turn, call, {"error": "not run: the turn was interrupted"}, "interrupted")
                continue
            try:
                parsed = validate_call(call)
            except InvalidCall as exc:
                invalid += 1
                await self.store.call(db.start_tool_call, self.session_id, turn.id, message_id or 0, call.id,
                                      call.name or "?", call.arguments)
                await self._finish_call(turn, call, {"error": f"{exc}. Fix the call and try again."}, "invalid")
                continue
            await self.store.call(db.start_tool_call, self.session_id, turn.id, message_id or 0, call.id, call.name,
                                  call.arguments)
            self.listener(ToolStarted(turn.id, call.id, call.name, parsed.model_dump()))
            await self._execute(turn, call, parsed.model_dump())
        return invalid

    async def _execute(self, turn: _Turn, call: ToolCall, args: dict[str, Any]) -> None:
        turn.call_id = call.id
        origin = turn.origin
        try:
            if call.name == "execute_code":
                result = await self.runtime.execute_code(args["code"], session=self.session_id, reset=args["reset"],
                                                         cwd=self.cwd, origin=origin)
                payload = result.model_dump(mode="json")
                await self._finish_call(turn, call, payload, result.status, result)
            else:
                given = {k: v for k, v in args.items() if v is not None}
                try:
                    outcome = await _interruptible(turn, self.runtime.call_tool(
                        call.name, given, session=self.session_id, cwd=self.cwd, origin=origin))
                    status = "error" if outcome.get("error") else "success"
                except _Interrupted:
                    outcome = {"output": "", "exit_code": -1, "status": "interrupted", "error": INTERRUPT_NOTICE}
                    status = "interrupted"
                await self._finish_call(turn, call, dict(outcome), status)
        finally:
            turn.call_id = None

    async def _finish_call(self, turn: _Turn, call: ToolCall, result: dict[str, Any], status: str,
                           exec_result: ExecResult | None = None) -> None:
        content = json.dumps(result, ensure_ascii=False, default=str)
        if len(content) > MAX_RESULT_CHARS:
            half = MAX_RESULT_CHARS // 2
            content = (content[:half] + f"\n... [{len(content) - MAX_RESULT_CHARS} characters cut] ...\n"
                       + content[-half:])
        await self.store.call(db.finish_tool_call, self.session_id, turn.id, call.id, status, result, content,
                              exec_result.exec_id if exec_result else None)
        self._record_result(call, content)
        self.listener(ToolFinished(turn.id, call.id, call.name or "?", result, exec_result))

    def _record_result(self, call: ToolCall, content: str) -> None:
        if self.provider is None:
            return  # no model reads a history
        self.history.append({"role": "tool", "tool_call_id": call.id, "content": content})

    # -- restoring a session ------------------------------------------------------------

    async def load(self) -> LoadedSession | None:
        """Read this session back (None if it is new): the history the model sees, interrupted
        turns marked, and tool calls whose approval was pending (answer them with
        :meth:`resume_pending`)."""
        stored = await self.store.call(db.load_session, self.session_id)
        if stored is None:
            return None
        loaded = LoadedSession(stored)
        pending_by_call = {a["tool_call_id"]: a for a in stored.pending_approvals if a["tool_call_id"]}
        for approval in stored.pending_approvals:  # asked outside any tool call: nothing to resume
            if not approval["tool_call_id"] or approval["tool_call_id"] not in stored.tool_calls:
                await self.store.call(db.answer_approval, approval["id"], "deny", "the app stopped", "withdrawn")
        running = {t["id"]: t for t in stored.turns if t["status"] == "running"}
        answered = {m["tool_call_id"] for m in stored.messages if m["role"] == "tool"}
        history: list[dict[str, Any]] = []
        for message in stored.messages:
            if message["status"] == "streaming":
                message["status"] = "interrupted"
                await self.store.call(db.update_message, message["id"], message["content"], "interrupted")
            item: dict[str, Any] = {"role": message["role"], "content": message["content"]}
            if message["tool_calls"]:
                item["tool_calls"] = message["tool_calls"]
            if message["tool_call_id"]:
                item["tool_call_id"] = message["tool_call_id"]
            if message["role"] == "assistant" and not item.get("content") and not item.get("tool_calls"):
                continue
            history.append(item)
            unanswered = [c for c in message["tool_calls"] or () if c["id"] not in answered]
            turn = running.get(message["turn_id"] or "")
            if turn is not None and any(c["id"] in pending_by_call for c in unanswered):
                # The app died while this reply's call waited for approval: it and the calls
                # after it run when the turn resumes.
                for c in unanswered:
                    approval = pending_by_call.get(c["id"])
                    loaded.pending.append(PendingCall(
                        turn["id"], turn["origin"], ToolCall(c["id"], c["function"]["name"], c["function"]["arguments"]),
                        ApprovalRequest.model_validate(approval["request"]) if approval else None,
                        approval["id"] if approval else None))
                continue
            for c in unanswered:
                content = json.dumps({"error": RESTART_NOTE})
                await self.store.call(db.finish_tool_call, self.session_id, message["turn_id"], c["id"], "interrupted",
                                      {"error": RESTART_NOTE}, content, None)
                history.append({"role": "tool", "tool_call_id": c["id"], "content": content})
        resumable = {p.turn_id for p in loaded.pending}
        for turn_id in running:
            if turn_id not in resumable:
                await self.store.call(db.end_turn, turn_id, "interrupted", "the app stopped during this turn")
            loaded.interrupted_turns.append(turn_id)
        self.history = history
        self._trim()
        self._pending = list(loaded.pending)
        return loaded

    async def resume_pending(self) -> None:
        """Queue the turns with pending approvals: each approval is asked again, its tool call
        runs (or is refused), and the turn goes on with the model."""
        for turn_id, origin in dict.fromkeys((p.turn_id, p.origin) for p in self._pending):
            self._queue.append(_Turn(id=turn_id, text="", origin=origin, kind="resume"))
        self._wake.set()

    async def _resume(self, turn: _Turn) -> str:
        pending = [p for p in self._pending if p.turn_id == turn.id]
        self._pending = [p for p in self._pending if p.turn_id != turn.id]
        for item in pending:
            if turn.interrupted:
                await self._finish_call(turn, item.call, {"error": "not run: the turn was interrupted"}, "interrupted")
                continue
            if item.request is not None:
                self.listener(Notice(turn.id, "The app stopped while this approval waited. Answer it now: if "
                                              f"allowed, {item.call.name} runs again from its start and the turn "
                                              "goes on.", "warning"))
                turn.call_id = item.call.id  # asked again under the same call: survives another restart
                try:
                    refusal = await self.runtime.gate.ask_restored(item.request)
                finally:
                    turn.call_id = None
                await self.store.call(db.answer_approval, item.approval_id, "allow" if refusal is None else "deny",
                                      refusal)
                if refusal is not None:
                    result = {"output": "", "exit_code": -1, "status": "blocked", "error": f"BLOCKED: {refusal}"}
                    self.listener(ToolStarted(turn.id, item.call.id, item.call.name, {}))
                    await self._finish_call(turn, item.call, result, "blocked")
                    continue
            await self._run_calls(turn, None, [item.call])
        if self.provider is None or turn.interrupted:
            return "interrupted" if turn.interrupted else "done"
        return await self._steps(turn)


class _Interrupted(Exception):
    """The turn was interrupted while this step ran."""


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

    async def close(self, text: str, status: str, tool_calls: list[dict[str, Any]] | None) -> None:
        if self._flushing is not None:
            await asyncio.shield(self._flushing)
        if not text and not tool_calls and status != "done":  # failed before a word: nothing to keep
            await self.agent.store.call(db.delete_message, self.reply_id)
            return
        await self.agent.store.call(db.update_message, self.reply_id, text, status, tool_calls)
        if text.startswith(self.text[: self._shown]) and len(text) > self._shown:
            self.agent.listener(ReplyText(self.turn_id, self.reply_id, text[self._shown:]))
        self.agent.listener(ReplyDone(self.turn_id, self.reply_id, text, status))
