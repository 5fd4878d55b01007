"""``hermes-tui jupyter-cleanup``: kernels an earlier run left on the Jupyter gateway (a crash,
a SIGKILL) are listed, and shut down when the user says so."""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import datetime

from hermes_tui.base.paths import hermes_home
from hermes_tui.base.text import shown
from hermes_tui.cli.errors import UsageError
from hermes_tui.config import Config


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``jupyter-cleanup`` subcommand."""
    cleanup = commands.add_parser(
        "jupyter-cleanup", help="shut down kernels an earlier run left on the Jupyter gateway",
        description="List the kernels hermes-tui started on terminal.jupyter_gateway_url that no running "
                    "hermes-tui holds any more (its run ended without shutting them down) and are still there; "
                    "shut them down after asking (or with --yes).")
    cleanup.add_argument("--yes", action="store_true", help="shut them down without asking")
    cleanup.add_argument("--list", action="store_true", help="only list them")


def jupyter_cleanup_command(args: argparse.Namespace, config: Config) -> int:
    """List the leftovers; shut them down when confirmed. Exit 0, or 1 when the gateway fails."""
    from hermes_tui.runtime.backends import BackendError, JupyterBackend

    if config.terminal.backend != "jupyter" or not config.terminal.jupyter_gateway_url:
        raise UsageError("jupyter-cleanup: terminal.backend is not jupyter with a jupyter_gateway_url; "
                         "there is no gateway to clean")
    backend = JupyterBackend(config, hermes_home())
    try:
        left = asyncio.run(backend.leftovers())
    except BackendError as exc:
        print(f"hermes-tui: {exc}", file=sys.stderr)
        return 1
    if not left:
        print(f"no kernels left by an earlier run on {backend.host}")
        return 0
    for item in left:
        started = datetime.fromtimestamp(float(item.get("started") or 0)).strftime("%Y-%m-%d %H:%M")
        print(f"{item['kernel_id']}  session {shown(str(item.get('session')))}  started {started}  "
              f"({shown(str(item.get('state') or '?'))})")
    if args.list:
        return 0
    if not args.yes:
        if not sys.stdin.isatty():
            print("not shut down: run with --yes to shut them down", file=sys.stderr)
            return 0
        answer = input(f"shut down these {len(left)} kernel(s) on {backend.host}? [y/N] ").strip().lower()
        if answer not in ("y", "yes"):
            print("left as they are")
            return 0
    try:
        done = asyncio.run(backend.clean([item["kernel_id"] for item in left]))
    except BackendError as exc:
        print(f"hermes-tui: {exc}", file=sys.stderr)
        return 1
    print(f"shut down {len(done)} of {len(left)} kernel(s)")
    return 0 if len(done) == len(left) else 1
