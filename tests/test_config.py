"""config.yaml: defaults, Hermes Agent's keys, unknown keys, and one-line errors."""

from __future__ import annotations

import subprocess
import time
import sys
from pathlib import Path

import pytest

from hermes_tui.config import ConfigError, load_config, parse_config


def test_missing_file_gives_spec_defaults(hermes_home: Path) -> None:
    config = load_config()
    assert config.code_execution.mode == "project"
    assert config.code_execution.timeout == 300
    assert config.code_execution.max_tool_calls == 50
    assert config.code_execution.kernel_idle_timeout == 1800
    assert config.code_execution.max_session_kernels == 4
    assert config.terminal.env_passthrough == []
    assert config.terminal.timeout == 180
    assert config.approvals.mode == "manual"
    assert config.approvals.timeout == 60
    assert config.command_allowlist == []
    assert config.model.provider is None


def test_reads_hermes_home_config_and_keeps_unknown_keys(hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text(
        "# Hermes Agent's own file\n"
        "model:\n  default: anthropic/claude-sonnet-4\n  provider: openrouter\n"
        "toolsets: [web, terminal]\n"
        "terminal:\n  backend: local\n  env_passthrough: [GITHUB_TOKEN]\n"
        "code_execution:\n  timeout: 12.5\n  max_session_kernels: 2\n"
        "command_allowlist:\n  - git status\n"
    )
    config = load_config()
    assert config.source == hermes_home / "config.yaml"
    assert config.model.default == "anthropic/claude-sonnet-4"
    assert config.code_execution.timeout == 12.5
    assert config.code_execution.max_session_kernels == 2
    assert config.terminal.env_passthrough == ["GITHUB_TOKEN"]
    assert config.command_allowlist == ["git status"]
    # Unknown keys are kept (the file is shared) and ignored.
    assert config.extra["toolsets"] == ["web", "terminal"]
    assert config.terminal.backend == "local"  # read: any other value refuses commands (test_hermes_config)


def test_bare_off_in_yaml_means_approvals_off() -> None:
    assert parse_config("approvals:\n  mode: off\n").approvals.mode == "off"
    # Hermes Agent's `smart` (an auxiliary model judges) is read as it is (issue 37); its
    # cron_mode is not read: approvals.unattended keeps today's pause.
    hermes = parse_config("approvals:\n  mode: smart\n  timeout: 300\n  cron_mode: deny\n")
    assert hermes.approvals.mode == "smart" and hermes.approvals.timeout == 300
    assert hermes.approvals.unattended == "pause"
    assert parse_config("approvals:\n  unattended: Approve_Safe\n").approvals.unattended == "approve-safe"
    assert parse_config("approvals:\n  mode: dangerous\n").approvals.mode == "manual"
    assert parse_config("approvals:\n  mode: Strict\n").approvals.mode == "strict"
    with pytest.raises(ConfigError, match="approvals.mode = True is not allowed"):
        parse_config("approvals:\n  mode: on\n")


def test_empty_sections_and_bare_model_name() -> None:
    config = parse_config("terminal:\ncode_execution:\ncommand_allowlist:\nmodel: hermes-4-70b\n")
    assert config.terminal.timeout == 180
    assert config.code_execution.timeout == 300
    assert config.command_allowlist == []
    assert config.model.default == "hermes-4-70b"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("code_execution:\n  timeout: -5\n", "code_execution.timeout = -5 is not allowed: must be greater than 0"),
        ("code_execution:\n  mode: fast\n", "code_execution.mode = 'fast' is not allowed: must be 'project' or 'strict'"),
        ("code_execution:\n  max_session_kernels: two\n", "code_execution.max_session_kernels = 'two' is not allowed"),
        ("approvals:\n  mode: sometimes\n", "approvals.mode = 'sometimes' is not allowed: must be 'strict', 'manual', 'smart' or 'off'"),
        ("terminal:\n  env_passthrough: GITHUB_TOKEN\n", "terminal.env_passthrough = 'GITHUB_TOKEN' is not allowed: must be a list"),
        ("code_execution: 5\n", "code_execution = 5 is not allowed: must be a mapping of keys"),
        ("- a\n- b\n", "the top level must be a mapping of keys, got a list"),
        ("code_execution: [\n", "invalid YAML at line 2"),
    ],
)
def test_bad_values_give_one_clear_line(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, source=Path("/x/config.yaml"))
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("/x/config.yaml: ")
    assert expected in message


def test_cli_exits_2_with_one_line_for_a_bad_value(hermes_home: Path, tmp_path: Path) -> None:
    (hermes_home / "config.yaml").write_text("code_execution:\n  timeout: soon\n")
    script = tmp_path / "a.py"
    script.write_text("print('never runs')\n")
    # (The full-screen app opens on a broken file instead, refusing what the broken part decides:
    # tests/attacks/test_broken_config.py.)
    for argv in (["exec", str(script)], ["approvals", "rules"]):
        done = subprocess.run(
            [sys.executable, "-m", "hermes_tui", *argv], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 2
        assert done.stdout == ""
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        assert "code_execution.timeout = 'soon' is not allowed" in lines[0]
        assert lines[0].endswith("`hermes-tui doctor` checks the file")
        assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("providers:\n  lab:\n    base_url: 5\n", "providers.lab.base_url = 5 is not allowed: must be text"),
        ("providers:\n  lab:\n    pricing: {input_per_mtok: 1}\n",
         "providers.lab.pricing.output_per_mtok is missing: it is required"),
        ("fallback_providers:\n  - {provider: a, model: b}\n  - {provider: c, model: d, base_url: [x]}\n",
         "fallback_providers.1.base_url = a list is not allowed: must be text"),
        ("agent:\n  subagents:\n    max_depth: 9\n", "agent.subagents.max_depth = 9 is not allowed: must be less than or equal to 3"),
        ("terminal:\n  timeout: .inf\n", "terminal.timeout = inf is not allowed: must be a finite number"),
        ("model:\n  tool_format: xml\n", "model.tool_format = 'xml' is not allowed: must be 'native' or 'hermes'"),
        ("ui:\n  notify: sometimes\n", "ui.notify = 'sometimes' is not allowed: must be true or false"),
        ("cache:\n  retention: soon\n", "cache.retention = 'soon' is not allowed: must be 'soon' is not a duration"),
        ("store:\n  password_env: 'A B'\n", "store.password_env = 'A B' is not allowed: must be the name of an environment"),
        ("model:\n  api_key: [1, 2]\n", "model.api_key = (a list, not shown) is not allowed: must be text"),
    ],
)
def test_nested_and_checked_values_name_their_whole_key_path(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(text)
    assert expected in str(caught.value) and "\n" not in str(caught.value)


def test_every_wrong_section_is_named_at_once() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config("code_execution:\n  timeout: -1\napprovals:\n  mode: maybe\nweb: 3\n")
    message = str(caught.value)
    assert "code_execution.timeout = -1" in message and "approvals.mode = 'maybe'" in message
    assert "web = 3 is not allowed: must be a mapping of keys" in message


def test_the_repr_of_a_config_shows_no_secret() -> None:
    config = parse_config(
        "model: {api_key: sk-SECRET, default: m, extra_headers: {X-Key: h-SECRET}}\n"
        "providers: {lab: {api_key: p-SECRET, base_url: 'http://127.0.0.1:9/v1', extra_headers: {A: e-SECRET}}}\n"
        "store: {url: 'postgresql://u:db-SECRET@h/d'}\n"
        "fallback_providers: [{provider: a, model: b, api_key: f-SECRET}]\n")
    assert config.model.api_key == "sk-SECRET" and config.providers["lab"].extra_headers == {"A": "e-SECRET"}
    assert "SECRET" not in repr(config) and "m" in repr(config.model)


def test_every_wrong_value_of_one_section_is_named() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config("code_execution: {timeout: -5, max_tool_calls: x}\napprovals: {mode: sometimes, timeout: -1}\n")
    message = str(caught.value)
    for part in ("code_execution.timeout = -5", "code_execution.max_tool_calls = 'x'", "approvals.mode = 'sometimes'",
                 "approvals.timeout = -1"):
        assert part in message


@pytest.mark.parametrize("value", [".nan", "nan", "1e400", ".inf", "-.inf"])
def test_numbers_that_are_not_finite_say_so(value: str) -> None:
    with pytest.raises(ConfigError, match=r"code_execution.timeout = .* is not allowed: must be a finite number"):
        parse_config(f"code_execution: {{timeout: {value}}}\n")


def test_a_deadline_beyond_the_clock_is_refused() -> None:
    # 1e12 seconds broke every script (a datetime past year 9999); at most about 31 years.
    with pytest.raises(ConfigError, match="kernel_idle_timeout = 1000000000000.0 is not allowed: must be less than or equal to 1000000000"):
        parse_config("code_execution: {kernel_idle_timeout: 1.0e+12}\n")
    assert parse_config("code_execution: {kernel_idle_timeout: 86400}\n").code_execution.kernel_idle_timeout == 86400


def test_keys_that_are_not_names_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"1 = 2 is not allowed: must be under a name \(text\)"):
        parse_config("1: 2\n")
    with pytest.raises(ConfigError, match=r"terminal.7 = 'x' is not allowed: must be under a name"):
        parse_config("terminal: {7: x}\n")


BOMB = "".join(f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['lol'] * 9)}]\n"
               for prev, name in zip([None, *"abcdefgh"], "abcdefghi"))


def test_a_yaml_alias_bomb_is_read_at_once() -> None:
    # Nine levels of aliases: a billion strings if anything walked them whole (it hung here).
    started = time.monotonic()
    config = parse_config(BOMB + "agent: {max_turns: *i}\nmemory: *i\n")
    assert config.agent.max_steps == 30 and "is not a number of model calls" in config.notices[0]
    with pytest.raises(ConfigError, match="fallback_providers.0 = a list is not allowed"):
        parse_config(BOMB + "fallback_model: *i\nterminal: {backend: *i}\n")
    assert time.monotonic() - started < 5
