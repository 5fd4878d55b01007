"""Benchmark of the conversation loop. Prints figures; asserts nothing.

    python tests/bench/bench_agent.py [--turns 20] [--tokens 3000]

Figures, against the scripted model server on 127.0.0.1 (real HTTP, real SSE, real kernels):
- streaming: a reply of N small chunks — how long from the chunk arriving (the provider's
  callback) to it being stored and sent to the screen (the store-before-show cost), and how
  many database writes the batching needed;
- a whole turn (model -> execute_code -> model -> reply) over M turns, and the part that is
  not the model or the script (storing, events);
- host memory after M turns (it grows only with the stored history the model is sent);
- usage accounting per model call: pricing the reply (the price table) and storing its usage
  row and telling the screen (compare the turn figures with a checkout before usage existed);
- opening a stored session of 2,000 messages in the app (--resume): load and draw.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fake_models import FakeModelServer  # noqa: E402

from hermes_tui.agent.events import ReplyText, TurnEnded  # noqa: E402
from hermes_tui.agent.loop import Agent  # noqa: E402
from hermes_tui.agent.models.providers import resolve_provider  # noqa: E402
from hermes_tui.config import parse_config  # noqa: E402
from hermes_tui.runtime import Runtime  # noqa: E402
from hermes_tui.storage.writer import SessionStore  # noqa: E402


async def main(turns: int, tokens: int) -> None:
    home = Path(tempfile.mkdtemp(prefix="bench-agent-"))
    with FakeModelServer() as server:
        config = parse_config(f"model:\n  provider: custom\n  default: m\n  base_url: {server.url}\n  max_retries: 0\n")
        store = SessionStore.open(home)
        async with Runtime(config, home=home) as runtime:
            ended = asyncio.Event()
            arrived: list[float] = []
            lags: list[float] = []
            shown = [0]
            statuses: list[str] = []

            def listener(event) -> None:
                if isinstance(event, ReplyText):
                    shown[0] += 1
                    if arrived:  # (the last piece of a reply may come from close(), not a chunk)
                        lags.append(time.perf_counter() - arrived[0])
                        arrived.clear()
                elif isinstance(event, TurnEnded):
                    statuses.append(event.status)
                    ended.set()

            agent = Agent(runtime, store, "bench", settings=resolve_provider(config, home, {}), listener=listener,
                          cwd=str(home))
            original = agent._reply  # noqa: SLF001

            async def timed_reply(turn):  # note when each chunk arrives from the provider
                provider_complete = agent.provider.complete

                async def complete(system, messages, tools, on_text):
                    async def on_text_timed(piece):
                        if not arrived:
                            arrived.append(time.perf_counter())
                        await on_text(piece)
                    return await provider_complete(system, messages, tools, on_text_timed)

                agent.provider.complete = complete
                try:
                    return await original(turn)
                finally:
                    agent.provider.complete = provider_complete

            agent._reply = timed_reply  # noqa: SLF001
            await agent.open()
            accounting: dict[str, list[float]] = {"price": [], "store": []}
            timed_account(agent, accounting)

            server.add({"text": "tok " * tokens, "chunk": 4})
            ended.clear()
            start = time.perf_counter()
            await agent.submit("stream")
            await ended.wait()
            wall = time.perf_counter() - start
            print(f"streaming {tokens} chunks: {wall * 1000:.0f} ms wall, {shown[0]} screen updates "
                  f"(= database writes) for {tokens} chunks")
            print(f"  oldest waiting chunk -> stored and sent to screen: median {statistics.median(lags) * 1000:.2f} ms, "
                  f"p90 {sorted(lags)[int(len(lags) * 0.9)] * 1000:.2f} ms, max {max(lags) * 1000:.2f} ms")

            rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            times = []
            for index in range(turns):
                server.add({"text": "Running.", "tool_calls": [{"name": "execute_code",
                                                                "arguments": {"code": f"print({index} * 2)"}}]},
                           {"text": f"Result {index * 2}."})
                ended.clear()
                start = time.perf_counter()
                await agent.submit(f"turn {index}")
                await ended.wait()
                times.append(time.perf_counter() - start)
            rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            times.sort()
            done = statuses[1:].count("done")  # a figure of failed turns would mean nothing
            print(f"{turns} turns (model -> execute_code -> model -> reply), {done} done: median "
                  f"{statistics.median(times) * 1000:.1f} ms, p90 {times[int(len(times) * 0.9)] * 1000:.1f} ms, "
                  f"min {times[0] * 1000:.1f} ms")
            print(f"host peak RSS growth over the turns: {(rss_after - rss_before) / 1024:.1f} MB")
            for what, spent in accounting.items():
                if spent:
                    print(f"usage accounting, {what} per model call: median {statistics.median(spent) * 1000:.3f} ms, "
                          f"max {max(spent) * 1000:.3f} ms ({len(spent)} calls)")
            await agent.aclose()
        store.close()
    size = (home / "tui" / "sessions.db").stat().st_size
    print(f"sessions.db after {turns + 1} turns: {size / 1024:.0f} KiB")
    shutil.rmtree(home, ignore_errors=True)


def timed_account(agent, accounting: dict[str, list[float]]) -> None:
    """Time the usage accounting of each call, where it exists (a checkout from before usage
    was accounted has neither hook: nothing is printed)."""
    provider = agent.provider
    if hasattr(provider, "_account"):
        pricing = provider._account  # noqa: SLF001

        def priced(*args):
            started = time.perf_counter()
            try:
                return pricing(*args)
            finally:
                accounting["price"].append(time.perf_counter() - started)

        provider._account = priced  # noqa: SLF001
    if hasattr(agent, "_account"):
        storing = agent._account  # noqa: SLF001

        async def stored(*args):
            started = time.perf_counter()
            try:
                return await storing(*args)
            finally:
                accounting["store"].append(time.perf_counter() - started)

        agent._account = stored  # noqa: SLF001


async def resume_bench(messages: int) -> None:
    """Open a stored session of ``messages`` messages in the app (as --resume does): the newest
    page is drawn first, older ones as the transcript is scrolled up (bench_ui.resume_draw)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_ui import resume_draw

    figures = await resume_draw(messages)
    print(f"opening a stored session of {messages} messages in the app: read and rebuilt "
          f"{figures['loaded'] * 1000:.0f} ms after start, newest screen drawn {figures['drawn'] * 1000:.0f} ms after "
          f"start = {(figures['drawn'] - figures['frame']) * 1000:.0f} ms after the first frame "
          f"({figures['blocks']:.0f} blocks in the transcript)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--tokens", type=int, default=3000)
    args = parser.parse_args()
    asyncio.run(main(args.turns, args.tokens))
    asyncio.run(resume_bench(2000))
