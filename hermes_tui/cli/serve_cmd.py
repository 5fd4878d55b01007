"""``hermes-tui serve``: check what was asked, print the URL, serve (cli/serve.py)."""

from __future__ import annotations

import argparse
import secrets
import socket
from pathlib import Path

from hermes_tui.base.text import shown
from hermes_tui.cli.errors import EXIT_OK, UsageError
from hermes_tui.config import Config


def serve_command(args: argparse.Namespace, config: Config) -> int:
    """Serve the app on ``--host``:``--port`` until Ctrl+C; 0 when stopped, 2 for bad input."""
    from hermes_tui.cli.serve import TOKEN_BYTES, ServeRefused, app_command, is_loopback, make_server, port_free, \
        read_token, run_server
    from hermes_tui.cli.sessions_cmd import refuse_if_driven
    from hermes_tui.storage.sessions import SESSION_ID, SESSION_ID_RULE, new_session_id

    if not 0 < args.port < 65536:
        raise UsageError(f"serve: --port {args.port} is not allowed: a port from 1 to 65535")
    if not is_loopback(args.host) and not args.insecure:
        raise UsageError(
            f"serve: --host {shown(args.host)} is reachable from other machines, and serve speaks plain HTTP: the "
            "token and everything typed (keys included) would cross the network in clear. Keep 127.0.0.1 and use an "
            "SSH tunnel (ssh -L 8765:127.0.0.1:8765 THIS-HOST); --insecure serves it anyway")
    try:
        token = read_token(Path(args.token_file)) if args.token_file else secrets.token_urlsafe(TOKEN_BYTES)
    except ServeRefused as exc:
        raise UsageError(f"serve: {exc}") from None
    session = args.serve_session or new_session_id()
    if not SESSION_ID.fullmatch(session):
        raise UsageError(f"serve: --session {session!r} is not allowed: {SESSION_ID_RULE}")
    refuse_if_driven(session, config.store.lease_timeout)
    if not port_free(args.host, args.port):
        raise UsageError(f"serve: port {args.port} on {shown(args.host)} is in use (or not allowed): pick another "
                         "with --port")
    extra = [flag for flag, on in (("--yolo", args.app_yolo),) if on]
    for flag, value in (("--config", args.config), ("--provider", args.provider), ("--model", args.model),
                        ("--base-url", args.base_url), ("--store", args.store),
                        ("--max-cost", None if args.max_cost is None else str(args.max_cost))):
        if value is not None:
            extra += [flag, value]
    shown_host = socket.gethostname() if args.host in ("0.0.0.0", "::") else args.host
    if ":" in shown_host:
        shown_host = f"[{shown_host}]"
    insecure = not is_loopback(args.host)

    def ready() -> None:
        if insecure:
            print("hermes-tui serve: WARNING: serving to other machines over plain HTTP (--insecure): anyone who "
                  "can read this network can take the token and drive the app, which holds your keys", flush=True)
        print(f"hermes-tui serve: session {session}; open http://{shown_host}:{args.port}/?token={token}", flush=True)
        print("  one page drives the app at a time; the app keeps running when it closes; Ctrl+C stops serving",
              flush=True)

    run_server(make_server(app_command(session, extra), host=args.host, port=args.port, token=token),
               args.host, args.port, ready)
    return EXIT_OK
