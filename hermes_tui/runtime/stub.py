"""Stages the generated ``hermes_tools`` module next to a kernel's driver."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

TEMPLATE = Path(__file__).parent / "child" / "hermes_tools.py"
PLACEHOLDER = "_CONFIG = {}  # replaced by the host when it stages this file"


def render_tools_module(config: dict[str, Any]) -> str:
    """The module's source with ``config`` (transport, descriptors, enabled tools) baked in:
    no secret (the token comes on an inherited descriptor)."""
    source = TEMPLATE.read_text(encoding="utf-8")
    if PLACEHOLDER not in source:  # pragma: no cover - guards edits to the template
        raise RuntimeError("hermes_tools template lost its _CONFIG placeholder")
    return source.replace(PLACEHOLDER, f"_CONFIG = {json.dumps(config)}")


def stage_tools_module(folder: Path, config: dict[str, Any]) -> Path:
    """Write ``hermes_tools.py`` into ``folder`` (mode 0600). Blocking."""
    path = folder / "hermes_tools.py"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(render_tools_module(config))
    return path
