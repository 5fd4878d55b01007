"""Which paths matter: system directories, your home, keys and credentials, start-up files."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from hermes_tui.base.fsutil import open_regular, real_path
from hermes_tui.runtime.danger.instruction_names import reason_for

SYSTEM_DIRS = frozenset({
    "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/opt", "/proc", "/root", "/sbin",
    "/srv", "/sys", "/usr", "/var", "/usr/bin", "/usr/lib", "/usr/local", "/usr/sbin", "/usr/share", "/var/lib",
    "/var/log", "/snap", "/System", "/Library", "/Applications", "/Users", "/private", "/mnt", "/media",
})
DISK_DEVICE_RE = re.compile(r"^/dev/(sd|hd|vd|xvd|nvme|mmcblk|disk|rdisk|md|dm-|mapper/|loop|sr|nbd|zd|mem$|kmem$|port$)")
HARMLESS_DEVICES = frozenset({
    "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty", "/dev/zero", "/dev/random", "/dev/urandom",
    "/dev/full", "/dev/fd/0", "/dev/fd/1", "/dev/fd/2", "/dev/ptmx",
})
CREDENTIAL_DIRS = (
    ".ssh", ".aws", ".kube", ".docker", ".config/gh", ".config/gcloud", ".azure", ".gnupg", ".password-store",
    ".config/hub", ".config/op", ".terraform.d", ".oci", ".config/doctl", ".config/heroku",
)
"""Directories under your home whose every file is a key or a credential."""
CREDENTIAL_FILES = (
    ".netrc", ".git-credentials", ".npmrc", ".pypirc", ".pgpass", ".my.cnf", ".vault-token", ".boto",
    ".s3cfg", ".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials", ".config/pip/pip.conf",
    ".local/share/keyrings",
)
START_UP_FILES = frozenset({
    ".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zprofile", ".zshenv", ".zlogin",
    ".config/fish/config.fish", ".bash_logout", ".inputrc", ".xprofile", ".xinitrc", ".pam_environment",
})
GIT_CONFIG_FILES = frozenset({".gitconfig", ".config/git/config", ".config/git/attributes"})
TOOL_START_UP_FILES = frozenset({".vimrc", ".gvimrc", ".exrc", ".lesskey", ".config/lesskey", ".nanorc",
                                 ".emacs", ".pythonrc", ".pythonrc.py", ".psqlrc", ".sqliterc", ".npmrc"})
TOOL_START_UP_DIRS = (".vim/", ".config/nvim/", ".emacs.d/", ".ipython/", ".jupyter/", ".config/direnv/")
PYTHON_CODE_DIRS = frozenset({"site-packages", "dist-packages"})
SYSTEM_WRITE_PREFIXES = ("/etc", "/boot", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/var/spool/cron",
                         "/System", "/Library", "/sys", "/proc", "/private")
SECRET_FILES = (
    ".aws/credentials", ".netrc", ".git-credentials", ".docker/config.json", ".kube/config", ".npmrc", ".pypirc",
    ".config/gh/hosts.yml", ".gnupg/private-keys-v1.d", ".gnupg/secring.gpg", ".password-store", ".pgpass",
    ".config/gcloud/credentials.db", ".config/gcloud/application_default_credentials.json",
    ".config/gcloud/access_tokens.db", ".azure/accessTokens.json", ".azure/msal_token_cache.json", ".vault-token",
    ".cargo/credentials", ".cargo/credentials.toml", ".config/hub", ".terraform.d/credentials.tfrc.json",
)
"""Files under your home that are secrets themselves (reading one sends it to the model)."""
_SECRET_HINT = re.compile(r"\.(env|aws|ssh|netrc|git-cred|docker|kube|npmrc|pypirc|gnupg|password|pgpass|config|"
                          r"azure|vault|cargo|terraform|hermes)|id_|shadow|ssh_host|credentials|environ|/k?mem$|kcore")
SSH_NOT_SECRET = frozenset({"config", "known_hosts", "known_hosts.old", "authorized_keys", "authorized_keys2", "rc"})
"""Files in ``~/.ssh`` that hold no key; every other one (not ``*.pub``) may be a private key,
whatever it is called (``~/.ssh/work``, ``~/.ssh/github_deploy``)."""
PROCESS_MEMORY_RE = re.compile(r"^/proc/[^/]+/(task/[^/]+/)?(environ|mem)$")
"""A process's environment or memory: its keys are there (``/proc/self/environ``)."""
MEMORY_DEVICES = frozenset({"/proc/kcore", "/dev/mem", "/dev/kmem"})
KEY_SUFFIXES = (".key", ".p12", ".pfx", ".ppk", ".jks", ".keystore", ".p8")
"""Files named like these are private keys or key stores, whatever they hold."""
PEM_PRIVATE_KEY = re.compile(rb"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")
PEM_PROBE = 1 << 20
"""Bytes of a ``.pem`` file read to see whether it holds a private key (certificates do not)."""
READS_SECRET = "reads a credentials file (its contents would reach the model)"
"""The reason shown when a read (``cat``, ``read_file``, ``search_files``) would reach a secret."""
WINDOWS_PATH_RE = re.compile(r"^[A-Za-z]:[\\/]")


def basename(path: str) -> str:
    """The last part of ``path`` (``/bin/rm`` -> ``rm``), fast."""
    return path.rstrip("/").rsplit("/", 1)[-1] if "/" in path else path


def _posix(word: str) -> str:
    return word.replace("\\", "/") if WINDOWS_PATH_RE.match(word) else word


@dataclass(slots=True)
class Paths:
    """Your home and HERMES_HOME, to read ``~``, ``$HOME`` and the protected files."""

    home: str
    hermes_home: str
    place: Any = None
    """A :class:`.places.Place` (not imported: that module builds on this one): where the
    command runs (its working directory, its shell's home), when known; paths are then also
    judged as they resolve on this machine."""
    instructions: tuple[str, ...] = ()
    """Names (globs) of agent instruction files: writing one is always asked
    (:mod:`hermes_tui.runtime.instructions`)."""

    @classmethod
    def of(cls, home: str | None, hermes_home: str | None, instructions: tuple[str, ...] = ()) -> Paths:
        """Defaults: the user's home, and ``~/.hermes``."""
        home = (home or os.path.expanduser("~")).rstrip("/") or "/"
        return cls(home, (hermes_home or os.path.join(home, ".hermes")).rstrip("/") or "/", instructions=instructions)

    def normal(self, word: str) -> str:
        """``word`` with ``~`` expanded and, when absolute, normalised."""
        if word == "~" or word.startswith("~/"):
            word = self.home + word[1:]
        if not word.startswith("/"):
            return word
        normal = os.path.normpath(word)
        # POSIX keeps a leading "//" (implementation-defined); Linux reads it as "/", and so must
        # we: "//root/.bashrc" is /root/.bashrc, not a path outside every protected directory.
        return "/" + normal.lstrip("/") if normal.startswith("//") else normal

    def _in_home(self, path: str) -> str | None:
        return path[len(self.home) + 1:] if path.startswith(self.home + "/") else None

    def wide(self, word: str) -> bool:
        """True for /, a system directory, your home, everything in one (``/*``, ``~/.*``), a
        glob at the top (``/[a-z]*``, ``/?*/``) or another user's home (``~root``)."""
        if re.match(r"^/+[^/]*[*?[]", word) or re.match(r"^~[A-Za-z_][\w-]*/?$", word):
            return True
        stripped = re.sub(r"/(\.?\*)+$", "", word) if re.search(r"/\.?\*$", word) else word
        normal = self.normal(stripped or "/")
        return normal in SYSTEM_DIRS or normal == self.home or normal == os.path.dirname(self.home) == "/home"

    def secret(self, word: str) -> bool:
        """True for a file that is itself a key or a credential (``~/.aws/credentials``,
        ``id_ed25519``, ``.env``): reading it would put the secret in the model's context."""
        if not _SECRET_HINT.search(word):
            return False
        path = self.normal(_posix(word))
        rel = self._in_home(path)
        if rel is not None and any(rel == f or rel.startswith(f + "/") for f in SECRET_FILES):
            return True
        if path in (f"{self.hermes_home}/.env", f"{self.hermes_home}/auth.json"):
            return True
        if rel is not None and rel.startswith(".ssh/"):  # keys have any name, in any folder there
            return basename(rel) not in SSH_NOT_SECRET and not rel.endswith(".pub")
        if PROCESS_MEMORY_RE.match(path) or path in MEMORY_DEVICES:
            return True
        base = basename(path)
        return base == ".env" or (base.startswith(".env.") and not base.endswith((".example", ".sample", ".template"))) \
            or re.fullmatch(r"id_(rsa|dsa|ecdsa|ed25519)(_sk)?", base) is not None \
            or path in ("/etc/shadow", "/etc/gshadow") or path.startswith("/etc/ssh/ssh_host_") and \
            not path.endswith(".pub")

    def credential(self, word: str) -> bool:
        """True for a file (or directory) that holds keys or credentials."""
        word = _posix(word)
        if WINDOWS_PATH_RE.match(word):  # C:\Users\me\.ssh\id_rsa: judged by its parts
            parts = word.lower().split("/")
            return any(f".{d}" in parts for d in ("ssh", "aws", "kube", "docker", "azure", "gnupg")) or \
                parts[-1] == ".env" or parts[-1].startswith("id_")
        path = self.normal(word)
        rel = self._in_home(path)
        if path == self.home:
            return False
        if rel is not None:
            if any(rel == d or rel.startswith(d + "/") for d in CREDENTIAL_DIRS):
                return True
            if any(rel == f or rel.startswith(f + "/") for f in CREDENTIAL_FILES):
                return True
        if path in (f"{self.hermes_home}/.env", f"{self.hermes_home}/auth.json") or \
                path.startswith(f"{self.hermes_home}/secrets"):
            return True
        base = basename(path)
        return base == ".env" or base.startswith(".env.") and base not in (".env.example", ".env.sample",
                                                                             ".env.template") \
            or re.fullmatch(r"id_(rsa|dsa|ecdsa|ed25519)(_sk)?", base) is not None \
            or path in ("/etc/shadow", "/etc/gshadow", "/etc/sudoers") or path.startswith("/etc/ssh/ssh_host_")

    def protected(self, word: str) -> str | None:
        """Why writing ``word`` is dangerous, if it is."""
        path = self.normal(word)
        instruction = reason_for(path, self.instructions) if self.instructions else None
        if instruction:
            return instruction
        parts = path.split("/")
        if ".git" in parts[:-1] or parts[-1] == ".git":
            # .git/config (core.fsmonitor, core.pager, aliases) and .git/hooks/* run code on the
            # next git command, which a rule may allow without asking ("git status")
            return "writes inside a git directory (its config and hooks run code on the next git command)"
        runs_later = _runs_code_later(parts)
        if runs_later:
            return runs_later
        if not path.startswith("/"):
            base = basename(path)
            if base == ".env" or (base.startswith(".env.") and not base.endswith((".example", ".sample", ".template"))):
                return "writes a credentials file (.env)"
            return None
        hermes = self.hermes_home
        if path in (f"{hermes}/config.yaml", f"{hermes}/.env", f"{hermes}/tui/allowlist.yaml", f"{hermes}/auth.json"):
            return "writes hermes-tui's own configuration, keys or approval rules"
        if path == f"{hermes}/skills" or path.startswith(f"{hermes}/skills/"):
            return "writes hermes skills (code the agent loads later)"
        if path == hermes or path.startswith(f"{hermes}/"):
            # the rest (tui/, sessions, cache/exec records, memories): state the app and Hermes
            # Agent trust; a forged record or session would be shown to you as real
            return "writes under $HERMES_HOME (hermes-tui's and Hermes Agent's own state)"
        if any(path == p or path.startswith(p + "/") for p in SYSTEM_WRITE_PREFIXES):
            return f"writes to {path.split('/')[1] and '/' + path.split('/')[1]} (system files)"
        rel = self._in_home(path)
        if rel is not None:
            if rel == ".ssh" or rel.startswith(".ssh/"):
                return "writes to ~/.ssh (keys and trusted hosts)"
            if rel in START_UP_FILES or rel.startswith(".bashrc.d/"):
                return "writes a shell start-up file (runs in every new shell)"
            if rel in GIT_CONFIG_FILES:
                return "writes your git configuration (core.fsmonitor, core.pager and aliases run code)"
            if rel in TOOL_START_UP_FILES or rel.startswith(TOOL_START_UP_DIRS):
                return "writes a start-up file of a tool you run (an editor, a pager, IPython)"
        if self.credential(path) or self.secret(path):
            return "writes a credentials file or directory"
        return None

    def device(self, word: str) -> str | None:
        """'disk' for a disk device, 'device' for another /dev node, None otherwise."""
        path = self.normal(word)
        if path == "/proc/sysrq-trigger":
            return "disk"  # SysRq: reboot or crash the machine at once
        if not path.startswith("/dev/") or path in HARMLESS_DEVICES or path.startswith(("/dev/fd/", "/dev/shm/",
                                                                                         "/dev/pts/")):
            return None
        if DISK_DEVICE_RE.match(path) or any(c in path for c in "*?[") or \
                path.startswith(("/dev/root", "/dev/block/", "/dev/sg", "/dev/vg", "/dev/disk/")):
            return "disk"  # a glob under /dev may match a disk
        return "device"


# -- for the file tools: real paths, symlinks and what a file holds --------------------------
# The shell analysis above reads words; the file tools act on real files, so they also look
# at where a path really leads and, for a .pem, at what it holds.


def single_root(path: str) -> str:
    """``path`` with a leading ``//`` read as ``/``, as Linux reads it (POSIX and pathlib keep it)."""
    return "/" + path.lstrip("/") if path.startswith("//") else path


def real_write_target(path: str) -> str:
    """Where writing the absolute ``path`` really lands: its parent's real path and its name.

    The last part is not followed: the file tools write by rename, which replaces a symlink
    there instead of writing through it. Every directory on the way is followed, as the kernel
    will (``proj/link/authorized_keys`` with ``link -> ~/.ssh`` lands in ``~/.ssh``).
    """
    path = single_root(path)
    parent, name = os.path.split(path)
    if name in ("", ".", ".."):
        return real_path(path)
    return os.path.join(real_path(parent or "/"), name)


def real_read_target(path: str) -> str:
    """Where reading the absolute ``path`` really lands: every symlink followed."""
    return real_path(single_root(path))


def variants(home: str | None, hermes_home: str | None, instructions: tuple[str, ...] = ()) -> list[Paths]:
    """:class:`Paths` for your home and HERMES_HOME as spelled and, when different, as their
    real paths: a real path must match ``/home/u`` even when ``/home`` is a symlink."""
    spelled = Paths.of(home, hermes_home, instructions)
    real = Paths(real_path(spelled.home), real_path(spelled.hermes_home), instructions=instructions)
    return [spelled] if real == spelled else [spelled, real]


def private_key_file(path: str) -> bool:
    """True for an existing key store named like one (``*.key``, ``*.p12``, ...) or a ``.pem``
    that holds a private key (a certificate bundle such as certifi's ``cacert.pem`` does not).
    Reads at most :data:`PEM_PROBE` bytes of a ``.pem``; one that exists but cannot be read (or
    is not a regular file) counts as a key. A file that does not exist holds no key yet.

    Nothing but a regular file is ever opened (the host runs as root: a ``.pem`` linked to
    ``/dev/watchdog`` would arm it): :func:`~hermes_tui.base.fsutil.open_regular`."""
    lower = path.lower()
    if not lower.endswith((*KEY_SUFFIXES, ".pem")):
        return False
    try:
        fd = open_regular(path)
    except FileNotFoundError:
        return False
    except (OSError, ValueError):  # not a regular file, or not readable: taken as a key
        return True
    try:
        return lower.endswith(KEY_SUFFIXES) or PEM_PRIVATE_KEY.search(os.read(fd, PEM_PROBE)) is not None
    except OSError:
        return True
    finally:
        os.close(fd)


def reads_secret(path: str, home: str | None = None, hermes_home: str | None = None, *,
                 judged_by: list[Paths] | None = None) -> bool:
    """True when reading the absolute ``path`` would put a key or a credential in the model's
    context: what ``cat`` of it is flagged for (:meth:`Paths.secret`), or a private key file.
    ``judged_by``: :func:`variants` computed once, for many paths."""
    return any(p.secret(path) for p in judged_by or variants(home, hermes_home)) or private_key_file(path)


def host_memory(path: str) -> bool:
    """True for this process's own environment, memory or open files under ``/proc``: the keys
    the scrub keeps from kernels are there, so no tool may read them, in any approvals mode."""
    parts = single_root(path).split("/")
    if len(parts) < 4 or parts[1] != "proc" or parts[2] not in ("self", "thread-self", str(os.getpid())):
        return False
    rest = parts[3:]
    if rest[0] == "task" and len(rest) >= 3:  # /proc/self/task/<tid>/environ: the same process
        rest = rest[2:]
    if rest[0] in ("environ", "mem"):
        return True
    return rest[0] in ("fd", "map_files") and len(rest) > 1  # an open pipe or file of the host's


def _runs_code_later(parts: list[str]) -> str | None:
    """Why a file at these path parts runs code the next time something starts, if it does:
    a venv's interpreter or activate script, Python's start-up hooks, a direnv file."""
    base = parts[-1]
    if base == ".envrc":
        return "writes a direnv file (runs when a shell enters the folder)"
    if base.endswith(".pth") or base in ("sitecustomize.py", "usercustomize.py"):
        return "writes a Python start-up hook (runs in every Python that starts)"
    if PYTHON_CODE_DIRS.intersection(parts[:-1]):
        return "writes into installed Python packages (code the next import runs)"
    if len(parts) >= 2 and parts[-2] == "bin" and base.startswith(("python", "activate", "pip")):
        return "writes an interpreter or activate script of a Python environment"
    return None
