"""From config.yaml and the command line to one provider: which endpoint, which key, and why.

The keys are Hermes Agent's (``model.*``, ``providers.<name>.*``, ``custom_providers``,
``fallback_providers``), read with Hermes Agent's meanings, except where they would send a
key to a host it does not belong to (see :mod:`.keys`). The provider table is
:mod:`.catalog`. Every setting that cannot work raises :class:`ProviderError` with one line.

Which secrets go where:

* a conventional key (``GLM_API_KEY``) only to its provider's hosts (:func:`.keys.conventional_key_allowed`);
* a key or headers written in a config entry only to the endpoint that entry names: the
  entry's own ``base_url`` (for ``model.*``: ``model.base_url``), or — when the entry names
  none — the provider's own hosts. A ``--base-url``, a ``*_BASE_URL`` variable or a fallback's
  ``base_url`` that points elsewhere gets none of them; what was held back is said
  (:attr:`ProviderSettings.withheld`).
"""

from __future__ import annotations

import difflib
import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from hermes_tui.agent.models.catalog import API_MODES_REFUSED, PROVIDERS, REFUSED, ProviderSpec, Wire, find, owner_of
from hermes_tui.agent.models.keys import (
    Environment,
    KeyCommand,
    ProviderError,
    conventional_key_allowed,
    one_line,
    origin,
    shown_url,
    usable,
)
from hermes_tui.agent.usage import Pricing
from hermes_tui.config import provider_key

DEFAULT_TIMEOUT = 600.0
"""Seconds one request may take unless ``request_timeout_seconds`` says otherwise."""


@dataclass
class ProviderSettings:
    """A resolved provider: everything needed to talk to it. Keys and headers never print."""

    name: str
    kind: Wire
    model: str
    base_url: str | None = field(repr=False)
    api_key: str | None = field(repr=False)
    key_source: str
    """Where the key comes from, or which setting to add ("GLM_API_KEY in ~/.hermes/.env")."""
    tool_format: Literal["native", "hermes"] = "native"
    max_retries: int = 2
    why: str = ""
    """Why this provider was chosen ("model.provider", "auto: OPENROUTER_API_KEY in the environment")."""
    key_command: KeyCommand | None = field(default=None, repr=False)
    key_optional: bool = False
    """A server that may take no key (a local one, or an endpoint no provider of ours owns)."""
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    extra_body: dict[str, Any] = field(default_factory=dict, repr=False)
    timeout: float = DEFAULT_TIMEOUT
    context_length: int | None = None
    """The context window ``model.context_window`` (``context_length``) gives, if it does."""
    pricing: Pricing | None = None
    """Prices ``pricing`` gives instead of the price table's."""
    max_tokens: int | None = None
    """The longest reply to ask for (``model.max_tokens``), for the main model."""
    models: list[str] = field(default_factory=list)
    """Other models the config offers for this provider (``providers.<name>.models``)."""
    streaming: bool = True
    fallbacks: list[ProviderSettings] = field(default_factory=list)
    """Tried in order when this one cannot answer (``fallback_providers``)."""
    fallback_problems: list[str] = field(default_factory=list)
    """Why a ``fallback_providers`` entry is left out (one line each; the rest still serve)."""
    withheld: list[str] = field(default_factory=list)
    """Keys and headers the config names that are not sent here, and why (one line each)."""

    @property
    def missing_key(self) -> bool:
        """True when a key is needed and none was found (the request goes without one)."""
        return not self.api_key and self.key_command is None and not self.key_optional

    @property
    def label(self) -> str:
        """``openrouter · anthropic/claude-sonnet-4`` for the top bar."""
        raw = " · hermes tool format" if self.tool_format == "hermes" else ""
        return f"{self.name} · {self.model}{raw}"

    @property
    def shown_url(self) -> str:
        """The base URL for messages: no user name, password or query."""
        return shown_url(self.base_url)

    def secrets(self) -> list[str]:
        """Every value sent with requests that must never be shown (the key, the token of a
        ``key_cmd``, the header values)."""
        token = self.key_command.cached if self.key_command is not None else None
        return [value for value in (self.api_key, token, *self.headers.values()) if value and len(value) >= 4]


@dataclass
class _Choice:
    """The provider picked, before its key is found."""

    name: str
    spec: ProviderSpec | None
    entry: Any  # ProviderConfig | None
    why: str
    main: bool
    """True when ``model.*`` settings (its key, headers, base URL) apply: the provider is the
    one ``model.provider`` names, not one a flag or ``auto``'s search of the environment chose."""


def resolve_provider(
    config: Any, home: Path, env: Mapping[str, str] | None = None, *,
    provider: str | None = None, model: str | None = None, base_url: str | None = None,
) -> ProviderSettings | None:
    """The provider the config and flags name (with its fallbacks), or None when no model is
    configured. Raises :class:`ProviderError` with one line for settings that cannot work."""
    try:
        return _resolve(config, home, env, provider, model, base_url)
    except (TypeError, ValueError, AttributeError) as exc:  # a value of a shape no check foresaw: one line
        raise ProviderError(f"the model settings cannot be used ({type(exc).__name__}); "
                            "check model:, providers: and fallback_providers: in config.yaml") from exc


def _resolve(config: Any, home: Path, env: Mapping[str, str] | None, provider: str | None, model: str | None,
             base_url: str | None) -> ProviderSettings | None:
    environment = Environment(os.environ if env is None else env, home)
    settings = config.model
    configured = (settings.provider or "").strip().lower()
    requested = (provider or configured).strip().lower()
    model_name = model or settings.default
    if not requested and not model_name and not (base_url or settings.base_url):
        return None
    flag_url = _checked_url(environment.expand(base_url, "--base-url"), "--base-url") if base_url else None
    choice = _choose(config, environment, requested, configured, flag_url)
    main = _settings_for(config, environment, choice, model_name, flag_url)
    for index, entry in enumerate(config.fallback_providers):
        try:
            main.fallbacks.append(_fallback(config, environment, entry, index))
        except ProviderError as exc:  # one broken fallback must not take the model away
            main.fallback_problems.append(f"{exc}; this fallback is left out")
    return main


def _choose(config: Any, environment: Environment, requested: str, configured: str, flag_url: str | None) -> _Choice:
    main = requested == configured
    where = "model.provider" if main else "--provider"
    if requested.startswith("custom:"):
        entry_name = requested.split(":", 1)[1]
        entry = _entry(config, entry_name)
        if entry is None:
            raise ProviderError(f"{where} is {requested!r} but there is no providers.{provider_key(entry_name)} "
                                "entry (or custom_providers entry with that name)")
        return _Choice(provider_key(entry_name), None, entry, f"{where} names a providers: entry", main)
    if requested in ("", "auto"):
        return _auto(config, environment, flag_url, main)
    if requested in REFUSED:
        raise ProviderError(f"provider {requested!r} {REFUSED[requested]}")
    spec = find(requested)
    entry = _entry(config, requested)
    if spec is not None and spec.name == requested:  # a canonical name: the built-in, with its entry's settings
        return _Choice(spec.name, spec, entry, where, main)
    if entry is not None:  # an alias the user filed an entry under is theirs (as in Hermes Agent)
        return _Choice(provider_key(requested), None, entry, f"{where} names a providers: entry", main)
    if spec is not None:
        return _Choice(spec.name, spec, _entry(config, spec.name), f"{where} ({requested} is {spec.name})", main)
    if flag_url or (config.model.base_url if main else None):  # a name we do not know, at its own endpoint
        return _Choice(requested, None, None, f"{where} {requested!r} at model.base_url", main)
    names = sorted({n for spec in PROVIDERS for n in (spec.name, *spec.aliases)} | set(config.providers))
    close = difflib.get_close_matches(requested, names, n=1, cutoff=0.75)
    hint = f"did you mean {close[0]}? " if close else ""
    raise ProviderError(f"{where} {requested!r} is not known: {hint}use a name from docs/providers.md "
                        f"(`hermes-tui doctor` says which is in use), or set model.base_url (any OpenAI-compatible "
                        f"endpoint), or add providers.{requested}.base_url")


def _entry(config: Any, name: str) -> Any:
    """The ``providers:`` entry filed under ``name`` (or displayed as it), whatever the case of
    its key; refused if disabled."""
    key = provider_key(name)
    entry = next((e for k, e in config.providers.items() if provider_key(k) == key), None) or next(
        (e for e in config.providers.values() if e.name and provider_key(e.name) == key), None)
    if entry is not None and not entry.enabled:
        raise ProviderError(f"providers.{key}.enabled is false: enable it or choose another provider")
    return entry


def _auto(config: Any, environment: Environment, flag_url: str | None, main: bool) -> _Choice:
    """``provider: auto`` (or none): the endpoint's owner when a base URL is given, else the
    first provider whose key is present, in Hermes Agent's order. ``model.*`` keys apply only
    where ``model.base_url`` fixed the endpoint: a key written for one provider never follows
    auto's pick of another."""
    url = flag_url or (config.model.base_url if main else None)
    if url:
        url = _checked_url(environment.expand(url, "model.base_url"), "model.base_url")
        host = urlsplit(url).hostname or url
        fixed = main and not flag_url
        owner = owner_of(url)
        if owner is not None:
            return _Choice(owner.name, owner, _entry(config, owner.name),
                           f"auto: model.base_url is on {host}, {owner.title}'s host", fixed)
        return _Choice("custom", find("custom"), None, f"auto: model.base_url is {host}, a custom endpoint", fixed)
    value, where = environment.lookup("OPENAI_API_KEY")
    if usable(value) and value is not None and value.strip().startswith("sk-or-"):
        return _Choice("openrouter", find("openrouter"), _entry(config, "openrouter"),
                       f"auto: {where} is an OpenRouter key (sk-or-…)", False)
    for spec in PROVIDERS:
        if not spec.auto or (spec.base_url is None and not _url_from_env(spec, environment)):
            continue
        for name in spec.key_envs:
            value, where = environment.lookup(name)
            if usable(value):
                return _Choice(spec.name, spec, _entry(config, spec.name), f"auto: {where}", False)
    return _Choice("openrouter", find("openrouter"), _entry(config, "openrouter"),
                   "auto: no provider key found; OpenRouter is Hermes Agent's default", False)


def _url_from_env(spec: ProviderSpec, environment: Environment) -> str | None:
    return environment.lookup(spec.url_env)[0] if spec.url_env else None


def _checked_url(url: str, setting: str) -> str:
    """``url`` if it is an http(s) address with a host (and a port that can be); else one line."""
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises for a port out of range
    except ValueError as exc:
        raise ProviderError(f"{setting} ({shown_url(url)}) cannot be read as a URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ProviderError(f"{setting} ({shown_url(url)}) is not an http(s) address with a host")
    return url.strip()


@dataclass
class _Secrets:
    """Keys and headers a config entry names, and the endpoint they were written for."""

    setting: str
    """``model`` or ``providers.zai`` or ``fallback_providers[0]``: where they are written."""
    keys: list[tuple[str, Any, str]]
    """``(kind, value, setting)``: kind ``key_cmd``, ``key_env`` or ``api_key``, in order of preference."""
    headers: dict[str, str]
    for_url: str | None
    """The base URL the entry names (None: the provider's own hosts)."""


def _entry_secrets(entry: Any, prefix: str, for_url: str | None) -> _Secrets:
    keys = [("key_cmd", entry.key_cmd, f"{prefix}.key_cmd"), ("key_env", entry.key_env, f"{prefix}.key_env"),
            ("api_key", entry.api_key, f"{prefix}.api_key")]
    return _Secrets(prefix, keys, dict(getattr(entry, "extra_headers", {}) or {}), for_url)


def _settings_for(config: Any, environment: Environment, choice: _Choice, model_name: str | None,
                  flag_url: str | None) -> ProviderSettings:
    settings, entry, spec = config.model, choice.entry, choice.spec
    prefix = f"providers.{provider_key(choice.name)}"
    model_url = flag_url or (settings.base_url if choice.main else None)
    url = model_url or (entry.base_url if entry else None) or (spec and _url_from_env(spec, environment)) \
        or (spec.base_url if spec else None)
    if not url:
        raise ProviderError(f"provider {choice.name!r} needs a base URL: set model.base_url or pass --base-url "
                            "(for example http://localhost:8000/v1)")
    setting = "--base-url" if flag_url else "model.base_url" if model_url else f"{prefix}.base_url"
    url = _checked_url(environment.expand(url, setting), setting)
    model_name = model_name or (entry.model if entry else None)
    if not model_name:
        raise ProviderError(f"provider {choice.name!r} is set but no model name: set model.default or pass --model")
    resolved = ProviderSettings(
        name=choice.name, kind=_wire(choice, settings, url), model=model_name, base_url=url, api_key=None,
        key_source="", why=choice.why, tool_format=_tool_format(config, entry), max_retries=settings.max_retries,
        extra_body=dict(entry.extra_body) if entry else {},
        timeout=(entry.request_timeout_seconds if entry and entry.request_timeout_seconds else DEFAULT_TIMEOUT),
        # model.context_window and model.pricing describe model.default: not another model
        # picked with --model or /model.
        context_length=(settings.context_length if choice.main and _same_model(model_name, settings.default) else None)
        or (entry.context_length if entry else None),
        pricing=_pricing((settings.pricing if choice.main and _same_model(model_name, settings.default) else None)
                         or (entry.pricing if entry else None)),
        max_tokens=settings.max_tokens if choice.main and _same_model(model_name, settings.default) else None,
        models=list(entry.models) if entry else [], streaming=settings.streaming)
    configured_model_url = environment.expand(settings.base_url, "model.base_url") if settings.base_url else None
    sources: list[_Secrets] = []
    if not choice.main and choice.why.startswith("auto:") and (settings.api_key or settings.key_env
                                                               or settings.default_headers):
        resolved.withheld.append(f"model's key and headers not sent to {shown_url(url)}: provider auto chose "
                                 f"{choice.name} from the environment; set model.provider (and model.base_url) to "
                                 "say where they go")
    if choice.main:
        sources.append(_Secrets("model", [("key_env", settings.key_env, "model.key_env"),
                                          ("api_key", settings.api_key, "model.api_key")],
                                dict(settings.default_headers), configured_model_url or _entry_url(entry, environment)))
    if entry is not None:
        sources.append(_entry_secrets(entry, prefix, _entry_url(entry, environment)
                                      or (configured_model_url if choice.main else None)))
    name = provider_key(choice.name)
    hint = (f"providers.{name}.base_url with its api_key / key_env / key_cmd, or model.base_url with model.api_key"
            if choice.main else f"providers.{name}.base_url with its api_key / key_env / key_cmd")
    _apply_secrets(resolved, environment, sources, spec, hint)
    return resolved


def _same_model(model: str | None, configured: str | None) -> bool:
    return configured is None or model == configured


def _pricing(configured: Any) -> Pricing | None:
    """``pricing`` of the config as prices per million tokens."""
    if configured is None:
        return None
    return Pricing(configured.input_per_mtok, configured.output_per_mtok, configured.cache_read_per_mtok,
                   configured.cache_write_per_mtok)


def _entry_url(entry: Any, environment: Environment) -> str | None:
    return environment.expand(entry.base_url, "base_url") if entry is not None and entry.base_url else None


def _apply_secrets(resolved: ProviderSettings, environment: Environment, sources: list[_Secrets],
                   spec: ProviderSpec | None, hint: str) -> None:
    """Headers and the key from the entries that were written for this endpoint (later
    sources' headers win), then the conventional key; what is held back is said."""
    url = resolved.base_url or ""
    url_env_value = _url_from_env(spec, environment) if spec is not None else None
    keys: list[tuple[str, Any, str]] = []
    for source in reversed(sources):  # the entry's first, then model.* over it
        applies = _written_for(source.for_url, spec, url, url_env_value)
        named = [setting for _, value, setting in source.keys if value] + \
            [f"{source.setting}.{'default_headers' if source.setting == 'model' else 'extra_headers'}.{name}"
             for name in source.headers]
        if not applies:
            if named:
                written = shown_url(source.for_url) if source.for_url else "the provider's own hosts"
                resolved.withheld.append(f"{', '.join(named)} not sent to {shown_url(url)}: written for {written}")
            continue
        for name, value in source.headers.items():
            setting = f"{source.setting}.{'default_headers' if source.setting == 'model' else 'extra_headers'}.{name}"
            resolved.headers[name] = one_line(environment.expand(value, setting), setting)
    for source in sources:  # model.* first, then the entry's
        if _written_for(source.for_url, spec, url, url_env_value):
            keys += source.keys
    if _explicit_key(resolved, environment, keys):
        return
    _conventional_key(resolved, environment, spec, url, url_env_value, hint)


def _written_for(for_url: str | None, spec: ProviderSpec | None, url: str, url_env_value: str | None) -> bool:
    """True when secrets written for ``for_url`` (None: for ``spec``'s own hosts) may go to ``url``."""
    try:
        if for_url:
            return origin(for_url) == origin(url)
    except ValueError:
        return False
    return spec is not None and (conventional_key_allowed(spec, url, url_env_value) or spec.key_optional
                                 and spec.base_url is not None and origin(spec.base_url) == origin(url))


def _explicit_key(resolved: ProviderSettings, environment: Environment, keys: list[tuple[str, Any, str]]) -> bool:
    for kind, value, setting in keys:
        if not value:
            continue
        if kind == "key_cmd":
            resolved.key_command = KeyCommand.parse(value, setting, environment.env)
            resolved.key_source = f"the command in {setting}"
        elif kind == "key_env":
            name = str(value).strip()
            found, where = environment.lookup(name)
            if found is None:
                raise ProviderError(f"{setting} names {name}, which is not set: add it to the environment "
                                    f"or {environment.home / '.env'}")
            resolved.api_key, resolved.key_source = one_line(found, setting), f"{where} ({setting})"
        else:
            resolved.api_key = one_line(environment.expand(str(value), setting), setting)
            resolved.key_source = f"{setting} in config.yaml"
        return True
    return False


def _conventional_key(resolved: ProviderSettings, environment: Environment, spec: ProviderSpec | None, url: str,
                      url_env_value: str | None, hint: str) -> None:
    owner = owner_of(url)
    for candidate in dict.fromkeys(s for s in (spec, owner) if s is not None):
        if not conventional_key_allowed(candidate, url, url_env_value):
            continue
        for name in candidate.key_envs:
            found, where = environment.lookup(name)
            if usable(found) and found is not None:
                resolved.api_key, resolved.key_source = one_line(found, name), where
                return
    openrouter = find("openrouter")
    if openrouter is not None and conventional_key_allowed(openrouter, url):
        found, where = environment.lookup("OPENAI_API_KEY")  # Hermes Agent's older home for an OpenRouter key
        if found and found.strip().startswith("sk-or-"):
            resolved.api_key, resolved.key_source = one_line(found, "OPENAI_API_KEY"), f"{where} (an OpenRouter key)"
            return
    resolved.key_optional = bool(spec and spec.key_optional) or (spec is None and owner is None)
    host = urlsplit(url).hostname or url
    if spec is not None and spec.key_envs and conventional_key_allowed(spec, url, url_env_value):
        resolved.key_source = (f"{' or '.join(spec.key_envs)} (not set: add it to {environment.home / '.env'} or "
                               f"the environment, or set {hint})")
    elif spec is not None and spec.key_envs:
        only = (f"only sent to the URL in {spec.url_env}" if spec.url_bound
                else f"only sent to {', '.join(spec.hosts)} over HTTPS")
        resolved.key_source = (f"{' or '.join(spec.key_envs)} is {only}, not to {host}; to send a key to {host}, "
                               f"write it beside that URL: {hint}")
    else:
        resolved.key_source = f"none (the server may not need one; if it does, write it beside the URL: {hint})"


def _wire(choice: _Choice, settings: Any, url: str) -> Wire:
    mode = (choice.entry.api_mode if choice.entry else None) or (settings.api_mode if choice.main else None)
    if mode:
        mode = str(mode).strip().lower()
        if mode in API_MODES_REFUSED:
            raise ProviderError(f"api_mode {mode} ({API_MODES_REFUSED[mode]}) is not served by hermes-tui: use "
                                "chat_completions (any OpenAI-compatible endpoint) or anthropic_messages")
        if mode not in ("chat_completions", "anthropic_messages"):
            raise ProviderError(f"api_mode = {mode!r} is not allowed: must be chat_completions or anthropic_messages")
        kind: Wire = "anthropic" if mode == "anthropic_messages" else "openai"
    elif choice.spec is not None and choice.spec.wire == "anthropic":
        kind = "anthropic"
    else:
        path = urlsplit(url).path.rstrip("/")
        kind = "anthropic" if path.endswith("/anthropic") or path.endswith("/anthropic/v1") else "openai"
    if kind == "anthropic" and importlib.util.find_spec("anthropic") is None:
        raise ProviderError(f"{choice.name} speaks Anthropic's Messages API, which needs its SDK: "
                            "pip install 'hermes-tui[anthropic]'")
    return kind


def _tool_format(config: Any, entry: Any) -> Literal["native", "hermes"]:
    top_level = getattr(config, "extra", None) or {}  # `tool_format:` written at the top level
    return (config.model.tool_format or (entry.tool_format if entry else None)
            or (top_level.get("tool_format") if top_level.get("tool_format") in ("native", "hermes") else None)
            or "native")


def _fallback(config: Any, environment: Environment, entry: Any, index: int) -> ProviderSettings:
    """One ``fallback_providers`` entry as settings: its own key settings first, then those of
    the providers: entry it names (only for that entry's endpoint), then the conventional key."""
    setting = f"fallback_providers[{index}]"
    name = entry.provider.strip().lower()
    if name in REFUSED:
        raise ProviderError(f"{setting}: provider {name!r} {REFUSED[name]}")
    filed_name = name.split(":", 1)[1] if name.startswith("custom:") else name
    spec = None if name.startswith("custom:") else find(name)
    filed = _entry(config, filed_name)
    if name.startswith("custom:") and filed is None:
        raise ProviderError(f"{setting}: provider {name!r} names no providers: entry")
    url = entry.base_url or (filed.base_url if filed else None) or (spec and _url_from_env(spec, environment)) \
        or (spec.base_url if spec else None)
    if not url:
        raise ProviderError(f"{setting}: provider {name!r} is not known and has no base_url: use a name from "
                            "docs/providers.md, or give the entry a base_url")
    choice = _Choice(spec.name if spec else provider_key(filed_name), spec, filed, setting, False)
    url = _checked_url(environment.expand(url, f"{setting}.base_url"), f"{setting}.base_url")
    resolved = ProviderSettings(
        name=choice.name, kind=_wire(choice, config.model, url), model=entry.model, base_url=url, api_key=None,
        key_source="", why=setting, tool_format=_tool_format(config, filed), max_retries=config.model.max_retries,
        extra_body=dict(filed.extra_body) if filed else {},
        timeout=filed.request_timeout_seconds if filed and filed.request_timeout_seconds else DEFAULT_TIMEOUT,
        context_length=filed.context_length if filed else None, pricing=_pricing(filed.pricing if filed else None),
        models=list(filed.models) if filed else [], streaming=config.model.streaming)
    sources = [_entry_secrets(entry, setting, _entry_url(entry, environment))]
    if filed is not None:
        sources.append(_entry_secrets(filed, f"providers.{choice.name}", _entry_url(filed, environment)))
    _apply_secrets(resolved, environment, sources, spec,
                   f"{setting}.base_url with its api_key / key_env / key_cmd")
    return resolved
