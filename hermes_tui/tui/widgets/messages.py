"""Messages more than one pane sends."""

from __future__ import annotations

from textual.message import Message


class OpenEntry(Message):
    """Show a run's saved entry (its record and full output) in the output browser."""

    def __init__(self, exec_id: str) -> None:
        super().__init__()
        self.exec_id = exec_id


class OpenInEditor(Message):
    """Open a file in the user's ``$VISUAL``/``$EDITOR`` (else ``less``); the app suspends.

    ``line`` (1-based) is where to open it, for editors that take a line
    (:func:`hermes_tui.tui.editor.editor_argv`).
    """

    def __init__(self, path: str, line: int | None = None) -> None:
        super().__init__()
        self.path = path
        self.line = line
