"""``hermes-tui checkpoints``, ``diff`` and ``rollback``: a session's checkpoints from a shell
(docs/checkpoints.md). The session must not be open in an app or a run (its lease says so)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

from hermes_tui.agent.checkpoints import StoreLog, listing, question, rollback, write_diff
from hermes_tui.base.paths import hermes_home
from hermes_tui.base.text import shown
from hermes_tui.cli.errors import EXIT_FAILED, EXIT_OK, UsageError
from hermes_tui.cli.sessions_cmd import _database, _find, refuse_if_driven
from hermes_tui.config import Config
from hermes_tui.runtime.checkpoints.book import Checkpoints, RollbackError
from hermes_tui.runtime.checkpoints.shadow import ShadowError


class _Direct:
    """The store opened here, run as the app runs its sessions store (``call``)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    async def call(self, fn: Any, *args: Any) -> Any:
        return fn(self.conn, *args)


def _book(config: Config, conn: Any, session: str) -> Checkpoints:
    book = Checkpoints(config.checkpoints, hermes_home(), host=socket.gethostname())
    book.log = StoreLog(_Direct(conn))
    book.sessions.add(session)  # a rollback's own checkpoint is one of the session's
    return book


def checkpoints_command(args: argparse.Namespace, config: Config) -> int:
    """List, diff or roll back; exit 0, 1 when something could not be put back."""
    with _database() as conn:
        session = _find(conn, args.session)
        book = _book(config, conn, session)
        if args.command == "checkpoints":
            rows = asyncio.run(book.log.all(session))  # type: ignore[union-attr]
            if args.json:
                for row in rows:
                    print(json.dumps(row.as_json()))
            elif not rows:
                print(f"session {shown(session)} has no checkpoints")
            else:
                print("\n".join(shown(line, one_line=True) for line in listing(rows)))
            return EXIT_OK
        if args.command == "diff":
            return _diff(book, session, args.n)
        refuse_if_driven(session)
        return _rollback(args, book, conn, session)


def _diff(book: Checkpoints, session: str, n: int) -> int:
    """The diff, streamed from a temporary file: raw into a pipe (`| patch`, `| less`), and on a
    terminal with control characters shown, never obeyed (a script wrote those files)."""
    with tempfile.TemporaryDirectory(prefix="hermes-diff-") as scratch:
        path = Path(scratch) / "diff"
        try:
            size = asyncio.run(write_diff(book, session, n, path))
        except (RollbackError, ShadowError) as exc:
            raise UsageError(f"diff {n}: {exc}") from None
        if not size:
            print(f"no file differs from checkpoint {n}")
            return EXIT_OK
        raw = not sys.stdout.isatty()
        with open(path, "rb") as handle:
            for line in handle:
                if raw:
                    sys.stdout.buffer.write(line)
                else:
                    sys.stdout.write(shown(line.decode("utf-8", "replace").rstrip("\n"), one_line=True) + "\n")
        sys.stdout.flush()
    return EXIT_OK


def _rollback(args: argparse.Namespace, book: Checkpoints, conn: Any, session: str) -> int:
    cwd = os.getcwd()
    try:
        plan = asyncio.run(book.plan(session, args.n, args.files, cwd))
    except (RollbackError, ShadowError) as exc:
        raise UsageError(f"rollback {args.n}: {exc}") from None
    if not plan.count and not args.conversation:
        print(f"no file differs from checkpoint {args.n}: nothing to do")
        return EXIT_OK
    print(shown(question(plan, cwd, conversation=args.conversation), one_line=False))
    if not args.yes:
        if not sys.stdin.isatty():
            print("not rolled back: run with --yes to do it", file=sys.stderr)
            return EXIT_OK
        try:
            answer = input("roll back? [y/N] ")
        except EOFError:  # Ctrl+D: no
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            print("left as it is")
            return EXIT_OK
    try:
        done = asyncio.run(rollback(book, _Direct(conn), plan, conversation=args.conversation))
    except (RollbackError, ShadowError) as exc:
        raise UsageError(f"rollback {args.n}: {exc}") from None
    for line in done.notes():
        print(shown(line, one_line=False))
    return EXIT_FAILED if done.problems else EXIT_OK
