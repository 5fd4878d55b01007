"""Head/tail capture: exact limits and marker, spill file, UTF-8 at the cuts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hermes_tui.runtime.capture import HeadTailCapture


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
