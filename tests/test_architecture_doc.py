"""docs/architecture.md names only what exists (issue 33: it had drifted in five places).

Every path it puts in backticks is a file or folder of the package or the checkout, and every
code name (``Agent.submit``, ``ApprovalGate``, ``commands.parse_command``) is defined in the
package's source.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
SOURCES = [p for p in (ROOT / "hermes_tui").rglob("*.py") if "__pycache__" not in p.parts]
PLACES = (ROOT, ROOT / "hermes_tui", *(ROOT / "hermes_tui" / part for part in (
    "runtime", "agent", "storage", "config", "base", "tui", "cli", "runtime/tools", "runtime/rpc", "agent/models",
    "tui/widgets", "tui/screens")))


def quoted() -> list[str]:
    return re.findall(r"`([^`\n]+)`", DOC.read_text())


def is_path(token: str) -> bool:
    return bool(re.fullmatch(r"[\w./-]+", token)) and ("/" in token or re.search(r"\.(py|tcss|md)$", token) is not None) \
        and "*" not in token and not token.startswith(("/", "."))


def found(token: str) -> bool:
    """A file or folder, or ``module/path.NAME`` (a name defined in that module)."""
    if any((place / token).exists() for place in PLACES):
        return True
    module, _, name = token.rpartition(".")
    files = [place / f"{module}.py" for place in PLACES if (place / f"{module}.py").exists()]
    return bool(name) and any(defined(name, f.read_text()) for f in files)


def test_every_path_it_names_exists() -> None:
    missing = [t for t in quoted() if is_path(t) and not found(t)]
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def defined(name: str, source: str) -> bool:
    return re.search(rf"^\s*(class|def|async def)\s+{re.escape(name)}\b|^\s*(self\.)?{re.escape(name)}\s*[:=]",
                     source, re.MULTILINE) is not None


def test_every_code_name_it_gives_is_defined() -> None:
    source = "\n".join(p.read_text() for p in SOURCES)
    names = set()
    for token in quoted():
        match = re.fullmatch(r"([A-Za-z_][\w]*)(?:\.([A-Za-z_]\w*))?(?:\(.*\))?", token)
        if match is None or is_path(token):
            continue
        head, attribute = match.groups()
        if head[0].isupper():
            names.add(head)
        if attribute is not None and (head[0].isupper() or (ROOT / "hermes_tui" / f"{head}.py").exists()):
            names.add(attribute)
    missing = sorted(n for n in names if not defined(n, source))
    assert not missing, f"docs/architecture.md names what the code does not define: {missing}"


def test_its_picture_is_the_code_s() -> None:
    """The picture of the parts and their imports is made by scripts/architecture.py from the
    code, not drawn: a new part or a new import between parts fails here until it is redrawn."""
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "architecture.py"), "--check"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "```mermaid" in DOC.read_text()
