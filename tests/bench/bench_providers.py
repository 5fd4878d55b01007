"""Benchmark of provider resolution and of one model request. Prints figures; asserts nothing.

    python tests/bench/bench_providers.py [--requests 300] [--config tests/data/hermes_example_config.yaml]

Figures:
- resolving the provider from a Hermes Agent config.yaml (table lookup, key rules, ``.env``):
  median and p90 over 500 resolutions — it runs once per app start;
- one streamed model call through the real SDK client against the scripted server on
  127.0.0.1 (a short reply): median and p90 — the client is held to its origin by a request
  hook, and the key is looked up per request; this shows what that costs per call;
- the same with ``key_cmd`` giving the key (the command runs once, then the token is cached).

Only public names are used (``resolve_provider``, ``make_provider``), so the same file runs
against an older checkout for a before/after comparison (the key_cmd figure is skipped there).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fake_models import FakeModelServer  # noqa: E402

from hermes_tui.agent.models.providers import make_provider, resolve_provider  # noqa: E402
from hermes_tui.config import load_config, parse_config  # noqa: E402


def _ms(values: list[float]) -> str:
    ordered = sorted(values)
    return (f"median {statistics.median(ordered) * 1000:.2f} ms, "
            f"p90 {ordered[int(len(ordered) * 0.9)] * 1000:.2f} ms")


async def _calls(settings, count: int) -> list[float]:
    provider = make_provider(settings)

    async def sink(piece: str) -> None:
        pass

    times = []
    try:
        for _ in range(count):
            start = time.perf_counter()
            await provider.complete("system", [{"role": "user", "content": "hi"}], [], sink)
            times.append(time.perf_counter() - start)
    finally:
        await provider.aclose()
    return times[5:]  # the first calls open the connection and import the SDK


async def main(requests: int, config_file: Path) -> None:
    home = Path(tempfile.mkdtemp(prefix="bench-providers-"))
    (home / ".env").write_text("OPENROUTER_API_KEY=sk-or-bench-1234\n")
    config = load_config(config_file)
    env = {"GLM_API_KEY": "glm-bench-1234"}
    resolve_provider(config, home, env)
    times = []
    for _ in range(500):
        start = time.perf_counter()
        resolve_provider(config, home, env)
        times.append(time.perf_counter() - start)
    print(f"resolve {config_file.name}: {_ms(times)}")

    with FakeModelServer([{"text": "ok", "chunk": 64} for _ in range(2 * requests + 20)]) as server:
        plain = parse_config(f"model:\n  provider: custom\n  default: m\n  base_url: {server.url}\n"
                             "  api_key: sk-bench-1234\n  max_retries: 0\n")
        settings = resolve_provider(plain, home, {})
        print(f"streamed call, key in config ({requests} calls): {_ms(await _calls(settings, requests))}")
        script = home / "token.py"
        script.write_text("print('token-bench-1234')\n")
        with_cmd = parse_config(f"model:\n  provider: box\n  default: m\n  max_retries: 0\nproviders:\n  box:\n"
                                f"    base_url: {server.url}\n    key_cmd: [{sys.executable!r}, {str(script)!r}]\n")
        try:
            settings = resolve_provider(with_cmd, home, {})
        except Exception as exc:  # an older checkout without key_cmd
            print(f"streamed call, key from key_cmd: not available ({type(exc).__name__})")
        else:
            if getattr(settings, "key_command", None) is None:
                print("streamed call, key from key_cmd: not available (key_cmd is not read)")
            else:
                print(f"streamed call, key from key_cmd ({requests} calls): {_ms(await _calls(settings, requests))}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--config", type=Path,
                        default=Path(__file__).resolve().parents[1] / "data" / "hermes_example_config.yaml")
    args = parser.parse_args()
    asyncio.run(main(args.requests, args.config))
