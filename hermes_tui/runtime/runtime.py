"""Runtime: the headless engine the app and the CLI drive (no Textual here, ever)."""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import socket
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from hermes_tui.config import Config, load_config
from hermes_tui.config.notes import backend_refusal
from hermes_tui.base.paths import exec_cache_dir, hermes_home
from hermes_tui.runtime import instructions
from hermes_tui.runtime.danger.instruction_names import reason_for
from hermes_tui.runtime.approvals import ApprovalGate, ApprovalRequest, Approver, FileChange, SessionKind
from hermes_tui.runtime.events import EventBus, Subscription
from hermes_tui.runtime.executor import DISPOSED_NOTICE, INTERRUPT_NOTICE, Executor, Progress
from hermes_tui.runtime.hardening import make_undumpable, warm_spawner
from hermes_tui.runtime.backends import BackendError, JupyterBackend
from hermes_tui.runtime.checkpoints.book import Checkpoints
from hermes_tui.runtime.kernel import Kernel, KernelGone, KernelStartError
from hermes_tui.runtime.launch import Launcher
from hermes_tui.runtime.leftovers import make_staging_dir, sweep_partial_spills, sweep_staging
from hermes_tui.runtime.models import ExecResult, KernelInfo, Origin, parent_session
from hermes_tui.runtime.pool import KernelPool
from hermes_tui.runtime.records import new_exec_id
from hermes_tui.runtime.reaper import REAPER
from hermes_tui.runtime.sandbox import Sandbox
from hermes_tui.runtime.tools import TOOL_NAMES
from hermes_tui.runtime.tools.dispatch import FILE_TOOLS, begin_preload, settle_preload, start_preload
from hermes_tui.base.units import noun


SINCE_LAST_LOOK = ("since hermes-tui last looked, while no call of yours changed it (by you in an editor, or by a "
                   "process a script left running)")
BY_THIS_CALL = "by this {tool} call itself, not through write_file or an asked command"
PRELOAD_AFTER = 0.5
"""Seconds after the start when the tools' imports begin if no script has ended by then
(:func:`~hermes_tui.runtime.tools.dispatch.begin_preload`)."""
PRELOAD_AFTER_RESULT = 0.25
"""Seconds after a result when they begin (a tool call begins them at once). Not at once: a
host that ends after its one script (``exec``) would close its kernel while they hold the GIL,
and the close took 25-60 ms instead of 6-8 (issue 38); the next script a model writes comes
later than this anyway."""


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
        self.launcher = Launcher(self.config, self.home, host_env, bus=self.bus, gate=self.gate,
                                 cache_dir=self.cache_dir)
        self.checkpoints = Checkpoints(self.config.checkpoints, self.home,
                                       writable_roots=self.config.code_execution.writable_roots,
                                       remote=self.launcher.backend.remote, host=socket.gethostname())
        """Snapshots before each call that can write (taken once a sessions store sets its ``log``)."""
        self.launcher.checkpoints = self.checkpoints
        self.gate.confined = self._confined
        self.checkpoints.restored = self.gate.guard.rebase
        self._staging_root: Path | None = None
        self._staging_lock = -1
        self._pool: KernelPool | None = None
        self._executor: Executor | None = None
        self._starting: asyncio.Future[None] | None = None
        self._tidying: asyncio.Future[None] | None = None
        """The sweep of what dead hosts left, started with the runtime (waited for at close)."""

    def _watched(self, folder: str) -> tuple[str, ...]:
        """The folders whose instruction files are checked around a call in ``folder``: it and
        the writable roots (none on a remote backend: its files are not here)."""
        if not self.gate.instructions or self.launcher.backend.remote:
            return ()
        return self.gate.guard.roots([folder, *self.config.code_execution.writable_roots])

    async def _instructions(self, roots: tuple[str, ...], tool: str, session: str, origin: Origin,
                            call_id: str | None, when: str, exec_id: str | None = None) -> list[str]:
        """Check the instruction files of ``roots``: a change no person allowed is put back and
        asked about (``when`` it was made). Returns what to tell the script."""
        if not roots:
            return []

        async def ask(changes: list[instructions.Change], why: str) -> str | None:
            # sha256: what *once* allows it to hold (a link's or a big file's own mark; None: gone)
            files = [FileChange(path=c.path, size=len(c.after.data) if c.after and c.after.data is not None else None,
                                sha256=c.after.digest if c.after is not None else None)
                     for c in changes]
            reasons = list(dict.fromkeys(reason_for(c.path, self.gate.instructions) or "" for c in changes))
            return await self.gate.check_file(tool, files, instructions.unified_diff(changes), [*reasons, why],
                                              cwd=roots[0], session=session, kernel=None, exec_id=exec_id,
                                              origin=origin, call_id=call_id)

        return await self.gate.guard.check(roots, ask, when)

    async def _put_back(self, roots: tuple[str, ...]) -> None:
        """A call was cancelled: what it changed in the instruction files without consent is put
        back now, with nobody to ask."""
        if roots:
            await asyncio.shield(self.gate.guard.check(roots, None, "by a call that was cancelled"))

    def _confined(self) -> bool:
        """True when what scripts and commands do stays confined here: the sandbox is on, with no
        network (nothing leaves), on this machine (where the instruction files are watched)."""
        sandbox = self.launcher.sandbox
        return not self.launcher.backend.remote and sandbox.active and not sandbox.network

    @property
    def host_env(self) -> Mapping[str, str]:
        """The environment kernels are derived from."""
        return self.launcher.host_env

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> Runtime:
        """Prepare directories; kernels start lazily on first use. Safe to call concurrently."""
        if self._executor is not None:  # set last: everything is ready
            return self
        if self._starting is None or (self._starting.done() and self._starting.exception() is not None):
            self._starting = asyncio.ensure_future(self._start())  # a failed start is tried again
        await asyncio.shield(self._starting)
        return self

    async def _start(self) -> None:
        # Kernels must not read the keys in this process's environment or memory (hardening.py).
        make_undumpable()
        # The first result waits for what is on this path only (issue 38): the rules, and the
        # staging dir then the sandbox's probe, side by side; the tools' imports (a thread,
        # checked from now on) and the sweep of what dead hosts left go on while kernels spawn.
        # Before any kernel: what the host imports from now on is checked (start_preload).
        _, _, allowed, _, _ = await asyncio.gather(
            self.gate.load_rules(), asyncio.to_thread(self._prepare_places),
            asyncio.to_thread(self.launcher.allowed_names), asyncio.to_thread(start_preload),
            asyncio.to_thread(warm_spawner))
        asyncio.get_running_loop().call_later(PRELOAD_AFTER, begin_preload)  # no script came: begun anyway
        assert self._staging_root is not None
        # A file's time is coarse (a tick of the clock, a few ms): a spill of this runtime's own is newer.
        self._tidying = asyncio.ensure_future(asyncio.to_thread(self._tidy, self._staging_root, time.time() - 0.01))
        self._pool = KernelPool(
            self.config.code_execution, launcher=self.launcher, staging_root=self._staging_root, bus=self.bus
        )
        self._pool.allowed_names = allowed
        self._executor = Executor(
            self._pool, bus=self.bus, cache_dir=self.cache_dir, staging_root=self._staging_root, gate=self.gate,
            launcher=self.launcher,
        )

    async def tidied(self) -> None:
        """Wait until what dead hosts left (their staging dirs, their partial spills) is
        removed: a sweep the start begins and does not wait for."""
        await self.start()
        if self._tidying is not None:
            await asyncio.wait({self._tidying})

    def _prepare_places(self) -> None:
        """The staging dir, the sandbox's probe in it, and the cache dir. Blocking."""
        self._staging_root = self._make_staging_root()
        self.checkpoints.staging_root = str(self._staging_root)
        self._probe_sandbox(self._staging_root / "sandbox")
        self.cache_dir.mkdir(parents=True, exist_ok=True)

    def _tidy(self, root: Path, made_before: float) -> None:
        """Remove what dead hosts left: staging dirs beside ours, partial spills made before
        ``made_before``. Blocking."""
        sweep_staging(root.parent, keep=root)
        sweep_partial_spills(self.cache_dir, made_before)

    def _make_staging_root(self) -> Path:
        """This runtime's private temp dir, held (locked) while it lives and registered with
        the reaper. Blocking."""
        root, self._staging_lock = make_staging_dir()
        REAPER.watch_folder(root)
        return root

    def _probe_sandbox(self, scratch: Path) -> None:
        """Which sandbox is in force (once per start; a trial process, about 10 ms). Blocking."""
        scratch.mkdir(mode=0o700, exist_ok=True)
        self.sandbox.scratch = str(scratch)
        self.sandbox.probe(str(scratch))

    @property
    def sandbox(self) -> Sandbox:
        """The sandbox scripts and commands run in: ``tier`` (``bwrap``, ``landlock``, ``off``,
        ``unavailable``), ``label`` for the screen, ``detail`` and ``error`` (fail closed)."""
        return self.launcher.sandbox

    @property
    def sandbox_label(self) -> str:
        """What confines scripts, for the top bar: the sandbox's label here; ``docker`` or
        ``ssh: none on the remote`` when kernels run elsewhere."""
        return self.launcher.sandbox_label

    async def aclose(self) -> None:
        """Stop every running script and kernel, then remove the staging directory."""
        if self._starting is not None and not self._starting.done():
            await asyncio.wait({self._starting})  # a start under way finishes first
        if self._pool is None or self._executor is None:
            return
        settle_preload()  # never left waiting for a timer of a loop that ends (a library's guard meanwhile)
        for session in {r.session for r in self._executor.running.values()}:
            self._executor.interrupt(session, DISPOSED_NOTICE)
        await self._pool.close()
        if self._tidying is not None:
            await asyncio.wait({self._tidying})
        await self.checkpoints.settle()  # the last calls' lines counted and stored
        await self.launcher.backend.close()  # places opened by top-level commands
        await asyncio.to_thread(self._executor.records.close)
        if self._staging_root is not None:
            await asyncio.to_thread(shutil.rmtree, self._staging_root, True)
            REAPER.release_folder(self._staging_root)
            os.close(self._staging_lock)
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
        assert new is not None  # load_config returns a Config; mypy infers to_thread's result from `config`'s type
        for section in ("code_execution", "terminal", "approvals", "web", "model"):
            setattr(self.config, section, getattr(new, section))
        self.config.command_allowlist = new.command_allowlist
        if self._pool is not None:
            self._pool.config = self.config.code_execution
            self._pool.allowed_names = await asyncio.to_thread(self.launcher.allowed_names)

    async def reload_approvals(self) -> None:
        """Apply approvals.mode/timeout and re-read the allow rules: a deliberate user action."""
        await self.gate.load_rules()

    def allow_once(self, session: str, text: str) -> None:
        """Let the next identical check of ``text`` in ``session`` pass without asking, once: the
        re-run of a script that had been allowed before its run was cut (a resumed headless run)."""
        self.gate.allow_once(session, text)

    async def ask_again(self, request: ApprovalRequest) -> str | None:
        """Ask again a request that was pending when the app stopped (SPEC §4). None if it is
        allowed — the re-run of its tool call then passes the gate once without asking;
        else the reason it was refused."""
        await self.start()
        return await self.gate.ask_restored(request)

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
        call_id: str | None = None,
        display: bool = False,
        filename: str | None = None,
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
            call_id: the conversation's tool call this run answers; approvals it asks carry it.
            display: show the value of a last bare expression (``f(6, 7)`` prints ``42``, ``None``
                nothing), as the Python REPL does: for Python the user types, not for scripts.
            filename: the name tracebacks give the script (``analyse.py``; default ``<cell N>``).

        Raises:
            ValueError: for a bad ``mode``, ``timeout`` or tool name (the caller's mistake).
        """
        settings = self.config.code_execution
        mode = mode or settings.mode
        if mode not in ("project", "strict"):
            raise ValueError(f"mode must be 'project' or 'strict', not {mode!r}")
        if origin not in ("user", "injected", "automation"):
            raise ValueError(f"origin must be 'user', 'injected' or 'automation', not {origin!r}")
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be a number of seconds > 0, not {timeout!r}")
        enabled = self._tool_set(tools)
        refusal = backend_refusal(self.config.terminal)
        if refusal is not None:  # meant for a sandbox or another machine: never run here, no kernel
            return Executor.refused(new_exec_id(), refusal)
        try:
            await self.start()
            key, warning = await self.launcher.key(session, mode, cwd, enabled)
        except Exception as exc:  # the host's failure (no temp dir, no thread, no fd): a result, not a raise
            return Executor.host_failed(Progress(new_exec_id(), stage="start the runtime"), exc)
        assert self._executor is not None
        # Its Python can write anything in the workspace: a checkpoint first, and what it
        # changed is its own when it ends (runtime/checkpoints).
        top = parent_session(session)
        folder = os.path.abspath(cwd) if cwd is not None else os.getcwd()
        roots = self._watched(folder)  # first: what was planted between calls is not a checkpoint's
        check = functools.partial(self._instructions, roots, "execute_code", session, origin, call_id)
        notes = await check(SINCE_LAST_LOOK)
        checkpoint = await self.checkpoints.begin(top, "execute_code", call_id or "", cwd=folder, mode=mode,
                                                  call_id=call_id)
        try:
            result = await self._executor.execute(
                code, key, reset=reset, timeout=timeout or settings.timeout, max_tool_calls=settings.max_tool_calls,
                start_warning=warning, origin=origin, call_id=call_id, display=display,
                filename=filename,
            )
            notes += await check(BY_THIS_CALL.format(tool="execute_code"), result.exec_id)
        except BaseException:  # nobody is left to ask: what nobody allowed is put back
            await self._put_back(roots)
            raise
        finally:
            await self.checkpoints.end(checkpoint)
            # After the first result, not beside the first kernel's start.
            asyncio.get_running_loop().call_later(PRELOAD_AFTER_RESULT, begin_preload)
        notes += self.checkpoints.take_notes(top)
        if notes:
            result.warning = " ".join([*notes, *([result.warning] if result.warning else [])])
        return result

    def kernels(self) -> list[KernelInfo]:
        """A snapshot of every live kernel."""
        return self._pool.infos() if self._pool else []

    async def interrupt(self, session: str, notice: str = INTERRUPT_NOTICE) -> int:
        """End the running script(s) of ``session`` (status ``interrupted``, ``notice`` at the end
        of the output: SPEC's for a new message, :data:`STOP_NOTICE` when the user stopped it);
        returns how many.

        Each gets SIGINT and keeps its kernel if it stops within ``interrupt_grace``; calling
        this again during the grace kills the kernel at once (and counts the script again)."""
        return self._executor.interrupt(session, notice) if self._executor else 0

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
        """Tool calls made so far by a running execution (None once it has finished).

        To follow the count as it grows, subscribe: each call is a :class:`ToolCallMade` event."""
        running = self._executor.running.get(exec_id) if self._executor else None
        budget = running.kernel.budget if running and running.kernel else None
        return budget.calls if budget is not None and budget.exec_id == exec_id else None

    async def inspect_kernel(self, kernel_id: str, timeout: float = 5.0) -> list[dict[str, object]]:
        """The variables of an idle kernel: name, type, short repr, size, len.

        Asked of the kernel without touching its namespace; the script's ``__repr__`` and
        ``__len__`` run, for about a second in all (the rest is listed by name and type). Raises
        ``LookupError`` for an unknown kernel, ``RuntimeError`` while it runs a script or still
        answers an earlier request, ``TimeoutError`` when it does not answer within ``timeout``
        (it is then told to cut the walk short).
        """
        kernel = self._idle_kernel(kernel_id)
        async with kernel.lock:
            return await kernel.ask("inspect", timeout)

    async def count_names(self, kernel_id: str, timeout: float = 2.0) -> int:
        """How many names the user's code left in an idle kernel (what a reset would lose).

        Cheap, and none of the script's code runs (no ``__repr__``). Raises as
        :meth:`inspect_kernel` does."""
        kernel = self._idle_kernel(kernel_id)
        async with kernel.lock:
            return len(await kernel.ask("names", timeout))

    async def names_held(self, kernel_ids: list[str]) -> int | None:
        """How many names these kernels hold (what ending them would lose), asked of each idle
        one as :meth:`count_names` asks; None when one runs a script or does not answer, so it
        cannot be counted. A kernel starting, dead or gone holds nothing to lose."""
        states = {k.id: k.state for k in self.kernels()}
        total = 0
        for kernel_id in kernel_ids:
            state = states.get(kernel_id, "dead")
            if state in ("starting", "dead", "error"):
                continue  # no script has run in it, or it is gone: nothing to lose
            if state != "idle":
                return None
            try:
                total += await self.count_names(kernel_id)  # names only: no user code runs
            except LookupError:
                continue  # it ended meanwhile
            except Exception:  # busy by now, or no answer in time: ask without a count
                return None
        return total

    async def kernel_names(self, session: str, timeout: float = 2.0) -> list[dict[str, object]] | None:
        """The names in the session's kernel (its most recently used top-level one) with the
        name of each one's type (``name``, ``type``), for completing names the user types; None
        when it has no live kernel, runs a script, still answers an earlier request, or does not
        answer within ``timeout``. Cheap: the namespace is not touched and none of the script's
        code runs; a busy kernel is not asked at all."""
        return await self._ask_session_kernel(session, "names", timeout)

    async def kernel_completions(self, session: str, text: str,
                                 timeout: float = 2.0) -> list[dict[str, object]] | None:
        """What Tab completes at the end of ``text`` (the input left of the cursor) in the
        session's kernel, as :meth:`kernel_names` asks it (None when it is busy, gone or slow):
        attributes after ``a.b.``, keys of a dict in ``d["``, paths in another string (from the
        kernel's working dir). Each: ``name`` (replacing the last ``replace`` characters of
        ``text``), ``type``, and for a key ``close`` (the ``"]`` after it). None of the
        script's code runs: attributes are found by static lookups (module, instance and class
        dicts), never through ``__getattr__``, ``__dir__`` or a property."""
        return await self._ask_session_kernel(session, "complete", timeout, text=text)

    async def _ask_session_kernel(self, session: str, op: str, timeout: float,
                                  **fields: object) -> list[dict[str, object]] | None:
        kernels = [k for k in self._pool.of_session(session, with_subagents=False) if k.alive] if self._pool else []
        if not kernels:
            return None
        kernel = max(kernels, key=lambda k: k.last_used_monotonic)
        if kernel.lock.locked() or kernel.state != "idle" or kernel.answering:
            return None
        try:
            async with kernel.lock:
                return await kernel.ask(op, timeout, **fields)
        except Exception:  # gone, or slow to answer: complete from builtins instead
            return None

    def _idle_kernel(self, kernel_id: str) -> Kernel:
        kernel = self._pool.get(kernel_id) if self._pool else None
        if kernel is None or not kernel.alive:
            raise LookupError(f"no live kernel {kernel_id}")
        if kernel.lock.locked():
            raise RuntimeError(f"kernel {kernel_id} is running a script; try again when it is idle")
        if kernel.answering:
            raise RuntimeError(f"kernel {kernel_id} is still answering an earlier request; try again soon")
        return kernel

    async def leftovers_note(self, timeout: float = 5.0) -> str | None:
        """One line naming the kernels an earlier run left on the Jupyter gateway (a crash, a
        SIGKILL) and how to shut them down; None when there are none or nobody can tell now."""
        backend = self.launcher.backend
        if not isinstance(backend, JupyterBackend) or not backend.remote:
            return None
        try:
            left = await asyncio.wait_for(backend.leftovers(), timeout)
        except (BackendError, asyncio.TimeoutError):
            return None
        if not left:
            return None
        sessions = ", ".join(sorted({str(item.get("session")) for item in left}))
        return (f"{len(left)} {noun(len(left), 'Jupyter kernel')} left on {backend.host} by an earlier run (sessions: "
                f"{sessions}): `hermes-tui jupyter-cleanup` shuts them down")

    async def kernel_memory(self) -> dict[str, int]:
        """Resident memory in bytes of each live kernel (read off /proc in a thread; a kernel
        elsewhere says its own over its connection: the process here is only its relay)."""
        infos = self.kernels()
        here = ("local", "jupyter:local")  # a local Jupyter kernel's pid is the ipykernel's
        pids = {k.id: k.pid for k in infos if k.pid and k.where in here}
        elsewhere = [kernel for info in infos if info.where not in here
                     and (kernel := self._pool.get(info.id) if self._pool else None) is not None]

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

        async def asked(kernel: Kernel) -> tuple[str, int | None]:
            try:
                answer, _ = await kernel.far({"op": "memory"}, timeout=2.0)
            except (KernelGone, TimeoutError):
                return kernel.id, None
            rss = answer.get("rss")
            return kernel.id, rss if isinstance(rss, int) and not isinstance(rss, bool) and rss >= 0 else None

        sizes = await asyncio.to_thread(read)
        for kernel_id, rss in await asyncio.gather(*(asked(k) for k in elsewhere)):
            if rss is not None:
                sizes[kernel_id] = rss
        return sizes

    async def terminal(
        self, command: str, *, session: str = "default", cwd: str | Path | None = None, timeout: float | None = None,
        origin: Origin = "user", call_id: str | None = None, typed: bool = False,
    ) -> dict[str, object]:
        """Run one shell command at the top level (``!cmd``, or the model's ``terminal`` call),
        through the same approval gate as ``terminal()`` in scripts. Returns the tool's dict.

        ``typed``: the user typed this command (a ``!cmd``): it asks only when flagged."""
        args: dict[str, object] = {"command": command}
        if timeout is not None:
            args["timeout"] = timeout
        return await self.call_tool("terminal", args, session=session, cwd=cwd, origin=origin, call_id=call_id,
                                    typed=typed)

    async def call_tool(
        self, name: str, args: dict[str, object], *, session: str = "default", cwd: str | Path | None = None,
        origin: Origin = "user", call_id: str | None = None, typed: bool = False,
    ) -> dict[str, object]:
        """Run one of the seven tools at the top level (a model's direct call), as a script's
        call would run: validated, approved where needed, never raising. In an injected or
        automation turn a call that writes files is asked first, showing the diff.

        ``typed``: a ``terminal`` call the user typed (``!cmd``): asks only when flagged."""
        await self.start()
        from hermes_tui.runtime.tools import call_tool

        folder = os.path.abspath(cwd if cwd is not None else os.getcwd())
        env = self.launcher.child_env(self._pool.allowed_names if self._pool else frozenset())
        context = self.launcher.tool_context(cwd=folder, env=env, session=session, origin=origin, call_id=call_id)
        context.typed = typed and name == "terminal"
        if origin != "user":
            context.ask_writes = f"an {origin} turn: its file writes are asked first"
        if context.remote is None and name == "terminal" and not context.typed:
            # What the command writes that its text did not show (python -c, a script it runs).
            roots = self._watched(folder)
            check = functools.partial(self._instructions, roots, "terminal", session, origin, call_id)
            notes = await check(SINCE_LAST_LOOK)
            try:
                result = await call_tool(name, dict(args), context)
                notes += await check(BY_THIS_CALL.format(tool="terminal"))
            except BaseException:
                await self._put_back(roots)
                raise
            if notes:
                result["warning"] = " ".join([*notes, *([str(result["warning"])] if result.get("warning") else [])])
            return result
        if context.remote is None or not context.remote.backend.kernel_places or name not in {*FILE_TOOLS, "terminal"}:
            return await call_tool(name, dict(args), context)
        # A Jupyter gateway's machine is reached only through a kernel: the session's, leased
        # for the call as a script would lease it (started if there is none).
        try:
            key, _ = await self.launcher.key(session, self.config.code_execution.mode, folder, self._tool_set(None))
            assert self._pool is not None
            lease = await self._pool.acquire(key)
        except (KernelStartError, BackendError) as exc:
            return {"error": f"{name}: no kernel there to run it in: {exc}"}
        try:
            kernel = lease.kernel
            context.remote.place, context.remote.via, context.remote.home = kernel.place, kernel.far, kernel.remote_home
            context.cwd = context.workspace = kernel.cwd
            return await call_tool(name, dict(args), context)
        finally:
            self._pool.release(lease)

    async def ask_ahead(
        self, name: str, args: dict[str, object], *, session: str, cwd: str | Path | None, origin: Origin,
        call_id: str | None,
    ) -> None:
        """Only the question a tool call would ask first — a ``terminal`` command, the whole
        script of an injected or automation turn — without running anything. A headless run
        that pauses asks the step's later calls this way, so every request of the step is
        pending at once (``approve --all --except ...``); each call still runs, and is checked
        again, when the run resumes (the answer given meanwhile is taken then)."""
        await self.start()
        folder = os.path.abspath(cwd if cwd is not None else os.getcwd())
        if name == "terminal" and isinstance(args.get("command"), str):
            workdir = args.get("workdir")
            where = os.path.join(folder, os.path.expanduser(workdir)) if isinstance(workdir, str) and workdir else folder
            env = self.launcher.child_env(self._pool.allowed_names if self._pool else frozenset())
            await self.gate.check_terminal(str(args["command"]), cwd=where, session=session, kernel=None,
                                           exec_id=None, origin=origin, call_id=call_id, env=env)
        elif name == "execute_code" and isinstance(args.get("code"), str):
            await self.gate.check_script(str(args["code"]), cwd=folder, session=session, origin=origin,
                                         exec_id=None, call_id=call_id)

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

    # -- helpers ------------------------------------------------------------------------

    @staticmethod
    def _tool_set(tools: Iterable[str] | None) -> tuple[str, ...]:
        if tools is None:
            return TOOL_NAMES
        chosen = set(tools)
        unknown = chosen - set(TOOL_NAMES)
        if unknown:
            raise ValueError(f"unknown {noun(len(unknown), 'tool')} {sorted(unknown)}; "
                             f"the tools are {', '.join(TOOL_NAMES)}")
        return tuple(name for name in TOOL_NAMES if name in chosen)
