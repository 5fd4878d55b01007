"""The block of a ``delegate_task`` call: one row per sub-agent, live.

Each row shows the child's status glyph, name, model calls, tool calls, cost and elapsed time,
and under them its goal (one line, cut); the time ticks (a 1 s timer) only while some child runs. A row is
focusable: Enter or a click posts :class:`OpenChild`, and the app opens the child's transcript.

Names, goals and summaries come from the model: shown as Text (:mod:`hermes_tui.tui.widgets.safe`),
never as markup.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Static

from hermes_tui.agent.events import ChildState
from hermes_tui.agent.usage import dollars
from hermes_tui.base.units import plural, short_duration
from hermes_tui.tui.widgets.safe import plain

CHILD_GLYPHS = {"waiting": ("○", "dim"), "running": ("●", "yellow"), "done": ("✓", "green"),
                "error": ("✗", "red"), "budget": ("$", "yellow"), "interrupted": ("■", "yellow")}
GOAL_CHARS = 120
"""A goal shows its first line, cut to this many characters (the row also ends in an ellipsis)."""


class OpenChild(Message):
    """Show the transcript of a sub-agent (``session`` None: a stored block that does not know
    it; the app looks it up by ``name`` under the open session)."""

    def __init__(self, session: str | None, name: str, goal: str, running: bool) -> None:
        super().__init__()
        self.session = session
        self.name = name
        self.goal = goal
        self.running = running


def one_line(text: str, limit: int = GOAL_CHARS) -> str:
    """The first non-empty line of ``text``, cut to ``limit`` characters."""
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    more = len(line) > limit or len([p for p in text.splitlines() if p.strip()]) > 1
    return line[:limit] + ("…" if more else "")


def child_cost(state: ChildState) -> str:
    """``$0.0042``; ``?`` when its calls had no known price and nothing was priced."""
    return dollars(None if state.unpriced and not state.cost_usd else state.cost_usd)


def child_row_text(state: ChildState, name_width: int = 0, now: float | None = None) -> Text:
    """A child's two lines: glyph, name and figures; under them its goal (one line, cut)."""
    glyph, colour = CHILD_GLYPHS.get(state.status, ("•", "white"))
    now = time.time() if now is None else now
    if state.started_at is None:
        spent = "—"
    else:
        spent = short_duration((now if state.ended_at is None else state.ended_at) - state.started_at)
    figures = " · ".join((plural(state.steps, "step"), plural(state.tool_calls, "tool call"),
                          child_cost(state), spent))
    name = plain(state.name, "bold")
    if name.cell_len < name_width:
        name.append(" " * (name_width - name.cell_len))
    return Text.assemble((f"{glyph} ", colour), name, "  ", (figures, "dim"), "\n  ", plain(one_line(state.goal)))


class ChildRow(Static, can_focus=True):
    """One child of a delegate block: Enter or a click opens its transcript."""

    DEFAULT_CSS = """
    ChildRow { height: 2; text-wrap: nowrap; text-overflow: ellipsis; }
    ChildRow:focus { background: $boost; text-style: bold; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "open", "Open its transcript", show=False)]

    def __init__(self, state: ChildState, session: str | None) -> None:
        super().__init__()
        self.state = state
        self.session = session or None
        self.name_width = 0

    def show(self, state: ChildState | None = None, name_width: int | None = None, now: float | None = None) -> None:
        if state is not None:
            self.state = state
            self.session = state.session or self.session
        if name_width is not None:
            self.name_width = name_width
        self.update(child_row_text(self.state, self.name_width, now))

    def on_mount(self) -> None:
        self.show()

    def action_open(self) -> None:
        self.post_message(OpenChild(self.session, self.state.name, self.state.goal, self.state.status in
                                    ("waiting", "running")))

    def on_click(self) -> None:
        self.action_open()


class DelegateBlock(Vertical):
    """A ``delegate_task`` call: a title line and one :class:`ChildRow` per sub-agent.

    It also answers what the transcript asks of a tool's block (``result``, ``set_tool_result``,
    ``set_summary``) so a stored session draws it too, from the call's stored result."""

    DEFAULT_CSS = """
    DelegateBlock { margin: 0 0 1 0; padding: 0 1; border-left: thick $panel-lighten-2; height: auto; }
    DelegateBlock:focus-within { border-left: thick $primary; }
    DelegateBlock > .delegate-title { height: auto; }
    """

    result = None
    """Never an execute_code result (the transcript asks)."""

    def __init__(self, arguments: dict[str, object] | None = None, call_id: str | None = None) -> None:
        super().__init__()
        self.call_id = call_id
        tasks = (arguments or {}).get("tasks")
        self.task_count = len(tasks) if isinstance(tasks, list) else 1
        self.children_state: list[ChildState] = []
        self.status = "running"
        self.summary = ""
        self._rows: dict[str, ChildRow] = {}
        self._timer: Timer | None = None
        self._title = Static(classes="delegate-title")

    def compose(self) -> ComposeResult:
        yield self._title

    def on_mount(self) -> None:
        self._draw()

    # -- what the conversation tells it ---------------------------------------------------

    def update_children(self, children: list[ChildState]) -> None:
        """The children as they stand now (a ``DelegateProgress``)."""
        self.children_state = list(children)
        if self.is_mounted:
            self._draw()

    def set_tool_result(self, result: dict[str, object], interrupted: bool = False) -> None:
        """The call ended: its ``results`` (or, cut short, its ``partial`` ones or ``error``)."""
        rows = result.get("results") if isinstance(result.get("results"), list) else result.get("partial")
        if isinstance(rows, list):
            known = {c.name: c for c in self.children_state}
            states = [ChildState.from_result(r) for r in rows if isinstance(r, dict)]
            for state in states:
                live = known.get(state.name)
                if live is not None:  # keep the live figures and the session; take the final status
                    live.status = state.status
                    live.summary = state.summary
            if not self.children_state:
                self.children_state = states
        error = result.get("error")
        if interrupted or result.get("status") in ("blocked", "interrupted") or "partial" in result:
            self.status = "interrupted"
        elif error:
            self.status = "error"
        elif any(c.status == "budget" for c in self.children_state):
            self.status = "stopped at a limit"  # /retry (or resume) lets the ceiling's go on
        else:
            self.status = "done"
        self.summary = str(error)[:300] if error else ""
        for child in self.children_state:  # those that never ended were stopped with the call
            if child.status in ("waiting", "running") and self.status != "done":
                child.status = "interrupted"
                child.ended_at = child.ended_at or time.time()
        if self.is_mounted:
            self._draw()

    def set_summary(self, status: str, summary: str) -> None:
        self.status, self.summary = status, summary
        if self.is_mounted:
            self._draw()

    def set_result(self, result: object) -> None:  # an execute_code result: never for this block
        return

    def refresh_theme(self) -> None:
        return

    # -- drawing --------------------------------------------------------------------------

    def _draw(self) -> None:
        children = self.children_state
        count = len(children) or self.task_count
        title = Text.assemble(("delegate_task", "bold"), f" · {plural(count, 'sub-agent')}")
        if children:
            ended = sum(c.status not in ("waiting", "running") for c in children)
            running = sum(c.status == "running" for c in children)
            title.append(f" · {ended} ended" + (f" · {running} running" if running else ""), "dim")
            priced = [c for c in children if not (c.unpriced and not c.cost_usd)]
            total = dollars(sum(c.cost_usd for c in children)) if priced else "?"
            title.append(f" · {total}", "dim")
        if self.status != "running":
            title.append(f" · {self.status}", "green" if self.status == "done" else "yellow")
        if self.summary:
            title.append("\n").append_text(plain(self.summary, "dim"))
        self._title.update(title)
        width = max((len(c.name) for c in children), default=0)
        now = time.time()
        new: list[ChildRow] = []
        for child in children:
            row = self._rows.get(child.name)
            if row is None:
                row = self._rows[child.name] = ChildRow(child, child.session)
                row.state, row.name_width = child, width
                new.append(row)
            else:
                row.show(child, width, now)
        if new:
            self.mount_all(new)
        self._tick_while_running()

    def _tick_while_running(self) -> None:
        running = any(c.status == "running" for c in self.children_state) and self.status == "running"
        if running and self._timer is None:
            self._timer = self.set_interval(1.0, self._tick)
        elif not running and self._timer is not None:
            self._timer.stop()
            self._timer = None

    def _tick(self) -> None:
        now = time.time()
        for row in self._rows.values():
            if row.state.status == "running":
                row.show(now=now)

    @property
    def ticking(self) -> bool:
        """True while the elapsed times tick (some child runs)."""
        return self._timer is not None

    def rows(self) -> list[ChildRow]:
        return list(self.query(ChildRow))
