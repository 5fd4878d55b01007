"""Completion in the input: slash commands, and Python names on Tab.

``/`` at the start of the input lists the commands (:data:`hermes_tui.tui.commands.COMMANDS`) with
their help in a popup that narrows as you type. Tab on a Python name completes it from the
session kernel's namespace (asked of an idle kernel, through the app and the runtime) plus
builtins and keywords. Tab after ``a.b.``, in ``d["`` or in another string asks the idle kernel
(:meth:`hermes_tui.runtime.Runtime.kernel_completions`) for attributes, dict keys or paths; it
runs none of the script's code, so attributes only ``__getattr__``/``__dir__`` would give are
not offered. One match completes directly; several show the popup.
"""

from __future__ import annotations

import builtins
import keyword
import re
from dataclasses import dataclass
from typing import Protocol

from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from hermes_tui.tui.commands import COMMANDS
from hermes_tui.tui.widgets.safe import plain

MAX_ITEMS = 200
"""Candidates shown at most (a one-letter prefix can match hundreds of names)."""
_WORD_RE = re.compile(r"[^\W\d]\w*$")
_SLASH_RE = re.compile(r"/(\S*)")
_DOTTED = r"(?<![\w.)\]}'\"])[^\W\d]\w*(?:\.[^\W\d]\w*)*"
_KERNEL_RE = re.compile(_DOTTED + r"(?:\.\w*|\[)$")
"""``a.b.c`` or ``a.b.`` (attributes), ``d[`` (keys): the kernel completes them."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One completion: what replaces the typed word, and the line shown for it."""

    value: str
    help: str = ""
    close: str = ""
    """Put after the value when the text after the cursor does not start with it (``"]``)."""


def slash_prefix(text: str) -> str | None:
    """What follows ``/`` when the whole input is a command being typed (``/he``), else None."""
    match = _SLASH_RE.fullmatch(text)
    return match.group(1) if match else None


def slash_candidates(prefix: str) -> list[Candidate]:
    """The commands whose name starts with ``prefix``."""
    wanted = prefix.lower()
    return [Candidate(f"/{c.name}", c.help) for c in COMMANDS if c.name.startswith(wanted)]


def word_before(line: str) -> str | None:
    """The name being typed at the end of ``line`` (the text left of the cursor): ``""`` when
    there is none (Tab then indents), None after a ``.`` (an attribute: :func:`asks_kernel`)."""
    match = _WORD_RE.search(line)
    word = match.group() if match else ""
    start = len(line) - len(word)
    if start > 0 and line[start - 1] == ".":
        return None
    if not word and line.endswith("."):
        return None
    return word


def open_string(line: str) -> bool:
    """True when ``line`` ends inside a string literal (its quote not closed yet): the kernel's
    own reading of it (the driver is plain standard-library code, safe to import here)."""
    from hermes_tui.runtime.child.driver import open_string as string_at

    return string_at(line) is not None


def asks_kernel(line: str) -> bool:
    """True when Tab at the end of ``line`` completes from the kernel's objects: an attribute
    (``os.pa``, ``obj.``), a dict key (``d[``, ``d["ke``) or a path in a string (``"./sr``)."""
    return open_string(line) or _KERNEL_RE.search(line) is not None


def builtin_names() -> set[str]:
    """Names every kernel has: builtins and keywords."""
    return {name for name in dir(builtins) if not name.startswith("__")} | set(keyword.kwlist)


def name_candidates(prefix: str, names: list[dict[str, object]] | list[str] | None) -> list[Candidate]:
    """Names starting with ``prefix``: the kernel's (with their type), then builtins and keywords.
    Names that are not identifiers (a script can put anything in ``globals()``) are left out;
    private names only when the prefix starts with ``_``."""
    found: dict[str, str] = {}
    for item in names or ():
        name = str(item["name"]) if isinstance(item, dict) else str(item)
        kind = str(item.get("type", "")) if isinstance(item, dict) else ""
        found.setdefault(name, kind)
    for name in builtin_names():
        found.setdefault(name, "keyword" if keyword.iskeyword(name) else "builtin")
    private = prefix.startswith("_")
    return [Candidate(name, kind) for name, kind in sorted(found.items(), key=lambda item: item[0].lower())
            if name.isidentifier() and name.startswith(prefix) and (private or not name.startswith("_"))]


def insertable(item: dict[str, object]) -> bool:
    """True for a kernel's completion whose text may go into the input: printable, as typed.
    The kernel runs the script's code (which can replace the driver's answers), and a file or
    key name can hold an ESC, a bell or a bidi control: put in the input they would reach the
    terminal raw, so such a candidate is never offered (the driver leaves them out too)."""
    return all(isinstance(item.get(field, ""), str) and str(item.get(field, "")).isprintable()
               for field in ("name", "type", "close"))


def common_prefix(values: list[str]) -> str:
    """The longest start all ``values`` share."""
    if not values:
        return ""
    first, last = min(values), max(values)
    size = 0
    while size < len(first) and size < len(last) and first[size] == last[size]:
        size += 1
    return first[:size]


class Completer(Protocol):
    """What the list calls when an item is clicked."""

    def accept_completion(self, index: int | None = None) -> None: ...


class CompletionList(OptionList, can_focus=False):
    """The popup of candidates above the input (it never takes the focus: typing goes on in
    the input, which moves the highlight with Up/Down and completes with Tab or Enter)."""

    DEFAULT_CSS = """
    CompletionList { display: none; height: auto; max-height: 8; border: none; padding: 0;
                     background: $panel; text-wrap: nowrap; text-overflow: ellipsis; }
    CompletionList.-active { display: block; }
    """

    def __init__(self, owner: Completer, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.owner = owner
        self.kind = ""
        """``slash`` or ``names``: what the list offers."""
        self.candidates: list[Candidate] = []

    @property
    def active(self) -> bool:
        return self.has_class("-active")

    def offer(self, kind: str, candidates: list[Candidate]) -> None:
        """Show ``candidates`` (the first highlighted); an empty list closes the popup."""
        if not candidates:
            self.close()
            return
        shown = candidates[:MAX_ITEMS]
        keep = self.highlighted_candidate.value if self.active and self.kind == kind and self.highlighted_candidate else None
        self.kind, self.candidates = kind, shown
        self.clear_options()
        width = max(len(c.value) for c in shown)
        self.add_options([Option(self._line(c, width)) for c in shown])
        values = [c.value for c in shown]
        self.highlighted = values.index(keep) if keep in values else 0
        self.add_class("-active")

    @staticmethod
    def _line(candidate: Candidate, width: int) -> Text:
        line = plain(candidate.value.ljust(width), "bold")
        if candidate.help:
            line.append("  ")
            line.append_text(plain(candidate.help, "dim"))
        return line

    @property
    def highlighted_candidate(self) -> Candidate | None:
        index = self.highlighted
        return self.candidates[index] if index is not None and 0 <= index < len(self.candidates) else None

    def move(self, step: int) -> None:
        """Up (-1) or Down (+1), wrapping around."""
        if not self.candidates:
            return
        index = self.highlighted if self.highlighted is not None else -step
        self.highlighted = (index + step) % len(self.candidates)

    def close(self) -> None:
        self.remove_class("-active")
        self.kind = ""
        self.candidates = []
        self.clear_options()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.owner.accept_completion(event.option_index)
