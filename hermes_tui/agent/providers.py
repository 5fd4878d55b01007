"""Model providers: which endpoint, which key, and one streamed reply at a time.

Any OpenAI-compatible endpoint goes through the official ``openai`` SDK; Anthropic through
the ``anthropic`` SDK (the optional extra ``hermes-tui[anthropic]``). The settings come from
the keys Hermes Agent uses (``model.provider``, ``model.default``, ``model.base_url``,
``model.api_key``, ``providers.<name>.key_env``) and the command line. Keys are looked up in
the environment, then in ``$HERMES_HOME/.env`` (read, never written); they are never shown
or logged — only where they came from.

Every failure of a request becomes a :class:`ProviderError` whose message says what went
wrong and what to do; the conversation stays as it was.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from hermes_tui.agent.tools import ToolCall

log = logging.getLogger(__name__)

ProviderKind = Literal["openai", "anthropic"]

KNOWN: dict[str, tuple[str | None, str | None]] = {
    # name: (default base URL, environment variable holding the key)
    "openrouter": ("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "nous": ("https://inference-api.nousresearch.com/v1", "NOUS_API_KEY"),
    "openai": ("https://api.openai.com/v1", "OPENAI_API_KEY"),
    "anthropic": (None, "ANTHROPIC_API_KEY"),
    "deepseek": ("https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "xai": ("https://api.x.ai/v1", "XAI_API_KEY"),
    "groq": ("https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "mistral": ("https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    "together": ("https://api.together.xyz/v1", "TOGETHER_API_KEY"),
    "gemini": ("https://generativelanguage.googleapis.com/v1beta/openai/", "GEMINI_API_KEY"),
    "ollama": ("http://localhost:11434/v1", None),
    "vllm": ("http://localhost:8000/v1", None),
    "llamacpp": ("http://localhost:8080/v1", None),
    "lmstudio": ("http://localhost:1234/v1", None),
    "custom": (None, None),
}
LOCAL = {"ollama", "vllm", "llamacpp", "lmstudio", "custom"}
"""Servers that usually need no key (the SDK still wants a string: one is made up)."""


class ProviderError(Exception):
    """A request or a setting that failed; ``str()`` is a message fit for the user."""


@dataclass
class ProviderSettings:
    """A resolved provider: everything needed to talk to it."""

    name: str
    kind: ProviderKind
    model: str
    base_url: str | None
    api_key: str | None = field(repr=False)
    key_source: str
    """Where the key comes from, for messages ("OPENROUTER_API_KEY in ~/.hermes/.env")."""
    tool_format: Literal["native", "hermes"] = "native"
    max_retries: int = 2

    @property
    def missing_key(self) -> bool:
        """True when a service that needs a key has none."""
        return not self.api_key and self.name not in LOCAL and (self.name in KNOWN or "not set" in self.key_source)

    @property
    def label(self) -> str:
        """``openrouter · anthropic/claude-sonnet-4`` for the top bar."""
        raw = " · hermes tool format" if self.tool_format == "hermes" else ""
        return f"{self.name} · {self.model}{raw}"


DOTENV_LIMIT = 1 << 20
"""Largest ``$HERMES_HOME/.env`` read (a script may have put a FIFO or a huge file there)."""


def _dotenv(home: Path) -> dict[str, str | None]:
    path = home / ".env"
    if not path.exists():
        return {}
    import io

    from dotenv import dotenv_values

    from hermes_tui.runtime.fsutil import read_capped

    try:
        text = read_capped(path, DOTENV_LIMIT, what="read from .env").decode("utf-8")
        return dict(dotenv_values(stream=io.StringIO(text)))
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("%s is not read: %s", path, exc)
        return {}


def resolve_provider(
    config: Any, home: Path, env: dict[str, str] | os._Environ[str] | None = None, *,
    provider: str | None = None, model: str | None = None, base_url: str | None = None,
) -> ProviderSettings | None:
    """The provider the config and flags name, or None when no model is configured.

    Raises :class:`ProviderError` for settings that cannot work (an unknown provider without a
    base URL, a provider without a model name, Anthropic without its SDK).
    """
    env = os.environ if env is None else env
    settings = config.model
    name = (provider or settings.provider or "").strip().lower() or None
    model_name = model or settings.default
    url = base_url or settings.base_url
    if name is None and model_name is None and url is None:
        return None
    if name in (None, "auto"):
        name = "custom" if url else "openrouter"  # Hermes Agent's default provider
    extra = config.providers.get(name)
    if name not in KNOWN and extra is None and not url:
        raise ProviderError(
            f"model.provider = {name!r} is not known: use one of {', '.join(sorted(KNOWN))}, "
            f"or set model.base_url (any OpenAI-compatible endpoint), or add providers.{name}.base_url")
    default_url, default_key_env = KNOWN.get(name, (None, None))
    url = url or (extra.base_url if extra else None) or default_url
    if name != "anthropic" and not url:
        raise ProviderError(f"provider {name!r} needs a base URL: set model.base_url or pass --base-url "
                            "(for example http://localhost:8000/v1)")
    if not model_name:
        raise ProviderError(f"provider {name!r} is set but no model name: set model.default or pass --model")
    key_env = (extra.key_env if extra else None) or default_key_env or _key_env_for_url(url)
    key, source = settings.api_key, "model.api_key in config.yaml"
    if not key and key_env:
        if env.get(key_env):
            key, source = env[key_env], f"{key_env} in the environment"
        else:
            value = _dotenv(home).get(key_env)
            if value:
                key, source = value, f"{key_env} in {home / '.env'}"
            elif name in LOCAL and key_env == "OPENAI_API_KEY" and not (extra and extra.key_env):
                source = "no key (the server may not need one; set OPENAI_API_KEY or model.api_key if it does)"
            else:
                source = f"{key_env} (not set: add it to {home / '.env'} or the environment, or set model.api_key)"
    elif not key:
        source = "no key (add providers.<name>.key_env or model.api_key if the server needs one)"
    kind: ProviderKind = "anthropic" if name == "anthropic" else "openai"
    if kind == "anthropic":
        import importlib.util

        if importlib.util.find_spec("anthropic") is None:
            raise ProviderError("the anthropic provider needs its SDK: pip install 'hermes-tui[anthropic]'")
    top_level = getattr(config, "model_extra", None) or {}  # `tool_format:` written at the top level
    tool_format: Literal["native", "hermes"] = (
        settings.tool_format or (extra.tool_format if extra else None)
        or (top_level.get("tool_format") if top_level.get("tool_format") in ("native", "hermes") else None)
        or "native")
    return ProviderSettings(name=name, kind=kind, model=model_name, base_url=url, api_key=key, key_source=source,
                            tool_format=tool_format, max_retries=settings.max_retries)


def _key_env_for_url(url: str | None) -> str | None:
    """A custom endpoint that is really a known service uses that service's key variable;
    any other uses OPENAI_API_KEY when it is set (as OpenAI-compatible clients do)."""
    if not url:
        return None
    from urllib.parse import urlparse

    host = (urlparse(url).hostname or "").lower()
    for name, (known_url, key_env) in KNOWN.items():
        known_host = urlparse(known_url).hostname if known_url else None
        if key_env and known_host and name not in LOCAL and (host == known_host or host.endswith("." + known_host)):
            return key_env
    return "OPENAI_API_KEY"


@dataclass
class Reply:
    """One complete reply of the model."""

    text: str
    calls: list[ToolCall]
    finish_reason: str | None = None


TextSink = Callable[[str], Awaitable[None]]


class Provider:
    """Sends the conversation and streams one reply (text to ``on_text``, calls at the end)."""

    def __init__(self, settings: ProviderSettings) -> None:
        self.settings = settings

    async def complete(self, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                       on_text: TextSink) -> Reply:
        raise NotImplementedError

    async def aclose(self) -> None:
        """Close the HTTP client."""

    @contextmanager
    def _failures(self) -> Iterator[None]:
        """Any failure of a request, as a :class:`ProviderError` with a message for the user."""
        try:
            yield
        except ProviderError:
            raise
        except Exception as exc:
            raise ProviderError(describe_error(exc, self.settings)) from exc

    def _require_key(self) -> str:
        if self.settings.api_key:
            return self.settings.api_key
        if not self.settings.missing_key:
            return "not-needed"
        raise ProviderError(f"No API key for {self.settings.name}: {self.settings.key_source}.")


def make_provider(settings: ProviderSettings) -> Provider:
    """The provider client for ``settings``."""
    if settings.kind == "anthropic":
        return AnthropicProvider(settings)
    return OpenAIProvider(settings)


# -- OpenAI-compatible ---------------------------------------------------------------------


class OpenAIProvider(Provider):
    """Chat completions, streamed, through the ``openai`` SDK."""

    def __init__(self, settings: ProviderSettings) -> None:
        super().__init__(settings)
        self._client: Any = None

    def _get_client(self) -> Any:
        if self._client is None:
            from openai import AsyncOpenAI

            self._client = AsyncOpenAI(api_key=self._require_key(), base_url=self.settings.base_url,
                                       max_retries=self.settings.max_retries, timeout=600.0)
        return self._client

    async def complete(self, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                       on_text: TextSink) -> Reply:
        client = self._get_client()
        request: dict[str, Any] = {"model": self.settings.model, "stream": True,
                                   "messages": [{"role": "system", "content": system}, *messages]}
        if tools:
            request["tools"] = tools
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        finish = None
        with self._failures():
            stream = await client.chat.completions.create(**request)
            async for chunk in stream:
                if not chunk.choices:
                    continue
                choice = chunk.choices[0]
                finish = choice.finish_reason or finish
                delta = choice.delta
                if delta is None:
                    continue
                if delta.content:
                    text.append(delta.content)
                    await on_text(delta.content)
                for piece in delta.tool_calls or ():
                    slot = calls.setdefault(piece.index or 0, {"id": "", "name": "", "arguments": ""})
                    slot["id"] = piece.id or slot["id"]
                    if piece.function is not None:
                        slot["name"] += piece.function.name or ""
                        slot["arguments"] += piece.function.arguments or ""
        from hermes_tui.agent.hermes_format import new_call_id

        found = [ToolCall(c["id"] or new_call_id(), c["name"], c["arguments"]) for _, c in sorted(calls.items())]
        return Reply("".join(text), found, finish)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()


# -- Anthropic -----------------------------------------------------------------------------


def anthropic_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The OpenAI-shaped history as Anthropic messages: tool calls become ``tool_use`` blocks,
    results ``tool_result`` blocks in a user message, and same-role neighbours are merged
    (the API wants user and assistant to alternate)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message["role"]
        blocks: list[dict[str, Any]] = []
        if role == "tool":
            role = "user"
            blocks.append({"type": "tool_result", "tool_use_id": message["tool_call_id"],
                           "content": message.get("content") or ""})
        else:
            if message.get("content"):
                blocks.append({"type": "text", "text": message["content"]})
            for call in message.get("tool_calls") or ():
                try:
                    arguments = json.loads(call["function"]["arguments"] or "{}")
                except json.JSONDecodeError:
                    arguments = {}
                blocks.append({"type": "tool_use", "id": call["id"], "name": call["function"]["name"],
                               "input": arguments if isinstance(arguments, dict) else {}})
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


class AnthropicProvider(Provider):
    """Messages API, streamed, through the ``anthropic`` SDK."""

    def __init__(self, settings: ProviderSettings) -> None:
        super().__init__(settings)
        self._client: Any = None

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                from anthropic import AsyncAnthropic
            except ImportError:
                raise ProviderError("The anthropic provider needs its SDK: pip install 'hermes-tui[anthropic]'") from None
            kwargs: dict[str, Any] = {"api_key": self._require_key(), "max_retries": self.settings.max_retries,
                                      "timeout": 600.0}
            if self.settings.base_url:
                kwargs["base_url"] = self.settings.base_url
            self._client = AsyncAnthropic(**kwargs)
        return self._client

    async def complete(self, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                       on_text: TextSink) -> Reply:
        client = self._get_client()
        declared = [{"name": t["function"]["name"], "description": t["function"]["description"],
                     "input_schema": t["function"]["parameters"]} for t in tools]
        request: dict[str, Any] = {"model": self.settings.model, "max_tokens": 8192, "system": system,
                                   "messages": anthropic_messages(messages)}
        if declared:
            request["tools"] = declared
        text: list[str] = []
        with self._failures():
            async with client.messages.stream(**request) as stream:
                async for event in stream:
                    if event.type == "text":
                        text.append(event.text)
                        await on_text(event.text)
                final = await stream.get_final_message()
        calls = [ToolCall(block.id, block.name, json.dumps(block.input, ensure_ascii=False))
                 for block in final.content if block.type == "tool_use"]
        return Reply("".join(text), calls, final.stop_reason)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()


# -- errors --------------------------------------------------------------------------------


def _server_message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    message = getattr(exc, "message", None) or str(exc)
    return str(message)


def describe_error(exc: Exception, settings: ProviderSettings) -> str:
    """A failed request as one message: what happened and what to do."""
    where = settings.base_url or "api.anthropic.com"
    status = getattr(exc, "status_code", None)
    kind = type(exc).__name__
    if kind == "APITimeoutError":
        return f"{settings.name} did not answer in time ({where}). Send the message again or /retry."
    if kind == "APIConnectionError" or status is None and "Connection" in kind:
        cause = exc.__cause__ or exc.__context__
        detail = f": {cause}" if cause else ""
        return (f"Cannot reach {settings.name} at {where}{detail}. Check that the server runs and model.base_url; "
                "then /retry.")
    detail = _server_message(exc)[:300]
    if status == 401:
        return f"{settings.name} rejected the API key (HTTP 401: {detail}). The key comes from {settings.key_source}."
    if status == 403:
        return f"{settings.name} refused the request (HTTP 403: {detail}). Check the key's permissions."
    if status == 404:
        return (f"{settings.name} has no model {settings.model!r} at {where} (HTTP 404: {detail}). "
                "Check model.default / --model.")
    if status == 429:
        return f"{settings.name} is rate-limiting requests (HTTP 429: {detail}). Wait, then /retry."
    if status is not None and status >= 500:
        return f"{settings.name} failed on its side (HTTP {status}: {detail}). /retry in a moment."
    if status is not None:
        return f"{settings.name} rejected the request (HTTP {status}: {detail})."
    return f"{settings.name}: {kind}: {detail}"
