"""Commands that run another command: how to find the command they run.

``sudo -u root -- rm x`` runs ``rm x``; ``bash -lec 'rm x'`` runs the shell text ``rm x``;
``env -S 'rm x'`` splits its string into a command; ``find . -exec rm {} +`` runs ``rm``.
Options that take a value are skipped with their value, bundled or not (``-u root``,
``-uroot``, ``--user=root``, ``--user root``).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Spec:
    """How a wrapper's options read."""

    short_values: str = ""
    """Short options that take a value (``-u root`` / ``-uroot``)."""
    long_values: frozenset[str] = frozenset()
    """Long options that take a value (``--user root`` / ``--user=root``)."""
    operands: int = 0
    """Operands before the command (``timeout DURATION cmd``, ``chroot DIR cmd``)."""
    note: str | None = None
    """Why running through this wrapper is itself worth a flag (``sudo``: as root)."""


def _spec(short: str = "", long: str = "", operands: int = 0, note: str | None = None) -> Spec:
    return Spec(short, frozenset(long.split()), operands, note)


def as_root(program: str) -> str:
    """The flag for running through ``program`` (sudo, doas, su, ...)."""
    return f"runs as root or another user ({program})" if program in ("su", "runuser") else f"runs as root ({program})"


WRAPPERS: dict[str, Spec] = {
    "sudo": _spec("ugCDhprtUTc", "user group close-from chdir host prompt role type other-user command-timeout",
                  note=as_root("sudo")),
    "doas": _spec("uC", note=as_root("doas")),
    "pkexec": _spec("", "user", note=as_root("pkexec")),
    "run0": _spec("uDM", "user chdir machine unit property description slice nice setenv", note=as_root("run0")),
    "nice": _spec("n", "adjustment"),
    "ionice": _spec("cnpPu", "class classdata pid pgid uid"),
    "nohup": _spec(),
    "timeout": _spec("sk", "signal kill-after", operands=1),
    "stdbuf": _spec("ioe", "input output error"),
    "setsid": _spec(),
    "command": _spec(),
    "builtin": _spec(),
    "exec": _spec("a"),
    "chronic": _spec(),
    "unbuffer": _spec(),
    "caffeinate": _spec("tw"), "coproc": _spec(), "setpriv": _spec("", "reuid regid groups init-groups"),
    "prlimit": _spec("p"), "cgexec": _spec("g"),
    "time": _spec("fo", "format output"),
    "chroot": _spec("", "userspec groups", operands=1, note="runs in another root directory (chroot)"),
    "flock": _spec("wEc", "timeout conflict-exit-code", operands=1),
    "taskset": _spec("", "", operands=1),
    "chrt": _spec("", "", operands=1),
    "torsocks": _spec(), "proxychains": _spec("f"), "proxychains4": _spec("f"),
    "firejail": _spec(), "strace": _spec("oeEpsuS"), "ltrace": _spec("oeEpsuS"),
    "nsenter": _spec("tSGnmuipUCTr", "target", note="enters another process's namespaces"),
    "unshare": _spec(), "systemd-run": _spec("pEuM", "unit property description slice uid gid setenv",
                                             note="runs a command as a system service"),
    "xvfb-run": _spec("anspef"), "catchsegv": _spec(), "valgrind": _spec(),
    "dbus-run-session": _spec(),
    "parallel": _spec("jS", "jobs"), "watch": _spec("nd", "interval differences"),
}
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "yash", "rbash", "ksh93",
                    "oksh", "loksh", "posh", "hush", "elvish", "nu", "xonsh", "rc", "es", "pwsh-preview"})


def shell_name(program: str) -> str | None:
    """``bash5``, ``bash.exe``, ``zsh-5.9`` -> their shell; None for a program that is not one."""
    name = re.sub(r"[-\d.]+$", "", program.lower().removesuffix(".exe"))
    return name if name in SHELLS else None
SHELL_VALUE_OPTIONS = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})


@dataclass(slots=True)
class Unwrapped:
    """What ``env`` runs: more words, or shell text (a split string that is not words)."""

    words: list[str] | None = None
    text: str | None = None
    assignments: list[str] = field(default_factory=list)
    """The names its ``NAME=value`` words set."""


def long_option(given: str, names: frozenset[str] | tuple[str, ...]) -> str | None:
    """The long option ``given`` stands for: GNU programs accept any prefix (``--user`` as
    ``--us``, ``--split-string`` as ``--s``). The first match wins: an ambiguous prefix is
    an error to the program, so reading it either way is safe."""
    if not given:
        return None
    if given in names:
        return given
    return next((name for name in sorted(names) if name.startswith(given)), None)


def skip_options(args: list[str], spec: Spec) -> list[str]:
    """``args`` after the wrapper's own options (and its fixed operands)."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if not arg.startswith("-") or arg == "-":
            break
        if arg.startswith("--"):
            name = arg[2:].split("=", 1)[0]
            i += 2 if long_option(name, spec.long_values) and "=" not in arg else 1
            continue
        # A bundle of short options: the first that takes a value eats the rest (or the next arg).
        i += 1
        for position, letter in enumerate(arg[1:], start=1):
            if letter in spec.short_values:
                if position == len(arg) - 1:
                    i += 1
                break
    rest = args[i:]
    return rest[spec.operands:] if len(rest) > spec.operands else []


def shell_text(args: list[str]) -> tuple[str | None, bool]:
    """The text a shell runs with ``-c`` (found in bundled options too), and whether ``-c``
    was given at all (``bash -lc``, ``sh -ec``, ``bash -c -e 'x'``, ``sh -ce -- 'x'``)."""
    has_c = False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--" or arg == "-":
            i += 1
            break
        if arg in SHELL_VALUE_OPTIONS:
            i += 2
            continue
        if arg.startswith("--"):
            has_c = has_c or arg == "--command"
            i += 1
            continue
        if arg[:1] in "-+" and len(arg) > 1:
            has_c = has_c or (arg[0] == "-" and "c" in arg[1:])
            i += 1
            continue
        break
    if not has_c:
        return None, False
    return (args[i] if i < len(args) else None), True


SU_COMMAND_OPTIONS = ("command", "session-command")


def su_texts(args: list[str]) -> list[str]:
    """The command ``su`` / ``runuser`` runs (``-c X``, ``--command=X``, ``--comm X``,
    ``--session-command X``, bundled ``-lc X``): the last one given wins. After ``--`` the
    words are the shell's own arguments."""
    found = []
    for i, arg in enumerate(args):
        nxt = args[i + 1] if i + 1 < len(args) else None
        if arg == "--":
            break
        if arg.startswith("--"):
            name, _, value = arg[2:].partition("=")
            if long_option(name, SU_COMMAND_OPTIONS):
                if "=" in arg:
                    found.append(value)
                elif nxt is not None:
                    found.append(nxt)
        elif arg.startswith("-") and "c" in arg[1:] and nxt is not None:
            found.append(nxt)
    return found[-1:]


ENV_VALUE_OPTIONS = ("unset", "chdir", "argv0", "split-string")
ENV_SHORT_VALUES = "uCPa"


def env_command(args: list[str]) -> Unwrapped:
    """What ``env`` runs: after its options (``-i``, ``-u NAME``, ``-C DIR``, ``-a NAME``,
    ``-S STRING`` / ``--split-string=STRING`` / ``--s STRING``, bundled ``-iS``) and
    ``NAME=value`` words. A split string is split into words (``\\_`` is a space) and read
    as env's own arguments again (``env -S '-i sh -c x'``)."""
    i = 0
    split: str | None = None
    while i < len(args) and split is None:
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if arg.startswith("--"):
            name, has_value, value = arg[2:].partition("=")
            option = long_option(name, ENV_VALUE_OPTIONS)
            if option == "split-string":
                split, i = (value, i + 1) if has_value else (args[i + 1] if i + 1 < len(args) else "", i + 2)
            elif option and not has_value:
                i += 2
            else:
                i += 1
            continue
        if arg.startswith("-") and arg != "-":
            i += 1
            for position, letter in enumerate(arg[1:], start=1):
                if letter == "S":
                    tail = arg[position + 1:]
                    split = tail if tail else (args[i] if i < len(args) else "")
                    if not tail:
                        i += 1
                    break
                if letter in ENV_SHORT_VALUES:
                    if position == len(arg) - 1:
                        i += 1
                    break
            continue
        break
    rest = args[i:]
    if split is not None:
        try:
            words = shlex.split(split.replace("\\_", " "))
        except ValueError:
            return Unwrapped(text=split)
        return Unwrapped(words=["env", *words, *rest])
    assignments = []
    while rest and "=" in rest[0] and not rest[0].startswith("="):
        assignments.append(rest[0].split("=", 1)[0])
        rest = rest[1:]
    return Unwrapped(words=rest, assignments=assignments)


def joined(words: list[str]) -> str:
    """Words as one line of shell text (what ``sudo -s``, ``ssh`` and ``watch`` hand a shell)."""
    return " ".join(words)


SSH_SPEC = _spec("BbcDEeFIiJLlmOoPpQRSWw")


def ssh_command(args: list[str]) -> tuple[str | None, str | None]:
    """``ssh [options] HOST [COMMAND...]``: the host and the remote command, if any."""
    rest = skip_options(args, SSH_SPEC)
    if not rest:
        return None, None
    return rest[0], (joined(rest[1:]) if rest[1:] else None)


XARGS_SPEC = _spec("InPLsdEa", "max-args max-procs max-lines max-chars delimiter eof arg-file replace process-slot-var")


def find_actions(args: list[str]) -> list[list[str]]:
    """The commands ``find`` runs: ``-exec`` / ``-execdir`` / ``-ok`` / ``-okdir`` ... ``;`` or ``+``."""
    commands = []
    i = 0
    while i < len(args):
        if args[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(args) and args[j] not in (";", "+", "\\;"):
                j += 1
            commands.append(args[i + 1:j])
            i = j
        i += 1
    return commands
