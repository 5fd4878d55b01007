"""execute_code(): one call from request to :class:`ExecResult`.

It takes a kernel from the pool (or, when no kernel can start, runs one standalone process),
sends the script, waits for the outcome under the timeout and interrupts, turns what the
pipes saw into the result of SPEC §2 and writes the execution's record. Nothing a script does
makes it raise, and neither does a failure in the host (out of file descriptors, a full disk):
that is an ``error`` result saying in one line what the host could not do.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from hermes_tui.runtime.approvals import ApprovalGate
from hermes_tui.runtime.backends.base import BackendError
from hermes_tui.runtime.capture import HeadTailCapture, SpillLimits, spill_cut_warning
from hermes_tui.runtime.child_process import KILL_GRACE, ChildProcess, EndedBy, run_to_end, wait_or_end
from hermes_tui.runtime.events import EventBus, ExecFinished, ExecStarted
from hermes_tui.runtime.kernel import STAGING_CWD, Kernel, KernelGone, KernelKey, KernelStartError, WorkingDirError
from hermes_tui.runtime.launch import Launcher
from hermes_tui.runtime.models import ExecResult, ExecStatus, KernelRef, Origin, parent_session
from hermes_tui.runtime.pool import KernelPool, Lease, describe_exit
from hermes_tui.runtime.process import CellOutcome
from hermes_tui.runtime.rpc import ExecBudget
from hermes_tui.runtime.sandbox import SandboxError, denials
from hermes_tui.runtime.sandbox.paths import Layout
from hermes_tui.runtime.records import RecordWriter, new_exec_id, record_path, spill_path

log = logging.getLogger(__name__)

from hermes_tui.runtime.notices import DISPOSED_NOTICE, INTERRUPT_NOTICE, STOP_NOTICE, SWITCH_NOTICE  # noqa: E402,F401
STDERR_LABEL = "--- stderr ---\n"


@dataclass(slots=True)
class Running:
    """An execution in progress: what :meth:`Executor.interrupt` can stop."""

    exec_id: str
    session: str
    kernel: Kernel | None
    interrupt: asyncio.Future[str] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    hard: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    """Set by a second interrupt: the kernel is killed at once, the grace is not waited out."""
    killed: bool = False
    """The interrupt did not stop the script within the grace: its kernel was killed."""
    kill_cause: str = "grace"
    """Why it was killed: ``grace`` (the script did not stop), ``again`` (a second interrupt),
    ``busy`` (the kernel was still answering a variables request: the script never started)."""
    display: bool = False
    """Show the value of a last bare expression, as the Python REPL does (typed input)."""
    filename: str | None = None
    """The name tracebacks give the script (``hermes-tui exec``'s file); ``<cell N>`` when None."""


@dataclass(slots=True)
class Progress:
    """How far an execution got: what a host-side failure result says it could not do."""

    exec_id: str
    started: float = field(default_factory=time.perf_counter)
    started_at: float = field(default_factory=time.time)
    stage: str = "check the script"
    warnings: list[str] = field(default_factory=list)
    kernel_error: str | None = None
    """Why no session kernel could start (the script then runs as a standalone process)."""


class Executor:
    """Runs scripts for a runtime.

    Args:
        pool: hands out kernels.
        bus: where exec events go.
        cache_dir: ``$HERMES_HOME/cache/exec`` (records and spills).
        staging_root: private temp dir for standalone scripts.
        gate: the approval gate whole scripts pass.
        launcher: readies standalone processes and makes each execution's tool context.
    """

    def __init__(
        self,
        pool: KernelPool,
        *,
        bus: EventBus,
        cache_dir: Path,
        staging_root: Path,
        gate: ApprovalGate,
        launcher: Launcher,
    ) -> None:
        self.pool = pool
        self.bus = bus
        self.cache_dir = cache_dir
        self.staging_root = staging_root
        self.gate = gate
        self.launcher = launcher
        self.running: dict[str, Running] = {}
        self.records = RecordWriter()

    async def execute(
        self,
        code: str,
        key: KernelKey,
        *,
        reset: bool,
        timeout: float,
        max_tool_calls: int,
        start_warning: str | None = None,
        origin: Origin = "user",
        call_id: str | None = None,
        display: bool = False,
        filename: str | None = None,
    ) -> ExecResult:
        """Run ``code`` in the kernel for ``key``; see :meth:`Runtime.execute_code`.

        ``start_warning`` is said in the result when the script runs in a new kernel (or a
        standalone process): e.g. which interpreter it fell back to. Never raises but for
        cancellation: a failure in the host is an ``error`` result.
        """
        progress = Progress(new_exec_id())
        try:
            return await self._execute(code, key, progress, reset=reset, timeout=timeout,
                                       max_tool_calls=max_tool_calls, start_warning=start_warning, origin=origin,
                                       call_id=call_id, display=display, filename=filename)
        except Exception as exc:  # the host's failure, not the script's: a result, never a traceback
            result = self.host_failed(progress, exc)
            log.warning("execution %s: %s", progress.exec_id, result.error)  # one line; the traceback at debug
            log.debug("execution %s failed in the host", progress.exec_id, exc_info=True)
            with contextlib.suppress(Exception):  # the bus may fail the same way: the result stands
                self._finish(result, key, code, progress.started_at)
            return result

    async def _execute(
        self,
        code: str,
        key: KernelKey,
        progress: Progress,
        *,
        reset: bool,
        timeout: float,
        max_tool_calls: int,
        start_warning: str | None,
        origin: Origin,
        call_id: str | None,
        display: bool = False,
        filename: str | None = None,
    ) -> ExecResult:
        exec_id, started, started_at = progress.exec_id, progress.started, progress.started_at
        capture = HeadTailCapture(spill_path=spill_path(self.cache_dir, exec_id),
                                  spill_limits=SpillLimits.of(self.pool.config))
        cwd = str(self.staging_root) if key.cwd == STAGING_CWD else key.cwd
        refusal = await self.gate.check_script(code, cwd=cwd, session=key.session, origin=origin, exec_id=exec_id,
                                               call_id=call_id)
        if refusal is None and not self.launcher.backend.remote:  # elsewhere, the backend confines
            refusal = self.launcher.sandbox.error  # fail closed: nothing runs unconfined by accident
        if refusal is not None:  # never starts a kernel
            result = self.refused(exec_id, f"BLOCKED: {refusal}", time.perf_counter() - started)
            self._finish(result, key, code, started_at)
            return result
        running = Running(exec_id, key.session, None, display=display, filename=filename)
        self.running[exec_id] = running
        lease: Lease | None = None
        warnings = progress.warnings
        budget: ExecBudget | None = None
        try:
            try:
                progress.stage = "start the kernel"
                lease = await self.pool.acquire(key, reset=reset)
            except (WorkingDirError, BackendError) as exc:  # nothing runs: not here, not there
                result = self.refused(exec_id, str(exc), time.perf_counter() - started)
                self._finish(result, key, code, started_at)
                return result
            except KernelStartError as exc:
                progress.kernel_error = str(exc)
            self._started(exec_id, key, lease, code, timeout, max_tool_calls)
            if lease is not None:
                kernel = running.kernel = lease.kernel
                warnings[:0] = lease.warnings
                if start_warning and kernel.execution_count == 0:
                    warnings.append(start_warning)
                progress.stage = "run the script"
                budget = kernel.budget = self._budget(exec_id, key, kernel.cwd, kernel.env, kernel.id, max_tool_calls,
                                                      origin, call_id, str(kernel.temp_dir))
                budget.context.layout = kernel.layout  # judged as the kernel was set up: not read again
                outcome, ended_by = await self._run_in_kernel(kernel, code, exec_id, capture, timeout, running)
            else:
                if start_warning:
                    warnings.append(start_warning)
                progress.stage = "start a process for the script"
                budget = self._budget(exec_id, key, key.cwd, {}, None, max_tool_calls, origin, call_id)
                if budget.context.remote is not None:
                    outcome, ended_by = await self._run_standalone_there(code, key, exec_id, capture, timeout, running,
                                                                         budget)
                    where = key.backend.split(":", 1)[0]
                    warnings.insert(0, f"No session kernel could start on {where} ({progress.kernel_error}); ran "
                                       f"this script there as one standalone python3 process: variables and imports "
                                       "will NOT persist to the next call, and hermes_tools cannot be imported.")
                else:
                    outcome, ended_by = await self._run_standalone(code, key, exec_id, capture, timeout, running,
                                                                   budget)
                    warnings.insert(0, f"No session kernel could start ({progress.kernel_error}); ran this script as a "
                                       "standalone process: variables and imports will NOT persist to the next call.")
            if budget.limit_hit:
                warnings.append(f"The script reached the tool call limit ({budget.limit}, "
                                "code_execution.max_tool_calls): later tool calls returned an error.")
            result = self._result(
                exec_id, outcome, ended_by, running, lease, warnings, timeout, time.perf_counter() - started,
                budget.calls,
            )
            self._say_sandbox(result, lease.kernel.layout if lease is not None else budget.context.layout,
                              budget.context.cwd)
        except Exception:
            if lease is not None:  # what its script is doing now is unknown: never reuse it
                self.pool.retire(lease.kernel, "was ended after an error in the host")
                self.pool.background(lease.kernel.terminate(KILL_GRACE))
            raise
        finally:
            self.running.pop(exec_id, None)
            if budget is not None:  # a call a thread of the script left running ends with it
                budget.cancel_calls()
            if lease is not None:
                lease.kernel.budget = None
                self.pool.release(lease)
        self._finish(result, key, code, started_at)
        return result

    def _say_sandbox(self, result: ExecResult, layout: Layout | None, cwd: str) -> None:
        """A script that failed on the sandbox (a bare "Read-only file system" in its traceback)
        is told so in words, in its ``warning``: what was refused and why."""
        sandbox = self.launcher.sandbox
        if result.status != "error" or layout is None or not sandbox.active:
            return
        why = denials.explain(result.output, layout, cwd=cwd, network=sandbox.network,
                              home=os.path.expanduser("~"))
        if why is not None:
            said = (f"Blocked by the sandbox ({sandbox.label}): {why}. Write in the working directory or "
                    "TMPDIR; terminal() can ask the user to run a command outside the sandbox.")
            result.warning = f"{result.warning} {said}" if result.warning else said

    def _finish(self, result: ExecResult, key: KernelKey, code: str, started_at: float) -> None:
        """Queue the execution's record (written off the loop) and announce the result."""
        if result.sandbox is None:
            result.sandbox = self.launcher.sandbox_label
        try:
            self.records.submit(record_path(self.cache_dir, result.exec_id),
                                self._record(result, key, code, started_at))
        except Exception:  # no record (no thread to write it): the result still stands
            log.warning("the record of execution %s could not be queued", result.exec_id)
            log.debug("record not queued", exc_info=True)
        self.bus.publish(ExecFinished(result=result))

    # -- running --------------------------------------------------------------------------

    async def _run_in_kernel(
        self, kernel: Kernel, code: str, exec_id: str, capture: HeadTailCapture, timeout: float, running: Running
    ) -> tuple[CellOutcome, EndedBy]:
        if running.interrupt.done():  # interrupted before it was sent: it never runs, the kernel stays
            return CellOutcome(capture.finish(), HeadTailCapture().finish(), None, None), "interrupt"
        try:
            future = await kernel.run(code, exec_id, capture, display=running.display,
                                          filename=running.filename)
        except KernelGone:
            future = kernel.begin(exec_id, None, capture)  # resolves when the pump finishes
        try:
            ended_by = await self._wait(kernel, future, timeout, running)
        except asyncio.CancelledError:
            # The caller gave up: don't leave the script running unattended.
            self.pool.retire(kernel, "was interrupted")
            self.pool.background(kernel.terminate(KILL_GRACE))
            raise
        outcome = await future
        if outcome.reply is None:  # the process ended under the script: never reuse it
            self.pool.retire(kernel, describe_exit(outcome.returncode))
        elif outcome.reply.get("status") == "exit":
            self.pool.retire(kernel, "ended with sys.exit()")
            self.pool.background(kernel.terminate(1.0))  # it is exiting; make sure it does
        return outcome, ended_by

    def _budget(
        self, exec_id: str, key: KernelKey, cwd: str, env: dict[str, str], kernel_id: str | None, limit: int,
        origin: Origin, call_id: str | None, tmpdir: str | None = None,
    ) -> ExecBudget:
        kernel = self.pool.get(kernel_id) if kernel_id else None
        context = self.launcher.tool_context(cwd=cwd, env=env, session=key.session, origin=origin,
                                             kernel_id=kernel_id, exec_id=exec_id, call_id=call_id, tmpdir=tmpdir,
                                             place=kernel.place if kernel is not None else None,
                                             far=kernel.far if kernel is not None and kernel.place else None,
                                             remote_home=kernel.remote_home if kernel is not None else None)
        if context.remote is not None and kernel is None:
            context.remote.host_cwd = key.host_cwd
            context.cwd = context.workspace = key.cwd
        return ExecBudget(exec_id, limit, context)

    async def _run_standalone(
        self,
        code: str,
        key: KernelKey,
        exec_id: str,
        capture: HeadTailCapture,
        timeout: float,
        running: Running,
        budget: ExecBudget,
    ) -> tuple[CellOutcome, EndedBy]:
        loop = asyncio.get_running_loop()
        folder = self.staging_root / f"standalone-{exec_id}"
        script = folder / "script.py"
        child = ChildProcess(None, loop=loop, publish=self.bus.publish)
        cwd = str(folder) if key.cwd == STAGING_CWD else key.cwd
        budget.context.cwd = cwd
        await asyncio.to_thread(folder.mkdir, mode=0o700, parents=True)
        await asyncio.to_thread((folder / "tmp").mkdir, mode=0o700)
        server = await self.launcher.prepare_standalone(child, key, folder, self.pool.allowed_names, lambda: budget)
        budget.context.env = child.env
        budget.context.tmpdir = str(folder / "tmp")
        try:
            future = child.begin(exec_id, None, capture)
            try:
                await asyncio.to_thread(script.write_text, code, encoding="utf-8")
                sandbox = self.launcher.sandbox
                confinement = await asyncio.to_thread(sandbox.confine, workspace=cwd, tmpdir=str(folder / "tmp"),
                                                      cwd=cwd, extra=[str(p) for p in server.writable])
                ended_by = await run_to_end(child, [key.interpreter, str(script)], cwd=cwd, env=child.env,
                                            outcome=future, timeout=timeout, stop=running.interrupt,
                                            pass_fds=server.child_fds, confinement=confinement)
            except (OSError, SandboxError) as exc:
                return _failed_start(capture, f"cannot start {key.interpreter}: "
                                              f"{getattr(exc, 'strerror', None) or exc}"), None
            finally:
                server.started()
            return await future, ended_by
        finally:
            await server.close()
            await asyncio.to_thread(shutil.rmtree, folder, True)

    async def _run_standalone_there(
        self, code: str, key: KernelKey, exec_id: str, capture: HeadTailCapture, timeout: float, running: Running,
        budget: ExecBudget,
    ) -> tuple[CellOutcome, EndedBy]:
        """The script as one ``python3`` process on the remote backend (its kernel could not
        start there); never on this machine."""
        remote = budget.context.remote
        assert remote is not None
        child = ChildProcess(None, loop=asyncio.get_running_loop(), publish=self.bus.publish)
        future = child.begin(exec_id, None, capture)
        cwd = None if key.cwd == STAGING_CWD else key.cwd
        try:
            call = await remote.call({"mode": "run", "script": code, "cwd": cwd, "separate": True})
        except BackendError as exc:
            return _failed_start(capture, str(exc)), None
        try:
            ended_by = await run_to_end(child, call.filtered(), cwd=os.path.expanduser("~"), env=remote.client_env(),
                                        outcome=future, timeout=timeout, stop=running.interrupt,
                                        stdin_data=call.stdin)
        except OSError as exc:
            return _failed_start(capture, f"cannot start {call.argv[0]}: {exc.strerror or exc}"), None
        return await future, ended_by

    async def _wait(
        self, kernel: Kernel, future: asyncio.Future[CellOutcome], timeout: float, running: Running
    ) -> EndedBy:
        """Wait for a kernel's outcome; on timeout or interrupt, retire it and end its group."""

        def retire(ended_by: EndedBy) -> None:  # retired first, so the next result says why
            running.killed = True
            if ended_by == "timeout":
                reason = "timed out"
            elif running.hard.done():
                running.kill_cause, reason = "again", "was killed by a second interrupt"
            elif kernel.answering:
                running.kill_cause = "busy"
                reason = "was still answering a request for its variables when its script was interrupted"
            else:
                reason = "did not stop within code_execution.interrupt_grace of an interrupt"
            self.pool.retire(kernel, reason)

        # An interrupt is SIGINT first (KeyboardInterrupt in the script; the kernel and its
        # namespace stay); only a script still running after the grace, or interrupted a
        # second time, loses its kernel.
        return await wait_or_end(kernel, future, timeout, running.interrupt, before_end=retire,
                                 interrupt_grace=self.pool.config.interrupt_grace,
                                 on_interrupt=lambda: self.pool.interrupting(kernel), hard_stop=running.hard)

    def interrupt(self, session: str, notice: str = INTERRUPT_NOTICE, *, with_subagents: bool = True) -> int:
        """Stop every execution of ``session``; returns how many were running.

        The first interrupt of an execution sends SIGINT (its kernel stays if the script stops
        within the grace); a second one, during the grace, kills its kernel at once."""
        count = 0
        for running in list(self.running.values()):
            if running.session == session or (with_subagents and parent_session(running.session) == session):
                if not running.interrupt.done():
                    running.interrupt.set_result(notice)
                elif not running.hard.done():
                    running.hard.set_result(None)
                count += 1
        return count

    # -- results --------------------------------------------------------------------------

    def _started(
        self, exec_id: str, key: KernelKey, lease: Lease | None, code: str, timeout: float, max_tool_calls: int
    ) -> None:
        self.bus.publish(
            ExecStarted(
                exec_id=exec_id,
                session=key.session,
                kernel_id=lease.kernel.id if lease else None,
                code=code,
                timeout=timeout,
                max_tool_calls=max_tool_calls,
            )
        )

    def _result(
        self,
        exec_id: str,
        outcome: CellOutcome,
        ended_by: EndedBy,
        running: Running,
        lease: Lease | None,
        warnings: list[str],
        timeout: float,
        duration: float,
        tool_calls: int = 0,
    ) -> ExecResult:
        stdout, stderr, reply = outcome.stdout, outcome.stderr, outcome.reply
        exit_code: int | None
        status: ExecStatus
        error: str | None
        notice: str | None = None
        if ended_by == "timeout":
            status, exit_code = "timeout", outcome.returncode
            error = notice = f"Script timed out after {timeout:g}s and was killed."
        elif ended_by == "interrupt":
            status, exit_code = "interrupted", outcome.returncode
            notice = running.interrupt.result()
            error = "Execution interrupted: " + notice.strip("[]").split("— ", 1)[-1]
            if running.killed and lease is not None:
                grace = f"code_execution.interrupt_grace ({self.pool.config.interrupt_grace:g}s)"
                lost = "its kernel was killed and its state is lost; the next call starts a fresh kernel."
                if running.kill_cause == "again":
                    warnings.append(f"The script was interrupted a second time before it had stopped: {lost}")
                elif running.kill_cause == "busy":
                    warnings.append(f"The kernel was still answering a request for its variables (a slow __repr__?) "
                                    f"and had not started the script within {grace} of the interrupt: {lost}")
                else:
                    warnings.append(f"The script did not stop within {grace} of the interrupt (it caught "
                                    f"KeyboardInterrupt, or sat in code that ignores signals): {lost}")
        elif reply is not None:
            kind = reply.get("status")
            exit_code = int(reply.get("exit_code") or 0) if kind == "exit" else (0 if kind == "ok" else 1)
            status = "success" if exit_code == 0 else "error"
            error = reply.get("error") if kind == "error" else None
            if error is not None and not isinstance(error, str):  # the reply is the script's process's to forge
                error = str(error)
            if kind == "exit":
                if status == "error":
                    error = f"Script called sys.exit({exit_code})."
                warnings.append(
                    f"The script called sys.exit({exit_code}): its kernel ended and its state is gone; "
                    "the next call starts a fresh kernel."
                )
        elif lease is None:  # a standalone process ends by exiting
            exit_code = outcome.returncode
            status = "success" if exit_code == 0 else "error"
            error = None if status == "success" else _last_line(stderr.text) or f"Script {describe_exit(exit_code)}."
        else:
            exit_code = outcome.returncode
            status = "error"
            error = (
                f"The kernel process {describe_exit(exit_code)} while running the script; "
                "its state is lost and the next call starts a fresh kernel."
            )
        output = stdout.text
        if status != "success" and stderr.text:
            output = _join(output, STDERR_LABEL + stderr.text)
        if notice:
            output = _join(output, notice + "\n")
        if stdout.spill_error:
            warnings.append(f"Output was cut but the full text could not be saved: {stdout.spill_error}.")
        elif stdout.spill_cut:
            warnings.append(spill_cut_warning(stdout))
        kernel = lease.kernel if lease else None
        return ExecResult(
            status=status,
            output=output,
            tool_calls_made=tool_calls,
            duration_seconds=round(duration, 6),
            exit_code=exit_code,
            error=error,
            warning=" ".join(warnings) or None,
            stdout_truncated=stdout.truncated,
            stdout_bytes_total=stdout.total_bytes,
            stdout_spill_path=str(stdout.spill_path) if stdout.spill_path else None,
            stdout_spill_bytes=stdout.spill_bytes if stdout.spill_path and stdout.spill_cut else None,
            kernel=KernelRef(
                id=kernel.id if kernel else None,
                reused=bool(lease and lease.reused),
                execution_count=kernel.execution_count if kernel else 1,
                state_reset=bool(lease and lease.state_reset),
            ),
            exec_id=exec_id,
        )

    @classmethod
    def host_failed(cls, progress: Progress, exc: Exception) -> ExecResult:
        """The result of an execution the host failed (not the script): one line, no traceback."""
        if isinstance(exc, OSError) and exc.strerror:
            reason = exc.strerror
        else:
            reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        reason = " ".join(reason.split())  # one line, whatever the exception held
        stage = progress.stage
        if progress.kernel_error is not None:  # both ways to run it failed: say both
            stage = f"start the kernel ({progress.kernel_error}) nor {stage}"
        result = cls.refused(progress.exec_id, f"the host could not {stage}: {reason}",
                             time.perf_counter() - progress.started)
        result.warning = " ".join(progress.warnings) or None
        return result

    @staticmethod
    def refused(exec_id: str, error: str, duration: float = 0.0) -> ExecResult:
        """The result of a script that was not run at all (nothing started, no tool calls)."""
        return ExecResult(
            status="error",
            output="",
            duration_seconds=round(duration, 6),
            exit_code=None,
            error=error,
            kernel=KernelRef(id=None, reused=False, execution_count=0, state_reset=False),
            exec_id=exec_id,
        )

    def _record(self, result: ExecResult, key: KernelKey, code: str, started_at: float) -> dict[str, object]:
        # Small fields first, code and output last: `hermes_tui.runtime.cache` lists 10,000 records by
        # reading only the head of each file.
        first_line = next((line.strip() for line in code.splitlines() if line.strip()), "")
        record: dict[str, object] = {
            "id": result.exec_id,
            "status": result.status,
            "session": key.session,
            "kernel_id": result.kernel.id,
            "started_at": datetime.fromtimestamp(started_at).astimezone().isoformat(),
            "finished_at": datetime.now().astimezone().isoformat(),
            "title": first_line[:200],
            "stdout_bytes_total": result.stdout_bytes_total,
            "stdout_spill_path": result.stdout_spill_path,
        }
        rest = result.model_dump(mode="json")
        output = rest.pop("output")
        record.update({k: v for k, v in rest.items() if k not in record})
        record.update(mode=key.mode, cwd=key.cwd, interpreter=key.interpreter, code=code, output=output)
        return record


def _join(text: str, more: str) -> str:
    if text and not text.endswith("\n"):
        text += "\n"
    return text + more


def _last_line(text: str) -> str | None:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else None


def _failed_start(capture: HeadTailCapture, message: str) -> CellOutcome:
    """The outcome of a script whose process could not start: ``message`` as its stderr."""
    stderr = HeadTailCapture()
    stderr.feed((message + "\n").encode())
    return CellOutcome(capture.finish(), stderr.finish(), None, 127)
