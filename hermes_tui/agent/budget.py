"""Hard cost ceilings: ``agent.max_cost_usd`` per session, ``agent.max_turn_cost_usd`` per turn.

A ceiling is hard: before each model call the loop reserves the call's worst case and sends
``max_tokens`` so the provider cannot go past it (:func:`grant`). The worst case is the
request's input tokens (as the provider counted this conversation's last request, else 1 per 4
characters, plus :data:`INPUT_MARGIN`) at the full input price, no cache discount, plus the
``max_tokens`` granted at the output price. What is left under the ceiling (after what was spent
and what calls running now hold) is shared between the agents of the session that may call
next (concurrent sub-agents each get a part); a call whose input and :data:`MIN_REPLY_TOKENS`
do not fit what is left is refused. Passing a ceiling is a normal end of a turn (status
``budget``): nothing is lost, the session is stored, ``/budget`` raises the ceiling and
``/retry`` goes on.

A model whose price is unknown cannot be held to a ceiling: the user is told once.
"""

from __future__ import annotations

from dataclasses import dataclass

import math
import shlex

from hermes_tui.agent.usage import dollars

MIN_REPLY_TOKENS = 1024
"""The shortest reply a call under a ceiling may be granted: a call whose input and this many
output tokens do not fit what is left is refused (a tool-calling reply needs some room)."""
DEFAULT_MAX_REPLY_TOKENS = 8192
"""The longest reply asked for under a ceiling when ``model.max_tokens`` does not say (what
Anthropic is always sent; a model may refuse a larger ``max_tokens`` than it can produce)."""
INPUT_MARGIN = 1.25
"""The input is counted at this many times the tokens the conversation's last request came to
(a request's count is measured only after it is sent)."""
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
    resume: str | None = None
    """The session of a headless ``run``/``resume`` (no person at a prompt): the notice says
    how to go on from a shell (``hermes-tui resume ID --max-cost``), not ``/budget``, ``/retry``."""

    @property
    def active(self) -> bool:
        return self.max_cost_usd is not None or self.max_turn_cost_usd is not None

    def over(self, session_spent: float, turn_spent: float, estimate: float) -> str | None:
        """Which ceiling a call that could cost ``estimate`` would pass, in words ("this session
        has spent $0.12 of its $0.16 (--max-cost)"); None when it passes none."""
        if self.max_cost_usd is not None and session_spent + estimate > self.max_cost_usd:
            return (f"this session has spent {dollars(session_spent)} of its {dollars(self.max_cost_usd)} "
                    f"({self.session_setting})")
        if self.max_turn_cost_usd is not None and turn_spent + estimate > self.max_turn_cost_usd:
            return (f"this turn has spent {dollars(turn_spent)} of its {dollars(self.max_turn_cost_usd)} "
                    f"({self.turn_setting})")
        return None

    def refuse(self, session_spent: float, turn_spent: float, estimate: float) -> str | None:
        """Why the next call may not be made (the notice), or None when it may."""
        passed = self.over(session_spent, turn_spent, estimate)
        if passed is None:
            return None
        if self.max_cost_usd is not None and session_spent + estimate > self.max_cost_usd:
            go_on = (f"hermes-tui resume {shlex.quote(self.resume)} --max-cost "
                     f"{suggest(self.max_cost_usd, session_spent + estimate)}." if self.resume else
                     f"/budget {suggest(self.max_cost_usd, session_spent + estimate)} raises the ceiling for this "
                     "session, then /retry.")
        else:
            assert self.max_turn_cost_usd is not None
            retry = "/retry starts the turn's count again, or " if turn_spent > 0 and estimate <= self.max_turn_cost_usd \
                else ""
            go_on = (f"hermes-tui resume {shlex.quote(self.resume)} starts the turn's count again (or raise "
                     f"{self.turn_setting} in config.yaml)." if self.resume else
                     f"{retry}/budget turn {suggest(self.max_turn_cost_usd, estimate)} raises the ceiling, then /retry.")
        return (f"Budget reached: {passed}, and the next model call could cost up to {dollars(estimate)}. "
                f"The session is saved. To go on: {go_on}")

    def room(self, session_spent: float, turn_spent: float) -> float:
        """What is left under the ceilings in force (infinite with none)."""
        left = float("inf")
        if self.max_cost_usd is not None:
            left = min(left, self.max_cost_usd - session_spent)
        if self.max_turn_cost_usd is not None:
            left = min(left, self.max_turn_cost_usd - turn_spent)
        return max(left, 0.0)

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


@dataclass(frozen=True, slots=True)
class Grant:
    """What one model call may spend: its ``max_tokens`` and its cost if it uses them all."""

    max_tokens: int
    worst: float


def grant(room: float, share: float, input_cost: float, output_price: float, cap: int) -> Grant | None:
    """The reply length one call may have, given ``room`` (what is left under the ceiling),
    ``share`` (this caller's part of it: ``room`` divided between the agents that may call
    now), the input's worst cost and the price of an output token; None when not even
    :data:`MIN_REPLY_TOKENS` fit ``room`` (the call is refused).

    A call gets its share, at least the minimum and at most ``cap`` tokens, and never more than
    ``room`` — so what every call running at once can cost adds up to no more than what was
    left."""
    floor = min(MIN_REPLY_TOKENS, cap)
    if input_cost + floor * output_price > room:
        return None
    if output_price <= 0:
        tokens = cap
    else:
        # A hair under the exact quotient: a float's rounding must not put the worst case a
        # fraction of a cent over the room.
        tokens = int(math.floor((max(share, input_cost + floor * output_price) - input_cost) / output_price
                                * (1 - 1e-9)))
    tokens = max(floor, min(tokens, cap))
    return Grant(tokens, input_cost + tokens * output_price)


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
