"""Issue 31, item 8: a script's flood cannot fill the disk through the spill file.

Before, a run's full output went to ``cache/exec/<id>.stdout.txt`` without end (4.4 GB in
15 s). Now ``code_execution.max_spill_bytes`` bounds one run's file and
``code_execution.max_cache_bytes`` the cache folder; past either the file stops with a note,
the result says in words how much was kept and why, the tail is still in the result, and the
host's memory stays flat. A cache already full saves nothing more and says so.
"""

from __future__ import annotations

import resource
from pathlib import Path

from hermes_tui.config import ConfigError, parse_config
from hermes_tui.runtime import Runtime
from hermes_tui.tui.widgets.conversation import output_preview

from conftest import make_config

MB = 1 << 20
FLOOD = """
import sys
chunk = ("x" * 1023 + "\\n") * 1024  # 1 MiB
for i in range({mb}):
    sys.stdout.write(chunk)
sys.stdout.write("THE-LAST-LINE\\n")
"""


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def test_one_run_s_spill_stops_at_max_spill_bytes_and_says_so(hermes_home: Path, tmp_path: Path) -> None:
    config = make_config("code_execution:\n  max_spill_bytes: 8M\n")
    async with Runtime(config, home=hermes_home) as rt:
        before = peak_rss_mb()
        result = await rt.execute_code(FLOOD.format(mb=200), session="flood", cwd=tmp_path)
        grew = peak_rss_mb() - before
    assert result.status == "success", result.error
    assert result.stdout_bytes_total == 200 * MB + len("THE-LAST-LINE\n")
    spill = Path(result.stdout_spill_path)
    size = spill.stat().st_size
    assert 8 * MB <= size < 8 * MB + 1024, size  # the bytes kept, then the note
    tail = spill.read_bytes()[-400:].decode()
    assert "FULL OUTPUT NOT SAVED PAST THIS POINT" in tail and "max_spill_bytes" in tail
    assert f"first {8 * MB:,} bytes of {result.stdout_bytes_total:,}" in tail
    # The result says it in words: how much, where it stops, why; the tail is still there.
    assert result.warning and "saved only in part" in result.warning, result.warning
    assert f"holds its first {8 * MB:,} bytes of {result.stdout_bytes_total:,}" in result.warning
    assert "max_spill_bytes, 8.0 MiB" in result.warning
    assert result.stdout_spill_bytes == 8 * MB  # the result says the file stops short
    # ... and so does the conversation's run block (it said "the whole output is saved")
    preview = output_preview(result.output, cut=True, saved=True, total=result.stdout_bytes_total,
                             saved_bytes=result.stdout_spill_bytes).plain
    assert "only its first 8.0 MiB of" in preview and "whole output" not in preview, preview
    assert result.output.rstrip().endswith("THE-LAST-LINE")
    assert grew < 150, f"host memory grew {grew:.0f} MB"
    # Nothing else in the cache grew: the record and the spill only.
    folder = hermes_home / "cache" / "exec"
    assert sum(p.stat().st_size for p in folder.iterdir()) < 9 * MB


async def test_the_cache_wide_cap_stops_the_newest_spill_and_keeps_the_old_ones(hermes_home: Path,
                                                                                 tmp_path: Path) -> None:
    folder = hermes_home / "cache" / "exec"
    folder.mkdir(parents=True)
    old = folder / "stdout-0ld0ld0ld.txt"  # an earlier output (Hermes Agent's): never deleted for room
    old.write_bytes(b"o" * (30 * MB))
    config = make_config("code_execution:\n  max_cache_bytes: 40M\n")
    async with Runtime(config, home=hermes_home) as rt:
        first = await rt.execute_code(FLOOD.format(mb=50), session="flood", cwd=tmp_path)
        second = await rt.execute_code(FLOOD.format(mb=5), session="flood", cwd=tmp_path)
    assert old.stat().st_size == 30 * MB
    spill = Path(first.stdout_spill_path)
    total = sum(p.stat().st_size for p in folder.iterdir())
    assert total <= 40 * MB + 256 * 1024, total  # the cap, plus the records (~50 KB each) and the note
    assert spill.stat().st_size >= 9 * MB  # it kept what fit
    assert "the output cache" in first.warning and "max_cache_bytes, 40.0 MiB" in first.warning
    assert "hermes-tui cache prune" in first.warning
    # The cache is full now: the next run's spill is not saved, and its result says why.
    assert second.stdout_truncated and second.stdout_spill_path is None
    assert "could not be saved: not saved: the output cache" in second.warning, second.warning
    assert second.output.rstrip().endswith("THE-LAST-LINE")


async def test_a_terminal_command_s_flood_is_bounded_too(hermes_home: Path, tmp_path: Path) -> None:
    config = make_config("code_execution:\n  max_spill_bytes: 4M\napprovals:\n  mode: off\n")
    code = ("from hermes_tools import terminal\n"
            "r = terminal('head -c 100000000 /dev/zero | tr \"\\\\\\\\0\" y')\n"
            "print(r['output_bytes_total'], r['output_spill_path'])\nprint(r['output_spill_note'])\n")
    async with Runtime(config, home=hermes_home) as rt:
        result = await rt.execute_code(code, session="t", cwd=tmp_path)
    total, path = result.output.splitlines()[0].split()
    assert int(total) == 100_000_000
    assert 4 * MB <= Path(path).stat().st_size < 4 * MB + 1024
    assert "saved only in part" in result.output and "max_spill_bytes, 4.0 MiB" in result.output


def test_the_keys_take_sizes_and_a_bad_one_is_one_line() -> None:
    config = parse_config("code_execution:\n  max_spill_bytes: 512M\n  max_cache_bytes: '2G'\n")
    assert config.code_execution.max_spill_bytes == 512 * MB
    assert config.code_execution.max_cache_bytes == 2048 * MB
    defaults = parse_config("")
    assert defaults.code_execution.max_spill_bytes == 1 << 30 and defaults.code_execution.max_cache_bytes == 4 << 30
    try:
        parse_config("code_execution:\n  max_spill_bytes: -1\n")
    except ConfigError as exc:
        assert "code_execution.max_spill_bytes = -1 is not allowed" in str(exc) and "\n" not in str(exc)
    else:
        raise AssertionError("a negative size was taken")
