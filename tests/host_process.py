"""A host process for tests that must measure or kill the host itself.

    python host_process.py flood MEGABYTES   -> prints one JSON line with the result and RSS
    python host_process.py orphans           -> starts kernels with grandchildren, prints their
                                                 pids as JSON, then waits to be killed
    python host_process.py shell TAG         -> a script waits on terminal("sleep TAG") (approvals
                                                 off); prints the staging dir, waits to be killed
    python host_process.py spilling          -> a script's output is being spilled; prints the
                                                 cache dir, waits to be killed
    python host_process.py peek SECRET       -> runs PEEK (tests/attacks) in two kernels, a shell
                                                 command and an interpreter probe of a planted
                                                 venv, with approvals off; prints what each saw
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys

from hermes_tui.config import parse_config
from hermes_tui.runtime import Runtime
from hermes_tui.runtime import lineage

FLOOD = """
import sys
chunk = bytes(range(256)) * 256  # 64 KiB, every byte value
write = sys.stdout.buffer.write
for _ in range({chunks}):
    write(chunk)
sys.stdout.flush()
"""


def peak_rss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


async def flood(megabytes: int) -> None:
    async with Runtime() as rt:
        await rt.execute_code("1", session="flood")  # warm: the kernel is up
        before = peak_rss_kib()
        result = await rt.execute_code(FLOOD.format(chunks=megabytes * 16), session="flood")
        after = peak_rss_kib()
        print(json.dumps({"result": result.model_dump(mode="json"), "rss_growth_kib": after - before}))


async def orphans() -> None:
    rt = await Runtime().start()
    pids = []
    for session in ("a", "b"):
        await rt.execute_code("import subprocess\np = subprocess.Popen(['sleep', '300'])", session=session)
        grandchild = (await rt.execute_code("print(p.pid)", session=session)).output.strip()
        kernel = next(k for k in rt.kernels() if k.session == session)
        pids += [lineage.host_pid(int(grandchild), kernel.pid, depth=8)]  # its pid namespace's number
    pids += [k.pid for k in rt.kernels()]
    # A script that is busy (holding the GIL in a loop) when the host dies.
    asyncio.ensure_future(rt.execute_code("while True: pass", session="busy"))
    await asyncio.sleep(0.5)
    pids += [k.pid for k in rt.kernels() if k.session == "busy"]
    print(json.dumps(pids), flush=True)
    await asyncio.sleep(600)


async def shell(tag: str) -> None:
    rt = await Runtime(parse_config("approvals:\n  mode: \"off\"\n")).start()
    code = f"from hermes_tools import terminal\nterminal('sleep {tag}; echo done')"
    asyncio.ensure_future(rt.execute_code(code, session="t"))
    print(json.dumps({"staging": str(rt._staging_root)}), flush=True)
    await asyncio.sleep(600)


async def spilling() -> None:
    """A script whose output is being saved (over the cap) when the host is killed."""
    rt = await Runtime().start()
    code = "import sys, time\nsys.stdout.write('x' * 200_000)\nsys.stdout.flush()\ntime.sleep(600)"
    asyncio.ensure_future(rt.execute_code(code, session="s"))
    while not list(rt.cache_dir.glob(".*.part")):
        await asyncio.sleep(0.05)
    print(json.dumps({"cache": str(rt.cache_dir)}), flush=True)
    await asyncio.sleep(600)


async def peek(script: str) -> None:
    """Every way a script reaches for the host's secret (its environment holds one)."""
    config = parse_config("approvals:\n  mode: \"off\"\ncode_execution:\n  max_tool_calls: 2000\n")
    async with Runtime(config) as rt:
        other = await rt.execute_code("import os\nprint(os.getpid())", session="other")
        kernel = next(k for k in rt.kernels() if k.session == "other")
        other_pid = str(lineage.host_pid(int(other.output), kernel.pid, depth=8))  # as the host numbers it
        found = {}
        for session in ("a", "b"):
            result = await rt.execute_code(script.replace("OTHER_PID", other_pid), session=session)
            found[session] = result.model_dump(mode="json")
        print(json.dumps(found), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "flood":
        asyncio.run(flood(int(sys.argv[2])))
    elif sys.argv[1] == "shell":
        asyncio.run(shell(sys.argv[2]))
    elif sys.argv[1] == "spilling":
        asyncio.run(spilling())
    elif sys.argv[1] == "peek":
        asyncio.run(peek(sys.stdin.read()))
    else:
        asyncio.run(orphans())
