"""The sandbox in force for one runtime: which mechanism, probed once per start, and the
confinement of each process a script or the model starts.

Two mechanisms, tried in this order (docs/security.md says why):

* ``bwrap``: bubblewrap's namespaces (:mod:`.bwrap`), plus the seccomp filter and, on Linux ≥
  6.12, a Landlock domain that keeps signals and abstract sockets inside the sandbox;
* ``landlock``: Landlock rules alone (:mod:`.landlock`) plus the same seccomp filter, applied
  to a new thread that then starts the process: no external program. It cannot carve
  ``.git/hooks`` out of a writable workspace (Landlock rules only add up).

Fail closed: when the configured sandbox cannot be applied, :attr:`Sandbox.error` says why and
what fixes it, and no confined process starts (:meth:`Sandbox.confine` raises).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from hermes_tui.runtime import lineage
from hermes_tui.runtime.danger.instruction_names import matches
from hermes_tui.runtime.sandbox import bwrap, landlock, paths, seccomp

Tier = Literal["bwrap", "landlock", "off", "unavailable"]
T = TypeVar("T")
FORCE_ENV = "HERMES_TUI_SANDBOX_TIER"
"""Names the mechanism to use (``bwrap`` or ``landlock``) instead of the first that works:
for tests and diagnosis. One that cannot be applied then fails closed."""
OFF_AND_OPEN = "off·/proc open"
"""The label when the sandbox is off and Landlock is missing: kernels may read other processes of the user."""
DEV_NODES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")
"""The only device files a Landlock-confined process may open (no disk, no terminal of the user's)."""
IGNORE_SIGNALS = ("/usr/bin/env", "--ignore-signal=INT,TERM")
"""What runs bwrap: its monitor ignores SIGINT and SIGTERM sent to the group (coreutils ≥ 8.31)."""
RESET_SIGNALS = ("/usr/bin/env", "--default-signal=INT,TERM")
"""What bwrap runs first: the command gets SIGINT and SIGTERM back at their defaults (ignored
ones are inherited, and a shell cannot undo them)."""
FIX = ("install bubblewrap (apt-get install bubblewrap), run on Linux 5.13 or newer with Landlock, "
       "or set code_execution.sandbox: off to run scripts unconfined")


class SandboxError(Exception):
    """The sandbox cannot be applied; the message is one line saying why and what fixes it."""


@dataclass
class Confinement:
    """How to start one confined process: a command prefix, what the thread that starts it
    applies to itself first (Landlock, seccomp: what a thread holds, the process it starts
    inherits — with no ``preexec_fn``, Python starts it by vfork, not by copying the host),
    the descriptors it must inherit and the environment it gets on top of its own."""

    prefix: list[str] = field(default_factory=list)
    setup: Callable[[], None] | None = None
    fds: tuple[int, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    tier: Tier = "off"
    _owned: list[Callable[[], None]] = field(default_factory=list)
    layout: paths.Layout | None = None
    """What the process may write and read (None when unconfined)."""
    def start(self, popen: Callable[[], T]) -> T:
        """Run ``popen`` (a ``subprocess.Popen``) from a new thread that applied ``setup`` to
        itself for good (each process its own Landlock domain), or, unconfined, from the
        spawner thread. Blocking."""
        from hermes_tui.runtime.hardening import spawn, spawn_restricted

        if self.tier == "off":
            return spawn(popen)
        return spawn_restricted(popen, self.setup)

    def close(self) -> None:
        """Release what only the start needed (call once the child has started, or failed to)."""
        for release in self._owned:
            release()
        self._owned.clear()


class Sandbox:
    """The sandbox of one runtime.

    Args:
        mode: ``code_execution.sandbox``.
        network: ``code_execution.network``.
        writable_roots: ``code_execution.writable_roots``.
        deny_read: ``code_execution.deny_read``.
        hermes_home: ``HERMES_HOME`` (never writable; its ``.env`` never readable).
    """

    def __init__(self, mode: str, *, network: bool, writable_roots: Iterable[str] = (),
                 deny_read: Iterable[str] = (), hermes_home: str) -> None:
        self.mode = mode
        self.network = network
        self.writable_roots = tuple(writable_roots)
        self.deny_read = tuple(deny_read)
        self.hermes_home = hermes_home
        self.user_home = os.path.expanduser("~")
        self.tier: Tier = "off" if mode == "off" else "unavailable"
        self.detail = "off: scripts and commands run unconfined, as you" if mode == "off" else "not probed yet"
        self.error: str | None = None
        self.abi = 0
        self.scratch: str | None = None
        """A private temp dir for processes of no kernel (a top-level command, ripgrep)."""
        self.instructions: tuple[str, ...] = ()
        """Names of agent instruction files: read-only inside the roots (with bubblewrap)."""
        self._bwrap: str | None = None
        self._scope: landlock.Ruleset | None = None

    @property
    def label(self) -> str:
        """Short, for the top bar and the kernels pane: ``workspace-write·bwrap``, ``off``...
        ``off·/proc open``: off, and without Landlock, so a kernel can read other processes of
        the user (the environment of the shell that launched the app)."""
        if self.tier == "off" and not lineage.domains_available():
            return OFF_AND_OPEN
        if self.tier in ("off", "unavailable"):
            return self.tier
        return f"{self.mode}·{self.tier}" + ("·network" if self.network else "")

    @property
    def active(self) -> bool:
        """True when processes are confined (a tier is in force)."""
        return self.tier in ("bwrap", "landlock")

    # -- probing ------------------------------------------------------------------------------

    def probe(self, scratch: str) -> None:
        """Find the mechanism in force (blocking; once per start): a trial process is started
        confined as kernels are. ``scratch``: a private folder it may write."""
        if self.mode == "off":
            return
        forced = os.environ.get(FORCE_ENV, "").strip().lower() or None
        problems: list[str] = []
        try:
            seccomp.program(self.network)
        except seccomp.SeccompUnavailable as exc:
            self._fail(f"{exc}")
            return
        self.abi = landlock.abi()
        if self.abi >= 6:
            try:
                self._scope = landlock.Ruleset(scoped=landlock.SCOPE_SIGNAL | landlock.SCOPE_ABSTRACT_UNIX,
                                               version=self.abi)
            except OSError:
                self._scope = None
        for tier in (("bwrap", "landlock") if forced is None else (forced,)):
            if tier == "bwrap":
                self._bwrap = bwrap.binary()
                if self._bwrap is None:
                    problems.append("bubblewrap (bwrap) is not installed")
                    continue
            elif tier == "landlock":
                if self.abi < 1:
                    problems.append("Landlock is not available (Linux 5.13 or newer with Landlock enabled)")
                    continue
            else:
                self._fail(f"{FORCE_ENV}={forced!r} names no mechanism (bwrap, landlock)",
                           f"unset {FORCE_ENV}, or set it to bwrap or landlock")
                return
            self.tier = tier
            why = self._trial(scratch)
            if why is not None:
                # Once more before falling back: a trial can fail on a loaded machine (a
                # namespace not made in time), and a second start must not get another tier.
                why = self._trial(scratch)
            if why is None:
                self.detail = self._describe()
                return
            problems.append(f"{tier} cannot start a process here ({why})")
        self.tier = "unavailable"
        self._fail("; ".join(problems))

    def _fail(self, why: str, fix: str = FIX) -> None:
        self.tier = "unavailable"
        self.error = (f"code_execution.sandbox is {self.mode}, but no sandbox can be applied here: {why}. "
                      f"Nothing was run. To fix: {fix}")
        self.detail = self.error

    def _trial(self, scratch: str) -> str | None:
        """Start ``true`` confined as a kernel would be; None if it ran, else why not."""
        try:
            confinement = self.confine(workspace=None, tmpdir=scratch, cwd=scratch)
        except (OSError, SandboxError) as exc:
            return str(exc)
        try:
            argv = [*confinement.prefix, "/bin/sh", "-c", "exit 0"]
            proc = confinement.start(lambda: subprocess.Popen(
                argv, cwd=scratch, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                pass_fds=confinement.fds))
        except (OSError, subprocess.SubprocessError) as exc:
            return str(exc)
        finally:
            confinement.close()
        try:
            _, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            return "it did not finish within 10 s"
        if proc.returncode != 0:
            last = err.decode("utf-8", "replace").strip().splitlines()
            return last[-1] if last else f"exit code {proc.returncode}"
        return None

    def _describe(self) -> str:
        net = "network allowed (TCP/UDP)" if self.network else "no network"
        scope = ("signals and abstract sockets kept inside" if self.abi >= 6
                 else "signals to other processes NOT scoped (Landlock ABI < 6: Linux < 6.12)")
        if self.tier == "bwrap":
            how = f"bubblewrap ({self._bwrap}) + seccomp" + (f" + Landlock ABI {self.abi}" if self._scope else "")
        else:
            how = f"Landlock ABI {self.abi} + seccomp (.git hooks and config not protected: install bubblewrap)"
        return f"{self.mode}: {how}; {net}; {scope}"

    # -- confining ----------------------------------------------------------------------------

    def layout(self, workspace: str | None, tmpdir: str, cwd: str, extra: Iterable[str] = (),
               writable_instructions: tuple[str, ...] = ()) -> paths.Layout:
        """What a process with this workspace and temp dir may write and read
        (``writable_instructions``: names of agent instruction files a person allowed it to write;
        the patterns that match them are left out of the read-only ones)."""
        writable = [tmpdir, *extra]
        if self.mode == "workspace-write":
            writable += [*(w for w in [workspace] if w), *self.writable_roots]
        return paths.layout(writable=writable, hermes_home=self.hermes_home, user_home=self.user_home,
                            extra_hidden=self.deny_read, cwd=cwd, read_only=self.mode == "read-only",
                            instructions=tuple(p for p in self.instructions
                                               if not any(matches(name, (p,)) for name in writable_instructions)))

    def reader(self, cwd: str, tmpdir: str | None = None) -> Callable[[], Confinement] | None:
        """How a process that only reads (ripgrep, an interpreter probe) is confined: nothing
        writable but a temp dir (``tmpdir``, else the scratch dir). None when the sandbox is off."""
        if self.tier == "off":
            return None
        temp = tmpdir or self.scratch or cwd
        return lambda: self.confine(workspace=None, tmpdir=temp, cwd=cwd)

    def confine(self, *, workspace: str | None, tmpdir: str, cwd: str, extra: Iterable[str] = (),
                loopback: bool = False, writable_instructions: tuple[str, ...] = ()) -> Confinement:
        """The confinement of one process (blocking: it reads the file system). Raises
        :class:`SandboxError` when the sandbox is unavailable; an empty one when it is off.

        ``loopback`` (a local Jupyter kernel and its relay, which talk ZeroMQ over TCP): without
        ``network``, IPv4/IPv6 sockets may be made, in a network namespace of its own that has
        only its loopback (bubblewrap); nothing outside is reachable. Landlock alone cannot
        make such a namespace: SandboxError then."""
        if loopback and not self.network and self.tier == "landlock":
            raise SandboxError("a local Jupyter kernel talks to its relay over TCP on loopback, which the sandbox "
                               "gives only with bubblewrap (a network of its own) or code_execution.network: true; "
                               "install bubblewrap, or set terminal.jupyter_gateway_url")
        if self.tier == "off":
            return Confinement()
        if self.tier == "unavailable":
            raise SandboxError(self.error or "the sandbox is not ready")
        layout = self.layout(workspace, tmpdir, cwd, extra, writable_instructions)
        env = {"TMPDIR": tmpdir, "HERMES_SANDBOX": self.label}
        if self.tier == "bwrap":
            assert self._bwrap is not None
            fd = seccomp.pipe_of(seccomp.program(self.network or loopback))
            try:
                # bwrap stays as the command's parent, in its group: an interrupt or a SIGTERM is
                # for the command (env puts them back to default for it), and bwrap exits with it.
                prefix = [*IGNORE_SIGNALS, *bwrap.argv(self._bwrap, layout, cwd=cwd, network=self.network,
                                                       seccomp_fd=fd), *RESET_SIGNALS]
            except BaseException:
                os.close(fd)
                raise
            scope = self._scope
            # A domain of its own on a thread of its own: a host thread in the kernel's domain
            # could be signalled by it (and the host with it).
            return Confinement(prefix, (lambda: landlock.restrict_self(scope.fd)) if scope is not None else None,
                               (fd,), env, "bwrap", [lambda: os.close(fd)], layout)
        ruleset = self._landlock_rules(layout)
        loader = seccomp.Loader(seccomp.program(self.network))
        ruleset_fd = ruleset.fd

        def restrict() -> None:
            landlock.restrict_self(ruleset_fd)
            loader.load()

        return Confinement([], restrict, (), env, "landlock", [ruleset.close], layout)

    def _landlock_rules(self, layout: paths.Layout) -> landlock.Ruleset:
        version = self.abi
        writes = landlock.write_rights(version) & ~landlock.MAKE_DEVICE  # a disk made a node is every file on it
        ruleset = landlock.Ruleset(
            fs=landlock.READ_FILE | landlock.READ_DIR | landlock.write_rights(version),
            net=0 if self.network else landlock.NET_BIND_TCP | landlock.NET_CONNECT_TCP,
            scoped=landlock.SCOPE_SIGNAL | landlock.SCOPE_ABSTRACT_UNIX, version=version)
        try:
            ruleset.allow("/", landlock.READ_DIR)
            # Reads: everything but the secrets and /dev (a disk read raw is every file on it).
            # A sealed folder gets rules for its entries only (os.path.join(folder, "") stands
            # for what is not there yet): a file made there later is not readable.
            landlock.add_complement(ruleset, "/", landlock.READ_FILE,
                                    [*layout.hidden, "/dev", *(os.path.join(f, "") for f in layout.sealed)])
            for node in DEV_NODES:
                ruleset.allow(node, landlock.READ_FILE | landlock.WRITE_FILE | landlock.TRUNCATE)
            ruleset.allow("/dev/shm", landlock.READ_FILE | writes)
            for root in layout.writable:
                landlock.add_complement(ruleset, root, writes, [*layout.protected, *layout.hidden])
        except BaseException:
            ruleset.close()
            raise
        return ruleset
