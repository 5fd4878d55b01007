"""``hermes-tui approvals rules | revoke RULE | log``: review what may run without asking."""

from __future__ import annotations

import argparse
import json
import sys
from collections import deque

from hermes_tui.config import Config
from hermes_tui.paths import config_path, hermes_home
from hermes_tui.runtime.approvals import audit_path
from hermes_tui.runtime.rules import active_rules, allowlist_path, remove_rule


def approvals_command(args: argparse.Namespace, config: Config) -> int:
    """Run one ``approvals`` action; returns the exit code."""
    home = hermes_home()
    if args.approvals_command == "rules":
        return _rules(config, home)
    if args.approvals_command == "revoke":
        return _revoke(config, home, args.rule)
    return _log(home, args.json, args.limit)


def _rules(config: Config, home) -> int:
    source = config.source or config_path(home)
    rules, problem = active_rules(config.command_allowlist, source, home)
    print(f"approvals.mode: {config.approvals.mode}   approvals.timeout: {config.approvals.timeout:g}s")
    if problem:
        print(f"warning: {problem}", file=sys.stderr)
    if not rules:
        print("No allow rules: every terminal() command asks (in manual mode).")
        return 0
    for rule in rules:
        where = "config.yaml command_allowlist" if rule.source == source else str(rule.source)
        added = f"  (added {rule.added_at})" if rule.added_at else ""
        print(f"{rule.kind:5}  {rule.pattern}\n       in {where}{added}")
    print("Flagged commands are allowed only by an exact rule; a glob never matches a command with shell operators.")
    return 0


def _revoke(config: Config, home, pattern: str) -> int:
    path = allowlist_path(home)
    if remove_rule(path, pattern):
        print(f"Removed {pattern!r} from {path}. Running sessions keep it until they reload their rules.")
        return 0
    if pattern in config.command_allowlist:
        print(f"hermes-tui: {pattern!r} is in command_allowlist in {config.source or config_path(home)}; "
              "hermes-tui never rewrites that file: remove it there.", file=sys.stderr)
        return 1
    print(f"hermes-tui: no rule {pattern!r}; see `hermes-tui approvals rules`", file=sys.stderr)
    return 1


def _log(home, as_json: bool, limit: int) -> int:
    path = audit_path(home)
    try:
        with path.open(encoding="utf-8") as handle:
            lines = deque(handle, maxlen=limit if limit > 0 else None)  # bounded: the log can be long
    except FileNotFoundError:
        print(f"No approvals yet ({path} does not exist).")
        return 0
    for line in lines:
        if as_json:
            sys.stdout.write(line)
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        event = entry.get("event")
        if event == "request":
            reasons = "; ".join(entry.get("reasons") or [])
            print(f"{entry['at']}  ASK     {entry.get('kind')} [{entry.get('session')}/{entry.get('origin')}] "
                  f"{_short(entry.get('text'))}" + (f"  — {reasons}" if reasons else ""))
        elif event == "decision":
            why = entry.get("why")
            print(f"{entry['at']}  {str(entry.get('decision')).upper():7} "
                  + (f"{why}" if why else "") + (f" (stored in {entry['stored_in']})" if entry.get("stored_in") else ""))
        else:
            why = entry.get("why")
            print(f"{entry['at']}  {str(entry.get('decision')).upper():7} {entry.get('kind')} "
                  f"{_short(entry.get('text'))}  — {why if isinstance(why, str) else '; '.join(why or [])}")
    return 0


def _short(text: object, width: int = 100) -> str:
    line = " ".join(str(text or "").split())
    return line if len(line) <= width else line[: width - 1] + "…"
