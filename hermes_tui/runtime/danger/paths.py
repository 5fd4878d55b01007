"""Which paths matter: system directories, your home, keys and credentials, start-up files."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

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
                          r"azure|vault|cargo|terraform|hermes)|id_|shadow|ssh_host|credentials")
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

    @classmethod
    def of(cls, home: str | None, hermes_home: str | None) -> Paths:
        """Defaults: the user's home, and ``~/.hermes``."""
        home = (home or os.path.expanduser("~")).rstrip("/") or "/"
        return cls(home, (hermes_home or os.path.join(home, ".hermes")).rstrip("/") or "/")

    def normal(self, word: str) -> str:
        """``word`` with ``~`` expanded and, when absolute, normalised."""
        if word == "~" or word.startswith("~/"):
            word = self.home + word[1:]
        if not word.startswith("/"):
            return word
        normal = os.path.normpath(word)
        return "/" if normal.startswith("//") else normal

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
        if any(path == p or path.startswith(p + "/") for p in SYSTEM_WRITE_PREFIXES):
            return f"writes to {path.split('/')[1] and '/' + path.split('/')[1]} (system files)"
        rel = self._in_home(path)
        if rel is not None:
            if rel == ".ssh" or rel.startswith(".ssh/"):
                return "writes to ~/.ssh (keys and trusted hosts)"
            if rel in START_UP_FILES or rel.startswith(".bashrc.d/"):
                return "writes a shell start-up file (runs in every new shell)"
        if self.credential(path):
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
