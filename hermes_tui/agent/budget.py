"""Hard cost ceilings: ``agent.max_cost_usd`` per session, ``agent.max_turn_cost_usd`` per turn.

Before each model call the loop asks :meth:`Budget.refuse` whether what is spent plus what the
call could cost would pass a ceiling. The estimate is deliberately on the high side: the
request's input tokens (as the provider counted the last one, else 1 per 4 characters) at
the full input price, no cache discount, plus as many output tokens as the largest reply so
far (at least :data:`MIN_OUTPUT_ESTIMATE`). Passing a ceiling is a normal end of a turn
(status ``budget``): nothing is lost, the session is stored, ``/budget`` raises the ceiling
and ``/retry`` goes on.

A model whose price is unknown cannot be held to a ceiling: the user is told once.
"""

from __future__ import annotations

from dataclasses import dataclass

import math

from hermes_tui.agent.usage import dollars

MIN_OUTPUT_ESTIMATE = 2048
"""Output tokens a call is assumed to produce at least, for the estimate."""
MAX_OUTPUT_ESTIMATE = 32_768
MAX_CEILING = 1_000_000.0
"""The largest ceiling ``/budget`` and ``--max-cost`` take (US dollars)."""


@dataclass
class Budget:
    """The ceilings in force (None: no ceiling)."""

    max_cost_usd: float | None = None
    """For the whole session (config, ``--max-cost``, or ``/budget``)."""
    max_turn_cost_usd: float | None = None
    """For one turn (``agent.max_turn_cost_usd``)."""
    session_setting: str = "agent.max_cost_usd"
    """Where the session ceiling came from, to name it in the notice."""
    turn_setting: str = "agent.max_turn_cost_usd"
    warned_unpriced: bool = False

    @property
    def active(self) -> bool:
        return self.max_cost_usd is not None or self.max_turn_cost_usd is not None

    def refuse(self, session_spent: float, turn_spent: float, estimate: float) -> str | None:
        """Why the next call may not be made (the notice), or None when it may."""
        if self.max_cost_usd is not None and session_spent + estimate > self.max_cost_usd:
            return (f"Budget reached: this session has spent {dollars(session_spent)} of its "
                    f"{dollars(self.max_cost_usd)} ({self.session_setting}), and the next model call could cost up "
                    f"to {dollars(estimate)}. The session is saved. To go on: /budget "
                    f"{suggest(self.max_cost_usd, session_spent + estimate)} raises the ceiling for this session, "
                    "then /retry.")
        if self.max_turn_cost_usd is not None and turn_spent + estimate > self.max_turn_cost_usd:
            retry = "/retry starts the turn's count again, or " if turn_spent > 0 and estimate <= self.max_turn_cost_usd \
                else ""
            return (f"Budget reached: this turn has spent {dollars(turn_spent)} of its "
                    f"{dollars(self.max_turn_cost_usd)} ({self.turn_setting}), and the next model call could "
                    f"cost up to {dollars(estimate)}. The session is saved. To go on: {retry}/budget turn "
                    f"{suggest(self.max_turn_cost_usd, estimate)} raises the ceiling, then /retry.")
        return None

    def describe(self, session_spent: float, unpriced_calls: int) -> str:
        """One line for ``/budget`` with no argument."""
        parts = [f"This session has spent {dollars(session_spent)}"
                 + (f" (and {unpriced_calls} call{'s' if unpriced_calls != 1 else ''} with no known price)"
                    if unpriced_calls else "") + "."]
        parts.append(f"Session ceiling: {dollars(self.max_cost_usd)}." if self.max_cost_usd is not None
                     else "No session ceiling.")
        if self.max_turn_cost_usd is not None:
            parts.append(f"Turn ceiling: {dollars(self.max_turn_cost_usd)}.")
        parts.append("/budget 5.00 sets the session's, /budget turn 1.00 the turn's, /budget off removes the "
                     "session's.")
        return " ".join(parts)


def suggest(ceiling: float, needed: float = 0.0) -> str:
    """A raised ceiling to suggest: double, or enough for what is needed if that is more,
    rounded up to a plain figure."""
    raised = max(ceiling * 2, needed * 1.25)
    return f"{math.ceil(raised * 100) / 100:.2f}" if raised < 100 else f"{math.ceil(raised):.0f}"


def parse_amount(text: str) -> float | str:
    """A dollar amount typed after ``/budget`` (``5``, ``5.00``, ``$5``), or the error to show."""
    cleaned = text.strip().lstrip("$").replace(",", "")
    try:
        value = float(cleaned)
    except ValueError:
        return f"/budget needs an amount in US dollars, like /budget 5.00 (got {text.strip()!r})."
    if not value > 0 or value != value or value == float("inf"):
        return f"/budget needs an amount above 0, like /budget 5.00 (got {text.strip()!r}); /budget off removes it."
    if value > MAX_CEILING:
        return f"/budget takes at most {MAX_CEILING:,.0f} US dollars (got {text.strip()!r}); /budget off removes it."
    return value
