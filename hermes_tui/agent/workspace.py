"""What a front end drives: the runtime, the sessions store, one open session's agent, and
the socket ``hermes-tui inject`` reaches it on.

A front end (the full-screen app today, headless runners next) gives a :class:`Workspace`
only its way of asking a person; every approval is recorded here, below it, beside the
session it belongs to. Opening a session says what the front end should show (the stored
conversation, notes on what is not usable) and never shows anything itself.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from hermes_tui import store as db
from hermes_tui.agent.approvals import ApprovalRecorder
from hermes_tui.agent.budget import Budget
from hermes_tui.agent.events import Listener, NoticeLevel
from hermes_tui.agent.loop import Agent
from hermes_tui.agent.providers import ProviderSettings
from hermes_tui.agent.restore import LoadedSession
from hermes_tui.config import Config
from hermes_tui.inject import Answerer, InjectServer
from hermes_tui.runtime import Runtime
from hermes_tui.runtime.approvals import Approver


@dataclass
class OpenedSession:
    """A session ready to take turns, and what the front end should show first."""

    agent: Agent
    loaded: LoadedSession | None
    """What was stored (None for a new session)."""
    notes: list[tuple[str, NoticeLevel]] = field(default_factory=list)


class Workspace:
    """The runtime, the store and the open session of one front end.

    Args:
        config: the loaded config.
        home: ``HERMES_HOME``.
        cwd: where scripts and commands run.
        ask: the front end's way to ask a person (dialog, prompt); its answers are recorded.
        settings: the model, or None (typed input runs as Python).
        provider_problem: why the configured model cannot be used, if it cannot.
        host_env: the environment kernels are derived from (default ``os.environ``).
        max_cost: the session's cost ceiling for this run (``--max-cost``), over the config's.
    """

    def __init__(
        self, config: Config, *, home: Path, cwd: str, ask: Approver, settings: ProviderSettings | None,
        provider_problem: str | None = None, host_env: Mapping[str, str] | None = None,
        max_cost: float | None = None,
    ) -> None:
        self.config = config
        self.home = home
        self.cwd = cwd
        self.settings = settings
        self.provider_problem = provider_problem
        self.max_cost = max_cost
        self.approvals = ApprovalRecorder(ask)
        self.runtime = Runtime(config, home=home, host_env=dict(host_env) if host_env is not None else None,
                               approver=self.approvals)
        self.store: db.SessionStore | None = None
        self.agent: Agent | None = None
        self._inject: InjectServer | None = None
        self._created: str | None = None
        """The open session, when this workspace created it (removed on close if still empty)."""

    async def open(self, session_id: str, listener: Listener) -> OpenedSession:
        """Open (or create) ``session_id``: its agent loaded and serving, nothing asked yet
        (call ``opened.agent.resume_pending()`` once the front end has drawn it)."""
        notes: list[tuple[str, NoticeLevel]] = []
        if self.store is None:
            try:
                self.store = await asyncio.to_thread(db.SessionStore.open, self.home)
            except (OSError, sqlite3.Error) as exc:  # the front end still works; this session is not kept
                self.store = await asyncio.to_thread(db.SessionStore, Path(":memory:"))
                notes.append((f"The sessions database {db.sessions_db_path(self.home)} cannot be opened ({exc}); "
                              "this session is kept in memory only and will not survive a restart.", "error"))
        agent = Agent(
            self.runtime, self.store, session_id, settings=self.settings, cwd=self.cwd, listener=listener,
            max_steps=self.config.agent.max_steps, max_invalid=self.config.agent.max_invalid_tool_calls,
            system_prompt=self.config.agent.system_prompt, max_context_chars=self.config.agent.max_context_chars,
            approvals=self.approvals, budget=self.budget(), max_context_tokens=self.config.agent.max_context_tokens,
            subagents=self.config.agent.subagents,
        )
        loaded = await agent.load()  # None for a new session
        self._created = session_id if loaded is None else None  # before the row exists: a cut-short open is cleaned too
        await agent.open()
        if self.max_cost is not None:  # --max-cost is the session's ceiling from now on, as /budget
            await agent.set_budget(self.max_cost)
            agent.budget.session_setting = "--max-cost"
        self.agent = agent
        if self.provider_problem:
            notes.append((f"The configured model cannot be used: {self.provider_problem}", "error"))
        elif self.settings is not None:
            notes += provider_notes(self.settings)
        return OpenedSession(agent, loaded, notes)

    def budget(self) -> Budget:
        """The cost ceilings a session opens with: ``--max-cost``, else ``agent.max_cost_usd``
        (a ceiling ``/budget`` stored with a session replaces the config's when it is loaded)."""
        agent = self.config.agent
        if self.max_cost is not None:
            return Budget(self.max_cost, agent.max_turn_cost_usd, session_setting="--max-cost")
        return Budget(agent.max_cost_usd, agent.max_turn_cost_usd)

    async def listen_for_injected(self, agent: Agent, answer: Answerer | None = None) -> str | None:
        """Let ``hermes-tui inject`` reach ``agent`` (as injected turns), and ``hermes-tui
        approve`` / ``deny`` the front end's open requests (``answer``); None when listening,
        else why it cannot."""
        async def deliver(text: str) -> int:
            return await agent.submit(text, "injected")

        server = InjectServer(self.home, agent.session_id, deliver, answer)
        try:
            await server.start()
        except OSError as exc:
            return f"hermes-tui inject is not available for this app: {exc}"
        self._inject = server
        return None

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
        agent, self.agent = self.agent, None
        if agent is not None:
            await agent.aclose()
        created, self._created = self._created, None
        if created is not None and self.store is not None:
            try:
                await self.store.call(db.delete_session_if_empty, created)
            except (sqlite3.Error, RuntimeError):  # the store failed or is closed: an empty row is harmless
                pass

    async def aclose(self) -> None:
        """Close the session, the runtime (every kernel ends) and the store. A request still
        waiting for an answer stays pending, to be asked again on resume."""
        self.approvals.closing = True
        await self.close_session()
        await self.runtime.aclose()
        if self.store is not None:
            await asyncio.to_thread(self.store.close)


def provider_notes(settings: ProviderSettings) -> list[tuple[str, str]]:
    """What to say about the model when a session opens: which provider ``auto`` chose and
    why, a missing key (before the first message finds out), and what is held back."""
    notes: list[tuple[str, str]] = []
    if settings.why.startswith("auto"):
        notes.append((f"Model: {settings.label} ({settings.why}).", "info"))
    if settings.missing_key:
        notes.append((f"No API key for {settings.name}: {settings.key_source}.", "warning"))
    notes += [(problem, "warning") for problem in [*settings.withheld, *settings.fallback_problems]]
    return notes
