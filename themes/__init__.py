"""Themes and .tcss files shipped with the app (installed as hermes_tui.themes)."""
