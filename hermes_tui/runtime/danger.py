"""What a shell command would do: flagged parts (ask first) and the hard floor (never).

Commands are tokenised with :mod:`shlex` and read the way a shell would run them: through
``;`` ``&&`` ``||`` ``|`` ``&`` chains, ``$(...)``, backticks and ``<(...)``, wrappers
(``sudo``, ``env``, ``nohup``, ``timeout``, ``xargs`` ...) and nested shells (``bash -c``,
``sh -c``, ``eval``), so simple obfuscation does not hide a flagged part. Quoted text given
to a program as data (``echo 'rm -rf /'``, ``grep rm file``) is not a command and is not
flagged. A command that cannot be parsed is flagged, never waved through.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import PurePosixPath

OPERATORS = {";", "&&", "||", "|", "&", "|&", ";;", "(", ")", "\n"}
REDIRECTS = {">", ">>", ">|", "&>", "&>>", "<>", "1>", "2>", "1>>", "2>>"}
SHELL_KEYWORDS = {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "{", "}", "!", "time", "in"}
WRAPPERS = {"nohup", "nice", "ionice", "timeout", "stdbuf", "exec", "command", "builtin", "chronic", "setsid",
            "unbuffer", "watch", "flock", "caffeinate"}
SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "fish", "ash", "busybox"}
INTERPRETERS = {"python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php", "deno", "bun", "lua", "Rscript"}
ONE_LINER_FLAGS = {"python": {"-c"}, "perl": {"-e", "-E"}, "ruby": {"-e"}, "node": {"-e", "--eval", "-p", "--print"},
                   "php": {"-r"}, "lua": {"-e"}, "deno": {"eval"}, "bun": {"-e", "--eval"}, "Rscript": {"-e"}}
DOWNLOADERS = {"curl", "wget", "fetch", "aria2c", "http", "xh"}
SQL_CLIENTS = {"psql", "mysql", "mariadb", "sqlite3", "duckdb", "clickhouse-client", "sqlcmd", "cockroach", "mongo", "mongosh"}
DISK_TOOLS = {"dd", "wipefs", "fdisk", "sfdisk", "gdisk", "parted", "mkswap", "shred", "blkdiscard", "badblocks", "cryptsetup"}
SYSTEM_DIRS = {"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/opt", "/proc", "/root",
               "/sbin", "/srv", "/sys", "/usr", "/var", "/usr/bin", "/usr/lib", "/usr/local", "/var/lib", "/snap",
               "/System", "/Library", "/Applications", "/Users", "/private"}
DEVICE_RE = re.compile(r"^/dev/(sd|hd|vd|xvd|nvme|mmcblk|disk|rdisk|md|dm-|mapper/|loop|sr|nbd|zd)")
HARMLESS_DEVICES = {"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero", "/dev/random",
                    "/dev/urandom", "/dev/full", "/dev/fd/1", "/dev/fd/2"}
FORK_BOMB_RE = re.compile(r"(\S+)\s*\(\)\s*\{[^}]*\1\s*\|\s*\1\s*&[^}]*\}\s*;?\s*\1")
SUBST_MARK = "__hermes_computed__"


@dataclass
class Analysis:
    """The verdict on one command."""

    hard: list[str] = field(default_factory=list)
    """Why it is refused outright (never asked, never allowlisted)."""
    flags: list[str] = field(default_factory=list)
    """Why it is flagged (asks even in ``dangerous`` mode; no "always")."""

    def add(self, reason: str, hard: bool = False) -> None:
        target = self.hard if hard else self.flags
        if reason not in target:
            target.append(reason)

    @property
    def flagged(self) -> bool:
        return bool(self.flags or self.hard)


@dataclass
class _Paths:
    home: str
    hermes_home: str

    def expand(self, word: str) -> str:
        word = word.replace("${HOME}", self.home).replace("$HOME", self.home)
        word = word.replace("${HERMES_HOME}", self.hermes_home).replace("$HERMES_HOME", self.hermes_home)
        if word == "~" or word.startswith("~/"):
            word = self.home + word[1:]
        return word

    def normal(self, word: str) -> str:
        word = self.expand(word)
        if not word.startswith("/"):
            return word
        normal = os.path.normpath(word)
        return "/" if normal.startswith("//") else normal

    def protected(self, word: str) -> str | None:
        """Why writing ``word`` is dangerous, if it is."""
        path = self.normal(word)
        if not path.startswith("/"):
            return None
        hermes = os.path.normpath(self.hermes_home)
        if path in (f"{hermes}/config.yaml", f"{hermes}/.env", f"{hermes}/tui/allowlist.yaml"):
            return "writes hermes-tui's own configuration or approval rules"
        if path == "/etc" or path.startswith("/etc/"):
            return "writes to /etc (system configuration)"
        rel = path[len(self.home) + 1:] if path.startswith(self.home + "/") else None
        if rel is None:
            return None
        if rel == ".ssh" or rel.startswith(".ssh/"):
            return "writes to ~/.ssh (keys and trusted hosts)"
        if rel in (".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zprofile", ".zshenv",
                   ".config/fish/config.fish", ".bash_logout", ".inputrc"):
            return "writes a shell start-up file (runs in every new shell)"
        if self.credential(path):
            return "writes a credentials file"
        return None

    def credential(self, word: str) -> bool:
        path = self.normal(word)
        rel = path[len(self.home) + 1:] if path.startswith(self.home + "/") else path
        names = (".aws/credentials", ".netrc", ".git-credentials", ".docker/config.json", ".kube/config",
                 ".npmrc", ".pypirc", ".config/gh/hosts.yml", ".gnupg", ".password-store")
        if rel in names or any(rel.startswith(n + "/") for n in names):
            return True
        base = PurePosixPath(path).name
        return base == ".env" or base.startswith(".env.") or re.fullmatch(r"id_(rsa|dsa|ecdsa|ed25519)", base) is not None


def protected_write(path: str, home: str | None = None, hermes_home: str | None = None) -> str | None:
    """Why writing the file at ``path`` must be approved (None if it need not)."""
    home = home or os.path.expanduser("~")
    return _Paths(home.rstrip("/") or "/", hermes_home or os.path.join(home, ".hermes")).protected(path)


def analyze(command: str, home: str | None = None, hermes_home: str | None = None) -> Analysis:
    """Flags and hard-floor reasons for ``command``."""
    home = home or os.path.expanduser("~")
    paths = _Paths(home.rstrip("/") or "/", hermes_home or os.path.join(home, ".hermes"))
    result = Analysis()
    _analyze(command, paths, result, depth=0)
    return result


def _analyze(command: str, paths: _Paths, result: Analysis, depth: int) -> None:
    if depth > 8:
        result.add("nests shells too deeply to read")
        return
    if FORK_BOMB_RE.search(command):
        result.add("is a fork bomb", hard=True)
    outer, inner = _substitutions(command)
    runs_text = re.search(r"(^|[\s;&|(])(sh|bash|zsh|dash|eval|source|\.|python3?|perl|ruby|node)(\s|$)", outer)
    for text in inner:
        if runs_text and re.search(r"\b(" + "|".join(DOWNLOADERS) + r")\b", text):
            result.add("runs code it downloads (a shell fed by $(curl ...) or <(curl ...))")
        _analyze(text, paths, result, depth + 1)
    try:
        lexer = shlex.shlex(outer, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        lexer.commenters = ""
        tokens = list(lexer)
    except ValueError as exc:
        result.add(f"cannot be parsed ({exc}): read it yourself")
        return
    pipeline: list[list[str]] = []
    segment: list[str] = []
    for token in tokens + [";"]:
        if token in OPERATORS or (token and set(token) <= set(";&|()") and token not in REDIRECTS):
            if segment:
                pipeline.append(segment)
                segment = []
            if token != "|" and token != "|&":
                _pipeline(pipeline, outer, paths, result, depth)
                pipeline = []
            continue
        segment.append(token)


def _substitutions(command: str) -> tuple[str, list[str]]:
    """The command with ``$(...)``/backticks/``<(...)`` replaced, and their insides.

    A substitution that only echoes words is replaced by those words (``$(echo rm)`` is rm);
    any other is replaced by a marker, so a computed program name can be flagged.
    """
    inner: list[str] = []
    out: list[str] = []
    i = 0
    quote = ""
    while i < len(command):
        char = command[i]
        if quote == "'":
            out.append(char)
            quote = "" if char == "'" else quote
            i += 1
            continue
        if char == "\\" and i + 1 < len(command):
            out.append(command[i:i + 2])
            i += 2
            continue
        if char == "'" and not quote:
            quote = "'"
            out.append(char)
            i += 1
            continue
        if char == '"':
            quote = "" if quote == '"' else '"'
            out.append(char)
            i += 1
            continue
        opener = command[i:i + 2]
        if opener in ("$(", "<(", ">(") and command[i:i + 3] != "$((":
            end = _closing(command, i + 2)
            text = command[i + 2:end]
            inner.append(text)
            out.append(_literal(text) if opener == "$(" else SUBST_MARK)
            i = end + 1
            continue
        if char == "`":
            end = command.find("`", i + 1)
            end = len(command) if end < 0 else end
            text = command[i + 1:end]
            inner.append(text)
            out.append(_literal(text))
            i = end + 1
            continue
        out.append(char)
        i += 1
    return "".join(out), inner


def _closing(text: str, start: int) -> int:
    depth = 1
    quote = ""
    i = start
    while i < len(text):
        char = text[i]
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return len(text)


def _literal(text: str) -> str:
    try:
        words = shlex.split(text)
    except ValueError:
        return SUBST_MARK
    if len(words) >= 2 and words[0] in ("echo", "printf") and all(re.fullmatch(r"[\w./~-]+", w) for w in words[1:]):
        return " ".join(words[1:])
    return SUBST_MARK


def _pipeline(stages: list[list[str]], text: str, paths: _Paths, result: Analysis, depth: int) -> None:
    if not stages:
        return
    programs = []
    for index, words in enumerate(stages):
        program = _simple(words, paths, result, depth)
        programs.append(program)
        if program in SQL_CLIENTS:
            _sql(" ".join(w for s in stages for w in s), result)
    for index, program in enumerate(programs):
        if index and (program in SHELLS or program in INTERPRETERS or program in ("source", ".")):
            before = set(programs[:index])
            if before & DOWNLOADERS:
                result.add("pipes a download into a shell or interpreter (runs remote code)")
            elif "base64" in before or "xxd" in before or "openssl" in before or "gunzip" in before:
                result.add("pipes decoded data into a shell or interpreter (hidden code)")


def _simple(words: list[str], paths: _Paths, result: Analysis, depth: int) -> str | None:
    """Check one simple command; returns its program's name."""
    words = _redirections(words, paths, result)
    while words and (words[0] in SHELL_KEYWORDS or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0])):
        words = words[1:]
    if not words or words[0] in ("for", "case", "select", "function"):
        return None
    program = PurePosixPath(words[0]).name
    args = words[1:]
    if words[0] == SUBST_MARK or SUBST_MARK in words[0]:
        result.add("runs a program whose name is computed at run time ($(...) or `...`)")
        return None
    if program in ("sudo", "doas", "su", "pkexec", "run0"):
        result.add("runs as root (sudo)")
        rest = _after_options(args, with_values={"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-c"})
        if program == "su":
            rest = []
            if "-c" in args and args.index("-c") + 1 < len(args):
                _analyze(args[args.index("-c") + 1], paths, result, depth + 1)
        return _simple(rest, paths, result, depth) if rest else program
    if program == "env":
        rest = _after_options(args, with_values={"-u", "-C", "-S"})
        while rest and "=" in rest[0]:
            rest = rest[1:]
        return _simple(rest, paths, result, depth) if rest else program
    if program in WRAPPERS:
        with_values = {"-n", "-s", "-k", "-c", "-i", "-o", "-e", "-w"}
        rest = _after_options(args, with_values=with_values)
        if program == "timeout" and rest and re.fullmatch(r"[\d.]+[smhd]?", rest[0]):
            rest = rest[1:]
        if program == "watch" and rest:
            _analyze(" ".join(rest), paths, result, depth + 1)
            return program
        return _simple(rest, paths, result, depth) if rest else program
    if program == "xargs":
        rest = _after_options(args, with_values={"-I", "-i", "-n", "-P", "-L", "-s", "-d", "-E", "-a"})
        return _simple(rest, paths, result, depth) if rest else program
    if program in SHELLS:
        if "-c" in args and args.index("-c") + 1 < len(args):
            _analyze(args[args.index("-c") + 1], paths, result, depth + 1)
        return program
    if program == "eval":
        _analyze(" ".join(args), paths, result, depth + 1)
        return program
    _program_rules(program, args, paths, result)
    return program


def _after_options(args: list[str], with_values: set[str]) -> list[str]:
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        if args[i] == "--":
            return args[i + 1:]
        i += 2 if args[i] in with_values else 1
    return args[i:]


def _redirections(words: list[str], paths: _Paths, result: Analysis) -> list[str]:
    """Check and drop redirections (``> file``, ``2>&1``, ``< file``); returns the rest."""
    kept: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        target = words[i + 1] if i + 1 < len(words) else ""
        if re.fullmatch(r"&?>>?[|&]?|<>", word):
            if kept and re.fullmatch(r"\d+", kept[-1]):
                kept.pop()  # the fd number of `2>` came as its own token
            if not word.endswith("&"):  # `>&1` duplicates a descriptor: no file
                _write_target(target, paths, result)
            i += 2
            continue
        if re.fullmatch(r"<{1,3}&?", word):
            if kept and re.fullmatch(r"\d+", kept[-1]):
                kept.pop()
            if paths.credential(target):
                result.add("reads a credentials file (its contents would reach the model)")
            i += 2
            continue
        kept.append(word)
        i += 1
    return kept


def _write_target(target: str, paths: _Paths, result: Analysis) -> None:
    if target.startswith("&"):
        return
    path = paths.normal(target)
    if path.startswith("/dev/") and path not in HARMLESS_DEVICES and not path.startswith("/dev/fd/"):
        result.add("writes straight to a device (/dev/...)", hard=bool(DEVICE_RE.match(path)))
        return
    reason = paths.protected(target)
    if reason:
        result.add(reason)


def _flags(args: list[str]) -> tuple[set[str], list[str]]:
    """Short flags (split), long flags, and the operands of an argument list."""
    flags: set[str] = set()
    operands = []
    dashdash = False
    for arg in args:
        if dashdash or not arg.startswith("-") or arg == "-":
            operands.append(arg)
        elif arg == "--":
            dashdash = True
        elif arg.startswith("--"):
            flags.add(arg.split("=", 1)[0])
        else:
            flags.update(f"-{c}" for c in arg[1:])
    return flags, operands


def _wide(path: str, paths: _Paths) -> bool:
    """True for /, a system directory, your home, or everything in one of them (``/*``)."""
    stripped = path.rstrip("*").rstrip(".") if path.endswith(("/*", "/.*")) else path
    normal = paths.normal(stripped or path)
    return normal in SYSTEM_DIRS or normal == paths.home


def _program_rules(program: str, args: list[str], paths: _Paths, result: Analysis) -> None:
    flags, operands = _flags(args)
    base = re.sub(r"\d+(\.\d+)*$", "", program)  # python3.11 -> python
    if program == "rm":
        recursive = bool(flags & {"-r", "-R", "--recursive"})
        if recursive or flags & {"-f", "--force"}:
            result.add("deletes recursively or by force (rm -r / -f)")
        if recursive and ("--no-preserve-root" in flags or any(_wide(o, paths) for o in operands)):
            result.add("deletes the root, a system directory or your home (rm -r)", hard=True)
    elif program in ("chmod", "chown", "chgrp"):
        if flags & {"-R", "--recursive"}:
            result.add(f"changes ownership or permissions recursively ({program} -R)")
        if any(_wide(o, paths) for o in operands[1:] if operands):
            result.add(f"changes ownership or permissions of a system directory or your home ({program})")
    elif program.startswith("mkfs") or program in ("newfs", "mke2fs"):
        result.add("formats a filesystem (mkfs)")
        if any(o.startswith("/dev/") for o in operands):
            result.add("formats a device (mkfs)", hard=True)
    elif program in DISK_TOOLS:
        result.add(f"works on disks or wipes data ({program})")
        if program == "dd":
            target = next((a[3:] for a in args if a.startswith("of=")), "")
            if target and DEVICE_RE.match(paths.normal(target)):
                result.add("writes onto a device (dd of=/dev/...)", hard=True)
            elif target:
                _write_target(target, paths, result)
    elif program in ("shutdown", "reboot", "halt", "poweroff") or (program in ("init", "telinit") and operands[:1] in (["0"], ["6"])):
        result.add("shuts down or reboots the machine", hard=True)
    elif program == "systemctl":
        verb = operands[0] if operands else ""
        if verb in ("poweroff", "reboot", "halt", "kexec", "suspend", "hibernate"):
            result.add("shuts down or reboots the machine", hard=True)
        elif verb in ("stop", "disable", "mask", "kill", "restart", "isolate", "reload", "daemon-reexec"):
            result.add(f"controls system services (systemctl {verb})")
    elif program in ("service", "launchctl", "rc-service", "sv"):
        if any(o in ("stop", "restart", "unload", "remove", "bootout", "disable", "kill") for o in operands):
            result.add(f"controls system services ({program})")
    elif program == "kill":
        _kill(args, result)
    elif program in ("pkill", "killall", "killall5"):
        if program == "killall5" or flags & {"-9", "-KILL"} or "-s" in args and "KILL" in args:
            result.add(f"force-kills processes by name ({program} -9)")
        else:
            result.add(f"kills processes by name ({program})")
    elif program == "find" and ("-delete" in args or any(a in ("-exec", "-execdir", "-ok") and i + 1 < len(args)
                                                         and PurePosixPath(args[i + 1]).name in ("rm", "shred")
                                                         for i, a in enumerate(args))):
        result.add("deletes every file find matches (find -delete / -exec rm)")
    elif program == "git":
        _git(operands[:1], args, result)
    elif base in INTERPRETERS and (args and (args[0] in ONE_LINER_FLAGS.get(base, set()) or
                                             any(a in ONE_LINER_FLAGS.get(base, set()) for a in args[:3]))):
        result.add(f"runs inline {base} code the rules cannot read ({program} {args[0]})")
    elif program in ("tee", "cp", "mv", "install", "ln", "rsync", "scp", "truncate", "touch", "sed", "perl") or program in DOWNLOADERS:
        writes = operands if program in ("tee", "truncate", "touch", "sed") else operands[-1:]
        if program in DOWNLOADERS:
            writes = [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-o", "-O", "--output", "--output-document")]
        if program == "sed" and not flags & {"-i", "--in-place"}:
            writes = []
        for word in writes:
            reason = paths.protected(word)
            if reason:
                result.add(reason)
    if program in ("cat", "less", "more", "head", "tail", "base64", "xxd", "strings", "cp", "scp", "rsync", "curl",
                   "nc", "grep", "awk", "sed", "bat") and any(paths.credential(o) for o in operands):
        result.add("reads a credentials file (its contents would reach the model)")


def _kill(args: list[str], result: Analysis) -> None:
    rest = list(args)
    signal = ""
    if rest[:1] in (["-s"], ["-n"]) and len(rest) > 1:
        signal, rest = rest[1], rest[2:]
    elif rest and rest[0].startswith("-") and rest[0] not in ("--", "-l", "-L") and len(rest) > 1:
        signal, rest = rest[0].lstrip("-"), rest[1:]  # the first option is the signal: kill -9 PID
    if rest[:1] == ["--"]:
        rest = rest[1:]
    if "-1" in rest:
        result.add("signals every process you can reach (kill -1)", hard=True)
    elif signal.upper() in ("9", "KILL", "SIGKILL"):
        result.add("force-kills processes (kill -9)")


def _git(verb: list[str], args: list[str], result: Analysis) -> None:
    verb_name = verb[0] if verb else ""
    if verb_name == "reset" and "--hard" in args:
        result.add("throws away uncommitted work (git reset --hard)")
    elif verb_name == "push" and any(a in ("--force", "-f", "--force-with-lease", "--mirror") or
                                     (a.startswith("-") and not a.startswith("--") and "f" in a) or a.startswith("+")
                                     for a in args[1:]):
        result.add("rewrites history on a remote (git push --force)")
    elif verb_name == "clean" and any(a.startswith("-") and not a.startswith("--") and "f" in a or a == "--force"
                                      for a in args[1:]):
        result.add("deletes untracked files (git clean -f)")
    elif verb_name == "checkout" and "--" in args and "." in args:
        result.add("throws away uncommitted changes (git checkout -- .)")


def _sql(text: str, result: Analysis) -> None:
    for statement in re.split(r";", text):
        upper = statement.upper()
        if re.search(r"\bDROP\s+(TABLE|DATABASE|SCHEMA|INDEX|VIEW|USER|ROLE)\b", upper):
            result.add("drops a database object (SQL DROP)")
        if re.search(r"\bTRUNCATE\b", upper):
            result.add("empties a table (SQL TRUNCATE)")
        if re.search(r"\bDELETE\s+FROM\b", upper) and not re.search(r"\bWHERE\b", upper):
            result.add("deletes every row of a table (SQL DELETE without WHERE)")


def quote_command(words: list[str]) -> str:
    """A command line for ``words`` (used in messages)."""
    return shlex.join(words)
