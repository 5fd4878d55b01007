"""The approval dialog: the whole command, script or file change, why it asks, and the answers.

Everything in a request came from a script, a model or the shell, so nothing in it is parsed as
markup, and code is shown through :func:`reveal` (hidden characters written as escapes).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import ClassVar

from rich.syntax import Syntax
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Input, Label, Log, Static

from hermes_tui.runtime.approvals import ApprovalDecision, ApprovalRequest, FileChange, run_of
from hermes_tui.base.text import reveal
from hermes_tui.base.units import human_size
from hermes_tui.tui.widgets.conversation.blocks import code_theme
from hermes_tui.tui.screens.dialog import Dialog

BUTTONS = {"once": ("1 Once", "success"), "session": ("2 Session", "primary"), "always": ("3 Always", "warning"),
           "deny": ("4 Deny", "error"), "deny_run": ("5 Deny all", "error")}
HIGHLIGHT_LIMIT = 64_000
"""Longer text is shown by :class:`NumberedLines`, unhighlighted: highlighting and laying out a
megabyte of script at once would freeze the app for seconds."""
TYPING_NOTE = "⌨ it opened while you were typing: your keys were not taken as answers"


def size_label(change: FileChange) -> str:
    """'new file', '512 B' or '1.2 KiB'."""
    if change.size is None:
        return "new file"
    return human_size(change.size, " ")


def shown(text: str, style: str = "") -> Text:
    """Untrusted text as it is: never markup, hidden characters as escapes."""
    return Text(reveal(text), style=style)


class NumberedLines(Log):
    """A long text, numbered, drawn only as its lines scroll into view; never markup.

    A read-only ``TextArea`` measured every line again on each resize (six times as the dialog
    opened: 3 to 5 s for a megabyte of script); a log keeps the lines and draws the ones shown.

    Args:
        text: the text, as it came (hidden characters are shown as escapes).
    """

    def __init__(self, text: str, *, id: str | None = None) -> None:
        super().__init__(highlight=False, auto_scroll=False, id=id)
        self.text = text
        """The whole text shown."""
        lines = reveal(text).split("\n")
        if len(lines) > 1 and not lines[-1]:
            lines.pop()  # the newline that ends the last line starts no line of its own
        width = len(str(len(lines)))
        self.write_lines(f"{number:>{width}} │ {line}" for number, line in enumerate(lines, 1))


class ApprovalScreen(Dialog[ApprovalDecision]):
    """Asks to allow one request; dismisses with the :class:`ApprovalDecision`.

    Keys: 1/o once, 2/s session, 3/a always (when offered), 4/d deny, 5/x deny all of this
    script (a request of a script run: this one, the run's others waiting in line, and the
    ones it makes later, which are refused without a dialog), r deny with a reason, Esc deny. The text scrolls and is never cut off; a countdown shows the auto-deny. For its
    first :attr:`ARMING` seconds it takes no answer at all (keys, Enter, clicks), so keys typed
    for the input cannot answer it.

    Args:
        request: what is asked.
        position: which request of the current burst this is (the title says "request 2 of 3").
        total: how many requests the burst holds so far.
        typing: the user was typing when it opened (the dialog says their keys were ignored).
        clock: the wall clock the countdown reads (fixed in tests).
        arming: seconds to ignore answers for (default :attr:`ARMING`; 0 takes answers at once).
    """

    ARMING: ClassVar[float] = 0.5
    """Seconds after opening during which the dialog takes no answer."""

    DEFAULT_CSS = """
    ApprovalScreen > #dialog {
        width: 90%; max-width: 120; height: auto; max-height: 90%;
        border: thick $warning; padding: 0 1; overflow-y: auto;
    }
    /* The title wraps rather than being cut (a long file path, "request 2 of 3" at 80 columns). */
    #dialog #title-row { height: auto; max-height: 4; dock: top; }
    #dialog #title { text-style: bold; color: $warning; width: 1fr; height: auto; }
    #dialog #countdown { color: $error; text-style: bold; width: auto; }
    #dialog #typing { color: $warning; }
    #dialog #code { height: auto; max-height: 20; border: round $panel-lighten-2; }
    #dialog NumberedLines#code-text { height: 20; border: round $panel-lighten-2; }
    #dialog .file { width: 1fr; }
    #dialog .reason { color: $error; width: 1fr; }
    #dialog .meta { color: $text-muted; width: 1fr; }
    #dialog #rules { color: $text; margin-top: 1; }
    #dialog #details { height: auto; }
    #dialog #arming { color: $warning; text-style: italic; }
    #dialog #answers { dock: bottom; height: auto; }
    #dialog #buttons { height: auto; margin-top: 1; }
    #dialog Button { margin-right: 1; min-width: 12; }
    #dialog #deny-reason { display: none; }
    #dialog #deny-reason.visible { display: block; }
    /* Under 80 columns (a phone's browser: hermes-tui serve) the buttons go two to a row, so
       every one stays in reach of a finger instead of running off the right edge. */
    ApprovalScreen.-narrow #dialog #buttons { layout: grid; grid-size: 2; grid-gutter: 0 1; }
    ApprovalScreen.-narrow #dialog Button { width: 1fr; margin-right: 0; }
    """

    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (80, "-wide")]

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1,o", "answer('once')", "Once", id="approve-once"),
        Binding("2,s", "answer('session')", "Session", id="approve-session"),
        Binding("3,a", "answer('always')", "Always", id="approve-always"),
        Binding("4,d", "answer('deny')", "Deny", id="approve-deny"),
        Binding("5,x", "deny_run", "Deny all of this script", id="approve-deny-run"),
        Binding("r", "deny_with_reason", "Deny with reason", id="approve-deny-reason"),
        Binding("escape", "answer('deny')", "Deny", show=False, id="approve-escape"),
    ]

    def __init__(
        self, request: ApprovalRequest, *, position: int = 1, total: int = 1, typing: bool = False,
        clock: Callable[[], float] = time.time, arming: float | None = None,
    ) -> None:
        super().__init__()
        self.request = request
        self.position, self.total = position, total
        self.typing = typing
        self.clock = clock
        self.arming = self.ARMING if arming is None else arming
        self.armed = self.arming <= 0
        """False while the dialog ignores answers (its first ``arming`` seconds)."""
        self.run = run_of(request)
        """The script run "deny all of this script" covers (None: not offered)."""

    # -- what it shows --------------------------------------------------------------------

    def title_text(self) -> str:
        """'Approve this terminal command?', 'Run this command outside the sandbox?'... (and
        'request N of M' when several wait)."""
        request = self.request
        if request.kind == "file":
            title = f"Allow {request.file_question()}?"
        elif request.kind == "sandbox":
            title = "Run this command outside the sandbox?"
        else:
            title = "Approve this terminal command?" if request.kind == "terminal" else "Approve this whole script?"
        return title + (f"  ·  request {self.position} of {self.total}" if self.total > 1 else "")

    def compose_dialog(self) -> ComposeResult:
        request = self.request
        with Horizontal(classes="row", id="title-row"):
            yield Label(shown(self.title_text()), id="title")
            yield Label("", id="countdown")
        if self.typing:
            yield Label(TYPING_NOTE, id="typing")
        for change in request.files:
            yield Label(Text.assemble(shown(change.path, "bold"), ("  " + size_label(change), "dim")), classes="file")
        if len(self._source()) <= HIGHLIGHT_LIMIT:
            with VerticalScroll(id="code"):
                yield Static(self._code(), id="code-text")
        else:  # a huge script: only the lines in view are drawn
            yield NumberedLines(self._source(), id="code-text")
        with Vertical(id="details"):  # the dialog scrolls on a small terminal: nothing is cut off
            where = f"in {request.cwd}" + (f" on {request.where}" if request.where else "") + \
                f" · session {request.session}"
            if request.kernel:
                where += f" · kernel {request.kernel}"
            if request.exec_id:
                where += f" · script {request.exec_id}"
            yield Label(shown(where + f" · {request.origin} turn"), classes="meta")
            for reason in request.reasons:
                yield Label(shown(f"⚠ {reason}"), classes="reason")
            yield Static(shown(self._rules_text()), id="rules")
        with Vertical(id="answers"):  # docked: on a small terminal the details are cut, never the answers
            if not self.armed:
                yield Label(f"arming… keys are ignored for {self.arming:g} s", id="arming")
            yield Label("r: deny with a reason · Esc: deny", classes="meta")
            yield Input(placeholder="why not? (Enter denies with this reason)", id="deny-reason")
            with Horizontal(id="buttons"):
                for choice, (label, variant) in BUTTONS.items():
                    if choice in request.choices or choice == "deny" or (choice == "deny_run" and self.run):
                        yield Button(label, id=choice, variant=variant, disabled=not self.armed)  # type: ignore[arg-type]

    def _source(self) -> str:
        request = self.request
        return (request.diff or "(no diff)") if request.kind == "file" else request.text

    def _code(self) -> Syntax:
        request = self.request
        language = {"file": "diff", "terminal": "bash", "sandbox": "bash"}.get(request.kind, "python")
        return Syntax(reveal(self._source()), language, word_wrap=True, line_numbers=request.kind == "script",
                      background_color="default", theme=code_theme(self))

    def _rules_text(self) -> str:
        request = self.request
        if request.kind == "sandbox":  # answered once or not at all: no rule, no session answer covers it
            parts = ["once: runs this command again, outside the sandbox (unconfined, as you), this time only.",
                     "deny: it stays stopped; the script or the model is told why."]
        else:
            parts = ["once: only this time.", *self._remembered()]
        if self.run:
            parts.append(f"deny all of this script: this request, the others of script {self.run} waiting, and "
                         "its later ones (refused without asking until it ends).")
        return "\n".join(parts)

    def _remembered(self) -> list[str]:
        """What "session" and "always" would remember."""
        request = self.request
        if request.protected:  # an agent instruction file: nothing is remembered
            return ["no session or always answer: a write to an agent instruction file is asked each time."]
        parts = []
        if request.kind == "file":
            does = "read" if request.reads() else "write"
            parts.append(f"session: lets the same tool {does} the same files again for the rest of this session.")
        elif request.session_rule is not None or request.kind == "script":
            parts.append("session: allows exactly this text again for the rest of this session.")
        if request.always_rule:
            parts.append(f"always: stores the exact rule {request.always_rule!r} in {request.always_file}.")
        elif request.kind == "terminal":
            parts.append("always: not offered for a flagged command.")
        return parts

    def set_position(self, position: int, total: int) -> None:
        """Another request joined (or left) the burst: update 'request N of M'."""
        self.position, self.total = position, total
        if self.is_mounted:
            self.query_one("#title", Label).update(shown(self.title_text()))

    # -- arming and answers ---------------------------------------------------------------

    def on_mount(self) -> None:
        self.opened_at = time.monotonic()
        """When it was shown (its arming counts from here)."""
        self._tick()
        self.set_interval(1.0, self._tick)
        if self.armed:
            self.query_one("#deny", Button).focus()  # the safe default
        else:
            self.set_timer(self.arming, self._arm)

    def _arm(self) -> None:
        self.armed = True
        for button in self.query(Button):
            button.disabled = False
        self.query_one("#arming", Label).remove()
        self.query_one("#deny", Button).focus()  # the safe default

    def _tick(self) -> None:
        left = max(0, int(self.request.deadline - self.clock()))
        self.query_one("#countdown", Label).update(f"auto-deny in {left}s")

    def action_answer(self, choice: str) -> None:
        # While arming the key is still taken here (so Esc does not reach the app and stop the
        # turn), but answers nothing.
        if self.armed and choice in self.request.choices:
            self.dismiss(ApprovalDecision(choice=choice))

    def action_deny_run(self) -> None:
        """Deny this request and every other request of its script run."""
        if self.armed and self.run:
            self.dismiss(ApprovalDecision(choice="deny", whole_run=True))

    def action_deny_with_reason(self) -> None:
        if not self.armed:
            return
        field = self.query_one("#deny-reason", Input)
        field.add_class("visible")
        field.focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "deny_run":
            self.action_deny_run()
        else:
            self.action_answer(str(event.button.id))

    @on(Input.Submitted, "#deny-reason")
    def _reason(self, event: Input.Submitted) -> None:
        self.dismiss(ApprovalDecision(choice="deny", reason=event.value.strip() or None))
