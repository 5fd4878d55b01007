"""The base of the tools' argument models (:class:`Args`), and their errors in one line.

pydantic, imported with the tools' own modules (ahead, in a thread: runtime/tools/dispatch.py),
never with the runtime: it costs about 100 ms, and ``hermes-tui exec`` waited for it before its
kernel could start (issue 38).
"""

from __future__ import annotations

from pydantic import BaseModel, ValidationError


def describe_validation(exc: ValueError) -> str:
    """'path: Field required; limit: Input should be greater than 0' in one line (pydantic's
    ``ValidationError``; another ``ValueError`` a model raised: its first line)."""
    if not isinstance(exc, ValidationError):
        return (str(exc).splitlines() or [type(exc).__name__])[0]
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "arguments"
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "not an argument of this tool"
        parts.append(f"{where}: {message}")
    return "; ".join(parts)


class Args(BaseModel):
    """Base of tool argument models: unknown arguments are an error."""

    model_config = {"extra": "forbid"}
