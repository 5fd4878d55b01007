"""Real servers for the kernel backends' tests (``hermes_tui/runtime/backends/``): a Docker
daemon, images for it that need no registry, and an OpenSSH server of the test run's own.

Docker: one ``dockerd`` per machine. :func:`ensure_dockerd` uses the one that answers, or starts
one (under a file lock, since four xdist workers ask at once) and writes its pid to
:data:`DOCKERD_PID_FILE`; the run's controller calls :func:`stop_dockerd_if_started` at the end.
Runs that overlap on one machine share it: each holds a shared lock from start to end
(:func:`register_test_run`), and the last one out stops it.

No registry can be reached, so the images are ``docker import`` of a tar of two empty folders
(``/tmp``, ``/root``); a container gets the host's ``/usr`` and friends read-only through
:data:`HOST_MOUNTS`. Built once, under the same lock, and kept by name.

SSH: :class:`SshServer`, ``/usr/sbin/sshd`` on 127.0.0.1 and a free port, root logging in with a
key of its own. Standard library and pytest only.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

import pytest

# -- Docker ----------------------------------------------------------------------------------------

DOCKERD_LOCK_FILE = Path("/tmp/hermes-tui-test-dockerd.lock")
"""Held (exclusively) while a dockerd is started or stopped and while the images are built."""
DOCKERD_PID_FILE = Path("/tmp/hermes-tui-test-dockerd.pid")
"""The pid of a dockerd the tests started (absent when they use one that was already running)."""
DOCKERD_LOG_FILE = Path("/tmp/hermes-tui-test-dockerd.log")
DOCKERD_USERS_FILE = Path("/tmp/hermes-tui-test-dockerd.users")
"""Every test run's controller holds a shared lock on it; the dockerd is stopped only by a run
that can take it exclusively (no other run is still going)."""

DOCKERD_FLAGS = (
    ["--iptables=false", "--bridge=none"],
    ["--iptables=false", "--bridge=none", "--ip-forward=false", "--ip-masq=false"],
)
"""Tried in turn: there is no iptables and no bridge to make on these machines."""

TEST_IMAGE = "hermes-tui-test:py3"
"""An image with nothing but empty ``/tmp`` and ``/root``: run it with :data:`HOST_MOUNTS` and
the host's ``python3`` runs in it (``--network none`` works)."""
NO_PYTHON_IMAGE = "hermes-tui-test:nopy"
"""The same empty image, whose ``PATH`` is a folder that does not exist: without mounts nothing
runs in it at all, and even with :data:`HOST_MOUNTS` ``python3`` (by name) is not found."""
NO_PYTHON_PATH = "/nonexistent-hermes-bin"

IMAGE_RECIPE = "1"
"""Kept in the images' label ``hermes-tui-test-recipe``: change it when the recipe changes and
the cached images are rebuilt."""

CONTAINER_PREFIX = "hermes-"
"""Containers named so are removed before the tests' dockerd is stopped: name yours so."""


def _host_mounts() -> list[str]:
    """``-v P:P:ro`` for each of the host's system folders that exists (``/bin``, ``/lib`` and
    ``/lib64`` are symlinks into ``/usr`` on Debian: Docker mounts what they point at)."""
    found = []
    for path in ("/usr", "/lib", "/lib64", "/bin", "/etc"):
        if os.path.isdir(path):
            found += ["-v", f"{path}:{path}:ro"]
    return found


HOST_MOUNTS = _host_mounts()
"""``docker run`` arguments giving a container of :data:`TEST_IMAGE` the host's programs and
libraries, read-only. ``/tmp`` is a plain folder in the image (writable; ``docker cp`` into it
works, which it silently does not into a ``--tmpfs``)."""


def docker_ready(timeout: float = 5.0) -> bool:
    """True when ``docker info`` reaches a daemon within ``timeout`` seconds."""
    if shutil.which("docker") is None:
        return False
    try:
        done = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=timeout)
    except (subprocess.TimeoutExpired, OSError):
        return False
    return done.returncode == 0 and bool(done.stdout.strip())


def _dockerd_binary() -> str | None:
    found = shutil.which("dockerd")
    if found is None and os.access("/usr/sbin/dockerd", os.X_OK):
        found = "/usr/sbin/dockerd"
    return found


def _skip_without_docker() -> str:
    """The dockerd binary; skips the test when Docker is not installed."""
    dockerd = _dockerd_binary()
    if dockerd is None or shutil.which("docker") is None:
        pytest.skip("Docker is not installed (.ci/run installs docker.io: apt-get install docker.io)")
    return dockerd


@contextmanager
def _dockerd_lock() -> Iterator[None]:
    """The machine-wide lock (one process at a time starts, stops or builds images)."""
    with open(DOCKERD_LOCK_FILE, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat.rsplit(b")", 1)[1].split()[0] != b"Z"


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def _log_tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _launch_dockerd(dockerd: str, flags: list[str]) -> int:
    """Start dockerd in a session of its own, not as our child (a shell starts it in the
    background and exits): it outlives the xdist worker that started it. Its pid."""
    with open(DOCKERD_LOG_FILE, "ab") as log:
        log.write(f"\n--- {time.strftime('%Y-%m-%d %H:%M:%S')} pid {os.getpid()}: {dockerd} {' '.join(flags)}\n".encode())
    shell = subprocess.run(
        ["sh", "-c", '"$@" </dev/null >>"$HERMES_DOCKERD_LOG" 2>&1 & echo $!', "sh", dockerd, *flags],
        env={"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root",
             "HERMES_DOCKERD_LOG": str(DOCKERD_LOG_FILE)},  # none of the test's variables (TMPDIR, DOCKER_*)
        stdin=subprocess.DEVNULL, capture_output=True, text=True, check=True, start_new_session=True, timeout=30)
    return int(shell.stdout.strip())


def ensure_dockerd(timeout: float = 60.0) -> None:
    """Make sure a Docker daemon answers: use the one running, or start one (once per machine,
    under :data:`DOCKERD_LOCK_FILE`) and record its pid in :data:`DOCKERD_PID_FILE`. Skips
    the test when Docker is not installed; raises (with dockerd's log) when it will not start."""
    if docker_ready():
        return
    dockerd = _skip_without_docker()
    with _dockerd_lock():
        if docker_ready():
            return
        for flags in DOCKERD_FLAGS:
            pid = _launch_dockerd(dockerd, flags)
            DOCKERD_PID_FILE.write_text(f"{pid}\n")
            deadline = time.monotonic() + timeout
            while _alive(pid) and time.monotonic() < deadline:
                if docker_ready():
                    return
                time.sleep(0.2)
            _stop_pid(pid)
            DOCKERD_PID_FILE.unlink(missing_ok=True)
        raise RuntimeError(f"dockerd did not start (flags tried: {DOCKERD_FLAGS}); "
                           f"the end of {DOCKERD_LOG_FILE}:\n{_log_tail(DOCKERD_LOG_FILE)}")


def _stop_pid(pid: int, grace: float = 20.0) -> None:
    """SIGTERM, wait up to ``grace`` seconds, then SIGKILL and wait."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not _alive(pid):
            return


def _reap_managed_containerd() -> None:
    """dockerd runs a containerd of its own and ends it on SIGTERM; after a SIGKILL it would stay."""
    pid_file = Path("/var/run/docker/containerd/containerd.pid")
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return
    if _alive(pid) and any("/var/run/docker/containerd/" in word for word in _cmdline(pid)):
        _stop_pid(pid, grace=5.0)


_users_lock: IO[str] | None = None


def register_test_run() -> None:
    """Hold a shared lock on :data:`DOCKERD_USERS_FILE` until this process ends: called by the
    controller (or a run without xdist) when its session starts, so that another run on the
    machine that ends first leaves the dockerd running for this one."""
    global _users_lock
    if _users_lock is None:
        _users_lock = open(DOCKERD_USERS_FILE, "a")
        fcntl.flock(_users_lock, fcntl.LOCK_SH)


def remove_test_containers() -> None:
    """``docker rm -f`` every container whose name starts with ``hermes-``."""
    found = subprocess.run(["docker", "ps", "-aq", "--filter", f"name=^{CONTAINER_PREFIX}"],
                           capture_output=True, text=True, timeout=30)
    ids = found.stdout.split()
    if found.returncode == 0 and ids:
        subprocess.run(["docker", "rm", "-f", *ids], capture_output=True, timeout=120)


def stop_dockerd_if_started() -> None:
    """Stop the dockerd whose pid is in :data:`DOCKERD_PID_FILE` (the tests started it) and remove
    the file, after removing the ``hermes-`` containers; a dockerd the tests did not start is
    left alone. Does nothing while another run on the machine still holds its shared lock (the
    last run to end stops it). Called once, by the xdist controller, at the end of the run."""
    if not DOCKERD_PID_FILE.exists():
        return
    users = _users_lock if _users_lock is not None else open(DOCKERD_USERS_FILE, "a")
    try:
        fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)  # converts our shared lock, if we hold one
    except BlockingIOError:
        # Another run is still going: it stops the dockerd when it ends. (A failed conversion
        # may have dropped our shared lock: take it again.)
        _release(users)
        return
    try:
        with _dockerd_lock():
            try:
                pid = int(DOCKERD_PID_FILE.read_text().strip())
            except (OSError, ValueError):
                pid = 0
            if pid and _alive(pid) and any(word.endswith("dockerd") for word in _cmdline(pid)[:1]):
                if docker_ready():
                    remove_test_containers()
                _stop_pid(pid)
                _reap_managed_containerd()
            DOCKERD_PID_FILE.unlink(missing_ok=True)
    finally:
        _release(users)


def _release(users: IO[str]) -> None:
    """Back to the shared lock this run holds (a later stop call behaves the same), or close
    the file opened just for this stop."""
    if users is _users_lock:
        fcntl.flock(users, fcntl.LOCK_SH)
    else:
        users.close()


def _image_current(name: str) -> bool:
    done = subprocess.run(["docker", "image", "inspect", "--format",
                           '{{index .Config.Labels "hermes-tui-test-recipe"}}', name],
                          capture_output=True, text=True, timeout=30)
    return done.returncode == 0 and done.stdout.strip() == IMAGE_RECIPE


def _empty_root_tar() -> bytes:
    """A tar of ``/tmp`` (1777) and ``/root`` (0700), both empty: the whole image."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, mode in (("tmp", 0o1777), ("root", 0o700)):
            entry = tarfile.TarInfo(name)
            entry.type, entry.mode, entry.mtime = tarfile.DIRTYPE, mode, int(time.time())
            tar.addfile(entry)
    return buffer.getvalue()


def _import_image(name: str, *changes: str) -> None:
    args = ["docker", "import", "--change", f"LABEL hermes-tui-test-recipe={IMAGE_RECIPE}"]
    for change in changes:
        args += ["--change", change]
    done = subprocess.run([*args, "-", name], input=_empty_root_tar(), capture_output=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"docker import {name} failed: {done.stderr.decode(errors='replace')}")


def ensure_images() -> None:
    """Build :data:`TEST_IMAGE` and :data:`NO_PYTHON_IMAGE` unless they exist (from this recipe):
    offline (``docker import``), once per machine, under :data:`DOCKERD_LOCK_FILE`."""
    wanted = {TEST_IMAGE: (), NO_PYTHON_IMAGE: (f"ENV PATH={NO_PYTHON_PATH}",)}
    if all(_image_current(name) for name in wanted):
        return
    with _dockerd_lock():
        for name, changes in wanted.items():
            if not _image_current(name):
                _import_image(name, *changes)


# -- SSH -------------------------------------------------------------------------------------------

SSHD = "/usr/sbin/sshd"


def sshd_installed() -> bool:
    """True when OpenSSH's server and client are installed."""
    return os.access(SSHD, os.X_OK) and shutil.which("ssh") is not None and shutil.which("ssh-keygen") is not None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _children(pid: int) -> list[int]:
    """Every live descendant of ``pid``."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            ppid = int(Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        parents.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _with_environ(marker: bytes) -> list[int]:
    """Live processes whose environment holds the ``NAME=value`` entry ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            if marker in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                found.append(int(entry))
        except OSError:
            continue
    return found


class SshServer:
    """An OpenSSH server of its own on 127.0.0.1 (a free port), in a temp dir: host key, a key
    for ``root``, ``sshd_config``, its log (``sshd.log``) and ``home``.

    A login's ``HOME`` is :attr:`home` (an empty folder, not ``/root``: the tests never write
    to the real home, and bash does not read root's ``~/.bashrc``, which on these machines puts
    pyenv's ``python3`` first and takes 0.6 s a command; put a ``.bashrc`` in :attr:`home` to
    test a talkative remote). The working directory is still ``/root`` (sshd's choice).
    Every process a login starts has ``HERMES_TEST_SSHD=<dir>`` in its environment: :meth:`stop`
    ends those too, even when they left sshd's tree.

    ``no_python``: ``PATH`` is a folder of links to everything in ``/usr/local/{s,}bin`` and
    ``/usr/{s,}bin`` but ``python*``: ``python3`` is "command not found" (exit 127), while
    the rest of a host (``sh``, ``cat``, ``mkdir``, ``ps``) is there.
    """

    def __init__(self, *, no_python: bool = False) -> None:
        self.no_python = no_python
        self.host = "127.0.0.1"
        self.user = "root"
        self.port = 0
        self.dir = Path(tempfile.mkdtemp(prefix="hermes-sshd-"))
        self.key = self.dir / "user"
        self.known_hosts = self.dir / "known_hosts"
        self.home = self.dir / "home"
        self.log = self.dir / "sshd.log"
        self.config = self.dir / "sshd_config"
        self.marker = f"HERMES_TEST_SSHD={self.dir}"
        self.process: subprocess.Popen[bytes] | None = None

    # -- life -------------------------------------------------------------------------------------

    def start(self, timeout: float = 20.0) -> SshServer:
        """Start sshd and wait until a real login works; raises with sshd's log if it does not."""
        if not sshd_installed():
            raise RuntimeError("OpenSSH is not installed: apt-get install -y openssh-server")
        if self.process is not None and self.process.poll() is None:
            return self
        os.makedirs("/run/sshd", exist_ok=True)  # sshd's privilege-separation dir: it refuses to start without it
        self._prepare()
        for attempt in range(3):
            if not self.port or attempt:
                self.port = _free_port()  # a new one if another process took ours in between
            self._write_config()
            with open(self.log, "ab") as log:
                self.process = subprocess.Popen([SSHD, "-D", "-e", "-f", str(self.config)], stdin=subprocess.DEVNULL,
                                                stdout=log, stderr=log, start_new_session=True)
            if self._wait_ready(timeout):
                return self
            bind_failed = "Bind to port" in _log_tail(self.log, 5) or "Address already in use" in _log_tail(self.log, 5)
            self.stop()
            if not bind_failed:
                break
        raise RuntimeError(f"sshd did not accept a login within {timeout} s; {self.log}:\n{_log_tail(self.log)}")

    def _prepare(self) -> None:
        """Keys and folders, once."""
        if self.key.exists():
            return
        self.home.mkdir(exist_ok=True)
        for name in ("host", "user"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"hermes-test-{name}",
                            "-f", str(self.dir / name)], check=True, capture_output=True, timeout=30)
        shutil.copyfile(self.dir / "user.pub", self.dir / "auth")
        if self.no_python:
            self._make_path_without_python()

    def _make_path_without_python(self) -> None:
        bin_dir = self.dir / "bin"
        bin_dir.mkdir()
        for folder in ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"):
            if not os.path.isdir(folder):
                continue
            for name in os.listdir(folder):
                link = bin_dir / name
                if name.startswith("python") or os.path.lexists(link):
                    continue
                os.symlink(os.path.join(folder, name), link)

    def _write_config(self) -> None:
        env = [f"HOME={self.home}", self.marker]
        if self.no_python:
            env.append(f"PATH={self.dir / 'bin'}")
        self.config.write_text("\n".join([
            f"Port {self.port}",
            f"ListenAddress {self.host}",
            f"HostKey {self.dir / 'host'}",
            f"AuthorizedKeysFile {self.dir / 'auth'}",
            f"PidFile {self.dir / 'pid'}",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PermitRootLogin prohibit-password",
            "StrictModes no",
            "UsePAM no",
            "PrintMotd no",
            "PrintLastLog no",
            "MaxStartups 100",  # many logins at once (a backend's tests): the default 10 drops some
            "MaxSessions 100",
            "Subsystem sftp internal-sftp",
            "SetEnv " + " ".join(env),
            "",
        ]))
        host_key = (self.dir / "host.pub").read_text().split()
        self.known_hosts.write_text(f"[{self.host}]:{self.port} {host_key[0]} {host_key[1]}\n")

    def _wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        assert self.process is not None
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                with socket.create_connection((self.host, self.port), timeout=1):
                    pass
            except OSError:
                time.sleep(0.02)
                continue
            try:
                if self.run("true", timeout=max(1.0, deadline - time.monotonic())).returncode == 0:
                    return True
            except subprocess.TimeoutExpired:
                return False
            time.sleep(0.1)
        return False

    def pids(self) -> list[int]:
        """sshd, every process under it, and every process a login started (by its environment)."""
        found = set(_with_environ(self.marker.encode()))
        if self.process is not None and self.process.poll() is None:
            found.add(self.process.pid)
            found.update(_children(self.process.pid))
        return sorted(pid for pid in found if _alive(pid))

    def stop(self) -> None:
        """End sshd and every process it or a login started (SIGTERM, then SIGKILL), and wait."""
        for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
            pids = self.pids()
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
                if self.process is not None:
                    self.process.poll()  # reap sshd itself (our child)
                time.sleep(0.05)
        if self.process is not None:
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass

    def close(self) -> None:
        """Stop, and remove the temp dir."""
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> SshServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- use --------------------------------------------------------------------------------------

    @property
    def destination(self) -> str:
        """``root@127.0.0.1``."""
        return f"{self.user}@{self.host}"

    def ssh_options(self) -> list[str]:
        """The ``ssh`` options that reach this server (no ``~/.ssh/config``, no agent's keys,
        never a prompt), without the destination."""
        return ["-F", "/dev/null", "-i", str(self.key), "-p", str(self.port), "-o", "BatchMode=yes",
                "-o", "IdentitiesOnly=yes", "-o", f"UserKnownHostsFile={self.known_hosts}",
                "-o", "StrictHostKeyChecking=yes", "-o", "ConnectTimeout=10"]

    def ssh_command(self, command: str) -> list[str]:
        """``ssh ... root@127.0.0.1 COMMAND`` as an argument list."""
        return ["ssh", *self.ssh_options(), self.destination, command]

    def run(self, command: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """Run ``command`` (a shell command line) there; its exit code, stdout and stderr."""
        return subprocess.run(self.ssh_command(command), stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=timeout)


class JupyterGateway:
    """A real Jupyter Kernel Gateway (PyPI ``jupyter_kernel_gateway``) on 127.0.0.1 with a token,
    in its own process group, whose kernels run this venv's Python (its ``python3`` kernelspec
    says ``python``: the venv's bin comes first on its PATH). ``url``, ``token``; ``stop()``
    kills it and every kernel it started; ``start()`` again on the same port (a restart)."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or _free_port()
        self.token = "kg-" + os.urandom(12).hex()
        self.root = Path(tempfile.mkdtemp(prefix="hermes-kg-"))
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> JupyterGateway:
        import urllib.request

        bin_dir = os.path.dirname(sys.executable)
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}", "JUPYTER_RUNTIME_DIR": str(self.root)}
        log = open(self.root / "kg.log", "ab")  # noqa: SIM115 - the gateway's for its life
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kernel_gateway", "--KernelGatewayApp.ip=127.0.0.1",
             f"--KernelGatewayApp.port={self.port}", f"--KernelGatewayApp.auth_token={self.token}",
             "--KernelGatewayApp.port_retries=0", "--JupyterWebsocketPersonality.list_kernels=True"],
            stdout=log, stderr=log, env=env, cwd=self.root, start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the Kernel Gateway exited: {_log_tail(self.root / 'kg.log')}")
            try:
                request = urllib.request.Request(self.url + "/api/kernelspecs",
                                                 headers={"Authorization": f"token {self.token}"})
                with urllib.request.urlopen(request, timeout=2):
                    return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"the Kernel Gateway did not answer within {timeout:g}s: {_log_tail(self.root / 'kg.log')}")

    def kernels(self) -> list[dict]:
        import json
        import urllib.request

        request = urllib.request.Request(self.url + "/api/kernels", headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=5) as answer:
            return json.loads(answer.read())

    def stop(self) -> None:
        """SIGKILL to the gateway's group and to every kernel it started (they are its children)."""
        if self.process is None:
            return
        doomed = [self.process.pid, *_children(self.process.pid)]
        for pid in doomed:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.process = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> JupyterGateway:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.close()
