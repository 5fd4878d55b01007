"""How sub-agent sessions are named: ``PARENT::child::NAME``.

Its own module, with no imports, because the first screen (the kernels pane) needs these and
nothing else of :mod:`hermes_tui.runtime.models` (whose records the first frame does not wait
for, issue 20).
"""

from __future__ import annotations

SUBAGENT_SEPARATOR = "::child::"


def is_subagent_session(session: str) -> bool:
    """True for sub-agent sessions, named ``PARENT::child::NAME``."""
    return SUBAGENT_SEPARATOR in session


def parent_session(session: str) -> str:
    """The top-level session a (possibly sub-agent) session belongs to."""
    return session.split(SUBAGENT_SEPARATOR, 1)[0]
