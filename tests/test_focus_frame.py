"""A pane's border turns the theme's primary colour while focus is inside it, and back when
focus leaves (drawn inline, not by a ``:focus-within`` rule: that restyled the whole transcript
on every focus change, issue 20); a new theme's primary colour applies at once. A focus change
no longer repaints the whole screen."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.color import Color
from textual.widgets import Input

from hermes_tui.tui.app import HermesApp
from hermes_tui.tui.widgets.conversation import ConversationPane
from hermes_tui.tui.widgets.focus_frame import FocusFrame
from hermes_tui.tui.widgets.kernels import KernelsPane
from hermes_tui.tui.screens.main import MainScreen


class Pane(FocusFrame):
    DEFAULT_CSS = "Pane { border: round $panel-lighten-2; height: 5; }"

    def compose(self) -> ComposeResult:
        yield Input(id=f"{self.id}-input")


class Host(App[None]):
    def compose(self) -> ComposeResult:
        yield Pane(id="left")
        yield Pane(id="right")


def colour(app: App, name: str) -> Color:
    return Color.parse(app.get_css_variables()[name])


async def test_the_frame_follows_focus_and_the_theme() -> None:
    app = Host()
    async with app.run_test() as pilot:
        left, right = app.query_one("#left", Pane), app.query_one("#right", Pane)
        resting = colour(app, "panel-lighten-2")
        app.query_one("#left-input").focus()
        await pilot.pause()
        assert left.styles.border_top == ("round", colour(app, "primary"))
        assert right.styles.border_top == ("round", resting)

        app.query_one("#right-input").focus()
        await pilot.pause()
        assert left.styles.border_top == ("round", resting)
        assert right.styles.border_top == ("round", colour(app, "primary"))

        old = colour(app, "primary")
        app.theme = "textual-light" if app.theme != "textual-light" else "nord"
        await pilot.pause()
        assert colour(app, "primary") != old
        assert right.styles.border_top == ("round", colour(app, "primary"))

        app.set_focus(None)
        await pilot.pause()
        assert right.styles.border_top[1] == colour(app, "panel-lighten-2")


async def test_the_workstation_frames_the_focused_pane_without_repainting_the_screen(hermes_home) -> None:
    app = HermesApp(cwd=str(hermes_home))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, MainScreen)
        conversation, kernels = app.query_one(ConversationPane), app.query_one(KernelsPane)
        repainted: list[object] = []
        original = type(screen).refresh
        screen.refresh = lambda *a, **k: (repainted.append(a), original(screen, *a, **k))[1]  # type: ignore[method-assign]

        await pilot.press("f4")
        assert app.focused is not None and app.focused.id == "kernel-table"
        assert kernels.styles.border_top[1] == colour(app, "primary")
        assert conversation.styles.border_top[1] != colour(app, "primary")
        await pilot.press("f2")
        assert conversation.styles.border_top[1] == colour(app, "primary")
        assert kernels.styles.border_top[1] != colour(app, "primary")
        assert repainted == []  # Textual's default repaints the whole screen on every focus change
