"""Saved outputs from the app: the output browser (F9), one saved run opened from its block,
and a file opened in the user's editor."""

from __future__ import annotations

import asyncio
import subprocess

from textual import on

from hermes_tui.base.paths import exec_cache_dir
from hermes_tui.runtime.hardening import spawn
from hermes_tui.tui.app_parts import AppParts
from hermes_tui.tui.editor import editor_argv, editor_command
from hermes_tui.tui.widgets.messages import OpenEntry, OpenInEditor
from hermes_tui.tui.widgets.safe import visible


class SavedOutputs(AppParts):
    """A part of :class:`~hermes_tui.tui.app.HermesApp`."""

    def action_open_cache(self) -> None:
        from hermes_tui.tui.screens.cache_browser import CacheBrowser

        self.push_screen(CacheBrowser(exec_cache_dir(self.home)))

    @on(OpenEntry)
    async def _open_entry(self, event: OpenEntry) -> None:
        from hermes_tui.runtime.cache import find
        from hermes_tui.tui.screens.cache_browser import EntryScreen

        await self.runtime.flush_records()
        entry = await asyncio.to_thread(find, exec_cache_dir(self.home), event.exec_id)
        if entry is None:
            self.notify(f"No saved entry for {visible(event.exec_id)} (pruned?).", severity="warning",
                        markup=False)
            return
        await self.push_screen(EntryScreen(entry))

    @on(OpenInEditor)
    def _open_path(self, event: OpenInEditor) -> None:
        editor = editor_command()
        # A file a script wrote, opened by a program that reads start-up files a script can
        # write (~/.lesskey, ~/.vimrc): it gets a kernel's scrubbed environment and is forked
        # like every child, without the capabilities that read the host (docs/security.md).
        env = self.runtime.launcher.child_env(frozenset(self.config.terminal.env_passthrough))
        try:
            argv = editor_argv(editor, event.path, event.line)  # at the line, for editors that take one
            with self.suspend():
                spawn(lambda: subprocess.Popen(argv, env=env)).wait()
        except Exception as exc:  # no terminal to suspend to (tests), or no such editor
            self.notify(visible(f"Could not open {event.path} with {editor}: {exc}"), severity="error", markup=False)
