"""The index of ``$HERMES_HOME/cache/exec``: our execution records and Hermes Agent's files.

Two kinds of entries:

* **records** — ``<exec_id>.json`` written by hermes-tui (with ``<exec_id>.stdout.txt`` when
  the output was cut). Listing reads only the head of each record (the small fields come
  first), so 10,000 of them list in well under a second.
* **files** — anything else that holds output, e.g. Hermes Agent's ``stdout-<hash>.txt``
  (no metadata: time and size come from the file, the title from its first line).

Everything here blocks (it reads files): call it from a thread, never the event loop.

Scripts can write this folder, so nothing in it is trusted: only regular files are read
(never a FIFO, which would hang, or a device), symbolic links are not followed (a link to
``/dev/zero`` or to a secret is not an entry), a whole record is read only up to
``RECORD_MAX_BYTES``, and a record's full output is only ever its own ``<id>.stdout.txt``
next to it, whatever path the record names.
"""

from __future__ import annotations

import json
import os
import re
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal

from hermes_tui.base.fsutil import FileRefused, open_regular, read_capped
from hermes_tui.runtime.records import RECORD_FORMAT, RECORD_SUFFIX, SPILL_SUFFIX

HEAD_BYTES = 2048
"""How much of a record is read to list it (the small fields come first)."""
TITLE_CHARS = 200
RECORD_MAX_BYTES = 16 << 20
"""A record is read whole only up to this (a real one holds capped output and the code)."""
BUSY_SECONDS = 600
"""A spill with no record yet, changed this recently, may still be being written."""
FRESH_SECONDS = 60
"""Nothing changed this recently is pruned."""
_FIELD_RE = re.compile(r'"(\w+)": ("(?:[^"\\]|\\.)*"|null|-?\d+(?:\.\d+)?|true|false)')
_WANTED = {"format", "id", "status", "session", "kernel_id", "started_at", "title", "stdout_bytes_total",
           "stdout_spill_path"}


@dataclass(slots=True)
class CacheEntry:
    """One listed entry."""

    id: str
    path: Path
    """The record (``.json``) or the file itself."""
    kind: Literal["record", "file"]
    when: float
    """Start time (records) or modification time (files), epoch seconds."""
    size: int
    """Bytes of output (all of it, also when it was cut)."""
    title: str
    """First line of the code (records) or of the output (files)."""
    status: str | None = None
    session: str | None = None
    kernel: str | None = None
    spill: Path | None = None
    files: list[Path] = field(default_factory=list)
    """Every file that belongs to the entry (what deleting it removes)."""

    @property
    def disk_bytes(self) -> int:
        """Bytes the entry's files take now (stats them: call off the event loop)."""
        total = 0
        for path in self.files:
            try:
                total += path.stat().st_size
            except OSError:
                continue
        return total

    @property
    def output_file(self) -> Path | None:
        """The file that holds the whole output, if there is one (None: it is in the record)."""
        if self.kind == "file":
            return self.path
        return self.spill if self.spill is not None and _regular(self.spill) else None

    def matches(self, text: str = "", status: str | None = None, session: str | None = None,
                since: float | None = None) -> bool:
        """Filter: text in the title/id/session, exact status and session, not older than ``since``."""
        if status and self.status != status:
            return False
        if session and self.session != session:
            return False
        if since is not None and self.when < since:
            return False
        needle = text.lower()
        return not needle or any(needle in (v or "").lower() for v in (self.title, self.id, self.session, self.status))


def _fields(head: str) -> dict[str, object]:
    """The small fields at the head of a record (first occurrence of each)."""
    found: dict[str, object] = {}
    for name, raw in _FIELD_RE.findall(head):
        if name in _WANTED and name not in found:
            try:
                found[name] = json.loads(raw)
            except ValueError:
                continue
    return found


def _epoch(value: object, default: float) -> float:
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value).timestamp()
        except ValueError:
            pass
    return default


class CacheError(ValueError):
    """An entry that cannot be shown; the message is one line naming the file and what is wrong."""


def _regular(path: Path) -> bool:
    """True if ``path`` itself (not what a link points at) is a regular file."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _refused(path: Path, exc: FileRefused, problems: list[str] | None) -> None:
    """Note an entry that is not read (a FIFO, a device, a link, too big); directories are not entries."""
    if problems is not None and not (exc.strerror or "").startswith("it is a directory"):
        problems.append(f"{path.name}: {exc.strerror}")


def read_record(path: Path, names: set[str] | None = None, problems: list[str] | None = None) -> CacheEntry | None:
    """The entry of a hermes-tui record, from the head of the file (None if it is not one).

    ``names``: the folder's file names, when the caller has listed it (saves a stat per entry).
    ``problems``: where to say why a file is not read (a FIFO, a link, over ``RECORD_MAX_BYTES``).
    """
    try:
        with os.fdopen(open_regular(path, follow_symlinks=False), "rb") as handle:
            head = handle.read(HEAD_BYTES).decode("utf-8", "replace")
            mtime = os.fstat(handle.fileno()).st_mtime
    except FileRefused as exc:
        _refused(path, exc, problems)
        return None
    except OSError:
        return None
    fields = _fields(head)
    if fields.get("format") != RECORD_FORMAT:
        return None
    if "stdout_bytes_total" not in fields:  # an unusual layout: read it all (capped)
        try:
            data = json.loads(read_capped(path, RECORD_MAX_BYTES, follow_symlinks=False,
                                          what="allowed for a record").decode("utf-8"))
        except FileRefused as exc:
            _refused(path, exc, problems)
            return None
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict):
            return None
        fields = {k: v for k, v in data.items() if k in _WANTED}
    # The full output is the record's own sibling: a path the record names could be anything
    # a script wrote there (/dev/zero, a key file).
    sibling = path.with_name(path.name[: -len(RECORD_SUFFIX)] + SPILL_SUFFIX)
    has_sibling = (sibling.name in names) if names is not None else sibling.exists()
    spill = sibling if has_sibling else None
    files = [path, sibling] if has_sibling else [path]

    def text(name: str) -> str | None:
        value = fields.get(name)
        return value if isinstance(value, str) else None

    total = fields.get("stdout_bytes_total")
    return CacheEntry(
        id=text("id") or path.stem,
        path=path,
        kind="record",
        when=_epoch(fields.get("started_at"), mtime),
        size=int(total) if isinstance(total, (int, float)) else 0,
        title=(text("title") or "")[:TITLE_CHARS],
        status=text("status"),
        session=text("session"),
        kernel=text("kernel_id"),
        spill=spill,
        files=files,
    )


def read_file_entry(path: Path, problems: list[str] | None = None) -> CacheEntry | None:
    """The entry of a bare output file (Hermes Agent's ``stdout-<hash>.txt`` and the like);
    None for anything but a regular file (``problems`` says why, as in :func:`read_record`)."""
    try:
        with os.fdopen(open_regular(path, follow_symlinks=False), "rb") as handle:
            head = handle.read(512)
            info = os.fstat(handle.fileno())
    except FileRefused as exc:
        _refused(path, exc, problems)
        return None
    except OSError:
        return None
    first = next((line.strip() for line in head.decode("utf-8", "replace").splitlines() if line.strip()), "")
    name = path.name
    return CacheEntry(id=name[: -len(".txt")] if name.endswith(".txt") else name, path=path, kind="file",
                      when=info.st_mtime, size=info.st_size, title=first[:TITLE_CHARS], files=[path])


def scan(folder: Path, problems: list[str] | None = None) -> list[CacheEntry]:
    """Every entry in ``folder``, newest first. Blocking.

    ``problems`` (if given) gets one line per file that is not listed because it is not read:
    a FIFO, a device, a symbolic link, a record over ``RECORD_MAX_BYTES``.
    """
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    records = {n[: -len(RECORD_SUFFIX)] for n in names if n.endswith(RECORD_SUFFIX) and not n.startswith(".")}
    listed = set(names)
    entries = []
    for name in names:
        if name.startswith("."):
            continue
        path = folder / name
        if name.endswith(RECORD_SUFFIX):
            entry = read_record(path, listed, problems)
        elif name.endswith(SPILL_SUFFIX) and name[: -len(SPILL_SUFFIX)] in records:
            continue  # listed with its record
        else:
            entry = read_file_entry(path, problems)
        if entry is not None:
            entries.append(entry)
    entries.sort(key=lambda e: e.when, reverse=True)
    return entries


def find(folder: Path, key: str) -> CacheEntry | None:
    """The entry named by an id (or a unique prefix of one) or by a path."""
    path = Path(key).expanduser()
    if path.is_file():
        path = path.resolve()  # a path the user typed: its links are theirs to follow
        if path.name.endswith(RECORD_SUFFIX):
            return read_record(path) or read_file_entry(path)
        record = path.with_name(path.name[: -len(SPILL_SUFFIX)] + RECORD_SUFFIX) if path.name.endswith(SPILL_SUFFIX) else None
        return (read_record(record) if record and record.exists() else None) or read_file_entry(path)
    matches = [e for e in scan(folder) if e.id == key]
    if not matches:
        matches = [e for e in scan(folder) if e.id.startswith(key)]
    return matches[0] if len(matches) == 1 else None


def load_record(path: Path) -> dict[str, object]:
    """The whole JSON record at ``path``; a :class:`CacheError` with one line if it cannot be
    used (``FileNotFoundError`` when it is gone). Reads at most ``RECORD_MAX_BYTES``."""
    try:
        data = json.loads(read_capped(path, RECORD_MAX_BYTES, follow_symlinks=False,
                                      what="allowed for a record").decode("utf-8"))
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise CacheError(f"the record {path} cannot be read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise CacheError(f"the record {path} cannot be read: it is not JSON ({exc}); it may be half-written") from None
    if not isinstance(data, dict):
        raise CacheError(f"the record {path} cannot be read: it is not a JSON object")
    return data


def record_output(entry: CacheEntry) -> str:
    """The capped output stored in a record (for records whose output was not cut); raises
    :class:`CacheError` (or ``FileNotFoundError``) when the record cannot be used."""
    return str(load_record(entry.path).get("output", ""))


@dataclass
class PrunePlan:
    """What a prune deletes, and what it keeps because it may still be in use."""

    delete: list[CacheEntry]
    kept_busy: list[CacheEntry]
    bytes_freed: int


def plan_prune(entries: Iterable[CacheEntry], *, older_than: float | None, max_size: int | None,
               now: float | None = None, busy: Iterable[str] = ()) -> PrunePlan:
    """Oldest entries past ``older_than`` seconds, then the oldest until the rest fit ``max_size``.

    Never deleted: entries changed in the last minute, a spill without its record changed in
    the last 10 minutes (a running execution may be writing it), and ids in ``busy``.
    """
    now = time.time() if now is None else now
    busy_ids = set(busy)
    candidates: list[CacheEntry] = []
    kept: list[CacheEntry] = []
    for entry in sorted(entries, key=lambda e: e.when):
        newest = max((_mtime(p) for p in entry.files), default=entry.when)
        in_use = (entry.id in busy_ids or now - newest < FRESH_SECONDS
                  or (entry.kind == "file" and entry.path.name.endswith(SPILL_SUFFIX) and now - newest < BUSY_SECONDS))
        (kept if in_use else candidates).append(entry)
    delete = [e for e in candidates if older_than is not None and now - e.when > older_than]
    sizes = {id(e): e.disk_bytes for e in [*candidates, *kept]}
    if max_size is not None:
        total = sum(sizes.values()) - sum(sizes[id(e)] for e in delete)
        for entry in candidates:
            if total <= max_size:
                break
            if entry not in delete:
                delete.append(entry)
                total -= sizes[id(entry)]
    return PrunePlan(delete, [e for e in kept if older_than is not None or max_size is not None],
                     sum(sizes[id(e)] for e in delete))


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def delete_entry(entry: CacheEntry) -> None:
    """Remove every file of an entry (missing ones are fine). Blocking."""
    for path in entry.files:
        try:
            path.unlink()
        except FileNotFoundError:
            continue
