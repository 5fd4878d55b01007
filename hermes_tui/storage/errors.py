"""The errors a sessions store raises, whichever the backend; each message is one line for a user."""

from __future__ import annotations

import sqlite3

from hermes_tui.config.store_url import StoreError, StoreURLError

__all__ = ["DB_ERRORS", "SchemaTooNew", "StoreError", "StoreUnavailable", "StoreURLError"]


class StoreUnavailable(StoreError):
    """The store's server cannot be reached (down, restarting, the network). The writer keeps
    what was asked of it (writes and reads alike) and tries again until the server is back; a
    caller sees this only once the store is closing (:meth:`SessionStore.begin_close`), or
    when it opens a store directly (a command)."""


class SchemaTooNew(StoreError):
    """The store was written by a newer hermes-tui: this one refuses it rather than guess."""


DB_ERRORS: tuple[type[BaseException], ...] = (sqlite3.Error, StoreError)
"""What a store's statements may raise (catch this, not one backend's errors)."""
