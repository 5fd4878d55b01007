"""Runtime: the headless engine the app and the CLI drive (no Textual here, ever)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from hermes_tui.config import Config, load_config
from hermes_tui.paths import exec_cache_dir, hermes_home
from hermes_tui.runtime.approvals import ApprovalGate, Approver, Origin, SessionKind
from hermes_tui.runtime.envs import build_child_env
from hermes_tui.runtime.events import EventBus, Subscription
from hermes_tui.runtime.executor import DISPOSED_NOTICE, INTERRUPT_NOTICE, Executor
from hermes_tui.runtime.interpreters import Choice, project_interpreter
from hermes_tui.runtime.kernel import STAGING_CWD, ChildProcess, Kernel, KernelKey
from hermes_tui.runtime.models import ExecResult, KernelInfo, parent_session
from hermes_tui.runtime.pool import KernelPool
from hermes_tui.runtime.rpc import ExecBudget, RpcServer, ToolHost, new_token, open_rpc
from hermes_tui.runtime.skills import required_env_names
from hermes_tui.runtime.stub import stage_tools_module
from hermes_tui.runtime.tools import TOOL_NAMES


class Runtime:
    """Runs scripts in persistent session kernels.

    Use it as an async context manager::

        async with Runtime(load_config()) as rt:
            await rt.execute_code("x = 41", session="s1")
            r = await rt.execute_code("print(x + 1)", session="s1")  # r.output == "42\\n"

    Args:
        config: the loaded config (defaults if None).
        home: ``HERMES_HOME`` (default: the environment's, else ``~/.hermes``).
        host_env: the environment kernels are derived from (default ``os.environ``).
        approver: answers approval requests; None denies everything that must ask.
        session_kind: ``local`` (CLI, TUI, desktop) or ``gateway`` (every script is asked first).
    """

    def __init__(
        self,
        config: Config | None = None,
        *,
        home: Path | None = None,
        host_env: dict[str, str] | None = None,
        approver: Approver | None = None,
        session_kind: SessionKind = "local",
    ) -> None:
        if session_kind not in ("local", "gateway"):
            raise ValueError(f"session_kind must be 'local' or 'gateway', not {session_kind!r}")
        self.config = config or Config()
        self.home = home or hermes_home()
        self.cache_dir = exec_cache_dir(self.home)
        self.bus = EventBus()
        self.gate = ApprovalGate(approver, self.config, self.home, session_kind)
        self._host_env = host_env
        self._staging_root: Path | None = None
        self._pool: KernelPool | None = None
        self._executor: Executor | None = None
        self._interpreters: dict[tuple[str | None, str | None], Choice] = {}
        self._starting: asyncio.Future[None] | None = None

    @property
    def host_env(self) -> dict[str, str] | os._Environ[str]:
        """The environment kernels are derived from."""
        return os.environ if self._host_env is None else self._host_env

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> Runtime:
        """Prepare directories; kernels start lazily on first use. Safe to call concurrently."""
        if self._executor is not None:  # set last: everything is ready
            return self
        if self._starting is None:
            self._starting = asyncio.ensure_future(self._start())
        await asyncio.shield(self._starting)
        return self

    async def _start(self) -> None:
        await self.gate.load_rules()
        self._staging_root = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="hermes-tui-"))
        await asyncio.to_thread(self.cache_dir.mkdir, parents=True, exist_ok=True)
        self._pool = KernelPool(
            self.config.code_execution, prepare=self._prepare_kernel, staging_root=self._staging_root, bus=self.bus
        )
        self._pool.allowed_names = await asyncio.to_thread(self._allowed_names)
        self._executor = Executor(
            self._pool, bus=self.bus, cache_dir=self.cache_dir, staging_root=self._staging_root,
            config=self.config, gate=self.gate, prepare_standalone=self._prepare_standalone,
        )

    async def aclose(self) -> None:
        """Stop every running script and kernel, then remove the staging directory."""
        if self._starting is not None and not self._starting.done():
            await asyncio.wait({self._starting})  # a start under way finishes first
        if self._pool is None or self._executor is None:
            return
        for session in {r.session for r in self._executor.running.values()}:
            self._executor.interrupt(session, DISPOSED_NOTICE)
        await self._pool.close()
        await asyncio.to_thread(self._executor.records.close)
        if self._staging_root is not None:
            await asyncio.to_thread(shutil.rmtree, self._staging_root, True)
        self.bus.close()
        self._pool = None
        self._executor = None
        self._starting = None

    async def __aenter__(self) -> Runtime:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def yolo(self) -> bool:
        """True when approvals are off: the UI shows a permanent YOLO badge."""
        return self.gate.yolo

    async def reload(self, config: Config | None = None) -> None:
        """Take a new config (default: re-read config.yaml) and re-read skills.

        Running kernels keep the environment they started with; those whose allowed names
        changed show ``stale_env`` until they are reset. Approval settings and rules are NOT
        taken from a reload (a script may have written the file): see :meth:`reload_approvals`.
        """
        new = config or await asyncio.to_thread(load_config, self.config.source)
        for section in ("code_execution", "terminal", "approvals", "web", "model"):
            setattr(self.config, section, getattr(new, section))
        self.config.command_allowlist = new.command_allowlist
        if self._pool is not None:
            self._pool.config = self.config.code_execution
            self._pool.allowed_names = await asyncio.to_thread(self._allowed_names)

    async def reload_approvals(self) -> None:
        """Apply approvals.mode/timeout and re-read the allow rules: a deliberate user action."""
        await self.gate.load_rules()

    # -- the API --------------------------------------------------------------------------

    async def execute_code(
        self,
        code: str,
        *,
        session: str = "default",
        reset: bool = False,
        timeout: float | None = None,
        cwd: str | Path | None = None,
        mode: str | None = None,
        tools: Iterable[str] | None = None,
        origin: Origin = "user",
    ) -> ExecResult:
        """Run ``code`` in the session's kernel and return its :class:`ExecResult`.

        Never raises for anything the script does (errors, timeouts, crashes, exits).

        Args:
            code: the script.
            session: whose kernel (``PARENT::child::NAME`` for a sub-agent's).
            reset: discard the session's kernel first and start a fresh one.
            timeout: seconds (default ``code_execution.timeout``).
            cwd: working directory in project mode (default: the host's).
            mode: ``project`` or ``strict`` (default ``code_execution.mode``).
            tools: the tools ``hermes_tools`` offers (default all seven).
            origin: ``user`` (typed), ``injected`` or ``automation``: in a local session the
                last two have the whole script approved first (always, in a gateway session).

        Raises:
            ValueError: for a bad ``mode``, ``timeout`` or tool name (the caller's mistake).
        """
        await self.start()
        assert self._executor is not None
        settings = self.config.code_execution
        mode = mode or settings.mode
        if mode not in ("project", "strict"):
            raise ValueError(f"mode must be 'project' or 'strict', not {mode!r}")
        if origin not in ("user", "injected", "automation"):
            raise ValueError(f"origin must be 'user', 'injected' or 'automation', not {origin!r}")
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be a number of seconds > 0, not {timeout!r}")
        enabled = self._tool_set(tools)
        key, warning = await self._key(session, mode, cwd, enabled)
        return await self._executor.execute(
            code, key, reset=reset, timeout=timeout or settings.timeout, max_tool_calls=settings.max_tool_calls,
            start_warning=warning, origin=origin,
        )

    def kernels(self) -> list[KernelInfo]:
        """A snapshot of every live kernel."""
        return self._pool.infos() if self._pool else []

    async def interrupt(self, session: str) -> int:
        """End the running script(s) of ``session`` (status ``interrupted``); returns how many."""
        return self._executor.interrupt(session, INTERRUPT_NOTICE) if self._executor else 0

    async def dispose_session(self, session: str) -> None:
        """End the session's kernels (and its sub-agents') now, stopping running scripts."""
        if self._pool is None or self._executor is None:
            return
        self._executor.interrupt(session, DISPOSED_NOTICE)
        await self._pool.end_kernels(self._pool.of_session(session), "was disposed with its session", remember=False)
        self.gate.forget_session(session)

    async def kill_kernel(self, kernel_id: str, reason: str = "was killed by the user") -> bool:
        """End one kernel now (a running script on it ends as interrupted)."""
        kernel = self._pool.get(kernel_id) if self._pool else None
        if kernel is None or self._executor is None or self._pool is None:
            return False
        for running in self._executor.running.values():
            if running.kernel is kernel and not running.interrupt.done():
                running.interrupt.set_result(f"[execution interrupted — kernel {reason}]")
        await self._pool.end_kernels([kernel], reason)
        return True

    def tool_calls(self, exec_id: str) -> int | None:
        """Tool calls made so far by a running execution (None once it has finished)."""
        running = self._executor.running.get(exec_id) if self._executor else None
        budget = running.kernel.budget if running and running.kernel else None
        return budget.calls if budget is not None and budget.exec_id == exec_id else None

    async def inspect_kernel(self, kernel_id: str) -> list[dict[str, object]]:
        """The variables of an idle kernel: name, type, short repr, size, len.

        Asked of the kernel without touching its namespace. Raises ``LookupError`` for an
        unknown kernel and ``RuntimeError`` while it runs a script.
        """
        kernel = self._pool.get(kernel_id) if self._pool else None
        if kernel is None or not kernel.alive:
            raise LookupError(f"no live kernel {kernel_id}")
        if kernel.lock.locked():
            raise RuntimeError(f"kernel {kernel_id} is running a script; try again when it is idle")
        async with kernel.lock:
            return await kernel.inspect()

    async def kernel_memory(self) -> dict[str, int]:
        """Resident memory in bytes of each live kernel (read off /proc in a thread)."""
        pids = {k.id: k.pid for k in self.kernels() if k.pid}

        def read() -> dict[str, int]:
            page = os.sysconf("SC_PAGE_SIZE")
            sizes = {}
            for kernel_id, pid in pids.items():
                try:
                    with open(f"/proc/{pid}/statm") as handle:
                        sizes[kernel_id] = int(handle.read().split()[1]) * page
                except (OSError, ValueError, IndexError):
                    continue
            return sizes

        return await asyncio.to_thread(read)

    async def terminal(
        self, command: str, *, session: str = "default", cwd: str | Path | None = None, timeout: float | None = None,
        origin: Origin = "user",
    ) -> dict[str, object]:
        """Run one shell command at the top level (``!cmd``, or the model's ``terminal`` call),
        through the same approval gate as ``terminal()`` in scripts. Returns the tool's dict."""
        args: dict[str, object] = {"command": command}
        if timeout is not None:
            args["timeout"] = timeout
        return await self.call_tool("terminal", args, session=session, cwd=cwd, origin=origin)

    async def call_tool(
        self, name: str, args: dict[str, object], *, session: str = "default", cwd: str | Path | None = None,
        origin: Origin = "user",
    ) -> dict[str, object]:
        """Run one of the seven tools at the top level (a model's direct call), as a script's
        call would run: validated, approved where needed, never raising. In an injected or
        automation turn a call that writes files is asked first, like a whole script."""
        await self.start()
        from hermes_tui.runtime.tools import ToolContext, call_tool

        folder = os.path.abspath(cwd if cwd is not None else os.getcwd())
        if origin != "user" and name in ("write_file", "patch"):
            refusal = await self.gate.check_script(f"{name}({json.dumps(args, ensure_ascii=False)})", cwd=folder,
                                                   session=session, origin=origin, exec_id=None)
            if refusal is not None:
                return {"error": f"BLOCKED: {refusal}"}
        context = ToolContext(
            cwd=folder, env=self._child_env(self._pool.allowed_names if self._pool else frozenset()),
            config=self.config, gate=self.gate, session=session, cache_dir=self.cache_dir, origin=origin,
        )
        return await call_tool(name, dict(args), context)

    async def flush_records(self) -> None:
        """Wait until the records of every execution so far are written to the cache dir."""
        if self._executor is not None:
            await asyncio.to_thread(self._executor.records.flush)

    def subscribe(self) -> Subscription:
        """Receive runtime events from now on (bounded; close it when done)."""
        return self.bus.subscribe()

    def session_of(self, kernel_id: str) -> str | None:
        """The top-level session a kernel belongs to."""
        kernel = self._pool.get(kernel_id) if self._pool else None
        return parent_session(kernel.key.session) if kernel else None

    # -- kernels: key, environment, tool channel ------------------------------------------

    @staticmethod
    def _tool_set(tools: Iterable[str] | None) -> tuple[str, ...]:
        if tools is None:
            return TOOL_NAMES
        chosen = set(tools)
        unknown = chosen - set(TOOL_NAMES)
        if unknown:
            raise ValueError(f"unknown tool(s) {sorted(unknown)}; the tools are {', '.join(TOOL_NAMES)}")
        return tuple(name for name in TOOL_NAMES if name in chosen)

    async def _key(
        self, session: str, mode: str, cwd: str | Path | None, tools: tuple[str, ...]
    ) -> tuple[KernelKey, str | None]:
        if mode == "strict":
            # Strict: a private temp dir as cwd (made per kernel) and the host's Python.
            return KernelKey(session, mode, sys.executable, STAGING_CWD, tools), None
        env = self.host_env
        which = (env.get("VIRTUAL_ENV"), env.get("CONDA_PREFIX"))
        choice = self._interpreters.get(which)
        if choice is None:  # probed once per environment, in a thread
            choice = self._interpreters[which] = await asyncio.to_thread(project_interpreter, dict(env))
        folder = os.path.abspath(cwd if cwd is not None else os.getcwd())
        return KernelKey(session, mode, choice.path, folder, tools), choice.warning

    def _allowed_names(self) -> frozenset[str]:
        """Names let in by exact name: env_passthrough and skills' requirements. Blocking."""
        return frozenset(self.config.terminal.env_passthrough) | required_env_names(self.home)

    def _child_env(self, allowed: frozenset[str]) -> dict[str, str]:
        inject = {"HERMES_HOME": str(self.home), "HOME": os.path.expanduser("~")}
        if "TZ" in self.host_env:
            inject["TZ"] = self.host_env["TZ"]
        return build_child_env(self.host_env, passthrough=allowed, inject=inject)

    async def _open_tools(
        self, folder: Path, token: str, tools: tuple[str, ...], current: Callable[[], ExecBudget | None]
    ) -> RpcServer:
        host = ToolHost(token, tools, current)
        return await open_rpc(self.config.code_execution.rpc_transport, host, folder)

    async def _prepare_kernel(self, kernel: Kernel) -> None:
        """Environment (frozen now) and tool channel of a kernel about to start."""
        assert self._pool is not None
        allowed = await asyncio.to_thread(self._allowed_names)
        self._pool.allowed_names = allowed  # older kernels may now be stale
        kernel.allowed_names = allowed
        await asyncio.to_thread(kernel.staging_dir.mkdir, mode=0o700, parents=True, exist_ok=True)
        kernel.rpc = await self._open_tools(kernel.staging_dir / "rpc", kernel.token, kernel.key.tools,
                                            lambda: kernel.budget)
        kernel.env = {**self._child_env(allowed), **kernel.rpc.env()}

    async def _prepare_standalone(
        self, child: ChildProcess, key: KernelKey, folder: Path, current: Callable[[], ExecBudget | None]
    ) -> RpcServer:
        """Environment and tool channel of a standalone process (when no kernel can start)."""
        assert self._pool is not None
        token = new_token()
        server = await self._open_tools(folder / "rpc", token, key.tools, current)
        child.env = {**self._child_env(self._pool.allowed_names), **server.env()}
        await asyncio.to_thread(stage_tools_module, folder, {**server.stub_config(), "token": token,
                                                             "tools": list(key.tools)})
        return server
