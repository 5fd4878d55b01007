"""The checks of ``hermes-tui doctor``: plain functions that look and return a :class:`Check`.

Each check says one thing about this machine: ``ok``, ``warn`` (works, but worth knowing) or
``fail`` (something will not work), a one-line ``detail`` and, unless it is ``ok``, the ``fix``.
Nothing here prints, and nothing here changes what it looks at: ``sessions.db`` is opened
read-only, the allowlist and the audit log are opened without writing, a folder's writability
is tried with a temporary file that is removed at once, the sandbox's trial process runs in a
temp dir removed after it, and the kernel check's one execution record is deleted after it.
:func:`run_checks` runs them all (the blocking ones in threads, together with the kernel check,
which is the slow one) and returns them in a fixed order.

Every ``detail`` and ``fix`` may quote text from the config, a file or a server: the caller
escapes it (:func:`hermes_tui.base.text.shown`) before printing.
"""

from __future__ import annotations

import asyncio
import dataclasses
import difflib
import errno
import os
import shutil
import sqlite3
import stat
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Status = Literal["ok", "warn", "fail"]

ENDPOINT_TIMEOUT = 5.0
"""Seconds the model endpoint has to list its models."""
KERNEL_TIMEOUT = 20.0
"""Seconds the kernel check's script may take (kernel start included)."""
FREE_WARN = 1 << 30
"""Less free space than this under ``$HERMES_HOME`` is a warning (1 GiB)..."""
FREE_FAIL = 100 << 20
"""...and less than this a failure (100 MiB)."""
SUN_PATH_MAX = 107
"""Bytes of a Unix socket path (``sun_path`` is 108 with its NUL on Linux)."""
KERNEL_SOCKET_TAIL = "/hermes-tui-XXXXXXXX/standalone-20261129-105416-1a2b3c4d/rpc/hermes.sock"
"""The longest socket path the runtime binds under the temp dir (a standalone process's)."""
INJECT_SOCKET_TAIL = "/.1234567.20261129-142501-3fa2.sock"
"""An inject socket's staged name under ``tui/inject`` (a 7-digit pid, a generated session id)."""


@dataclass(frozen=True, slots=True)
class Check:
    """One line of the report."""

    name: str
    status: Status
    detail: str
    fix: str = ""

    def as_dict(self) -> dict[str, str]:
        """``{"name", "status", "detail", "fix"}``, what ``--json`` prints."""
        return {"name": self.name, "status": self.status, "detail": self.detail, "fix": self.fix}


def ok(name: str, detail: str) -> Check:
    return Check(name, "ok", detail)


def warn(name: str, detail: str, fix: str) -> Check:
    return Check(name, "warn", detail, fix)


def fail(name: str, detail: str, fix: str) -> Check:
    return Check(name, "fail", detail, fix)


def _why(exc: BaseException) -> str:
    return (getattr(exc, "strerror", None) or str(exc) or type(exc).__name__) if isinstance(exc, OSError) \
        else (str(exc) or type(exc).__name__)


# -- config -----------------------------------------------------------------------------------

UNKNOWN_PREFIXES = ("unknown config key ", "unknown config section ")


def check_config(config: Any, refusal: str | None = None) -> Check:
    """The config parsed (it did, or ``main`` would have stopped): where from, and its notices.
    An unknown key (a typo: its setting is not applied) fails; other notices warn. ``refusal``
    (the ``terminal.backend`` line) is left out: it is a problem of its own."""
    source = config.source
    where = str(source) if source else "no config.yaml (the defaults)"
    notices = [n for n in config.notices if n != refusal]
    unknown = [n for n in notices if n.startswith(UNKNOWN_PREFIXES)]
    others = [n for n in notices if n not in unknown]
    if unknown:
        return fail("config", f"{where}: " + "; ".join(unknown),
                    "fix the spelling (or remove the key): an unknown key's setting is not applied")
    if others:
        return warn("config", f"{where}: " + "; ".join(others), "see the notice; edit config.yaml to silence it")
    return ok("config", f"{where}: parses, no unknown keys")


async def _config_failed(error: str) -> Check:
    return fail("config", error, "correct the file (the key path and what is allowed are named); the other "
                                 "checks used the defaults")


def check_config_file(path: Path | None = None) -> Check:
    """Load the config file and say whether it can be used: for a caller that has no loaded
    config (``main`` stops on a config that cannot be read before any command runs)."""
    from hermes_tui.config import ConfigError, load_config

    try:
        config = load_config(path)
    except ConfigError as exc:
        return fail("config", str(exc), "correct the file (the key path and what is allowed are named above)")
    from hermes_tui.config.notes import backend_refusal

    return check_config(config, backend_refusal(config.terminal))


# -- the model --------------------------------------------------------------------------------


def check_model(settings: Any, error: str | None = None) -> Check:
    """A provider is configured and its key is there (where it comes from, never the key)."""
    if error is not None:
        return fail("model", f"not usable: {error}", "correct model.provider / model.base_url in config.yaml (or the flags)")
    if settings is None:
        return warn("model", "no model configured: typed input runs as Python",
                    "set model.provider and model.default in config.yaml to talk to a model")
    label = f"{settings.name} · {settings.model}"
    if settings.missing_key:
        return fail("model", f"{label}: no API key found", f"set {settings.key_source}")
    if settings.key_command is not None or settings.api_key:
        return ok("model", f"{label}; key from {settings.key_source}")
    return ok("model", f"{label}; no key needed here: {settings.key_source}")


async def check_endpoint(settings: Any, *, offline: bool = False, timeout: float = ENDPOINT_TIMEOUT) -> Check | None:
    """The endpoint answers ``GET /models`` within ``timeout`` and lists the model. The request
    is the provider client's own (its origin, its key, nothing else). None without a model."""
    if settings is None:
        return None
    name = "endpoint"
    where = settings.shown_url or settings.name
    if offline:
        return ok(name, f"{where}: not checked (--offline)")
    from hermes_tui.agent.models.providers import ProviderError, make_provider

    probe = dataclasses.replace(settings, fallbacks=[], max_retries=0, timeout=timeout)
    provider = make_provider(probe)
    started = time.monotonic()
    try:
        ids = await asyncio.wait_for(provider.list_models(), timeout)
    except asyncio.TimeoutError:
        return fail(name, f"{where} did not answer within {timeout:g}s",
                    "is the server up and reachable from here? check model.base_url and any proxy")
    except ProviderError as exc:
        status = getattr(exc, "status", None)
        if status == 404:
            return warn(name, f"{where} answered but has no model list (HTTP 404 for /models): "
                              f"{settings.model} was not checked", "nothing to fix if replies work")
        if status in (401, 403):
            return fail(name, str(exc), f"check the key ({settings.key_source})")
        if status is None:
            return fail(name, str(exc).replace("; then /retry.", "."),
                        "start the server, or correct model.base_url (offline? use --offline)")
        return fail(name, f"{where} answered HTTP {status}: {exc}", "see the server's message; try again later")
    except Exception as exc:  # noqa: BLE001 - a diagnosis finishes: anything else is what it found
        return fail(name, f"{where}: {type(exc).__name__}: {exc}", "check model.base_url")
    finally:
        try:
            await provider.aclose()
        except Exception:  # noqa: BLE001 - closing a client that failed: nothing more to say
            pass
    took = f"{(time.monotonic() - started) * 1000:.0f} ms"
    if settings.model in ids:
        return ok(name, f"{where} answered in {took}; {settings.model} is listed")
    close = difflib.get_close_matches(settings.model, ids, n=3)
    hint = f" (close: {', '.join(close)})" if close else ""
    return warn(name, f"{where} answered in {took} but does not list {settings.model} among {len(ids)} models{hint}",
                "check model.default (some servers accept names they do not list)")


# -- HERMES_HOME ------------------------------------------------------------------------------


def _existing(path: Path) -> Path:
    """``path``, or its nearest ancestor that exists (as a file or a folder)."""
    while not os.path.lexists(path) and path.parent != path:
        path = path.parent
    return path


def _try_write(folder: Path) -> str | None:
    """None when a file can be made in ``folder`` (made and removed at once); else why not."""
    try:
        fd, name = tempfile.mkstemp(dir=folder, prefix=".hermes-doctor-")
    except OSError as exc:
        return _why(exc)
    os.close(fd)
    try:
        os.unlink(name)
    except OSError:
        pass
    return None


def check_home(home: Path) -> Check:
    """``$HERMES_HOME`` (and its ``tui/`` folder, if there) can be written; when it does not
    exist yet, the folder it would be made in can."""
    name = "home"
    found = _existing(home)
    if found != home and not found.is_dir():
        return fail(name, f"{home} cannot be made: {found} is a file, not a folder",
                    "point HERMES_HOME at a folder (or move that file away)")
    if found == home and not home.is_dir():
        return fail(name, f"{home} is not a folder", "point HERMES_HOME at a folder (or move that file away)")
    for folder in ([home, home / "tui"] if found == home else [found]):
        if folder.is_dir():
            problem = _try_write(folder)
            if problem is not None:
                return fail(name, f"{folder} is not writable: {problem}",
                            f"make it writable (chown/chmod {folder}) or point HERMES_HOME elsewhere")
    if found != home:
        return ok(name, f"{home} does not exist yet; it can be made in {found}")
    return ok(name, f"{home} is writable")


def check_free_space(home: Path, usage: Callable[[Path], Any] = shutil.disk_usage) -> Check:
    """Free space where ``$HERMES_HOME`` lives: warn under 1 GiB, fail under 100 MiB."""
    from hermes_tui.base.units import human_size

    name = "disk"
    found = _existing(home)
    try:
        free = usage(found).free
    except OSError as exc:
        return warn(name, f"free space under {found} unknown: {_why(exc)}", "check the disk by hand (df -h)")
    text = f"{human_size(free)} free under {found}"
    if free < FREE_FAIL:
        return fail(name, text, "free some space: outputs, records and sessions cannot be written "
                                "(hermes-tui cache prune --max-size 100M helps)")
    if free < FREE_WARN:
        return warn(name, text, "free some space soon (hermes-tui cache prune helps)")
    return ok(name, text)


# -- sessions.db --------------------------------------------------------------------------------


def check_sessions_db(home: Path, config: Any = None) -> Check:
    """The sessions store in use: for SQLite ``PRAGMA quick_check`` and the schema version, the
    database opened read-only (and ``immutable`` when no write-ahead log is there, so no
    ``-wal``/``-shm`` file is made); for PostgreSQL :func:`check_shared_store`."""
    from hermes_tui.storage import opening
    from hermes_tui.storage.choice import store_url
    from hermes_tui.storage.errors import StoreError

    name = "sessions"
    try:
        url = store_url(config, home)
    except StoreError as exc:
        return fail(name, str(exc), "fix store.url / HERMES_TUI_STORE_URL (docs/store.md)")
    if url.kind != "sqlite":
        return check_shared_store(url)
    path = url.path or opening.sessions_db_path(home)
    fix = f"move it aside (mv {path} {path}.broken): a new one is made at the next start; its sessions stay in the old file"
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return ok(name, f"{path}: not created yet")
    except OSError as exc:
        if exc.errno == errno.ENOTDIR:
            return ok(name, f"{path}: not created yet")
        return fail(name, f"{path} cannot be read: {_why(exc)}", "make it readable by this user")
    if not stat.S_ISREG(mode):
        return fail(name, f"{path} is not a regular file", f"remove it (it is no database): rm {path}")
    wal = os.path.exists(f"{path}-wal")
    try:
        db = sqlite3.connect(_uri(path, wal), uri=True, timeout=2)
    except sqlite3.Error as exc:
        return fail(name, f"{path} cannot be opened: {exc}", fix)
    try:
        found = [row[0] for row in db.execute("PRAGMA quick_check").fetchall()]
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'schema_version'").fetchone():
            version = max(version, db.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] or 0)
    except sqlite3.Error as exc:
        return fail(name, f"{path} is damaged or not a database: {exc}", fix)
    finally:
        db.close()
    if found != ["ok"]:
        shown = "; ".join(str(f) for f in found[:3]) + ("; ..." if len(found) > 3 else "")
        return fail(name, f"{path} failed its integrity check: {shown}", fix)
    ours = getattr(opening, "SCHEMA_VERSION", None)
    size = os.stat(path).st_size
    if ours is not None and version > ours:
        return fail(name, f"{path}: schema version {version} is newer than this hermes-tui's ({ours})",
                    "upgrade hermes-tui: this one refuses a store a newer one wrote")
    said = f"schema version {version}" + (f" (this hermes-tui writes {ours})" if ours is not None and version != ours
                                          else "")
    return ok(name, f"{path}: integrity ok, {said}, {size} bytes")


def check_shared_store(url: Any) -> Check:
    """A PostgreSQL store: reached (how long a round trip takes), its schema version and size;
    read only (nothing is migrated), and never the password."""
    import psycopg

    from hermes_tui.storage.opening import SCHEMA_VERSION
    from hermes_tui.storage.postgres import connection_kwargs

    name = "sessions"
    where = url.redacted()
    try:
        with psycopg.connect(url.text, **connection_kwargs(url)) as conn:

            def value(sql: str) -> Any:
                row = conn.execute(sql).fetchone()
                assert row is not None  # SHOW, a SELECT with no FROM and an aggregate return one row
                return row[0]

            started = time.perf_counter()
            conn.execute("SELECT 1").fetchone()
            trip = time.perf_counter() - started
            server = value("SHOW server_version")
            size = value("SELECT pg_database_size(current_database())")
            known = value("SELECT to_regclass('schema_version') IS NOT NULL")
            version = value("SELECT MAX(version) FROM schema_version") if known else None
    except psycopg.Error as exc:
        detail = url.scrub(" ".join(str(exc).split()))
        return fail(name, f"{where} cannot be used: {detail}",
                    "start the server, or check store.url and the password (the URL, PGPASSWORD, ~/.pgpass or "
                    "store.password_env)")
    from hermes_tui.base.units import human_size

    said = f"PostgreSQL {server}, {human_size(size)}, round trip {trip * 1000:.1f} ms"
    if version is None:
        return ok(name, f"{where}: {said}; no sessions yet (the schema is made at the first start)")
    if version > SCHEMA_VERSION:
        return fail(name, f"{where}: schema version {version} is newer than this hermes-tui's ({SCHEMA_VERSION})",
                    "upgrade hermes-tui: this one refuses a store a newer one wrote")
    return ok(name, f"{where}: {said}, schema version {version}")


def _uri(path: Path, wal: bool) -> str:
    """The read-only URI of ``path`` (``%``, ``?`` and ``#`` in it escaped)."""
    quoted = str(path).replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    return f"file:{quoted}?mode=ro" + ("" if wal else "&immutable=1")


# -- the cache --------------------------------------------------------------------------------


def check_cache(config: Any, home: Path, now: float | None = None) -> Check:
    """The size of ``cache/exec`` against ``cache.max_size``, its oldest entry against
    ``cache.retention``."""
    from hermes_tui.runtime.cache import scan
    from hermes_tui.base.paths import exec_cache_dir
    from hermes_tui.base.units import human_size, parse_duration, parse_size, plural

    name = "cache"
    folder = exec_cache_dir(home)
    entries = [entry for entry in scan(folder) if entry.session != "doctor"]  # not the kernel check's own record
    total = sum(entry.disk_bytes for entry in entries)
    text = f"{folder}: {plural(len(entries), 'entry')}, {human_size(total)}"
    retention, max_size = config.cache.retention, config.cache.max_size
    now = time.time() if now is None else now
    over = []
    if max_size is not None and total > parse_size(max_size):
        over.append(f"over cache.max_size {max_size}")
    if retention is not None:
        old = sum(1 for entry in entries if now - entry.when > parse_duration(retention))
        if old:
            over.append(f"{plural(old, 'entry')} older than cache.retention {retention}")
    if over:
        return warn(name, f"{text}; " + "; ".join(over), "hermes-tui cache prune (it reads cache.retention and "
                                                        "cache.max_size)")
    if retention is None and max_size is None:
        return ok(name, f"{text}; no cache.retention or cache.max_size set (nothing is pruned)")
    return ok(name, f"{text}; within " + ", ".join(
        part for part in (retention and f"retention {retention}", max_size and f"max_size {max_size}") if part))


# -- the sandbox ------------------------------------------------------------------------------


def probe_sandbox(config: Any, home: Path) -> dict[str, Any]:
    """What the sandbox is here: the configured ``mode``, ``network``, ``writable_roots`` and
    ``deny_read``, then the ``tier`` in force, its ``label``, ``detail`` and ``error`` (None, or
    why no sandbox can be applied: then no script runs). Probed as the runtime probes it at
    start, with a trial process in a temp dir removed after. Blocking; never raises (a probe
    that fails is the error)."""
    from hermes_tui.runtime.sandbox import Sandbox
    from hermes_tui.runtime.sandbox.paths import SYSTEM_ROOTS

    settings = config.code_execution
    found: dict[str, Any] = {"mode": settings.sandbox, "network": settings.network,
                             "writable_roots": list(settings.writable_roots), "deny_read": list(settings.deny_read)}
    try:
        sandbox = Sandbox(settings.sandbox, network=settings.network, writable_roots=settings.writable_roots,
                          deny_read=settings.deny_read, hermes_home=str(home))
        with tempfile.TemporaryDirectory(prefix="hermes-doctor-sandbox-") as scratch:
            sandbox.scratch = scratch
            sandbox.probe(scratch)
    except Exception as exc:  # noqa: BLE001 - a diagnosis finishes: what the probe raised is the finding
        error = f"the sandbox could not be probed: {type(exc).__name__}: {_why(exc)}"
        return {**found, "tier": "unavailable", "label": "unavailable", "detail": error, "error": error}
    refused = [root for root in settings.writable_roots if not os.path.isdir(os.path.expanduser(root))
               or os.path.realpath(os.path.expanduser(root)) in SYSTEM_ROOTS]
    detail = sandbox.detail
    if refused and sandbox.mode == "workspace-write":
        detail += ("; writable_roots NOT writable (a system folder, or missing): " + ", ".join(refused))
    return {**found, "tier": sandbox.tier, "label": sandbox.label, "detail": detail, "error": sandbox.error,
            "refused_roots": refused}


def check_sandbox(found: dict[str, Any]) -> Check:
    """The tier in force (what :func:`probe_sandbox` found): ✓ with how it confines; ✗ when none
    can be applied (no script or command of a script runs); ! when it is off."""
    from hermes_tui.runtime.sandbox.core import FIX

    name = "sandbox"
    if found["error"]:
        why, said, fix = found["error"].partition(" To fix: ")
        why = why.removesuffix(" Nothing was run.").rstrip(".")
        return fail(name, f"{why}; no script (nor a command it runs) can run until it is fixed",
                    fix.rstrip(".") if said else FIX)
    if found["tier"] == "off":
        return warn(name, found["detail"], "set code_execution.sandbox: workspace-write (or read-only) to confine "
                                           "scripts and the commands they run")
    how = found["detail"].removeprefix(f"{found['mode']}: ")  # the label says the mode
    return ok(name, f"{found['label']} in force: {how}")


# -- a kernel ---------------------------------------------------------------------------------

PROBE_TEXT = "hermes-tui doctor probe\n"


async def check_kernel(config: Any, home: Path) -> Check:
    """A kernel starts, runs ``print(1)`` and makes one tool call (``read_file`` of a temp file:
    nothing asks). The execution record it leaves is removed. Round trip times are shown."""
    from hermes_tui.config.notes import backend_refusal
    from hermes_tui.runtime import Runtime
    from hermes_tui.runtime.records import record_path, spill_path

    name = "kernel"
    if backend_refusal(config.terminal):
        return fail(name, "not tried: terminal.backend refuses every script (see the problem below)",
                    "set terminal.backend: local")
    runtime = Runtime(config, home=home)
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="hermes-doctor-") as folder:
            # The probe file is made by the kernel in its own temp dir: where it runs (this
            # machine, a container, an SSH host), read_file reads there.
            code = ("from hermes_tools import read_file\nprint(1)\nimport os as _o, tempfile as _f, time as _t\n"
                    "_p = _o.path.join(_f.mkdtemp(prefix='hermes-doctor-'), 'probe.txt')\n"
                    f"open(_p, 'w').write({PROBE_TEXT!r})\n"
                    "_s = _t.perf_counter()\n_r = read_file(_p)\n"
                    "print(round((_t.perf_counter() - _s) * 1000, 1))\n"
                    "_o.unlink(_p); _o.rmdir(_o.path.dirname(_p))\n"
                    f"print('read' if {PROBE_TEXT.strip()!r} in str(_r) else repr(_r)[:200])\n")
            await runtime.start()
            result = await runtime.execute_code(code, session="doctor", cwd=folder, timeout=KERNEL_TIMEOUT)
            took = (time.monotonic() - started) * 1000
            try:
                await runtime.flush_records()
                for path in (record_path(runtime.cache_dir, result.exec_id), spill_path(runtime.cache_dir, result.exec_id)):
                    path.unlink(missing_ok=True)
            except OSError:
                pass
    except Exception as exc:  # noqa: BLE001 - the host could not even try: that is the finding
        return fail(name, f"the runtime could not start: {type(exc).__name__}: {exc}",
                    "see the error; check that HERMES_HOME and the temp dir are writable")
    finally:
        try:
            await runtime.aclose()
        except Exception:  # noqa: BLE001
            pass
    lines = result.output.splitlines()
    if result.status != "success" or len(lines) < 3 or lines[0] != "1":
        why = result.error or result.output.strip()[-300:] or result.status
        return fail(name, f"the script did not run ({result.status}): {why}",
                    "see the error; `hermes-tui exec -` with print(1) shows the same")
    if lines[2] != "read":
        return fail(name, f"the tool call did not answer as expected: {lines[2]}",
                    "see the answer; the tool channel of the kernel is broken")
    note = f"; {result.warning}" if result.warning else ""
    where = "" if config.terminal.backend == "local" else f" on {config.terminal.backend}"
    return ok(name, f"started{where}, ran print(1) and read_file in {took:.0f} ms (tool call round trip "
                    f"{lines[1]} ms){note}")


# -- where kernels run -------------------------------------------------------------------------


async def check_backend(config: Any, home: Path) -> Check | None:
    """``terminal.backend`` docker or ssh: the daemon answers and has the image, or the SSH login
    works (how long it takes is said). None for ``local`` (the kernel check covers it)."""
    from hermes_tui.config.notes import backend_refusal
    from hermes_tui.runtime.backends import SshBackend, backend_for
    from hermes_tui.runtime.backends.base import last_line, run_client

    terminal = config.terminal
    if terminal.backend == "jupyter" and not backend_refusal(terminal):
        return await _check_jupyter(config, home)
    if terminal.backend not in ("docker", "ssh") or backend_refusal(terminal):
        return None
    backend = backend_for(config, home)
    env = backend.client_env(os.environ)
    started = time.monotonic()
    try:
        if terminal.backend == "docker":
            code, out, err = await run_client(["docker", "version", "--format", "{{.Server.Version}}"], env=env,
                                              timeout=20)
            if code != 0:
                return fail("backend", f"docker: the daemon does not answer: {last_line(err) or 'exit ' + str(code)}",
                            "start Docker (dockerd, or systemctl start docker) and check `docker info`")
            version = out.decode(errors="replace").strip()
            code, _, err = await run_client(["docker", "image", "inspect", terminal.docker_image], env=env, timeout=20)
            if code != 0:
                return fail("backend", f"docker {version}: image {terminal.docker_image} is not on this machine",
                            f"docker pull {terminal.docker_image} (hermes-tui never pulls), or set "
                            "terminal.docker_image")
            limits = "no network" if not config.code_execution.network else "network on"
            return ok("backend", f"docker {version}, image {terminal.docker_image} present; containers run with "
                                 f"every capability dropped, no-new-privileges, {limits}")
        assert isinstance(backend, SshBackend)
        code, _, err = await run_client([*backend.base_args(), "true"], env=env, timeout=30)
        took = (time.monotonic() - started) * 1000
        login = backend.describe().removeprefix("ssh:")
        if code != 0:
            return fail("backend", f"ssh {login}: {last_line(err) or 'exit ' + str(code)}",
                        "check terminal.ssh_host, ssh_user, ssh_port and ssh_key (try the same with `ssh`)")
        return ok("backend", f"ssh {login} answers (a login in {took:.0f} ms); no sandbox holds on the remote")
    except FileNotFoundError:
        client = "docker" if terminal.backend == "docker" else "ssh"
        return fail("backend", f"the {client} command is not installed on this machine",
                    "install it, or set terminal.backend: local")
    except asyncio.TimeoutError:
        return fail("backend", f"{terminal.backend}: no answer in time", "check that the daemon or host is reachable")


async def _check_jupyter(config: Any, home: Path) -> Check:
    """The gateway answers, takes the token and has the kernelspec (one round trip timed), or
    the local kernelspec is here; kernels an earlier run left on the gateway are named."""
    from hermes_tui.runtime.backends import BackendError, JupyterBackend

    backend = JupyterBackend(config, home)
    try:
        if not backend.remote:
            spec = await asyncio.to_thread(backend.local_kernel)
            return ok("backend", f"jupyter: local kernels from kernelspec {backend.kernel_name!r} ({spec['argv'][0]}), "
                                 "in the sandbox with a loopback of their own")
        started = time.monotonic()
        await backend.rest("GET", "/api", timeout=15)
        took = (time.monotonic() - started) * 1000
        specs = await backend.kernelspecs()
        if backend.kernel_name not in specs:
            return fail("backend", f"jupyter {backend.host}: no kernelspec {backend.kernel_name!r} (it has: "
                                   f"{', '.join(sorted(specs)) or 'none'})", "set terminal.jupyter_kernel_name to one of them")
        left = await backend.leftovers()
        note = (f"; {len(left)} kernel(s) left there by an earlier run: hermes-tui jupyter-cleanup shuts them down"
                if left else "")
        return ok("backend", f"jupyter {backend.host} answers (a round trip in {took:.0f} ms), token accepted, "
                             f"kernelspec {backend.kernel_name!r} present{note}")
    except BackendError as exc:
        return fail("backend", str(exc), "check terminal.jupyter_gateway_url, jupyter_auth_token and "
                                         "jupyter_kernel_name")


# -- the interpreter, ripgrep -----------------------------------------------------------------


def check_interpreter(config: Any, env: Mapping[str, str] | None = None) -> Check:
    """Which Python project mode runs (the active venv's, else conda's, else the host's)."""
    from hermes_tui.runtime.interpreters import project_interpreter

    name = "python"
    env = os.environ if env is None else env
    if config.code_execution.mode == "strict":
        return ok(name, f"strict mode: kernels run the host's Python ({sys.executable})")
    choice = project_interpreter(dict(env))
    if choice.warning:
        return warn(name, choice.warning, "activate a working venv (or fix or unset VIRTUAL_ENV / CONDA_PREFIX)")
    why = next((f" ({v})" for v in ("VIRTUAL_ENV", "CONDA_PREFIX")
                if env.get(v) and choice.path.startswith(env[v])), " (no venv or conda active: the host's)")
    return ok(name, f"project mode runs {choice.path}{why}")


def check_ripgrep() -> Check:
    """``rg`` on PATH (search_files uses it; without it, a slower search in Python)."""
    found = shutil.which("rg")
    if found is None:
        return warn("ripgrep", "rg not found: search_files falls back to a slower search in Python",
                    "install ripgrep (apt install ripgrep, brew install ripgrep) for faster searches")
    return ok("ripgrep", found)


def check_checkpoints(config: Any, home: Path, cwd: str | None = None) -> Check:
    """Whether checkpoints are taken of this folder, and why (docs/checkpoints.md)."""
    from hermes_tui.runtime.checkpoints.book import SMALL_FOLDER, count_files, in_git_work_tree

    folder = cwd or os.getcwd()
    if config.checkpoints.enabled is False:
        return ok("checkpoints", "off (checkpoints.enabled: false)")
    if config.terminal.backend != "local" and not (config.terminal.backend == "jupyter"
                                                   and not config.terminal.jupyter_gateway_url):
        return ok("checkpoints", f"not taken: kernels run on terminal.backend {config.terminal.backend}, "
                                 "whose files are not here")
    git = shutil.which("git")
    if git is None:
        return warn("checkpoints", "git not found: no checkpoint is taken, /rollback has nothing to go back to",
                    "install git (apt install git, brew install git)")
    if config.checkpoints.enabled is True:
        return ok("checkpoints", f"on for {folder} (checkpoints.enabled: true) · {git}")
    if in_git_work_tree(folder):
        return ok("checkpoints", f"on for {folder} (in a git work tree) · {git}")
    files = count_files(folder, SMALL_FOLDER)
    if files <= SMALL_FOLDER:
        return ok("checkpoints", f"on for {folder} ({files:,} files) · {git}")
    return warn("checkpoints", f"off for {folder}: not in a git repository and over {SMALL_FOLDER:,} files",
                "set checkpoints.enabled: true to take them anyway, or work in a smaller folder")


# -- approval files ---------------------------------------------------------------------------


def _open_check(path: Path) -> str | None:
    """None when ``path`` is absent or a regular file this user can read and append to (opened
    for both, nothing written, never a link, never waited on); else why not."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        return None if exc.errno in (errno.ENOENT, errno.ENOTDIR) else _why(exc)  # absent: the folder is checked
    if stat.S_ISLNK(info.st_mode):
        return "it is a symbolic link (refused)"
    if not stat.S_ISREG(info.st_mode):
        return "it is not a regular file"
    for flags, what in ((os.O_RDONLY, "read"), (os.O_WRONLY | os.O_APPEND, "written")):
        try:
            fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            return f"it cannot be {what}: {_why(exc)}"
        os.close(fd)
    return None


def _folder_check(path: Path) -> str | None:
    """None when the file's folder exists and takes a new file, or can be made; else why not."""
    folder = path.parent
    found = _existing(folder)
    if not found.is_dir():
        return f"{found} is not a folder"
    return _try_write(found) if (found == folder or not os.path.exists(path)) else None


FOLDER_FIX = "make $HERMES_HOME/tui a folder this user can write (or point HERMES_HOME elsewhere)"


def _state_file(name: str, path: Path, absent: str, refused: str = "") -> Check | None:
    """A file under ``tui/`` that must be a regular file this user can write: the failed (or,
    absent, the passed) check, or None when it exists and can be used."""
    problem = _open_check(path)
    if problem is None and not os.path.exists(path):
        problem = _folder_check(path)
        if problem is None:
            return ok(name, f"{path}: none yet ({absent})")
        return fail(name, f"{path} cannot be made: {problem}{refused}", FOLDER_FIX)
    if problem is not None:
        return fail(name, f"{path}: {problem}", f"make {path} a regular file this user can read and write{refused}")
    return None


def check_allowlist(home: Path) -> Check:
    """``tui/allowlist.yaml`` (where "always" answers go) parses, and can be read and written."""
    from hermes_tui.runtime.rules import allowlist_path, load_allowlist
    from hermes_tui.base.units import plural

    path = allowlist_path(home)
    found = _state_file("allowlist", path, 'made at the first "always" answer')
    if found is not None:
        return found
    rules, broken = load_allowlist(path)
    if broken is not None:
        return fail("allowlist", broken, f"fix the YAML (a list under `rules:`) or move it aside: mv {path} {path}.broken")
    return ok("allowlist", f"{path}: {plural(len(rules), 'rule')}, readable and writable")


def check_audit_log(home: Path) -> Check:
    """``tui/approvals.jsonl`` can be appended to (a call that cannot be logged is refused)."""
    from hermes_tui.runtime.approvals import audit_path

    path = audit_path(home)
    return _state_file("audit log", path, "made at the first approval",
                       ": every call that asks is refused until then") or ok("audit log", f"{path}: readable and writable")


# -- sockets ----------------------------------------------------------------------------------


def check_sockets(config: Any, home: Path, tmpdir: str | None = None) -> Check:
    """The Unix socket paths fit ``sun_path``: the kernels' tool channels under the temp dir
    (none with ``rpc_transport: file``) and the app's inject socket under ``tui/inject``
    (which falls back to a private temp dir when it does not fit: a warning)."""
    from hermes_tui.agent.inject import SUN_PATH_MAX as INJECT_MAX
    from hermes_tui.agent.inject import inject_dir

    name = "sockets"
    temp = tmpdir if tmpdir is not None else tempfile.gettempdir()
    kernel = len(os.fsencode(temp)) + len(KERNEL_SOCKET_TAIL)
    inject = len(os.fsencode(str(inject_dir(home)))) + len(INJECT_SOCKET_TAIL)
    if config.code_execution.rpc_transport == "socket" and kernel > SUN_PATH_MAX:
        return fail(name, f"kernel tool sockets under {temp} would be {kernel} bytes long, over the "
                          f"{SUN_PATH_MAX} a Unix socket path may have: no kernel can reach its tools",
                    "set TMPDIR to a shorter folder (e.g. TMPDIR=/tmp)")
    kernels = (f"kernel sockets {kernel} bytes" if config.code_execution.rpc_transport == "socket"
               else "kernels use files (rpc_transport: file)")
    if inject > INJECT_MAX:
        return warn(name, f"{kernels}; the inject socket under {inject_dir(home)} would be {inject} bytes (over "
                          f"{INJECT_MAX}): the app binds it in a private temp dir and links it from there "
                          "(`hermes-tui inject` follows the link)",
                    "a shorter HERMES_HOME avoids the detour")
    return ok(name, f"{kernels}, inject socket {inject} bytes (at most {SUN_PATH_MAX})")


# -- all of them ------------------------------------------------------------------------------

ORDER = ("config", "model", "endpoint", "home", "disk", "sessions", "cache", "sandbox", "backend", "kernel",
         "python", "ripgrep", "checkpoints", "allowlist", "audit log", "sockets")


async def run_checks(config: Any, home: Path, *, settings: Any = None, model_error: str | None = None,
                     offline: bool = False, refusal: str | None = None,
                     env: Mapping[str, str] | None = None, config_error: str | None = None,
                     sandbox: dict[str, Any] | None = None) -> list[Check]:
    """Every check, in :data:`ORDER`; the blocking ones run in threads while the kernel starts
    and the endpoint answers. A check that raises is a ``fail`` saying what it raised.
    ``config_error``: config.yaml could not be read (the rest is checked with the defaults).
    ``sandbox``: filled with what :func:`probe_sandbox` found (the report says it)."""

    async def guarded(name: str, work: Awaitable[Check | None]) -> Check | None:
        try:
            return await work
        except Exception as exc:  # noqa: BLE001 - one broken check must not hide the others
            return fail(name, f"the check itself failed: {type(exc).__name__}: {exc}", "report this as a bug")

    def thread(name: str, function: Callable[..., Check], *args: Any) -> Awaitable[Check | None]:
        return guarded(name, asyncio.to_thread(function, *args))

    async def sandboxed() -> Check:
        found = await asyncio.to_thread(probe_sandbox, config, home)
        if sandbox is not None:
            sandbox.update(found)
        return check_sandbox(found)

    # Imported here, before any thread: modules imported from two threads at once can be seen
    # half made ("partially initialized module 'httpx'").
    import hermes_tui.runtime.cache  # noqa: F401
    import hermes_tui.agent.inject  # noqa: F401
    import hermes_tui.runtime  # noqa: F401
    import hermes_tui.runtime.approvals  # noqa: F401
    import hermes_tui.runtime.interpreters  # noqa: F401
    import hermes_tui.runtime.rules  # noqa: F401
    import hermes_tui.runtime.sandbox  # noqa: F401
    import hermes_tui.storage.sessions  # noqa: F401
    import hermes_tui.base.units  # noqa: F401
    try:
        if hermes_tui.storage.sessions.store_url(config, home).kind == "postgresql":
            import hermes_tui.storage.postgres  # noqa: F401  (psycopg: before the threads, as above)
    except Exception:  # a URL that cannot be used is the sessions check's finding
        pass
    from hermes_tui.runtime.tools.dispatch import preload

    preload()  # what the runtime imports in a thread as it starts: now, while no other thread runs
    if settings is not None and not offline:
        import hermes_tui.agent.models.providers  # noqa: F401

        __import__("anthropic" if settings.kind == "anthropic" else "openai")

    jobs = [
        guarded("config", _config_failed(config_error)) if config_error else thread("config", check_config, config,
                                                                                        refusal),
        thread("model", check_model, settings, model_error),
        guarded("endpoint", check_endpoint(settings, offline=offline)),
        thread("home", check_home, home),
        thread("disk", check_free_space, home),
        thread("sessions", check_sessions_db, home, config),
        thread("cache", check_cache, config, home),
        guarded("sandbox", sandboxed()),
        guarded("backend", check_backend(config, home)),
        guarded("kernel", check_kernel(config, home)),
        thread("python", check_interpreter, config, env),
        thread("ripgrep", check_ripgrep),
        thread("checkpoints", check_checkpoints, config, home),
        thread("allowlist", check_allowlist, home),
        thread("audit log", check_audit_log, home),
        thread("sockets", check_sockets, config, home),
    ]
    return [check for check in await asyncio.gather(*jobs) if check is not None]
