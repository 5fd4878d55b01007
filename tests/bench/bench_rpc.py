"""Benchmark of the tool channel (the Unix socket transport). Prints figures; asserts nothing.

    python tests/bench/bench_rpc.py [--calls 10000] [--over-mb 1] [--no-huge] [--flood]

Figures:

* ``--calls`` read_file calls from one script through a real kernel: calls per second, the
  median / p99 latency of one call as the script sees it and the calls that failed; beside the
  floor measured in the same run (issue 38): one JSON line there and back between two Python
  processes over a Unix socket, shaped as a read_file call (targets: median <= 1.5x the floor,
  p99 <= 4x the floor's median, 0 errors). Once sandboxed (bubblewrap or Landlock, as this
  machine allows) and once with ``sandbox: off``: the difference is the sandbox's own cost.
* one request line of ``MAX_REQUEST_BYTES`` plus ``--over-mb`` MiB (64 MiB + 1 MiB by default)
  sent by a hostile script until the host refuses it: time until the refusal reaches the
  script, host CPU spent, host RSS growth (peak, sampled every 2 ms) and the event loop's
  worst lag while it happens (targets: lag <= 50 ms, RSS growth <= 80 MB).
* ``--flood``: 16 connections each streaming a 60 MiB line at once (host RSS growth, time).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared hostile scripts

from hermes_tui.config import parse_config  # noqa: E402
from hermes_tui.runtime import Runtime  # noqa: E402
from hermes_tui.runtime.rpc import MAX_REQUEST_BYTES  # noqa: E402
from hostile import HostWatch, huge_line  # noqa: E402

CALLS = """
import json, statistics, time
from hermes_tools import read_file
times = []
errors = 0
start = time.perf_counter()
for _ in range({calls}):
    t = time.perf_counter()
    r = read_file('data.txt', limit=1)
    times.append(time.perf_counter() - t)
    errors += 'error' in r or r.get('content') != '     1|line 0\\n'
total = time.perf_counter() - start
times.sort()
print(json.dumps({{"rate": {calls} / total, "median": statistics.median(times),
                  "p99": times[int(len(times) * 0.99)], "errors": errors}}))
"""

# Many connections at once, each streaming a big line (threads in the script).
FLOOD = """
import json, os, socket, threading, time
def stream(out, index):
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.connect(os.environ["HERMES_RPC_SOCKET"])
        chunk = b"x" * (1 << 20)
        for _ in range({mib}):
            sock.sendall(chunk)
        out[index] = "sent all"
        sock.settimeout(2)
        out[index] = sock.recv(300).decode("utf-8", "replace") or "closed"
    except OSError as exc:
        out[index] = "error: %s" % exc
    finally:
        sock.close()
out = {{}}
start = time.perf_counter()
threads = [threading.Thread(target=stream, args=(out, i)) for i in range({connections})]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps({{"elapsed": time.perf_counter() - start, "outcomes": sorted(set(v[:60] for v in out.values()))}}))
"""


FLOOR_SERVER = r"""
import json, socket, sys
server = socket.socket(socket.AF_UNIX)
server.bind(sys.argv[1])
server.listen(1)
print("ready", flush=True)
connection, _ = server.accept()
lines = connection.makefile("rb")
result = {"path": sys.argv[1], "content": "     1|line 0\n", "total_lines": 100, "offset": 1, "limit": 1}
for line in lines:
    request = json.loads(line)
    connection.sendall((json.dumps({"id": request["id"], "result": result}) + "\n").encode())
"""

FLOOR_CLIENT = r"""
import json, socket, statistics, sys, time
sock = socket.socket(socket.AF_UNIX)
sock.connect(sys.argv[1])
lines = sock.makefile("rb")
calls, times = int(sys.argv[2]), []
for n in range(calls):
    started = time.perf_counter()
    sock.sendall((json.dumps({"id": n, "token": "t" * 43, "tool": "read_file",
                              "args": {"path": "data.txt", "limit": 1}}) + "\n").encode())
    json.loads(lines.readline())
    times.append(time.perf_counter() - started)
times.sort()
print(json.dumps({"median": statistics.median(times), "p99": times[int(len(times) * 0.99)]}))
"""


def floor(calls: int, folder: Path) -> dict[str, float]:
    """The floor of a tool call (issue 38): one JSON line there and back between two Python
    processes over a Unix socket, the request and the reply shaped as a read_file call's."""
    import subprocess

    path = str(folder / "floor.sock")
    server = subprocess.Popen([sys.executable, "-c", FLOOR_SERVER, path], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        out = subprocess.run([sys.executable, "-c", FLOOR_CLIENT, path, str(calls)], capture_output=True,
                             text=True, check=True).stdout
    finally:
        server.wait(timeout=30)
        os.unlink(path)
    return json.loads(out)


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def calls_figures(calls: int, folder: Path, sandbox: str) -> dict[str, float]:
    """``calls`` read_file calls from one script in a kernel with ``code_execution.sandbox``."""
    config = parse_config(f"code_execution:\n  max_tool_calls: {calls + 10}\n  timeout: 600\n  sandbox: {sandbox}\n")
    async with Runtime(config) as rt:
        await rt.execute_code(CALLS.format(calls=10), session="b", cwd=folder)  # warm: its calls wait for the tools' imports
        result = await rt.execute_code(CALLS.format(calls=calls), session="b", cwd=folder)
        assert result.status == "success", (result.error, result.output[-500:])
        figures = json.loads(result.output)
        figures["label"] = rt.sandbox.label
        return figures


async def bench(calls: int, over_mb: int, huge: bool, flood: bool, folder: Path) -> None:
    base = floor(calls, folder)
    print(f"floor (one JSON line there and back between two Python processes over a Unix socket, "
          f"same run): median {base['median'] * 1e6:.0f} us, p99 {base['p99'] * 1e6:.0f} us")
    medians = {}
    for sandbox in ("workspace-write", "off"):  # the sandbox's own cost is the difference
        figures = await calls_figures(calls, folder, sandbox)
        medians[sandbox] = figures["median"]
        print(f"{calls:,} read_file calls from one script, sandbox {figures['label']}: {figures['rate']:,.0f} calls/s, "
              f"median {figures['median'] * 1e6:.0f} us, p99 {figures['p99'] * 1e6:.0f} us, {figures['errors']} errors")
        print(f"  ratio: median {figures['median'] / base['median']:.2f}x the floor (target <= 1.5x), "
              f"p99 {figures['p99'] / base['median']:.2f}x the floor's median (target <= 4x)")
    print(f"  the sandbox's own cost: {(medians['workspace-write'] - medians['off']) * 1e6:+.0f} us a call (median)")

    size = MAX_REQUEST_BYTES + (over_mb << 20)
    if not huge:
        return
    # The hostile scripts connect to the socket themselves, which a sandboxed script cannot (it
    # asks the host for each connection): these limits are the host's, measured unsandboxed.
    async with Runtime(parse_config("code_execution:\n  sandbox: 'off'\n  timeout: 600\n")) as rt:
        await rt.execute_code("1", session="huge")
        watch = HostWatch(every=0.002, tick=0.001)
        cpu_before = cpu()
        (result,) = await watch.during(asyncio.ensure_future(
            rt.execute_code(huge_line(size), session="huge", timeout=600)))
        figures = json.loads(result.output)  # type: ignore[union-attr]
        print(f"a {size / (1 << 20):.0f} MiB request line: refused after {figures['elapsed']:.2f} s "
              f"({figures['sent'] / (1 << 20):.0f} MiB sent), host CPU {cpu() - cpu_before:.2f} s, "
              f"host RSS growth (peak) {watch.rss_growth / 1e6:.1f} MB, "
              f"event-loop lag max {watch.lag * 1000:.1f} ms")
        print(f"  reply: {figures['reply'].strip()[:200]}")

        if flood:
            await rt.execute_code("1", session="flood")
            watch = HostWatch(every=0.002, tick=0.001)
            cpu_before = cpu()
            (result,) = await watch.during(asyncio.ensure_future(rt.execute_code(
                FLOOD.format(mib=60, connections=16), session="flood", timeout=600)))
            figures = json.loads(result.output)  # type: ignore[union-attr]
            print(f"16 connections x 60 MiB: done after {figures['elapsed']:.2f} s, host CPU "
                  f"{cpu() - cpu_before:.2f} s, host RSS growth (peak) {watch.rss_growth / 1e6:.1f} MB, "
                  f"event-loop lag max {watch.lag * 1000:.1f} ms")
            print(f"  outcomes: {figures['outcomes']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--over-mb", type=int, default=1)
    parser.add_argument("--no-huge", action="store_true", help="only the calls figure")
    parser.add_argument("--flood", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as home:
        os.environ["HERMES_HOME"] = home  # never the user's real ~/.hermes
        folder = Path(home) / "project"
        folder.mkdir()
        (folder / "data.txt").write_text("".join(f"line {i}\n" for i in range(100)))
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")
        asyncio.run(bench(args.calls, args.over_mb, not args.no_huge, args.flood, folder))


if __name__ == "__main__":
    main()
