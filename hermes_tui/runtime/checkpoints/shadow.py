"""A shadow git repository of one workspace folder: snapshots, diffs and restores.

Git's own object store, driven through its plumbing with ``GIT_DIR`` under
``$HERMES_HOME/checkpoints/<hash of the folder>/`` and the folder as the work tree. It never
reads or writes the folder's own ``.git`` (git skips a ``.git`` entry of a work tree, and
``GIT_DIR`` stops it looking for one), never runs a hook (only plumbing is used, and the repo
has no hooks folder) and reads no config but its own: the user's ``~/.gitconfig`` and the
system's are off, and the repo's own config is checked against what this module wrote before
every use, so a process that could write it (a ``core.fsmonitor`` command, a ``filter``) gains
nothing. Attributes a workspace's ``.gitattributes`` could set to change bytes on the way in
(``text``, ``eol``, ``filter``, ``ident``, ``working-tree-encoding``) are unset for every path:
a snapshot holds the files' exact bytes.

Why git's command line and not dulwich or pygit2: an unchanged 10,000-file folder is one
``git status`` (about 20 ms here, with git's untracked cache); dulwich walks and stats in Python
(several times slower), and pygit2 is a compiled wheel not on every machine
(tests/bench/bench_checkpoints.py prints the figures).

Every operation holds an exclusive ``flock`` on the repository's ``lock`` file: two apps on one
folder take turns, and a lock file git left behind when its process was killed (``index.lock``)
is known to be stale and removed. A ``kill -9`` mid-snapshot leaves a valid repository: git
writes objects, the index and refs by rename.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import os
import secrets
import shutil
import stat
import subprocess
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HEAD_REF = "refs/heads/checkpoints"
"""The newest snapshot; every snapshot's parent is the one before it, so all stay reachable."""

CONFIG = """[core]
\trepositoryformatversion = 0
\tbare = false
\tfilemode = true
\tsymlinks = true
\tautocrlf = false
\tuntrackedCache = true
\tfsmonitor = false
\thooksPath = /dev/null
\tquotePath = false
\tsplitIndex = true
[gc]
\tauto = 0
[commit]
\tgpgSign = false
"""
"""The repository's whole config: checked before every use (see the module's docstring)."""

ATTRIBUTES = "* -text -eol -ident -filter -working-tree-encoding\n"
"""Unset for every path, over any ``.gitattributes`` in the folder: bytes are kept as they are."""

GIT_TIMEOUT = 120.0
"""Seconds one git command may take (a first snapshot of a large folder hashes every file)."""


class ShadowError(Exception):
    """A git command failed, or git is missing: one line saying what and where."""

    def __init__(self, text: str, *, missing_git: bool = False, timed_out: bool = False) -> None:
        super().__init__(text)
        self.missing_git = missing_git
        self.timed_out = timed_out


@dataclass
class Snapshot:
    """What one snapshot found."""

    commit: str
    """The commit holding the folder as it is now (the previous one when nothing changed)."""
    parent: str | None = None
    """The snapshot before it (None: the first, or nothing changed)."""
    changed: list[str] = field(default_factory=list)
    """Paths (relative, ``/``-separated) changed since ``parent`` (their lines added and
    removed: :meth:`ShadowRepo.numstat`, off the call's path)."""
    skipped: dict[str, int] = field(default_factory=dict)
    """Files over the size cap, not captured: path → size in bytes."""
    seconds: float = 0.0


@dataclass
class Change:
    """One file a restore would write or remove."""

    path: str
    action: str
    """``restore`` (differs now), ``recreate`` (gone now), ``delete`` (made after)."""


def repo_dir(home: Path, root: str) -> Path:
    """Where the shadow repository of folder ``root`` lives."""
    digest = hashlib.sha256(os.path.realpath(root).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return home / "checkpoints" / digest


@functools.cache
def git_program() -> str | None:
    """git's absolute path, found on ``PATH``'s absolute folders only: git runs in the folder,
    where a relative ``PATH`` entry (``.``, an empty one) would find a ``git`` a script put there."""
    folders = [f for f in os.environ.get("PATH", "").split(os.pathsep) if os.path.isabs(f)]
    return shutil.which("git", path=os.pathsep.join(folders)) if folders else None


def _git_env(git_dir: Path, root: str, index: Path | None = None) -> dict[str, str]:
    """Only what git needs: none of the user's ``GIT_*`` variables, none of their config."""
    env = {name: os.environ[name] for name in ("PATH", "HOME", "TMPDIR") if name in os.environ}
    env.update({
        # GIT_COMMON_DIR: a `commondir` file planted in the repository cannot send git elsewhere
        "GIT_DIR": str(git_dir), "GIT_COMMON_DIR": str(git_dir), "GIT_WORK_TREE": root,
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_LITERAL_PATHSPECS": "1", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C",
        "GIT_AUTHOR_NAME": "hermes-tui", "GIT_AUTHOR_EMAIL": "checkpoints@hermes-tui",
        "GIT_COMMITTER_NAME": "hermes-tui", "GIT_COMMITTER_EMAIL": "checkpoints@hermes-tui",
    })
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    return env


SAFE_CONFIG = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.sshCommand=false")
"""Given on every command too: what would run a program, whatever a config file says."""

RESTORE_BATCH = 256
"""Files read from the object store at a time by a restore (their bytes are held meanwhile)."""


class ShadowRepo:
    """The shadow repository of one folder.

    Args:
        home: ``HERMES_HOME``.
        root: the folder (absolute).
        max_file_size: files larger than this many bytes are not captured (listed as skipped).
        exclude: absolute paths never captured (``HERMES_HOME`` when it is inside the folder):
            filtered here, not left to ignore rules a ``.gitignore`` in the folder could undo.
    """

    def __init__(self, home: Path, root: str, *, max_file_size: int, exclude: Iterable[str] = ()) -> None:
        self.root = os.path.realpath(root)
        self.dir = repo_dir(home, self.root)
        self.git_dir = self.dir / "repo"
        self.max_file_size = max_file_size
        self._exclude = sorted({os.path.relpath(p, self.root) for p in map(os.path.realpath, exclude)
                                if p == self.root or p.startswith(self.root + os.sep)} - {"."})

    # -- the lock and the repository itself ---------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the repository (blocking): made and checked first."""
        if not os.path.isdir(self.root):
            raise ShadowError(f"{self.root} is not there any more (moved or deleted)")
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.dir / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._prepare()
            yield
        finally:
            os.close(fd)

    def _prepare(self) -> None:
        """Make the repository if new; put back its config, attributes and excludes if anything
        changed them; remove a lock file a killed git left (we hold the lock: none is live)."""
        git_dir = self.git_dir
        if not (git_dir / "HEAD").exists():
            for sub in ("objects/info", "objects/pack", "refs/heads", "refs/tags", "info"):
                (git_dir / sub).mkdir(parents=True, exist_ok=True)
            _write_if_changed(git_dir / "HEAD", f"ref: {HEAD_REF}\n")  # status compares with the newest snapshot
            (self.dir / "root").write_text(self.root + "\n")
        _write_if_changed(git_dir / "config", CONFIG)
        _write_if_changed(git_dir / "info" / "attributes", ATTRIBUTES)
        _write_if_changed(git_dir / "info" / "exclude", self._excludes_text())
        for stale in ("index.lock", "HEAD.lock", f"{HEAD_REF}.lock", "packed-refs.lock", "commondir"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(git_dir / stale)

    def _excludes_text(self) -> str:
        # A name with a line break cannot be one pattern (it would be two): such a file stays out
        # of the index by being left out of every list instead.
        names = [*self._exclude, *sorted(self._big())]
        lines = ["# written by hermes-tui: never captured"]
        lines += ["/" + _escape(p) for p in names if "\n" not in p and "\r" not in p]
        return "\n".join(lines) + "\n"

    def _big(self) -> set[str]:
        path = self.dir / "big"
        try:
            return {line for line in path.read_text("utf-8", "surrogateescape").split("\0") if line}
        except FileNotFoundError:
            return set()

    def _set_big(self, paths: set[str]) -> None:
        tmp = self.dir / f"big.{secrets.token_hex(4)}"
        tmp.write_text("\0".join(sorted(paths)), "utf-8", "surrogateescape")
        os.replace(tmp, self.dir / "big")
        _write_if_changed(self.git_dir / "info" / "exclude", self._excludes_text())

    def _never(self, path: str) -> bool:
        """``path`` is one of the excluded folders or inside one (``HERMES_HOME``)."""
        return any(path == ex or path.startswith(ex + "/") for ex in self._exclude)

    def _git(self, *args: str, stdin: bytes | None = None, index: Path | None = None, ok: tuple[int, ...] = (0,),
             out: Any = subprocess.PIPE) -> bytes:
        git = git_program()
        if git is None:
            raise ShadowError("checkpoints need git, which is not installed (apt-get install git)", missing_git=True)
        try:
            done = subprocess.run([git, *SAFE_CONFIG, *args], input=stdin, stdout=out, stderr=subprocess.PIPE,
                                  timeout=GIT_TIMEOUT, env=_git_env(self.git_dir, self.root, index), cwd=self.root)
        except subprocess.TimeoutExpired:
            raise ShadowError(f"git {args[0]} took over {GIT_TIMEOUT:.0f} s in {self.root}", timed_out=True) from None
        except OSError as exc:
            raise ShadowError(f"git {args[0]} could not run in {self.root}: {exc.strerror or exc}") from None
        if done.returncode not in ok:
            said = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise ShadowError(f"git {args[0]} failed in {self.root}: {said[-1] if said else f'exit {done.returncode}'}")
        return done.stdout or b""

    def head(self) -> str | None:
        """The newest snapshot's commit, or None before the first. Call while locked: the ref
        is a file only this module writes (by rename, under the lock), so it is read as one."""
        try:
            text = (self.git_dir / HEAD_REF).read_text().strip()
        except FileNotFoundError:
            return None
        return text if len(text) == 40 and all(c in "0123456789abcdef" for c in text) else None

    def _set_head(self, commit: str) -> None:
        ref = self.git_dir / HEAD_REF
        tmp = ref.with_name(f"head.{secrets.token_hex(4)}")
        tmp.write_text(commit + "\n")
        os.replace(tmp, ref)

    # -- snapshots ------------------------------------------------------------------------

    def snapshot(self, message: str) -> Snapshot:
        """Capture the folder (blocking; takes the lock). Nothing changed: the previous commit."""
        started = time.perf_counter()
        with self.locked():
            shot = self._snapshot(message)
        shot.seconds = time.perf_counter() - started
        return shot

    def _snapshot(self, message: str) -> Snapshot:
        head = self.head()
        big_before = self._big()
        still = self._over(big_before)
        freed = big_before - set(still)  # skipped before, under the cap now: captured from now on
        paths = self._status() if head is not None else self._untracked()
        if head is not None and not paths and not freed:
            return Snapshot(head)
        new_big = self._over(paths)  # the files over the cap among those that changed: said
        if set(still) | set(new_big) != big_before:
            self._set_big(set(still) | set(new_big))
        paths += sorted(freed - set(paths))
        if not self._stage(paths, set(still) | set(new_big)) and head is not None:
            return Snapshot(head, skipped=new_big)  # only files over the cap changed
        tree = self._git("write-tree").decode().strip()
        parent = ("-p", head) if head else ()
        commit = self._git("commit-tree", tree, *parent, "-m", message or "snapshot").decode().strip()
        self._set_head(commit)
        changed = [p for p in paths if p not in new_big and p not in still] if head is not None else []
        return Snapshot(commit, parent=head, changed=changed, skipped=new_big)

    def _status(self, index: Path | None = None) -> list[str]:
        """Paths that differ from the last snapshot (the index), untracked ones included; not
        the excluded folders, not a repository of its own inside the folder (``sub/``)."""
        out = self._git("status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames",
                        "--ignore-submodules=all", index=index)
        paths = (entry[3:].decode("utf-8", "surrogateescape") for entry in out.split(b"\0") if len(entry) > 3)
        return [p for p in paths if not p.endswith("/") and not self._never(p)]

    def _untracked(self) -> list[str]:
        """Every file of the folder git would capture (the first snapshot: all are new)."""
        out = self._git("ls-files", "-z", "--others", "--exclude-standard")
        paths = (p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p)
        return [p for p in paths if not p.endswith("/") and not self._never(p)]

    def _over(self, paths: Iterable[str]) -> dict[str, int]:
        """Of ``paths``, the regular files over the cap, with their sizes."""
        sizes = {}
        for path in paths:
            size = self._size(path)
            if size is not None and size > self.max_file_size:
                sizes[path] = size
        return sizes

    def _size(self, rel: str) -> int | None:
        try:
            st = os.lstat(os.path.join(self.root, rel))
        except OSError:
            return None
        return st.st_size if stat.S_ISREG(st.st_mode) else None

    def _stage(self, paths: list[str], big: set[str], index: Path | None = None) -> bool:
        """Bring the index to the folder as it is for ``paths``; files over the cap are taken
        out of it (not captured, never restored or removed by a rollback). True if anything
        was staged."""
        tracked_big = [p for p in paths if p in big]
        if tracked_big:
            self._git("rm", "--cached", "-q", "--ignore-unmatch", "--pathspec-from-file=-", "--pathspec-file-nul",
                      stdin=_nul(tracked_big), index=index)
        rest = [p for p in paths if p not in big]
        if not rest:
            return bool(tracked_big)
        # A file whose folder became a link is gone as far as the folder is concerned.
        gone = {p for p in rest if self._beyond_link(p)}
        if gone:
            self._git("update-index", "--force-remove", "-z", "--stdin", stdin=_nul(sorted(gone)) + b"\0", index=index)
            rest = [p for p in rest if p not in gone]
        if not rest:
            return True
        try:  # the paths git status named: update only them (a third of `git add`'s time)
            self._git("update-index", "--add", "--remove", "-z", "--stdin", stdin=_nul(rest) + b"\0", index=index)
        except ShadowError:  # a file we may not read: the others as git add sees them
            self._git("add", "-A", "--ignore-errors", "--pathspec-from-file=-", "--pathspec-file-nul",
                      stdin=_nul(rest), index=index, ok=(0, 1))
        return True

    def _beyond_link(self, rel: str) -> bool:
        """One of ``rel``'s folders is a link (or not a folder) now."""
        folder = self.root
        for part in rel.split("/")[:-1]:
            folder = os.path.join(folder, part)
            try:
                if not stat.S_ISDIR(os.lstat(folder).st_mode):
                    return True
            except OSError:
                return False  # missing: an ordinary removal
        return False

    def numstat(self, old: str, new: str) -> dict[str, tuple[int, int]]:
        """Lines added and removed per path from commit ``old`` to ``new`` (``-1, -1`` for a
        binary file). Blocking; reads objects only, so it needs no lock."""
        out = self._git("diff-tree", "-r", "-z", "--numstat", "--no-renames", "--no-ext-diff", "--no-textconv",
                        old, new)
        changed: dict[str, tuple[int, int]] = {}
        for item in out.split(b"\0"):
            if not item:
                continue
            added, removed, path = item.split(b"\t", 2)
            changed[path.decode("utf-8", "surrogateescape")] = (
                int(added) if added != b"-" else -1, int(removed) if removed != b"-" else -1)
        return changed

    # -- reading what was captured ----------------------------------------------------------

    def tree_now(self) -> str:
        """The folder as it is now, as a tree, without taking a snapshot (a private index:
        nothing is attributed, the newest snapshot is unchanged). Call while locked."""
        private = self.dir / f"index.now.{secrets.token_hex(4)}"
        try:
            with contextlib.suppress(FileNotFoundError):
                shutil.copyfile(self.git_dir / "index", private)
            paths = self._status(index=private) if self.head() is not None else self._untracked()
            self._stage(paths, self._big() | set(self._over(paths)), index=private)
            return self._git("write-tree", index=private).decode().strip()
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(private)

    def diff(self, commit: str, handle: Any) -> None:
        """Write the unified diff from ``commit`` to the folder as it is now to ``handle`` (a
        binary file: streamed by git itself, never held whole here). Blocking."""
        with self.locked():
            now = self.tree_now()
            handle.flush()
            self._git("diff-tree", "-r", "-p", "--no-renames", "--no-ext-diff", "--no-textconv", "--no-color",
                      commit, now, out=handle)

    def changes(self, commit: str, paths: Iterable[str] | None) -> list[Change]:
        """What restoring ``paths`` (all when None; a folder means what is in it) to ``commit``
        would write or remove, in path order (blocking)."""
        with self.locked():
            return self._changes(commit, self.tree_now(), paths)

    def _changes(self, commit: str, now: str, paths: Iterable[str] | None) -> list[Change]:
        # The whole difference, filtered here: a pathspec per path would not fit on a command
        # line for a ledger of thousands.
        wanted = None if paths is None else set(paths)
        if wanted is not None and not wanted:
            return []
        out = self._git("diff-tree", "-r", "-z", "--name-status", "--no-renames", commit, now)
        parts = [p for p in out.split(b"\0") if p]
        actions = {"M": "restore", "T": "restore", "A": "delete", "D": "recreate"}
        found = []
        for i in range(0, len(parts) - 1, 2):
            path = parts[i + 1].decode("utf-8", "surrogateescape")
            if self._never(path) or (wanted is not None and not _chosen(path, wanted)):
                continue
            found.append(Change(path, actions.get(parts[i].decode()[:1], "restore")))
        return sorted(found, key=lambda c: c.path)

    def restore(self, commit: str, changes: list[Change]) -> list[str]:
        """Write the files of ``changes`` as ``commit`` has them, remove those it has not
        (blocking); returns one line per path that could not be done. Every path is reached
        through folder descriptors opened without following links: a link planted where a
        folder was is removed, never written through."""
        problems: list[str] = []
        changes = [c for c in changes if not self._never(c.path)]
        with self.locked():
            entries = self._entries(commit, {c.path for c in changes if c.action != "delete"})
            kept_dirs: set[str] | None = None
            for change in (c for c in changes if c.action == "delete"):
                try:
                    _remove(self.root, change.path)
                    if kept_dirs is None:
                        kept_dirs = self._dirs(commit)
                    _prune_parents(self.root, change.path, kept_dirs)
                except OSError as exc:
                    problems.append(f"{change.path}: {exc.strerror or exc}")
            writes = [c for c in changes if c.action != "delete" and c.path in entries]
            for start in range(0, len(writes), RESTORE_BATCH):  # a batch's bytes at a time, never all
                batch = writes[start:start + RESTORE_BATCH]
                blobs = self._blobs(sorted({entries[c.path][1] for c in batch}))
                for change in batch:
                    mode, blob = entries[change.path]
                    try:
                        _put(self.root, change.path, mode, blobs[blob])
                    except OSError as exc:
                        problems.append(f"{change.path}: {exc.strerror or exc}")
        return problems

    def _entries(self, commit: str, paths: set[str]) -> dict[str, tuple[str, str]]:
        if not paths:
            return {}
        out = self._git("ls-tree", "-r", "-z", "--full-tree", commit)
        entries = {}
        for item in out.split(b"\0"):
            if not item:
                continue
            meta, raw = item.split(b"\t", 1)
            path = raw.decode("utf-8", "surrogateescape")
            mode, kind, blob = meta.decode().split(" ")
            if kind == "blob" and path in paths:
                entries[path] = (mode, blob)
        return entries

    def _blobs(self, ids: list[str]) -> dict[str, bytes]:
        if not ids:
            return {}
        out = self._git("cat-file", "--batch", stdin="".join(i + "\n" for i in ids).encode())
        blobs, at = {}, 0
        for blob in ids:
            end = out.find(b"\n", at)
            header = out[at:end].split(b" ") if end >= 0 else [b"missing"]
            if len(header) != 3 or header[1] != b"blob":
                raise ShadowError(f"the checkpoint's copy of a file ({blob[:12]}) is missing from "
                                  f"{self.git_dir}: the shadow repository is damaged")
            size = int(header[2])
            blobs[blob] = out[end + 1:end + 1 + size]
            at = end + 1 + size + 1
        return blobs

    def _dirs(self, commit: str) -> set[str]:
        out = self._git("ls-tree", "-r", "-d", "-z", "--name-only", "--full-tree", commit)
        return {p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p}

    def files(self, commit: str) -> list[str]:
        """Every file ``commit`` holds (blocking)."""
        with self.locked():
            out = self._git("ls-tree", "-r", "-z", "--name-only", "--full-tree", commit)
        return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]


def _chosen(path: str, wanted: set[str]) -> bool:
    """``path`` is one of ``wanted`` or inside one of them (``.``: everything)."""
    if path in wanted or "." in wanted:
        return True
    parent = path.rpartition("/")[0]
    while parent:
        if parent in wanted:
            return True
        parent = parent.rpartition("/")[0]
    return False


# -- writing into the folder without following links ---------------------------------------

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _open_parent(root: str, rel: str, *, make: bool) -> tuple[int, str] | None:
    """A descriptor of ``rel``'s folder, reached from ``root`` one real folder at a time, and
    the last name. ``make``: folders that are missing are made, and a link or file where a
    folder must be is removed first. Without ``make``, None when the folder is not there."""
    parts = rel.split("/")
    fd = os.open(root, _DIR_FLAGS)  # the folder itself swapped for a link: refused, not followed
    try:
        for part in parts[:-1]:
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except (FileNotFoundError, NotADirectoryError, OSError) as exc:
                if not make:
                    os.close(fd)
                    return None
                if not isinstance(exc, FileNotFoundError):  # a link or a file where a folder was
                    os.unlink(part, dir_fd=fd)
                os.mkdir(part, 0o755, dir_fd=fd)
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd, parts[-1]


def _put(root: str, rel: str, mode: str, data: bytes) -> None:
    opened = _open_parent(root, rel, make=True)
    assert opened is not None
    fd, name = opened
    try:
        keep = None
        with contextlib.suppress(FileNotFoundError):
            st = os.lstat(name, dir_fd=fd)
            if stat.S_ISDIR(st.st_mode):
                os.rmdir(name, dir_fd=fd)  # a folder made after, now empty; one with files stays (an error)
            elif stat.S_ISREG(st.st_mode):
                keep = st.st_mode & 0o777  # a private file (0600) stays private; git keeps only the x bit
        tmp = f".{name[:40]}.hermes-restore.{secrets.token_hex(4)}"
        if mode == "120000":
            os.symlink(data.decode("utf-8", "surrogateescape"), tmp, dir_fd=fd)
        else:
            out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                          0o777 if mode == "100755" else 0o666, dir_fd=fd)
            try:
                if keep is not None:
                    executable = keep | ((keep & 0o444) >> 2) if mode == "100755" else keep & ~0o111
                    os.fchmod(out, executable)
                view = memoryview(data)
                while view:
                    view = view[os.write(out, view):]
            finally:
                os.close(out)
        try:
            os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=fd)
            raise
    finally:
        os.close(fd)


def _remove(root: str, rel: str) -> None:
    opened = _open_parent(root, rel, make=False)
    if opened is None:
        return
    fd, name = opened
    try:
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISDIR(os.lstat(name, dir_fd=fd).st_mode):
                os.rmdir(name, dir_fd=fd)
            else:
                os.unlink(name, dir_fd=fd)
    finally:
        os.close(fd)


def _prune_parents(root: str, rel: str, kept: set[str]) -> None:
    """Remove the folders of a removed file that are empty now and that the checkpoint did not have."""
    parent = rel.rpartition("/")[0]
    while parent and parent not in kept:
        opened = _open_parent(root, parent, make=False)
        if opened is None:
            return
        fd, name = opened
        try:
            os.rmdir(name, dir_fd=fd)
        except OSError:
            return
        finally:
            os.close(fd)
        parent = parent.rpartition("/")[0]


# -- small helpers ------------------------------------------------------------------------------

def _write_if_changed(path: Path, text: str) -> None:
    try:
        if path.read_text() == text:
            return
    except (FileNotFoundError, UnicodeDecodeError):
        pass
    tmp = path.with_name(f"{path.name}.{secrets.token_hex(4)}")
    tmp.write_text(text)
    os.replace(tmp, path)


def _escape(path: str) -> str:
    """A path as a literal gitignore pattern."""
    out = "".join("\\" + c if c in "*?[]\\!#" else c for c in path)
    return out[:-1] + "\\ " if out.endswith(" ") else out


def _join(folder: str, name: str) -> str:
    return name if folder == "." else f"{folder}/{name}"


def _nul(paths: Iterable[str]) -> bytes:
    return b"\0".join(p.encode("utf-8", "surrogateescape") for p in paths)
