"""Benchmark of the first screen. Prints figures; asserts nothing.

    python tests/bench/bench_start.py [--starts 10]

In a real terminal (tmux), the time from launch until the first screen is drawn, for the
installed ``hermes-tui`` (until its input hint "No model: type Python" shows) and, in the same
run, for a minimal Textual app (a ``Static`` and a ``Footer``, run with the same Python) — the
floor this machine allows. Prints the medians, min and max, and the ratio of the medians.
The starts alternate (app, floor, app, floor, ...) so a busy moment weighs on both.
HERMES_HOME is a temporary folder, never the user's ~/.hermes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MINIMAL = '''
from textual.app import App, ComposeResult
from textual.widgets import Footer, Static


class Minimal(App):
    BINDINGS = [("q", "quit", "Quit")]

    def compose(self) -> ComposeResult:
        yield Static("minimal textual app drawn")
        yield Footer()


if __name__ == "__main__":
    Minimal().run()
'''

APP_MARK = "No model: type Python"
MINIMAL_MARK = "minimal textual app drawn"


def one_start(tmux: str, command: str, mark: str, home: str, folder: str, tag: str) -> float | None:
    """Seconds from launching ``command`` in a fresh tmux server until ``mark`` is on its screen."""
    socket = f"hermes-bench-start-{os.getpid()}-{tag}"
    started = time.perf_counter()
    subprocess.run([tmux, "-L", socket, "-f", "/dev/null", "new-session", "-d", "-s", "b", "-x", "160", "-y", "48",
                    "-e", f"HERMES_HOME={home}",
                    # Bytecode written as a regular install has it (a shell with
                    # PYTHONDONTWRITEBYTECODE=1 would compile every changed module on every start).
                    "-e", "PYTHONDONTWRITEBYTECODE=", "-c", folder, command], check=True)
    try:
        while True:
            screen = subprocess.run([tmux, "-L", socket, "capture-pane", "-p", "-t", "b"],
                                    capture_output=True, text=True).stdout
            if mark in screen:
                return time.perf_counter() - started
            if time.perf_counter() - started > 20:
                print(f"{tag}: {mark!r} did not appear in 20 s", file=sys.stderr)
                return None
            time.sleep(0.005)
    finally:
        subprocess.run([tmux, "-L", socket, "kill-server"], capture_output=True)


def summary(name: str, times: list[float]) -> str:
    return (f"{name}: median {statistics.median(times) * 1000:.0f} ms "
            f"(min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f}, {len(times)} starts)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=10)
    args = parser.parse_args()
    tmux = shutil.which("tmux")
    app = Path(sys.executable).parent / "hermes-tui"
    if tmux is None or not app.exists():
        print("first screen: skipped (needs tmux and an installed hermes-tui next to this python)")
        return 0
    with tempfile.TemporaryDirectory(prefix="hermes-bench-start-") as home:
        folder = tempfile.mkdtemp(dir=home)
        script = Path(home) / "minimal_app.py"
        script.write_text(MINIMAL)
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")
        # One unmeasured start each: the first pays for cold caches (.pyc, page cache).
        one_start(tmux, f"exec {app}", APP_MARK, home, folder, "warm-app")
        one_start(tmux, f"exec {sys.executable} {script}", MINIMAL_MARK, home, folder, "warm-floor")
        app_times: list[float] = []
        floor_times: list[float] = []
        for run in range(args.starts):
            took = one_start(tmux, f"exec {app}", APP_MARK, home, folder, f"app-{run}")
            if took is not None:
                app_times.append(took)
            took = one_start(tmux, f"exec {sys.executable} {script}", MINIMAL_MARK, home, folder, f"floor-{run}")
            if took is not None:
                floor_times.append(took)
    if not app_times or not floor_times:
        print("first screen: no figure (a start did not draw)")
        return 1
    print(summary("hermes-tui first screen", app_times))
    print(summary("minimal Textual app (the floor)", floor_times))
    print(f"ratio of the medians: {statistics.median(app_times) / statistics.median(floor_times):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
