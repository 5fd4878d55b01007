"""What every tool is made of: where it runs (:class:`ToolContext`), its name, argument
model and handler (:class:`Tool`). The base of argument models is in :mod:`.args`: it is
pydantic, which comes with the tools, not with the runtime's start (issue 38)."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel

    from hermes_tui.config import Config
    from hermes_tui.runtime.approvals import ApprovalGate, FileChange
    from hermes_tui.runtime.checkpoints.book import Checkpoints
    from hermes_tui.runtime.danger.paths import Paths
    from hermes_tui.runtime.models import Origin

TOOL_NAMES: tuple[str, ...] = (
    "web_search", "web_extract", "read_file", "write_file", "search_files", "patch", "terminal",
)


if TYPE_CHECKING:
    from hermes_tui.runtime.backends.base import Remote
    from hermes_tui.runtime.sandbox import Confinement, Sandbox
    from hermes_tui.runtime.sandbox.paths import Layout


@dataclass(slots=True)
class ToolContext:
    """Where and for whom a tool runs."""

    cwd: str
    """Relative paths and terminal() commands start here (the kernel's working dir)."""
    env: dict[str, str]
    """The kernel's frozen environment (terminal() commands get it too)."""
    config: Config
    gate: ApprovalGate
    session: str
    cache_dir: Path
    kernel_id: str | None = None
    exec_id: str | None = None
    origin: Origin = "user"
    """Who started the turn: user, injected or automation (shown in approval requests)."""
    call_id: str | None = None
    """The tool call of the conversation this work belongs to (approvals are recorded under it)."""
    typed: bool = False
    """A ``!cmd`` the user typed: its terminal() call is the user's own (asks only if flagged)."""
    ask_writes: str | None = None
    """Why every file write of this call must be asked first (a top-level call of an injected
    or automation turn), or None."""
    sandbox: Sandbox | None = None
    """The sandbox processes started for this call run in (None: unconfined)."""
    tmpdir: str | None = None
    """Their temp dir (the kernel's own; else the sandbox's scratch dir)."""
    workspace: str | None = None
    """The folder they may write (the kernel's working dir; None: ``cwd``)."""
    layout: Layout | None = None
    """What they may write and read (:meth:`sandbox_layout` computes it once)."""
    remote: Remote | None = None
    """The backend the call acts on when it is not this machine (docker, ssh): ``cwd`` and
    every path are then paths there, and terminal() and the file tools run there."""
    checkpoints: Checkpoints | None = None
    """The runtime's checkpoints: taken before a write (:mod:`hermes_tui.runtime.checkpoints`)."""
    judged: list[Paths] | None = None
    """Your home and HERMES_HOME as spelled and as real paths (:meth:`judged_paths` computes it once)."""
    backend_checked: bool = False
    backend_refused: str | None = None
    """Why the file tools may not act on this machine (:meth:`backend_refusal`, computed once)."""

    def sandbox_layout(self) -> Layout:
        """What this call's processes may write and read (computed once per context). Blocking."""
        if self.layout is None:
            assert self.sandbox is not None
            self.layout = self.sandbox.layout(self.workspace or self.cwd,
                                              self.tmpdir or self.sandbox.scratch or self.cwd, self.cwd)
        return self.layout

    def judged_paths(self) -> list[Paths]:
        """:func:`~hermes_tui.runtime.danger.paths.variants` of your home and HERMES_HOME, by
        which a read is judged (once per context: four path lookups a call, issue 38). Blocking."""
        if self.judged is None:
            from hermes_tui.runtime.danger.paths import variants

            self.judged = variants(None, str(self.gate.home) if self.gate is not None else None)
        return self.judged

    def backend_refusal(self) -> str | None:
        """Why ``terminal.backend`` keeps the file tools off this machine (None: it does not)."""
        if not self.backend_checked:
            from hermes_tui.config.notes import backend_refusal

            self.backend_refused = backend_refusal(self.config.terminal)
            self.backend_checked = True
        return self.backend_refused

    def resolve(self, path: str) -> Path:
        """``path`` made absolute against the working dir (``~`` expanded; on a remote backend
        a ``~`` path is left for the far end, whose home it is)."""
        if self.remote is not None:
            return Path(path) if path.startswith("~") else Path(self.cwd) / path
        if path.startswith("~"):
            path = os.path.expanduser(path)
        # One Path built from a string: three Path operations cost a tool call 10 µs (issue 38).
        return Path(path if path.startswith("/") else os.path.join(self.cwd, path))


async def checkpoint_begin(ctx: ToolContext, reason: str, detail: str) -> Any:
    """A checkpoint of the folders ``ctx``'s session writes, before ``reason`` runs (None: none taken)."""
    from hermes_tui.runtime.models import parent_session

    if ctx.checkpoints is None or not ctx.checkpoints.active:
        return None
    return await ctx.checkpoints.begin(parent_session(ctx.session), reason, detail, cwd=ctx.workspace or ctx.cwd,
                                       call_id=ctx.call_id)


async def checkpoint_end(ctx: ToolContext, checkpoint: Any) -> None:
    """The call a checkpoint preceded ended: what it changed is recorded as its own."""
    if ctx.checkpoints is not None:
        await ctx.checkpoints.end(checkpoint)


Confiner = Callable[[], "Confinement"]
"""Makes the confinement of one process (blocking; each process needs its own)."""


def read_only_confiner(ctx: ToolContext) -> Confiner | None:
    """How a helper process that only reads (ripgrep) is confined for ``ctx`` (None: no sandbox)."""
    return ctx.sandbox.reader(ctx.cwd, ctx.tmpdir) if ctx.sandbox is not None else None


Handler = Callable[[ToolContext, Any], Awaitable[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool's name, argument model and handler.

    ``blocking``, when set, does the same work synchronously: the socket transport calls it on
    its own thread (never the event loop's), which saves two thread hand-offs per call. It
    returns None when the call must be approved first (a read of a credentials file): only the
    event loop can ask, so the call is then run there, through ``handler``.
    """

    name: str
    args: type[BaseModel]
    handler: Handler
    blocking: Callable[[ToolContext, Any], dict[str, Any] | None] | None = None
    writes: Callable[[ToolContext, Any], list[str]] | None = None
    """The files a call would write, at their real paths (symlinked directories followed, as
    the write will): one that holds keys, rules or start-up code must be approved first (like
    a terminal command writing it). Files a call reads to compute what it writes (``patch``)
    are listed too, so a credentials file cannot be read through an edit unasked."""
    preview: Callable[[ToolContext, Any], tuple[list[FileChange], str]] | None = None
    """The files a call would write, with their sizes, and the diff it would make (blocking):
    what the approval dialog shows."""
