"""The argument parsers of subcommands whose own modules import much (the output cache, the
checkpoints): building the command line must not import them (every start builds it, the app's
first screen included, issue 38). Each module's command function reads what these define."""

from __future__ import annotations

import argparse


def add_cache_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``cache`` subcommand and its actions."""
    cache = commands.add_parser("cache", help="list, show and prune saved outputs ($HERMES_HOME/cache/exec)")
    what = cache.add_subparsers(dest="cache_command", metavar="ACTION", required=True)
    ls = what.add_parser("ls", help="list entries, newest first")
    ls.add_argument("--json", action="store_true", help="one JSON object per entry")
    ls.add_argument("--session", help="only this session")
    ls.add_argument("--status", choices=("success", "error", "timeout", "interrupted"))
    ls.add_argument("--since", metavar="AGE", help="only newer than this (e.g. 2d, 12h)")
    show = what.add_parser("show", help="print an entry's output (the full text when it was cut)")
    show.add_argument("entry", metavar="ID|PATH")
    show.add_argument("--head", type=int, metavar="N", help="only the first N lines")
    show.add_argument("--tail", type=int, metavar="N", help="only the last N lines")
    prune = what.add_parser("prune", help="delete old entries (never one still being written)")
    prune.add_argument("--older-than", metavar="AGE", help="e.g. 7d (default: cache.retention)")
    prune.add_argument("--max-size", metavar="SIZE", help="e.g. 1G (default: cache.max_size)")
    prune.add_argument("--dry-run", action="store_true", help="say what would go, delete nothing")


def add_checkpoints_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``checkpoints``, ``diff`` and ``rollback`` subcommands."""
    listed = commands.add_parser("checkpoints", help="list a session's checkpoints (what the agent changed, when)")
    listed.add_argument("session", metavar="SESSION", help="session id (or a unique prefix), or latest")
    listed.add_argument("--json", action="store_true", help="one JSON object per checkpoint")
    diff = commands.add_parser("diff", help="the diff from a checkpoint to the files as they are now")
    diff.add_argument("session", metavar="SESSION", help="session id (or a unique prefix), or latest")
    diff.add_argument("n", metavar="N", type=_number, help="the checkpoint's number (`checkpoints` lists them)")
    back = commands.add_parser(
        "rollback", help="put the files (and with --conversation the conversation) back to a checkpoint",
        description="Restore the files the agent changed since checkpoint N to what they were then; files it did "
                    "not touch (your own edits) are kept. A checkpoint is taken first, so a rollback can be undone. "
                    "It says which files will change and asks first (or --yes).")
    back.add_argument("session", metavar="SESSION", help="session id (or a unique prefix), or latest")
    back.add_argument("n", metavar="N", type=_number, help="the checkpoint's number (`checkpoints` lists them)")
    back.add_argument("--files", nargs="+", metavar="PATH", help="only these files or folders (any, even ones the "
                                                                  "agent did not change)")
    back.add_argument("--conversation", action="store_true",
                      help="also rewind the conversation to before that checkpoint's turn (later messages are kept, "
                           "hidden from the model)")
    back.add_argument("--yes", action="store_true", help="do it without asking")


def _number(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a checkpoint number (1, 2, …)")
    return int(text)


def add_serve_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``serve`` subcommand: the app in a browser (cli/serve_cmd.py)."""
    serve = commands.add_parser(
        "serve", help="the app in a browser (approve from a phone): prints one URL with a token",
        description="Serve the app over HTTP with textual-serve: one page drives it at a time, and it keeps running "
                    "when the page closes. Every request needs the token in the printed URL. Binds 127.0.0.1; "
                    "another --host is refused without --insecure (plain HTTP: use an SSH tunnel).")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8765, help="port (default: 8765)")
    serve.add_argument("--token-file", metavar="PATH", help="take the token from this file (default: a new random one)")
    serve.add_argument("--insecure", action="store_true",
                       help="allow a --host other machines reach, over plain HTTP (the token and all you type cross "
                            "the network in clear)")
    serve.add_argument("--session", dest="serve_session", metavar="ID",
                       help="the session the app opens (default: a new one; every page of this server opens it)")

