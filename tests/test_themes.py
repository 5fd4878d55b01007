"""Every shipped theme keeps the panes' labels readable."""

from __future__ import annotations

from pathlib import Path

from helpers.pilot import wait_until
from textual.geometry import Region

from hermes_tui.tui.themes import THEMES
from hermes_tui.tui.widgets.kernels import KernelsPane


def luminance(rgb: tuple[int, int, int]) -> float:
    """WCAG 2 relative luminance."""
    def channel(value: int) -> float:
        c = value / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    red, green, blue = rgb
    return 0.2126 * channel(red) + 0.7152 * channel(green) + 0.0722 * channel(blue)


def contrast(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """WCAG 2 contrast ratio (1 to 21)."""
    light, dark = sorted((luminance(a), luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


async def test_kernels_live_label_is_readable_on_every_theme(hermes_home: Path, tmp_path: Path) -> None:
    from hermes_tui.tui.app import HermesApp

    app = HermesApp(cwd=str(tmp_path), home=hermes_home)
    async with app.run_test(size=(120, 34)) as pilot:
        pane = app.query_one(KernelsPane)
        await wait_until(pilot, lambda: bool(pane.border_subtitle))  # "0 live", at the first refresh
        ratios: dict[str, float] = {}
        for theme in THEMES:
            for focused in (False, True):
                app.theme = theme.name
                if focused:
                    pane.query_one("#kernel-table").focus()
                else:
                    app.set_focus(None)
                await pilot.pause()
                width, height = pane.outer_size
                [bottom] = pane.render_lines(Region(0, height - 1, width, 1))
                [label] = [segment for segment in bottom if "live" in segment.text]
                color, background = label.style.color, label.style.bgcolor
                assert color is not None and background is not None
                ratios[f"{theme.name}{' (focused)' if focused else ''}"] = contrast(
                    tuple(color.get_truecolor()), tuple(background.get_truecolor()))
        assert all(ratio >= 4.5 for ratio in ratios.values()), ratios
