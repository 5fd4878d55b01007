"""Which store this process uses (chosen once by the command line), and new session ids.

Apart from :mod:`hermes_tui.storage.sessions` (which re-exports these) so that choosing the store, and
naming the session the app opens, need neither SQLite nor the store's code before the first
frame (issue 20).
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import Any

from hermes_tui.storage.errors import StoreError
from hermes_tui.config.store_url import StoreURL

_chosen: StoreURL | None = None
_chosen_problem: StoreError | None = None


def choose_store(url: StoreURL | None, problem: StoreError | None = None) -> None:
    """Use ``url`` for every store this process opens without naming one (the command line
    resolves ``--store`` / ``HERMES_TUI_STORE_URL`` / ``store.url`` once, here), or remember
    why it could not be resolved (``problem``: raised by :func:`store_url`, so only commands
    that use the store fail). ``choose_store(None)`` forgets the choice."""
    global _chosen, _chosen_problem
    _chosen, _chosen_problem = url, problem


def store_url(config: Any = None, home: Path | None = None) -> StoreURL:
    """The store to use: the one the command line chose, else ``$HERMES_TUI_STORE_URL``, else
    ``config.store.url``, else ``$HERMES_HOME/tui/sessions.db``. Raises
    :class:`~hermes_tui.storage.errors.StoreURLError` for a URL that cannot be used."""
    if _chosen_problem is not None:
        raise _chosen_problem
    if _chosen is not None:
        return _chosen
    from hermes_tui.config.store_url import resolve_store_url

    section = getattr(config, "store", None)
    return resolve_store_url(getattr(section, "url", None), getattr(section, "password_env", None), home)


def new_session_id() -> str:
    """A sortable, readable id: ``20261129-142501-3fa2``."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)
