"""The file, search, patch and terminal tools, called from scripts in real kernels."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from hermes_tui.runtime import Runtime
from hermes_tui.runtime.approvals import ApprovalDecision, ApprovalRequest
from hermes_tui.runtime.tools import search as search_module


async def call(rt: Runtime, project: Path, expr: str, session: str = "t") -> object:
    """Evaluate `expr` (using hermes_tools) in a kernel and return its JSON value."""
    result = await rt.execute_code(
        f"import json\nfrom hermes_tools import *\nprint(json.dumps({expr}))", session=session, cwd=project
    )
    assert result.status == "success", result.output
    return json.loads(result.output)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "README.md").write_text("# Demo\nHello world\n")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "core.py").write_text("def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n")
    (root / "pkg" / "data.bin").write_bytes(b"\x00\x01binary def add\x00")
    (root / ".hidden.py").write_text("def add_hidden(): pass\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("def add in git\n")
    return root


class Recorder:
    """An approver that answers from a list and records what it was asked."""

    def __init__(self, *answers: ApprovalDecision) -> None:
        self.answers = list(answers)
        self.asked: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        self.asked.append(request)
        return self.answers.pop(0)


# -- read_file / write_file -------------------------------------------------------------------


async def test_read_file_numbers_lines_and_pages(runtime: Runtime, project: Path) -> None:
    whole = await call(runtime, project, "read_file('pkg/core.py')")
    assert whole["content"].splitlines()[0] == "     1|def add(a, b):"
    assert whole["total_lines"] == 6 and whole["truncated"] is False
    page = await call(runtime, project, "read_file('pkg/core.py', offset=5, limit=1)")
    assert page["content"] == "     5|def sub(a, b):\n" and page["truncated"] is True
    past = await call(runtime, project, "read_file('pkg/core.py', offset=50)")
    assert past["content"] == "" and "past the end" in past["note"]


READ_AS_NOBODY = r"""
import asyncio, json, os, sys
from pathlib import Path
from hermes_tui.runtime import Runtime

async def read(home, project, path):
    async with Runtime(home=Path(home), host_env={"PATH": "/usr/bin:/bin"}) as rt:
        return await rt.call_tool("read_file", {"path": path}, session="t", cwd=project)

root_home, nobody_home, project = sys.argv[1:4]
asyncio.run(read(root_home, project, "readable.txt"))  # as root first: loads what the call imports
os.setgroups([]); os.setgid(65534); os.setuid(65534)  # /root (the interpreter's lib) is closed from here on
denied = asyncio.run(read(nobody_home, project, "locked.txt"))
readable = asyncio.run(read(nobody_home, project, "readable.txt"))
print(json.dumps({"error": denied.get("error", denied).replace(project, "{project}"),
                  "readable": readable.get("content", readable), "uid": os.geteuid()}))
"""


def read_as_nobody() -> dict:
    """read_file of a mode-000 file by a host whose uid is nobody's (the tests run as root,
    which reads anything); the project lives outside pytest's tmp dirs, which are root's only."""
    import os
    import shutil
    import subprocess
    import sys
    import tempfile

    shared = Path(tempfile.mkdtemp(prefix="hermes-nobody-"))
    try:
        shared.chmod(0o755)
        project = shared / "project"
        project.mkdir()
        (project / "readable.txt").write_text("shared\n")
        (project / "locked.txt").write_text("secret")
        (project / "locked.txt").chmod(0)
        for home, owner in (("root-home", 0), ("nobody-home", 65534)):
            (shared / home).mkdir()
            os.chown(shared / home, owner, owner)
        env = {**os.environ, "HOME": str(shared / "nobody-home"), "HERMES_HOME": str(shared / "nobody-home")}
        done = subprocess.run([sys.executable, "-c", READ_AS_NOBODY, str(shared / "root-home"),
                               str(shared / "nobody-home"), str(project)],
                              capture_output=True, text=True, timeout=60, env=env, cwd=shared)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)
    finally:
        shutil.rmtree(shared, ignore_errors=True)


async def test_read_file_errors(runtime: Runtime, project: Path) -> None:
    locked = project / "locked.txt"
    locked.write_text("secret")
    locked.chmod(0)
    results = await call(runtime, project, "[read_file('missing.txt'), read_file('pkg'), read_file('pkg/data.bin'),"
                                           " read_file('locked.txt'), read_file('x', offset=0), read_file(5)]")
    missing, folder, binary, denied, bad_offset, bad_type = results
    assert missing == {"error": f"File not found: {project / 'missing.txt'}"}
    assert "is a directory" in folder["error"]
    assert "binary file" in binary["error"]
    import os

    if os.geteuid() != 0:
        assert denied == {"error": f"Permission denied: {locked}"}
    else:  # root reads anything: the same read by a host running as nobody
        assert read_as_nobody() == {"error": "Permission denied: {project}/locked.txt", "readable": "     1|shared\n",
                                    "uid": 65534}
    assert "offset" in bad_offset["error"] and "greater than or equal to 1" in bad_offset["error"]
    assert bad_type["error"].startswith("read_file(): invalid arguments: path")


async def test_write_file_is_atomic_and_makes_parents(runtime: Runtime, project: Path) -> None:
    target = project / "deep" / "er" / "out.txt"
    created = await call(runtime, project, "write_file('deep/er/out.txt', 'héllo\\n')")
    assert created == {"path": str(target), "bytes_written": 7, "created": True}
    assert target.read_text() == "héllo\n"
    target.chmod(0o640)
    again = await call(runtime, project, "write_file('deep/er/out.txt', 'second')")
    assert again["created"] is False and target.read_text() == "second"
    assert oct(target.stat().st_mode & 0o777) == "0o640"  # the existing mode is kept
    assert [p.name for p in target.parent.iterdir()] == ["out.txt"]  # no temp file left
    bad = await call(runtime, project, "write_file('pkg', 'x')")
    assert "is a directory" in bad["error"]


# -- search_files -----------------------------------------------------------------------------

SEARCHES = [
    "search_files('def add')",
    "search_files('def (add|sub)', file_glob='*.py', context=1)",
    "search_files('def', limit=2, offset=1)",
    "search_files('*.py', target='files')",
    "search_files('core*', target='files', path='pkg')",
]


async def test_search_files_content_and_files(runtime: Runtime, project: Path) -> None:
    found = await call(runtime, project, SEARCHES[0])
    assert [(m["path"], m["line"]) for m in found["matches"]] == [(".hidden.py", 1), ("pkg/core.py", 1)]
    assert found["total"] == 2  # not in .git, not in the binary file
    ctx = await call(runtime, project, SEARCHES[1])
    assert [(m["path"], m["line"]) for m in ctx["matches"]] == [(".hidden.py", 1), ("pkg/core.py", 1), ("pkg/core.py", 5)]
    sub = ctx["matches"][2]
    assert sub["line"] == 5 and sub["before"] == [""] and sub["after"] == ["    return a - b"]
    paged = await call(runtime, project, SEARCHES[2])
    assert paged["total"] == 3 and len(paged["matches"]) == 2 and paged["offset"] == 1
    files = await call(runtime, project, SEARCHES[3])
    assert files["files"] == [".hidden.py", "pkg/__init__.py", "pkg/core.py"]
    bad = await call(runtime, project, "search_files('(unclosed')")
    assert "invalid regular expression" in bad["error"]
    nowhere = await call(runtime, project, "search_files('x', path='nope')")
    assert "Path not found" in nowhere["error"]


@pytest.mark.skipif(search_module.ripgrep() is None, reason="ripgrep is not installed (CI installs it)")
async def test_ripgrep_and_python_fallback_give_the_same_results(
    runtime: Runtime, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_rg = [await call(runtime, project, s) for s in SEARCHES]
    monkeypatch.setattr(search_module, "ripgrep", lambda: None)
    with_python = [await call(runtime, project, s) for s in SEARCHES]
    assert {r["engine"] for r in with_rg} == {"ripgrep"}
    assert {r["engine"] for r in with_python} == {"python"}
    for a, b in zip(with_rg, with_python):
        a.pop("engine"), b.pop("engine")
        assert a == b


# -- patch ------------------------------------------------------------------------------------


async def test_patch_replaces_exactly(runtime: Runtime, project: Path) -> None:
    done = await call(runtime, project, "patch('pkg/core.py', 'return a + b', 'return a + b  # sum')")
    assert done["replacements"] == 1
    assert "-    return a + b\n+    return a + b  # sum\n" in done["diff"]
    assert "return a + b  # sum" in (project / "pkg" / "core.py").read_text()
    missing = await call(runtime, project, "patch('pkg/core.py', 'return a * b', 'x')")
    assert "old_string not found" in missing["error"]
    twice = await call(runtime, project, "patch('pkg/core.py', 'a, b', 'x, y')")
    assert "appears 2 times" in twice["error"] and "replace_all" in twice["error"]
    both = await call(runtime, project, "patch('pkg/core.py', 'a, b', 'x, y', replace_all=True)")
    assert both["replacements"] == 2 and (project / "pkg" / "core.py").read_text().count("x, y") == 2
    incomplete = await call(runtime, project, "patch('pkg/core.py', 'x')")
    assert "missing: new_string" in incomplete["error"]


async def test_patch_applies_a_unified_diff(runtime: Runtime, project: Path) -> None:
    diff = (
        "--- a/README.md\n+++ b/README.md\n@@ -1,2 +1,3 @@\n # Demo\n-Hello world\n+Hello there\n+More\n"
        "--- /dev/null\n+++ b/NEW.txt\n@@ -0,0 +1 @@\n+brand new\n"
    )
    (project / "diff.txt").write_text(diff)
    done = await call(runtime, project, "patch(patch=open('diff.txt').read())")
    assert [f["action"] for f in done["files"]] == ["modified", "created"]
    assert (project / "README.md").read_text() == "# Demo\nHello there\nMore\n"
    assert (project / "NEW.txt").read_text() == "brand new\n"
    stale = await call(runtime, project, "patch(patch=open('diff.txt').read().split('--- /dev/null')[0])")
    assert "does not apply" in stale["error"] and "nothing was changed" in stale["error"]
    garbage = await call(runtime, project, "patch(patch='not a diff')")
    assert "no file changes" in garbage["error"]


# -- terminal ---------------------------------------------------------------------------------

STRICT = "approvals:\n  mode: strict\n"
"""Every terminal() call asks (the default asks only for flagged ones)."""


async def test_terminal_asks_and_runs_in_the_foreground(runtime_factory, project: Path) -> None:
    approver = Recorder(ApprovalDecision(choice="once"), ApprovalDecision(choice="session"))
    rt = await runtime_factory(STRICT, approver=approver)
    first = await call(rt, project, "terminal('echo out; echo err >&2; exit 3')")
    assert first == {"output": "out\nerr\n", "exit_code": 3, "error": None}
    request = approver.asked[0]
    assert request.kind == "terminal" and request.text == "echo out; echo err >&2; exit 3"
    assert request.cwd == str(project) and request.session == "t" and request.kernel
    sub = project / "pkg"
    assert (await call(rt, project, "terminal('pwd', workdir='pkg')"))["output"] == f"{sub}\n"
    again = await call(rt, project, "terminal('pwd', workdir='pkg')")  # "session": not asked again
    assert again["exit_code"] == 0 and len(approver.asked) == 2
    refused = await call(rt, project, "terminal('sleep 1 &', background=True)")
    assert "foreground only" in refused["error"] and len(approver.asked) == 2


async def test_terminal_denied_and_unanswered(runtime_factory, project: Path) -> None:
    approver = Recorder(ApprovalDecision(choice="deny", reason="not on my machine"))
    rt = await runtime_factory(STRICT, approver=approver)
    denied = await call(rt, project, "terminal('touch made-it')")
    assert denied == {"output": "", "exit_code": -1, "status": "blocked",
                      "error": "BLOCKED: denied by the user: not on my machine"}
    assert not (project / "made-it").exists()
    nobody = await runtime_factory(STRICT)
    blocked = await call(nobody, project, "terminal('touch made-it')")
    assert blocked["status"] == "blocked" and "no one to approve" in blocked["error"]

    async def silent(request: ApprovalRequest) -> ApprovalDecision:
        await asyncio.sleep(60)
        raise AssertionError("unreachable")

    slow = await runtime_factory("approvals:\n  mode: strict\n  timeout: 0.5\n", approver=silent)
    late = await call(slow, project, "terminal('touch made-it')")
    assert late["status"] == "blocked" and "no answer within 0.5s" in late["error"]
    assert not (project / "made-it").exists()


async def test_terminal_timeout_and_output_cap(runtime_factory, project: Path, hermes_home: Path) -> None:
    rt = await runtime_factory("terminal:\n  timeout: 1\n", approver=Recorder(*[ApprovalDecision(choice="once")] * 2))
    slow = await call(rt, project, "terminal('echo started; sleep 30')")
    assert slow["error"] == "Command timed out after 1s and was killed." and slow["output"] == "started\n"
    big = await call(rt, project, "(lambda r: {**r, 'output': None, 'marked': 'OUTPUT TRUNCATED' in r['output'],"
                                  " 'end': r['output'][-7:], 'size': len(r['output'])})(terminal('seq 1 100000'))")
    assert big["output_truncated"] is True and big["output_bytes_total"] == len(
        "".join(f"{i}\n" for i in range(1, 100001)))
    assert big["marked"] and big["end"] == "100000\n" and big["size"] < 50_200
    assert Path(big["output_spill_path"]).parent == hermes_home / "cache" / "exec"


async def test_a_command_too_long_for_the_shell_is_refused_before_it_is_asked(tmp_path) -> None:
    from hermes_tui.config import parse_config
    from hermes_tui.runtime import Runtime

    asked = []

    async def approver(request):
        asked.append(request)
        raise AssertionError("never asked")

    async with Runtime(parse_config(""), home=tmp_path / "home", approver=approver) as rt:
        result = await rt.terminal("echo " + "x" * 200_000, session="t", cwd=tmp_path)
    assert not asked
    assert "200,005 bytes" in result["error"] and "at most 131,071" in result["error"]


def test_a_diff_names_an_absolute_path_as_it_is() -> None:
    """Issue 32: a patch of /tmp/x showed `--- a//tmp/x`; a relative path keeps a/ and b/."""
    from hermes_tui.runtime.tools.changes import unified_diff

    absolute = unified_diff("/tmp/x.txt", "a\n", "b\n")
    assert absolute.startswith("--- /tmp/x.txt\n+++ /tmp/x.txt\n") and "//" not in absolute
    assert unified_diff("src/x.txt", "a\n", "b\n").startswith("--- a/src/x.txt\n+++ b/src/x.txt\n")
