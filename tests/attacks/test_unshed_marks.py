"""Issue 31, items 4–7: what a script's process cannot shed, and what it cannot reach.

* A script answers its own approval when the app runs with ``no_new_privs`` (the run is
  repeated under ``setpriv``, where the old signs — ancestry, a dropped bounding set,
  ``no_new_privs`` — all vanish for a child that double-forked).
* ``key_cmd`` is read through ``/proc/<pid>/environ`` by a kernel.
* As a normal user, a kernel reads the environment of the shell that launched the app.
* Another process reads a kernel's token from ``hermes_tools.py`` and calls its tools.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from hermes_tui.agent.models.keys import KeyCommand
from hermes_tui.runtime import Runtime
from conftest import make_config

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-unshed-" + "5" * 24
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (setpriv, another user)")


def _inner_pytest(test: str, tmp: Path, *setpriv: str) -> subprocess.CompletedProcess[str]:
    """Run one test of this suite again in a fresh interpreter under ``setpriv``. Not from the
    checkout's folder: ``-m`` puts the working directory first on ``sys.path``, where the
    checkout's ``hermes_tui`` lacks what an install adds (its widgets and themes)."""
    tmp.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        ["setpriv", *setpriv, sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:randomly", "-p",
         "no:cacheprovider", f"--rootdir={ROOT}", "-c", str(ROOT / "pyproject.toml"), f"--basetemp={tmp / 'base'}",
         str(ROOT / test)],
        cwd=tmp, capture_output=True, text=True, timeout=300,
    )


@needs_root
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv (util-linux) is missing")
def test_a_script_cannot_answer_its_own_dialog_when_the_app_has_no_new_privs(tmp_path: Path) -> None:
    # As systemd's NoNewPrivileges or docker's no-new-privileges leave it, and without
    # CAP_SETPCAP (the bounding set cannot be dropped): the kernel differs from the app in no
    # way the old check looked at once it double-forked.
    done = _inner_pytest("tests/attacks/test_self_approval.py::"
                         "test_a_script_cannot_answer_its_own_request_through_the_app_socket",
                         tmp_path / "inner", "--no-new-privs", "--bounding-set", "-setpcap", "--inh-caps", "-all")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout


KEY_CMD = r'''
import os, sys, time
open(sys.argv[1], "w").write(str(os.getpid()))
deadline = time.time() + 20
while not os.path.exists(sys.argv[2]) and time.time() < deadline:  # until the kernel has looked
    time.sleep(0.05)
print("tok-" + "9" * 20)
'''

LOOK_AT_KEY_CMD = r'''
import os, time
pid_file, done_file = PID_FILE, DONE_FILE
while not os.path.exists(pid_file):
    time.sleep(0.05)
time.sleep(0.2)
# The key_cmd's pid as this kernel sees it: by its command line (readable by anyone).
pid = next(int(p) for p in os.listdir("/proc") if p.isdigit()
           and b"key_cmd.py" in open("/proc/%s/cmdline" % p, "rb").read())
seen = {}
for name in ("environ", "mem"):
    try:
        with open("/proc/%d/%s" % (pid, name), "rb") as handle:
            seen[name] = "secret" if name == "environ" and SECRET.encode() in handle.read() else "opened"
    except OSError as exc:
        seen[name] = type(exc).__name__
open(done_file, "w").close()
print(seen)
'''


async def test_a_kernel_cannot_read_key_cmd_or_its_environment(hermes_home: Path, tmp_path: Path) -> None:
    script = tmp_path / "key_cmd.py"
    script.write_text(KEY_CMD)
    pid_file, done_file = tmp_path / "pid", tmp_path / "looked"
    # The app's environment holds a key: key_cmd must not be handed it.
    command = KeyCommand([sys.executable, str(script), str(pid_file), str(done_file)], "providers.x.key_cmd",
                         {**os.environ, "OPENAI_API_KEY": SECRET})
    async with Runtime(make_config("code_execution:\n  sandbox: off\n"), home=hermes_home) as rt:
        await rt.execute_code("1", session="s")
        code = (LOOK_AT_KEY_CMD.replace("PID_FILE", repr(str(pid_file))).replace("DONE_FILE", repr(str(done_file)))
                .replace("SECRET", repr(SECRET)))
        look = asyncio.create_task(rt.execute_code(code, session="s", timeout=30))
        token = await command.token()
        result = await look
    assert token == "tok-" + "9" * 20
    assert result.status == "success", result.error
    seen = eval(result.output)  # a dict the script printed
    assert seen["environ"] != "secret", "a kernel read the app's key in key_cmd's environment"
    assert seen == {"environ": "PermissionError", "mem": "PermissionError"}, seen


LAUNCHED = r'''
import asyncio, os, sys
from pathlib import Path
sys.path.insert(0, ROOT)
from hermes_tui.config import parse_config
from hermes_tui.runtime import Runtime

async def main():
    config = parse_config("code_execution:\n  sandbox: %s\n" % sys.argv[1])
    shell = os.getppid()  # the shell that launched this app, holding a secret in its environment
    code = ("try:\n    print(%r.encode() in open('/proc/%d/environ', 'rb').read())\n"
            "except OSError as exc:\n    print(type(exc).__name__)" % (SECRET, shell))
    async with Runtime(config, home=Path(os.environ["HERMES_HOME"])) as rt:
        result = await rt.execute_code(code, session="s", cwd=os.environ["HOME"])
        print(rt.sandbox.label if rt.sandbox else "none", result.output.strip() or result.error, flush=True)

asyncio.run(main())
'''


def _python_for(uid: int) -> tuple[str, dict[str, str]] | None:
    """An interpreter ``uid`` can run with this suite's packages (the venv's own may live
    under /root: then the system's of the same version, given the venv's site-packages)."""
    import sysconfig

    site = sysconfig.get_paths()["purelib"]
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    for candidate, env in ((sys.executable, {}), (f"/usr/bin/python{version}", {"PYTHONPATH": site}),
                           ("/usr/bin/python3", {"PYTHONPATH": site})):
        try:
            done = subprocess.run([candidate, "-c", f"import sys, pydantic; assert sys.version.startswith('{version}')"],
                                  user=uid, group=uid, extra_groups=[], env={**env, "PATH": "/usr/bin:/bin"},
                                  capture_output=True)
        except OSError:
            continue
        if done.returncode == 0:
            return candidate, env
    return None


@needs_root
@pytest.mark.parametrize("mode", ["off", "workspace-write"])
@pytest.mark.parametrize("uid", [0, 65534])
def test_a_kernel_cannot_read_the_launching_shell(mode: str, uid: int) -> None:
    """As a normal user the shell is the same uid and dumpable; as root the kernel holds no
    capability to read it: either way only a domain or a namespace keeps it out."""
    found = _python_for(uid)
    if found is None:
        pytest.skip("no interpreter with this suite's packages that an unprivileged user may run")
    python, python_env = found
    folder = Path(tempfile.mkdtemp(prefix="hermes-normal-"))  # pytest's tmp_path is 0700 root
    try:
        for sub in ("home", "hermes"):
            (folder / sub).mkdir()
            os.chown(folder / sub, uid, uid)
        os.chmod(folder, 0o755)
        (folder / "host.py").write_text(LAUNCHED.replace("ROOT", repr(str(ROOT))).replace("SECRET", repr(SECRET)))
        os.chmod(folder / "host.py", 0o644)
        env = {"PATH": os.environ["PATH"], "HOME": str(folder / "home"), "HERMES_HOME": str(folder / "hermes"),
               "LAUNCH_SECRET": SECRET, **python_env}
        # sh stays the app's parent (the command is not its last), as a login shell would.
        done = subprocess.run(["sh", "-c", f'"{python}" "{folder / "host.py"}" {mode}; true'],
                              user=uid, group=uid, extra_groups=[], env=env, capture_output=True, text=True,
                              timeout=120)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert done.returncode == 0 and done.stdout.strip(), done.stderr[-2000:]
    label, outcome = done.stdout.strip().splitlines()[-1].split(" ", 1)
    assert outcome != "True", f"{label}: a kernel read the launching shell's environment"
    # Off: the spawner's Landlock domain refuses it; under bubblewrap the shell is not in the
    # kernel's pid namespace at all (that pid names nothing there, or one of its own).
    assert outcome in ("PermissionError", "FileNotFoundError", "False"), (label, outcome)


async def test_another_process_finds_no_token_and_is_refused_by_the_kernels_channel(hermes_home: Path) -> None:
    async with Runtime(make_config("code_execution:\n  sandbox: off\n"), home=hermes_home) as rt:
        await rt.execute_code("1", session="s")
        (kernel,) = rt._pool._kernels.values()  # type: ignore[union-attr]
        staged = (kernel.staging_dir / "hermes_tools.py").read_text()
        assert kernel.token not in staged, "the kernel's token is written in hermes_tools.py"

        def call_with_the_stolen_token() -> str:
            # This test's process is not the kernel's: as root it could read every file, and
            # here it even holds the real token.
            sock = socket.socket(socket.AF_UNIX)
            sock.settimeout(10)
            sock.connect(str(kernel.rpc.path))
            data = sock.recv(65536)  # refused on sight: before it may send anything
            request = {"id": 1, "token": kernel.token, "tool": "terminal", "args": {"command": "echo stolen"}}
            try:
                sock.sendall(json.dumps(request).encode() + b"\n")
                while chunk := sock.recv(65536):
                    data += chunk
            except OSError:
                pass  # closed: nothing more to say
            sock.close()
            return data.decode()

        running = asyncio.create_task(rt.execute_code("import time\ntime.sleep(2)", session="s"))
        await asyncio.sleep(0.5)
        said = await asyncio.to_thread(call_with_the_stolen_token)
        await running
    assert "refused" in said and "kernel's own processes" in said, said
    assert "stolen" not in said


def test_off_without_landlock_says_so_in_the_label(monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_tui.runtime import lineage
    from hermes_tui.runtime.sandbox import Sandbox

    sandbox = Sandbox("off", network=False, hermes_home="/nonexistent")
    assert sandbox.label == "off"  # Landlock here: the spawner's domain keeps kernels out of other processes
    monkeypatch.setattr(lineage, "domains_available", lambda: False)
    assert sandbox.label == "off·/proc open"
