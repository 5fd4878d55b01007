"""Where sessions are kept: SQLite (the default, one machine) or PostgreSQL (a store shared by
machines), behind one small interface (:class:`~hermes_tui.storage.base.Database`).

- :mod:`~hermes_tui.storage.opening`: opening a store (a SQLite file or a PostgreSQL server,
  its schema migrated), and who this process is as the store records it.
- :mod:`~hermes_tui.storage.writer`: :class:`~hermes_tui.storage.writer.SessionStore`, the one
  thread that runs every statement.
- :mod:`~hermes_tui.storage.sessions` and :mod:`~hermes_tui.storage.leases`: the statements,
  written once in SQL both backends run (sessions, turns, messages, tool calls, approvals,
  usage, the inputs history; who drives a session).
- :mod:`~hermes_tui.storage.base`, :mod:`~hermes_tui.storage.sqlite`,
  :mod:`~hermes_tui.storage.postgres`: the interface and its two backends.
- :mod:`~hermes_tui.storage.schema`: the one schema and its migrations.
- :mod:`~hermes_tui.config.store_url`, :mod:`~hermes_tui.storage.choice`: which store a URL names,
  the one this process chose, and new session ids.
- :mod:`~hermes_tui.storage.inputs`: which inputs the history keeps.
- :mod:`~hermes_tui.storage.errors`: what a store's failures raise.
- :mod:`~hermes_tui.storage.copy`: ``hermes-tui store migrate``.
"""
