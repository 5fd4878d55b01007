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
        " hermes_tui.agent, hermes_tui.agent.loop, hermes_tui.storage.sessions, hermes_tui.agent.inject, hermes_tui.agent.export;"
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

    import hermes_tui.tui.themes
    import hermes_tui.tui.widgets

    assert Path(hermes_tui.tui.widgets.__file__).parent.name == "widgets"
    assert Path(hermes_tui.tui.themes.__file__).parent.name == "themes"
    # Nothing generic lands at the top level of site-packages.
    assert importlib.util.find_spec("widgets") is None
    assert importlib.util.find_spec("themes") is None
    assert (RUNTIME / "child" / "driver.py").is_file()


def test_every_package_is_installed() -> None:
    """A regular (not editable) install copies only the packages pyproject.toml lists: a new
    folder left out works in the checkout and fails with ModuleNotFoundError once installed."""
    import tomllib

    root = Path(__file__).resolve().parents[1]
    listed = set(tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(("hermes_tui", *init.parent.relative_to(root / "hermes_tui").parts))
             for init in (root / "hermes_tui").rglob("__init__.py") if "__pycache__" not in init.parts}
    missing = found - listed
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {sorted(missing)}"


def test_widgets_touch_no_processes_or_sockets() -> None:
    import hermes_tui.tui.widgets

    folder = Path(hermes_tui.tui.widgets.__file__).parent
    offenders = [
        path.name for path in folder.rglob("*.py")
        if re.search(r"^\s*(import|from)\s+(subprocess|socket|multiprocessing)\b", path.read_text(), re.MULTILINE)
    ]
    assert offenders == []


def _import_graph() -> dict[str, set[str]]:
    """Which hermes_tui modules each one imports, at any depth (in functions and
    TYPE_CHECKING blocks too: a deferred import is still a dependency)."""
    import ast

    package = RUNTIME.parent
    widgets = Path(__import__("hermes_tui.tui.widgets", fromlist=["_"]).__file__).parent
    files: dict[str, Path] = {}
    for folder, prefix in ((package, "hermes_tui"), (widgets, "hermes_tui.tui.widgets")):
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[0] == "widgets" and folder == package:
                continue
            name = ".".join((prefix, *parts))
            files[name.removesuffix(".__init__")] = path
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text())):
            # Each imported name: the submodule it names if there is one, else its module.
            candidates: list[tuple[str, ...]] = []
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = name.split(".")[: len(name.split(".")) - node.level + (1 if is_package else 0)]
                    base = ".".join([*anchor, base] if base else anchor)
                candidates = [(f"{base}.{alias.name}", base) for alias in node.names]
            elif isinstance(node, ast.Import):
                candidates = [(alias.name,) for alias in node.names]
            for options in candidates:
                target = next((t for t in options if t in files), None)
                if target is not None and target != name:
                    graph[name].add(target)
    return graph


def test_no_import_circles() -> None:
    graph = _import_graph()
    circles: list[list[str]] = []
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                circles.append(path[path.index(target):] + [target])
            elif target not in state:
                visit(target)
        path.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    assert circles == [], "\n".join(" -> ".join(c) for c in circles)


def test_widgets_import_event_types_not_the_agent_loop() -> None:
    graph = _import_graph()
    offenders = {m: sorted(t for t in targets if t == "hermes_tui.agent.loop")
                 for m, targets in graph.items() if m.startswith("hermes_tui.tui.widgets")}
    assert {m: t for m, t in offenders.items() if t} == {}
