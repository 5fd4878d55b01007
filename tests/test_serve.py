"""``hermes-tui serve`` end to end (issue 39): the installed command serving the real app, real
HTTP and WebSocket requests, and Debian's chromium driven by Playwright (``/usr/bin/chromium``,
no browser download): the token on every request, one page driving, Python typed and run, an
approval dialog answered by clicking (and, on a phone-sized page, tapping) its button, and an
approval answered from a shell while no page is open."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
APP = Path(sys.executable).parent / "hermes-tui"
HERE = Path(__file__).resolve().parent
SCREENSHOTS = os.environ.get("HERMES_SERVE_SCREENSHOTS")
"""A folder: the browser tests save their screenshots there (scripts/screenshots.py sets it)."""

needs_chromium = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed")


def command() -> list[str]:
    return [str(APP)] if APP.exists() else [sys.executable, "-m", "hermes_tui"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Served:
    url: str
    base: str
    token: str
    session: str
    process: subprocess.Popen[str]
    workdir: Path


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


@pytest.fixture
def served(hermes_home: Path, workdir: Path, tmp_path: Path) -> Iterator[Served]:
    token_file = tmp_path / "token"
    token_file.write_text("t0k3n-" + "a1b2c3d4" * 4 + "\n")
    port = free_port()
    process = subprocess.Popen([*command(), "serve", "--port", str(port), "--token-file", str(token_file)],
                               cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        found = re.search(r"session (\S+); open (http://\S+/)\?token=(\S+)", line)
        assert found, line + process.stdout.read(2000)
        session, base, token = found.groups()
        yield Served(f"{base}?token={token}", base.rstrip("/"), token, session, process, workdir)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def http(url: str, *, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str]]:
    request = urllib.request.Request(url, headers=headers or {})

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers)


WS_HEADERS = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
              "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}


def test_every_request_without_the_token_is_refused(served: Served) -> None:
    base, token = served.base, served.token
    for path in ("/", "/static/js/textual.js", "/ws", "/download/x", "/?token=" + token[:-1] + "x",
                 f"/{token[:-1]}x/", f"/{token[:-1]}x/static/js/textual.js", f"//{token}/", f"/{token}x/"):
        assert http(base + path)[0] == 401, path
    assert http(base + "/ws", headers=WS_HEADERS)[0] == 401
    status, headers = http(served.url)  # the printed URL: on to the token's path, where the page is
    assert status == 303 and headers["Location"] == f"/{token}/"
    status, headers = http(f"{base}/{token}/")
    assert status == 200 and headers["X-Frame-Options"] == "DENY" and headers["Referrer-Policy"] == "no-referrer"
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"] and "Set-Cookie" not in headers
    assert http(f"{base}/{token}/static/js/textual.js")[0] == 200
    # A page from another site cannot drive the app.
    assert http(f"{base}/{token}/ws", headers={**WS_HEADERS, "Origin": "http://evil.example"})[0] == 403


def test_a_host_beyond_this_machine_and_a_weak_token_are_refused(hermes_home: Path, workdir: Path) -> None:
    done = subprocess.run([*command(), "serve", "--host", "0.0.0.0", "--port", str(free_port())], cwd=workdir,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "plain HTTP" in done.stderr and "--insecure" in done.stderr
    assert "Traceback" not in done.stderr
    weak = workdir / "weak"
    for text in ("short\n", "a+b/c=d" * 4 + "\n", "tab\there-is-a-long-token\n"):  # too short; not carried as is
        weak.write_text(text)
        done = subprocess.run([*command(), "serve", "--token-file", str(weak), "--port", str(free_port())],
                              cwd=workdir, capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and "at least 16 characters of A-Z" in done.stderr, text


def pending(session: str, count: int = 1, timeout: float = 30) -> list[dict[str, object]]:
    """The session's approval requests waiting for an answer, once ``count`` are there."""
    sys.path.insert(0, str(HERE))
    from conftest import open_store_db
    from hermes_tui.storage import sessions as db

    deadline = time.monotonic() + timeout
    while True:
        store = open_store_db()
        try:
            found = db.pending_requests(store, session)
        finally:
            store.close()
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def wait_for(predicate: object, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


class Page:
    """One browser page on the served app, and the terminal size it asked for."""

    def __init__(self, page: object) -> None:
        self.page = page
        self.size: tuple[int, int] | None = None
        page.on("websocket", lambda socket: socket.on("framesent", self._sent))  # type: ignore[attr-defined]

    def _sent(self, payload: object) -> None:
        if isinstance(payload, str) and payload.startswith('["resize"'):
            data = json.loads(payload)[1]
            self.size = (int(data["width"]), int(data["height"]))

    def open(self, url: str) -> None:
        self.page.goto(url)  # type: ignore[attr-defined]
        self.page.wait_for_selector(".xterm-screen", timeout=30000)  # type: ignore[attr-defined]
        assert wait_for(lambda: self.size is not None)

    def type_line(self, text: str) -> None:
        self.page.focus(".xterm-helper-textarea")  # type: ignore[attr-defined]
        self.page.keyboard.type(text)  # type: ignore[attr-defined]
        self.page.keyboard.press("Enter")  # type: ignore[attr-defined]

    def point(self, cell: list[int]) -> tuple[float, float]:
        """The pixel at the middle of a terminal cell."""
        assert self.size is not None
        box = self.page.locator(".xterm-screen").bounding_box()  # type: ignore[attr-defined]
        columns, rows = self.size
        return box["x"] + (cell[0] + 0.5) * box["width"] / columns, box["y"] + (cell[1] + 0.5) * box["height"] / rows

    def buttons(self, request: dict[str, object]) -> dict[str, list[int]]:
        assert self.size is not None
        path = Path(os.environ["HERMES_HOME"]) / "request.json"
        path.write_text(json.dumps(request))
        done = subprocess.run([sys.executable, str(HERE / "helpers" / "dialog_layout.py"), str(path),
                               str(self.size[0]), str(self.size[1])], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    def shot(self, name: str) -> None:
        if SCREENSHOTS:
            self.page.screenshot(path=str(Path(SCREENSHOTS) / name))  # type: ignore[attr-defined]


@pytest.fixture
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


def approve_by_pointer(served: Served, page: Page, *, tap: bool, shot: str) -> None:
    """Type Python, see its effect; start a flagged command, press Once in its dialog."""
    page.type_line("open('from_the_page.txt', 'w').write('typed in a browser'); print('written')")
    assert wait_for(lambda: (served.workdir / "from_the_page.txt").exists()), "the typed Python did not run"
    (served.workdir / "build").mkdir()
    page.type_line('from hermes_tools import terminal; print(terminal("rm -rf build")["exit_code"])')
    waiting = pending(served.session)
    assert waiting, "no approval was asked"
    cells = page.buttons(waiting[0]["request"])  # type: ignore[arg-type]
    assert "once" in cells, cells
    time.sleep(0.8)  # the dialog takes no answer while it arms (0.5 s)
    page.shot(shot)
    x, y = page.point(cells["once"])
    if tap:
        page.page.touchscreen.tap(x, y)  # type: ignore[attr-defined]
    else:
        page.page.mouse.click(x, y)  # type: ignore[attr-defined]
    assert wait_for(lambda: not (served.workdir / "build").exists()), "the command did not run after Once"


@needs_chromium
def test_a_browser_types_python_and_approves_with_the_dialogs_button(served: Served, browser: object) -> None:
    page = Page(browser.new_page(viewport={"width": 1100, "height": 720}))  # type: ignore[attr-defined]
    page.open(served.url)
    assert page.page.url.endswith(f"/{served.token}/")  # type: ignore[attr-defined]
    approve_by_pointer(served, page, tap=False, shot="serve-desktop.png")
    # A second page while this one is open is refused: one page drives the app.
    status = http(f"{served.base}/{served.token}/ws", headers={**WS_HEADERS, "Origin": served.base})[0]
    assert status == 409


@needs_chromium
def test_a_phone_sized_page_taps_the_dialogs_button(served: Served, browser: object) -> None:
    # Pixel ratio 1: without a GPU (headless here) xterm.js falls back to its canvas renderer,
    # which draws twice too big at ratio 2 (a phone's browser has WebGL).
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True,  # type: ignore[attr-defined]
                                  is_mobile=True, device_scale_factor=1)
    page = Page(context.new_page())
    page.open(served.url)
    approve_by_pointer(served, page, tap=True, shot="serve-phone.png")


@needs_chromium
def test_an_approval_waits_with_no_page_open_and_a_shell_answers_it(served: Served, browser: object) -> None:
    page = Page(browser.new_page(viewport={"width": 1100, "height": 720}))  # type: ignore[attr-defined]
    page.open(served.url)
    (served.workdir / "dist").mkdir()
    page.type_line('from hermes_tools import terminal; print(terminal("rm -rf dist")["exit_code"])')
    assert pending(served.session)
    page.page.close()  # type: ignore[attr-defined]
    time.sleep(1.0)
    assert (served.workdir / "dist").exists()  # still waiting: the app outlived the page
    done = subprocess.run([*command(), "approve", served.session, "--all"], cwd=served.workdir, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert wait_for(lambda: not (served.workdir / "dist").exists()), "the shell's answer did not reach the app"
    again = Page(browser.new_page(viewport={"width": 1100, "height": 720}))  # type: ignore[attr-defined]
    again.open(served.url)  # the next page takes the running app over
    again.type_line("open('after.txt', 'w').write('x')")
    assert wait_for(lambda: (served.workdir / "after.txt").exists())


def app_pids(session: str) -> list[int]:
    """The served app's processes (``python -m hermes_tui --session SESSION``)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                words = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"hermes_tui" in words and session.encode() in words:
                found.append(int(entry))
    return found


@needs_chromium
def test_an_app_that_dies_frees_the_page_and_a_closed_terminal_ends_the_app(served: Served, browser: object) -> None:
    page = Page(browser.new_page(viewport={"width": 1100, "height": 720}))  # type: ignore[attr-defined]
    page.open(served.url)
    assert wait_for(lambda: app_pids(served.session))
    for pid in app_pids(served.session):
        os.kill(pid, signal.SIGKILL)  # the app crashes (or is killed) under the page
    # The page is closed, not left hanging: the next one starts the app again and drives it.
    again = Page(browser.new_page(viewport={"width": 1100, "height": 720}))  # type: ignore[attr-defined]
    assert wait_for(lambda: http(f"{served.base}/{served.token}/ws", headers={**WS_HEADERS, "Origin": served.base})[0]
                    != 409, timeout=20)
    again.open(served.url)
    again.type_line("open('again.txt', 'w').write('x')")
    assert wait_for(lambda: (served.workdir / "again.txt").exists())
    # serve's terminal closes (SIGHUP): serve ends, and so does the app with its kernel.
    served.process.send_signal(signal.SIGHUP)
    served.process.wait(30)
    assert wait_for(lambda: not app_pids(served.session), timeout=30), app_pids(served.session)

