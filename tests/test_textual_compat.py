"""Textual's private hooks are listed and checked in one place (hermes_tui/tui/textual_compat.py):
the check passes on the installed Textual and fails, naming the hook, when one is gone — found
by looking at Textual's classes, never by its version string."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Log

from hermes_tui.tui import textual_compat
from hermes_tui.tui.textual_compat import HOOKS, TESTED, TextualChanged, check


def test_the_installed_textual_has_every_hook() -> None:
    check()
    assert {hook.label for hook in HOOKS} >= {
        "App._start_widget", "Screen._on_timer_update", "Widget._size_updated", "Widget._scroll_update",
        "Log._render_line", "TextArea._on_key", "TextArea._on_paste", "App._driver", "App._loop",
        "_line_split.line_split",
    }
    assert all(hook.users and hook.why for hook in HOOKS)


def test_a_missing_method_fails_with_its_name_and_the_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(Screen, "_on_timer_update")
    with pytest.raises(TextualChanged) as raised:
        check()
    message = str(raised.value)
    assert "Screen._on_timer_update" in message and "is gone" in message
    assert textual_compat._version() in message and TESTED in message
    assert isinstance(raised.value, ImportError)


def test_a_changed_signature_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def _size_updated(self: Widget, size: object, virtual_size: object, container_size: object) -> bool:
        return False  # pragma: no cover

    monkeypatch.setattr(Widget, "_size_updated", _size_updated)
    with pytest.raises(TextualChanged, match=r"Widget\._size_updated .* no longer takes layout"):
        check()


def test_a_missing_instance_attribute_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def __init__(self: Log) -> None:  # sets none of Log's own state
        Widget.__init__(self)  # pragma: no cover

    monkeypatch.setattr(Log, "__init__", __init__)
    with pytest.raises(TextualChanged, match=r"Log\._lines \(an attribute"):
        check()


def test_the_tested_range_is_the_pin() -> None:
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    pin = re.search(r'"textual([^"]*)"', pyproject)
    assert pin is not None and pin.group(1) == TESTED


def test_no_module_reaches_into_textual_privates_but_the_compat_module() -> None:
    package = Path(textual_compat.__file__).resolve().parents[1]
    users = sorted(str(path.relative_to(package)) for path in package.rglob("*.py")
                   if path.name != "textual_compat.py" and "textual._" in path.read_text())
    assert users == []
