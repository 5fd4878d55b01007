"""Shell text to the simple commands it would run, read with a real bash grammar.

The text is parsed by tree-sitter's bash grammar (``tree-sitter-bash``) and the syntax tree is
walked: every simple command in lists, pipelines, subshells, groups, ``if/for/while/case``
bodies, function bodies, ``$(...)``, backticks and ``<(...)``. Comments are dropped and line
continuations joined by the grammar. Each word is expanded as far as can be known before the
command runs: quotes removed, ``$'...'`` decoded, ``$IFS`` used as a separator, variables
assigned earlier in the same text, ``$HOME``, ``~``, brace expansion, and ``$(echo WORDS)``.
What cannot be known holds :data:`COMPUTED`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

COMPUTED = "\ue000"
"""Stands for a part of a word known only at run time (``$(date)``, ``$RANDOM``)."""
FRESH = COMPUTED + "\ue005"
"""Stands for the output of ``$(mktemp ...)``: known only at run time, but always a path that did
not exist before (so never your home or a system folder). It holds :data:`COMPUTED`, so every
rule that reads it as unknown still does."""
_READ_WRITE = re.compile(rb"(?<![<])<>")
"""``<>`` (open read-write), which tree-sitter-bash cannot parse; it is given to the grammar as
``>|`` (the same length, also an open for writing) and read back from the text as ``<>``."""
MAX_UNROLLED = 32
"""Runs of loop bodies, in all, read once per value (``for d in a b; do rm -rf $d; done``)."""
_SPLIT = "\ue001"  # where an unquoted expansion splits a word into fields
_BRACES = {"{": "\ue002", "}": "\ue003", ",": "\ue004"}  # unquoted brace-expansion characters
_UNBRACE = {v: k for k, v in _BRACES.items()}
_BRACES_TABLE = str.maketrans(_BRACES)
_MARKERS_RE = re.compile("[\ue001-\ue004]")
_UNBRACE_TABLE = str.maketrans(_UNBRACE)
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
MAX_DEPTH = 24
MAX_VALUE = 4096
"""A variable's value longer than this is not kept (``a=$a$a`` doubling)."""
"""Deeper nesting than this is not read (and says so)."""
MAX_FIELDS = 256
"""Brace expansion yields at most this many words per word."""


@dataclass(slots=True)
class Redirect:
    """One redirection: its operator and its (expanded) target or text."""

    op: str
    """``>``, ``>>``, ``>|``, ``&>``, ``&>>``, ``<``, ``<>``, ``>&``, ``<&``, ``<<``, ``<<-``, ``<<<``."""
    target: str
    """The file (expanded), the descriptor (``>&2``), or a heredoc's / here-string's text."""


@dataclass(slots=True, eq=False)
class Command:
    """One simple command as it would run."""

    words: list[str]
    """The program and its arguments, expanded (unknown parts hold :data:`COMPUTED`)."""
    assignments: list[tuple[str, str]] = field(default_factory=list)
    """``NAME=value`` words before the program (its environment)."""
    redirects: list[Redirect] = field(default_factory=list)
    stdin: str | None = None
    """A heredoc's or here-string's text fed to it."""
    fed_by: list[Command] = field(default_factory=list)
    """Commands whose output reaches it: earlier stages of its pipeline, and the commands of
    ``$(...)`` / ``<(...)`` in its words."""
    text: str = ""
    """Its source text (for messages)."""


@dataclass(slots=True)
class Parsed:
    """Everything a shell text would run."""

    commands: list[Command] = field(default_factory=list)
    writes: list[Redirect] = field(default_factory=list)
    """Every output redirection (``>`` ``>>`` ``&>`` ...), wherever it is."""
    reads: list[Redirect] = field(default_factory=list)
    """Every input redirection from a file (``<``)."""
    functions: dict[str, list[Command]] = field(default_factory=dict)
    """Functions defined in the text, with the commands of their bodies."""
    problems: list[str] = field(default_factory=list)
    """Why parts could not be read (syntax errors, nesting too deep)."""


@lru_cache(maxsize=1)
def _parser() -> Parser:
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


def parse(text: str, variables: dict[str, str] | None = None) -> Parsed:
    """Parse ``text`` and collect its commands; ``variables`` are known values (``HOME``).

    Every non-ASCII character is read as ``_``: bash treats such characters as plain word
    characters, so this changes no command's shape, and tree-sitter-bash's scanner crashes
    the process on some non-ASCII input. (Hidden characters are judged on the real text.)"""
    source = _NON_ASCII.sub("_", text).encode("ascii")
    tree = _parser().parse(_for_grammar(source))
    walker = _Walker(source, dict(variables or {}))
    if tree.root_node.has_error:
        walker.parsed.problems.append(_syntax_error(tree.root_node, source))
    walker.statements(tree.root_node, 0)
    return walker.parsed


def _for_grammar(source: bytes) -> bytes:
    """``source`` as the grammar can parse it: every ``<>`` (``1<> f``, ``exec 3<> f``) as ``>|``."""
    return _READ_WRITE.sub(b">|", source) if b"<>" in source else source


def _syntax_error(root: Node, source: bytes) -> str:
    node = _first_error(root)
    if node is None:
        return "cannot be parsed as shell"
    line = node.start_point[0] + 1
    near = source[node.start_byte:node.start_byte + 30].decode("utf-8", "replace").splitlines()
    what = "is unfinished (an unclosed quote, bracket or heredoc?)" if node.is_missing or not near or not near[0] \
        else f"cannot be parsed near line {line}: {near[0]!r}"
    return what


def _first_error(node: Node) -> Node | None:
    if node.type == "ERROR" or node.is_missing:
        return node
    for child in node.children:
        if child.has_error or child.is_missing:
            found = _first_error(child)
            if found is not None:
                return found
    return None


_ESCAPES_IN_DOUBLE = re.compile(r"\\([\\$`\"\n])")
_ESCAPES_UNQUOTED = re.compile(r"\\(.)", re.DOTALL)


def _decode_ansi_c(body: str) -> str:
    """The value of ``$'...'`` (``\\x41``, ``\\n``, ``\\u00e9``, octal, ``\\cX``)."""
    out = []
    i = 0
    while i < len(body):
        char = body[i]
        if char != "\\" or i + 1 >= len(body):
            out.append(char)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt == "c" and i + 2 < len(body):
            if ord(body[i + 2]) & 0x1F == 0:
                break
            out.append(chr(ord(body[i + 2]) & 0x1F))
            i += 3
            continue
        match = re.match(r"x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}", body[i + 1:])
        if match:
            token = match.group()
            code = int(token, 8) if token[0] in "01234567" else int(token[1:], 16)
            if code == 0:
                break  # bash ends the string at a NUL
            out.append(chr(code) if code <= 0x10FFFF else "\ufffd")
            i += 1 + len(token)
            continue
        simple = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f",
                  "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
        out.append(simple.get(nxt, "\\" + nxt))
        i += 2
    return "".join(out)


def _brace_expand(word: str) -> list[str]:
    """Bash brace expansion over the unquoted markers in ``word`` (``a{b,c}`` -> ab ac)."""
    open_, close, comma = _BRACES["{"], _BRACES["}"], _BRACES[","]
    start = word.find(open_)
    while start >= 0:
        depth, commas, i = 0, [], start
        end = -1
        while i < len(word):
            if word[i] == open_:
                depth += 1
            elif word[i] == close:
                depth -= 1
                if depth == 0:
                    end = i
                    break
            elif word[i] == comma and depth == 1:
                commas.append(i)
            i += 1
        if end < 0:
            break
        if commas:
            head, tail = word[:start], word[end + 1:]
            bounds = [start, *commas, end]
            out: list[str] = []
            for a, b in zip(bounds, bounds[1:]):
                for expanded in _brace_expand(head + word[a + 1:b] + tail):
                    out.append(expanded)
                    if len(out) >= MAX_FIELDS:
                        return out
            return out
        sequence = re.fullmatch(r"(-?\w+)\.\.(-?\w+)", word[start + 1:end])
        if sequence:
            return [word[:start] + COMPUTED + word[end + 1:]]  # {1..9}: a range, its words are not commands
        start = word.find(open_, start + 1)
    return [word]


_NAME_USE = re.compile(rb"(?<![$\w{./-])([A-Za-z_][A-Za-z0-9_]*)(?=[=\s\[;)]|$)", re.MULTILINE)


def _ambiguous_names(source: bytes) -> frozenset[str]:
    """Names written (not read) more than once in the text: ``x=a; x=b true; $x``, ``read x``,
    ``printf -v x``, ``(x=...)``. Their value at a given point is not read statically."""
    counts: dict[bytes, int] = {}
    for match in _NAME_USE.finditer(source):
        counts[match.group(1)] = counts.get(match.group(1), 0) + 1
    return frozenset(name.decode() for name, count in counts.items() if count > 1)


def _escapes_before(source: bytes, index: int) -> int:
    """How many backslashes stand right before ``source[index]``."""
    count = 0
    while index - count - 1 >= 0 and source[index - count - 1:index - count] == b"\\":
        count += 1
    return count


_DOLLAR_NAME = re.compile(r"\$(\{)?([A-Za-z_][A-Za-z0-9_]*)(?(1)[^}]*\})")


def _dollar_names(fields: list[str], variables: dict[str, str]) -> list[str]:
    """Expand ``$NAME`` the grammar left as text when it split a word (``-rf$`` + ``IFS/``)."""
    out: list[str] = []
    for word in fields:
        def value(match: re.Match[str]) -> str:
            name = match.group(2)
            return _SPLIT if name == "IFS" else variables.get(name, COMPUTED)

        expanded = _DOLLAR_NAME.sub(value, word)
        out.extend(p for p in expanded.split(_SPLIT) if p)
    return out


SUBSCRIPT_CODE = re.compile(r"\[[^\]]*?(\$\([^)]*\)|`[^`]*`)")
"""A subscript holding a substitution: bash runs it wherever it evaluates the subscript."""
PROMPTS = ("PS0", "PS1", "PS2", "PS4")


def code_in_value(name: str, value: str) -> list[str]:
    """Shell text a value will run later: the substitutions of its subscripts (bash evaluates
    ``a[$(cmd)]`` in arithmetic), of a prompt (``PS4='$(cmd)'`` runs under ``set -x``), and a
    ``PROMPT_COMMAND`` whole."""
    found = [m.strip("`").removeprefix("$(").removesuffix(")") for m in SUBSCRIPT_CODE.findall(value)] \
        if "[" in value else []
    if name == "PROMPT_COMMAND":
        found.append(value)
    elif name in PROMPTS and ("$(" in value or "`" in value):
        found.append("echo " + value)
    return found


def _restore(word: str) -> str:
    return word.translate(_UNBRACE_TABLE)


class _Walker:
    def __init__(self, source: bytes, variables: dict[str, str]) -> None:
        self.source = source
        self.variables = variables
        self.parsed = Parsed()
        self._ends: dict[int, int] = {}  # where each command's last argument ended
        self._ambiguous: frozenset[str] | None = None
        self.unrolled = 0
        """Loop bodies read once per value so far (at most :data:`MAX_UNROLLED`)."""

    def text(self, node: Node) -> str:
        return self.source[node.start_byte:node.end_byte].decode("ascii")

    def ambiguous(self) -> frozenset[str]:
        """Variables set more than once, or by read/printf -v/mapfile/...: their value is not
        known. Found on the first variable that needs it (most commands have none)."""
        if self._ambiguous is None:
            self._ambiguous = _ambiguous_names(self.source)
        return self._ambiguous

    # -- statements -----------------------------------------------------------------------

    def statements(self, node: Node, depth: int) -> list[Command]:
        """Walk any node; returns the commands whose output leaves it (for pipelines)."""
        if depth > MAX_DEPTH:
            if "nests too deeply to read" not in self.parsed.problems:
                self.parsed.problems.append("nests too deeply to read")
            return []
        kind = node.type
        if kind == "command":
            return [self.command(node, depth)]
        if kind == "pipeline":
            return self.pipeline(node.children, depth)
        if kind == "redirected_statement":
            return self.redirected(node, depth)
        if kind in ("variable_assignment", "variable_assignments"):
            self.assignments(node, depth)
            return []
        if kind == "function_definition":
            return self.function(node, depth)
        if kind == "comment":
            return self.comment(node, depth)
        if kind == "for_statement":
            return self.for_loop(node, depth)
        if kind == "test_command" and "[" in self.text(node)[2:]:  # [[ -v 'a[$(cmd)]' ]] runs cmd
            for code in code_in_value("", self.text(node)[2:-2]):
                self.include(code, depth + 1)
        if kind in ("word", "string", "raw_string", "concatenation", "simple_expansion", "expansion",
                    "command_substitution", "process_substitution", "ansi_c_string", "arithmetic_expansion"):
            self.word(node, depth)  # words outside commands (for ... in WORDS, case WORD) still run $(...)
            return []
        out: list[Command] = []
        for child in node.children:
            out.extend(self.statements(child, depth + 1))
        return out

    def for_loop(self, node: Node, depth: int) -> list[Command]:
        """``for NAME in WORDS; do BODY; done``: with a few known words, the body is read once
        per word with NAME set to it (``for d in a b; do rm -rf $d; done`` deletes a and b);
        otherwise once, with NAME known only at run time."""
        variable = node.child_by_field_name("variable")
        body = node.child_by_field_name("body")
        name = self.text(variable) if variable is not None else ""
        words: list[str] = []
        values = node.children_by_field_name("value")
        for value in values:
            words.extend(self.fields(value, depth + 1))  # runs the $(...) in the list, too
        known = bool(values) and 0 < len(words) <= 8 and all(COMPUTED not in w for w in words)
        if body is None:
            return []
        if known and name and name not in self.ambiguous() and self.unrolled + len(words) <= MAX_UNROLLED:
            self.unrolled += len(words)
            out: list[Command] = []
            for word in words:
                self.variables[name] = word
                out = self.statements(body, depth + 1)
            self.variables.pop(name, None)
            return out
        self.variables.pop(name, None)
        return self.statements(body, depth + 1)

    def pipeline(self, children: list[Node], depth: int, before: list[Command] | None = None) -> list[Command]:
        upstream: list[Command] = list(before or [])
        last: list[Command] = []
        for child in children:
            if child.type in ("|", "|&"):
                upstream = last or upstream  # earlier stages are reached through these
                last = []
                continue
            first = len(self.parsed.commands)
            last = self.statements(child, depth + 1)
            if upstream:
                for command in self.parsed.commands[first:]:
                    command.fed_by.extend(upstream)
        return last

    def redirected(self, node: Node, depth: int) -> list[Command]:
        body = node.child_by_field_name("body")
        first = len(self.parsed.commands)
        heads = self.statements(body, depth + 1) if body is not None else []
        inside = self.parsed.commands[first:]
        for child in node.children:
            if child == body:
                continue
            if child.type == "heredoc_redirect":
                heads = self.heredoc(child, inside, depth)
            elif child.type in ("file_redirect", "herestring_redirect"):
                mark = len(self.parsed.commands)
                self.redirect(child, inside, depth)
                for command in inside:  # `bash < <(curl ...)`: curl feeds bash
                    command.fed_by.extend(self.parsed.commands[mark:])
            elif child.type != "comment":
                heads.extend(self.statements(child, depth + 1))
        return heads

    def heredoc(self, node: Node, inside: list[Command], depth: int) -> list[Command]:
        op = "<<"
        body_text = ""
        continuation: list[Node] = []
        quoted = False
        for child in node.children:
            if child.type in ("<<", "<<-"):
                op = child.type
            elif child.type == "heredoc_start":
                quoted = any(q in self.text(child) for q in "'\"\\")
            elif child.type == "heredoc_body":
                body_text = self.heredoc_body(child, depth, quoted)
                if op == "<<-" and not quoted and "\t" in self.text(child):
                    stripped = re.sub(r"(?m)^\t+", "", self.text(child))
                    self.include(f"cat <<HERMES_EOF\n{stripped}\nHERMES_EOF\n", depth + 1)
            elif child.type not in ("heredoc_start", "heredoc_end", "heredoc_content"):
                continuation.append(child)
        for command in inside:
            if command.stdin is None:
                command.stdin = body_text
            command.redirects.append(Redirect(op, body_text))
        # The rest of the heredoc's first line (`cat <<EOF | sh`, `<<EOF && rm x`) is parsed inside it.
        heads = list(inside)
        piped = False
        for child in continuation:
            if child.type in ("|", "|&"):
                piped = True
                continue
            if child.type == "pipeline" and child.children and child.children[0].type in ("|", "|&"):
                heads = self.pipeline(child.children, depth, before=inside)
                continue
            if child.type in ("&&", "||", ";", "&"):
                heads = []
                continue
            if child.type in ("file_redirect", "herestring_redirect"):
                self.redirect(child, inside, depth)
                continue
            first = len(self.parsed.commands)
            found = self.statements(child, depth + 1)
            if piped:
                for command in self.parsed.commands[first:]:
                    command.fed_by.extend(inside)
                piped = False
            heads = found
        return heads

    def heredoc_body(self, node: Node, depth: int, quoted: bool = False) -> str:
        # An unquoted heredoc expands $(...) and `...` (those commands run); a quoted one does not.
        if not quoted:
            for match in re.finditer(r"`([^`]*)`", self.text(node)):
                self.include(match.group(1), depth + 1)
        parts = []
        position = node.start_byte
        for child in node.children:
            if child.type in ("command_substitution", "simple_expansion", "expansion", "arithmetic_expansion"):
                parts.append(self.source[position:child.start_byte].decode("ascii"))
                parts.append(self.word(child, depth + 1))
                position = child.end_byte
        parts.append(self.source[position:node.end_byte].decode("ascii"))
        return "".join(parts).replace(COMPUTED, "")

    def include(self, text: str, depth: int) -> list[Command]:
        """Parse ``text`` on its own (a backtick in a heredoc, a comment that is not one) and
        add what it runs; returns its commands."""
        if depth > MAX_DEPTH:
            return []
        inner = _Walker(_NON_ASCII.sub("_", text).encode("ascii"), self.variables)
        inner.unrolled = self.unrolled
        tree = _parser().parse(_for_grammar(inner.source))
        if tree.root_node.has_error:
            inner.parsed.problems.append(_syntax_error(tree.root_node, inner.source))
        inner.statements(tree.root_node, depth + 1)
        found = inner.parsed
        self.parsed.commands.extend(found.commands)
        self.parsed.writes.extend(found.writes)
        self.parsed.reads.extend(found.reads)
        self.parsed.functions.update(found.functions)
        self.parsed.problems.extend(p for p in found.problems if p not in self.parsed.problems)
        return found.commands

    def comment(self, node: Node, depth: int) -> list[Command]:
        """A ``#`` starts a comment only at the start of a word. The grammar also reads one
        after an escaped blank, a line continuation or a carriage return (``printf SAFE\\\n#x;
        reboot``), where bash reads on: the rest of such a line is read as commands."""
        position = node.start_byte
        while position >= 2 and self.source[position - 2:position] == b"\\\n" and \
                _escapes_before(self.source, position - 2) % 2 == 0:
            position -= 2  # a line continuation is removed before words are read
        before = self.source[position - 1:position] if position else b"\n"
        if before in (b" ", b"\t", b"\n", b";", b"&", b"|", b"(", b")", b"<", b">") and \
                _escapes_before(self.source, position - 1) % 2 == 0:
            return []
        return self.include("_" + self.text(node)[1:], depth)

    def function(self, node: Node, depth: int) -> list[Command]:
        name_node = node.child_by_field_name("name")
        name = self.text(name_node) if name_node is not None else ""
        first = len(self.parsed.commands)
        for child in node.children:
            if child != name_node:
                self.statements(child, depth + 1)
        self.parsed.functions[name] = self.parsed.commands[first:]
        return []

    def assignments(self, node: Node, depth: int) -> list[tuple[str, str]]:
        found = []
        nodes = [node] if node.type == "variable_assignment" else node.children
        for item in nodes:
            if item.type != "variable_assignment":
                continue
            name_node = item.child_by_field_name("name")
            value_node = item.child_by_field_name("value")
            name = self.text(name_node) if name_node is not None else ""
            value = self.word(value_node, depth + 1).replace(_SPLIT, " ") if value_node is not None else ""
            value = _restore(value)
            found.append((name, value))
            for child in item.children:  # a[$(cmd)]=x: the subscript runs
                if child.type == "subscript":
                    self._run_substitutions(child, depth + 1)
            for code in code_in_value(name, value):  # x='a[$(cmd)]'; (( x )) / PS4='$(cmd)'
                self.include(code, depth + 1)
            if name and COMPUTED not in value.replace(FRESH, "") and len(value) <= MAX_VALUE:
                self.variables[name] = value
            else:
                self.variables.pop(name, None)
        return found

    # -- one simple command ---------------------------------------------------------------

    def command(self, node: Node, depth: int) -> Command:
        command = Command(words=[], text=self.text(node))
        first = len(self.parsed.commands)
        self.parsed.commands.append(command)
        for child in node.children:
            kind = child.type
            if kind == "variable_assignment":
                command.assignments.extend(self.assignments(child, depth))
            elif kind in ("file_redirect", "herestring_redirect"):
                self.redirect(child, [command], depth)
            elif kind == "heredoc_redirect":
                self.heredoc(child, [command], depth)
            elif kind == "command_name":
                for part in child.children:
                    self._argument(command, part, depth)
            elif kind != "comment":
                self._argument(command, child, depth)
        # The commands of its own $(...) and <(...) feed it.
        command.fed_by.extend(c for c in self.parsed.commands[first + 1:] if c is not command)
        return command

    def _argument(self, command: Command, node: Node, depth: int) -> None:
        """Add one argument's words. A node touching the previous one (no space between) is
        part of the same bash word, whatever the grammar made of it (``rm$IFS-rf$IFS/``)."""
        fields = self.fields(node, depth)
        if self._ends.get(id(command)) == node.start_byte and command.words and fields:
            fields[0] = command.words.pop() + fields[0]
            fields = _dollar_names(fields, self.variables)
        command.words.extend(fields)
        self._ends[id(command)] = node.end_byte

    def redirect(self, node: Node, commands: list[Command], depth: int) -> None:
        op = ""
        target: str | None = None
        for child in node.children:
            if child.type == "file_descriptor":
                continue
            if not child.is_named:
                op += self.text(child)  # the text, not the type: `<>` reached the grammar as `>|`
            elif target is None:
                target = _restore(self.word(child, depth + 1).replace(_SPLIT, " "))
            else:  # `> .env extra`: the grammar puts `extra` in the redirect; it is an argument
                for command in commands[:1]:
                    command.words.extend(self.fields(child, depth + 1))
        redirect = Redirect(op or ">", target or "")
        target = redirect.target
        if op == "<<<":
            for command in commands:
                command.stdin = target
        elif op in ("<",):
            self.parsed.reads.append(redirect)
        elif op not in (">&", "<&") or not re.fullmatch(r"-|\d+", target):
            if op not in ("<&",):
                self.parsed.writes.append(redirect)
        for command in commands:
            command.redirects.append(redirect)

    # -- words ----------------------------------------------------------------------------

    def fields(self, node: Node, depth: int) -> list[str]:
        """The words one argument becomes: brace expansion and unquoted splitting applied."""
        value = self.word(node, depth, top=True)
        if not _MARKERS_RE.search(value):
            return [value]
        out: list[str] = []
        for piece in _brace_expand(value) if _BRACES["{"] in value else [value]:
            out.extend(_restore(p) for p in piece.split(_SPLIT) if p != "" or _SPLIT not in piece)
        return out

    def word(self, node: Node, depth: int, quoted: bool = False, top: bool = False) -> str:
        """The value of one word-like node; unknowns are :data:`COMPUTED`."""
        kind = node.type
        if depth > MAX_DEPTH:
            return COMPUTED
        if kind == "word":
            text = self.text(node)
            if not quoted:
                text = text.translate(_BRACES_TABLE) if "{" in text or "}" in text or "," in text else text
                if "\\" in text:
                    text = _ESCAPES_UNQUOTED.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), text)
            return text
        if kind == "raw_string":
            return self.text(node)[1:-1]
        if kind == "ansi_c_string":
            return _decode_ansi_c(self.text(node)[2:-1])
        if kind in ("string", "translated_string"):
            parts = []
            for child in node.children:
                if child.type == "string_content":
                    parts.append(_ESCAPES_IN_DOUBLE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1),
                                                        self.text(child)))
                elif child.is_named:
                    parts.append(self.word(child, depth + 1, quoted=True))
            return "".join(parts)
        if kind == "concatenation":
            return "".join(self.word(child, depth + 1, quoted, top=top) for child in node.children)
        if kind in ("simple_expansion", "expansion"):
            return self.expansion(node, quoted, depth)
        if kind == "command_substitution":
            return self.substitution(node, quoted, depth)
        if kind == "process_substitution":
            for child in node.children:
                self.statements(child, depth + 1)
            return COMPUTED
        if kind == "number":
            return self.text(node)
        if kind == "brace_expression":
            return COMPUTED
        if kind == "arithmetic_expansion":
            for child in node.children:  # $(( $(cmd) )) still runs cmd
                self._run_substitutions(child, depth + 1)
            return COMPUTED
        self._run_substitutions(node, depth + 1)
        text = self.text(node)
        return text if kind in ("$", "test_operator", "regex", "extglob_pattern") else COMPUTED

    def _run_substitutions(self, node: Node, depth: int) -> None:
        if depth > MAX_DEPTH:
            return
        if node.type in ("command_substitution", "process_substitution"):
            self.word(node, depth)
            return
        for child in node.children:
            self._run_substitutions(child, depth + 1)

    def expansion(self, node: Node, quoted: bool, depth: int) -> str:
        names = [c for c in node.children if c.type in ("variable_name", "special_variable_name")]
        others = [c for c in node.children if c.is_named and c.type not in ("variable_name", "special_variable_name")]
        for other in others:
            self._run_substitutions(other, depth + 1)  # ${x:-$(cmd)} runs cmd
        if len(names) == 1 and self.text(names[0]) == "IFS":
            return " " if quoted else _SPLIT  # ${IFS}, ${IFS:0:1}, ${IFS%?}: still a separator
        plain = len(names) == 1 and all(c.type in ("$", "${", "}") or c in names for c in node.children)
        if not plain:
            return COMPUTED
        name = self.text(names[0])
        value = self.variables.get(name)
        if value is None or name in self.ambiguous():
            return COMPUTED
        if not quoted and "IFS" in self.variables:
            return COMPUTED  # IFS was changed: how the value splits is not read here
        return value if quoted else re.sub(r"[ \t\n]+", _SPLIT, value)

    def substitution(self, node: Node, quoted: bool, depth: int) -> str:
        first = len(self.parsed.commands)
        for child in node.children:
            self.statements(child, depth + 1)
        inner = self.parsed.commands[first:]
        if len(inner) == 1 and inner[0].words[:1] == ["mktemp"] and not inner[0].redirects and \
                all(COMPUTED not in w for w in inner[0].words):
            return FRESH  # a path made now: never one that existed before
        # $(echo rm) / `printf rm` is the word rm: a shell would run it.
        if len(inner) == 1 and inner[0].words[:1] in (["echo"], ["printf"]) and len(inner[0].words) > 1 \
                and not inner[0].redirects and all(COMPUTED not in w for w in inner[0].words):
            words = [w for w in inner[0].words[1:] if not (inner[0].words[0] == "echo" and w in ("-n", "-e", "-E"))]
            if any("\\" in w for w in words):
                return COMPUTED  # echo -e / printf decode escapes: `printf '\x72m'` is rm
            if inner[0].words[0] == "printf" and words and "%" in words[0]:
                if words[0].rstrip("\\n") not in ("%s", "%b"):
                    return COMPUTED
                words = words[1:]
            value = " ".join(words)
            if inner[0].words[0] == "printf":
                value = value.replace("\\n", "\n")
            return value if quoted else re.sub(r"\s+", _SPLIT, value.strip())
        return COMPUTED
