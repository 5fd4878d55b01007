"""Allow rules suggested from the approvals log: commands a person approved again and again.

``hermes-tui approvals suggest`` reads ``approvals.jsonl`` (each request, then its decision)
and proposes, with counts:

* an **exact** rule for a command approved at least :data:`MIN_EXACT` times;
* a **glob** ``PREFIX *`` for a program and subcommand (``npm run``, ``cargo test``) under
  which at least :data:`MIN_PREFIX_COMMANDS` different commands were approved,
  :data:`MIN_PREFIX_APPROVALS` times in all.

Never a rule that would allow what the analysis flags: a command is a candidate only if,
read again now where it ran, it is neither flagged nor refused, writes no agent instruction
file, and parses to one simple command (a glob never matches anything else, see
:mod:`.rules`); a prefix only if its program cannot run arbitrary code or delete by its
arguments (:data:`UNSAFE_PREFIXES`). The gate itself never lets a glob allow a flagged command,
so a glob stays safe for commands never seen. Commands a rule already allows are left out.
"""

from __future__ import annotations

import glob
import json
import os
import re
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from hermes_tui.base.fsutil import open_regular
from hermes_tui.runtime.danger import analyze, simple_commands
from hermes_tui.runtime.rules import OPERATOR_RE, Rule

MIN_EXACT = 2
MIN_PREFIX_COMMANDS = 2
MIN_PREFIX_APPROVALS = 3
KEPT_REQUESTS = 20_000
"""Requests remembered while the log is read (the oldest are forgotten): memory stays bounded
however long the log is."""
KEPT_COMMANDS = 10_000
APPROVED = frozenset({"once", "session", "always"})
UNATTENDED = "approvals.unattended"
"""In the reason of an answer ``approvals.unattended`` gave: not a person's, not counted."""
INTERPRETER = re.compile(r"(?:python|pypy|node|nodejs|ruby|perl|php|lua|bash|sh|zsh|pwsh|java)[\d.]*")
"""Interpreters by any version (``python3.12``): never a prefix."""

UNSAFE_PREFIXES = frozenset({
    "sh", "bash", "zsh", "dash", "fish", "ksh", "env", "sudo", "doas", "su", "xargs", "eval", "exec", "nohup",
    "time", "timeout", "nice", "watch", "deno", "bun",
    "lua", "rm", "rmdir", "dd", "mkfs", "chmod", "chown", "chgrp", "mv", "cp", "ln", "tee", "truncate", "shred",
    "find", "curl", "wget", "ssh", "scp", "rsync", "docker", "kubectl", "kill", "pkill", "killall", "systemctl",
    "service", "crontab", "git", "make", "npx", "pipx", "uvx", "uv", "pip", "pip3", "poetry", "pdm", "conda",
    "awk", "sed", "psql", "mysql", "sqlite3", "mongo", "redis-cli",
})
"""Programs whose ``PROGRAM SUB *`` would cover too much to be proposed (with
:data:`INTERPRETER`; a program named by its path is never a prefix either): shells and
interpreters, wrappers and package runners that run another command, deleters, copiers,
fetchers, databases (an exact rule for one of their commands is still proposed). ``git`` is
here because ``git -c`` and aliases run code; ``git status`` and kin are proposed exactly."""


@dataclass
class Suggestion:
    """One rule to propose."""

    kind: str
    """``exact`` or ``glob``."""
    pattern: str
    approvals: int
    commands: list[str] = field(default_factory=list)
    """The approved commands it covers (for a glob, up to five)."""
    last: str = ""
    """When the last of them was approved."""

    def as_json(self, number: int) -> dict[str, object]:
        """The suggestion for ``--json``."""
        return {"n": number, "kind": self.kind, "pattern": self.pattern, "approvals": self.approvals,
                "commands": self.commands, "last": self.last}


@dataclass
class _Seen:
    count: int = 0
    last: str = ""
    cwd: str | None = None


def approved_commands(path: Path) -> dict[str, _Seen]:
    """Each ``terminal()`` command a person approved in the log at ``path``, with how often,
    when last, and where it ran. Blocking; reads the log as a stream."""
    requests: OrderedDict[str, tuple[str, str | None]] = OrderedDict()
    seen: OrderedDict[str, _Seen] = OrderedDict()
    with os.fdopen(open_regular(path), encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if not isinstance(entry, dict):
                continue
            event, request_id = entry.get("event"), entry.get("id")
            if event == "request" and entry.get("kind") == "terminal" and isinstance(request_id, str) \
                    and isinstance(entry.get("text"), str):
                requests[request_id] = (entry["text"], entry.get("cwd") if isinstance(entry.get("cwd"), str) else None)
                if len(requests) > KEPT_REQUESTS:
                    requests.popitem(last=False)
            elif event == "decision" and isinstance(request_id, str) and request_id in requests:
                text, cwd = requests.pop(request_id)  # answered: forgotten, whatever the answer
                if entry.get("decision") not in APPROVED or UNATTENDED in str(entry.get("why") or ""):
                    continue  # a denial, or an answer no person gave
                item = seen.pop(text, None) or _Seen()
                item.count += 1
                item.last, item.cwd = str(entry.get("at") or ""), cwd
                seen[text] = item  # last approved last: the least recent is forgotten first
                if len(seen) > KEPT_COMMANDS:
                    seen.popitem(last=False)
    return dict(seen)


def _harmless(command: str, cwd: str | None, home: Path, instructions: tuple[str, ...]) -> list[str] | None:
    """The words of ``command`` if it may become a rule: one simple command with no operator,
    not flagged or refused where it ran; else None."""
    if OPERATOR_RE.search(command):
        return None
    parsed = simple_commands(command)
    if parsed is None or len(parsed) != 1 or not parsed[0]:
        return None
    verdict = analyze(command, os.path.expanduser("~"), str(home), cwd=cwd if cwd and os.path.isdir(cwd) else None,
                      instructions=instructions)
    return None if verdict.flagged else parsed[0]


def suggest(path: Path, rules: Iterable[Rule], home: Path, instructions: tuple[str, ...] = ()) -> list[Suggestion]:
    """The rules to propose from the log at ``path``, most approved first. Blocking."""
    rules = list(rules)
    out: list[Suggestion] = []
    prefixes: dict[str, Suggestion] = {}
    for command, seen in approved_commands(path).items():
        words = _harmless(command, seen.cwd, home, instructions)
        if words is None or any(r.matches(command) for r in rules):
            continue
        if seen.count >= MIN_EXACT:
            out.append(Suggestion("exact", command, seen.count, [command], seen.last))
        program = os.path.basename(words[0])
        if len(words) >= 3 and program == words[0] and program not in UNSAFE_PREFIXES \
                and not INTERPRETER.fullmatch(program) and not words[1].startswith("-"):
            prefix = f"{glob.escape(words[0])} {glob.escape(words[1])} *"
            group = prefixes.setdefault(prefix, Suggestion("glob", prefix, 0))
            group.approvals += seen.count
            group.commands.append(command)
            group.last = max(group.last, seen.last)
    for group in prefixes.values():
        if len(group.commands) >= MIN_PREFIX_COMMANDS and group.approvals >= MIN_PREFIX_APPROVALS \
                and not any(r.kind == "glob" and r.pattern == group.pattern for r in rules):
            group.commands = group.commands[:5]
            out.append(group)
    out.sort(key=lambda s: (-s.approvals, s.kind != "glob", s.pattern))
    return out
