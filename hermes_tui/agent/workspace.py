"""What a front end drives: the runtime, the sessions store, one open session's agent, and
the socket ``hermes-tui inject`` reaches it on.

A front end (the full-screen app today, headless runners next) gives a :class:`Workspace`
only its way of asking a person; every approval is recorded here, below it, beside the
session it belongs to. Opening a session says what the front end should show (the stored
conversation, notes on what is not usable) and never shows anything itself.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_tui.storage import sessions as db
from hermes_tui.storage.opening import host_name
from hermes_tui.storage.writer import SessionStore
from hermes_tui.agent.answers import Answer, AnswerBroker, AnswerRefused
from hermes_tui.agent.approvals import ApprovalRecorder
from hermes_tui.agent.budget import Budget
from hermes_tui.agent.events import Listener, NoticeLevel
from hermes_tui.agent.loop import Agent
from hermes_tui.agent.judge import ApprovalJudge, judge_settings
from hermes_tui.agent.models.keys import ProviderError
from hermes_tui.agent.models.providers import ProviderSettings
from hermes_tui.agent.usage import CallUsage
from hermes_tui.runtime.session_names import parent_session
from hermes_tui.agent.restore import LoadedSession
from hermes_tui.config import Config
from hermes_tui.agent.inject import Answerer, InjectServer
from hermes_tui.runtime import Runtime
from hermes_tui.runtime.approvals import Approver
from hermes_tui.runtime.notices import SWITCH_NOTICE
from hermes_tui.storage import leases
from hermes_tui.storage.errors import DB_ERRORS

log = logging.getLogger(__name__)

# Named tuples of exception classes: mypy does not follow `except (A, *B)`.
_OPEN_ERRORS: tuple[type[BaseException], ...] = (OSError, *DB_ERRORS)
"""Opening the store failed."""
_CLOSED_ERRORS: tuple[type[BaseException], ...] = (*DB_ERRORS, RuntimeError)
"""The store failed, is unreachable or is closed."""


class SessionBusy(Exception):
    """Another process drives the session (its lease is fresh); ``str(err)`` is one line."""


def busy_message(session_id: str, holder: leases.Lease | None) -> str:
    """One line: who drives ``session_id`` and what to do."""
    who = holder.describe() if holder is not None else "another process"
    return (f"session {session_id} is driven by {who}: wait for it to end (a lease with no heartbeat for "
            f"the lease timeout is taken over), or answer its requests with `hermes-tui approve {session_id}`")


@dataclass
class OpenedSession:
    """A session ready to take turns, and what the front end should show first."""

    agent: Agent
    loaded: LoadedSession | None
    """What was stored (None for a new session)."""
    notes: list[tuple[str, NoticeLevel]] = field(default_factory=list)
    after: list[tuple[str, NoticeLevel]] = field(default_factory=list)
    """What to say below the stored conversation (a session taken over: seen where it goes on)."""


class Workspace:
    """The runtime, the store and the open session of one front end.

    Args:
        config: the loaded config.
        home: ``HERMES_HOME``.
        cwd: where scripts and commands run.
        ask: the front end's way to ask a person (dialog, prompt); its answers are recorded.
        answers: the front end's open requests, when it takes answers from a shell too
            (``hermes-tui approve`` through the inject socket or a shared store); its ``ask``
            is then the front end's way to ask.
        settings: the model, or None (typed input runs as Python).
        provider_problem: why the configured model cannot be used, if it cannot.
        host_env: the environment kernels are derived from (default ``os.environ``).
        max_cost: the session's cost ceiling for this run (``--max-cost``), over the config's.
        program: who drives the session, as its lease names it (``hermes-tui app``, ``hermes-tui run``).
        on_store: called on the event loop with ``(level, message)`` when a shared store's server
            stops answering, answers again, or another process took the session over.
        on_lost: called on the event loop with the session id when another process took the
            open session over (this one's heartbeat could not be written in time): the front
            end should stop driving it.
        memory_fallback: when the store cannot be opened, keep the session in memory and say so
            (the app); False raises instead (a headless run must not pause into nowhere).
    """

    def __init__(
        self, config: Config, *, home: Path, cwd: str, ask: Approver | None = None,
        answers: AnswerBroker | None = None, settings: ProviderSettings | None = None,
        provider_problem: str | None = None, host_env: Mapping[str, str] | None = None,
        max_cost: float | None = None, program: str = "hermes-tui", on_store: Callable[[str, str], None] | None = None,
        on_lost: Callable[[str], None] | None = None, memory_fallback: bool = True,
    ) -> None:
        self.config = config
        self.home = home
        self.cwd = cwd
        self.settings = settings
        self.provider_problem = provider_problem
        self.max_cost = max_cost
        self.host_env = host_env
        self.answers = answers
        # Neither (a workspace that never asks: tests of the store) leaves a request unanswerable.
        self.approvals = ApprovalRecorder(ask if ask is not None or answers is None else answers.ask)  # type: ignore[arg-type]
        self.runtime = Runtime(config, home=home, host_env=dict(host_env) if host_env is not None else None,
                               approver=self.approvals)
        if answers is not None:
            answers.audit = self.runtime.gate.audit
        self.judge, self.judge_problem = make_judge(config, home, settings, charge=self._charge_judge,
                                                    room=self._judge_room, intent=self._intent)
        self.runtime.gate.judge = self.judge
        self.store: SessionStore | None = None
        self.agent: Agent | None = None
        self._inject: InjectServer | None = None
        self._created: str | None = None
        """The open session, when this workspace created it (removed on close if still empty)."""
        self.program = program
        self.on_store = on_store
        self.on_lost = on_lost
        self.memory_fallback = memory_fallback
        self.lease_owner = leases.new_owner()
        self._leased: str | None = None
        self._answer: Answerer | None = None
        self._listener: object | None = None
        self._looking = False
        self._look_again = False
        self._loop: asyncio.AbstractEventLoop | None = None

    async def open_store(self) -> list[tuple[str, NoticeLevel]]:
        """Open the sessions store (once); notes to show when it cannot be (the front end then
        keeps its sessions in memory only)."""
        if self.store is not None:
            return []
        self._loop = asyncio.get_running_loop()
        url = None
        try:
            url = db.store_url(self.config, self.home)
            self.store = await asyncio.to_thread(SessionStore.open, self.home, url, on_health=self._health)
        except _OPEN_ERRORS as exc:  # the front end still works; this session is not kept
            if not self.memory_fallback:
                raise
            self.store = await asyncio.to_thread(SessionStore, Path(":memory:"))
            self._keep_checkpoints()
            where = f"database {url.path}" if url is not None and url.path is not None else "store"
            return [(f"The sessions {where} cannot be opened ({exc}); this session is kept in memory only and "
                     "will not survive a restart.", "error")]
        self.store.every_tick(self._heartbeat)
        self._keep_checkpoints()
        return []

    def _keep_checkpoints(self) -> None:
        """The runtime's checkpoints are kept in this store from now on (none without one)."""
        from hermes_tui.agent.checkpoints import StoreLog

        assert self.store is not None
        self.runtime.checkpoints.log = StoreLog(self.store)

    def _health(self, reachable: bool, message: str) -> None:
        """The writer thread's news about a shared store's server, handed to the front end."""
        self._tell("info" if reachable else "warning", message)

    def _tell(self, level: str, message: str) -> None:
        if self.on_store is not None and self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.on_store, level, message)

    def _heartbeat(self, conn: db.Database) -> None:
        """On the writer thread: keep the open session's lease fresh; say so once if it was lost."""
        session = self._leased
        if session is None or leases.beat(conn, session, self.lease_owner):
            return
        self._leased = None
        holder = leases.lease_of(conn, session)
        self._tell("error", f"Session {session} was taken over by {holder.describe() if holder else 'another process'} "
                            "while this one's heartbeat could not be written: it is not driven from here any more.")
        if self.on_lost is not None and self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.on_lost, session)

    async def _take_lease(self, session_id: str) -> list[tuple[str, NoticeLevel]]:
        assert self.store is not None
        stale_after = self.config.store.lease_timeout
        taken = await self.store.call(leases.take, session_id, self.lease_owner, host_name(), self.program,
                                      stale_after=stale_after)
        if not taken.ok:
            raise SessionBusy(busy_message(session_id, taken.holder))
        self._leased = session_id
        if taken.holder is not None:
            return [(f"Took session {session_id} over from {taken.holder.describe()}: it had stopped.", "warning")]
        return []

    async def _release_lease(self) -> None:
        session, self._leased = self._leased, None
        if session is not None and self.store is not None:
            try:
                await self.store.call(leases.release, session, self.lease_owner)
            except _CLOSED_ERRORS:  # closed or unreachable: the lease goes stale by itself
                pass

    async def open(self, session_id: str, listener: Listener) -> OpenedSession:
        """Open (or create) ``session_id``: its agent loaded and serving, nothing asked yet
        (call ``opened.agent.resume_pending()`` once the front end has drawn it)."""
        notes = await self.open_store()
        assert self.store is not None  # open_store opened it (on disk or in memory) or raised
        after = await self._take_lease(session_id)  # SessionBusy when another process drives it
        self.runtime.checkpoints.sessions.add(session_id)
        agent = Agent(
            self.runtime, self.store, session_id, settings=self.settings, cwd=self.cwd, listener=listener,
            max_steps=self.config.agent.max_steps, max_invalid=self.config.agent.max_invalid_tool_calls,
            system_prompt=self.config.agent.system_prompt, max_context_chars=self.config.agent.max_context_chars,
            approvals=self.approvals, budget=self.budget(session_id), max_context_tokens=self.config.agent.max_context_tokens,
            subagents=self.config.agent.subagents,
        )
        loaded = await agent.load()  # None for a new session
        self._created = session_id if loaded is None else None  # before the row exists: a cut-short open is cleaned too
        await agent.open()
        if self.max_cost is not None:  # --max-cost is the session's ceiling from now on, as /budget
            await agent.set_budget(self.max_cost)
            agent.budget.session_setting = "--max-cost"
        self.agent = agent
        if self.judge_problem:
            notes.append((self.judge_problem, "warning"))
        if self.provider_problem:
            notes.append((f"The configured model cannot be used: {self.provider_problem}", "error"))
        elif self.settings is not None:
            notes += provider_notes(self.settings)
        return OpenedSession(agent, loaded, notes, after)

    def _agent_for(self, session: str) -> Agent | None:
        """The open agent ``session`` (or a sub-agent session of it) belongs to."""
        agent = self.agent
        return agent if agent is not None and parent_session(session) == agent.session_id else None

    async def _charge_judge(self, session: str, usage: CallUsage) -> None:
        agent = self._agent_for(session)
        if agent is not None:
            await agent.charge_judge(usage)

    def _judge_room(self, session: str, estimate: float) -> str | None:
        agent = self._agent_for(session)
        return agent.judge_refusal(estimate) if agent is not None else None

    def _intent(self, session: str) -> str | None:
        agent = self._agent_for(session)
        return agent.intent() if agent is not None else None

    def budget(self, session_id: str) -> Budget:
        """The cost ceilings a session opens with: ``--max-cost``, else ``agent.max_cost_usd``
        (a ceiling ``/budget`` stored with a session replaces the config's when it is loaded).
        A headless run's notices say how to go on from a shell."""
        agent = self.config.agent
        resume = session_id if self.program != "hermes-tui app" else None
        if self.max_cost is not None:
            return Budget(self.max_cost, agent.max_turn_cost_usd, session_setting="--max-cost", resume=resume)
        return Budget(agent.max_cost_usd, agent.max_turn_cost_usd, resume=resume)

    async def listen_for_injected(self, agent: Agent, answer: Answerer | None = None) -> str | None:
        """Let ``hermes-tui inject`` reach ``agent`` (as injected turns), and ``hermes-tui
        approve`` / ``deny`` the front end's open requests (``answer``, by default the
        workspace's :class:`AnswerBroker`); None when listening, else why it cannot."""
        async def deliver(text: str) -> int:
            return await agent.submit(text, "injected")

        if answer is None and self.answers is not None:
            answer = self.answers.serve
        self._answer = answer
        if answer is not None and self.store is not None and self.store.shared:
            self._listen_to_store(agent.session_id)
        server = InjectServer(self.home, agent.session_id, deliver, answer)
        try:
            await server.start()
        except OSError as exc:
            return f"hermes-tui inject is not available for this app: {exc}"
        self._inject = server
        return None

    def _listen_to_store(self, session_id: str) -> None:
        """Answers given on another machine (``hermes-tui approve`` writes them to the shared
        store and NOTIFYs) reach the open requests at once."""
        from hermes_tui.storage.postgres import NotifyListener

        assert self.store is not None and self._loop is not None
        loop = self._loop

        def look() -> None:
            # One look-up at a time, and one more after it at most: a flood of NOTIFYs (anyone
            # who can connect may send them) costs one read, not one read each.
            if self._looking:
                self._look_again = True
                return
            self._looking = True
            asyncio.ensure_future(self._look_up(session_id))

        def on_message(payload: str) -> None:
            try:
                note = json.loads(payload)
            except ValueError:
                return
            if isinstance(note, dict) and note.get("event") == "answer" and note.get("session") == session_id:
                loop.call_soon_threadsafe(look)

        def on_connect() -> None:  # answers given while it was not listening
            loop.call_soon_threadsafe(look)

        listener = NotifyListener(self.store.url, on_message, on_connect)
        listener.start()
        self._listener = listener

    async def _look_up(self, session_id: str) -> None:
        try:
            while True:
                self._look_again = False
                await self.answers_from_store(session_id)
                if not self._look_again:
                    return
        finally:
            self._looking = False

    async def answers_from_store(self, session_id: str) -> int:
        """Give the front end's open requests the answers stored for them from a shell (on any
        machine sharing the store); how many were applied."""
        if self.store is None or self._answer is None or self.agent is None or self.agent.session_id != session_id:
            return 0
        try:
            stored = await self.store.call(db.pending_requests, session_id)
        except _CLOSED_ERRORS:
            return 0
        applied = 0
        for request in stored:
            if request["answer"] is not None:
                applied += await self._apply(request["id"], Answer.from_row(request["answer"]))
        return applied

    async def _apply(self, request_id: str, answer: Answer) -> bool:
        """Give a stored answer to the open request it is for; False if it cannot be given."""
        if self.answers is not None:
            try:
                await self.answers.give(request_id, answer)
            except AnswerRefused:
                return False
            return True
        assert self._answer is not None
        reply = await self._answer({"answer": {"id": request_id, "choice": answer.choice, "reason": answer.reason,
                                               "who": answer.who}})
        return bool(reply.get("ok"))

    # -- what a front end asks of the store ----------------------------------------------

    async def leave_for(self, session_id: str | None) -> str | None:
        """Leave the open session (its running script is interrupted, its kernels idle on) to
        open ``session_id`` (None: a new one). Returns why not, in one line, when another
        process drives ``session_id`` (its lease is fresh): then nothing is left."""
        if session_id is not None and self.store is not None:
            holder = leases.live_holder(await self.store.call(leases.lease_of, session_id),
                                        self.config.store.lease_timeout)
            if holder is not None and holder.owner != self.lease_owner:
                return busy_message(session_id, holder)
        if self.agent is not None:
            await self.runtime.interrupt(self.agent.session_id, SWITCH_NOTICE)
        await self.close_session()
        return None

    async def input_history(self) -> list[str]:
        """Inputs typed in every session, oldest first (Up and Ctrl+R find them)."""
        return await self.store.call(db.load_inputs) if self.store is not None else []

    async def remember_input(self, session_id: str, text: str) -> None:
        """Keep a submitted input for :meth:`input_history`."""
        if self.store is not None:
            await self.store.call(db.add_input, session_id, text)

    async def sessions(self) -> list[db.SessionInfo]:
        """Stored sessions with messages, newest first (empty ones are noise)."""
        return await self.store.call(db.list_sessions) if self.store is not None else []

    async def usage_rows(self, session_id: str) -> list[dict[str, object]]:
        """``session_id``'s model calls: tokens and cost, per turn and per model."""
        return await self.store.call(db.usage_rows, session_id) if self.store is not None else []

    async def child_session(self, parent: str, name: str) -> str | None:
        """The newest stored sub-agent session of ``parent`` named ``name`` (a block drawn from
        the store knows its child by name only)."""
        return await self.store.call(db.child_session_named, parent, name) if self.store is not None else None

    async def load(self, session_id: str) -> LoadedSession | None:
        """A stored session read back (a sub-agent's transcript), or None."""
        if self.store is None:
            return None
        stored = await self.store.call(db.load_session, session_id)
        return LoadedSession(stored) if stored is not None else None

    @property
    def listening(self) -> bool:
        """True while ``hermes-tui inject`` can reach the open session."""
        return self._inject is not None

    async def close_session(self) -> None:
        """Stop listening and close the open session's agent (its kernels idle on). A session
        this workspace created that got no turn is removed from the store: sessions opened and
        left without a word do not pile up (one with a turn or an approval is always kept)."""
        server, self._inject = self._inject, None
        if server is not None:
            await server.aclose()
        listener, self._listener = self._listener, None
        if listener is not None:
            await asyncio.to_thread(listener.stop)  # type: ignore[attr-defined]
        agent, self.agent = self.agent, None
        if agent is not None:
            await agent.aclose()
        created, self._created = self._created, None
        if created is not None and self.store is not None:
            try:
                await self.store.call(db.delete_session_if_empty, created)
            except _CLOSED_ERRORS:  # the store failed or is closed: an empty row is harmless
                pass
        await self._release_lease()

    async def aclose(self) -> None:
        """Close the session, the runtime (every kernel ends) and the store. A request still
        waiting for an answer stays pending, to be asked again on resume. A shared store's
        server that cannot be reached is waited for a few seconds, not for ever."""
        self.approvals.closing = True
        if self.store is not None:
            self.store.begin_close()
        await self.close_session()
        await self.runtime.aclose()
        if self.judge is not None:
            await self.judge.aclose()
        if self.store is not None:
            await asyncio.to_thread(self.store.close)


def make_judge(config: Config, home: Path, main: ProviderSettings | None, **counting: Any,
               ) -> tuple[ApprovalJudge | None, str | None]:
    """The approval judge of ``approvals.mode: smart`` (None in other modes), or None and why
    it cannot be made (one line: then every flagged command asks a person, as in manual).
    ``counting``: :class:`ApprovalJudge`'s ``charge``, ``room`` and ``intent``."""
    if config.approvals.mode != "smart":
        return None, None
    try:
        settings = judge_settings(config, home, main)
    except ProviderError as exc:
        return None, (f"approvals.mode is smart but the approval judge cannot be used ({exc}): flagged commands ask "
                      "you, as in manual")
    return ApprovalJudge(settings, secrets=main.secrets() if main is not None else (), **counting), None


def provider_notes(settings: ProviderSettings) -> list[tuple[str, NoticeLevel]]:
    """What to say about the model when a session opens: which provider ``auto`` chose and
    why, a missing key (before the first message finds out), and what is held back."""
    notes: list[tuple[str, NoticeLevel]] = []
    if settings.why.startswith("auto"):
        notes.append((f"Model: {settings.label} ({settings.why}).", "info"))
    if settings.missing_key:
        notes.append((f"No API key for {settings.name}: {settings.key_source}.", "warning"))
    notes += [(problem, "warning") for problem in [*settings.withheld, *settings.fallback_problems]]
    return notes
