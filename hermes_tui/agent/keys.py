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
import json
import logging
import os
import re
import shlex
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hermes_tui.agent.catalog import ProviderSpec, host_matches

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

    from hermes_tui.runtime.fsutil import read_capped

    try:
        text = read_capped(path, DOTENV_LIMIT, what="read from .env").decode("utf-8")
        return dict(dotenv_values(stream=io.StringIO(text)))
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("%s is not read: %s", path, exc)
        return {}


def is_loopback(host: str) -> bool:
    """True for this machine's own addresses (a local server)."""
    return host in ("localhost", "::1") or host.startswith("127.")


def conventional_key_allowed(spec: ProviderSpec, url: str) -> bool:
    """True when a key found by ``spec``'s conventional variables may go to ``url``: one of its
    hosts, over HTTPS unless the host is this machine."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if not spec.hosts or not host_matches(host, spec.hosts):
        return False
    return parts.scheme == "https" or is_loopback(host)


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

        shown = shlex.join(self.argv)
        try:
            child = await open_process(self.argv, dict(self.env))
        except OSError as exc:
            raise ProviderError(f"{self.setting} ({shown}) could not start: {exc.strerror or exc}") from None
        try:
            out, err = await asyncio.wait_for(asyncio.gather(child.stdout.read(KEY_CMD_MAX_OUTPUT + 1),
                                                             child.stderr.read(KEY_CMD_MAX_OUTPUT)), KEY_CMD_TIMEOUT)
            code = await asyncio.wait_for(child.wait(), KEY_CMD_TIMEOUT)
        except TimeoutError:
            raise ProviderError(f"{self.setting} ({shown}) did not finish in {KEY_CMD_TIMEOUT:g}s") from None
        finally:
            if child.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    child.popen.kill()
                await child.wait()
        if code != 0:
            last = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
            raise ProviderError(f"{self.setting} ({shown}) failed with exit code {code}: {last[0][:200]}")
        if len(out) > KEY_CMD_MAX_OUTPUT:
            raise ProviderError(f"{self.setting} ({shown}) printed more than {KEY_CMD_MAX_OUTPUT // 1024} KiB; "
                                "it must print one token")
        return _token_from(out.decode("utf-8", "replace").strip(), self.setting, shown)


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
