"""Issue 30: the sandbox in force is shown everywhere — the app's top bar (a red badge when it is
off or unavailable), the kernels pane's *sandbox* column, `hermes-tui doctor` (text and --json)
and each `hermes-tui exec --json` result — and the help says what runs inside it. Each test
looks at what a user sees: the rendered top bar, the table's cells, the help text, the CLI's
output. The real sandbox is probed (bubblewrap or Landlock here);
``HERMES_TUI_SANDBOX_TIER=none`` names no mechanism, which makes it unavailable (fail closed)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from rich.style import Style
from textual.app import App, ComposeResult

from hermes_tui.cli.doctor import checks as doctor_checks
from hermes_tui.tui.app import HermesApp
from hermes_tui.config import parse_config
from hermes_tui.runtime.models import KernelInfo
from hermes_tui.runtime.sandbox import FORCE_ENV
from hermes_tui.tui.widgets.conversation import PromptInput
from hermes_tui.tui.screens.dialogs import HelpScreen
from hermes_tui.tui.widgets.kernel_table import KernelTable
from hermes_tui.tui.widgets.kernels import KernelsPane
from hermes_tui.tui.screens.main import TopBar, topbar_line

from helpers.pilot import blocks, make_app, submit, wait_until

CLI = [sys.executable, "-m", "hermes_tui"]
LABEL = re.compile(r"(workspace-write|read-only)·(bwrap|landlock)(·network)?")
"""A sandbox in force (which mechanism depends on the machine: bubblewrap if it works, else Landlock)."""
NOW = datetime(2026, 12, 1, 12, 0, 0)
WARNING = Style.parse("reverse bold red")
PARTS = {"version": "0.1.0", "session": "20261201-120000-abcd", "cwd": "/home/user/project", "model": None,
         "approvals": "manual", "yolo": False}


def topbar(app: HermesApp) -> str:
    return app.query_one(TopBar).render().plain


def styles_of(line, text: str) -> list[Style]:
    """The styles of the spans that cover ``text`` in a rendered line (where it starts)."""
    start = line.plain.index(text)
    return [Style.parse(str(span.style)) if isinstance(span.style, str) else span.style
            for span in line.spans if span.start <= start < span.end]


def notes(app: HermesApp) -> str:
    return "\n".join(str(note.render()) for note in app.query(".note"))


def cli(*argv: str, cwd: Path, env: dict[str, str] | None = None, stdin: str | None = None):
    return subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=120, cwd=cwd, input=stdin,
                          env={**os.environ, **(env or {})})


# -- the top bar ------------------------------------------------------------------------------


def test_topbar_line_shows_the_sandbox_and_warns_when_it_is_off_or_unavailable() -> None:
    wide = topbar_line(200, **PARTS, sandbox="workspace-write·bwrap")
    assert wide.plain.endswith(" · sandbox: workspace-write·bwrap · approvals manual")
    narrow = topbar_line(80, **PARTS, sandbox="workspace-write·bwrap")  # the mechanism alone under 100 columns
    assert "sandbox: bwrap · approvals manual" in narrow.plain and narrow.cell_len <= 80
    assert "sandbox" not in topbar_line(200, **PARTS, sandbox=None).plain  # not probed yet: nothing said
    for label in ("off", "unavailable", "off·/proc open"):  # the last: off, and no Landlock
        line = topbar_line(200, **PARTS, sandbox=label)
        assert line.plain.endswith(f"approvals manual  sandbox: {label} ")
        assert WARNING in styles_of(line, f"sandbox: {label}")  # a badge, as YOLO's
        for width in range(10, 160):  # the badges and the modes stay, down to 45 columns
            line = topbar_line(width, **{**PARTS, "approvals": "off", "yolo": True}, sandbox=label)
            assert line.cell_len <= width, (width, line.plain)
            if width >= 45:
                assert f"sandbox: {label}" in line.plain and "YOLO" in line.plain and "approvals off" in line.plain
    # Nothing runs (a broken config.yaml): the modes shown are not in force, and a badge says so.
    halted = topbar_line(200, **PARTS, sandbox="workspace-write·bwrap", halted=True)
    assert "nothing runs" in halted.plain and WARNING in styles_of(halted, "nothing runs")
    for width in range(45, 160):
        assert "nothing runs" in topbar_line(width, **PARTS, sandbox="off", halted=True).plain, width
    # Never markup: a label is shown as it is.
    assert "sandbox: [b]x[/b]\\x1b" in topbar_line(200, **PARTS, sandbox="[b]x[/b]\x1b").plain


async def test_the_top_bar_shows_the_sandbox_once_the_runtime_probed_it(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_until(pilot, lambda: "sandbox:" in topbar(app))
        label = app.runtime.sandbox.label
        assert LABEL.fullmatch(label), label
        assert f"sandbox: {label} · approvals strict" in topbar(app)
        assert WARNING not in styles_of(app.query_one(TopBar).render(), "sandbox:")


async def test_the_top_bar_shortens_the_sandbox_to_fit_80_columns(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: "sandbox:" in topbar(app))
        bar = app.query_one(TopBar)
        assert bar.render().cell_len <= bar.content_size.width
        assert f"sandbox: {app.runtime.sandbox.tier} · approvals strict" in topbar(app)
        assert app.session in topbar(app)


async def test_an_unavailable_sandbox_is_a_badge_and_the_conversation_says_why(
        hermes_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FORCE_ENV, "none")  # names no mechanism: no sandbox can be applied
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_until(pilot, lambda: "sandbox: unavailable" in topbar(app))
        assert WARNING in styles_of(app.query_one(TopBar).render(), "sandbox: unavailable")
        await wait_until(pilot, lambda: "no sandbox can be applied" in notes(app))
        assert "To fix:" in notes(app)
        await submit(pilot, app, "print('never')")  # fail closed: nothing runs
        await wait_until(pilot, lambda: blocks(app) and blocks(app)[-1].result is not None)
        result = blocks(app)[-1].result
        assert result.status != "success" and result.sandbox == "unavailable" and "never" not in result.output


async def test_sandbox_off_is_a_badge_from_the_first_frame(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path, "code_execution:\n  sandbox: off\n")
    assert app._sandbox == "off"  # known from the config before the runtime is probed
    async with app.run_test(size=(140, 30)) as pilot:
        await pilot.pause()
        assert "sandbox: off" in topbar(app)
        assert WARNING in styles_of(app.query_one(TopBar).render(), "sandbox: off")
        await submit(pilot, app, "print(2)")  # the runtime started (and probed): still off
        await wait_until(pilot, lambda: blocks(app) and blocks(app)[-1].result is not None)
        assert blocks(app)[-1].result.sandbox == "off" and blocks(app)[-1].result.output == "2\n"
        assert "sandbox: off" in topbar(app) and "no sandbox can be applied" not in notes(app)


# -- the kernels pane -------------------------------------------------------------------------


class Host(App[None]):
    def compose(self) -> ComposeResult:
        yield KernelsPane()


def kernel(kernel_id: str, sandbox: str) -> KernelInfo:
    return KernelInfo(id=kernel_id, key=kernel_id, session="s1", mode="project", interpreter="python3", cwd="/tmp",
                      pid=100, state="idle", started_at=NOW - timedelta(minutes=5), last_used=NOW,
                      execution_count=1, idle_deadline=NOW + timedelta(minutes=29), sandbox=sandbox)


async def test_the_kernels_pane_has_a_sandbox_column_of_plain_text() -> None:
    app = Host()
    async with app.run_test(size=(200, 10)) as pilot:
        pane = app.query_one(KernelsPane)
        pane.update_kernels([kernel("k1", "workspace-write·bwrap"), kernel("k2", "off"),
                             kernel("k3", "[b]x[/b]\x1b]0;t\x07")], {}, now=NOW)
        await pilot.pause()
        table = pane.table()
        assert table.columns.index("sandbox") == table.columns.index("mode") + 1
        assert [table.get_cell(k, "sandbox") for k in ("k1", "k2")] == ["workspace-write·bwrap", "off"]
        header, first, third = (table.render_line(y).text for y in (0, 1, 3))
        assert re.search(r" mode +sandbox +pid ", header)
        assert re.search(r" project +workspace-write·bwrap +100 ", first)
        assert "[b]x[/b]\\x1b]0;t\\x07" in third and "\x1b" not in third  # shown, never interpreted


async def test_a_kernel_row_says_the_sandbox_it_runs_in(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=(200, 40)) as pilot:
        await submit(pilot, app, "x = 1")
        await wait_until(pilot, lambda: blocks(app) and blocks(app)[-1].status == "success")
        pane = app.query_one(KernelsPane)
        await wait_until(pilot, lambda: bool(pane.kernels))
        table = app.query_one("#kernel-table", KernelTable)
        label = table.get_cell(pane.kernels[0].id, "sandbox")
        assert LABEL.fullmatch(label) and label == app.runtime.sandbox.label
        assert blocks(app)[-1].result.sandbox == label


# -- the help ---------------------------------------------------------------------------------


async def test_the_help_says_typed_python_is_sandboxed_and_a_bang_command_is_not(
        hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        app.query_one(PromptInput).focus()
        await pilot.press("f1")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
        text = " ".join(app.screen.text.split())
        assert "Python typed into the input and the model's scripts run in this session's kernel, which is " \
               "**sandboxed**" in text
        assert "A `!cmd` you type runs **outside the sandbox**, as in your own shell." in text
        assert "`sandbox: workspace-write·bwrap`" in text
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, HelpScreen))
        await pilot.press("f4", "f1")  # the kernels pane's help
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
        assert "*sandbox* is the sandbox it runs in" in " ".join(app.screen.text.split())


async def test_python_runs_in_the_sandbox_and_a_bang_command_outside(hermes_home: Path, tmp_path: Path) -> None:
    """What the help says, as the user sees it: typed Python cannot write outside the working
    dir; the same write as a typed `!cmd` is made."""
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    app = HermesApp(parse_config("approvals:\n  mode: off\n"), cwd=str(work), home=hermes_home)
    async with app.run_test(size=(140, 40)) as pilot:
        await submit(pilot, app, f"open({str(outside / 'py.txt')!r}, 'w').write('x')")
        await wait_until(pilot, lambda: blocks(app) and blocks(app)[-1].result is not None)
        assert blocks(app)[-1].result.status == "error" and not (outside / "py.txt").exists()
        await submit(pilot, app, f"!touch {outside / 'cmd.txt'}")
        await wait_until(pilot, lambda: len(blocks(app)) == 2 and blocks(app)[-1].status not in ("running", "queued"))
        assert (outside / "cmd.txt").exists()


# -- hermes-tui doctor --------------------------------------------------------------------------


def doctor(*argv: str, cwd: Path, env: dict[str, str] | None = None):
    done = cli("doctor", "--offline", *argv, cwd=cwd, env=env)
    assert "Traceback" not in done.stdout + done.stderr
    return done


def sandbox_check(report: dict) -> dict:
    return next(check for check in report["checks"] if check["name"] == "sandbox")


def test_doctor_reports_the_configured_sandbox_and_the_tier_in_force(hermes_home: Path, tmp_path: Path) -> None:
    (hermes_home / "config.yaml").write_text(
        f"code_execution:\n  network: true\n  writable_roots: [{tmp_path}]\n  deny_read: ['~/.aws']\n")
    report = json.loads(doctor("--json", cwd=tmp_path).stdout)
    sandbox = report["sandbox"]
    assert {k: sandbox[k] for k in ("mode", "network", "writable_roots", "deny_read")} == {
        "mode": "workspace-write", "network": True, "writable_roots": [str(tmp_path)], "deny_read": ["~/.aws"]}
    assert LABEL.fullmatch(sandbox["label"]) and sandbox["tier"] in ("bwrap", "landlock") and sandbox["error"] is None
    assert "network allowed" in sandbox["detail"]
    check = sandbox_check(report)
    assert check["status"] == "ok" and check["detail"].startswith(f"{sandbox['label']} in force: ")
    text = doctor(cwd=tmp_path)
    assert text.returncode == 0, text.stdout
    lines = text.stdout.splitlines()
    configured = next(line for line in lines if line.startswith("sandbox "))
    assert f"workspace-write: scripts and the commands they run write only the working dir and their temp dir, " \
           f"and writable_roots: {tmp_path}; network allowed (TCP/UDP)" in configured
    assert "a !cmd typed in the app is not confined" in configured and "deny_read: ~/.aws" in configured
    assert f"✓ sandbox    {sandbox['label']} in force: " in text.stdout


def test_doctor_names_a_forced_mechanism(hermes_home: Path, tmp_path: Path) -> None:
    (hermes_home / "config.yaml").write_text("code_execution:\n  sandbox: read-only\n")
    report = json.loads(doctor("--json", cwd=tmp_path, env={FORCE_ENV: "landlock"}).stdout)
    assert report["sandbox"]["label"] == "read-only·landlock"
    assert sandbox_check(report)["detail"].startswith("read-only·landlock in force: Landlock ABI ")


def test_doctor_counts_an_unavailable_sandbox_as_one_problem(hermes_home: Path, tmp_path: Path) -> None:
    done = doctor("--json", cwd=tmp_path, env={FORCE_ENV: "none"})
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["sandbox"]["tier"] == "unavailable" and "no sandbox can be applied" in report["sandbox"]["error"]
    check = sandbox_check(report)
    assert check["status"] == "fail" and f"unset {FORCE_ENV}" in check["fix"] and "To fix" not in check["detail"]
    assert report["problems"] == [f"sandbox: {check['detail']}"]  # the kernel check's failure is the same one
    text = doctor(cwd=tmp_path, env={FORCE_ENV: "none"})
    assert text.returncode == 1 and "✗ sandbox    code_execution.sandbox is workspace-write, but no sandbox" in text.stdout
    assert f"; fix: unset {FORCE_ENV}" in text.stdout and text.stdout.rstrip().endswith("1 problem found.")


def test_doctor_warns_when_the_sandbox_is_off(hermes_home: Path, tmp_path: Path) -> None:
    (hermes_home / "config.yaml").write_text("code_execution:\n  sandbox: off\n")
    done = doctor(cwd=tmp_path)
    assert done.returncode == 0
    assert "sandbox    off: scripts and the commands they run are not confined (they run as you)" in done.stdout
    assert "! sandbox    off: scripts and commands run unconfined" in done.stdout
    assert "fix: set code_execution.sandbox: workspace-write" in done.stdout


def test_a_probe_that_raises_is_a_failed_check_not_a_traceback(hermes_home: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_tui.runtime.sandbox import Sandbox

    def broken(self, *args, **kwargs):
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(Sandbox, "probe", broken)
    found = doctor_checks.probe_sandbox(parse_config(""), hermes_home)
    assert found["tier"] == "unavailable" and found["error"] == \
        "the sandbox could not be probed: OSError: Function not implemented"
    check = doctor_checks.check_sandbox(found)
    assert check.status == "fail" and check.fix.startswith("install bubblewrap")


# -- hermes-tui exec --json -------------------------------------------------------------------


def test_each_exec_json_result_carries_the_sandbox(hermes_home: Path, tmp_path: Path) -> None:
    done = cli("exec", "--json", "-", cwd=tmp_path, stdin="print(1)\n")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["output"] == "1\n" and LABEL.fullmatch(result["sandbox"]), result
    forced = cli("exec", "--json", "-", cwd=tmp_path, stdin="print(1)\n", env={FORCE_ENV: "landlock"})
    assert json.loads(forced.stdout)["sandbox"] == "workspace-write·landlock"
    refused = cli("exec", "--json", "-", cwd=tmp_path, stdin="print(1)\n", env={FORCE_ENV: "none"})
    result = json.loads(refused.stdout)
    assert refused.returncode == 1 and result["sandbox"] == "unavailable" and result["output"] == ""
    assert "no sandbox can be applied" in result["error"]
    (hermes_home / "config.yaml").write_text("code_execution:\n  sandbox: off\n")
    off = cli("exec", "--json", "-", cwd=tmp_path, stdin="print(1)\n")
    assert json.loads(off.stdout)["sandbox"] == "off"
