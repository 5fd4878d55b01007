"""``hermes-tui approvals rules | revoke RULE | log | suggest``: review what may run without asking."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import deque

from hermes_tui.cli.errors import UsageError
from hermes_tui.base.text import shown
from hermes_tui.config import Config
from hermes_tui.base.paths import config_path, hermes_home
from hermes_tui.runtime.approvals import audit_path
from hermes_tui.runtime.danger.hermes_names import unmapped_allowlist_entries
from hermes_tui.base.fsutil import open_regular
from hermes_tui.runtime.rules import (
    RulesNotSaved, active_rules, add_rule, allowlist_path, category_source, remove_rule,
)


def approvals_command(args: argparse.Namespace, config: Config) -> int:
    """Run one ``approvals`` action; returns the exit code."""
    home = hermes_home()
    if args.approvals_command == "rules":
        return _rules(config, home)
    if args.approvals_command == "revoke":
        return _revoke(config, home, args.rule)
    if args.approvals_command == "suggest":
        return _suggest(config, home, args.json, args.apply)
    return _log(home, args.json, args.limit)


def _suggest(config: Config, home, as_json: bool, apply: int | None) -> int:
    from hermes_tui.runtime.rule_suggestions import suggest

    source = config.source or config_path(home)
    rules, problem = active_rules(config.command_allowlist, source, home)
    path = audit_path(home)
    try:
        found = suggest(path, rules, home, config.security.instruction_patterns)
    except FileNotFoundError:
        found = []
    except OSError as exc:
        raise UsageError(f"approvals log: cannot read {path}: {exc.strerror or exc}") from None
    if apply is not None:
        if not 1 <= apply <= len(found):
            raise UsageError(f"--apply {apply} is not a suggestion: " + (
                f"give a number from 1 to {len(found)} (see `hermes-tui approvals suggest`)" if found
                else "there are none (see `hermes-tui approvals suggest`)"))
        chosen = found[apply - 1]
        try:
            add_rule(allowlist_path(home), chosen.pattern, "glob" if chosen.kind == "glob" else "exact")
        except RulesNotSaved as exc:
            print(f"hermes-tui: {shown(str(exc))}", file=sys.stderr)
            return 1
        print(f"Added {chosen.kind} rule {shown(repr(chosen.pattern))} to {shown(allowlist_path(home))}. Running "
              "sessions keep their rules until they reload them; remove it with `hermes-tui approvals revoke`.")
        return 0
    if as_json:
        print(json.dumps([s.as_json(n) for n, s in enumerate(found, 1)], ensure_ascii=False))
        return 0
    if problem:
        print(f"warning: {shown(problem)}", file=sys.stderr)
    if not found:
        print("No suggestions: no unflagged command was approved often enough (a flagged command never becomes a rule "
              "here; answer \"always\" in the dialog if you mean it).")
        return 0
    for number, item in enumerate(found, 1):
        count = f"approved {item.approvals} time{'s' if item.approvals != 1 else ''}"
        covers = (f", {len(item.commands)} commands: " + ", ".join(_short(c, 40) for c in item.commands)
                  if item.kind == "glob" else "")
        print(f"{number:>3}  {item.kind:5}  {shown(item.pattern)}\n       {count}{covers}"
              + (f" (last {shown(item.last)})" if item.last else ""))
    print("Add one with `hermes-tui approvals suggest --apply N`. A glob never allows a command the analysis flags, "
          "or one with shell operators.")
    return 0


def _rules(config: Config, home) -> int:
    source = config.source or config_path(home)
    rules, problem = active_rules(config.command_allowlist, source, home)
    print(f"approvals.mode: {config.approvals.mode}   approvals.timeout: {config.approvals.timeout:g}s")
    if problem:
        print(f"warning: {shown(problem)}", file=sys.stderr)
    unmapped = unmapped_allowlist_entries(config.command_allowlist)
    if not rules:
        print("No allow rules: flagged commands ask (every terminal() command asks in strict mode).")
    for rule in rules:
        # A rule is a command as the approval showed it: escaped the same way (reveal), so
        # an ESC or a CR in it cannot make it look like another command here.
        if rule.kind == "category":
            where = shown(category_source(rule)) if rule.source != source else "config.yaml command_allowlist"
            print(f"category  {shown(rule.pattern)}\n       in {where} (a Hermes Agent pattern name: allows "
                  "commands flagged only for what it names)")
            continue
        where = "config.yaml command_allowlist" if rule.source == source else shown(rule.source)
        added = f"  (added {shown(rule.added_at)})" if rule.added_at else ""
        print(f"{rule.kind:5}  {shown(rule.pattern)}\n       in {where}{added}")
    for entry, why in unmapped:
        print(f"ignored   {shown(repr(entry))}\n       in config.yaml command_allowlist: a Hermes Agent pattern name "
              f"with no equivalent here; it allows nothing ({shown(why)})")
    if rules:
        print("Flagged commands are allowed only by an exact rule, or by category rules covering every reason they "
              "are flagged for; a glob never matches a command with shell operators.")
    return 0


def _revoke(config: Config, home, pattern: str) -> int:
    path = allowlist_path(home)
    try:
        removed = remove_rule(path, pattern)
    except RulesNotSaved as exc:
        print(f"hermes-tui: {shown(str(exc))}", file=sys.stderr)
        return 2
    if removed:
        print(f"Removed {shown(repr(pattern))} from {shown(path)}. Running sessions keep it until they reload "
              "their rules.")
        return 0
    if pattern in config.command_allowlist:
        print(f"hermes-tui: {shown(repr(pattern))} is in command_allowlist in {shown(config.source or config_path(home))}; "
              "hermes-tui never rewrites that file: remove it there.", file=sys.stderr)
        return 1
    print(f"hermes-tui: no rule {shown(repr(pattern))}; see `hermes-tui approvals rules`", file=sys.stderr)
    return 1


def _log(home, as_json: bool, limit: int) -> int:
    path = audit_path(home)
    try:  # a regular file only: a FIFO put in its place would hang the command
        with os.fdopen(open_regular(path), encoding="utf-8", errors="replace") as handle:
            lines = deque(handle, maxlen=limit if limit > 0 else None)  # bounded: the log can be long
    except FileNotFoundError:
        print(f"No approvals yet ({shown(path)} does not exist).")
        return 0
    except OSError as exc:
        raise UsageError(f"approvals log: cannot read {path}: {exc.strerror or exc}") from None
    for line in lines:
        if as_json:
            sys.stdout.write(line)
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            print(_log_line(entry))
    return 0


def _log_line(entry: dict[str, object]) -> str:
    """One entry of the approvals log as a line; every value in it escaped (it quotes commands)."""
    at = shown(entry.get("at", "?"))
    event = entry.get("event")
    why = entry.get("why")
    if event == "request":
        reasons = "; ".join(str(r) for r in _listed(entry.get("reasons")))
        return (f"{at}  ASK     {shown(entry.get('kind'))} [{shown(entry.get('session'))}/{shown(entry.get('origin'))}] "
                f"{_short(entry.get('text'))}" + (f"  — {shown(reasons)}" if reasons else ""))
    decision = shown(str(entry.get("decision")).upper())
    if event == "judged":  # the approval judge's verdict: its model, latency and cost too
        cost = entry.get("cost_usd")
        spent = f", ${cost:.4f}" if isinstance(cost, (int, float)) else ""
        return (f"{at}  JUDGE   {decision.lower()} {_short(entry.get('text'))}  — {shown(why)} "
                f"({shown(entry.get('model'))}, {shown(entry.get('latency_s'))}s{spent})")
    if event == "decision":
        return (f"{at}  {decision:7} " + (shown(why) if why else "")
                + (f" (stored in {shown(entry['stored_in'])})" if entry.get("stored_in") else ""))
    because = why if isinstance(why, str) else "; ".join(str(w) for w in _listed(why))
    return f"{at}  {decision:7} {shown(entry.get('kind'))} {_short(entry.get('text'))}  — {shown(because)}"


def _listed(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _short(text: object, width: int = 100) -> str:
    """The text on one line, escaped, cut to ``width`` characters."""
    line = shown(str(text or ""))  # a newline or CR in a command shows as \n, \x0d: not hidden
    return line if len(line) <= width else line[: width - 1] + "…"
