"""``/model``: pick the model the conversation talks to from the next call on."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from hermes_tui.agent.models.choices import ModelChoice
from hermes_tui.agent.usage import tokens
from hermes_tui.tui.screens.dialog import Dialog
from hermes_tui.tui.widgets.safe import plain, visible
from hermes_tui.tui.screens.usage import price_label


def choice_line(choice: ModelChoice) -> Text:
    """``● openrouter · anthropic/claude-sonnet-4   $3.00/$15.00 per Mtok · 200k ctx`` (names
    are data: Text, never markup)."""
    line = Text("● " if choice.current else "  ", "bold" if choice.current else "")
    line.append(visible(f"{choice.provider} · {choice.model}"))
    pricing = choice.pricing
    details = [price_label(pricing.input_per_mtok if pricing else None, pricing.output_per_mtok if pricing else None)]
    if choice.context_window:
        details.append(f"{tokens(choice.context_window)} ctx")
    line.append("   " + " · ".join(details), "dim")
    return line


class ModelPicker(Dialog["ModelChoice | None"]):
    """The models to choose from; typing filters; Enter picks; Esc keeps the current one."""

    DEFAULT_CSS = """
    ModelPicker > #dialog { width: 90%; height: 80%; padding: 0 1; }
    ModelPicker OptionList { height: 1fr; text-wrap: nowrap; text-overflow: ellipsis; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "Keep the model", id="model-close"),
                                              Binding("down", "move(1)", show=False),
                                              Binding("up", "move(-1)", show=False)]

    def __init__(self, choices: list[ModelChoice], note: str | None = None) -> None:
        super().__init__()
        self.choices = choices
        self.note = note
        self.shown: list[ModelChoice] = []

    def compose_dialog(self) -> ComposeResult:
        yield Label(plain(f"Pick a model ({len(self.choices)})  ·  type to filter · Enter picks · Esc keeps the "
                          "current one"))
        if self.note:
            yield Label(plain(self.note), id="model-note")
        yield Input(placeholder="filter: provider or model name", id="model-filter")
        yield OptionList(id="model-list")

    def on_mount(self) -> None:
        self.refill("")
        self.query_one(Input).focus()

    def refill(self, query: str) -> None:
        """Show the choices whose provider or model holds every word of ``query``."""
        words = query.lower().split()
        self.shown = [c for c in self.choices if all(w in f"{c.provider} {c.model}".lower() for w in words)]
        options = self.query_one(OptionList)
        options.clear_options()
        options.add_options([Option(choice_line(c)) for c in self.shown])
        if self.shown:
            current = next((i for i, c in enumerate(self.shown) if c.current), 0)
            options.highlighted = current

    @on(Input.Changed, "#model-filter")
    def _filter(self, event: Input.Changed) -> None:
        self.refill(event.value)

    @on(Input.Submitted, "#model-filter")
    def _submit(self) -> None:
        options = self.query_one(OptionList)
        if options.highlighted is not None and self.shown:
            self.dismiss(self.shown[options.highlighted])

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.shown[event.option_index])

    def action_move(self, step: int) -> None:
        options = self.query_one(OptionList)
        if self.shown:
            options.highlighted = max(0, min(len(self.shown) - 1, (options.highlighted or 0) + step))
