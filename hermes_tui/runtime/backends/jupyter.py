"""The Jupyter backend: session kernels that are Jupyter kernels (``terminal.backend: jupyter``).

* With ``terminal.jupyter_gateway_url`` they live on a Kernel Gateway or an Enterprise Gateway
  (which may start them on Kubernetes, YARN or Docker Swarm): each hermes-tui kernel is one
  kernel there, started here over the gateway's REST API (:meth:`JupyterBackend.acquire`) and
  deleted when it ends (:meth:`JupyterBackend.release`). A ``terminal()`` command or a file
  tool of a script runs in its kernel, through the kernel protocol (nothing dials back here).
* Without it, each kernel is a local ipykernel started by its relay in the sandbox, as the
  local driver is; the tools and ``terminal()`` then run here as with ``local``.

Every kernel started on a gateway is written down in ``$HERMES_HOME/jupyter/kernels/`` and
the file is held (``flock``) while it lives; one whose lock is free at the next start was left
by a run that ended without shutting it down: :meth:`JupyterBackend.leftovers` finds those
still on the gateway and :meth:`JupyterBackend.clean` shuts them down.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shlex
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hermes_tui.base.text import redact_url, shown
from hermes_tui.config import Config
from hermes_tui.runtime import leftovers
from hermes_tui.runtime.backends.base import Backend, BackendError, Place

RELAY_SOURCE = Path(__file__).parent / "jupyter_relay.py"
KERNEL_SOURCE = Path(__file__).parent / "jupyter_kernel.py"
TOKEN_CMD_TIMEOUT = 30.0
KERNEL_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]{0,63}")
"""What a kernel id from a gateway may be (a UUID; it is used as a file name and in URLs)."""


class JupyterBackend(Backend):
    """``terminal.backend: jupyter``: a gateway's kernels, or local ipykernels."""

    name = "jupyter"
    kernel_places = True

    def __init__(self, config: Config, home: Path) -> None:
        super().__init__(config, home)
        self.url = str(self.terminal.jupyter_gateway_url or "").strip().rstrip("/")
        self.remote = bool(self.url)
        self._token: str | None = None
        self._held: dict[str, int] = {}
        """Ledger files of the kernels this process started, by kernel id -> their lock."""

    # -- what it is called ------------------------------------------------------------------

    @property
    def kernel_name(self) -> str:
        return str(self.terminal.jupyter_kernel_name or "python3")

    @property
    def host(self) -> str:
        """The gateway's host[:port] (never its path or a password in the URL)."""
        parts = urlsplit(self.url)
        return parts.hostname + (f":{parts.port}" if parts.port else "") if parts.hostname else "?"

    @property
    def sandbox_label(self) -> str:  # type: ignore[override]
        return f"jupyter: the gateway's ({self.host})" if self.remote else "jupyter: local"

    def describe(self) -> str:
        return f"jupyter:{redact_url(self.url) if self.url else 'local'}:{self.kernel_name}"

    def where(self, place: Place | None) -> str:
        if not self.remote:
            return "jupyter:local"
        return f"jupyter:{self.host}" + (f" {place.short_id}" if place is not None and place.short_id else "")

    def forwarded(self, host_env: Any) -> dict[str, str]:
        return {name: host_env[name] for name in self.terminal.env_passthrough if name in host_env}

    def command(self, place: Place) -> list[str]:
        raise BackendError("jupyter: a command or file operation runs in a kernel there; none was given")

    async def borrow(self, session: str, host_cwd: str) -> Place:
        raise BackendError("jupyter: this call needs a kernel of its session (the runtime leases one)")

    # -- the token --------------------------------------------------------------------------

    async def token(self) -> str:
        """The gateway's token: ``jupyter_auth_token`` (``${VAR}`` expanded), else the variable
        ``jupyter_auth_token_env`` names, else what ``jupyter_auth_token_cmd`` prints; ""
        when none is set. Raises BackendError naming the setting that failed (never the value)."""
        if self._token is not None:
            return self._token
        terminal = self.terminal
        value = ""
        if terminal.jupyter_auth_token:
            value = _expand(str(terminal.jupyter_auth_token), self.home, "terminal.jupyter_auth_token")
        elif terminal.jupyter_auth_token_env:
            name = str(terminal.jupyter_auth_token_env)
            value = _lookup(name, self.home) or ""
            if not value:
                raise BackendError(f"terminal.jupyter_auth_token_env names {name}, which is not set: add it to the "
                                   f"environment or {self.home / '.env'}")
        elif terminal.jupyter_auth_token_cmd:
            value = await _token_from_command(terminal.jupyter_auth_token_cmd)
        self._token = value.strip()
        return self._token

    # -- the gateway's REST API -------------------------------------------------------------

    async def rest(self, method: str, path: str, body: dict[str, Any] | None = None,
                   timeout: float = 30.0) -> tuple[int, Any]:
        """One request to the gateway: (status, JSON answer or None). Raises BackendError, one
        line saying what failed, where, and how to fix it."""
        from hermes_tui.runtime.tools.dispatch import preloaded

        await preloaded()  # httpx is among the tools' modules: imported by one thread at a time
        import httpx

        token = await self.token()
        headers = {"Authorization": f"token {token}"} if token else {}
        try:
            async with httpx.AsyncClient(verify=bool(self.terminal.jupyter_validate_cert), timeout=timeout,
                                         trust_env=False) as client:
                answer = await client.request(method, self.url + path, headers=headers, json=body)
        except httpx.ConnectError as exc:
            raise BackendError(f"jupyter: cannot reach the gateway at {self.host}: {_reason(exc)}; start it, or fix "
                               "terminal.jupyter_gateway_url") from None
        except httpx.TimeoutException:
            raise BackendError(f"jupyter: the gateway at {self.host} did not answer within {timeout:g}s; check it is "
                               "up (terminal.jupyter_gateway_url)") from None
        except httpx.HTTPError as exc:
            raise BackendError(f"jupyter: the gateway at {self.host}: {_reason(exc)}") from None
        if answer.status_code in (401, 403):
            raise BackendError(f"jupyter: the gateway at {self.host} refused the token (HTTP {answer.status_code}); "
                               "set terminal.jupyter_auth_token (or _env, _cmd) to the gateway's token")
        try:
            data = answer.json() if answer.content else None
        except ValueError:
            data = None
        return answer.status_code, data

    async def kernelspecs(self) -> dict[str, Any]:
        """The gateway's kernelspecs by name (``{}`` when it lists none)."""
        status, data = await self.rest("GET", "/api/kernelspecs")
        if status != 200 or not isinstance(data, dict):
            raise BackendError(f"jupyter: the gateway at {self.host} answered HTTP {status} for its kernelspecs; "
                               "is terminal.jupyter_gateway_url a Jupyter Kernel or Enterprise Gateway?")
        specs = data.get("kernelspecs")
        return specs if isinstance(specs, dict) else {}

    # -- a kernel's place -------------------------------------------------------------------

    async def acquire(self, session: str, host_cwd: str) -> Place:
        """A new kernel on the gateway for one hermes-tui kernel (each has its own); written
        down and held until :meth:`release`."""
        if not self.remote:
            return Place(self, "local")
        # KERNEL_-prefixed: what Enterprise Gateway passes on to the kernel's pod.
        env = {"KERNEL_USERNAME": os.environ.get("USER", "hermes-tui"), "KERNEL_HERMES_TUI_SESSION": session}
        status, data = await self.rest("POST", "/api/kernels", {"name": self.kernel_name, "env": env}, timeout=120)
        if status == 404 or (status >= 400 and "kernel" in json.dumps(data or "").lower() and "spec" in
                             json.dumps(data or "").lower()):
            raise BackendError(f"jupyter: the gateway at {self.host} has no kernelspec {self.kernel_name!r}; set "
                               "terminal.jupyter_kernel_name to one it lists (hermes-tui doctor shows them)")
        if status not in (200, 201) or not isinstance(data, dict) or not isinstance(data.get("id"), str):
            said = shown(str((data or {}).get("message") or (data or {}).get("reason") or "")) if isinstance(data, dict) \
                else ""
            raise BackendError(f"jupyter: the gateway at {self.host} could not start a kernel (HTTP {status})"
                               + (f": {said[:200]}" if said else ""))
        kernel_id = data["id"]
        if not KERNEL_ID.fullmatch(kernel_id):  # it becomes a file name and a URL path here
            raise BackendError(f"jupyter: the gateway at {self.host} named its kernel {shown(kernel_id[:80])!r}, "
                               "which is not a kernel id")
        try:
            await asyncio.to_thread(self._write_down, kernel_id, session)
        except OSError as exc:
            with contextlib.suppress(BackendError):
                await self.rest("DELETE", f"/api/kernels/{kernel_id}", timeout=10)
            raise BackendError(f"jupyter: cannot write down the kernel in {self.ledger}: "
                               f"{exc.strerror or exc}") from None
        return Place(self, kernel_id, short_id=kernel_id[:8], users=1)

    async def release(self, place: Place) -> None:
        """Shut the kernel down on the gateway (a kernel that is already gone is fine)."""
        if not self.remote or place.name == "local":
            return
        try:
            status, _ = await self.rest("DELETE", f"/api/kernels/{place.name}", timeout=10)
        except BackendError:
            status = 0
        if status in (200, 202, 204, 404):
            await asyncio.to_thread(self._cross_out, place.name)
        else:  # still there, maybe: its record stays for the next start's cleanup (its lock freed)
            fd = self._held.pop(place.name, None)
            if fd is not None:
                os.close(fd)

    async def close(self) -> None:
        for kernel_id in list(self._held):
            await self.release(Place(self, kernel_id))

    def relay_spec(self, place: Place | None) -> dict[str, Any]:
        """What the relay needs of this backend (no secret: the token goes on a descriptor)."""
        if not self.remote:
            return {"mode": "local", "local": self.local_kernel()}
        assert place is not None
        scheme = "wss" if self.url.startswith("https:") else "ws"
        return {"mode": "gateway", "gateway": {
            "http_url": self.url, "ws_url": f"{scheme}:{self.url.split(':', 1)[1]}/api/kernels/{place.name}/channels",
            "kernel_id": place.name, "validate_cert": bool(self.terminal.jupyter_validate_cert)}}

    def local_kernel(self) -> dict[str, Any]:
        """The local kernelspec's command and environment. Blocking. BackendError if none."""
        try:
            from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
        except ImportError:
            raise BackendError("jupyter: jupyter_client is not installed here; reinstall hermes-tui") from None
        try:
            spec = KernelSpecManager().get_kernel_spec(self.kernel_name)
        except NoSuchKernel:
            raise BackendError(f"jupyter: no kernelspec named {self.kernel_name!r} on this machine (`jupyter "
                               "kernelspec list` shows them); set terminal.jupyter_kernel_name, or install "
                               "ipykernel for python3") from None
        if spec.language.lower() != "python":
            raise BackendError(f"jupyter: kernelspec {self.kernel_name!r} is {spec.language}, not Python; "
                               "hermes-tui's kernels run Python")
        argv = list(spec.argv)
        if argv and argv[0] in {"python", f"python{sys.version_info[0]}", "python%d.%d" % sys.version_info[:2]}:
            argv[0] = sys.executable  # as jupyter_client's own KernelManager reads a bare "python"
        return {"argv": argv, "env": dict(spec.env or {})}

    # -- what a crash left behind -----------------------------------------------------------

    @property
    def ledger(self) -> Path:
        return self.home / "jupyter" / "kernels"

    def _write_down(self, kernel_id: str, session: str) -> None:
        self.ledger.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = self.ledger / f"{kernel_id}.json"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"gateway": self.url, "kernel_id": kernel_id, "session": session, "started": time.time(),
                       "pid": os.getpid()}, handle)
        with contextlib.suppress(OSError):
            self._held[kernel_id] = leftovers.hold(path)

    def _cross_out(self, kernel_id: str) -> None:
        fd = self._held.pop(kernel_id, None)
        with contextlib.suppress(OSError):
            (self.ledger / f"{kernel_id}.json").unlink()
        if fd is not None:
            os.close(fd)

    def _abandoned(self) -> list[dict[str, Any]]:
        found = []
        with contextlib.suppress(OSError):
            for path in sorted(self.ledger.glob("*.json")):
                if path.stem in self._held or not leftovers.abandoned(path):
                    continue
                try:
                    record = json.loads(path.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    continue
                if isinstance(record, dict) and record.get("gateway") == self.url \
                        and KERNEL_ID.fullmatch(str(record.get("kernel_id"))):
                    found.append(record)
        return found

    async def leftovers(self) -> list[dict[str, Any]]:
        """Kernels an earlier run started on this gateway and did not shut down, that are still
        there (records of ones already gone are crossed out)."""
        if not self.remote:
            return []
        records = await asyncio.to_thread(self._abandoned)
        if not records:
            return []
        status, data = await self.rest("GET", "/api/kernels", timeout=15)
        there = {item.get("id"): item for item in data or [] if isinstance(item, dict)} if status == 200 else {}
        left = []
        for record in records:
            if record["kernel_id"] in there:
                left.append({**record, "state": there[record["kernel_id"]].get("execution_state")})
            elif status == 200:
                await asyncio.to_thread(self._cross_out, record["kernel_id"])
        return left

    async def clean(self, kernel_ids: list[str]) -> list[str]:
        """Shut down these leftover kernels; the ids shut down."""
        done = []
        for kernel_id in kernel_ids:
            status, _ = await self.rest("DELETE", f"/api/kernels/{kernel_id}", timeout=15)
            if status in (200, 204, 404):
                done.append(kernel_id)
                await asyncio.to_thread(self._cross_out, kernel_id)
        return done


def _reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    for known in ("Connection refused", "Name or service not known", "certificate verify failed", "timed out"):
        if known.lower() in text.lower():
            return known.lower()
    return shown(text)[:200]


def _lookup(name: str, home: Path, env: Mapping[str, str] = os.environ) -> str | None:
    """A variable from the environment, else from ``$HERMES_HOME/.env``."""
    if env.get(name):
        return env[name]
    path = home / ".env"
    if not path.exists():
        return None
    from dotenv import dotenv_values

    with contextlib.suppress(OSError, UnicodeDecodeError):
        return dotenv_values(path).get(name) or None
    return None


def _expand(value: str, home: Path, setting: str) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1).removeprefix("env:").strip()
        found = _lookup(name, home) if name else None
        if found is None:
            raise BackendError(f"{setting} uses ${{{name}}}, which is not set: add {name} to the environment or "
                               f"{home / '.env'}")
        return found

    return re.sub(r"\$\{([^}]*)\}", replace, value)


async def _token_from_command(value: str | list[str]) -> str:
    """What ``jupyter_auth_token_cmd`` prints (bare, or JSON with ``access_token``), run apart
    from the kernels with no shell."""
    from hermes_tui.runtime.hardening import open_process

    argv = shlex.split(value) if isinstance(value, str) else [str(word) for word in value]
    if not argv:
        raise BackendError("terminal.jupyter_auth_token_cmd is empty: give a command that prints the token")
    shown_name = os.path.basename(argv[0])
    # What it needs to run, and the variables its words name (``printenv KG_TOKEN``, ``$KG_TOKEN``):
    # nothing else of this process's environment (its keys for the model are not its business).
    named = {word.strip("${}") for word in argv[1:]}
    env = {name: value for name, value in os.environ.items()
           if name in ("PATH", "HOME", "USER", "LANG") or name.startswith("LC_") or name in named}
    try:
        child = await open_process(argv, env, new_session=True, apart=True)
    except OSError as exc:
        raise BackendError(f"terminal.jupyter_auth_token_cmd ({shown_name}) could not start: "
                           f"{exc.strerror or exc}") from None
    async def drain(stream: asyncio.StreamReader) -> bytes:
        held = bytearray()
        while piece := await stream.read(1 << 16):
            held += piece[:(1 << 16) - len(held)]
        return bytes(held)

    try:
        out, _, code = await asyncio.wait_for(asyncio.gather(drain(child.stdout), drain(child.stderr), child.wait()),
                                              TOKEN_CMD_TIMEOUT)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.popen.pid, 9)
        await child.wait()
        raise BackendError(f"terminal.jupyter_auth_token_cmd ({shown_name}) did not finish in "
                           f"{TOKEN_CMD_TIMEOUT:g}s") from None
    if code != 0:
        raise BackendError(f"terminal.jupyter_auth_token_cmd ({shown_name}) failed with exit code {code}")
    text = out.decode("utf-8", "replace").strip()
    with contextlib.suppress(ValueError, AttributeError):
        parsed = json.loads(text)
        if isinstance(parsed, dict) and isinstance(parsed.get("access_token"), str):
            return parsed["access_token"]
    return text
