"""``hermes-tui store info`` and ``hermes-tui store migrate``: the sessions store from the shell.

``info`` says which store is in use (its URL without the password, and what chose it), its
backend, schema version, what it holds and its size; it only reads (an older schema is not
migrated by looking at it). ``migrate`` copies sessions from one store to another with
:mod:`hermes_tui.storage.copy`, a progress bar on a terminal and one summary line at the end.
"""

from __future__ import annotations

import argparse
import json
import logging
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from hermes_tui.cli.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, UsageError, database_problem, os_problem
from hermes_tui.base.text import shown
from hermes_tui.base.units import human_size, plural

INFO_DESCRIPTION = """\
Say which sessions store is in use and what it holds: its URL (never its password) and what
chose it (--store, HERMES_TUI_STORE_URL, store.url in config.yaml, or the default
$HERMES_HOME/tui/sessions.db), the backend, the schema version (and the one this hermes-tui
writes), the sessions (yours and sub-agents'), messages, approvals waiting, live leases (who
drives a session now) and the size (SQLite: the file and its WAL; PostgreSQL: the database,
and the server's version). It only reads: nothing is created or migrated. Exit 0; 2 when the
store cannot be read (a server that cannot be reached, a wrong password, a damaged file)."""

MIGRATE_DESCRIPTION = """\
Copy sessions from one store to another: a SQLite file to a PostgreSQL server (to share it
between machines), back, or between two of either. Everything of a session is copied: turns,
messages (reasoning too), tool calls, approvals pending and answered, answers given from a
shell, usage and costs, the session's budget and host, and the input history. Sub-agents'
sessions (ID::child::NAME) go with their parent. Leases (who drives a session) are not copied.

The source is only read. The target is created if needed and its schema brought up to date.
Each session is copied in one transaction, so the copy can be interrupted and run again: a
session the target already has with as many messages is skipped, one that grew in the source
since is replaced, one the target has more of (continued there) is kept.

A session is more than its id: the target's session with the same id is the same one only when
it was created at the same moment and one side's messages are the start of the other's. Another
session under that id (two machines that each ran --session dup-1), or one continued apart on
both sides, is never overwritten: it is refused with one line naming both, or with --rename
copied under a new id (ID-2, ...), which is printed. A later --rename knows that copy for the
same session: it grows it when the session grew in the source, never copies it again.

--from and --to default to the store in use (--store, HERMES_TUI_STORE_URL, store.url or
$HERMES_HOME/tui/sessions.db): give at least one. Exit 0 when every session is there, 1 when
some could not be copied or were refused (each is named), 2 for a bad URL, a store that cannot be opened, or
--from and --to naming the same store."""

MIGRATE_EPILOG = """\
examples:
  hermes-tui store migrate --to postgresql://hermes@db.lan/hermes
      copy the store in use (by default $HERMES_HOME/tui/sessions.db) to a PostgreSQL server
  hermes-tui store migrate --from sqlite:///home/me/old/sessions.db
      copy an old SQLite file into the store in use
  hermes-tui store migrate --from postgresql://hermes@db.lan/hermes --to sqlite:///tmp/copy.db --session latest

A PostgreSQL password comes from PGPASSWORD, ~/.pgpass, or the URL (it is never printed); the
store in use also takes it from store.password_env."""

ORIGINS = {"--store": "--store", "HERMES_TUI_STORE_URL": "HERMES_TUI_STORE_URL",
           "store.url": "store.url in config.yaml", "default": "the default"}
"""What chose the store (:attr:`StoreURL.origin`), as ``info`` says it."""


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``store`` command's parser: ``store info`` and ``store migrate``."""
    store = commands.add_parser(
        "store", help="the sessions store: which one is in use and what it holds; copy sessions between stores",
        description="The sessions store: `store info` says which one is in use and what it holds, "
                    "`store migrate` copies sessions from one store to another (SQLite, PostgreSQL).")
    actions = store.add_subparsers(dest="store_command", metavar="ACTION", required=True)
    info = actions.add_parser("info", help="which store is in use, what chose it, what it holds, its size",
                              description=INFO_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    info.add_argument("--json", action="store_true", help="as one JSON object")
    migrate = actions.add_parser("migrate", help="copy sessions from one store to another (SQLite, PostgreSQL)",
                                 description=MIGRATE_DESCRIPTION, epilog=MIGRATE_EPILOG,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    migrate.add_argument("--from", dest="source", metavar="URL",
                         help="the store to copy from: sqlite:///PATH or postgresql://USER@HOST/DATABASE "
                              "(default: the store in use)")
    migrate.add_argument("--to", dest="target", metavar="URL",
                         help="the store to copy to, created if needed (default: the store in use)")
    migrate.add_argument("--session", dest="sessions", action="append", metavar="ID",
                         help="copy only this session (an id, a unique prefix, or latest) and its sub-agents; "
                              "repeat for more (default: every session)")
    migrate.add_argument("--rename", action="store_true",
                         help="copy a session whose id the target holds for another session under a new id "
                              "(ID-2, ...) rather than refuse it")
    migrate.add_argument("--dry-run", action="store_true", help="say what would be copied, copy nothing")
    migrate.add_argument("--json", action="store_true", help="the summary as one JSON object on standard output")


def store_command(args: argparse.Namespace) -> int:
    """``hermes-tui store info`` / ``hermes-tui store migrate``."""
    if args.store_command == "info":
        return info_command(args)
    return migrate_command(args)


@contextmanager
def _problems(url: Any, side: str = "") -> Iterator[None]:
    """A store that cannot be used, as one line (``side``: ``--from`` or ``--to`` first)."""
    from hermes_tui.base.paths import hermes_home
    from hermes_tui.storage.errors import StoreError

    prefix = f"{side}: " if side else ""
    try:
        yield
    except sqlite3.Error as exc:
        raise UsageError(prefix + database_problem(url.path, exc)) from None
    except StoreError as exc:
        raise UsageError(prefix + str(exc)) from None
    except OSError as exc:  # a FIFO (FileRefused), a folder that cannot be written
        raise UsageError(prefix + f"the sessions store cannot be used: {os_problem(exc, hermes_home())}") from None


# -- info ---------------------------------------------------------------------------------------


def store_facts(conn: Any) -> dict[str, Any]:
    """What a store holds, read in one snapshot (tables an older schema lacks count 0)."""
    from hermes_tui.storage.copy import reading, schema_version, tables
    from hermes_tui.storage.sessions import CHILD
    from hermes_tui.storage.leases import STALE_AFTER

    with reading(conn):
        present = tables(conn)

        def count(table: str, where: str = "", params: tuple[Any, ...] = ()) -> int:
            if table not in present:
                return 0
            return int(conn.execute(f"SELECT COUNT(*) FROM {table} {where}", params).fetchone()[0])

        facts: dict[str, Any] = {
            "schema_version": schema_version(conn, present),
            "sessions": count("sessions"),
            "subagent_sessions": count("sessions", "WHERE id LIKE ?", (f"%{CHILD}%",)),
            "messages": count("messages"),
            "pending_approvals": count("approvals", "WHERE status = 'pending'"),
            "live_leases": count("leases", f"WHERE heartbeat_at >= {conn.now} - ?", (STALE_AFTER,)),
        }
        if conn.kind == "postgresql":
            row = conn.execute("SELECT pg_database_size(current_database()), current_setting('server_version')"
                               ).fetchone()
            facts["size_bytes"], facts["server_version"] = int(row[0]), row[1]
    facts["user_sessions"] = facts["sessions"] - facts["subagent_sessions"]
    return facts


def info_command(args: argparse.Namespace) -> int:
    """``hermes-tui store info``."""
    from hermes_tui.storage import sessions as db
    from hermes_tui.storage.copy import open_source
    from hermes_tui.storage.opening import SCHEMA_VERSION

    url = db.store_url()
    report: dict[str, Any] = {"store": url.redacted(), "chosen_by": url.origin, "kind": url.kind,
                              "program_schema_version": SCHEMA_VERSION}
    if url.kind == "sqlite":
        assert url.path is not None
        report["path"] = str(url.path)
        report["exists"] = url.path.exists()
    if report.get("exists") is False:
        report["size_bytes"] = 0
    else:
        with _problems(url):
            conn = open_source(url)
            try:
                report.update(store_facts(conn))
            finally:
                conn.close()
        if url.kind == "sqlite":
            assert url.path is not None
            report["size_bytes"] = _size(url.path)
            report["wal_bytes"] = _size(url.path.with_name(url.path.name + "-wal"))
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
        return EXIT_OK
    for name, value in _info_lines(report):
        print(f"{name + ':':<11} {value}")
    return EXIT_OK


def _size(path: Any) -> int:
    try:
        return int(path.stat().st_size)
    except OSError:
        return 0


def _info_lines(report: dict[str, Any]) -> list[tuple[str, str]]:
    where = shown(report["store"])
    lines = [("store", f"{where}  (chosen by {ORIGINS.get(report['chosen_by'], report['chosen_by'])})")]
    if report["kind"] == "sqlite":
        lines.append(("backend", "SQLite"))
        if not report["exists"]:
            lines.append(("state", "not created yet (the first session creates it)"))
            return lines
    else:
        lines.append(("backend", f"PostgreSQL {shown(report['server_version'])}"))
    version, ours = report["schema_version"], report["program_schema_version"]
    if version == 0:
        schema = f"none yet (created on first use; this hermes-tui writes {ours})"
    elif version < ours:
        schema = f"version {version} (this hermes-tui writes {ours}: brought up to date on its next use)"
    elif version > ours:
        schema = f"version {version}, newer than this hermes-tui writes ({ours}): upgrade hermes-tui to use it"
    else:
        schema = f"version {version} (this hermes-tui writes {ours})"
    lines.append(("schema", schema))
    sessions = str(report["sessions"])
    if report["subagent_sessions"]:
        sessions += f" ({report['user_sessions']} yours, {report['subagent_sessions']} of sub-agents)"
    lines += [("sessions", sessions), ("messages", str(report["messages"])),
              ("approvals", f"{report['pending_approvals']} pending"),
              ("leases", f"{report['live_leases']} live (sessions driven now)")]
    size = human_size(report["size_bytes"])
    if report["kind"] == "sqlite" and report.get("wal_bytes"):
        size += f" (+ {human_size(report['wal_bytes'])} WAL)"
    lines.append(("size", size))
    return lines


# -- migrate ------------------------------------------------------------------------------------


def _store_url(text: str | None, flag: str, current: Any) -> Any:
    """``text`` parsed (None: the store in use). The same store as the one in use, named without
    a password, keeps the one ``store.password_env`` gave it (never handed to another server)."""
    from hermes_tui.base.paths import hermes_home
    from hermes_tui.storage.copy import same_place
    from hermes_tui.config.store_url import StoreURL, parse_store_url

    if text is None:
        return current
    url = parse_store_url(text, hermes_home(), origin=flag)
    if url.kind == "postgresql" and current.password and not url.secrets() and same_place(url, current):
        url = StoreURL(url.kind, url.text, None, current.password, flag)
    return url


def migrate_command(args: argparse.Namespace) -> int:
    """``hermes-tui store migrate``."""
    from hermes_tui.storage import sessions as db
    from hermes_tui.storage import copy
    from hermes_tui.storage.opening import open_database

    if args.source is None and args.target is None:
        raise UsageError("store migrate: give --to URL (copy the store in use there), --from URL (copy from there "
                         "into the store in use), or both")
    current = db.store_url()
    source_url = _store_url(args.source, "--from", current)
    target_url = _store_url(args.target, "--to", current)
    if copy.same_place(source_url, target_url):
        raise UsageError(f"store migrate: --from and --to name the same store ({source_url.redacted()}): "
                         "nothing to copy")
    started = time.monotonic()
    with _problems(source_url, "--from"):
        source = copy.open_source(source_url)
    try:
        _refuse_same_database(source, source_url, target_url)
        with _problems(source_url, "--from"):
            with copy.reading(source):
                copy.check_source(source)
                wanted = _chosen_sessions(source, args.sessions or [], source_url)
        with _problems(target_url, "--to"):
            target = open_database(target_url)  # created, its schema migrated, as every store is
        try:
            return _migrate(args, source, target, source_url, target_url, wanted, started)
        finally:
            target.close()
    finally:
        source.close()


def _chosen_sessions(source: Any, wanted: list[str], url: Any) -> list[str] | None:
    """The ids ``--session`` names (resolved in the source), or None for every session."""
    from hermes_tui.storage import sessions as db
    if not wanted:
        return None
    found = []
    for text in wanted:
        session = db.find_session(source, text)
        if session is None:
            raise UsageError(f"store migrate: no session matches {text!r} in {url.redacted()} "
                             f"(`hermes-tui --store URL sessions` lists them)")
        found.append(session)
    return found


def _refuse_same_database(source: Any, source_url: Any, target_url: Any) -> None:
    """A UsageError when the two URLs name one PostgreSQL database by two addresses (a socket
    and TCP): asked before the target is opened, as that would migrate its schema."""
    from hermes_tui.storage import copy

    if source_url.kind != "postgresql" or target_url.kind != "postgresql":
        return
    with _problems(target_url, "--to"):
        probe = copy.open_source(target_url)
        try:
            same = copy.identity(probe) == copy.identity(source)
        finally:
            probe.close()
    if same:
        raise UsageError(f"store migrate: --from {source_url.redacted()} and --to {target_url.redacted()} "
                         "are the same database: nothing to copy")


def _migrate(args: argparse.Namespace, source: Any, target: Any, source_url: Any, target_url: Any,
             wanted: list[str] | None, started: float) -> int:
    from hermes_tui.storage import copy
    from hermes_tui.storage.errors import StoreError

    ends = {"from": source_url.redacted(), "to": target_url.redacted()}
    try:
        plan = copy.plan_copy(source, target, wanted, rename=getattr(args, "rename", False))
        in_use = [s for s in copy.live_sessions(source) if s in {p.id for p in plan}]
    except sqlite3.Error as exc:
        raise UsageError(f"store migrate: {exc}") from None
    if args.dry_run:
        return _dry_run(args, plan, ends)
    report = copy.CopyReport()
    work = [p for p in plan if p.action in (copy.COPY, copy.REPLACE, copy.RENAME)]
    try:
        with _quiet_driver(), _progress_bar(work) as on_step:
            copy.copy_sessions(source, target, plan, all_inputs=wanted is None, on_step=on_step, report=report)
    except KeyboardInterrupt:
        print(f"hermes-tui: interrupted: {_summary(report, time.monotonic() - started)} so far; what was copied "
              "is whole, run it again to copy the rest", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (StoreError, sqlite3.Error) as exc:
        raise UsageError(f"store migrate stopped: {' '.join(str(exc).split())} ({_summary(report, 0)} before it; "
                         "run it again to copy the rest)") from None
    seconds = time.monotonic() - started
    failed = report.of(copy.FAILED) + report.of(copy.REFUSED)
    if args.json:
        print(json.dumps({**ends, **report.as_dict(), "seconds": round(seconds, 3), "in_use_in_source": in_use},
                         ensure_ascii=False))
        return EXIT_FAILED if failed else EXIT_OK
    print(_summary(report, seconds))
    print(f"  from {shown(ends['from'])}\n  to   {shown(ends['to'])}")
    if report.inputs:
        print(f"  and {plural(report.inputs, 'input')} of the history")
    for step in report.of(copy.KEPT):
        print(f"kept {_as(step)}: {shown(step.why)}")
    for step in report.of(copy.REPLACED):
        if step.new_id:  # an earlier --rename's copy, grown: said, as the rename was
            print(f"replaced {_as(step)} ({plural(step.messages, 'message')}): {shown(step.why)}")
    for step in report.of(copy.RENAMED):
        print(f"copied {shown(step.id)} as {shown(step.new_id)} ({plural(step.messages, 'message')}): "
              f"{shown(step.why)}")
    for step in report.of(copy.REFUSED):
        print(f"refused {shown(step.id)}: {shown(step.why)}")
    for step in report.of(copy.GONE):
        print(f"not copied {shown(step.id)}: {step.why}")
    for step in report.of(copy.FAILED):
        print(f"failed {shown(step.id)}: {shown(step.why)}")
    if in_use:
        print(f"note: {plural(len(in_use), 'session')} in use in the source while copied ({shown(', '.join(in_use))}):"
              " run this again once they stop to copy what they add")
    return EXIT_FAILED if failed else EXIT_OK


def _as(step: Any) -> str:
    """``ID``, or ``ID as NEW`` for a session that is in the target under another id."""
    return shown(step.id) + (f" as {shown(step.new_id)}" if step.new_id else "")


def _summary(report: Any, seconds: float) -> str:
    """``copied 50 sessions (2000 messages), skipped 0 already there, replaced 0, in 1.2s``."""
    from hermes_tui.storage import copy

    line = (f"copied {plural(report.count(copy.COPIED), 'session')} "
            f"({plural(report.messages(copy.COPIED), 'message')}), "
            f"skipped {report.count(copy.SKIPPED)} already there, replaced {report.count(copy.REPLACED)}")
    if report.count(copy.KEPT):
        line += f", kept {report.count(copy.KEPT)} (the target has more)"
    if report.count(copy.RENAMED):
        line += f", copied {report.count(copy.RENAMED)} under a new id"
    if report.count(copy.REFUSED):
        line += f", refused {report.count(copy.REFUSED)} (the target has another session under its id)"
    if report.count(copy.FAILED):
        line += f", {report.count(copy.FAILED)} failed"
    return line + (f", in {seconds:.1f}s" if seconds else "")


def _dry_run(args: argparse.Namespace, plan: list[Any], ends: dict[str, str]) -> int:
    from hermes_tui.storage import copy

    if args.json:
        print(json.dumps({**ends, "dry_run": True, "sessions": [p.__dict__ for p in plan]}, ensure_ascii=False))
        return EXIT_OK
    verbs = {copy.COPY: "would copy", copy.REPLACE: "would replace", copy.SKIP: "would skip",
             copy.KEEP: "would keep", copy.REFUSE: "would refuse", copy.RENAME: "would copy"}
    for item in plan:
        why = f": {shown(item.why)}" if item.why else ""
        name = shown(item.id) + (f" as {shown(item.new_id)}" if item.new_id else "")
        print(f"{verbs[item.action]} {name} ({plural(item.messages, 'message')}){why}")
    count = {action: sum(1 for p in plan if p.action == action) for action in verbs}
    print(f"would copy {plural(count[copy.COPY], 'session')} "
          f"({plural(sum(p.messages for p in plan if p.action == copy.COPY), 'message')}), "
          f"skip {count[copy.SKIP]} already there, replace {count[copy.REPLACE]}, keep {count[copy.KEEP]}"
          + (f", copy {count[copy.RENAME]} under a new id" if count[copy.RENAME] else "")
          + (f", refuse {count[copy.REFUSE]} (the target has another session under its id: --rename)"
             if count[copy.REFUSE] else "")
          + f"\n  from {shown(ends['from'])}\n  to   {shown(ends['to'])}")
    return EXIT_OK


@contextmanager
def _quiet_driver() -> Iterator[None]:
    """psycopg's own log lines off while copying: a Ctrl+C in the middle of a statement makes its
    rollback and its pool log warnings on stderr, where the one line that says what happened
    is enough (every real failure is raised, and said)."""
    logger = logging.getLogger("psycopg")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


@contextmanager
def _progress_bar(work: list[Any]) -> Iterator[Callable[[Any], None] | None]:
    """A progress bar on stderr while sessions are copied, when stderr is a terminal; yields
    the callback :func:`~hermes_tui.storage.copy.copy_sessions` reports each session to."""
    if not work or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    # Weighted by messages (+1: an empty session still moves it), so a long session takes its time.
    weight = {item.id: item.messages + 1 for item in work}
    done = [0]
    columns = (TextColumn("copying"), BarColumn(), TextColumn("{task.fields[sessions]}"), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("copy", total=sum(weight.values()), sessions=f"0/{len(work)} sessions")

        def on_step(step: Any) -> None:
            if step.id in weight:
                done[0] += 1
                progress.update(task, advance=weight[step.id], sessions=f"{done[0]}/{len(work)} sessions")

        yield on_step
