"""Allow rules: what runs without asking.

Two places hold permanent rules: ``command_allowlist`` in config.yaml (the user's own file,
read, never written) and ``$HERMES_HOME/tui/allowlist.yaml`` (where "always" answers go). A
rule is an exact command, or a glob (``git log *``), or — in ``command_allowlist`` only — a
*category*: the name of a Hermes Agent dangerous pattern (``recursive delete``), which Hermes
Agent stores there when its user answers "always"; it lifts the flags of ours that mean the same
(:mod:`hermes_tui.runtime.danger.hermes_names`) and matches no command by its text. A glob is matched against the parsed
command (:func:`hermes_tui.runtime.danger.simple_commands`): it matches only a command that
parses to exactly one simple command with no redirection, substitution, variable or
assignment, so ``git *`` can not be stretched into ``git status; rm -rf ~``, a second line, or
``git $(rm -rf ~)``. Rules are read by the host when the runtime starts
or reloads — never because a script changed the files.
"""

from __future__ import annotations

import fnmatch
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml

from hermes_tui.base.safe_yaml import load_yaml
from hermes_tui.runtime.danger import simple_commands
from hermes_tui.runtime.danger.hermes_names import category, known_name, lift
from hermes_tui.base.fsutil import FileRefused, atomic_write, read_capped

OPERATOR_RE = re.compile(r"[;&|<>`\n]|\$\(")
GLOB_CHARS = set("*?[")
ALLOWLIST_MAX_BYTES = 1 << 20
"""allowlist.yaml bigger than this is refused (10,000 rules take about 800 KiB)."""
HEADER = (
    "# hermes-tui approval rules: commands you answered \"always\" to.\n"
    "# Each rule is `exact: COMMAND` or `glob: PATTERN`. Remove one with `hermes-tui approvals revoke`.\n"
)


@dataclass(frozen=True, slots=True)
class Rule:
    """One allow rule and where it lives."""

    pattern: str
    """The command, the glob, or (kind ``category``) the Hermes Agent pattern name as Hermes Agent spells it."""
    kind: Literal["exact", "glob", "category"]
    source: Path
    """config.yaml or allowlist.yaml (a category: config.yaml only)."""
    added_at: str | None = None

    def matches(self, command: str) -> bool:
        """True if ``command`` is allowed by this rule by its text (a category rule never is:
        it lifts flags instead, see :func:`lift_flags`)."""
        command = command.strip()
        if self.kind == "category":
            return False
        if self.kind == "exact":
            return command == self.pattern.strip()
        if OPERATOR_RE.search(command):
            return False
        parsed = simple_commands(command)
        if parsed is None or len(parsed) != 1:
            return False
        return fnmatch.fnmatchcase(" ".join(parsed[0]), self.pattern.strip())


def allowlist_path(home: Path) -> Path:
    """``$HERMES_HOME/tui/allowlist.yaml``."""
    return home / "tui" / "allowlist.yaml"


def rule_from_config(text: str, source: Path) -> Rule | None:
    """A ``command_allowlist`` entry: a category when it is a Hermes Agent pattern name that has
    an equivalent here (case and surrounding blanks ignored); None when it is one that has none
    (it allows nothing: :func:`~hermes_tui.runtime.danger.hermes_names.unmapped_allowlist_entries`
    says why); else a glob when it has ``* ? [``, else exact."""
    name = category(text)
    if name is not None:
        return Rule(name, "category", source)
    if known_name(text) is not None:
        return None
    kind: Literal["exact", "glob"] = "glob" if GLOB_CHARS & set(text) else "exact"
    return Rule(text, kind, source)


def active_rules(allowlist: list[str], config_file: Path, home: Path) -> tuple[list[Rule], str | None]:
    """Every rule in force: config.yaml's ``command_allowlist``, then allowlist.yaml. Blocking."""
    rules = [rule for text in allowlist if text.strip()
             for rule in [rule_from_config(text, config_file)] if rule is not None]
    stored, problem = load_allowlist(allowlist_path(home))
    return rules + stored, problem


def lift_flags(flags: list[str], rules: list[Rule]) -> tuple[list[str], list[Rule]]:
    """(the flags no category rule in ``rules`` covers, the category rules that lifted one).
    Only flags are lifted: the hard floor is refused before any rule is looked at."""
    categories = {r.pattern: r for r in rules if r.kind == "category"}
    if not categories or not flags:
        return list(flags), []
    remaining, used = lift(flags, categories)
    return remaining, [categories[name] for name in used]


def category_source(rule: Rule) -> str:
    """Where a category rule comes from: ``config.yaml command_allowlist`` (or, for a config
    file by another name, its path and ``command_allowlist``)."""
    where = "config.yaml" if rule.source.name == "config.yaml" else str(rule.source)
    return f"{where} command_allowlist"


def category_why(rules: list[Rule]) -> str:
    """``category 'recursive delete' (config.yaml command_allowlist)``, for the audit log."""
    return "; ".join(f"category '{r.pattern}' ({category_source(r)})" for r in rules)


def denied_by(command: str, patterns: list[str], runs: list[tuple[str, ...]]) -> str | None:
    """The ``approvals.deny`` glob that ``command`` matches, if one does: case-insensitive,
    against the whole command and against each command it runs once wrappers are unwrapped
    (``runs``: ``sudo``, ``env``, ``bash -c '...'``, a folder before the program), git's global
    options left out (``git -C . push``), and a pattern ending in `` *`` also matching nothing
    after it (``git push *`` refuses a bare ``git push``)."""
    if not patterns:
        return None
    texts = {command.strip(), *(" ".join(run) for run in runs),
             *(" ".join(_git_without_globals(run)) for run in runs if run[:1] == ("git",))}
    lowered = [text.lower() for text in texts]
    for pattern in patterns:
        glob = pattern.strip().lower()
        if glob and any(fnmatch.fnmatchcase(t, glob) or fnmatch.fnmatchcase(t + " ", glob) for t in lowered):
            return pattern
    return None


_GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path",
                                "--config-env", "--super-prefix"})


def _git_without_globals(run: tuple[str, ...]) -> tuple[str, ...]:
    """``git -C dir -c k=v --no-pager push x`` as ``git push x``."""
    args, index = run[1:], 0
    while index < len(args) and args[index].startswith("-"):
        index += 2 if args[index] in _GIT_VALUE_OPTIONS else 1
    return ("git", *args[index:])


def load_allowlist(path: Path) -> tuple[list[Rule], str | None]:
    """Rules stored in ``allowlist.yaml``, and a problem with the file if it has one. Blocking.

    A file that is not a regular file (a FIFO, a link to ``/dev/zero``), is over
    ``ALLOWLIST_MAX_BYTES``, is not UTF-8 or is not YAML gives no rules and a one-line problem:
    it is never waited on or read without end.
    """
    try:
        data = load_yaml(read_capped(path, ALLOWLIST_MAX_BYTES, what="allowed for allowlist.yaml").decode("utf-8"))
    except FileNotFoundError:
        return [], None
    except FileRefused as exc:
        return [], f"{path} is not used ({exc.strerror}); its rules are ignored until it is a regular YAML file"
    except UnicodeDecodeError as exc:
        return [], f"{path} is not UTF-8 text (byte {exc.start}); its rules are ignored"
    except (OSError, yaml.YAMLError) as exc:
        return [], f"{path} cannot be read ({str(exc).splitlines()[0]}); its rules are ignored"
    data = {} if data is None else data  # an empty file: no rules yet
    items = (data.get("rules") or []) if isinstance(data, dict) else None
    if not isinstance(items, list):  # `rules: 5` or a bare list is a broken file, not a crash
        return [], f"{path} has no list under `rules:`; its rules are ignored"
    rules = []
    for item in items:
        if isinstance(item, dict):
            for kind in ("exact", "glob"):
                if isinstance(item.get(kind), str) and item[kind].strip():
                    rules.append(Rule(item[kind], kind, path, str(item.get("added_at") or "") or None))
    return rules, None


def _save(path: Path, rules: list[Rule]) -> None:
    data = {"rules": [{r.kind: r.pattern, "added_at": r.added_at} for r in rules]}
    text = HEADER + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    atomic_write(path, text.encode("utf-8"), mode=0o600)


class RulesNotSaved(Exception):
    """``allowlist.yaml`` is broken: writing it would drop the rules in it (say why instead)."""


def _stored(path: Path) -> list[Rule]:
    rules, problem = load_allowlist(path)
    if problem is not None:  # rewriting it would lose every rule the user wrote there
        raise RulesNotSaved(f"{problem}; nothing was changed in it — fix or move it first")
    return rules


def add_rule(path: Path, command: str, kind: Literal["exact", "glob"] = "exact") -> Rule:
    """Store ``command`` as an exact rule (or a glob) in ``allowlist.yaml`` (kept if present).
    Blocking.

    Raises :class:`RulesNotSaved` when the file is there but broken."""
    rules = _stored(path)
    for rule in rules:
        if rule.kind == kind and rule.pattern == command:
            return rule
    rule = Rule(command, kind, path, time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    _save(path, [*rules, rule])
    return rule


def remove_rule(path: Path, pattern: str) -> bool:
    """Remove the rule(s) with this pattern from ``allowlist.yaml``; False if none. Blocking.

    Raises :class:`RulesNotSaved` when the file is there but broken."""
    rules = _stored(path)
    kept = [r for r in rules if r.pattern != pattern]
    if len(kept) == len(rules):
        return False
    _save(path, kept)
    return True
