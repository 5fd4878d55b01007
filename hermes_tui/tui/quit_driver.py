"""Textual's Linux driver, without the wait for its key thread when the app quits (issue 38).

At quit Textual sets its key thread's exit event and joins it. That thread notices only when
its ``select`` on the terminal times out, then selects once more for what was typed last:
up to 0.2 s of every quit, spent after the kernels have ended and the terminal is restored.
:class:`QuitDriver` restores the same things and does not wait: the process ends at once
(:func:`hermes_tui.base.lifetime.end_process`), so the thread never reads another key.

A suspend (the ``$EDITOR``, ``Ctrl+Z``) is left to Textual: there the thread must have stopped
before the editor reads the terminal.
"""

from __future__ import annotations

import contextlib
import signal
import termios

from textual.drivers.linux_driver import LinuxDriver


class QuitDriver(LinuxDriver):
    """:class:`LinuxDriver` whose input is disabled without waiting when the app quits."""

    def disable_input(self) -> None:
        # Textual's private names (textual_compat.py): App._exit (set by App.exit), and the
        # driver's exit_event and _disable_mouse_support, used as LinuxDriver.disable_input does.
        if not getattr(self._app, "_exit", False):
            super().disable_input()
            return
        with contextlib.suppress(Exception):
            if not self.exit_event.is_set():
                signal.signal(signal.SIGWINCH, signal.SIG_DFL)
                self._disable_mouse_support()
                self.exit_event.set()  # left set: the key thread ends by itself
                with contextlib.suppress(termios.error):
                    termios.tcflush(self.fileno, termios.TCIFLUSH)
