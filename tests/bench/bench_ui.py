"""Benchmark of the workstation. Prints figures; asserts nothing.

    python tests/bench/bench_ui.py [--flood-mb 200] [--starts 5]

Figures: while a script floods the output pane with N MB, the latency of key presses (time
from a key to its effect, a focus change), the app's peak-RSS growth and the flood's wall
time; and the time to the first screen of the installed `hermes-tui` in a real terminal
(tmux), from launch until its input hint is drawn.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FLOOD = """
import sys
line = b'x' * 99 + b'\\n'
chunk = line * 655
for _ in range({chunks}):
    sys.stdout.buffer.write(chunk)
sys.stdout.flush()
"""


async def flood(megabytes: int, folder: str) -> None:
    from textual.events import Key

    from hermes_tui.app import HermesApp
    from hermes_tui.widgets.conversation import PromptInput, RunBlock

    app = HermesApp(cwd=folder)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        prompt = app.query_one(PromptInput)
        prompt.insert("1")
        await pilot.press("enter")  # warm the kernel
        while not (app.query(RunBlock) and app.query(RunBlock).last().status == "success"):
            await asyncio.sleep(0.05)
        idle = []
        for index in range(10):  # the same keys with nothing running, for comparison
            target = ("kernel-table", "prompt")[index % 2]
            pressed = time.perf_counter()
            app.post_message(Key("f4" if target == "kernel-table" else "f2", None))
            while app.focused is None or app.focused.id != target:
                await asyncio.sleep(0.002)
            idle.append(time.perf_counter() - pressed)
            await asyncio.sleep(0.05)
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        prompt.focus()
        prompt.insert(FLOOD.format(chunks=megabytes * 16).strip() + "\n")
        prompt.move_cursor(prompt.document.end)
        started = time.perf_counter()
        app.post_message(Key("enter", None))  # not pilot.press: that waits for the app to be idle
        while len(app.query(RunBlock)) < 2:
            await asyncio.sleep(0.002)
        latencies = []
        targets = ["#kernel-table", "#prompt"]
        while app.query(RunBlock).last().status == "running":
            target = targets[len(latencies) % 2]
            key = "f4" if target == "#kernel-table" else "f2"
            pressed = time.perf_counter()
            app.post_message(Key(key, None))
            while app.focused is None or app.focused.id != target.lstrip("#"):  # its effect: focus moved
                await asyncio.sleep(0.002)
            latencies.append(time.perf_counter() - pressed)
            await asyncio.sleep(0.05)
        wall = time.perf_counter() - started
        rss_growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before
        result = app.query(RunBlock).last().result
        lines = len(app.query_one("#output-log").lines)
    print(f"flood {megabytes} MB through the app: {wall:.2f} s wall, {result.stdout_bytes_total:,} bytes, "
          f"output pane holds {lines} lines")
    if latencies:
        latencies.sort()
        print(f"key-to-effect latency during the flood, {len(latencies)} presses: median "
              f"{statistics.median(latencies) * 1000:.1f} ms, max {latencies[-1] * 1000:.1f} ms")
    print(f"the same keys with nothing running, {len(idle)} presses: median {statistics.median(idle) * 1000:.1f} ms, "
          f"max {max(idle) * 1000:.1f} ms")
    print(f"app peak-RSS growth during the flood: {rss_growth / 1024:.1f} MB")


def first_screen(starts: int, home: str, folder: str) -> None:
    tmux = shutil.which("tmux")
    app = Path(sys.executable).parent / "hermes-tui"
    if tmux is None or not app.exists():
        print("first screen: skipped (needs tmux and an installed hermes-tui)")
        return
    times = []
    for run in range(starts):
        socket = f"hermes-bench-{os.getpid()}-{run}"
        started = time.perf_counter()
        subprocess.run([tmux, "-L", socket, "-f", "/dev/null", "new-session", "-d", "-s", "b", "-x", "160", "-y", "48",
                        "-e", f"HERMES_HOME={home}", "-c", folder, f"exec {app}"], check=True)
        try:
            while True:
                screen = subprocess.run([tmux, "-L", socket, "capture-pane", "-p", "-t", "b"],
                                        capture_output=True, text=True).stdout
                if "No model: type Python" in screen:
                    times.append(time.perf_counter() - started)
                    break
                if time.perf_counter() - started > 20:
                    print("first screen: did not appear in 20 s")
                    break
                time.sleep(0.01)
        finally:
            subprocess.run([tmux, "-L", socket, "kill-server"], capture_output=True)
    if times:
        print(f"first screen in tmux, median of {len(times)}: {statistics.median(times) * 1000:.0f} ms "
              f"(min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flood-mb", type=int, default=200)
    parser.add_argument("--starts", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as home:
        os.environ["HERMES_HOME"] = home  # never the user's real ~/.hermes
        folder = tempfile.mkdtemp(dir=home)
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")
        asyncio.run(flood(args.flood_mb, folder))
        first_screen(args.starts, home, folder)


if __name__ == "__main__":
    main()
