"""The kernels pane: every kernel, its state, memory, idle time, countdown to reaping and sandbox."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message

from hermes_tui.runtime.session_names import SUBAGENT_SEPARATOR, parent_session
from hermes_tui.base.units import short_duration
from hermes_tui.tui.widgets.focus_frame import FocusFrame

if TYPE_CHECKING:
    from hermes_tui.runtime.models import KernelInfo
    from hermes_tui.tui.widgets.kernel_table import KernelTable

GLYPHS = {"idle": "○", "busy": "●", "interrupting": "◐", "starting": "◍", "dead": "⨂", "error": "☹"}
COLUMNS = ("state", "id", "idle", "reaped in", "memory", "session", "mode", "sandbox", "pid", "runs", "flags",
           "cwd", "python", "where")
"""The cells of a row, each column's key its label."""
SHOWN_ORDER = (0, 1, 5, 4, 2, 3, 6, 7, 8, 9, 10, 11, 12, 13)
"""The columns left to right, the most useful first: state and id always, then the session (a
sub-agent's kernel shows as ``└ NAME`` there), memory, idle time and countdown; as many as fit
the pane (at 80 columns: state, id and the session), the rest to the right (Left/Right move
the columns sideways; F8 or a wider screen shows more)."""
SESSION_CELLS = 16
"""The session column's width when not every column fits: the memory fits beside it at 80 columns."""


def _memory(size: int | None) -> str:
    if size is None:
        return "—"
    return f"{size / (1 << 20):.0f} MB" if size < (10 << 30) else f"{size / (1 << 30):.1f} GB"


def grouped(kernels: list[KernelInfo]) -> list[KernelInfo]:
    """The kernels in the order given, each session's sub-agent kernels right after the last
    kernel of its top-level session (a grandchild after its parent); those whose session has
    no kernel of its own at the end, grouped the same way."""
    children: dict[str, list[KernelInfo]] = {}
    for info in kernels:
        if SUBAGENT_SEPARATOR in info.session:
            children.setdefault(parent_session(info.session), []).append(info)
    tops = [info for info in kernels if SUBAGENT_SEPARATOR not in info.session]
    rows: list[KernelInfo] = []
    for index, info in enumerate(tops):
        rows.append(info)
        if index + 1 == len(tops) or tops[index + 1].session != info.session:
            rows.extend(sorted(children.pop(info.session, []), key=lambda k: k.session.split(SUBAGENT_SEPARATOR)))
    for orphans in children.values():
        rows.extend(sorted(orphans, key=lambda k: k.session.split(SUBAGENT_SEPARATOR)))
    return rows


def session_cell(info: KernelInfo, under_parent: bool = True) -> str:
    """The session column: a sub-agent's kernel as ``└ NAME`` under its parent's (indented per
    level; the session's random part left out: the name is what fits a narrow pane). One whose
    parent has no kernel shown says whose it is: ``NAME (sub-agent of PARENT)``."""
    parts = info.session.split(SUBAGENT_SEPARATOR)
    if len(parts) < 2:
        return info.session
    name = parts[-1].split("-", 1)[-1]  # CALL-NAME: the call id's last characters, then the name
    if not under_parent:
        return f"{name} (sub-agent of {parent_session(info.session)})"
    return "  " * (len(parts) - 2) + "└ " + name


class KernelsPane(FocusFrame, Vertical):
    """A table of kernels, fed by the app every second (it never reads processes itself)."""

    ALLOW_MAXIMIZE = True
    DEFAULT_CSS = """
    /* The subtitle ("N live") would take the faint border's colour: unreadable on a light theme. */
    KernelsPane { border: round $panel-lighten-2; border-title-color: $primary; border-subtitle-color: $text-muted; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "act('reset')", "Reset", id="kernel-reset"),
        Binding("i", "act('interrupt')", "Interrupt", id="kernel-interrupt"),
        Binding("k", "act('kill')", "Kill", id="kernel-kill"),
        Binding("v", "act('variables')", "Variables", id="kernel-variables"),
    ]

    class Action(Message):
        """The user asked for ``action`` (reset, interrupt, kill, variables) on a kernel."""

        def __init__(self, kernel_id: str, action: str) -> None:
            super().__init__()
            self.kernel_id = kernel_id
            self.action = action

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.border_title = "kernels"
        self.kernels: list[KernelInfo] = []
        self.memory: dict[str, int] = {}

    @staticmethod
    def _cells(info: KernelInfo, memory: dict[str, int], now: datetime, under_parent: bool = True) -> tuple[str, ...]:
        idle = (now - info.last_used).total_seconds() if info.state == "idle" else 0
        countdown = short_duration((info.idle_deadline - now).total_seconds()) if info.idle_deadline else "—"
        flags = " ".join(f for f, on in (("interrupting…", info.state == "interrupting"),
                                         ("next-evicted", info.next_to_evict), ("stale-env", info.stale_env),
                                         ("sub-agent", info.subagent),
                                         ("env-from-skills:" + ",".join(info.skill_env), bool(info.skill_env)))
                         if on)
        # Session names, paths and ids are data: the table shows them as plain text, control
        # characters as escapes (kernel_table.cell_text), never as markup.
        return (GLYPHS.get(info.state, "?"), info.id, short_duration(idle) if idle else "—", countdown,
                _memory(memory.get(info.id)), session_cell(info, under_parent), info.mode, info.sandbox, str(info.pid or "—"),
                str(info.execution_count), flags, info.cwd, info.interpreter, info.where)

    def compose(self) -> ComposeResult:
        return iter(())  # the table comes right after the first frame (on_mount)

    def on_mount(self) -> None:
        # A session starts with no kernel: the table (the first screen's heaviest widget, about
        # 10 ms of styling and layout) is mounted right after the first frame (issue 20).
        self.call_after_refresh(self.table)

    def table(self) -> KernelTable:
        """The kernels table (mounted now if it is not yet)."""
        from hermes_tui.tui.widgets.kernel_table import KernelTable

        found = self.query("#kernel-table")
        if found:
            return found.first(KernelTable)
        table = KernelTable(COLUMNS, order=SHOWN_ORDER, pinned=2, caps={5: SESSION_CELLS}, id="kernel-table")
        if self.is_attached:  # (not once the app is closing)
            self.mount(table)
        return table

    def update_kernels(self, kernels: list[KernelInfo], memory: dict[str, int], now: datetime | None = None) -> None:
        """Show these kernels (``now`` fixes the clock, for tests). Only the rows that changed
        are drawn again (each second an idle time ticks; a run starts and ends)."""
        self.kernels, self.memory = kernels, memory
        now = now or datetime.now()
        tops = {info.session for info in kernels if SUBAGENT_SEPARATOR not in info.session}
        self.table().set_rows([(info.id, self._cells(info, memory, now, parent_session(info.session) in tops))
                               for info in grouped(kernels)])
        self.border_subtitle = f"{len(kernels)} live"

    def selected_id(self) -> str | None:
        """The id of the kernel the table's cursor is on (None: there is none)."""
        return self.table().selected_key

    def action_act(self, action: str) -> None:
        kernel_id = self.selected_id()
        if kernel_id is None:
            self.notify("No kernel is selected.")
            return
        self.post_message(self.Action(kernel_id, action))
