"""Execution records in ``$HERMES_HOME/cache/exec``: one small JSON file per execution.

``<exec_id>.json`` holds what the cache browser lists (session, kernel, code, status, times,
byte counts, the capped output, the spill path). ``<exec_id>.stdout.txt`` is the full stdout,
written only when the output was cut. Hermes Agent's own ``stdout-<hash>.txt`` files live in
the same directory; these names never collide with them.
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
import time
from pathlib import Path
from typing import Any

RECORD_FORMAT = "hermes-tui/exec-record/1"
RECORD_SUFFIX = ".json"
SPILL_SUFFIX = ".stdout.txt"


def new_exec_id() -> str:
    """A new execution id, sortable by start time: ``20261129-105416-1a2b3c4d``."""
    return time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(4)


def record_path(cache_dir: Path, exec_id: str) -> Path:
    """Where the JSON record of ``exec_id`` lives."""
    return cache_dir / f"{exec_id}{RECORD_SUFFIX}"


def spill_path(cache_dir: Path, exec_id: str) -> Path:
    """Where the full stdout of ``exec_id`` goes when it is cut."""
    return cache_dir / f"{exec_id}{SPILL_SUFFIX}"


def write_record(path: Path, record: dict[str, Any]) -> None:
    """Write ``record`` as JSON atomically (temp file + rename), mode 0600. Blocking."""
    data = json.dumps({"format": RECORD_FORMAT, **record}, ensure_ascii=False, indent=1)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=".tmp-", suffix=RECORD_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(data)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
