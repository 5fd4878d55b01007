"""Benchmark of the two extra front ends (issue 39). Prints figures; asserts nothing.

    python tests/bench/bench_frontends.py [--rounds 5]

* ``hermes-tui --linear`` in a pty: from the command's start to its first prompt, and from
  Enter on ``print(1)`` to its output, beside the full-screen app's own figures in
  ``bench_start.py`` (a minimal Textual app is that one's floor; here the floor is one Python
  start, measured in the same run).
* ``hermes-tui serve`` with Debian's chromium (Playwright): from the command's start to the URL
  printed, from opening the URL to the app's screen in the page (the first WebSocket frame
  from the app), and from a key typed in the page to the screen's answer (the next frame).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

APP = Path(sys.executable).parent / "hermes-tui"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def linear_round(work: Path) -> tuple[float, float]:
    import pexpect

    started = time.perf_counter()
    child = pexpect.spawn(str(APP), ["--linear"], cwd=str(work), encoding="utf-8", timeout=60,
                          env={**os.environ, "TERM": "dumb"})
    child.expect("> ")
    prompt = time.perf_counter() - started
    child.sendline("print(6 * 7)")
    sent = time.perf_counter()
    child.expect("\n42")
    answered = time.perf_counter() - sent
    child.sendline("/quit")
    child.expect(pexpect.EOF)
    child.close()
    return prompt, answered


def serve_round(work: Path, chromium: str) -> tuple[float, float, float]:
    from playwright.sync_api import sync_playwright

    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.perf_counter()
    process = subprocess.Popen([str(APP), "serve", "--port", str(port)], cwd=work, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        printed = time.perf_counter() - started
        url = re.search(r"open (http://\S+)", line).group(1)  # type: ignore[union-attr]
        frames: list[float] = []
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1100, "height": 720})
            page.on("websocket", lambda ws: ws.on("framereceived", lambda _: frames.append(time.perf_counter())))
            opened = time.perf_counter()
            page.goto(url)
            while not frames:
                page.wait_for_timeout(5)
            first = frames[0] - opened
            page.wait_for_timeout(1500)  # the app settles
            page.focus(".xterm-helper-textarea")
            before = len(frames)
            typed = time.perf_counter()
            page.keyboard.press("x")
            while len(frames) == before:
                page.wait_for_timeout(2)
            echo = frames[before] - typed
            browser.close()
        return printed, first, echo
    finally:
        process.terminate()
        process.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if not APP.exists():
        sys.exit(f"no installed hermes-tui beside {sys.executable}")
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["HERMES_HOME"] = str(Path(scratch) / "home")
        work = Path(scratch) / "work"
        work.mkdir()
        floor = []
        for _ in range(args.rounds):
            began = time.perf_counter()
            subprocess.run([sys.executable, "-c", "print(1)"], capture_output=True, check=True)
            floor.append(time.perf_counter() - began)
        linear = [linear_round(work) for _ in range(args.rounds + 1)][1:]  # the first warms the caches
        print(f"python 3.{sys.version_info.minor}, {os.cpu_count()} cores; floor: one Python start "
              f"{ms(statistics.median(floor))}")
        print(f"hermes-tui --linear, {args.rounds} starts: to the first prompt median "
              f"{ms(statistics.median(p for p, _ in linear))}; Enter on print(6 * 7) to its output median "
              f"{ms(statistics.median(a for _, a in linear))}")
        chromium = "/usr/bin/chromium"
        if not Path(chromium).exists():
            print("hermes-tui serve: skipped (no /usr/bin/chromium)")
            return
        served = [serve_round(work, chromium) for _ in range(args.rounds)]
        print(f"hermes-tui serve, {args.rounds} starts: to the URL printed median "
              f"{ms(statistics.median(s[0] for s in served))}; opening the URL to the app's first frame median "
              f"{ms(statistics.median(s[1] for s in served))}; a key typed in the page to the screen's answer median "
              f"{ms(statistics.median(s[2] for s in served))}")


if __name__ == "__main__":
    main()
