"""The one way any tool runs: looked up, its arguments validated, protected writes approved,
and every failure turned into a dict with ``error`` — nothing a script sends can crash the host."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

from hermes_tui.base.fsutil import READ_GUARD, WRITE_GUARD
from hermes_tui.runtime import import_guard
from hermes_tui.runtime.tools.base import TOOL_NAMES, Tool, ToolContext, checkpoint_begin, checkpoint_end
from hermes_tui.runtime.tools.changes import capped


def registry() -> dict[str, Tool]:
    """Every tool by name (imported lazily: the web tools pull in httpx)."""
    from hermes_tui.runtime.tools import files, patching, search, terminal, web

    tools = [*files.TOOLS, *search.TOOLS, *patching.TOOLS, *terminal.TOOLS, *web.TOOLS]
    return {tool.name: tool for tool in tools}


_REGISTRY: dict[str, Tool] | None = None

LAZY_IMPORTS = (
    "whatthepatch", "whatthepatch.exceptions", "httpx", "bs4", "markdownify",
    # what httpx imports with its first request (the web tools', a provider's): its transport
    "httpcore", "httpcore._backends.auto", "httpcore._backends.anyio", "h11", "anyio._backends._asyncio", "sniffio",
    "certifi",
)
"""What the tools import on first use. Found by the ``sys.modules`` diff of a run that calls
every tool (tests/attacks/test_late_imports.py); what is still imported later is checked by the
import guard (runtime/import_guard.py). These are imported ahead (:func:`start_preload`, while
the first kernel spawns) so that a tool call does not pay for them (the transport's modules
cost about 35 ms and 1.7 MiB: tests/bench/bench_imports.py)."""


def preload() -> None:
    """Import everything the tools would import later, and the shell parser; then, in a
    program that asked (:func:`~hermes_tui.runtime.import_guard.arm`), close the imports.
    Blocking (``doctor``, tests; a runtime uses :func:`start_preload`)."""
    _import_ahead()
    from hermes_tui.runtime.import_guard import close_if_armed

    close_if_armed()


def _import_ahead(also: tuple[str, ...] = ()) -> None:
    import importlib

    get_tool("patch")
    for name in (*LAZY_IMPORTS, *also):
        try:
            importlib.import_module(name)
        except ImportError:
            pass  # that tool says so when called (a refusal was logged by the guard)
    from hermes_tui.runtime.danger.parse import parse

    parse("true")


PRELOAD_SWITCH_INTERVAL = 0.0005
"""Seconds a thread may hold the GIL while another waits, while the tools' imports run."""
HEAVY_IMPORTS = threading.RLock()
"""Held by a thread importing what other threads may import at once (the tools' modules, a
model's SDK and the tools' schemas: httpx, the HTML parser): an import cycle across threads
hands one of them a half-made module."""
_PRELOAD: concurrent.futures.Future[None] | None = None
_PRELOAD_THREAD: threading.Thread | None = None
_PRELOAD_LOCK = threading.Lock()


def start_preload() -> concurrent.futures.Future[None]:
    """Close the imports now; the tools' imports follow in a thread (:func:`begin_preload`).
    Once per process; call before any kernel of the host can start.

    A module the host imports after a script could run is one the script can plant (a
    ``whatthepatch.py`` in a folder on ``sys.path``, a file changed in site-packages), and it
    would run inside the host, beside the keys. So every import from this moment on is checked
    (runtime/import_guard.py): in a program that armed the guard, for good; in any other host
    (a library's), until the thread has imported what the tools import on first use (and for
    good if it refused one). A tool waits for that thread (:func:`preloaded`)."""
    global _PRELOAD, _PRELOAD_THREAD
    with _PRELOAD_LOCK:
        if _PRELOAD is None:
            future: concurrent.futures.Future[None] = concurrent.futures.Future()
            closed = import_guard.close_if_armed(ahead=False)
            meanwhile = import_guard.checked_meanwhile() if closed is None else contextlib.nullcontext()
            meanwhile.__enter__()  # the moment: now
            also = import_guard.armed_imports()

            def run() -> None:
                # Imports hold the GIL: the event loop gets it back within 0.5 ms, not 5 ms.
                interval = sys.getswitchinterval()
                ours = min(interval, PRELOAD_SWITCH_INTERVAL)
                sys.setswitchinterval(ours)
                # One thread at a time imports these: another importing the same modules at once
                # (a model's SDK imports httpx) can be handed one half made ("partially
                # initialized module"), where Python breaks a cycle of module locks.
                HEAVY_IMPORTS.acquire()
                failed: BaseException | None = None
                try:
                    _import_ahead(also)
                except BaseException as exc:  # noqa: BLE001 (a module's SystemExit too): each tool's own import says what is wrong
                    failed = exc
                    logging.getLogger(__name__).warning("importing the tools' modules ahead failed: %r", exc)
                finally:
                    HEAVY_IMPORTS.release()
                    future.set_result(None)
                    # Not all imported: a library's guard stays (checked_meanwhile).
                    meanwhile.__exit__(type(failed) if failed else None, failed, None)
                    if sys.getswitchinterval() == ours:  # nobody set another meanwhile
                        sys.setswitchinterval(interval)

            _PRELOAD = future
            _PRELOAD_THREAD = threading.Thread(target=run, name="hermes-preload", daemon=True)
        return _PRELOAD


def begin_preload() -> None:
    """Start the imports :func:`start_preload` prepared (once; nothing if none were).

    A runtime begins them once its first kernel is ready, or after a moment with none: on a
    machine of two cores, imports (about 150 ms of CPU) beside a kernel's start slowed the
    first result by a third (issue 38)."""
    global _PRELOAD_THREAD
    with _PRELOAD_LOCK:
        thread, _PRELOAD_THREAD = _PRELOAD_THREAD, None
    if thread is None:
        return
    try:
        thread.start()
    except RuntimeError:  # no thread can start now (a pids limit a script filled): here, then
        thread.run()


def settle_preload() -> None:
    """At a runtime's close: begin the imports if they were left waiting, in a host that did
    not arm the guard (whose imports are checked only until they are done)."""
    if import_guard.guard() is None:
        begin_preload()


async def preloaded() -> None:
    """Wait until :func:`start_preload`'s imports are done (begun now if they were not yet;
    at once if none were prepared)."""
    future = _PRELOAD
    if future is not None and not future.done():
        begin_preload()
        with contextlib.suppress(Exception):
            await asyncio.wrap_future(future)


def preloaded_blocking() -> None:
    """:func:`preloaded`, in the calling thread (not the event loop's)."""
    future = _PRELOAD
    if future is not None and not future.done():
        begin_preload()
        with contextlib.suppress(Exception):
            future.result()


def get_tool(name: str) -> Tool | None:
    """The tool called ``name``, if there is one."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = registry()
    return _REGISTRY.get(name)


def _prepare(name: str, args: dict[str, Any]) -> tuple[Tool, Any] | dict[str, Any]:
    tool = get_tool(name)
    if tool is None:
        return {"error": f"unknown tool {name!r}; the tools are: {', '.join(TOOL_NAMES)}"}
    try:
        return tool, tool.args.model_validate(args)
    except ValueError as exc:  # pydantic's ValidationError (imported with the tools, not here: .args)
        from hermes_tui.runtime.tools.args import describe_validation

        return {"error": f"{name}(): invalid arguments: {describe_validation(exc)}"}


FILE_TOOLS = frozenset({"read_file", "write_file", "patch", "search_files"})
"""Tools that work on this machine's files (terminal() checks the backend itself)."""


def _not_here(name: str, ctx: ToolContext) -> dict[str, Any] | None:
    """The refusal of a file tool when terminal.backend is not ``local``: the user meant the
    agent's files to be elsewhere (a container, another machine), not here."""
    refusal = ctx.backend_refusal() if name in FILE_TOOLS else None
    return {"error": f"BLOCKED: {refusal}"} if refusal else None


def _failed(name: str, exc: Exception) -> dict[str, Any]:
    # A bug or an OS error in a tool is the script's error dict, never the host's crash.
    return {"error": f"{name} failed: {type(exc).__name__}: {exc}"}


async def call_tool(name: str, args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """Validate ``args`` and run tool ``name`` on the event loop; always returns a dict."""
    await preloaded()
    prepared = _not_here(name, ctx) or _prepare(name, args)
    if isinstance(prepared, dict):
        return prepared
    tool, parsed = prepared
    try:
        reasons = list(dict.fromkeys(_guarded(tool, ctx, parsed).values()))
        if tool.preview is not None and ctx.ask_writes and not reasons:
            reasons = [ctx.ask_writes]
        if reasons and tool.preview is not None:
            if ctx.remote is not None:
                from hermes_tui.runtime.tools import remote_files
                files, diff = await remote_files.preview(ctx, name, parsed)
            else:
                files, diff = await asyncio.to_thread(tool.preview, ctx, parsed)
            refusal = await ctx.gate.check_file(
                name, files, capped(diff), reasons, cwd=ctx.cwd, session=ctx.session, kernel=ctx.kernel_id,
                exec_id=ctx.exec_id, origin=ctx.origin, call_id=ctx.call_id,
                where=ctx.remote.where if ctx.remote is not None else None,
            )
            if refusal is not None:
                return {"error": f"BLOCKED: {refusal}"}
        if ctx.remote is not None and name in FILE_TOOLS:  # the files there: the backend is the boundary
            from hermes_tui.runtime.tools import remote_files
            return await remote_files.call(name, ctx, parsed)
        beyond = await asyncio.to_thread(sandbox_refusal, tool, ctx, parsed)
        if beyond is not None and (ctx.gate.yolo or not await asyncio.to_thread(_asked_anyway, tool, ctx, parsed,
                                                                                 reasons)):
            # The host must not do for a script what its sandbox forbids it, unless a person
            # said so: the file question above (a person saw the change), or this one.
            refusal = await ctx.gate.check_unsandboxed(
                f"{name} {beyond[0]}", beyond[1], cwd=ctx.cwd, session=ctx.session, kernel=ctx.kernel_id,
                exec_id=ctx.exec_id, origin=ctx.origin, call_id=ctx.call_id)
            if refusal is not None:
                return {"error": f"BLOCKED: blocked by the sandbox: {beyond[1]}; not done outside it: {refusal}"}
        checkpoint = await _checkpoint(tool, ctx, parsed)
        try:
            if beyond is not None:
                return await tool.handler(ctx, parsed)  # a person let this call outside the sandbox
            with _guarded_files(ctx, tool.writes is not None or tool.name in READS):
                return await tool.handler(ctx, parsed)
        finally:
            if checkpoint is not None:
                await checkpoint_end(ctx, checkpoint)
    except Exception as exc:
        return _failed(name, exc)


async def _checkpoint(tool: Tool, ctx: ToolContext, parsed: Any) -> Any:
    """Before a write here (``write_file``, ``patch``): a checkpoint of the workspace."""
    if tool.writes is None or ctx.checkpoints is None or ctx.remote is not None:
        return None
    return await checkpoint_begin(ctx, tool.name, str(getattr(parsed, "path", "") or ""))


READS = {"read_file": "path", "search_files": "path"}
"""Tools that read, and the argument naming what they read."""


def sandbox_refusal(tool: Tool, ctx: ToolContext, parsed: Any) -> tuple[str, str] | None:
    """The path this call would write or read that the sandbox keeps from the script's own
    processes, and why (the file tools run in the host: they must not be the way around it).
    None when the sandbox is off or allows every path. Blocking (it reads the file system)."""
    sandbox = ctx.sandbox
    if sandbox is None or not sandbox.active:
        return None
    from hermes_tui.runtime.sandbox import denials

    layout = ctx.sandbox_layout()
    home = ctx.judged_paths()[0].home
    if tool.writes is not None:
        for path in tool.writes(ctx, parsed):
            why = denials.write_refusal(path, layout, cwd=ctx.cwd, home=home)
            if why is not None:
                return path, why
    argument = READS.get(tool.name)
    if argument is not None:
        path = str(ctx.resolve(getattr(parsed, argument)))
        why = denials.read_refusal(path, layout, cwd=ctx.cwd, home=home)
        if why is not None:
            return path, why
    return None


@contextlib.contextmanager
def _guarded_files(ctx: ToolContext, file_tool: bool) -> Iterator[None]:
    """While a file tool runs for a sandboxed script: what it really opens to read, and the
    folder it really writes in, are judged by the sandbox's rules (fsutil's guards), so a
    folder swapped for a symbolic link after the check of the path gains nothing."""
    sandbox = ctx.sandbox
    if sandbox is None or not sandbox.active or not file_tool:
        yield  # the host's own writes (an "always" rule, a record) are never the script's
        return
    from hermes_tui.runtime.sandbox import denials

    layout = ctx.sandbox_layout()
    home = ctx.judged_paths()[0].home
    writes = WRITE_GUARD.set(lambda real: denials.write_refusal(real, layout, cwd="/", home=home))
    reads = READ_GUARD.set(lambda real: denials.real_read_refusal(real, layout, home))
    try:
        yield
    finally:
        READ_GUARD.reset(reads)
        WRITE_GUARD.reset(writes)


def _asked_anyway(tool: Tool, ctx: ToolContext, parsed: Any, reasons: list[str]) -> bool:
    """True when a person is asked about this call anyway (a protected write with its diff, a
    credentials read): that question stands for the sandbox's too. Blocking."""
    if reasons and tool.preview is not None:
        return True
    argument = READS.get(tool.name)
    if argument is None:
        return False
    from hermes_tui.runtime.tools.files import read_verdict

    return read_verdict(ctx, ctx.resolve(getattr(parsed, argument)))[2] is not None


def _guarded(tool: Tool, ctx: ToolContext, parsed: Any) -> dict[str, str]:
    """Protected files this call would write, with why each is protected."""
    if tool.writes is None:
        return {}
    from hermes_tui.runtime.danger import protected_write

    hermes_home = str(ctx.gate.home) if ctx.gate is not None else None
    instructions = ctx.gate.instructions if ctx.gate is not None else ()
    found = {}
    for path in tool.writes(ctx, parsed):
        reason = protected_write(path, hermes_home=hermes_home, instructions=instructions)
        if reason:
            found[path] = f"{reason}: {path}"
    return found


def call_tool_blocking(name: str, args: dict[str, Any], ctx: ToolContext) -> dict[str, Any] | None:
    """Like :func:`call_tool`, in the calling thread; None if the tool needs the event loop."""
    preloaded_blocking()
    tool = get_tool(name)
    if tool is None or tool.blocking is None or ctx.remote is not None:
        return None  # a remote backend's files are reached from the event loop
    prepared = _not_here(name, ctx) or _prepare(name, args)
    if isinstance(prepared, dict):
        return prepared
    try:
        if (_guarded(tool, ctx, prepared[1]) or (ctx.ask_writes and tool.preview is not None)
                or sandbox_refusal(tool, ctx, prepared[1]) is not None):
            return None  # needs an approval: that is the event loop's work
        with _guarded_files(ctx, tool.writes is not None or tool.name in READS):
            return tool.blocking(ctx, prepared[1])
    except Exception as exc:
        return _failed(name, exc)
