"""Which paths a sandboxed process may write, which it may never write, and which it may not read.

Everything here is plain path arithmetic over the file system as it is when a process starts
(globs expanded, symlinks resolved): the mechanisms (:mod:`.bwrap`, :mod:`.landlock`) turn a
:class:`Layout` into mounts or rules.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import glob
import os
import re
import site
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

STARTUP_FILES = (
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv", ".zprofile",
    ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".kshrc", ".inputrc", ".pam_environment", ".xprofile", ".xsessionrc",
    ".config/fish", ".config/environment.d", ".config/systemd", ".config/autostart", ".local/bin", ".ssh",
    ".gitconfig", ".config/git", ".pythonrc", ".pythonrc.py",
)
"""Under the user's home: what a shell, a login, git or the desktop runs later. Never written by
a sandboxed process, even when the home lies inside a writable root."""

SECRETS = (
    ".aws", ".config/gcloud", ".kube/config", ".docker/config.json", ".netrc", ".pgpass", ".git-credentials",
    ".gnupg", ".pypirc", ".config/gh/hosts.yml", ".azure",
)
"""Under the user's home: files and folders of credentials no sandboxed process may read."""

HERMES_SECRETS = (".env", "auth.json", "config.yaml")
"""Under ``$HERMES_HOME``: the keys Hermes Agent and hermes-tui read (never a sandbox's);
config.yaml may hold a key (``model.api_key``) or the store's password in its URL."""

SSH_PUBLIC = ("known_hosts", "config", "authorized_keys", "environment")
"""Files in ``~/.ssh`` that hold no private key (with every ``*.pub``); the rest are hidden."""

SYSTEM_ROOTS = frozenset({"/", "/proc", "/sys", "/dev", "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
                          "/boot", "/run", "/var", "/home"})
"""Never a writable root (a workspace or ``writable_roots`` entry equal to one is refused)."""


@dataclass(frozen=True)
class Layout:
    """What one sandboxed process may touch, in absolute real paths.

    ``writable``: folders it may write (workspace, temp dir, extra roots). ``protected``: paths
    inside those that stay read-only. ``git``: a root's ``.git/hooks`` and ``.git/config``, read-only
    too where the mechanism can carve them out (bubblewrap); ``pinned``: folders that must not be
    renamed or removed (a ``.git`` whose hooks are protected: renaming it would let a fresh one
    take its place). ``hidden``: paths it may not read at all.
    """

    writable: tuple[str, ...]
    protected: tuple[str, ...] = ()
    git: tuple[str, ...] = ()
    pinned: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    refused: tuple[str, ...] = field(default=(), compare=False)
    read_only: bool = False
    """``code_execution.sandbox: read-only``: not even the workspace is writable."""
    sealed: tuple[str, ...] = ()
    """Folders whose entries made after the process started stay hidden from it: a secret may
    appear there later (``$HERMES_HOME/.env`` after a login, a new key in ``~/.ssh``)."""
    """Roots that were asked for but cannot be writable (a system folder, missing): said in doctor."""


def real(path: str | Path) -> str:
    """``path`` with ``~`` expanded, made absolute, symlinks resolved."""
    return os.path.realpath(os.path.expanduser(str(path)))


def inside(path: str, folder: str) -> bool:
    """True when ``path`` is ``folder`` or lies beneath it (both real and absolute)."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def host_code() -> list[str]:
    """The host's interpreter, its standard library and site-packages, and hermes-tui's own
    package: code the key-holding host imports or runs."""
    return list(_host_code())


@functools.lru_cache(maxsize=1)
def _host_code() -> tuple[str, ...]:
    # Found once per process: the interpreter and the packages it runs from do not move while
    # it runs, and every kernel's layout needs them (issue 30's cold start).
    import hermes_tui

    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(real(sys.executable)),
             os.path.dirname(os.path.abspath(hermes_tui.__file__))}
    try:
        paths.update(site.getsitepackages())
    except AttributeError:  # a virtualenv's old site.py
        pass
    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    if user_site:
        paths.add(user_site)
    return tuple(sorted({real(p) for p in paths}))


def _expand(patterns: Iterable[str], base: str) -> list[str]:
    found: list[str] = []
    for pattern in patterns:
        path = os.path.join(base, os.path.expanduser(pattern))
        matches = glob.glob(path, include_hidden=True) if glob.has_magic(path) else [path]
        found.extend(real(match) for match in matches if os.path.lexists(match))
    return found


def ssh_private(user_home: str) -> list[str]:
    """Files in ``~/.ssh`` that may hold a private key: all but public keys and known_hosts/config."""
    folder = os.path.join(user_home, ".ssh")
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(real(os.path.join(folder, name)) for name in names
                  if not name.endswith(".pub") and not name.startswith(SSH_PUBLIC))


def hidden_paths(hermes_home: str, user_home: str, extra: Iterable[str], cwd: str) -> list[str]:
    """Every existing path a sandboxed process may not read (the built-in secrets and ``extra``)."""
    hidden = _expand(SECRETS, user_home) + _expand(HERMES_SECRETS, hermes_home) + ssh_private(user_home)
    if os.environ.get("PGPASSFILE"):
        hidden += _expand([os.environ["PGPASSFILE"]], cwd)
    hidden += _expand(extra, cwd)
    return _outermost(hidden)


def protected_paths(hermes_home: str, user_home: str) -> list[str]:
    """Paths never written by a sandboxed process, whether or not they exist yet."""
    paths = [real(hermes_home), *host_code()]
    paths += [real(os.path.join(user_home, name)) for name in STARTUP_FILES]
    return _outermost(paths)


REPO_DEPTH = 3
"""How deep below a writable root repositories are looked for (``root/a/b/.git``)."""
REPO_SCAN = 3000
"""Folders looked at, at most, per root: a huge tree is not walked whole at each start."""
NOT_SCANNED = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", "site-packages", ".tox", ".mypy_cache",
                         "target", "build", "dist", ".cache"})
_walks: dict[tuple[str, float, tuple[str, ...]], tuple[float, list[str], list[str]]] = {}
WALK_KEPT = 10.0
"""Seconds a walk is reused while its root is unchanged: a nested instruction file made since
is found by the next process started after that."""


def walk(root: str, instructions: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    """``(repositories, instruction files)`` at most :data:`REPO_DEPTH` below ``root`` (itself
    included; :data:`REPO_SCAN` folders at most): the folders holding a ``.git`` folder, and the
    regular files whose names match ``instructions`` (a symlink is left: binding it would bind its
    target). Cached per root, its modification time and the names, for :data:`WALK_KEPT`
    seconds (a change deeper than the root does not change the root's time). Blocking."""
    from hermes_tui.runtime.danger.instruction_names import matches

    try:
        key = (root, os.stat(root).st_mtime, instructions)
    except OSError:
        return [], []
    kept = _walks.get(key)
    if kept is not None and time.monotonic() - kept[0] < WALK_KEPT:
        return kept[1], kept[2]
    repos: list[str] = []
    files: list[str] = []
    queue = collections.deque([(root, 0)])
    seen = 0
    while queue and seen < REPO_SCAN:
        folder, depth = queue.popleft()
        seen += 1
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.name == ".git" and entry.is_dir(follow_symlinks=False):
                repos.append(folder)
            elif instructions and entry.is_file(follow_symlinks=False) and matches(entry.name, instructions):
                files.append(real(entry.path))
            elif depth < REPO_DEPTH and entry.name not in NOT_SCANNED and entry.is_dir(follow_symlinks=False):
                queue.append((entry.path, depth + 1))
    if len(_walks) > 256:
        _walks.clear()
    _walks[key] = (time.monotonic(), repos, files)
    return repos, files


def repository_guards(repos: list[str]) -> tuple[list[str], list[str]]:
    """:func:`git_guards` of each repository (nested ones and submodules too)."""
    pins: list[str] = []
    guarded: list[str] = []
    for repo in repos:
        more_pins, more_guarded = git_guards(repo)
        pins += more_pins
        guarded += more_guarded
    return pins, guarded


def git_guards(root: str) -> tuple[list[str], list[str]]:
    """For a folder with a ``.git`` folder: what to pin (``.git`` itself) and protect (its
    hooks and config, its submodules' too, and a ``core.hooksPath`` in the work tree: all run
    code in the user's next git command)."""
    git = os.path.join(root, ".git")
    if not os.path.isdir(git) or os.path.islink(git):
        return [], []
    hooks = os.path.join(git, "hooks")
    if not os.path.lexists(hooks):
        # A mount needs something to cover: an empty hooks folder is what `git init` makes.
        with contextlib.suppress(OSError):
            os.mkdir(hooks, 0o755)
    guarded = [os.path.join(git, name) for name in ("hooks", "config") if os.path.lexists(os.path.join(git, name))]
    guarded += [path for module in glob.glob(os.path.join(git, "modules", "*"))
                for path in (os.path.join(module, "hooks"), os.path.join(module, "config")) if os.path.lexists(path)]
    hooks_path = _configured_hooks(os.path.join(git, "config"), root)
    if hooks_path is not None and os.path.isdir(hooks_path):  # husky and kin: hooks in the work tree
        guarded.append(real(hooks_path))
    return [git], guarded


_HOOKS_PATH = re.compile(r"^\s*hookspath\s*=\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)


def _configured_hooks(config: str, root: str) -> str | None:
    """``core.hooksPath`` of a repository's config (read as text: no git runs), absolute."""
    try:
        with open(config, encoding="utf-8", errors="replace") as handle:
            found = _HOOKS_PATH.findall(handle.read(65536))
    except OSError:
        return None
    if not found:
        return None
    value = found[-1].strip().strip('"')
    return os.path.join(root, os.path.expanduser(value))


def _outermost(paths: Iterable[str]) -> list[str]:
    """``paths`` without duplicates or paths beneath another one of them, sorted."""
    kept: list[str] = []
    exact: set[str] = set()
    folders: set[str] = set()  # each kept path as ``inside`` compares it: trailing slashes off
    for path in sorted(set(paths), key=lambda p: (p.count("/"), p)):
        # inside(path, other) for a kept ``other``, by lookups instead of a scan of them all:
        # ``path`` is ``other``, or ``other`` (slashes off) is ``path`` cut before one of its slashes.
        if path in exact:
            continue
        cut = path.find("/")
        while cut >= 0 and path[:cut] not in folders:
            cut = path.find("/", cut + 1)
        if cut >= 0:
            continue
        kept.append(path)
        exact.add(path)
        folders.add(path.rstrip("/"))
    return sorted(kept)


def layout(*, writable: Iterable[str], hermes_home: str, user_home: str, extra_hidden: Iterable[str] = (),
           cwd: str = "/", read_only: bool = False, instructions: tuple[str, ...] = ()) -> Layout:
    """The :class:`Layout` of a process that may write ``writable`` (existing folders; the
    system folders of :data:`SYSTEM_ROOTS` are refused). ``instructions``: names of agent
    instruction files; those found in a root are read-only where the mechanism can carve a
    file out (bubblewrap), with the ``.git`` guards."""
    never = protected_paths(hermes_home, user_home)
    roots: list[str] = []
    refused: list[str] = []
    for folder in writable:
        path = real(folder)
        if path in SYSTEM_ROOTS or not os.path.isdir(path) or any(inside(path, p) for p in never):
            refused.append(path)
        else:
            roots.append(path)
    roots = _outermost(roots)
    protected = [p for p in never if any(inside(p, r) for r in roots)]
    pinned: list[str] = []
    git: list[str] = []
    for root in roots:
        repos, instruction_files = walk(root, instructions)
        pins, guarded = repository_guards(repos)
        pinned += pins
        git += guarded + instruction_files
    hidden = hidden_paths(hermes_home, user_home, extra_hidden, cwd)
    sealed = [folder for folder in (real(hermes_home), real(os.path.join(user_home, ".ssh")))
              if os.path.isdir(folder) and not any(inside(folder, h) for h in hidden)]
    return Layout(tuple(roots), tuple(protected), tuple(git), tuple(pinned), tuple(hidden), tuple(refused),
                  read_only, tuple(sealed))
