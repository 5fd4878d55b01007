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
    interrupt_grace: Seconds = 3
    """Seconds an interrupted script has to stop after SIGINT (its kernel and state stay); then it is killed."""
    max_tool_calls: Annotated[int, Field(ge=0)] = 50
    """Tool calls allowed per execution."""
    kernel_idle_timeout: Seconds = 1800
    """Idle seconds before a kernel is reaped."""
    max_session_kernels: Annotated[int, Field(ge=1)] = 4
    """Live top-level kernels; one more evicts the least recently used idle one."""
    rpc_transport: Literal["socket", "file"] = "socket"
    """How scripts reach the tools: a Unix socket, or request/response files (remote backends)."""

    @field_validator("max_session_kernels", mode="before")
    @classmethod
    def _at_least_one(cls, value: Any) -> Any:
        # Hermes Agent reads 0 and negative caps as 1 (not "unlimited", not "off").
        if isinstance(value, int) and not isinstance(value, bool) and value <= 0:
            return 1
        return value


class TerminalConfig(_Section):
    """``terminal``: the terminal() tool."""

    env_passthrough: list[str] = Field(default_factory=list)
    """Exact variable names let into children on top of the safe defaults."""
    timeout: Seconds = 180
    """Seconds for one terminal() command."""
    backend: str = "local"
    """Where Hermes Agent runs commands. hermes-tui runs them on this machine only: any other
    value (docker, ssh, modal, ...) refuses terminal() and scripts, never runs them here."""

    @field_validator("backend", mode="before")
    @classmethod
    def _backend_name(cls, value: Any) -> Any:
        if value is None:  # `backend:` with nothing after it: Hermes Agent's default
            return "local"
        return (value.strip().lower() or "local") if isinstance(value, str) else value


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
    deny: list[str] = Field(default_factory=list)
    """Hermes Agent's deny list: globs (case-insensitive) of commands refused in every mode,
    ``off`` included, matched against the whole command and each simple command in it."""

    @field_validator("deny", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        if value is None:
            return []
        return [value] if isinstance(value, str) else value

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


def _first_alias(data: Any, target: str, *aliases: str) -> Any:
    """Hermes Agent accepts several spellings of one key; the first present wins (``target``
    itself first) and the others are dropped."""
    if not isinstance(data, dict):
        return data
    data = dict(data)
    for alias in aliases:
        value = data.pop(alias, None)
        if data.get(target) is None and value is not None:
            data[target] = value
    return data


Headers = dict[str, str]


def _headers(value: Any) -> Any:
    # Hermes Agent stringifies header values and drops empty ones.
    if value is None:
        return {}
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items() if v is not None}
    return value


def _truthy(value: Any) -> Any:
    if isinstance(value, str) and value.strip().lower() in ("false", "0", "no", "off"):
        return False
    if isinstance(value, str) and value.strip().lower() in ("true", "1", "yes", "on"):
        return True
    return value


KeyCommand = str | list[str]


class PricingConfig(_Section):
    """``model.pricing`` (or a provider entry's ``pricing``): US dollars per million tokens,
    used instead of the price table's."""

    input_per_mtok: Annotated[float, Field(ge=0)]
    output_per_mtok: Annotated[float, Field(ge=0)]
    cache_read_per_mtok: Annotated[float, Field(ge=0)] | None = None
    """Cached input read (default: the input price)."""
    cache_write_per_mtok: Annotated[float, Field(ge=0)] | None = None
    """Input written to the cache (default: the input price)."""


class _Endpoint(_Section):
    """What the model section and a provider entry read alike: header maps (values as text,
    empty ones dropped) and yes/no words for booleans, as Hermes Agent reads them."""

    @field_validator("default_headers", "extra_headers", mode="before", check_fields=False)
    @classmethod
    def _read_headers(cls, value: Any) -> Any:
        return _headers(value)

    @field_validator("streaming", "enabled", mode="before", check_fields=False)
    @classmethod
    def _read_yes_no(cls, value: Any) -> Any:
        return _truthy(value)


class ModelConfig(_Endpoint):
    """``model``: the conversation model (Hermes Agent's keys)."""

    provider: str | None = None
    """A provider name (see docs/providers.md), ``auto``, ``custom``, or a name under ``providers:``."""
    default: str | None = None
    """The model name sent to the provider (``model.model`` and ``model.name`` are read as this)."""
    base_url: str | None = None
    """The endpoint (``api_base`` is read as this)."""
    api_key: str | None = Field(default=None, repr=False)
    """A key written in the file, or ``${VAR}`` (``api`` is read as this)."""
    key_env: str | None = None
    """The variable holding the key for this model (``api_key_env`` is read as this)."""
    api_mode: str | None = None
    """``chat_completions`` or ``anthropic_messages``; other Hermes modes are refused with one line."""
    tool_format: Literal["native", "hermes"] | None = None
    """``native``: the API's structured tool calls; ``hermes``: ``<tool_call>`` blocks in the text."""
    max_retries: Annotated[int, Field(ge=0, le=10)] = 2
    """Retries of a request that failed on the network, with 429 or 5xx (the SDK's backoff)."""
    context_length: Annotated[int, Field(gt=0)] | None = None
    """The model's context window in tokens (``context_window`` is read as this); default: the price table's."""
    pricing: PricingConfig | None = None
    """Prices to use instead of the price table's (a cost the provider reports still wins)."""
    streaming: bool = True
    """``false``: ask for whole replies instead of a stream."""
    default_headers: Headers = Field(default_factory=dict, repr=False)
    """Headers sent with every request (``extra_headers`` is merged in and wins). Secrets: never logged."""

    @model_validator(mode="before")
    @classmethod
    def _hermes_spellings(cls, data: Any) -> Any:
        if isinstance(data, str):  # older Hermes configs say `model: some/model-name`
            return {"default": data}
        data = _first_alias(data, "default", "model", "name")
        data = _first_alias(data, "base_url", "api_base")
        data = _first_alias(data, "api_key", "api")
        data = _first_alias(data, "key_env", "api_key_env")
        data = _first_alias(data, "context_length", "context_window")
        if isinstance(data, dict) and data.get("extra_headers") is not None:
            extra, default = _headers(data.pop("extra_headers")), _headers(data.get("default_headers"))
            # Both maps are merged (extra_headers wins); a value that is not a map is left for the
            # check to refuse.
            if isinstance(default, dict):
                data["default_headers"] = {**default, **extra} if isinstance(extra, dict) else extra
        return data



class ProviderConfig(_Endpoint):
    """``providers.<name>`` (and each ``custom_providers`` entry): one endpoint and its key."""

    name: str | None = None
    """A display name (defaults to the key under ``providers:``)."""
    base_url: str | None = None
    """The endpoint (``url`` and ``api`` are read as this)."""
    api_key: str | None = Field(default=None, repr=False)
    """The key itself or ``${VAR}``."""
    key_env: str | None = None
    """The environment variable (or ``$HERMES_HOME/.env`` entry) holding the key (``api_key_env`` is read as this)."""
    key_cmd: KeyCommand | None = None
    """A command (no shell) printing a token, bare or JSON with ``access_token`` and ``expires_in``."""
    model: str | None = None
    """The model used when ``model.default`` names none (``default_model`` is read as this)."""
    api_mode: str | None = None
    """``chat_completions`` or ``anthropic_messages`` (``transport`` is read as this)."""
    extra_headers: Headers = Field(default_factory=dict, repr=False)
    """Headers sent with every request to this provider. Secrets: never logged."""
    extra_body: dict[str, Any] = Field(default_factory=dict)
    """Fields merged into every request body."""
    request_timeout_seconds: Seconds | None = None
    """Seconds one request may take (default 600)."""
    context_length: Annotated[int, Field(gt=0)] | None = None
    pricing: PricingConfig | None = None
    """Prices for this provider's models, instead of the price table's."""
    models: list[str] = Field(default_factory=list)
    """Models offered in the ``/model`` picker (besides what the endpoint lists)."""
    enabled: bool = True
    """``false`` hides the entry (also a built-in provider's)."""
    tool_format: Literal["native", "hermes"] | None = None

    @model_validator(mode="before")
    @classmethod
    def _hermes_spellings(cls, data: Any) -> Any:
        data = _first_alias(data, "base_url", "url", "api")
        data = _first_alias(data, "key_env", "api_key_env")
        data = _first_alias(data, "model", "default_model")
        data = _first_alias(data, "context_length", "context_window")
        return _first_alias(data, "api_mode", "transport")

    @field_validator("models", mode="before")
    @classmethod
    def _model_names(cls, value: Any) -> Any:
        # Hermes Agent writes this as a list of names or a map of name -> details.
        if value is None:
            return []
        return list(value) if isinstance(value, dict) else value

    @field_validator("request_timeout_seconds", mode="before")
    @classmethod
    def _unset_when_not_positive(cls, value: Any) -> Any:
        # Hermes Agent reads a timeout <= 0 as "not set".
        return None if isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0 else value



class FallbackConfig(_Section):
    """One entry of ``fallback_providers``: tried in order when the model cannot answer."""

    provider: str
    model: str
    base_url: str | None = None
    api_key: str | None = Field(default=None, repr=False)
    key_env: str | None = None
    key_cmd: KeyCommand | None = None

    @model_validator(mode="before")
    @classmethod
    def _hermes_spellings(cls, data: Any) -> Any:
        data = _first_alias(data, "key_env", "api_key_env")
        return _first_alias(data, "model", "default")


class SubagentsConfig(_Section):
    """``agent.subagents``: ``delegate_task`` (docs/subagents.md)."""

    max_concurrency: Annotated[int, Field(ge=1, le=16)] = 3
    """Children running at once; the others wait."""
    max_depth: Annotated[int, Field(ge=0, le=3)] = 1
    """Levels of sub-agents: 1, children only (they get no delegate_task); 0, no delegate_task at all."""
    summary_chars: Annotated[int, Field(ge=200, le=100_000)] = 4000
    """A child's final answer is cut to this many characters in the parent's context."""
    max_steps: Annotated[int, Field(ge=1, le=200)] = 20
    """A child's model calls when its task does not say."""


class AgentConfig(_Section):
    """``agent``: the conversation loop."""

    max_steps: Annotated[int, Field(ge=1)] = 30
    """Model calls one turn may make before it is stopped (``sys.maxsize``: no limit)."""
    max_turns: Any = None
    """Hermes Agent's name for the same limit (model calls per user turn), used when
    ``max_steps`` is not set: 0, a negative number, ``unlimited``, ``inf``... mean no limit;
    a value that is not a limit leaves the default (as in Hermes Agent)."""
    max_invalid_tool_calls: Annotated[int, Field(ge=0)] = 3
    """Malformed tool calls in a row sent back to the model before the turn is stopped."""
    system_prompt: str | None = None
    """Replaces the built-in system prompt."""
    max_context_chars: Annotated[int, Field(ge=1000)] = 400_000
    """Characters of conversation sent to the model; the oldest whole turns are left out beyond it."""
    max_context_tokens: Annotated[int, Field(ge=1000)] | None = None
    """Tokens of conversation sent to the model (counted as the provider counts them, once
    it has answered); the oldest whole turns are left out beyond it."""
    max_cost_usd: Annotated[float, Field(gt=0)] | None = None
    """A session's hard cost ceiling in US dollars: past it the turn ends with status budget
    (``/budget`` raises it for the session, ``--max-cost`` sets it for a run)."""
    max_turn_cost_usd: Annotated[float, Field(gt=0)] | None = None
    """One turn's hard cost ceiling in US dollars."""
    subagents: SubagentsConfig = Field(default_factory=SubagentsConfig)

    @model_validator(mode="before")
    @classmethod
    def _hermes_max_turns(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("max_steps") is None and data.get("max_turns") is not None:
            from hermes_tui.hermes_keys import turn_limit  # imports nothing of ours

            limit = turn_limit(data["max_turns"])
            data = {k: v for k, v in data.items() if k != "max_steps"}
            if limit is not None:
                data["max_steps"] = limit
        return data


class UIConfig(_Section):
    """``ui``: the app's manners."""

    notify: bool = True
    """Ring the bell and send a desktop notification (OSC 9 / OSC 777) when an approval waits
    or a long turn ends while the terminal is not focused."""

    @field_validator("notify", mode="before")
    @classmethod
    def _read_yes_no(cls, value: Any) -> Any:
        return _truthy(value)


class StoreConfig(_Section):
    """``store``: where sessions are kept (docs/store.md)."""

    url: str | None = Field(default=None, repr=False)  # it may carry the database's password
    """``sqlite:///PATH`` (default: ``$HERMES_HOME/tui/sessions.db``) or ``postgresql://USER@HOST/DB``."""
    password_env: str | None = None
    """The environment variable holding the PostgreSQL password (else the URL, ``PGPASSWORD``
    or ``~/.pgpass``)."""
    lease_timeout: Annotated[float, Field(ge=15, allow_inf_nan=False)] = 30.0
    """Seconds without a heartbeat after which another process may take a session over (at
    least 15: three of the holder's heartbeats, 5 s apart, so a live one is never taken)."""

    @field_validator("url")
    @classmethod
    def _known_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        from hermes_tui.storage.url import StoreURLError, parse_store_url

        try:
            parse_store_url(value)
        except StoreURLError as exc:
            raise ValueError(exc.allowed) from None
        return value

    @field_validator("password_env")
    @classmethod
    def _variable_name(cls, value: str | None) -> str | None:
        if value is not None and not value.replace("_", "a").isalnum():
            raise ValueError("the name of an environment variable (letters, digits and _)")
        return value or None


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
    """Named endpoints (``custom_providers`` list entries are read into this too)."""
    fallback_providers: list[FallbackConfig] = Field(default_factory=list)
    """Tried in order on a connection error, 429 or 5xx (``fallback_model`` is appended)."""
    agent: AgentConfig = Field(default_factory=AgentConfig)
    ui: UIConfig = Field(default_factory=UIConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    source: Path | None = Field(default=None, exclude=True)
    """The file this was read from (None for built-in defaults)."""
    notices: list[str] = Field(default_factory=list, exclude=True, repr=False)
    """One-line notices about the file, to show once at start (see :mod:`hermes_tui.config_notes`)."""
    ignored_keys: list[str] = Field(default_factory=list, exclude=True, repr=False)
    """Dotted paths of Hermes Agent keys hermes-tui does not use (``hermes-tui doctor --verbose``)."""

    @field_validator("command_allowlist", mode="before")
    @classmethod
    def _none_is_empty_list(cls, value: Any) -> Any:
        return [] if value is None else value

    @field_validator("providers", mode="before")
    @classmethod
    def _none_is_empty_dict(cls, value: Any) -> Any:
        return {} if value is None else value

    @model_validator(mode="before")
    @classmethod
    def _hermes_layout(cls, data: Any) -> Any:
        """Read the older layouts Hermes Agent still reads: root-level model keys, the
        ``custom_providers`` list, ``fallback_model``."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        model = data.get("model")
        model = {"default": model} if isinstance(model, str) else dict(model or {}) if isinstance(model, dict) else model
        if isinstance(model, dict):
            for key, target in (("provider", "provider"), ("base_url", "base_url"), ("api_base", "base_url"),
                                ("context_length", "context_length")):
                if key in data and model.get(target) is None and not isinstance(data[key], dict):
                    model[target] = data.pop(key)
            data["model"] = model
        custom = data.get("custom_providers")
        if isinstance(custom, list):
            providers = dict(data.get("providers") or {}) if isinstance(data.get("providers") or {}, dict) else None
            if providers is not None:
                for entry in custom:
                    if isinstance(entry, dict) and isinstance(entry.get("name"), str) and entry["name"].strip():
                        providers.setdefault(provider_key(entry["name"]), entry)
                data["providers"] = providers
        fallback = data.get("fallback_model")
        if fallback:
            listed = data.get("fallback_providers") or []
            if isinstance(listed, list):
                data["fallback_providers"] = [*listed, *(fallback if isinstance(fallback, list) else [fallback])]
        if data.get("fallback_providers") is None:
            data.pop("fallback_providers", None)
        return data

    @field_validator("fallback_providers", mode="before")
    @classmethod
    def _complete_entries(cls, value: Any) -> Any:
        # Hermes Agent skips an entry without both provider and model, and repeats.
        if not isinstance(value, list):
            return value
        kept, seen = [], set()
        for entry in value:
            if isinstance(entry, dict) and not (entry.get("provider") and (entry.get("model") or entry.get("default"))):
                continue
            key = repr((entry.get("provider"), entry.get("model") or entry.get("default"), entry.get("base_url"))) \
                if isinstance(entry, dict) else repr(entry)
            if key not in seen:
                seen.add(key)
                kept.append(entry)
        return kept


def provider_key(name: str) -> str:
    """The ``providers:`` key a display name is filed under: lower case, spaces as ``-``."""
    return "-".join(name.strip().lower().split())


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
    raw = data
    data = {k: v for k, v in data.items() if k not in ("notices", "ignored_keys")}  # ours, not the file's
    agent = data.get("agent")
    if data.get("max_turns") is not None and (agent is None or isinstance(agent, dict)) \
            and "max_turns" not in (agent or {}):
        data["agent"] = {**(agent or {}), "max_turns": data["max_turns"]}  # Hermes Agent's older place for it
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{where}: " + "; ".join(_describe(e) for e in exc.errors())) from None
    config.source = source
    from hermes_tui.config_notes import review  # which imports nothing of this module

    config.notices, config.ignored_keys = review(raw, config, MODE_RENAMED)
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
    if SECRET_KEYS & {str(part) for part in error["loc"]}:
        shown = f"({_kind(value)}, not shown)"  # a key or a header value, even a malformed one, stays unseen
    elif key == "store.url" and isinstance(value, str):  # a URL may carry the database's password
        from hermes_tui.storage.url import redact

        shown = repr(redact(value))
    return f"{key} = {shown} is not allowed: {message}"


SECRET_KEYS = frozenset({"api_key", "api", "key_cmd", "default_headers", "extra_headers"})
"""Config keys whose values are secrets: an error about them never quotes the value."""


def _kind(value: Any) -> str:
    names: dict[type, str] = {dict: "a mapping", list: "a list", str: "a string"}
    return names.get(type(value), type(value).__name__)
