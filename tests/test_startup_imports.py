"""The first screen imports only what it draws (issue 20).

A subprocess opens the app as ``hermes-tui`` does (the CLI module first, the config, then
:class:`HermesApp`), headless, and lists ``sys.modules`` after the first refresh. The modules
below are deferred to first use (or to after the first frame); one imported at module level
again would slow every start, and this test fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

DEFERRED = (
    # model SDKs and the HTTP stack (the web tools, the providers' clients)
    "openai",
    "anthropic",
    "httpx",
    "genai_prices",
    # the web tools' HTML converter, the patch tool
    "bs4",
    "markdownify",
    "whatthepatch",
    # replies' Markdown (hermes_tui.tui.widgets.reply) and the syntax highlighting under it
    "markdown_it",
    "textual.widgets._markdown",
    "hermes_tui.tui.widgets.reply",
    "pygments.lexers",
    # the shell parser's grammar (loaded by the runtime's preload, after the first frame)
    "tree_sitter_bash",
    # other commands, screens and features not on the first screen
    "hermes_tui.cli.exec_cmd",
    "hermes_tui.cli.sessions_cmd",
    "hermes_tui.cli.doctor_cmd",
    "hermes_tui.tui.screens.dialogs",
    "hermes_tui.tui.screens.approval",
    "hermes_tui.tui.screens.cache_browser",
    "hermes_tui.tui.widgets.pager",
    "hermes_tui.tui.screens.sessions",
    "hermes_tui.tui.widgets.transcript",
    "hermes_tui.tui.screens.usage",
    "hermes_tui.tui.screens.model_picker",
    "hermes_tui.tui.screens.child_transcript",
    "hermes_tui.agent.export",
    "hermes_tui.cli.doctor.checks",
    # the engine itself, built after the first frame (so the runtime's preload, which imports every
    # tool's modules in a thread, starts after it too), and a shared store's driver
    "hermes_tui.runtime.runtime",
    "hermes_tui.runtime.executor",
    "hermes_tui.runtime.models",
    "hermes_tui.agent.loop",
    "hermes_tui.agent.workspace",
    "hermes_tui.agent.tools",
    "psycopg",
    "hermes_tui.storage.postgres",
    # pydantic (about 50 ms to import): the config is read with msgspec, and the runtime's and the
    # tools' models come with the engine; sub-agents' task models likewise
    "pydantic",
    "hermes_tui.agent.subagents",
)

PROBE = textwrap.dedent('''
    import json, sys

    import hermes_tui.cli  # what the hermes-tui entry point imports before it starts the app
    from hermes_tui.config import load_config

    from textual import events

    from hermes_tui.tui.app import HermesApp

    app = HermesApp(load_config(None), cwd=sys.argv[2])
    seen = {}

    def snapshot():
        seen["modules"] = sorted(sys.modules)
        app.exit()

    def hook(message):
        if isinstance(message, events.Ready) and "hooked" not in seen:
            seen["hooked"] = True
            app.call_after_refresh(snapshot)

    async def main():
        async with app.run_test(size=(160, 48), message_hook=hook) as pilot:
            while "modules" not in seen:
                await pilot.pause(0.01)

    import asyncio

    asyncio.run(main())
    with open(sys.argv[1], "w") as out:
        json.dump(seen, out)
''')


def test_first_frame_does_not_import_deferred_modules(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    out = tmp_path / "modules.json"
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HERMES_HOME": str(home)}
    for key in ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY"):  # no model: the plain first screen
        env.pop(key, None)
    done = subprocess.run([sys.executable, str(probe), str(out), str(tmp_path)], capture_output=True, text=True,
                          timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(out.read_text())
    modules = set(seen["modules"])
    assert "hermes_tui.tui.screens.main" in modules  # the probe did reach the first screen
    imported = [name for name in DEFERRED if name in modules]
    assert imported == [], f"imported before the first frame: {imported} (import them on first use)"
