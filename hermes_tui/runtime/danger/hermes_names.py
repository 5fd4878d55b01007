"""Hermes Agent's dangerous-pattern names, as they appear in ``command_allowlist``.

When a Hermes Agent user answers "always" to a flagged command, Hermes Agent stores not the
command but the *description* of the pattern that flagged it (``recursive delete``,
``SQL DROP``, ``git force push (rewrites remote history)``) in ``command_allowlist`` of
config.yaml, and from then on every command that pattern flags runs without asking. hermes-tui
reads the same file, so such an entry is read as a *category rule*: it lifts the flags of
ours that mean the same thing (:data:`CATEGORIES`), and nothing else.

The rules of the mapping:

* A name lifts only the flag reasons listed for it here, each matched whole (an exact reason,
  a regular expression over the whole reason, or a fixed start that names a program and its
  option). A reason that merely *contains* a covered one — ``writes a script (x.sh) that
  deletes recursively ...``, ``hands Hermes a command that ...`` — is never lifted.
* The hard floor (:attr:`~hermes_tui.runtime.danger.Analysis.hard`) is never lifted: the gate
  refuses it before it looks at any rule.
* A name whose closest flag of ours covers more than Hermes Agent's pattern (``delete in root
  path``: ours also covers system directories and your home), that we refuse outright, or that
  has no flag of ours at all, is known but unmapped (:data:`UNMAPPED`): it allows nothing, and
  :func:`unmapped_allowlist_entries` says why (``hermes-tui doctor``, ``approvals rules``).

Known loosening, by design: our reasons say *what* is written or run, not *how*. So
``overwrite system file via tee`` also lifts writing /etc with ``cp`` or a redirection (all of
them give "writes to /etc (system files)"), ``recursive delete`` also lifts ``rm -f`` (one flag
for ``-r`` and ``-f``), ``SQL DROP`` lifts a DROP of any object kind, ``shell execution via
heredoc`` also lifts ``echo CMD | bash`` (whose text is still read), and each decoder key
(base64, xxd, openssl) lifts the one shared "runs decoded, hidden code" flag whatever decoder
fed the shell.

The names are Hermes Agent 0.19.0's ``DANGEROUS_PATTERNS`` descriptions, the keys of its
parser-based detector, and the ones added on its main branch since (``_config_version`` 50).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

Cover = Callable[[str], bool]
"""True for a flag reason (a string our analysis adds) that a category lifts."""


def _exact(*reasons: str) -> Cover:
    chosen = frozenset(reasons)
    return chosen.__contains__


def _whole(pattern: str, flags: int = 0) -> Cover:
    compiled = re.compile(pattern, flags)
    return lambda reason: compiled.fullmatch(reason) is not None


def _starts(*prefixes: str) -> Cover:
    return lambda reason: reason.startswith(prefixes)


# -- our flag reasons (as hermes_tui.runtime.danger adds them) ------------------------------

_RM = _exact("deletes recursively or by force (rm -r / -f)")
_FIND_DELETE = _exact("deletes every file find matches (find -delete)")
_FIND_EXEC = _exact("deletes or moves every file find matches (find -exec rm)")
_WORLD_WRITABLE = _exact("makes files writable by everyone (chmod 777 / o+w)")
_CHMOD_RECURSIVE = _exact("changes ownership or permissions recursively (chmod -R)")
_CHOWN_RECURSIVE = _exact("changes ownership or permissions recursively (chown -R)")
_SYSTEM_WRITE = _exact("writes to /etc (system files)", "writes to /private (system files)")
_SYSTEM_EDIT = _exact("edits to /etc (system files)", "edits to /private (system files)")
_USER_FILE_WRITE = _exact("writes to ~/.ssh (keys and trusted hosts)",
                          "writes a shell start-up file (runs in every new shell)")
_USER_FILE_EDIT = _exact("edits to ~/.ssh (keys and trusted hosts)",
                         "edits a shell start-up file (runs in every new shell)")
_PROJECT_ENV = _exact("writes a credentials file (.env)")
_REMOTE_SHELL = _whole(r"runs code it downloads \((sh|bash) fed by curl/wget\)")
_REMOTE_SHELL_ANY = _whole(r"runs code it downloads \((sh|bash|zsh|ksh) fed by curl/wget\)")
_REMOTE_EVAL = _whole(r"runs code it downloads \((eval|source) fed by curl/wget\)")
_DECODED = _whole(r"runs decoded, hidden code \((sh|bash|zsh|ksh|dash) fed by base64/xxd/\.\.\.\)")
_KILL_FOUND = _exact("kills processes found at run time (kill $(pgrep ...))")
_BRANCH_D = _exact("deletes a branch even if it is not merged (git branch -D)")
_FORCE_PUSH = _exact("rewrites history on a remote (git push --force)")
_INLINE_CODE = _whole(r"runs inline (python|node|nodejs|perl|ruby|php) code the rules cannot read \([^()]*\)")
_INLINE_POWERSHELL = _exact("runs an inline PowerShell command the rules cannot read (-Command)")
_WINDOWS_DEL = _whole(r"deletes files \(Windows (del|erase|rd|rmdir)(\.exe)?\)", re.IGNORECASE)
_POWERSHELL_DEL = _whole(r"deletes files \(Windows (remove-item|ri|del|erase|rd|rmdir)\)", re.IGNORECASE)
_REMOTE_POWERSHELL = _exact("runs code it downloads or computes (PowerShell Invoke-Expression / download)",
                            "runs text as PowerShell code (Invoke-Expression)")
_KILLALL_9 = _exact("force-kills processes by name (killall -9)")


def _option(tool: str, option: str) -> Cover:
    """``rg --pre CMD``: the option that makes ``tool`` run a program (its value is read too)."""
    return _starts(f"runs a program through an option ({tool} {option}): ")


CATEGORIES: dict[str, tuple[Cover, ...]] = {
    # Hermes Agent 0.19.0 DANGEROUS_PATTERNS
    "recursive delete": (_RM,),
    "recursive delete (long flag)": (_RM,),
    "Windows cmd destructive delete": (_WINDOWS_DEL, _exact("runs a command through cmd.exe (cmd /c)")),
    "Windows PowerShell destructive delete": (_POWERSHELL_DEL,),
    "PowerShell encoded command execution": (_exact("runs an encoded PowerShell command (hidden code)"),),
    "world/other-writable permissions": (_WORLD_WRITABLE,),
    "recursive world/other-writable (long flag)": (_WORLD_WRITABLE, _CHMOD_RECURSIVE),
    "recursive chown to root": (_CHOWN_RECURSIVE,),
    "recursive chown to root (long flag)": (_CHOWN_RECURSIVE,),
    "format filesystem": (_exact("formats a filesystem (mkfs)"),),
    "disk copy": (_exact("works on disks or wipes data (dd)"),),
    "SQL DROP": (_exact("drops a database object (SQL DROP)"),),
    "SQL DELETE without WHERE": (_exact("deletes every row of a table (SQL DELETE without WHERE)"),),
    "SQL TRUNCATE": (_exact("empties a table (SQL TRUNCATE)"),),
    "overwrite system config": (_SYSTEM_WRITE,),
    "stop/restart system service": (_whole(r"controls system services \(systemctl (stop|restart|disable|mask)\)"),),
    "force kill processes": (_exact("force-kills processes by name (pkill -9)"),),
    "force kill processes (killall -KILL)": (_KILLALL_9,),
    "force kill processes (killall -s KILL)": (_KILLALL_9,),
    "pipe remote content to shell": (_REMOTE_SHELL,),
    "execute remote script via process substitution": (_REMOTE_SHELL_ANY,),
    "execute remote content via command substitution": (_REMOTE_EVAL,),
    "pipe decoded content to shell (possible command obfuscation)": (_DECODED,),
    "pipe xxd-decoded content to shell (possible command obfuscation)": (_DECODED,),
    "pipe openssl-decoded content to shell (possible command obfuscation)": (_DECODED,),
    "overwrite system file via tee": (_SYSTEM_WRITE, _USER_FILE_WRITE),
    "overwrite system file via redirection": (_SYSTEM_WRITE, _USER_FILE_WRITE),
    "overwrite project env/config via tee": (_PROJECT_ENV,),
    "overwrite project env/config via redirection": (_PROJECT_ENV,),
    "find -exec/-execdir rm": (_FIND_EXEC,),
    "find -delete": (_FIND_DELETE,),
    "stop/restart hermes gateway (kills running agents)":
        (_exact("stops or restarts the Hermes gateway (kills running agents)"),),
    "docker compose restart/stop/kill/down (container lifecycle)":
        (_whole(r"stops or removes containers( and their volumes)? "
                r"\((docker|docker-compose) compose (restart|stop|kill|down)\)"),),
    "docker restart/stop/kill (container lifecycle)":
        (_whole(r"stops or restarts running containers \(docker (restart|stop|kill)\)"),),
    "kill process via pgrep/pidof expansion (self-termination)": (_KILL_FOUND,),
    "kill process via backtick pgrep/pidof expansion (self-termination)": (_KILL_FOUND,),
    "copy/move file into system config path": (_SYSTEM_WRITE,),
    "overwrite project env/config file": (_PROJECT_ENV,),
    "copy/move file into sensitive credential/SSH/shell-rc path": (_USER_FILE_WRITE,),
    "in-place edit of sensitive credential/SSH/shell-rc path": (_USER_FILE_EDIT,),
    "in-place edit of sensitive credential/SSH/shell-rc path (long flag)": (_USER_FILE_EDIT,),
    "in-place edit of sensitive credential/SSH/shell-rc path (perl/ruby)": (_USER_FILE_EDIT,),
    "in-place edit of system config": (_SYSTEM_EDIT,),
    "in-place edit of system config (long flag)": (_SYSTEM_EDIT,),
    "shell execution via heredoc":
        (_whole(r"runs shell code fed on standard input \((bash|sh|zsh|ksh) <<EOF, \.\.\. \| \1\)"),),
    "git reset --hard (destroys uncommitted changes)":
        (_exact("throws away uncommitted work (git reset --hard)"),),
    "git force push (rewrites remote history)": (_FORCE_PUSH,),
    "git force push short flag (rewrites remote history)": (_FORCE_PUSH,),
    "git clean with force (deletes untracked files)": (_exact("deletes untracked files (git clean -f)"),),
    "git branch force delete": (_BRANCH_D,),
    "git branch force delete (long flags)": (_BRANCH_D,),
    "git branch force delete (long flags, force-first)": (_BRANCH_D,),
    "chmod +x followed by immediate execution":
        (_exact("runs a script it has just made executable (chmod +x, then runs it)"),),
    # Hermes Agent's parser-based detector
    "script execution via -e/-c flag": (_INLINE_CODE, _INLINE_POWERSHELL),
    "script execution via heredoc":
        (_whole(r"runs (python|node|nodejs|perl|ruby|php) code fed on standard input \(a heredoc\) "
                r"the rules cannot read"),),
    "shell command via -c/-lc flag":
        (_whole(r"runs a command through another shell \((bash|sh|zsh|ksh) -c\): its text is read below, "
                r"but read it yourself"),),
    "arbitrary program execution via sort --compress-program": (_option("sort", "--compress-program"),),
    "arbitrary program execution via rg --pre": (_option("rg", "--pre"),),
    "arbitrary program execution via rg --hostname-bin": (_option("rg", "--hostname-bin"),),
    "arbitrary program execution via ag --pager": (_option("ag", "--pager"),),
    "arbitrary program execution via man --pager": (_option("man", "--pager"),),
    "arbitrary program execution via man --html": (_option("man", "--html"),),
    "arbitrary program execution via man -P": (_option("man", "-P"),),
    "arbitrary program execution via man -H": (_option("man", "-H"),),
    # added on Hermes Agent's main branch since 0.19.0
    "recursive delete (flags after operands)": (_RM,),
    "PowerShell destructive delete (Remove-Item)": (_POWERSHELL_DEL,),
    "Windows destructive delete (recursive/quiet switch)": (_WINDOWS_DEL,),
    "pipe remote content to PowerShell (iwr | iex)": (_REMOTE_POWERSHELL,),
    "execute remote content via Invoke-Expression": (_REMOTE_POWERSHELL,),
    "force kill processes (taskkill /F)": (_exact("kills processes (taskkill)"),),
    "force kill processes (Stop-Process -Force)": (_exact("stops processes (Stop-Process)"),),
    "wipe disk (Clear-Disk)": (_exact("wipes a disk (Clear-Disk)"),),
    "disk partitioning (diskpart)": (_exact("works on disks (diskpart)"),),
    "wipe free space (cipher /w)": (_exact("wipes free disk space (cipher /w)"),),
    "delete volume shadow copies (vssadmin)": (_exact("deletes backups or shadow copies (vssadmin delete)"),),
    "delete backups (wbadmin)": (_exact("deletes backups (wbadmin delete)"),),
    "registry delete (reg delete)": (_exact("changes the Windows registry (reg delete)"),),
    "registry value delete (Remove-ItemProperty -Force)":
        (_whole(r"deletes files \(Windows remove-itemproperty\)", re.IGNORECASE),),
    "force stop service (Stop-Service -Force)": (_exact("stops a Windows service (Stop-Service)"),),
    "stop/delete service (sc)": (_exact("changes Windows services (sc stop)", "changes Windows services (sc delete)"),),
    "docker with remote daemon redirect (-H/--host)":
        (_exact("talks to another container daemon (docker -H)", "talks to another container daemon (docker --host)"),),
    "docker with daemon redirect (--context: alternate daemon)":
        (_exact("talks to another container daemon (docker --context)"),),
    "podman with remote daemon redirect (--url/--connection/--identity)":
        (_whole(r"talks to another container daemon \(podman (--url|--connection|--identity)\)"),),
    "podman remote mode (-r/--remote: remote daemon)":
        (_whole(r"talks to another container daemon \(podman (-r|--remote)\)"),),
    "docker/podman daemon redirect via environment (DOCKER_HOST/CONTAINER_HOST)":
        (_whole(r"points tools at another daemon or cluster \((DOCKER_HOST|DOCKER_CONTEXT|CONTAINER_HOST)=\.\.\.\)"),),
    "package manager uninstall": (_whole(r"uninstalls packages \((npm|pnpm|yarn|pip|pip3|brew) [^()]*\)"),),
}
"""Hermes Agent pattern name -> the flag reasons of ours it lifts."""

_REFUSED = "hermes-tui refuses it outright (the hard floor); no rule can allow it"
_NOT_FLAGGED = ("hermes-tui does not flag it, so it needs no rule in manual mode (in strict mode, allow the "
                "command itself)")
_HERMES_FILES = ("our flag for it also covers hermes-tui's approval rules (tui/allowlist.yaml) and auth.json, "
                 "which no category may open")
_SECRETS = "reading or sending credentials always asks here"
_SUDO = "every sudo is flagged here (runs as root), whatever its options"
_ICACLS = "our icacls flag covers every permission change (/grant, /deny, /remove, /setowner, /reset) alike"
_UNREAD = "a command the rules cannot read always asks"

UNMAPPED: dict[str, str] = {
    "delete in root path": "our flag for it also covers system directories and your home, not only /",
    "write to block device": _REFUSED,
    "kill all processes": _REFUSED,
    "fork bomb": _REFUSED,
    "format filesystem (Format-Volume)": _REFUSED,
    "format drive (format.com)": _REFUSED,
    "kill processes by regex (killall -r)": "our flag for it covers every killall by name alike",
    "kill hermes/gateway process (self-termination)": "our flag for it covers every pkill or killall by name alike",
    "stop/restart hermes launchd service (kills running agents)":
        "our flag for it covers stopping or unloading any launchd service alike",
    "modify boot configuration (bcdedit /set)": "our flag for it covers every bcdedit command alike",
    "pipe tr-transformed output to shell (possible command obfuscation)":
        "hermes-tui flags it as shell code from a pipe the rules cannot read, which covers any program",
    "xargs with rm": "the rm that xargs runs is read and flagged by rm's own rules (see recursive delete)",
    "in-place edit of Hermes config/env": _HERMES_FILES,
    "in-place edit of Hermes config/env (long flag)": _HERMES_FILES,
    "in-place edit of Hermes config/env (perl/ruby)": _HERMES_FILES,
    "sudo with privilege flag (stdin/askpass/shell/list)": _SUDO,
    "sudo with combined-flag privilege escalation": _SUDO,
    "hermes update (restarts gateway, kills running agents)": _NOT_FLAGGED,
    "start gateway outside systemd (use 'systemctl --user restart hermes-gateway')": _NOT_FLAGGED,
    "docker context use (switches default daemon for future commands)": _NOT_FLAGGED,
    "command parser limit exceeded": _UNREAD,
    "command parser limit or malformed executable payload": _UNREAD,
    "find dynamic shell word may expand to destructive flag": _UNREAD,
    "dynamic shell word may expand to arbitrary program execution flag": _UNREAD,
    "invisible or bidirectional Unicode control character (possible obfuscation)":
        "hidden characters always ask: the command may not run what it shows",
    "grant Everyone access (icacls)": _ICACLS,
    "reset ACLs recursively (icacls /reset)": _ICACLS,
    "access to SSH keys (Windows path)": _SECRETS,
    "access to Hermes secrets (Windows path)": _SECRETS,
    "cloud metadata endpoint access (instance credentials)": f"{_SECRETS} (its answer holds the machine's cloud "
                                                             "credentials)",
    "upload a secret or credential file via curl/wget (possible exfiltration)": _SECRETS,
    "pipe a credential file into a curl/wget upload (possible exfiltration)": _SECRETS,
}
"""Hermes Agent pattern names with no equivalent here -> why (such an entry allows nothing)."""

_FOLDED = {name.casefold(): name for name in (*CATEGORIES, *UNMAPPED)}


def known_name(entry: str) -> str | None:
    """The Hermes Agent pattern name ``entry`` spells (case and surrounding blanks ignored), or None."""
    return _FOLDED.get(entry.strip().casefold())


def category(entry: str) -> str | None:
    """The mapped Hermes Agent pattern name ``entry`` spells, or None (a command, or an unmapped name)."""
    name = known_name(entry)
    return name if name in CATEGORIES else None


def covers(name: str, reason: str) -> bool:
    """True if the category ``name`` lifts the flag ``reason``."""
    return any(cover(reason) for cover in CATEGORIES.get(name, ()))


def lift(flags: Iterable[str], names: Iterable[str]) -> tuple[list[str], list[str]]:
    """(the flags no category in ``names`` covers, the names that lifted at least one flag)."""
    names = list(dict.fromkeys(names))
    remaining: list[str] = []
    used: list[str] = []
    for reason in flags:
        lifting = [name for name in names if covers(name, reason)]
        if not lifting:
            remaining.append(reason)
        used.extend(name for name in lifting if name not in used)
    return remaining, [name for name in names if name in used]


def unmapped_allowlist_entries(entries: Iterable[object]) -> list[tuple[str, str]]:
    """(entry, why) for each ``command_allowlist`` entry that is a Hermes Agent pattern name
    with no equivalent here: it allows nothing (``hermes-tui doctor`` reports these)."""
    found = []
    for entry in entries:
        if not isinstance(entry, str):
            continue
        name = known_name(entry)
        if name is not None and name in UNMAPPED:
            found.append((entry, UNMAPPED[name]))
    return found
