"""Which Python a project-mode kernel runs: the active venv's, else conda's, else the host's.

A candidate is probed (run once, with a timeout) and must be Python >= 3.8; results are
cached per path and modification time, so the probe costs one process per interpreter.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from hermes_tui.runtime.envs import build_child_env
from hermes_tui.runtime.sandbox import Confinement, SandboxError

MIN_VERSION = (3, 8)
PROBE_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class Choice:
    """The interpreter to use, and why the preferred one was not used (if it was not)."""

    path: str
    warning: str | None = None


_probed: dict[tuple[str, float], str | None] = {}


def probe(path: str, env: Mapping[str, str] | None = None,
          confine: Callable[[], Confinement] | None = None) -> str | None:
    """None if ``path`` is a working Python >= 3.8; otherwise what is wrong. Blocking.

    The probe runs with ``env`` (the scrubbed environment of a child; default: none at all)
    and is forked like every child, so a planted interpreter learns no secret; with
    ``confine``, in the sandbox (a venv's ``bin/python`` is a file a script can replace)."""
    try:
        key = (path, os.stat(path).st_mtime)
    except OSError as exc:
        return f"{path} does not exist ({exc.strerror})"
    if key in _probed:
        return _probed[key]
    problem: str | None = None
    try:
        confinement = confine() if confine is not None else Confinement()
        try:
            child = confinement.start(lambda: subprocess.Popen(
                [*confinement.prefix, path, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True,
                env={**(env or {}), **confinement.env}, pass_fds=confinement.fds,
            ))
        finally:
            confinement.close()
        try:
            out, _ = child.communicate(timeout=PROBE_TIMEOUT)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            raise
        if child.returncode != 0:
            problem = f"{path} does not run (exit {child.returncode})"
        else:
            version = tuple(int(p) for p in out.strip().split("."))
            if version < MIN_VERSION:
                problem = f"{path} is Python {out.strip()}, older than 3.8"
    except subprocess.TimeoutExpired:
        problem = f"{path} did not answer within {PROBE_TIMEOUT:g}s"
    except (OSError, ValueError, subprocess.SubprocessError, SandboxError) as exc:
        problem = f"{path} cannot run: {exc}"
    _probed[key] = problem
    return problem


def project_interpreter(env: Mapping[str, str], confine: Callable[[], Confinement] | None = None) -> Choice:
    """The interpreter for project mode, given the host's environment. Blocking (probes,
    confined by ``confine`` when given)."""
    problems = []
    for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = env.get(variable)
        if not prefix:
            continue
        candidate = os.path.join(prefix, "bin", "python")
        problem = probe(candidate, build_child_env(env), confine)
        if problem is None:
            return Choice(candidate)
        problems.append(f"{variable}={prefix}: {problem}")
    if problems:
        return Choice(sys.executable, "This kernel runs the host's Python (" + sys.executable + ") because "
                      + "; ".join(problems) + ".")
    # Nothing active is the ordinary case: the host's Python, said in KernelInfo, no warning.
    return Choice(sys.executable)
