"""The backends' test servers themselves (tests/helpers/backends.py): a container of the offline
test image runs the host's python3 with no network, the no-python image runs none, and the
SSH servers log in, with and without python3 on PATH."""

from __future__ import annotations

import subprocess

import pytest

from conftest import running_with, wait_for
from helpers.backends import NO_PYTHON_IMAGE, TEST_IMAGE, SshServer, sshd_installed


def docker_run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", "run", "--rm", "--network", "none", *args], capture_output=True, text=True,
                          timeout=120)


def test_test_image_runs_the_hosts_python_without_a_network(docker_daemon):
    done = docker_run(*docker_daemon, TEST_IMAGE, "python3", "-c", "print(6*7)")
    assert (done.returncode, done.stdout) == (0, "42\n"), done.stderr
    # /tmp is writable in the container (a folder of the image, not a tmpfs: `docker cp` into it works)
    done = docker_run(*docker_daemon, TEST_IMAGE, "sh", "-c", "echo hi > /tmp/x && cat /tmp/x")
    assert (done.returncode, done.stdout) == (0, "hi\n"), done.stderr


def test_no_python_image_runs_no_python(docker_daemon):
    bare = docker_run(NO_PYTHON_IMAGE, "python3", "-c", "print(1)")
    assert bare.returncode != 0 and "1" not in bare.stdout
    assert "not found" in bare.stderr or "no such file" in bare.stderr.lower(), bare.stderr
    # even given the host's /usr, python3 is not on its PATH
    mounted = docker_run(*docker_daemon, NO_PYTHON_IMAGE, "python3", "-c", "print(1)")
    assert mounted.returncode != 0 and "1" not in mounted.stdout, mounted.stderr


def test_ssh_server_runs_python(ssh_server):
    done = ssh_server.run("python3 -c 'print(42)'")
    assert (done.returncode, done.stdout) == (0, "42\n"), done.stderr
    # a login's HOME is the server's own folder, never the real /root
    done = ssh_server.run("echo $HOME")
    assert done.stdout.strip() == str(ssh_server.home)
    assert ssh_server.known_hosts.read_text().startswith(f"[127.0.0.1]:{ssh_server.port} ssh-ed25519 ")


def test_ssh_server_without_python(ssh_server_no_python):
    done = ssh_server_no_python.run("python3 -c 'print(42)'")
    assert done.returncode == 127 and "not found" in done.stderr, (done.returncode, done.stderr)
    done = ssh_server_no_python.run("echo ok && mkdir -p /tmp && cat /dev/null")
    assert (done.returncode, done.stdout) == (0, "ok\n"), done.stderr


def test_ssh_server_stop_ends_what_its_logins_started():
    if not sshd_installed():
        pytest.skip("OpenSSH's server is not installed (.ci/run installs it: apt-get install openssh-server)")
    with SshServer() as server:
        # a process that leaves sshd's tree (its own session, parent gone) is still ended by stop()
        server.run("setsid sleep 301.7 </dev/null >/dev/null 2>&1 &")
        assert wait_for(lambda: running_with("301.7"), timeout=5)
        server.stop()
        assert not running_with("301.7")
        assert not server.pids() and server.process.poll() is not None
