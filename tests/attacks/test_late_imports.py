"""The host's imports after it started (issue 31, item 3), with ``code_execution.sandbox: off``.

A script can then write site-packages. The host imports some modules only when first needed (a
Pygments lexer with the first code block in that language): one a script changed would run in
the host, beside the keys. runtime/import_guard.py refuses such an import once the runtime has
started. Each test runs a real app (the Textual pilot, headless) in a subprocess host, as
``hermes-tui`` arms it, against a scripted model on 127.0.0.1:

* a script appends code to a lexer module of a throwaway copy of Pygments put first on the
  host's ``sys.path``, and the next reply has a code block in that language: the planted code
  must not run in the host, the refusal is said in the conversation and the approvals log, and
  the block is shown plain (this fails without the guard: the code runs);
* every tool, a sub-agent and a reply with code blocks in many languages (and one without a
  language: Pygments then tries every lexer): every module the host imported after its imports
  closed was checked by the guard, or has no file a script could have written.

Run as ``python test_late_imports.py host SPEC OUT`` it is that host.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import marshal
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent.parent

LANGUAGES = (
    "python", "bash", "javascript", "typescript", "rust", "go", "c", "cpp", "java", "kotlin", "swift", "ruby",
    "php", "perl", "lua", "r", "scala", "elixir", "erlang", "ocaml", "clojure", "fsharp", "csharp", "sql",
    "json", "yaml", "toml", "ini", "xml", "html", "css", "scss", "diff", "dockerfile", "make", "nginx",
    "powershell", "latex", "markdown", "graphql", "protobuf", "terraform", "zig", "nim", "julia", "matlab",
    "fortran", "cobol", "prolog", "scheme", "elm", "dart", "groovy", "vim", "tcl", "awk",
)
"""The languages of the code blocks of the walk's reply (plus one block with no language)."""

END = "END-OF-REPLY-7f3a"
"""The last words of the reply the host waits for."""


# -- the host (a subprocess) -------------------------------------------------------------------

ALL_TOOLS_SCRIPT = """
from hermes_tools import terminal, read_file, write_file, patch, search_files, web_search, web_extract
import json
results = {{
    "terminal": terminal("echo from-the-shell && ls"),
    "write_file": write_file("notes/a.txt", "alpha\\nbeta\\n"),
    "read_file": read_file("notes/a.txt"),
    "patch": patch("notes/a.txt", old_string="beta", new_string="gamma"),
    "patch_diff": patch(patch="--- a/notes/a.txt\\n+++ b/notes/a.txt\\n@@ -1,2 +1,2 @@\\n-alpha\\n+delta\\n gamma\\n"),
    "search_content": search_files("gam+a", path="notes"),
    "search_files": search_files("*.txt", target="files"),
    "web_search": web_search("kernels"),
    "web_extract": web_extract(["{web}/page", "{web}/latin1", "{web}/plain"]),
}}
print(json.dumps({{name: "error" in r for name, r in results.items()}}))
"""


def direct_calls(web: str) -> list[dict]:
    """Each tool called by the model itself (outside a script)."""
    return [
        {"name": "terminal", "arguments": {"command": "echo direct && pwd"}},
        {"name": "write_file", "arguments": {"path": "direct.txt", "content": "one\ntwo\n"}},
        {"name": "read_file", "arguments": {"path": "direct.txt"}},
        {"name": "patch", "arguments": {"path": "direct.txt", "old_string": "two", "new_string": "three"}},
        {"name": "search_files", "arguments": {"pattern": "thr+ee"}},
        {"name": "web_search", "arguments": {"query": "session kernels"}},
        {"name": "web_extract", "arguments": {"urls": [f"{web}/page", f"{web}/cp1252"]}},
    ]


def many_languages() -> str:
    blocks = [f"```{language}\nx = 1  # {language}\n```" for language in LANGUAGES]
    unlabeled = "```\nfn main() { println!(\"which language?\"); }\n```"  # Pygments guesses: every lexer
    return "Here they are.\n\n" + "\n\n".join([*blocks, unlabeled]) + f"\n\n{END}"


def walk_replies(web: str) -> list[dict]:
    parent = "go-walk-6c1d"
    child = "child-goal-5e2b"
    return [
        {"match": parent, "text": "", "tool_calls": [{"name": "execute_code",
                                                      "arguments": {"code": ALL_TOOLS_SCRIPT.format(web=web)}}]},
        {"match": parent, "text": "", "tool_calls": direct_calls(web)},
        {"match": parent, "text": "", "tool_calls": [{"name": "delegate_task", "arguments": {
            "tasks": [{"goal": f"{child}: print 6*7", "name": "c1"}]}}]},
        {"match": child, "text": "", "tool_calls": [{"name": "execute_code", "arguments": {"code": "print(6 * 7)"}}]},
        {"match": child, "text": "It is 42."},
        {"match": parent, "text": many_languages()},
    ]


PLANT = """
import os
target = {target!r}
with open(target, "a") as handle:
    handle.write("\\nimport os as _os\\nopen({marker!r}, 'a').write('ran in pid %d\\\\n' % _os.getpid())\\n")
print("planted", os.path.getsize(target))
"""


def plant_replies(target: str, marker: str) -> list[dict]:
    return [
        {"text": "", "tool_calls": [{"name": "execute_code",
                                     "arguments": {"code": PLANT.format(target=target, marker=marker)}}]},
        {"text": f"A Haskell example:\n\n```haskell\nmain = putStrLn \"hello\"\n```\n\n{END}"},
    ]


def start_web() -> str:
    """A local site for web_search (SearXNG's JSON) and web_extract (pages in three charsets)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from urllib.parse import urlparse

    pages = {
        "/search": ("application/json", json.dumps({"results": [
            {"title": "Kernels", "url": "https://example.org/k", "content": "they keep state"}]}).encode()),
        "/page": ("text/html; charset=utf-8", "<html><head><title>T</title></head><body><h1>Kernels</h1>"
                                              "<p>keep <b>state</b></p></body></html>".encode()),
        "/latin1": ("text/html; charset=iso-8859-15", "<p>caf\u00e9 \u20ac</p>".encode("iso-8859-15")),
        "/cp1252": ("text/html; charset=windows-1252", "<p>\u201cquoted\u201d</p>".encode("cp1252")),
        "/plain": ("text/plain", b"plain text\n"),
    }

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802
            kind, body = pages.get(urlparse(self.path).path, ("text/plain", b"missing"))
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{httpd.server_address[1]}"


async def host(spec: dict) -> dict:
    """Open the app as ``hermes-tui`` does, send one message, wait for the reply ending in
    :data:`END`; what it saw."""
    sys.path.insert(0, str(TESTS))
    from fake_models import FakeModelServer

    from hermes_tui.tui.app import HermesApp
    from hermes_tui.cli.app_cmd import close_imports_on_start
    from hermes_tui.config import parse_config
    from hermes_tui.runtime import import_guard
    from hermes_tui.tui.widgets.conversation import RunBlock
    from hermes_tui.tui.widgets.reply import ReplyBlock

    web = start_web()
    if spec["mode"] == "walk":
        replies, message = walk_replies(web), "go-walk-6c1d"
    else:
        replies, message = plant_replies(spec["target"], spec["marker"]), "show me haskell"
    with FakeModelServer(replies) as server:
        config = parse_config(
            f"model:\n  provider: custom\n  default: fake-model\n  base_url: {server.url}\n  max_retries: 0\n"
            f"approvals:\n  mode: 'off'\ncode_execution:\n  sandbox: 'off'\n"
            f"web:\n  search_backend: searxng\n  searxng_url: {web}\n  extract_backend: http\n")
        if spec["arm"]:
            close_imports_on_start()  # what app_command does before the app runs
        app = HermesApp(config, cwd=spec["cwd"], session="s-late")
        async with app.run_test(size=(140, 40)) as pilot:
            from hermes_tui.tui.widgets.conversation import PromptInput

            prompt = app.query_one(PromptInput)
            prompt.focus()
            prompt.insert(message)
            await pilot.press("enter")
            loop_time = __import__("asyncio").get_running_loop().time
            deadline = loop_time() + 120
            while not any(END in block.text for block in app.query(ReplyBlock)):
                if loop_time() > deadline:
                    raise SystemExit(f"no reply in time; requests: {len(server.requests)}")
                await pilot.pause(0.1)
            await pilot.pause(1.0)  # the reply's blocks are built (Pygments runs)
            fences = [(fence.lexer, fence.code) for fence in app.query("ReplyFence")]
            notes = [str(note.render()) for note in app.query(".note")]
            runs = [(run.status, run.summary, run.result.output if run.result else None) for run in app.query(RunBlock)]
            modules = dict(sys.modules)
    guard = import_guard.guard()
    late = sorted(set(modules) - (guard.loaded_at_close if guard else set()))
    return {
        "in_flight": sorted(guard.in_flight_at_close) if guard else [],
        "pid": os.getpid(),
        "pygments": __import__("pygments").__file__,
        "fences": fences,
        "notes": notes,
        "runs": runs,
        "requests": len(server.requests),
        "closed": guard is not None,
        "refused": guard.refused if guard else [],
        "late": {name: {"verdict": guard.checked.get(name) if guard else None,
                        "file": getattr(modules[name], "__file__", None),
                        "origin": getattr(getattr(modules[name], "__spec__", None), "origin", None)}
                 for name in late},
    }


def headless_host(spec: dict) -> dict:
    """``hermes-tui run`` (its CLI entry, in this process) through every tool and a sub-agent."""
    sys.path.insert(0, str(TESTS))
    from fake_models import FakeModelServer

    from hermes_tui.cli import main as cli_main
    from hermes_tui.runtime import import_guard

    web = start_web()
    with FakeModelServer(walk_replies(web)) as server:
        Path(os.environ["HERMES_HOME"], "config.yaml").write_text(
            f"model:\n  provider: custom\n  default: fake-model\n  base_url: {server.url}\n  max_retries: 0\n"
            f"approvals:\n  mode: 'off'\ncode_execution:\n  sandbox: 'off'\n"
            f"web:\n  search_backend: searxng\n  searxng_url: {web}\n  extract_backend: http\n")
        code = cli_main(["run", "--session", "h-late", "go-walk-6c1d"])
        modules = dict(sys.modules)
    guard = import_guard.guard()
    late = sorted(set(modules) - (guard.loaded_at_close if guard else set()))
    return {"code": code, "requests": len(server.requests), "closed": guard is not None,
            "in_flight": sorted(guard.in_flight_at_close) if guard else [],
            "refused": guard.refused if guard else [],
            "late": {name: {"verdict": guard.checked.get(name) if guard else None,
                            "file": getattr(modules[name], "__file__", None),
                            "origin": getattr(getattr(modules[name], "__spec__", None), "origin", None)}
                     for name in late}}


def main() -> None:
    import asyncio

    spec = json.loads(Path(sys.argv[2]).read_text())
    result = headless_host(spec) if spec["mode"] == "headless" else asyncio.run(host(spec))
    Path(sys.argv[3]).write_text(json.dumps(result))


if __name__ == "__main__" and sys.argv[1:2] == ["host"]:
    main()


# -- the tests ---------------------------------------------------------------------------------

def run_host(tmp_path: Path, hermes_home: Path, spec: dict, pythonpath: str | None = None) -> dict:
    cwd = tmp_path / "work"
    cwd.mkdir(exist_ok=True)
    spec = {"arm": True, "cwd": str(cwd), **spec}
    spec_file, out = tmp_path / "spec.json", tmp_path / "out.json"
    spec_file.write_text(json.dumps(spec))
    env = {**os.environ, "HERMES_HOME": str(hermes_home)}
    for key in ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY"):
        env.pop(key, None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    done = subprocess.run([sys.executable, __file__, "host", str(spec_file), str(out)], capture_output=True,
                          text=True, timeout=170, env=env, cwd=cwd)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(out.read_text())


def audit_lines(hermes_home: Path) -> list[dict]:
    path = hermes_home / "tui" / "approvals.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_lexer_a_script_changed_is_not_imported_by_the_host(tmp_path: Path, hermes_home: Path) -> None:
    import pygments

    site = tmp_path / "site"  # a throwaway Pygments, first on the host's sys.path (never the venv's)
    shutil.copytree(Path(pygments.__file__).parent, site / "pygments")
    target = site / "pygments" / "lexers" / "haskell.py"
    marker = tmp_path / "planted-code-ran"
    seen = run_host(tmp_path, hermes_home, {"mode": "plant", "target": str(target), "marker": str(marker)},
                    pythonpath=str(site))
    assert seen["pygments"].startswith(str(site))  # the host used the copy
    assert "_os.getpid()" in target.read_text(), seen["runs"]  # the script did change it
    assert not marker.exists(), f"the planted code ran: {marker.read_text()} (host pid {seen['pid']})"
    [refusal] = [line for line in seen["refused"] if "pygments.lexers.haskell" in line]
    assert str(target) in refusal and "after hermes-tui started" in refusal
    assert any("refused to import pygments.lexers.haskell" in note for note in seen["notes"])
    assert [e["reason"] for e in audit_lines(hermes_home) if e.get("event") == "import_refused"] == [refusal]
    assert ("haskell", 'main = putStrLn "hello"') in [tuple(f) for f in seen["fences"]]  # shown, plain


NO_FILE = "no file"

JUSTIFIED: dict[str, str] = {}
"""Modules a run imports late, from a file, that the guard did not check, and why that is safe.
Empty: every one goes through it."""


def test_every_module_the_host_imports_after_start_is_checked(tmp_path: Path, hermes_home: Path) -> None:
    seen = run_host(tmp_path, hermes_home, {"mode": "walk"})
    assert seen["closed"] and seen["refused"] == []
    late = seen["late"]
    # The run did reach what it meant to: the tools' late imports, every lexer, a sub-agent.
    assert "pygments.lexers.haskell" in late and "pygments.lexers.rust" in late, sorted(late)[:50]
    assert len({fence[0] for fence in seen["fences"]}) >= len(LANGUAGES)
    unchecked = not_checked(seen)
    assert unchecked == {}, unchecked
    print(f"\n{len(late)} modules imported after start, every one checked; under way in another thread as "
          f"the imports closed (before any kernel): {sorted(set(late) & set(seen['in_flight']))}")


def not_checked(seen: dict) -> dict[str, dict]:
    """The modules imported after the imports closed that the guard did not check, left over
    once these are set aside:

    * those whose import was under way in another thread as the guard was put in place (the
      event loop importing the provider's SDK for the first model call while the runtime's
      start thread closes the imports): found before the guard, before any kernel existed;
    * those with no file of their own, put in ``sys.modules`` without an import (a C module's
      submodules, a module made in memory): what runs there is the code of a checked module;
    * :data:`JUSTIFIED`."""
    return {name: about for name, about in seen["late"].items()
            if about["verdict"] not in ("ok", NO_FILE) and name not in seen["in_flight"]
            and (about["file"] or (about["origin"] or "").startswith("/")) and name not in JUSTIFIED}


def test_a_headless_run_closes_its_imports_too(tmp_path: Path, hermes_home: Path) -> None:
    seen = run_host(tmp_path, hermes_home, {"mode": "headless"})
    assert seen["code"] == 0 and seen["requests"] == 6  # every reply was used: the run went through
    assert seen["closed"] and seen["refused"] == []
    late = seen["late"]
    assert late, "nothing imported after start: the walk did not happen"
    assert not_checked(seen) == {}


# -- the guard's rules, in this process (a guard of their own, removed after each test) -------

@pytest.fixture
def tree(tmp_path: Path):
    """A folder first on ``sys.path`` with a package made before the guard's moment; yields a
    function that closes the imports there (a guard of its own, first on ``sys.meta_path``)."""
    from hermes_tui.runtime.import_guard import ImportGuard, _now_ns, snapshot

    root = tmp_path / "root"
    root.mkdir()
    name = f"pkg_{uuid.uuid4().hex[:8]}"
    (root / name).mkdir()
    (root / name / "__init__.py").write_text("")
    (root / name / "old.py").write_text("VALUE = 'old'\n")
    sys.path.insert(0, str(root))
    guards: list[ImportGuard] = []

    def close(*imported: str) -> ImportGuard:
        for module in imported:
            importlib.import_module(module)
        time.sleep(0.05)  # past the coarse clock's tick: what was made above is "before"
        guard = ImportGuard(_now_ns(), snapshot(list(sys.modules.values()), list(sys.path)))
        sys.meta_path.insert(0, guard)
        guards.append(guard)
        time.sleep(0.05)
        return guard

    close.root, close.name = root, name  # type: ignore[attr-defined]
    yield close
    for guard in guards:
        sys.meta_path.remove(guard)
    sys.path.remove(str(root))
    for module in [m for m in sys.modules if m.startswith(("pkg_", "late_", "shadow_"))]:
        del sys.modules[module]
    importlib.invalidate_caches()


def test_an_unchanged_module_imports_and_a_changed_one_is_refused(tree, tmp_path: Path) -> None:
    guard = tree(tree.name)
    (tree.root / tree.name / "changed.py").write_text("VALUE = 'old'\n")  # made after: as a script would
    importlib.invalidate_caches()
    assert importlib.import_module(f"{tree.name}.old").VALUE == "old"
    with pytest.raises(ImportError, match="refused to import .*changed.py.*after hermes-tui started"):
        importlib.import_module(f"{tree.name}.changed")
    assert guard.checked == {f"{tree.name}.old": "ok", f"{tree.name}.changed": "refused"}
    with pytest.raises(ImportError):  # asked again: refused again, said once
        importlib.import_module(f"{tree.name}.changed")
    assert len(guard.refused) == 1


def test_a_new_module_earlier_on_sys_path_is_refused(tree, tmp_path: Path) -> None:
    name = f"shadow_{uuid.uuid4().hex[:8]}"
    (tree.root / f"{name}.py").write_text("VALUE = 'real'\n")
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    sys.path.insert(0, str(earlier))
    try:
        tree()
        (earlier / f"{name}.py").write_text("VALUE = 'planted'\n")
        importlib.invalidate_caches()
        with pytest.raises(ImportError, match="refused"):
            importlib.import_module(name)
    finally:
        sys.path.remove(str(earlier))


def test_a_folder_of_old_files_moved_in_place_is_refused(tree, tmp_path: Path) -> None:
    """Files keep their ctime when their folder is renamed: the folder is what changed."""
    decoy = tmp_path / "decoy"  # made before the moment, as an earlier session's script could
    decoy.mkdir()
    (decoy / "__init__.py").write_text("")
    (decoy / "old.py").write_text("VALUE = 'planted'\n")
    late = f"late_{uuid.uuid4().hex[:8]}"  # a package the host had not imported: not in the snapshot
    shutil.copytree(decoy, tree.root / late)
    time.sleep(0.05)
    tree(tree.name)
    os.rename(tree.root / tree.name, tmp_path / "away")
    os.rename(decoy, tree.root / tree.name)  # the imported package's folder: another inode now
    importlib.invalidate_caches()
    with pytest.raises(ImportError, match="replaced after hermes-tui started"):
        importlib.import_module(f"{tree.name}.old")
    os.rename(tree.root / late, tmp_path / "late-away")
    (tmp_path / "late-away").rename(tree.root / late)  # renamed back in: its ctime moved
    importlib.invalidate_caches()
    with pytest.raises(ImportError, match="changed after hermes-tui started"):
        importlib.import_module(f"{late}.old")


def test_bytecode_changed_after_start_is_not_used(tree) -> None:
    name = f"{tree.name}.cached"
    source = tree.root / tree.name / "cached.py"
    source.write_text("VALUE = 'source'\n")
    importlib.invalidate_caches()
    pyc = Path(importlib.util.cache_from_source(str(source)))
    guard = tree(tree.name)
    # A .pyc whose header matches the unchanged source (its mtime and size), with other code.
    header = pyc.read_bytes()[:16] if pyc.exists() else None
    stats = source.stat()
    header = header or (importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little")
                        + (int(stats.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
                        + (stats.st_size & 0xFFFFFFFF).to_bytes(4, "little"))
    pyc.parent.mkdir(exist_ok=True)
    pyc.write_bytes(header + marshal.dumps(compile("VALUE = 'planted'\n", str(source), "exec")))
    assert importlib.import_module(name).VALUE == "source"
    assert guard.checked[name] == "ok"


def test_a_code_block_whose_lexer_is_refused_is_shown_plain(monkeypatch: pytest.MonkeyPatch) -> None:
    import textual.highlight

    from hermes_tui.tui.widgets.reply import ReplyFence

    def refused(*args: object, **kwargs: object) -> None:
        raise ImportError("hermes-tui refused to import pygments.lexers.haskell")

    monkeypatch.setattr(textual.highlight, "get_lexer_by_name", refused)
    shown = ReplyFence.highlight("main = putStrLn 1", "haskell")
    assert shown.plain == "main = putStrLn 1" and not shown.spans
