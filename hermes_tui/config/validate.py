"""Checking a section of ``config.yaml``, and the one-line errors that name what is wrong.

A section is a msgspec struct of :mod:`hermes_tui.config.schema` with its reading hooks
(``_before``, ``_field_before``, ``_problems``). :func:`read_section` reads it and names every
wrong value at once, each as ``key.path = value is not allowed: must be ...`` (a secret never
quoted, a store URL's password never shown); :class:`ConfigError` carries them as one line.
This module imports nothing of the schema: a section is known by being a msgspec struct.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import msgspec


class ConfigError(Exception):
    """A config file that cannot be used; ``str(err)`` is one line fit for a user."""


def _none_is_empty(data: Any) -> Any:
    # `terminal:` with nothing under it loads as None in YAML: treat it as all defaults.
    return {} if data is None else data

def read_section(cls: type[Any], data: Any) -> Any:
    """Check ``data`` (a section as YAML gives it) as the section ``cls``. Raises
    :class:`ConfigError` with every problem found, each as ``key = value is not allowed: must be ...``."""
    problems: list[str] = []
    section = _read(cls, data, (), problems)
    if problems:
        raise ConfigError("; ".join(problems))
    return section


@functools.cache
def _nested(cls: type[Any]) -> list[tuple[str, str, type]]:
    """``(field, how, section class)`` for each field of ``cls`` holding sections: ``one`` (a
    section), ``optional`` (a section or None), ``map`` (name → section) or ``list``."""
    return [(field.name, kind, inner) for field in msgspec.structs.fields(cls)
            for kind, inner in [_shape(field.type)] if inner is not None]


def _shape(annotation: Any) -> tuple[str, type | None]:
    origin, args = get_origin(annotation), get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, msgspec.Struct):
        return "one", annotation
    if origin is dict and len(args) == 2 and isinstance(args[1], type) and issubclass(args[1], msgspec.Struct):
        return "map", args[1]
    if origin is list and args and isinstance(args[0], type) and issubclass(args[0], msgspec.Struct):
        return "list", args[0]
    if origin in (Union, type(int | None)):
        members = [arg for arg in args if arg is not type(None)]
        if len(members) == 1 and _shape(members[0])[0] == "one":
            return "optional", _shape(members[0])[1]
    return "", None


def _read(cls: type[Any], data: Any, path: tuple[Any, ...], problems: list[str]) -> Any:
    """``data`` read as ``cls``; what is wrong is added to ``problems`` (None is returned then)."""
    data = cls._before(_none_is_empty(data))
    if not isinstance(data, dict):
        problems.append(_problem(path, data, "must be a mapping of keys"))
        return None
    data = dict(data)
    for name, read in cls._field_before.items():
        if name in data:
            data[name] = read(data[name])
    fields = cls.__struct_fields__
    start = len(problems)
    for key, value in data.items():
        if not isinstance(key, str):  # YAML allows `1: 2`; a key here is a name
            problems.append(_problem((*path, key), value, "must be under a name (text)"))
    values = {key: value for key, value in data.items() if key in fields}
    # NaN would only fail a bound ("greater than 0"): say what is wrong
    for name in _floats(cls):  # type: ignore[arg-type]  # a class is hashable: mypy checks type[Any] against object.__hash__ unbound
        if name in values and not _finite(values[name]):
            problems.append(_problem((*path, name), values.pop(name), "must be a finite number"))
    sections: dict[str, Any] = {}
    failed = len(problems) > start
    for name, kind, inner in _nested(cls):  # type: ignore[arg-type]  # a class is hashable: mypy checks type[Any] against object.__hash__ unbound
        if name not in values:
            continue
        value, where = values.pop(name), (*path, name)
        before = len(problems)
        if kind == "optional" and value is None:
            sections[name] = None
        elif kind in ("one", "optional"):
            sections[name] = _read(inner, value, where, problems)
        elif kind == "map":
            if not isinstance(value, dict):
                problems.append(_problem(where, value, "must be a mapping of keys"))
            else:
                sections[name] = {}
                for key, entry in value.items():
                    if not isinstance(key, str):
                        problems.append(_problem((*where, key), entry, "must be under a name (text)"))
                        continue
                    sections[name][key] = _read(inner, entry, (*where, key), problems)
        elif not isinstance(value, list):
            problems.append(_problem(where, value, "must be a list"))
        else:
            sections[name] = [_read(inner, entry, (*where, index), problems) for index, entry in enumerate(value)]
        failed = failed or len(problems) > before
    # msgspec stops at a struct's first wrong value: drop each one named and check again, so
    # that every wrong value of the section is named at once.
    while True:
        try:
            section = msgspec.convert(values, cls, strict=False)
            break
        except msgspec.ValidationError as exc:
            problem, field = _from_msgspec(cls, values, path, str(exc))
            problems.append(problem)
            if field not in values:
                return None
            del values[field]
    if failed or len(problems) > start:
        return None
    for name, value in sections.items():
        setattr(section, name, value)
    section.extra = {key: value for key, value in data.items() if key not in fields}
    found = section._problems()
    for name, allowed in found:
        problems.append(_problem((*path, name), getattr(section, name), "must be " + allowed))
    return None if found else section


def _finite(value: Any) -> bool:
    """False for NaN and infinities, also written as text (``nan``, ``1e400``)."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return True  # not a number at all: the type check says so
    return not isinstance(value, float) or math.isfinite(value)


@functools.cache
def _floats(cls: type[Any]) -> list[str]:
    """The fields of ``cls`` that hold a number of seconds, dollars...: never infinite nor NaN."""
    found = []
    for field in msgspec.structs.fields(cls):
        kinds = get_args(field.type) if get_origin(field.type) in (Union, type(int | None)) else (field.type,)
        if any(kind is float or (get_origin(kind) is Annotated and get_args(kind)[0] is float) for kind in kinds):
            found.append(field.name)
    return found


_BOUND = re.compile(r"Expected `\w+` (>=|>|<=|<) (\S+)")
_TYPE = re.compile(r"Expected `([^`]+)`, got `\w+`")
_MISSING = re.compile(r"Object missing required field `([^`]+)`")
_BOUND_WORDS = {">=": "greater than or equal to", ">": "greater than", "<=": "less than or equal to", "<": "less than"}
_TYPE_WORDS = {"int": "a whole number", "float": "a number", "bool": "true or false", "str": "text",
               "array": "a list", "object": "a mapping of keys"}


def _from_msgspec(cls: type[Any], values: dict[str, Any], path: tuple[Any, ...],
                  message: str) -> tuple[str, Any]:
    """msgspec's ``Expected `int` >= 1 - at `$.n``` as ``path.n = 0 is not allowed: must be ...``,
    and the field it is about (None when it names none)."""
    text, _, at = message.rpartition(" - at `")
    text = text or message
    steps: list[Any] = [int(part) if part.isdigit() else part
                        for part in re.findall(r"\.(\w+)|\[(\d+)\]", at.rstrip("`")) for part in part if part]
    if (missing := _MISSING.match(text)) is not None:
        return f"{'.'.join(str(p) for p in (*path, *steps, missing.group(1)))} is missing: it is required", None
    value: Any = values
    for step in steps:
        value = value[step] if isinstance(value, (dict, list)) else None
    options = _literal(cls, steps[0]) if steps else None  # type: ignore[arg-type]  # a class is hashable: mypy checks type[Any] against object.__hash__ unbound
    if options and len(steps) == 1:
        allowed = "must be " + (" or ".join([", ".join(map(repr, options[:-1])), repr(options[-1])])
                                if len(options) > 1 else repr(options[0]))
    elif (bound := _BOUND.match(text)) is not None:
        number = bound.group(2)
        number = number[:-2] if number.endswith(".0") else number
        allowed = f"must be {_BOUND_WORDS[bound.group(1)]} {number}"
    elif (expected := _TYPE.match(text)) is not None:
        kinds = [kind for kind in expected.group(1).split(" | ") if kind != "null"]
        allowed = "must be " + " or ".join(_TYPE_WORDS.get(kind, kind) for kind in kinds)
    elif text.startswith("Number out of range"):
        allowed = "must be a finite number"
    else:
        allowed = text
    return _problem((*path, *steps), value, allowed), steps[0] if steps else None


@functools.cache
def _literal(cls: type[Any], name: Any) -> list[Any] | None:
    for field in msgspec.structs.fields(cls):
        if field.name == name:
            annotation = field.type
            if get_origin(annotation) in (Union, type(int | None)):
                annotation = next((arg for arg in get_args(annotation) if arg is not type(None)), annotation)
            return list(get_args(annotation)) if get_origin(annotation) is Literal else None
    return None
def _problem(path: tuple[Any, ...], value: Any, allowed: str) -> str:
    """One problem as ``key.path = value is not allowed: must be ...`` (secrets not quoted)."""
    key = ".".join(str(part) for part in path) or "(top level)"
    shown = repr(value) if not isinstance(value, (dict, list)) else value_kind(value)
    if SECRET_KEYS & {str(part) for part in path}:
        shown = f"({value_kind(value)}, not shown)"  # a key or a header value, even a malformed one, stays unseen
    elif key == "store.url" and isinstance(value, str):  # a URL may carry the database's password
        from hermes_tui.base.text import redact_url

        shown = repr(redact_url(value))
    return f"{key} = {shown} is not allowed: {allowed}"


SECRET_KEYS = frozenset({"api_key", "api", "key_cmd", "default_headers", "extra_headers", "jupyter_auth_token",
                         "jupyter_auth_token_cmd"})
"""Config keys whose values are secrets: an error about them never quotes the value."""


def value_kind(value: Any) -> str:
    """What ``value`` is, in words for an error: ``a mapping``, ``a list``, ``a string``, ``int``..."""
    names: dict[type, str] = {dict: "a mapping", list: "a list", str: "a string"}
    return names.get(type(value), type(value).__name__)
