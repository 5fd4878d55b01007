"""Model providers: one reply at a time, from the endpoint :mod:`.resolve` chose.

Any OpenAI-compatible endpoint goes through the official ``openai`` SDK; Anthropic's Messages
API through the ``anthropic`` SDK (the optional extra ``hermes-tui[anthropic]``). Each client
is held to its provider's own origin (:func:`http_client`): no redirect is followed and no
request goes to another host, so a key and secret headers stay where they were configured.

Every failure of a request becomes a :class:`ProviderError` whose message says what went
wrong and what to do; the conversation stays as it was.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from hermes_tui.agent.budget import DEFAULT_MAX_REPLY_TOKENS
from hermes_tui.agent.models.keys import ProviderError, origin
from hermes_tui.agent.models.resolve import ProviderSettings, resolve_provider
from hermes_tui.agent.tools import ToolCall
from hermes_tui.agent.usage import CallUsage, from_anthropic, from_openai, price, request_chars, tokens_for_chars

__all__ = ["Provider", "ProviderError", "ProviderSettings", "Reply", "make_provider", "resolve_provider"]

log = logging.getLogger(__name__)

NO_KEY = "hermes-tui-no-key"
"""What the SDKs are given when there is no key; the request hook removes it, so the request
goes without a key header at all."""


class KeyRouteRefused(Exception):
    """A request that would have gone to another origin than the provider's base URL."""


SENT_HEADERS = frozenset({"host", "content-type", "content-length", "accept", "accept-encoding", "connection",
                          "user-agent", "anthropic-version", "anthropic-beta", "idempotency-key"})
"""Headers a request may carry besides the key's and the configured ones (and the SDKs'
``x-stainless-*`` telemetry). The SDKs add others from the environment on their own
(``OPENAI_ORG_ID``, ``*_CUSTOM_HEADERS``, ``ANTHROPIC_AUTH_TOKEN``): those are dropped, since
the environment's secrets were never meant for whichever host this is."""


KEY_HEADERS = ("authorization", "x-api-key")
"""Where the SDKs put a key (the Anthropic SDK has used both)."""


def http_client(sdk: Any, settings: ProviderSettings, current_key: Callable[[], str]) -> Any:
    """The SDK's HTTP client, held to the provider's own origin: redirects are not followed
    (a 3xx is an error the user sees), a request to any other scheme, host or port is refused
    before it is sent, and only the headers we chose go: the configured ones, the SDK's own
    plain ones, and a key header only when it carries ``current_key()`` — never the no-key
    placeholder, never a credential the SDK found in the environment by itself."""
    home = origin(settings.base_url or "")
    configured = {name.lower() for name in settings.headers}

    async def check(request: Any) -> None:
        if origin(str(request.url)) != home:
            raise KeyRouteRefused(f"refused to send a request to {request.url.host}: {settings.name} is configured "
                                  f"for {home[1]}")
        key = current_key()
        for name in list(request.headers.keys()):
            lowered = name.lower()
            if lowered in configured:
                continue
            if lowered in KEY_HEADERS:
                if key == NO_KEY or request.headers[name] not in (key, f"Bearer {key}"):
                    del request.headers[name]
            elif lowered not in SENT_HEADERS and not lowered.startswith("x-stainless-"):
                del request.headers[name]

    return sdk.DefaultAsyncHttpxClient(event_hooks={"request": [check]}, follow_redirects=False)


@dataclass
class Reply:
    """One complete reply of the model."""

    text: str
    calls: list[ToolCall]
    finish_reason: str | None = None
    note: str | None = None
    """Said in the conversation with the reply (e.g. which fallback provider answered)."""
    usage: CallUsage | None = None
    """Tokens, cost and time of the call (estimated when the server reported none)."""
    reasoning: str = ""
    """The model's reasoning, when the provider returns it (kept for exports, not sent back)."""


TextSink = Callable[[str], Awaitable[None]]


class Provider:
    """Sends the conversation and streams one reply (text to ``on_text``, calls at the end).

    The key is looked up per request (a ``key_cmd`` token is renewed before it expires, and
    once more when the server rejects it); with no key the request goes without one.
    """

    def __init__(self, settings: ProviderSettings) -> None:
        self.settings = settings
        self._client: Any = None
        self._key_now = NO_KEY
        """The key of the request being sent (the HTTP client's hook lets only it through)."""

    async def complete(self, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                       on_text: TextSink, max_tokens: int | None = None) -> Reply:
        """One reply to the conversation, its text streamed to ``on_text``. ``max_tokens``: the
        longest reply to ask for (a cost ceiling's grant; None: the provider's default)."""
        command = self.settings.key_command
        for attempt in (1, 2):
            key = await self._key()
            try:
                with self._failures():
                    client = self._get_client()
                    client.api_key = self._key_now = key
                    started = time.monotonic()
                    reply = await self._send(client, system, messages, tools, on_text, max_tokens)
                    self._account(reply, time.monotonic() - started, system, messages, tools)
                    return reply
            except ProviderError as exc:
                if attempt == 1 and command is not None and exc.status == 401 and not exc.streamed:
                    command.forget()  # a token revoked before it expired: fetch a new one, once
                    continue
                raise
        raise AssertionError("unreachable")

    async def _send(self, client: Any, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                    on_text: TextSink, max_tokens: int | None) -> Reply:
        raise NotImplementedError

    def load_sdk(self) -> None:
        """Import this provider's SDK now (from a worker thread, before any call): the first
        call then finds it imported instead of importing it on the event loop."""

    def _account(self, reply: Reply, latency: float, system: str, messages: list[dict[str, Any]],
                 tools: list[dict[str, Any]]) -> None:
        """Give the reply its usage: the server's counts, or an estimate marked as one; priced."""
        usage = reply.usage
        if usage is None:
            sent = request_chars(system, messages, tools)
            said = len(reply.text) + len(reply.reasoning) + sum(len(c.name) + len(c.arguments) for c in reply.calls)
            usage = reply.usage = CallUsage(tokens_for_chars(sent), tokens_for_chars(said), estimated=True)
        usage.latency_s = latency
        price(usage, self.settings.model, self.settings.name, self.settings.base_url, self.settings.pricing)

    def _get_client(self) -> Any:
        raise NotImplementedError

    async def aclose(self) -> None:
        """Close the HTTP client."""
        if self._client is not None:
            await self._client.close()

    async def list_models(self, limit: int = 1000) -> list[str]:
        """The model ids the endpoint lists (``GET /models``), held to its origin like every
        request; raises :class:`ProviderError` when it cannot say."""
        key = await self._key()
        ids: list[str] = []
        with self._failures():
            client = self._get_client()
            client.api_key = self._key_now = key
            async for model in client.models.list():
                if isinstance(getattr(model, "id", None), str):
                    ids.append(model.id)
                if len(ids) >= limit:
                    break
        return ids

    async def _key(self) -> str:
        if self.settings.key_command is not None:
            return await self.settings.key_command.token()
        return self.settings.api_key or NO_KEY

    @contextmanager
    def _failures(self) -> Iterator[None]:
        """Any failure of a request, as a :class:`ProviderError` with a message for the user,
        its HTTP ``status`` and whether a fallback may be tried (``retriable``)."""
        try:
            yield
        except ProviderError:
            raise
        except Exception as exc:
            error = ProviderError(redacted(describe_error(exc, self.settings), self.settings))
            error.status = getattr(exc, "status_code", None)
            error.short = _short(exc, error.status)
            refused = any(isinstance(cause, KeyRouteRefused) for cause in _causes(exc))
            error.retriable = not refused and (type(exc).__name__ in ("APIConnectionError", "APITimeoutError")
                                               or error.status == 429 or (error.status or 0) >= 500)
            raise error from exc


def _short(exc: Exception, status: int | None) -> str:
    if status is not None:
        return f"HTTP {status}: {_server_message(exc)[:80]}"
    kind = type(exc).__name__
    return "did not answer in time" if kind == "APITimeoutError" else "could not be reached" \
        if kind == "APIConnectionError" else kind


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


class _Watched:
    """Wraps ``on_text`` to know whether any text reached the user (then no fallback may retry)."""

    def __init__(self, sink: TextSink) -> None:
        self.sink = sink
        self.shown = False

    async def __call__(self, piece: str) -> None:
        self.shown = True
        await self.sink(piece)


class FallbackProvider(Provider):
    """The configured provider, then each of ``fallback_providers`` in order: the next is tried
    when one cannot be reached, rate-limits (429) or fails on its side (5xx) after its own
    retries, and nothing of its reply was shown yet. The reply notes who answered."""

    def __init__(self, settings: ProviderSettings, chain: list[Provider]) -> None:
        super().__init__(settings)
        self.chain = chain

    def load_sdk(self) -> None:
        for provider in self.chain:
            provider.load_sdk()

    async def complete(self, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                       on_text: TextSink, max_tokens: int | None = None) -> Reply:
        failures: list[str] = []
        for index, provider in enumerate(self.chain):
            watched = _Watched(on_text)
            try:
                reply = await provider.complete(system, messages, tools, watched, max_tokens)
            except ProviderError as exc:
                exc.streamed = exc.streamed or watched.shown
                if not exc.retriable or exc.streamed or index == len(self.chain) - 1:
                    if failures:
                        exc.args = ("; ".join([*failures, str(exc)]),)
                    raise
                failures.append(f"{provider.settings.label} could not answer ({exc.short or exc})")
                continue
            if index:
                reply.note = f"{'; '.join(failures)}; {provider.settings.label} answered (fallback_providers[{index - 1}])."
            return reply
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        for provider in self.chain:
            await provider.aclose()


def make_provider(settings: ProviderSettings) -> Provider:
    """The provider client for ``settings`` (and its fallbacks, when it has some)."""
    def one(resolved: ProviderSettings) -> Provider:
        return AnthropicProvider(resolved) if resolved.kind == "anthropic" else OpenAIProvider(resolved)

    if settings.fallbacks:
        return FallbackProvider(settings, [one(settings), *(one(f) for f in settings.fallbacks)])
    return one(settings)


# -- OpenAI-compatible ---------------------------------------------------------------------


def openai_itself(base_url: str | None) -> bool:
    """True for OpenAI's own API (its host), not another server speaking its protocol."""
    from urllib.parse import urlsplit

    return (urlsplit(base_url or "").hostname or "") == "api.openai.com"


class OpenAIProvider(Provider):
    """Chat completions through the ``openai`` SDK, streamed unless ``model.streaming: false``."""

    def load_sdk(self) -> None:
        import openai  # noqa: F401

    def _get_client(self) -> Any:
        if self._client is None:
            import openai

            self._client = openai.AsyncOpenAI(
                api_key=NO_KEY, base_url=self.settings.base_url, max_retries=self.settings.max_retries,
                timeout=self.settings.timeout, default_headers=self.settings.headers or None,
                http_client=http_client(openai, self.settings, lambda: self._key_now))
        return self._client

    async def _send(self, client: Any, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                    on_text: TextSink, max_tokens: int | None) -> Reply:
        from hermes_tui.agent.models.hermes_format import new_call_id

        request: dict[str, Any] = {"model": self.settings.model, "stream": self.settings.streaming,
                                   "messages": [{"role": "system", "content": system}, *messages]}
        if tools:
            request["tools"] = tools
        if max_tokens is not None:
            # OpenAI's own API takes max_completion_tokens (its reasoning models refuse the
            # older name); the servers that speak its protocol take max_tokens.
            request["max_completion_tokens" if openai_itself(self.settings.base_url) else "max_tokens"] = max_tokens
        if self.settings.extra_body:
            request["extra_body"] = self.settings.extra_body
        if not self.settings.streaming:
            response = await client.chat.completions.create(**request)
            usage = from_openai(getattr(response, "usage", None))
            if not response.choices:
                return Reply("", [], None, usage=usage)
            choice = response.choices[0]
            text = choice.message.content or ""
            if text:
                await on_text(text)
            found = [ToolCall(c.id or new_call_id(), c.function.name or "", c.function.arguments or "")
                     for c in choice.message.tool_calls or () if getattr(c, "function", None) is not None]
            return Reply(text, found, choice.finish_reason, usage=usage, reasoning=_reasoning_of(choice.message))
        # Ask for the usage: servers that honour it send it in a last chunk with no choices;
        # some put it on the last chunk anyway, and some never send it (then it is estimated).
        request["stream_options"] = {"include_usage": True}
        parts: list[str] = []
        thoughts: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        finish = None
        usage = None
        stream = await client.chat.completions.create(**request)
        async for chunk in stream:
            usage = from_openai(getattr(chunk, "usage", None)) or usage
            if not chunk.choices:
                continue
            choice = chunk.choices[0]
            finish = choice.finish_reason or finish
            delta = choice.delta
            if delta is None:
                continue
            thought = _reasoning_of(delta)
            if thought:
                thoughts.append(thought)
            if delta.content:
                parts.append(delta.content)
                await on_text(delta.content)
            for piece in delta.tool_calls or ():
                slot = calls.setdefault(piece.index or 0, {"id": "", "name": "", "arguments": ""})
                slot["id"] = piece.id or slot["id"]
                if piece.function is not None:
                    slot["name"] += piece.function.name or ""
                    slot["arguments"] += piece.function.arguments or ""
        found = [ToolCall(c["id"] or new_call_id(), c["name"], c["arguments"]) for _, c in sorted(calls.items())]
        return Reply("".join(parts), found, finish, usage=usage, reasoning="".join(thoughts))


def _reasoning_of(message: Any) -> str:
    """Reasoning text an OpenAI-compatible server returns beside the content: DeepSeek's and
    vLLM's ``reasoning_content``, OpenRouter's and others' ``reasoning``."""
    for name in ("reasoning_content", "reasoning"):
        value = getattr(message, name, None)
        if value is None:
            value = (getattr(message, "model_extra", None) or {}).get(name)
        if isinstance(value, str) and value:
            return value
    return ""


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
    """Anthropic's Messages API (also MiniMax's and other ``/anthropic`` endpoints) through the
    ``anthropic`` SDK, streamed unless ``model.streaming: false``."""

    def load_sdk(self) -> None:
        try:
            import anthropic  # noqa: F401
        except ImportError:  # said when a call is made
            pass

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                import anthropic
            except ImportError:
                raise ProviderError("The anthropic provider needs its SDK: pip install 'hermes-tui[anthropic]'") from None
            self._client = anthropic.AsyncAnthropic(
                api_key=NO_KEY, base_url=self.settings.base_url, max_retries=self.settings.max_retries,
                timeout=self.settings.timeout, default_headers=self.settings.headers or None,
                http_client=http_client(anthropic, self.settings, lambda: self._key_now))
        return self._client

    async def _send(self, client: Any, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                    on_text: TextSink, max_tokens: int | None) -> Reply:
        declared = [{"name": t["function"]["name"], "description": t["function"]["description"],
                     "input_schema": t["function"]["parameters"]} for t in tools]
        request: dict[str, Any] = {"model": self.settings.model, "system": system,
                                   "max_tokens": max_tokens or self.settings.max_tokens or DEFAULT_MAX_REPLY_TOKENS,
                                   "messages": anthropic_messages(messages)}
        if declared:
            request["tools"] = declared
        if self.settings.extra_body:
            request["extra_body"] = self.settings.extra_body
        text: list[str] = []
        if not self.settings.streaming:
            final = await client.messages.create(**request)
            text = [block.text for block in final.content if block.type == "text"]
            if text:
                await on_text("".join(text))
        else:
            async with client.messages.stream(**request) as stream:
                async for event in stream:
                    if event.type == "text":
                        text.append(event.text)
                        await on_text(event.text)
                final = await stream.get_final_message()
        calls = [ToolCall(block.id, block.name, json.dumps(block.input, ensure_ascii=False))
                 for block in final.content if block.type == "tool_use"]
        thinking = "".join(getattr(block, "thinking", "") or "" for block in final.content if block.type == "thinking")
        return Reply("".join(text), calls, final.stop_reason, usage=from_anthropic(getattr(final, "usage", None)),
                     reasoning=thinking)


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


def redacted(message: str, settings: ProviderSettings) -> str:
    """``message`` with every secret of ``settings`` (the key, a token, header values) replaced:
    a server or a library may quote what it was sent."""
    for secret in settings.secrets():
        message = message.replace(secret, "[secret]").replace(repr(secret)[1:-1], "[secret]")
    return message


def describe_error(exc: Exception, settings: ProviderSettings) -> str:
    """A failed request as one message: what happened and what to do."""
    where = settings.shown_url or "api.anthropic.com"
    status = getattr(exc, "status_code", None)
    kind = type(exc).__name__
    refused = next((cause for cause in _causes(exc) if isinstance(cause, KeyRouteRefused)), None)
    if refused is not None:
        return f"{refused}. Nothing was sent there."
    if kind == "APITimeoutError":
        return f"{settings.name} did not answer in time ({where}). Send the message again or /retry."
    if kind == "APIConnectionError" or status is None and "Connection" in kind:
        cause = exc.__cause__ or exc.__context__
        detail = f": {cause}" if cause else ""
        return (f"Cannot reach {settings.name} at {where}{detail}. Check that the server runs and model.base_url; "
                "then /retry.")
    detail = _server_message(exc)[:300]
    if status in (401, 403) and settings.missing_key:
        return f"{settings.name} wants a key (HTTP {status}: {detail}), and none was sent: {settings.key_source}."
    if status == 401:
        return f"{settings.name} rejected the API key (HTTP 401: {detail}). The key comes from {settings.key_source}."
    if status == 403:
        return f"{settings.name} refused the request (HTTP 403: {detail}). Check the key's permissions."
    if status == 404:
        return (f"{settings.name} has no model {settings.model!r} at {where} (HTTP 404: {detail}). "
                "Check model.default / --model.")
    if status == 429:
        return f"{settings.name} is rate-limiting requests (HTTP 429: {detail}). Wait, then /retry."
    if status is not None and 300 <= status < 400:
        response = getattr(exc, "response", None)
        target = response.headers.get("location", "another address") if response is not None else "another address"
        return (f"{settings.name} answered with a redirect to {target} (HTTP {status}); it was not followed: a key "
                "only goes to the address configured for it. If you trust the new address, set it as the base URL.")
    if status is not None and status >= 500:
        return f"{settings.name} failed on its side (HTTP {status}: {detail}). /retry in a moment."
    if status is not None:
        return f"{settings.name} rejected the request (HTTP {status}: {detail})."
    return f"{settings.name}: {kind}: {detail}"
