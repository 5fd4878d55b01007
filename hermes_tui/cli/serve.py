"""``hermes-tui serve``: the app in a browser, through textual-serve (issue 39).

textual-serve runs the app as a subprocess with Textual's web driver and relays its screen to
xterm.js in the page over a WebSocket. What this module adds to it:

* **A token on every request.** The URL printed carries a random token (``/?token=…``, 256
  bits, or ``--token-file``); that request is redirected to ``/TOKEN/``, under which the page,
  its scripts and its WebSocket are served. Every other request is refused (401). No cookie:
  a cookie is sent to every port of the host, so a server on another port would get it. The
  token is compared in constant time (``hmac.compare_digest``), never logged (aiohttp's access
  log is off) and never sent on (``Referrer-Policy: no-referrer``); the page may not be framed
  (``frame-ancestors 'none'``), and a WebSocket from another origin is refused.
* **Loopback by default.** ``--host`` beyond this machine is refused without ``--insecure``:
  the page is plain HTTP, so the token and every key typed cross the network in clear, and
  whoever reads them drives an app that holds the model's keys and approves commands. Use
  an SSH tunnel (``ssh -L 8765:127.0.0.1:8765 HOST``) instead.
* **One browser at a time, and the app outlives it.** textual-serve starts an app per
  WebSocket and ends it when the page closes. Here one app runs for the served session; a
  second page is refused (409) while one is open, and a page that closes leaves the app
  running (a script waiting for approval still waits: answerable with ``hermes-tui approve``
  as always); the next page takes it over and is redrawn. When the app ends (Ctrl+Q in the
  page, a crash), its page is closed and the next page starts it again on the same session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

TOKEN_BYTES = 32
MIN_TOKEN_CHARS = 16
TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
"""What a token may hold: what a URL carries as it is (a ``+`` or ``%`` would be read back
as something else)."""
LOOPBACK_NAMES = ("localhost", "ip6-localhost")
DEFAULT_PORT = 8765
VIEWPORT = '<meta name="viewport" content="width=device-width, initial-scale=1" />'


# What the served app itself needs (is_served, end_with_server) is all this module imports at
# the top: the app's start reads it. The server's parts are imported where they are used.
WEB_DRIVER = "textual.drivers.web_driver:WebDriver"
"""Textual's driver for an app served to a browser (textual-serve sets ``TEXTUAL_DRIVER``)."""
PR_SET_PDEATHSIG = 1


def is_served() -> bool:
    """Whether this process is an app ``serve`` started (it has no terminal, by design)."""
    return os.environ.get("TEXTUAL_DRIVER") == WEB_DRIVER


def end_with_server() -> bool:
    """A served app ends when its server does, however the server ended (killed, its terminal
    closed): Linux sends it SIGTERM then (``PR_SET_PDEATHSIG``); its kernels follow it. False
    when the server has already ended (nobody would see this app)."""
    import signal

    from hermes_tui.runtime import lineage

    parent = os.getppid()
    lineage.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    return os.getppid() == parent


class ServeRefused(Exception):
    """A setting serve refuses (one line: what was wrong and what to do)."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` is only reachable from this machine."""
    import ipaddress

    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def read_token(path: Path) -> str:
    """The token in ``path`` (its first line, stripped); refused when too short to guess or
    when a URL would not carry it as it is."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ServeRefused(f"--token-file {path}: cannot be read ({exc})") from None
    token = text.strip().splitlines()[0].strip() if text.strip() else ""
    if len(token) < MIN_TOKEN_CHARS or not set(token) <= TOKEN_CHARS:
        raise ServeRefused(f"--token-file {path}: the token must be at least {MIN_TOKEN_CHARS} characters of "
                           "A-Z, a-z, 0-9, '-', '.', '_' and '~' (e.g. `openssl rand -hex 32`)")
    return token


def app_command(session: str, extra: list[str]) -> str:
    """The shell command textual-serve runs: this Python's hermes-tui on ``session`` (``exec``:
    the app is serve's own child, not a shell's)."""
    import shlex

    return "exec " + shlex.join([sys.executable, "-m", "hermes_tui", "--session", session, *extra])


def make_server(command: str, *, host: str, port: int, token: str) -> Any:
    """The textual-serve server with the token, one driving page, and the app kept across pages."""
    import hmac

    import aiohttp_jinja2
    import jinja2
    from aiohttp import web
    from textual_serve.app_service import AppService
    from textual_serve.server import Server

    expected = token.encode("ascii")
    base = f"/{token}"

    def given(text: str) -> bool:
        return hmac.compare_digest(text.encode("utf-8", "replace"), expected)

    class HermesServer(Server):
        def __init__(self) -> None:
            super().__init__(command, host=host, port=port, title="hermes-tui")
            self.service: AppService | None = None
            self.service_task: asyncio.Task[None] | None = None
            self.page: web.WebSocketResponse | None = None

        def initialize_logging(self) -> None:  # quiet: no banner, no access log (the URL holds the token)
            logging.getLogger("textual-serve").setLevel(logging.WARNING)

        async def _make_app(self) -> web.Application:
            # textual-serve's routes, under the token's path: the page builds its URLs (scripts,
            # styles, the WebSocket) from these, so every one of them carries the token.
            app = web.Application(middlewares=[guard])
            aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
            app.add_routes([
                web.get(base + "/", self.handle_index, name="index"),
                web.get(base + "/ws", self.handle_websocket, name="websocket"),
                web.get(base + "/download/{key}", self.handle_download, name="download"),
                web.static(base + "/static", self.statics_path, name="static"),
            ])
            app.on_shutdown.append(self.on_shutdown)
            return app

        async def handle_index(self, request: web.Request) -> web.StreamResponse:
            # The page's URLs name the host the browser used (a phone reaches a served
            # 0.0.0.0 by this machine's address, not by 0.0.0.0).
            self.public_url = f"{request.scheme}://{request.host}"
            response = await super().handle_index(request)
            # A phone lays the page out at its own width (no 980-pixel desktop page zoomed out):
            # the terminal fits the screen, and the dialog's buttons are in reach.
            if isinstance(response, web.Response) and response.text:
                response.text = response.text.replace("<head>", f"<head>\n    {VIEWPORT}", 1)
            return response

        async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
            origin = request.headers.get("Origin")
            if origin is not None and origin != f"{request.scheme}://{request.host}":
                raise web.HTTPForbidden(text="hermes-tui serve: a page from another site may not drive this app")
            if self.page is not None and not self.page.closed:
                raise web.HTTPConflict(text="hermes-tui serve: another browser has this app open; close it there "
                                            "first (one page drives the app at a time)")
            page = web.WebSocketResponse(heartbeat=15)
            await page.prepare(request)
            self.page = page
            width = _int(request.query.get("width"), 80)
            height = _int(request.query.get("height"), 24)
            try:
                service = await self._attach(width, height)
                await self._process_messages(page, service)
            except asyncio.CancelledError:
                pass
            finally:
                if self.page is page:
                    self.page = None
                with contextlib.suppress(Exception):
                    await page.close()
            return page

        async def _attach(self, width: int, height: int) -> AppService:
            service = self.service
            if service is not None and self.service_task is not None and not self.service_task.done():
                # The app runs on from an earlier page: this one is drawn afresh (a size change
                # makes Textual lay out and paint the whole screen).
                await service.set_terminal_size(width, max(1, height - 1))
                await service.set_terminal_size(width, height)
                return service
            service = AppService(command, write_bytes=self._to_page, write_str=self._to_page,
                                 close=self._close_page, download_manager=self.download_manager)
            self.service = service
            await service.start(width, height)
            self.service_task = task = service._task
            if task is not None:
                task.add_done_callback(lambda _: asyncio.ensure_future(self._app_ended(service)))
            return service

        async def _app_ended(self, service: AppService) -> None:
            """The app's process ended (quit, crashed, killed, or never started): the page
            attached to it is closed, so it says the session ended and the next page starts
            the app again (it would otherwise hang there and keep every other page out)."""
            if self.service is service:
                await self._close_page()

        async def _to_page(self, data: bytes | str) -> None:
            """The app's screen to the page open now (none open: dropped; the next is redrawn)."""
            page = self.page
            if page is not None and not page.closed:
                with contextlib.suppress(ConnectionError, RuntimeError):
                    await (page.send_bytes(data) if isinstance(data, bytes) else page.send_str(data))

        async def _close_page(self) -> None:  # the app quit: the page says the session ended
            self.service = None
            page = self.page
            if page is not None:
                with contextlib.suppress(Exception):
                    await page.close()

        async def on_shutdown(self, app: web.Application) -> None:
            service = self.service
            if service is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(service.stop(), 10)

    @web.middleware
    async def guard(request: web.Request, handler: Any) -> web.StreamResponse:
        path = request.path
        segment, slash, _ = path[1:].partition("/")
        inside = given(segment) and slash == "/"  # the whole first segment, compared in constant time
        if not inside:
            if path == "/" and given(request.query.get("token", "")):  # the printed URL: to the token's path
                raise web.HTTPSeeOther(base + "/", headers=SECURE_HEADERS)
            raise web.HTTPUnauthorized(text="hermes-tui serve: this needs the token: open the URL serve printed "
                                            "(it ends with ?token=...)", headers=SECURE_HEADERS)
        response = await handler(request)
        for name, value in SECURE_HEADERS.items():
            response.headers.setdefault(name, value)
        return response

    return HermesServer()


SECURE_HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'",
}
"""On every answer: never cached, never named to another site, never inside another page's
frame (an approval dialog must not be clickjacked)."""


def _int(value: str | None, default: int) -> int:
    try:
        return max(1, min(1000, int(value or default)))
    except ValueError:
        return default


def run_server(server: Any, host: str, port: int, ready: Callable[[], None]) -> None:
    """Serve until Ctrl+C, SIGTERM or SIGHUP (blocking), calling ``ready`` once it listens; the
    app it started is asked to quit first."""
    import signal

    from aiohttp import web

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # HUP: its terminal or SSH session closed
            loop.add_signal_handler(number, stop.set)
        runner = web.AppRunner(await server._make_app(), access_log=None, handle_signals=False)
        await runner.setup()
        try:
            await web.TCPSite(runner, host, port).start()
            ready()
            await stop.wait()
        finally:
            await runner.cleanup()

    asyncio.run(main())


def port_free(host: str, port: int) -> bool:
    """Whether ``port`` can be bound on ``host`` now."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True
