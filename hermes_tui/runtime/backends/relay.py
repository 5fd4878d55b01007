"""The host's end of a kernel in a Docker container or on an SSH host.

Started by :class:`~hermes_tui.runtime.kernel.Kernel` exactly as the local driver is (the same
control pipes, lifeline, tool-channel descriptors, stdout and stderr), so the pool, the pump
and the capture cannot tell the difference. It runs the backend's client (``docker exec -i``,
``ssh``), which runs ``remote.py`` there, and turns the frames coming back into this process's
stdout, stderr and control replies; the kernel's tool calls come back as frames too and go on
to hermes-tui over connections asked for on the inherited connector, as the local ``hermes_tools``
asks for them (so the same pid check and token hold). SIGINT is sent on as an interrupt.

Usage (the host starts it):  python relay.py CTRL_IN CTRL_OUT LIFELINE SPEC_FILE

As ``python relay.py --after HELLO -- CLIENT...`` it is the filter of one command there
(``terminal()``, a standalone script): the client gets this process's stdin as it is, and its
output is passed on from after the HELLO line only (what a login shell printed before is not
the command's).

Stdlib only; runs with the host's Python.
"""

import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys

HEADER = struct.Struct(">BII")
CHUNK = 65536
MAX_FRAME = 192 << 20
"""The largest frame taken from the far end (a file operation's answer: 64 MiB in base64, and
room); a bigger one ends the kernel rather than be held."""
FAR = b'{"op": "far"'
"""How a file operation's control line starts (``json.dumps`` of a dict whose first key is op)."""


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class Skipper(object):
    """Drops a stream's bytes up to and including the marker line (a login shell's banner
    before remote.py's hello); passes on what follows. Holds at most a few KiB meanwhile."""

    def __init__(self, marker):
        self.marker = marker
        self.seen = bytearray()
        self.found = False

    def feed(self, data):
        if self.found:
            return data
        self.seen += data
        at = self.seen.find(self.marker)
        if at < 0:
            del self.seen[:-max(len(self.marker), 4096)]
            return b""
        self.found = True
        rest = bytes(self.seen[at + len(self.marker):])
        self.seen = bytearray()
        return rest

    def leftover(self):
        """What came instead of the marker (when it never came): why the far end did not start."""
        return b"" if self.found else bytes(self.seen)


def _ask_connector(fd):
    """A new connection to hermes-tui's tool channel, asked for on the inherited connector."""
    connector = socket.socket(fileno=os.dup(fd))
    try:
        connector.sendall(b"c")
        while True:
            data, ancillary, _, _ = connector.recvmsg(16, socket.CMSG_LEN(4))
            for level, kind, payload in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS and len(payload) >= 4:
                    return socket.socket(fileno=int.from_bytes(payload[:4], sys.byteorder))
            if not data or data in (b"full", b"refused"):
                return None
    finally:
        connector.close()


def _die_with_parent():
    """The client gets SIGTERM if this relay dies (a SIGKILL of the kernel's group)."""
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:
        pass


class Relay(object):
    def __init__(self, ctrl_in, ctrl_out, lifeline, spec):
        self.ctrl_in, self.ctrl_out, self.lifeline = ctrl_in, ctrl_out, lifeline
        self.spec = spec
        self.host = {}  # channel -> socket to hermes-tui
        self.by_socket = {}
        self.pending = bytearray()
        self.line = bytearray()
        self.err_open = True
        self.passing = False
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        self.code = None

    def send(self, kind, channel, data=b""):
        _write_all(self.client_in, HEADER.pack(ord(kind), channel, len(data)) + data)

    def run(self):
        remote = self.spec["spec"]
        setup = remote["setup"]
        config = setup["tools_config"]
        token_fd = config.get("token_fd")
        setup["token"] = os.pread(token_fd, 256, 0).decode("ascii").strip() if token_fd is not None else ""
        if token_fd is not None:
            os.close(token_fd)
        self.connector = config.get("connector_fd")
        self.client = subprocess.Popen(
            self.spec["client"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True, preexec_fn=_die_with_parent, close_fds=True, pass_fds=(), bufsize=0,
        )
        assert self.client.stdin is not None and self.client.stdout is not None and self.client.stderr is not None
        self.client_in, self.client_out = self.client.stdin.fileno(), self.client.stdout.fileno()
        self.client_err = self.client.stderr.fileno()
        signal.signal(signal.SIGINT, self.on_sigint)
        signal.signal(signal.SIGTERM, self.on_sigterm)
        try:
            data = json.dumps(remote).encode("utf-8")
            _write_all(self.client_in, b"%010d" % len(data) + data)  # remote.py's spec, never in argv
            if not self.skip_to(remote["hello"].encode("ascii") + b"\n"):
                return 1
            if self.feed(b""):  # frames that came with the hello line
                self.loop()
        except OSError:
            pass
        finally:
            self.end()
        return self.code if self.code is not None else 1

    def skip_to(self, hello):
        """Drop the client's output up to remote.py's hello line (a login shell's banner); what
        follows it is kept for the frames. False if the client ended first (what it said on
        stdout and stderr then goes to stderr: why the kernel did not start)."""
        out, self.err_skip = Skipper(hello), Skipper(hello)
        while not out.found:
            ready, _, _ = select.select([self.client_out, self.client_err], [], [])
            if self.client_err in ready:
                self.from_client_err()
            if self.client_out in ready:
                data = os.read(self.client_out, CHUNK)
                if not data:
                    _write_all(2, out.leftover()[-4096:] + self.err_skip.leftover()[-4096:])
                    return False
                self.pending += out.feed(data)
        return True

    def from_client_err(self):
        """The client's stderr: after remote.py's hello, the far end's (and ssh's own errors)."""
        data = os.read(self.client_err, CHUNK)
        if not data:
            self.err_open = False
            return
        data = self.err_skip.feed(data)
        if data:
            _write_all(2, data)

    def on_sigint(self, *_):
        try:
            os.write(self.wake_w, b"i")
        except OSError:
            pass

    def on_sigterm(self, *_):
        try:
            os.write(self.wake_w, b"t")
        except OSError:
            pass

    def loop(self):
        client_out = self.client_out
        while True:
            watched = [client_out, self.ctrl_in, self.lifeline, self.wake_r] + list(self.by_socket)
            if self.err_open:
                watched.append(self.client_err)
            try:
                ready, _, _ = select.select(watched, [], [])
            except InterruptedError:
                continue
            for fd in ready:
                if fd == self.wake_r:
                    for signal_byte in os.read(self.wake_r, 64):
                        if signal_byte == ord("i"):
                            self.send("I", 0)
                        else:
                            return
                elif fd == self.lifeline:
                    if not os.read(self.lifeline, 64):
                        return  # hermes-tui is gone or ended the kernel
                elif fd == self.ctrl_in:
                    data = os.read(self.ctrl_in, CHUNK)
                    if not data:
                        return
                    self.from_hermes(data)
                elif fd == self.client_err:
                    self.from_client_err()
                elif fd == client_out:
                    data = os.read(client_out, CHUNK)
                    if not data:
                        return
                    if not self.feed(data):
                        return
                else:
                    self.from_host(fd)

    def from_hermes(self, data):
        """Control lines from hermes-tui: the driver's go on as they are (a long one, a script,
        passes on while it is read); a file operation (a line starting ``{"op": "far"``, see
        Kernel.far) goes as a frame of its own, done beside the kernel there, its answer
        coming back as a control line."""
        while data:
            if self.passing:  # the rest of a long driver line
                end = data.find(b"\n")
                if end < 0:
                    self.send("C", 0, data)
                    return
                self.send("C", 0, data[:end + 1])
                data, self.passing = data[end + 1:], False
                continue
            line = self.line
            searched = len(line)  # the newline is looked for only in what just came
            line += data
            data = b""
            start = 0
            while True:
                end = line.find(b"\n", max(start, searched))
                if end < 0:
                    break
                piece = bytes(line[start:end + 1])
                self.send("F" if piece.startswith(FAR) else "C", 0, piece)
                start = end + 1
            del line[:start]
            if len(line) >= len(FAR) and not line.startswith(FAR):
                self.send("C", 0, bytes(line))
                del line[:]
                self.passing = True

    def from_host(self, sock):
        channel = self.by_socket[sock]
        try:
            data = sock.recv(CHUNK)
        except OSError:
            data = b""
        if data:
            self.send("R", channel, data)
        else:
            self.close_channel(channel)
            self.send("X", channel)

    def close_channel(self, channel):
        sock = self.host.pop(channel, None)
        if sock is not None:
            self.by_socket.pop(sock, None)
            sock.close()

    def feed(self, data):
        """Frames from the far end; False once it said it has ended (or broke the protocol)."""
        pending = self.pending
        pending += data
        at = 0
        try:
            while len(pending) - at >= HEADER.size:
                kind, channel, size = HEADER.unpack_from(pending, at)
                if size > MAX_FRAME:  # not what remote.py sends: the far end is not ours any more
                    _write_all(2, b"hermes-tui: the kernel's far end sent a frame over the size allowed; ended\n")
                    return False
                if len(pending) - at < HEADER.size + size:
                    break
                payload = bytes(pending[at + HEADER.size:at + HEADER.size + size])
                at += HEADER.size + size
                if not self.frame(chr(kind), channel, payload):
                    return False
            return True
        finally:
            del pending[:at]

    def frame(self, kind, channel, payload):
        if kind == "O":
            _write_all(1, payload)
        elif kind == "E":
            _write_all(2, payload)
        elif kind == "C":
            _write_all(self.ctrl_out, payload)
        elif kind == "R":
            sock = self.host.get(channel)
            if sock is None:
                sock = _ask_connector(self.connector) if self.connector is not None else None
                if sock is None:
                    self.send("X", channel)
                    return True
                self.host[channel] = sock
                self.by_socket[sock] = channel
            try:
                sock.sendall(payload)
            except OSError:
                self.close_channel(channel)
                self.send("X", channel)
        elif kind == "X":
            self.close_channel(channel)
        elif kind == "F":  # a file operation's answer: one control line for Kernel.far
            if b"\n" not in payload:
                _write_all(self.ctrl_out, b'{"op": "far", "reply": ' + payload + b"}\n")
        elif kind == "Z":
            try:
                self.code = int(payload.decode("ascii"))
            except ValueError:
                self.code = 1
            return False
        return True

    def end(self):
        try:
            self.send("K", 0)
        except OSError:
            pass
        try:
            if self.client.stdin is not None:
                self.client.stdin.close()
        except OSError:
            pass
        try:
            self.client.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.client.kill()
            self.client.wait()


def after(hello, argv):
    """Run ``argv`` with this process's stdin; pass its stdout and stderr on from after the
    ``hello`` line on each. SIGTERM and SIGINT go to it; its exit code is this one's."""
    client = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda number, _frame: client.send_signal(number))
    marker = hello.encode("ascii") + b"\n"
    assert client.stdout is not None and client.stderr is not None
    streams = {client.stdout.fileno(): (1, Skipper(marker)), client.stderr.fileno(): (2, Skipper(marker))}
    while streams:
        try:
            ready, _, _ = select.select(list(streams), [], [])
        except InterruptedError:
            continue
        for fd in ready:
            target, skipper = streams[fd]
            data = os.read(fd, CHUNK)
            if not data:
                del streams[fd]
                _write_all(2, skipper.leftover()[-4096:])  # no hello came: what did says why
                continue
            data = skipper.feed(data)
            if data:
                _write_all(target, data)
    code = client.wait()
    return code if code >= 0 else 128 - code


def main(argv):
    if argv[1:2] == ["--after"]:
        return after(argv[2], argv[4:])
    ctrl_in, ctrl_out, lifeline = (int(value) for value in argv[1:4])
    with open(argv[4], encoding="utf-8") as handle:
        spec = json.load(handle)
    return Relay(ctrl_in, ctrl_out, lifeline, spec).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
