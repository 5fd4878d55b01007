"""The config keys Hermes Agent knows, by name only, and the readings of its values we share.

``config.yaml`` is Hermes Agent's file; hermes-tui reads the same one. This catalogue lets
:mod:`hermes_tui.config.notes` tell a key of a Hermes feature hermes-tui does not have (ignored
quietly, listed by ``hermes-tui doctor --verbose``) from a key nobody knows (a typo: a notice,
with a "did you mean"). It lists names only, gathered from Hermes Agent's documented example
config and its defaults (0.19.0 and later main); no Hermes code is used.

It also holds the one Hermes value reading shared with :mod:`hermes_tui.config`:
:func:`turn_limit` for ``agent.max_turns``. This module imports nothing from the project.
"""

from __future__ import annotations

import math
import sys
from typing import Any

OUR_SECTIONS = ("code_execution", "terminal", "approvals", "command_allowlist", "web", "cache", "model",
                "providers", "fallback_providers", "agent", "ui", "checkpoints", "auxiliary", "security")
"""The top-level sections hermes-tui reads: unknown keys under them get a notice."""

READ_AS_OURS = frozenset({"custom_providers", "fallback_model", "max_turns", "provider", "base_url", "api_base",
                          "context_length"})
"""Top-level keys Hermes Agent reads and hermes-tui reads into its own sections (the legacy
``custom_providers`` list, ``fallback_model``, root ``max_turns`` and root model keys)."""

TOP_LEVEL = frozenset({
    "_config_version", "database", "runtime", "attachments", "plugins", "kanban", "cron", "browser",
    "tool_loop_guardrails", "compression", "prompt_caching", "memory", "max_concurrent_sessions",
    "group_sessions_per_user", "streaming", "skills", "gateway", "platform_toolsets", "toolsets", "stt",
    "delegation", "display", "telemetry", "auth", "updates", "timeouts", "provider_routing", "openrouter",
    "worktree", "worktree_sync", "lsp", "tool_budget", "vision", "sessions",
    "dashboard", "platforms", "discord", "mcp_servers", "tts", "wake_word", "image_gen", "human_delay",
    "honcho", "model_aliases", "privacy", "hooks", "hooks_auto_accept", "secrets", "quick_commands",
    "tool_output", "bedrock", "vertex", "moa", "curator", "logging", "network", "x_search",
    "nous", "fallback",
})
"""Top-level sections of Hermes Agent features hermes-tui does not have: ignored quietly."""

IN_SECTION: dict[str, frozenset[str]] = {
    "checkpoints": frozenset({"max_total_size_mb"}),
    "code_execution": frozenset({"mode", "timeout", "max_tool_calls", "kernel_idle_timeout", "max_session_kernels"}),
    "terminal": frozenset({
        "backend", "cwd", "timeout", "env_passthrough", "home_mode", "lifetime_seconds", "sudo_password",
        "font_family", "modal_mode",
    }),
    "approvals": frozenset({
        "mode", "timeout", "cron_mode", "deny", "mcp_reload_confirm", "destructive_slash_confirm",
        "single_query_mode", "unattended_mode", "smart_policy", "denial_breaker_threshold",
    }),
    "web": frozenset(),
    "cache": frozenset(),
    "model": frozenset({
        "default", "model", "name", "provider", "base_url", "api_base", "api_key", "api", "api_mode", "key_env",
        "api_key_env", "auth_mode", "entra", "openai_runtime", "context_length", "ollama_num_ctx",
        "default_headers", "extra_headers", "streaming", "lmstudio_load_mode",
    }),
    "providers": frozenset({
        "name", "base_url", "url", "api", "api_key", "key_env", "api_key_env", "key_cmd", "api_mode", "transport",
        "model", "default_model", "models", "context_length", "rate_limit_delay", "discover_models", "extra_body",
        "extra_headers", "ssl_ca_cert", "ssl_verify", "request_timeout_seconds", "stale_timeout_seconds",
        "enabled", "session_affinity_header", "capabilities", "catalog_provider", "models_discovered",
        "max_output_tokens", "max_tokens",
        # camelCase spellings Hermes Agent accepts with a warning (see CAMEL_CASE)
        "apiKey", "baseUrl", "apiMode", "keyEnv", "apiKeyEnv", "defaultModel", "contextLength", "rateLimitDelay",
    }),
    "fallback_providers": frozenset({"provider", "model", "base_url", "api_key", "key_env", "api_key_env"}),
    "agent": frozenset({
        "max_turns", "system_prompt", "verbose", "reasoning_effort", "reasoning_overrides", "service_tier",
        "fast_auto_seconds", "personalities", "gateway_timeout", "gateway_turn_lease_timeout",
        "gateway_timeout_warning", "gateway_notify_interval", "session_stall_timeout",
        "sanitizer_heal_escalation_threshold", "restart_drain_timeout", "cron_drain_timeout",
        "restart_after_turn_timeout", "build_wait_timeout", "api_max_retries", "auto_recovery_cycles",
        "verify_on_stop", "coding_instructions", "verify_guidance", "max_verify_nudges", "budget_warning_ratio",
        "run_budget_seconds",
    }),
}
"""Keys Hermes Agent knows inside the sections hermes-tui reads (``providers`` and
``fallback_providers``: the keys of one entry). Those hermes-tui does not read are ignored quietly."""

IN_SECTION_FAMILIES: dict[str, tuple[str, ...]] = {
    "terminal": ("docker_", "ssh_", "singularity_", "modal_", "daytona_", "container_", "vercel_"),
}
"""Key families: every key starting so is a Hermes key (the sandbox backends' own settings)."""

CAMEL_CASE = {"apiKey": "api_key", "baseUrl": "base_url", "apiMode": "api_mode", "keyEnv": "key_env",
              "apiKeyEnv": "key_env", "defaultModel": "model", "contextLength": "context_length"}
"""``providers`` entry spellings Hermes Agent reads (with a warning) and hermes-tui does not: a
notice names the spelling to write instead."""

BACKENDS = ("local", "docker", "singularity", "modal", "daytona", "ssh", "vercel_sandbox")
"""``terminal.backend`` values Hermes Agent knows. hermes-tui runs only ``local``."""

TURN_LIMIT_UNLIMITED = sys.maxsize
"""``agent.max_steps`` when ``agent.max_turns`` says "no limit" (as Hermes Agent's own
``sys.maxsize``): the turn loop never reaches it."""

_UNLIMITED_WORDS = frozenset({"none", "null", "unlimited", "infinite", "infinity", "inf", "∞"})


def is_hermes_key(section: str, key: str) -> bool:
    """True when Hermes Agent knows ``key`` inside our ``section``."""
    return key in IN_SECTION.get(section, frozenset()) or key.startswith(IN_SECTION_FAMILIES.get(section, ()))


def turn_limit(value: Any) -> int | None:
    """``agent.max_turns`` read as Hermes Agent reads it: model calls per user turn.

    A whole number (floats are truncated, numeric text is read) is the limit; 0, a negative
    number, infinity and the words none / null / unlimited / infinite / infinity / inf / ∞ mean
    no limit (:data:`TURN_LIMIT_UNLIMITED`). Returns None for what is not a limit (a bool,
    other text, a list): the caller keeps its default, as Hermes Agent does. YAML ``null``
    (``max_turns:`` with nothing after it) is not given here: it means "not set".
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _UNLIMITED_WORDS:
            return TURN_LIMIT_UNLIMITED
        try:
            value = float(text)
        except ValueError:
            return None
    if isinstance(value, (int, float)):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return TURN_LIMIT_UNLIMITED
        number = int(value)
        return TURN_LIMIT_UNLIMITED if number <= 0 else number
    return None
