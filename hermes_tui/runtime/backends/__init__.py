"""Where kernels and ``terminal()`` commands run: ``local``, ``docker``, ``ssh`` or ``jupyter``
(``terminal.backend``). See :mod:`.base` for the interface and docs/engine.md for what differs."""

from __future__ import annotations

from pathlib import Path

from hermes_tui.config import Config
from hermes_tui.runtime.backends.base import SUPPORTED, Backend, BackendError, Place
from hermes_tui.runtime.backends.docker import DockerBackend
from hermes_tui.runtime.backends.jupyter import JupyterBackend
from hermes_tui.runtime.backends.ssh import SshBackend

__all__ = ["SUPPORTED", "Backend", "BackendError", "DockerBackend", "JupyterBackend", "Place", "SshBackend", "backend_for"]


def backend_for(config: Config, home: Path) -> Backend:
    """The backend ``terminal.backend`` names (the config check refuses any other)."""
    name = config.terminal.backend
    if name == "docker":
        return DockerBackend(config, home)
    if name == "ssh":
        return SshBackend(config, home)
    if name == "jupyter":
        return JupyterBackend(config, home)
    return Backend(config, home)
