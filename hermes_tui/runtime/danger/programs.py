"""What each program does with its arguments: the flag categories and the hard floor.

Each rule reads one simple command, already unwrapped (``sudo``, ``env``, ``timeout``, ...)
and expanded, and adds short human reasons to the :class:`~hermes_tui.runtime.danger.Analysis`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from functools import cached_property, lru_cache
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from hermes_tui.runtime.danger.parse import COMPUTED, Command
from hermes_tui.runtime.danger.paths import Paths, basename
from hermes_tui.runtime.danger.wrappers import find_actions, long_option
from hermes_tui.runtime.danger.instruction_names import reason_for

if TYPE_CHECKING:
    from hermes_tui.runtime.danger.analysis import Analysis

DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "http", "https", "xh", "lwp-request", "GET"})
DECODERS = frozenset({"base64", "base32", "xxd", "openssl", "gunzip", "zcat", "gzip", "bzcat", "xzcat", "uudecode",
                      "rev", "basenc", "unxz", "zstdcat"})
INTERPRETERS: dict[str, frozenset[str]] = {
    # the options that take code on the command line
    "python": frozenset({"-c"}), "pypy": frozenset({"-c"}), "perl": frozenset({"-e", "-E"}),
    "ruby": frozenset({"-e"}), "node": frozenset({"-e", "--eval", "-p", "--print"}), "nodejs": frozenset({"-e", "-p"}),
    "php": frozenset({"-r"}), "lua": frozenset({"-e"}), "tsx": frozenset({"-e", "--eval"}),
    "ts-node": frozenset({"-e", "--eval", "-p", "--print"}), "luajit": frozenset({"-e"}), "deno": frozenset({"eval"}),
    "bun": frozenset({"-e", "--eval", "-p", "--print"}), "Rscript": frozenset({"-e"}), "R": frozenset({"-e"}),
    "julia": frozenset({"-e", "--eval"}), "tclsh": frozenset(), "osascript": frozenset({"-e"}),
    "powershell": frozenset({"-c", "-command", "-encodedcommand", "-enc", "-e", "-ec"}),
    "pwsh": frozenset({"-c", "-command", "-encodedcommand", "-enc", "-e", "-ec"}),
}
SQL_CLIENTS = frozenset({"psql", "mysql", "mariadb", "sqlite3", "duckdb", "clickhouse-client", "clickhouse", "sqlcmd",
                         "cockroach", "mongo", "mongosh", "redis-cli", "cqlsh", "snowsql", "bq", "usql", "pgcli",
                         "mycli", "litecli"})
DISK_TOOLS = frozenset({"dd", "wipefs", "fdisk", "sfdisk", "gdisk", "sgdisk", "parted", "mkswap", "shred", "blkdiscard",
                        "badblocks", "cryptsetup", "hdparm", "lvremove", "vgremove", "pvremove", "zpool", "mdadm",
                        "diskutil", "srm", "dmsetup", "losetup"})
METADATA_HOSTS = frozenset({"169.254.169.254", "metadata.google.internal", "fd00:ec2::254", "100.100.100.200",
                            "metadata.azure.com", "169.254.170.2", "metadata", "instance-data",
                            "instance-data.ec2.internal"})
METADATA_RE = re.compile(r"(?<![\w.-])(169\.254\.169\.254|metadata\.google\.internal|\[?fd00:ec2::254\]?|"
                         r"100\.100\.100\.200|169\.254\.170\.2)(?![\w.-]|\.\d)", re.IGNORECASE)
NETWORK_TOOLS = DOWNLOADERS | {"nc", "ncat", "netcat", "socat", "telnet", "python", "python3", "ssh", "openssl",
                               "powershell", "pwsh", "Invoke-WebRequest", "iwr", "irm"}
CREDENTIAL_READ_EXEMPT = frozenset({
    "ls", "stat", "test", "[", "[[", "mkdir", "file", "du", "realpath", "readlink", "dirname", "basename", "ssh",
    "ssh-keygen", "ssh-add", "ssh-copy-id", "echo", "printf", "cd", "pwd", "which", "chmod", "chown", "chgrp",
    "touch", "rm", "git", "sftp", "true", "false", "wc", "exa", "eza", "tree", "find", "id", "command", "type",
    "export", "unset", "source", ".",
})


@dataclass
class Check:
    """One simple command under the rules."""

    program: str
    """The program's name (``rm``; ``python3.11`` reads as ``python``)."""
    args: list[str]
    command: Command
    paths: Paths
    result: Analysis

    @cached_property
    def _split(self) -> tuple[set[str], list[str]]:
        # Most programs have no rule: their flags are never split.
        return split_flags(self.args)

    @property
    def flags(self) -> set[str]:
        """Its flags, short ones split (``-rf`` is ``-r``, ``-f``)."""
        return self._split[0]

    @property
    def operands(self) -> list[str]:
        """Its arguments that are not options."""
        return self._split[1]

    def add(self, reason: str, hard: bool = False) -> None:
        """Flag (or refuse) the command for ``reason``."""
        self.result.add(reason, hard=hard)

    def write(self, target: str, how: str = "writes") -> None:
        """Check one file the command writes."""
        write_target(target, self.paths, self.result, how)


def split_flags(args: list[str]) -> tuple[set[str], list[str]]:
    """Short flags (split: ``-rf`` is ``-r``, ``-f``), long flags, and the operands.

    Options may come after operands (GNU permutes them: ``rm build/ -rf``); ``--`` ends them."""
    flags: set[str] = set()
    operands = []
    dashdash = False
    for arg in args:
        if dashdash or not arg.startswith("-") or arg == "-" or COMPUTED in arg[:2]:
            operands.append(arg)
        elif arg == "--":
            dashdash = True
        elif arg.startswith("--"):
            flags.add(arg.split("=", 1)[0])
        else:
            flags.update(f"-{c}" for c in arg[1:])
            if re.fullmatch(r"-\d+", arg):
                flags.add(arg)
    return flags, operands


def write_target(target: str, paths: Paths, result: Analysis, how: str = "writes") -> None:
    """Flag (or refuse) writing ``target``: a disk device, another device, a protected file.

    With a :class:`~.places.Place`, ``target`` is also judged where it really lands (relative
    to the working directory, through symlinks): ``>> .ssh/authorized_keys`` run in your home
    is a write to ``~/.ssh``, and a symlink to ``/dev/loop0`` is a disk device."""
    if not target or target.startswith("&"):
        return
    device = paths.device(target)
    place = paths.place
    if device == "disk" or (place is not None and place.block_device(target)):
        result.add("writes straight onto a disk device (/dev/...)", hard=True)
        return
    normal = paths.normal(target)
    if normal.startswith(("/dev/tcp/", "/dev/udp/")):
        result.add("opens a network connection through /dev/tcp (a reverse shell or a data leak)")
        return
    if device == "device":
        result.add("writes straight to a device (/dev/...)")
        return
    reason = paths.protected(target)
    if not reason and place is not None and COMPUTED not in target:
        reason = resolved_protection(paths, target, place.absolute(target), place.written(target))
    if reason:
        result.add(reason if how == "writes" else reason.replace("writes", how, 1))


# -- deleting -----------------------------------------------------------------------------


RM_LONG = ("recursive", "force", "no-preserve-root", "dir", "interactive", "one-file-system", "verbose")


def _rm(check: Check) -> None:
    check.flags.update({f"--{long_option(f[2:], RM_LONG)}" for f in check.flags
                        if f.startswith("--") and long_option(f[2:], RM_LONG)})
    recursive = bool(check.flags & {"-r", "-R", "--recursive"})
    if recursive or check.flags & {"-f", "--force"}:
        check.add("deletes recursively or by force (rm -r / -f)")
    wide = "--no-preserve-root" in check.flags or any(check.paths.wide(o) for o in check.operands)
    if recursive and wide:
        check.add("deletes the root, a system directory or your home (rm -r)", hard=True)
    elif wide:
        check.add("deletes files in the root, a system directory or your home")
    place = check.paths.place
    if recursive and not wide and place is not None:
        for operand in check.operands:  # as it will run: resolved, globbed, unknown parts bounded
            why = place.recursive_delete(operand)
            if why:
                check.add(f"{why} (rm -r)", hard=True)
                break
    for operand in check.operands:
        instruction = reason_for(operand, check.paths.instructions) if check.paths.instructions else None
        if instruction:
            check.add(instruction.replace("writes", "deletes", 1))
            continue
        if check.paths.credential(operand) or check.paths.protected(operand) or \
                _protected_at(check.paths, operand):
            check.add("deletes keys, credentials or configuration")
            break
        if COMPUTED in operand and recursive:
            check.add("deletes recursively a path known only at run time (rm -r $VAR)")
            break


def resolved_protection(paths: Paths, word: str, spelled: str | None, real: str | None) -> str | None:
    """Why writing ``word`` is protected once resolved (``spelled``: joined to the working
    directory; ``real``: through symlinks), with the path in the reason when it is not the word.

    A system folder you work in is yours: a relative word that stays inside the working
    directory is not flagged as "system files" (a project in /usr/src/app writes its logs)."""
    place = paths.place
    for path in dict.fromkeys(p for p in (spelled and os.path.normpath(spelled), real) if p):
        found = paths.protected(path) or (paths.device(path) == "device" and "writes straight to a device (/dev/...)")
        if found and found.endswith("(system files)") and not word.startswith(("/", "~")) and place is not None \
                and place.cwd and (path + "/").startswith(place.cwd.rstrip("/") + "/") and ".." not in word:
            continue
        if found:
            return f"{found}: {path}" if path != paths.normal(word) else found
    return None


def _protected_at(paths: Paths, word: str) -> bool:
    place = paths.place
    if place is None or COMPUTED in word:
        return False
    landed = place.landing(word)  # resolved once: it follows symlinks on disk
    return bool(resolved_protection(paths, word, place.absolute(word), landed) or paths.credential(landed or ""))


def find_starts(args: list[str]) -> list[str]:
    """The folders ``find`` starts from (``.`` when none is given)."""
    starts = args[:next((i for i, a in enumerate(args) if a.startswith(("-", "(", "!"))), len(args))]
    return starts or ["."]


def _find(check: Check) -> None:
    if "-delete" in check.args:
        check.add("deletes every file find matches (find -delete)")
    actions = find_actions(check.args)
    deletes = "-delete" in check.args or any(action and basename(action[0]) in ("rm", "shred", "unlink", "rmdir",
                                                                                  "mv", "srm") for action in actions)
    if deletes and "-delete" not in check.args:
        check.add("deletes or moves every file find matches (find -exec rm)")
    starts = [a for a in check.args[:next((i for i, a in enumerate(check.args) if a.startswith(("-", "(", "!"))),
                                          len(check.args))]]
    if deletes and any(check.paths.wide(a) for a in starts):
        check.add("deletes everything under the root, a system directory or your home (find / -delete)", hard=True)
    elif deletes and check.paths.place is not None:
        for start in find_starts(check.args):  # find deletes under each folder it starts from
            why = check.paths.place.recursive_delete(start)
            if why:
                check.add(f"{why} (find deletes under it)", hard=True)
                break
    if any(a in ("-fprint", "-fprint0", "-fprintf", "-fls") for a in check.args):
        for i, arg in enumerate(check.args[:-1]):
            if arg in ("-fprint", "-fprint0", "-fprintf", "-fls"):
                check.write(check.args[i + 1])


# -- permissions --------------------------------------------------------------------------

_OCTAL = re.compile(r"[0-7]{3,4}")


def _mode_opens(mode: str) -> tuple[bool, bool, bool]:
    """(group/other may read or write, everyone may write, setuid/setgid) for a chmod mode."""
    if _OCTAL.fullmatch(mode):
        digits = mode[-3:]
        special = len(mode) == 4 and mode[0] in "4267" and mode[0] != "0"
        group, other = int(digits[1]), int(digits[2])
        return bool(group & 6 or other & 6), bool(other & 2), special
    opens = world = special = False
    for clause in mode.split(","):
        match = re.fullmatch(r"([ugoa]*)([-+=])([rwxXst]*)", clause)
        if not match:
            continue
        who, op, perms = match.groups()
        if op == "-":
            continue
        others = who == "" or bool(set(who) & set("goa"))
        if others and set(perms) & set("rw"):
            opens = True
        if (who == "" or set(who) & set("oa")) and "w" in perms:
            world = True
        if "s" in perms:
            special = True
    return opens, world, special


def _chmod(check: Check) -> None:
    program = check.program
    if check.flags & {"-R", "--recursive"}:
        check.add(f"changes ownership or permissions recursively ({program} -R)")
    targets = check.operands[1:] if check.operands else []
    if any(check.paths.wide(o) for o in targets):
        check.add(f"changes ownership or permissions of the root, a system directory or your home ({program})")
    if program != "chmod" or not check.operands:
        if program in ("chown", "chgrp") and any(check.paths.credential(o) for o in targets):
            check.add("changes who owns keys or credentials")
        return
    opens, world, special = _mode_opens(check.operands[0])
    if opens and any(check.paths.credential(o) or check.paths.normal(o).startswith(check.paths.home + "/.ssh")
                     for o in targets):
        check.add("lets other users read keys or credentials (chmod on ~/.ssh, ~/.aws, ...)")
    if world:
        check.add("makes files writable by everyone (chmod 777 / o+w)")
    if special:
        check.add("sets setuid/setgid (runs with the owner's rights)")


# -- disks and the machine ----------------------------------------------------------------


def _mkfs(check: Check) -> None:
    check.add("formats a filesystem (mkfs)")
    if any(check.paths.device(o) for o in check.operands):
        check.add("formats a device (mkfs)", hard=True)


def _disk(check: Check) -> None:
    check.add(f"works on disks or wipes data ({check.program})")
    if check.program == "dd":
        for arg in check.args:
            if arg.startswith("of="):
                if arg[3:].startswith(COMPUTED):
                    check.add("writes with dd onto a file known only at run time (dd of=$X): it could be a disk; "
                              "write the file's name out instead", hard=True)
                check.write(arg[3:])
    elif check.program in ("shred", "wipefs", "blkdiscard") and any(check.paths.device(o) == "disk"
                                                                     for o in check.operands):
        check.add(f"wipes a disk device ({check.program})", hard=True)


def _power(check: Check) -> None:
    if check.program in ("init", "telinit") and not (check.operands[:1] and
                                                     re.fullmatch(r"0*[06]|runlevel[06]", check.operands[0])):
        return
    if check.program == "shutdown" and check.flags & {"-c", "--help"}:
        return
    check.add("shuts down or reboots the machine", hard=True)


SYSTEMCTL_VALUES = frozenset("-t --type -p --property -s --signal -o --output -n --lines -H --host -M --machine "
                             "--message --root --when --reboot-argument --kill-whom --state --job-mode".split())
POWER_UNITS = re.compile(r"^(reboot|poweroff|halt|kexec|ctrl-alt-del|soft-reboot)\.target$|"
                         r"^systemd-(reboot|poweroff|halt|kexec)\.service$")


def _systemctl(check: Check) -> None:
    operands = []
    skip = False
    for arg in check.args:  # the option values are not the verb: systemctl -t service reboot
        if skip:
            skip = False
        elif arg in SYSTEMCTL_VALUES:
            skip = True
        elif not arg.startswith("-"):
            operands.append(arg)
    verb = operands[0] if operands else ""
    if verb in ("start", "isolate", "restart", "reload-or-restart", "try-restart") and \
            any(POWER_UNITS.match(o) for o in operands[1:]):
        check.add("shuts down or reboots the machine", hard=True)
        return
    if verb in ("emergency", "rescue", "switch-root", "default"):
        check.add(f"drops the machine out of its running state (systemctl {verb})")
    if verb in ("poweroff", "reboot", "halt", "kexec", "suspend", "hibernate", "hybrid-sleep", "soft-reboot"):
        check.add("shuts down or reboots the machine", hard=True)
    elif verb in ("stop", "disable", "mask", "kill", "restart", "isolate", "reload", "daemon-reexec",
                  "try-restart", "reload-or-restart", "set-default", "edit", "revert", "link", "enable"):
        check.add(f"controls system services (systemctl {verb})")


def _service(check: Check) -> None:
    if any(o in ("stop", "restart", "unload", "remove", "bootout", "disable", "kill", "reload", "force-reload",
                 "kickstart") for o in check.operands):
        check.add(f"controls system services ({check.program})")


# -- processes ----------------------------------------------------------------------------


def _kill(check: Check) -> None:
    args = list(check.args)
    if args[:1] in (["-l"], ["-L"], ["--list"], ["--help"]):
        return
    signal = ""
    if args[:1] in (["-s"], ["-n"]) and len(args) > 1:
        signal, args = args[1], args[2:]
    elif args and args[0].startswith("-") and args[0] != "--" and len(args) > 1:
        signal, args = args[0].lstrip("-"), args[1:]  # the first option is the signal: kill -9 PID
    if args[:1] == ["--"]:
        args = args[1:]
    if any(re.fullmatch(r"\s*-0*1\s*", a) for a in args):
        check.add("signals every process you can reach (kill -1)", hard=True)
        return
    if signal.upper().removeprefix("SIG") in ("9", "KILL"):
        check.add("force-kills processes (kill -9)")
    if any(COMPUTED in a for a in args) and any(f.words[:1] and basename(f.words[0]) in
                                                ("pgrep", "pidof", "lsof", "fuser", "ps", "jobs", "cat")
                                                for f in check.command.fed_by):
        check.add("kills processes found at run time (kill $(pgrep ...))")
    elif any(a == COMPUTED for a in args) or "0" in args:
        check.add("kills processes known only at run time")


def _killall(check: Check) -> None:
    if check.flags & {"-l", "--list", "-V", "--version", "--help"} or (check.program == "pkill" and not check.operands):
        return
    # -KILL / -SIGKILL are signal names, not bundles of short flags: look at the words
    if check.program == "killall5" or check.flags & {"-9"} or any(a in ("-KILL", "-SIGKILL") for a in check.args) or \
            ("-s" in check.args and any(a.upper().removeprefix("SIG") in ("KILL", "9") for a in check.args)):
        check.add(f"force-kills processes by name ({check.program} -9)")
    else:
        check.add(f"kills processes by name ({check.program})")


# -- git ----------------------------------------------------------------------------------

GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path",
                               "--config-env", "--super-prefix", "--list-cmds", "--attr-source"})


def git_verb(args: list[str]) -> tuple[str, list[str], list[str]]:
    """(verb, its arguments, the global options before it): ``git -C dir -c k=v push -f``."""
    i = 0
    globals_: list[str] = []
    while i < len(args) and args[i].startswith("-"):
        arg = args[i]
        name = arg.split("=", 1)[0]
        if name in GIT_VALUE_OPTIONS and "=" not in arg and not (arg.startswith("-c") and len(arg) > 2):
            globals_.extend(args[i:i + 2])
            i += 2
        else:
            globals_.append(arg)
            i += 1
    if i >= len(args):
        return "", [], globals_
    return args[i], args[i + 1:], globals_


GIT_CODE_KEYS = frozenset({"core.sshcommand", "core.pager", "core.editor", "core.fsmonitor", "core.hookspath",
                           "credential.helper", "protocol.ext.allow", "core.gitproxy", "sequence.editor",
                           "core.askpass", "gpg.program", "diff.external", "pager.log", "pager.diff"})
GIT_LONG = ("force", "force-with-lease", "force-if-includes", "mirror", "delete", "prune", "hard", "recursive",
            "dry-run", "staged")


def _git_flags(rest: list[str]) -> tuple[set[str], list[str]]:
    """git's flags with long ones completed: git accepts any unique prefix (``--forc``)."""
    flags, operands = split_flags(rest)
    completed = set()
    for flag in flags:
        if flag.startswith("--") and len(flag) > 3:
            full = long_option(flag[2:], GIT_LONG)
            completed.add(f"--{full}" if full else flag)
            if flag.startswith("--force"):
                completed.add("--force")
        else:
            completed.add(flag)
    return completed, operands


def _git(check: Check) -> None:
    verb, rest, globals_ = git_verb(check.args)
    flags, operands = _git_flags(rest)
    for i, option in enumerate(globals_):
        if option == "-c" and i + 1 < len(globals_):
            key = globals_[i + 1].split("=", 1)[0].lower()
            if key in GIT_CODE_KEYS or key.startswith(("alias.", "diff.", "filter.", "merge.")):
                check.add(f"makes git run a command of its choosing (git -c {key}=...)")
    if verb == "config" and operands and (operands[0].lower() in GIT_CODE_KEYS or
                                          operands[0].lower().startswith(("alias.", "diff.", "filter."))) \
            and len(operands) > 1:
        check.add(f"makes git run a command of its choosing (git config {operands[0]})")
    if verb == "reset" and ("--hard" in flags or "--h" in flags or "--ha" in flags):
        check.add("throws away uncommitted work (git reset --hard)")
    elif verb == "push":
        if flags & {"--force", "-f", "--force-with-lease", "--mirror", "--force-if-includes"} or \
                any(o.startswith("+") for o in operands):
            check.add("rewrites history on a remote (git push --force)")
        if flags & {"--delete", "-d", "--prune"} or any(o.startswith(":") and len(o) > 1 for o in operands[1:]):
            check.add("deletes branches or tags on a remote (git push --delete)")
    elif verb == "clean" and flags & {"-f", "--force"} and not flags & {"-n", "--dry-run"}:
        check.add("deletes untracked files (git clean -f)")
    elif verb == "checkout" and ("--" in rest and any(o in (".", ":/", "*") for o in operands) or
                                 flags & {"-f", "--force"} or operands == ["."]):
        check.add("throws away uncommitted changes (git checkout -- . / -f)")
    elif verb == "restore" and not flags & {"--staged", "-S"} and operands and \
            any(o in (".", ":/", "*") for o in operands):
        check.add("throws away uncommitted changes (git restore .)")
    elif verb == "branch" and ("-D" in flags or flags >= {"-d", "-f"} or flags >= {"--delete", "--force"}):
        check.add("deletes a branch even if it is not merged (git branch -D)")
    elif verb == "stash" and operands[:1] in (["drop"], ["clear"]):
        check.add(f"throws away stashed work (git stash {operands[0]})")
    elif verb in ("filter-branch", "filter-repo") or (verb == "reflog" and operands[:1] == ["expire"]) or \
            (verb == "gc" and any(a.startswith("--prune") for a in rest)) or (verb == "update-ref" and "-d" in flags):
        check.add(f"rewrites or prunes history for good (git {verb})")
    elif verb == "rebase" and flags & {"--exec", "-x"}:
        check.add("runs a command for each commit (git rebase --exec)")


# -- code the rules cannot read -----------------------------------------------------------

PROGRAM_OPTIONS: dict[str, tuple[tuple[str, ...], str]] = {
    # program: (long options that name a program to run, short ones)
    "rg": (("pre", "hostname-bin"), ""), "sort": (("compress-program",), ""), "ag": (("pager",), ""),
    "man": (("pager", "html"), "PH"), "tar": (("use-compress-program", "to-command", "rsh-command",
                                              "info-script", "new-volume-script"), "IF"),
    "rsync": (("rsh", "rsync-path"), "e"), "zip": (("unzip-command",), ""), "tcpdump": ((), "z"),
    "git": (("upload-pack", "receive-pack", "exec"), "u"), "less": ((), ""), "ssh": ((), ""),
    "scp": ((), "S"), "journalctl": ((), ""), "psql": ((), ""), 
    "vim": (("cmd",), "c"), "nvim": (("cmd",), "c"), "vi": (("cmd",), "c"), "ex": (("cmd",), "c"),
    "view": (("cmd",), "c"), "emacs": (("eval",), ""), "expect": ((), "c"), "make": (("eval",), ""),
}


OPTION_VALUES: dict[str, frozenset[str]] = {
    "rg": frozenset("-g --glob --iglob --pre-glob -e --regexp -t --type -T --type-not -f --file -m --max-count -A -B "
                    "-C -M -j -r --replace --type-add -E --encoding".split()),
    "sort": frozenset("-o --output -k --key -t --field-separator -S --buffer-size -T --temporary-directory".split()),
    "man": frozenset("-C --config-file -M --manpath -S -s --sections -L --locale -m --systems -E".split()),
    "ag": frozenset("-G --file-search-regex --ignore -g -A -B -C -m -p --path-to-ignore --pager-x".split()),
    "tar": frozenset("-f --file -C --directory -T --files-from -X --exclude-from".split()),
}


def program_options(program: str, args: list[str]) -> list[tuple[str, str]]:
    """(option, value) pairs of ``args`` that make ``program`` run another program or command:
    ``rg --pre CMD``, ``sort --compress-program=CMD``, ``man -P CMD``, ``tar -I CMD``,
    ``rsync -e CMD``, ``ssh -o ProxyCommand=CMD``, ``tar --checkpoint-action=exec=CMD``."""
    if program == "less":
        return [("+!", a[2:]) for a in args if a.startswith("+!")] + \
            [("+", a[1:].split("!", 1)[1]) for a in args if a.startswith("+") and "!" in a[2:]]
    if program == "gdb":
        return [(a, args[i + 1].lstrip("!").removeprefix("shell ")) for i, a in enumerate(args[:-1])
                if a in ("-ex", "-iex", "--ex", "--iex", "-eval-command", "--eval-command")
                and args[i + 1].lstrip().startswith(("!", "shell "))]
    stdin_makefile = [("-f", "cat /dev/stdin") for i, a in enumerate(args[:-1])
                      if program == "make" and a in ("-f", "--file", "--makefile") and STDIN_SCRIPT.match(args[i + 1])]
    if stdin_makefile:
        return stdin_makefile
    if program not in PROGRAM_OPTIONS and program not in ("sftp",):
        return []
    longs, shorts = PROGRAM_OPTIONS.get(program, ((), ""))
    takes_value = OPTION_VALUES.get(program, frozenset())
    found = []
    skip = False
    for i, arg in enumerate(args):
        nxt = args[i + 1] if i + 1 < len(args) else ""
        if skip:
            skip = False
            continue
        if arg == "--":
            break
        if arg in takes_value:
            skip = True  # `sort -o --compress-program`: the file is named --compress-program
            continue
        if arg.startswith("--"):
            name, has_value, value = arg[2:].partition("=")
            if program == "tar" and name.startswith("checkpoint-a") and value.startswith("exec="):
                found.append((f"--{name}", value[5:]))
            elif longs and long_option(name, longs) and (len(name) >= 2 or name in longs):
                found.append((f"--{name}", value if has_value else nxt))
        elif arg.startswith("-") and len(arg) > 1:
            if program in ("ssh", "scp", "sftp", "rsync") and arg == "-o" or arg.startswith("-o") and \
                    program in ("ssh", "scp", "sftp"):
                option = arg[2:] or nxt
                key, _, value = option.partition("=")
                if key.lower() in ("proxycommand", "localcommand", "permitlocalcommand") and value and \
                        key.lower() != "permitlocalcommand":
                    found.append((f"-o {key}", value))
                continue
            for position, letter in enumerate(arg[1:], start=1):
                if letter in shorts:
                    value = arg[position + 1:] or nxt
                    found.append((f"-{letter}", value))
                    break
    return [(option, value) for option, value in found if value]



@lru_cache(maxsize=512)
def interpreter_name(program: str) -> str | None:
    """``python3.11`` -> ``python``; None for a program that is not an interpreter."""
    lowered = program.lower().removesuffix(".exe")
    base = re.sub(r"[\d.]+$", "", lowered)
    if base in INTERPRETERS:
        return base
    if base in ("rscript", "r"):
        return "Rscript"
    return None


def feeds(command: Command, names: frozenset[str]) -> bool:
    """True if a command in ``names`` feeds ``command`` (through pipes or substitutions)."""
    seen: set[int] = set()
    stack = list(command.fed_by)
    while stack:
        source = stack.pop()
        if id(source) in seen:
            continue
        seen.add(id(source))
        if source.words and basename(_unwrapped_name(source.words)) in names:
            if names is DECODERS and not _decodes(source.words):
                continue
            return True
        stack.extend(source.fed_by)
    return False


def _unwrapped_name(words: list[str]) -> str:
    skip = {"sudo", "env", "nohup", "timeout", "nice", "command", "exec", "stdbuf"}
    for i, word in enumerate(words):
        name = basename(word)
        if name in skip or word.startswith("-") or "=" in word or re.fullmatch(r"[\d.]+[smhd]?", word):
            continue
        return words[i]
    return words[0]


def _decodes(words: list[str]) -> bool:
    name = basename(_unwrapped_name(words))
    if name in ("base64", "base32", "basenc"):
        return any(w in ("-d", "--decode", "-D") or (w.startswith("-") and not w.startswith("--") and "d" in w)
                   for w in words)
    if name == "xxd":
        return any(w.startswith("-r") for w in words)
    if name == "openssl":
        return "-d" in words or "base64" in words
    return True


def remote_code(check: Check, what: str) -> bool:
    """Flag ``what`` (a shell or interpreter) when downloaded or decoded code reaches it."""
    if feeds(check.command, DOWNLOADERS):
        check.add(f"runs code it downloads ({what} fed by curl/wget)")
        return True
    if feeds(check.command, DECODERS):
        check.add(f"runs decoded, hidden code ({what} fed by base64/xxd/...)")
        return True
    return False


def _interpreter(check: Check) -> None:
    name = interpreter_name(check.program) or check.program
    args = check.args
    lowered = [a.lower() for a in args]
    if name in ("powershell", "pwsh"):
        _powershell(check, lowered)
        return
    if name == "python" and args[:2] in (["-m", "pip"], ["-m", "pip3"]):
        _packages(Check("pip", args[2:], check.command, check.paths, check.result))
        return
    if name in ("perl", "ruby") and any(a.startswith("-i") or (a.startswith("-") and not a.startswith("--") and
                                                                "i" in a[1:] and "e" not in a[1:a.index("i")])
                                        for a in args):
        for operand in check.operands[1:] if inline_code(name, args) is None else check.operands:
            check.write(operand, "edits")
    inline = inline_code(name, args)
    if inline is not None:
        check.add(f"runs inline {name} code the rules cannot read ({check.program} {inline})")
    elif remote_code(check, name):
        return
    elif check.command.stdin is not None and not _has_script(args):
        check.add(f"runs {name} code fed on standard input (a heredoc) the rules cannot read")
    elif "-" in args and not _has_script([a for a in args if a != "-"]):
        check.add(f"runs {name} code read from standard input")
    elif check.command.fed_by and not _has_script(args):
        check.add(f"runs {name} code from a pipe the rules cannot read")


INTERPRETER_VALUES: dict[str, frozenset[str]] = {
    "python": frozenset({"-W", "-X", "-Q"}), "node": frozenset({"-r", "--require", "--import", "--loader", "-C"}),
    "perl": frozenset({"-I", "-M", "-m"}), "ruby": frozenset({"-I", "-r"}), "deno": frozenset(),
}


def inline_code(name: str, args: list[str]) -> str | None:
    """The option by which ``args`` hand an interpreter code on the command line, if any:
    ``-c``, ``-e``, bundled (``perl -wne``, ``ruby -pe``), ``--eval=...``, ``deno eval``."""
    options = INTERPRETERS.get(name, frozenset())
    longs = {o for o in options if o.startswith("--")}
    shorts = {o[1] for o in options if len(o) == 2 and o.startswith("-")}
    takes_value = INTERPRETER_VALUES.get(name, frozenset())
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg in takes_value:
            skip = True
            continue
        if arg in options:
            return arg
        if arg.startswith("--") and arg.split("=", 1)[0] in longs:
            return arg.split("=", 1)[0]
        if arg.startswith("-") and not arg.startswith("--") and len(arg) > 2 and \
                set(arg[1:]) & shorts and (name in ("perl", "ruby") or arg[1] in shorts):
            return arg
        if not arg.startswith("-") and name not in ("deno", "bun"):
            return None  # the script's own arguments follow
    if name in ("deno", "bun"):
        return next((a for a in args if a in ("eval", "-e", "--eval")), None)
    return None


STDIN_SCRIPT = re.compile(r"^(/dev/stdin|/dev/fd/0|/proc/(self|\d+)/fd/0)$")


def _has_script(args: list[str]) -> bool:
    """True when the interpreter runs a script file or a module (not its standard input)."""
    flags, operands = split_flags(args)
    return bool(operands and not STDIN_SCRIPT.match(operands[0]) and COMPUTED not in operands[0]) or \
        bool(flags & {"-m", "--version", "-V", "--help", "-h"})


def _powershell(check: Check, lowered: list[str]) -> None:
    text = " ".join(lowered)
    if any(a in ("-c", "-command") or a.startswith("-command") for a in lowered):
        check.add("runs an inline PowerShell command the rules cannot read (-Command)")
    if any(a in ("-encodedcommand", "-enc", "-ec", "-e") or a.startswith("-enc") for a in lowered):
        check.add("runs an encoded PowerShell command (hidden code)")
    if re.search(r"\b(remove-item|ri|rm|del|rmdir|rd|erase)\b.*-(recurse|r\b|force)", text) or \
            re.search(r"\b(format-volume|clear-disk|stop-computer|restart-computer)\b", text):
        check.add("deletes or wipes data, or stops the machine (PowerShell)")
    if re.search(r"\b(iex|invoke-expression)\b", text) or re.search(r"downloadstring|invoke-webrequest|\biwr\b|\birm\b",
                                                                     text):
        check.add("runs code it downloads or computes (PowerShell Invoke-Expression / download)")
    if "-file" in lowered or "-f" in lowered:
        check.add("runs a PowerShell script file")


def _awk(check: Check) -> None:
    program_text = next((o for o in check.operands), "")
    if "-f" in check.flags:
        return
    if re.search(r"\bsystem\s*\(|\||\bgetline\b", program_text):
        check.add("runs shell commands from awk (system() / pipes)")


def _sed(check: Check) -> None:
    if check.flags & {"-i", "--in-place"} or any(a.startswith(("-i", "--in-place")) for a in check.args):
        has_script = any(a in ("-e", "--expression", "-f", "--file") or a.startswith("--expression=")
                         for a in check.args)
        for operand in check.operands if has_script or len(check.operands) == 1 else check.operands[1:]:
            check.write(operand, "edits")
    script = " ".join(check.operands[:1] + [check.args[i + 1] for i, a in enumerate(check.args[:-1])
                                            if a in ("-e", "--expression")])
    if re.search(r"(^|[;{\n])\s*(\d+|\$|/[^/]*/)?\s*e(\s|$|;)", script) or \
            re.search(r"s(.).*\1.*\1[gpiIm0-9]*e", script):
        check.add("runs shell commands from sed (the e command or flag)")


# -- files and the network ----------------------------------------------------------------


def _writes_last(check: Check) -> None:
    operands = check.operands
    for i, arg in enumerate(check.args[:-1]):
        if arg in ("-t", "--target-directory"):
            check.write(check.args[i + 1])
    target = next((a.split("=", 1)[1] for a in check.args if a.startswith("--target-directory=")), None)
    if target:
        check.write(target)
    if len(operands) >= 2:
        check.write(operands[-1])
    if check.program == "mv":
        for source in operands[:-1]:
            if check.paths.wide(source):
                check.add("moves the root, a system directory or your home away")
            elif check.paths.credential(source) or check.paths.protected(source):
                check.add("moves keys, credentials or configuration away")
    if check.program == "ln":
        return
    if check.program == "rsync" and any(f.startswith("--del") for f in check.flags) and operands and \
            check.paths.wide(operands[-1]):
        check.add("deletes the root, a system directory or your home to match a copy (rsync --delete)", hard=True)
    if check.program in ("scp", "rsync", "cp") and any(check.paths.secret(o) for o in operands[:-1]):
        check.add("copies a credentials file (it could leave the machine)")


def _writes_all(check: Check) -> None:
    for operand in check.operands:
        check.write(operand)


def _downloader(check: Check) -> None:
    args = check.args
    for i, arg in enumerate(args):
        value = args[i + 1] if i + 1 < len(args) else ""
        if arg in ("-o", "-O", "--output", "--output-document") and value and value != "-":
            check.write(value)
        elif arg.startswith(("--output=", "--output-document=")):
            check.write(arg.split("=", 1)[1])
        elif arg in ("-P", "--directory-prefix"):
            check.write(value)
        upload = None
        if arg in ("-T", "--upload-file", "--post-file", "--body-file"):
            upload = value
        elif arg in ("-d", "--data", "--data-binary", "--data-raw", "--data-urlencode", "-F", "--form") and "@" in value:
            upload = value.split("@", 1)[1].split(";", 1)[0]
        elif arg.startswith(("--post-file=", "--body-file=")):
            upload = arg.split("=", 1)[1]
        if upload and check.paths.secret(upload):
            check.add("sends a credentials file over the network")
    _metadata(check)


def _metadata(check: Check) -> None:
    for arg in check.args:
        host = ""
        if "://" in arg:
            try:
                host = (urlsplit(arg).hostname or "").lower()
            except ValueError:
                host = ""
        elif METADATA_RE.fullmatch(arg.split("/", 1)[0].split(":")[0] if not arg.startswith("[") else
                                   arg.split("]")[0] + "]"):
            host = arg.split("/", 1)[0]
        host = host.strip("[]")
        if host in METADATA_HOSTS - {"metadata", "instance-data"} or (host in ("metadata", "instance-data") and
                                                                       "://" in arg):
            check.add("reaches the cloud metadata endpoint (instance credentials)")
            return


def _netcat(check: Check) -> None:
    if check.flags & {"-e", "-c", "--exec", "--sh-exec", "--lua-exec"} or \
            any(a.upper().startswith(("EXEC:", "SYSTEM:")) for a in check.args):
        check.add("connects a shell or program to the network (nc -e / socat EXEC)")
    _metadata(check)


def _crontab(check: Check) -> None:
    if check.flags & {"-r", "--remove"}:
        check.add("removes your crontab (every scheduled job)")
    elif check.flags & {"-e"}:
        check.add("edits your crontab (commands that run on a schedule)")
    elif check.operands or check.command.fed_by or check.command.stdin is not None:
        check.add("installs a crontab (commands that run on a schedule)")


def _at(check: Check) -> None:
    if not check.flags & {"-l", "-d", "-r", "-c"}:
        check.add("schedules a command to run later (at / batch)")


# -- containers, clusters and clouds ------------------------------------------------------

CONTAINER_LIFECYCLE = frozenset({"stop", "kill", "restart", "rm", "rmi", "down", "prune", "pause"})


DOCKER_VERBS = frozenset({
    "run", "exec", "ps", "build", "pull", "push", "images", "logs", "inspect", "start", "stop", "kill", "restart",
    "rm", "rmi", "pause", "unpause", "create", "cp", "tag", "login", "logout", "version", "info", "compose", "stack",
    "container", "image", "volume", "network", "system", "builder", "buildx", "context", "top", "stats", "port",
    "attach", "wait", "commit", "save", "load", "search", "history", "diff", "events", "update", "rename", "down",
    "up", "prune", "export", "import", "swarm", "service", "node", "secret", "config", "plugin", "trust", "manifest",
    "machine", "pod", "generate", "play", "kube", "healthcheck", "unshare", "mount", "umount", "restore", "checkpoint",
})
REMOTE_OPTIONS = ("-H", "--host", "--context", "--url", "--connection", "--remote", "--identity")


def _container(check: Check) -> None:
    args = check.args
    program = check.program
    for arg in args:
        name = arg.split("=", 1)[0]
        if name in REMOTE_OPTIONS or (program == "podman" and name == "-r"):
            check.add(f"talks to another container daemon ({program} {name})")
            break
    verbs = [a for a in args if a in DOCKER_VERBS]
    if program in ("docker-compose", "podman-compose"):
        verbs = ["compose", *verbs]
    if not verbs:
        return
    flags, _ = split_flags(args)
    if verbs[0] in ("compose", "stack"):
        sub = next((v for v in verbs[1:] if v in ("down", "rm", "kill", "stop", "restart", "pause")), None)
        if sub:
            volumes = " and their volumes" if flags & {"-v", "--volumes"} else ""
            check.add(f"stops or removes containers{volumes} ({program} {verbs[0]} {sub})")
        return
    if verbs[0] in ("container", "image", "volume", "network", "system", "builder", "buildx", "pod", "machine"):
        sub = next((v for v in verbs[1:] if v in CONTAINER_LIFECYCLE | {"remove", "prune"}), None)
        if sub:
            check.add(f"stops or removes containers, images or volumes ({program} {verbs[0]} {sub})")
        return
    verb = verbs[0]
    if verb in ("stop", "kill", "restart", "pause"):
        check.add(f"stops or restarts running containers ({program} {verb})")
    elif verb in ("rm", "rmi", "prune", "down"):
        check.add(f"removes containers or images ({program} {verb})")
    elif verb == "run":
        run_args = args[args.index("run") + 1:]
        if "--privileged" in run_args or any(re.match(r"(-v|--volume)(=|$)", a) and
                                             re.match(r"/(:|$)", _next_value(run_args, a)) for a in run_args) or \
                any(a.startswith(("--pid=host", "--cap-add=SYS_ADMIN", "--cap-add=ALL")) for a in run_args):
            check.add("runs a container with the host's root rights or filesystem (--privileged / -v /:...)")


def _next_value(args: list[str], option: str) -> str:
    if "=" in option:
        return option.split("=", 1)[1]
    index = args.index(option)
    return args[index + 1] if index + 1 < len(args) else ""


CLOUD_CLIS = frozenset({"kubectl", "helm", "aws", "gcloud", "gsutil", "az", "doctl", "terraform", "tofu", "pulumi",
                        "flyctl", "fly", "heroku", "vercel", "netlify", "oc", "eksctl", "kind", "minikube", "k3d",
                        "gh", "firebase", "supabase", "wrangler", "railway", "linode-cli", "hcloud"})
CLOUD_DESTROY = frozenset({"delete", "destroy", "terminate-instances", "delete-bucket", "rb", "rm", "remove",
                           "uninstall", "purge", "drain", "cordon", "taint", "delete-stack", "deregister",
                           "terminate", "apps:destroy", "scale"})


def _cloud(check: Check) -> None:
    words = [o for o in check.operands]
    hit = next((w for w in words if w in CLOUD_DESTROY), None)
    if hit == "scale" and not any(a in ("--replicas=0", "0") or a.endswith("=0") for a in check.args):
        hit = None
    if hit == "rm" and check.program in ("aws", "gsutil") and not check.flags & {"--recursive", "-r"}:
        hit = None
    if check.program in ("terraform", "tofu", "pulumi") and ("apply" in words or "up" in words) and \
            check.flags & {"-auto-approve", "--auto-approve", "--yes", "-y", "--skip-preview"}:
        check.add(f"changes infrastructure without a review ({check.program} apply -auto-approve)")
    if check.program == "gh" and hit not in ("delete",):
        return
    if hit:
        check.add(f"deletes or stops cloud or cluster resources ({check.program} {hit})")


# -- packages, users, firewall, kernel ----------------------------------------------------

PACKAGE_MANAGERS = frozenset({"npm", "pnpm", "yarn", "bun", "pip", "pip3", "pipx", "uv", "brew", "apt", "apt-get",
                              "aptitude", "dnf", "yum", "zypper", "apk", "snap", "flatpak", "gem", "cargo", "conda",
                              "mamba", "micromamba", "port", "choco", "winget", "scoop", "nix-env", "poetry", "composer",
                              "go", "dpkg", "rpm", "pacman", "yay", "paru", "emerge", "pkg"})
REMOVE_VERBS = frozenset({"uninstall", "remove", "rm", "r", "un", "unlink", "purge", "autoremove", "erase",
                          "autopurge"})
PACKAGE_VALUE_OPTIONS = frozenset({"--prefix", "--proxy", "--cwd", "-C", "--dir", "--index-url", "-i",
                                   "--extra-index-url", "--target", "--root", "--python", "-p", "--registry",
                                   "--filter", "--workspace", "-w", "--cache", "--config", "--log", "-r",
                                   "--requirement"})


def _packages(check: Check) -> None:
    args = check.args
    program = check.program
    if program in ("bun", "deno") and (inline_code(program, args) or check.command.stdin is not None):
        _interpreter(check)
        return
    if program in ("pacman", "yay", "paru"):
        if any(re.fullmatch(r"-R[a-z]*", a) or a == "--remove" for a in args):
            check.add(f"uninstalls packages ({program} -R)")
        return
    if program in ("dpkg", "rpm"):
        if any(a in ("-r", "-P", "--remove", "--purge", "-e", "--erase") for a in args):
            check.add(f"uninstalls packages ({program})")
        return
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("-"):
            i += 2 if arg in PACKAGE_VALUE_OPTIONS else 1
            continue
        if arg in ("global", "tool", "self", "pip"):
            i += 1
            continue
        if arg in REMOVE_VERBS and not (program in ("go", "composer", "poetry", "bun") and arg in ("r", "un")):
            if program == "pip" or program == "pip3" or program != "go":
                check.add(f"uninstalls packages ({program} {arg})")
        return


def _users(check: Check) -> None:
    if check.program in ("passwd",) and not check.operands and check.flags <= {"-S", "--status"}:
        return
    check.add(f"changes user accounts or passwords ({check.program})")


def _firewall(check: Check) -> None:
    args = check.args
    text = " ".join(args)
    if check.program in ("iptables", "ip6tables", "nft", "iptables-legacy", "iptables-nft"):
        if re.search(r"(^|\s)(-F|--flush|-X|--delete-chain|-Z|flush|-P\s+\w+\s+ACCEPT|delete)(\s|$)", text):
            check.add(f"flushes or opens the firewall ({check.program})")
    elif check.program == "ufw" and check.operands[:1] in (["disable"], ["reset"], ["allow"], ["delete"]):
        check.add(f"turns off or changes the firewall (ufw {check.operands[0]})")
    elif check.program == "firewall-cmd" and any(a.startswith(("--add", "--remove", "--set", "--panic")) for a in args):
        check.add("changes the firewall (firewall-cmd)")


def _kernel(check: Check) -> None:
    if check.program == "sysctl" and (check.flags & {"-w", "--write", "-p", "--load"} or
                                      any("=" in o for o in check.operands)):
        check.add("changes kernel settings (sysctl -w)")
    elif check.program in ("insmod", "rmmod") or (check.program == "modprobe" and not check.flags & {"-n", "--dry-run"}):
        check.add(f"loads or unloads kernel modules ({check.program})")
    elif check.program in ("mount", "umount") and check.operands:
        check.add(f"mounts or unmounts filesystems ({check.program})")
    elif check.program in ("swapoff", "swapon") and check.operands:
        check.add(f"changes swap ({check.program})")


def _history(check: Check) -> None:
    if check.flags & {"-c", "-w"} and check.program == "history":
        check.add("erases your shell history (history -c)")


def _chattr(check: Check) -> None:
    if any(a.startswith(("+i", "-i", "+a", "-a")) for a in check.args):
        check.add("changes immutable / append-only attributes (chattr)")


def _dbus(check: Check) -> None:
    if any(re.search(r"(^|\.)(Reboot|PowerOff|Halt|KExec|RebootWithFlags|PowerOffWithFlags)$", a) for a in check.args):
        check.add("shuts down or reboots the machine (through D-Bus)", hard=True)
    elif check.program in ("busctl", "dbus-send", "gdbus", "qdbus") and any(a in ("call", "--print-reply") or
                                                                              a.startswith("--dest") for a in check.args):
        check.add(f"calls a system service over D-Bus ({check.program})")


RULES: dict[str, Callable[[Check], None]] = {
    "rm": _rm, "find": _find, "chmod": _chmod, "chown": _chmod, "chgrp": _chmod,
    "mkfs": _mkfs, "newfs": _mkfs, "mke2fs": _mkfs,
    **{name: _disk for name in DISK_TOOLS},
    **{name: _power for name in ("shutdown", "reboot", "halt", "poweroff", "init", "telinit", "openrc-shutdown")},
    "loginctl": lambda c: _power(c) if c.operands[:1] and c.operands[0] in ("reboot", "poweroff", "halt") else None,
    "kexec": lambda c: _power(c) if c.flags & {"-e", "--exec"} else None,
    "systemctl": _systemctl, "service": _service, "launchctl": _service, "rc-service": _service, "sv": _service,
    "kill": _kill, "pkill": _killall, "killall": _killall, "killall5": _killall, "skill": _killall,
    "git": _git, "awk": _awk, "gawk": _awk, "mawk": _awk, "nawk": _awk, "sed": _sed,
    "cp": _writes_last, "mv": _writes_last, "install": _writes_last, "ln": _writes_last, "rsync": _writes_last,
    "scp": _writes_last, "tee": _writes_all, "sponge": _writes_all, "truncate": _writes_all, "touch": _writes_all,
    "mkdir": _writes_all,
    **{name: _downloader for name in DOWNLOADERS},
    "nc": _netcat, "ncat": _netcat, "netcat": _netcat, "socat": _netcat, "telnet": _netcat,
    "crontab": _crontab, "at": _at, "batch": _at,
    "docker": _container, "podman": _container, "nerdctl": _container, "docker-compose": _container,
    "podman-compose": _container,
    **{name: _cloud for name in CLOUD_CLIS},
    **{name: _packages for name in PACKAGE_MANAGERS},
    **{name: _users for name in ("userdel", "usermod", "useradd", "passwd", "chpasswd", "groupdel", "deluser",
                                  "adduser", "visudo", "vipw", "gpasswd")},
    **{name: _firewall for name in ("iptables", "ip6tables", "nft", "ufw", "firewall-cmd", "iptables-legacy",
                                     "iptables-nft")},
    **{name: _kernel for name in ("sysctl", "insmod", "rmmod", "modprobe", "mount", "umount", "swapoff", "swapon")},
    "history": _history, "chattr": _chattr,
    **{name: _dbus for name in ("busctl", "dbus-send", "gdbus", "qdbus")},
}


def check_program(check: Check) -> None:
    """Apply the rules for ``check.program`` (and the ones every program gets)."""
    program = check.program
    rule = RULES.get(program)
    if rule is None and program.startswith("mkfs"):
        rule = _mkfs
    if rule is None and interpreter_name(program):
        rule = _interpreter
    if rule is not None:
        rule(check)
    if program in SQL_CLIENTS:
        sql(" ".join([*check.args, check.command.stdin or "", *_fed_words(check.command)]), check.result)
    if program not in CREDENTIAL_READ_EXEMPT and rule not in (_writes_all, _writes_last) and \
            any(check.paths.secret(a) for a in check.args) and any(check.paths.secret(o) for o in check.operands):
        check.add("reads a credentials file (its contents would reach the model)")
    if program not in DOWNLOADERS and program not in ("nc", "ncat", "netcat", "socat", "telnet") and \
            program in NETWORK_TOOLS:
        _metadata(check)


def _fed_words(command: Command) -> list[str]:
    return [w for source in command.fed_by if source.words[:1] in (["echo"], ["printf"], ["cat"])
            for w in source.words[1:]] + [source.stdin for source in command.fed_by if source.stdin]


def sql(text: str, result: Analysis) -> None:
    """Flag destructive SQL statements in ``text``."""
    for statement in re.split(r";", text):
        upper = statement.upper()
        if re.search(r"\bDROP\s+(TABLE|DATABASE|SCHEMA|INDEX|VIEW|USER|ROLE|COLLECTION|KEYSPACE|TRIGGER|FUNCTION)\b",
                     upper) or re.search(r"\.DROP(DATABASE)?\s*\(", upper):
            result.add("drops a database object (SQL DROP)")
        if re.search(r"\bTRUNCATE\b", upper):
            result.add("empties a table (SQL TRUNCATE)")
        if re.search(r"\bDELETE\s+FROM\b", upper) and not re.search(r"\bWHERE\b", upper):
            result.add("deletes every row of a table (SQL DELETE without WHERE)")
        if re.search(r"\bUPDATE\s+\S+\s+SET\b", upper) and not re.search(r"\bWHERE\b", upper):
            result.add("changes every row of a table (SQL UPDATE without WHERE)")
        if re.search(r"\bFLUSHALL\b|\bFLUSHDB\b", upper) or re.search(r"\.DELETEMANY\s*\(\s*\{\s*\}\s*\)", upper):
            result.add("deletes every key or document (FLUSHALL / deleteMany({}))")
