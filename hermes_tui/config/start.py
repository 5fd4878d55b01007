"""The app's start with a ``config.yaml`` that does not load (issue 31).

Any script the user allowed to write ``$HERMES_HOME/config.yaml`` (a ``write_file`` the user
approved, a kernel with ``sandbox: off``) could break it — bad YAML, or one bad value — and the
next ``hermes-tui`` refused to start at all. Now the full-screen app opens anyway, and refuses
only what the broken part decides, never falling back to a weaker setting than the file asked
for:

* **a section that decides what may run** (``code_execution``, ``terminal``, ``approvals``,
  ``command_allowlist``) cannot be read: every script, command and file tool is refused (as a
  ``terminal.backend`` other than ``local`` refuses them: :func:`~hermes_tui.config.notes.backend_refusal`),
  because no default is safe in its place: approvals would fall to ``manual`` where the file
  said ``strict``, the deny list and ``deny_read`` would be empty, a sandbox tier could be lost;
* **a section of the model** (``model``, ``providers``, ``custom_providers``,
  ``fallback_providers``, ``fallback_model``, ``agent`` and the root-level ``provider``,
  ``base_url``, ``api_base``, ``context_length``, ``max_turns``) cannot be read: there is no
  model (its budgets, its endpoint and where its key may go are unknown), and the app says why;
* **any other section** (``web``, ``cache``, ``ui``, ``store``...) reads as its defaults:
  ``web`` defaults to no backend, ``cache`` to no pruning, ``store`` to the local SQLite store;
* **the file as a whole** cannot be read (bad YAML, not a mapping, not UTF-8, a FIFO, too big):
  all of the above at once.

Each broken part is one line at the top of the conversation (the file, the line, the key, what
is wrong), ending with "hermes-tui doctor" (which checks the file); fixing the file and starting
again lifts the refusals. Every other command (``exec``, ``run``, ``cache``...) still stops
with the one-line error: it has no screen to say it on while it works.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hermes_tui.base.paths import config_path
from hermes_tui.config.load import CONFIG_MAX_BYTES, config_from_mapping, config_mapping, load_config
from hermes_tui.config.schema import Config
from hermes_tui.config.validate import ConfigError

RUNNING = ("code_execution", "terminal", "approvals", "command_allowlist")
"""Sections that decide what may run: broken, nothing runs."""
MODEL = ("model", "providers", "custom_providers", "fallback_providers", "fallback_model", "agent", "provider",
         "base_url", "api_base", "context_length", "max_turns")
"""Keys of the model and its limits: broken, there is no model."""
DOCTOR = "run `hermes-tui doctor` to check the file"


def load_config_for_app(path: str | Path | None = None) -> Config:
    """``config.yaml`` for the full-screen app: :func:`~hermes_tui.config.load_config`, or, when
    that fails, what of the file can be read with the broken parts refused (module docstring).
    The config returned then carries ``broken`` (key → problem), the refusals
    (``terminal.refused``: the line every script, command and file tool is refused with;
    ``model_refused``: why there is no model) and a notice per problem."""
    try:
        return load_config(path)
    except ConfigError as exc:
        whole = str(exc)
    file = Path(path) if path is not None else config_path()
    if path is not None and not file.exists() and not file.is_symlink():
        raise ConfigError(whole)  # `--config` naming no file: a typo on the command line, not a broken file
    try:
        from hermes_tui.base.fsutil import read_capped

        text = read_capped(file, CONFIG_MAX_BYTES, what="allowed for a config file").decode("utf-8")
        data = config_mapping(text, file)
    except (ConfigError, OSError, UnicodeDecodeError):  # nothing in it can be trusted
        return _refused(Config(), {"*": whole}, file, whole)
    broken: dict[str, str] = {}
    for key, value in data.items():
        try:
            config_from_mapping({key: value}, file)
        except ConfigError as exc:
            broken[str(key)] = _located(str(exc), text, key)
    try:
        config = config_from_mapping({k: v for k, v in data.items() if str(k) not in broken}, file)
    except ConfigError:  # keys wrong only together (a root-level key and its section)
        return _refused(Config(), {"*": whole}, file, whole)
    return _refused(config, broken, file, whole)


def _refused(config: Config, broken: dict[str, str], file: Path, whole: str) -> Config:
    """``config`` with the refusals the ``broken`` keys call for, and their notices."""
    config.source = config.source or file
    config.broken = broken  # type: ignore[attr-defined]
    everything = "*" in broken
    running = [key for key in broken if key in RUNNING]
    model = [key for key in broken if key in MODEL]
    other = [key for key in broken if key not in RUNNING and key not in MODEL and key != "*"]
    notices = []
    if everything:
        notices.append(f"config error: {whole}; every script, command and file tool is refused and there is no "
                       f"model until it is fixed; {DOCTOR}")
    else:
        notices += [f"config error: {broken[key]}; every script, command and file tool is refused until it is fixed; "
                    f"{DOCTOR}" for key in running]
        notices += [f"config error: {broken[key]}; there is no model until it is fixed; {DOCTOR}" for key in model]
        notices += [f"config error: {broken[key]}; {key} reads as its defaults until it is fixed; {DOCTOR}"
                    for key in other]
    if everything or running:
        first = whole if everything else broken[running[0]]
        config.terminal.refused = (f"nothing runs until config.yaml is fixed: {first}; {DOCTOR}, then start "  # type: ignore[attr-defined]
                                   "hermes-tui again (the file is read at start)")
    if everything or model:
        key = "config.yaml" if everything else ", ".join(model) + " in config.yaml"
        config.model_refused = f"{key} cannot be read (the config error above says why)"  # type: ignore[attr-defined]
    config.notices = [*notices, *config.notices]
    return config


def _located(problem: str, text: str, key: Any) -> str:
    """``problem`` with the line of the key it is about (``FILE: KEY.PATH = ...`` → ``FILE line N:
    KEY.PATH = ...``), when the key can be found in ``text``."""
    where, sep, rest = problem.partition(": ")
    path = rest.split(" = ", 1)[0].split(" is ", 1)[0].split(".") if sep else [str(key)]
    line = _line_of(text, path) or _line_of(text, [str(key)])
    return f"{where} line {line}: {rest}" if sep and line else problem


def _line_of(text: str, path: list[str]) -> int | None:
    """The line (from 1) of the deepest key of ``path`` that is in ``text``'s mappings."""
    import yaml

    from hermes_tui.base.safe_yaml import yaml_loader

    try:
        node = yaml.compose(text, Loader=yaml_loader())
    except yaml.YAMLError:
        return None
    line = None
    for part in path:
        if not isinstance(node, yaml.MappingNode):
            break
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == part:
                line, node = key.start_mark.line + 1, value
                break
        else:
            break
    return line
