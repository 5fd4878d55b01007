"""terminal: one shell command in the foreground, after the approval gate says yes.

The command runs in its own process group with the kernel's (scrubbed) environment, stdout
and stderr interleaved as in a terminal, the same 50,000-byte head/tail cap as scripts (the
full output spilled to the cache dir), and ``terminal.timeout`` seconds before the group is
killed. There is no background or pty mode.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from typing import Any

from pydantic import Field, field_validator

from hermes_tui.config.notes import backend_refusal
from hermes_tui.runtime.approvals import blocked
from hermes_tui.runtime.backends.base import BackendError
from hermes_tui.runtime.capture import Captured, HeadTailCapture, SpillLimits, spill_cut_warning
from hermes_tui.runtime.child_process import ChildProcess, run_to_end
from hermes_tui.runtime.records import new_exec_id, spill_path
from hermes_tui.runtime.sandbox import Confinement, SandboxError, denials
from hermes_tui.runtime.tools.args import Args
from hermes_tui.runtime.tools.base import Tool, ToolContext, checkpoint_begin, checkpoint_end


MAX_COMMAND_BYTES = 131_072
"""Linux refuses a longer single argument (MAX_ARG_STRLEN), and ``bash -c`` takes the command
as one: refused before it is analysed or shown in a dialog."""


class TerminalArgs(Args):
    command: str = Field(min_length=1)
    timeout: float | None = Field(None, gt=0, le=86_400)
    workdir: str | None = None

    @field_validator("command")
    @classmethod
    def _fits(cls, command: str) -> str:
        size = len(command.encode("utf-8", "surrogatepass"))
        if size >= MAX_COMMAND_BYTES:
            raise ValueError(f"the command is {size:,} bytes; a shell command can be at most "
                             f"{MAX_COMMAND_BYTES - 1:,} (write a script file and run it)")
        return command


def shell() -> str:
    """The shell commands run under (bash when there is one)."""
    return shutil.which("bash") or "/bin/sh"


async def terminal(ctx: ToolContext, args: TerminalArgs) -> dict[str, Any]:
    """Run ``command`` (after approval); returns output, exit_code and error."""
    refusal = backend_refusal(ctx.config.terminal)
    if refusal is not None:  # meant for a sandbox or another machine: never run here, never asked
        return blocked(refusal)
    cwd = str(ctx.resolve(args.workdir)) if args.workdir else ctx.cwd
    if ctx.remote is None and not await asyncio.to_thread(os.path.isdir, cwd):  # a path there is checked there
        return {"output": "", "exit_code": -1, "error": f"workdir does not exist or is not a directory: {cwd}"}
    noted: set[str] = set()
    refusal = await ctx.gate.check_terminal(
        args.command, cwd=cwd, session=ctx.session, kernel=ctx.kernel_id, exec_id=ctx.exec_id,
        origin=ctx.origin, call_id=ctx.call_id, typed=ctx.typed, env=ctx.env,  # judged where it will run
        where=ctx.remote.where if ctx.remote is not None else None, noted=noted,
    )
    if refusal is not None:
        return blocked(refusal)
    if ctx.remote is not None:
        return await _run_there(ctx, args, cwd)
    # A command that was flagged or asked may change files: a checkpoint first. So may any
    # command the model runs directly (`echo x >> f` is not flagged); a script's unflagged ones
    # are its run's doing (its execute_code checkpoint), a typed plain !cmd is the user's own.
    direct = ctx.kernel_id is None and not ctx.typed
    checkpoint = await checkpoint_begin(ctx, "terminal", args.command.split("\n", 1)[0][:80]) \
        if noted or direct else None
    # A person allowed it to write these instruction files: its sandbox leaves them writable.
    # What it leaves in them is not known before it runs: the check after the call shows it and
    # asks again (a thread of the script could write there too while it runs).
    named = tuple(n.split(":", 1)[1] for n in noted if n.startswith("instruction:"))
    try:
        return await _run_here(ctx, args, cwd, writable=named)
    finally:
        await checkpoint_end(ctx, checkpoint)


async def _run_here(ctx: ToolContext, args: TerminalArgs, cwd: str, writable: tuple[str, ...] = ()) -> dict[str, Any]:
    """The approved command on this machine, in the sandbox (a person may let it out once).
    ``writable``: the agent instruction files a person allowed it to write, which the sandbox
    then leaves writable (the others stay read-only)."""
    timeout = args.timeout or ctx.config.terminal.timeout
    sandbox = ctx.sandbox
    if ctx.typed or sandbox is None or sandbox.tier == "off":  # a !cmd is the user's own: as in their shell
        return await run_command(args.command, cwd=cwd, env=ctx.env, timeout=timeout, ctx=ctx)
    try:
        confinement = await asyncio.to_thread(sandbox.confine, workspace=ctx.workspace or ctx.cwd,
                                              tmpdir=ctx.tmpdir or sandbox.scratch or cwd, cwd=cwd,
                                              writable_instructions=writable)
    except SandboxError as exc:  # fail closed: never run unconfined by accident
        return blocked(str(exc))
    layout = confinement.layout
    result = await run_command(args.command, cwd=cwd, env=ctx.env, timeout=timeout, ctx=ctx, confinement=confinement)
    if layout is None or result.get("exit_code") in (0, None) or result.get("error"):
        return result
    why = denials.explain(result.get("output") or "", layout, cwd=cwd, network=sandbox.network,
                          home=os.path.expanduser("~"))
    if why is None:
        return result
    result["error"] = f"blocked by the sandbox: {why}"
    refusal = await ctx.gate.check_unsandboxed(
        args.command, why, cwd=cwd, session=ctx.session, kernel=ctx.kernel_id, exec_id=ctx.exec_id,
        origin=ctx.origin, call_id=ctx.call_id)
    if refusal is not None:
        result["error"] += f"; not run outside the sandbox: {refusal}"
        return result
    outside = await run_command(args.command, cwd=cwd, env=ctx.env, timeout=timeout, ctx=ctx)
    outside["sandbox"] = f"ran outside the sandbox, approved once after: blocked by the sandbox: {why}"
    return outside


async def _run_there(ctx: ToolContext, args: TerminalArgs, cwd: str) -> dict[str, Any]:
    """The approved command on the backend (a container, an SSH host). The far end runs it in
    its own process group and kills that group when the client ends (a timeout, a cancelled
    script): nothing it started is left running there."""
    assert ctx.remote is not None
    if ctx.remote.backend.kernel_places:
        return await _run_in_kernel(ctx, args, cwd)
    try:
        call = await ctx.remote.call({"mode": "run", "argv": ["sh", "-c", args.command], "cwd": cwd})
    except BackendError as exc:
        return {"output": "", "exit_code": -1, "error": str(exc)}
    result = await run_command(args.command, cwd=os.path.expanduser("~"), env=ctx.remote.client_env(),
                               timeout=args.timeout or ctx.config.terminal.timeout, ctx=ctx,
                               argv=call.filtered(), stdin_data=call.stdin)
    output = result.get("output") or ""
    if result.get("exit_code") == 126 and output.startswith("hermes-remote: working directory"):
        result["error"] = output.strip().removeprefix("hermes-remote: ")
    return result


async def _run_in_kernel(ctx: ToolContext, args: TerminalArgs, cwd: str) -> dict[str, Any]:
    """The approved command run by the calling kernel itself (a Jupyter kernel on a gateway:
    nothing else reaches its machine), its output kept head and tail there
    (:data:`KERNEL_KEEP` bytes each) and then as any command's here."""
    assert ctx.remote is not None
    timeout = args.timeout or ctx.config.terminal.timeout
    try:
        answer, data = await ctx.remote.file(
            "run", "", cwd, timeout=timeout + 30,
            extra={"argv": ["sh", "-c", args.command], "timeout": timeout, "keep": KERNEL_KEEP, "env": ctx.remote.env})
    except BackendError as exc:
        return {"output": "", "exit_code": -1, "error": str(exc)}
    if answer.get("error") and "total" not in answer:
        return {"output": "", "exit_code": answer.get("exit_code", -1), "error": f"{ctx.remote.where}: {answer['error']}"}
    run_id = new_exec_id()
    capture = HeadTailCapture(spill_path=spill_path(ctx.cache_dir, run_id),
                              spill_limits=SpillLimits.of(ctx.config.code_execution))
    capture.feed(data)
    out = capture.finish()
    error = f"Command timed out after {timeout:g}s and was killed." if answer.get("timed_out") else None
    result = _result(out, answer.get("exit_code"), error)
    if answer.get("cut"):
        result["output_note"] = (f"{answer.get('total')} bytes in all; only the first and last "
                                 f"{KERNEL_KEEP >> 20} MiB came back from the kernel")
        result["output_bytes_total"] = answer.get("total")
    return result


KERNEL_KEEP = 8 << 20
"""Bytes of a command's output a Jupyter kernel sends back from its start and from its end."""


async def run_command(command: str, *, cwd: str, env: dict[str, str], timeout: float, ctx: ToolContext,
                      confinement: Confinement | None = None, argv: list[str] | None = None,
                      stdin_data: bytes | None = None) -> dict[str, Any]:
    """Run an approved command and collect its capped output (``confinement``: in the sandbox;
    ``argv``: a backend client's command line that runs it elsewhere)."""
    run_id = new_exec_id()
    capture = HeadTailCapture(spill_path=spill_path(ctx.cache_dir, run_id),
                              spill_limits=SpillLimits.of(ctx.config.code_execution))
    child = ChildProcess(None, loop=asyncio.get_running_loop(), publish=_ignore)
    future = child.begin(run_id, None, capture)
    try:
        # Cancelled (the script that asked is gone): so is its command, 1 s after SIGTERM.
        ended_by = await run_to_end(child, argv or [shell(), "-c", command], cwd=cwd, env=env, outcome=future,
                                    timeout=timeout, merge_stderr=True, cancel_grace=1.0, confinement=confinement,
                                    stdin_data=stdin_data)
    except OSError as exc:
        return {"output": "", "exit_code": -1, "error": f"cannot start {shell()}: {exc.strerror or exc}"}
    error = f"Command timed out after {timeout:g}s and was killed." if ended_by == "timeout" else None
    outcome = await future
    return _result(outcome.stdout, outcome.returncode, error)


def _result(out: Captured, exit_code: Any, error: str | None) -> dict[str, Any]:
    """A command's result from its captured output (cut head and tail, the rest spilled)."""
    result: dict[str, Any] = {"output": out.text, "exit_code": exit_code, "error": error}
    if out.truncated:
        result["output_truncated"] = True
        result["output_bytes_total"] = out.total_bytes
        result["output_spill_path"] = str(out.spill_path) if out.spill_path else None
        if out.spill_cut or out.spill_error:
            result["output_spill_note"] = spill_cut_warning(out) if out.spill_cut else \
                f"the full output could not be saved: {out.spill_error}"
    return result


def _ignore(_event: object) -> None:
    """Terminal output is returned to the script, not streamed as script output."""


TOOLS = (Tool("terminal", TerminalArgs, terminal),)
