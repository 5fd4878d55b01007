"""``hermes-tui exec FILE...``: run Python files in one session kernel, headless."""

from __future__ import annotations

import argparse
import asyncio
import errno
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_tui.cli.errors import EXIT_FAILED, EXIT_OK, UsageError
from hermes_tui.base.text import shown
from hermes_tui.base.units import plural

if TYPE_CHECKING:
    from hermes_tui.config import Config
    from hermes_tui.runtime.models import ExecResult


def exec_command(args: argparse.Namespace, config: Config) -> int:
    """Run the files in order; 0 if all succeeded, 1 otherwise (a UsageError for bad input)."""
    from hermes_tui.config.notes import backend_refusal

    refusal = backend_refusal(config.terminal)
    for notice in config.notices:
        if notice != refusal:  # that one is the error below
            print(f"hermes-tui: notice: {shown(notice)}", file=sys.stderr)
    if refusal:
        raise UsageError(refusal)
    if args.yolo:
        config.approvals.mode = "off"
        print("hermes-tui: YOLO: approvals are off for this run; terminal commands run without asking "
              "(hard-blocked ones are still refused)", file=sys.stderr)
    if args.files.count("-") > 1:
        raise UsageError("exec: '-' (standard input) can be given only once")
    scripts = _read_scripts(args.files)
    _check_home()
    from hermes_tui.base.paths import hermes_home
    from hermes_tui.runtime.import_guard import arm

    arm(home=hermes_home())  # the host's imports close once its runtime has started (runtime/import_guard.py)
    return asyncio.run(_run_scripts(config, scripts, args))


def _check_home() -> None:
    """Fail with one line, before any kernel starts, when ``HERMES_HOME`` cannot be written.

    exec keeps every execution's record in ``cache/exec`` and the approvals log in ``tui/``. A
    file is created and removed in each, because only a real write tells: a folder can be
    read-only for this user, on a read-only mount, or under a path that is a file (ENOTDIR).
    """
    from hermes_tui.base.paths import exec_cache_dir, hermes_home, tui_dir

    home = hermes_home()
    for folder in (exec_cache_dir(home), tui_dir(home)):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            handle, probe = tempfile.mkstemp(prefix=".write-check-", dir=folder)  # a dot file: never listed
            os.close(handle)
            os.unlink(probe)
        except OSError as exc:
            failed = exc.filename or folder
            why = exc.strerror or str(exc)
            if exc.errno == errno.ENOTDIR:
                why += ": a part of that path is a file"
            raise UsageError(
                f"exec: HERMES_HOME ({home}) cannot be written ({failed}: {why}); exec keeps its records and the "
                "approvals log there: make it writable, or set HERMES_HOME to a directory you can write") from None


def _read_scripts(files: list[str]) -> list[tuple[str, str]]:
    scripts = []
    for name in files:
        if name == "-":
            scripts.append(("<stdin>", sys.stdin.read()))
            continue
        path = Path(name)
        try:
            scripts.append((name, path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            raise UsageError(f"exec: no such file: {name}") from None
        except IsADirectoryError:
            raise UsageError(f"exec: {name} is a directory, not a Python file") from None
        except UnicodeDecodeError:
            raise UsageError(f"exec: {name} is not UTF-8 text") from None
        except OSError as exc:
            raise UsageError(f"exec: cannot read {name}: {exc.strerror or exc}") from None
    return scripts


async def _run_scripts(config: Config, scripts: list[tuple[str, str]], args: argparse.Namespace) -> int:
    from hermes_tui.base.lifetime import settle_heap
    from hermes_tui.cli.tty_approver import tty_approver
    from hermes_tui.runtime import Runtime

    failed = False
    runtime = Runtime(config, approver=tty_approver())
    judge = _judge(config, runtime.home)  # imported before the runtime starts (runtime/import_guard.py)
    runtime.gate.judge = judge
    async with runtime:
        settle_heap()  # collection was off for the imports and the start (hermes_tui.cli.main)
        try:
            failed = await _each(runtime, scripts, args)
        finally:
            if judge is not None:
                await judge.aclose()
    return EXIT_FAILED if failed else EXIT_OK


def _judge(config: Config, home: Path) -> Any:
    """The approval judge of ``approvals.mode: smart`` (its cost is in the audit log: no session
    holds it); None in other modes, or when it cannot be made (then said on stderr)."""
    if config.approvals.mode != "smart":
        return None
    from hermes_tui.agent.models.keys import ProviderError
    from hermes_tui.agent.models.resolve import resolve_provider
    from hermes_tui.agent.workspace import make_judge

    try:
        main = resolve_provider(config, home)
    except ProviderError:
        main = None
    judge, problem = make_judge(config, home, main)
    if problem:
        print(f"hermes-tui: {shown(problem)}", file=sys.stderr)
    return judge


async def _each(runtime: Any, scripts: list[tuple[str, str]], args: argparse.Namespace) -> bool:
    """Run the scripts in turn; True when one failed."""
    failed = False
    for index, (name, code) in enumerate(scripts):
        result = await runtime.execute_code(
            code, session=args.session, reset=args.reset and index == 0, timeout=args.timeout, origin=args.origin,
            filename=name,
        )
        if args.json:
            print(result.model_dump_json(), flush=True)
        else:
            _print_result(name, result)
        if result.status != "success":
            failed = True
            if not args.keep_going:
                rest = len(scripts) - index - 1
                if rest and not args.json:
                    print(f"hermes-tui exec: {plural(rest, 'file')} not run after the failure "
                          "(use --keep-going to run them)", file=sys.stderr)
                break
    return failed


def _print_result(name: str, result: ExecResult) -> None:
    # The script's own output is written as it is (like running it with python); the notes
    # about it (paths, warnings, errors that quote commands) are ours, so they are escaped.
    sys.stdout.write(result.output)
    sys.stdout.flush()
    notes = []
    if result.stdout_spill_path:
        notes.append(f"full output ({result.stdout_bytes_total} bytes): {result.stdout_spill_path}")
    if result.warning:
        notes.append(f"warning: {result.warning}")
    if result.status != "success":
        notes.append(f"{result.status}: {result.error or 'failed'}")
    for note in notes:
        print(f"hermes-tui exec: {shown(name)}: {shown(note, one_line=False)}", file=sys.stderr)
