"""The host side of one kernel: a :class:`~hermes_tui.runtime.child_process.ChildProcess`
that runs the stdlib-only driver, a persistent ``__main__`` running one script after another.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import secrets
import shutil
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_tui.runtime import lineage
from hermes_tui.runtime.backends.base import RELAY_SOURCE, REMOTE_SOURCE, Place, new_hello
from hermes_tui.runtime.backends.jupyter import KERNEL_SOURCE as JUPYTER_KERNEL_SOURCE
from hermes_tui.runtime.backends.jupyter import RELAY_SOURCE as JUPYTER_RELAY_SOURCE
from hermes_tui.runtime.capture import HeadTailCapture
from hermes_tui.runtime.child_process import ChildProcess
from hermes_tui.runtime.process import CellOutcome
from hermes_tui.runtime.rpc import ExecBudget, RpcServer, new_token
from hermes_tui.runtime.sandbox import Confinement, Sandbox
from hermes_tui.runtime.sandbox.paths import Layout
from hermes_tui.runtime.stub import PLACEHOLDER, TEMPLATE, stage_tools_module

DRIVER_SOURCE = Path(__file__).parent / "child" / "driver.py"
STARTUP_TIMEOUT = 20.0
"""Seconds a kernel may take to say it is ready."""
GATEWAY_STARTUP_TIMEOUT = 90.0
"""Seconds a Jupyter gateway's kernel may take (Enterprise Gateway may start a pod for it)."""
STAGING_CWD = "<staging>"
"""A key's cwd in strict mode: the process runs in its own private temp dir."""


class KernelStartError(Exception):
    """A kernel process could not be started or did not become ready."""


class WorkingDirError(KernelStartError):
    """The working directory a kernel should run in does not exist (no fallback helps)."""


class KernelGone(Exception):
    """The kernel process ended before it could take the request."""


@dataclass(frozen=True, slots=True)
class KernelKey:
    """What must match for a kernel to be reused."""

    session: str
    mode: str
    interpreter: str
    cwd: str
    tools: tuple[str, ...] = ()
    backend: str = "local"
    """Where it runs (:meth:`~hermes_tui.runtime.backends.Backend.describe`): ``local``,
    ``docker:IMAGE``, ``ssh:USER@HOST:PORT``; ``cwd`` is a path there."""
    host_cwd: str = ""
    """The project folder on this machine of a kernel elsewhere (mounted into a container)."""

    def __str__(self) -> str:
        where = "" if self.backend == "local" else f" | {self.backend}"
        return " | ".join((self.session, self.mode, self.interpreter, self.cwd, ",".join(self.tools))) + where


class Kernel(ChildProcess):
    """A persistent Python process running the stdlib-only driver.

    Args:
        kernel_id: short id shown to users (``k1``, ``k2``, ...).
        key: the reuse key; its interpreter and cwd are used to start the process.
        env: the frozen environment (see :mod:`hermes_tui.runtime.envs`).
        staging_dir: a private directory for the driver (and, later, ``hermes_tools.py``);
            removed when the kernel ends.
    """

    reaped = False  # its own watchdog ends the group (child/driver.py)

    def __init__(
        self,
        kernel_id: str,
        key: KernelKey,
        *,
        env: dict[str, str],
        staging_dir: Path,
        loop: asyncio.AbstractEventLoop,
        publish: Any,
    ) -> None:
        super().__init__(kernel_id, loop=loop, publish=publish)
        self.id = kernel_id
        self.key = key
        self.env = env
        self.staging_dir = staging_dir
        self.state = "starting"
        self.started_at = time.time()
        self.last_used = self.started_at
        self.last_used_monotonic = time.monotonic()
        self.execution_count = 0
        self.idle_deadline: float | None = None
        self.python_version: str | None = None
        self.end_reason: str | None = None
        """Why the kernel was taken out of service (set by the pool's ``retire``)."""
        self.lock = asyncio.Lock()
        self.token = new_token()
        """The secret this kernel's tool requests must carry."""
        self.rpc: RpcServer | None = None
        """The tool channel (started by the pool before the process)."""
        self.driver_pid: int | None = None
        """The driver's own pid, as this process numbers it (under bubblewrap, :attr:`pid` is
        bwrap's: the group leader, still what signals and kills go to; the driver said its pid
        in its own pid namespace, found here by :func:`.lineage.host_pid`)."""
        self.layout: Layout | None = None
        """What it may write and read, as its sandbox was set up (its tool calls are judged by it)."""
        self.sandbox: Sandbox | None = None
        """The sandbox it starts in (None: unconfined, as in tests of the bare kernel)."""
        self.place: Place | None = None
        """Where it runs when that is not this machine (its container, its SSH host): the
        process here is then the relay (backends/relay.py), the driver runs there."""
        self.remote_cwd: str | None = None
        """Its working dir there, as its driver said when ready."""
        self.remote_home: str | None = None
        """Its home there (protected writes, ``~/.bashrc`` and the like, are judged by it)."""
        self.jupyter: dict[str, Any] | None = None
        """A Jupyter kernel's relay spec (``terminal.backend: jupyter``): the process here is
        then backends/jupyter_relay.py, the kernel an ipykernel (local) or a gateway's."""
        self.jupyter_auth = ""
        """The gateway's token, for the relay (on a descriptor, never in a file or argv)."""
        self.remote_env: dict[str, str] = {}
        """Variables set for it there (names the user forwards), on top of the place's own."""
        self.budget: ExecBudget | None = None
        """Tool-call budget of the script running now (None between scripts)."""
        self.allowed_names: frozenset[str] = frozenset()
        self.skill_env: dict[str, str] = {}
        """Names in its environment that only a skill let in (name -> the skill's SKILL.md)."""
        self.new_skill_env: dict[str, str] = {}
        """Those of them no earlier kernel of this runtime had: its first result says so."""
        """Environment names let in by exact name when the kernel started (stale-env check)."""
        self._ready: asyncio.Future[dict[str, Any]] = loop.create_future()
        self._inspections: dict[str, asyncio.Future[list[dict[str, Any]]]] = {}
        self._far: dict[str, asyncio.Future[dict[str, Any]]] = {}
        """File operations sent to the kernel's place (:meth:`far`), by id, until answered."""
        self._send_lock = asyncio.Lock()
        """One control line at a time (a script's and a file operation's never interleave)."""
        self._ctrl_in = -1
        self._lifeline = -1

    @property
    def cwd(self) -> str:
        """Where the process runs: the key's cwd, or its own staging dir in strict mode (on
        another backend: the key's cwd there; strict: its own folder there)."""
        if self.place is not None:
            return self.remote_cwd or self.key.cwd
        return str(self.staging_dir) if self.key.cwd == STAGING_CWD else self.key.cwd

    @property
    def where(self) -> str:
        """``local``, ``docker:<short id>``, ``ssh:user@host``, ``jupyter:<gateway> <id>`` or
        ``jupyter:local``."""
        if self.place is not None:
            return self.place.backend.where(self.place)
        return "jupyter:local" if self.jupyter is not None else "local"

    async def start(self, timeout: float = STARTUP_TIMEOUT) -> None:
        """Spawn the driver and wait until it is ready; raises :class:`KernelStartError`."""
        if not await asyncio.to_thread(self._prepare):
            raise WorkingDirError(f"working directory does not exist or is not a directory: {self.cwd}")
        try:
            await asyncio.to_thread(self._spawn_driver)
        except OSError as exc:
            self._close_host_fds()
            raise KernelStartError(f"cannot start {self.key.interpreter}: {exc.strerror or exc}") from None
        if self.jupyter is not None and self.place is not None:  # a gateway may schedule it (a pod)
            timeout = max(timeout, GATEWAY_STARTUP_TIMEOUT)
        waiter = asyncio.ensure_future(asyncio.shield(self._ready))
        done, _ = await asyncio.wait({waiter, self.exited}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if waiter in done:
            self.python_version = waiter.result().get("python")
            if (self.place is not None or self.jupyter is not None) and isinstance(waiter.result().get("cwd"), str):
                self.remote_cwd = waiter.result()["cwd"]
            if self.place is not None and isinstance(waiter.result().get("home"), str):
                self.remote_home = waiter.result()["home"]
            pid = waiter.result().get("pid")
            if isinstance(pid, int) and pid > 0 and self.pid and self.place is None:  # under bwrap, its pid namespace's number
                self.driver_pid = await asyncio.to_thread(lineage.host_pid, pid, self.pid)
            self.state = "idle"
            return
        waiter.cancel()
        if self.exited.done():
            reason = f"it exited with code {self.exited.result()}"
        else:
            reason = f"it was not ready within {timeout:g}s"
            await self.kill()
        detail = self.pump.recent_stderr.decode("utf-8", "replace").strip() if self.pump else ""
        self._close_host_fds()
        last = detail.splitlines()[-1] if detail else ""
        raise KernelStartError(f"kernel did not start: {reason}" + (f" ({last})" if last else ""))

    @property
    def temp_dir(self) -> Path:
        """The kernel's private temp dir (``TMPDIR``), writable in every sandbox mode."""
        return self.staging_dir / "tmp"

    def _prepare(self) -> bool:
        """Make the staging and temp dirs; True if the working dir is usable. Blocking."""
        self.staging_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.temp_dir.mkdir(mode=0o700, exist_ok=True)
        return self.place is not None or os.path.isdir(self.cwd)  # a path there is checked there

    def _spawn_driver(self) -> None:
        if self.jupyter is not None:
            self._spawn_jupyter(self.jupyter)
            return
        if self.place is not None:
            self._spawn_relay(self.place)
            return
        driver = self.staging_dir / "hermes_kernel_driver.py"
        shutil.copyfile(DRIVER_SOURCE, driver)
        if self.rpc is not None:  # `import hermes_tools` finds it beside the driver (sys.path[0])
            stage_tools_module(self.staging_dir, {**self.rpc.stub_config(), "tools": list(self.key.tools)})
        confinement = None
        if self.sandbox is not None:  # raises SandboxError: no kernel starts unconfined
            confinement = self.sandbox.confine(workspace=self.cwd, tmpdir=str(self.temp_dir), cwd=self.cwd,
                                               extra=[str(p) for p in self.rpc.writable] if self.rpc is not None else ())
            self.layout = confinement.layout
        channel = self.rpc.child_fds if self.rpc is not None else ()
        self._spawn_with_pipes([self.key.interpreter, str(driver)], [], cwd=self.cwd, channel=channel,
                               confinement=confinement)

    def _spawn_with_pipes(self, head: list[str], tail: list[str], *, cwd: str, channel: tuple[int, ...],
                          confinement: Confinement | None = None) -> None:
        """Spawn ``head + [CTRL_IN, CTRL_OUT, LIFELINE] + tail`` with the control pipes and the
        lifeline (the driver here, or the relay of a driver elsewhere) and the tool channel's
        descriptors; ``confinement`` is released whether or not it started."""
        try:
            child_in, self._ctrl_in = os.pipe()
            ctrl_out, child_out = os.pipe()
            child_life, self._lifeline = os.pipe()
        except BaseException:
            if confinement is not None:
                confinement.close()
            raise
        try:
            self.spawn([*head, str(child_in), str(child_out), str(child_life), *tail], cwd=cwd, env=self.env,
                       pass_fds=(child_in, child_out, child_life, *channel), ctrl_fd=ctrl_out,
                       confinement=confinement)
        except BaseException:
            os.close(ctrl_out)
            raise
        finally:
            for fd in (child_in, child_out, child_life):
                os.close(fd)
            if self.rpc is not None:
                self.rpc.started()
        os.set_blocking(self._ctrl_in, False)

    def _spawn_relay(self, place: Place) -> None:
        """Start the relay that runs the driver at ``place`` (same pipes as the driver's)."""
        assert self.rpc is not None
        setup = {"driver": DRIVER_SOURCE.read_text(encoding="utf-8"), "tools": TEMPLATE.read_text(encoding="utf-8"),
                 "placeholder": PLACEHOLDER, "env": self.remote_env,
                 "tools_config": {**self.rpc.stub_config(), "tools": list(self.key.tools)}}
        cwd = None if self.key.cwd == STAGING_CWD else self.key.cwd
        remote = {"mode": "kernel", "cwd": cwd, "hello": new_hello(), "setup": setup}
        spec = {"client": place.backend.command(place), "spec": remote}  # the relay adds the token
        spec_path = self.staging_dir / "relay.json"
        fd = os.open(spec_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(spec, handle)
        self._spawn_with_pipes([sys.executable, str(RELAY_SOURCE)], [str(spec_path)], cwd=str(self.staging_dir),
                               channel=self.rpc.child_fds)

    def _spawn_jupyter(self, engine: dict[str, Any]) -> None:
        """Start the relay of a Jupyter kernel (backends/jupyter_relay.py). A gateway's relay
        runs here, as the Docker and SSH relays do; a local one runs in the sandbox as the
        driver would, and starts the kernel there (the two talk ZeroMQ over TCP on a loopback
        of their own: :meth:`Sandbox.confine`'s ``loopback``)."""
        assert self.rpc is not None
        setup = {"driver": DRIVER_SOURCE.read_text(encoding="utf-8"), "tools": TEMPLATE.read_text(encoding="utf-8"),
                 "placeholder": PLACEHOLDER, "remote": REMOTE_SOURCE.read_text(encoding="utf-8"),
                 "jupyter": JUPYTER_KERNEL_SOURCE.read_text(encoding="utf-8"), "env": self.remote_env,
                 "tools_config": {**self.rpc.stub_config(), "tools": list(self.key.tools)},
                 "cwd": (self.key.cwd if self.key.cwd != STAGING_CWD else None) if self.place is not None else None}
        spec: dict[str, Any] = {**engine, "setup": setup, "folder": str(self.temp_dir)}
        extra: tuple[int, ...] = ()
        confinement = None
        if self.place is not None and self.jupyter_auth:
            auth = os.memfd_create("hermes-jupyter-auth")
            os.write(auth, self.jupyter_auth.encode("utf-8"))
            spec["gateway"] = {**spec["gateway"], "auth_fd": auth}
            extra = (auth,)
        try:
            if self.place is None:
                spec["local"] = {**spec["local"], "cwd": self.cwd, "log": str(self.temp_dir / "kernel.log")}
                if self.sandbox is not None:  # raises SandboxError: never unconfined
                    confinement = self.sandbox.confine(workspace=self.cwd, tmpdir=str(self.temp_dir), cwd=self.cwd,
                                                       extra=[str(p) for p in self.rpc.writable], loopback=True)
                    self.layout = confinement.layout
            spec_path = self.staging_dir / "jupyter.json"
            fd = os.open(spec_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(spec, handle)
            self._spawn_with_pipes([sys.executable, str(JUPYTER_RELAY_SOURCE)], [str(spec_path)],
                                   cwd=self.cwd if self.place is None else str(self.staging_dir),
                                   channel=(*self.rpc.child_fds, *extra), confinement=confinement)
        finally:
            for fd in extra:
                os.close(fd)

    def _on_reply(self, message: dict[str, Any]) -> None:
        if message.get("op") == "far" and isinstance(message.get("reply"), dict):
            answered = self._far.get(str(message["reply"].get("id")))
            if answered is not None and not answered.done():
                answered.set_result(message["reply"])
            return
        if message.get("op") == "ready" and not self._ready.done():
            self._ready.set_result(message)
        elif message.get("op") == "inspect":
            waiter = self._inspections.pop(str(message.get("id")), None)
            if waiter is not None and not waiter.done():
                waiter.set_result(message.get("variables") or [])

    @property
    def answering(self) -> bool:
        """An earlier names/variables request is not answered yet."""
        return self.alive and any(not waiter.done() for waiter in self._inspections.values())

    async def ask(self, op: str, timeout: float, **fields: object) -> list[dict[str, Any]]:
        """Send one ``names``, ``inspect`` or ``complete`` request, with ``fields`` (call with
        :attr:`lock` held, while idle).

        The request stays outstanding until the kernel answers (or ends), even when this stops
        waiting: no second request is sent behind it, and a script sent meanwhile can tell it
        is queued behind one. A variables walk given up on is told to stop (SIGINT to the
        driver alone, while the lock is held: the driver ignores it between requests)."""
        if self.answering:
            raise RuntimeError(f"kernel {self.id} is still answering an earlier request; try again soon")
        if not self.alive or self._ctrl_in < 0:
            raise KernelGone(self.id)
        request_id = secrets.token_hex(6)
        waiter: asyncio.Future[list[dict[str, Any]]] = self.loop.create_future()
        inspections = self._inspections

        def forget(_: object) -> None:
            if inspections.get(request_id) is waiter:
                del inspections[request_id]
            self.exited.remove_done_callback(forget)
            if not waiter.done():
                waiter.cancel()

        inspections[request_id] = waiter  # the kernel's reply (op "inspect", this id) resolves it
        waiter.add_done_callback(forget)
        self.exited.add_done_callback(forget)
        try:
            await self._send((json.dumps({**fields, "op": op, "id": request_id}) + "\n").encode())
        except OSError:
            forget(None)
            raise KernelGone(self.id) from None
        done, _ = await asyncio.wait({waiter}, timeout=timeout)
        if waiter in done and not waiter.cancelled():
            return waiter.result()
        if waiter.cancelled():
            raise KernelGone(self.id)
        if op == "inspect" and (self.driver_pid or self.pid):
            with contextlib.suppress(OSError):
                os.kill(self.driver_pid or self.pid, signal.SIGINT)  # type: ignore[arg-type]
        raise TimeoutError(f"kernel {self.id} did not answer within {timeout:g}s")

    def _on_exit(self, returncode: int | None) -> None:
        self.state = "dead"
        self.idle_deadline = None
        self._close_host_fds()
        with contextlib.suppress(OSError):
            shutil.rmtree(self.staging_dir, ignore_errors=True)
        super()._on_exit(returncode)

    def _close_host_fds(self) -> None:
        # Closing the lifeline tells the kernel's watchdog to take the whole group down.
        for name in ("_ctrl_in", "_lifeline"):
            fd = getattr(self, name)
            if fd >= 0:
                setattr(self, name, -1)
                with contextlib.suppress(OSError):
                    os.close(fd)

    async def run(self, code: str, exec_id: str, stdout: HeadTailCapture, *,
                  display: bool = False, filename: str | None = None) -> asyncio.Future[CellOutcome]:
        """Send a script; returns the future of its outcome. Raises :class:`KernelGone`.
        ``display``: show a last bare expression's value, as the Python REPL does; ``filename``:
        the name its tracebacks give it (``<cell N>`` when None)."""
        if not self.alive or self._ctrl_in < 0:
            raise KernelGone(self.id)
        self.execution_count += 1
        marker = f"\x1e\x1fhermes-end:{secrets.token_hex(12)}\x1f\x1e"
        future = self.begin(exec_id, marker.encode("ascii"), stdout)
        request = {"op": "exec", "id": exec_id, "code": code, "marker": marker, "cell": self.execution_count,
                   "display": display}
        if filename:
            request["filename"] = filename
        try:
            await self._send((json.dumps(request) + "\n").encode("utf-8"))
        except OSError:
            raise KernelGone(self.id) from None
        return future

    async def far(self, spec: dict[str, Any], data: bytes = b"", timeout: float = 120.0) -> tuple[dict[str, Any], bytes]:
        """One file operation (``backends/remote.py``'s ``operate``) at the kernel's place, over
        its own connection, beside the running script: (its answer, the bytes read). Raises
        :class:`KernelGone` or ``TimeoutError``."""
        if self.place is None or not self.alive or self._ctrl_in < 0:
            raise KernelGone(self.id)
        request_id = secrets.token_hex(8)
        waiter: asyncio.Future[dict[str, Any]] = self.loop.create_future()
        self._far[request_id] = waiter
        line = json.dumps({"op": "far", "id": request_id, "spec": spec,
                           "data": base64.b64encode(data).decode("ascii")}) + "\n"
        try:
            # Shielded: a call cancelled mid-send (its script ended) still sends its line whole;
            # half a line would join the next script's request to it.
            sending = asyncio.ensure_future(self._send(line.encode("utf-8")))
            sending.add_done_callback(lambda task: task.cancelled() or task.exception())
            try:
                await asyncio.shield(sending)
            except OSError:
                raise KernelGone(self.id) from None
            ended: asyncio.Future[Any] = self.exited
            done, _ = await asyncio.wait({waiter, ended}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._far.pop(request_id, None)
        if waiter not in done:
            waiter.cancel()
            if self.exited.done():
                raise KernelGone(self.id)
            raise TimeoutError(f"kernel {self.id}: no answer within {timeout:g}s")
        reply = waiter.result()
        answer = reply.get("answer")
        try:
            payload = base64.b64decode(str(reply.get("data") or ""), validate=True)
        except ValueError:
            payload = b""
        return (answer if isinstance(answer, dict) else {"error": "a malformed answer", "errno": ""}), payload

    async def _send(self, data: bytes) -> None:
        async with self._send_lock:
            await self._send_unlocked(data)

    async def _send_unlocked(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            fd = self._ctrl_in
            if fd < 0:
                raise BrokenPipeError
            try:
                view = view[os.write(fd, view):]
            except BlockingIOError:
                # A large script fills the pipe: wait until the driver has read some.
                ready = self.loop.create_future()
                self.loop.add_writer(fd, _set_once, ready)
                try:
                    await asyncio.wait({ready, self.exited}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    self.loop.remove_writer(fd)
                if self.exited.done():
                    raise BrokenPipeError

    async def close_rpc(self) -> None:
        """Stop the tool channel (requests in flight are cancelled)."""
        server, self.rpc = self.rpc, None
        if server is not None:
            await server.close()

    async def shutdown(self, grace: float = 0.0) -> None:
        """End the kernel (and its group) now; with ``grace``, SIGTERM first and SIGKILL what
        is left after that many seconds (the lifeline stays open until then: its close makes
        the kernel's watchdog SIGKILL the group at once)."""
        if grace > 0 and self.alive:
            await self.terminate(grace)
        self._close_host_fds()
        await self.kill()


def _set_once(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
