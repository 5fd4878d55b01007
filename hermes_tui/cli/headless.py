"""Headless runs: one agent turn with nobody at the keyboard, that pauses where a person must
answer and resumes later (``hermes-tui run`` / ``resume``; the CLI is :mod:`hermes_tui.cli.headless_cmd`).

A run's turns have origin ``automation``: every script is approved as a whole before it runs,
then its ``terminal()`` calls (SPEC §4). When a request needs a person and none is at a
terminal (or ``--pause-on approval`` was given), :class:`RunApprover` raises
:class:`~hermes_tui.runtime.approvals.ApprovalPaused`: the request stays pending in the
session, the call that asked gets the pause as its refusal (a script can end), and the turn
stops at that call without recording it as finished (status ``paused``). Everything else is
already stored. ``hermes-tui approve`` / ``deny`` record answers beside the pending requests;
``resume`` asks each request again and :class:`RunApprover` answers from them: the call runs
again from its start (a script with everything it does before the command that asked), as
approved. A request left unanswered (``approve --except``) is denied on resume; a new one
pauses again.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from hermes_tui.storage import sessions as db
from hermes_tui.agent.events import (
    AgentEvent,
    Notice,
    NoticeLevel,
    ReplyDone,
    ReplyText,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnStarted,
    UsageUpdated,
)
from hermes_tui.agent.answers import StoredAnswers
from hermes_tui.agent.models.providers import ProviderSettings
from hermes_tui.agent.subagents import ChildEvent, ChildState, DelegateProgress
from hermes_tui.agent.usage import dollars, tokens
from hermes_tui.base.units import plural
from hermes_tui.agent.workspace import Workspace
from hermes_tui.config import Config
from hermes_tui.runtime.approvals import ApprovalDecision, ApprovalPaused, ApprovalRequest, Approver
from hermes_tui.runtime.models import Origin, is_subagent_session

EXIT_DONE, EXIT_FAILED, EXIT_USAGE, EXIT_PAUSED, EXIT_BUDGET = 0, 1, 2, 3, 4
"""``run`` / ``resume`` exit codes: finished, failed, usage or config, paused, budget reached."""

PAUSE_REASON = ("paused for approval: the run stopped here; once a person answers (hermes-tui approve / deny), "
                "hermes-tui resume runs this call again from its start")
SUBAGENT_REFUSED = ("a sub-agent's request cannot pause a headless run (answer it on a terminal, run the task "
                    "in the app, or allow it with an approvals rule)")
LEFT_PENDING = "it was left pending when the run resumed (not approved with hermes-tui approve)"


@dataclass
class RunApprover:
    """Answers a headless run's requests: an answer given from a shell first, then a person at
    the terminal, else a pause.

    Each request left pending when the run paused takes its own answer, once
    (:class:`~hermes_tui.agent.answers.StoredAnswers` matches them); one left unanswered is
    denied. Anything else is a new question: asked, or paused on.

    Args:
        stored: the requests pending when the run resumed, each with its answer from
            ``hermes-tui approve`` / ``deny`` or None.
        ask: the terminal's approver (None: no terminal, or ``--pause-on approval``).
        pause: pause when nobody answers (False: ``--pause-on never`` with no terminal: denied).
        on_pause: called once with the first request that paused the run.
    """

    stored: StoredAnswers = field(default_factory=StoredAnswers)
    ask: Approver | None = None
    pause: bool = True
    unattended: str = "pause"
    """``approvals.unattended``: what a request nobody can answer gets (``pause``, ``deny``,
    ``approve-safe``)."""
    on_pause: Callable[[ApprovalRequest], None] | None = None
    paused: list[ApprovalRequest] = field(default_factory=list)

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        waiting = self.stored.take(request)
        if waiting is not None:
            answer = waiting.get("answer")
            if answer is None:
                return ApprovalDecision(choice="deny", reason=LEFT_PENDING, by="hermes-tui resume")
            if answer["decision"] == "deny":
                return ApprovalDecision(choice="deny", reason=answer["reason"] or "denied with hermes-tui deny",
                                        by=answer["who"] or "hermes-tui deny")
            choice = answer["decision"] if answer["decision"] in request.choices else "once"
            return ApprovalDecision(choice=choice)  # type: ignore[arg-type]
        if self.ask is not None:
            return await self.ask(request)
        unattended = unattended_answer(request, self.unattended)
        if unattended is not None:
            return unattended
        if is_subagent_session(request.session):
            # A sub-agent's turn is not one a run can pause and resume: its request is refused,
            # it goes on with BLOCKED, and the parent is told in its summary.
            return ApprovalDecision(choice="deny", reason=SUBAGENT_REFUSED, by="hermes-tui run")
        if not self.pause:
            return ApprovalDecision(choice="deny", reason="nobody to ask (no terminal) and --pause-on never",
                                    by="hermes-tui run")
        self.paused.append(request)
        if self.on_pause is not None and len(self.paused) == 1:
            self.on_pause(request)
        raise ApprovalPaused(PAUSE_REASON)


UNATTENDED = "approvals.unattended"


def unattended_answer(request: ApprovalRequest, setting: str) -> ApprovalDecision | None:
    """What ``approvals.unattended`` answers for a request nobody can answer (None: ``pause``).

    ``approve-safe`` allows only what stays confined: a whole script for a sandboxed kernel,
    a flagged ``terminal()`` command run in the sandbox (or a container). A write to an agent
    instruction file, a file the host writes, a command to run outside the sandbox, and
    anything when nothing confines it are denied."""
    if setting == "deny":
        return ApprovalDecision(choice="deny", by=f"{UNATTENDED} deny",
                                reason="nobody can answer in this run and approvals.unattended is deny")
    if setting != "approve-safe":
        return None
    if request.confined and not request.protected and request.kind in ("script", "terminal"):
        return ApprovalDecision(choice="once", by=f"{UNATTENDED} approve-safe",
                                reason="nobody can answer; it runs confined (approvals.unattended approve-safe)")
    why = ("a write to an agent instruction file is never approved without a person" if request.protected
           else "it would not stay in the sandbox" if request.kind in ("script", "terminal", "sandbox")
           else "the host would do it outside the sandbox")
    return ApprovalDecision(choice="deny", by=f"{UNATTENDED} approve-safe",
                            reason=f"nobody can answer in this run, and approve-safe allows only what stays confined: "
                                   f"{why}")


class Printer:
    """What a headless run shows: plain text (no colours, untrusted text escaped), or one JSON
    object per event (``--json``)."""

    def __init__(self, as_json: bool, out: TextIO | None = None) -> None:
        self.as_json = as_json
        self.out = out or sys.stdout
        self._mid_line = False
        self._children: dict[str, str] = {}
        """Each sub-agent's last status shown (a line per start and per end)."""

    def emit(self, kind: str, **fields: Any) -> None:
        """One JSON event (``--json``)."""
        self.out.write(json.dumps({"event": kind, **fields}, ensure_ascii=False, default=str) + "\n")
        self.out.flush()

    def line(self, text: str) -> None:
        """A line of plain text (after what a reply wrote on the current line)."""
        if self._mid_line:
            self.out.write("\n")
            self._mid_line = False
        self.out.write(text + "\n")
        self.out.flush()

    def _children_changed(self, event: DelegateProgress) -> list[ChildState]:
        changed = []
        for child in event.children:
            if child.status != self._children.get(child.session) and child.status != "waiting":
                self._children[child.session] = child.status
                changed.append(child)
        return changed

    def __call__(self, event: AgentEvent) -> None:
        from hermes_tui.base.text import shown

        if isinstance(event, DelegateProgress):  # one line per child start and end, not per step
            for child in self._children_changed(event):
                if self.as_json:
                    self.emit("child", turn=event.turn_id, name=child.name, session=child.session, status=child.status,
                              model_calls=child.steps, tool_calls=child.tool_calls, cost_usd=child.cost_usd)
                elif child.status == "running":
                    self.line(f"  ↳ sub-agent {shown(child.name)} started: {shown(child.goal[:120])}")
                else:
                    self.line(f"  ↳ sub-agent {shown(child.name)} {child.status} · {plural(child.steps, 'model call')} · "
                              f"{plural(child.tool_calls, 'tool call')} · {dollars(child.cost_usd)}")
            return
        if isinstance(event, ChildEvent):
            return  # a child's own steps: its transcript is stored; the run shows starts and ends
        if self.as_json:
            self._json(event)
            return
        if isinstance(event, ReplyText):
            self.out.write(shown(event.delta, one_line=False))
            self.out.flush()
            self._mid_line = not event.delta.endswith("\n")
        elif isinstance(event, ReplyDone) and event.status != "done":
            self.line(f"[reply {event.status}]")
        elif isinstance(event, ToolStarted):
            what = event.arguments.get("code") or event.arguments.get("command") or event.arguments.get("path") or ""
            if event.name == "delegate_task":
                count = len(event.arguments.get("tasks") or [1])
                what = f"{count} sub-agent{'s' if count != 1 else ''}"
            first = str(what).strip().splitlines()[0] if str(what).strip() else ""
            self.line(f"→ {event.name}" + (f": {shown(first[:200])}" if first else ""))
        elif isinstance(event, ToolFinished):
            result = event.exec_result
            if result is not None:
                why = f": {shown(result.error.splitlines()[0][:200])}" if result.error and result.status != "success" \
                    else ""
                self.line(f"← {result.status} · {result.duration_seconds:.2f}s{why}")
                if result.output.strip():
                    self.line(shown(result.output.rstrip("\n"), one_line=False))
            else:
                error = event.result.get("error")
                self.line(f"← {'error: ' + shown(str(error)[:300]) if error else 'done'}")
        elif isinstance(event, Notice):
            self.line(f"! {shown(event.text)}")

    def _json(self, event: AgentEvent) -> None:
        if isinstance(event, ReplyText):
            self.emit("text", turn=event.turn_id, delta=event.delta)
        elif isinstance(event, ReplyDone):
            self.emit("reply", turn=event.turn_id, status=event.status, text=event.text)
        elif isinstance(event, ToolStarted):
            self.emit("tool_started", turn=event.turn_id, call_id=event.call_id, name=event.name,
                      arguments=event.arguments)
        elif isinstance(event, ToolFinished):
            result = event.exec_result.model_dump(mode="json") if event.exec_result is not None else event.result
            self.emit("tool_finished", turn=event.turn_id, call_id=event.call_id, name=event.name, result=result)
        elif isinstance(event, Notice):
            self.emit("notice", turn=event.turn_id, level=event.level, text=event.text)
        elif isinstance(event, UsageUpdated) and event.call is not None:
            self.emit("usage", turn=event.turn_id, input_tokens=event.call.input_tokens,
                      output_tokens=event.call.output_tokens, cost_usd=event.call.cost_usd,
                      session_cost_usd=event.totals.cost_usd)
        elif isinstance(event, TurnStarted):
            self.emit("turn_started", turn=event.turn_id, text=event.text, origin=event.origin)


@dataclass
class Outcome:
    """How a run or resume ended."""

    status: str
    exit_code: int
    session: str
    turn: str | None = None
    resumes: int = 0
    paused_on: list[ApprovalRequest] = field(default_factory=list)


class HeadlessRun:
    """One session driven from the command line: start a turn, or resume a paused one."""

    def __init__(self, config: Config, *, home: Path, cwd: str, settings: ProviderSettings, session: str,
                 printer: Printer, approver: RunApprover, max_cost: float | None = None,
                 program: str = "hermes-tui run") -> None:
        self.session = session
        self.printer = printer
        self.approver = approver
        # A run that cannot store its requests must not "pause" into nowhere: no memory fallback.
        self.workspace = Workspace(config, home=home, cwd=cwd, ask=approver, settings=settings, max_cost=max_cost,
                                   program=program, on_store=self._store_news, memory_fallback=False)
        self._ended: asyncio.Queue[TurnEnded] = asyncio.Queue()
        approver.on_pause = self._pausing

    def _store_news(self, level: str, message: str) -> None:
        self.printer(Notice("", message, level))  # type: ignore[arg-type]

    def _pausing(self, request: ApprovalRequest) -> None:
        agent = self.workspace.agent
        if agent is not None:
            agent.pause()

    def _listen(self, event: AgentEvent) -> None:
        self.printer(event)
        if isinstance(event, TurnEnded):
            self._ended.put_nowait(event)

    async def start(self, text: str) -> Outcome:
        """Run ``text`` as a new automation turn of the session."""
        try:
            opened = await self.workspace.open(self.session, self._listen)
            self._notes(opened.notes + opened.after)
            await opened.agent.submit(text, "automation", "message")
            ended = await self._ended.get()
            return self._outcome(ended)
        finally:
            await self._close()

    async def resume(self) -> Outcome:
        """Go on with the session's paused (or cut short) turn."""
        try:
            opened = await self.workspace.open(self.session, self._listen)
            self._notes(opened.notes + opened.after)
            loaded = opened.loaded
            if loaded is None:
                return Outcome("missing", EXIT_USAGE, self.session)
            store = self.workspace.store
            assert store is not None
            turn_id = _resumable_turn(loaded)
            if turn_id is None:
                self.printer.line(f"nothing to resume: session {self.session} has no paused or unfinished turn")
                return Outcome("nothing", EXIT_FAILED, self.session)
            resumes = await store.call(db.count_resume, turn_id)
            from hermes_tui.base.text import shown

            # Only the requests pending now, each answered once: an answer given for an earlier
            # pause was used then and is never matched again.
            self.approver.stored = StoredAnswers(await store.call(db.pending_requests, self.session))
            for waiting in self.approver.stored.waiting:  # said before anything runs: who allowed what
                answer = waiting["answer"]
                said = f"answer {answer['decision']} given by {shown(answer['who'])}" if answer else \
                    "no answer: it will be denied"
                self.printer(Notice(turn_id, f"[{waiting['id']}] {shown(waiting['text'][:80])}: {said}", "info"))
            await store.call(db.settle_pending, self.session, LEFT_PENDING)  # asked afresh below
            if loaded.pending:  # answered beforehand: a script's commands are answered as it reaches them
                await opened.agent.resume_pending(ask_inner_first=False)
            else:  # the run died mid-turn (no approval waited): the model goes on from what is stored
                origin: Origin = next((t["origin"] for t in loaded.stored.turns if t["id"] == turn_id), "automation")
                opened.agent.continue_turn(turn_id, origin)
            ended = await self._ended.get()
            outcome = self._outcome(ended)
            outcome.resumes = resumes
            return outcome
        finally:
            await self._close()

    def _notes(self, notes: list[tuple[str, NoticeLevel]]) -> None:
        for text, level in notes:
            self.printer(Notice("", text, level))

    def _outcome(self, ended: TurnEnded) -> Outcome:
        codes = {"done": EXIT_DONE, "paused": EXIT_PAUSED, "budget": EXIT_BUDGET}
        return Outcome(ended.status, codes.get(ended.status, EXIT_FAILED), self.session, ended.turn_id,
                       paused_on=list(self.approver.paused))

    async def _close(self) -> None:
        # A request nobody answered stays pending for resume (not withdrawn).
        self.workspace.approvals.closing = True
        await self.workspace.aclose()

    def summary(self) -> str:
        """Tokens and cost of the session so far, for the last line."""
        agent = self.workspace.agent
        totals = agent.totals if agent is not None else None
        if totals is None or not totals.calls:
            return ""
        return f"{tokens(totals.tokens_in + totals.tokens_out)} tokens, {totals.cost}"


def _resumable_turn(loaded: Any) -> str | None:
    """The turn to go on with: one with pending approvals, else the newest turn if the run died
    in it (interrupted: a reply or a call never finished), stopped at a cost ceiling, or failed
    (the model could not be reached)."""
    if loaded.pending:
        return loaded.pending[0].turn_id
    turns = loaded.stored.turns
    if turns and (turns[-1]["id"] in loaded.interrupted_turns or turns[-1]["status"] in ("budget", "error")):
        return turns[-1]["id"]
    return None


