"""hermes-tui's far end: what runs inside a Docker container or on an SSH host.

Sent with every start (nothing is installed there) and run with the backend's ``python3``:
stdlib only, Python 3.8 syntax. The loader (:data:`hermes_tui.runtime.backends.base.LOADER`)
decodes this file and a small JSON spec from its argument and calls :func:`main`.

Modes:

Every mode reads its spec from stdin first (its length in ten digits, then JSON: never in argv,
where any process could read it), then writes the spec's ``hello`` line, before which the host
drops whatever a login shell printed.

* ``kernel``: the session kernel. Its spec carries the kernel driver, the ``hermes_tools``
  template, the token and the environment. It starts the
  unchanged driver with pipes for its control channel, output and lifeline, and a Unix socket
  for its tool calls, then multiplexes all of them over stdin/stdout in frames
  (:data:`HEADER`: kind, channel, length). The host's relay (``relay.py``) undoes that.
* ``run``: one command (``terminal()``), its output (stderr merged) on stdout.
* ``read`` / ``write`` / ``stat`` / ``list``: one file operation, a JSON line on stdout (the
  bytes read follow it).

Whatever the mode, EOF on stdin means the host is gone: everything started here is killed
(its process group), so nothing is left behind when the connection or container client ends.
"""

import json
import os
import select
import signal
import socket
import struct
import sys
import tempfile
import threading

HEADER = struct.Struct(">BII")
"""A frame: kind (one byte), channel, payload length; the payload follows."""
CHUNK = 65536


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_exact(fd, size):
    data = bytearray()
    while len(data) < size:
        piece = os.read(fd, min(size - len(data), 1 << 20))
        if not piece:
            return None
        data += piece
    return bytes(data)


def _kill_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except OSError:
        pass


def _enter(cwd):
    """chdir to ``cwd``; on failure say so on stderr and exit 126 (the host names the path)."""
    if cwd:
        try:
            os.chdir(os.path.expanduser(cwd))
        except OSError as exc:
            sys.stderr.write("hermes-remote: working directory %s: %s\n" % (cwd, exc.strerror or exc))
            sys.stderr.flush()
            os._exit(126)


def _environment(extra):
    env = dict(os.environ)
    for name, value in (extra or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def _watch_stdin(on_eof):
    """Call ``on_eof`` once stdin ends (the host, or its client process, is gone)."""
    def watch():
        while True:
            try:
                if not os.read(0, CHUNK):
                    break
            except InterruptedError:
                continue
            except OSError:
                break
        on_eof()
    thread = threading.Thread(target=watch, name="hermes-stdin")
    thread.daemon = True
    thread.start()


def _wait(pid):
    while True:
        try:
            _, status = os.waitpid(pid, 0)
        except InterruptedError:
            continue
        if os.WIFSIGNALED(status):
            return 128 + os.WTERMSIG(status)
        return os.WEXITSTATUS(status)


# -- run: one command --------------------------------------------------------------------

def run_command(spec):
    _enter(spec.get("cwd"))
    env = _environment(spec.get("env"))
    argv = spec.get("argv")
    script = None
    if spec.get("script") is not None:  # a standalone script: from a private file, not argv
        fd, script = tempfile.mkstemp(prefix="hermes-script-", suffix=".py")
        with os.fdopen(fd, "w") as handle:
            handle.write(spec["script"])
        argv = [sys.executable, script]
    try:
        return _run(argv, env, spec)
    finally:
        if script is not None:
            try:
                os.unlink(script)
            except OSError:
                pass


def _run(argv, env, spec):
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            if not spec.get("separate"):
                os.dup2(1, 2)  # stderr interleaved with stdout, as in a terminal
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.execvpe(argv[0], argv, env)
        except OSError as exc:
            os.write(2, ("hermes-remote: cannot run %s: %s\n" % (argv[0], exc.strerror or exc)).encode())
        os._exit(127)

    def stop(*_):
        _kill_group(pid, signal.SIGKILL)
        os._exit(137)

    signal.signal(signal.SIGTERM, lambda *_: _kill_group(pid, signal.SIGTERM))
    signal.signal(signal.SIGINT, lambda *_: _kill_group(pid, signal.SIGINT))
    _watch_stdin(stop)
    code = _wait(pid)
    _kill_group(pid, signal.SIGKILL)  # what it left running in its group goes with it
    return code


# -- file operations ---------------------------------------------------------------------

def _say(message):
    _write_all(1, (json.dumps(message) + "\n").encode("utf-8"))


def _error(exc):
    import errno as errno_names
    return {"error": exc.strerror or str(exc), "errno": errno_names.errorcode.get(exc.errno or 0, "")}


def operate(spec, data_in=b""):
    """One file operation: (its JSON answer, the bytes read). Never raises for an OSError (the
    answer says ``error``); never changes the process's cwd (kernel mode runs it in a thread)."""
    op, path = spec["op"], os.path.expanduser(spec.get("path", ""))
    cwd = spec.get("cwd")
    if cwd and not os.path.isabs(path):
        path = os.path.join(os.path.expanduser(cwd), path)
    try:
        if op == "stat":
            info = os.stat(path)
            return {"kind": "dir" if os.path.isdir(path) else "file", "size": info.st_size,
                    "real": os.path.realpath(path)}, b""
        if op == "read":
            limit = int(spec.get("limit", 1 << 24))
            with open(path, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                data = handle.read(limit + 1)
            return {"size": size, "bytes": min(len(data), limit), "more": len(data) > limit}, data[:limit]
        if op == "lines":  # read_file's page: only the lines asked for come back
            return _lines(path, spec)
        if op == "write":
            if os.path.isdir(path):
                return {"error": "%s is a directory, not a file" % path, "errno": "EISDIR"}, b""
            folder = os.path.dirname(path)
            if folder:
                os.makedirs(folder, exist_ok=True)
            existed = os.path.exists(path)
            fd, temporary = tempfile.mkstemp(dir=folder or ".", prefix=".hermes-write-")
            try:  # whole or not at all, as locally
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data_in)
                if existed:
                    try:
                        os.chmod(temporary, os.stat(path).st_mode & 0o7777)
                    except OSError:
                        pass
                os.replace(temporary, path)
            except BaseException:
                try:
                    os.unlink(temporary)
                except OSError:
                    pass
                raise
            return {"bytes_written": len(data_in), "created": not existed, "real": os.path.realpath(path)}, b""
        if op == "delete":
            os.unlink(path)
            return {"deleted": True}, b""
        if op == "search":
            return _search(path, spec), b""
        if op == "list":
            return {"entries": sorted(os.listdir(path))}, b""
        return {"error": "unknown operation %r" % op, "errno": ""}, b""
    except OSError as exc:
        return _error(exc), b""


def _lines(path, spec):
    """Lines ``first``..``first+count-1`` of ``path`` (each at most ``keep`` bytes, with its
    whole size), and the count of all of them; a huge line is skipped through, never held."""
    import base64
    offset, limit, keep = int(spec["first"]), int(spec["count"]), int(spec["keep"])
    last = offset + limit - 1
    with open(path, "rb") as handle:
        if b"\0" in handle.read(8192):
            return {"binary": True, "size": os.fstat(handle.fileno()).st_size}, b""
        handle.seek(0)
        picked, sizes, total = [], [], 0
        while True:
            line = handle.readline(keep + 1)
            if not line:
                break
            size = len(line)
            if size > keep:
                rest = line
                while not rest.endswith(b"\n"):
                    rest = handle.readline(1 << 16)
                    if not rest:
                        break
                    size += len(rest)
                line = line[:keep]
            total += 1
            if offset <= total <= last:
                picked.append(base64.b64encode(line).decode("ascii"))
                sizes.append(size)
    return {"total": total, "lines": picked, "sizes": sizes}, b""


def file_op(spec):
    """``operate`` as a process of its own: the answer and the bytes on stdout."""
    data_in = b""
    if spec["op"] == "write":
        chunks = []
        while True:
            piece = os.read(0, CHUNK)
            if not piece:
                break
            chunks.append(piece)
        data_in = b"".join(chunks)
    answer, data = operate(spec, data_in)
    _say(answer)
    _write_all(1, data)
    return 1 if "error" in answer else 0


def _walk(root, skip):
    if os.path.isfile(root):
        yield root
        return
    try:
        entries = sorted(os.scandir(root), key=lambda entry: entry.name)
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in skip:
                    for found in _walk(entry.path, skip):
                        yield found
            elif entry.is_file(follow_symlinks=False):
                yield entry.path
        except OSError:
            continue


def _glob_matches(path, root, glob):
    import fnmatch
    if "/" in glob:
        return fnmatch.fnmatchcase(os.path.relpath(path, root), glob.lstrip("/"))
    return fnmatch.fnmatchcase(os.path.basename(path), glob)


def _search(root, spec):
    """search_files' walk, done where the files are: ``items`` (paths, or [path, line number,
    text, before, after]) from ``offset``, at most ``limit``, and the ``total``."""
    import re
    if not os.path.exists(root):
        return {"error": "Path not found: %s" % root}
    skip = set(spec.get("skip", ()))
    wanted = spec["offset"] + spec["limit"]
    items, total = [], 0
    if spec["target"] == "files":
        for path in _walk(root, skip):
            if _glob_matches(path, root, spec["pattern"]):
                total += 1
                if spec["offset"] < total <= wanted:
                    items.append(path)
        return {"items": items, "total": total}
    regex = re.compile(spec["pattern"])
    context, glob, cut = spec.get("context", 0), spec.get("file_glob"), spec.get("line_bytes", 4096)
    for path in _walk(root, skip):
        if glob and not _glob_matches(path, root, glob):
            continue
        try:
            with open(path, "rb") as handle:
                if b"\0" in handle.read(8192):
                    continue
                handle.seek(0)
                lines = [raw[:cut].decode("utf-8", "replace").rstrip("\r\n") for raw in handle]
        except OSError:
            continue
        for index, line in enumerate(lines):
            if regex.search(line):
                total += 1
                if spec["offset"] < total <= wanted:
                    items.append([path, index + 1, line, lines[max(0, index - context):index] if context else [],
                                  lines[index + 1:index + 1 + context] if context else []])
    return {"items": items, "total": total}


# -- kernel: the driver, multiplexed -----------------------------------------------------

def _resident(pid):
    """Resident bytes of process ``pid`` (None where /proc cannot tell)."""
    try:
        with open("/proc/%d/statm" % pid) as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


class _Writer(object):
    """Sends one tool channel's replies to the script, on a thread of its own."""

    def __init__(self, sock):
        import queue
        self.sock = sock
        self.queue = queue.Queue()  # type: queue.Queue[bytes | None]
        thread = threading.Thread(target=self.run, name="hermes-channel")
        thread.daemon = True
        thread.start()

    def put(self, data):
        self.queue.put(data)

    def run(self):
        while True:
            data = self.queue.get()
            if data is None:
                break
            try:
                if data:
                    self.sock.sendall(data)
                else:
                    self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                break
        try:
            self.sock.close()
        except OSError:
            pass


class Kernel(object):
    """The driver and its tool socket, carried over stdin/stdout in frames."""

    def __init__(self, spec):
        self.spec = spec
        self.channels = {}  # socket -> channel number
        self.by_number = {}
        self.writers = {}  # channel -> _Writer
        self.next_channel = 1
        self.out_lock = threading.Lock()
        self.pid = None

    def send(self, kind, channel, data=b""):
        with self.out_lock:
            try:
                _write_all(1, HEADER.pack(ord(kind), channel, len(data)) + data)
            except OSError:  # the host is gone: what is running here ends
                self.stop()

    def read_frame(self):
        header = _read_exact(0, HEADER.size)
        if header is None:
            return None
        kind, channel, size = HEADER.unpack(header)
        data = _read_exact(0, size) if size else b""
        if data is None:
            return None
        return chr(kind), channel, data

    def serve(self):
        setup = self.spec["setup"]
        _enter(self.spec.get("cwd"))
        folder = tempfile.mkdtemp(prefix="hermes-kernel-")
        os.chmod(folder, 0o700)
        if not self.spec.get("cwd"):  # strict: its own private folder, as a local kernel's
            os.chdir(folder)
        tmp = os.path.join(folder, "tmp")
        os.mkdir(tmp, 0o700)
        driver = os.path.join(folder, "hermes_kernel_driver.py")
        with open(driver, "w") as handle:
            handle.write(setup["driver"])
        token_path = os.path.join(folder, "token")
        with open(os.open(token_path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as handle:
            handle.write(setup["token"])
        token_fd = os.open(token_path, os.O_RDONLY)
        os.unlink(token_path)
        sock_path = os.path.join(folder, "hermes.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(sock_path)
        os.chmod(sock_path, 0o600)
        listener.listen(64)
        config = dict(setup["tools_config"], transport="socket", socket=sock_path, token_fd=token_fd)
        config.pop("connector_fd", None)
        with open(os.path.join(folder, "hermes_tools.py"), "w") as handle:
            handle.write(setup["tools"].replace(setup["placeholder"], "_CONFIG = " + json.dumps(config)))
        env = _environment(setup.get("env"))
        env.update({"TMPDIR": tmp, "HERMES_RPC_SOCKET": sock_path})
        ctrl_in_r, ctrl_in_w = os.pipe()
        ctrl_out_r, ctrl_out_w = os.pipe()
        life_r, life_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        child_fds = (ctrl_in_r, ctrl_out_w, life_r, token_fd)
        pid = os.fork()
        if pid == 0:
            try:
                os.setsid()
                null = os.open(os.devnull, os.O_RDONLY)
                os.dup2(null, 0)
                os.dup2(out_w, 1)
                os.dup2(err_w, 2)
                for fd in child_fds:
                    os.set_inheritable(fd, True)
                keep = set(child_fds) | {0, 1, 2}
                for fd in (ctrl_in_w, ctrl_out_r, life_w, out_r, err_r, out_w, err_w, null, listener.fileno()):
                    if fd not in keep:
                        try:
                            os.close(fd)
                        except OSError:
                            pass
                python = setup.get("python") or sys.executable
                os.execve(python, [python, driver, str(ctrl_in_r), str(ctrl_out_w), str(life_r)], env)
            except BaseException as exc:
                os.write(2, ("hermes-remote: cannot start the kernel: %s\n" % exc).encode())
            os._exit(127)
        self.pid = pid
        for fd in (ctrl_in_r, ctrl_out_w, life_r, out_w, err_w, token_fd):
            os.close(fd)
        self.ctrl_in = ctrl_in_w
        self.life = life_w  # held: closing it (our exit) tells the driver's watchdog
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, lambda *_: self.stop())
        reader = threading.Thread(target=self.pump_host, name="hermes-host")
        reader.daemon = True
        reader.start()
        streams = {out_r: "O", err_r: "E", ctrl_out_r: "C"}
        try:
            self.pump_kernel(streams, listener)
        finally:
            code = _wait(pid)
            _kill_group(pid, signal.SIGKILL)
            self.send("Z", 0, str(code).encode())
            try:
                import shutil
                shutil.rmtree(folder, ignore_errors=True)
            except Exception:
                pass
        return 0

    def stop(self):
        if self.pid:
            _kill_group(self.pid, signal.SIGKILL)

    def operate(self, data):
        import base64
        try:
            request = json.loads(data.decode("utf-8"))
            if request["spec"].get("op") == "memory":  # the kernels pane's memory column
                answer, out = {"rss": _resident(self.pid)}, b""
            else:
                answer, out = operate(request["spec"], base64.b64decode(request.get("data") or ""))
        except Exception as exc:  # a malformed request: answered, never the kernel's end
            request = request if isinstance(locals().get("request"), dict) else {}
            answer, out = {"error": "bad file request: %s" % exc, "errno": ""}, b""
        reply = {"id": request.get("id"), "answer": answer, "data": base64.b64encode(out).decode("ascii")}
        self.send("F", 0, json.dumps(reply).encode("utf-8"))

    def pump_host(self):
        """Frames from the host: control lines, tool replies, interrupts. EOF: kill it all."""
        try:
            while True:
                frame = self.read_frame()
                if frame is None:
                    break
                kind, channel, data = frame
                if kind == "C":
                    _write_all(self.ctrl_in, data)
                elif kind == "R":  # on the channel's own writer: a script not reading stalls only it
                    writer = self.writers.get(channel)
                    if writer is not None:
                        writer.put(data)
                elif kind == "X":  # hermes-tui closed it: after what is queued, so is the script's end
                    writer = self.writers.get(channel)
                    if writer is not None:
                        writer.put(b"")
                elif kind == "F":  # a file operation of a tool call, beside the kernel
                    worker = threading.Thread(target=self.operate, args=(data,), name="hermes-file")
                    worker.daemon = True
                    worker.start()
                elif kind == "I":
                    _kill_group(self.pid, signal.SIGINT)
                elif kind == "K":
                    break
        except OSError:
            pass
        self.stop()

    def pump_kernel(self, streams, listener):
        """Output, control replies and tool requests from the kernel, to the host, until the
        driver's output pipes close."""
        open_streams = dict(streams)
        while open_streams:
            watched = list(open_streams) + [listener] + list(self.channels)
            try:
                ready, _, _ = select.select(watched, [], [])
            except InterruptedError:
                continue
            for item in ready:
                if item is listener:
                    try:
                        sock, _ = listener.accept()
                    except OSError:
                        continue
                    number = self.next_channel
                    self.next_channel += 1
                    self.channels[sock] = number
                    self.by_number[number] = sock
                    self.writers[number] = _Writer(sock)
                elif item in self.channels:
                    number = self.channels[item]
                    try:
                        data = item.recv(CHUNK)
                    except OSError:
                        data = b""
                    if data:
                        self.send("R", number, data)
                    else:
                        del self.channels[item]
                        del self.by_number[number]
                        self.writers.pop(number).put(None)  # it closes the socket when done
                        self.send("X", number)
                else:
                    data = os.read(item, CHUNK)
                    if data:
                        self.send(open_streams[item], 0, data)
                    else:
                        del open_streams[item]
                        os.close(item)


def read_spec():
    """The spec, from stdin: ten ASCII digits of length, then that much JSON (never in argv,
    where any process could read it). None if stdin ended first."""
    size = _read_exact(0, 10)
    if size is None:
        return None
    data = _read_exact(0, int(size))
    return None if data is None else json.loads(data.decode("utf-8"))


def main():
    spec = read_spec()
    if spec is None:
        return 3
    # Whatever the login shell printed before this (a banner from ~/.bashrc) ends here, on
    # stdout and stderr both: the host drops everything up to this line.
    _write_all(1, spec["hello"].encode("ascii") + b"\n")
    _write_all(2, spec["hello"].encode("ascii") + b"\n")
    mode = spec.get("mode")
    if mode == "kernel":
        return Kernel(spec).serve()
    if mode == "run":
        return run_command(spec)
    return file_op(spec)
