"""The import contract of hermes_tui: layers, each importing only those below it.

    tui | cli  ->  agent  ->  runtime | storage  ->  config  ->  base

(docs/architecture.md). Walked over every module's imports at any depth — in functions and
``TYPE_CHECKING`` blocks too: a deferred import is still a dependency. Besides the layers: no
import circles; nothing below the front ends names Textual or Rich; the panes never touch
processes or sockets and never drive the agent's loop.
"""

from __future__ import annotations

import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import hermes_tui

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import architecture  # noqa: E402  (scripts/architecture.py: the import walk)

PACKAGE = Path(hermes_tui.__file__).parent

LAYERS: dict[str, set[str]] = {
    "base": set(),
    "config": {"base"},
    "runtime": {"config", "base"},
    "storage": {"config", "base"},
    "agent": {"runtime", "storage", "config", "base"},
    "tui": {"agent", "runtime", "storage", "config", "base"},
    "cli": {"agent", "runtime", "storage", "config", "base"},
}
"""What each layer may import besides itself."""

ALLOWED = {
    ("hermes_tui.cli.app_cmd", "hermes_tui.tui.app"),
}
"""Crossings the picture allows: ``hermes-tui`` with no command starts the app (the CLI is the
program's entry; the app is one of its commands)."""

ROOT_MODULES = {"hermes_tui", "hermes_tui.__main__"}
"""The package itself (its version) and ``python -m hermes_tui`` (the CLI)."""


@cache
def import_graph() -> dict[str, frozenset[str]]:
    """Which hermes_tui modules each one imports, at any depth (scripts/architecture.py reads
    them for the picture in docs/architecture.md too)."""
    return architecture.import_graph(PACKAGE)


def layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and module not in ROOT_MODULES else None


def test_every_module_is_in_a_layer() -> None:
    strays = sorted(m for m in import_graph() if m not in ROOT_MODULES and layer(m) not in LAYERS)
    assert strays == [], f"modules outside the layers {sorted(LAYERS)}: {strays}"


def crossings(graph: dict[str, frozenset[str]]) -> list[str]:
    """Each import of a layer the importer's layer may not use."""
    found = []
    for module, targets in graph.items():
        own = layer(module)
        if own is None:
            continue
        for target in targets:
            other = layer(target)
            if other is None or other == own or other in LAYERS[own] or (module, target) in ALLOWED:
                continue
            found.append(f"{module} ({own}) imports {target} ({other})")
    return sorted(found)


def test_nothing_imports_upward() -> None:
    assert crossings(import_graph()) == []


def test_the_contract_catches_an_upward_import() -> None:
    """A deferred import in a function counts, and an upward one is named."""
    graph = dict(import_graph())
    assert "hermes_tui.agent.loop" in graph["hermes_tui.agent.commands"]  # `from ... import` at the top
    assert "hermes_tui.tui.screens.dialogs" in graph["hermes_tui.tui.kernel_actions"]  # inside a method
    graph["hermes_tui.runtime.executor"] = graph["hermes_tui.runtime.executor"] | {"hermes_tui.tui.app"}
    graph["hermes_tui.base.paths"] = graph["hermes_tui.base.paths"] | {"hermes_tui.config"}
    assert crossings(graph) == [
        "hermes_tui.base.paths (base) imports hermes_tui.config (config)",
        "hermes_tui.runtime.executor (runtime) imports hermes_tui.tui.app (tui)",
    ]


def test_no_import_circles() -> None:
    graph = import_graph()
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


def test_below_the_front_ends_nothing_names_textual_or_rich() -> None:
    offenders = [
        str(path.relative_to(PACKAGE))
        for folder in ("base", "config", "runtime", "storage", "agent")
        for path in (PACKAGE / folder).rglob("*.py")
        if re.search(r"^\s*(from|import)\s+(textual|rich)\b", path.read_text(), re.MULTILINE)
    ]
    assert offenders == []


def test_importing_the_engine_loads_no_textual() -> None:
    code = (
        "import sys, hermes_tui.runtime, hermes_tui.runtime.executor, hermes_tui.runtime.pool,"
        " hermes_tui.agent, hermes_tui.agent.loop, hermes_tui.agent.workspace, hermes_tui.agent.answers,"
        " hermes_tui.agent.commands, hermes_tui.storage.sessions, hermes_tui.agent.inject, hermes_tui.agent.export;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_panes_and_screens_touch_no_processes_or_sockets() -> None:
    offenders = [
        str(path.relative_to(PACKAGE))
        for folder in ("tui/widgets", "tui/screens")
        for path in (PACKAGE / folder).rglob("*.py")
        if re.search(r"^\s*(import|from)\s+(subprocess|socket|multiprocessing)\b", path.read_text(), re.MULTILINE)
    ]
    assert offenders == []


def test_panes_and_screens_show_the_agent_and_never_drive_its_loop() -> None:
    offenders = sorted(f"{m} -> {t}" for m, targets in import_graph().items()
                       if m.startswith(("hermes_tui.tui.widgets", "hermes_tui.tui.screens"))
                       for t in targets if t == "hermes_tui.agent.loop")
    assert offenders == []
