"""read_file's short way (issue 38): the file is pinned by an O_PATH descriptor, judged by where
that descriptor really is, and then that very file is read; what changes in between changes
nothing a check saw, and a file that changed size is read whole the long way."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hermes_tui.runtime.danger.paths import private_key_file
from hermes_tui.runtime.tools.files import _read_pinned
from hermes_tui.runtime.tools.opening import pin_regular


def test_what_is_read_is_the_file_that_was_judged_even_if_its_name_is_swapped(tmp_path: Path) -> None:
    harmless, secret = tmp_path / "notes.txt", tmp_path / "secret.txt"
    harmless.write_text("harmless\n")
    secret.write_text("the key\n")
    pinned = pin_regular(harmless)
    assert pinned is not None and pinned.real == str(harmless)
    with pinned:
        harmless.unlink()
        harmless.symlink_to(secret)  # a script swaps the name between the check and the read
        fd = pinned.open(harmless)
    result = _read_pinned(fd, pinned.status.st_size, 1, 10, harmless)
    assert result["content"] == "     1|harmless\n"


def test_a_file_that_grew_or_shrank_since_it_was_pinned_is_read_whole(tmp_path: Path) -> None:
    target = tmp_path / "log.txt"
    for before, after in (("a\nb\n", "a\nb\nc\nd\n"), ("a\nb\nc\n", "a\n")):
        target.write_text(before)
        pinned = pin_regular(target)
        assert pinned is not None
        with pinned:
            target.write_text(after)  # the same file, written in place
            fd = pinned.open(target)
        result = _read_pinned(fd, pinned.status.st_size, 1, 10, target)
        assert result["total_lines"] == after.count("\n")
        assert result["content"] == "".join(f"{n:>6}|{line}\n" for n, line in enumerate(after.split(), start=1))


def test_only_an_existing_regular_file_is_pinned(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert pin_regular(fifo) is None  # and nothing waited for a writer
    assert pin_regular(tmp_path) is None
    assert pin_regular(tmp_path / "missing") is None
    assert pin_regular(Path("/dev/null")) is None


def test_a_file_a_script_holds_a_lease_on_is_refused_at_once_not_waited_for(tmp_path: Path) -> None:
    """A write lease makes a plain open wait until the kernel breaks it (45 s): a script could
    hold the host's threads that long, again and again."""
    import fcntl
    import signal
    import time

    target = tmp_path / "leased.txt"
    target.write_text("x\n")
    previous = signal.signal(signal.SIGIO, signal.SIG_IGN)  # the lease's break notice
    holder = os.open(target, os.O_WRONLY)
    try:
        fcntl.fcntl(holder, fcntl.F_SETLEASE, fcntl.F_WRLCK)
        pinned = pin_regular(target)
        assert pinned is not None
        started = time.monotonic()
        with pinned, pytest.raises(BlockingIOError):
            pinned.open(target)
        assert private_key_file(str(tmp_path / "leased.pem")) is False  # not there: no key
        (tmp_path / "leased.pem").symlink_to(target)
        assert private_key_file(str(tmp_path / "leased.pem")) is True  # cannot be read: taken as a key
        assert time.monotonic() - started < 2
    finally:
        os.close(holder)
        signal.signal(signal.SIGIO, previous)


def test_a_key_file_linked_to_a_device_is_judged_without_opening_the_device(tmp_path: Path, monkeypatch) -> None:
    """The host runs as root: a ``.pem`` linked to ``/dev/watchdog`` must not be opened to be
    judged (opening it arms the watchdog). Only an O_PATH look is made at a non-regular file."""
    link = tmp_path / "x.pem"
    link.symlink_to("/dev/null")
    opened: list[tuple[str, int]] = []
    real_open = os.open

    def recording_open(path, flags, *args, **kwargs):
        opened.append((str(path), flags))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", recording_open)
    assert private_key_file(str(link)) is True  # not a regular file: counted as a key, asked
    assert opened and all(flags & os.O_PATH for _, flags in opened)
    pem = tmp_path / "cert.pem"
    pem.write_text("-----BEGIN CERTIFICATE-----\nabc\n")
    assert private_key_file(str(pem)) is False  # a regular file is read through its descriptor


def test_the_hosts_other_reads_never_open_a_device_either(tmp_path: Path, monkeypatch) -> None:
    """fsutil.open_regular (the output cache, patch, search, the approvals log) looks at a name
    through an O_PATH descriptor and opens only a regular file, through that descriptor."""
    from hermes_tui.base import fsutil

    link = tmp_path / "out.txt"
    link.symlink_to("/dev/null")
    opened: list[int] = []
    real_open = os.open

    def recording_open(path, flags, *args, **kwargs):
        opened.append(flags)
        return real_open(path, flags, *args, **kwargs)

    regular = os.stat(__file__)
    real_stat = os.stat

    def swapped_after_the_stat(path, *args, **kwargs):  # as if a script swapped the name in just after
        return regular if str(path) == str(link) else real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", recording_open)
    monkeypatch.setattr(os, "stat", swapped_after_the_stat)
    with pytest.raises(fsutil.FileRefused, match="a character device"):
        fsutil.open_regular(link)
    with pytest.raises(fsutil.FileRefused, match="a symbolic link"):
        fsutil.open_regular(link, follow_symlinks=False)
    assert opened and all(flags & os.O_PATH for flags in opened)
    (tmp_path / "real.txt").write_text("text")
    os.close(fsutil.open_regular(tmp_path / "real.txt"))


async def read_unsandboxed(home: Path, cwd: Path, name: str, approver) -> str:
    """What a script's ``read_file(name)`` printed, in a real kernel with the sandbox off (no read
    guard behind the host's own checks) and ``approver`` answering."""
    from conftest import make_config
    from hermes_tui.runtime import Runtime

    runtime = Runtime(make_config("code_execution:\n  sandbox: 'off'\n"), home=home, approver=approver)
    try:
        await runtime.start()
        result = await runtime.execute_code(f"from hermes_tools import read_file\nprint(read_file({name!r}))",
                                            session="s", cwd=cwd)
    finally:
        await runtime.aclose()
    return result.output


async def test_what_a_person_allows_is_what_is_read_even_if_the_name_is_swapped_while_they_answer(
        hermes_home: Path, tmp_path: Path) -> None:
    """A read of a key file asks first; a script that swaps the name for a link to another file
    while the person answers gets the file the person was asked about (sandbox off: no read
    guard behind the question)."""
    from conftest import Approver

    key, other = tmp_path / "key.pem", tmp_path / "other.txt"
    key.write_text("-----BEGIN PRIVATE KEY-----\nthe one you allowed\n")
    other.write_text("swapped in while you answered\n")

    def swap(request) -> None:
        key.unlink()
        key.symlink_to(other)

    approver = Approver("once", before=swap)
    output = await read_unsandboxed(hermes_home, tmp_path, "key.pem", approver)
    assert [r.kind for r in approver.asked] == ["file"]
    assert "the one you allowed" in output and "swapped in" not in output


async def test_a_name_that_appears_after_it_was_judged_missing_is_never_read_by_name(
        hermes_home: Path, tmp_path: Path, monkeypatch) -> None:
    """A script's thread makes ``notes.txt`` a link to a key file just after the host found no
    such file: the host pins it again and asks, it never reads through the name it judged."""
    from conftest import Approver
    from hermes_tui.runtime.tools import files

    key = tmp_path / "key.pem"
    key.write_text("-----BEGIN PRIVATE KEY-----\nnot for the model\n")
    judged = files.read_verdict

    def swapped_just_after(ctx, path, real=None):
        verdict = judged(ctx, path, real)
        if not (tmp_path / "notes.txt").exists():
            (tmp_path / "notes.txt").symlink_to(key)
        return verdict

    monkeypatch.setattr(files, "read_verdict", swapped_just_after)
    approver = Approver("deny", "no")
    output = await read_unsandboxed(hermes_home, tmp_path, "notes.txt", approver)
    assert "not for the model" not in output and "BLOCKED" in output
    assert [r.kind for r in approver.asked] == ["file"]


def test_a_path_whose_links_are_swapped_while_it_is_resolved_gives_a_path_not_an_error(
        tmp_path: Path, monkeypatch) -> None:
    """os.path.realpath raises (ENOENT, EINVAL) when a link on the way changes while it walks,
    which a script's thread can make happen at will; the tools said "read_file failed:
    FileNotFoundError" then. real_path answers with the path as spelled instead."""
    from hermes_tui.base import fsutil

    def racing(path, *args, **kwargs):
        raise OSError(22, "Invalid argument", path)

    monkeypatch.setattr(os.path, "realpath", racing)
    assert fsutil.real_path(str(tmp_path / "gone" / ".." / "notes.txt")) == str(tmp_path / "notes.txt")
