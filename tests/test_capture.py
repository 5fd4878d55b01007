"""Head/tail capture: exact limits and marker, spill file (closed, removed when it fails, never
blocking the reader), UTF-8 at the cuts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_tui.runtime.capture import (
    STDERR_HEAD,
    STDERR_MARKER,
    STDERR_TAIL,
    STDOUT_HEAD,
    STDOUT_MARKER,
    STDOUT_TAIL,
    HeadTailCapture,
    SpillWriter,
)


def feed_in_pieces(capture: HeadTailCapture, data: bytes, piece: int) -> None:
    for start in range(0, len(data), piece):
        capture.feed(data[start : start + piece])


@pytest.mark.parametrize("piece", [1, 7, 4096, 1 << 20])
def test_exactly_50000_bytes_pass_whole(piece: int, tmp_path: Path) -> None:
    data = bytes(range(32, 127)) * 600
    data = data[:50_000]
    capture = HeadTailCapture(spill_path=tmp_path / "spill")
    feed_in_pieces(capture, data, piece)
    result = capture.finish()
    assert result.text == data.decode()
    assert not result.truncated and result.total_bytes == 50_000
    assert result.spill_path is None and not (tmp_path / "spill").exists()


@pytest.mark.parametrize("piece", [1000, 65536, 1 << 20])
def test_one_byte_more_is_cut_with_the_exact_marker(piece: int, tmp_path: Path) -> None:
    data = b"".join(b"%06d\n" % i for i in range(100_000))  # 700,000 bytes
    capture = HeadTailCapture(spill_path=tmp_path / "spill")
    feed_in_pieces(capture, data, piece)
    result = capture.finish()
    omitted = len(data) - 50_000
    marker = f"\n\n... [OUTPUT TRUNCATED - {omitted} bytes omitted out of {len(data)} total] ...\n\n"
    assert result.text == data[:20_000].decode() + marker + data[-30_000:].decode()
    assert result.truncated and result.total_bytes == len(data)
    assert result.spill_path == tmp_path / "spill"
    assert (tmp_path / "spill").read_bytes() == data
    assert oct((tmp_path / "spill").stat().st_mode & 0o777) == "0o600"


def test_cuts_never_split_a_utf8_character(tmp_path: Path) -> None:
    data = ("é" * 40_000).encode()  # 2 bytes each: the head cut at 20,000 is aligned,
    data = b"x" + data  # ... shift by one so both cuts fall inside a character
    capture = HeadTailCapture(spill_path=tmp_path / "s")
    capture.feed(data)
    result = capture.finish()
    assert "\ufffd" not in result.text
    head, tail = result.text.split("\n\n... [OUTPUT TRUNCATED - ")
    tail = tail.split("total] ...\n\n")[1]
    assert head == "x" + "é" * 9_999
    assert tail == "é" * 15_000
    omitted = len(data) - len(head.encode()) - len(tail.encode())
    assert f"{omitted} bytes omitted out of {len(data)} total" in result.text


def test_spill_that_cannot_be_written_is_reported_not_raised(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    capture = HeadTailCapture(spill_path=blocked / "spill")
    capture.feed(b"y" * 60_000)
    result = capture.finish()
    assert result.truncated and result.spill_path is None
    assert "cannot create" in result.spill_error


def test_memory_stays_bounded_while_feeding() -> None:
    capture = HeadTailCapture()
    chunk = os.urandom(1 << 16)
    for _ in range(500):  # 32 MB
        capture.feed(chunk)
        assert len(capture._start) <= 20_000 and len(capture._tail) <= 30_000
    assert capture.finish().total_bytes == 500 << 16


# -- UTF-8 at the cuts, against an oracle that counts whole characters -----------------------------


def expected_text(text: str, head: int, tail: int, marker: str = STDOUT_MARKER) -> str:
    """What the capture must show: every character whole, as many as fit in ``head`` bytes
    from the start and ``tail`` bytes from the end (counted here by characters, not bytes)."""
    total = len(text.encode())
    if total <= head + tail:
        return text
    kept_head, used = 0, 0
    while kept_head < len(text) and used + len(text[kept_head].encode()) <= head:
        used += len(text[kept_head].encode())
        kept_head += 1
    kept_tail, used_tail = 0, 0
    while kept_tail < len(text) and used_tail + len(text[-1 - kept_tail].encode()) <= tail:
        used_tail += len(text[-1 - kept_tail].encode())
        kept_tail += 1
    start, end = text[:kept_head], text[len(text) - kept_tail:]
    return start + marker.format(omitted=total - used - used_tail, total=total) + end


@pytest.mark.parametrize("char", ["é", "€", "😀"], ids=["2-byte", "3-byte", "4-byte"])
@pytest.mark.parametrize("before", range(5))
@pytest.mark.parametrize("after", range(5))
def test_cuts_through_and_on_multibyte_characters(char: str, before: int, after: int) -> None:
    # head 10 and tail 12 bytes: as `before` and `after` shift the text, each cut falls
    # on every byte of a character and exactly between two.
    text = "a" * before + char * 12 + "z" * after
    for piece in (1, 3, len(text.encode())):
        capture = HeadTailCapture(head=10, tail=12)
        feed_in_pieces(capture, text.encode(), piece)
        result = capture.finish()
        assert result.text == expected_text(text, 10, 12), (piece, result.text)
        assert "\ufffd" not in result.text and result.total_bytes == len(text.encode())


ALPHABET = st.sampled_from(["a", "\n", "é", "ß", "€", "ह", "😀", "𝄞"])


@settings(max_examples=300, deadline=None)
@given(text=st.lists(ALPHABET, max_size=60).map("".join), head=st.integers(0, 12), tail=st.integers(0, 12),
       cuts=st.lists(st.integers(1, 200), max_size=6))
def test_any_text_any_limits_any_chunking(text: str, head: int, tail: int, cuts: list[int]) -> None:
    data = text.encode()
    capture = HeadTailCapture(head=head, tail=tail, marker=STDERR_MARKER)
    points = sorted({c for c in cuts if c < len(data)})
    for a, b in zip([0, *points], [*points, len(data)]):
        capture.feed(data[a:b])
    result = capture.finish()
    assert result.text == expected_text(text, head, tail, STDERR_MARKER)
    assert result.truncated == (len(data) > head + tail) and result.total_bytes == len(data)


@pytest.mark.parametrize(
    ("data", "head", "tail", "shown_head", "shown_tail"),
    [
        (b"abcd\xe2a" + b"." * 20 + b"wxyz", 6, 4, "abcd\ufffda", "wxyz"),  # a lone lead byte, then ASCII: both kept
        (b"a\xff\xfec" + b"." * 20 + b"wxyz", 4, 4, "a\ufffd\ufffdc", "wxyz"),  # bytes that are never UTF-8
        (b"abcd" + b"." * 20 + b"\xc0xyz", 4, 4, "abcd", "\ufffdxyz"),  # 0xC0 starts the tail: not a continuation
        (b"abcd" + b"." * 20 + b"\x80\x80\x80\x80xy", 4, 6, "abcd", "\ufffdxy"),  # only 3 continuation bytes dropped
        (b"abc\xf0\x9f\x98" + b"." * 20 + b"wxyz", 6, 4, "abc", "wxyz"),  # the cut-off start of a character
    ],
)
def test_binary_output_is_shown_with_replacement_characters(data: bytes, head: int, tail: int, shown_head: str,
                                                             shown_tail: str) -> None:
    capture = HeadTailCapture(head=head, tail=tail, marker="|{omitted}|")
    capture.feed(data)
    head_text, omitted, tail_text = capture.finish().text.split("|")
    assert (head_text, tail_text) == (shown_head, shown_tail)
    kept = len(shown_head.replace("\ufffd", "?").encode()) + len(shown_tail.replace("\ufffd", "?").encode())
    assert int(omitted) == len(data) - kept


def test_binary_output_below_the_limit_is_whole() -> None:
    capture = HeadTailCapture()
    capture.feed(b"ok \xff\xfe\xe2\x82 end\n")
    result = capture.finish()
    assert result.text == "ok \ufffd\ufffd\ufffd end\n" and not result.truncated and result.total_bytes == 12


def test_stdout_and_stderr_limits() -> None:
    assert (STDOUT_HEAD, STDOUT_TAIL, STDERR_HEAD, STDERR_TAIL) == (20_000, 30_000, 2_000, 8_000)
    capture = HeadTailCapture(STDERR_HEAD, STDERR_TAIL, marker=STDERR_MARKER)
    data = b"".join(b"%04d\n" % i for i in range(4_000))  # 20,000 bytes
    capture.feed(data)
    result = capture.finish()
    assert result.text == (data[:2_000].decode() + "\n... [STDERR TRUNCATED - 10000 bytes omitted out of 20000 total] ...\n"
                           + data[-8_000:].decode())


# -- the spill file ---------------------------------------------------------------------------------


def open_files(path: Path) -> list[str]:
    """This process's descriptors open on ``path`` (removed or not)."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").removesuffix(" (deleted)") == str(path):
                found.append(fd)
        except OSError:
            continue
    return found


def test_the_spill_file_is_closed_after_success(tmp_path: Path) -> None:
    spill = tmp_path / "spill"
    capture = HeadTailCapture(head=10, tail=10, spill_path=spill)
    for i in range(100):
        capture.feed(b"%05d\n" % i)
    assert capture._spill is not None
    result = capture.finish()
    assert result.spill_path == spill and result.spill_error is None
    assert spill.read_bytes() == b"".join(b"%05d\n" % i for i in range(100))
    assert open_files(spill) == []
    assert not capture._spill._thread.is_alive()


DISK_FULL = r"""
import json, os, resource, signal, sys
from pathlib import Path
from hermes_tui.runtime.capture import HeadTailCapture

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, resource.RLIM_INFINITY))
spill = Path(sys.argv[1])
capture = HeadTailCapture(spill_path=spill)
data = b"".join(b"%07d\n" % i for i in range(40_000))  # 320,000 bytes
for start in range(0, len(data), 4096):
    capture.feed(data[start:start + 4096])
result = capture.finish()
fds = []
for fd in os.listdir("/proc/self/fd"):  # still open on the spill file, even once it is removed?
    try:
        if os.readlink(f"/proc/self/fd/{fd}").removesuffix(" (deleted)") == str(spill):
            fds.append(fd)
    except OSError:
        pass  # the listing's own descriptor, closed by now
print(json.dumps({"text": result.text, "truncated": result.truncated, "total": result.total_bytes,
                  "spill_path": result.spill_path and str(result.spill_path), "spill_error": result.spill_error,
                  "exists": spill.exists(), "open": fds}))
"""


def test_a_spill_that_fails_midway_is_reported_and_removed(tmp_path: Path) -> None:
    """The disk fills up (here: RLIMIT_FSIZE, a real EFBIG from the kernel) after 100,000 of
    320,000 bytes: the result says so, the partial file is removed, reading never blocks."""
    spill = tmp_path / "spill"
    done = subprocess.run([sys.executable, "-c", DISK_FULL, str(spill)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    data = b"".join(b"%07d\n" % i for i in range(40_000))
    marker = f"\n\n... [OUTPUT TRUNCATED - {len(data) - 50_000} bytes omitted out of {len(data)} total] ...\n\n"
    assert result["text"] == data[:20_000].decode() + marker + data[-30_000:].decode()
    assert result["truncated"] is True and result["total"] == len(data)
    assert result["spill_path"] is None
    assert result["spill_error"] == f"writing {spill} failed: File too large"
    assert result["exists"] is False and not spill.exists()  # a partial file helps no one on a full disk
    assert result["open"] == []


class HeldPath:
    """A spill path whose directory cannot be made, failing only when the test says so: the
    reader queues chunks while the writer is still opening the file."""

    def __init__(self, path: Path, release: threading.Event) -> None:
        self._path, self.release = path, release
        self.parent = self

    def mkdir(self, **_kwargs: object) -> None:
        self.release.wait(10)
        raise PermissionError(13, "Permission denied")

    def __fspath__(self) -> str:
        return str(self._path)

    def __str__(self) -> str:
        return str(self._path)


def test_the_queue_is_drained_after_a_failed_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    crashed: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: crashed.append(args.exc_value))
    release = threading.Event()
    writer = SpillWriter(HeldPath(tmp_path / "spill", release), depth=2)  # type: ignore[arg-type]
    writer.write(b"1" * 10)
    writer.write(b"2" * 10)  # the queue is full: the next write waits for the writer thread
    reader = threading.Thread(target=lambda: [writer.write(b"3" * 10) for _ in range(20)], daemon=True)
    reader.start()
    release.set()  # now the open fails; the writer must keep taking chunks
    reader.join(10)
    assert not reader.is_alive(), "the reader stayed blocked on the queue after the spill file failed"
    closed: list[str | None] = []
    closer = threading.Thread(target=lambda: closed.append(writer.close()), daemon=True)
    closer.start()
    closer.join(10)
    assert not closer.is_alive(), "close() never returned"
    assert closed == [f"cannot create {tmp_path / 'spill'}: Permission denied"]
    assert crashed == [] and writer._queue.empty() and not (tmp_path / "spill").exists()


class FailingClose:
    """The ``os`` module as capture.py sees it, except that closing the spill file reports an
    I/O error (as close() on NFS can, after the data went nowhere)."""

    def __init__(self, spill: Path) -> None:
        self.spill = str(spill)

    def __getattr__(self, name: str) -> object:
        return getattr(os, name)

    def close(self, fd: int) -> None:
        target = os.readlink(f"/proc/self/fd/{fd}")
        os.close(fd)
        if target == self.spill:
            raise OSError(5, "Input/output error")


def test_a_spill_whose_close_fails_is_reported_and_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_tui.runtime import capture as capture_module

    spill = tmp_path / "spill"
    monkeypatch.setattr(capture_module, "os", FailingClose(spill))
    capture = HeadTailCapture(head=10, tail=10, spill_path=spill)
    capture.feed(b"x" * 100)
    result = capture.finish()
    assert result.truncated and result.spill_path is None
    assert result.spill_error == f"closing {spill} failed: Input/output error"
    assert not spill.exists() and open_files(spill) == []
