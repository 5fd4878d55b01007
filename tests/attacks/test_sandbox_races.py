"""The host's file tools under a script that races them (issue 30).

The file tools run in the host, which may write anywhere: a sandboxed script must not get
them to write where it may not. The tool judges the path, then writes; a script that swaps a
folder of the path for a symbolic link between the two would land the write outside its
workspace. The write is therefore made through the folder it really opened, judged again
there (``fsutil.WRITE_GUARD``).
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from conftest import make_config

from hermes_tui.runtime import Runtime
from hermes_tui.base.fsutil import WRITE_GUARD, atomic_write
from hermes_tui.runtime.tools import dispatch

def test_a_write_through_a_folder_that_is_really_elsewhere_is_refused(tmp_path: Path) -> None:
    workspace, outside = tmp_path / "work", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (workspace / "link").symlink_to(outside)
    token = WRITE_GUARD.set(lambda real: None if real.startswith(str(workspace) + "/") else f"{real} is outside")
    try:
        with pytest.raises(PermissionError) as refused:
            atomic_write(workspace / "link" / "x.txt", b"data")
        atomic_write(workspace / "ok.txt", b"data")
    finally:
        WRITE_GUARD.reset(token)
    assert refused.value.errno == errno.EACCES and "blocked by the sandbox" in str(refused.value)
    assert list(outside.iterdir()) == [] and (workspace / "ok.txt").read_bytes() == b"data"


@pytest.mark.parametrize("tier", ["bwrap", "landlock"])
async def test_a_folder_swapped_for_a_link_after_the_check_does_not_get_the_host_to_write_outside(
        tier: str, tmp_path: Path, hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The race won every time: right after the tool's check of the path, the folder becomes
    a symbolic link to a folder outside the workspace (as a script's thread would make it)."""
    monkeypatch.setenv("HERMES_TUI_SANDBOX_TIER", tier)
    workspace, outside = tmp_path / "work", tmp_path / "outside"
    (workspace / "real").mkdir(parents=True)
    outside.mkdir()
    checked = dispatch.sandbox_refusal

    def check_then_swap(*args):
        verdict = checked(*args)
        if (workspace / "real").is_dir() and not (workspace / "real").is_symlink():
            (workspace / "real").rename(workspace / "parked")
            (workspace / "real").symlink_to(outside)
        return verdict

    monkeypatch.setattr(dispatch, "sandbox_refusal", check_then_swap)
    async with Runtime(make_config("approvals:\n  mode: off\n"), home=hermes_home) as rt:
        assert rt.sandbox.tier == tier
        result = await rt.call_tool("write_file", {"path": "real/planted.txt", "content": "x"}, session="s",
                                    cwd=workspace)
    assert list(outside.iterdir()) == [], "the host wrote outside the workspace"
    assert result["error"].startswith("BLOCKED: blocked by the sandbox: write to"), result
