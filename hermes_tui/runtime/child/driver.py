"""hermes-tui kernel driver: runs scripts one after another in a persistent ``__main__``.

Staged into the kernel's directory and run BY PATH with the user's interpreter, which may not
have hermes_tui installed: stdlib only, and Python 3.8 syntax.

Usage (the host starts it):  python driver.py CTRL_IN CTRL_OUT LIFELINE

* CTRL_IN  (read):  one JSON request per line from the host.
* CTRL_OUT (write): one JSON reply per line to the host.
* LIFELINE (read):  never written; EOF means the host is gone.

The script's output is not sent here: fd 1 and fd 2 are pipes the host reads directly, so
output of C code and subprocesses is captured too. When a script ends, the driver writes the
request's end marker to fd 1 and fd 2, then the reply; bytes after a marker never belong to
that script.
"""

import ast
import builtins
import json
import linecache
import os
import signal
import sys
import time
import traceback
import types

TYPE_CHECKING = False  # mypy takes this name as true; nothing imports typing at run time
if TYPE_CHECKING:
    from typing import Any

_KEEP_CELLS_IN_LINECACHE = 200
_CO_COROUTINE = 0x0080
_INSPECT_SECONDS = 1.0
"""Time the variables view may spend in the script's __repr__/__len__/__sizeof__ in all."""
_TYPE_QUALNAME = type.__dict__["__qualname__"].__get__
"""A class's __qualname__ read straight from the type object: no metaclass code runs."""
_HIDDEN_FILES = frozenset(
    os.path.join(folder, name)
    for folder in (os.path.dirname(__file__), os.path.dirname(os.path.abspath(__file__)),
                   os.path.dirname(os.path.realpath(__file__)))
    for name in (os.path.basename(__file__), "hermes_tools.py")
)
"""Frames of these files (the driver, the staged tool module) are not the user's code."""


_COMPLETE_LIMIT = 500
"""Completions sent at most (the popup shows fewer; a one-letter prefix can match thousands)."""
_SCAN_LIMIT = 20000
"""Directory entries looked at, at most, to complete a path (a huge folder stays quick);
five times as many keys of a dict."""
_LINE_LIMIT = 4000
"""Characters of the line read, from its end."""
_MISSING = object()
_MRO = type.__dict__["__mro__"].__get__
_CLASS_DICT = type.__dict__["__dict__"].__get__
# vars(ModuleType) is ModuleType.__dict__ (typeshed types that name as the instances' property)
_MODULE_DICT = vars(types.ModuleType)["__dict__"].__get__
_STATIC_FUNC = staticmethod.__dict__["__func__"].__get__
_CLASS_FUNC = classmethod.__dict__["__func__"].__get__
_PLAIN_GETATTRIBUTE = (object.__dict__["__getattribute__"], vars(types.ModuleType)["__getattribute__"])
_NAME = r"[^\W\d]\w*"


def _is_in(item, items):
    """``item in items`` by identity (``in`` would call ``__eq__``, a metaclass's too)."""
    for each in items:
        if each is item:
            return True
    return False


def _mro(cls):
    """The classes ``cls`` looks attributes up in, read from the type object (no metaclass code)."""
    try:
        return _MRO(cls)
    except Exception:
        return ()


def _class_dicts(cls):
    found = []
    for klass in _mro(cls):
        try:
            found.append(_CLASS_DICT(klass))
        except Exception:
            pass
    return found


def _get(mapping, name):
    """``mapping[name]`` comparing str keys only: a key of the script's own type never has its
    ``__eq__`` called (a plain lookup would call it on a hash collision)."""
    try:
        for key, value in list(mapping.items()):
            if type(key) is str and key == name:
                return value
    except Exception:
        pass
    return _MISSING


def _lookup(classes, name):
    for klass in classes:
        try:
            value = _get(_CLASS_DICT(klass), name)
        except Exception:
            continue
        if value is not _MISSING:
            return value
    return _MISSING


def _own_dict(obj):
    """The instance ``__dict__`` of ``obj`` when reading it runs no code of the script: a
    module's, or an instance's whose class keeps the standard ``__getattribute__`` and
    ``__dict__`` (read through the C descriptor, never a property); else None."""
    classes = _mro(type(obj))
    try:
        if _is_in(types.ModuleType, classes):
            found = _MODULE_DICT(obj)
        elif _is_in(type, classes):
            return None  # a class: its attributes are in its own MRO's dicts
        else:
            if not _is_in(_lookup(classes, "__getattribute__"), _PLAIN_GETATTRIBUTE):
                return None
            descriptor = _lookup(classes, "__dict__")
            if type(descriptor) is not types.GetSetDescriptorType:
                return None
            found = descriptor.__get__(obj, type(obj))
    except Exception:
        return None
    return found if type(found) is dict else None


def _plain(value):
    """A class attribute as reading it gives it, when no code of the script runs to get it:
    a function, a staticmethod's or classmethod's function, or a value that is no descriptor
    (a class, a module, a constant). A property or another descriptor: _MISSING."""
    kind = type(value)
    if kind is staticmethod:
        return _STATIC_FUNC(value)
    if kind is classmethod:
        return _CLASS_FUNC(value)
    if kind is types.FunctionType or _lookup(_mro(kind), "__get__") is _MISSING:
        return value
    return _MISSING


def static_getattr(obj, name):
    """``obj.name`` found by static lookups only (as ``inspect.getattr_static``, stricter):
    a module's dict, an instance's dict, the dicts of its class's MRO. No ``__getattr__``,
    ``__getattribute__`` override, property or descriptor of the script runs: what only they
    would give is _MISSING. Slots (member descriptors) are read, in C."""
    classes = _mro(type(obj))
    if _is_in(type, classes):  # a class: its MRO, then its metaclass's
        value = _lookup(_mro(obj), name)
        if value is _MISSING:
            value = _lookup(classes, name)
        return _MISSING if value is _MISSING else _plain(value)
    on_class = _lookup(classes, name)
    if on_class is not _MISSING:
        setter = _lookup(_mro(type(on_class)), "__set__")
        if setter is _MISSING:
            setter = _lookup(_mro(type(on_class)), "__delete__")
        if setter is not _MISSING:  # a data descriptor wins over the instance dict
            if type(on_class) is types.MemberDescriptorType:
                try:
                    return on_class.__get__(obj, type(obj))
                except Exception:
                    return _MISSING
            return _MISSING
    own = _own_dict(obj)
    if own is not None:
        value = _get(own, name)
        if value is not _MISSING:
            return value
    return _MISSING if on_class is _MISSING else _plain(on_class)


def attribute_names(obj):
    """{name: type name} of what ``obj.<Tab>`` offers, by the same static rules: the instance
    dict (when it can be read), then the class's MRO (a class: its own MRO)."""
    classes = _mro(type(obj))
    if _is_in(type, classes):
        dicts = _class_dicts(obj)
    else:
        own = _own_dict(obj)
        dicts = ([own] if own is not None else []) + _class_dicts(type(obj))
    found = {}
    for mapping in dicts:
        try:
            items = list(mapping.items())
        except Exception:
            continue
        for key, value in items:
            if type(key) is str and key not in found:
                found[key] = _TYPE_QUALNAME(type(value))
    return found


def _resolve(path, namespace):
    """The object a dotted name (``a.b.c``) stands for, by static lookups; _MISSING."""
    names = path.split(".")
    value = _get(namespace, names[0])
    if value is _MISSING:
        value = _get(builtins.__dict__, names[0])
    for name in names[1:]:
        if value is _MISSING:
            break
        value = static_getattr(value, name)
    return value


def open_string(line):
    """(start, quote, prefix) of a string literal left open at the end of ``line``: where its
    text starts, its quote, its prefix letters (``b``, ``rb``...); None outside a string."""
    index, size = 0, len(line)
    while index < size:
        char = line[index]
        if char == "#":
            return None
        if char in "'\"":
            quote = char * 3 if line.startswith(char * 3, index) else char
            start = index
            while start > 0 and index - start < 2 and line[start - 1] in "rRbBuUfF":
                start -= 1
            if start > 0 and (line[start - 1].isalnum() or line[start - 1] == "_"):
                start = index  # the end of a name, not a prefix
            prefix = line[start:index]
            at = index + len(quote)
            while at < size and not line.startswith(quote, at):
                at += 2 if line[at] == "\\" else 1
            if at >= size:
                return index + len(quote), quote, prefix
            index = at + len(quote)
            continue
        index += 1
    return None


def _literal(key, quote):
    """The text of ``key`` (a str or bytes) between ``quote``s, escaped as Python needs."""
    text = repr(key)
    if type(key) is bytes:
        text = text[1:]
    body, out, index = text[1:-1], [], 0
    while index < len(body):
        char = body[index]
        if char == "\\":
            pair = body[index:index + 2]
            out.append(pair[1] if len(pair) == 2 and pair[1] in "'\"" and pair[1] != quote else pair)
            index += 2
            continue
        out.append("\\" + char if char == quote else char)
        index += 1
    return "".join(out)


def _keys(container, prefix, quote, string_prefix, limit):
    """The keys of an exact dict offered after ``d[`` (literals) or ``d["`` (text of str keys,
    or of bytes keys after ``d[b"``). Keys that are not str, bytes or int are left out."""
    found = []  # type: list[dict[str, object]]
    want = bytes if "b" in string_prefix.lower() else str
    try:
        for count, (key, value) in enumerate(dict.items(container)):
            if count >= _SCAN_LIMIT * 5 or len(found) >= limit:
                break
            _key_into(found, key, value, prefix, quote, want)
    except Exception:  # changed size meanwhile (a thread of the script): what was found
        pass
    return found


def _key_into(found, key, value, prefix, quote, want):
    """One key of the dict, when it is offered: added to ``found``."""
    kind = type(key)
    if quote:
        if kind is not want:
            return
        text = _literal(key, quote[0])
    elif kind is str or kind is bytes or kind is int:
        text = repr(key)  # str, bytes and int reprs run no code of the script
    else:
        return
    if text.startswith(prefix):
        found.append({"name": text, "type": _TYPE_QUALNAME(type(value)), "replace": len(prefix),
                      "close": quote[:1] + "]"})


def _paths(typed, quote, limit):
    """Files and folders (with a trailing ``/``) whose path starts with ``typed``, from this
    process's working dir (``~/`` is the kernel's home); names needing escapes, or holding a
    character that is not printable (control, bidi), are left out."""
    real = os.path.expanduser(typed) if typed.startswith("~/") else typed
    folder, partial = os.path.split(real)
    shown = typed[:len(typed) - len(partial)]
    found = []  # type: list[dict[str, Any]]
    try:
        with os.scandir(folder or ".") as entries:
            for count, entry in enumerate(entries):
                if count >= _SCAN_LIMIT or len(found) >= limit:
                    break
                name = entry.name
                if not name.startswith(partial) or (name.startswith(".") and not partial.startswith(".")):
                    continue
                if quote[0] in name or "\\" in name or not name.isprintable():
                    continue  # an ESC or a bidi control typed into the input would reach the terminal
                try:
                    folder_entry = entry.is_dir()
                except OSError:
                    folder_entry = False
                found.append({"name": shown + name + ("/" if folder_entry else ""),
                              "type": "folder" if folder_entry else "file", "replace": len(typed)})
    except OSError:
        return []
    found.sort(key=lambda item: item["name"].lower())
    return found


def complete(line, namespace, limit=_COMPLETE_LIMIT):
    """What Tab offers at the end of ``line`` (the input left of the cursor), from
    ``namespace``, running none of the script's code: after ``a.b.`` the attributes of what
    ``a.b`` is by static lookups; in ``d["`` (or ``d[``) the keys of an exact dict; in another
    string, paths. Each: ``name`` (what replaces the last ``replace`` characters), ``type``,
    and ``close`` (put after it when nothing closes the subscript yet)."""
    import re

    line = line[-_LINE_LIMIT:]  # a pasted megabyte on one line: its end is what is completed
    opened = open_string(line)
    if opened is not None:
        start, quote, prefix = opened
        typed = line[start:]
        before = line[:start - len(quote) - len(prefix)]
        match = re.search(r"(?<![\w.)\]}'\"])(%s(?:\.%s)*)\[$" % (_NAME, _NAME), before)
        if match:
            container = _resolve(match.group(1), namespace)
            return _keys(container, typed, quote, prefix, limit) if type(container) is dict else []
        return _paths(typed, quote, limit)
    match = re.search(r"(?<![\w.)\]}'\"])(%s(?:\.%s)*)\[$" % (_NAME, _NAME), line)
    if match:
        container = _resolve(match.group(1), namespace)
        return _keys(container, "", "", "", limit) if type(container) is dict else []
    match = re.search(r"(?<![\w.)\]}'\"])(%s(?:\.%s)*)\.(\w*)$" % (_NAME, _NAME), line)
    if not match:
        return []
    value = _resolve(match.group(1), namespace)
    if value is _MISSING:
        return []
    partial = match.group(2)
    private = partial.startswith("_")
    found = [{"name": name, "type": kind, "replace": len(partial)}
             for name, kind in attribute_names(value).items()
             if name.startswith(partial) and name.isidentifier() and (private or not name.startswith("_"))]
    found.sort(key=lambda item: item["name"].lower())
    return found[:limit]


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _start_watchdog(lifeline_fd):
    """Fork a tiny process that kills the whole kernel group when the host goes away.

    A separate process, so that it acts even while the kernel's main thread holds the GIL in
    a long C call, and so that the script's own grandchildren (same process group) go too.
    """
    pid = os.fork()
    if pid:
        os.close(lifeline_fd)
        return
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        for fd in range(0, 3):
            try:
                os.close(fd)
            except OSError:
                pass
        while True:
            try:
                if not os.read(lifeline_fd, 4096):
                    break
            except InterruptedError:
                continue
            except OSError:
                break
        os.killpg(0, signal.SIGKILL)
    finally:
        os._exit(0)


def print_user_traceback(exc, hidden, stream):
    """``exc``'s traceback in Python's own shape on ``stream``, without the frames of the files
    in ``hidden`` (hermes-tui's own; the Jupyter kernel's runner uses it too)."""
    kept = []
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename not in hidden:
            kept.append(tb)
        tb = tb.tb_next
    tb = None
    try:
        for frame in reversed(kept):
            tb = types.TracebackType(tb, frame.tb_frame, frame.tb_lasti, frame.tb_lineno)
    except TypeError:  # an interpreter that cannot build one: the first user frame onward
        tb = kept[0] if kept else None
    try:
        traceback.print_exception(type(exc), exc, tb, file=stream)
    except Exception:
        pass


class Driver(object):
    def __init__(self, ctrl_in, ctrl_out):
        self.requests = os.fdopen(ctrl_in, "rb")
        self.ctrl_out = ctrl_out
        self.module = types.ModuleType("__main__")
        self.module.__dict__["__builtins__"] = builtins
        self.cells = []
        self.loop = None
        self.interruptible = False
        """A script runs: the next SIGINT raises KeyboardInterrupt in it (once)."""
        self.inspecting = False
        """The variables view is being gathered: the next SIGINT cuts it short (once)."""
        # Private copies of the output pipes: end markers always reach the host, and a
        # script that closes fd 1 or 2 gets them back for the next script.
        self.pipes = (os.dup(1), os.dup(2))

    def reply(self, **message):
        _write_all(self.ctrl_out, (json.dumps(message) + "\n").encode("utf-8"))

    def serve(self):
        self.reply(op="ready", pid=os.getpid(), python=sys.version.split()[0],
                   executable=sys.executable, cwd=os.getcwd(), home=os.path.expanduser("~"))
        while True:
            line = self.requests.readline()
            if not line:
                return 0
            try:
                request = json.loads(line.decode("utf-8"))
                op = request.get("op")
            except Exception:  # not the host's: ignored, the kernel serves on
                continue
            if op == "exec":
                exit_code = self.run_cell(request)
                if exit_code is not None:
                    return exit_code
            elif op in ("inspect", "names"):
                # Both answer as "inspect" (the host routes replies of that op by id).
                try:
                    found = self.names() if op == "names" else self.inspect()
                except BaseException:  # never the kernel's end: an empty answer
                    found = []
                self.reply(op="inspect", id=request.get("id"), variables=found)
            elif op == "complete":  # answers as "inspect" too
                try:
                    found = complete(str(request.get("text", "")), self.module.__dict__)
                except BaseException:
                    found = []
                self.reply(op="inspect", id=request.get("id"), variables=found)

    def _user_items(self):
        """(name, value) of the user's names: no user code runs (a non-str key is skipped)."""
        for name, value in list(self.module.__dict__.items()):
            if type(name) is str and not name.startswith("__"):
                yield name, value

    def names(self, limit=20000):
        """The user's names and the names of their types, for completion and counting: cheap,
        and no code of the script runs (no repr, len or getsizeof; type(v), not v.__class__)."""
        found = []  # type: list[dict[str, Any]]
        for name, value in self._user_items():
            if len(found) >= limit:
                break
            found.append({"name": name, "type": _TYPE_QUALNAME(type(value))})
        found.sort(key=lambda item: item["name"])
        return found

    def inspect(self, limit=500, seconds=_INSPECT_SECONDS):
        """Names, types, short reprs and sizes of the namespace, without changing it.

        The script's __repr__, __len__ and __sizeof__ run here: after ``seconds`` in all (or a
        SIGINT from the host, which gave up waiting) the rest is listed by name and type only."""
        found = []  # type: list[dict[str, Any]]
        try:
            try:
                self.inspecting = True
                self._inspect_into(found, limit, time.monotonic() + seconds)
            finally:
                self.inspecting = False
        except KeyboardInterrupt:  # raised once at most (see on_sigint): what was found so far
            pass
        names = set(item["name"] for item in found)
        for name, value in self._user_items():  # cut short: the rest by name and type only
            if len(found) >= limit:
                break
            if name not in names:
                found.append({"name": name, "type": _TYPE_QUALNAME(type(value)), "repr": "<not shown: too slow>",
                              "size": None, "len": None})
        found.sort(key=lambda item: item["name"])
        return found

    def _inspect_into(self, found, limit, deadline):
        def stop():  # out of time, or the host said so (a SIGINT a __repr__ may have swallowed)
            return not self.inspecting or time.monotonic() > deadline

        for name, value in self._user_items():
            if len(found) >= limit or stop():
                return
            kind = type(value)
            qualname = _TYPE_QUALNAME(kind)
            try:
                text = repr(value)
                if type(text) is not str:
                    text = "<repr failed>"
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # even SystemExit from a __repr__ is the script's, not the kernel's
                text = "<repr failed: %s>" % _TYPE_QUALNAME(type(exc))
            if len(text) > 120:
                text = text[:117] + "..."
            size = length = None
            try:
                if not stop():
                    size = sys.getsizeof(value)
                if not stop() and not issubclass(kind, (type, types.ModuleType)):
                    length = len(value)
            except KeyboardInterrupt:
                raise
            except BaseException:
                pass
            try:
                module = kind.__module__
                if type(module) is not str:
                    module = "?"
            except KeyboardInterrupt:
                raise
            except BaseException:
                module = "?"
            found.append({"name": name, "type": qualname if module == "builtins" else "%s.%s" % (module, qualname),
                          "repr": text, "size": size, "len": length})

    def on_sigint(self, signum, frame):
        """SIGINT (the host's interrupt, like Ctrl+C): KeyboardInterrupt in the running script;
        between scripts it is ignored, so the kernel and its namespace live on.

        The host repeats SIGINT until the script ends (one may land before the script starts):
        only the first one that lands in a script raises; the others are ignored, so cleanup
        code of a script that caught it is not interrupted again by the same interrupt."""
        if self.interruptible or self.inspecting:
            self.interruptible = self.inspecting = False
            raise KeyboardInterrupt

    def run_cell(self, request):
        """Run one script; returns an exit code when the script asked the kernel to end."""
        number = request.get("cell", len(self.cells) + 1)
        filename = request.get("filename") or "<cell %d>" % number  # exec FILE: the file's name
        source = request["code"]
        self._remember_source(filename, source)
        status, error, exit_code = "ok", None, None
        started = time.perf_counter()
        try:
            self.interruptible = True
            try:
                self._execute(source, filename, bool(request.get("display")))
            finally:
                self.interruptible = False
        except SystemExit as exc:
            status, exit_code = "exit", self._exit_code(exc)
        except BaseException as exc:  # the script's failure is a result, never the kernel's
            status = "error"
            error = self._summary(exc)
            self._print_traceback(exc)
        duration = time.perf_counter() - started
        markers = self._end_output(request["marker"].encode("ascii"))
        self.reply(op="done", id=request["id"], status=status, error=error,
                   exit_code=exit_code, duration=duration, markers=markers)
        return exit_code if status == "exit" else None

    def _execute(self, source, filename, display=False):
        flags = getattr(ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0)
        last = None
        if display:  # as the REPL: a last bare expression's value goes through sys.displayhook
            tree = compile(source, filename, "exec", flags=flags | ast.PyCF_ONLY_AST, dont_inherit=True)
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = compile(ast.Expression(tree.body.pop().value), filename, "eval", flags=flags,
                               dont_inherit=True)
            code = compile(tree, filename, "exec", flags=flags, dont_inherit=True)
        else:
            code = compile(source, filename, "exec", flags=flags, dont_inherit=True)
        self._run(code)
        if last is not None:
            value = self._run(last)
            if value is not None:
                sys.displayhook(value)

    def _run(self, code):
        namespace = self.module.__dict__
        if code.co_flags & _CO_COROUTINE:
            return self._event_loop().run_until_complete(eval(code, namespace))
        return eval(code, namespace)

    def _event_loop(self):
        if self.loop is None or self.loop.is_closed():
            import asyncio  # only for scripts that use top-level await

            self.loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self.loop)
        return self.loop

    def _remember_source(self, filename, source):
        # Registered so tracebacks show the script's lines; bounded so a long session stays small.
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        self.cells.append(filename)
        while len(self.cells) > _KEEP_CELLS_IN_LINECACHE:
            linecache.cache.pop(self.cells.pop(0), None)

    @staticmethod
    def _summary(exc):
        """One line: 'ValueError: boom', 'SyntaxError: invalid syntax (<cell 2>, line 1)'."""
        kind = type(exc)
        name = kind.__qualname__
        if kind.__module__ not in ("builtins", "__main__"):
            name = "%s.%s" % (kind.__module__, name)
        try:
            message = str(exc)
        except Exception:
            message = "<unprintable %s>" % name
        line = "%s: %s" % (name, message) if message else name
        return line.splitlines()[0] if line else name

    def _exit_code(self, exc):
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        try:
            sys.stderr.write("%s\n" % (code,))
        except Exception:
            pass
        return 1

    def _print_traceback(self, exc):
        # Hide the driver's own frames (where the script was started, and the SIGINT handler
        # an interrupt comes from) and those of the staged hermes_tools module (where a tool
        # call waited): the traceback shows only the user's code.
        print_user_traceback(exc, _HIDDEN_FILES, sys.__stderr__)

    def _end_output(self, marker):
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            if stream is None:  # the process started without it
                continue
            try:
                stream.flush()
            except Exception:
                pass
        written = []
        for fd, pipe in zip((1, 2), self.pipes):
            try:
                os.fstat(fd)
            except OSError:
                try:
                    os.dup2(pipe, fd)
                except OSError:
                    pass
            try:
                _write_all(pipe, marker)
                written.append(True)
            except OSError:
                written.append(False)  # the host must not wait for this marker
        return written


def _undumpable():
    """Other processes of this user (another session's kernel) cannot read this kernel's
    environment or memory through /proc. Linux only; best effort elsewhere."""
    try:
        import ctypes
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except Exception:
        pass


def main(argv):
    ctrl_in, ctrl_out, lifeline = (int(value) for value in argv[1:4])
    _undumpable()
    _start_watchdog(lifeline)
    sys.argv = [""]
    # Tracebacks and prints are UTF-8 whatever the locale; the host decodes UTF-8.
    for stream in (sys.stdout, sys.stderr):
        try:
            # a TextIOWrapper at start (typeshed says TextIO); a replaced stream raises, and is left
            stream.reconfigure(encoding="utf-8", errors="backslashreplace", line_buffering=True)  # type: ignore[union-attr]
        except Exception:
            pass
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(1, cwd)
    driver = Driver(ctrl_in, ctrl_out)
    signal.signal(signal.SIGINT, driver.on_sigint)
    # The script's namespace IS __main__ (pickling and `if __name__ == "__main__"` work);
    # keep this module alive under another name.
    sys.modules["__hermes_driver__"] = sys.modules["__main__"]
    sys.modules["__main__"] = driver.module
    return driver.serve()


if __name__ == "__main__":
    code = main(sys.argv)
    sys.stdout.flush()
    sys.exit(code)
