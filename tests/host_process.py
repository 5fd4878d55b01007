"""A host process for tests that must measure or kill the host itself.

    python host_process.py flood MEGABYTES   -> prints one JSON line with the result and RSS
    python host_process.py orphans           -> starts kernels with grandchildren, prints their
                                                 pids as JSON, then waits to be killed
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys

from hermes_tui.runtime import Runtime

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
        pids += [int(grandchild)]
    pids += [k.pid for k in rt.kernels()]
    # A script that is busy (holding the GIL in a loop) when the host dies.
    asyncio.ensure_future(rt.execute_code("while True: pass", session="busy"))
    await asyncio.sleep(0.5)
    pids += [k.pid for k in rt.kernels() if k.session == "busy"]
    print(json.dumps(pids), flush=True)
    await asyncio.sleep(600)


if __name__ == "__main__":
    if sys.argv[1] == "flood":
        asyncio.run(flood(int(sys.argv[2])))
    else:
        asyncio.run(orphans())
