"""The app's own small settings (``$HERMES_HOME/tui/settings.json``): the theme last chosen.

Blocking file work: call these from a thread. A missing or broken file reads as defaults; the
file is rewritten only when a value changes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hermes_tui.paths import tui_dir


def settings_path(home: Path) -> Path:
    """``$HERMES_HOME/tui/settings.json``."""
    return tui_dir(home) / "settings.json"


def _read(home: Path) -> dict[str, Any]:
    try:
        data = json.loads(settings_path(home).read_text())
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
    path = settings_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1))
