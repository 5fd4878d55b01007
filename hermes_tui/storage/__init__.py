"""Where sessions are kept: SQLite (the default, one machine) or PostgreSQL (a store shared by
machines), behind one small interface (:class:`~hermes_tui.storage.base.Database`).

The statements themselves are in :mod:`hermes_tui.storage.sessions` and :mod:`hermes_tui.storage.leases`;
they are written once, in SQL both backends run.
"""
