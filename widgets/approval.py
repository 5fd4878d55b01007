"""The approval dialog: the whole command or script, why it asks, and four answers."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import ClassVar

from rich.syntax import Syntax
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Button, Input, Label, Static

from hermes_tui.runtime.approvals import ApprovalDecision, ApprovalRequest
from hermes_tui.widgets.conversation import code_theme
from hermes_tui.widgets.dialog import Dialog


class ApprovalScreen(Dialog[ApprovalDecision]):
    """Asks to allow one request; dismisses with the :class:`ApprovalDecision`.

    Keys: 1/o once, 2/s session, 3/a always (when offered), 4/d deny, r deny with a reason,
    Esc deny. The text scrolls and is never cut off; a countdown shows the auto-deny.
    """

    DEFAULT_CSS = """
    ApprovalScreen > #dialog {
        width: 90%; max-width: 120; height: auto; max-height: 90%;
        border: thick $warning; padding: 0 1;
    }
    #dialog #title-row { height: 1; }
    #dialog #title { text-style: bold; color: $warning; width: 1fr; }
    #dialog #countdown { color: $error; text-style: bold; width: auto; }
    #dialog #code { height: auto; max-height: 20; border: round $panel-lighten-2; }
    #dialog .reason { color: $error; }
    #dialog .meta { color: $text-muted; width: 1fr; }
    #dialog .reason { width: 1fr; }
    #dialog #rules { color: $text; margin-top: 1; }
    #dialog #buttons { height: auto; margin-top: 1; }
    #dialog Button { margin-right: 1; min-width: 14; }
    #dialog #deny-reason { display: none; }
    #dialog #deny-reason.visible { display: block; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1,o", "answer('once')", "Once", id="approve-once"),
        Binding("2,s", "answer('session')", "Session", id="approve-session"),
        Binding("3,a", "answer('always')", "Always", id="approve-always"),
        Binding("4,d", "answer('deny')", "Deny", id="approve-deny"),
        Binding("r", "deny_with_reason", "Deny with reason", id="approve-deny-reason"),
        Binding("escape", "answer('deny')", "Deny", show=False, id="approve-escape"),
    ]

    def __init__(self, request: ApprovalRequest, waiting: int = 0, clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self.request = request
        self.waiting = waiting
        self.clock = clock

    def compose_dialog(self) -> ComposeResult:
        request = self.request
        title = "Approve this terminal command?" if request.kind == "terminal" else "Approve this whole script?"
        language = "bash" if request.kind == "terminal" else "python"
        with Horizontal(classes="row", id="title-row"):
            yield Label(title, id="title")
            yield Label("", id="countdown")
        with VerticalScroll(id="code"):
            yield Static(Syntax(request.text, language, word_wrap=True, line_numbers=request.kind == "script",
                                background_color="default", theme=code_theme(self)))
        where = f"in {request.cwd} · session {request.session}"
        if request.kernel:
            where += f" · kernel {request.kernel}"
        if request.exec_id:
            where += f" · script {request.exec_id}"
        yield Label(where + f" · {request.origin} turn", classes="meta")
        for reason in request.reasons:
            yield Label(f"⚠ {reason}", classes="reason")
        yield Static(self._rules_text(), id="rules")
        if self.waiting:
            yield Label(f"{self.waiting} more request(s) waiting", classes="meta")
        yield Label("r: deny with a reason · Esc: deny", classes="meta")
        yield Input(placeholder="why not? (Enter denies with this reason)", id="deny-reason")
        with Horizontal(id="buttons"):
            yield Button("1 Once", id="once", variant="success")
            yield Button("2 Session", id="session", variant="primary")
            if "always" in request.choices:
                yield Button("3 Always", id="always", variant="warning")
            yield Button("4 Deny", id="deny", variant="error")

    def _rules_text(self) -> str:
        request = self.request
        parts = ["once: only this time."]
        if request.session_rule is not None or request.kind == "script":
            parts.append("session: allows exactly this text again for the rest of this session.")
        if request.always_rule:
            parts.append(f"always: stores the exact rule {request.always_rule!r} in {request.always_file}.")
        elif request.kind == "terminal":
            parts.append("always: not offered for a flagged command.")
        return "\n".join(parts)

    def on_mount(self) -> None:
        self.app.bell()
        self.query_one("#deny", Button).focus()  # the safe default
        self._tick()
        self.set_interval(1.0, self._tick)

    def _tick(self) -> None:
        left = max(0, int(self.request.deadline - self.clock()))
        self.query_one("#countdown", Label).update(f"auto-deny in {left}s")

    def action_answer(self, choice: str) -> None:
        if choice in self.request.choices:
            self.dismiss(ApprovalDecision(choice=choice))  # type: ignore[arg-type]

    def action_deny_with_reason(self) -> None:
        field = self.query_one("#deny-reason", Input)
        field.add_class("visible")
        field.focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.action_answer(str(event.button.id))

    @on(Input.Submitted, "#deny-reason")
    def _reason(self, event: Input.Submitted) -> None:
        self.dismiss(ApprovalDecision(choice="deny", reason=event.value.strip() or None))
