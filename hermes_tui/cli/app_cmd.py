"""``hermes-tui`` with no subcommand: the full-screen app (or, with ``--linear``, plain lines: cli/linear.py)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any, NoReturn

from hermes_tui.base.lifetime import end_process
from hermes_tui.cli.errors import EXIT_OK, UsageError

if TYPE_CHECKING:
    from hermes_tui.config import Config


def app_command(args: argparse.Namespace, config: Config) -> int:
    """Open the app on ``config`` (already loaded, so a broken one is reported as one line, not inside the app)."""
    if args.app_yolo:
        config.approvals.mode = "off"
    from hermes_tui.agent.models.keys import ProviderError
    from hermes_tui.agent.models.resolve import resolve_provider
    from hermes_tui.base.paths import hermes_home

    flags = {"provider": args.provider, "model": args.model, "base_url": args.base_url}
    provider, problem = None, getattr(config, "model_refused", None)
    try:
        if problem is None:  # else the model's part of config.yaml is broken: no model (config_start.py)
            provider = resolve_provider(config, hermes_home(), **flags)
    except ProviderError as exc:
        if any(flags.values()):
            raise UsageError(f"model: {exc}") from None
        # A config.yaml written for Hermes Agent may name a provider this app does not know:
        # the app still opens (the input runs Python) and says why there is no model.
        problem = str(exc)
    session = args.app_session
    if session is not None:
        from hermes_tui.storage.sessions import SESSION_ID, SESSION_ID_RULE

        if not SESSION_ID.fullmatch(session):
            raise UsageError(f"--session {session!r} is not allowed: {SESSION_ID_RULE}")
    if args.resume is not None:
        from hermes_tui.cli.sessions_cmd import resolve_session

        session = resolve_session(args.resume)
    if session is not None:
        from hermes_tui.cli.sessions_cmd import refuse_if_driven

        refuse_if_driven(session, config.store.lease_timeout)
    if args.linear:
        _linear(args, config, session, provider, problem)
    if args.color:
        raise UsageError("--color goes with --linear (the full-screen app has its own themes: Ctrl+T)")
    served = False
    if os.environ.get("TEXTUAL_DRIVER"):  # perhaps started by `hermes-tui serve`: only then is its module read
        from hermes_tui.cli.serve import end_with_server, is_served

        served = is_served()
        if served and not end_with_server():
            raise UsageError("serve ended before its app started")
    if not served and (not sys.stdout.isatty() or not sys.stdin.isatty()):
        raise UsageError("the full-screen app needs a terminal; for scripts use `hermes-tui exec FILE...`, for plain "
                         "lines `hermes-tui --linear`")
    from hermes_tui.tui.app import HermesApp

    close_imports_on_start()
    HermesApp(config, session=session, provider=provider, provider_problem=problem, max_cost=args.max_cost).run()
    end_process(EXIT_OK)


def _linear(args: argparse.Namespace, config: Config, session: str | None, provider: Any, problem: str | None) -> NoReturn:
    """``hermes-tui --linear``: the same workspace as plain lines (cli/linear.py)."""
    from hermes_tui.base.paths import hermes_home
    from hermes_tui.cli.linear import run_linear
    from hermes_tui.runtime.import_guard import arm
    from hermes_tui.storage.sessions import new_session_id

    home = hermes_home()
    arm(home=home)  # the host's imports close once its runtime has started (runtime/import_guard.py)
    run_linear(config, home=home, session=session or new_session_id(), settings=provider, provider_problem=problem,
               max_cost=args.max_cost, color=args.color)
    end_process(EXIT_OK)


APP_IMPORTS = (
    "pygments.lexers.python", "pygments.lexers.shell", "pygments.lexers.diff", "pygments.lexers.special",
    "pygments.styles.monokai", "pygments.styles.friendly",
)
"""What the app always needs after it starts: the lexers and styles of its run blocks, shell
commands, approval dialogs and plain code. Imported before the imports close, so a refusal never
reaches them (a reply's code blocks in other languages are shown plain when refused)."""


def close_imports_on_start() -> None:
    """Close the host's imports once the runtime has started (runtime/import_guard.py); each
    refusal also goes to the approvals log."""
    from hermes_tui.base.paths import hermes_home
    from hermes_tui.runtime.import_guard import arm

    arm(also=APP_IMPORTS, home=hermes_home())
