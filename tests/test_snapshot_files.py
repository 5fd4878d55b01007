"""Every stored snapshot belongs to a test. syrupy fails a serial run that leaves a snapshot
unused, but not a parallel one (pytest-xdist, the default: pyproject's addopts): this test keeps
that check whatever the workers."""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).parent
SNAPSHOTS = TESTS / "__snapshots__"


def _snapshot_tests(module: Path) -> set[str]:
    """The test functions of ``module`` that take ``snap_compare``."""
    tree = ast.parse(module.read_text())
    return {node.name for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test")
            and any(arg.arg == "snap_compare" for arg in node.args.args)}


def test_every_stored_snapshot_names_a_snapshot_test_of_its_module() -> None:
    folders = [folder for folder in SNAPSHOTS.iterdir() if folder.is_dir()] if SNAPSHOTS.exists() else []
    assert folders, "no snapshots found: the test looks in the wrong place"
    unused = []
    for folder in folders:
        modules = list(TESTS.rglob(f"{folder.name}.py"))
        assert len(modules) == 1, f"{folder.name}: snapshots of no one test module ({modules})"
        tests = _snapshot_tests(modules[0])
        for snapshot in folder.iterdir():
            name = re.sub(r"\[.*\]$", "", snapshot.stem)
            if name not in tests:
                unused.append(str(snapshot.relative_to(TESTS)))
    assert not unused, f"snapshots of no test (delete them, or run `pytest -n 0 --snapshot-update`): {unused}"
