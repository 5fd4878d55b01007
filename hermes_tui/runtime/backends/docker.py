"""The Docker backend: a container per session, kernels and commands ``docker exec``'d into it.

The container is made with every capability dropped, ``no-new-privileges``, a pids limit, the
``container_*`` limits and no network unless ``code_execution.network`` is on; its only
process of its own is a tiny Python holder that reaps orphans. It is removed when the last
kernel of its session ends (reaped, evicted, reset, the app quits) unless
``terminal.container_persistent`` keeps it (stopped, reused by name next time).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
from typing import Any

from hermes_tui.runtime.backends.base import LOADER, Backend, BackendError, Place, last_line, payload, run_client

HOLD = ("import os,signal\n"
        "def reap(*_):\n"
        "    try:\n"
        "        while os.waitpid(-1, os.WNOHANG)[0]: pass\n"
        "    except OSError: pass\n"
        "signal.signal(signal.SIGCHLD, reap)\n"
        "signal.signal(signal.SIGTERM, lambda *_: os._exit(0))\n"
        "os.write(1, b'hermes-ready\\n')\n"
        "while os.read(0, 4096): pass\n")
"""The container's first process: says it is up, reaps what kernels leave, and ends (and the
container with it) when its stdin does: hermes-tui's attached client is gone."""
START_TIMEOUT = 120.0
"""Seconds a container may take to say it is up."""
PIDS_LIMIT = 512
FIX = "is the Docker daemon running (docker info), and is terminal.docker_image right?"


def _slug(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_.-]+", "-", text).strip("-.")[:40] or "session"


class DockerBackend(Backend):
    """``terminal.backend: docker``."""

    name = "docker"
    remote = True
    sandbox_label = "docker"

    def describe(self) -> str:
        """``docker:IMAGE`` and a digest of what else makes its containers (extra arguments,
        limits, network, mount, user): a change starts new kernels in new containers."""
        terminal = self.terminal
        made = json.dumps([terminal.docker_extra_args, terminal.container_cpu, terminal.container_memory,
                           self.config.code_execution.network, terminal.docker_mount_cwd_to_workspace,
                           terminal.docker_run_as_host_user, terminal.docker_forward_env])
        return f"docker:{terminal.docker_image}:{hashlib.sha256(made.encode()).hexdigest()[:8]}"

    def remote_cwd(self) -> str:
        cwd = super().remote_cwd()
        if cwd == "." and self.terminal.docker_mount_cwd_to_workspace:
            return "/workspace"
        return cwd

    def where(self, place: Place | None) -> str:
        return f"docker:{place.short_id}" if place is not None else "docker"

    def client_env(self, host_env: Any) -> dict[str, str]:
        # The names docker_forward_env lists reach the container as `-e NAME`: docker takes
        # each value from its own environment, never from a command line.
        forwarded = {name: host_env[name] for name in self.terminal.docker_forward_env if name in host_env}
        return {**super().client_env(host_env), **forwarded}

    def place_key(self, session: str, host_cwd: str) -> str:
        return self.container_name(session, host_cwd)

    def container_name(self, session: str, host_cwd: str) -> str:
        mounted = host_cwd if self.terminal.docker_mount_cwd_to_workspace else ""
        digest = hashlib.sha256("\0".join((str(self.home), session, self.describe(), mounted))
                                .encode()).hexdigest()[:10]
        return f"hermes-{_slug(session)}-{digest}"

    def _env_args(self) -> list[str]:
        args: list[str] = []
        for name in self.terminal.docker_forward_env:
            args += ["-e", name]  # the value comes from the client's environment, never argv
        return args

    def command(self, place: Place) -> list[str]:
        return ["docker", "exec", "-i", *self._env_args(), place.container, "python3", "-c", LOADER, payload()]

    def create_args(self, name: str, session: str, host_cwd: str) -> list[str]:
        terminal, settings = self.terminal, self.config.code_execution
        args = ["docker", "run", "-i", "--pull", "never", "--name", name, "--label", "hermes-tui=1",
                "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--pids-limit", str(PIDS_LIMIT)]
        if not settings.network:
            args += ["--network", "none"]
        if terminal.container_cpu:
            args += ["--cpus", f"{terminal.container_cpu:g}"]
        if terminal.container_memory:
            args += ["--memory", f"{int(terminal.container_memory)}m"]
        if terminal.docker_run_as_host_user:
            args += ["--user", f"{os.getuid()}:{os.getgid()}"]
        if terminal.docker_mount_cwd_to_workspace:
            args += ["-v", f"{host_cwd}:/workspace"]
        if not terminal.container_persistent:
            args += ["--rm"]
        args += [*self._env_args(), *terminal.docker_extra_args, terminal.docker_image, "python3", "-c", HOLD]
        return args

    async def alive(self, place: Place) -> bool:
        return place.holder is not None and place.holder.returncode is None

    async def open_place(self, session: str, host_cwd: str) -> Place:
        name = self.container_name(session, host_cwd)
        env = self.client_env(os.environ)
        try:
            code, out, err = await run_client(["docker", "inspect", "-f", "{{.State.Running}}", name],
                                              env=env, timeout=30)
            if code == 0 and out.strip() == b"true":  # its holder is alive: another hermes-tui has it
                raise BackendError(f"docker: container {name} of this session is running, held by another "
                                   "hermes-tui (the same session open twice?); end that one first")
            # The container's first process lives while this attached client does: if hermes-tui
            # dies, however it dies, the client's stdin ends, and so does the container.
            argv = ["docker", "start", "-ai", name] if code == 0 else self.create_args(name, session, host_cwd)
            holder = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env=env, start_new_session=True)
        except FileNotFoundError:
            raise BackendError("docker: the docker command is not installed on this machine "
                               "(install Docker, or set terminal.backend: local)") from None
        except OSError as exc:
            raise BackendError(f"docker: cannot run the docker command: {exc.strerror or exc}") from None
        assert holder.stdout is not None and holder.stderr is not None
        try:
            ready = await asyncio.wait_for(holder.stdout.readline(), START_TIMEOUT)
        except asyncio.TimeoutError:
            ready = b""
        if ready.strip() != b"hermes-ready":
            with contextlib.suppress(ProcessLookupError):
                holder.kill()
            _, err = await holder.communicate()
            await run_client(["docker", "rm", "-f", name], env=env, timeout=60)
            said = last_line(err) or f"exit {holder.returncode}"
            fix = ("the image has no python3: kernels need Python 3 in the image"
                   if "executable file not found" in said or "python3" in said else FIX)
            raise BackendError(f"docker: cannot start a container of {self.terminal.docker_image}: {said} ({fix})")
        code, out, _ = await run_client(["docker", "inspect", "-f", "{{.Id}}", name], env=env, timeout=30)
        container = out.decode(errors="replace").strip()
        if code != 0 or not container:
            with contextlib.suppress(ProcessLookupError):
                holder.kill()
            await holder.wait()
            raise BackendError(f"docker: container {name} started but cannot be found ({FIX})")
        return Place(self, name, short_id=container[:12], holder=holder, container=container)

    async def _logs(self, name: str, env: dict[str, str]) -> str:
        try:
            _, out, err = await run_client(["docker", "logs", "--tail", "5", name], env=env, timeout=30)
        except OSError:
            return ""
        return last_line(err) or last_line(out)

    async def close_place(self, place: Place) -> None:
        env = self.client_env(os.environ)
        verb = ["stop", "-t", "2"] if self.terminal.container_persistent else ["rm", "-f"]
        try:
            await run_client(["docker", *verb, place.container or place.name], env=env, timeout=60)
        except OSError:
            pass
        holder = place.holder
        if holder is not None and holder.returncode is None:
            if holder.stdin is not None:
                holder.stdin.close()
            try:
                await asyncio.wait_for(holder.wait(), 30)
            except asyncio.TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    holder.kill()
                await holder.wait()
