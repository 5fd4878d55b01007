"""The errors a sessions store raises, whichever the backend; each message is one line for a user."""

from __future__ import annotations

import sqlite3


class StoreError(Exception):
    """The sessions store cannot do what was asked; ``str(err)`` is one line for a user (a
    password never appears in it)."""


class StoreUnavailable(StoreError):
    """The store's server cannot be reached (down, restarting, the network). The writer keeps
    what was asked of it (writes and reads alike) and tries again until the server is back; a
    caller sees this only once the store is closing (:meth:`SessionStore.begin_close`), or
    when it opens a store directly (a command)."""


class SchemaTooNew(StoreError):
    """The store was written by a newer hermes-tui: this one refuses it rather than guess."""


class StoreURLError(StoreError, ValueError):
    """``store.url`` / ``--store`` / ``HERMES_TUI_STORE_URL`` is not a URL hermes-tui can use;
    ``allowed`` says what would be (for the config's "must be ..." message)."""

    def __init__(self, message: str, allowed: str = "") -> None:
        super().__init__(message)
        self.allowed = allowed or message


DB_ERRORS: tuple[type[BaseException], ...] = (sqlite3.Error, StoreError)
"""What a store's statements may raise (catch this, not one backend's errors)."""
