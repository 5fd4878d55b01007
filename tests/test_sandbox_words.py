"""What a user is told about the sandbox (issue 30): a script it stopped says so in words, the
label says when the network is open, a mistyped mechanism names the variable to fix, read-only
says read-only, a bare ``~`` in writable_roots is the home, and doctor names roots it refuses."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import make_config

from hermes_tui.config import CodeExecutionConfig
from hermes_tui.cli.doctor.checks import probe_sandbox
from hermes_tui.runtime import Runtime
from hermes_tui.runtime.sandbox import FORCE_ENV
from hermes_tui.runtime.sandbox.denials import explain
from hermes_tui.runtime.sandbox.paths import Layout


async def test_a_script_stopped_by_the_sandbox_is_told_so_in_words(hermes_home: Path, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    async with Runtime(make_config(), home=hermes_home) as rt:
        stopped = await rt.execute_code("open(__import__('os').path.expanduser('~/.bashrc'), 'a').write('x')",
                                        session="s", cwd=work)
        own = await rt.execute_code("open('missing/x.txt').read()", session="s", cwd=work)
    assert stopped.status == "error" and not (home / ".bashrc").exists()
    assert "Blocked by the sandbox" in stopped.warning and "write to ~/.bashrc is outside the workspace" in stopped.warning
    assert own.status == "error" and not (own.warning or "").count("sandbox")  # its own error: nothing said


async def test_read_only_says_read_only(hermes_home: Path, tmp_path: Path) -> None:
    async with Runtime(make_config("code_execution:\n  sandbox: read-only\n"), home=hermes_home) as rt:
        result = await rt.execute_code("open('notes.txt', 'w').write('x')", session="s", cwd=tmp_path)
        assert rt.sandbox.label.startswith("read-only·")
    assert not (tmp_path / "notes.txt").exists()
    assert "the sandbox is read-only (code_execution.sandbox), only TMPDIR is writable" in result.warning


async def test_the_label_says_when_the_network_is_open(hermes_home: Path) -> None:
    async with Runtime(make_config("code_execution:\n  network: true\n"), home=hermes_home) as rt:
        result = await rt.execute_code("1", session="s")
        assert rt.sandbox.label.endswith("·network") and result.sandbox == rt.sandbox.label


async def test_a_mistyped_mechanism_names_the_variable_to_fix(hermes_home: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FORCE_ENV, "bwarp")
    async with Runtime(make_config(), home=hermes_home) as rt:
        result = await rt.execute_code("print(1)", session="s")
        assert rt.sandbox.tier == "unavailable"
    assert result.status == "error" and f"unset {FORCE_ENV}" in result.error and "\n" not in result.error


def test_a_bare_tilde_among_the_roots_is_the_home() -> None:
    # YAML reads `writable_roots: [~]` as [None]
    assert CodeExecutionConfig.read({"writable_roots": [None], "deny_read": [None]}).writable_roots == ["~"]


def test_doctor_names_the_writable_roots_it_refuses(hermes_home: Path, tmp_path: Path) -> None:
    config = make_config(f"code_execution:\n  writable_roots: [/, {tmp_path / 'missing'}, {tmp_path}]\n")
    found = probe_sandbox(config, hermes_home)
    assert found["refused_roots"] == ["/", str(tmp_path / "missing")]
    assert "writable_roots NOT writable" in found["detail"] and os.fspath(tmp_path) not in found["refused_roots"]


@pytest.mark.parametrize(("line", "path"), [
    ("/usr/bin/bash: line 1: /home/u/.bashrc: Read-only file system", "/home/u/.bashrc"),
    ("touch: cannot touch '/home/u/x': Permission denied", "/home/u/x"),
    ("mkdir: cannot create directory \u2018/etc/z\u2019: Read-only file system", "/etc/z"),
    ("OSError: [Errno 30] Read-only file system: '/home/u/y'", "/home/u/y"),
])
def test_a_denial_is_read_in_the_words_programs_use(line: str, path: str) -> None:
    layout = Layout(writable=("/tmp/work",))
    why = explain(f"some output\n{line}\n", layout, cwd="/tmp/work", network=False, home="/home/u")
    shown = "~" + path[len("/home/u"):] if path.startswith("/home/u") else path
    assert why == f"write to {shown} is outside the workspace"


def test_a_denial_inside_the_workspace_is_the_commands_own() -> None:
    layout = Layout(writable=("/tmp/work",))
    assert explain("cp: cannot create regular file 'a.txt': Permission denied\n", layout, cwd="/tmp/work",
                   network=True, home="/home/u") is None
