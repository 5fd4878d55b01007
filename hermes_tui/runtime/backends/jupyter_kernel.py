"""What runs inside a Jupyter kernel (ipykernel) for hermes-tui: the script runner, the
variables view and the tool calls' far end.

Loaded by the relay's setup cell as the module ``__hermes_jupyter__`` (never a file there);
stdlib only, Python 3.8 syntax. The relay (``jupyter_relay.py``) sends each script as a cell
that calls :func:`run`, so a script runs as in the local driver: in ``__main__``'s namespace,
under its own file name, its traceback in Python's own shape (no IPython colours), one
KeyboardInterrupt per interrupt; what it did comes back in the execute reply's
``user_expressions`` (:func:`outcome`).

Tool calls travel over the kernel protocol's stdin channel (``input_request`` /
``input_reply``): the ``hermes_tools`` stub asks with a prompt starting :data:`TOOL`, and the
reply is hermes-tui's answer, or a file operation or a command to do here first
(:data:`FAR`), whose result goes back as the next prompt (:data:`FAR_DONE`).
"""

import ast
import base64
import json
import signal
import sys
import threading
import time

TOOL = "\x1ehermes-tool\x1f"
"""A prompt carrying one tool request (the JSON line of the socket protocol, token in it)."""
FAR = "\x1ehermes-far\x1f"
"""A reply asking for a file operation or a command here before the tool's answer."""
FAR_DONE = "\x1ehermes-far-done\x1f"
"""A prompt carrying a far operation's result (and waiting for what comes next)."""
_CO_COROUTINE = 0x80
_HIDDEN = set()  # type: set[str]
"""File names of frames a traceback does not show (this module's, the stub's)."""


class _State(object):
    last = None  # type: dict[str, object] | None
    """The last script's outcome."""
    interruptible = False
    """A script runs: the next SIGINT raises KeyboardInterrupt in it (once)."""
    loop = None  # type: object
    """The event loop of scripts with top-level await (made on first need)."""


_state = _State()
_ask_lock = threading.Lock()


def _ask(prompt):
    """One input_request with ``prompt``; the reply's text. Raises RuntimeError when the kernel
    cannot ask (a thread whose script has ended)."""
    try:
        from ipykernel.kernelbase import Kernel
        kernel = Kernel.instance()
        return kernel.raw_input(prompt)
    except Exception as exc:
        if type(exc).__name__ == "StdinNotImplementedError":
            raise RuntimeError("tool called when no script is running (from a thread it left behind)")
        raise


def call(line):
    """Send one tool request line; do what hermes-tui asks here meanwhile; return its reply line."""
    with _ask_lock:
        reply = _ask(TOOL + line)
        while reply.startswith(FAR):
            reply = _ask(FAR_DONE + far(reply[len(FAR):]))
        return reply


def far(text):
    """Do one far operation (``{"id", "spec", "data"}``): a file operation of remote.py's
    ``operate``, a ``run`` (terminal()), or ``memory``; its reply as JSON text."""
    remote = sys.modules.get("__hermes_remote__")
    request = {}
    try:
        request = json.loads(text)
        spec = request["spec"]
        data = base64.b64decode(request.get("data") or "")
        if spec.get("op") == "run":
            answer, out = run_captured(spec)
        elif spec.get("op") == "memory":
            answer, out = {"rss": _rss()}, b""
        elif remote is None:
            answer, out = {"error": "hermes-tui's far end is not loaded in this kernel", "errno": ""}, b""
        else:
            answer, out = remote.operate(spec, data)
    except KeyboardInterrupt:
        raise
    except Exception as exc:
        answer, out = {"error": "bad far request: %s" % exc, "errno": ""}, b""
    return json.dumps({"id": request.get("id") if isinstance(request, dict) else None, "answer": answer,
                       "data": base64.b64encode(out).decode("ascii")})


def far_json(encoded):
    """:func:`far` for a request sent as a user expression (base64 of its JSON): the kernel is idle."""
    return far(base64.b64decode(encoded).decode("utf-8"))


def _rss():
    try:
        import os
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def run_captured(spec):
    """A command (``argv``) in its own session in ``cwd``, stderr merged into stdout, killed with
    its group after ``timeout`` seconds or on interrupt; its first and last ``keep`` bytes kept
    (the total counted): ({"exit_code", "timed_out", "total", "cut"}, output)."""
    import os
    import subprocess
    keep = int(spec.get("keep", 8 << 20))
    cwd = spec.get("cwd") or None
    env = dict(os.environ)
    env.update({k: v for k, v in (spec.get("env") or {}).items() if isinstance(v, str)})
    try:
        child = subprocess.Popen(spec["argv"], cwd=os.path.expanduser(cwd) if cwd else None, env=env,
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 start_new_session=True)
    except OSError as exc:
        return {"exit_code": 126 if cwd else 127, "error": "%s: %s" % (cwd or spec["argv"][0], exc.strerror or exc)}, b""
    head, tail, total = bytearray(), bytearray(), [0]
    deadline = time.monotonic() + float(spec.get("timeout") or 180)
    timed_out = False

    def read():
        while True:
            piece = os.read(out, 1 << 16)
            if not piece:
                return
            total[0] += len(piece)
            room = keep - len(head)
            if room > 0:
                head.extend(piece[:room])
                piece = piece[room:]
            if piece:
                tail.extend(piece)
                if len(tail) > keep:
                    del tail[:len(tail) - keep]

    out = child.stdout.fileno() if child.stdout is not None else -1
    reader = threading.Thread(target=read, name="hermes-run")
    reader.daemon = True
    reader.start()
    try:
        while child.poll() is None:
            if time.monotonic() > deadline:
                timed_out = True
                break
            time.sleep(0.01)
    finally:  # a timeout, an interrupt: the command and what it started end
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except OSError:
            pass
        child.wait()
        reader.join(2)
    code = child.returncode
    code = 128 - code if code < 0 else code
    return {"exit_code": code, "timed_out": timed_out, "total": total[0], "cut": total[0] > len(head) + len(tail)}, \
        bytes(head) + bytes(tail)


# -- scripts ------------------------------------------------------------------------------

def _on_sigint(signum, frame):
    """As the local driver: the first SIGINT of a script raises KeyboardInterrupt in it, later
    ones (the host repeats them until the script ends) do not interrupt its cleanup."""
    if _state.interruptible:
        _state.interruptible = False
        raise KeyboardInterrupt


def _namespace():
    shell = _shell()
    return shell.user_ns if shell is not None else sys.modules["__main__"].__dict__


def _shell():
    """IPython's shell of this kernel (None outside IPython)."""
    try:
        from IPython import get_ipython
        return get_ipython()
    except ImportError:
        return None


def run(encoded, filename, display=False):
    """Run one script (base64 of its UTF-8 source) as the local driver does; its outcome is
    kept for :func:`outcome`."""
    started = time.perf_counter()
    status, error, exit_code = "ok", None, None
    previous = None
    try:
        previous = signal.signal(signal.SIGINT, _on_sigint)
    except ValueError:  # not the main thread: the kernel's own handler stays
        previous = None
    try:
        source = base64.b64decode(encoded).decode("utf-8")
        import linecache
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        _state.interruptible = True
        try:
            _execute(source, filename, display)
        finally:
            _state.interruptible = False
    except SystemExit as exc:
        status, exit_code = "exit", _exit_code(exc)
    except BaseException as exc:
        status, error = "error", _summary(exc)
        _print_traceback(exc)
    finally:
        if previous is not None:
            # Not IPython's handler back: the host repeats SIGINT until the reply comes, and one
            # landing before it is sent would lose the outcome. The kernel's own after-hook puts
            # its handler back once the request is done.
            try:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
            except (ValueError, TypeError):
                pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    _state.last = {"status": status, "error": error, "exit_code": exit_code,
                      "duration": time.perf_counter() - started}


def outcome():
    """The last script's outcome as JSON text (asked in the same execute request)."""
    return json.dumps(_state.last)


def _execute(source, filename, display):
    flags = getattr(ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0)
    last = None
    tree = compile(source, filename, "exec", flags=flags | ast.PyCF_ONLY_AST, dont_inherit=True)
    if display and tree.body and isinstance(tree.body[-1], ast.Expr):
        last = compile(ast.Expression(tree.body.pop().value), filename, "eval", flags=flags, dont_inherit=True)
    code = compile(tree, filename, "exec", flags=flags, dont_inherit=True)
    _run(code)
    if last is not None:
        value = _run(last)
        if value is not None:
            import builtins
            setattr(builtins, "_", value)
            print(repr(value))


def _run(code):
    namespace = _namespace()
    if code.co_flags & _CO_COROUTINE:  # top-level await: on a loop of its own, in a thread
        result = {}

        def work():
            import asyncio
            loop = _state.loop
            if not isinstance(loop, asyncio.AbstractEventLoop) or loop.is_closed():
                loop = _state.loop = asyncio.new_event_loop()
            try:
                result["value"] = loop.run_until_complete(eval(code, namespace))
            except BaseException as exc:
                result["error"] = exc

        worker = threading.Thread(target=work, name="hermes-await")
        worker.daemon = True
        worker.start()
        while worker.is_alive():
            worker.join(0.05)
        if "error" in result:
            raise result["error"]
        return result.get("value")
    return eval(code, namespace)


def _summary(exc):
    """One line, as the local driver says it ('ValueError: boom')."""
    return sys.modules["__hermes_driver__"].Driver._summary(exc)


def _exit_code(exc):
    """sys.exit's argument as an exit code, as the local driver reads it."""
    return sys.modules["__hermes_driver__"].Driver._exit_code(None, exc)


def _print_traceback(exc):
    sys.modules["__hermes_driver__"].print_user_traceback(exc, _HIDDEN, sys.stderr)


# -- the variables view -------------------------------------------------------------------

class _Namespace(object):
    pass


def answer(op, text=""):
    """``names``, ``inspect`` or ``complete`` (of ``text``) as the local driver answers them,
    as JSON text."""
    lib = sys.modules.get("__hermes_driver__")
    if lib is None:
        return "[]"
    holder = _Namespace()
    namespace = _namespace()
    shell = _shell()
    if shell is not None:  # IPython's own names (In, Out, exit, get_ipython...) are not the script's
        hidden = shell.user_ns_hidden
        namespace = dict((k, v) for k, v in namespace.items() if k not in hidden and k not in ("_", "__", "___"))
    holder.__dict__ = namespace
    if op == "complete":
        return json.dumps(lib.complete(text, holder.__dict__))
    driver = object.__new__(lib.Driver)
    driver.module = holder
    driver.inspecting = False
    return json.dumps(driver.names() if op == "names" else driver.inspect())


def install(info):
    """Called by the setup cell once the modules are loaded: hides their frames, enters the
    working dir and says where the kernel is (JSON text)."""
    import os
    if isinstance(info, str):
        info = json.loads(info)
    for name in ("__hermes_jupyter__", "__hermes_tools_source__", "__hermes_remote__", "__hermes_driver__"):
        _HIDDEN.add("<%s>" % name)
    cwd = info.get("cwd")
    error = None
    if cwd:
        try:
            os.chdir(os.path.expanduser(cwd))
        except OSError as exc:
            error = "working directory %s: %s" % (cwd, exc.strerror or exc)
    if os.getcwd() not in sys.path:
        sys.path.insert(1, os.getcwd())
    for name, value in (info.get("env") or {}).items():
        os.environ[name] = value
    return json.dumps({"pid": os.getpid(), "python": sys.version.split()[0], "executable": sys.executable,
                       "cwd": os.getcwd(), "home": os.path.expanduser("~"), "error": error})
