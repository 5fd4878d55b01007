"""Benchmark of tool calls from scripts. Prints figures; asserts nothing.

    python tests/bench/bench_tools.py [--runs 50] [--calls 2000]

Figures: one script making 50 read_file calls on a warm kernel (median time of the whole
script over N runs, and per call), and tool calls per second from one script, for the socket
and the file transport.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from hermes_tui.config import parse_config
from hermes_tui.runtime import Runtime

FIFTY = "from hermes_tools import read_file\nfor _ in range(50):\n    r = read_file('data.txt')\nassert 'error' not in r\n"
RATE = (
    "import time\nfrom hermes_tools import read_file\nstart = time.perf_counter()\n"
    "for _ in range({calls}):\n    read_file('data.txt', limit=1)\n"
    "print({calls} / (time.perf_counter() - start))\n"
)


async def bench(transport: str, runs: int, calls: int, folder: Path) -> None:
    config = parse_config(f"code_execution:\n  rpc_transport: {transport}\n  max_tool_calls: {calls + 10}\n")
    async with Runtime(config) as rt:
        await rt.execute_code(FIFTY, session="b", cwd=folder)  # warm: kernel up, tools imported
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            result = await rt.execute_code(FIFTY, session="b", cwd=folder)
            times.append(time.perf_counter() - started)
            assert result.status == "success" and result.tool_calls_made == 50, result.output
        median = statistics.median(times)
        print(f"[{transport}] script with 50 read_file calls, median of {runs}: {median * 1000:.2f} ms "
              f"({median * 1000 / 50:.3f} ms per call, min {min(times) * 1000:.2f} ms)")
        rate = await rt.execute_code(RATE.format(calls=calls), session="b", cwd=folder)
        print(f"[{transport}] tool calls per second from one script ({calls} read_file calls): "
              f"{float(rate.output):,.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as home:
        os.environ["HERMES_HOME"] = home  # never the user's real ~/.hermes
        folder = Path(home) / "project"
        folder.mkdir()
        (folder / "data.txt").write_text("".join(f"line {i}\n" for i in range(100)))
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")
        asyncio.run(bench("socket", args.runs, args.calls, folder))
        asyncio.run(bench("file", max(5, args.runs // 10), min(args.calls, 300), folder))


if __name__ == "__main__":
    main()
