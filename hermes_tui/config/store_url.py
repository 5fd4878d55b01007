"""Which store to use: ``--store URL``, else ``HERMES_TUI_STORE_URL``, else ``store.url`` in
config.yaml, else the SQLite file ``$HERMES_HOME/tui/sessions.db``.

URL forms:

* ``sqlite:///ABSOLUTE/PATH.db``; ``sqlite://RELATIVE.db`` (under ``$HERMES_HOME``); ``sqlite://~/x.db``;
* ``postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?host=/socket/dir&sslmode=...]``
  (``postgres://`` too). The password may instead come from ``PGPASSWORD``, ``~/.pgpass`` or the
  variable ``store.password_env`` names. It is never shown: :meth:`StoreURL.redacted`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from hermes_tui.base.paths import tui_dir
from hermes_tui.base.text import SECRET_PARAMETERS, redact_url, userinfo_password



class StoreError(Exception):
    """The sessions store cannot do what was asked; ``str(err)`` is one line for a user (a
    password never appears in it). The root of the store's errors (:mod:`hermes_tui.storage.errors`);
    here because a store URL that cannot be used is one, and config checks ``store.url``."""


class StoreURLError(StoreError, ValueError):
    """``store.url`` / ``--store`` / ``HERMES_TUI_STORE_URL`` is not a URL hermes-tui can use;
    ``allowed`` says what would be (for the config's "must be ..." message)."""

    def __init__(self, message: str, allowed: str = "") -> None:
        super().__init__(message)
        self.allowed = allowed or message


ENV_URL = "HERMES_TUI_STORE_URL"
SCHEMES = "sqlite:///PATH or postgresql://USER@HOST[:PORT]/DATABASE"


@dataclass(frozen=True)
class StoreURL:
    """A parsed store URL. ``text`` may hold a password: show :meth:`redacted`, never it."""

    kind: str
    """``sqlite`` or ``postgresql``."""
    text: str = field(repr=False)
    path: Path | None = None
    """The SQLite file (None for PostgreSQL)."""
    password: str | None = field(default=None, repr=False)
    """From ``store.password_env``: used when the URL carries none (one written in it wins)."""
    origin: str = "default"
    """Where it was set: ``--store``, ``HERMES_TUI_STORE_URL``, ``store.url`` or ``default``."""

    def __repr__(self) -> str:  # a traceback or a log line must not carry the password
        return f"StoreURL({self.redacted()!r}, origin={self.origin!r})"

    @property
    def shared(self) -> bool:
        """True for a server several machines can share (PostgreSQL)."""
        return self.kind == "postgresql"

    def redacted(self) -> str:
        """The URL with any password replaced by ``***`` (for doctor, errors and logs)."""
        if self.kind == "sqlite":
            return f"sqlite://{self.path}"
        return redact(self.text)

    @property
    def url_password(self) -> str | None:
        """The password written in the URL itself, if any."""
        try:
            return urlsplit(self.text).password
        except ValueError:
            return None

    def secrets(self) -> list[str]:
        """Passwords this URL carries (scrubbed from any message that might quote them),
        longest first. A raw ``@`` in a password splits differently for libpq (at the first) and
        for Python (at the last), so each piece of it counts too."""
        found = [self.password] if self.password else []
        try:
            parts = urlsplit(self.text)
            query = parse_qsl(parts.query)
        except ValueError:
            raw = userinfo_password(self.text)
            return [*found, raw] if raw else found
        if parts.password:
            found += [parts.password, *parts.password.split("@")]
        found += [v for k, v in query if k in SECRET_PARAMETERS and v]
        raw = userinfo_password(self.text)
        if raw:
            found += [raw, *raw.split("@")]
        return sorted({f for f in found if f}, key=len, reverse=True)

    def scrub(self, message: str) -> str:
        """``message`` with this URL's passwords replaced by ``***``."""
        for secret in self.secrets():
            message = message.replace(secret, "***")
        return message


redact = redact_url
"""``url`` without its password (:func:`hermes_tui.base.text.redact_url`)."""


def parse_store_url(text: str, home: Path | None = None, *, origin: str = "store.url") -> StoreURL:
    """Parse ``text``; :class:`StoreURLError` says what is wrong and which forms are allowed."""
    text = text.strip()
    scheme, sep, rest = text.partition("://")
    if not sep:
        hint = " (sqlite://RELATIVE.db for a file under HERMES_HOME)" if text.lower().startswith("sqlite:") else ""
        raise StoreURLError(f"{origin} {redact(text)!r} is not a URL: use {SCHEMES}{hint}", f"a URL: {SCHEMES}{hint}")
    scheme = scheme.lower()
    if scheme == "sqlite":
        if not rest:
            return StoreURL("sqlite", text, tui_dir(home) / "sessions.db", origin=origin)
        path = Path(rest).expanduser() if rest.startswith("~") else Path(rest)
        if not path.is_absolute():
            path = tui_dir(home).parent / path
        return StoreURL("sqlite", text, path, origin=origin)
    if scheme in ("postgresql", "postgres"):
        raw = userinfo_password(text)
        if raw is not None and any(c in raw for c in "/?#@"):
            raise StoreURLError(f"{origin} {redact(text)!r}: the password holds a character a URL cannot carry as it "
                                "is (/ ? # or @): write it percent-encoded (%2F %3F %23 %40), or give it with "
                                "store.password_env, PGPASSWORD or ~/.pgpass",
                                "a URL whose password has / ? # and @ percent-encoded (%2F %3F %23 %40)")
        try:
            parts = urlsplit(text)
        except ValueError as exc:  # an unclosed [ of an IPv6 host, ...
            raise StoreURLError(f"{origin} {redact(text)!r} is not a valid URL ({exc})",
                                "a valid URL: postgresql://USER@HOST[:PORT]/DATABASE") from None
        try:
            parts.port  # noqa: B018 - raises for a port that is not a number
        except ValueError:
            raise StoreURLError(f"{origin} {redact(text)!r}: the port is not a number from 1 to 65535",
                                "a URL whose port is a number from 1 to 65535") from None
        if not parts.path.strip("/"):
            raise StoreURLError(f"{origin} {redact(text)!r} names no database: postgresql://USER@HOST/DATABASE",
                                "a URL that names a database: postgresql://USER@HOST[:PORT]/DATABASE")
        return StoreURL("postgresql", text, None, origin=origin)
    raise StoreURLError(f"{origin}: {scheme}:// stores are not supported: use {SCHEMES}",
                        f"{SCHEMES} ({scheme}:// is not supported)")


def resolve_store_url(configured: str | None, password_env: str | None, home: Path | None = None, *,
                      flag: str | None = None, env: Mapping[str, str] | None = None) -> StoreURL:
    """The store to use: ``flag`` (``--store``), else ``$HERMES_TUI_STORE_URL``, else the config's
    ``store.url``, else the default SQLite file. ``password_env`` names a variable holding the
    PostgreSQL password (used when the URL carries none)."""
    env = os.environ if env is None else env
    for value, origin in ((flag, "--store"), (env.get(ENV_URL), ENV_URL), (configured, "store.url")):
        if value:
            url = parse_store_url(value, home, origin=origin)
            break
    else:
        url = StoreURL("sqlite", "sqlite://", tui_dir(home) / "sessions.db")
    # The configured password goes only to the server the config means, and only when the URL
    # carries none: a --store or HERMES_TUI_STORE_URL naming another server than store.url
    # never receives it (with no store.url, password_env is for whichever URL is in use).
    meant = url.origin == "store.url" or not configured or _same_server(url.text, configured)
    if url.kind == "postgresql" and password_env and meant and not url.url_password:
        password = env.get(password_env)
        if password is None:
            raise StoreURLError(f"store.password_env names {password_env}, which is not set in the environment")
        url = StoreURL(url.kind, url.text, None, password, url.origin)
    return url


def _same_server(one: str, other: str) -> bool:
    """True when two PostgreSQL URLs name the same host and port (a socket dir counts as a host)."""
    def where(text: str) -> tuple[str, int]:
        try:
            parts = urlsplit(text)
            query = dict(parse_qsl(parts.query))
            return (parts.hostname or query.get("host", "")), int(parts.port or query.get("port") or 5432)
        except ValueError:
            return text, 0
    return where(one) == where(other)
