"""Runtime: the headless engine the app and the CLI drive (no Textual here, ever)."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from pathlib import Path

from hermes_tui.config import Config
from hermes_tui.paths import exec_cache_dir, hermes_home
from hermes_tui.runtime.envs import build_child_env
from hermes_tui.runtime.events import EventBus, Subscription
from hermes_tui.runtime.executor import DISPOSED_NOTICE, INTERRUPT_NOTICE, Executor
from hermes_tui.runtime.kernel import STAGING_CWD, KernelKey
from hermes_tui.runtime.models import ExecResult, KernelInfo, parent_session
from hermes_tui.runtime.pool import KernelPool


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
    """

    def __init__(
        self,
        config: Config | None = None,
        *,
        home: Path | None = None,
        host_env: dict[str, str] | None = None,
    ) -> None:
        self.config = config or Config()
        self.home = home or hermes_home()
        self.cache_dir = exec_cache_dir(self.home)
        self.bus = EventBus()
        self._host_env = host_env
        self._staging_root: Path | None = None
        self._pool: KernelPool | None = None
        self._executor: Executor | None = None

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> Runtime:
        """Prepare directories; kernels start lazily on first use."""
        if self._pool is not None:
            return self
        self._staging_root = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="hermes-tui-"))
        await asyncio.to_thread(self.cache_dir.mkdir, parents=True, exist_ok=True)
        self._pool = KernelPool(
            self.config.code_execution, env_for=self._env_for, staging_root=self._staging_root, bus=self.bus
        )
        self._executor = Executor(
            self._pool, bus=self.bus, cache_dir=self.cache_dir, staging_root=self._staging_root, env_for=self._env_for
        )
        return self

    async def aclose(self) -> None:
        """Stop every running script and kernel, then remove the staging directory."""
        if self._pool is None:
            return
        assert self._executor is not None
        for session in {r.session for r in self._executor.running.values()}:
            self._executor.interrupt(session, DISPOSED_NOTICE)
        await self._pool.close()
        await asyncio.to_thread(self._executor.records.close)
        if self._staging_root is not None:
            await asyncio.to_thread(shutil.rmtree, self._staging_root, True)
        self.bus.close()
        self._pool = None

    async def __aenter__(self) -> Runtime:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

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
        """
        await self.start()
        assert self._executor is not None
        settings = self.config.code_execution
        mode = mode or settings.mode
        if mode not in ("project", "strict"):
            raise ValueError(f"mode must be 'project' or 'strict', not {mode!r}")
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be a number of seconds > 0, not {timeout!r}")
        key = self._key(session, mode, cwd)
        return await self._executor.execute(
            code, key, reset=reset, timeout=timeout or settings.timeout, max_tool_calls=settings.max_tool_calls
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

    async def kill_kernel(self, kernel_id: str, reason: str = "was killed by the user") -> bool:
        """End one kernel now (a running script on it ends as interrupted)."""
        kernel = self._pool.get(kernel_id) if self._pool else None
        if kernel is None or self._executor is None:
            return False
        for running in self._executor.running.values():
            if running.kernel is kernel and not running.interrupt.done():
                running.interrupt.set_result(f"[execution interrupted — kernel {reason}]")
        await self._pool.end_kernels([kernel], reason)  # type: ignore[union-attr]
        return True

    async def flush_records(self) -> None:
        """Wait until the records of every execution so far are written to the cache dir."""
        if self._executor is not None:
            await asyncio.to_thread(self._executor.records.flush)

    def subscribe(self) -> Subscription:
        """Receive runtime events from now on (bounded; close it when done)."""
        return self.bus.subscribe()

    # -- helpers --------------------------------------------------------------------------

    def _key(self, session: str, mode: str, cwd: str | Path | None) -> KernelKey:
        if mode == "strict":
            # Strict: a private temp dir as cwd (made per kernel) and the host's Python.
            return KernelKey(session, mode, sys.executable, STAGING_CWD)
        folder = os.path.abspath(cwd if cwd is not None else os.getcwd())
        return KernelKey(session, mode, sys.executable, folder)

    def _env_for(self, key: KernelKey) -> dict[str, str]:
        inject = {"HERMES_HOME": str(self.home)}
        if "TZ" in os.environ:
            inject["TZ"] = os.environ["TZ"]
        return build_child_env(
            self._host_env,
            passthrough=self.config.terminal.env_passthrough,
            inject=inject,
        )

    def session_of(self, kernel_id: str) -> str | None:
        """The top-level session a kernel belongs to."""
        kernel = self._pool.get(kernel_id) if self._pool else None
        return parent_session(kernel.key.session) if kernel else None
