"""The theme: Ctrl+T cycles the app's themes; the one chosen is redrawn into the code blocks
and remembered for the next start (``settings.json``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from hermes_tui.tui.app_parts import AppParts
from hermes_tui.tui.settings import remember_theme
from hermes_tui.tui.themes import THEMES
from hermes_tui.tui.widgets.conversation.blocks import RunBlock
from hermes_tui.tui.widgets.safe import visible


class ThemeActions(AppParts):
    """A part of :class:`~hermes_tui.tui.app.HermesApp`."""

    home: Path

    def action_cycle_theme(self) -> None:
        names = [t.name for t in THEMES]
        current = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(current + 1) % len(names)]
        self.notify(f"Theme: {visible(self.theme)}", markup=False)

    def watch_theme(self, theme: str) -> None:
        if not self.is_running:  # the remembered one, set before the app runs: nothing to redraw or store
            return
        for block in self.main.query(RunBlock):
            block.refresh_theme()
        if theme in {t.name for t in THEMES}:
            self.run_worker(asyncio.to_thread(remember_theme, self.home, theme), group="settings",
                            exit_on_error=False)
