"""The SSH backend: each kernel and command is one ``ssh`` connection running ``remote.py``.

No sandbox holds on the remote (``ssh: none on the remote``): the remote user's rights are
the limit. Host keys: new hosts are accepted and remembered in ``$HERMES_HOME/ssh/known_hosts``
(the user's ``~/.ssh/known_hosts`` is read too); a changed key is refused. ``BatchMode``: ssh
never asks for a password or a passphrase, it fails and says so.
"""

from __future__ import annotations

import os
import shlex
from typing import Any

from hermes_tui.runtime.backends.base import LOADER, Backend, Place, payload


class SshBackend(Backend):
    """``terminal.backend: ssh``."""

    name = "ssh"
    remote = True
    sandbox_label = "ssh: none on the remote"

    @property
    def login(self) -> str:
        """``user@host`` (``host`` alone when ssh picks the user: ~/.ssh/config or the local name)."""
        terminal = self.terminal
        return f"{terminal.ssh_user}@{terminal.ssh_host}" if terminal.ssh_user else terminal.ssh_host

    def describe(self) -> str:
        return f"ssh:{self.login}:{self.terminal.ssh_port}"

    def where(self, place: Place | None) -> str:
        return f"ssh:{self.login}"

    def forwarded(self, host_env: Any) -> dict[str, str]:
        return {name: host_env[name] for name in self.terminal.env_passthrough if name in host_env}

    def base_args(self) -> list[str]:
        terminal = self.terminal
        known = self.home / "ssh"
        known.mkdir(mode=0o700, parents=True, exist_ok=True)
        # -a -x and ClearAllForwardings: the remote gets none of the user's agent, X display or
        # ports, whatever ~/.ssh/config says (it is not trusted with them).
        args = ["ssh", "-T", "-a", "-x", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new",
                "-o", "ClearAllForwardings=yes", "-o", "ForwardAgent=no", "-o", "ForwardX11=no",
                "-o", "PermitLocalCommand=no", "-o", "LogLevel=ERROR",
                "-o", f'UserKnownHostsFile="{known / "known_hosts"}" ~/.ssh/known_hosts',
                "-o", "ConnectTimeout=15", "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4",
                "-p", str(terminal.ssh_port)]
        if terminal.ssh_key:
            args += ["-i", os.path.expanduser(terminal.ssh_key), "-o", "IdentitiesOnly=yes"]
        if terminal.ssh_user:
            args += ["-l", terminal.ssh_user]
        return [*args, "--", terminal.ssh_host]

    def command(self, place: Place) -> list[str]:
        remote = f"exec python3 -c {shlex.quote(LOADER)} {shlex.quote(payload())}"
        return [*self.base_args(), remote]

    async def open_place(self, session: str, host_cwd: str) -> Place:
        return Place(self, self.login, short_id=self.login)
