"""Textual widgets of the workstation, one pane per module (installed as hermes_tui.tui.widgets).

Widgets never touch sockets or processes: they are fed runtime events by the app.
"""
