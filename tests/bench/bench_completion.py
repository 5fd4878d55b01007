"""Benchmark of Tab completion from the idle kernel (issue 32). Prints figures; asserts nothing.

    python tests/bench/bench_completion.py [--rounds 200] [--keys 100000] [--files 20000]

Figures: the median and p95 time from the host's request to the answer (what a Tab waits
for before the popup), for names (``pri``), a module's attributes (``os.pa``), an instance's
attributes, the keys of a dict of ``--keys`` str keys (``d["k1``) and the paths of a folder of
``--files`` files (``open("big/f1``); and how many candidates came back (at most 500). Runs in a
temporary HERMES_HOME, with the sandbox the machine gives.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

SETUP = """
import os
class Point:
    def __init__(self):
        self.x, self.y, self.label = 1, 2, "p"
    def norm(self): return 0
p = Point()
d = {{f"k{{i}}": i for i in range({keys})}}
os.makedirs("big", exist_ok=True)
for i in range({files}):
    open(f"big/f{{i}}", "w").close()
"""

CASES = {"names": "pri", "module attributes": "os.pa", "instance attributes": "p.", "dict keys": 'd["k1',
         "paths": 'open("big/f1'}


async def measure(rounds: int, keys: int, files: int, work: Path) -> None:
    from hermes_tui.runtime import Runtime

    async with Runtime() as rt:
        result = await rt.execute_code(SETUP.format(keys=keys, files=files), session="bench", cwd=str(work))
        assert result.status == "success", result.error
        for label, text in CASES.items():
            times, found = [], 0
            for _ in range(rounds):
                started = time.perf_counter()
                if label == "names":
                    answer = await rt.kernel_names("bench")
                else:
                    answer = await rt.kernel_completions("bench", text)
                times.append(time.perf_counter() - started)
                found = len(answer or ())
            times.sort()
            print(f"{label:20} median {statistics.median(times) * 1000:7.2f} ms   "
                  f"p95 {times[int(len(times) * 0.95)] * 1000:7.2f} ms   {found} candidates")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--files", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as work:
        os.environ["HERMES_HOME"] = home
        print(f"{args.rounds} rounds; a dict of {args.keys:,} keys; a folder of {args.files:,} files")
        asyncio.run(measure(args.rounds, args.keys, args.files, Path(work)))


if __name__ == "__main__":
    main()
