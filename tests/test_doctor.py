"""`hermes-tui doctor`: each check's ✗ path and a clean machine passing, through the real CLI
(run from a folder outside the checkout, HERMES_HOME a temp dir), plus the checks that cannot
be driven from outside (free space, the socket paths) called as functions."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from hermes_tui.cli.doctor import checks as doctor_checks
from hermes_tui.config import parse_config

from fake_models import FakeModelServer

CLI = [sys.executable, "-m", "hermes_tui"]
PROVIDER_KEYS = ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY", "DEEPSEEK_API_KEY", "GLM_API_KEY",
                 "ZAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "MISTRAL_API_KEY", "XAI_API_KEY")


def run_doctor(*argv: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``hermes-tui doctor ARGV`` in ``cwd`` (outside the checkout); no provider key inherited."""
    base = {k: v for k, v in os.environ.items() if k not in PROVIDER_KEYS}
    return subprocess.run([*CLI, "doctor", *argv], capture_output=True, text=True, timeout=60, cwd=cwd,
                          env={**base, **(env or {})})


def checks(done: subprocess.CompletedProcess[str]) -> dict[str, dict[str, str]]:
    """The checks of a ``--json`` run, by name."""
    report = json.loads(done.stdout)
    for check in report["checks"]:
        assert set(check) == {"name", "status", "detail", "fix"}
        assert check["status"] in ("ok", "warn", "fail")
    return {check["name"]: check for check in report["checks"]}


def line(done: subprocess.CompletedProcess[str], name: str) -> str:
    """The text line of check ``name``."""
    found = [text for text in done.stdout.splitlines() if text[2:].startswith(f"{name} ") and text[:1] in "✓!✗"]
    assert len(found) == 1, done.stdout
    return found[0]


def closed_port() -> int:
    """A port on 127.0.0.1 nobody listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A working directory outside the checkout."""
    folder = tmp_path / "cwd"
    folder.mkdir()
    return folder


# -- a clean machine --------------------------------------------------------------------------


def test_a_clean_machine_passes_every_check(hermes_home: Path, outside: Path) -> None:
    with FakeModelServer() as server:
        server.models = ["fake-model", "other-model"]
        (hermes_home / "config.yaml").write_text(
            f"model:\n  provider: custom\n  default: fake-model\n  base_url: {server.url}\n"
            "cache:\n  retention: 14d\n  max_size: 1G\n")
        done = run_doctor(cwd=outside)
        report = run_doctor("--json", cwd=outside)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rstrip().endswith("No problems found.")
    found = checks(report)
    assert report.returncode == 0 and json.loads(report.stdout)["problems"] == []
    assert [name for name in found] == [n for n in doctor_checks.ORDER if n in found]
    assert {"config", "model", "endpoint", "home", "disk", "sessions", "cache", "sandbox", "kernel", "python",
            "ripgrep", "checkpoints", "allowlist", "audit log", "sockets"} == set(found)
    assert found["checkpoints"]["status"] == "ok" and "on for " in found["checkpoints"]["detail"]
    assert "fake-model is listed" in found["endpoint"]["detail"] and found["endpoint"]["status"] == "ok"
    assert found["kernel"]["status"] == "ok" and "round trip" in found["kernel"]["detail"]
    assert found["sessions"]["detail"].endswith("not created yet")
    for name in ("config", "model", "endpoint", "home", "sessions", "cache", "sandbox", "kernel", "allowlist",
                 "audit log"):
        assert found[name]["status"] == "ok", found[name]
    assert line(done, "kernel").startswith("✓ kernel ")
    # Nothing was left behind: no database, no execution record of the kernel check.
    assert not (hermes_home / "tui" / "sessions.db").exists()
    assert not list((hermes_home / "cache" / "exec").glob("*.json"))


def test_offline_asks_no_server_and_finishes_quickly(hermes_home: Path, outside: Path) -> None:
    with FakeModelServer() as server:
        server.models = ["fake-model"]
        (hermes_home / "config.yaml").write_text(
            f"model:\n  provider: custom\n  default: fake-model\n  base_url: {server.url}\n")
        started = time.monotonic()
        done = run_doctor("--offline", "--json", cwd=outside)
        took = time.monotonic() - started
        assert server.requests == [] and server.headers == []
    assert done.returncode == 0, done.stdout + done.stderr
    assert "not checked (--offline)" in checks(done)["endpoint"]["detail"]
    # The spec says 2 s; what this guards is a wait on a server (10 s and more), not the
    # machine's speed (a loaded CI machine took 5.8 s).
    assert took < 9, took


def test_a_missing_database_and_a_good_one_are_fine_and_left_unchanged(hermes_home: Path, outside: Path) -> None:
    from hermes_tui.storage import opening
    path = opening.sessions_db_path(hermes_home)
    opening.connect(path).close()
    before = sorted(os.listdir(path.parent)), path.stat().st_mtime_ns, path.read_bytes()
    done = run_doctor("--offline", "--json", cwd=outside)
    found = checks(done)["sessions"]
    assert found["status"] == "ok" and "integrity ok" in found["detail"]
    assert (sorted(os.listdir(path.parent)), path.stat().st_mtime_ns, path.read_bytes()) == before  # no -wal, no -shm


# -- each ✗ -----------------------------------------------------------------------------------


def test_an_unparsable_config_is_a_failed_check_and_the_rest_is_checked(hermes_home: Path, outside: Path) -> None:
    """Other commands stop at a config they cannot read (exit 2, one line); doctor reports it as
    its ✗ config line and checks the rest with the defaults (exit 1)."""
    (hermes_home / "config.yaml").write_text("model: [unclosed\n")
    done = run_doctor(cwd=outside)
    assert done.returncode == 1 and done.stderr == ""
    assert "✗ config" in done.stdout and "invalid YAML" in done.stdout and "✓ kernel" in done.stdout
    assert "cannot be read (see ✗ config below)" in done.stdout
    found = doctor_checks.check_config_file(hermes_home / "config.yaml")
    assert found.status == "fail" and "invalid YAML" in found.detail and found.fix


def test_an_unknown_key_fails_the_config_check(hermes_home: Path, outside: Path) -> None:
    (hermes_home / "config.yaml").write_text("code_execution:\n  timout: 3\n")
    done = run_doctor("--offline", cwd=outside)
    assert done.returncode == 1
    text = line(done, "config")
    assert text.startswith("✗ config ") and "code_execution.timout" in text and "did you mean timeout?" in text
    assert "fix: " in text
    assert checks(run_doctor("--offline", "--json", cwd=outside))["config"]["status"] == "fail"


def test_a_missing_key_fails_the_model_check_and_names_where_it_goes(hermes_home: Path, outside: Path) -> None:
    (hermes_home / "config.yaml").write_text("model:\n  provider: deepseek\n  default: deepseek-chat\n")
    done = run_doctor("--offline", "--json", cwd=outside)
    assert done.returncode == 1
    found = checks(done)["model"]
    assert found["status"] == "fail" and "no API key" in found["detail"] and "DEEPSEEK_API_KEY" in found["fix"]
    present = run_doctor("--offline", "--json", cwd=outside, env={"DEEPSEEK_API_KEY": "sk-deep-SECRET-0003"})
    assert present.returncode == 0 and "sk-deep-SECRET" not in present.stdout
    assert checks(present)["model"]["status"] == "ok" and "DEEPSEEK_API_KEY" in checks(present)["model"]["detail"]


def test_an_unreachable_endpoint_fails_within_the_timeout(hermes_home: Path, outside: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    (hermes_home / "config.yaml").write_text(f"model:\n  provider: custom\n  default: m\n  base_url: {url}\n")
    started = time.monotonic()
    done = run_doctor(cwd=outside)
    assert time.monotonic() - started < 15
    assert done.returncode == 1
    text = line(done, "endpoint")
    assert text.startswith("✗ endpoint ") and url in text and "fix: " in text


def test_an_endpoint_without_a_model_list_or_without_the_model_warns(hermes_home: Path, outside: Path) -> None:
    with FakeModelServer() as server:  # models None: /models answers 404
        (hermes_home / "config.yaml").write_text(f"model:\n  provider: custom\n  default: m\n  base_url: {server.url}\n")
        no_list = run_doctor("--json", cwd=outside)
        server.models = ["m-large", "other"]
        unlisted = run_doctor("--json", cwd=outside)
    assert no_list.returncode == 0 and checks(no_list)["endpoint"]["status"] == "warn"
    assert "404" in checks(no_list)["endpoint"]["detail"]
    assert unlisted.returncode == 0 and checks(unlisted)["endpoint"]["status"] == "warn"
    assert "does not list m" in checks(unlisted)["endpoint"]["detail"]


def test_a_home_that_cannot_be_written_fails(tmp_path: Path, outside: Path) -> None:
    """Root writes through any mode bits, so the home is put under a regular file: nothing can
    be made there by anyone. --config names a readable config elsewhere (without it, the config
    cannot be looked up either: that is one more ✗, the rest is still checked)."""
    blocker = tmp_path / "plain-file"
    blocker.write_text("not a folder\n")
    config = tmp_path / "config.yaml"
    config.write_text("")
    home = blocker / "home"
    done = run_doctor("--offline", "--config", str(config), cwd=outside, env={"HERMES_HOME": str(home)})
    assert done.returncode == 1
    text = line(done, "home")
    assert text.startswith("✗ home ") and "is a file, not a folder" in text and "fix: " in text
    found = checks(run_doctor("--offline", "--json", "--config", str(config), cwd=outside,
                              env={"HERMES_HOME": str(home)}))
    assert {name for name, check in found.items() if check["status"] == "fail"} >= {"home", "kernel", "audit log"}
    assert blocker.read_text() == "not a folder\n"
    stopped = run_doctor("--offline", cwd=outside, env={"HERMES_HOME": str(home)})
    assert stopped.returncode == 1 and "✗ config" in stopped.stdout and "Not a directory" in stopped.stdout


def test_an_immutable_home_fails_when_the_file_system_allows_it(hermes_home: Path, outside: Path) -> None:
    """A folder that exists and refuses new files, even to root: `chattr +i` (skipped where the
    file system or the capability is missing)."""
    marked = subprocess.run(["chattr", "+i", str(hermes_home)], capture_output=True)
    if marked.returncode != 0:
        pytest.skip("chattr +i is not available here")
    try:
        done = run_doctor("--offline", cwd=outside)
    finally:
        subprocess.run(["chattr", "-i", str(hermes_home)], check=True)
    assert done.returncode == 1
    assert line(done, "home").startswith(f"✗ home       {hermes_home} is not writable")


def test_a_corrupt_database_fails_and_is_not_touched(hermes_home: Path, outside: Path) -> None:
    path = hermes_home / "tui" / "sessions.db"
    path.parent.mkdir()
    garbage = bytes(range(256)) * 64
    path.write_bytes(garbage)
    done = run_doctor("--offline", cwd=outside)
    assert done.returncode == 1
    text = line(done, "sessions")
    assert text.startswith("✗ sessions ") and "not a database" in text and "mv " in text
    assert path.read_bytes() == garbage and sorted(os.listdir(path.parent)) == ["sessions.db"]


def test_a_newer_schema_fails_it_would_be_refused(hermes_home: Path, outside: Path) -> None:
    import sqlite3

    from hermes_tui.storage import opening
    path = opening.sessions_db_path(hermes_home)
    opening.connect(path).close()
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO schema_version VALUES (?, 'from the future', 0, 'hermes-tui 9')",
                   (opening.SCHEMA_VERSION + 1,))
    found = checks(run_doctor("--offline", "--json", cwd=outside))["sessions"]
    assert found["status"] == "fail" and "newer" in found["detail"] and "upgrade hermes-tui" in found["fix"]


def test_a_shared_store_is_checked_and_its_password_never_shown(hermes_home: Path, outside: Path, pg_server,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from pg_server import PASSWORD

    name = pg_server.new_database()
    monkeypatch.setenv("HERMES_TUI_STORE_URL", pg_server.url(name, tcp=True, password=True))
    done = run_doctor("--offline", "--json", cwd=outside)
    found = checks(done)["sessions"]
    assert found["status"] == "ok" and "PostgreSQL 1" in found["detail"] and ":***@" in found["detail"]
    assert "no sessions yet" in found["detail"]
    assert PASSWORD not in done.stdout + done.stderr
    monkeypatch.setenv("HERMES_TUI_STORE_URL", pg_server.url(name, tcp=True, password=True).replace(
        PASSWORD, PASSWORD + "-wrong"))
    done = run_doctor("--offline", "--json", cwd=outside)
    found = checks(done)["sessions"]
    assert found["status"] == "fail" and "password authentication failed" in found["detail"]
    assert PASSWORD not in done.stdout + done.stderr and "PGPASSWORD" in found["fix"]


def test_a_broken_allowlist_fails(hermes_home: Path, outside: Path) -> None:
    path = hermes_home / "tui" / "allowlist.yaml"
    path.parent.mkdir()
    path.write_text("rules: [\n  {exact: 'ls'\n")
    done = run_doctor("--offline", cwd=outside)
    assert done.returncode == 1
    text = line(done, "allowlist")
    assert text.startswith("✗ allowlist ") and "its rules are ignored" in text and "fix: " in text
    path.write_text("rules:\n  - exact: ls\n")
    assert checks(run_doctor("--offline", "--json", cwd=outside))["allowlist"]["status"] == "ok"


def test_an_audit_log_that_is_not_a_file_fails(hermes_home: Path, outside: Path) -> None:
    (hermes_home / "tui" / "approvals.jsonl").mkdir(parents=True)
    found = checks(run_doctor("--offline", "--json", cwd=outside))["audit log"]
    assert found["status"] == "fail" and "not a regular file" in found["detail"]


def test_a_hostile_text_in_the_config_is_escaped_in_the_check_lines(hermes_home: Path, outside: Path) -> None:
    (hermes_home / "config.yaml").write_text("code_execution:\n  \"time\\x1b[2Kout\": 3\n")
    done = run_doctor("--offline", cwd=outside)
    assert "\x1b" not in done.stdout and "\\x1b" in line(done, "config")


# -- checks called as functions ---------------------------------------------------------------


def test_free_space_thresholds(tmp_path: Path) -> None:
    def usage(free: int):
        return lambda _path: SimpleNamespace(free=free)

    assert doctor_checks.check_free_space(tmp_path, usage(5 << 30)).status == "ok"
    assert doctor_checks.check_free_space(tmp_path, usage(500 << 20)).status == "warn"
    low = doctor_checks.check_free_space(tmp_path, usage(50 << 20))
    assert low.status == "fail" and low.fix


def test_socket_paths(tmp_path: Path) -> None:
    config = parse_config("")
    assert doctor_checks.check_sockets(config, tmp_path, tmpdir="/tmp").status == "ok"
    deep = "/tmp/" + "d" * 60
    long_tmp = doctor_checks.check_sockets(config, tmp_path, tmpdir=deep)
    assert long_tmp.status == "fail" and "TMPDIR" in long_tmp.fix
    files = parse_config("code_execution:\n  rpc_transport: file\n")
    assert doctor_checks.check_sockets(files, tmp_path, tmpdir=deep).status == "ok"
    long_home = doctor_checks.check_sockets(config, tmp_path / ("h" * 80), tmpdir="/tmp")
    assert long_home.status == "warn" and "private temp dir" in long_home.detail


def test_cache_over_its_limits_warns(hermes_home: Path, tmp_path: Path) -> None:
    folder = hermes_home / "cache" / "exec"
    folder.mkdir(parents=True)
    old = folder / "stdout-old.txt"
    old.write_bytes(b"x" * 4096)
    os.utime(old, (time.time() - 30 * 86400,) * 2)
    config = parse_config("cache:\n  retention: 7d\n  max_size: 1K\n")
    found = doctor_checks.check_cache(config, hermes_home)
    assert found.status == "warn" and "older than cache.retention 7d" in found.detail
    assert "over cache.max_size 1K" in found.detail and "cache prune" in found.fix
    assert doctor_checks.check_cache(parse_config(""), hermes_home).status == "ok"


def test_the_readme_the_docs_and_doctor_say_the_same_of_the_approvals_modes() -> None:
    """Issue 32: the README still said `manual` asks for every command while its own table,
    docs/approvals.md and doctor said it asks for flagged ones only."""
    from hermes_tui.cli.doctor_cmd import MODES

    root = Path(__file__).resolve().parents[1]
    readme = " ".join((root / "README.md").read_text().split())
    docs = " ".join((root / "docs" / "approvals.md").read_text().split())
    approvals = readme[readme.index("## Approvals"):readme.index("## Security")]
    assert "`manual` (the default) asks only for flagged commands" in approvals
    assert "Every `terminal()` command asks first (`approvals.mode: manual`)" not in readme
    assert "`manual` (the default): only flagged commands ask" in docs
    assert MODES["manual"].startswith("flagged commands ask")
    # strict asks for everything a script or the model runs; a typed !cmd only when flagged
    assert "`strict` (ours) asks for every `terminal()` command" in approvals
    assert "A `!cmd` you type yourself asks only when flagged, in every mode, `strict` included" in approvals
    assert "a `!cmd` you type yourself asks only when flagged, in every mode" in docs
    assert "a !cmd you type asks only when flagged" in MODES["strict"]
