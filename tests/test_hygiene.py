"""The engine stays free of the UI."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import hermes_tui.runtime

RUNTIME = Path(hermes_tui.runtime.__file__).parent


def test_importing_the_runtime_loads_no_textual() -> None:
    code = (
        "import sys, hermes_tui.runtime, hermes_tui.runtime.executor, hermes_tui.runtime.pool,"
        " hermes_tui.agent, hermes_tui.agent.loop, hermes_tui.store, hermes_tui.inject, hermes_tui.export;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_no_runtime_module_mentions_textual() -> None:
    agent = RUNTIME.parent / "agent"
    offenders = [
        str(path)
        for path in [*RUNTIME.rglob("*.py"), *agent.rglob("*.py")]
        if re.search(r"^\s*(from|import)\s+textual", path.read_text(), re.MULTILINE)
    ]
    assert offenders == []


@pytest.mark.parametrize("name", ["driver.py", "hermes_tools.py"])
def test_child_files_are_stdlib_only_and_python38_syntax(name: str) -> None:
    import ast

    source = (RUNTIME / "child" / name).read_text()
    tree = ast.parse(source, feature_version=(3, 8))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert imported <= set(sys.stdlib_module_names), imported - set(sys.stdlib_module_names)


def test_widgets_and_themes_install_inside_the_package() -> None:
    import importlib.util

    import hermes_tui.themes
    import hermes_tui.widgets

    assert Path(hermes_tui.widgets.__file__).parent.name == "widgets"
    assert Path(hermes_tui.themes.__file__).parent.name == "themes"
    # Nothing generic lands at the top level of site-packages.
    assert importlib.util.find_spec("widgets") is None
    assert importlib.util.find_spec("themes") is None
    assert (RUNTIME / "child" / "driver.py").is_file()


def test_widgets_touch_no_processes_or_sockets() -> None:
    import hermes_tui.widgets

    folder = Path(hermes_tui.widgets.__file__).parent
    offenders = [
        path.name for path in folder.glob("*.py")
        if re.search(r"^\s*(import|from)\s+(subprocess|socket|multiprocessing)\b", path.read_text(), re.MULTILINE)
    ]
    assert offenders == []
