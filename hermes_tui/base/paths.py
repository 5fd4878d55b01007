"""Every path under ``HERMES_HOME``, in one place.

``HERMES_HOME`` (default ``~/.hermes``) is shared with Hermes Agent. hermes-tui reads
``config.yaml``, writes execution records and spills under ``cache/exec/`` and keeps its own
state under ``tui/``. It never writes files Hermes Agent owns (``state.db``, ``.env``).
"""

from __future__ import annotations

import os
from pathlib import Path


def hermes_home() -> Path:
    """The root directory: ``$HERMES_HOME`` if set, else ``~/.hermes``."""
    value = os.environ.get("HERMES_HOME")
    return Path(value).expanduser() if value else Path.home() / ".hermes"


def config_path(home: Path | None = None) -> Path:
    """``$HERMES_HOME/config.yaml``, the file shared with Hermes Agent."""
    return (home or hermes_home()) / "config.yaml"


def exec_cache_dir(home: Path | None = None) -> Path:
    """``$HERMES_HOME/cache/exec``: execution records and full-output spills."""
    return (home or hermes_home()) / "cache" / "exec"


def tui_dir(home: Path | None = None) -> Path:
    """``$HERMES_HOME/tui``: the app's own state (sessions, allowlist, logs)."""
    return (home or hermes_home()) / "tui"
