"""A hostile script reaches for the keys in the host's environment (issue 13, "Secrets").

The host runs as a real process with a secret in its environment (as a user's shell would
give it), with approvals off so that every tool call runs. Then a script in a real kernel
tries every way in: /proc/*/environ of every process, the host's memory, a shell command,
the file tools (which run inside the host), ripgrep. These machines run as root, where
being non-dumpable alone protects nothing; the last test checks a normal user too.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from hermes_tui.runtime import hardening, lineage

HOST = Path(__file__).parent.parent / "host_process.py"
SECRET = "sk-peek-" + "7" * 24

PEEK = r'''
import glob, json, os
from hermes_tools import read_file, search_files, terminal

SECRET = os.environ.get("PEEK_SECRET_NAME", "") or "sk-peek-"
host = os.getppid()
seen = {"environ": [], "denied": 0, "mem": None, "other_kernel": None}
for path in glob.glob("/proc/[0-9]*/environ") + glob.glob("/proc/[0-9]*/task/[0-9]*/environ"):
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        seen["denied"] += 1
        continue
    if SECRET.encode() in data:
        seen["environ"].append(path)
# Under bubblewrap the kernel has its own pid namespace: its parent is bwrap's init, and the
# host is not there to be read at all.
apart = os.path.basename(open("/proc/%d/cmdline" % host, "rb").read().split(b"\0")[0]) == b"bwrap"
for name in ("mem", "environ"):
    try:
        open("/proc/%d/%s" % (host, name), "rb").close()
        seen["host_" + name] = "not in its pid namespace" if apart else "opened"
    except OSError as exc:
        seen["host_" + name] = exc.__class__.__name__
try:
    open("/proc/OTHER_PID/environ", "rb").read()
    seen["other_kernel"] = "read"
except OSError as exc:
    seen["other_kernel"] = exc.__class__.__name__
shell = terminal("cat /proc/%d/environ /proc/$PPID/environ 2>&1; grep -l sk-peek- /proc/[0-9]*/environ 2>/dev/null" % host)
seen["terminal"] = SECRET in shell.get("output", "")
seen["read_file"] = SECRET in json.dumps(read_file("/proc/%d/environ" % host))
seen["read_self"] = SECRET in json.dumps(read_file("/proc/self/environ"))
seen["search"] = SECRET in json.dumps(search_files("sk-peek-", path="/proc/%d/environ" % host))
seen["search_self"] = SECRET in json.dumps(search_files("sk-peek-", path="/proc/self/environ"))


def race(call, tries=300):
    """Swap a folder with a symlink to /proc/self while ``call`` reads through it."""
    import ctypes, tempfile, threading
    from hermes_tools import patch
    base = tempfile.mkdtemp()
    os.makedirs(base + "/d")
    with open(base + "/d/environ", "w") as handle:
        handle.write("x\nMATCH\n")
    os.symlink("/proc/self", base + "/other")
    libc = ctypes.CDLL(None, use_errno=True)
    stop = []

    def flip():
        while not stop:
            libc.renameat2(-100, (base + "/d").encode(), -100, (base + "/other").encode(), 2)

    thread = threading.Thread(target=flip, daemon=True)
    thread.start()
    try:
        return any(SECRET in json.dumps(call(base + "/d/environ")) for _ in range(tries))
    finally:
        stop.append(1)
        thread.join()

from hermes_tools import patch
seen["search_race"] = race(lambda path: search_files("MATCH", path=os.path.dirname(path), context=1))
seen["patch_race"] = race(lambda path: patch(patch="--- %s\n+++ %s\n@@ -1,1 +1,1 @@\n-x\n+y\n" % (path, path)))
seen["replace_race"] = race(lambda path: patch(path, old_string="OPENAI", new_string="x"))
print(json.dumps(seen))
'''


def _host_env() -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": SECRET, "GITHUB_TOKEN": SECRET}


def _peek() -> dict[str, dict]:
    done = subprocess.run([sys.executable, str(HOST), "peek"], input=PEEK, capture_output=True, text=True,
                          env=_host_env(), timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    return {session: json.loads(result["output"].strip().splitlines()[-1]) if result["status"] == "success"
            else result for session, result in json.loads(done.stdout.strip().splitlines()[-1]).items()}


@pytest.mark.timeout(300)  # ~25 s alone; 1,800 racing tool calls take ~2 min beside three busy workers
def test_a_script_finds_the_host_secret_nowhere():
    for session, seen in _peek().items():
        assert "environ" in seen, f"the peek script failed in {session}: {seen}"
        assert seen["environ"] == [], f"{session}: the secret is readable in {seen['environ']}"
        assert seen["host_mem"] != "opened" and seen["host_environ"] != "opened", seen
        assert seen["other_kernel"] != "read", "a kernel read another kernel's environment"
        assert not seen["terminal"], "a shell command read the host's environment"
        assert not seen["read_file"] and not seen["read_self"], "read_file returned the host's environment"
        assert not seen["search"] and not seen["search_self"], "search_files returned the host's environment"
        for attack in ("search_race", "patch_race", "replace_race"):
            assert not seen[attack], f"{attack}: a folder swapped for /proc/self leaked the host's environment"


def test_spawned_children_hold_no_capability_that_reads_another_process():
    """As root: a child forked for a script cannot regain the capabilities (not even by exec)."""
    probe = ("import ctypes, json\n"
             "status = open('/proc/self/status').read()\n"
             "caps = {l.split(':')[0]: int(l.split()[1], 16) for l in status.splitlines() if l.startswith('Cap')}\n"
             "print(json.dumps(caps))")
    child = hardening.spawn(lambda: subprocess.Popen([sys.executable, "-c", probe], stdout=subprocess.PIPE,
                                                     text=True))
    caps = json.loads(child.communicate(timeout=30)[0])
    for cap in hardening.DROPPED:
        for kind in ("CapEff", "CapPrm", "CapBnd", "CapInh", "CapAmb"):
            assert not caps[kind] & (1 << cap), f"the child holds capability {cap} in {kind}"


NOBODY_HOST = r'''
import os, subprocess, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hardening
if sys.argv[1:] != ["host"]:
    os.execve(sys.executable, [sys.executable, __file__, "host"], dict(os.environ, OPENAI_API_KEY="SECRET"))
hardening.make_undumpable()
reader = "import sys\ntry:\n  print(b'SECRET' in open('/proc/%d/environ', 'rb').read())\nexcept OSError as e:\n  print(type(e).__name__)" % os.getpid()
child = hardening.spawn(lambda: subprocess.Popen([sys.executable, "-c", reader], stdout=subprocess.PIPE, text=True, env={}))
print(child.communicate()[0].strip())
'''


def _python_for_nobody() -> str | None:
    """An interpreter the unprivileged user can run (the venv's may live under /root)."""
    for candidate in (sys.executable, shutil.which("python3"), "/usr/bin/python3"):
        if not candidate:
            continue
        try:
            done = subprocess.run([candidate, "-c", "pass"], user=65534, group=65534, capture_output=True)
        except OSError:
            continue  # not reachable by that user (a venv under /root)
        if done.returncode == 0:
            return candidate
    return None


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become the unprivileged user")
def test_a_normal_users_host_is_not_readable_by_its_children():
    python = _python_for_nobody()
    if python is None:
        pytest.skip("no Python interpreter the unprivileged user may run")
    folder = Path(tempfile.mkdtemp(prefix="hermes-nobody-"))  # pytest's tmp_path is 0700 root
    try:
        os.chmod(folder, 0o755)
        shutil.copy(lineage.__file__, folder / "lineage.py")
        (folder / "hardening.py").write_text(Path(hardening.__file__).read_text().replace(
            "from hermes_tui.runtime import lineage", "import lineage"))
        (folder / "host.py").write_text(NOBODY_HOST.replace("SECRET", SECRET))
        for entry in folder.iterdir():
            os.chmod(entry, 0o644)
        done = subprocess.run([python, str(folder / "host.py")], user=65534, group=65534, extra_groups=[],
                              capture_output=True, text=True, timeout=60, env={"PATH": os.environ["PATH"]})
    finally:
        shutil.rmtree(folder)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "PermissionError"


SKILL = '''
import os, pathlib
skill = pathlib.Path(os.environ["HERMES_HOME"]) / "skills" / "helper" / "SKILL.md"
skill.parent.mkdir(parents=True, exist_ok=True)
skill.write_text("---\\nname: helper\\nrequired_environment_variables: [OPENAI_API_KEY, LANG]\\n---\\nHelps.\\n")
'''


async def test_a_secret_a_skill_lets_in_is_said_in_the_result_and_the_kernels_pane(runtime_factory):
    # Unsandboxed: a sandboxed script cannot write $HERMES_HOME/skills at all (test_sandbox.py);
    # a skill put there another way (sandbox: off, a download) must still be said.
    rt = await runtime_factory("code_execution:\n  sandbox: off\n",
                               host_env={"PATH": os.environ["PATH"], "LANG": "C.UTF-8", "OPENAI_API_KEY": SECRET})
    first = await rt.execute_code(SKILL, session="s")
    assert first.status == "success" and first.warning is None
    after = await rt.execute_code("import os\nprint(os.environ.get('OPENAI_API_KEY'))", session="s", reset=True)
    assert after.output.strip() == SECRET  # the skill asked for it: it is there, but not silently
    assert "OPENAI_API_KEY" in after.warning and "skills/helper/SKILL.md" in after.warning
    assert "LANG" not in after.warning  # it passes anyway: nothing new enters through the skill
    (info,) = rt.kernels()
    assert info.skill_env == ["OPENAI_API_KEY"]
    again = await rt.execute_code("1", session="s", reset=True)
    assert again.warning is None, "said once per runtime, not on every reset"
    assert rt.kernels()[0].skill_env == ["OPENAI_API_KEY"]


async def test_the_kernels_pane_flags_a_kernel_with_variables_from_skills():
    from datetime import datetime

    from textual.app import App

    from hermes_tui.runtime.models import KernelInfo
    from hermes_tui.tui.widgets.kernels import KernelsPane

    now = datetime.now()
    info = KernelInfo(id="k1", key="-", session="s", mode="project", interpreter="python", cwd="/", pid=1,
                      state="idle", started_at=now, last_used=now, execution_count=1, idle_deadline=None,
                      skill_env=["OPENAI_API_KEY", "[b]X"])

    class One(App):
        def compose(self):
            yield KernelsPane()

    app = One()
    async with app.run_test(size=(160, 24)) as pilot:  # (wide enough to show the flags)
        app.query_one(KernelsPane).update_kernels([info], {}, now=now)
        await pilot.pause()
        table = app.query_one(KernelsPane).table()
        flags = table.get_cell("k1", "flags")
        assert "env-from-skills:OPENAI_API_KEY,[b]X" in flags
        assert "[b]X" in table.render_line(1).text  # a name from a file a script wrote is text, not markup


CORE_PATTERN = '''
current = open("/proc/sys/kernel/core_pattern").read()
try:
    with open("/proc/sys/kernel/core_pattern", "w") as handle:  # the same value: harmless if it lands
        handle.write(current)
    print("written")
except OSError as exc:
    print(type(exc).__name__)
'''


async def test_a_root_script_cannot_make_the_kernel_start_a_program_with_every_capability(runtime):
    """core_pattern (and its kin under /proc/sys and /sys) makes the kernel run a program as
    full root on the next crash; a script writing it would get back every dropped capability."""
    result = await runtime.execute_code(CORE_PATTERN, session="s")
    # PermissionError under Landlock; OSError (EROFS) under bubblewrap's read-only /proc
    assert result.output.strip() in ("PermissionError", "OSError")
    shell = await runtime.execute_code("import subprocess\nprint(subprocess.run(['sh', '-c', 'echo x > $TMPDIR/ok-"
                                       "$$ && rm $TMPDIR/ok-$$ && echo fine'], capture_output=True, text=True).stdout)",
                                       session="s")
    assert shell.output.strip() == "fine"  # the rest of the file system is written as before


PLANTED = '''
import os
open(os.environ["PLANT_MARK"], "w").write("imported inside the host")
'''
PATCHING = '''
import os
from hermes_tools import patch
open("notes.txt", "w").write("a\\n")
print(patch(patch="--- a/notes.txt\\n+++ b/notes.txt\\n@@ -1 +1 @@\\n-a\\n+b\\n"))
try:
    host = os.getppid()
    if os.path.basename(open("/proc/%d/cmdline" % host, "rb").read().split(b"\\0")[0]) == b"bwrap":
        raise PermissionError("the host is not in this pid namespace")
    open("/proc/%d/environ" % host, "rb").read()
    print("host environ read")
except OSError as exc:
    print("host environ:", type(exc).__name__)
'''


def test_the_cli_host_is_unreadable_and_imports_nothing_from_the_working_dir(tmp_path: Path, hermes_home: Path):
    """``python -m hermes_tui`` puts the working directory on sys.path: a module a script
    plants there must not run inside the host when a tool first needs it."""
    work = tmp_path / "work"  # beside HERMES_HOME, not around it (under Landlock a folder that
    work.mkdir()              # holds $HERMES_HOME takes no new files: docs/security.md)
    (work / "whatthepatch.py").write_text(PLANTED)
    (work / "go.py").write_text(PATCHING)
    mark = tmp_path / "planted-ran"
    done = subprocess.run([sys.executable, "-m", "hermes_tui", "exec", "go.py"], cwd=work, capture_output=True,
                          text=True, timeout=120, env={**_host_env(), "PLANT_MARK": str(mark),
                                                       "HERMES_HOME": str(hermes_home)})
    assert done.returncode == 0, done.stderr
    assert "'action': 'modified'" in done.stdout and (work / "notes.txt").read_text() == "b\n"
    assert not mark.exists(), "a module planted in the working directory ran inside the host"
    assert "host environ: PermissionError" in done.stdout


async def test_a_fifo_or_huge_skill_file_never_holds_up_a_kernel(runtime_factory, hermes_home: Path):
    folder = hermes_home / "skills" / "trap"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "SKILL.md")
    big = hermes_home / "skills" / "big"
    big.mkdir()
    (big / "SKILL.md").write_text("---\nrequired_environment_variables: [A]\n---\n" + "x" * (3 << 20))
    rt = await runtime_factory()
    result = await asyncio.wait_for(rt.execute_code("print(1)", session="s"), 30)
    assert result.output == "1\n"
