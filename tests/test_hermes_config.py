"""A config.yaml written for Hermes Agent: it loads unchanged, the keys hermes-tui honours have
Hermes Agent's effect on a real runtime, the rest is ignored quietly (listed by `doctor
--verbose`), typos get a notice, and a sandboxed terminal.backend refuses every command."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from hermes_tui.agent.loop import TurnEnded
from hermes_tui.agent.models.providers import resolve_provider
from hermes_tui.agent.workspace import Workspace
from hermes_tui.config import load_config, parse_config
from hermes_tui.config.hermes_keys import TURN_LIMIT_UNLIMITED, turn_limit

from conftest import Approver, kernel_pids, pid_running
from fake_models import FakeModelServer

FIXTURE = Path(__file__).parent / "data" / "hermes_example_config.yaml"
CLI = [sys.executable, "-m", "hermes_tui"]
# Keys for the model and the fallback in the fixture: never printed by anything.
KEYS = {"OPENROUTER_API_KEY": "sk-or-v1-fixture-secret-0001", "ANTHROPIC_API_KEY": "sk-ant-fixture-secret-0002"}
REFUSAL = ("terminal.backend is modal: hermes-tui runs kernels and commands on local, docker, ssh or jupyter only (it "
           "cannot reach the others from here); set terminal.backend to one of those")


def fixture_text(**replace: str) -> str:
    """The fixture's text, with ``old=new`` replacements (each old text must be there once)."""
    text = FIXTURE.read_text(encoding="utf-8")
    for old, new in replace.items():
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


def run_cli(*argv: str, env: dict[str, str] | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=120, input=stdin,
                          env={**os.environ, **(env or {})})


@pytest.fixture
def home_with_fixture(hermes_home: Path) -> Path:
    (hermes_home / "config.yaml").write_bytes(FIXTURE.read_bytes())
    return hermes_home


# -- loading --------------------------------------------------------------------------------


def test_the_hermes_example_loads_unchanged_and_quietly(home_with_fixture: Path) -> None:
    path = home_with_fixture / "config.yaml"
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    config = load_config()
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before  # read, never rewritten
    assert config.source == path
    assert config.notices == []  # every key in it is ours or a known Hermes Agent key
    ignored = set(config.ignored_keys)
    assert {"memory", "display", "compression", "delegation", "platform_toolsets", "gateway", "stt"} <= ignored
    assert {"terminal.home_mode", "terminal.lifetime_seconds",
            "approvals.cron_mode", "agent.reasoning_effort", "agent.personalities"} <= ignored
    # Nothing hermes-tui reads is listed as ignored (the backends' keys are read since issue 34).
    assert not ignored & {"model", "terminal", "code_execution", "approvals", "command_allowlist", "agent",
                          "fallback_providers", "terminal.timeout", "terminal.env_passthrough", "agent.max_turns",
                          "terminal.cwd", "terminal.container_cpu", "terminal.container_memory",
                          "terminal.container_persistent", "terminal.docker_mount_cwd_to_workspace"}


def test_the_keys_hermes_tui_honours_read_as_hermes_agent_reads_them() -> None:
    config = parse_config(fixture_text())
    assert (config.model.provider, config.model.default) == ("openrouter", "anthropic/claude-sonnet-4")
    run = config.code_execution
    assert (run.timeout, run.max_tool_calls, run.kernel_idle_timeout, run.max_session_kernels) == (120, 25, 900, 2)
    assert (config.terminal.backend, config.terminal.timeout) == ("local", 45)
    assert config.terminal.env_passthrough == ["GITHUB_TOKEN", "NPM_TOKEN"]
    assert (config.approvals.mode, config.approvals.timeout) == ("manual", 60)
    assert config.command_allowlist == ["rm -rf build"]
    assert config.agent.max_steps == 40  # agent.max_turns: model calls per user turn


@pytest.mark.parametrize(
    ("value", "steps"),
    [("40", 40), ("12.9", 12), ("0", TURN_LIMIT_UNLIMITED), ("-1", TURN_LIMIT_UNLIMITED),
     ("unlimited", TURN_LIMIT_UNLIMITED), ("Infinity", TURN_LIMIT_UNLIMITED), ("'∞'", TURN_LIMIT_UNLIMITED),
     (".inf", TURN_LIMIT_UNLIMITED), ("none", TURN_LIMIT_UNLIMITED), ("'null'", TURN_LIMIT_UNLIMITED),
     ("null", 30), ("true", 30), ("soon", 30)],
)
def test_max_turns_is_the_turn_limit(value: str, steps: int) -> None:
    config = parse_config(f"agent:\n  max_turns: {value}\n")
    assert config.agent.max_steps == steps
    bad = value in ("true", "soon")
    assert bool(config.notices) == bad  # a value that is no limit keeps the default, and says so
    if bad:
        assert "agent.max_turns" in config.notices[0] and "30" in config.notices[0]


def test_max_steps_wins_and_root_max_turns_is_read() -> None:
    both = parse_config("agent:\n  max_steps: 7\n  max_turns: 90\n")
    assert both.agent.max_steps == 7 and "agent.max_turns" in both.ignored_keys
    assert parse_config("max_turns: 15\n").agent.max_steps == 15  # Hermes Agent's older place
    assert parse_config("max_turns: 15\nagent:\n  max_turns: 9\n").agent.max_steps == 9
    assert turn_limit([1]) is None and turn_limit(False) is None and turn_limit(float("nan")) is None


def test_zero_or_negative_kernel_cap_means_one() -> None:
    for value in ("0", "-3", "1"):
        assert parse_config(f"code_execution:\n  max_session_kernels: {value}\n").code_execution.max_session_kernels == 1


def test_unknown_keys_in_our_sections_get_a_notice_with_a_suggestion() -> None:
    config = parse_config(fixture_text(**{
        "  timeout: 120 ": "  timout: 120 ",
        "  backend: local\n": "  backend: local\n  env_passtrough: [X]\n",
        "agent:\n": "agent:\n  max_stpes: 3\n",
    }) + "code_executon:\n  timeout: 5\nmy_own_notes: {}\n")
    notices = "\n".join(config.notices)
    assert "unknown config key code_execution.timout (ignored): did you mean timeout?" in notices
    assert "terminal.env_passtrough (ignored): did you mean env_passthrough?" in notices
    assert "agent.max_stpes (ignored): did you mean max_steps?" in notices
    assert "unknown config section code_executon (ignored): did you mean code_execution?" in notices
    assert "my_own_notes" not in notices and "my_own_notes" in config.ignored_keys  # not near any of ours
    assert config.code_execution.timeout == 300  # the misspelt key is not read
    assert len(config.notices) == 4


def test_renamed_modes_give_notices() -> None:
    smart = parse_config("approvals:\n  mode: smart\n  deny: ['git push *']\n")  # built since issue 37: no notice
    assert smart.approvals.mode == "smart" and smart.approvals.deny == ["git push *"] and smart.notices == []
    assert parse_config("approvals:\n  mode: Dangerous\n").notices == [
        "approvals.mode dangerous is now called manual (flagged commands ask); it reads the same"]
    camel = parse_config("providers:\n  lab:\n    baseUrl: http://127.0.0.1:9/v1\n")
    assert camel.notices and "providers.lab.baseUrl" in camel.notices[0] and "write base_url" in camel.notices[0]


def test_notices_and_ignored_keys_are_never_dumped() -> None:
    config = parse_config(fixture_text(**{"  timeout: 120 ": "  timout: 120 "}))
    dumped = msgspec.to_builtins(config)
    assert config.notices and "notices" not in dumped and "ignored_keys" not in dumped


# -- the honoured keys on a real runtime ------------------------------------------------------


async def test_timeouts_and_tool_call_limit_take_effect(runtime_factory, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("x\n")
    rt = await runtime_factory(fixture_text(**{
        "  timeout: 120 ": "  timeout: 1 ", "  timeout: 45 ": "  timeout: 1 ", "max_tool_calls: 25": "max_tool_calls: 2"}))
    slow = await rt.execute_code("import time\ntime.sleep(30)\n", session="t")
    assert slow.status == "timeout" and "Script timed out after 1s" in (slow.error or "")
    calls = await rt.execute_code("from hermes_tools import read_file\nprint([('error' in read_file('f.txt')) "
                                  "for _ in range(3)])\n", session="t", cwd=tmp_path)
    assert calls.output.strip() == "[False, False, True]" and "limit" in (calls.warning or "").lower()
    command = await rt.terminal("sleep 20", cwd=tmp_path)
    assert "timed out after 1s" in str(command["error"])


async def test_env_passthrough_lets_the_named_variables_in(runtime_factory) -> None:
    env = {**os.environ, "GITHUB_TOKEN": "gh-fixture", "OTHER_TOKEN": "never-seen"}
    rt = await runtime_factory(fixture_text(), host_env=env)
    result = await rt.execute_code("import os\nprint(os.environ.get('GITHUB_TOKEN'), os.environ.get('OTHER_TOKEN'))\n")
    assert result.output == "gh-fixture None\n"


async def test_manual_mode_asks_only_for_flagged_commands_and_the_allowlist_is_honoured(
        runtime_factory, tmp_path: Path) -> None:
    approver = Approver("deny")
    rt = await runtime_factory(fixture_text(), approver=approver)
    (tmp_path / "build").mkdir()
    (tmp_path / "dist").mkdir()
    plain = await rt.terminal("echo plain", cwd=tmp_path)
    assert plain["output"] == "plain\n" and approver.asked == []  # not flagged: runs unasked
    allowed = await rt.terminal("rm -rf build", cwd=tmp_path)  # flagged, but in command_allowlist
    assert allowed["exit_code"] == 0 and not (tmp_path / "build").exists() and approver.asked == []
    flagged = await rt.terminal("rm -rf dist", cwd=tmp_path)  # flagged and not allowed: asked, denied
    assert flagged["status"] == "blocked" and (tmp_path / "dist").exists() and len(approver.asked) == 1


async def test_the_kernel_cap_of_the_file_holds(runtime_factory, hermes_home: Path) -> None:
    rt = await runtime_factory(fixture_text())
    for session in ("a", "b", "c"):
        assert (await rt.execute_code("x = 1", session=session)).status == "success"
    assert len(rt.kernels()) == 2


async def test_a_kernel_cap_of_zero_keeps_one_kernel(runtime_factory) -> None:
    rt = await runtime_factory(fixture_text(**{"max_session_kernels: 2": "max_session_kernels: 0"}))
    first = await rt.execute_code("x = 1", session="a")
    [evicted] = [k.pid for k in rt.kernels()]
    second = await rt.execute_code("y = 2", session="b")
    assert first.status == second.status == "success"
    assert [k.session for k in rt.kernels()] == ["b"]  # one kernel, not none and not unlimited
    for _ in range(100):  # the evicted one's process ends in the background
        if not pid_running(evicted):
            break
        await asyncio.sleep(0.05)
    assert not pid_running(evicted)


async def test_max_turns_bounds_a_turn_of_the_conversation(hermes_home: Path, tmp_path: Path) -> None:
    call = {"tool_calls": [{"name": "execute_code", "arguments": {"code": "pass"}}]}
    with FakeModelServer([call] * 5) as server:
        config = parse_config(fixture_text(**{
            "max_turns: 40": "max_turns: 2", "\n  provider: openrouter\n": "\n  provider: custom\n",
            'base_url: "https://openrouter.ai/api/v1"': f'base_url: "{server.url}"'}))
        settings = resolve_provider(config, hermes_home, KEYS)
        workspace = Workspace(config, home=hermes_home, cwd=str(tmp_path), ask=Approver(), settings=settings)
        ended: list[str] = []
        try:
            opened = await workspace.open("s1", lambda e: ended.append(e.status) if isinstance(e, TurnEnded) else None)
            await opened.agent.submit("go on forever", "user")
            for _ in range(600):
                if ended:
                    break
                await asyncio.sleep(0.05)
        finally:
            await workspace.aclose()
    assert ended == ["stopped"] and len(server.requests) == 2


# -- approvals.deny ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["off", "manual", "strict"])
async def test_approvals_deny_refuses_in_every_mode_without_asking(runtime_factory, tmp_path: Path, mode: str) -> None:
    approver = Approver("once")
    rt = await runtime_factory(f"approvals:\n  mode: {mode}\n  deny: ['git push *', 'TOUCH DENIED*']\n"
                               "command_allowlist: ['touch denied-file']\n", approver=approver)
    for command in ("touch denied-file", "true && touch  'denied-file'", "echo x > /dev/null; touch denied-file"):
        result = await rt.terminal(command, cwd=tmp_path)
        assert result["status"] == "blocked", command
        assert result["error"] == "BLOCKED: refused: this command matches approvals.deny 'TOUCH DENIED*' in " \
                                  "config.yaml; it is never run"
    assert not (tmp_path / "denied-file").exists() and approver.asked == []
    for command in ("git -C . push origin main", "env git push origin main", "/usr/bin/git push origin main",
                    "git push", "bash -c 'git push origin main'", "sudo -u root git --no-pager push", "GIT PUSH x"):
        result = await rt.terminal(command, cwd=tmp_path)
        assert result["status"] == "blocked" and "approvals.deny 'git push *'" in result["error"], command
    assert approver.asked == []
    allowed = await rt.terminal("touch other-file", cwd=tmp_path)
    assert allowed["exit_code"] == 0 and (tmp_path / "other-file").exists()


# -- terminal.backend other than local ----------------------------------------------------------


async def test_a_sandbox_backend_refuses_scripts_and_commands(runtime_factory, hermes_home: Path, tmp_path: Path) -> None:
    approver = Approver("once")
    rt = await runtime_factory(fixture_text(**{"  backend: local\n": "  backend: modal\n"}), approver=approver)
    assert rt.config.notices == [REFUSAL]
    marker = tmp_path / "ran"
    result = await rt.execute_code(f"open({str(marker)!r}, 'w').close()", session="s")
    assert result.status == "error" and result.error == REFUSAL and result.tool_calls_made == 0
    assert result.kernel.id is None and rt.kernels() == [] and kernel_pids(hermes_home) == []
    command = await rt.terminal(f"touch {marker}", cwd=tmp_path, typed=True)
    assert command == {"output": "", "exit_code": -1, "status": "blocked", "error": f"BLOCKED: {REFUSAL}"}
    model_call = await rt.call_tool("terminal", {"command": f"touch {marker}"}, cwd=tmp_path)
    assert model_call["status"] == "blocked"
    written = await rt.call_tool("write_file", {"path": str(marker), "content": "x"}, cwd=tmp_path)
    read = await rt.call_tool("read_file", {"path": str(hermes_home / "config.yaml")}, cwd=tmp_path)
    assert written == read == {"error": f"BLOCKED: {REFUSAL}"}  # the file tools work on this machine too
    assert not marker.exists() and approver.asked == []  # nothing ran, nobody was asked
    # Back to local (the user accepted it): the same runtime runs again.
    await rt.reload(parse_config(fixture_text()))
    assert (await rt.execute_code("print('local')", session="s")).output == "local\n"


@pytest.mark.parametrize("backend", ["Modal", "singularity", "daytona", "podman-remote"])
def test_every_backend_but_local_docker_and_ssh_is_refused(backend: str) -> None:
    config = parse_config(f"terminal:\n  backend: {backend}\n")
    assert config.notices == [REFUSAL.replace("modal", backend.lower())]
    assert parse_config("terminal:\n  backend: ssh\n").notices == [
        "terminal.backend is ssh but terminal.ssh_host is not set: name the host scripts and commands run on"]
    assert parse_config("terminal:\n  backend: docker\n").notices == []
    assert parse_config("terminal:\n  backend: LOCAL\n").notices == []
    assert parse_config("terminal:\n  backend:\n").terminal.backend == "local"


def test_exec_refuses_a_sandbox_backend_with_one_line(hermes_home: Path, tmp_path: Path) -> None:
    (hermes_home / "config.yaml").write_text(fixture_text(**{
        "  backend: local\n": "  backend: modal\n", "  timeout: 120 ": "  timout: 120 "}))
    script = tmp_path / "a.py"
    script.write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\n")
    done = run_cli("exec", str(script))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "hermes-tui: notice: unknown config key code_execution.timout (ignored): did you mean timeout?",
        f"hermes-tui: {REFUSAL}"]
    assert not (tmp_path / "ran").exists()


def test_exec_prints_each_notice_once_and_runs(hermes_home: Path, tmp_path: Path) -> None:
    (hermes_home / "config.yaml").write_text("approvals:\n  mode: smart\ncode_execution:\n  timout: 3\n")
    done = run_cli("exec", "-", stdin="print('ran')\n")
    assert done.returncode == 0 and done.stdout == "ran\n"
    lines = done.stderr.splitlines()
    assert lines == ["hermes-tui: notice: unknown config key code_execution.timout (ignored): did you mean timeout?",
                     "hermes-tui: approvals.mode is smart but the approval judge cannot be used (auxiliary.approval."
                     "provider is auto but no main model is configured: set model.provider and model.default, or "
                     "auxiliary.approval.provider and .model): flagged commands ask you, as in manual"]


# -- doctor -----------------------------------------------------------------------------------


def test_doctor_on_the_hermes_example(home_with_fixture: Path) -> None:
    done = run_cli("doctor", "--offline", env=KEYS)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert f"config     {home_with_fixture / 'config.yaml'}" in out
    assert "\nnotice " not in out and "\nproblem " not in out and out.rstrip().endswith("No problems found.")
    assert "openrouter · anthropic/claude-sonnet-4 at https://openrouter.ai/api/v1" in out
    assert "key: OPENROUTER_API_KEY" in out
    assert "approvals  manual: flagged commands ask" in out and "; 1 command_allowlist rule\n" in out
    assert "terminal   local: commands run on this machine, 45s each" in out
    assert "at most 2 kernels," in out and "40 model calls per turn" in out
    assert "--verbose lists them" in out and "terminal.home_mode" not in out
    for secret in KEYS.values():
        assert secret not in out and secret not in done.stderr
    verbose = run_cli("doctor", "--offline", "--verbose", env=KEYS)
    assert verbose.returncode == 0
    for key in ("terminal.home_mode", "terminal.lifetime_seconds", "approvals.cron_mode", "agent.reasoning_effort",
                "memory", "display", "delegation"):
        assert f"\n             {key}\n" in verbose.stdout
    report = json.loads(run_cli("doctor", "--offline", "--json", env=KEYS).stdout)
    assert report["notices"] == [] and report["problems"] == []
    assert report["model"]["provider"] == "openrouter" and "fixture-secret" not in json.dumps(report)
    assert "approvals.cron_mode" in report["ignored"] and report["limits"]["max_steps"] == 40


def test_doctor_without_a_config_says_defaults(hermes_home: Path) -> None:
    done = run_cli("doctor")
    assert done.returncode == 0
    assert f"none: defaults ({hermes_home / 'config.yaml'} does not exist)" in done.stdout
    assert "no model: typed input runs as Python" in done.stdout


def test_doctor_reports_notices_and_problems(hermes_home: Path) -> None:
    config = hermes_home / "config.yaml"
    config.write_text("code_execution:\n  timout: 3\nterminal:\n  backend: modal\n")
    done = run_cli("doctor")
    assert done.returncode == 1
    assert "notice     unknown config key code_execution.timout (ignored): did you mean timeout?" in done.stdout
    assert f"problem    {REFUSAL}" in done.stdout and done.stdout.count(REFUSAL) == 1
    config.write_text("model:\n  provider: no-such-provider\n  default: m\n")
    unknown = run_cli("doctor")
    assert unknown.returncode == 1 and "problem    model: " in unknown.stdout and "no-such-provider" in unknown.stdout
    config.write_text("code_execution:\n  timeout: soon\n")
    broken = run_cli("doctor", "--offline")
    assert broken.returncode == 1 and broken.stderr == ""  # doctor reports it as its failed config check
    assert "✗ config" in broken.stdout and "code_execution.timeout = 'soon'" in broken.stdout
    config.write_text("code_execution:\n  \"time\\x1b[2Kout\": 3\n")  # a key that tries to move the cursor
    hostile = run_cli("doctor")
    assert "\x1b" not in hostile.stdout and "\\x1b" in hostile.stdout


def test_doctor_says_which_provider_auto_chose_and_why_and_what_allows_nothing(hermes_home: Path) -> None:
    (hermes_home / ".env").write_text("DEEPSEEK_API_KEY=sk-deep-SECRET\n")
    (hermes_home / "config.yaml").write_text(
        "model:\n  provider: auto\n  default: deepseek-chat\nfallback_providers:\n"
        "  - provider: zai\n    model: glm-4.6\n  - provider: anthropic\n    model: claude\n    key_env: NOPE_UNSET\n"
        "approvals:\n  deny: ['git push *']\ncommand_allowlist: ['recursive delete', 'fork bomb']\n")
    done = run_cli("doctor", "--offline")  # deepseek's endpoint is on the internet: not asked
    out = done.stdout
    assert done.returncode == 0, out
    assert "model      deepseek · deepseek-chat at https://api.deepseek.com/v1" in out
    assert f"why: auto: DEEPSEEK_API_KEY in {hermes_home / '.env'}" in out
    assert "fallback   zai · glm-4.6 at https://api.z.ai/api/paas/v4; key: GLM_API_KEY or ZAI_API_KEY" in out
    assert "fallback_providers[1].key_env names NOPE_UNSET, which is not set" in out
    assert "approvals.deny refuses 'git push *' in every mode" in out
    assert "command_allowlist 'fork bomb' is a Hermes Agent pattern name with no equivalent here" in out
    assert "sk-deep-SECRET" not in out


# -- the app ----------------------------------------------------------------------------------


async def test_the_app_starts_with_the_hermes_example_and_shows_no_error(home_with_fixture: Path,
                                                                         tmp_path: Path) -> None:
    from hermes_tui.tui.app import HermesApp

    app = HermesApp(load_config(), cwd=str(tmp_path), home=home_with_fixture, host_env={**os.environ, **KEYS})
    async with app.run_test(size=(160, 40)) as pilot:  # room for the model's whole label beside the sandbox's
        await pilot.pause(0.5)
        assert app.settings is not None and app.settings.name == "openrouter"
        assert not app.query(".note.error") and not app.query(".note.warning")
        assert "openrouter" in str(app.query_one("#topbar").render())
        assert not app._notifications


async def test_the_app_says_the_notices_and_the_models_choice_once(hermes_home: Path, tmp_path: Path) -> None:
    """Shown when the first session opens (the conversation exists then), once each."""
    from hermes_tui.tui.app import HermesApp

    config = parse_config("model:\n  default: m\n  provider: auto\ncode_execution:\n  timout: 3\n")
    for _ in range(3):  # it used to fail now and then: notes were added before the pane was built
        app = HermesApp(config, cwd=str(tmp_path), home=hermes_home, host_env={"PATH": os.environ["PATH"]})
        async with app.run_test(size=(140, 40)) as pilot:
            for _ in range(100):
                if len(app.query(".note")) >= 3:
                    break
                await pilot.pause(0.05)
            notes = [str(n.render()) for n in app.query(".note")]
            assert notes == [
                "unknown config key code_execution.timout (ignored): did you mean timeout?",
                "Model: openrouter · m (auto: no provider key found; OpenRouter is Hermes Agent's default).",
                f"No API key for openrouter: OPENROUTER_API_KEY (not set: add it to {hermes_home / '.env'} or the "
                "environment, or set providers.openrouter.base_url with its api_key / key_env / key_cmd)."]
            assert "(auto)" in str(app.query_one("#topbar").render())


async def test_the_app_shows_the_refusal_once_and_runs_nothing(hermes_home: Path, tmp_path: Path) -> None:
    from hermes_tui.tui.app import HermesApp
    from hermes_tui.tui.widgets.conversation import PromptInput

    config = parse_config("terminal:\n  backend: daytona\ncode_execution:\n  timout: 3\n")
    app = HermesApp(config, cwd=str(tmp_path), home=hermes_home)
    async with app.run_test(size=(140, 40)) as pilot:
        for _ in range(100):  # the notes come when the first session opens, later on a loaded machine
            if len(app.query(".note.warning")) >= 2:
                break
            await pilot.pause(0.05)
        await pilot.pause(0.2)  # and nothing more comes after them
        notes = [str(n.render()) for n in app.query(".note.warning")]
        assert notes == ["unknown config key code_execution.timout (ignored): did you mean timeout?",
                         REFUSAL.replace("modal", "daytona")]
        prompt = app.query_one(PromptInput)
        prompt.focus()
        prompt.insert(f"!touch {tmp_path / 'ran'}")
        await pilot.press("enter")
        for _ in range(100):
            if any("terminal.backend is daytona" in str(n.render()) for n in app.query(".note.error")) \
                    or len(app.query(".note")) > 2:
                break
            await pilot.pause(0.05)
        await pilot.pause(0.3)
        assert not (tmp_path / "ran").exists()
        assert sum(REFUSAL.replace("modal", "daytona") == str(n.render()) for n in app.query(".note.warning")) == 1
