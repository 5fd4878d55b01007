"""What the installed package holds: one tree, as in the repo; the kernel's own files stdlib-only.

The layers and what may import what are tests/test_import_contract.py.
"""

from __future__ import annotations

import fnmatch
import sys
from pathlib import Path

import pytest

import hermes_tui.runtime

RUNTIME = Path(hermes_tui.runtime.__file__).parent
ROOT = Path(__file__).resolve().parents[1]


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


def test_the_front_end_is_inside_the_package() -> None:
    import importlib.util

    import hermes_tui.tui.themes
    import hermes_tui.tui.widgets

    assert Path(hermes_tui.tui.widgets.__file__).parent.parent.name == "tui"
    assert Path(hermes_tui.tui.themes.__file__).parent.parent.name == "tui"
    # Nothing generic lands at the top level of site-packages.
    assert importlib.util.find_spec("widgets") is None
    assert importlib.util.find_spec("themes") is None
    assert (RUNTIME / "child" / "driver.py").is_file()


def test_the_repo_is_what_is_installed() -> None:
    """No package-dir mapping (mypy and tools see one copy), and every file of the package that
    is not Python is package data: a regular install copies only what pyproject.toml lists, so
    a stylesheet or help page left out works in the checkout and is missing once installed."""
    import tomllib

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "package-dir" not in setuptools
    assert setuptools["packages"]["find"]["include"] == ["hermes_tui*"]
    data = setuptools["package-data"]
    package = ROOT / "hermes_tui"
    missing = []
    for path in package.rglob("*"):
        if not path.is_file() or "__pycache__" in path.parts or path.suffix in (".py", ".pyc"):
            continue
        relative = path.relative_to(package)
        owners = [".".join(("hermes_tui", *relative.parts[:n])) for n in range(len(relative.parts))]
        if not any(fnmatch.fnmatch("/".join(relative.parts[n:]), pattern)
                   for n, owner in enumerate(owners) for pattern in data.get(owner, ())):
            missing.append(str(relative))
    assert not missing, f"add to [tool.setuptools.package-data] in pyproject.toml: {missing}"
