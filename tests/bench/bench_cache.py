"""Benchmark of the output browser. Prints figures; asserts nothing.

    python tests/bench/bench_cache.py

Figures: listing 10,000 entries (9,000 hermes-tui records + 1,000 Hermes Agent files), cold
and warm page cache; the first page of a 1 GiB file; searching from the top to its last line;
counting lines to jump to the last one; and the browser screen showing 10,000 rows.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cache_trees import make_tree  # noqa: E402

from hermes_tui.runtime.cache import scan  # noqa: E402
from hermes_tui.tui.widgets.pager import find_in_file, offset_of_line, read_block  # noqa: E402


def drop_caches() -> bool:
    try:
        subprocess.run(["sync"], check=True)
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


async def browser_rows(home: Path) -> float:
    from hermes_tui.tui.app import HermesApp
    from hermes_tui.tui.screens.cache_browser import CacheBrowser

    app = HermesApp(cwd=str(home), home=home)
    async with app.run_test(size=(140, 40)) as pilot:
        started = time.perf_counter()
        await pilot.press("f9")
        browser = app.screen
        assert isinstance(browser, CacheBrowser)
        while browser.query_one("#cache-table").row_count < 10_000:
            await asyncio.sleep(0.005)
        return time.perf_counter() - started


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as home:
        os.environ["HERMES_HOME"] = home
        folder = Path(home) / "cache" / "exec"
        make_tree(folder, records=9_000, hermes_files=1_000)
        cold = drop_caches()
        started = time.perf_counter()
        entries = scan(folder)
        first = time.perf_counter() - started
        warm = []
        for _ in range(5):
            started = time.perf_counter()
            scan(folder)
            warm.append(time.perf_counter() - started)
        print(f"list {len(entries):,} entries: {'cold' if cold else 'first'} {first * 1000:.0f} ms, "
              f"warm median {statistics.median(warm) * 1000:.0f} ms")
        print(f"browser screen with {len(entries):,} rows drawn: {asyncio.run(browser_rows(Path(home))) * 1000:.0f} ms")

        big = Path(home) / "big.txt"
        line = b"x" * 99 + b"\n"
        with big.open("wb") as handle:  # real data, not sparse: 1 GiB of 100-byte lines
            block = line * 10_486
            for _ in range(1024):
                handle.write(block)
            handle.write(b"the last line\n")
        size = big.stat().st_size
        drop_caches()
        started = time.perf_counter()
        read_block(big, 0)
        print(f"first page of a {size / (1 << 30):.2f} GiB file: {(time.perf_counter() - started) * 1000:.1f} ms")
        cancel = threading.Event()
        started = time.perf_counter()
        found = find_in_file(big, b"the last line", 0, True, cancel)
        print(f"search from the top to the last line: {time.perf_counter() - started:.2f} s (found at byte {found:,})")
        lines = size // 100
        started = time.perf_counter()
        offset_of_line(big, lines, cancel)
        print(f"jump to line {lines:,} (count lines): {time.perf_counter() - started:.2f} s")


if __name__ == "__main__":
    main()
