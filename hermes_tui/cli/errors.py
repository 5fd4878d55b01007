"""What every command shares: the exit codes and the one error a command raises for bad input.

Exit codes: 0 success, 1 a script failed, 2 usage or config error, 130 interrupted.
This module imports nothing from the project, so any command module may import it.
"""

from __future__ import annotations

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class UsageError(Exception):
    """Bad command-line input; the message is one line for the user.

    ``hermes_tui.cli.main`` prints it as ``hermes-tui: <message>`` on stderr and exits with
    ``EXIT_USAGE``.
    """
