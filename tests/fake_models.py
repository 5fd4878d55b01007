"""A scripted model server on 127.0.0.1 speaking the real wires: OpenAI chat completions
(streamed SSE, structured tool calls or raw ``<tool_call>`` text) and Anthropic messages.

Each request takes the next scripted reply. A reply is a dict:
``text`` (streamed in ``chunk``-character pieces), ``tool_calls`` ([{name, arguments}] —
arguments a dict, or a string sent as-is), ``status`` + ``error`` (an HTTP error instead),
``delay`` (seconds between chunks), ``hang`` (seconds to wait before answering), ``redirect``
(a URL: answered with 307 and that Location), ``reasoning`` (streamed as DeepSeek's
``reasoning_content`` or an Anthropic thinking block), ``usage`` (the counts reported, in the
OpenAI shape: ``prompt_tokens``, ``completion_tokens``, ``prompt_tokens_details.cached_tokens``,
``cost``; for Anthropic ``input_tokens``, ``output_tokens``, ``cache_read_input_tokens``,
``cache_creation_input_tokens``; default :data:`DEFAULT_USAGE`; ``prompt_tokens: "counted"``
reports one token per 4 characters of the request's messages and tools, as a provider counts
what it was sent). A request's ``max_tokens`` (``max_completion_tokens``) is honoured as a
provider does: the reported output tokens are cut to it. ``usage_mode``: how an
OpenAI stream reports it — ``asked`` (the default: a last chunk with no choices, only when the
request asks with ``stream_options.include_usage``, as OpenAI does), ``last_chunk`` (on the
final chunk, asked or not) or ``never``. A request that does not ask for a stream gets the
whole reply as one JSON body (with ``usage`` unless ``usage_mode`` is ``never``). A reply with
``match`` (text) is given only to a request whose body contains that text (sub-agents are told
apart by their task); the first matching reply in order is taken. With no
reply left it answers "(no more scripted replies)". Every request body is kept in
``requests``.

Run as a script for end-to-end tests: ``python fake_models.py SCRIPT.json PORT_FILE``.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


DEFAULT_USAGE = {"prompt_tokens": 1200, "completion_tokens": 80}
"""Counts a reply reports when its script gives none (OpenAI shape)."""


def as_counted(body: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    """The reply with its usage as a provider would report it for ``body``: counted input
    tokens where the script asks, output tokens no more than the request's ``max_tokens``."""
    usage = dict(reply.get("usage") or DEFAULT_USAGE)
    if usage.get("prompt_tokens") == "counted":
        sent = json.dumps(body.get("messages") or []) + json.dumps(body.get("tools") or []) + str(body.get("system") or "")
        usage["prompt_tokens"] = -(-len(sent) // 4)
    limit = body.get("max_completion_tokens") or body.get("max_tokens")
    if isinstance(limit, int) and not isinstance(limit, bool):
        for key in ("completion_tokens", "output_tokens"):
            if isinstance(usage.get(key), int) and usage[key] > limit:
                usage[key] = limit
    return {**reply, "usage": usage} if usage != (reply.get("usage") or DEFAULT_USAGE) else reply


def openai_usage(reply: dict[str, Any]) -> dict[str, Any]:
    """The reply's usage in the OpenAI shape (``total_tokens`` added)."""
    usage = dict(reply.get("usage") or DEFAULT_USAGE)
    usage.setdefault("total_tokens", usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0))
    return usage


def anthropic_usage(reply: dict[str, Any]) -> dict[str, Any]:
    """The reply's usage in Anthropic's shape (from the OpenAI one when given so)."""
    usage = dict(reply.get("usage") or DEFAULT_USAGE)
    if "input_tokens" in usage or "output_tokens" in usage:
        return usage
    return {"input_tokens": usage.get("prompt_tokens", 0), "output_tokens": usage.get("completion_tokens", 0)}


class FakeModelServer:
    """Serve scripted replies on 127.0.0.1 (a real socket, a real HTTP server)."""

    def __init__(self, replies: list[dict[str, Any]] | None = None, host: str = "127.0.0.1") -> None:
        self.replies: deque[dict[str, Any]] = deque(replies or [])
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.active = 0
        self.max_active = 0
        """Requests being answered at once now, and the most there ever were."""
        self.models: list[str] | None = None
        """What ``GET /models`` lists (None: 404, as servers without a model list answer)."""
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go in separate writes: without TCP_NODELAY, Nagle's algorithm and
            # the client's delayed ACK add ~40 ms to every reply (a floor no real server has).
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                if not self.path.rstrip("/").endswith("/models") or server.models is None:
                    self.send_error(404)
                    return
                payload = json.dumps({"object": "list", "data": [
                    {"id": name, "object": "model", "created": 0, "owned_by": "fake"} for name in server.models]}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) or b"{}"
                body = json.loads(raw)
                text = raw.decode("utf-8", "replace")
                with server.lock:
                    server.requests.append(body)
                    server.headers.append({k.lower(): v for k, v in self.headers.items()})
                    reply = next((r for r in server.replies if r.get("match") is None or r["match"] in text), None)
                    if reply is not None:
                        server.replies.remove(reply)
                    else:
                        reply = {"text": "(no more scripted replies)"}
                    server.active += 1
                    server.max_active = max(server.max_active, server.active)
                try:
                    self._reply(body, reply)
                finally:
                    with server.lock:
                        server.active -= 1

            def _reply(self, body: dict[str, Any], reply: dict[str, Any]) -> None:
                reply = as_counted(body, reply)
                if reply.get("hang"):
                    time.sleep(reply["hang"])
                if reply.get("redirect"):
                    self.send_response(307)
                    self.send_header("location", reply["redirect"])
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                if reply.get("status"):
                    payload = json.dumps({"error": {"message": reply.get("error", "scripted failure"),
                                                    "type": "error"}}).encode()
                    self.send_response(reply["status"])
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                anthropic = self.path.rstrip("/").endswith("/messages")
                if body.get("stream") is not True:  # the Anthropic SDK leaves the key out; openai sends false
                    payload = json.dumps(anthropic_message(reply) if anthropic else openai_completion(reply)).encode()
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                asked = bool((body.get("stream_options") or {}).get("include_usage"))
                events = anthropic_events(reply) if anthropic else openai_events(reply, asked)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                try:
                    for index, event in enumerate(events):
                        self.wfile.write(event.encode())
                        self.wfile.flush()
                        if reply.get("delay") and index:
                            time.sleep(reply["delay"])
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True

        self.httpd = ThreadingHTTPServer((host, 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://{host}:{self.port}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def add(self, *replies: dict[str, Any]) -> None:
        with self.lock:
            self.replies.extend(replies)


def _pieces(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] if text else []


def _arguments(call: dict[str, Any]) -> str:
    arguments = call.get("arguments", {})
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def openai_events(reply: dict[str, Any], asked: bool = False) -> list[str]:
    """One reply as chat.completion.chunk SSE events (``asked``: the request asked for usage)."""
    size = int(reply.get("chunk", 4))
    mode = reply.get("usage_mode", "asked")

    def chunk(delta: dict[str, Any], finish: str | None = None, usage: dict[str, Any] | None = None,
              choices: bool = True) -> str:
        body: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "fake",
                                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if choices else []}
        if usage is not None:
            body["usage"] = usage
        return f"data: {json.dumps(body)}\n\n"

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": None, "reasoning_content": piece}) for piece in _pieces(reply.get("reasoning", ""), size)]
    events += [chunk({"content": piece}) for piece in _pieces(reply.get("text", ""), size)]
    for index, call in enumerate(reply.get("tool_calls", [])):
        arguments = _arguments(call)
        events.append(chunk({"tool_calls": [{"index": index, "id": call.get("id", f"call_{index}_{time.time_ns()}"),
                                             "type": "function", "function": {"name": call["name"], "arguments": ""}}]}))
        events += [chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                   for piece in _pieces(arguments, 7)]
    finish = "tool_calls" if reply.get("tool_calls") else "stop"
    events.append(chunk({}, finish, openai_usage(reply) if mode == "last_chunk" else None))
    if mode == "asked" and asked:
        events.append(chunk({}, usage=openai_usage(reply), choices=False))
    events.append("data: [DONE]\n\n")
    return events


def openai_completion(reply: dict[str, Any]) -> dict[str, Any]:
    """One reply as a whole chat.completion body (``stream: false``)."""
    calls = [{"id": call.get("id", f"call_{index}"), "type": "function",
              "function": {"name": call["name"], "arguments": _arguments(call)}}
             for index, call in enumerate(reply.get("tool_calls", []))]
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("text", "")}
    if reply.get("reasoning"):
        message["reasoning_content"] = reply["reasoning"]
    if calls:
        message["tool_calls"] = calls
    body = {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "fake",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}]}
    if reply.get("usage_mode") != "never":
        body["usage"] = openai_usage(reply)
    return body


def anthropic_message(reply: dict[str, Any]) -> dict[str, Any]:
    """One reply as a whole Anthropic message body (``stream: false``)."""
    content: list[dict[str, Any]] = [{"type": "thinking", "thinking": reply["reasoning"], "signature": "s"}] \
        if reply.get("reasoning") else []
    content += [{"type": "text", "text": reply["text"]}] if reply.get("text") else []
    content += [{"type": "tool_use", "id": call.get("id", f"toolu_{index}"), "name": call["name"],
                 "input": json.loads(_arguments(call))} for index, call in enumerate(reply.get("tool_calls", []))]
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "fake", "content": content,
            "stop_reason": "tool_use" if reply.get("tool_calls") else "end_turn", "stop_sequence": None,
            "usage": anthropic_usage(reply)}


def anthropic_events(reply: dict[str, Any]) -> list[str]:
    """One reply as Anthropic messages SSE events."""
    size = int(reply.get("chunk", 4))

    def event(kind: str, body: dict[str, Any]) -> str:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **body})}\n\n"

    usage = anthropic_usage(reply)
    events = [event("message_start", {"message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "fake", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {**usage, "output_tokens": 1}}})]
    index = 0
    if reply.get("reasoning"):
        events.append(event("content_block_start", {"index": 0, "content_block": {
            "type": "thinking", "thinking": "", "signature": ""}}))
        events += [event("content_block_delta", {"index": 0, "delta": {"type": "thinking_delta", "thinking": piece}})
                   for piece in _pieces(reply["reasoning"], size)]
        events.append(event("content_block_delta", {"index": 0, "delta": {"type": "signature_delta", "signature": "s"}}))
        events.append(event("content_block_stop", {"index": 0}))
        index = 1
    if reply.get("text"):
        events.append(event("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}}))
        events += [event("content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": piece}})
                   for piece in _pieces(reply["text"], size)]
        events.append(event("content_block_stop", {"index": index}))
        index += 1
    for offset, call in enumerate(reply.get("tool_calls", [])):
        at = index + offset
        events.append(event("content_block_start", {"index": at, "content_block": {
            "type": "tool_use", "id": call.get("id", f"toolu_{at}_{time.time_ns()}"), "name": call["name"], "input": {}}}))
        events += [event("content_block_delta", {"index": at, "delta": {"type": "input_json_delta", "partial_json": p}})
                   for p in _pieces(_arguments(call), 7)]
        events.append(event("content_block_stop", {"index": at}))
    stop = "tool_use" if reply.get("tool_calls") else "end_turn"
    events.append(event("message_delta", {"delta": {"stop_reason": stop, "stop_sequence": None},
                                          "usage": {"output_tokens": usage.get("output_tokens", 0)}}))
    events.append(event("message_stop", {}))
    return events


if __name__ == "__main__":
    script, port_file = sys.argv[1], sys.argv[2]
    with open(script) as handle:
        replies = json.load(handle)
    with FakeModelServer(replies) as fake:
        with open(port_file + ".tmp", "w") as handle:
            handle.write(str(fake.port))
        import os

        os.replace(port_file + ".tmp", port_file)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
