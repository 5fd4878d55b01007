"""web_search and web_extract, over backends chosen in config (``web:``).

* search: ``web.search_backend: searxng`` with ``web.searxng_url`` (SearXNG's JSON API).
* extract: ``web.extract_backend: http`` fetches each URL directly and turns HTML into
  Markdown with ``markdownify``; text and JSON pass as they are.

Without a backend each returns an error dict that names the keys to set.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, field_validator

from hermes_tui.runtime.tools.args import Args
from hermes_tui.runtime.tools.base import Tool, ToolContext

MAX_PAGE_BYTES = 5 << 20
"""Bytes read of one page at most (the rest is not downloaded)."""
MAX_URLS = 10
USER_AGENT = "hermes-tui (+https://github.com/NousResearch/hermes-agent)"


class WebSearchArgs(Args):
    query: str = Field(min_length=1)
    limit: int = Field(5, ge=1, le=50)


class WebExtractArgs(Args):
    urls: list[str]
    char_limit: int | None = Field(None, ge=100)

    @field_validator("urls", mode="before")
    @classmethod
    def _one_url(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("urls")
    @classmethod
    def _valid_urls(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("give at least one URL")
        if len(value) > MAX_URLS:
            raise ValueError(f"at most {MAX_URLS} URLs per call")
        for url in value:
            if not re.match(r"^https?://", url):
                raise ValueError(f"{url!r} is not an http(s) URL")
        return value


async def web_search(ctx: ToolContext, args: WebSearchArgs) -> dict[str, Any]:
    """Results of a web search: title, url and snippet of each."""
    web = ctx.config.web
    if web.search_backend == "none" or not web.searxng_url:
        return {"error": "web_search has no backend configured: set web.search_backend: searxng and "
                         "web.searxng_url: http://HOST:PORT (a SearXNG instance) in $HERMES_HOME/config.yaml"}
    import httpx

    url = web.searxng_url.rstrip("/") + "/search"
    try:
        async with httpx.AsyncClient(timeout=web.timeout, headers={"User-Agent": USER_AGENT}) as client:
            response = await client.get(url, params={"q": args.query, "format": "json"})
    except httpx.HTTPError as exc:
        return {"error": f"web_search: cannot reach {url}: {exc}"}
    if response.status_code != 200:
        return {"error": f"web_search: {url} answered HTTP {response.status_code}"}
    try:
        results = response.json().get("results", [])
    except ValueError:
        return {"error": f"web_search: {url} did not answer JSON (is format=json enabled in SearXNG?)"}
    return {
        "query": args.query,
        "backend": "searxng",
        "results": [
            {"title": r.get("title", ""), "url": r.get("url", ""), "snippet": r.get("content", "")}
            for r in results[: args.limit]
        ],
    }


async def web_extract(ctx: ToolContext, args: WebExtractArgs) -> dict[str, Any]:
    """The text of each page (HTML as Markdown), cut at ``char_limit`` characters."""
    web = ctx.config.web
    if web.extract_backend == "none":
        return {"error": "web_extract has no backend configured: set web.extract_backend: http "
                         "in $HERMES_HOME/config.yaml"}
    import httpx

    limit = args.char_limit or web.max_chars
    results = []
    async with httpx.AsyncClient(
        timeout=web.timeout, follow_redirects=True, headers={"User-Agent": USER_AGENT}
    ) as client:
        for url in args.urls:
            results.append(await _extract_one(client, url, limit))
    return {"results": results}


async def _extract_one(client: Any, url: str, limit: int) -> dict[str, Any]:
    import httpx

    try:
        async with client.stream("GET", url) as response:
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) >= MAX_PAGE_BYTES:
                    break
            status = response.status_code
            kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
            encoding = response.encoding or "utf-8"
    except httpx.HTTPError as exc:
        return {"url": url, "error": f"cannot fetch: {exc}"}
    if status >= 400:
        return {"url": url, "status_code": status, "error": f"HTTP {status}"}
    text = bytes(body).decode(encoding, "replace")
    title = ""
    if kind in ("text/html", "application/xhtml+xml") or (not kind and "<html" in text[:1000].lower()):
        title, text = await _html_to_markdown(text)
    elif not (kind.startswith("text/") or kind in ("application/json", "application/xml", "")):
        return {"url": url, "status_code": status, "error": f"not a text page ({kind}); web_extract reads text"}
    result = {"url": url, "status_code": status, "title": title, "content": text[:limit]}
    if len(text) > limit:
        result["truncated"] = True
        result["total_chars"] = len(text)
    return result


async def _html_to_markdown(html: str) -> tuple[str, str]:
    import asyncio

    return await asyncio.to_thread(_convert, html)


def _convert(html: str) -> tuple[str, str]:
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    title = soup.title.get_text(strip=True) if soup.title else ""
    for tag in soup(["script", "style", "noscript", "template", "svg"]):
        tag.decompose()
    body = soup.body or soup
    markdown = MarkdownConverter(heading_style="ATX").convert_soup(body)
    markdown = re.sub(r"\n{3,}", "\n\n", markdown).strip()
    return title, markdown


TOOLS = (
    Tool("web_search", WebSearchArgs, web_search),
    Tool("web_extract", WebExtractArgs, web_extract),
)
