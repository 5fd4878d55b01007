"""Package names imported on first use (a module ``__getattr__``): a package whose ``__init__``
would otherwise import its heavy modules at once (the engine, the agent loop) exports them
lazily, so importing one light submodule does not pull them all in."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def exports(package: str, where: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``package``: ``name`` is imported from the submodule
    ``where[name]`` the first time it is asked for, and kept in ``namespace`` after."""
    def __getattr__(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    return __getattr__
