"""The app's own small settings (``$HERMES_HOME/tui/settings.json``): the theme last chosen.

Blocking file work: call these from a thread. A missing or broken file reads as defaults (so
does one that is not a regular file, or is over ``SETTINGS_MAX_BYTES``); the file is rewritten
only when a value changes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hermes_tui.base.paths import tui_dir
from hermes_tui.base.fsutil import atomic_write, read_capped


def settings_path(home: Path) -> Path:
    """``$HERMES_HOME/tui/settings.json``."""
    return tui_dir(home) / "settings.json"


SETTINGS_MAX_BYTES = 64 << 10
"""A settings.json bigger than this is not ours: read as defaults, never read whole."""


def _read(home: Path) -> dict[str, Any]:
    try:  # a FIFO or /dev/zero in its place would hang the app's start or fill its memory
        data = json.loads(read_capped(settings_path(home), SETTINGS_MAX_BYTES))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def remembered_theme(home: Path, known: set[str], default: str) -> str:
    """The theme stored last, if it is one of ``known``; else ``default``."""
    name = _read(home).get("theme")
    return name if name in known else default


def remember_theme(home: Path, theme: str) -> None:
    """Store ``theme`` as the one to open with next time."""
    data = _read(home)
    if data.get("theme") == theme:
        return
    data["theme"] = theme
    # A temp file and a rename: a FIFO left in its place is replaced, never opened (that would wait).
    atomic_write(settings_path(home), json.dumps(data, indent=1).encode())
