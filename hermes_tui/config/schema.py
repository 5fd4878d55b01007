"""The sections of ``config.yaml``: msgspec structs, and how each reads Hermes Agent's spellings.

The file is shared with Hermes Agent, so unknown keys are kept (each section's ``extra``) and
ignored, and hermes-tui never rewrites it. Why msgspec and not pydantic (issue 20): the config
is read before the first frame, and importing pydantic and building these models cost about
90 ms of every start (more than half of a minimal Textual app's whole start); msgspec does the
same checks in a few. Hermes Agent's spellings and lenient values are read by each section's
hooks before its values are checked (``_before``, ``_field_before``); what must be
checked after (a duration, a URL) is in ``_problems``. Checking a section and the one-line
errors are :mod:`hermes_tui.config.validate`'s; reading the file is :mod:`hermes_tui.config.load`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import msgspec

from hermes_tui.base.units import parse_duration, parse_size
from hermes_tui.config.validate import read_section

Seconds = Annotated[float, msgspec.Meta(gt=0, le=1e9)]
"""Positive seconds, at most about 31 years (a deadline further off than the clock can hold
broke every script), finite: every float of a section is checked to be."""
AtLeastZero = Annotated[float, msgspec.Meta(ge=0)]


class _Section(msgspec.Struct, kw_only=True, dict=True):
    """A config section: unknown keys are kept in :attr:`extra` and ignored; an empty section
    means defaults.

    Hooks a section may define (class attributes, not fields):

    * ``_before(data)``: the section's mapping as the file has it → what its fields read
      (Hermes Agent's spellings, older layouts);
    * ``_field_before``: field name → a function reading that field's value leniently
      (``None`` as empty, ``yes``/``no`` as booleans...), run when the key is there;
    * ``_problems()``: ``(field, what is allowed)`` for values the types cannot check.
    """

    _secret: ClassVar[frozenset[str]] = frozenset()
    """Fields never shown by ``repr`` (keys, headers, a URL that may carry a password)."""
    _field_before: ClassVar[dict[str, Callable[[Any], Any]]] = {}

    def __post_init__(self) -> None:
        self.extra: dict[Any, Any] = {}
        """Keys of this section in the file that are not its fields (Hermes Agent's, typos)."""

    @classmethod
    def _before(cls, data: Any) -> Any:
        return data

    def _problems(self) -> list[tuple[str, str]]:
        return []

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__struct_fields__
                          if name not in self._secret)
        return f"{type(self).__name__}({shown})"

    @classmethod
    def read(cls, data: Any) -> Any:
        """Check ``data`` (a section as YAML gives it) as this section. Raises :class:`ConfigError`
        with every problem found, each as ``key = value is not allowed: must be ...``."""
        return read_section(cls, data)


class CodeExecutionConfig(_Section):
    """``code_execution``: how scripts run in session kernels."""

    mode: Literal["project", "strict"] = "project"
    """`project`: the session's working dir and the active venv/conda Python; `strict`: a temp dir and the host's Python."""
    timeout: Seconds = 300.0
    """Seconds one execution may run before its kernel is killed."""
    interrupt_grace: Seconds = 3.0
    """Seconds an interrupted script has to stop after SIGINT (its kernel and state stay); then it is killed."""
    max_tool_calls: Annotated[int, msgspec.Meta(ge=0)] = 50
    """Tool calls allowed per execution."""
    kernel_idle_timeout: Seconds = 1800.0
    """Idle seconds before a kernel is reaped."""
    max_session_kernels: Annotated[int, msgspec.Meta(ge=1)] = 4
    """Live top-level kernels; one more evicts the least recently used idle one."""
    rpc_transport: Literal["socket", "file"] = "socket"
    """How scripts reach the tools: a Unix socket, or request/response files (remote backends)."""
    sandbox: Literal["workspace-write", "read-only", "off"] = "workspace-write"
    """What every process a script or the model starts may do (docs/security.md): write its
    workspace, its temp dir and ``writable_roots`` (``read-only``: its temp dir only), read all
    but ``deny_read``; ``off``: run unconfined, as the user."""
    network: bool = False
    """Let sandboxed processes open TCP/UDP connections (Unix sockets stay closed)."""
    writable_roots: list[str] = []
    """Extra folders sandboxed processes may write (``~`` expanded; must exist)."""
    deny_read: list[str] = []
    """Files or folders (globs allowed, ``~`` expanded) sandboxed processes may not read, on top
    of the built-in list of secrets."""
    max_spill_bytes: Annotated[int, msgspec.Meta(ge=0)] = 1 << 30
    """Bytes of one run's output saved to its spill file at most (a size: ``512M``, ``2G``, or
    bytes); past it the file stops with a note and the result says so. 0 saves none."""
    max_cache_bytes: Annotated[int, msgspec.Meta(ge=0)] = 4 << 30
    """Spills stop (the newest, never deleting an older one) when ``$HERMES_HOME/cache/exec``
    would grow past this many bytes; ``hermes-tui cache prune`` makes room."""

    _field_before = {
        # Hermes Agent reads 0 and negative caps as 1 (not "unlimited", not "off").
        "max_session_kernels": lambda value: 1 if isinstance(value, int) and not isinstance(value, bool)
        and value <= 0 else value,
        # YAML 1.1 reads a bare `sandbox: off` as the boolean false.
        "sandbox": lambda value: "off" if value is False else value,
        # A bare `~` in YAML is null: in a list of folders it can only have meant the home.
        "writable_roots": lambda value: [] if value is None else
        (["~" if entry is None else entry for entry in value] if isinstance(value, list) else value),
        "deny_read": lambda value: [] if value is None else
        (["~" if entry is None else entry for entry in value] if isinstance(value, list) else value),
        "max_spill_bytes": lambda value: _size(value),
        "max_cache_bytes": lambda value: _size(value),
    }


def _size(value: Any) -> Any:
    """A size as bytes: ``512M``, ``2G``, ``1.5GB`` or a number of bytes as text; anything else
    is left for the type check to name."""
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit():
            return int(text)
        try:
            return parse_size(text)
        except ValueError:
            return value
    return value


def _backend_name(value: Any) -> Any:
    if value is None:  # `backend:` with nothing after it: Hermes Agent's default
        return "local"
    return (value.strip().lower() or "local") if isinstance(value, str) else value


def _one_or_many(value: Any) -> Any:
    if value is None:
        return []
    return [value] if isinstance(value, str) else value


class TerminalConfig(_Section):
    """``terminal``: the terminal() tool."""

    env_passthrough: list[str] = []
    """Exact variable names let into children on top of the safe defaults."""
    timeout: Seconds = 180.0
    """Seconds for one terminal() command."""
    backend: str = "local"
    """Where kernels and terminal() commands run: ``local``, ``docker``, ``ssh`` or ``jupyter``. Any other
    value Hermes Agent knows (modal, daytona, singularity...) refuses terminal() and scripts,
    saying what is supported; nothing then runs here instead."""
    cwd: str = "."
    """The working dir inside the backend (``.``: where a login or the image starts; for
    ``local`` scripts run where hermes-tui was started, as before)."""
    docker_image: str = "python:3.12-slim"
    """The image session containers are made from (it must have ``python3``)."""
    docker_mount_cwd_to_workspace: bool = False
    """Bind-mount the project folder at ``/workspace`` (read-write) in the container."""
    docker_run_as_host_user: bool = False
    """Run the container as this user's uid:gid (files it writes to a mount are yours)."""
    docker_forward_env: list[str] = []
    """Host variables sent into the container by name (nothing else of the host's goes in)."""
    docker_extra_args: list[str] = []
    """More ``docker run`` arguments, as given (e.g. ``["--cap-add", "SYS_PTRACE"]``)."""
    container_cpu: Annotated[float, msgspec.Meta(ge=0)] = 0
    """CPU cores a container may use (0: no limit)."""
    container_memory: Annotated[int, msgspec.Meta(ge=0)] = 0
    """Megabytes of memory a container may use (0: no limit)."""
    container_disk: Annotated[int, msgspec.Meta(ge=0)] = 0
    """Megabytes of disk (read by Hermes Agent; Docker enforces it only on some storage drivers,
    so hermes-tui does not pass it: docs/engine.md)."""
    container_persistent: bool = False
    """Keep a session's container (stopped) when its kernels end, and reuse it by name."""
    ssh_host: str = ""
    """The SSH host (a name from ~/.ssh/config works)."""
    ssh_user: str = ""
    """The login (empty: ssh's own default)."""
    ssh_port: Annotated[int, msgspec.Meta(ge=1, le=65535)] = 22
    ssh_key: str = ""
    """A private key file (``~`` expanded); empty: ssh's agent and defaults."""
    jupyter_gateway_url: str = ""
    """A Jupyter Kernel or Enterprise Gateway (``http(s)://host:port``); empty: a local
    ipykernel started on this machine, in the sandbox."""
    jupyter_kernel_name: str = "python3"
    """The kernelspec kernels are started from (its kernel must be Python with ipykernel)."""
    jupyter_auth_token: str = ""
    """The gateway's token, or ``${VAR}``. Secret: never shown, sent only to the gateway."""
    jupyter_auth_token_env: str = ""
    """The variable (or ``$HERMES_HOME/.env`` entry) holding the token (as a provider's ``key_env``)."""
    jupyter_auth_token_cmd: str | list[str] | None = None
    """A command (no shell) printing the token (as a provider's ``key_cmd``)."""
    jupyter_validate_cert: bool = True
    """Check the gateway's TLS certificate (``false`` only for a self-signed one you trust)."""

    _secret = frozenset({"jupyter_auth_token", "jupyter_auth_token_cmd"})
    _field_before = {"backend": _backend_name, "cwd": lambda value: "." if value is None else value,
                     "docker_forward_env": _one_or_many, "docker_extra_args": _one_or_many,
                     "container_cpu": lambda value: 0 if value is None else value,
                     "container_memory": lambda value: 0 if value is None else value,
                     "container_disk": lambda value: 0 if value is None else value}


def _approvals_mode(value: Any) -> Any:
    # YAML 1.1 reads a bare `mode: off` as the boolean false.
    if value is False:
        return "off"
    if isinstance(value, str) and value.strip().lower() in MODE_RENAMED:
        return "manual"  # the notice saying so comes from config_notes
    return value.strip().lower() if isinstance(value, str) else value


def _unattended_word(value: Any) -> Any:
    if isinstance(value, str):
        return value.strip().lower().replace("_", "-")
    return value


class ApprovalsConfig(_Section):
    """``approvals``: who must allow terminal commands and scripts.

    ``mode`` has Hermes Agent's meanings: ``manual`` asks for flagged commands, ``smart`` lets
    an auxiliary model (``auxiliary.approval``) answer APPROVE, DENY or ESCALATE for each
    flagged command first, ``off`` asks for nothing. Ours in addition: ``strict`` asks for
    every terminal() call no rule allows. ``dangerous`` (our earlier name for ``manual``)
    still reads. The hard floor refuses in every mode (docs/approvals.md).
    """

    mode: Literal["strict", "manual", "smart", "off"] = "manual"
    timeout: Seconds = 60.0
    """Seconds an approval waits; no answer is a deny."""
    deny: list[str] = []
    """Hermes Agent's deny list: globs (case-insensitive) of commands refused in every mode,
    ``off`` included, matched against the whole command and each simple command in it."""
    unattended: Literal["pause", "deny", "approve-safe"] = "pause"
    """What a request gets in a headless ``run`` nobody can answer (no terminal): ``pause``
    (stored; answered with ``hermes-tui approve``), ``deny``, or ``approve-safe`` (what stays in
    the sandbox is allowed: a whole script, a flagged ``terminal()`` command; the rest is
    denied). Hermes Agent's ``cron_mode`` / ``unattended_mode`` are not read into it: their
    default, ``deny``, written in most Hermes configs, would turn today's pause into a refusal."""

    _field_before = {"deny": _one_or_many, "mode": _approvals_mode, "unattended": _unattended_word}


MODE_RENAMED = {
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
    timeout: Seconds = 20.0
    """Seconds per web request."""
    max_chars: Annotated[int, msgspec.Meta(ge=100)] = 20_000
    """Characters of one page web_extract returns unless the call asks otherwise."""

    @classmethod
    def _before(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = {k: ("none" if isinstance(k, str) and k.endswith("_backend") and v is None else v)
                    for k, v in data.items()}
        return data


class CacheConfig(_Section):
    """``cache``: retention of ``$HERMES_HOME/cache/exec`` (used by ``hermes-tui cache prune``)."""

    retention: str | None = None
    """Prune entries older than this (e.g. ``14d``); none by default."""
    max_size: str | None = None
    """Prune the oldest entries until the folder fits (e.g. ``2G``); none by default."""

    def _problems(self) -> list[tuple[str, str]]:
        problems = []
        for name, check in (("retention", parse_duration), ("max_size", parse_size)):
            value = getattr(self, name)
            try:
                if value is not None:
                    check(value)
            except ValueError as exc:
                problems.append((name, str(exc)))
        return problems


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

    input_per_mtok: AtLeastZero
    output_per_mtok: AtLeastZero
    cache_read_per_mtok: AtLeastZero | None = None
    """Cached input read (default: the input price)."""
    cache_write_per_mtok: AtLeastZero | None = None
    """Input written to the cache (default: the input price)."""


_ENDPOINT_BEFORE: dict[str, Callable[[Any], Any]] = {
    # What the model section and a provider entry read alike: header maps (values as text,
    # empty ones dropped) and yes/no words for booleans, as Hermes Agent reads them.
    "default_headers": _headers, "extra_headers": _headers, "streaming": _truthy, "enabled": _truthy,
}


class ModelConfig(_Section):
    """``model``: the conversation model (Hermes Agent's keys)."""

    provider: str | None = None
    """A provider name (see docs/providers.md), ``auto``, ``custom``, or a name under ``providers:``."""
    default: str | None = None
    """The model name sent to the provider (``model.model`` and ``model.name`` are read as this)."""
    base_url: str | None = None
    """The endpoint (``api_base`` is read as this)."""
    api_key: str | None = None
    """A key written in the file, or ``${VAR}`` (``api`` is read as this)."""
    key_env: str | None = None
    """The variable holding the key for this model (``api_key_env`` is read as this)."""
    api_mode: str | None = None
    """``chat_completions`` or ``anthropic_messages``; other Hermes modes are refused with one line."""
    tool_format: Literal["native", "hermes"] | None = None
    """``native``: the API's structured tool calls; ``hermes``: ``<tool_call>`` blocks in the text."""
    max_retries: Annotated[int, msgspec.Meta(ge=0, le=10)] = 2
    """Retries of a request that failed on the network, with 429 or 5xx (the SDK's backoff)."""
    context_length: Annotated[int, msgspec.Meta(gt=0)] | None = None
    """The model's context window in tokens (``context_window`` is read as this); default: the price table's."""
    pricing: PricingConfig | None = None
    """Prices to use instead of the price table's (a cost the provider reports still wins)."""
    max_tokens: Annotated[int, msgspec.Meta(ge=256, le=1_000_000)] | None = None
    """The longest reply asked for: sent to Anthropic always, and to any provider while a cost
    ceiling is set (the ceiling may grant less); default 8192."""
    streaming: bool = True
    """``false``: ask for whole replies instead of a stream."""
    default_headers: Headers = {}
    """Headers sent with every request (``extra_headers`` is merged in and wins). Secrets: never logged."""

    _secret = frozenset({"api_key", "default_headers"})
    _field_before = _ENDPOINT_BEFORE

    @classmethod
    def _before(cls, data: Any) -> Any:
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


def _model_names(value: Any) -> Any:
    # Hermes Agent writes this as a list of names or a map of name -> details.
    if value is None:
        return []
    return list(value) if isinstance(value, dict) else value


def _unset_when_not_positive(value: Any) -> Any:
    # Hermes Agent reads a timeout <= 0 as "not set".
    return None if isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0 else value


class ProviderConfig(_Section):
    """``providers.<name>`` (and each ``custom_providers`` entry): one endpoint and its key."""

    name: str | None = None
    """A display name (defaults to the key under ``providers:``)."""
    base_url: str | None = None
    """The endpoint (``url`` and ``api`` are read as this)."""
    api_key: str | None = None
    """The key itself or ``${VAR}``."""
    key_env: str | None = None
    """The environment variable (or ``$HERMES_HOME/.env`` entry) holding the key (``api_key_env`` is read as this)."""
    key_cmd: KeyCommand | None = None
    """A command (no shell) printing a token, bare or JSON with ``access_token`` and ``expires_in``."""
    model: str | None = None
    """The model used when ``model.default`` names none (``default_model`` is read as this)."""
    api_mode: str | None = None
    """``chat_completions`` or ``anthropic_messages`` (``transport`` is read as this)."""
    extra_headers: Headers = {}
    """Headers sent with every request to this provider. Secrets: never logged."""
    extra_body: dict[str, Any] = {}
    """Fields merged into every request body."""
    request_timeout_seconds: Seconds | None = None
    """Seconds one request may take (default 600)."""
    context_length: Annotated[int, msgspec.Meta(gt=0)] | None = None
    pricing: PricingConfig | None = None
    """Prices for this provider's models, instead of the price table's."""
    models: list[str] = []
    """Models offered in the ``/model`` picker (besides what the endpoint lists)."""
    enabled: bool = True
    """``false`` hides the entry (also a built-in provider's)."""
    tool_format: Literal["native", "hermes"] | None = None

    _secret = frozenset({"api_key", "extra_headers"})
    _field_before = {**_ENDPOINT_BEFORE, "models": _model_names,
                     "request_timeout_seconds": _unset_when_not_positive}

    @classmethod
    def _before(cls, data: Any) -> Any:
        data = _first_alias(data, "base_url", "url", "api")
        data = _first_alias(data, "key_env", "api_key_env")
        data = _first_alias(data, "model", "default_model")
        data = _first_alias(data, "context_length", "context_window")
        return _first_alias(data, "api_mode", "transport")


class FallbackConfig(_Section):
    """One entry of ``fallback_providers``: tried in order when the model cannot answer."""

    provider: str
    model: str
    base_url: str | None = None
    api_key: str | None = None
    key_env: str | None = None
    key_cmd: KeyCommand | None = None

    _secret = frozenset({"api_key"})

    @classmethod
    def _before(cls, data: Any) -> Any:
        data = _first_alias(data, "key_env", "api_key_env")
        return _first_alias(data, "model", "default")


class SubagentsConfig(_Section):
    """``agent.subagents``: ``delegate_task`` (docs/subagents.md)."""

    max_concurrency: Annotated[int, msgspec.Meta(ge=1, le=16)] = 3
    """Children running at once; the others wait."""
    max_depth: Annotated[int, msgspec.Meta(ge=0, le=3)] = 1
    """Levels of sub-agents: 1, children only (they get no delegate_task); 0, no delegate_task at all."""
    summary_chars: Annotated[int, msgspec.Meta(ge=200, le=100_000)] = 4000
    """A child's final answer is cut to this many characters in the parent's context."""
    max_steps: Annotated[int, msgspec.Meta(ge=1, le=200)] = 20
    """A child's model calls when its task does not say."""


class AgentConfig(_Section):
    """``agent``: the conversation loop."""

    max_steps: Annotated[int, msgspec.Meta(ge=1)] = 30
    """Model calls one turn may make before it is stopped (``sys.maxsize``: no limit)."""
    max_turns: Any = None
    """Hermes Agent's name for the same limit (model calls per user turn), used when
    ``max_steps`` is not set: 0, a negative number, ``unlimited``, ``inf``... mean no limit;
    a value that is not a limit leaves the default (as in Hermes Agent)."""
    max_invalid_tool_calls: Annotated[int, msgspec.Meta(ge=0)] = 3
    """Malformed tool calls in a row sent back to the model before the turn is stopped."""
    system_prompt: str | None = None
    """Replaces the built-in system prompt."""
    max_context_chars: Annotated[int, msgspec.Meta(ge=1000)] = 400_000
    """Characters of conversation sent to the model; the oldest whole turns are left out beyond it."""
    max_context_tokens: Annotated[int, msgspec.Meta(ge=1000)] | None = None
    """Tokens of conversation sent to the model (counted as the provider counts them, once
    it has answered); the oldest whole turns are left out beyond it."""
    max_cost_usd: Annotated[float, msgspec.Meta(gt=0)] | None = None
    """A session's hard cost ceiling in US dollars: past it the turn ends with status budget
    (``/budget`` raises it for the session, ``--max-cost`` sets it for a run)."""
    max_turn_cost_usd: Annotated[float, msgspec.Meta(gt=0)] | None = None
    """One turn's hard cost ceiling in US dollars."""
    subagents: SubagentsConfig = msgspec.field(default_factory=SubagentsConfig)

    @classmethod
    def _before(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("max_steps") is None and data.get("max_turns") is not None:
            from hermes_tui.config.hermes_keys import turn_limit  # imports nothing of ours

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

    _field_before = {"notify": _truthy}


class AuxiliaryTaskConfig(_Section):
    """``auxiliary.<task>``: the model one auxiliary task uses (Hermes Agent's block)."""

    provider: str = "auto"
    """``auto``: the main model's provider; else a provider name, as ``model.provider``."""
    model: str = ""
    """Empty: the main model (with ``auto``) or the provider's configured model."""
    base_url: str = ""
    """An endpoint of its own (a key written here goes only there)."""
    api_key: str = ""
    """Secret: never shown; sent only to ``base_url``, or to the provider's own hosts."""
    timeout: Seconds = 30.0
    """Seconds one request may take; past it the task gives up (an approval escalates)."""
    extra_body: dict[str, Any] = {}

    _secret = frozenset({"api_key"})
    _field_before = {"provider": lambda value: "auto" if value in (None, "") else value,
                     "model": lambda value: "" if value is None else value,
                     "base_url": lambda value: "" if value is None else value,
                     "api_key": lambda value: "" if value is None else value,
                     "extra_body": lambda value: {} if value is None else value}


class AuxiliaryConfig(_Section):
    """``auxiliary``: models for side tasks. hermes-tui uses ``approval`` (the judge of
    ``approvals.mode: smart``); Hermes Agent's other tasks are read and ignored."""

    approval: AuxiliaryTaskConfig = msgspec.field(default_factory=AuxiliaryTaskConfig)

    _field_before = {"approval": lambda value: {} if value is None else value}


DEFAULT_INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md", "SOUL.md", ".hermes.md", "HERMES.md", ".cursorrules")
"""Files that steer an agent: a write to one always asks (Hermes Agent's list, and HERMES.md)."""


class SecurityConfig(_Section):
    """``security``: Hermes Agent's gate on the files that steer agents."""

    protected_instruction_files: bool = True
    """Writes to AGENTS.md, CLAUDE.md, SOUL.md, .hermes.md, HERMES.md, .cursorrules (and the
    extra patterns) always ask a person, in every approvals mode, ``off`` included."""
    protected_instruction_extra_patterns: list[str] = []
    """More names to protect: globs matched against a file's name (``*.mdc``)."""

    _field_before = {"protected_instruction_files": lambda value: True if value is None else _truthy(value),
                     "protected_instruction_extra_patterns": _one_or_many}

    @property
    def instruction_patterns(self) -> tuple[str, ...]:
        """The names (globs) whose writes always ask; empty when the gate is turned off."""
        if not self.protected_instruction_files:
            return ()
        extra = [str(p).strip() for p in self.protected_instruction_extra_patterns if str(p).strip()]
        return tuple(dict.fromkeys([*DEFAULT_INSTRUCTION_FILES, *extra]))


def _enabled_word(value: Any) -> Any:
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    return _truthy(value)


def _size_or_bytes(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return parse_size(value.strip())
        except ValueError:
            return value  # the type check says what is allowed
    return value


class CheckpointsConfig(_Section):
    """``checkpoints``: snapshots of the workspace before each turn and each call that can
    write, for ``/rollback`` (docs/checkpoints.md). Hermes Agent's ``max_file_size_mb`` is read
    as ``max_file_size`` in megabytes."""

    enabled: bool | str = "auto"
    """``auto``: on for a folder inside a git repository or holding at most 10,000 files;
    ``true`` always (``hermes --checkpoints`` users' setting); ``false`` never."""
    max_snapshots: Annotated[int, msgspec.Meta(ge=1)] = 500
    """Checkpoints kept per session (the oldest are forgotten first)."""
    max_file_size: int | str = 10 << 20
    """Bytes (or ``10M``): larger files are not captured, and a rollback says so."""

    _field_before = {"enabled": _enabled_word, "max_file_size": _size_or_bytes}

    def _problems(self) -> list[tuple[str, str]]:
        problems = []
        if self.enabled not in (True, False, "auto"):
            problems.append(("enabled", "true, false or auto"))
        if not isinstance(self.max_file_size, int) or self.max_file_size < 0:
            problems.append(("max_file_size", "a number of bytes or a size such as 10M"))
        return problems

    @property
    def file_cap(self) -> int:
        """``max_file_size`` in bytes."""
        return self.max_file_size if isinstance(self.max_file_size, int) else 10 << 20

    @classmethod
    def _before(cls, data: Any) -> Any:
        if isinstance(data, dict) and "max_file_size" not in data and isinstance(data.get("max_file_size_mb"), (int, float)):
            data = {**data, "max_file_size": int(data["max_file_size_mb"] * (1 << 20))}
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if k != "max_file_size_mb"}
        return data


class StoreConfig(_Section):
    """``store``: where sessions are kept (docs/store.md)."""

    url: str | None = None  # it may carry the database's password: never in a repr
    """``sqlite:///PATH`` (default: ``$HERMES_HOME/tui/sessions.db``) or ``postgresql://USER@HOST/DB``."""
    password_env: str | None = None
    """The environment variable holding the PostgreSQL password (else the URL, ``PGPASSWORD``
    or ``~/.pgpass``)."""
    lease_timeout: Annotated[float, msgspec.Meta(ge=15)] = 30.0
    """Seconds without a heartbeat after which another process may take a session over (at
    least 15: three of the holder's heartbeats, 5 s apart, so a live one is never taken)."""

    _secret = frozenset({"url"})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.url is not None and not self.url.strip():
            self.url = None
        self.password_env = self.password_env or None

    def _problems(self) -> list[tuple[str, str]]:
        problems = []
        if self.url is not None:
            from hermes_tui.config.store_url import StoreURLError, parse_store_url

            try:
                parse_store_url(self.url)
            except StoreURLError as exc:
                problems.append(("url", exc.allowed))
        if self.password_env is not None and not self.password_env.replace("_", "a").isalnum():
            problems.append(("password_env", "the name of an environment variable (letters, digits and _)"))
        return problems


def _plain(value: Any) -> Any:
    """``value`` if it is a plain scalar, else a stand-in naming its kind and identity."""
    return value if isinstance(value, (str, int, float, bool, type(None))) else (type(value).__name__, id(value))


def _complete_entries(value: Any) -> Any:
    # Hermes Agent skips an entry without both provider and model, and repeats.
    if not isinstance(value, list):
        return value
    kept, seen = [], set()
    for entry in value:
        if isinstance(entry, dict) and not (entry.get("provider") and (entry.get("model") or entry.get("default"))):
            continue
        if not isinstance(entry, dict):
            kept.append(entry)  # refused by the check, as it is
            continue
        # Only plain values make the key: a YAML alias can make a value whose repr never ends.
        key = tuple(_plain(entry.get(name)) for name in ("provider", "model", "default", "base_url"))
        if key not in seen:
            seen.add(key)
            kept.append(entry)
    return kept


class Config(_Section):
    """The whole of ``config.yaml`` as hermes-tui understands it.

    Besides its sections: ``source``, the file this was read from (None for built-in defaults);
    ``notices``, one-line notices about the file to show once at start (see
    :mod:`hermes_tui.config.notes`); ``ignored_keys``, dotted paths of Hermes Agent keys
    hermes-tui does not use (``hermes-tui doctor --verbose``). None of them is a key of the file.
    """

    code_execution: CodeExecutionConfig = msgspec.field(default_factory=CodeExecutionConfig)
    terminal: TerminalConfig = msgspec.field(default_factory=TerminalConfig)
    approvals: ApprovalsConfig = msgspec.field(default_factory=ApprovalsConfig)
    command_allowlist: list[str] = []
    web: WebConfig = msgspec.field(default_factory=WebConfig)
    cache: CacheConfig = msgspec.field(default_factory=CacheConfig)
    model: ModelConfig = msgspec.field(default_factory=ModelConfig)
    providers: dict[str, ProviderConfig] = {}
    """Named endpoints (``custom_providers`` list entries are read into this too)."""
    fallback_providers: list[FallbackConfig] = []
    """Tried in order on a connection error, 429 or 5xx (``fallback_model`` is appended)."""
    agent: AgentConfig = msgspec.field(default_factory=AgentConfig)
    ui: UIConfig = msgspec.field(default_factory=UIConfig)
    store: StoreConfig = msgspec.field(default_factory=StoreConfig)
    checkpoints: CheckpointsConfig = msgspec.field(default_factory=CheckpointsConfig)
    auxiliary: AuxiliaryConfig = msgspec.field(default_factory=AuxiliaryConfig)
    security: SecurityConfig = msgspec.field(default_factory=SecurityConfig)

    _field_before = {
        "command_allowlist": lambda value: [] if value is None else value,
        "providers": lambda value: {} if value is None else value,
        "fallback_providers": _complete_entries,
    }

    def __post_init__(self) -> None:
        super().__post_init__()
        self.source: Path | None = None
        self.notices: list[str] = []
        self.ignored_keys: list[str] = []

    @classmethod
    def _before(cls, data: Any) -> Any:
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

def provider_key(name: str) -> str:
    """The ``providers:`` key a display name is filed under: lower case, spaces as ``-``."""
    return "-".join(name.strip().lower().split())
