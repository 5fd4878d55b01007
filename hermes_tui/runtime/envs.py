"""The child's environment: what a kernel may see of the host's variables (SPEC §3).

Built from the host's environment and frozen when a kernel starts. Secrets never pass by
accident: a name that looks like a credential is dropped unless the user named it exactly in
``terminal.env_passthrough`` (or a skill declared it), and a URL's user part
(``https://user:password@host``) in the value of a name that passes by default is redacted to
``https://***@host``.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping


log = logging.getLogger(__name__)

#: Substrings (upper-cased) that mark a name as a secret.
SECRET_MARKERS = (
    "KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "PASSWD", "AUTH",
    "APIKEY", "BEARER", "CREDS", "DSN", "WEBHOOK",
)

#: Names that pass as they are.
SAFE_NAMES = frozenset({
    "PATH", "HOME", "LANG", "LANGUAGE", "SHELL", "TERM", "TMPDIR", "USER", "LOGNAME",
    "PYTHONPATH", "VIRTUAL_ENV",
})

#: Prefixes whose names pass (locale, XDG dirs, conda).
SAFE_PREFIXES = ("LC_", "XDG_", "CONDA_")

#: The only HERMES_* names that pass from the host, by exact name.
HERMES_PASS = frozenset({"HERMES_HOME", "HERMES_PROFILE", "HERMES_CONFIG", "HERMES_ENV"})

_SECRET_RE = re.compile("|".join(SECRET_MARKERS))

#: ``scheme://userinfo@``: the user part of a URL (up to its last ``@`` before the host), which
#: may carry a password or a token (``https://user:pw@host``, ``https://TOKEN@host``).
_URL_USERINFO_RE = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)[^\s/?#]+@")
REDACTED = "***"


def is_secret_name(name: str) -> bool:
    """True when ``name`` looks like a credential (case-insensitive substring match)."""
    return bool(_SECRET_RE.search(name.upper()))


def is_safe_name(name: str) -> bool:
    """True when ``name`` passes by default (and is not a secret)."""
    if is_secret_name(name):
        return False
    return name in SAFE_NAMES or name.startswith(SAFE_PREFIXES)


def redact_url_credentials(value: str) -> str:
    """``value`` with the user part of every URL in it replaced by ``***``
    (``https://u:pw@host/x`` becomes ``https://***@host/x``)."""
    return _URL_USERINFO_RE.sub(lambda m: f"{m['scheme']}{REDACTED}@", value)


def build_child_env(
    host_env: Mapping[str, str] | None = None,
    *,
    passthrough: Iterable[str] = (),
    inject: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment a kernel starts with.

    Args:
        host_env: the host's environment (default ``os.environ``).
        passthrough: exact names let in on top of the defaults, secrets included
            (``terminal.env_passthrough`` and skills' ``required_environment_variables``);
            their values pass whole.
        inject: names the host sets itself (``HERMES_RPC_SOCKET``, ``TZ``, ``HOME``...);
            these win over everything else.
    """
    source = os.environ if host_env is None else host_env
    allowed = set(passthrough)
    env: dict[str, str] = {}
    dropped_hermes = 0
    redacted: list[str] = []
    for name, value in source.items():
        if name in allowed:
            env[name] = value
            continue
        if name.startswith("HERMES_"):
            if name not in HERMES_PASS:
                dropped_hermes += 1
                continue
        elif not is_safe_name(name):
            continue
        env[name] = redact_url_credentials(value)
        if env[name] != value:
            redacted.append(name)
    if dropped_hermes:
        # SPEC §3 names this line word for word: "dropped N non-allowlisted HERMES_* var(s)".
        log.debug("execute_code: dropped %d non-allowlisted HERMES_* var(s)", dropped_hermes)
    if redacted:
        log.debug("execute_code: redacted URL credentials in %s", ", ".join(sorted(redacted)))
    if inject:
        env.update(inject)
    return env
