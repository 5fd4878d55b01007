"""Where a word of a command lands on this machine, when it runs: the hard floor's view of paths.

The rest of the analysis reads words as text. The floor must judge the command *as it will
run*: in its real working directory, with ``~`` and ``$HOME`` expanded as the shell will,
symlinks followed as the kernel will (``rm -rf LINK/`` goes through the link, ``rm -rf LINK``
removes the link), globs matched against the file system at check time, and ``..`` resolved.
A word made partly of text known only at run time (``$(...)``, an unknown variable, a pipe's
output) is *unknown*; it is bounded only by what is known around the unknown part.

File-system look-ups are bounded: a glob stops after :data:`MAX_MATCHES` matches or
:data:`TIME_BUDGET` seconds for the whole analysis, and past the bound the word is unknown.
"""

from __future__ import annotations

import glob
import itertools
import os
import re
import stat
import time
from collections.abc import Mapping
from fnmatch import fnmatchcase
from functools import cached_property, lru_cache

from hermes_tui.runtime.danger.parse import COMPUTED, FRESH
from hermes_tui.runtime.danger.paths import HARMLESS_DEVICES, SYSTEM_DIRS, Paths

TOP_LEVEL = frozenset({"/run", "/nix", "/libx32", "/lib32", "/lost+found", "/efi", "/snap", "/cdrom"})
"""Top-level system folders beyond :data:`~.paths.SYSTEM_DIRS` that no recursive delete may hit."""
MAX_MATCHES = 1000
"""A glob matching more paths than this is unknown."""
TIME_BUDGET = 0.25
"""Seconds of file-system look-ups one analysis may spend; past it, what is left is unknown."""
UNKNOWN_CWD = "\ue006"
"""The working directory after ``cd`` to a folder known only at run time."""
_WILDCARDS_ONLY = re.compile(r"(\*|\?|\[[^\]]*\])*\*(\*|\?|\[[^\]]*\])*")
_GLOB = re.compile(r"[*?[]")
ENV_NAMES = ("HOME", "TMPDIR", "USER", "LOGNAME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME",
             "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "VIRTUAL_ENV")
"""Variables of the shell's environment read as known values (paths a command deletes or writes)."""


def has_glob(word: str) -> bool:
    """True when ``word`` holds a glob character (quoted ones too: reading a literal ``*`` as a
    glob can only make the verdict stricter)."""
    return _GLOB.search(word) is not None


def covers_all(pattern: str) -> bool:
    """True for a last path part that matches every entry of its folder: ``*``, ``.*``, ``?*``,
    ``[!.]*``, ``[a-z]*`` (leading dots, then wildcards only)."""
    return _WILDCARDS_ONLY.fullmatch(pattern.lstrip(".")) is not None


def glob_matches(name: str, pattern: str) -> bool:
    """Whether bash's glob ``pattern`` matches the file name ``name`` (a leading dot must be
    matched by a dot, ``[^...]`` is a negation as ``[!...]``)."""
    if name.startswith(".") and not pattern.startswith("."):
        return False
    return fnmatchcase(name, pattern.replace("[^", "[!"))


class Place:
    """The working directory and environment a command runs with, and what is protected there."""

    def __init__(self, paths: Paths, cwd: str | None, env: Mapping[str, str] | None = None) -> None:
        self.paths = paths
        self.shell_home = ((env or {}).get("HOME") or paths.home).rstrip("/") or "/"
        """What ``~`` and ``$HOME`` expand to in the shell that runs the command."""
        self.cwd = _real(cwd) if cwd else None
        """The working directory (real path); None when not given (relative words are then read
        as text only), :data:`UNKNOWN_CWD` after ``cd`` to a folder known only at run time."""
        self.deadline = time.monotonic() + TIME_BUDGET
        self.links: dict[str, str] = {}
        """Symlinks the command itself makes before it deletes (``ln -sfn ~ x && rm -rf x/``):
        path -> where it points (:data:`COMPUTED` when that is known only at run time)."""

    # Most commands delete nothing: what is protected is looked up on first use only.

    @cached_property
    def named(self) -> dict[str, str]:
        """Your home(s) and $HERMES_HOME, as spelled and as real paths, with what they are."""
        homes = {self.paths.home, self.shell_home}
        named = {p: "your home" for p in homes} | {self.paths.hermes_home: "$HERMES_HOME"}
        return named | {_real(p): what for p, what in named.items()}

    @cached_property
    def protected(self) -> frozenset[str]:
        """Folders no recursive delete may hit: /, the system folders, your home, $HERMES_HOME."""
        return _system_folders() | frozenset(self.named)

    @cached_property
    def protected_names(self) -> frozenset[str]:
        """The last parts of :attr:`protected` (a folder by that name may be one of them)."""
        return frozenset(os.path.basename(p) for p in self.protected)

    def copy(self) -> Place:
        """A place that a ``cd`` in text read for another reason (a script written for later)
        cannot move."""
        other = Place.__new__(Place)
        other.__dict__.update(self.__dict__)
        return other

    def variables(self, text: str, env: Mapping[str, str] | None) -> dict[str, str]:
        """Known values of the shell's variables: its environment's paths, and ``$PWD`` unless
        the text changes folder (then ``$PWD`` is known only at run time)."""
        known = {name: (env or {})[name] for name in ENV_NAMES if (env or {}).get(name)}
        known["HOME"] = self.shell_home
        if self.cwd and self.cwd != UNKNOWN_CWD and not re.search(r"\b(cd|pushd|popd)\b", text):
            known["PWD"] = self.cwd
        return known

    # -- words to paths -----------------------------------------------------------------------

    def absolute(self, word: str) -> str | None:
        """``word`` with ``~`` expanded and joined to the working directory; None when it is
        relative and the working directory is not known."""
        if word == "~" or word.startswith("~/"):
            word = self.shell_home + word[1:]
        if word.startswith("/"):
            return "/" + word.lstrip("/") if word.startswith("//") else word
        if not self.cwd or self.cwd == UNKNOWN_CWD:
            return None
        return os.path.join(self.cwd, word) if word else self.cwd

    def landing(self, word: str) -> str | None:
        """Where an operand of ``rm`` lands: every folder on the way followed, the last part
        followed only with a trailing slash (``LINK/``) or when it is ``.`` or ``..``."""
        path = self.absolute(word)
        if path is None:
            return None
        follow = path.endswith("/") or path.rsplit("/", 1)[-1] in (".", "..")
        path = path.rstrip("/") or "/"
        if self.links:
            if follow:
                path = self._through_links(os.path.normpath(path)) or UNKNOWN_CWD
            else:
                parent, name = os.path.split(path)
                path = os.path.join(self._through_links(os.path.normpath(parent or "/")) or UNKNOWN_CWD, name)
            if UNKNOWN_CWD in path:
                return UNKNOWN_CWD
        if follow or path == "/":
            return _real(path)
        parent, name = os.path.split(path)
        return os.path.join(_real(parent or "/"), name)

    def written(self, word: str) -> str | None:
        """Where writing ``word`` lands: every symlink followed (``>`` opens through one)."""
        if word in HARMLESS_DEVICES or word.startswith(("/dev/fd/", "/proc/self/fd/", "/dev/tcp/", "/dev/udp/")):
            return None
        path = self.absolute(word)
        return _real(path) if path is not None else None

    def link(self, target: str, name: str) -> None:
        """Remember ``ln -s TARGET NAME``: later words through NAME are judged at TARGET."""
        where = self.absolute(name) if COMPUTED not in name else None
        if where is None:
            return
        where = where.rstrip("/") or "/"
        if os.path.isdir(where) and not os.path.islink(where):
            where = os.path.join(where, os.path.basename(target.rstrip("/")))  # ln -s T DIR makes DIR/T
        if COMPUTED in target:
            self.links[os.path.normpath(where)] = COMPUTED
            return
        pointed = target if target.startswith(("/", "~")) else os.path.join(os.path.dirname(where), target)
        self.links[os.path.normpath(where)] = self.absolute(pointed) or pointed

    def _through_links(self, path: str) -> str | None:
        """``path`` with a symlink the command makes replaced by its target; None when that
        target is known only at run time."""
        for _ in range(8):
            for link, target in self.links.items():
                if path == link or path.startswith(link.rstrip("/") + "/"):
                    if target == COMPUTED:
                        return None
                    path = target + path[len(link):]
                    break
            else:
                return path
        return path

    def cd(self, args: list[str]) -> None:
        """Follow ``cd DIR`` (``pushd DIR``): later relative words land there."""
        operands = [a for a in args if not (a.startswith("-") and a != "-")]
        target = operands[0] if operands else "~"
        if COMPUTED in target or target == "-" or has_glob(target):
            self.cwd = UNKNOWN_CWD
            return
        path = self.absolute(target)
        self.cwd = _real(path) if path is not None else UNKNOWN_CWD

    def show(self, path: str) -> str:
        """A protected path as a person reads it."""
        if path == "/":
            return "/ (the root)"
        what = self.named.get(path)
        return f"{what} ({path})" if what else f"{path} (a system folder)"

    # -- the floor ----------------------------------------------------------------------------

    def recursive_delete(self, word: str) -> str | None:
        """Why ``rm -r WORD`` must be refused (None when it may be asked): it lands on a
        protected folder, a glob covers one, or it cannot be known where it lands."""
        if FRESH in word:
            return None if word.startswith(FRESH) and ".." not in word and COMPUTED not in word.replace(FRESH, "") \
                else self._unknown(word)
        if COMPUTED in word:
            return self._unknown(word)
        if has_glob(word):
            return self._glob(word)
        if self.absolute(word) is None:
            return self._unplaced(word)
        path = self.landing(word)
        if path == UNKNOWN_CWD:
            return (f"deletes {word} through a symlink the command makes to a place known only at run time: "
                    "write the folder's name out instead")
        if path in self.protected:
            how = "" if path == self.paths.normal(word.rstrip("/") or "/") else f" (as {word} resolves)"
            return f"deletes {self.show(path)}{how}"
        return None

    def _unplaced(self, word: str) -> str | None:
        # A relative word after `cd` to a folder known only at run time: judged by its name.
        if self.cwd != UNKNOWN_CWD:
            return None
        name = word.rstrip("/").rsplit("/", 1)[-1]
        if name in ("", ".", "..") or name in self.protected_names or has_glob(word):
            return (f"deletes {word} in a folder known only at run time (cd to a $(...) or a variable): it "
                    "could be your home or a system folder; write the full path out instead")
        return None

    def _glob(self, word: str) -> str | None:
        path = self.absolute(word)
        if path is None:
            return self._unplaced(word)
        trailing = path.endswith("/")
        folder, _, pattern = path.rstrip("/").rpartition("/")
        if not has_glob(folder) and not trailing:
            # Only the last part is a glob: its matches are entries of one real folder, and rm
            # removes a symlink among them without following it. No listing is needed.
            real = self.landing((folder or "") + "/") or "/"  # through the symlinks on the way
            if real == UNKNOWN_CWD:
                return f"deletes what {word} matches, through a symlink to a place known only at run time"
            if real in self.protected and covers_all(pattern):
                return f"deletes everything in {self.show(real)} ({word})"
            hit = next((p for p in sorted(self.protected)
                        if os.path.dirname(p) == real and p != "/" and glob_matches(os.path.basename(p), pattern)),
                       None)
            return f"deletes {self.show(hit)}, which {word} matches" if hit else None
        matches = self._expand(path.rstrip("/"))
        if matches is None:
            return (f"deletes what {word} matches, which is too many paths to check ({MAX_MATCHES}+): "
                    "name the folders instead")
        for match in matches:
            landed = self.landing(match + ("/" if trailing else ""))
            if landed in self.protected:
                return f"deletes {self.show(landed)}, which {word} matches"
            parent, name = os.path.split(match)
            if _real(parent) in self.protected and covers_all(pattern):
                return f"deletes everything in {self.show(_real(parent))} ({word})"
        return None

    def _expand(self, pattern: str) -> list[str] | None:
        """The paths ``pattern`` matches now, at most :data:`MAX_MATCHES`; None past the bound."""
        found = []
        try:
            for match in itertools.islice(glob.iglob(pattern), MAX_MATCHES + 1):
                found.append(match)
                if len(found) > MAX_MATCHES or time.monotonic() > self.deadline:
                    return None
        except (OSError, RecursionError, ValueError):
            return None
        return found

    def _unknown(self, word: str) -> str | None:
        """A word with a part known only at run time: refused unless what is known around that
        part keeps it off every protected folder."""
        last = word.rfind(COMPUTED)
        tail = word[last + 1:].rstrip("/")
        if "/" in tail:  # `$DIR/build`: whatever DIR is, the folder deleted is named build
            name = tail.rsplit("/", 1)[1]
            if name not in ("", ".", "..") and not has_glob(name) and name not in self.protected_names:
                return None
        first = min(i for i in (word.find(COMPUTED), word.find(FRESH)) if i >= 0)
        prefix = word[:first]
        unknown = ("deletes recursively a folder known only at run time ($(...), a variable, a loop or a pipe's "
                   "output): it could be / or your home")
        if not prefix:
            return f"{unknown}; write the folder's name out instead"
        base = self.absolute(prefix)
        if base is None:
            return self._unplaced(prefix) and f"{unknown}; write the full path out instead"
        folder, _, partial = base.rpartition("/")
        real = _real(folder or "/")
        candidates = {real} if partial in ("", ".") else {os.path.dirname(real)} if partial == ".." else set()
        start = real.rstrip("/") + "/" + partial
        hit = next((p for p in sorted(self.protected) if p in candidates or (partial not in (".", "..") and
                                                                             p.startswith(start) and p != "/")), None)
        if hit is None:
            return None
        return (f"deletes recursively {word.replace(FRESH, '…').replace(COMPUTED, '…')}, whose part after {prefix} "
                f"is known only at run time: it can be empty or complete it to {self.show(hit)}; write the "
                "folder's name out instead")

    # -- devices --------------------------------------------------------------------------------

    def block_device(self, word: str) -> bool:
        """True when writing ``word`` would open a block device of this machine (through any
        symlink), or a device known only at run time (``/dev/$X``)."""
        if COMPUTED in word:
            prefix = self.absolute(word[:word.find(COMPUTED)]) or ""
            return bool(prefix) and ("/dev/".startswith(prefix) or prefix.startswith("/dev/"))
        path = self.written(word)
        if path is None or time.monotonic() > self.deadline:
            return False
        try:
            return stat.S_ISBLK(os.stat(path).st_mode)
        except (OSError, ValueError):
            return False


@lru_cache(maxsize=1)
def _system_folders() -> frozenset[str]:
    """/ and the system folders, as spelled and, for a symlinked one (/bin -> usr/bin), as real
    paths. Read once: they do not move while the app runs."""
    return frozenset(SYSTEM_DIRS | TOP_LEVEL | {_real(p) for p in SYSTEM_DIRS | TOP_LEVEL if os.path.islink(p)})


def _real(path: str) -> str:
    """The real path (symlinks and ``..`` resolved as the kernel will; missing parts kept)."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return os.path.normpath(path)
