"""The host's end of a kernel that is a Jupyter kernel (``terminal.backend: jupyter``).

Started by :class:`~hermes_tui.runtime.kernel.Kernel` exactly as the local driver is (control
pipes, lifeline, the tool channel's descriptors, stdout and stderr), so the pool, the pump and
the capture cannot tell the difference: it speaks the driver's control protocol on one side and
the Jupyter messaging protocol on the other:

* **local** (no gateway): it starts the kernelspec's command (an ``ipykernel``) itself, in its
  own process group and sandbox, on ``ipc`` sockets in its private folder, and talks ZeroMQ
  (jupyter_client);
* **gateway**: it talks to a kernel the host started on a Kernel or Enterprise Gateway over the
  gateway's WebSocket, reconnecting (with the same session, so the gateway replays what it
  buffered; a message already seen is dropped by id) when the connection drops.

A script is one ``execute_request`` of a cell calling ``jupyter_kernel.run``: its ``stream``
messages are this process's stdout and stderr (the capture's), a rich output is its text/plain
with a note of what else it had, and the outcome comes back in the reply's user expressions.
Tool calls come as ``input_request`` prompts (see jupyter_kernel.py) and go on to hermes-tui
over a connection asked for on the inherited connector, so the token check is the local one.

Usage (the host starts it):  python jupyter_relay.py CTRL_IN CTRL_OUT LIFELINE SPEC_FILE
"""

from __future__ import annotations

import ast
import asyncio
import base64
import collections
import contextlib
import json
import os
import re
import signal
import socket
import ssl
import sys
import time
import urllib.error
import urllib.request
import zlib
from typing import Any

if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]  # run as a script: its folder's modules (jupyter.py...) never shadow a library's

TOOL = "\x1ehermes-tool\x1f"
FAR = "\x1ehermes-far\x1f"
FAR_DONE = "\x1ehermes-far-done\x1f"
SEEN = 4096
"""Message ids remembered to drop what a reconnected WebSocket replays."""
RECONNECT_SECONDS = float(os.environ.get("HERMES_JUPYTER_RECONNECT", "20"))
"""How long a dropped WebSocket is retried before the kernel is given up."""
START_SECONDS = 60.0
MAX_MESSAGE = 256 << 20
"""The largest WebSocket message taken from a gateway (a tool request is at most 64 MiB, a file
operation's answer 64 MiB in base64): a bigger one drops the connection rather than be held."""
IDLE_GRACE = 3.0
"""Seconds a request's idle status is waited for once its reply came, or its reply once its idle
status came, after the WebSocket dropped and came back (what was on the wire then is lost).
Without a reconnect nothing is lost: both are waited for, however late one is (the shell and
iopub channels are separate sockets; on a loaded machine the reply can trail by seconds)."""
LOST_AFTER = 30.0
"""Seconds the other of the two is waited for without a reconnect: past that it is taken as
lost, and the request ends with what came (once in a few hundred CI runs a local kernel's run
never ended, its host waiting; a run is never held longer than this for it)."""
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
MODULES = ("__hermes_jupyter__", "__hermes_remote__", "__hermes_driver__")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _relay_module() -> Any:
    """relay.py (beside this file; stdlib only), for the connector's protocol it already speaks."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("hermes_relay", os.path.join(os.path.dirname(__file__), "relay.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ask_connector(fd: int) -> socket.socket | None:
    """A new connection to hermes-tui's tool channel, asked for on the inherited connector."""
    return _relay_module()._ask_connector(fd)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class Gone(Exception):
    """The kernel or the way to it is gone: the relay ends, saying why on stderr."""


# -- transports -----------------------------------------------------------------------------

class ZmqTransport:
    """A local ipykernel this relay starts (in its own sandbox, its process group), over
    jupyter_client's ZeroMQ channels on TCP loopback."""

    def __init__(self, spec: dict[str, Any], folder: str) -> None:
        self.spec = spec
        self.folder = folder
        self.process: asyncio.subprocess.Process | None = None
        self.client: Any = None
        self.queue: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()
        self.tasks: list[asyncio.Future[Any]] = []

    async def open(self) -> None:
        from jupyter_client.asynchronous import AsyncKernelClient
        from jupyter_client.connect import write_connection_file

        path = os.path.join(self.folder, "kernel.json")
        write_connection_file(path, transport="tcp", ip="127.0.0.1", key=base64.b16encode(os.urandom(16)).lower())
        argv = [word.replace("{connection_file}", path) for word in self.spec["argv"]]
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("HERMES_RPC")}, **self.spec.get("env", {})}
        log = os.open(self.spec["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            # This relay's process group: the host's SIGINT reaches the kernel directly, and
            # ending the group (or the sandbox) ends it and whatever a script started.
            self.process = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=log, env=env, cwd=self.spec.get("cwd"))
        except OSError as exc:
            raise Gone(f"cannot start the kernel ({argv[0]}): {exc.strerror or exc}") from None
        finally:
            os.close(log)
        client = self.client = AsyncKernelClient(connection_file=path)
        client.load_connection_file()
        # No heartbeat: its 1 s ping declared a kernel still starting on a loaded machine dead
        # (wait_for_ready asks it after each unanswered second). The relay watches the process
        # itself (`ended` below) and has its own start timeout.
        client.start_channels(hb=False)
        # Until the kernel answers and its iopub is joined (a ZeroMQ subscriber misses what was
        # published before it joined: a first script's output and idle status would be lost).
        waiting = asyncio.ensure_future(client.wait_for_ready(timeout=START_SECONDS))
        ended = asyncio.ensure_future(self.process.wait())
        await asyncio.wait({waiting, ended}, return_when=asyncio.FIRST_COMPLETED)
        if not waiting.done():
            waiting.cancel()
            raise Gone(f"the kernel process exited with code {self.process.returncode} ({self.log_tail()})")
        ended.cancel()
        waiting.result()
        for name in ("shell", "iopub", "stdin"):
            self.tasks.append(asyncio.ensure_future(self._pump(name, getattr(client, f"{name}_channel"))))
        self.tasks.append(asyncio.ensure_future(self._watch()))

    async def _watch(self) -> None:
        assert self.process is not None
        code = await self.process.wait()
        await self.queue.put(("gone", {"why": f"the kernel process exited with code {code} ({self.log_tail()})"}))

    def log_tail(self) -> str:
        """The last line the kernel process printed (why it ended), or ""."""
        tail = b""
        with contextlib.suppress(OSError):
            with open(self.spec["log"], "rb") as handle:
                handle.seek(max(0, os.fstat(handle.fileno()).st_size - 2048))
                tail = handle.read()
        last = [line for line in tail.decode("utf-8", "replace").splitlines() if line.strip()][-1:]
        return last[0].strip()[:300] if last else "it said nothing"

    async def _pump(self, name: str, channel: Any) -> None:
        while True:
            message = await channel.get_msg()
            await self.queue.put((name, message))

    def session(self) -> Any:
        return self.client.session

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        import zmq

        socket_channel = getattr(self.client, f"{channel}_channel")
        socket_channel.send(message)
        # jupyter_client sends on a blocking shadow of the channel's asyncio socket. The send has
        # libzmq take the socket's pending commands, and with them the wake-up (its ZMQ_FD) of a
        # message that came meanwhile: the asyncio socket never saw the send, so its pump would
        # wait on that fd for good, and the channel's later messages queue unread behind that one
        # (no new wake-up while one is unread: a reply "lost", LOST_AFTER, "the kernel did not
        # run it"). Asking the asyncio socket for its events has it look again, as its own sends do.
        socket_channel.socket.get(zmq.EVENTS)

    async def receive(self) -> tuple[str, dict[str, Any]]:
        return await self.queue.get()

    async def interrupt(self) -> None:
        return None  # the host's SIGINT to this group reached the kernel too

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        if self.client is not None:
            with contextlib.suppress(Exception):
                self.client.stop_channels()
        if self.process is not None and self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.process.wait(), 2)


class WsTransport:
    """A kernel on a Kernel or Enterprise Gateway, over its WebSocket."""

    def __init__(self, spec: dict[str, Any], auth: str) -> None:
        self.spec = spec
        self.auth = auth
        self.ws: Any = None
        self.seen: collections.OrderedDict[str, None] = collections.OrderedDict()
        self.session_id = base64.b32encode(os.urandom(10)).decode("ascii").lower()
        self.connected = asyncio.Event()
        self.lost_at: float | None = None
        self.reconnects = 0
        self.on_reconnect: Any = None
        """Told after a reconnect (the relay notes it in a running script's output)."""
        from jupyter_client.session import Session

        self._session = Session(key=b"", session=self.session_id, username="hermes-tui")

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.auth}"} if self.auth else {}

    def ssl_context(self) -> ssl.SSLContext | None:
        if not self.spec["ws_url"].startswith("wss:"):
            return None
        context = ssl.create_default_context()
        if not self.spec.get("validate_cert", True):
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context

    async def open(self) -> None:
        await self._connect()

    async def _connect(self) -> None:
        from websockets.asyncio.client import connect

        url = f"{self.spec['ws_url']}?session_id={self.session_id}"
        self.ws = await connect(url, additional_headers=self.headers(), max_size=MAX_MESSAGE, max_queue=2, ssl=self.ssl_context(),
                                open_timeout=15, ping_interval=20, ping_timeout=30)
        self.connected.set()

    async def _reconnect(self) -> None:
        """Connect again (the same session: the gateway replays what it kept meanwhile) until
        :data:`RECONNECT_SECONDS` have passed; Gone after that, or once the kernel is not there."""
        self.connected.clear()
        deadline = time.monotonic() + RECONNECT_SECONDS
        delay = 0.2
        while True:
            try:
                await self._connect()
                self.reconnects += 1
                return
            except Exception as exc:  # refused, reset, 404 for a kernel that is gone
                status = getattr(getattr(exc, "response", None), "status_code", None)
                if status == 404:
                    raise Gone("the kernel is gone from the gateway (was it restarted?)") from None
                if time.monotonic() > deadline:
                    raise Gone(f"lost the gateway's WebSocket and could not reconnect within "
                               f"{RECONNECT_SECONDS:g}s: {type(exc).__name__}: {str(exc)[:200]}") from None
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)

    def session(self) -> Any:
        return self._session

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        from jupyter_client.jsonutil import json_default

        text = json.dumps({**message, "channel": channel, "buffers": []}, default=json_default)
        while True:
            await self.connected.wait()
            try:
                await self.ws.send(text)
                return
            except Exception:
                if self.connected.is_set():
                    await self._reconnect()

    async def receive(self) -> tuple[str, dict[str, Any]]:
        while True:
            await self.connected.wait()
            try:
                raw = await self.ws.recv()
            except Exception:
                await self._reconnect()
                if self.on_reconnect is not None:
                    self.on_reconnect()
                continue
            if isinstance(raw, bytes):  # a binary message (buffers): its JSON part is all we keep
                continue
            try:
                message = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(message, dict):
                continue
            msg_id = str(message.get("header", {}).get("msg_id") or message.get("msg_id") or "")
            if msg_id:
                if msg_id in self.seen:  # replayed after a reconnect: already passed on
                    continue
                self.seen[msg_id] = None
                if len(self.seen) > SEEN:
                    self.seen.popitem(last=False)
            return str(message.get("channel") or ""), message

    def _rest(self, method: str, path: str) -> int:
        request = urllib.request.Request(self.spec["http_url"].rstrip("/") + path, method=method,
                                         headers=self.headers(), data=b"" if method == "POST" else None)
        # No redirect is followed (the token would go with it) and no proxy is asked.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect(),
                                             urllib.request.HTTPSHandler(context=self.ssl_context()))
        try:
            with opener.open(request, timeout=5) as answer:
                return int(answer.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)

    async def interrupt(self) -> None:
        with contextlib.suppress(OSError):
            await asyncio.to_thread(self._rest, "POST", f"/api/kernels/{self.spec['kernel_id']}/interrupt")

    async def close(self) -> None:
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.ws.close(), 2)
        if self.spec.get("shutdown", True):  # the host deletes it too; whoever comes first
            with contextlib.suppress(OSError):
                await asyncio.to_thread(self._rest, "DELETE", f"/api/kernels/{self.spec['kernel_id']}")


# -- the relay ------------------------------------------------------------------------------

class Pending:
    """One request sent to the kernel's shell channel, until its reply and its idle status."""

    def __init__(self, kind: str, request: dict[str, Any]) -> None:
        self.kind = kind
        self.request = request
        self.reply: dict[str, Any] | None = None
        self.idle = False
        self.reconnects = 0
        """The transport's reconnect count when it was sent."""
        self.timed = False
        """A wait for its other half is set (one per request, however many halves come)."""


class Relay:
    def __init__(self, ctrl_in: int, ctrl_out: int, lifeline: int, spec: dict[str, Any]) -> None:
        self.ctrl_in, self.ctrl_out, self.lifeline = ctrl_in, ctrl_out, lifeline
        self.spec = spec
        self.pending: dict[str, Pending] = {}
        self.running: Pending | None = None
        """The script running now (exec)."""
        self.waiting: dict[str, Any] | None = None
        """The header of the stub's input_request waiting for an answer (a tool call's)."""
        self.answer: str | None = None
        """A tool call's answer that came before the stub asked again (after a far operation)."""
        self.far_queue: collections.deque[dict[str, Any]] = collections.deque()
        self.generation = 0
        """Counts scripts: a tool call's answer that comes after its script ended is dropped."""
        self.calling = False
        """A tool call of the stub is with hermes-tui (the stub makes one at a time)."""
        self.host: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self.host_lock = asyncio.Lock()
        self.stop = asyncio.Event()
        self.why: str | None = None
        self.last_interrupt = 0.0
        self.transport: Any = None

    # -- start ------------------------------------------------------------------------------

    async def main(self) -> int:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, self.stop.set)
        if self.spec["mode"] == "gateway":
            loop.add_signal_handler(signal.SIGINT, self.on_sigint)
            self.transport = WsTransport(self.spec["gateway"], self._read_fd(self.spec["gateway"].get("auth_fd")))
            self.transport.on_reconnect = self.reconnected
        else:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # the kernel, in this group, gets it
            self.transport = ZmqTransport(self.spec["local"], self.spec["folder"])
        config = self.spec["setup"]["tools_config"]
        self.token = self._read_fd(config.get("token_fd"))
        self.connector = config.get("connector_fd")
        try:
            await asyncio.wait_for(self.transport.open(), START_SECONDS)
            await self.setup()
            loop.add_reader(self.lifeline, self._on_lifeline)
            reader = asyncio.StreamReader(limit=1 << 30)
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(self.ctrl_in, "rb"))
            tasks = [asyncio.ensure_future(self.from_hermes(reader)), asyncio.ensure_future(self.from_kernel()),
                     asyncio.ensure_future(self.stop.wait())]
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in tasks:
                if task in done and not task.cancelled() and task.exception() is not None:
                    error = task.exception()
                    self.why = str(error) if isinstance(error, Gone) else f"{type(error).__name__}: {error}"[:300]
                task.cancel()
        except Gone as exc:
            self.why = str(exc)
        except (asyncio.TimeoutError, TimeoutError):
            self.why = f"the kernel did not answer within {START_SECONDS:g}s"
        except OSError as exc:
            self.why = f"{type(exc).__name__}: {exc}"
        finally:
            if self.why:
                _write_all(2, f"hermes-tui: jupyter: {self.why}\n".encode("utf-8", "replace"))
            await self.transport.close()
        return 1 if self.why else 0

    @staticmethod
    def _read_fd(fd: int | None) -> str:
        if fd is None:
            return ""
        try:
            return os.pread(fd, 4096, 0).decode("utf-8").strip()
        finally:
            os.close(fd)

    def _on_lifeline(self) -> None:
        try:
            data = os.read(self.lifeline, 64)
        except OSError:
            data = b""
        if not data:
            asyncio.get_running_loop().remove_reader(self.lifeline)
            self.stop.set()  # hermes-tui is gone or ended the kernel

    def on_sigint(self) -> None:
        """The host's interrupt, for a gateway's kernel: its interrupt, at most every half
        second while a script runs (the host repeats SIGINT until the script ends)."""
        now = time.monotonic()
        if self.running is not None and now - self.last_interrupt >= 0.5:
            self.last_interrupt = now
            asyncio.ensure_future(self.transport.interrupt())

    def reconnected(self) -> None:
        """The gateway's WebSocket dropped and is back: what the gateway kept meanwhile is
        replayed (each message passed on once), but what was on the wire when it dropped is
        lost: a running script's output says so, where it happened."""
        if self.running is not None:
            _write_all(1, b"\n[hermes-tui: the connection to the Jupyter gateway dropped and was restored; "
                          b"output sent at that moment may be missing]\n")
        loop = asyncio.get_running_loop()
        for parent, pending in list(self.pending.items()):  # half answered: the other half may be lost
            if (pending.reply is None) != (not pending.idle):
                loop.call_later(IDLE_GRACE, self._late_idle, parent)

    async def execute(self, kind: str, request: dict[str, Any], code: str, *, silent: bool,
                      expressions: dict[str, str], stdin: bool = False) -> Pending:
        message = self.transport.session().msg("execute_request", {
            "code": code, "silent": silent, "store_history": False, "user_expressions": expressions,
            "allow_stdin": stdin, "stop_on_error": False})
        pending = self.pending[message["header"]["msg_id"]] = Pending(kind, request)
        pending.reconnects = self._reconnects()
        if kind == "exec":  # before the send: its reply may be handled before the send returns
            self.running = pending
            self.generation += 1
        await self.transport.send("shell", message)
        return pending

    async def setup(self) -> None:
        """Load the far end's modules and the ``hermes_tools`` stub into the kernel; say ready."""
        setup = self.spec["setup"]
        config = {**setup["tools_config"], "transport": "jupyter", "token": self.token}
        for name in ("token_fd", "connector_fd", "socket"):
            config.pop(name, None)
        tools = setup["tools"].replace(setup["placeholder"], f"_CONFIG = {json.dumps(config)}")
        sources = {"__hermes_jupyter__": setup["jupyter"], "__hermes_remote__": setup["remote"],
                   "__hermes_driver__": setup["driver"], "hermes_tools": tools}
        blobs = {name: base64.b64encode(zlib.compress(text.encode("utf-8"), 9)).decode("ascii")
                 for name, text in sources.items()}
        code = ("import sys as _s, types as _t, zlib as _z, base64 as _b\n"
                f"for _n, _c in {json.dumps(blobs)}.items():\n"
                "    _m = _t.ModuleType(_n)\n"
                "    _m.__file__ = '<%s>' % ('__hermes_tools_source__' if _n == 'hermes_tools' else _n)\n"
                "    exec(compile(_z.decompress(_b.b64decode(_c)).decode('utf-8'), _m.__file__, 'exec'), _m.__dict__)\n"
                "    _s.modules[_n] = _m\n"
                "del _s, _t, _z, _b, _n, _c, _m\n")
        info = json.dumps({"cwd": setup.get("cwd"), "env": setup.get("env") or {}})
        pending = await self.execute("setup", {}, code, silent=True,
                                     expressions={"info": f"__import__('__hermes_jupyter__').install({info!r})"})
        await self._ready_kernel_info()
        while pending.reply is None or not pending.idle:
            channel, message = await self.transport.receive()
            if channel == "gone":
                raise Gone(message["why"])
            self.route(channel, message)
        answer = self.expression(pending, "info")
        if answer is None:
            raise Gone("the kernel could not load hermes-tui's modules: "
                       + str((pending.reply or {}).get("evalue") or (pending.reply or {}).get("status")))
        if answer.get("error"):
            raise Gone(str(answer["error"]))
        ready = {k: answer.get(k) for k in ("python", "executable", "cwd", "home")}
        ready["pid"] = answer.get("pid") if self.spec["mode"] == "local" else None
        ready["kernel_id"] = self.spec.get("gateway", {}).get("kernel_id")
        self.ctrl({"op": "ready", **ready})

    async def _ready_kernel_info(self) -> None:
        message = self.transport.session().msg("kernel_info_request", {})
        pending = self.pending[message["header"]["msg_id"]] = Pending("info", {})
        pending.reconnects = self._reconnects()
        await self.transport.send("shell", message)

    def expression(self, pending: Pending, name: str) -> Any:
        """A user expression's value (JSON text in its text/plain repr), or None."""
        found = ((pending.reply or {}).get("user_expressions") or {}).get(name) or {}
        if found.get("status") != "ok":
            return None
        try:
            return json.loads(ast.literal_eval(found.get("data", {}).get("text/plain", "")))
        except (ValueError, SyntaxError, TypeError):
            return None

    # -- from hermes-tui --------------------------------------------------------------------

    def ctrl(self, message: dict[str, Any]) -> None:
        _write_all(self.ctrl_out, (json.dumps(message) + "\n").encode("utf-8"))

    async def from_hermes(self, reader: asyncio.StreamReader) -> None:
        while True:
            line = await reader.readline()
            if not line:
                return
            try:
                request = json.loads(line.decode("utf-8"))
            except ValueError:
                continue
            op = request.get("op") if isinstance(request, dict) else None
            if op == "exec":
                await self.run(request)
            elif op in ("names", "inspect", "complete"):
                call = f"__import__('__hermes_jupyter__').answer({op!r}, {str(request.get('text', ''))!r})"
                await self.execute("inspect", request, "", silent=True, expressions={"r": call})
            elif op == "far":
                await self.far(request)

    async def run(self, request: dict[str, Any]) -> None:
        code = base64.b64encode(str(request["code"]).encode("utf-8")).decode("ascii")
        filename = request.get("filename") or f"<cell {request.get('cell', 1)}>"
        call = f"__import__('__hermes_jupyter__').run({code!r}, {filename!r}, {bool(request.get('display'))!r})"
        await self.execute("exec", request, call, silent=False, stdin=True,
                                          expressions={"hermes": "__import__('__hermes_jupyter__').outcome()"})

    async def far(self, request: dict[str, Any]) -> None:
        spec = request.get("spec") or {}
        if spec.get("op") == "memory" and self.running is not None:  # never queued behind a script
            self.ctrl({"op": "far", "reply": {"id": request.get("id"), "answer": {"rss": None}, "data": ""}})
            return
        text = json.dumps({"id": request.get("id"), "spec": spec, "data": request.get("data") or ""})
        if self.waiting is not None:  # a tool call waits in the kernel: it does it there
            header, self.waiting = self.waiting, None
            await self.reply_input(header, FAR + text)
        elif self.running is not None:  # a script runs: when its tool call asks next
            self.far_queue.append(request)
        else:
            encoded = base64.b64encode(text.encode("utf-8")).decode("ascii")
            await self.execute("far", request, "", silent=True,
                               expressions={"r": f"__import__('__hermes_jupyter__').far_json({encoded!r})"})

    async def reply_input(self, header: dict[str, Any], value: str) -> None:
        message = self.transport.session().msg("input_reply", {"value": value}, parent=header)
        await self.transport.send("stdin", message)

    # -- from the kernel --------------------------------------------------------------------

    async def from_kernel(self) -> None:
        while True:
            channel, message = await self.transport.receive()
            if channel == "gone":
                raise Gone(message["why"])
            if channel == "stdin" and message.get("msg_type", message.get("header", {}).get("msg_type")) \
                    == "input_request":
                await self.on_input(message)
                continue
            for finished in self.route(channel, message):
                await self.finish(finished)

    def route(self, channel: str, message: dict[str, Any]) -> list[Pending]:
        """Output to stdout/stderr; replies and idle statuses to their requests. Returns the
        requests now complete."""
        header = message.get("header") or {}
        kind = header.get("msg_type") or message.get("msg_type")
        parent = (message.get("parent_header") or {}).get("msg_id")
        content = message.get("content") or {}
        pending = self.pending.get(parent) if parent else None
        if channel == "iopub" and kind == "status" and content.get("execution_state") in ("restarting", "dead"):
            raise Gone("the kernel died (the gateway restarts it empty); its state is lost")
        if pending is None:
            return []
        if channel == "shell" and kind and kind.endswith("_reply"):
            pending.reply = content
            if not pending.idle:  # its idle status may be lost
                self._wait_for_the_other(pending, str(parent))
        elif channel == "iopub":
            if kind == "status" and content.get("execution_state") == "idle":
                pending.idle = True
                if pending.reply is None:  # its reply may be lost
                    self._wait_for_the_other(pending, str(parent))
            elif pending.kind == "exec":
                self.output(kind or "", content)
        if pending.kind == "info" and pending.reply is not None:
            del self.pending[str(parent)]
            return []
        if pending.reply is not None and pending.idle:
            del self.pending[str(parent)]
            return [pending]
        return []

    def _reconnects(self) -> int:
        return int(getattr(self.transport, "reconnects", 0))

    def _dropped_since(self, pending: Pending) -> bool:
        """The WebSocket dropped (and came back) since ``pending`` was sent."""
        return self._reconnects() > pending.reconnects

    def _wait_for_the_other(self, pending: Pending, parent: str) -> None:
        """The reply or the idle status came, not the other: :data:`IDLE_GRACE` after a
        reconnect, else :data:`LOST_AFTER`, and the request ends without it."""
        if pending.timed:
            return
        pending.timed = True
        wait = IDLE_GRACE if self._dropped_since(pending) else LOST_AFTER
        asyncio.get_running_loop().call_later(wait, self._late_idle, parent, wait)

    def _late_idle(self, parent: str, waited: float = IDLE_GRACE) -> None:
        pending = self.pending.get(parent)
        if pending is not None and (not pending.idle or pending.reply is None):
            if waited >= LOST_AFTER:
                missing = "idle status" if not pending.idle else "reply"
                print(f"hermes jupyter relay: no {missing} for {pending.kind} {parent} {waited:g} s after the other; "
                      "taken as lost", file=sys.stderr, flush=True)
            pending.idle = True
            del self.pending[parent]
            asyncio.ensure_future(self.finish(pending))

    def output(self, kind: str, content: dict[str, Any]) -> None:
        if kind == "stream":
            _write_all(2 if content.get("name") == "stderr" else 1, str(content.get("text", "")).encode("utf-8"))
        elif kind in ("display_data", "execute_result", "update_display_data"):
            data = content.get("data") or {}
            text = str(data.get("text/plain", ""))
            others = sorted(name for name in data if name != "text/plain")
            note = f"[rich output: {', '.join(others)} not shown here]" if others else ""
            shown = "\n".join(part for part in (text, note) if part)
            if shown:
                _write_all(1, (shown + "\n").encode("utf-8"))
        elif kind == "error":
            text = "\n".join(ANSI.sub("", str(line)) for line in content.get("traceback") or [])
            _write_all(2, ((text or f"{content.get('ename')}: {content.get('evalue')}") + "\n").encode("utf-8"))

    async def finish(self, pending: Pending) -> None:
        request = pending.request
        if pending.kind == "exec":
            outcome = self.expression(pending, "hermes") or {}
            reply = pending.reply or {}
            if not outcome:  # interrupted outside the script's own frame, or the kernel refused it
                outcome = {"status": "error", "error": str(reply.get("ename") or "the kernel did not run it")
                           + (f": {reply.get('evalue')}" if reply.get("evalue") else ""),
                           "exit_code": None, "duration": 0.0}
            self.running, self.waiting, self.answer, self.calling = None, None, None, False
            self.generation += 1
            marker = str(request["marker"]).encode("ascii")
            _write_all(1, marker)
            _write_all(2, marker)
            self.ctrl({"op": "done", "id": request["id"], "status": outcome.get("status", "error"),
                       "error": outcome.get("error"), "exit_code": outcome.get("exit_code"),
                       "duration": outcome.get("duration"), "markers": [True, True]})
            if outcome.get("status") == "exit":
                self.stop.set()
            while self.far_queue and self.running is None:
                await self.far(self.far_queue.popleft())
        elif pending.kind == "inspect":
            found = self.expression(pending, "r")
            self.ctrl({"op": "inspect", "id": request.get("id"), "variables": found if isinstance(found, list) else []})
        elif pending.kind == "far":
            found = self.expression(pending, "r")
            if not isinstance(found, dict):
                found = {"id": request.get("id"), "answer": {"error": "the kernel did not answer", "errno": ""},
                         "data": ""}
            self.ctrl({"op": "far", "reply": found})

    async def on_input(self, message: dict[str, Any]) -> None:
        header = message.get("header") or {}
        prompt = str((message.get("content") or {}).get("prompt", ""))
        if prompt.startswith(TOOL):
            if self.calling:  # not what the stub does (one call at a time): refused, never queued
                await self.reply_input(header, json.dumps({"id": None, "result": {
                    "error": "one tool call at a time from a Jupyter kernel"}}))
                return
            self.waiting, self.calling = header, True
            asyncio.ensure_future(self.tool_call(prompt[len(TOOL):], self.generation))
        elif prompt.startswith(FAR_DONE):
            try:
                self.ctrl({"op": "far", "reply": json.loads(prompt[len(FAR_DONE):])})
            except ValueError:
                pass
            if self.far_queue:
                request = self.far_queue.popleft()
                text = json.dumps({"id": request.get("id"), "spec": request.get("spec") or {},
                                   "data": request.get("data") or ""})
                await self.reply_input(header, FAR + text)
            elif self.answer is not None:
                answer, self.answer = self.answer, None
                await self.reply_input(header, answer)
            else:
                self.waiting = header
        else:  # the script's own input(): nobody types here
            await self.reply_input(header, "")

    async def tool_call(self, line: str, generation: int) -> None:
        """One tool request to hermes-tui (its token checked there); the answer goes to the stub
        (dropped when its script has ended meanwhile: an interrupt gave up on it)."""
        try:
            answer = await self.ask_host(line)
        finally:
            if generation == self.generation:
                self.calling = False
        if generation != self.generation or self.running is None:
            return
        if self.waiting is not None:
            header, self.waiting = self.waiting, None
            await self.reply_input(header, answer)
        else:  # the stub is doing a far operation: it gets the answer when it asks next
            self.answer = answer

    async def ask_host(self, line: str) -> str:
        try:
            request_id = json.loads(line).get("id")
        except (ValueError, AttributeError):
            request_id = None
        async with self.host_lock:  # one call at a time: the stub sends one at a time too
            for _ in range(2):
                if self.host is None:
                    sock = _ask_connector(self.connector) if self.connector is not None else None
                    if sock is None:
                        break
                    sock.setblocking(False)
                    self.host = await asyncio.open_unix_connection(sock=sock, limit=1 << 30)
                reader, writer = self.host
                try:
                    writer.write(line.encode("utf-8") + b"\n")
                    await writer.drain()
                    while True:
                        answer = await reader.readline()
                        if not answer:
                            raise ConnectionError
                        try:
                            said = json.loads(answer)
                        except ValueError:
                            continue
                        if said.get("id") == request_id or said.get("id") is None:
                            return answer.decode("utf-8").strip()
                except (ConnectionError, OSError):
                    self.host = None
        return json.dumps({"id": request_id, "result": {"error": "could not reach hermes-tui's tool channel"}})


def main(argv: list[str]) -> int:
    ctrl_in, ctrl_out, lifeline = (int(value) for value in argv[1:4])
    with open(argv[4], encoding="utf-8") as handle:
        spec = json.load(handle)
    return asyncio.run(Relay(ctrl_in, ctrl_out, lifeline, spec).main())


if __name__ == "__main__":
    sys.exit(main(sys.argv))
