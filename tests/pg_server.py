"""A real PostgreSQL server for tests and benchmarks: ``initdb`` into a temp dir, ``pg_ctl``
on a private port (127.0.0.1) and a Unix socket in that dir, stopped at the end.

PostgreSQL refuses to run as root; on these machines everything is root, so the server's
files belong to the ``postgres`` user (made by Debian's package) and its programs run as it.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

SUPERUSER = "postgres"
PASSWORD_USER = "hermes"
"""A role that must log in with a password over TCP (tests of ``store.password_env``)."""
PASSWORD = "s3cret-Pg-pass"


def bindir() -> Path | None:
    """Where ``initdb`` and ``pg_ctl`` are: on PATH, else Debian's ``/usr/lib/postgresql/N/bin``."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(os.path.realpath(found)).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(candidates[-1]).parent if candidates else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class PostgresServer:
    """One PostgreSQL cluster of its own. ``fast`` turns fsync off (for the test suite; the
    benchmark keeps the defaults)."""

    def __init__(self, *, fast: bool = True) -> None:
        found = bindir()
        if found is None:
            raise RuntimeError("PostgreSQL is not installed (initdb not found): apt-get install -y postgresql")
        self.bin = found
        self.fast = fast
        self.base = Path(tempfile.mkdtemp(prefix="hpg-"))  # short: a socket path is at most 107 bytes
        self.data = self.base / "data"
        self.log = self.base / "server.log"
        self.port = _free_port()
        self.user: str | None = None
        if os.geteuid() == 0:
            self.user = "postgres" if _user_exists("postgres") else "nobody"
            entry = pwd.getpwnam(self.user)
            os.chown(self.base, entry.pw_uid, entry.pw_gid)
        self.running = False
        self._databases = 0

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.bin / args[0]), *args[1:]], user=self.user, capture_output=True, text=True,
                              check=check, cwd=self.base, timeout=120)

    def init(self) -> None:
        """Make the cluster: trust on the socket, a password (scram) over TCP."""
        self._run("initdb", "-D", str(self.data), "-U", SUPERUSER, "-E", "UTF8", "--locale=C.UTF-8",
                  "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync")
        settings = [f"port = {self.port}", "listen_addresses = '127.0.0.1'",
                    f"unix_socket_directories = '{self.base}'", "max_connections = 200"]
        if self.fast:
            settings += ["fsync = off", "full_page_writes = off"]
        with open(self.data / "postgresql.conf", "a") as conf:
            conf.write("\n".join(settings) + "\n")

    def start(self) -> None:
        """Start the server and wait until it takes connections."""
        if not self.data.exists():
            self.init()
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "start")
        self.running = True
        if not getattr(self, "_roles_made", False):
            self.psql(f"CREATE ROLE {PASSWORD_USER} LOGIN SUPERUSER PASSWORD '{PASSWORD}'")
            self._roles_made = True

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``immediate`` is a crash: no clean shutdown)."""
        if self.running:
            self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop", check=False)
            self.running = False

    def destroy(self) -> None:
        """Stop it and remove its files."""
        self.stop("immediate")
        shutil.rmtree(self.base, ignore_errors=True)

    def psql(self, sql: str, database: str = "postgres") -> str:
        """Run SQL as the superuser over the socket; its output."""
        done = self._run("psql", "-h", str(self.base), "-p", str(self.port), "-U", SUPERUSER, "-d", database,
                         "-v", "ON_ERROR_STOP=1", "-Atc", sql)
        return done.stdout

    def new_database(self, prefix: str = "t") -> str:
        """A fresh, empty database; its name."""
        self._databases += 1
        name = f"{prefix}_{os.getpid()}_{self._databases}_{int(time.time() * 1000) % 100000}"
        self.psql(f"CREATE DATABASE {name}")
        return name

    def url(self, database: str, *, tcp: bool = False, password: bool = False) -> str:
        """A ``postgresql://`` URL for ``database``: over the Unix socket as the superuser
        (no password), or over TCP as the password role (with the password in it if asked)."""
        if tcp:
            secret = f":{PASSWORD}" if password else ""
            return f"postgresql://{PASSWORD_USER}{secret}@127.0.0.1:{self.port}/{database}"
        return f"postgresql://{SUPERUSER}@/{database}?host={self.base}&port={self.port}"


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True
