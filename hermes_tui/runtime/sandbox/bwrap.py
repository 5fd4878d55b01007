"""bubblewrap: the process in its own user, mount, pid, IPC (and network) namespaces.

The whole file system is bound read-only; the writable roots are bound again read-write, the
protected paths inside them read-only once more (a mount point cannot be renamed, removed or
written through), ``.git`` folders are pinned (bound onto themselves) so their protected hooks
cannot be swapped for a fresh ``.git``; secrets are covered (an empty read-only folder, or
``/dev/null`` for a file); ``/dev`` is a fresh minimal one (no disks, no terminals). Without
``network`` the process has a network namespace of its own: no interface but a closed loopback.
In its pid namespace it sees only its own processes (``/proc`` is the namespace's), and what it
left running ends with it.

bwrap stays as a small monitor process (the parent of the namespace's init, a second bwrap,
whose child the command is; all in one process group): it ignores SIGINT and SIGTERM
(``env --ignore-signal``), so they reach only the command, and it exits with the command;
SIGKILL of the group ends them all. The command's pid inside is not the host's
(:func:`.lineage.host_pid` finds that one).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess

from hermes_tui.runtime.sandbox.paths import Layout, inside


def binary() -> str | None:
    """Where ``bwrap`` is (None: not installed)."""
    return shutil.which("bwrap")


@functools.lru_cache(maxsize=4)
def supports(path: str, option: str) -> bool:
    """True when this bwrap knows ``option`` (0.8 added ``--disable-userns``)."""
    try:
        out = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return False
    return option in out.stdout + out.stderr


def argv(path: str, layout: Layout, *, cwd: str, network: bool, seccomp_fd: int | None) -> list[str]:
    """The bwrap command line that runs a command inside ``layout`` (the command follows)."""
    # No --die-with-parent: its parent is a thread that ends once bwrap has started. A group
    # SIGKILL takes bwrap and the command together; the kernel's watchdog and the reaper
    # take the group when the host dies.
    # A pid namespace of its own, with its /proc: no other process of the user is there to
    # read (the shell that launched the app is dumpable and the same uid: its environ).
    args = [path, "--unshare-user", "--unshare-ipc", "--unshare-pid"]
    if supports(path, "--disable-userns"):
        args.append("--disable-userns")
    if not network:
        args.append("--unshare-net")
    # The namespace's /proc, read-only as the host's was: a fresh proc mount is writable, and
    # for root (uid 0 maps to root) that is /proc/sys/kernel/core_pattern, sysrq and the rest.
    args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--remount-ro", "/proc"]
    missing = [p for p in layout.protected if not os.path.lexists(p)]
    for root in layout.writable:
        args += writable_binds(root, [p for p in missing if inside(p, root)])
    for pin in layout.pinned:
        args += ["--bind", pin, pin]
    for path_ in (*layout.protected, *layout.git):
        if os.path.lexists(path_):
            args += ["--ro-bind", path_, path_]
    for folder in layout.sealed:
        args += sealed_binds(folder, layout.hidden)
    for secret in layout.hidden:
        if any(inside(secret, folder) for folder in layout.sealed):
            continue  # not bound back into its sealed folder
        if os.path.isdir(secret) and not os.path.islink(secret):
            args += ["--tmpfs", secret, "--remount-ro", secret]
        elif os.path.lexists(secret):
            args += ["--ro-bind", "/dev/null", secret]
    args += ["--chdir", cwd]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    args.append("--")
    return args


def writable_binds(root: str, missing: list[str]) -> list[str]:
    """Bind ``root`` read-write, unless a protected path that does not exist yet lies inside it
    (``~/.profile`` when the home is the workspace): a mount needs an existing file to cover,
    so then each entry beside the missing path and beside the folders leading to it is bound
    instead, and those folders stay read-only: nothing new is made directly in them (as under
    Landlock). Symbolic links are left as they are: binding one would make its target writable."""
    if not missing:
        return ["--bind", root, root]
    binds: list[str] = []
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return binds
    for name in names:
        entry = os.path.join(root, name)
        if os.path.islink(entry) or not (os.path.isdir(entry) or os.path.isfile(entry)):
            continue
        inner = [p for p in missing if inside(p, entry)]
        if not inner:
            binds += ["--bind", entry, entry]
        elif os.path.isdir(entry):
            binds += writable_binds(entry, inner)
    return binds


def sealed_binds(folder: str, hidden: tuple[str, ...]) -> list[str]:
    """Cover ``folder`` with an empty read-only tmpfs and bind its entries back read-only, but
    the hidden ones: an entry made there after the process started is not seen by it."""
    binds = ["--tmpfs", folder]
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        names = []
    for name in names:
        entry = os.path.join(folder, name)
        if not any(inside(entry, secret) for secret in hidden) and (os.path.isdir(entry) or os.path.isfile(entry)):
            binds += ["--ro-bind", entry, entry]
    return [*binds, "--remount-ro", folder]
