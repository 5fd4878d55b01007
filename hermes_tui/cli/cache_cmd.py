"""``hermes-tui cache ls | show | prune``: the saved outputs, on the command line."""

from __future__ import annotations

import argparse
import codecs
import contextlib
import json
import os
import shlex
import subprocess
import sys
import time
from collections import deque
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from hermes_tui.runtime.cache import CacheEntry, CacheError, delete_entry, find, plan_prune, record_output, scan
from hermes_tui.cli.errors import UsageError
from hermes_tui.base.text import shown
from hermes_tui.config import Config
from hermes_tui.base.paths import exec_cache_dir
from hermes_tui.base.fsutil import open_regular
from hermes_tui.base.units import human_size, parse_duration, parse_size, plural, unique_prefixes


def cache_command(args: argparse.Namespace, config: Config) -> int:
    """Run one ``cache`` action; returns the exit code.

    Bad arguments raise a UsageError whose message names the action (``cache prune: ...``).
    """
    folder = exec_cache_dir()
    try:
        if args.cache_command == "ls":
            return _ls(folder, args)
        if args.cache_command == "show":
            return _show(folder, args)
        return _prune(folder, args, config)
    except UsageError as exc:
        raise UsageError(f"cache {args.cache_command}: {exc}") from None


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


SESSION_WIDTH = 16
"""The session column's width: a longer session id is cut to a prefix no other listed one shares."""


def _sessions(entries: list[CacheEntry]) -> tuple[dict[str, str], int]:
    """Each session's label (escaped: a record a script wrote names it) and the column's width."""
    labels = {name: shown(label) for name, label in
              unique_prefixes((e.session or "-" for e in entries), SESSION_WIDTH).items()}
    return labels, max([SESSION_WIDTH, *map(len, labels.values())])


def _row(entry: CacheEntry, sessions: tuple[dict[str, str], int] | None = None) -> str:
    # Every field but the time and size came from a record a script could write: escaped.
    labels, width = sessions or _sessions([entry])
    when = datetime.fromtimestamp(entry.when).strftime("%Y-%m-%d %H:%M:%S")
    return (f"{when}  {shown(entry.status or entry.kind):11}  {labels[entry.session or '-']:{width}}  "
            f"{shown(entry.kernel or '-'):5}  {human_size(entry.size):>9}  {shown(entry.id)}  {shown(entry.title[:60])}")


def _scan(folder: Path) -> list[CacheEntry]:
    """The entries, and one line on stderr per file that is not read (a FIFO, a device, a link)."""
    problems: list[str] = []
    entries = scan(folder, problems)
    for problem in problems:
        print(f"hermes-tui: cache: skipped {shown(problem)}", file=sys.stderr)
    return entries


def _ls(folder: Path, args: argparse.Namespace) -> int:
    since = time.time() - _duration(args.since) if args.since else None
    entries = [e for e in _scan(folder) if e.matches(status=args.status, session=args.session, since=since)]
    sessions = _sessions(entries)
    for entry in entries:
        if args.json:
            print(json.dumps({"id": entry.id, "kind": entry.kind, "path": str(entry.path), "time": entry.when,
                              "status": entry.status, "session": entry.session, "kernel": entry.kernel,
                              "output_bytes": entry.size, "title": entry.title,
                              "full_output": str(entry.output_file) if entry.output_file else None}))
        else:
            print(_row(entry, sessions))
    if not entries and not args.json:
        print(f"No entries in {shown(folder)}" + (" match." if (args.session or args.status or args.since) else "."))
    return 0


def output_rows(folder: Path, count: int) -> list[str]:
    """The newest ``count`` saved outputs, one row each as ``cache ls`` prints them (``/outputs``
    of ``hermes-tui --linear``); skipped files are not said."""
    entries = scan(folder)[:count]
    sessions = _sessions(entries)
    return [_row(entry, sessions) for entry in entries]


def output_chunks(folder: Path, key: str) -> Iterator[str]:
    """One saved output's text, a piece at a time (a 1 GB file is never held whole), decoded
    as UTF-8 (a bad byte shows as ``\\xNN``); raw, for the caller to escape. ``LookupError``
    says why there is none."""
    entry = find(folder, key)
    if entry is None:
        raise LookupError(f"no saved output {key!r} (or the id prefix is ambiguous); /outputs lists them")
    if entry.output_file is None:  # the whole output is in the record
        try:
            yield record_output(entry)
        except (OSError, CacheError) as exc:
            raise LookupError(f"the record of {key!r} cannot be read: {exc}") from None
        return
    try:  # a regular file, never a link: a FIFO or /dev/zero put there would hang or never end
        handle = os.fdopen(open_regular(entry.output_file, follow_symlinks=False), "rb")
    except OSError as exc:
        raise LookupError(f"cannot read {entry.output_file}: {exc.strerror}") from None
    decoder = codecs.getincrementaldecoder("utf-8")("backslashreplace")
    with handle:
        while chunk := handle.read(1 << 16):
            yield decoder.decode(chunk)
    yield decoder.decode(b"", final=True)


def _show(folder: Path, args: argparse.Namespace) -> int:
    entry = find(folder, args.entry)
    if entry is None:
        raise UsageError(f"no entry {args.entry!r} (or the id prefix is ambiguous); see `hermes-tui cache ls`")
    source = entry.output_file
    if source is None:  # the whole output is in the record
        try:
            lines = record_output(entry).splitlines(keepends=True)
        except FileNotFoundError:
            raise UsageError(f"the record {entry.path} is gone (deleted or pruned)") from None
        except CacheError as exc:
            raise UsageError(str(exc)) from None
        if args.head is not None or args.tail is not None:
            head = lines[: args.head or 0]
            tail = lines[max(len(head), len(lines) - (args.tail or 0)):] if args.tail else []
            skipped = len(lines) - len(head) - len(tail)
            lines = head + tail
        with _Output() as out:
            if args.head is not None and args.tail is not None and skipped:
                out.write("".join(head).encode("utf-8", "surrogateescape"))
                out.gap(f"{plural(skipped, 'line')} not shown")
                lines = tail
            out.write("".join(lines).encode("utf-8", "surrogateescape"))
        return 0
    try:  # a regular file, never a link: a FIFO or /dev/zero put there would hang or never end
        handle = os.fdopen(open_regular(source, follow_symlinks=False), "rb")
    except OSError as exc:
        raise UsageError(f"cannot read {source}: {exc.strerror}") from None
    with handle, _Output() as out:  # streamed: a 1 GB file is never held whole
        shown_to = 0  # the byte offset the head ended at
        if args.head is not None:
            for number, line in enumerate(handle):
                if number >= args.head:
                    break
                out.write(line)
                shown_to += len(line)
        if args.tail is not None:
            last = _tail(handle, args.tail)
            start = handle.seek(0, 2) - sum(map(len, last))
            while last and start < shown_to:  # already shown by --head
                start += len(last.pop(0))
            if args.head is not None and start > shown_to:
                out.gap(f"{start - shown_to:,} bytes not shown")
            for line in last:
                out.write(line)
        elif args.head is None:
            while chunk := handle.read(1 << 20):
                out.write(chunk)
    return 0


class _Output:
    """Where ``cache show`` writes. Not a terminal (a pipe, a file): the bytes as they are. A
    terminal: the text escaped (:func:`shown`: a script's ``\\x1b[2J`` must not clear the screen)
    and through a pager as git does it: ``$PAGER``, else ``less -FRX`` (which quits at once when
    it all fits the screen); ``PAGER=`` or ``cat`` writes straight to the terminal."""

    def __init__(self) -> None:
        self.tty = sys.stdout.isatty()
        self.pager: subprocess.Popen[bytes] | None = None
        self.sink = sys.stdout.buffer
        self.decoder = codecs.getincrementaldecoder("utf-8")("backslashreplace")

    def __enter__(self) -> _Output:
        sys.stdout.flush()
        if self.tty:
            command = os.environ.get("PAGER", "less -FRX").strip()
            if command and command != "cat":
                try:
                    self.pager = subprocess.Popen(shlex.split(command), stdin=subprocess.PIPE)
                except (OSError, ValueError):  # no such pager: straight to the terminal
                    self.pager = None
                else:
                    assert self.pager.stdin is not None
                    self.sink = self.pager.stdin
        return self

    def write(self, data: bytes) -> None:
        if self.tty:
            data = shown(self.decoder.decode(data), one_line=False).encode("utf-8", "surrogateescape")
        try:
            self.sink.write(data)
        except BrokenPipeError:  # the pager was quit: the rest is not wanted
            if self.pager is None:
                raise
            raise _PagerQuit from None

    def gap(self, what: str) -> None:
        """Between the head and the tail: said on stderr, so stdout stays the output's own bytes."""
        self.sink.flush()
        if self.pager is not None:
            self.write(f"[… {what} …]\n".encode())
        else:
            print(f"hermes-tui: cache show: … {what} …", file=sys.stderr, flush=True)

    def __exit__(self, kind: object, exc: object, trace: object) -> bool:
        if self.tty:
            tail = shown(self.decoder.decode(b"", final=True), one_line=False)
            if tail and kind is None:
                with contextlib.suppress(BrokenPipeError):
                    self.sink.write(tail.encode("utf-8", "surrogateescape"))
        if self.pager is None:
            self.sink.flush()
            return False
        with contextlib.suppress(BrokenPipeError, OSError):
            self.sink.close()
        while True:
            try:
                self.pager.wait()
                break
            except KeyboardInterrupt:  # Ctrl+C is the pager's to handle, as in git
                continue
        return kind is _PagerQuit or kind is KeyboardInterrupt


class _PagerQuit(Exception):
    """The pager ended before all was written to it."""


def _tail(handle, count: int) -> list[bytes]:
    """The last ``count`` lines, read backwards from the end in blocks."""
    if count <= 0:
        return []
    handle.seek(0, 2)
    end = handle.tell()
    data = b""
    position = end
    while position > 0 and data.count(b"\n") <= count:
        step = min(1 << 16, position)
        position -= step
        handle.seek(position)
        data = handle.read(step) + data
    return list(deque(data.splitlines(keepends=True), maxlen=count)) if data else []


def _prune(folder: Path, args: argparse.Namespace, config: Config) -> int:
    older = args.older_than or config.cache.retention
    size = args.max_size or config.cache.max_size
    if older is None and size is None:
        raise UsageError("say what to prune: --older-than AGE and/or --max-size SIZE "
                              "(or set cache.retention / cache.max_size in config.yaml)")
    try:
        max_size = parse_size(size) if size else None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    plan = plan_prune(_scan(folder), older_than=_duration(older) if older else None, max_size=max_size)
    verb = "would delete" if args.dry_run else "deleted"
    sessions = _sessions(plan.delete)
    for entry in plan.delete:
        if not args.dry_run:
            delete_entry(entry)
        print(f"{verb}: {_row(entry, sessions)}")
    for entry in plan.kept_busy:
        print(f"kept (may still be in use): {shown(entry.id)}")
    print(f"{verb} {plural(len(plan.delete), 'entry')}, {human_size(plan.bytes_freed)}"
          + (" (dry run)" if args.dry_run else ""))
    return 0
