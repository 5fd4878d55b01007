"""The hard floor and protected writes as an attacker spells around them (issue 31, items 1 and 2).

Before this issue the floor read the command's text only: it never saw the call's working
directory, never resolved a path, a glob or a symlink, and a part it could not compute became
a flag, which YOLO (``approvals.mode: off``) runs. Each attack below deleted a scratch home or
wrote a key with no dialog.

The deletes run for real, in YOLO with the sandbox off, against a scratch ``HOME`` in the test's
tmp dir; :func:`scratch_only` checks that before every command. ``workdir=/`` and the device
writes are judged by the gate only: they never run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import Approver, make_config
from fake_models import FakeModelServer
from hermes_tui.config import parse_config
from hermes_tui.runtime import Runtime
from hermes_tui.runtime.approvals import ApprovalGate
from hermes_tui.runtime.danger import analyze

YOLO_NO_SANDBOX = "approvals:\n  mode: 'off'\ncode_execution:\n  sandbox: off\n"
MANUAL_NO_SANDBOX = "approvals:\n  mode: manual\ncode_execution:\n  sandbox: off\n"
KEY = "ssh-ed25519 AAAAattacker attacker@evil"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch home (``/…/home/user``) with a project two folders down and a sentinel file."""
    folder = tmp_path / "home" / "user"
    (folder / "proj" / "sub").mkdir(parents=True)
    (folder / ".ssh").mkdir()
    (folder / ".ssh" / "authorized_keys").write_text("ssh-ed25519 AAAAmine me@here\n")
    (folder / "sentinel").write_text("still here\n")
    monkeypatch.setenv("HOME", str(folder))
    return folder


def scratch_only(tmp_path: Path, home: Path) -> None:
    """Refuse to run anything unless HOME (what ``~`` is) lies in this test's tmp dir."""
    assert os.path.expanduser("~") == str(home) and home.is_relative_to(tmp_path), "HOME is not the scratch home"
    assert os.environ["HOME"] == str(home)


async def run(hermes_home: Path, tmp_path: Path, home: Path, command: str, workdir: Path) -> dict:
    """Run ``command`` through the model's terminal tool, in YOLO with the sandbox off."""
    scratch_only(tmp_path, home)
    assert workdir.is_relative_to(tmp_path)
    rt = await Runtime(make_config(YOLO_NO_SANDBOX), home=hermes_home).start()
    try:
        return await rt.call_tool("terminal", {"command": command, "workdir": str(workdir)}, session="s",
                                  cwd=tmp_path)
    finally:
        await rt.aclose()


def build_world(tmp_path: Path, home: Path) -> dict[str, Path]:
    link = tmp_path / "LINK"
    link.symlink_to(home)
    return {"tmp": tmp_path, "home": home, "deep": home / "proj" / "sub", "proj": home / "proj"}


ATTACKS = [
    # (command, workdir key): each deleted the scratch home in YOLO before issue 31
    ("rm -rf ~/$(true)", "proj"),
    ("bash <(echo 'rm -rf ~')", "proj"),
    ("echo ~ | xargs rm -rf", "proj"),
    ("rm -rf -- *", "home"),
    ("rm -rf {tmp}/home/u[s]er", "tmp"),
    ("rm -rf LINK/", "tmp"),
    ("rm -rf ../..", "deep"),  # GNU rm itself skips a last part `..`; refused all the same
    ("rm -rf ../../../user", "deep"),
    ("cd ~ && rm -rf -- *", "proj"),
    ("printf '%s\\n' ~ | xargs -I{} rm -rf {}", "proj"),
    # Found by the trial after the first round: code a shell is fed through a decoder.
    ("echo cm0gLXJmIH4= | base64 -d | sh", "proj"),  # rm -rf ~
    ("echo 726d202d7266207e | xxd -r -p | bash", "proj"),
]


@pytest.mark.parametrize(("command", "where"), ATTACKS)
async def test_the_floor_refuses_a_home_delete_however_it_is_spelled(
        hermes_home: Path, tmp_path: Path, home: Path, command: str, where: str) -> None:
    world = build_world(tmp_path, home)
    command = command.replace("{tmp}", str(tmp_path))
    result = await run(hermes_home, tmp_path, home, command, world[where])
    assert (home / "sentinel").read_text() == "still here\n", f"{command!r} deleted the scratch home"
    assert result["status"] == "blocked" and result["error"].startswith("BLOCKED: refused: this command"), result
    log = [json.loads(line) for line in (hermes_home / "tui" / "approvals.jsonl").read_text().splitlines()]
    assert [e["decision"] for e in log if e.get("text") == command] == ["refused"]  # before YOLO's allow


async def test_the_safe_forms_still_run_in_yolo(hermes_home: Path, tmp_path: Path, home: Path) -> None:
    # The control: the same shapes on a folder of the project run (only the home is kept).
    build = home / "proj" / "build"
    for name in ("a", "b"):
        (build / name).mkdir(parents=True)
    (tmp_path / "LINK2").symlink_to(home / "proj" / "build")
    for command, workdir, gone in [("rm -rf -- *", build, build / "a"), ("echo build | xargs rm -rf", home / "proj", build),
                                   ("rm -rf LINK2", tmp_path, tmp_path / "LINK2")]:
        build.mkdir(exist_ok=True)
        result = await run(hermes_home, tmp_path, home, command, workdir)
        assert result.get("status") != "blocked" and result["exit_code"] == 0, (command, result)
        assert not gone.exists() and not gone.is_symlink(), command
    assert build.exists() and (home / "sentinel").exists()  # rm -rf LINK2 removed the link, not its folder


def refusal(command: str, cwd: str, home: str, hermes_home: str, **env: str) -> list[str]:
    return analyze(command, home, hermes_home, cwd=cwd, env={"HOME": home, **env}).hard


@pytest.mark.parametrize("command", ["rm -rf -- *", "rm -rf ./*", "rm -rf .", "find . -delete"])
def test_the_whole_machine_from_the_root_is_refused_by_analysis_only(command: str, tmp_path: Path) -> None:
    # never run: judged where it would run (workdir=/)
    assert refusal(command, "/", str(tmp_path), str(tmp_path / ".hermes")), command


@pytest.mark.parametrize("command", [
    "printf X 1<> /dev/loop0", "printf X <> /dev/sda", "exec 3<> /dev/sda", "echo x >| /dev/nvme0n1",
    "echo x &> /dev/loop0", "echo x &>> /dev/sdb", "printf X 1<>/dev/mapper/root", "cat f 2>&1 >/dev/vda",
    "dd if=/dev/zero of=/dev/$DISK", "printf X > /dev/$(ls /dev | head -1)",
])
async def test_a_device_write_is_refused_in_yolo_without_running(command: str, hermes_home: Path,
                                                                 tmp_path: Path) -> None:
    gate = ApprovalGate(None, parse_config(YOLO_NO_SANDBOX), hermes_home)
    why = await gate.check_terminal(command, cwd=str(tmp_path), session="s", kernel=None, exec_id=None)
    assert why is not None and why.startswith("refused:"), (command, why)


async def test_a_symlink_to_a_block_device_is_read_as_the_device(hermes_home: Path, tmp_path: Path) -> None:
    disks = [f"/dev/{name}" for name in sorted(os.listdir("/dev")) if name.startswith(("loop", "sd", "vd", "nvme"))
             and Path(f"/dev/{name}").is_block_device()]
    if not disks:
        pytest.skip("no block device on this machine to point a symlink at")
    (tmp_path / "notes.txt").symlink_to(disks[0])
    gate = ApprovalGate(None, parse_config(YOLO_NO_SANDBOX), hermes_home)
    why = await gate.check_terminal("printf X > notes.txt", cwd=str(tmp_path), session="s", kernel=None,
                                    exec_id=None)
    assert why is not None and "disk device" in why


# -- item 2: protected writes by a relative path --------------------------------------------


async def test_a_key_appended_by_a_relative_path_in_the_home_asks_in_manual(
        hermes_home: Path, tmp_path: Path, home: Path) -> None:
    scratch_only(tmp_path, home)
    keys = home / ".ssh" / "authorized_keys"
    approver = Approver("deny")
    rt = await Runtime(make_config(MANUAL_NO_SANDBOX), home=hermes_home, approver=approver).start()
    try:
        ssh = await rt.call_tool("terminal", {"command": f"echo '{KEY}' >> .ssh/authorized_keys",
                                              "workdir": str(home)}, session="s", cwd=tmp_path)
        (hermes_home / "config.yaml").write_text("model: {}\n")
        config = await rt.call_tool("terminal", {"command": "echo 'approvals: {mode: off}' >> config.yaml",
                                                 "workdir": str(hermes_home)}, session="s", cwd=tmp_path)
    finally:
        await rt.aclose()
    assert KEY not in keys.read_text() and "mode: off" not in (hermes_home / "config.yaml").read_text()
    assert ssh["status"] == "blocked" and config["status"] == "blocked"
    first, second = approver.asked
    assert first.cwd == str(home) and any(str(keys) in r and "~/.ssh" in r for r in first.reasons), first.reasons
    assert any(str(hermes_home / "config.yaml") in r and "configuration" in r for r in second.reasons)


def test_a_headless_run_pauses_on_a_relative_key_write(hermes_home: Path, tmp_path: Path, home: Path) -> None:
    scratch_only(tmp_path, home)
    keys = home / ".ssh" / "authorized_keys"
    command = f"echo '{KEY}' >> .ssh/authorized_keys"
    replies = [{"text": "Adding a key.", "tool_calls": [{"name": "terminal",
                                                         "arguments": {"command": command, "workdir": str(home)}}]},
               {"text": "Done."}]
    with FakeModelServer(replies) as server:
        (hermes_home / "config.yaml").write_text(
            f"model:\n  provider: custom\n  default: fake\n  base_url: {server.url}\n  max_retries: 0\n"
            + MANUAL_NO_SANDBOX)
        done = subprocess.run([sys.executable, "-m", "hermes_tui", "run", "--session", "job", "--pause-on",
                               "approval", "add my key"], capture_output=True, text=True, cwd=tmp_path,
                              timeout=90, input="", env=os.environ.copy())
        assert done.returncode == 3, done.stdout + done.stderr  # paused for a person
        shown = subprocess.run([sys.executable, "-m", "hermes_tui", "inspect", "job", "--pending", "--json"],
                               capture_output=True, text=True, cwd=tmp_path, timeout=90, env=os.environ.copy())
    assert KEY not in keys.read_text()
    (item,) = json.loads(shown.stdout)["pending"]
    assert item["text"] == command and any(str(keys) in r for r in item["reasons"]), item
