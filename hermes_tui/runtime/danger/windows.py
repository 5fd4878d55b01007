"""Windows commands a script may run (through WSL, Git Bash, ``cmd /c``, PowerShell cmdlets).

Names are matched without case and without ``.exe``. Deleting, wiping, formatting, stopping
services or processes by force, editing the registry or boot settings, and running downloaded
code are flagged; powering the machine off and formatting a volume are refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from hermes_tui.runtime.danger.paths import Paths

if TYPE_CHECKING:
    from hermes_tui.runtime.danger.analysis import Analysis

POWER = frozenset({"restart-computer", "stop-computer"})
DELETE = frozenset({"del", "erase", "rd", "rmdir", "remove-item", "ri", "remove-itemproperty", "clear-content"})
CMDLETS: dict[str, str] = {
    "stop-process": "stops processes (Stop-Process)",
    "taskkill": "kills processes (taskkill)",
    "stop-service": "stops a Windows service (Stop-Service)",
    "set-service": "changes a Windows service (Set-Service)",
    "diskpart": "works on disks (diskpart)",
    "clear-disk": "wipes a disk (Clear-Disk)",
    "initialize-disk": "initialises a disk (Initialize-Disk)",
    "remove-partition": "removes a disk partition (Remove-Partition)",
    "bcdedit": "changes the boot configuration (bcdedit)",
    "set-executionpolicy": "lowers PowerShell's script policy (Set-ExecutionPolicy)",
    "iex": "runs text as PowerShell code (Invoke-Expression)",
    "invoke-expression": "runs text as PowerShell code (Invoke-Expression)",
    "takeown": "takes ownership of files (takeown)",
}


def check(program: str, args: list[str], paths: Paths, result: Analysis, read_text: Callable[[str], None]) -> bool:
    """Apply the Windows rules when ``program`` is a Windows command; True if it was one."""
    name = program.lower().removesuffix(".exe")
    if name not in NAMES:
        return False
    lowered = [a.lower() for a in args]
    switches = {a for a in lowered if a.startswith(("/", "-"))}
    if name in POWER:
        result.add("shuts down or reboots the machine", hard=True)
    elif name == "format-volume" or (name == "format" and any(re.fullmatch(r"[a-z]:", a) for a in lowered)):
        result.add("formats a volume", hard=True)
    elif name == "cmd":
        text = _after(args, ("/c", "/k", "/r"))
        if text is None:
            return False
        result.add("runs a command through cmd.exe (cmd /c)")
        words = text.split()
        if words and not check(words[0], words[1:], paths, result, read_text):
            read_text(text)
    elif name in DELETE:
        # rmdir and ri are also Linux programs (remove an empty directory; Ruby's docs): only
        # their Windows spellings (/s /q, -Recurse -Force) are the Windows commands.
        forced = switches & {"/s", "/q", "/f", "-recurse", "-force", "-r"}
        if not forced and not any(paths.credential(a) for a in args):
            return name not in ("rmdir", "ri", "rd", "del", "erase")  # Linux programs, or a plain delete
        result.add(f"deletes files (Windows {program})")
        if any(paths.credential(a) for a in args):
            result.add("deletes keys or credentials")
    elif name in ("type", "copy", "move") and any("\\" in a for a in args):
        if any(paths.credential(a) for a in args):
            result.add("reads or copies a credentials file (its contents would reach the model)")
    elif name in CMDLETS:
        if name in ("taskkill", "stop-process", "stop-service") and not switches & {"/f", "/t", "-force"} or \
                "-whatif" in switches:
            return True
        result.add(CMDLETS[name])
    elif name in VERB_RULES and lowered:
        reason = VERB_RULES[name](lowered, switches)
        if reason:
            result.add(reason)
    else:
        return False
    return True


VERB_RULES: dict[str, Callable[[list[str], set[str]], str | None]] = {
    "reg": lambda a, s: f"changes the Windows registry (reg {a[0]})"
    if a[0] in ("delete", "add", "import", "restore", "unload") else None,
    "sc": lambda a, s: f"changes Windows services (sc {a[0]})"
    if a[0] in ("stop", "delete", "config", "create", "failure") else None,
    "net": lambda a, s: f"changes services, users or shares (net {a[0]})"
    if a[0] in ("stop", "user", "localgroup", "share") else None,
    "vssadmin": lambda a, s: f"deletes backups or shadow copies (vssadmin {a[0]})"
    if a[0] in ("delete", "resize") else None,
    "wbadmin": lambda a, s: f"deletes backups (wbadmin {a[0]})" if a[0] in ("delete",) else None,
    "cipher": lambda a, s: "wipes free disk space (cipher /w)" if any(x.startswith("/w") for x in a) else None,
    "icacls": lambda a, s: "changes file permissions (icacls)"
    if s & {"/reset", "/grant", "/remove", "/setowner", "/deny"} else None,
    "wmic": lambda a, s: "changes the system through WMI (wmic)" if {"delete", "call"} & set(a) else None,
    "schtasks": lambda a, s: "schedules or changes scheduled tasks (schtasks)"
    if s & {"/create", "/delete", "/change", "/run"} else None,
}


NAMES = frozenset({*POWER, *DELETE, *CMDLETS, *VERB_RULES, "format", "format-volume", "cmd", "type", "copy", "move"})


def _after(args: list[str], switches: tuple[str, ...]) -> str | None:
    for i, arg in enumerate(args):
        if arg.lower() in switches:
            return " ".join(args[i + 1:])
    return None
