"""Entry point: ``hermes-tui`` (the app) and its headless subcommands.

Exit codes: 0 success, 1 a script failed, 2 usage or config error, 130 interrupted.
Errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
from pathlib import Path

from hermes_tui import __version__

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class UsageError(Exception):
    """Bad command-line input; the message is one line for the user."""


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: must be a number of seconds > 0")
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
    parser.add_argument("--provider", help="the model provider (overrides model.provider): openrouter, nous, openai, "
                                           "anthropic, ollama, vllm, llamacpp, lmstudio, custom, or a providers: name")
    parser.add_argument("--model", help="the model name (overrides model.default)")
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint (overrides model.base_url)")
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

    from hermes_tui.cache_cli import add_parser as add_cache_parser

    add_cache_parser(commands)

    approvals = commands.add_parser("approvals", help="review and change approval rules, read the approvals log")
    what = approvals.add_subparsers(dest="approvals_command", metavar="ACTION", required=True)
    what.add_parser("rules", help="list every active allow rule and the file it lives in")
    revoke = what.add_parser("revoke", help="remove a rule stored by an \"always\" answer")
    revoke.add_argument("rule", metavar="RULE", help="the rule's exact text, as `approvals rules` shows it")
    log = what.add_parser("log", help="requests and decisions, oldest first")
    log.add_argument("--json", action="store_true", help="the raw JSON lines")
    log.add_argument("--limit", type=int, default=50, metavar="N", help="the last N entries (default 50; 0 = all)")
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
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "exec":
            return _exec_command(args)
        if args.command == "cache":
            from hermes_tui.cache_cli import cache_command

            return cache_command(args, _load_config(args))
        if args.command == "approvals":
            from hermes_tui.approvals_cli import approvals_command

            return approvals_command(args, _load_config(args))
        if args.command in ("inject", "export", "sessions"):
            from hermes_tui import sessions_cli

            return getattr(sessions_cli, f"{args.command}_command")(args)
        return _app_command(args)
    except UsageError as exc:
        print(f"hermes-tui: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("hermes-tui: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _load_config(args: argparse.Namespace):  # -> Config
    from hermes_tui.config import ConfigError, load_config

    path = getattr(args, "sub_config", None) or args.config
    try:
        return load_config(path)
    except ConfigError as exc:
        raise UsageError(f"config error: {exc}") from None


def _app_command(args: argparse.Namespace) -> int:
    config = _load_config(args)  # a broken config is reported now, one line, not inside the app
    if args.app_yolo:
        config.approvals.mode = "off"
    from hermes_tui.agent.providers import ProviderError, resolve_provider
    from hermes_tui.paths import hermes_home

    flags = {"provider": args.provider, "model": args.model, "base_url": args.base_url}
    provider, problem = None, None
    try:
        provider = resolve_provider(config, hermes_home(), **flags)
    except ProviderError as exc:
        if any(flags.values()):
            raise UsageError(f"model: {exc}") from None
        # A config.yaml written for Hermes Agent may name a provider this app does not know:
        # the app still opens (the input runs Python) and says why there is no model.
        problem = str(exc)
    session = args.app_session
    if session is not None:
        from hermes_tui.store import SESSION_ID, SESSION_ID_RULE

        if not SESSION_ID.fullmatch(session):
            raise UsageError(f"--session {session!r} is not allowed: {SESSION_ID_RULE}")
    if args.resume is not None:
        from hermes_tui.sessions_cli import resolve_session

        session = resolve_session(args.resume)
    if not sys.stdout.isatty() or not sys.stdin.isatty():
        raise UsageError("the full-screen app needs a terminal; for scripts use `hermes-tui exec FILE...`")
    from hermes_tui.app import HermesApp

    HermesApp(config, session=session, provider=provider, provider_problem=problem).run()
    return EXIT_OK


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


def _exec_command(args: argparse.Namespace) -> int:
    config = _load_config(args)
    if args.yolo:
        config.approvals.mode = "off"
        print("hermes-tui: YOLO: approvals are off for this run; terminal commands run without asking "
              "(hard-blocked ones are still refused)", file=sys.stderr)
    if args.files.count("-") > 1:
        raise UsageError("exec: '-' (standard input) can be given only once")
    scripts = _read_scripts(args.files)
    return asyncio.run(_run_scripts(config, scripts, args))


async def _run_scripts(config, scripts: list[tuple[str, str]], args: argparse.Namespace) -> int:
    from hermes_tui.runtime import Runtime

    from hermes_tui.tty_approver import tty_approver

    failed = False
    async with Runtime(config, approver=tty_approver()) as runtime:
        for index, (name, code) in enumerate(scripts):
            result = await runtime.execute_code(
                code, session=args.session, reset=args.reset and index == 0, timeout=args.timeout, origin=args.origin
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
                        print(f"hermes-tui exec: {rest} file(s) not run after the failure "
                              "(use --keep-going to run them)", file=sys.stderr)
                    break
    return EXIT_FAILED if failed else EXIT_OK


def _print_result(name: str, result) -> None:
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
        print(f"hermes-tui exec: {name}: {note}", file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    # Run the imported module, not __main__: subcommand modules import UsageError from it.
    from hermes_tui.cli import main as real_main

    sys.exit(real_main())
