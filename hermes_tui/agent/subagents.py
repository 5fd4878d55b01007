"""Sub-agents: ``delegate_task`` hands sub-tasks to child agents; only their summaries return.

A child is an :class:`~hermes_tui.agent.loop.Agent` of its own: its own conversation, stored
as session ``PARENT::child::NAME`` (viewable, never listed among the user's sessions), its own
kernel (a sub-agent kernel: outside ``max_session_kernels``, disposed when the child ends),
the parent's approvals (its requests reach the same dialog, under the child's session name),
and no ``delegate_task`` unless ``agent.subagents.max_depth`` allows one more level.

Up to ``agent.subagents.max_concurrency`` children run at once; the rest wait. A child ends
with a summary — its final answer, capped at ``summary_chars`` — with its status, model calls,
tool calls and cost; that is all the parent's model reads. Its cost counts toward the parent
turn's and session's ceilings as it is spent (one ledger, checked before each of the child's
model calls), and a child stopped by its ``max_steps`` or by the shared ceiling ends with
status ``budget``, what it has, and why it stopped in words for the parent's model (``stopped``:
never the person's notice, which advises ``/budget``). When the parent's turn goes on after a
budget stop (``/retry``, ``resume``), the children the ceiling stopped go on first, each with
its own stored conversation (:func:`resume_stopped`). Interrupting the parent interrupts every
child.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import time
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, Field, model_validator

from hermes_tui.agent.events import (  # noqa: F401 - ChildEvent, ChildState, DelegateProgress: importers find them here too
    AgentEvent, ChildEvent, ChildState, DelegateProgress, Notice, ReplyDone, ToolFinished, TurnEnded, UsageUpdated,
)
from hermes_tui.runtime.models import SUBAGENT_SEPARATOR

DELEGATE_DESCRIPTION = (
    "Hand one or more self-contained sub-tasks to sub-agents that work in parallel, each with its own "
    "kernel and tools, and get back only a short summary of each (not everything they read). Use it for "
    "research or work whose details the conversation does not need. Give each task a clear goal and the "
    "context it needs: a sub-agent sees nothing of this conversation."
)
SUBAGENT_PROMPT = (
    "You are a sub-agent of hermes-tui, working on one task for a parent agent. You act by writing Python: "
    "execute_code runs a script in your own persistent kernel, where `from hermes_tools import ...` gives the "
    "tools. The parent sees only your final answer: when the task is done (or cannot be done), reply with a "
    "concise summary of what you found or did, with the facts and figures the parent needs. The task:"
)


class Task(BaseModel):
    """One sub-task."""

    goal: str = Field(min_length=1, max_length=20_000, description="what the sub-agent must achieve")
    context: str | None = Field(None, max_length=100_000, description="what it needs to know (it sees nothing else)")
    name: str | None = Field(None, max_length=40, description="a short name (letters, digits, - or _)")
    tools: list[str] | None = Field(None, description="the tools it may use (default: all but delegate_task)")
    model: str | None = Field(None, max_length=200, description="another model of the same provider")
    max_steps: int | None = Field(None, ge=1, le=200, description="model calls it may make")


class DelegateArgs(Task):
    """Arguments of ``delegate_task``: one task (``goal`` ...) or ``tasks``."""

    goal: str | None = Field(None, max_length=20_000, description="one task's goal (or give tasks)")  # type: ignore[assignment]
    tasks: list[Task] | None = Field(None, min_length=1, max_length=20, description="several tasks, run in parallel")

    @model_validator(mode="after")
    def _known_tools(self) -> DelegateArgs:
        from hermes_tui.runtime.tools import TOOL_NAMES

        known = ("execute_code", *TOOL_NAMES)  # the model's tools (agent.tools.MODEL_TOOLS) but delegate_task
        for task in self.all_tasks() if (self.goal is None) != (self.tasks is None) else []:
            unknown = [t for t in task.tools or () if t not in known]
            if unknown:
                raise ValueError(f"tools {', '.join(map(repr, unknown))} are not tools a sub-agent can have; the "
                                 f"tools are: {', '.join(known)}")
        return self

    @model_validator(mode="after")
    def _one_way(self) -> DelegateArgs:
        if (self.goal is None) == (self.tasks is None):
            raise ValueError("give either goal (one task) or tasks (a list), not both and not neither")
        return self

    def all_tasks(self) -> list[Task]:
        """The tasks, one or many."""
        if self.tasks is not None:
            return list(self.tasks)
        return [Task(goal=self.goal or "", context=self.context, name=self.name, tools=self.tools, model=self.model,
                     max_steps=self.max_steps)]


_NAME = re.compile(r"[^A-Za-z0-9_-]+")


def child_names(tasks: list[Task]) -> list[str]:
    """A distinct, session-safe name per task (``research``, ``task-2``...)."""
    names: list[str] = []
    for index, task in enumerate(tasks, 1):
        base = _NAME.sub("-", (task.name or "").strip()).strip("-")[:32] or f"task-{index}"
        name, n = base, 2
        while name in names:
            name, n = f"{base}-{n}", n + 1
        names.append(name)
    return names


COST_STOP = "the session's cost ceiling was reached before it finished; it goes on if the run is resumed"
"""Why a child stopped at the shared ceiling, as its parent's model reads it (the person's
notice, with its ``/budget`` advice, stays in the app)."""
STEPS_STOP = "it was stopped before it finished: it used its max_steps, or sent malformed tool calls"
FAILED = "(the sub-agent failed: {})"


async def delegate(parent: Any, turn: Any, call_id: str, args: DelegateArgs) -> dict[str, Any]:
    """Run the tasks as child agents of ``parent`` (an :class:`~hermes_tui.agent.loop.Agent`,
    not imported here: the loop imports this module) — at most ``max_concurrency`` at once —
    and return what the parent's model reads: each child's summary and figures."""
    tasks = args.all_tasks()
    base = f"{parent.session_id}{SUBAGENT_SEPARATOR}"
    # The call id is the provider's (some reuse "call_0"): a random part keeps children apart.
    tag = f"{call_id[-6:]}{secrets.token_hex(2)}"
    states = [ChildState(name, task.goal, f"{base}{tag}-{name}") for name, task in zip(child_names(tasks), tasks)]
    return await _run_children(parent, turn, call_id, states, [(task, state, False) for task, state in zip(tasks, states)])


def stopped_at_the_ceiling(outcome: Any) -> bool:
    """True when a ``delegate_task`` result has children the cost ceiling stopped."""
    return isinstance(outcome, dict) and any(isinstance(r, dict) and r.get("stopped") == COST_STOP
                                             for r in outcome.get("results") or ())


async def resume_stopped(parent: Any, turn: Any, call_id: str, outcome: dict[str, Any]) -> dict[str, Any]:
    """Go on with the children of a stored ``delegate_task`` result that the cost ceiling
    stopped: each continues its own stored conversation (what it did is kept); the others keep
    their results. Returns the new result, for the parent's model to read instead."""
    states, runs = [], []
    for row in outcome.get("results") or ():
        if not isinstance(row, dict):
            continue
        state = ChildState.from_result(row)
        states.append(state)
        if state.stopped == COST_STOP and state.session.startswith(f"{parent.session_id}{SUBAGENT_SEPARATOR}"):
            state.status, state.stopped, state.started_at, state.ended_at = "waiting", "", None, None
            runs.append((Task(goal=state.goal or "(continue)", name=state.name), state, True))
    return await _run_children(parent, turn, call_id, states, runs)


async def _run_children(parent: Any, turn: Any, call_id: str, states: list[ChildState],
                        runs: list[tuple[Task, ChildState, bool]]) -> dict[str, Any]:
    """Run ``runs`` (a task, its state, and whether it continues the child's stored
    conversation) at most ``max_concurrency`` at once; the result lists every state."""
    config = parent.subagents
    gate = asyncio.Semaphore(max(1, config.max_concurrency))
    children: list[Any] = []

    def progress() -> None:
        parent.listener(DelegateProgress(turn.id, call_id, [replace(s) for s in states]))

    async def run(task: Task, state: ChildState, again: bool) -> None:
        try:
            await run_child(task, state, again)
        except Exception as exc:  # one child's failure is its own: the others go on
            state.status, state.ended_at = "error", time.time()
            state.summary = state.summary or FAILED.format(f"{type(exc).__name__}: {exc}")
            progress()

    async def run_child(task: Task, state: ChildState, again: bool) -> None:
        async with gate:
            if turn.interrupted:
                state.status, state.ended_at = "interrupted", time.time()
                progress()
                return
            settings = parent.settings
            if settings is not None and task.model and task.model != settings.model:
                settings = replace(settings, model=task.model, pricing=None, context_length=None)
            ended = asyncio.Event()
            outcome: dict[str, Any] = {}

            def listen(event: AgentEvent) -> None:
                parent.listener(ChildEvent(turn.id, state.session, event))
                if isinstance(event, ReplyDone) and event.status == "done":
                    state.summary = event.text
                elif isinstance(event, Notice) and event.level != "info":
                    state.note = event.text  # why it stopped, for the person
                elif isinstance(event, ToolFinished):
                    state.tool_calls += 1
                    progress()
                elif isinstance(event, UsageUpdated) and event.call is not None:
                    state.steps += 1
                    state.cost_usd += event.call.cost_usd or 0.0
                    state.unpriced = state.unpriced or event.call.cost_usd is None
                    progress()
                elif isinstance(event, TurnEnded):
                    outcome["status"] = event.status
                    ended.set()

            allowed = [t for t in (task.tools or parent.tool_names) if t != "delegate_task"]
            child = parent.make_child(state.session, settings, listen, task.max_steps or config.max_steps,
                                      tuple(allowed), SUBAGENT_PROMPT)
            children.append(child)
            parent.children.add(child)
            state.status, state.started_at = "running", time.time()
            progress()
            try:
                await child.open()
                loaded = await child.load() if again else None
                if loaded is not None and loaded.stored.turns:
                    last = loaded.stored.turns[-1]
                    child.continue_turn(last["id"], last["origin"])  # its conversation, sent again
                else:
                    text = task.goal if not task.context else f"{task.goal}\n\nContext:\n{task.context}"
                    await child.submit(text, turn.origin, "message")
                await ended.wait()
            finally:
                parent.children.discard(child)
                await child.aclose()
                await parent.runtime.dispose_session(state.session)
            status = outcome.get("status", "error")
            state.status = {"stopped": "budget"}.get(status, status)
            state.stopped = {"budget": COST_STOP, "stopped": STEPS_STOP}.get(status, "")
            if not state.summary and state.status == "done":
                state.status = "error"
                state.summary = "(the sub-agent gave no answer)"
            if state.status == "error" and not state.summary:
                state.summary = FAILED.format("its model call failed")
            state.ended_at = time.time()
            progress()
            await parent.store.call(_store_progress, parent.session_id, call_id,
                                    [s.result(config.summary_chars) for s in states if s.ended_at is not None])

    started = [asyncio.ensure_future(run(task, state, again)) for task, state, again in runs]
    try:
        await asyncio.gather(*started)
    finally:  # cancelled (the app closing): no child outlives its call
        for pending in started:
            pending.cancel()
        await asyncio.gather(*started, return_exceptions=True)
    outcome: dict[str, Any] = {"results": [state.result(config.summary_chars) for state in states]}
    if turn.interrupted:
        outcome["status"] = "interrupted"
    return outcome


def _store_progress(db: Any, session_id: str, call_id: str, finished: list[dict[str, Any]]) -> None:
    """Keep the children that finished on the parent's running call: if the app stops during
    the fan-out, restoring the session keeps them (the others are marked interrupted)."""
    import json

    db.execute("UPDATE tool_calls SET result = ? WHERE session_id = ? AND id = ? AND status = 'running'",
               (json.dumps({"partial": finished}), session_id, call_id))
