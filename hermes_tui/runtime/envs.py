"""The child's environment: what a kernel may see of the host's variables (SPEC §3).

Built from the host's environment and frozen when a kernel starts. Secrets never pass by
accident: a name that looks like a credential is dropped unless the user named it exactly in
``terminal.env_passthrough`` (or a skill declared it).
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


def is_secret_name(name: str) -> bool:
    """True when ``name`` looks like a credential (case-insensitive substring match)."""
    return bool(_SECRET_RE.search(name.upper()))


def is_safe_name(name: str) -> bool:
    """True when ``name`` passes by default (and is not a secret)."""
    if is_secret_name(name):
        return False
    return name in SAFE_NAMES or name.startswith(SAFE_PREFIXES)


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
            (``terminal.env_passthrough`` and skills' ``required_environment_variables``).
        inject: names the host sets itself (``HERMES_RPC_SOCKET``, ``TZ``, ``HOME``...);
            these win over everything else.
    """
    source = os.environ if host_env is None else host_env
    allowed = set(passthrough)
    env: dict[str, str] = {}
    dropped_hermes = 0
    for name, value in source.items():
        if name in allowed:
            env[name] = value
        elif name.startswith("HERMES_"):
            if name in HERMES_PASS:
                env[name] = value
            else:
                dropped_hermes += 1
        elif is_safe_name(name):
            env[name] = value
    if dropped_hermes:
        log.debug("execute_code: dropped %d non-allowlisted HERMES_* var(s)", dropped_hermes)
    if inject:
        env.update(inject)
    return env
