"""What to tell the user about a ``config.yaml`` that loaded: notices, and the keys left unused.

The file is Hermes Agent's; hermes-tui reads the part it has features for. :func:`review`
compares the raw YAML with the parsed :class:`~hermes_tui.config.Config` and returns:

* ``notices`` — one line each, shown once at start (the app's conversation, ``exec``'s stderr,
  ``doctor``): a renamed ``approvals.mode``; a key under one of our sections that neither
  hermes-tui nor Hermes Agent knows (a typo, with a "did you mean" when one is close); an
  ``agent.max_turns`` that is not a limit; and a ``terminal.backend`` other than ``local``,
  which refuses every command and script (:func:`backend_refusal`).
* ``ignored`` — dotted paths of Hermes Agent keys for features hermes-tui does not have
  (``memory``, ``display``, ``terminal.docker_image``, ``agent.reasoning_effort``...): quiet,
  listed by ``hermes-tui doctor --verbose``.

Pure: no I/O, no Textual. Key names come from :mod:`hermes_tui.config.hermes_keys`. It does not import
:mod:`hermes_tui.config` (which calls it): the models are read off the config it is given.
"""

from __future__ import annotations

import difflib
import re
import reprlib
import typing
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from hermes_tui.config import hermes_keys as hermes
_SIMPLE_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,39}")


def _short(value: Any, limit: int) -> str:
    """A bounded repr (reprlib: a YAML alias can make a list whose whole repr never ends)."""
    return reprlib.repr(str(value) if isinstance(value, str) else value)[:limit]


def backend_refusal(terminal: Any) -> str | None:
    """The line that refuses every command and script when ``terminal.backend`` is not
    ``local`` (None when it is): hermes-tui never runs on this machine what was meant for a
    sandbox or another machine. Also the line of a ``config.yaml`` whose sections that decide
    what may run could not be read at the app's start (``terminal.refused``, set by
    :mod:`hermes_tui.config.start`): nothing runs on a guess of what the file meant."""
    refused = getattr(terminal, "refused", None)
    if isinstance(refused, str):
        return refused
    backend = getattr(terminal, "backend", "local")
    if backend in ("local", "docker", "jupyter"):
        return None
    if backend == "ssh":
        if not str(getattr(terminal, "ssh_host", "") or "").strip():
            return "terminal.backend is ssh but terminal.ssh_host is not set: name the host scripts and commands run on"
        return None
    name = backend if isinstance(backend, str) and _SIMPLE_NAME.fullmatch(backend) else _short(backend, 40)
    return (f"terminal.backend is {name}: hermes-tui runs kernels and commands on local, docker, ssh or jupyter only "
            "(it cannot reach the others from here); set terminal.backend to one of those")


def review(raw: Mapping[Any, Any], config: msgspec.Struct, mode_renamed: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """``(notices, ignored)`` for the YAML mapping ``raw`` that parsed into ``config`` (a
    :class:`~hermes_tui.config.Config`); ``mode_renamed``: ``approvals.mode`` values read as
    another, with the notice each gives (:data:`hermes_tui.config.MODE_RENAMED`)."""
    notices: list[str] = []
    ignored: list[str] = []
    _renamed_mode(raw, mode_renamed, notices)
    _top_level(raw, notices, ignored)
    for section in ("code_execution", "terminal", "approvals", "web", "cache", "model", "agent"):
        model = getattr(config, section, None)
        if isinstance(model, msgspec.Struct) and isinstance(raw.get(section), dict):
            _keys(section, section, getattr(model, "extra", {}), _fields(model), notices, ignored)
    providers = getattr(config, "providers", None)
    if isinstance(providers, dict):
        for name, entry in providers.items():
            if isinstance(entry, msgspec.Struct):
                _provider_entry(f"providers.{name}", entry, notices, ignored)
    _fallbacks(raw, _entry_fields(config, "fallback_providers"), notices, ignored)
    _turn_limit(raw, config, notices, ignored)
    for pattern in getattr(getattr(config, "security", None), "protected_instruction_extra_patterns", []):
        if "/" in str(pattern):
            notices.append(f"security.protected_instruction_extra_patterns {_short(pattern, 80)} never matches: a "
                           f"pattern is matched against a file's name, not its path; write "
                           f"{_short(str(pattern).rstrip('/').rsplit('/', 1)[-1], 80)}")
    refusal = backend_refusal(getattr(config, "terminal", None))
    if refusal:
        notices.append(refusal)
    return notices, ignored


def _renamed_mode(raw: Mapping[Any, Any], renamed: Mapping[str, str], notices: list[str]) -> None:
    approvals = raw.get("approvals")
    mode = approvals.get("mode") if isinstance(approvals, dict) else None
    if isinstance(mode, str) and mode.strip().lower() in renamed:
        notices.append(renamed[mode.strip().lower()])


def _top_level(raw: Mapping[Any, Any], notices: list[str], ignored: list[str]) -> None:
    for key in raw:
        name = str(key)
        if name in hermes.OUR_SECTIONS or name in hermes.READ_AS_OURS:
            continue
        if name not in hermes.TOP_LEVEL:
            close = difflib.get_close_matches(name, hermes.OUR_SECTIONS, n=1, cutoff=0.8)
            if close:
                notices.append(f"unknown config section {name} (ignored): did you mean {close[0]}?")
                continue
        # A Hermes Agent feature hermes-tui does not have (or one newer than our catalogue).
        ignored.append(name)


def _keys(section: str, path: str, extra: Mapping[Any, Any], ours: Iterable[str], notices: list[str],
          ignored: list[str]) -> None:
    """Sort the keys of one section (or one entry) that hermes-tui did not read."""
    for key in extra:
        name = str(key)
        if hermes.is_hermes_key(section, name):
            ignored.append(f"{path}.{name}")
            continue
        known = [*ours, *sorted(hermes.IN_SECTION.get(section, ()))]
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.7)
        hint = f": did you mean {close[0]}?" if close else ""
        notices.append(f"unknown config key {path}.{name} (ignored){hint}")


def _provider_entry(path: str, entry: msgspec.Struct, notices: list[str], ignored: list[str]) -> None:
    fields = _fields(entry)
    extra = dict(getattr(entry, "extra", {}))
    for spelling, target in hermes.CAMEL_CASE.items():
        if spelling in extra and target in fields:
            del extra[spelling]
            notices.append(f"{path}.{spelling} is not read by hermes-tui (Hermes Agent's camelCase spelling): "
                           f"write {target}")
    _keys("providers", path, extra, fields, notices, ignored)


def _fallbacks(raw: Mapping[Any, Any], fields: set[str], notices: list[str], ignored: list[str]) -> None:
    """Entries of ``fallback_providers`` (and the older ``fallback_model``), from the raw YAML:
    the parsed list drops incomplete entries and repeats, so its indexes are not the file's."""
    ours = fields | {"default"}  # read as model
    for section in ("fallback_providers", "fallback_model"):
        value = raw.get(section)
        entries = [(f"{section}[{i}]", e) for i, e in enumerate(value)] if isinstance(value, list) \
            else [(section, value)] if isinstance(value, dict) else []
        for path, entry in entries:
            if isinstance(entry, dict):
                extra = {k: v for k, v in entry.items() if str(k) not in ours}
                _keys("fallback_providers", path, extra, sorted(ours), notices, ignored)


def _turn_limit(raw: Mapping[Any, Any], config: Any, notices: list[str], ignored: list[str]) -> None:
    agent = raw.get("agent")
    if not isinstance(agent, dict):
        agent = {}
    value = agent.get("max_turns", raw.get("max_turns"))
    if value is None:
        return
    where = "agent.max_turns" if "max_turns" in agent else "max_turns"
    if agent.get("max_steps") is not None:
        ignored.append(where)  # agent.max_steps, ours, wins
    elif hermes.turn_limit(value) is None:
        notices.append(f"{where} = {_short(value, 60)} is not a number of model calls (nor unlimited): "
                       f"the default agent.max_steps {config.agent.max_steps} is used")


def _fields(section: msgspec.Struct) -> list[str]:
    return list(section.__struct_fields__)


def _entry_fields(config: msgspec.Struct, name: str) -> set[str]:
    """The fields of one entry of the list field ``name`` (``list[FallbackConfig]``)."""
    field = next((field for field in msgspec.structs.fields(type(config)) if field.name == name), None)
    for arg in typing.get_args(field.type) if field is not None else ():
        if isinstance(arg, type) and issubclass(arg, msgspec.Struct):
            return set(arg.__struct_fields__)
    return set()
