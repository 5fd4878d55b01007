"""Benchmark of the first screen. Prints figures; asserts nothing.

    python tests/bench/bench_start.py [--starts 12] [--quits 5] [--kernels 2]

In a real terminal (tmux), the time from launch until the first screen is drawn, for the
installed ``hermes-tui`` (until its input hint "No model: type Python" shows) and, in the same
run, for a minimal Textual app (a ``Static`` and a ``Footer``, run with the same Python) — the
floor this machine allows. Prints the medians, min and max, and the ratio of the medians.
The starts alternate (app, floor, app, floor, ...) so a busy moment weighs on both.

Then (issue 38) the quit: Ctrl+Q to the process gone, with ``--kernels`` idle kernels (each
session's, a line of Python typed in each), beside the minimal app's own Ctrl+Q.
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


def one_quit(tmux: str, command: str, mark: str, home: str, folder: str, tag: str, kernels: int) -> float | None:
    """Seconds from Ctrl+Q until the process is gone, once its first screen is up and
    ``kernels`` idle kernels run (a line of Python typed for each, in its own session: the app
    runs it in the session's kernel; ``kernels=0`` for the floor)."""
    socket = f"hermes-bench-quit-{os.getpid()}-{tag}"
    subprocess.run([tmux, "-L", socket, "-f", "/dev/null", "new-session", "-d", "-s", "b", "-x", "160", "-y", "48",
                    "-e", f"HERMES_HOME={home}", "-e", "PYTHONDONTWRITEBYTECODE=", "-c", folder, command], check=True)
    try:
        def screen() -> str:
            return subprocess.run([tmux, "-L", socket, "capture-pane", "-p", "-t", "b"], capture_output=True,
                                  text=True).stdout

        def wait_for(text: str) -> bool:
            deadline = time.perf_counter() + 20
            while text not in screen():
                if time.perf_counter() > deadline:
                    print(f"{tag}: {text!r} did not appear in 20 s", file=sys.stderr)
                    return False
                time.sleep(0.01)
            return True

        if not wait_for(mark):
            return None
        pid = int(subprocess.run([tmux, "-L", socket, "list-panes", "-t", "b", "-F", "#{pane_pid}"],
                                 capture_output=True, text=True).stdout.split()[0])
        for n in range(kernels):
            if n:  # another session, so another kernel
                subprocess.run([tmux, "-L", socket, "send-keys", "-t", "b", "/new", "Enter"], check=True)
                time.sleep(0.5)
            subprocess.run([tmux, "-L", socket, "send-keys", "-t", "b", f"print('kernel {n} ' + 'up')", "Enter"],
                           check=True)
            if not wait_for(f"kernel {n} up"):
                return None
        time.sleep(0.5)  # idle
        started = time.perf_counter()
        subprocess.run([tmux, "-L", socket, "send-keys", "-t", "b", "C-q"], check=True)
        while _alive(pid):
            if time.perf_counter() - started > 20:
                return None
            time.sleep(0.002)
        return time.perf_counter() - started
    finally:
        subprocess.run([tmux, "-L", socket, "kill-server"], capture_output=True)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def summary(name: str, times: list[float]) -> str:
    return (f"{name}: median {statistics.median(times) * 1000:.0f} ms "
            f"(min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f}, {len(times)} starts)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=12)
    parser.add_argument("--quits", type=int, default=5, help="quits measured each (0: none)")
    parser.add_argument("--kernels", type=int, default=2, help="idle kernels when the app quits")
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
    ratio = statistics.median(app_times) / statistics.median(floor_times)
    print(f"ratio of the medians: {ratio:.2f}x (target <= 1.3x: {'met' if ratio <= 1.3 else 'NOT met'})")
    if args.quits:
        quits, floors = [], []
        with tempfile.TemporaryDirectory(prefix="hermes-bench-quit-") as home:
            folder = tempfile.mkdtemp(dir=home)
            script = Path(home) / "minimal_app.py"
            script.write_text(MINIMAL)
            for run in range(args.quits):
                took = one_quit(tmux, f"exec {app}", APP_MARK, home, folder, f"app-{run}", args.kernels)
                if took is not None:
                    quits.append(took)
                took = one_quit(tmux, f"exec {sys.executable} {script}", MINIMAL_MARK, home, folder, f"floor-{run}", 0)
                if took is not None:
                    floors.append(took)
        if quits and floors:
            print(summary(f"Ctrl+Q to the process gone, hermes-tui with {args.kernels} idle kernels", quits)
                  + f" -- target <= 300 ms: {'met' if statistics.median(quits) <= 0.3 else 'NOT met'}")
            print(summary("Ctrl+Q to the process gone, the minimal Textual app (the floor)", floors))
    return 0


if __name__ == "__main__":
    sys.exit(main())
