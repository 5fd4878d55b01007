"""Records the runtime returns: :class:`ExecResult` and :class:`KernelInfo` (msgspec structs
with pydantic's methods: hermes_tui/base/structs.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

import msgspec

from hermes_tui.base.structs import Record

# Importers find these here too (their own module imports nothing: the first screen needs them).
from hermes_tui.runtime.session_names import SUBAGENT_SEPARATOR, is_subagent_session, parent_session  # noqa: F401

ExecStatus = Literal["success", "error", "timeout", "interrupted"]
Origin = Literal["user", "injected", "automation"]
"""Who started a turn: typed by the user, injected from outside, or automation (SPEC §4)."""
KernelState = Literal["starting", "idle", "busy", "interrupting", "dead", "error"]


class KernelRef(Record, kw_only=True):
    """Which kernel ran an execution, and what became of its state."""

    id: str | None
    """Kernel id, or None when the call ran as a standalone process."""
    reused: bool
    """True when the kernel had run scripts before (its state was available)."""
    execution_count: int
    """Scripts this kernel has run, this one included."""
    state_reset: bool
    """True when this call started on a fresh kernel where an earlier one of the same
    session had state that is now gone (reset, timeout, interrupt, reaped, evicted, died)."""


class ExecResult(Record, kw_only=True):
    """The outcome of one ``execute_code`` call (serialised as JSON for the model)."""

    status: ExecStatus
    output: str
    """stdout capped head/tail (and stderr after it on failure), plus any notice."""
    tool_calls_made: int = 0
    duration_seconds: float
    exit_code: int | None = None
    error: str | None = None
    warning: str | None = None
    stdout_truncated: bool = False
    stdout_bytes_total: int = 0
    stdout_spill_path: str | None = None
    stdout_spill_bytes: int | None = None
    """When the saved file stops short (``max_spill_bytes``, ``max_cache_bytes``): the bytes
    it holds. None: it holds the whole output (or nothing was saved)."""
    kernel: KernelRef
    exec_id: str
    """Names this run's record in ``$HERMES_HOME/cache/exec`` (``<exec_id>.json``)."""
    sandbox: str | None = None
    """The sandbox the script ran in (``workspace-write·bwrap``, ``read-only·landlock``,
    ``off``, or ``unavailable`` when it was refused for want of one)."""


class KernelInfo(Record, kw_only=True):
    """A snapshot of one kernel, for lists and the kernels pane."""

    id: str
    key: str
    """The reuse key: session | mode | interpreter | cwd | tools."""
    session: str
    mode: str
    interpreter: str
    cwd: str
    pid: int | None
    state: KernelState
    started_at: datetime
    last_used: datetime
    execution_count: int
    idle_deadline: datetime | None
    """When it will be reaped if it stays idle (None while busy or starting)."""
    subagent: bool = False
    """A sub-agent's kernel (session ``PARENT::child::NAME``): not counted against the cap."""
    next_to_evict: bool = False
    """The one a new kernel would evict now, if the cap is reached."""
    stale_env: bool = False
    """The names let into kernels changed after this one started: reset it to see them."""
    tools: list[str] = msgspec.field(default_factory=list)
    """The tools its ``hermes_tools`` module offers."""
    sandbox: str = "off"
    """The sandbox it runs in (``workspace-write·bwrap``..., ``off``; ``docker``, ``ssh: none
    on the remote`` for a kernel elsewhere)."""
    where: str = "local"
    """Where it runs: ``local``, ``docker:<short id>``, ``ssh:user@host``."""
    skill_env: list[str] = msgspec.field(default_factory=list)
    """Variables in its environment that only a skill's ``required_environment_variables``
    let in (secrets included): shown, because a script can write a skill file."""


