"""Why a script was interrupted: the notice its result carries (a module of its own, so a front
end can name them without importing the executor)."""

INTERRUPT_NOTICE = "[execution interrupted — user sent a new message]"
STOP_NOTICE = "[execution interrupted — stopped by the user]"
"""Esc, Ctrl+C, /stop or the kernels pane's ``i`` (SPEC's notice is for a new message)."""
SWITCH_NOTICE = "[execution interrupted — the user switched to another session]"
DISPOSED_NOTICE = "[execution interrupted — session disposed]"
