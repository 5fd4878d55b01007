"""Where kernels and commands run: this machine, a Docker container, or an SSH host.

A :class:`Backend` knows how to reach its place and nothing else: the client command line that
runs ``remote.py`` there (:meth:`Backend.command`), the place a session's work runs in
(:meth:`Backend.acquire` / :meth:`Backend.release`: a container per session for Docker), and
how a kernel there is shown (``where``, ``sandbox``). The kernel, the pool, the executor and
the tools use it through :class:`Remote`, one place as seen by one session.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import secrets
import sys
import zlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_tui.base.text import shown
from hermes_tui.config import Config

REMOTE_SOURCE = Path(__file__).parent / "remote.py"
RELAY_SOURCE = Path(__file__).parent / "relay.py"
LOADER = ("import sys,zlib,base64;g={'__name__':'hermes_remote'};"
          "exec(compile(zlib.decompress(base64.b64decode(sys.argv[1])),'hermes-remote','exec'),g);"
          "sys.exit(g['main']())")
"""What the far end's ``python3 -c`` runs: ``remote.py``, from its one argument (the code only:
the spec comes on stdin, see :func:`spec_bytes`)."""
CLIENT_NAMES = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TERM", "SSH_AUTH_SOCK", "DOCKER_HOST",
                "DOCKER_CONFIG", "DOCKER_CONTEXT", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY")
"""What the client (``docker``, ``ssh``) gets of the host's environment: what it needs to find
the daemon or the key, never a secret of the host's (only names the user forwards go further)."""
SUPPORTED = ("local", "docker", "ssh", "jupyter")


class BackendError(Exception):
    """The backend cannot be reached or refused: one line saying what failed and how to fix it."""


@dataclass
class Place:
    """Where one session's work runs on a backend (a container; a host)."""

    backend: Backend
    name: str
    """The container's name; ``user@host`` for SSH."""
    short_id: str = ""
    users: int = 0
    holder: asyncio.subprocess.Process | None = None
    """The client whose life is the place's (docker: the attached ``docker run -i``)."""
    container: str = ""
    """Docker: the container's full id (closed by id: a new container of the same name is
    never the one removed)."""


_SOURCE_CACHE: dict[str, str] = {}


def _remote_code() -> str:
    if "code" not in _SOURCE_CACHE:
        _SOURCE_CACHE["code"] = REMOTE_SOURCE.read_text(encoding="utf-8")
    return _SOURCE_CACHE["code"]


def payload() -> str:
    """The loader's argument: ``remote.py``, compressed, in base64 (no spec, no secret)."""
    if "payload" not in _SOURCE_CACHE:
        _SOURCE_CACHE["payload"] = base64.b64encode(zlib.compress(_remote_code().encode("utf-8"), 9)).decode("ascii")
    return _SOURCE_CACHE["payload"]


def spec_bytes(spec: dict[str, Any]) -> bytes:
    """What ``remote.py`` reads first on stdin: ``spec`` (with a fresh ``hello`` line it says
    back before anything else) as ten digits of length and JSON."""
    data = json.dumps(spec).encode("utf-8")
    return b"%010d" % len(data) + data


def new_hello() -> str:
    """A line the far end says first: what a login shell printed before it is dropped."""
    return "hermes-hello-" + secrets.token_hex(12)


def after_hello(data: bytes, hello: str) -> bytes | None:
    """``data`` after its ``hello`` line (None: the line is not there)."""
    marker = hello.encode("ascii") + b"\n"
    at = data.find(marker)
    return None if at < 0 else data[at + len(marker):]


class Backend:
    """This machine (the base class is the local backend: nothing is remote)."""

    name = "local"
    remote = False
    kernel_places = False
    """Each kernel has a place of its own and commands there run through it (Jupyter): no
    client command reaches the place, and a top-level call leases a kernel of its session."""

    def __init__(self, config: Config, home: Path) -> None:
        self.config = config
        self.home = home
        self._places: dict[str, Place] = {}
        self._lock = asyncio.Lock()

    @property
    def terminal(self) -> Any:
        return self.config.terminal

    def describe(self) -> str:
        """What a kernel's reuse key says of the backend (a change starts a new kernel)."""
        return self.name

    def remote_cwd(self) -> str:
        """The working dir on the backend (``terminal.cwd``; ``.``: where a login starts)."""
        cwd = str(getattr(self.terminal, "cwd", "") or "").strip()
        return cwd if cwd and cwd != "." else "."

    sandbox_label = "off"

    def where(self, place: Place | None) -> str:
        return "local"

    def client_env(self, host_env: Mapping[str, str]) -> dict[str, str]:
        return {name: host_env[name] for name in CLIENT_NAMES if name in host_env}

    def forwarded(self, host_env: Any) -> dict[str, str]:
        """Host variables the user named to be sent to the backend (and their values)."""
        return {}

    def command(self, place: Place) -> list[str]:
        """The client command line running ``remote.py`` at ``place`` (its spec goes on stdin:
        :func:`spec_bytes`)."""
        raise NotImplementedError

    async def acquire(self, session: str, host_cwd: str) -> Place:
        """The place ``session``'s work runs in, made ready; counted until :meth:`release`."""
        async with self._lock:
            key = self.place_key(session, host_cwd)
            place = self._places.get(key)
            if place is None or not await self.alive(place):
                place = await self.open_place(session, host_cwd)
                self._places[key] = place
            place.users += 1
            return place

    async def borrow(self, session: str, host_cwd: str) -> Place:
        """``session``'s place for a call of its own (no kernel holds it): the one there is, or
        a new one kept until a kernel's end releases it or the runtime closes (a top-level
        ``write_file`` is still there for the next call)."""
        async with self._lock:
            key = self.place_key(session, host_cwd)
            place = self._places.get(key)
            if place is None or not await self.alive(place):
                place = self._places[key] = await self.open_place(session, host_cwd)
            return place

    async def release(self, place: Place) -> None:
        """One user fewer; the last one ends the place (unless it persists)."""
        async with self._lock:
            place.users -= 1
            if place.users > 0:
                return
            for key, known in list(self._places.items()):
                if known is place:
                    del self._places[key]
            await self.close_place(place)

    async def close(self) -> None:
        """End every place (the runtime closes)."""
        async with self._lock:
            places, self._places = list(self._places.values()), {}
            for place in places:
                await self.close_place(place)

    def place_key(self, session: str, host_cwd: str) -> str:
        return session

    async def alive(self, place: Place) -> bool:
        return True

    async def open_place(self, session: str, host_cwd: str) -> Place:
        return Place(self, self.where(None))

    async def close_place(self, place: Place) -> None:
        return None


async def run_client(argv: list[str], *, env: dict[str, str], input: bytes | None = None,
                     timeout: float = 60.0, max_output: int = 1 << 20) -> tuple[int, bytes, bytes]:
    """Run a client command to its end: (exit code, stdout, stderr), each kept to ``max_output``
    bytes (the rest is read and dropped: a far end cannot fill this process's memory). OSError
    if it cannot start; TimeoutError after ``timeout`` seconds (it is killed)."""
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env=env, start_new_session=True)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

    async def feed(stream: asyncio.StreamWriter) -> None:
        try:
            stream.write(input or b"")
            await stream.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            stream.close()

    async def kept(stream: asyncio.StreamReader) -> bytes:
        held = bytearray()
        while piece := await stream.read(1 << 16):
            if len(held) < max_output:
                held += piece[:max_output - len(held)]
        return bytes(held)

    try:
        _, out, err, _ = await asyncio.wait_for(
            asyncio.gather(feed(proc.stdin), kept(proc.stdout), kept(proc.stderr), proc.wait()), timeout)
    except (asyncio.TimeoutError, asyncio.CancelledError):
        proc.kill()
        await proc.wait()
        raise
    return proc.returncode or 0, out, err


def last_line(data: bytes) -> str:
    """What a client said went wrong: its line naming an error, else its last line (one line,
    hidden characters escaped: it may quote what a script wrote)."""
    lines = [line.strip() for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("Run '")] or lines  # docker's "see --help"
    said = next((line for line in lines if "rror" in line or "denied" in line or "refused" in line),
                lines[-1] if lines else "")
    return shown(said)[:400]


@dataclass
class Call:
    """One run of ``remote.py`` there: the client's command line, its stdin's first bytes (the
    spec), and the line it says before its own output (what comes before it is dropped)."""

    argv: list[str]
    stdin: bytes
    hello: str
    place: Place

    def filtered(self) -> list[str]:
        """The command line with its output passed on only after the hello line (relay.py's
        ``--after``): a login shell's banner never reaches a command's output."""
        return [sys.executable, str(RELAY_SOURCE), "--after", self.hello, "--", *self.argv]


@dataclass
class Remote:
    """One session's work on a remote backend, as the tools see it: commands and file
    operations run at its place (the calling kernel's, or the session's)."""

    backend: Backend
    session: str
    host_cwd: str
    place: Place | None = None
    """The calling kernel's place (None: a top-level call borrows the session's)."""
    env: dict[str, str] = field(default_factory=dict)
    """Variables the user forwards, set for what runs there."""
    home: str | None = None
    """The home there, when known (the kernel's driver says it)."""
    client: dict[str, str] = field(default_factory=dict)
    """The environment of its clients (``docker``, ``ssh``): :meth:`Backend.client_env`."""
    via: Callable[[dict[str, Any], bytes, float], Awaitable[tuple[dict[str, Any], bytes]]] | None = None
    """The calling kernel's own connection for file operations (``Kernel.far``): no new
    client process per operation. None: one client process per operation."""

    def client_env(self) -> dict[str, str]:
        return self.client or self.backend.client_env(os.environ)

    @property
    def where(self) -> str:
        """``docker:<short id>`` or ``ssh:user@host`` (``docker`` before its container exists)."""
        return self.backend.where(self.place)

    def as_here(self, path: str) -> str:
        """``path`` there, spelled as the approval rules know such files: ``~`` and the home
        there as this machine's home (``/home/bob/.bashrc`` there is judged as ``~/.bashrc``)."""
        here = os.path.expanduser("~")
        if path == "~" or path.startswith("~/"):
            return here + path[1:]
        home = (self.home or "").rstrip("/")
        if home and (path == home or path.startswith(home + "/")):
            return here + path[len(home):]
        return path

    async def call(self, spec: dict[str, Any]) -> Call:
        """The client command running ``spec`` there (the kernel's place, or the session's),
        what to write to its stdin first, and the line it says before its own output."""
        place = self.place or await self.backend.borrow(self.session, self.host_cwd)
        hello = new_hello()
        full = {**spec, "hello": hello, "env": {**self.env, **spec.get("env", {})}}
        return Call(self.backend.command(place), spec_bytes(full), hello, place)

    async def file(self, op: str, path: str, cwd: str, *, data: bytes | None = None, limit: int = 1 << 24,
                   timeout: float = 120.0, extra: dict[str, Any] | None = None) -> tuple[dict[str, Any], bytes]:
        """One file operation there: its JSON answer (``error`` on failure) and the bytes read.
        Raises :class:`BackendError` when the backend cannot be reached."""
        if self.via is not None:
            spec = {**(extra or {}), "op": op, "path": path, "cwd": cwd, "limit": limit}
            try:
                return await self.via(spec, data or b"", timeout)
            except TimeoutError:
                raise BackendError(f"{self.backend.name}: no answer within the time allowed") from None
            except Exception as exc:  # the kernel ended meanwhile: the call's error, one line
                raise BackendError(f"{self.backend.name}: the kernel's connection ended ({type(exc).__name__})") \
                    from None
        call = await self.call({**(extra or {}), "mode": "file", "op": op, "path": path, "cwd": cwd, "limit": limit})
        try:
            code, out, err = await run_client(call.argv, env=self.client_env(), input=call.stdin + (data or b""),
                                              timeout=timeout, max_output=limit + (1 << 20))
        except OSError as exc:
            raise BackendError(f"{self.backend.name}: cannot run its client: {exc.strerror or exc}") from None
        except asyncio.TimeoutError:
            raise BackendError(f"{self.backend.name}: no answer within {timeout:g}s") from None
        place = call.place
        said = after_hello(out, call.hello)
        if said is None:
            raise BackendError(f"{self.backend.where(place)}: {last_line(err) or 'no answer'} (exit {code})")
        head, _, rest = said.partition(b"\n")
        try:
            answer = json.loads(head)
        except ValueError:
            raise BackendError(f"{self.backend.where(place)}: {last_line(err) or 'no answer'} "
                               f"(exit {code})") from None
        if not isinstance(answer, dict):
            raise BackendError(f"{self.backend.where(place)}: an answer that is not an object")
        return answer, rest
