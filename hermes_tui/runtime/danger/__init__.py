"""What a shell command would do: flagged parts (ask first) and the hard floor (never).

The text is parsed with a real bash grammar (:mod:`.parse`, tree-sitter-bash) into every
simple command it would run — through lists, pipelines, subshells, functions, loops,
``$(...)``, backticks, ``<(...)`` and heredocs, with comments dropped and line continuations
joined. Wrappers are unwrapped to the command they run (:mod:`.wrappers`: ``sudo``, ``env -S``,
``timeout``, ``xargs``, ``find -exec``, ``bash -lc``, ``su -c``, ``eval``, ``ssh host CMD``, ...)
and each command is read by the rules of its program (:mod:`.programs`). Quoted text given to a
program as data (``echo 'rm -rf /'``, ``grep "rm -rf" .``) is not a command and is not flagged.
A command that cannot be parsed, or that hides characters, is flagged — never waved through.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import re
import shlex
from collections.abc import Callable, Mapping

from hermes_tui.runtime.danger import windows
from hermes_tui.runtime.danger.analysis import Analysis
from hermes_tui.runtime.danger import wrappers as wrap
from hermes_tui.runtime.danger.parse import COMPUTED, SUBSCRIPT_CODE, Command, Parsed, parse
from hermes_tui.runtime.danger.paths import Paths, basename, private_key_file, single_root, variants
from hermes_tui.runtime.danger.places import Place
from hermes_tui.runtime.danger.programs import (
    STDIN_SCRIPT, Check, check_program, find_starts, interpreter_name, program_options, remote_code, split_flags,
    sql, write_target,
)
from hermes_tui.base.text import hidden_characters, reveal

__all__ = ["Analysis", "analyze", "protected_write", "reveal", "hidden_characters", "quote_command", "simple_commands"]

MAX_NESTING = 8
"""Shells in shells deeper than this are not read (and flagged)."""
SQL_PROGRAMS = frozenset({"DROP", "TRUNCATE", "DELETE", "ALTER", "UPDATE", "drop", "truncate", "delete"})


def protected_write(path: str, home: str | None = None, hermes_home: str | None = None,
                    instructions: tuple[str, ...] = ()) -> str | None:
    """Why writing (or patching) the file at ``path`` must be approved (None if it need not).

    For the file tools, which pass the real path (:func:`~.paths.real_write_target`): it is
    judged against your home and HERMES_HOME as spelled and as real paths, and a key store or a
    ``.pem`` holding a private key is protected too (a patch would show the key in its diff).
    ``instructions``: names of agent instruction files (always asked).
    """
    for paths in variants(home, hermes_home, instructions):
        reason = paths.protected(path)
        if reason:
            return reason
    return "writes a private key file" if private_key_file(single_root(path)) else None


def analyze(command: str, home: str | None = None, hermes_home: str | None = None, *, cwd: str | None = None,
            env: Mapping[str, str] | None = None, instructions: tuple[str, ...] = ()) -> Analysis:
    """Flags and hard-floor reasons for the shell text ``command``. Never raises.

    ``cwd``: the folder it runs in, and ``env``: the environment its shell gets (``HOME``,
    ``TMPDIR``, ...). With ``cwd``, the hard floor and protected writes judge every path as it
    will resolve there on this machine (:mod:`.places`); without it, relative paths are read
    as text only. ``instructions``: names of agent instruction files, whose writes are flagged
    with a reason :func:`~hermes_tui.runtime.instructions.is_instruction_reason` knows."""
    result = Analysis()
    hidden = hidden_characters(command)
    if hidden:
        result.add(f"contains hidden characters ({', '.join(hidden[:6])}): it may not run what it shows")
    try:
        for text in (command, command.replace("\\\n", "")) if "\\\n" in command else (command,):
            # bash removes backslash-newline before it reads words: r\<newline>m is rm
            paths = Paths.of(home, hermes_home, instructions)
            paths.place = Place(paths, cwd, env)
            _Reader(paths, result, paths.place.variables(text, env)).text(text, 0)
    except RecursionError:
        result.add("nests too deeply to read")
    return result


def simple_commands(command: str, home: str | None = None) -> list[list[str]] | None:
    """The simple commands ``command`` parses to, as words; None if it cannot be read
    statically (a syntax error, or a part known only at run time). Rules match on this."""
    paths = Paths.of(home, None)
    parsed = parse(command, {"HOME": paths.home})
    if parsed.problems or parsed.functions:
        return None
    out = []
    for item in parsed.commands:
        if any(COMPUTED in w for w in item.words) or item.redirects or item.assignments or item.fed_by:
            return None
        out.append(item.words)
    return out


def quote_command(words: list[str]) -> str:
    """A command line for ``words`` (used in messages)."""
    return shlex.join(words)


class _Reader:
    def __init__(self, paths: Paths, result: Analysis, known: dict[str, str] | None = None) -> None:
        self.paths = paths
        self.result = result
        self.known = known or {}
        """Values of the shell's own variables (``HOME``, ``PWD``, ``TMPDIR``): its environment."""
        self.made_executable: set[str] = set()
        self.word = ""
        """The program word of the command being read."""
        self.functions: dict[str, list[Command]] = {}
        """Functions the text defines: a call runs their bodies with its arguments."""
        self.renamed: dict[str, str] = {}
        """Names a dangerous program was copied or linked to (``cp /sbin/reboot /tmp/r``)."""

    def text(self, text: str, depth: int, stdin_of: Command | None = None) -> None:
        """Read shell text (the whole command, or what ``bash -c`` / ``eval`` / a piped shell runs)."""
        if depth > MAX_NESTING:
            self.result.add("nests shells too deeply to read")
            return
        parsed = parse(text, {"HOME": self.paths.home, **self.known, "HERMES_HOME": self.paths.hermes_home})
        for problem in parsed.problems:
            self.result.add(f"{problem}: read it yourself" if "cannot be parsed" in problem
                            else f"cannot be parsed: it {problem}")
        self._fork_bombs(parsed)
        self.functions.update(parsed.functions)
        for redirect in parsed.writes:
            write_target(redirect.target, self.paths, self.result)
        for redirect in parsed.reads:
            if self.paths.credential(redirect.target):
                self.result.add("reads a credentials file (its contents would reach the model)")
        for command in parsed.commands:
            if stdin_of is not None and not command.fed_by:
                command.fed_by.extend(stdin_of.fed_by)
            self.command(command, list(command.words), depth)

    def _fork_bombs(self, parsed: Parsed) -> None:
        for name, body in parsed.functions.items():
            calls = [c for c in body if c.words[:1] == [name]]
            piped = any(any(f.words[:1] == [name] for f in c.fed_by) for c in calls)
            if len(calls) >= 2 or piped:
                called = any(c.words[:1] == [name] for c in parsed.commands if c not in body)
                self.result.add("is a fork bomb (a function that starts copies of itself)", hard=called)

    def command(self, command: Command, words: list[str], depth: int) -> None:
        """Unwrap ``words`` to the program that runs, then apply its rules."""
        for name, _ in command.assignments:
            self._environment(name)
        for _ in range(32):  # wrappers in wrappers; each turn removes at least one word
            if not words:
                return
            program = program_name(words[0])
            if COMPUTED in words[0] or program == COMPUTED:
                self.result.add("runs a program whose name is known only at run time ($VAR, $(...), a glob)")
                return
            program = self.renamed.get(basename(words[0]), program)
            if program in self.functions and words[0] == program:
                self._call(program, words[1:], depth)
                return
            handler = UNWRAP.get(program) or (_Reader._shell if wrap.shell_name(program) else _Reader._leaf)
            self.word = words[0]  # as written (./x.sh), for the rules that need more than its name
            inner = handler(self, command, program, words[1:], depth)
            if inner is None:
                return
            words = inner
        self.result.add("wraps commands too deeply to read")

    def _call(self, name: str, args: list[str], depth: int) -> None:
        """A call of a function the text defines: its body, with every word it takes from its
        caller (``"$@"``, ``$1``, or anything else unknown) read as the call's arguments."""
        if depth >= MAX_NESTING:
            self.result.add("nests function calls too deeply to read")
            return
        body, self.functions = self.functions.pop(name), dict(self.functions)  # no endless recursion
        try:
            for inner in body:
                words = [w for word in inner.words for w in (args if word == COMPUTED else [word])]
                self.command(inner, words, depth + 1)
        finally:
            self.functions[name] = body

    # One handler per kind of program (UNWRAP): it returns the words of the command the
    # program runs (read next), or None when it is done.

    def _wrapper(self, command: Command, program: str, args: list[str], depth: int) -> list[str] | None:
        spec = wrap.WRAPPERS[program]
        if spec.note:
            self.result.add(spec.note)
        if program == "sudo" and _sudo_stdin_password(args):
            self.result.add("feeds sudo a password on standard input (sudo -S): password guessing", hard=True)
        if program == "sudo" and args[:1] in (["-e"], ["--edit"]):
            return self._sudoedit(command, "sudo", args[1:], depth)
        if program == "command" and args[:1] in (["-v"], ["-V"]):
            return None  # looks a name up; runs nothing
        rest = wrap.skip_options(args, spec)
        if program == "watch" or (program == "sudo" and any(a in ("-s", "-i", "--shell", "--login") for a in args)):
            if rest:  # handed to a shell as one line
                self.text(wrap.joined(rest), depth + 1)
            return None
        if program == "flock" and rest[:1] in (["-c"], ["--command"]):  # flock FILE -c TEXT
            self.text(" ".join(rest[1:2]), depth + 1)
            return None
        return rest

    def _sudoedit(self, command: Command, program: str, args: list[str], depth: int) -> list[str] | None:
        self.result.add(wrap.as_root(program))
        for target in args:
            write_target(target, self.paths, self.result, "edits")
        return None

    def _su(self, command: Command, program: str, args: list[str], depth: int) -> list[str] | None:
        if program != "script":
            self.result.add(wrap.as_root(program) if program != "sg" else "runs as another group (sg)")
        texts = wrap.su_texts(args)
        for text in texts:
            self.text(text, depth + 1)
        if texts:
            return None
        if program == "runuser" and "--" in args:
            return args[args.index("--") + 1:]
        if program == "sg" and len(args) >= 2:
            self.text(args[1], depth + 1)
        elif program == "script" and (command.stdin is not None or command.fed_by):
            self._fed_shell(command, program, depth)  # script starts a shell that reads its input
        return None

    def _env(self, command: Command, program: str, args: list[str], depth: int) -> list[str] | None:
        unwrapped = wrap.env_command(args)
        for name in unwrapped.assignments:
            self._environment(name)
        if unwrapped.text is not None:
            self.text(unwrapped.text, depth + 1)
            return None
        return unwrapped.words or []

    def _xargs(self, command: Command, program: str, args: list[str], depth: int) -> list[str] | None:
        """xargs runs its command with words read from its input: known words when a static
        producer feeds it (``echo ~ | xargs rm -rf`` deletes your home), find's start points
        (each word is one of them or lies below one), else words known only at run time."""
        rest = wrap.skip_options(args, wrap.XARGS_SPEC)
        if not rest:
            return None  # echoes its input
        inputs = _xargs_input(command, args)
        replace = _xargs_replace(args)
        self.command(command, rest, depth)  # as written (an unknown word must not hide `eval 'CMD'`)
        if replace is None:
            return rest + inputs
        for word in inputs[:-1]:  # -I{}: one command per input line, {} replaced by it
            self.command(command, [w.replace(replace, word) for w in rest], depth)
        return [w.replace(replace, inputs[-1]) for w in rest]

    def _parallel(self, command: Command, program: str, args: list[str], depth: int) -> list[str] | None:
        rest = wrap.skip_options(args, wrap.WRAPPERS["parallel"])
        if ":::" not in rest:
            if rest:
                return rest
            self._fed_shell(command, program, depth)  # echo CMD | parallel: each line is a command
            return None
        before, after = rest[:rest.index(":::")], [a for a in rest[rest.index(":::") + 1:] if a not in (":::", "::::")]
        if before:  # parallel CMD ::: ARGS: CMD with each argument
            return before + after
        for text in after:  # parallel ::: CMD1 CMD2: each is a command
            self.text(text, depth + 1)
        return None

    def _coproc(self, command: Command, program: str, args: list[str], depth: int) -> list[str] | None:
        # The grammar does not know coproc: `coproc NAME { cmd; }` arrives as words.
        if args[1:2] == ["{"]:
            args = args[2:]
        return [a for a in args if a not in ("{", "}")] or None

    def _gdb(self, command: Command, program: str, args: list[str], depth: int) -> list[str] | None:
        if "--args" in args:  # gdb --args PROGRAM ARGS: runs PROGRAM
            return args[args.index("--args") + 1:]
        return self._leaf(command, program, args, depth)

    def _newgrp(self, command: Command, program: str, args: list[str], depth: int) -> list[str] | None:
        self.result.add(f"starts a shell as another group ({program})")
        if command.stdin is not None or command.fed_by:
            self._fed_shell(command, program, depth)
        return None

    def _applet(self, command: Command, program: str, args: list[str], depth: int) -> list[str] | None:
        return args or None  # busybox rm -rf /: the applet is the program

    def _eval(self, command: Command, program: str, args: list[str], depth: int) -> list[str] | None:
        text = " ".join(args[1:] if args[:1] == ["--"] else args)
        if COMPUTED in text:
            if not remote_code(Check("eval", [text], command, self.paths, self.result), "eval"):
                self.result.add("evaluates text known only at run time (eval \"$(...)\")")
            return None
        self.text(text, depth + 1)
        return None

    def _source(self, command: Command, program: str, args: list[str], depth: int) -> list[str] | None:
        args = args[1:] if args[:1] == ["--"] else args
        if remote_code(Check(program, args, command, self.paths, self.result), "source"):
            return None
        static = _static_output(command) if args[:1] == [COMPUTED] else None
        if static is not None:  # source <(echo CMD): the text is read
            self.result.add("runs shell code it writes on the fly (source <(...)): its text is read below")
            self.text(static, depth + 1)
        elif args[:1] and _stdin(args[0]) or any(COMPUTED in a for a in args[:1]):
            self.result.add("runs shell code it reads at run time (source)")
        return None

    def _find(self, command: Command, program: str, args: list[str], depth: int) -> list[str] | None:
        for action in wrap.find_actions(args):
            self.command(command, [w for w in action if w != "{}"] or action, depth)
        check_program(Check(program, args, command, self.paths, self.result))
        return None

    def _ssh(self, command: Command, program: str, args: list[str], depth: int) -> list[str] | None:
        host, remote = wrap.ssh_command(args)
        self._program_options(program, args, depth)
        if remote:
            self.result.add(f"runs a command on another machine (ssh {host}): {remote[:80]}")
            self.text(remote, depth + 1)
        elif host and (command.stdin is not None or command.fed_by):
            self.result.add(f"runs commands it feeds to another machine (... | ssh {host})")
            self._fed_shell(command, program, depth)
        return None

    def _leaf(self, command: Command, program: str, args: list[str], depth: int) -> list[str] | None:
        """A program that runs no other command by its words: its rules."""
        self.result.runs.append((program, *args))
        for word in args:  # let 'a[$(cmd)]', test -v, read, printf -v: bash runs the subscript
            if "[" in word:
                for inner in SUBSCRIPT_CODE.findall(word):
                    self.text(inner.strip("`").removeprefix("$(").removesuffix(")"), depth + 1)
        code = _code_arguments(program, args)
        if code is not None:
            for text in code:
                self.text(text, depth + 1)
            self.result.add(f"sets code that runs later or under another name ({program})")
            return None
        if program in SQL_PROGRAMS:
            sql(" ".join([program, *args]), self.result)
            if program == "truncate":  # coreutils' truncate too: what it empties are files
                for operand in split_flags(args)[1]:
                    write_target(operand, self.paths, self.result, "empties")
            return None
        # Windows paths lose their backslashes to bash quoting: those rules read the raw words.
        raw = command.text.split()[1:] if "\\" in command.text and len(args) + 1 == len(command.words) else args
        if windows.check(program, raw, self.paths, self.result, lambda text: self.text(text, depth + 1)):
            return None
        if program in ("hermes", "hermes_cli.main"):
            self._hermes(args, depth)
            return None
        if interpreter_name(program) == "python" and args[:2] == ["-m", "hermes_cli.main"]:
            self._hermes(args[2:], depth)
            return None
        if program in ("cp", "ln", "install", "mv") and len(args) >= 2:
            source = next((basename(a) for a in args[:-1] if basename(a) in GLOB_TARGETS), None)
            if source:
                self.renamed[basename(args[-1])] = source
                self.result.add(f"copies {source} under another name ({program} ... {args[-1]})")
        if program == "chmod" and any(EXECUTABLE_MODE.fullmatch(a) for a in args):
            self.made_executable.update(basename(a) for a in args if not a.startswith(("-", "+")))
        elif "/" in self.word and basename(self.word) in self.made_executable:
            self.result.add("runs a script it has just made executable (chmod +x, then runs it)")
        self._program_options(program, args, depth)
        self._carrier(command, program, depth)
        if program in ("cd", "pushd") and self.paths.place is not None:
            self.paths.place.cd(args)  # later relative words land in the new folder
        if program == "ln" and self.paths.place is not None:
            flags, operands = split_flags(args)
            if flags & {"-s", "--symbolic"} and len(operands) == 2:
                self.paths.place.link(*operands)  # ln -sfn ~ x && rm -rf x/: x/ is the home
        check_program(Check(program, args, command, self.paths, self.result))
        return None

    def _apart(self) -> Paths:
        """Paths for text read for another reason (a script written for later, a command handed
        to Hermes): a ``cd`` in it does not move this command's working directory."""
        place = self.paths.place
        return Paths(self.paths.home, self.paths.hermes_home, place.copy() if place is not None else None,
                     self.paths.instructions)

    def _environment(self, name: str) -> None:
        if name in ("DOCKER_HOST", "CONTAINER_HOST", "DOCKER_CONTEXT", "KUBECONFIG"):
            self.result.add(f"points tools at another daemon or cluster ({name}=...)")
        elif name in ("LD_PRELOAD", "LD_LIBRARY_PATH", "DYLD_INSERT_LIBRARIES", "BASH_ENV", "ENV", "PROMPT_COMMAND",
                      "GIT_SSH_COMMAND", "GIT_EXTERNAL_DIFF", "PAGER", "GIT_PAGER", "EDITOR", "VISUAL", "LESSOPEN",
                      "LESSCLOSE", "MANPAGER", "SYSTEMD_PAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_ASKPASS",
                      "SSH_ASKPASS", "NODE_OPTIONS", "PERL5OPT", "RUBYOPT", "PS4", "PYTHONSTARTUP") or \
                name.startswith("GIT_CONFIG"):
            self.result.add(f"sets {name}, which makes programs run other code")

    def _shell(self, command: Command, program: str, args: list[str], depth: int) -> list[str] | None:
        text, has_c = wrap.shell_text(args)
        if has_c:
            self.result.add(f"runs a command through another shell ({program} -c): its text is read below, "
                            "but read it yourself")
            if text is None:
                self.result.add(f"runs a shell command the rules cannot read ({program} -c without text)")
            elif COMPUTED in text:
                if not remote_code(Check(program, args, command, self.paths, self.result), program):
                    self.result.add(f"runs shell text known only at run time ({program} -c \"$(...)\")")
            else:
                self.text(text, depth + 1, command)
            return None
        operands = [a for a in args if not a.startswith(("-", "+"))]
        if remote_code(Check(program, args, command, self.paths, self.result), program):
            decoded = _static_output(command)
            if decoded is not None:  # echo cm0gLXJmIH4= | base64 -d | sh: what it decodes is read too
                self.text(decoded, depth + 1)
            return None
        if operands and COMPUTED in operands[0]:
            static = _static_output(command) if operands[0] == COMPUTED else None
            if static is not None:  # bash <(echo 'rm -rf ~'): the script is that text
                self.result.add(f"runs a shell script it writes on the fly ({program} <(...)): its text is read "
                                "below, but read it yourself")
                self.text(static, depth + 1)
            else:
                self.result.add(f"runs a shell script known only at run time ({program} <(...))")
            return None
        if operands and _stdin(operands[0]) or "--rcfile" in args or "--init-file" in args:
            operands = []  # bash /dev/stdin <<< CMD: the script is its standard input
        if operands and "-s" not in args:
            return None  # runs a script file
        if command.stdin is not None or command.fed_by:
            self.result.add(f"runs shell code fed on standard input ({program} <<EOF, ... | {program})")
        self._fed_shell(command, program, depth)
        return None

    def _fed_shell(self, command: Command, program: str, depth: int) -> None:
        """Read what a shell (or ssh) reads on its standard input, when it can be known."""
        if command.stdin is not None:
            self.text(command.stdin, depth + 1)
            return
        static = _static_output(command)
        if static is not None:
            self.text(static, depth + 1)
        elif command.fed_by and not remote_code(Check(program, [], command, self.paths, self.result), program):
            self.result.add(f"runs shell code from a pipe the rules cannot read (... | {program})")

    def _program_options(self, program: str, args: list[str], depth: int) -> None:
        """Options that make a program run another (``rg --pre``, ``man -P``, ``tar -I``, ...)."""
        for option, value in program_options(program, args):
            self.result.add(f"runs a program through an option ({program} {option}): {value[:60]}")
            self.text(value, depth + 1)

    def _carrier(self, command: Command, program: str, depth: int) -> None:
        """Text that will run later: ``echo 'CMD' > deploy.sh``, ``cat <<EOF > x.sh``. What it
        would do is flagged (never refused: it does not run now)."""
        if program not in ("echo", "printf", "cat", "tee"):
            return
        scripts = [r.target for r in command.redirects if r.op in (">", ">>", ">|", "&>", "&>>")
                   and r.target.endswith((".sh", ".bash", ".zsh", ".command", ".ps1", "crontab"))]
        if program == "tee":
            scripts += [a for a in command.words[1:] if a.endswith((".sh", ".bash", ".zsh"))]
        if not scripts:
            return
        text = command.stdin if program in ("cat", "tee") else " ".join(
            w for w in command.words[1:] if w not in ("-n", "-e", "-E"))
        if not text or COMPUTED in text:
            return
        inner = Analysis()
        _Reader(self._apart(), inner, self.known).text(text.replace("\\n", "\n"), depth + 1)
        for reason in [*inner.hard, *inner.flags]:
            self.result.add(f"writes a script ({scripts[0]}) that {reason}")

    def _hermes(self, args: list[str], depth: int) -> None:
        """Hermes Agent's own CLI: its gateway, its approval settings, and commands it is handed."""
        words = [a for a in args if not a.startswith("-")]
        lowered = [w.lower() for w in words]
        if "gateway" in lowered and any(v in lowered for v in ("stop", "restart", "kill")) or \
                ("gateway" in lowered and "run" in lowered and "--replace" in args):
            self.result.add("stops or restarts the Hermes gateway (kills running agents)")
        if lowered[:2] == ["config", "set"] and len(words) > 2 and re.search(
                r"approval|allowlist|security|tirith|yolo|guardrail|permission|sandbox", lowered[2]):
            self.result.add(f"changes Hermes approval or security settings ({words[2]})")
        for word in words[1:]:
            if " " in word or ";" in word:
                inner = Analysis()
                _Reader(self._apart(), inner, self.known).text(word, depth + 1)
                for reason in [*inner.hard, *inner.flags]:
                    self.result.add(f"hands Hermes a command that {reason}")


GLOB_TARGETS = ("rm", "reboot", "shutdown", "halt", "poweroff", "dd", "mkfs", "kill", "shred", "wipefs", "sh", "bash")


UNWRAP = {
    **{name: _Reader._wrapper for name in wrap.WRAPPERS},
    "sudoedit": _Reader._sudoedit, **{name: _Reader._su for name in ("su", "runuser", "sg", "script")},
    "env": _Reader._env, "xargs": _Reader._xargs, "parallel": _Reader._parallel, "newgrp": _Reader._newgrp,
    "coproc": _Reader._coproc, "gdb": _Reader._gdb, "busybox": _Reader._applet, "toybox": _Reader._applet,
    "eval": _Reader._eval, "source": _Reader._source, ".": _Reader._source, "find": _Reader._find, "ssh": _Reader._ssh,
}
"""Programs that run another command (or none), by name; every other program is a leaf."""
EXECUTABLE_MODE = re.compile(r"[ugoa]*\+[rwx]*x[rwx]*|[0-7]?[0-7][1357][0-7]{2}|[0-7]?[0-7]{2}[1357]|\+x")


def program_name(word: str) -> str:
    """The program a command word names (``/bin/rm`` is rm; ``.`` stays ``.``; ``/???/r?`` is
    read as the dangerous program it can match; ``RM`` on a case-blind disk is rm)."""
    if word in (".", ".."):
        return word
    name = basename(word)
    if any(c in name for c in "*?["):
        return next((t for t in GLOB_TARGETS if fnmatch.fnmatchcase(t, name)), COMPUTED)
    lowered = name.lower().removesuffix(".exe")
    return lowered if lowered != name and lowered in CASE_BLIND else name


CASE_BLIND = frozenset({"rm", "reboot", "shutdown", "halt", "poweroff", "dd", "kill", "sudo", "sh", "bash"})




def _stdin(path: str) -> bool:
    """True for a file name that is standard input (``-``, ``/dev/stdin``, ``/dev/fd/0``)."""
    return path == "-" or STDIN_SCRIPT.match(path) is not None


def _code_arguments(program: str, args: list[str]) -> list[str] | None:
    """Shell text a builtin keeps to run later (``trap 'CMD' EXIT``, ``alias ls='CMD'``,
    ``mapfile -C CMD``, ``fc -e CMD``); None when ``program`` is not one of them."""
    if program == "trap":
        operands = [a for a in args if a != "--"]
        return operands[:1] if operands and operands[0] not in ("-l", "-p") else []
    if program == "alias":
        return [a.split("=", 1)[1] for a in args if "=" in a]
    if program in ("mapfile", "readarray", "fc"):
        option = "-C" if program != "fc" else "-e"
        return [args[i + 1] for i, a in enumerate(args[:-1]) if a == option]
    if program == "hash" and "-p" in args:
        return [" ".join(args[args.index("-p") + 1:args.index("-p") + 2])]
    if program == "complete":
        return [args[i + 1] for i, a in enumerate(args[:-1]) if a == "-C"]
    if program == "bind" and "-x" in args:
        return [a.split(":", 1)[1].strip().strip("'\"") for a in args if ":" in a]
    return None


def _sudo_stdin_password(args: list[str]) -> bool:
    for arg in args:
        if arg == "--" or not arg.startswith("-"):
            return False
        if (arg.startswith("--st") and "--stdin".startswith(arg)) or (not arg.startswith("--") and "S" in arg[1:]):
            return True
    return False


MAX_XARGS_WORDS = 64
"""Words of a static producer that xargs is read with (more are left out: they are known text)."""


def _xargs_replace(args: list[str]) -> str | None:
    """The replace string of ``xargs -I R`` / ``-i`` / ``--replace[=R]``, if it has one."""
    for i, arg in enumerate(args):
        if arg == "--" or not arg.startswith("-"):
            return None
        if arg == "-I" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("-I") and len(arg) > 2:
            return arg[2:]
        if arg in ("-i", "--replace"):
            return "{}"
        if arg.startswith(("--replace=", "-i")) and "=" in arg or arg.startswith("-i") and len(arg) > 2:
            return arg.split("=", 1)[1] if "=" in arg else arg[2:]
    return None


def _xargs_input(command: Command, args: list[str]) -> list[str]:
    """The words xargs reads: split from a static producer's text, find's start points, or one
    word known only at run time."""
    if any(a in ("-a", "--arg-file") or a.startswith(("--arg-file=", "-a")) for a in args
           if a.startswith("-") and not a.startswith("--a") or a.startswith("--arg-file")):
        return [COMPUTED]  # read from a file
    text: str | None
    if command.stdin is not None:
        text = command.stdin
    elif len(command.fed_by) == 1 and command.fed_by[0].words[:1] == ["find"] and \
            not any(COMPUTED in w for w in command.fed_by[0].words):
        return find_starts(command.fed_by[0].words[1:])
    else:
        text = _static_output(command)
    if text is None or COMPUTED in text:
        return [COMPUTED]
    null = any(a in ("-0", "--null") or (a.startswith("-") and not a.startswith("--") and "0" in a) for a in args)
    if null:
        words = [w for w in text.replace("\\0", "\0").split("\0") if w]
    elif _xargs_replace(args) is not None:
        words = [line.strip() for line in text.splitlines() if line.strip()]
    else:
        try:
            words = shlex.split(text)
        except ValueError:
            words = text.split()
    words = [w.strip() for w in words if w.strip()]
    return words[:MAX_XARGS_WORDS] or [COMPUTED]


def _static_output(command: Command, depth: int = 0) -> str | None:
    """What ``echo WORDS | sh`` / ``printf TEXT | sh`` hands the shell, when it is static —
    through decoders too: ``echo cm0gLXJmIH4= | base64 -d | sh`` hands it ``rm -rf ~``."""
    if len(command.fed_by) != 1 or depth > 8:
        return None
    source = command.fed_by[0]
    if source.words[:1] in (["echo"], ["printf"]) and not any(COMPUTED in w for w in source.words):
        words = [w for w in source.words[1:] if not (source.words[0] == "echo" and w in ("-n", "-e", "-E"))]
        return " ".join(words).replace("\\n", "\n")
    if source.words[:1] == ["cat"] and source.stdin is not None and len(source.words) == 1:
        return source.stdin
    decode = _decoder(source.words)
    if decode is not None:
        encoded = source.stdin if source.stdin is not None else _static_output(source, depth + 1)
        if encoded is not None:
            return decode(encoded)
    return None


def _unpadded_b64(text: str) -> bytes:
    """base64 as coreutils decodes it: padding may be missing."""
    return base64.b64decode(text.rstrip("=") + "=" * (-len(text.rstrip("=")) % 4))


def _decoder(words: list[str]) -> Callable[[str], str | None] | None:
    """How the program ``words`` turns its input into output, when it is a plain decoder
    (``base64 -d``, ``base32 -d``, ``xxd -r -p``, ``rev``) reading standard input."""
    program, args = (program_name(words[0]) if words else ""), words[1:]
    decoding = any(a in ("-d", "--decode", "-D") or a.startswith("-") and not a.startswith("--") and "d" in a
                   for a in args)
    files = [a for a in args if not a.startswith("-")]

    def safely(decode: Callable[[str], bytes]) -> Callable[[str], str | None]:
        def run(text: str) -> str | None:
            try:
                return decode(text).decode("utf-8", "replace")
            except (ValueError, binascii.Error):
                return None
        return run

    if program in ("base64", "gbase64") and decoding and not files:
        return safely(lambda text: _unpadded_b64("".join(text.split())))
    if program == "base32" and decoding and not files:
        return safely(lambda text: base64.b32decode("".join(text.split()).upper()))
    if program == "xxd" and "-r" in args and "-p" in args and len(files) == 0:
        return safely(lambda text: bytes.fromhex("".join(text.split())))
    if program == "rev" and not args:
        return lambda text: "\n".join(line[::-1] for line in text.split("\n"))
    return None

