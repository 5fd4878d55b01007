"""Everything a process needs before a script runs in it: its key, environment and tool channel.

One :class:`Launcher` per runtime. The pool asks it to ready a new kernel, the executor to
ready a standalone process (when no kernel can start) and to make the :class:`ToolContext`
of each execution; the runtime asks it for the context of a top-level tool call. Nothing here
calls back up into the runtime: the launcher is handed what it needs when it is made.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from hermes_tui.config import Config
from hermes_tui.runtime.approvals import ApprovalGate
from hermes_tui.runtime.backends import JupyterBackend, backend_for
from hermes_tui.runtime.backends.base import Place, Remote
from hermes_tui.runtime.checkpoints.book import Checkpoints
from hermes_tui.runtime.envs import HERMES_PASS, build_child_env, is_safe_name
from hermes_tui.runtime.events import EventBus, ToolCallMade
from hermes_tui.runtime.interpreters import Choice, project_interpreter
from hermes_tui.runtime.kernel import STAGING_CWD, Kernel, KernelKey
from hermes_tui.runtime.child_process import ChildProcess
from hermes_tui.runtime.models import Origin
from hermes_tui.runtime.rpc import ExecBudget, RpcServer, ToolHost, new_token, open_rpc
from hermes_tui.runtime.sandbox import Sandbox
from hermes_tui.runtime.skills import required_env, required_env_names
from hermes_tui.runtime.stub import stage_tools_module
from hermes_tui.runtime.tools import ToolContext


class Launcher:
    """Keys, environments, tool channels and tool contexts for one runtime.

    Args:
        config: the runtime's config (read on each use, so reloads apply).
        home: ``HERMES_HOME``.
        host_env: the environment children are derived from (None: ``os.environ``).
        bus: where :class:`ToolCallMade` events go.
        gate: the approval gate tool calls pass.
        cache_dir: ``$HERMES_HOME/cache/exec``.
    """

    def __init__(
        self, config: Config, home: Path, host_env: Mapping[str, str] | None, *, bus: EventBus, gate: ApprovalGate,
        cache_dir: Path,
    ) -> None:
        self.config = config
        self.home = home
        self._host_env = host_env
        self.bus = bus
        self.gate = gate
        self.checkpoints: Checkpoints | None = None
        """The runtime's checkpoints, given to every tool call's context."""
        self.cache_dir = cache_dir
        self._interpreters: dict[tuple[str | None, str | None], Choice] = {}
        self._announced: set[str] = set()
        settings = config.code_execution
        self.sandbox = Sandbox(settings.sandbox, network=settings.network, writable_roots=settings.writable_roots,
                               deny_read=settings.deny_read, hermes_home=str(home))
        self.sandbox.instructions = config.security.instruction_patterns
        """The sandbox every process a script or the model starts runs in (probed by the runtime)."""
        self.backend = backend_for(config, home)
        """Where kernels and commands run (``terminal.backend``)."""

    @property
    def sandbox_label(self) -> str:
        """What confines scripts: the sandbox's label here; ``docker`` or ``ssh: none on the
        remote`` when kernels run elsewhere."""
        return self.backend.sandbox_label if self.backend.remote else self.sandbox.label

    @property
    def host_env(self) -> Mapping[str, str]:
        """The environment children are derived from."""
        return os.environ if self._host_env is None else self._host_env

    # -- which kernel ---------------------------------------------------------------------

    async def key(
        self, session: str, mode: str, cwd: str | Path | None, tools: tuple[str, ...]
    ) -> tuple[KernelKey, str | None]:
        """The reuse key of a script's kernel, and a warning to give if a new one starts
        (e.g. which interpreter project mode fell back to)."""
        folder = os.path.abspath(cwd if cwd is not None else os.getcwd())
        backend = self.backend
        if backend.remote:  # its python3, a cwd there (strict: its own folder there)
            there = STAGING_CWD if mode == "strict" else backend.remote_cwd()
            return KernelKey(session, mode, "python3", there, tools, backend.describe(), folder), None
        if mode == "strict":
            # Strict: a private temp dir as cwd (made per kernel) and the host's Python.
            return KernelKey(session, mode, sys.executable, STAGING_CWD, tools, backend.describe()), None
        env = self.host_env
        which = (env.get("VIRTUAL_ENV"), env.get("CONDA_PREFIX"))
        choice = self._interpreters.get(which)
        if choice is None:  # probed once per environment, in a thread
            choice = self._interpreters[which] = await asyncio.to_thread(project_interpreter, dict(env),
                                                                         self.sandbox.reader(self.sandbox.scratch
                                                                                             or str(self.home)))
        return KernelKey(session, mode, choice.path, folder, tools, backend.describe()), choice.warning

    # -- environment ----------------------------------------------------------------------

    def allowed_names(self) -> frozenset[str]:
        """Names let in by exact name: env_passthrough and skills' requirements. Blocking."""
        return frozenset(self.config.terminal.env_passthrough) | required_env_names(self.home)

    def skill_grants(self) -> tuple[frozenset[str], dict[str, str]]:
        """The names let in by exact name, and those of them that only a skill lets in and
        that would carry a value the defaults keep out (name -> the skill). Blocking."""
        passthrough = frozenset(self.config.terminal.env_passthrough)
        from_skills = required_env(self.home)
        env = self.host_env
        granted = {name: skill for name, skill in from_skills.items()
                   if name in env and name not in passthrough and not _passes_by_default(name)}
        return passthrough | frozenset(from_skills), granted

    def child_env(self, allowed: frozenset[str]) -> dict[str, str]:
        """The scrubbed environment of a child (SPEC §3), with ``allowed`` names let in."""
        inject = {"HERMES_HOME": str(self.home), "HOME": os.path.expanduser("~")}
        if "TZ" in self.host_env:
            inject["TZ"] = self.host_env["TZ"]
        return build_child_env(self.host_env, passthrough=allowed, inject=inject)

    # -- readying processes ---------------------------------------------------------------

    async def prepare_kernel(self, kernel: Kernel) -> None:
        """Environment (frozen now) and tool channel of a kernel about to start."""
        allowed, granted = await asyncio.to_thread(self.skill_grants)
        kernel.allowed_names = allowed
        kernel.skill_env = granted
        # A skill file is something a script can write: a secret it lets in is said once.
        kernel.new_skill_env = {name: skill for name, skill in granted.items() if name not in self._announced}
        self._announced |= kernel.new_skill_env.keys()
        await asyncio.to_thread(kernel.staging_dir.mkdir, mode=0o700, parents=True, exist_ok=True)
        kernel.rpc = await self._open_tools(kernel.staging_dir / "rpc", kernel.token, kernel.key.tools,
                                            lambda: kernel.budget)
        kernel.rpc.owner.pid = lambda: kernel.pid
        backend = self.backend
        if isinstance(backend, JupyterBackend):  # the process here is the relay of a Jupyter kernel
            if backend.remote:
                kernel.jupyter_auth = await backend.token()
            else:
                kernel.jupyter = await asyncio.to_thread(backend.relay_spec, None)
        if self.backend.remote:  # the process here is the relay: it gets what its client needs
            kernel.place = await self.backend.acquire(kernel.key.session, kernel.key.host_cwd)
            if isinstance(backend, JupyterBackend):
                kernel.jupyter = backend.relay_spec(kernel.place)
            kernel.env = {**self.backend.client_env(self.host_env), **kernel.rpc.env()}
            kernel.remote_env = self.backend.forwarded(self.host_env)
            return
        kernel.env = {**self.child_env(allowed), **kernel.rpc.env()}
        kernel.sandbox = self.sandbox

    async def prepare_standalone(
        self, child: ChildProcess, key: KernelKey, folder: Path, allowed: frozenset[str],
        current: Callable[[], ExecBudget | None],
    ) -> RpcServer:
        """Environment and tool channel of a standalone process (when no kernel can start)."""
        token = new_token()
        server = await self._open_tools(folder / "rpc", token, key.tools, current)
        server.owner.pid = lambda: child.pid
        child.env = {**self.child_env(allowed), **server.env()}
        await asyncio.to_thread(stage_tools_module, folder, {**server.stub_config(), "tools": list(key.tools)})
        return server

    async def _open_tools(
        self, folder: Path, token: str, tools: tuple[str, ...], current: Callable[[], ExecBudget | None]
    ) -> RpcServer:
        host = ToolHost(token, tools, current, counted=self._counter(asyncio.get_running_loop()))
        # A kernel elsewhere reaches the tools through its relay, which speaks the socket's protocol.
        transport = "socket" if self.backend.remote else self.config.code_execution.rpc_transport
        return await open_rpc(transport, host, folder)

    def _counter(self, loop: asyncio.AbstractEventLoop) -> Callable[[str, ExecBudget], None]:
        """Announces each counted tool call as an event, from whichever thread counted it."""
        bus = self.bus

        def counted(tool: str, budget: ExecBudget) -> None:
            if not bus.active:
                return  # nobody listens: no event, no wake-up of the loop
            event = ToolCallMade(exec_id=budget.exec_id, session=budget.context.session, tool=tool,
                                 calls=budget.calls)
            with contextlib.suppress(RuntimeError):  # the loop has closed: nobody to tell
                loop.call_soon_threadsafe(bus.publish, event)

        return counted

    # -- where tools run ------------------------------------------------------------------

    def tool_context(
        self, *, cwd: str, env: dict[str, str], session: str, origin: Origin, kernel_id: str | None = None,
        exec_id: str | None = None, call_id: str | None = None, tmpdir: str | None = None,
        place: Place | None = None, far: Any = None, remote_home: str | None = None,
    ) -> ToolContext:
        """Where and for whom a tool call runs (a script's, or a top-level one). On a remote
        backend ``cwd`` is this machine's folder of a top-level call (the call then acts in
        ``terminal.cwd`` there) or, with the kernel's ``place``, the kernel's cwd there (and
        ``far``, its ``Kernel.far``: file operations over its own connection)."""
        context = ToolContext(
            cwd=cwd, env=env, config=self.config, gate=self.gate, session=session, cache_dir=self.cache_dir,
            kernel_id=kernel_id, exec_id=exec_id, origin=origin, call_id=call_id, sandbox=self.sandbox,
            tmpdir=tmpdir, workspace=cwd, checkpoints=self.checkpoints,
        )
        backend = self.backend
        if backend.remote:
            host_cwd = place_cwd = cwd
            if place is None:
                place_cwd = backend.remote_cwd()
            context.remote = Remote(backend, session, host_cwd, place, env=backend.forwarded(self.host_env),
                                    home=remote_home, client=backend.client_env(self.host_env), via=far)
            context.cwd = context.workspace = place_cwd
            context.env = backend.client_env(self.host_env)
            context.sandbox = None  # the backend is the boundary: the host's sandbox is not where it runs
        return context


def _passes_by_default(name: str) -> bool:
    """True when a kernel gets ``name`` without anyone naming it."""
    return name in HERMES_PASS if name.startswith("HERMES_") else is_safe_name(name)
