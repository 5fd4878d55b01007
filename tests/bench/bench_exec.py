"""Benchmark of the session-kernel engine. Prints figures; asserts nothing.

    python tests/bench/bench_exec.py [--flood-mb 200] [--floods 5] [--warm 200]

Figures: warm `print(1)` median (and p90) over N calls on one kernel, cold first call
(median of fresh sessions, kernel start included), a flood of N MB through the head/tail
capture with the full spill written (wall time and host peak-RSS growth) next to its floor
measured in the same run (the same script's bytes through ``| cat > file``) and the ratio,
interrupt latency
(``Runtime.interrupt`` -> the result back and the kernel idle with its state, for a Python
loop, a ``time.sleep`` and a ``subprocess.run(["sleep", "60"])``), and for scale a new Python
process per call (what a process-per-call design pays).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hermes_tui.runtime import Runtime

FLOOD = """
import sys
chunk = bytes(range(256)) * 256
write = sys.stdout.buffer.write
for _ in range({chunks}):
    write(chunk)
sys.stdout.flush()
"""

FLOOD_LINES = """
import sys
line = b'x' * 99 + b'\\n'
chunk = line * 655
for _ in range({chunks}):
    sys.stdout.buffer.write(chunk)
sys.stdout.flush()
"""
"""The flood of ``bench_ui.py`` (100-byte lines, 65,500-byte writes)."""

FLOODS = {"64 KiB binary writes": (FLOOD, 65536), "100-byte lines (bench_ui's)": (FLOOD_LINES, 65500)}


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms"


async def bench(flood_mb: int, warm_calls: int, cold_calls: int, floods: int) -> None:
    async with Runtime() as rt:
        colds = []
        for index in range(cold_calls):
            started = time.perf_counter()
            result = await rt.execute_code("print(1)", session=f"cold-{index}")
            colds.append(time.perf_counter() - started)
            assert result.output == "1\n"
            await rt.dispose_session(f"cold-{index}")
        print(f"cold first call (kernel start + print(1)), median of {cold_calls}: {ms(statistics.median(colds))}"
              f"  (min {ms(min(colds))}, max {ms(max(colds))})")

        await rt.execute_code("print(1)", session="warm")
        warms = []
        for _ in range(warm_calls):
            started = time.perf_counter()
            result = await rt.execute_code("print(1)", session="warm")
            warms.append(time.perf_counter() - started)
        assert result.output == "1\n" and result.kernel.reused
        warms.sort()
        print(f"warm print(1), median of {warm_calls}: {ms(statistics.median(warms))}"
              f"  (p90 {ms(warms[int(len(warms) * 0.9)])}, min {ms(warms[0])})")

        await rt.execute_code("1", session="flood")
        for label, (template, write_size) in FLOODS.items():
            await flood(rt, label, template.format(chunks=flood_mb * 16), flood_mb * 16 * write_size, floods)


async def flood(rt: Runtime, label: str, code: str, size: int, floods: int) -> None:
    """The flood through ``execute_code`` next to its floor, interleaved (the same load on the
    machine for both): medians, and the ratio."""
    home = Path(os.environ["HERMES_HOME"])
    script, floor_file = home / "flood.py", home / "flood.out"
    script.write_text(code)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    walls, floors, cpus = [], [], []
    for _ in range(floods):
        floors.append(pipe_to_file_floor(script, floor_file, size))
        cpu = resource.getrusage(resource.RUSAGE_SELF)
        started = time.perf_counter()
        result = await rt.execute_code(code, session="flood")
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_SELF)
        cpus.append(after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime)
        spill = Path(result.stdout_spill_path)
        assert spill.stat().st_size == size == result.stdout_bytes_total
        spill.unlink()
    rss_growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before
    floor_file.unlink()
    wall, floor = statistics.median(walls), statistics.median(floors)
    print(f"flood of {size / 1e6:.1f} MB, {label}, capped, full spill written: {wall:.3f} s wall (median of "
          f"{floods}; min {min(walls):.3f}, max {max(walls):.3f}), host CPU {statistics.median(cpus):.3f} s, "
          f"host peak-RSS growth {rss_growth / 1024:.1f} MB")
    print(f"  floor, `python flood.py | cat > file` (the same bytes through a pipe to disk), median of {floods}: "
          f"{floor:.3f} s (min {min(floors):.3f}, max {max(floors):.3f}); ratio {wall / floor:.2f}")


def pipe_to_file_floor(script: Path, out: Path, size: int) -> float:
    """Seconds for ``python script | cat > out``: what moving the flood's bytes to disk costs."""
    started = time.perf_counter()
    with open(out, "wb") as sink:
        producer = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE)
        assert producer.stdout is not None
        copier = subprocess.Popen(["cat"], stdin=producer.stdout, stdout=sink)
        producer.stdout.close()
        copier.wait()
        producer.wait()
    elapsed = time.perf_counter() - started
    assert out.stat().st_size == size and producer.returncode == copier.returncode == 0
    return elapsed


INTERRUPTED = {
    "a Python loop": "while True:\n    pass",
    "time.sleep": "import time\ntime.sleep(60)",
    "subprocess.run(sleep 60)": "import subprocess\nsubprocess.run(['sleep', '60'])",
}


async def interrupts(rounds: int) -> None:
    """Interrupt -> result back with the kernel idle and its state kept, per kind of script."""
    async with Runtime() as rt:
        await rt.execute_code("kept = 42", session="i")
        for label, code in INTERRUPTED.items():
            times = []
            for _ in range(rounds):
                task = asyncio.create_task(rt.execute_code(code, session="i"))
                await asyncio.sleep(0.15)
                started = time.perf_counter()
                await rt.interrupt("i")
                result = await task
                times.append(time.perf_counter() - started)
                assert result.status == "interrupted" and result.warning is None, result.warning
            after = await rt.execute_code("print(kept)", session="i")
            assert after.output == "42\n" and not after.kernel.state_reset
            times.sort()
            print(f"interrupt -> idle with state, {label}, {rounds} rounds: median {ms(statistics.median(times))}, "
                  f"p90 {ms(times[int(len(times) * 0.9)])}")


def process_per_call(calls: int = 20) -> None:
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "print(1)"], capture_output=True, check=True)
        times.append(time.perf_counter() - started)
    print(f"for scale: a new Python process per call, median of {calls}: {ms(statistics.median(times))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flood-mb", type=int, default=200)
    parser.add_argument("--floods", type=int, default=5, help="floods (and floors) measured, medians shown")
    parser.add_argument("--warm", type=int, default=200)
    parser.add_argument("--cold", type=int, default=10)
    parser.add_argument("--interrupts", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as home:
        os.environ["HERMES_HOME"] = home  # never the user's real ~/.hermes
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, HERMES_HOME={home}")
        asyncio.run(bench(args.flood_mb, args.warm, args.cold, args.floods))
        asyncio.run(interrupts(args.interrupts))
        process_per_call()


if __name__ == "__main__":
    main()
