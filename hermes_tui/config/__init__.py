"""``config.yaml``: its sections, checking them, and reading the file.

* :mod:`.schema`: the sections (msgspec structs) and how each reads Hermes Agent's spellings;
* :mod:`.validate`: checking a section, and the one-line :class:`ConfigError`;
* :mod:`.load`: reading the file into a :class:`Config` (:func:`load_config`, :func:`parse_config`);
* :mod:`.notes`: notices and the keys left unused; :mod:`.hermes_keys`: Hermes Agent's key names;
* :mod:`.start`: the app's start with a file that does not load.

The file is shared with Hermes Agent, so unknown keys are kept (each section's ``extra``) and
ignored, and hermes-tui never rewrites it. A wrong value raises :class:`ConfigError` whose
message is a single line naming the file, the key path, the bad value and what is allowed.
The names callers use are exported here.
"""

from __future__ import annotations

from hermes_tui.config.load import CONFIG_MAX_BYTES, config_from_mapping, config_mapping, load_config, parse_config
from hermes_tui.config.schema import (
    MODE_RENAMED, AgentConfig, ApprovalsConfig, AtLeastZero, CacheConfig, CodeExecutionConfig, Config,
    FallbackConfig, ModelConfig, PricingConfig, ProviderConfig, Seconds, StoreConfig, SubagentsConfig,
    TerminalConfig, UIConfig, WebConfig, provider_key,
)
from hermes_tui.config.validate import SECRET_KEYS, ConfigError

__all__ = [
    "CONFIG_MAX_BYTES", "MODE_RENAMED", "SECRET_KEYS", "AgentConfig", "ApprovalsConfig", "AtLeastZero", "CacheConfig",
    "CodeExecutionConfig", "Config", "ConfigError", "FallbackConfig", "ModelConfig", "PricingConfig",
    "ProviderConfig", "Seconds", "StoreConfig", "SubagentsConfig", "TerminalConfig", "UIConfig", "WebConfig",
    "config_from_mapping", "config_mapping", "load_config", "parse_config", "provider_key",
]
