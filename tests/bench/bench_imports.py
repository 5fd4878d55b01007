"""Benchmark of closing the host's imports (issue 31, runtime/import_guard.py). Prints figures;
asserts nothing.

    python tests/bench/bench_imports.py [--runs 7]

Each figure is the median of ``--runs`` fresh processes (a process imports a module once):

* **close**: :func:`close_imports` in a process that imported what the app has when its runtime
  starts (the app, the workspace, the tools' preload): the time to snapshot the folders modules
  came from and put the guard in place, how many folders, and the memory it keeps;
* **preload**: what the transport modules added to ``preload()`` cost (httpcore, h11, anyio's
  asyncio backend, sniffio, certifi: imported anyway by the first web or model request);
* **per import**: importing every Pygments lexer module (226) with and without the guard, and
  the guard's check alone (``find_spec`` through it vs the path finder, no import);
* **the alternative**: importing every lexer at start instead (time, memory).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

PROBE = r'''
import gc, importlib, json, sys, time, tracemalloc

def rss_kib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS"))

what = sys.argv[1]
out = {}
import hermes_tui.tui.app, hermes_tui.agent.workspace  # noqa: E401  what the app holds by then
from hermes_tui.runtime.tools import dispatch
from hermes_tui.runtime import import_guard

if what == "preload":
    extra = ("httpcore", "httpcore._backends.auto", "httpcore._backends.anyio", "h11", "anyio._backends._asyncio",
             "sniffio", "certifi")
    dispatch.LAZY_IMPORTS = tuple(m for m in dispatch.LAZY_IMPORTS if m not in extra)
    started, rss = time.perf_counter(), rss_kib()
    dispatch.preload()
    out["preload_ms"] = (time.perf_counter() - started) * 1000
    count, started, rss = len(sys.modules), time.perf_counter(), rss_kib()
    for name in extra:
        importlib.import_module(name)
    out["extra_ms"] = (time.perf_counter() - started) * 1000
    out["extra_mib"] = (rss_kib() - rss) / 1024
    out["extra_modules"] = len(sys.modules) - count
else:
    dispatch.preload()

if what == "close":
    gc.collect()
    started = time.perf_counter()
    guard = import_guard.close_imports()
    out["close_ms"] = (time.perf_counter() - started) * 1000
    out["folders"] = len(guard.known)
    out["modules"] = len(guard.loaded_at_close)
    tracemalloc.start()  # what it keeps: the same two structures made again, traced
    kept = (import_guard.snapshot(list(sys.modules.values()), list(sys.path)), frozenset(sys.modules))
    out["kept_kib"] = tracemalloc.get_traced_memory()[0] / 1024
    tracemalloc.stop()

if what in ("lexers", "lexers-guarded"):
    from pygments.lexers._mapping import LEXERS
    names = sorted({entry[0] for entry in LEXERS.values()})
    if what == "lexers-guarded":
        guard = import_guard.close_imports()
    started, rss = time.perf_counter(), rss_kib()
    for name in names:
        importlib.import_module(name)
    out["ms"] = (time.perf_counter() - started) * 1000
    out["mib"] = (rss_kib() - rss) / 1024
    out["count"] = len(names)

if what == "check":
    from importlib.machinery import PathFinder
    from pygments.lexers._mapping import LEXERS
    import pygments.lexers
    names = sorted({entry[0] for entry in LEXERS.values()})
    path = pygments.lexers.__path__
    guard = import_guard.close_imports()
    for label, find in (("plain_us", lambda n: PathFinder.find_spec(n, path)),
                        ("guarded_us", lambda n: guard.find_spec(n, path))):
        started = time.perf_counter()
        for _ in range(5):
            for name in names:
                find(name)
        out[label] = (time.perf_counter() - started) * 1e6 / (5 * len(names))

print(json.dumps(out))
'''


def probe(*whats: str, runs: int) -> list[dict[str, float]]:
    """The medians of each probe; the probes alternate, so a busy moment weighs on all."""
    results: dict[str, list[dict[str, float]]] = {what: [] for what in whats}
    for _ in range(runs):
        for what in whats:
            done = subprocess.run([sys.executable, "-c", PROBE, what], capture_output=True, text=True, check=True)
            results[what].append(json.loads(done.stdout.strip().splitlines()[-1]))
    return [{key: statistics.median(r[key] for r in results[what]) for key in results[what][0]} for what in whats]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs

    [close] = probe("close", runs=runs)
    print(f"close_imports at start: {close['close_ms']:.1f} ms, {close['folders']:.0f} folders for "
          f"{close['modules']:.0f} modules, {close['kept_kib']:.0f} KiB kept")
    [pre] = probe("preload", runs=runs)
    print(f"preload(): {pre['preload_ms']:.0f} ms before; the transport modules add {pre['extra_ms']:.0f} ms, "
          f"{pre['extra_mib']:.1f} MiB ({pre['extra_modules']:.0f} modules)")
    plain, guarded = probe("lexers", "lexers-guarded", runs=runs)
    per = (guarded["ms"] - plain["ms"]) * 1000 / plain["count"]
    print(f"every Pygments lexer module ({plain['count']:.0f}): {plain['ms']:.0f} ms without the guard, "
          f"{guarded['ms']:.0f} ms with it ({per:+.0f} us per import)")
    [check] = probe("check", runs=runs)
    print(f"find_spec alone: {check['plain_us']:.0f} us through the path finder, {check['guarded_us']:.0f} us "
          f"through the guard (+{check['guarded_us'] - check['plain_us']:.0f} us: the stat calls)")
    print(f"the alternative, every lexer imported at start: {plain['ms']:.0f} ms, {plain['mib']:.1f} MiB more RSS")


if __name__ == "__main__":
    main()
