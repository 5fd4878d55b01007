"""Entry point: ``hermes-tui`` (the app) and its headless subcommands.

The top-level parser and the dispatch live here; each command lives in its own module:

* ``app_cmd`` — no subcommand: the full-screen app
* ``exec_cmd`` — ``hermes-tui exec``
* ``cache_cmd`` — ``hermes-tui cache`` (its parser too: ``add_parser``)
* ``jupyter_cmd`` — ``hermes-tui jupyter-cleanup`` (its parser too)
* ``checkpoints_cmd`` — ``hermes-tui checkpoints``, ``diff`` and ``rollback`` (their parsers too)
* ``approvals_cmd`` — ``hermes-tui approvals``
* ``sessions_cmd`` — ``hermes-tui inject``, ``export`` and ``sessions``
* ``doctor_cmd`` — ``hermes-tui doctor``: the config, its notices, the model, the backend
* ``store_cmd`` — ``hermes-tui store info`` and ``store migrate`` (the sessions store, docs/store.md)
* ``headless_cmd`` — ``run``, ``resume``, ``inspect``, ``approve``, ``deny`` (docs/headless.md)
* ``errors`` — ``UsageError`` and the exit codes, shared by all of them

Exit codes: 0 success, 1 a script failed, 2 usage or config error (or a file, a folder or the
sessions store that cannot be used), 130 interrupted. Errors are one line on stderr, never a
traceback: :func:`main` turns a ``UsageError``, an ``OSError``, a ``sqlite3.Error`` and a
``StoreError`` (PostgreSQL; no password in it) into
``hermes-tui: <what was wrong and what to do>``, its untrusted parts escaped.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import sqlite3
import sys
from typing import TYPE_CHECKING

from hermes_tui import __version__
from hermes_tui.base.lifetime import end_process
from hermes_tui.cli.app_cmd import app_command
from hermes_tui.cli.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE, UsageError, database_problem, os_problem
from hermes_tui.runtime.hardening import drop_writable_import_paths, harden_host
from hermes_tui.storage.errors import StoreError

if TYPE_CHECKING:
    from hermes_tui.config import Config


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: must be a number of seconds > 0")
    return value


def _dollars(text: str) -> float:
    from hermes_tui.agent.budget import parse_amount

    value = parse_amount(text)
    if isinstance(value, str):
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: a cost ceiling in US dollars above 0, like 5.00")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for ``hermes-tui`` and its subcommands."""
    parser = argparse.ArgumentParser(
        prog="hermes-tui",
        description="A terminal workstation for agents that program their own tool calls.",
    )
    parser.add_argument("--version", action="version", version=f"hermes-tui {__version__}")
    parser.add_argument(
        "--config", metavar="PATH", help="config file (default: $HERMES_HOME/config.yaml)"
    )
    parser.add_argument("--session", dest="app_session", metavar="ID",
                        help="open this session (continued if stored, created if not; default: a new one)")
    parser.add_argument("--yolo", dest="app_yolo", action="store_true",
                        help="approvals off in the app (a permanent YOLO badge shows it)")
    parser.add_argument("--resume", nargs="?", const="latest", metavar="ID",
                        help="continue a stored session: its id (or a unique prefix), or latest (the default)")
    parser.add_argument("--provider", help="the model provider (overrides model.provider): a name from "
                                           "docs/providers.md (openrouter, openai, anthropic, zai, ...), auto, "
                                           "custom, or a providers: name")
    parser.add_argument("--model", help="the model name (overrides model.default)")
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint (overrides model.base_url)")
    parser.add_argument("--max-cost", type=_dollars, metavar="USD",
                        help="the session's hard cost ceiling in US dollars (overrides agent.max_cost_usd)")
    parser.add_argument("--linear", action="store_true",
                        help="plain lines instead of the full screen: every event printed once, in order, no cursor "
                             "movement; input a line at a time; approvals as numbered questions (screen readers, "
                             "TERM=dumb, script(1), Emacs shells)")
    parser.add_argument("--color", action="store_true", help="with --linear: colour the lines (SGR codes only)")
    parser.add_argument("--store", metavar="URL",
                        help="where sessions are kept: sqlite:///PATH or postgresql://USER@HOST/DATABASE "
                             "(overrides HERMES_TUI_STORE_URL and store.url; docs/store.md)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = commands.add_parser(
        "exec",
        help="run Python files in one session kernel, headless",
        description=(
            "Run the files in order in ONE session kernel, so variables and imports carry from "
            "file to file. Stops at the first file that fails unless --keep-going. Exit 0 if "
            "all succeeded, 1 otherwise, 2 for usage or config errors."
        ),
    )
    run.add_argument("files", nargs="+", metavar="FILE", help="Python files, or - for standard input")
    run.add_argument("--session", default="cli", help="session name (default: cli)")
    run.add_argument("--reset", action="store_true", help="start from a fresh kernel")
    run.add_argument("--timeout", type=_seconds, metavar="N", help="seconds per file (default: code_execution.timeout)")
    run.add_argument("--json", action="store_true", help="print one ExecResult JSON object per line")
    run.add_argument("--keep-going", action="store_true", help="run the remaining files after a failure")
    run.add_argument("--yolo", action="store_true",
                     help="approvals off for this run: terminal commands run without asking (hard-blocked ones never run)")
    run.add_argument("--origin", choices=("user", "injected", "automation"), default="user",
                     help="who the turn comes from; injected and automation turns have each whole script approved first")
    run.add_argument("--config", dest="sub_config", metavar="PATH", help=argparse.SUPPRESS)

    from hermes_tui.cli.headless_cmd import add_parsers as add_headless_parsers
    from hermes_tui.cli.jupyter_cmd import add_parser as add_jupyter_parser
    from hermes_tui.cli.store_cmd import add_parser as add_store_parser
    from hermes_tui.cli.subparsers import add_cache_parser, add_checkpoints_parsers, add_serve_parser

    add_cache_parser(commands)
    add_serve_parser(commands)
    add_checkpoints_parsers(commands)
    add_jupyter_parser(commands)
    add_headless_parsers(commands, _seconds, _dollars)
    add_store_parser(commands)

    approvals = commands.add_parser("approvals", help="review and change approval rules, read the approvals log")
    what = approvals.add_subparsers(dest="approvals_command", metavar="ACTION", required=True)
    what.add_parser("rules", help="list every active allow rule and the file it lives in")
    revoke = what.add_parser("revoke", help="remove a rule stored by an \"always\" answer")
    revoke.add_argument("rule", metavar="RULE", help="the rule's exact text, as `approvals rules` shows it")
    log = what.add_parser("log", help="requests and decisions, oldest first")
    log.add_argument("--json", action="store_true", help="the raw JSON lines")
    log.add_argument("--limit", type=int, default=50, metavar="N", help="the last N entries (default 50; 0 = all)")
    suggest = what.add_parser(
        "suggest", help="allow rules proposed from commands you approved again and again",
        description="Read the approvals log and propose allow rules for terminal() commands you approved repeatedly: "
                    "an exact command, or a safe prefix (PROGRAM SUBCOMMAND *). Never a rule for a command the "
                    "analysis flags. --apply N adds suggestion N to allowlist.yaml.")
    suggest.add_argument("--json", action="store_true", help="the suggestions as one JSON list")
    suggest.add_argument("--apply", type=int, metavar="N", help="add suggestion N (as numbered) to allowlist.yaml")
    inject = commands.add_parser(
        "inject", help="send a message to the running app (an injected turn)",
        description="Deliver a message to a running hermes-tui over its local socket. It becomes an injected "
                    "turn: queued while the agent is busy, and every script it causes is approved first.")
    inject.add_argument("text", nargs="+", metavar="TEXT", help="the message (- reads standard input)")
    inject.add_argument("--session", help="the app's session id (default: the only app running)")

    export = commands.add_parser("export", help="write a stored session out (ShareGPT JSON)")
    export.add_argument("session", metavar="SESSION", help="session id (or a unique prefix), or latest")
    export.add_argument("--format", default="sharegpt", choices=("sharegpt",), help="output format (default sharegpt)")
    export.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of standard output")

    sessions = commands.add_parser("sessions", help="list stored sessions, newest first")
    sessions.add_argument("--json", action="store_true", help="one JSON object per line")

    doctor = commands.add_parser(
        "doctor", help="check this machine: the config, the model and its endpoint, HERMES_HOME, the database, "
                       "a kernel, the approval files",
        description="Say which config.yaml is read, what in it is noticed or refused, which model the input goes "
                    "to and where its key comes from (never the key); then check, one line each (ok, ! or x with "
                    "the fix), the config, the model's key and endpoint, HERMES_HOME and free space, sessions.db, "
                    "the cache, a kernel and a tool call, the project interpreter, ripgrep, checkpoints, the allowlist and the "
                    "audit log, the socket paths. Exit 0 if no check failed, 1 if one did, 2 if the config cannot "
                    "be read.")
    doctor.add_argument("--verbose", action="store_true", help="also list the Hermes Agent keys hermes-tui ignores")
    doctor.add_argument("--json", action="store_true", help="the report as one JSON object (checks under \"checks\")")
    doctor.add_argument("--offline", action="store_true", help="skip the network: the endpoint is not asked")
    doctor.add_argument("--config", dest="sub_config", metavar="PATH", help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    # No garbage collection while the app starts (issue 20): the imports and the first frame
    # make hundreds of thousands of objects that all stay alive, and the full collections they
    # set off cost about 20 ms of the first frame for nothing. The app turns collection back on
    # after its first frame, exec once its runtime has started (base/lifetime.py: settle_heap);
    # every other command at once.
    gc.disable()
    try:
        return _main(argv)
    finally:
        gc.enable()


def _main(argv: list[str] | None) -> int:
    # First, before any thread: nothing the host starts may read it (docs/security.md).
    harden_host()
    drop_writable_import_paths()
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command not in (None, "exec"):
        gc.enable()
    try:
        _top_level_yolo(args)
        _choose_store(args)
        if args.command == "store":
            from hermes_tui.cli.store_cmd import store_command

            return store_command(args)
        if args.command == "inspect":  # no config needed
            from hermes_tui.cli.headless_cmd import inspect_command

            return inspect_command(args)
        if args.command in ("inject", "export", "sessions"):  # no config needed
            from hermes_tui.cli.sessions_cmd import export_command, inject_command, sessions_command

            if args.command == "inject":
                return inject_command(args)
            if args.command == "export":
                return export_command(args)
            return sessions_command(args)
        if args.command == "doctor":  # a config that cannot be read is one of its findings
            from hermes_tui.cli.doctor_cmd import doctor_command
            from hermes_tui.config import Config

            try:
                config = _load_config(args)
            except UsageError as exc:
                return doctor_command(args, Config(), config_error=str(exc))
            return doctor_command(args, config)
        config = _load_config(args)
        if args.command == "exec":
            from hermes_tui.cli.exec_cmd import exec_command

            code = exec_command(args, config)
            if argv is None:  # the command itself (not a caller's main([...])): its records are written
                end_process(code)
            return code
        if args.command in ("run", "resume", "approve", "deny"):
            from hermes_tui.cli import headless_cmd

            if args.command == "run":
                return headless_cmd.run_command(args, config)
            if args.command == "resume":
                return headless_cmd.resume_command(args, config)
            return headless_cmd.answer_command(args, config)
        if args.command == "cache":
            from hermes_tui.cli.cache_cmd import cache_command

            return cache_command(args, config)
        if args.command in ("checkpoints", "diff", "rollback"):
            from hermes_tui.cli.checkpoints_cmd import checkpoints_command

            return checkpoints_command(args, config)
        if args.command == "jupyter-cleanup":
            from hermes_tui.cli.jupyter_cmd import jupyter_cleanup_command

            return jupyter_cleanup_command(args, config)
        if args.command == "serve":
            from hermes_tui.cli.serve_cmd import serve_command

            return serve_command(args, config)
        if args.command == "approvals":
            from hermes_tui.cli.approvals_cmd import approvals_command

            return approvals_command(args, config)
        return app_command(args, config)
    except UsageError as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        print("hermes-tui: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `hermes-tui sessions | head -1`: the reader left, nothing to say
        _drop_stdout()
        return EXIT_FAILED
    # The last line of defence: a folder, file or database the machine would not give us.
    # Each command says it better where it can (exec checks HERMES_HOME first); this keeps
    # whatever is left to one line instead of a traceback.
    except sqlite3.Error as exc:
        from hermes_tui.storage.sessions import store_url

        return _fail(database_problem(store_url().path or store_url().redacted(), exc))
    except StoreError as exc:  # a shared store: its messages are one line, with no password
        return _fail(str(exc))
    except OSError as exc:
        from hermes_tui.base.paths import hermes_home

        return _fail(os_problem(exc, hermes_home()))


def _top_level_yolo(args: argparse.Namespace) -> None:
    """``hermes-tui --yolo exec ...`` means ``exec --yolo``; before any other command ``--yolo``
    does nothing, so it is refused rather than silently ignored."""
    if not args.app_yolo or args.command is None:
        return
    if args.command == "exec":
        args.yolo = True
        return
    raise UsageError(f"--yolo applies to the app and to exec, not to {args.command}")


def _fail(message: str) -> int:
    """Print ``hermes-tui: <message>`` (escaped: it may quote a command or a path) on stderr."""
    from hermes_tui.base.text import shown

    print(f"hermes-tui: {shown(message)}", file=sys.stderr)
    return EXIT_USAGE


def _drop_stdout() -> None:
    """Point stdout at /dev/null, so the flush at exit does not fail on the closed pipe again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _choose_store(args: argparse.Namespace) -> None:
    """Resolve the store once for the whole command: ``--store``, else ``HERMES_TUI_STORE_URL``,
    else ``store.url`` in the config, else the SQLite default. What cannot be resolved (a bad URL,
    an unset ``store.password_env``, a config whose ``store`` section is unreadable) is not an
    error here: a command that uses the store says it in one line when it opens it (so ``exec``
    and ``doctor`` still run)."""
    from hermes_tui.config import ConfigError, load_config
    from hermes_tui.base.paths import hermes_home
    from hermes_tui.storage.choice import choose_store
    from hermes_tui.storage.errors import StoreError
    from hermes_tui.config.store_url import parse_store_url, resolve_store_url

    flag = getattr(args, "store", None)
    if flag is not None and parse_store_url(flag, origin="--store").secrets():  # a bad one: one line now
        print("hermes-tui: warning: --store carries a password, which every process on this machine can read "
              "in the command line (ps, /proc/PID/cmdline): prefer store.password_env, PGPASSWORD or "
              "~/.pgpass (docs/store.md)", file=sys.stderr)
    url, password_env = None, None
    try:
        args.loaded_config = load_config(getattr(args, "sub_config", None) or args.config)
        url, password_env = args.loaded_config.store.url, args.loaded_config.store.password_env
    except ConfigError as exc:
        problem = _store_section(getattr(args, "sub_config", None) or args.config)
        if isinstance(problem, str) and args.command is None:
            # The app opens on a broken config.yaml (hermes_tui/config/start.py): with the local
            # store (or --store / HERMES_TUI_STORE_URL), and says so.
            args.store_notice = "sessions are kept in the local store until config.yaml is fixed"
            problem = (None, None)
        if isinstance(problem, str):  # store: itself cannot be read: which store is meant is unknown
            choose_store(None, StoreError(f"the sessions store is unknown: config error: {exc}"))
            return
        url, password_env = problem
    try:
        choose_store(resolve_store_url(url, password_env, hermes_home(), flag=flag))
    except StoreError as exc:
        choose_store(None, exc)


def _store_section(path: str | None) -> tuple[str | None, str | None] | str:
    """``store.url`` and ``store.password_env`` read from a config that does not load as a whole
    (another section is wrong); a string (the problem) when ``store`` itself cannot be read."""
    from hermes_tui.base.safe_yaml import load_yaml
    from hermes_tui.config import StoreConfig
    from hermes_tui.base.paths import config_path

    import stat

    target = path or config_path()
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not block the read for ever
        with open(fd, encoding="utf-8", closefd=True) as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return f"{target} is not a regular file"
            raw = load_yaml(handle.read(1 << 20))
        section = raw.get("store") if isinstance(raw, dict) else None
        store = StoreConfig.read(section or {})
    except FileNotFoundError:
        return None, None
    except Exception as exc:  # noqa: BLE001 - YAML, validation, a FIFO...: all mean "unknown"
        return str(exc)
    return store.url, store.password_env


def _load_config(args: argparse.Namespace) -> Config:
    from hermes_tui.config import ConfigError, load_config

    loaded = getattr(args, "loaded_config", None)
    if loaded is not None:  # read once by _choose_store
        return loaded
    path = getattr(args, "sub_config", None) or args.config
    if args.command is None:  # the app opens on a broken file, refusing what it decides
        from hermes_tui.config.start import load_config_for_app

        try:
            config = load_config_for_app(path)
        except ConfigError as exc:
            raise UsageError(f"config error: {exc}") from None
        if getattr(args, "store_notice", None):
            config.notices.append(args.store_notice)
        return config
    try:
        return load_config(path)
    except ConfigError as exc:
        raise UsageError(f"config error: {exc}; `hermes-tui doctor` checks the file") from None
