"""Environment names that skills ask for (``required_environment_variables``).

Skills live under ``$HERMES_HOME/skills/`` as folders with a ``SKILL.md`` whose YAML front
matter may list the variables the skill needs; those names are let into kernels by exact
name, like ``terminal.env_passthrough``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import yaml

from hermes_tui.base.safe_yaml import load_yaml
from hermes_tui.base.fsutil import read_capped

log = logging.getLogger(__name__)

SKILL_LIMIT = 1 << 20
"""Largest SKILL.md read for its front matter."""


def front_matter(text: str) -> dict[str, Any]:
    """The YAML between the leading ``---`` lines of a Markdown file ({} if none)."""
    if not text.startswith("---"):
        return {}
    end = text.find("\n---", 3)
    if end < 0:
        return {}
    try:
        data = load_yaml(text[3:end])
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


def _names(value: Any) -> set[str]:
    names = set()
    for item in value if isinstance(value, list) else []:
        if isinstance(item, str):
            names.add(item)
        elif isinstance(item, dict) and isinstance(item.get("name"), str):
            names.add(item["name"])
    return names


def required_env(home: Path) -> dict[str, str]:
    """Every variable name the skills under ``home/skills`` require, with the first skill
    (its path under ``home``) that asks for it. Blocking (reads files)."""
    found: dict[str, str] = {}
    root = home / "skills"
    if not root.is_dir():
        return found
    for skill in sorted(root.rglob("SKILL.md")):
        try:  # a file a script can write: a FIFO or a huge one must not hold up a kernel's start
            meta = front_matter(read_capped(skill, SKILL_LIMIT, what="read from a SKILL.md").decode("utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            log.debug("skipping %s: %s", skill, exc)
            continue
        names = _names(meta.get("required_environment_variables"))
        hermes = (meta.get("metadata") or {}).get("hermes") if isinstance(meta.get("metadata"), dict) else None
        if isinstance(hermes, dict):
            names |= _names(hermes.get("required_environment_variables"))
        for name in sorted(n for n in names if n):
            found.setdefault(name, str(skill.relative_to(home)))
    return found


def required_env_names(home: Path) -> frozenset[str]:
    """Every variable name the skills under ``home/skills`` require. Blocking (reads files)."""
    return frozenset(required_env(home))
