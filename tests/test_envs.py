"""What a kernel sees of the host's environment, and which Python runs it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_tui.config import parse_config
from hermes_tui.runtime import Runtime
from hermes_tui.runtime.envs import build_child_env, is_safe_name, is_secret_name, redact_url_credentials

# The oracle: SPEC §3 written out here, never read from the implementation's own lists (a
# name removed from them must fail these tests, not move the expectation along with it).
SAFE = ["PATH", "HOME", "LANG", "LANGUAGE", "SHELL", "TERM", "TMPDIR", "USER", "LOGNAME", "PYTHONPATH", "VIRTUAL_ENV"]
SAFE_PREFIXES = ("LC_", "XDG_", "CONDA_")
MARKERS = ["KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "PASSWD", "AUTH", "APIKEY", "BEARER", "CREDS", "DSN",
           "WEBHOOK"]
HERMES_NAMES = ["HERMES_HOME", "HERMES_PROFILE", "HERMES_CONFIG", "HERMES_ENV"]


def expected_visible(name: str, passthrough: set[str]) -> bool:
    """The rule of SPEC §3, written independently of the implementation."""
    if name in passthrough:
        return True
    if name.startswith("HERMES_"):
        return name in HERMES_NAMES
    upper = name.upper()
    if any(marker in upper for marker in MARKERS):
        return False
    return name in SAFE or name.startswith(SAFE_PREFIXES)


names = st.one_of(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,24}", fullmatch=True),
    st.builds(lambda a, m, b: f"{a}{m}{b}", st.from_regex(r"[A-Z_]{0,6}", fullmatch=True),
              st.sampled_from([*MARKERS, "key", "Token", "Auth"]), st.from_regex(r"[A-Z0-9_]{0,6}", fullmatch=True)),
    st.builds(lambda s: f"HERMES_{s}", st.from_regex(r"[A-Z_]{1,10}", fullmatch=True)),
    st.builds(lambda s: f"{s[0]}{s[1]}", st.tuples(st.sampled_from(["LC_", "XDG_", "CONDA_"]), st.from_regex(r"[A-Z_]{1,8}", fullmatch=True))),
    st.sampled_from(SAFE + HERMES_NAMES),
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
    # the host's own, and the sandbox's (its temp dir, the tool channel's descriptor, its tier; bwrap sets PWD)
    injected = {"HERMES_HOME", "HERMES_RPC_SOCKET", "HOME", "TZ", "TMPDIR", "HERMES_RPC_FD", "HERMES_SANDBOX", "PWD"}
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


# Each marker inside a name that would pass without it (a safe prefix), in several cases; the
# twin is the same name with the marker misspelled, and passes.
MARKED = [
    ("XDG_SESSION_TOKEN", "XDG_SESSION_TOKN"), ("CONDA_API_KEY", "CONDA_API_KY"), ("LC_SECRET", "LC_SECRT"),
    ("XDG_DB_PASSWORD", "XDG_DB_PASWORD"), ("CONDA_CREDENTIAL_HELPER", "CONDA_CREDENTAL_HELPER"),
    ("LC_PASSWD", "LC_PASWD"), ("XDG_AUTH_SOCK", "XDG_AUT_SOCK"), ("CONDA_APIKEY", "CONDA_APIKY"),
    ("LC_BEARER", "LC_BEARR"), ("XDG_CREDS", "XDG_CREDZ"), ("CONDA_DSN", "CONDA_DZN"),
    ("XDG_WEBHOOK_URL", "XDG_WEBHOK_URL"), ("XDG_Session_Token", "XDG_Session_Tokn"), ("LC_apikey", "LC_apiky"),
    ("XDG_myKeyring", "XDG_myKyring"), ("CONDA_OAUTH", "CONDA_OAUT"), ("LC_XTOKENX", "LC_XTOKNX"),
]


@pytest.mark.parametrize(("name", "twin"), MARKED)
def test_every_marker_drops_a_name_that_would_otherwise_pass(name: str, twin: str) -> None:
    assert build_child_env({name: "v", twin: "ok", "PATH": "/bin"}) == {twin: "ok", "PATH": "/bin"}
    assert is_secret_name(name) and not is_safe_name(name)
    assert not is_secret_name(twin) and is_safe_name(twin)
    assert build_child_env({name: "v"}, passthrough=[name]) == {name: "v"}  # named exactly: it passes


@pytest.mark.parametrize("marker", MARKERS)
def test_each_marker_alone(marker: str) -> None:
    for name in (f"LC_{marker}", f"XDG_X{marker}Y", f"CONDA_{marker.lower()}", f"{marker}_X"):
        assert build_child_env({name: "v"}) == {}, name
        assert is_secret_name(name), name


def test_safe_names_pass_exactly_and_near_misses_do_not() -> None:
    host = {name: f"v-{name}" for name in SAFE}
    near = ["PATHS", "XPATH", "path", "Home", "LANGUAGES", "HOMEDIR", "SHELLS", "MYUSER", "LC", "XDG", "CONDA",
            "MY_LC_ALL", "lc_all", "xdg_config_home", "Conda_prefix", "EDITOR", "PYTHONHOME", "VIRTUAL_ENV_PROMPT",
            "LC-ALL", "XDGCONFIG"]
    prefixed = {"LC_ALL": "C", "LC_CTYPE": "C.UTF-8", "XDG_CONFIG_HOME": "/c", "XDG_RUNTIME_DIR": "/run/u",
                "CONDA_PREFIX": "/opt/conda", "CONDA_DEFAULT_ENV": "base", "LC_": "x", "XDG_": "y"}
    env = build_child_env({**host, **{n: "no" for n in near}, **prefixed})
    assert env == {**host, **prefixed}


def test_hermes_names_pass_only_by_exact_name() -> None:
    host = {"HERMES_HOME": "/h", "HERMES_PROFILE": "work", "HERMES_CONFIG": "/h/config.yaml", "HERMES_ENV": "/h/.env",
            "HERMES_CONFIGX": "no", "HERMES_ENV_FILE": "no", "HERMES_DEBUG": "1", "HERMES_": "no", "HERMES_home": "no",
            "HERMES_API_KEY": "k", "HERMES_RPC_SOCKET": "/forged"}
    env = build_child_env(host, inject={"HERMES_RPC_SOCKET": "/real"})
    assert env == {"HERMES_HOME": "/h", "HERMES_PROFILE": "work", "HERMES_CONFIG": "/h/config.yaml",
                   "HERMES_ENV": "/h/.env", "HERMES_RPC_SOCKET": "/real"}
    assert build_child_env(host, passthrough=["HERMES_API_KEY", "HERMES_DEBUG"]) == {
        "HERMES_HOME": "/h", "HERMES_PROFILE": "work", "HERMES_CONFIG": "/h/config.yaml", "HERMES_ENV": "/h/.env",
        "HERMES_API_KEY": "k", "HERMES_DEBUG": "1"}


def test_injected_names_win_and_the_default_source_is_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    env = build_child_env({"PATH": "/host", "TZ": "host"}, inject={"PATH": "/injected", "TZ": "UTC", "HERMES_X": "1"})
    assert env == {"PATH": "/injected", "TZ": "UTC", "HERMES_X": "1"}
    for name in list(os.environ):
        monkeypatch.delenv(name)
    monkeypatch.setenv("PATH", "/from/os")
    monkeypatch.setenv("XDG_SESSION_TOKEN", "t")
    monkeypatch.setenv("EDITOR", "vim")
    assert build_child_env() == {"PATH": "/from/os"}
    assert build_child_env({}) == {}  # an empty mapping is a source, not "use os.environ"


# -- credentials in URLs -----------------------------------------------------------------------------

URLS = [
    ("https://user:pw@conda.example/t/chan", "https://***@conda.example/t/chan"),
    ("https://TOKEN123@repo.example/simple", "https://***@repo.example/simple"),
    ("http://u:p@ss@host:8080/x?q=a@b#f@g", "http://***@host:8080/x?q=a@b#f@g"),
    ("https://a:b@h1/c,https://h2/d,s3://k:s@bucket", "https://***@h1/c,https://h2/d,s3://***@bucket"),
    ("socks5h://u:p@proxy:1080", "socks5h://***@proxy:1080"),
    ("git+ssh://git@github.com/o/r.git", "git+ssh://***@github.com/o/r.git"),
    ("channels https://u:p@a.example and https://b.example", "channels https://***@a.example and https://b.example"),
]
PLAIN = ["https://conda.anaconda.org/conda-forge", "/home/me/.local/share", "file:///srv/a@b", "https://host/a@b",
         "user:pw@host", "mailto:me@example.org", "C.UTF-8", ""]


@pytest.mark.parametrize(("value", "shown"), URLS)
def test_credentials_in_urls_are_redacted_in_names_that_pass_by_default(value: str, shown: str,
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    assert redact_url_credentials(value) == shown
    host = {"CONDA_CHANNELS": value, "XDG_DATA_DIRS": value, "LC_IDENTIFICATION": value, "PYTHONPATH": value,
            "HERMES_CONFIG": value, "PIP_INDEX_URL": value, "HTTPS_PROXY": value, "http_proxy": value,
            "ALL_PROXY": value, "NO_PROXY": value, "CONDA_EXTRA": value}
    with caplog.at_level("DEBUG", logger="hermes_tui.runtime.envs"):
        env = build_child_env(host, passthrough=["CONDA_EXTRA", "http_proxy"], inject={"TZ": value})
    assert env == {"CONDA_CHANNELS": shown, "XDG_DATA_DIRS": shown, "LC_IDENTIFICATION": shown, "PYTHONPATH": shown,
                   "HERMES_CONFIG": shown, "CONDA_EXTRA": value, "http_proxy": value, "TZ": value}
    assert "redacted URL credentials in CONDA_CHANNELS, HERMES_CONFIG, LC_IDENTIFICATION, PYTHONPATH, XDG_DATA_DIRS" \
        in caplog.text
    assert "pw" not in caplog.text and "TOKEN123" not in caplog.text  # names only, never values


@pytest.mark.parametrize("value", PLAIN)
def test_values_without_url_credentials_pass_unchanged(value: str, caplog: pytest.LogCaptureFixture) -> None:
    assert redact_url_credentials(value) == value
    with caplog.at_level("DEBUG", logger="hermes_tui.runtime.envs"):
        assert build_child_env({"CONDA_CHANNELS": value, "XDG_DATA_DIRS": value}) == {
            "CONDA_CHANNELS": value, "XDG_DATA_DIRS": value}
    assert "redacted" not in caplog.text


async def test_a_kernel_sees_url_credentials_redacted(hermes_home: Path) -> None:
    host_env = {"PATH": "/usr/bin:/bin", "CONDA_CHANNELS": "https://alice:s3cret@conda.example/c",
                "HTTPS_PROXY": "http://bob:hunter2@proxy:3128"}
    async with Runtime(home=hermes_home, host_env=host_env) as rt:
        code = "import os\nprint(os.environ.get('CONDA_CHANNELS'), os.environ.get('HTTPS_PROXY'))"
        result = await rt.execute_code(code, session="s")
    assert result.output == "https://***@conda.example/c None\n"


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
