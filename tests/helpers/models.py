"""The app talking to the scripted model server (tests/fake_models.py)."""

from __future__ import annotations

from pathlib import Path

from hermes_tui.tui.app import HermesApp
from hermes_tui.tui.widgets.conversation import ReplyBlock

from conftest import strict_config
from fake_models import FakeModelServer


def model_app(home: Path, cwd: Path, server: FakeModelServer, extra: str = "", **kwargs) -> HermesApp:
    yaml_text = (f"model:\n  provider: custom\n  default: fake-model\n  base_url: {server.url}\n  max_retries: 0\n"
                 + extra)
    return HermesApp(strict_config(yaml_text), cwd=str(cwd), home=home, **kwargs)  # every terminal() call asks


def replies(app: HermesApp) -> str:
    return "\n".join(block.text for block in app.query(ReplyBlock))
