"""What a sandboxed kernel cannot reach, found by a review after the first attack tests (issue 30):
a thread of the host (bubblewrap's first version started kernels from a host thread in their
own Landlock domain, and a signal to that thread killed the host), another session's kernel, a
secret made after the kernel started, and a hidden file through a folder swapped after the
host's check of a read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import make_config

from hermes_tui.runtime import Runtime, lineage
from hermes_tui.runtime.tools import dispatch

TIERS = ["bwrap", "landlock"]

SIGNAL_HOST_THREADS = r'''
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
host = HOST
allowed = []
# Under bubblewrap the host is not in the kernel's pid namespace: no /proc entry to list.
tids = sorted(int(t) for t in os.listdir("/proc/%d/task" % host)) if os.path.isdir("/proc/%d/task" % host) else [host]
for tid in tids:
    if libc.syscall(234, host, tid, 0) == 0:  # tgkill(host, tid, 0): may it signal this thread?
        allowed.append(tid)
print("threads it may signal:", allowed)
'''


@pytest.fixture
def tier(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("HERMES_TUI_SANDBOX_TIER", request.param)
    return request.param


@pytest.mark.parametrize("tier", TIERS, indirect=True)
async def test_no_thread_of_the_host_and_no_other_kernel_can_be_signalled(tier: str, hermes_home: Path,
                                                                          tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    async with Runtime(make_config(), home=hermes_home) as rt:
        assert rt.sandbox.tier == tier
        other = await rt.execute_code("import os; print(os.getpid())", session="B", cwd=tmp_path / "b")
        (kernel_b,) = [k for k in rt.kernels() if k.session == "B"]
        other_pid = lineage.host_pid(int(other.output), kernel_b.pid)  # B's pid namespace's number, as we see it
        await rt.execute_code("import time; time.sleep(0.2)", session="A", cwd=tmp_path / "a")  # threads spawned
        threads = await rt.execute_code(SIGNAL_HOST_THREADS.replace("HOST", str(os.getpid())), session="A",
                                        cwd=tmp_path / "a")
        kill = await rt.execute_code(f"import os, signal\ntry:\n    os.kill({other_pid}, signal.SIGKILL)\n"
                                     "    print('killed')\nexcept OSError as exc:\n    print(type(exc).__name__)",
                                     session="A", cwd=tmp_path / "a")
        after = await rt.execute_code("print('alive')", session="B", cwd=tmp_path / "b")
    assert threads.output.strip() == "threads it may signal: []", threads.output
    # PermissionError where it sees B; under bubblewrap B is not even in its pid namespace.
    assert kill.output.strip() in ("PermissionError", "ProcessLookupError") and after.output == "alive\n"


@pytest.mark.parametrize("tier", TIERS, indirect=True)
async def test_a_secret_made_after_the_kernel_started_stays_hidden(tier: str, hermes_home: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    (hermes_home / "skills" / "x").mkdir(parents=True)
    (hermes_home / "skills" / "x" / "SKILL.md").write_text("a skill\n")
    work = tmp_path / "work"
    work.mkdir()
    async with Runtime(make_config(), home=hermes_home) as rt:
        await rt.execute_code("x = 1", session="s", cwd=work)  # the kernel runs before the secrets exist
        (hermes_home / ".env").write_text("OPENAI_API_KEY=sk-made-later\n")
        (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY made later\n")
        result = await rt.execute_code(
            "for p in [%r, %r, %r]:\n    try:\n        print(open(p).read().strip())\n"
            "    except OSError as exc:\n        print(type(exc).__name__)"
            % (str(hermes_home / ".env"), str(home / ".ssh" / "id_ed25519"),
               str(hermes_home / "skills" / "x" / "SKILL.md")), session="s", cwd=work)
    assert "made-later" not in result.output and "made later" not in result.output, result.output
    assert result.output.splitlines()[-1] == "a skill"  # what was there stays readable


@pytest.mark.parametrize("tier", TIERS, indirect=True)
async def test_a_folder_swapped_after_the_check_of_a_read_reads_no_secret(
        tier: str, hermes_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (hermes_home / ".env").write_text("OPENAI_API_KEY=sk-behind-the-swap\n")
    work = tmp_path / "work"
    (work / "d").mkdir(parents=True)
    (work / "d" / ".env").write_text("harmless\n")
    checked = dispatch.sandbox_refusal

    def check_then_swap(*args):
        verdict = checked(*args)
        if not (work / "d").is_symlink():
            (work / "d").rename(work / "parked")
            (work / "d").symlink_to(hermes_home)
        return verdict

    monkeypatch.setattr(dispatch, "sandbox_refusal", check_then_swap)
    async with Runtime(make_config("approvals:\n  mode: off\n"), home=hermes_home) as rt:
        result = await rt.call_tool("read_file", {"path": "d/.env"}, session="s", cwd=work)
    assert "sk-behind-the-swap" not in str(result)
    assert result["error"].startswith("BLOCKED: blocked by the sandbox"), result


async def test_a_subagents_kernel_is_sandboxed_too(hermes_home: Path, tmp_path: Path) -> None:
    from hermes_tui.runtime.models import SUBAGENT_SEPARATOR

    outside = tmp_path / "outside.txt"
    work = tmp_path / "work"
    work.mkdir()
    session = f"main{SUBAGENT_SEPARATOR}helper"
    async with Runtime(make_config("approvals:\n  mode: off\n"), home=hermes_home) as rt:
        result = await rt.execute_code(f"open({str(outside)!r}, 'w').write('x')", session=session, cwd=work)
        (info,) = [k for k in rt.kernels() if k.session == session]
    assert info.subagent and info.sandbox == rt.sandbox.label and rt.sandbox.active
    assert result.status == "error" and not outside.exists()
