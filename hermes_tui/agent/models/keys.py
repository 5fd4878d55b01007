"""Where a provider's key comes from, and the rule that keeps it on its own hosts.

A key reaches a request in one of two ways:

* **named for it** in the config: ``model.api_key`` / ``model.key_env`` (for the provider
  ``model.provider`` names), or ``api_key``, ``key_env`` or ``key_cmd`` on a ``providers:`` or
  ``fallback_providers`` entry. It goes to that entry's endpoint, whatever its host;
* **by convention**: a provider's usual variable (``OPENAI_API_KEY``, ``GLM_API_KEY``, …, see
  :mod:`.catalog`) found in the environment or ``$HERMES_HOME/.env``. Such a key is only ever
  sent to that provider's own hosts, over HTTPS (or to a loopback address). A provider pointed
  at another host gets no conventional key: the request goes without one, and the error says
  which setting to add.

``${VAR}`` in a value is replaced from the environment, then ``$HERMES_HOME/.env``; an unset
variable is an error naming it (Hermes Agent would send the literal text). Key values are
never shown or logged — only where they came from.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import ipaddress
import json
import logging
import os
import re
import shlex
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hermes_tui.agent.models.catalog import ProviderSpec, host_matches

log = logging.getLogger(__name__)

DOTENV_LIMIT = 1 << 20
"""Largest ``$HERMES_HOME/.env`` read (a script may have put a FIFO or a huge file there)."""
VAR_RE = re.compile(r"\$\{(?:env:)?([^}]*)\}")
PLACEHOLDERS = {"*", "**", "***", "changeme", "your_api_key", "your_api_key_here", "your-api-key", "placeholder",
                "example", "dummy", "null", "none"}
"""Values in a ``.env`` template that are not keys (Hermes Agent skips them too)."""
KEY_CMD_TIMEOUT = 30.0
KEY_CMD_MAX_OUTPUT = 64 << 10
EXPIRY_MARGIN = 60.0
"""A token from ``key_cmd`` is fetched again this many seconds (at most a tenth of its
lifetime) before it expires."""


class ProviderError(Exception):
    """A provider setting or request that failed; ``str()`` is one line for the user, never a key."""

    status: int | None = None
    """The HTTP status the server answered with, if it answered."""
    retriable: bool = False
    """True when another provider may be tried (no connection, 429, 5xx)."""
    streamed: bool = False
    """True when part of the reply had already been shown (then nothing is tried again)."""
    short: str = ""
    """What went wrong in a few words ("HTTP 503: overloaded"), for a fallback's note."""


def usable(value: str | None) -> bool:
    """True when ``value`` looks like a key, not an empty or template value."""
    if not value:
        return False
    value = value.strip()
    return len(value) >= 4 and value.lower() not in PLACEHOLDERS and not re.fullmatch(r"(sk-|ghp_|hf_)?x+", value)


class Environment:
    """Variables as the config sees them: the process environment, then ``$HERMES_HOME/.env``
    (read once, on first need; never written)."""

    def __init__(self, env: Mapping[str, str], home: Path) -> None:
        self.env = env
        self.home = home
        self._dotenv: dict[str, str | None] | None = None

    def lookup(self, name: str) -> tuple[str | None, str]:
        """``(value, where it came from)``; the value is None when it is unset or empty."""
        if self.env.get(name):
            return self.env[name], f"{name} in the environment"
        if self._dotenv is None:
            self._dotenv = _read_dotenv(self.home)
        value = self._dotenv.get(name)
        return (value or None), f"{name} in {self.home / '.env'}"

    def expand(self, value: str, where: str) -> str:
        """``value`` with every ``${VAR}`` (or ``${env:VAR}``) replaced; raises
        :class:`ProviderError` naming the first unset one."""
        def replace(match: re.Match[str]) -> str:
            name = match.group(1).strip()
            found = self.lookup(name)[0] if name else None
            if found is None:
                raise ProviderError(f"{where} uses ${{{name}}}, which is not set: add {name} to the environment or "
                                    f"{self.home / '.env'}")
            return found

        return VAR_RE.sub(replace, value) if "${" in value else value


def _read_dotenv(home: Path) -> dict[str, str | None]:
    path = home / ".env"
    if not path.exists():
        return {}
    from dotenv import dotenv_values

    from hermes_tui.base.fsutil import read_capped

    try:
        text = read_capped(path, DOTENV_LIMIT, what="read from .env").decode("utf-8")
        return dict(dotenv_values(stream=io.StringIO(text)))
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("%s is not read: %s", path, exc)
        return {}


def is_loopback(host: str) -> bool:
    """True for this machine's own addresses (a local server): ``localhost`` or a loopback IP."""
    host = host.lower().rstrip(".").strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def origin(url: str) -> tuple[str, str, int | None]:
    """``(scheme, host, port)`` of ``url``, the default port filled in: two URLs with the same
    origin reach the same server. Raises ValueError for a URL that cannot be read."""
    parts = urlsplit(url)
    default = {"https": 443, "http": 80}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower().rstrip("."), parts.port or default


def conventional_key_allowed(spec: ProviderSpec, url: str, url_env_value: str | None = None) -> bool:
    """True when a key found by ``spec``'s conventional variables may go to ``url``: one of its
    hosts, over HTTPS unless the host is this machine. A provider whose hosts belong to its
    customers (Azure: ``<your-resource>.openai.azure.com``) has none: its key goes only to the
    URL its own ``*_BASE_URL`` variable names (``url_env_value``)."""
    try:
        parts = urlsplit(url)
        if spec.url_bound:
            return bool(url_env_value) and origin(url) == origin(url_env_value or "")
    except ValueError:
        return False
    host = (parts.hostname or "").lower()
    if not spec.hosts or not host_matches(host, spec.hosts):
        return False
    return parts.scheme == "https" or is_loopback(host)


def one_line(value: str, setting: str) -> str:
    """``value`` (a key or a header value) stripped; raises :class:`ProviderError` if it holds a
    control character — a line break would break the request and show the value in the error."""
    value = value.strip()
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ProviderError(f"{setting} holds a control character (a line break?): a key or a header value must "
                            "be one line of text")
    return value


def shown_url(url: str | None) -> str:
    """``url`` without a user name, password or query (they may hold secrets), for messages."""
    if not url:
        return ""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(an unreadable URL)"
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{host}{port}{parts.path}"


KEY_CMD_ENV = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR", "HERMES_HOME",
    "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "DBUS_SESSION_BUS_ADDRESS",
    "SSH_AUTH_SOCK", "GNUPGHOME", "GPG_AGENT_INFO", "GPG_TTY", "PASSWORD_STORE_DIR",
})
"""What a ``key_cmd`` gets of the environment, besides ``LC_*``, its program's own variables
(:data:`KEY_CMD_PREFIXES`) and any variable its words name (``$VAULT_PATH``): it is not
handed the app's keys, and a process that reads it sees nothing else."""
KEY_CMD_PREFIXES = {"gcloud": ("CLOUDSDK_", "GOOGLE_"), "az": ("AZURE_",), "pass": ("PASSWORD_STORE_",),
                    "gopass": ("GOPASS_", "PASSWORD_STORE_")}
"""Variable prefixes a secrets program reads beyond ``<PROGRAM>_`` (``op`` → ``OP_*``,
``vault`` → ``VAULT_*``, ``aws`` → ``AWS_*``, ``doppler`` → ``DOPPLER_*``)."""
_NAMED_RE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")


def key_cmd_env(argv: list[str], env: Mapping[str, str]) -> dict[str, str]:
    """The environment ``argv`` (a ``key_cmd``) runs with: :data:`KEY_CMD_ENV`, ``LC_*``,
    its program's variables and the ones its words name — nothing else of ``env``."""
    program = os.path.basename(argv[0]) if argv else ""
    prefixes = ("LC_", f"{program.upper().replace('-', '_')}_", *KEY_CMD_PREFIXES.get(program, ()))
    named = {name for word in argv for name in _NAMED_RE.findall(word)}
    return {name: value for name, value in env.items()
            if name in KEY_CMD_ENV or name in named or (program and name.startswith(prefixes))}


@dataclass
class KeyCommand:
    """``key_cmd``: a command (run without a shell) that prints a token, bare or as JSON with
    ``access_token`` and optional ``expires_in``. The token is kept until shortly before it
    expires (a bare one until the server rejects it)."""

    argv: list[str]
    setting: str
    """Where it is configured, for messages (``providers.zai.key_cmd``)."""
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ), repr=False)
    runs: int = 0
    """How many times the command has run (a cached token does not run it)."""
    _token: str | None = field(default=None, repr=False)
    _expires: float = float("inf")
    _lock: asyncio.Lock | None = field(default=None, repr=False)

    @classmethod
    def parse(cls, value: str | list[str], setting: str, env: Mapping[str, str]) -> KeyCommand:
        """From the config value (a command line or a list of words)."""
        try:
            argv = shlex.split(value) if isinstance(value, str) else [str(word) for word in value]
        except ValueError as exc:
            raise ProviderError(f"{setting} cannot be read as a command: {exc}") from None
        if not argv:
            raise ProviderError(f"{setting} is empty: give a command that prints a token")
        return cls(argv, setting, env)

    @property
    def cached(self) -> str | None:
        """The token held now (None before the first run or after :meth:`forget`)."""
        return self._token

    def forget(self) -> None:
        """Drop the cached token (the server rejected it): the next request runs the command again."""
        self._token, self._expires = None, float("inf")

    async def token(self) -> str:
        """The current token, running the command when there is none or it is about to expire."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._token is None or time.monotonic() >= self._expires:
                self._token, lifetime = await self._run()
                self.runs += 1
                self._expires = (time.monotonic() + lifetime - min(EXPIRY_MARGIN, lifetime / 10)
                                 if lifetime is not None else float("inf"))
            return self._token

    async def _run(self) -> tuple[str, float | None]:
        from hermes_tui.runtime.hardening import open_process

        # Only the program is named in messages: its arguments may hold a refresh token.
        shown = os.path.basename(self.argv[0])
        try:
            # Apart from the kernels (no kernel may read it), with only what it needs of the
            # environment: /proc/<pid>/environ of a process is readable again after exec.
            child = await open_process(self.argv, key_cmd_env(self.argv, self.env), new_session=True, apart=True)
        except OSError as exc:
            raise ProviderError(f"{self.setting} ({shown}) could not start: {exc.strerror or exc}") from None
        out, err = bytearray(), bytearray()
        readers = asyncio.gather(_drain(child.stdout, out), _drain(child.stderr, err))
        try:
            code = await asyncio.wait_for(child.wait(), KEY_CMD_TIMEOUT)
            # What it printed is read to the end; a child it left running may hold a pipe open:
            # then what came within a second is all there is.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(readers), 1.0)
        except TimeoutError:
            raise ProviderError(f"{self.setting} ({shown}) did not finish in {KEY_CMD_TIMEOUT:g}s") from None
        finally:
            readers.cancel()
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.popen.pid, signal.SIGKILL)  # it and anything it left behind
            if child.returncode is None:
                await child.wait()
        if code != 0:
            last = bytes(err).decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
            raise ProviderError(f"{self.setting} ({shown}) failed with exit code {code}: {last[0][:200]}")
        if len(out) > KEY_CMD_MAX_OUTPUT:
            raise ProviderError(f"{self.setting} ({shown}) printed more than {KEY_CMD_MAX_OUTPUT // 1024} KiB; "
                                "it must print one token")
        return _token_from(bytes(out).decode("utf-8", "replace").strip(), self.setting, shown)


async def _drain(stream: asyncio.StreamReader, into: bytearray) -> None:
    """Read ``stream`` to its end, keeping at most one byte more than ``KEY_CMD_MAX_OUTPUT``."""
    while chunk := await stream.read(1 << 16):
        into += chunk[:KEY_CMD_MAX_OUTPUT + 1 - len(into)]


def _token_from(text: str, setting: str, shown: str) -> tuple[str, float | None]:
    """The token and its lifetime in seconds (None: unknown) from what ``key_cmd`` printed."""
    if text.startswith("{"):
        try:
            data: Any = json.loads(text)
        except json.JSONDecodeError:
            raise ProviderError(f"{setting} ({shown}) printed JSON that cannot be read") from None
        token = data.get("access_token") if isinstance(data, dict) else None
        if not isinstance(token, str) or not token.strip():
            raise ProviderError(f"{setting} ({shown}) printed JSON without a string access_token")
        lifetime = data.get("expires_in")
        valid = isinstance(lifetime, (int, float)) and not isinstance(lifetime, bool) and lifetime > 0
        return token.strip(), float(lifetime) if valid else None
    if not text or len(text.split()) != 1:
        raise ProviderError(f"{setting} ({shown}) must print one token (or JSON with access_token); "
                            f"it printed {'nothing' if not text else 'several words'}")
    return text, None
