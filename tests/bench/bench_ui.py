"""Benchmark of the workstation. Prints figures; asserts nothing.

    python tests/bench/bench_ui.py [--flood-mb 200] [--floods 30] [--starts 5] [--resume 2000] [--tmpfs]

Figures: a script's flood of N MB, in rounds of three (headless, through the app with nobody
typing, through the app with a focus change every 30 ms), its wall time and the ratio to the
headless one of the same rounds; the latency of those key presses (time from a key to its
effect, a focus change) as median, p99 and max; the app's peak-RSS growth; the time from the app's first frame
to the newest screen of a stored session of M messages (`--resume`) drawn; and the time to the
first screen of the installed `hermes-tui` in a real terminal (tmux), from launch until its
input hint is drawn.
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

from bench_exec import FLOOD_LINES as FLOOD  # noqa: E402  (this folder is on sys.path when run)


ENTER_AFTER = 0.05
"""Seconds between the script drawn in the input and Enter: a person does not press Enter
within the frame that shows what they typed (within 1 ms, the frame that shows the run waited
for Textual's next frame tick, up to 17 ms, which no one typing meets)."""


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of ``values`` (sorted or not)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered) + 0.5) - 1))]


async def headless_flood(rt: object, megabytes: int, folder: str) -> float:
    """One flood through ``Runtime.execute_code`` with no app (wall seconds): the figure the
    app's flood is measured against. Its spill file is removed (the disk is not the subject)."""
    started = time.perf_counter()
    result = await rt.execute_code(FLOOD.format(chunks=megabytes * 16).strip() + "\n",  # type: ignore[attr-defined]
                                   session="headless", cwd=folder)
    wall = time.perf_counter() - started
    assert result.stdout_bytes_total == megabytes * 16 * 65500, result.stdout_bytes_total
    if result.stdout_spill_path:
        Path(result.stdout_spill_path).unlink()
    return wall


def quartiles(values: list[float]) -> str:
    """The first and third quartiles of ``values``, as ``a-b``."""
    first, _, third = statistics.quantiles(values, n=4) if len(values) > 1 else (values * 3)
    return f"{first:.2f}-{third:.2f}"


def run_seconds(block: object) -> float:
    """How long the run itself took (the runtime's own timing), for a finished block."""
    result = getattr(block, "result", None)
    return result.duration_seconds if result is not None else float("nan")


def drop_spill(block: object) -> None:
    """Remove a finished run's spill file (2 GB of them would only weigh on the disk)."""
    result = getattr(block, "result", None)
    if result is not None and result.stdout_spill_path:
        Path(result.stdout_spill_path).unlink(missing_ok=True)


async def flood(megabytes: int, folder: str, floods: int = 3) -> None:
    """Rounds of three floods, each after ``sync`` (so the disk's write-back of the last one
    does not weigh on the next): headless; through the app with nobody typing (the screen only);
    through the app with a focus change every 30 ms (the keys' latency, and what they cost)."""
    from textual.events import Key

    from hermes_tui.tui.app import HermesApp
    from hermes_tui.runtime import Runtime
    from hermes_tui.tui.widgets.conversation import PromptInput, RunBlock

    default_interval = sys.getswitchinterval()
    app = HermesApp(cwd=folder)
    headless: list[float] = []
    quiet: list[float] = []
    typed: list[float] = []
    latencies: list[float] = []
    idle: list[float] = []
    runs_quiet: list[float] = []
    runs_typed: list[float] = []
    """The runs' own durations (``ExecResult.duration_seconds``: the kernel's run as the runtime
    timed it, without the app's work before and after it)."""
    async with app.run_test(size=(140, 40)) as pilot, Runtime() as rt:
        await rt.execute_code("1", session="headless", cwd=folder)
        await pilot.pause()
        prompt = app.query_one(PromptInput)
        prompt.insert("1")
        await pilot.press("enter")  # warm the kernel
        while not (app.query(RunBlock) and app.query(RunBlock).last().status == "success"):
            await asyncio.sleep(0.05)
        for index in range(10):  # the same keys with nothing running, for comparison
            target = ("kernel-table", "prompt")[index % 2]
            pressed = time.perf_counter()
            app.post_message(Key("f4" if target == "kernel-table" else "f2", None))
            while app.focused is None or app.focused.id != target:
                await asyncio.sleep(0.002)
            idle.append(time.perf_counter() - pressed)
            await asyncio.sleep(0.05)
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

        async def through_app(keys: bool) -> float:
            runs = len(app.query(RunBlock))
            app.query_one("#prompt").focus()
            await pilot.pause()
            prompt.insert(FLOOD.format(chunks=megabytes * 16).strip() + "\n")
            prompt.move_cursor(prompt.document.end)
            await pilot.pause()  # the script is drawn in the input
            await asyncio.sleep(ENTER_AFTER)
            started = time.perf_counter()
            app.post_message(Key("enter", None))  # not pilot.press: that waits for the app to be idle
            while len(app.query(RunBlock)) <= runs:
                await asyncio.sleep(0.002)
            block = app.query(RunBlock).last()
            if not keys:
                while block.status == "running":
                    await asyncio.sleep(0.002)
                wall = time.perf_counter() - started
                runs_quiet.append(run_seconds(block))
                drop_spill(block)
                return wall
            ended: list[float] = []

            async def watch() -> None:
                # The end as the app shows it, seen within 2 ms (the key loop below sees it late).
                while block.status == "running":
                    await asyncio.sleep(0.002)
                ended.append(time.perf_counter())

            watcher = asyncio.create_task(watch())
            targets = ("kernel-table", "prompt")
            while block.status == "running":
                target = targets[len(latencies) % 2]
                pressed = time.perf_counter()
                app.post_message(Key("f4" if target == "kernel-table" else "f2", None))
                while app.focused is None or app.focused.id != target:  # its effect: focus moved
                    await asyncio.sleep(0.002)
                latencies.append(time.perf_counter() - pressed)
                await asyncio.sleep(0.03)
            await watcher
            runs_typed.append(run_seconds(block))
            drop_spill(block)
            return ended[0] - started

        app_interval = sys.getswitchinterval()  # the app's (HermesApp sets its own)
        for _ in range(floods):
            os.sync()
            sys.setswitchinterval(default_interval)  # headless as `hermes-tui run` has it
            headless.append(await headless_flood(rt, megabytes, folder))
            sys.setswitchinterval(app_interval)
            os.sync()
            quiet.append(await through_app(keys=False))
            os.sync()
            typed.append(await through_app(keys=True))
        rss_growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before
        result = app.query(RunBlock).last().result
        lines = len(app.query_one("#output-log").lines)
    base = statistics.median(headless)
    print(f"flood {megabytes} MB, {floods} rounds (each flood after sync), {result.stdout_bytes_total:,} bytes each:")
    print(f"  headless (Runtime.execute_code, no app): median {base:.3f} s wall "
          f"(min {min(headless):.3f}, max {max(headless):.3f})")
    for name, walls, runs in (("through the app, nobody typing", quiet, runs_quiet),
                              ("through the app, a focus change every 30 ms", typed, runs_typed)):
        print(f"  {name}: median {statistics.median(walls):.3f} s (Enter to the run shown ended; "
              f"min {min(walls):.3f}, max {max(walls):.3f}); ratio to headless {statistics.median(walls) / base:.2f}; "
              f"the run itself {statistics.median(runs):.3f} s, ratio {statistics.median(runs) / base:.2f}")
        # The same ratio round by round (each app flood over the headless one just before it):
        # the machine's pace drifts by 2-3x over a minute, and a round's floods share it.
        paired = sorted(wall / alone for wall, alone in zip(walls, headless))
        itself = sorted(run / alone for run, alone in zip(runs, headless))
        print(f"    round by round: Enter to shown {statistics.median(paired):.2f}x "
              f"(middle half {quartiles(paired)}), the run itself {statistics.median(itself):.2f}x "
              f"(middle half {quartiles(itself)})")
    print(f"  the output pane holds {lines} lines")
    if latencies:
        print(f"key-to-effect latency during the floods, {len(latencies)} presses: median "
              f"{statistics.median(latencies) * 1000:.1f} ms, p99 {percentile(latencies, 0.99) * 1000:.1f} ms, "
              f"max {max(latencies) * 1000:.1f} ms")
    print(f"the same keys with nothing running, {len(idle)} presses: median {statistics.median(idle) * 1000:.1f} ms, "
          f"max {max(idle) * 1000:.1f} ms")
    print(f"app peak-RSS growth during the floods: {rss_growth / 1024:.1f} MB")


def make_session(home: Path, messages: int, session: str = "big") -> None:
    """A stored session of ``messages`` messages: turns of a question, a reply calling
    ``terminal``, its result and a Markdown reply."""
    from hermes_tui.storage import sessions as db
    from hermes_tui.storage.writer import SessionStore

    store = SessionStore.open(home)
    store.sync(db.create_session, session, "custom", "m", str(home))
    reply = "Here is **a** reply with a list:\n\n- one\n- two\n\n```python\nprint(1)\n```\n"
    for index in range(messages // 4):
        turn = f"t{index}"
        store.sync(db.start_turn, session, turn, "user", f"question {index}")
        call = {"id": f"c{index}", "type": "function",
                "function": {"name": "terminal", "arguments": '{"command": "ls"}'}}
        message = store.sync(db.add_message, session, turn, "assistant", "Looking.", tool_calls=[call])
        store.sync(db.start_tool_call, session, turn, message, call["id"], "terminal", '{"command": "ls"}')
        store.sync(db.finish_tool_call, session, turn, call["id"], "success", {"output": "a", "exit_code": 0},
                   '{"output": "a"}', None)
        store.sync(db.add_message, session, turn, "assistant", f"{reply}\nreply {index}")
        store.sync(db.end_turn, turn, "done")
    store.close()


async def resume_draw(messages: int) -> dict[str, float]:
    """Open a stored session of ``messages`` messages (as ``--resume`` does): seconds from
    start to the first frame, to the session read, and to its newest screen drawn (the newest
    reply rendered, the transcript at its end, one more frame); and the blocks drawn."""
    from textual import events

    from hermes_tui.tui.app import HermesApp
    from hermes_tui.config import parse_config
    from hermes_tui.tui.widgets.conversation import ReplyBlock

    home = Path(tempfile.mkdtemp(prefix="bench-resume-"))
    try:
        make_session(home, messages)
        newest = f"reply {messages // 4 - 1}"
        config = parse_config("model:\n  provider: custom\n  default: m\n  base_url: http://127.0.0.1:9/v1\n")
        app = HermesApp(config, cwd=str(home), home=home, session="big")
        seen: dict[str, float] = {}

        def hook(message: object) -> None:
            if isinstance(message, events.Ready) and "frame" not in seen:
                seen["frame"] = time.perf_counter()

        start = time.perf_counter()
        async with app.run_test(size=(140, 40), message_hook=hook) as pilot:
            while not app.agent:
                await pilot.pause(0.002)
            loaded = time.perf_counter() - start

            def drawn() -> bool:
                transcript = app.query_one("#transcript")
                replies = [b for b in transcript.children if isinstance(b, ReplyBlock)]
                return bool(replies) and newest in replies[-1].text and bool(replies[-1].children) \
                    and transcript.max_scroll_y > 0 and transcript.scroll_y >= transcript.max_scroll_y
            while not drawn():
                await pilot.pause(0.002)
            await pilot.pause()  # the frame that shows it
            done = time.perf_counter() - start
            blocks = len(app.query("#transcript > *"))
        return {"frame": seen.get("frame", start) - start, "loaded": loaded, "drawn": done, "blocks": blocks}
    finally:
        shutil.rmtree(home, ignore_errors=True)


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
    parser.add_argument("--floods", type=int, default=30,
                        help="rounds; the figures wander run to run by 0.1x below about 30")
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--resume", type=int, default=2000, help="messages in the stored session opened")
    parser.add_argument("--tmpfs", action="store_true",
                        help="HERMES_HOME in /dev/shm: the spill files in memory, so the disk's write-back "
                             "(which varies a flood by 2-4x from one minute to the next) does not drown the app's share")
    args = parser.parse_args()
    where = "/dev/shm" if args.tmpfs and os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(prefix="hermes-bench-", dir=where) as home:
        os.environ["HERMES_HOME"] = home  # never the user's real ~/.hermes
        folder = tempfile.mkdtemp(dir=home)
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, HERMES_HOME on "
              f"{'tmpfs (/dev/shm)' if where else 'disk'}")
        asyncio.run(flood(args.flood_mb, folder, args.floods))
        figures = asyncio.run(resume_draw(args.resume))
        print(f"resume of a stored session of {args.resume} messages: first frame {figures['frame'] * 1000:.0f} ms "
              f"after start, newest screen drawn {(figures['drawn'] - figures['frame']) * 1000:.0f} ms after the "
              f"first frame ({figures['blocks']:.0f} blocks in the transcript)")
        first_screen(args.starts, home, folder)


if __name__ == "__main__":
    main()
