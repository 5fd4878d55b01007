"""Reading ``config.yaml``: the file (``$HERMES_HOME/config.yaml`` or ``--config``), its YAML,
and the checked :class:`~hermes_tui.config.schema.Config` with its notices.

A missing file gives the defaults; any other problem is a :class:`ConfigError` of one line
naming the file, and for a wrong value the key path, the value and what is allowed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hermes_tui.base.paths import config_path
from hermes_tui.base.safe_yaml import load_yaml
from hermes_tui.config.schema import MODE_RENAMED, Config
from hermes_tui.config.validate import ConfigError, value_kind

CONFIG_MAX_BYTES = 8 << 20
"""A config.yaml bigger than this is refused (a real one is a few KiB): never read without end."""


def load_config(path: str | Path | None = None) -> Config:
    """Read ``config.yaml`` (default ``$HERMES_HOME/config.yaml``) into a :class:`Config`.

    A missing file gives the defaults. Raises :class:`ConfigError` with a one-line message
    for unreadable files (a FIFO, a device or a file over ``CONFIG_MAX_BYTES`` included: they
    are refused, never waited on or read without end), YAML syntax errors and invalid values.
    """
    from hermes_tui.base.fsutil import FileRefused, read_capped  # here: only a file to read needs it

    file = Path(path) if path is not None else config_path()
    try:
        text = read_capped(file, CONFIG_MAX_BYTES, what="allowed for a config file").decode("utf-8")
    except FileNotFoundError:
        if path is not None:
            raise ConfigError(f"config file not found: {file}") from None
        return Config()
    except FileRefused as exc:
        raise ConfigError(f"config file {file} cannot be used: {exc.strerror}; "
                          "it must be a regular YAML file") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {file} is not UTF-8 text (byte {exc.start}); "
                          "save it as UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {file}: {exc.strerror or exc}") from None
    return parse_config(text, source=file)


def parse_config(text: str, source: Path | None = None) -> Config:
    """Validate YAML text as a :class:`Config`; errors name ``source`` and the key path."""
    return config_from_mapping(config_mapping(text, source), source)


def config_mapping(text: str, source: Path | None = None) -> dict[Any, Any]:
    """The YAML ``text`` as a mapping; :class:`ConfigError` (naming the line) when it is not one."""
    import yaml

    where = str(source) if source else "config"
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{where}: invalid YAML{at}: {problem}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: the top level must be a mapping of keys, got {value_kind(data)}")
    return data


def config_from_mapping(data: dict[Any, Any], source: Path | None = None) -> Config:
    """``data`` (config.yaml as YAML gives it) checked as a :class:`Config`, with its notices;
    :class:`ConfigError` names every wrong value."""
    where = str(source) if source else "config"
    raw = data
    data = {k: v for k, v in data.items() if k not in ("notices", "ignored_keys")}  # ours, not the file's
    agent = data.get("agent")
    if data.get("max_turns") is not None and (agent is None or isinstance(agent, dict)) \
            and "max_turns" not in (agent or {}):
        data["agent"] = {**(agent or {}), "max_turns": data["max_turns"]}  # Hermes Agent's older place for it
    try:
        config = Config.read(data)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    config.source = source
    from hermes_tui.config.notes import review  # which imports nothing of this module

    config.notices, config.ignored_keys = review(raw, config, MODE_RENAMED)
    return config
