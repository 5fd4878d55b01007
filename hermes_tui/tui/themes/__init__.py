"""Themes shipped with the app (installed as hermes_tui.tui.themes): dark, light, high contrast."""

from __future__ import annotations

from textual.theme import Theme

HERMES_DARK = Theme(
    name="hermes-dark",
    primary="#7aa2f7",
    secondary="#bb9af7",
    accent="#e0af68",
    foreground="#c0caf5",
    background="#1a1b26",
    surface="#1f2335",
    panel="#24283b",
    success="#9ece6a",
    warning="#e0af68",
    error="#f7768e",
    dark=True,
)

HERMES_LIGHT = Theme(
    name="hermes-light",
    primary="#2e5cb8",
    secondary="#7a3fb8",
    accent="#a15c00",
    foreground="#1f2328",
    background="#f6f8fa",
    surface="#ffffff",
    panel="#e6eaef",
    success="#1a7f37",
    warning="#9a6700",
    error="#cf222e",
    dark=False,
)

HERMES_CONTRAST = Theme(
    name="hermes-contrast",
    primary="#ffff00",
    secondary="#00ffff",
    accent="#ff00ff",
    foreground="#ffffff",
    background="#000000",
    surface="#000000",
    panel="#1a1a1a",
    success="#00ff00",
    warning="#ffff00",
    error="#ff3030",
    dark=True,
)

THEMES = (HERMES_DARK, HERMES_LIGHT, HERMES_CONTRAST)
DEFAULT_THEME = HERMES_DARK.name
