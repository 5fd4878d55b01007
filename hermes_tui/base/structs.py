"""The base of the records the runtime returns and stores (:class:`Record`).

``ExecResult``, ``KernelInfo``, ``ApprovalRequest`` and their kin are msgspec structs, not
pydantic models: pydantic costs about 100 ms to import and to build its first model, and
``hermes-tui exec`` waited for it before its kernel could start (issue 38). A :class:`Record`
keeps the pydantic methods their callers use (``model_dump``, ``model_dump_json``,
``model_copy``, ``model_validate``, ``model_validate_json``), with the same meaning. As with
pydantic, what is read back (``model_validate``) is checked against the fields' types, and a
mismatch is a ``ValueError`` that says which field; a record built in code is not checked.
The tools' argument models stay pydantic (runtime/tools/args.py): they come with the tools.
"""

from __future__ import annotations

import json
from datetime import date, datetime, time, timedelta
from typing import Any, Literal, TypeVar

import msgspec

R = TypeVar("R", bound="Record")

_KEPT_AS_OBJECTS = (datetime, date, time, timedelta)
"""What ``model_dump()`` leaves as Python objects (in ``mode="json"``: ISO text)."""


class Record(msgspec.Struct):
    """A record with pydantic's methods. Subclass it with ``kw_only=True`` (msgspec takes it
    per class), so fields are given by name as in pydantic, in any order of defaults."""

    def model_dump(self, *, mode: Literal["python", "json"] = "python", exclude_none: bool = False) -> dict[str, Any]:
        """The fields as a dict, nested records too; ``mode="json"``: JSON's types only;
        ``exclude_none``: without the fields that are None (at every level)."""
        dumped: dict[str, Any]
        if mode == "json":
            dumped = msgspec.to_builtins(self)
        else:
            dumped = msgspec.to_builtins(self, builtin_types=_KEPT_AS_OBJECTS)
        return _without_none(dumped) if exclude_none else dumped

    def model_dump_json(self, *, indent: int | None = None, exclude_none: bool = False) -> str:
        """The record as JSON: one line, or ``indent`` spaces per level."""
        if indent is None and not exclude_none:
            return msgspec.json.encode(self).decode("utf-8")
        return json.dumps(self.model_dump(mode="json", exclude_none=exclude_none), indent=indent, ensure_ascii=False)

    def model_copy(self: R, *, update: dict[str, Any] | None = None) -> R:
        """A shallow copy, with ``update``'s fields changed (their types are not checked, as in
        pydantic; a record's own ``__post_init__`` check runs)."""
        return msgspec.structs.replace(self, **(update or {}))

    @classmethod
    def model_validate(cls: type[R], data: Any) -> R:
        """A record from a dict (as read back from JSON or the store), its fields checked;
        ``ValueError`` (``msgspec.ValidationError``) naming the field that is wrong."""
        if isinstance(data, cls):
            return data
        return msgspec.convert(data, cls, strict=False)

    @classmethod
    def model_validate_json(cls: type[R], text: str | bytes) -> R:
        """A record from JSON text, its fields checked (``ValueError`` if one is wrong)."""
        return msgspec.json.decode(text, type=cls, strict=False)


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_none(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_none(item) for item in value]
    return value
