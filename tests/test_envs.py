"""What a kernel sees of the host's environment, and which Python runs it."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_tui.config import parse_config
from hermes_tui.runtime import Runtime
from hermes_tui.runtime.envs import HERMES_PASS, SECRET_MARKERS, build_child_env, is_secret_name

SAFE = ["PATH", "HOME", "LANG", "SHELL", "TERM", "TMPDIR", "USER", "LOGNAME", "PYTHONPATH", "VIRTUAL_ENV"]


def expected_visible(name: str, passthrough: set[str]) -> bool:
    """The rule of SPEC §3, written independently of the implementation."""
    if name in passthrough:
        return True
    if name.startswith("HERMES_"):
        return name in HERMES_PASS
    upper = name.upper()
    if any(marker in upper for marker in SECRET_MARKERS):
        return False
    return name in SAFE or name.startswith(("LC_", "XDG_", "CONDA_"))


names = st.one_of(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,24}", fullmatch=True),
    st.builds(lambda a, m, b: f"{a}{m}{b}", st.from_regex(r"[A-Z_]{0,6}", fullmatch=True),
              st.sampled_from([*SECRET_MARKERS, "key", "Token", "Auth"]), st.from_regex(r"[A-Z0-9_]{0,6}", fullmatch=True)),
    st.builds(lambda s: f"HERMES_{s}", st.from_regex(r"[A-Z_]{1,10}", fullmatch=True)),
    st.builds(lambda s: f"{s[0]}{s[1]}", st.tuples(st.sampled_from(["LC_", "XDG_", "CONDA_"]), st.from_regex(r"[A-Z_]{1,8}", fullmatch=True))),
    st.sampled_from(SAFE + sorted(HERMES_PASS)),
)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(env_names=st.lists(names, min_size=150, max_size=200, unique=True))
def test_generated_names_reach_the_kernel_only_when_allowed(env_names: list[str], tmp_path_factory) -> None:
    home = tmp_path_factory.mktemp("home")
    passthrough = set(env_names[::17])  # some names, secrets among them, allowed by exact name
    host_env = {name: f"value-of-{name}" for name in env_names}
    host_env["PATH"] = "/usr/bin:/bin"
    config = parse_config("terminal:\n  env_passthrough: " + json.dumps(sorted(passthrough)) + "\n")

    async def kernel_env() -> dict[str, str]:
        async with Runtime(config, home=home, host_env=host_env) as rt:
            result = await rt.execute_code("import os, json\nprint(json.dumps(dict(os.environ)))", session="s")
            assert result.status == "success", result.output
            return json.loads(result.output)

    seen = asyncio.run(kernel_env())
    injected = {"HERMES_HOME", "HERMES_RPC_SOCKET", "HOME", "TZ"}
    for name in host_env:
        if name in injected:
            continue
        visible = name in seen
        assert visible == expected_visible(name, passthrough), name
        if visible:
            assert seen[name] == host_env[name]
    assert set(seen) - set(host_env) <= injected | {"LC_CTYPE"}  # Python may set LC_CTYPE itself


def test_rule_examples() -> None:
    env = build_child_env(
        {"OPENAI_API_KEY": "x", "GITHUB_TOKEN": "x", "DATABASE_DSN": "x", "SLACK_WEBHOOK_URL": "x",
         "AWS_SECRET_ACCESS_KEY": "x", "my_password": "x", "LC_ALL": "C", "XDG_CONFIG_HOME": "/c",
         "HERMES_HOME": "/h", "HERMES_DEBUG": "1", "EDITOR": "vim", "PATH": "/bin", "XDG_AUTH_THING": "x"},
        passthrough=["GITHUB_TOKEN"],
        inject={"HERMES_RPC_SOCKET": "/s"},
    )
    assert env == {"GITHUB_TOKEN": "x", "LC_ALL": "C", "XDG_CONFIG_HOME": "/c", "HERMES_HOME": "/h",
                   "PATH": "/bin", "HERMES_RPC_SOCKET": "/s"}
    assert is_secret_name("x_apikey") and not is_secret_name("EDITOR")


def test_dropped_hermes_names_are_logged_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("DEBUG", logger="hermes_tui.runtime.envs"):
        build_child_env({"HERMES_A": "1", "HERMES_B": "2", "HERMES_HOME": "/h"})
    assert "execute_code: dropped 2 non-allowlisted HERMES_* var(s)" in caplog.text


SKILL = """---
name: github
description: talk to GitHub
required_environment_variables:
  - name: GITHUB_TOKEN
    prompt: a personal access token
  - SKILL_PLAIN_NAME
---
# GitHub
"""


async def test_passthrough_from_a_skill_and_stale_kernels(hermes_home: Path) -> None:
    host_env = {"PATH": "/usr/bin:/bin", "GITHUB_TOKEN": "ghp_x", "SKILL_PLAIN_NAME": "plain", "OTHER_TOKEN": "no"}
    async with Runtime(home=hermes_home, host_env=host_env) as rt:
        code = "import os\nprint(os.environ.get('GITHUB_TOKEN'), os.environ.get('SKILL_PLAIN_NAME'), os.environ.get('OTHER_TOKEN'))"
        before = await rt.execute_code(code, session="old")
        assert before.output == "None None None\n"
        assert rt.kernels()[0].stale_env is False
        skill = hermes_home / "skills" / "github"
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text(SKILL)
        await rt.reload()
        (info,) = rt.kernels()
        assert info.stale_env is True  # started before the names were allowed
        still = await rt.execute_code(code, session="old")
        assert still.output == "None None None\n"  # frozen at spawn
        fresh = await rt.execute_code(code, session="new")
        assert fresh.output == "ghp_x plain None\n"
        reset = await rt.execute_code(code, session="old", reset=True)
        assert reset.output == "ghp_x plain None\n"
        assert not any(k.stale_env for k in rt.kernels())


async def test_passthrough_from_config_applies_after_reload(hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text("terminal:\n  env_passthrough: []\n")
    from hermes_tui.config import load_config

    async with Runtime(load_config(), home=hermes_home, host_env={"PATH": "/bin", "MY_API_KEY": "k"}) as rt:
        code = "import os\nprint(os.environ.get('MY_API_KEY'))"
        assert (await rt.execute_code(code, session="a")).output == "None\n"
        (hermes_home / "config.yaml").write_text("terminal:\n  env_passthrough: [MY_API_KEY]\n")
        await rt.reload()
        assert rt.kernels()[0].stale_env
        assert (await rt.execute_code(code, session="b")).output == "k\n"


@pytest.fixture(scope="module")
def second_venv(tmp_path_factory) -> Path:
    venv = tmp_path_factory.mktemp("venvs") / "project-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    return venv


async def test_project_mode_uses_the_active_venv(second_venv: Path, hermes_home: Path, tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "VIRTUAL_ENV": str(second_venv)}
    async with Runtime(home=hermes_home, host_env=env) as rt:
        result = await rt.execute_code("import sys\nprint(sys.prefix)\nimport hermes_tools", session="s", cwd=tmp_path)
        assert result.status == "success", result.output
        assert result.output == f"{second_venv}\n" and result.warning is None
        assert rt.kernels()[0].interpreter == str(second_venv / "bin" / "python")
        strict = await rt.execute_code("import sys\nprint(sys.executable)", session="s", mode="strict")
        assert strict.output == f"{sys.executable}\n"


async def test_broken_virtual_env_falls_back_with_a_warning(hermes_home: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken-venv"
    (broken / "bin").mkdir(parents=True)
    (broken / "bin" / "python").write_text("#!/bin/sh\nexit 1\n")
    (broken / "bin" / "python").chmod(0o755)
    async with Runtime(home=hermes_home, host_env={"PATH": "/bin", "VIRTUAL_ENV": str(broken)}) as rt:
        first = await rt.execute_code("import sys\nprint(sys.executable)", session="s")
        assert first.output == f"{sys.executable}\n"
        assert f"VIRTUAL_ENV={broken}" in first.warning and "does not run" in first.warning
        second = await rt.execute_code("print(1)", session="s")
        assert second.warning is None  # said once, when the kernel started
    async with Runtime(home=hermes_home, host_env={"PATH": "/bin", "VIRTUAL_ENV": str(tmp_path / "gone")}) as rt:
        result = await rt.execute_code("print(1)", session="s")
        assert result.status == "success" and "does not exist" in result.warning
