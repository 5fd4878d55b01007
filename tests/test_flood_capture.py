"""A flood through the capture path: reused read buffers lent to the spill writer (exact bytes,
bounded memory, never reused while lent), and live output sampled while a stream floods."""

from __future__ import annotations

import asyncio
import hashlib
import threading
from pathlib import Path

import pytest

from hermes_tui.runtime import ExecOutput, Runtime
from hermes_tui.runtime import process as process_module
from hermes_tui.runtime.capture import STDOUT_HEAD, STDOUT_MARKER, STDOUT_TAIL, HeadTailCapture, ReadBuffers
from hermes_tui.runtime.process import LIVE_FLOOD_BYTES, LIVE_FLOOD_INTERVAL, LIVE_INTERVAL, LIVE_MAX_BYTES, _Live


def test_a_lent_buffer_is_not_reused_until_written_and_the_spill_is_exact(tmp_path: Path) -> None:
    """As the pump does: read into a pooled buffer, feed a view of it with its lease, release,
    and overwrite the next buffer at once. The spill must hold every byte as fed."""
    pool = ReadBuffers(4096, count=3)
    capture = HeadTailCapture(head=1000, tail=1000, spill_path=tmp_path / "spill")
    expected = bytearray()
    for index in range(300):
        lease = pool.take()
        size = 1 + (index * 37) % 4096
        lease.buffer[:size] = bytes([index % 251]) * size
        capture.feed(memoryview(lease.buffer)[:size], lease)
        expected += lease.buffer[:size]
        lease.release()
        assert pool._made <= 3  # never more buffers than the pool's count
    result = capture.finish()
    assert (tmp_path / "spill").read_bytes() == bytes(expected)
    omitted = len(expected) - 2000
    assert result.total_bytes == len(expected) and result.truncated
    assert STDOUT_MARKER.format(omitted=omitted, total=len(expected)) in result.text
    assert pool._free and all(lease.holds == 0 for lease in pool._free)


def test_take_waits_while_every_buffer_is_lent() -> None:
    pool = ReadBuffers(16, count=2)
    first, second = pool.take(), pool.take()
    taken: list[object] = []
    waiter = threading.Thread(target=lambda: taken.append(pool.take()), daemon=True)
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive() and not taken  # no third buffer: backpressure, not memory
    second.hold()  # lent to a writer as well
    second.release()  # the reader is done with it, the writer is not
    waiter.join(0.2)
    assert waiter.is_alive()
    second.release()  # written
    waiter.join(5)
    assert taken == [second]
    first.release()
    pool.trim()
    assert pool._free == [] and pool._made == 1


def test_the_spill_writer_releases_buffers_even_when_the_file_cannot_be_made(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    pool = ReadBuffers(64, count=1)
    capture = HeadTailCapture(head=4, tail=4, spill_path=tmp_path / "file" / "spill")  # parent is a file
    for _ in range(20):  # one buffer: each take waits for the writer to give it back
        lease = pool.take()
        lease.buffer[:] = b"y" * 64
        capture.feed(memoryview(lease.buffer), lease)
        lease.release()
    result = capture.finish()
    assert result.spill_path is None and result.spill_error
    assert pool._free and pool._free[0].holds == 0


def test_live_output_of_a_flood_is_sampled_and_every_byte_counted() -> None:
    live = _Live("stdout")
    events: list[ExecOutput] = []

    def flush(one: _Live) -> None:
        event = one.take(None)
        if event is not None:
            events.append(event)

    live.add("e", b"a" * 100, flush)
    assert live.interval == LIVE_INTERVAL
    flush(live)
    live.add("e", b"b" * (LIVE_MAX_BYTES * 4), flush)  # a flood: bytes are dropped
    assert live.flooding and live.interval == LIVE_FLOOD_INTERVAL
    flush(live)
    live.add("e", b"c" * (LIVE_FLOOD_BYTES * 3), flush)  # still flooding: smaller events
    flush(live)
    assert len(events[-1].text) == LIVE_FLOOD_BYTES
    assert live.flooding  # bytes were dropped since the last event
    live.add("e", b"d" * 10, flush)
    flush(live)
    assert not live.flooding and live.interval == LIVE_INTERVAL  # the flood is over
    total = 100 + LIVE_MAX_BYTES * 4 + LIVE_FLOOD_BYTES * 3 + 10
    assert sum(len(e.text) + e.skipped_bytes for e in events) == total
    assert events[-1].text == "d" * 10 and events[-1].skipped_bytes == 0


def test_find_in_a_read_buffer_view() -> None:
    buffer = bytearray(b"xx\x1e\x1fend\x1e" + b"\x00" * 10)  # the view ends before the zeros
    view = memoryview(buffer)[:8]
    assert process_module._find(view, b"\x1e\x1fend") == 2
    assert process_module._find(view, b"\x00") == -1  # never past the view's end
    assert process_module._marker_prefix_length(view, b"\x1e\x1fend!") == 1
    assert process_module._marker_prefix_length(bytes(view), b"\x1e\x1fend!") == 1


FLOOD = """
import sys
out = sys.stdout.buffer
for index in range({lines}):
    line = b'%08d ' % index + b'z' * 90 + b'\\n'
    out.write(line)
out.flush()
"""


def expected_flood(lines: int) -> bytes:
    return b"".join(b"%08d " % index + b"z" * 90 + b"\n" for index in range(lines))


@pytest.mark.timeout(120)
def test_a_flood_through_the_kernel_is_exact_and_its_live_events_few(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    lines = 400_000  # 39.6 MB: many 1 MiB reads, the marker after them
    data = expected_flood(lines)

    async def main() -> None:
        async with Runtime() as rt:
            events = rt.subscribe()
            started = asyncio.get_running_loop().time()
            result = await rt.execute_code(FLOOD.format(lines=lines), session="flood")
            elapsed = asyncio.get_running_loop().time() - started
            live = []
            while (event := events.get_nowait()) is not None:
                if isinstance(event, ExecOutput) and event.exec_id == result.exec_id:
                    live.append(event)
            events.close()
            assert result.status == "success", result.error
            assert result.stdout_bytes_total == len(data)
            omitted = len(data) - STDOUT_HEAD - STDOUT_TAIL
            assert result.output == (data[:STDOUT_HEAD].decode()
                                     + STDOUT_MARKER.format(omitted=omitted, total=len(data))
                                     + data[-STDOUT_TAIL:].decode())
            spill = Path(result.stdout_spill_path)
            assert hashlib.sha256(spill.read_bytes()).digest() == hashlib.sha256(data).digest()
            assert not any(p.name.endswith(".part") for p in spill.parent.iterdir())
            # Every byte is in the live stream or counted as skipped (ASCII: no resync loss)...
            assert sum(len(e.text) + e.skipped_bytes for e in live) == len(data)
            # ...the newest ones are shown...
            assert data.decode().endswith(live[-1].text)
            # ...and a flood is sampled: about 10 events a second, none bigger than 16 KiB.
            assert all(len(e.text) <= LIVE_MAX_BYTES for e in live)
            assert len(live) <= elapsed / LIVE_INTERVAL + 4
            flood_events = [e for e in live if e.skipped_bytes]
            assert flood_events and all(len(e.text) <= LIVE_MAX_BYTES for e in flood_events)

    asyncio.run(main())
