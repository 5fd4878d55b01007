"""Benchmark of sub-agents. Prints figures; asserts nothing.

    python tests/bench/bench_subagents.py [--docs 12] [--kb 20] [--latency 0.2]

A task reads N documents of K KB each, against the scripted model server on 127.0.0.1 adding
a fixed latency to every model call (real HTTP, real kernels, real file reads):

- inline: the parent model reads each document with ``read_file`` itself (one model call per
  document, then its answer): everything it read is in its context;
- delegated: the parent hands one task per document to ``delegate_task`` (the default
  ``agent.subagents.max_concurrency`` of 3 at once); each child reads its document and answers
  with a one-line summary; the parent reads only the summaries.

Figures: the parent's context at its last model call (characters sent, and tokens at 4
characters a token), and the turn's wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fake_models import FakeModelServer  # noqa: E402

PARENT = "working in the user's terminal"


def documents(folder: Path, count: int, kb: int) -> list[Path]:
    paths = []
    for index in range(count):
        path = folder / f"doc{index:02d}.txt"
        line = f"document {index}: the measured value is {index * 7} units. " + "lorem ipsum dolor sit amet " * 3 + "\n"
        path.write_text((line * (kb * 1024 // len(line) + 1))[: kb * 1024])
        paths.append(path)
    return paths


def inline_script(paths: list[Path], latency: float) -> list[dict]:
    replies = [{"match": PARENT, "text": "", "hang": latency,
                "tool_calls": [{"name": "read_file", "arguments": {"path": str(p), "limit": 2000}}]} for p in paths]
    return [*replies, {"match": PARENT, "text": "The values are 0 to 77.", "hang": latency}]


def delegated_script(paths: list[Path], latency: float) -> list[dict]:
    tasks = [{"goal": f"Read {p} and report its measured value (DOC{i:02d})", "name": f"doc{i:02d}"}
             for i, p in enumerate(paths)]
    replies = [{"match": PARENT, "text": "", "hang": latency,
                "tool_calls": [{"name": "delegate_task", "arguments": {"tasks": tasks}}]}]
    for index, path in enumerate(paths):
        replies.append({"match": f"DOC{index:02d}", "text": "", "hang": latency,
                        "tool_calls": [{"name": "read_file", "arguments": {"path": str(path), "limit": 2000}}]})
        replies.append({"match": f"DOC{index:02d}", "text": f"doc{index:02d}: value {index * 7}.", "hang": latency})
    return [*replies, {"match": PARENT, "text": "The values are 0 to 77.", "hang": latency}]


async def one(replies: list[dict], home: Path, folder: Path) -> tuple[int, float, int]:
    """(characters of the parent's last request, wall seconds, model calls served)."""
    from hermes_tui.agent.events import TurnEnded
    from hermes_tui.agent.loop import Agent
    from hermes_tui.agent.models.providers import resolve_provider
    from hermes_tui.config import parse_config
    from hermes_tui.runtime import Runtime
    from hermes_tui.storage.writer import SessionStore

    with FakeModelServer(replies) as server:
        config = parse_config(f"model:\n  provider: custom\n  default: m\n  base_url: {server.url}\n  max_retries: 0\n")
        store = SessionStore.open(home)
        async with Runtime(config, home=home) as runtime:
            ended = asyncio.Event()

            def listener(event) -> None:
                if isinstance(event, TurnEnded):
                    ended.set()

            agent = Agent(runtime, store, f"bench-{time.monotonic_ns()}", settings=resolve_provider(config, home, {}),
                          listener=listener, cwd=str(folder), subagents=config.agent.subagents)
            await agent.open()
            started = time.perf_counter()
            await agent.submit("Read the documents and tell me their measured values.")
            await ended.wait()
            wall = time.perf_counter() - started
            await agent.aclose()
        store.close()
        parent_requests = [r for r in server.requests if PARENT in json.dumps(r)]
        last = parent_requests[-1]
        return len(json.dumps(last["messages"], ensure_ascii=False)), wall, len(server.requests)


async def main(count: int, kb: int, latency: float) -> None:
    home = Path(tempfile.mkdtemp(prefix="bench-subagents-"))
    folder = home / "docs"
    folder.mkdir()
    try:
        paths = documents(folder, count, kb)
        print(f"python {sys.version.split()[0]}; {count} documents of {kb} KB; {latency * 1000:.0f} ms per model call")
        figures = {}
        for label, script in (("inline", inline_script(paths, latency)), ("delegated", delegated_script(paths, latency))):
            chars, wall, calls = await one(script, home, folder)
            figures[label] = (chars, wall)
            print(f"{label:>9}: parent context at its last call {chars:,} characters (~{chars // 4:,} tokens), "
                  f"wall {wall:.2f} s, {calls} model calls in all")
        (inline_chars, inline_wall), (delegated_chars, delegated_wall) = figures["inline"], figures["delegated"]
        print(f"delegated / inline: context {delegated_chars / inline_chars:.3f}, wall {delegated_wall / inline_wall:.2f} "
              f"(inline / 3 would be {inline_wall / 3:.2f} s)")
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=12)
    parser.add_argument("--kb", type=int, default=20)
    parser.add_argument("--latency", type=float, default=0.2)
    args = parser.parse_args()
    asyncio.run(main(args.docs, args.kb, args.latency))
