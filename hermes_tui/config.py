"""Pydantic models of ``config.yaml`` and loading with one-line errors.

The file is shared with Hermes Agent, so unknown keys are kept (``extra="allow"``) and
ignored, and hermes-tui never rewrites it. A wrong value raises :class:`ConfigError` whose
message is a single line naming the file, the key path, the bad value and what is allowed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from hermes_tui.paths import config_path
from hermes_tui.units import parse_duration, parse_size

Seconds = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class ConfigError(Exception):
    """A config file that cannot be used; ``str(err)`` is one line fit for a user."""


class _Section(BaseModel):
    """A config section: unknown keys are kept and ignored; an empty section means defaults."""

    model_config = ConfigDict(extra="allow", validate_default=True)

    @model_validator(mode="before")
    @classmethod
    def _none_is_empty(cls, data: Any) -> Any:
        # `terminal:` with nothing under it loads as None in YAML: treat it as all defaults.
        return {} if data is None else data


class CodeExecutionConfig(_Section):
    """``code_execution``: how scripts run in session kernels."""

    mode: Literal["project", "strict"] = "project"
    """`project`: the session's working dir and the active venv/conda Python; `strict`: a temp dir and the host's Python."""
    timeout: Seconds = 300
    """Seconds one execution may run before its kernel is killed."""
    max_tool_calls: Annotated[int, Field(ge=0)] = 50
    """Tool calls allowed per execution."""
    kernel_idle_timeout: Seconds = 1800
    """Idle seconds before a kernel is reaped."""
    max_session_kernels: Annotated[int, Field(ge=1)] = 4
    """Live top-level kernels; one more evicts the least recently used idle one."""
    rpc_transport: Literal["socket", "file"] = "socket"
    """How scripts reach the tools: a Unix socket, or request/response files (remote backends)."""


class TerminalConfig(_Section):
    """``terminal``: the terminal() tool."""

    env_passthrough: list[str] = Field(default_factory=list)
    """Exact variable names let into children on top of the safe defaults."""
    timeout: Seconds = 180
    """Seconds for one terminal() command."""


class ApprovalsConfig(_Section):
    """``approvals``: who must allow terminal commands and scripts.

    ``mode`` has Hermes Agent's meanings: ``manual`` asks for flagged commands, ``smart`` is read
    as ``manual`` (model-judged approvals are not built here), ``off`` asks for nothing. Ours in
    addition: ``strict`` asks for every terminal() call no rule allows. ``dangerous`` (our
    earlier name for ``manual``) still reads. The hard floor refuses in every mode.
    """

    mode: Literal["strict", "manual", "off"] = "manual"
    timeout: Seconds = 60
    """Seconds an approval waits; no answer is a deny."""

    @field_validator("mode", mode="before")
    @classmethod
    def _hermes_names(cls, value: Any) -> Any:
        # YAML 1.1 reads a bare `mode: off` as the boolean false.
        if value is False:
            return "off"
        if isinstance(value, str) and value.strip().lower() in MODE_RENAMED:
            return "manual"  # the notice saying so comes from config_notes
        return value.strip().lower() if isinstance(value, str) else value


MODE_RENAMED = {
    "smart": "approvals.mode smart is read as manual: flagged commands ask; model-judged approvals are not "
             "built in hermes-tui",
    "dangerous": "approvals.mode dangerous is now called manual (flagged commands ask); it reads the same",
}
"""``approvals.mode`` values read as ``manual``, with the one-line notice each gives."""


class WebConfig(_Section):
    """``web``: backends for web_search and web_extract (both off until configured)."""

    search_backend: Literal["none", "searxng"] = "none"
    """`searxng`: a SearXNG instance's JSON API at `searxng_url`."""
    searxng_url: str | None = None
    extract_backend: Literal["none", "http"] = "none"
    """`http`: fetch pages directly and convert HTML to Markdown."""
    timeout: Seconds = 20
    """Seconds per web request."""
    max_chars: Annotated[int, Field(ge=100)] = 20_000
    """Characters of one page web_extract returns unless the call asks otherwise."""

    @model_validator(mode="before")
    @classmethod
    def _null_backends(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = {k: ("none" if k.endswith("_backend") and v is None else v) for k, v in data.items()}
        return data


class CacheConfig(_Section):
    """``cache``: retention of ``$HERMES_HOME/cache/exec`` (used by ``hermes-tui cache prune``)."""

    retention: str | None = None
    """Prune entries older than this (e.g. ``14d``); none by default."""
    max_size: str | None = None
    """Prune the oldest entries until the folder fits (e.g. ``2G``); none by default."""

    @field_validator("retention")
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        if value is not None:
            parse_duration(value)
        return value

    @field_validator("max_size")
    @classmethod
    def _size(cls, value: str | None) -> str | None:
        if value is not None:
            parse_size(value)
        return value


class ModelConfig(_Section):
    """``model``: the conversation model (Hermes Agent's keys)."""

    provider: str | None = None
    """openrouter, nous, openai, anthropic, ollama, vllm, llamacpp, lmstudio, custom, or a
    name under ``providers:``."""
    default: str | None = None
    """The model name sent to the provider."""
    base_url: str | None = None
    api_key: str | None = None
    """A key written in the file (prefer ``providers.<name>.key_env`` and ``.env``)."""
    tool_format: Literal["native", "hermes"] | None = None
    """``native``: the API's structured tool calls; ``hermes``: ``<tool_call>`` blocks in the text."""
    max_retries: Annotated[int, Field(ge=0, le=10)] = 2
    """Retries of a request that failed on the network, with 429 or 5xx (the SDK's backoff)."""

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, data: Any) -> Any:
        # Older Hermes configs say `model: some/model-name`.
        return {"default": data} if isinstance(data, str) else data


class ProviderConfig(_Section):
    """``providers.<name>``: where a provider's key lives and how to reach it."""

    key_env: str | None = None
    """The environment variable (or ``$HERMES_HOME/.env`` entry) holding the key."""
    base_url: str | None = None
    tool_format: Literal["native", "hermes"] | None = None


class AgentConfig(_Section):
    """``agent``: the conversation loop."""

    max_steps: Annotated[int, Field(ge=1)] = 30
    """Model calls one turn may make before it is stopped."""
    max_invalid_tool_calls: Annotated[int, Field(ge=0)] = 3
    """Malformed tool calls in a row sent back to the model before the turn is stopped."""
    system_prompt: str | None = None
    """Replaces the built-in system prompt."""
    max_context_chars: Annotated[int, Field(ge=1000)] = 400_000
    """Characters of conversation sent to the model; the oldest whole turns are left out beyond it."""


class Config(_Section):
    """The whole of ``config.yaml`` as hermes-tui understands it."""

    code_execution: CodeExecutionConfig = Field(default_factory=CodeExecutionConfig)
    terminal: TerminalConfig = Field(default_factory=TerminalConfig)
    approvals: ApprovalsConfig = Field(default_factory=ApprovalsConfig)
    command_allowlist: list[str] = Field(default_factory=list)
    web: WebConfig = Field(default_factory=WebConfig)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    model: ModelConfig = Field(default_factory=ModelConfig)
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    source: Path | None = Field(default=None, exclude=True)
    """The file this was read from (None for built-in defaults)."""

    @field_validator("command_allowlist", mode="before")
    @classmethod
    def _none_is_empty_list(cls, value: Any) -> Any:
        return [] if value is None else value

    @field_validator("providers", mode="before")
    @classmethod
    def _none_is_empty_dict(cls, value: Any) -> Any:
        return {} if value is None else value


CONFIG_MAX_BYTES = 8 << 20
"""A config.yaml bigger than this is refused (a real one is a few KiB): never read without end."""


def yaml_loader() -> type:
    """PyYAML's C safe loader when libyaml is there (about 10x faster on a big file), else the
    pure-Python one. Both build only plain data: no tags that run code."""
    return getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader


def load_yaml(text: str) -> Any:
    """Parse YAML ``text`` with :func:`yaml_loader` (plain data only). Raises ``yaml.YAMLError``."""
    return yaml.load(text, Loader=yaml_loader())  # noqa: S506 - a safe loader


def load_config(path: str | Path | None = None) -> Config:
    """Read ``config.yaml`` (default ``$HERMES_HOME/config.yaml``) into a :class:`Config`.

    A missing file gives the defaults. Raises :class:`ConfigError` with a one-line message
    for unreadable files (a FIFO, a device or a file over ``CONFIG_MAX_BYTES`` included: they
    are refused, never waited on or read without end), YAML syntax errors and invalid values.
    """
    # Imported here: the runtime package imports this module, so a top-level import would be a cycle.
    from hermes_tui.runtime.fsutil import FileRefused, read_capped

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
        raise ConfigError(f"{where}: the top level must be a mapping of keys, got {_kind(data)}")
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{where}: " + "; ".join(_describe(e) for e in exc.errors())) from None
    config.source = source
    return config


def _describe(error: Any) -> str:
    """One pydantic error as 'key.path = value is not allowed: must be ...'."""
    key = ".".join(str(part) for part in error["loc"]) or "(top level)"
    message = str(error["msg"])
    for prefix in ("Input should be ", "Value should be ", "Value error, "):
        if message.startswith(prefix):
            message = "must be " + message[len(prefix):]
            break
    if error["type"] == "model_type" or error["type"] == "dict_type":
        message = "must be a mapping of keys"
    elif error["type"] == "list_type":
        message = "must be a list"
    value = error.get("input")
    shown = repr(value) if not isinstance(value, (dict, list)) else _kind(value)
    return f"{key} = {shown} is not allowed: {message}"


def _kind(value: Any) -> str:
    names: dict[type, str] = {dict: "a mapping", list: "a list", str: "a string"}
    return names.get(type(value), type(value).__name__)
