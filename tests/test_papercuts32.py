"""Issue 32, items 11-16: the small things a new user's trial found."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from test_agent import harness_factory  # noqa: F401 - a fixture

CLI = [sys.executable, "-m", "hermes_tui"]


def cli(*argv: str, cwd: Path | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=120, cwd=cwd,
                          input=stdin if stdin is not None else "", start_new_session=True)


def test_top_level_yolo_applies_to_exec_and_is_refused_elsewhere(hermes_home: Path, tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text("from hermes_tools import terminal\nprint(terminal('echo ran')['output'], end='')\n")
    done = cli("--yolo", "exec", "t.py", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == "ran\n", done.stderr
    assert "YOLO: approvals are off for this run" in done.stderr
    refused = cli("--yolo", "cache", "ls", cwd=tmp_path)
    assert refused.returncode == 2 and refused.stdout == ""
    assert "--yolo applies to the app and to exec, not to cache" in refused.stderr


def test_exec_tracebacks_name_the_script_file(hermes_home: Path, tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text("x = 1\n")
    (tmp_path / "analyse.py").write_text("def f():\n    raise ValueError('boom')\n\nf()\n")
    done = cli("exec", "setup.py", "analyse.py", cwd=tmp_path)
    assert done.returncode == 1
    assert 'File "analyse.py", line 4, in <module>' in done.stdout + done.stderr, done.stdout + done.stderr
    assert 'File "analyse.py", line 2, in f\n    raise ValueError' in done.stdout + done.stderr
    assert "<cell" not in done.stdout + done.stderr
    piped = cli("exec", "-", cwd=tmp_path, stdin="1 / 0\n")
    assert 'File "<stdin>", line 1, in <module>' in piped.stdout + piped.stderr


async def test_web_tools_without_a_backend_are_not_offered_to_the_model(harness_factory) -> None:
    from fake_models import FakeModelServer

    with FakeModelServer([{"text": "hi"}, {"text": "hi"}]) as server:
        bare = await harness_factory(server)
        assert await bare.turn("hello") == "done"
        configured = await harness_factory(server, session="s2", yaml_extra=(
            "web:\n  search_backend: searxng\n  searxng_url: http://127.0.0.1:9\n  extract_backend: http\n"))
        assert await configured.turn("hello") == "done"
    offered = {t["function"]["name"]: t["function"]["description"] for t in server.requests[0]["tools"]}
    assert "web_search" not in offered and "web_extract" not in offered and "terminal" in offered
    assert "Here web_search and web_extract are off" in offered["execute_code"]
    both = {t["function"]["name"]: t["function"]["description"] for t in server.requests[1]["tools"]}
    assert {"web_search", "web_extract"} <= set(both) and "are off" not in both["execute_code"]


def test_sizes_say_mib_beside_byte_counts(hermes_home: Path) -> None:
    from hermes_tui.units import human_size

    assert human_size(8 << 20, " ") == "8.0 MiB" and human_size(195.3 * 1024) == "195.3KiB" and human_size(12) == "12B"
    folder = hermes_home / "cache" / "exec"
    folder.mkdir(parents=True)
    (folder / "stdout-abc123.txt").write_bytes(b"x" * 1023 + b"\n" + b"y" * (3 * 1024 * 1024 - 1024))
    listed = cli("cache", "ls")
    assert listed.returncode == 0 and "  3.0MiB  " in listed.stdout, listed.stdout
    assert "3.0M " not in listed.stdout
