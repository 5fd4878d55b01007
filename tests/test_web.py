"""web_search and web_extract against real HTTP servers on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

PAGE = """<html><head><title>Kernel notes</title><style>p{color:red}</style></head>
<body><h1>Session kernels</h1><p>They keep <b>state</b> between calls.</p>
<script>alert('x')</script><a href="https://example.org/more">more</a></body></html>"""


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        url = urlparse(self.path)
        if url.path == "/search":
            query = parse_qs(url.query)
            assert query["format"] == ["json"]
            body = json.dumps({"results": [
                {"title": f"Result {i} for {query['q'][0]}", "url": f"https://example.org/{i}", "content": f"snippet {i}"}
                for i in range(8)
            ]}).encode()
            return self._send(200, "application/json", body)
        if url.path == "/page":
            return self._send(200, "text/html; charset=utf-8", PAGE.encode())
        if url.path == "/plain":
            return self._send(200, "text/plain", ("line\n" * 5000).encode())
        if url.path == "/image":
            return self._send(200, "image/png", b"\x89PNG....")
        if url.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/page")
            self.end_headers()
            return None
        return self._send(404, "text/plain", b"missing")

    def _send(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


async def run(rt, expr: str) -> object:
    result = await rt.execute_code(f"import json\nfrom hermes_tools import *\nprint(json.dumps({expr}))", session="w")
    assert result.status == "success", result.output
    return json.loads(result.output)


async def test_not_configured_says_which_keys_to_set(runtime) -> None:
    search, extract = await run(runtime, "[web_search('kernels'), web_extract('http://127.0.0.1:9/x')]")
    assert "web.search_backend: searxng" in search["error"] and "web.searxng_url" in search["error"]
    assert "web.extract_backend: http" in extract["error"]


async def test_search_through_a_searxng_endpoint(runtime_factory, server: str) -> None:
    rt = await runtime_factory(f"web:\n  search_backend: searxng\n  searxng_url: {server}\n")
    found = await run(rt, "web_search('session kernels', limit=3)")
    assert found["backend"] == "searxng" and len(found["results"]) == 3
    assert found["results"][0] == {"title": "Result 0 for session kernels", "url": "https://example.org/0",
                                   "snippet": "snippet 0"}
    bad = await run(rt, "web_search('')")
    assert "invalid arguments" in bad["error"]


async def test_search_backend_down_is_an_error_dict(runtime_factory) -> None:
    rt = await runtime_factory("web:\n  search_backend: searxng\n  searxng_url: http://127.0.0.1:9\n  timeout: 2\n")
    down = await run(rt, "web_search('x')")
    assert "cannot reach http://127.0.0.1:9/search" in down["error"]


async def test_extract_html_text_and_errors(runtime_factory, server: str) -> None:
    rt = await runtime_factory("web:\n  extract_backend: http\n")
    page, plain, image, missing = (await run(
        rt, f"web_extract(['{server}/redirect', '{server}/plain', '{server}/image', '{server}/nope'], char_limit=200)"
    ))["results"]
    assert page["title"] == "Kernel notes" and page["url"].endswith("/redirect")
    assert page["content"].startswith("# Session kernels")
    assert "They keep **state** between calls." in page["content"]
    assert "[more](https://example.org/more)" in page["content"]
    assert "alert" not in page["content"] and "color:red" not in page["content"]
    assert len(plain["content"]) == 200 and plain["truncated"] and plain["total_chars"] == 25_000
    assert "not a text page (image/png)" in image["error"]
    assert missing["error"] == "HTTP 404"
    bad = await run(rt, "web_extract('ftp://example.org/x')")
    assert "is not an http(s) URL" in bad["error"]
