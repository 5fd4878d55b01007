"""``hermes-tui inject``, ``export`` and ``sessions``: the stored sessions from the shell."""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import cast

from hermes_tui import store as db
from hermes_tui.cli.errors import EXIT_OK, UsageError


@contextmanager
def _database() -> Iterator[sqlite3.Connection]:
    """The sessions database, or a UsageError when nothing is stored yet."""
    path = db.sessions_db_path()
    if not path.exists():
        raise UsageError(f"no sessions stored yet ({path} does not exist)")
    conn = db.connect(path)
    try:
        yield conn
    finally:
        conn.close()


def _find(conn: sqlite3.Connection, wanted: str) -> str:
    found = db.find_session(conn, wanted)
    if found is None:
        raise UsageError(f"no session matches {wanted!r} (`hermes-tui sessions` lists them)")
    return found


def resolve_session(wanted: str) -> str:
    """The id ``wanted`` names (``latest``, an id, or a unique prefix), or a UsageError."""
    with _database() as conn:
        return _find(conn, wanted)


def inject_command(args: argparse.Namespace) -> int:
    from hermes_tui.inject import InjectError, inject

    text = sys.stdin.read() if args.text == ["-"] else " ".join(args.text)
    try:
        answer = inject(text, session=args.session)
    except InjectError as exc:
        raise UsageError(f"inject: {exc}") from None
    ahead = int(cast(int, answer.get("queued") or 0))  # the app replies with a JSON number
    where = f"session {answer.get('session')}"
    print(f"injected into {where}" + (f"; queued behind {ahead} turn(s)" if ahead else "; running now"))
    return EXIT_OK


def export_command(args: argparse.Namespace) -> int:
    from hermes_tui.export import to_sharegpt

    with _database() as conn:
        session_id = _find(conn, args.session)
        stored = db.load_session(conn, session_id)
    assert stored is not None
    text = json.dumps(to_sharegpt(stored), ensure_ascii=False, indent=2) + "\n"
    if args.output:
        path = Path(args.output)
        try:
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
        except OSError as exc:
            raise UsageError(f"export: cannot write {path}: {exc.strerror or exc}") from None
        print(f"wrote session {session_id} ({len(stored.messages)} messages) to {path}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def sessions_command(args: argparse.Namespace) -> int:
    try:
        with _database() as conn:
            sessions = db.list_sessions(conn, limit=10_000)
    except UsageError:
        print("no sessions stored yet", file=sys.stderr)
        return EXIT_OK
    for info in sessions:
        if args.json:
            print(json.dumps(info.__dict__, ensure_ascii=False))
        else:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.updated_at))
            flag = "  interrupted" if info.interrupted else ""
            print(f"{info.id}  {when}  {info.messages:>4} msgs  {info.title or '(empty)'}{flag}")
    return EXIT_OK
