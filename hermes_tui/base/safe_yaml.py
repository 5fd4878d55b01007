"""YAML read as plain data only (config.yaml, allowlist.yaml, a skill's front matter).

PyYAML is imported on first use, never with this module: without a config.yaml the first
frame does not wait for it.
"""

from __future__ import annotations

from typing import Any


def yaml_loader() -> type:
    """PyYAML's C safe loader when libyaml is there (about 10x faster on a big file), else the
    pure-Python one. Both build only plain data: no tags that run code."""
    import yaml  # here: without a config.yaml the first frame does not wait for PyYAML

    return getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader


def load_yaml(text: str) -> Any:
    """Parse YAML ``text`` with :func:`yaml_loader` (plain data only). Raises ``yaml.YAMLError``."""
    import yaml

    return yaml.load(text, Loader=yaml_loader())  # noqa: S506 - a safe loader
