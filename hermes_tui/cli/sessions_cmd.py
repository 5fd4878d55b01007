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

from hermes_tui.storage import sessions as db
from hermes_tui.storage.opening import open_database
from hermes_tui.cli.errors import EXIT_OK, UsageError, database_problem, os_problem
from hermes_tui.base.text import shown
from hermes_tui.base.paths import hermes_home
from hermes_tui.base.fsutil import FileRefused
from hermes_tui.storage import leases
from hermes_tui.base.units import noun, plural


class NoSessions(UsageError):
    """Nothing is stored yet (``sessions`` says so and succeeds; the others fail)."""


@contextmanager
def _database() -> Iterator[db.Database]:
    """The sessions store; :class:`NoSessions` when nothing is stored yet (no SQLite file), a
    one-line UsageError when it cannot be used (not a database, damaged, a FIFO, locked, a
    server that cannot be reached, a schema from a newer hermes-tui...)."""
    url = db.store_url()
    path = url.path
    if path is not None and not path.exists():
        raise NoSessions(f"no sessions stored yet ({path} does not exist)")
    try:
        conn = open_database(url)
    except sqlite3.Error as exc:
        raise UsageError(database_problem(path or url.redacted(), exc)) from None
    except FileRefused as exc:  # a FIFO or a device: SQLite would wait on it for ever
        raise UsageError(f"the sessions database {path} cannot be used ({exc.strerror}); move it aside and the "
                         "next run starts a new one") from None
    except db.StoreError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:  # its folder cannot be used
        raise UsageError(f"the sessions database cannot be used: {os_problem(exc, hermes_home())}") from None
    try:
        yield conn
    except sqlite3.Error as exc:  # a damaged file may open and fail on the first read
        raise UsageError(database_problem(path or url.redacted(), exc)) from None
    except db.StoreError as exc:
        raise UsageError(str(exc)) from None
    finally:
        conn.close()


def _find(conn: db.Database, wanted: str) -> str:
    found = db.find_session(conn, wanted)
    if found is None and not db.has_sessions(conn):
        raise NoSessions(f"no sessions stored yet ({db.store_url().redacted()} holds none)")
    several = db.sessions_starting(conn, wanted) if found is None and wanted != "latest" else []
    if len(several) > 1:
        shown_ids = ", ".join(shown(i) for i in several[:5]) + (", ..." if len(several) > 5 else "")
        raise UsageError(f"{wanted!r} matches several sessions ({shown_ids}): give more of the id")
    if found is None:
        raise UsageError(f"no session matches {wanted!r} (`hermes-tui sessions` lists them)")
    return found


def resolve_session(wanted: str) -> str:
    """The id ``wanted`` names (``latest``, an id, or a unique prefix), or a UsageError.

    The session is read whole once here, so a damaged database is one line before the app
    opens, not a failure inside it.
    """
    with _database() as conn:
        found = _find(conn, wanted)
        try:
            db.load_session(conn, found)
        except ValueError as exc:  # a row whose JSON was damaged outside hermes-tui
            raise UsageError(f"session {found} in {db.store_url().redacted()} holds a damaged row ({exc}); "
                             "it cannot be continued") from None
        return found


def driver_of(session: str, stale_after: float | None = None) -> leases.Lease | None:
    """Who drives ``session`` now (a fresh lease whose process is not known gone), or None."""
    try:
        with _database() as conn:
            holder = leases.lease_of(conn, session)
    except NoSessions:
        return None
    return leases.live_holder(holder, stale_after or leases.STALE_AFTER)


def refuse_if_driven(session: str, stale_after: float | None = None) -> None:
    """A UsageError (one line naming the owner) when another process drives ``session``."""
    from hermes_tui.agent.workspace import busy_message

    holder = driver_of(session, stale_after)
    if holder is not None:
        raise UsageError(busy_message(session, holder))


def inject_command(args: argparse.Namespace) -> int:
    from hermes_tui.agent.inject import InjectError, inject

    text = sys.stdin.read() if args.text == ["-"] else " ".join(args.text)
    try:
        answer = inject(text, session=args.session)
    except InjectError as exc:
        raise UsageError(f"inject: {exc}") from None
    ahead = int(cast(int, answer.get("queued") or 0))  # the app replies with a JSON number
    where = f"session {shown(answer.get('session'))}"
    print(f"injected into {where}" + (f"; queued behind {plural(ahead, 'turn')}" if ahead else "; running now"))
    return EXIT_OK


def export_command(args: argparse.Namespace) -> int:
    from hermes_tui.agent.export import to_sharegpt

    with _database() as conn:
        session_id = _find(conn, args.session)
        try:
            stored = db.load_session(conn, session_id)
        except ValueError as exc:  # a row whose JSON was damaged outside hermes-tui
            raise UsageError(f"export: session {session_id} in {db.store_url().redacted()} holds a damaged row "
                             f"({exc}); it cannot be exported") from None
    assert stored is not None
    # One record per line (JSONL), as Hermes Agent writes trajectories and its tools read them.
    text = json.dumps(to_sharegpt(stored), ensure_ascii=False) + "\n"
    if args.output:
        path = Path(args.output)
        try:
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
        except OSError as exc:
            raise UsageError(f"export: cannot write {path}: {exc.strerror or exc}") from None
        print(f"wrote session {shown(session_id)} ({plural(len(stored.messages), 'message')}) to {shown(path)}",
              file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def session_cost(info: db.SessionInfo) -> str:
    """A session's cost as listed: ``$0.42``, ``?`` (no call priced), ``$0.42+?`` (some not),
    ``-`` (no model call)."""
    from hermes_tui.agent.usage import dollars

    if info.cost_usd is None:
        return "?" if info.unpriced_calls else "-"
    return dollars(info.cost_usd) + ("+?" if info.unpriced_calls else "")


def sessions_command(args: argparse.Namespace) -> int:
    try:
        with _database() as conn:
            sessions = db.list_sessions(conn, limit=10_000)
    except NoSessions:
        sessions = []
    if not sessions:
        print("no sessions stored yet", file=sys.stderr)
        return EXIT_OK
    from hermes_tui.agent.usage import tokens

    shared = db.store_url().shared  # several machines: say where each ran
    for info in sessions:
        if args.json:
            print(json.dumps(info.__dict__, ensure_ascii=False))
        else:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.updated_at))
            flag = "  interrupted" if info.interrupted and not info.lease else ""
            flag += f"  [driven by {shown(info.lease[:120])}]" if info.lease else ""
            # A title is the first line of a turn, and an injected turn is anyone's text.
            count = f"{info.messages:>4} {noun(info.messages, 'msg'):<4}"
            used = f"{tokens(info.tokens_in + info.tokens_out):>6} tok  {session_cost(info):>9}"
            host = f"  {shown((info.host or '-')[:24]):<12}" if shared else ""  # store text: anyone's, bounded
            print(f"{shown(info.id)}  {when}{host}  {count}  {used}  {shown((info.title or '(empty)')[:100])}{flag}")
    return EXIT_OK
