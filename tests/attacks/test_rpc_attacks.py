"""Hostile scripts against the tool channel, run in real kernels over the real transports.

The attacks are written to fail on the channel as it was before issue 13: a quadratic buffer,
a thread per connection, no cap on connections or held bytes, replies sent from the event loop
with a blocking ``sendall``, request files read through symlinks and FIFOs, ``execute_code``
raising when the host ran out of descriptors. The rest guard what the new limits must not
break: a script's own calls among idle connections, big legitimate requests, threads writing
big files at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import stat
from pathlib import Path

import pytest
from conftest import make_config, wait_for
from hostile import HostWatch, huge_line

from hermes_tui.runtime import Runtime
from hermes_tui.runtime.rpc import CHANNEL_THREADS, MAX_CONNECTIONS, MAX_REQUEST_BYTES

MB = 1_000_000


def output_json(result) -> dict:
    assert result.status == "success", (result.status, result.error, result.output[-2000:])
    return json.loads(result.output.strip().splitlines()[-1])


@contextlib.contextmanager
def open_files_limit(extra: int):
    """Lower this process's soft RLIMIT_NOFILE to what it has open now plus ``extra``."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + extra, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def statm(field: int) -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[field]) * os.sysconf("SC_PAGE_SIZE")


@contextlib.contextmanager
def address_space_limit(extra: int):
    """Cap this process's address space at its size now plus ``extra`` bytes: a host that
    reads without bound fails with MemoryError instead of taking the machine's memory.

    The cap is lifted only once the RSS is back near where it was: a host thread still
    reading must not outlive it (it would then take all the machine's memory)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    rss = statm(1)
    resource.setrlimit(resource.RLIMIT_AS, (statm(0) + extra, hard))
    try:
        yield
    finally:
        if wait_for(lambda: statm(1) < rss + 256 * MB, timeout=10):
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


# -- the socket transport -----------------------------------------------------------------


@pytest.fixture
async def runtime(hermes_home: Path):
    """A started Runtime whose kernels are not sandboxed: these scripts open sockets to the
    tool channel by path, and what is tested is the channel's own bounds (the sandbox refuses
    such a socket outright: tests/attacks/test_sandbox.py)."""
    async with Runtime(make_config("code_execution:\n  sandbox: off\n"), home=hermes_home) as rt:
        yield rt


async def test_a_huge_line_is_refused_at_the_cap_quickly_and_never_held_whole(runtime: Runtime) -> None:
    await runtime.execute_code("1", session="s")
    watch = HostWatch()
    size = MAX_REQUEST_BYTES + (16 << 20)
    (result,) = await watch.during(runtime.execute_code(huge_line(size), session="s",
                                                        timeout=20))
    out = output_json(result)
    reply = json.loads(out["reply"])
    assert reply["id"] is None
    assert reply["result"]["error"].startswith(f"request too large: over {MAX_REQUEST_BYTES} bytes")
    assert out["sent"] < size  # refused (connection closed) before the script could send it all
    assert out["elapsed"] < 3.0  # linear: the old buffer took ~28 s of host CPU for this
    assert watch.rss_growth < 100 * MB, watch.rss_growth / MB  # at most the cap, held once
    assert watch.lag < 0.5, watch.lag
    after = await runtime.execute_code("from hermes_tools import read_file\nprint('error' in read_file('nope'))",
                                       session="s")
    assert after.output == "True\n" and after.tool_calls_made == 1


STREAMS = """
import json, os, socket, threading
def stream(out, index):
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(os.environ["HERMES_RPC_SOCKET"])
    sock.settimeout(5)
    try:
        chunk = b"x" * (1 << 20)
        for _ in range(MIB):
            sock.sendall(chunk)
        out[index] = "held"
    except OSError:
        pass
    sock.settimeout(1)
    try:
        data = sock.recv(4096)
        if data:
            out[index] = json.loads(data.decode().splitlines()[0])["result"]["error"]
    except (OSError, ValueError):
        pass
    sock.close()
out = {}
threads = [threading.Thread(target=stream, args=(out, i)) for i in range(COUNT)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps(sorted(out.values())))
"""


async def test_many_connections_streaming_big_lines_hold_a_bounded_amount(runtime: Runtime) -> None:
    await runtime.execute_code("1", session="s")
    watch = HostWatch()
    code = STREAMS.replace("MIB", "40").replace("COUNT", "8")
    (result,) = await watch.during(runtime.execute_code(code, session="s", timeout=20))
    outcomes = output_json(result)
    refused = [o for o in outcomes if o.startswith("request refused: this kernel's unfinished tool requests")]
    assert refused, outcomes  # past HELD_BYTES of unfinished lines the host refuses rather than hold more
    # Before, all 8 x 40 MiB lines were held (335 MB and their copies). The allocator keeps
    # some freed buffers, so the bound allows for them above HELD_BYTES.
    assert watch.rss_growth < 200 * MB, watch.rss_growth / MB


async def test_big_requests_from_threads_of_one_script_wait_for_room_instead_of_failing(runtime: Runtime,
                                                                                       tmp_path: Path) -> None:
    # Two 40 MiB writes at once pass HELD_BYTES together: the second line waits (its
    # connection is not read) until the first is answered, and the shared connection lives.
    result = await runtime.execute_code(
        "import threading\nfrom hermes_tools import write_file\nout = {}\n"
        "def write(name):\n    out[name] = write_file(name, name[0] * (40 << 20)).get('bytes_written')\n"
        "threads = [threading.Thread(target=write, args=(n,)) for n in ('a.txt', 'b.txt')]\n"
        "[t.start() for t in threads]\n[t.join() for t in threads]\nprint(sorted(out.items()))",
        session="s", cwd=tmp_path, timeout=20,
    )
    assert result.output == f"[('a.txt', {40 << 20}), ('b.txt', {40 << 20})]\n", (result.error, result.output)
    assert (tmp_path / "b.txt").stat().st_size == 40 << 20


FLOOD = """
import json, os, resource, select, socket, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
path = os.environ["HERMES_RPC_SOCKET"]
socks = []
for _ in range(COUNT):
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(path)
    socks.append(sock)
time.sleep(0.5)  # the host takes the last ones from its backlog
said = set()
open_count = 0
for sock in socks:
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    if not poller.poll(0):
        open_count += 1
        continue
    data = sock.recv(4096)
    if data:
        said.add(json.loads(data.decode().splitlines()[0])["result"]["error"].split(":")[1].strip())
for sock in socks:
    sock.close()
print(json.dumps({"open": open_count, "said": sorted(said)}))
"""


async def test_a_connection_flood_is_capped_per_kernel_on_a_bounded_number_of_threads(runtime: Runtime) -> None:
    await runtime.execute_code("1", session="s")
    watch = HostWatch()
    (result,) = await watch.during(runtime.execute_code(FLOOD.replace("COUNT", "1500"), session="s", timeout=20))
    out = output_json(result)
    assert out["open"] <= MAX_CONNECTIONS, out
    # Past the cap the oldest silent connection is closed to make room, with one line saying so;
    # one accepted under IDLE_GRACE ago is not idle yet: the newcomer is refused instead.
    assert set(out["said"]) <= {"closed an idle connection", "too many connections"} and out["said"], out
    # The channel's few threads (and some slack for the runtime's own); 1,500 threads before.
    assert watch.thread_growth <= CHANNEL_THREADS + 4, watch.thread_growth


IDLE_THEN_CALL = """
import json, os, socket, time
from hermes_tools import read_file
path = os.environ["HERMES_RPC_SOCKET"]
first = read_file("f.txt")["content"]
idle = [socket.socket(socket.AF_UNIX) for _ in range(40)]
for sock in idle:
    sock.connect(path)
half = []
for _ in range(5):  # connections holding half a request: never closed to make room, never waited on
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(path)
    try:
        sock.sendall(b'{"id": 1, "token": "')
    except (BrokenPipeError, ConnectionResetError):
        pass  # past the cap the host may refuse it before the bytes are sent: that is allowed too
    half.append(sock)
again = read_file("f.txt")["content"]
time.sleep(1.2)  # past IDLE_GRACE: the idle ones may now be closed to make room
pid = os.fork()
if pid == 0:  # a forked child connects afresh: a silent connection makes room for it
    os._exit(0 if read_file("f.txt").get("content") == first else 1)
_, status = os.waitpid(pid, 0)
print(json.dumps({"first": first, "again": again, "child": os.waitstatus_to_exitcode(status)}))
"""


async def test_idle_and_half_open_connections_do_not_block_the_scripts_own_calls(runtime: Runtime,
                                                                                  tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("hello\n")
    result = await runtime.execute_code(IDLE_THEN_CALL, session="s", cwd=tmp_path, timeout=20)
    out = output_json(result)
    assert out == {"first": "     1|hello\n", "again": "     1|hello\n", "child": 0}
    assert result.tool_calls_made == 3


HOLD = """
import os, resource, socket, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
def connect():
    deadline = time.time() + 2
    while time.time() < deadline:
        sock = socket.socket(socket.AF_UNIX)
        sock.settimeout(2)
        try:
            sock.connect(os.environ["HERMES_RPC_SOCKET"])
            return sock
        except BlockingIOError:  # the host's backlog is full: it is still accepting
            sock.close()
            time.sleep(0.001)
        except OSError:
            sock.close()
            return None
held = []
for _ in range(COUNT):
    sock = connect()
    if sock is None:
        break
    held.append(sock)
open(MARKER, "w").close()
time.sleep(3)
print(len(held))
"""


async def test_other_sessions_run_while_one_kernel_holds_hundreds_of_connections(runtime: Runtime,
                                                                                 tmp_path: Path) -> None:
    await runtime.execute_code("1", session="attacker")
    marker = tmp_path / "holding"
    code = HOLD.replace("COUNT", "400").replace("MARKER", repr(str(marker)))
    with open_files_limit(300):  # the host had 1,017 held connections fill a 1,024 limit
        attack = asyncio.ensure_future(runtime.execute_code(code, session="attacker", timeout=20))
        for _ in range(500):
            if marker.exists() or attack.done():
                break
            await asyncio.sleep(0.01)
        assert marker.exists(), attack.result() if attack.done() else "the attack never got going"
        other = await runtime.execute_code("print('still here')", session="other")
        held = await attack
    assert other.status == "success" and other.output == "still here\n", (other.status, other.error)
    assert held.status == "success" and int(held.output) == 400


async def test_execute_code_turns_a_host_failure_into_an_error_result(runtime: Runtime) -> None:
    await runtime.execute_code("1", session="warm")
    with open_files_limit(2):  # a new kernel needs pipes and a socket: none can be had
        result = await runtime.execute_code("print(1)", session="new")
    assert result.status == "error" and result.exit_code is None
    assert result.error.startswith("the host could not start the kernel") and "Too many open files" in result.error
    assert "\n" not in result.error and "Traceback" not in result.error + result.output
    again = await runtime.execute_code("print(2)", session="new")
    assert again.status == "success" and again.output == "2\n"


UNREAD_REPLIES = """
import json, os, socket, time, hermes_tools
sock = socket.socket(socket.AF_UNIX)
sock.connect(os.environ["HERMES_RPC_SOCKET"])
token = hermes_tools._token()
batch = b"".join((json.dumps({"id": i, "token": token, "tool": "web_search", "args": {"query": "x" * 200}})
                  + "\\n").encode() for i in range(COUNT))
sock.setblocking(False)
sent = 0
deadline = time.time() + 3
while sent < len(batch) and time.time() < deadline:  # never reads a reply
    try:
        sent += sock.send(batch[sent:])
    except BlockingIOError:
        time.sleep(0.01)
open(MARKER, "w").close()
time.sleep(1)
print(sent)
"""


async def test_a_script_that_never_reads_its_replies_cannot_block_the_event_loop(runtime_factory,
                                                                                 tmp_path: Path) -> None:
    rt = await runtime_factory("code_execution:\n  max_tool_calls: 100000\n  sandbox: off\n")
    await rt.execute_code("1", session="attacker")
    marker = tmp_path / "sent"
    code = UNREAD_REPLIES.replace("COUNT", "10000").replace("MARKER", repr(str(marker)))
    watch = HostWatch()

    async def meanwhile():
        while not marker.exists():
            await asyncio.sleep(0.01)
        return await rt.execute_code("print('still here')", session="other")

    attack, other = await asyncio.wait_for(watch.during(rt.execute_code(code, session="attacker", timeout=20),
                                                        meanwhile()), 30)
    assert other.status == "success" and other.output == "still here\n"
    assert attack.status == "success", attack.error
    # The old channel's sendall on the loop blocked it for good; a loaded machine's hiccup is
    # not that (the lag's figure is a benchmark's: tests/bench/bench_rpc.py).
    assert watch.lag < 2.0, watch.lag


async def test_a_request_over_the_cap_is_refused_in_the_script_and_the_channel_survives(runtime: Runtime,
                                                                                        tmp_path: Path) -> None:
    result = await runtime.execute_code(
        "from hermes_tools import read_file, write_file\n"
        f"print(write_file('big.txt', 'x' * {MAX_REQUEST_BYTES + 1})['error'])\n"
        "print(write_file('small.txt', 'ok')['bytes_written'])",
        session="s", cwd=tmp_path,
    )
    lines = result.output.splitlines()
    assert lines[0].startswith("write_file: request too large:") and "write a big file in parts" in lines[0]
    assert lines[1] == "2" and not (tmp_path / "big.txt").exists()
    assert result.tool_calls_made == 1


# -- the file transport -------------------------------------------------------------------

FILE_CONFIG = "code_execution:\n  rpc_transport: file\n"

WAIT_FOR_REPLIES = """
import json, os, time
from hermes_tools import read_file
folder = os.environ["HERMES_RPC_DIR"]
def reply(name):
    path = os.path.join(folder, "responses", name + ".json")
    deadline = time.time() + 5
    while (os.path.islink(path) or not os.path.exists(path)) and time.time() < deadline:
        time.sleep(0.01)
    with open(path) as handle:
        return json.load(handle)["result"]["error"]
replies = {name: reply(name) for name in NAMES}
print(json.dumps({"replies": replies, "legit": read_file("f.txt")["content"]}))
"""


async def rpc_dir(rt: Runtime, session: str, cwd: Path) -> Path:
    result = await rt.execute_code("import os\nprint(os.environ['HERMES_RPC_DIR'])", session=session, cwd=cwd)
    return Path(result.output.strip())


async def unblock_fifos(paths: list[Path], flags: int) -> None:
    """Hold each FIFO's other end open for a moment: a host blocked opening one goes on, and
    so do opens that were queued behind it."""
    held = []
    for path in paths:
        with contextlib.suppress(OSError):
            held.append(os.open(path, flags | os.O_NONBLOCK))
    await asyncio.sleep(0.3)
    for fd in held:
        os.close(fd)


async def test_a_request_file_symlinked_to_dev_zero_is_refused_without_reading(runtime_factory,
                                                                               tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("hello\n")
    zero = None
    # The old host read /dev/zero until the machine ran out: the cap turns that into a
    # MemoryError, and holds until this runtime (and any thread of its still reading) is done.
    with address_space_limit(2 << 30):
        rt = await runtime_factory(FILE_CONFIG)
        try:
            zero = await rpc_dir(rt, "s", tmp_path) / "requests" / "zero.json"
            watch = HostWatch()
            os.symlink("/dev/zero", zero)  # what a hostile script does, done from here
            (result,) = await watch.during(rt.execute_code(WAIT_FOR_REPLIES.replace("NAMES", repr(["zero"])),
                                                           session="s", cwd=tmp_path, timeout=10))
        finally:
            with contextlib.suppress(OSError):
                os.unlink(zero)
            await rt.aclose()
    out = output_json(result)
    assert out["replies"] == {
        "zero": "request refused: requests/zero.json is a symbolic link; a request must be a regular file"}
    assert out["legit"] == "     1|hello\n"
    assert watch.rss_growth < 50 * MB, watch.rss_growth / MB


async def test_a_request_file_that_is_a_fifo_is_refused_without_blocking(runtime_factory, tmp_path: Path) -> None:
    rt = await runtime_factory(FILE_CONFIG)
    (tmp_path / "f.txt").write_text("hello\n")
    fifo = await rpc_dir(rt, "s", tmp_path) / "requests" / "fifo.json"
    os.mkfifo(fifo)  # done from here, so that a host stuck opening it can be freed
    try:
        result = await rt.execute_code(WAIT_FOR_REPLIES.replace("NAMES", repr(["fifo"])), session="s",
                                       cwd=tmp_path, timeout=10)
    finally:
        await unblock_fifos([fifo], os.O_WRONLY)
    out = output_json(result)
    assert out["replies"] == {
        "fifo": "request refused: requests/fifo.json is a FIFO; a request must be a regular file"}
    assert out["legit"] == "     1|hello\n"
    assert not os.path.lexists(fifo)


async def test_a_request_file_over_the_cap_is_refused_without_reading_it(runtime_factory, tmp_path: Path) -> None:
    rt = await runtime_factory(FILE_CONFIG)
    (tmp_path / "f.txt").write_text("hello\n")
    requests = await rpc_dir(rt, "s", tmp_path) / "requests"
    with open(requests / "big.json", "wb") as handle:  # sparse: costs no disk
        handle.truncate(MAX_REQUEST_BYTES + 1)
    watch = HostWatch()
    (result,) = await watch.during(rt.execute_code(WAIT_FOR_REPLIES.replace("NAMES", repr(["big"])), session="s",
                                                   cwd=tmp_path, timeout=10))
    out = output_json(result)
    assert out["replies"]["big"].startswith(f"request too large: over {MAX_REQUEST_BYTES} bytes")
    assert watch.rss_growth < 50 * MB, watch.rss_growth / MB


async def test_planted_reply_files_cannot_block_the_host(runtime_factory, tmp_path: Path) -> None:
    rt = await runtime_factory(FILE_CONFIG)
    (tmp_path / "f.txt").write_text("hello\n")
    folder = await rpc_dir(rt, "s", tmp_path)
    names = [f"n{i}" for i in range(8)]  # more than the host's default thread pool has threads
    planted = []
    try:
        for name in names:
            # Where the old host wrote its reply first: a FIFO with no reader blocks that write.
            os.mkfifo(folder / "responses" / f".{name}.tmp")
            planted.append(folder / "responses" / f".{name}.tmp")
            os.symlink("/etc/hostname", folder / "responses" / f"{name}.json")
            (folder / "requests" / f"{name}.json").write_text('{"id": 1, "tool": "read_file"}')
        result = await rt.execute_code(WAIT_FOR_REPLIES.replace("NAMES", repr(names)), session="s", cwd=tmp_path,
                                       timeout=10)
        other = await asyncio.wait_for(rt.execute_code("print('still here')", session="other"), 15)
    finally:
        await unblock_fifos(planted, os.O_RDONLY)
    out = output_json(result)
    assert set(out["replies"].values()) == {"unauthorized: this request does not carry the kernel's token"}
    assert out["legit"] == "     1|hello\n" and other.output == "still here\n"
    for name in names:  # the reply replaced the planted symlink; the FIFO was left alone
        assert not (folder / "responses" / f"{name}.json").is_symlink()
        assert stat.S_ISFIFO(os.lstat(folder / "responses" / f".{name}.tmp").st_mode)
    assert Path("/etc/hostname").read_text()  # never written through


@pytest.mark.parametrize("transport", ["socket", "file"])
async def test_a_big_legitimate_request_still_works(runtime_factory, tmp_path: Path, transport: str) -> None:
    rt = await runtime_factory(f"code_execution:\n  rpc_transport: {transport}\n")
    result = await rt.execute_code(
        "from hermes_tools import write_file, read_file\n"
        "print(write_file('big.txt', 'y' * (8 << 20))['bytes_written'])",
        session="s", cwd=tmp_path,
    )
    assert result.output == f"{8 << 20}\n", (result.error, result.output)
    assert (tmp_path / "big.txt").stat().st_size == 8 << 20


UNREAD_FLOOD = """
import json, os, socket, time
import hermes_tools
from hermes_tools import read_file
cfg = hermes_tools._CONFIG
with open("wide.txt", "w") as f:
    f.write(("w" * 1999 + "\\n") * 2000)  # 4 MB a reply
s = socket.socket(socket.AF_UNIX)
s.connect(cfg["socket"])
req = json.dumps({"id": 1, "token": hermes_tools._token(), "tool": "read_file", "args": {"path": "wide.txt", "limit": 2000}})
s.sendall(((req + "\\n") * 60).encode())  # 60 requests in one write; their replies never read
time.sleep(2)
t = time.time()
ok = "content" in read_file("wide.txt", limit=1)
print(json.dumps({"ok": ok, "took": time.time() - t}))
s.close()
"""


async def test_replies_a_script_never_reads_hold_a_bounded_amount_of_host_memory(runtime: Runtime,
                                                                                 tmp_path: Path) -> None:
    watch = HostWatch()
    (result,) = await watch.during(runtime.execute_code(UNREAD_FLOOD, session="s", cwd=tmp_path, timeout=20))
    out = output_json(result)
    assert out["ok"] and out["took"] < 8, out  # answered beside the flood, not after it (seconds: CI is loaded)
    # Before, every line became a job and all 60 replies (240 MB of text, more as JSON) were
    # queued; now only a few are in the making.
    assert watch.rss_growth < 160 * MB, watch.rss_growth / MB


ORPHAN = """
import os, threading, time
from hermes_tools import terminal
threading.Thread(target=lambda: terminal("sleep 2; echo late > late.txt", timeout=60), daemon=True).start()
time.sleep(0.5)  # the command is running when the script returns
"""


async def test_a_tool_call_a_script_left_running_ends_with_its_run(runtime_factory, tmp_path: Path) -> None:
    """A daemon thread's terminal() must not run on into the next script (or the next dialog)."""
    runtime = await runtime_factory('approvals:\n  mode: "off"\n')
    first = await runtime.execute_code(ORPHAN, session="s", cwd=tmp_path)
    assert first.status == "success"
    later = await runtime.execute_code("import time, os\ntime.sleep(3)\nprint(os.path.exists('late.txt'))",
                                       session="s", cwd=tmp_path)
    assert later.output == "False\n", "the command of a finished run went on and wrote its file"


SLOW_READ = """
import os, threading
from hermes_tools import read_file
with open("huge.txt", "wb") as handle:
    handle.write(b"x" * 9000 + b"\\n")
    handle.truncate(3 << 29)  # 1.5 GiB of sparse zeros: counting its lines takes seconds
threading.Thread(target=read_file, args=("huge.txt",), daemon=True).start()
print("reading")
"""


async def test_a_file_tool_running_for_seconds_does_not_hold_up_the_close(runtime_factory, tmp_path: Path) -> None:
    # The thread leading the channel answers a small request itself (issue 38): closing the
    # runtime (the app's quit) must not wait for it (it waited 5 s, then tore down under it).
    rt = await runtime_factory()
    result = await rt.execute_code(SLOW_READ, session="slow", cwd=tmp_path)
    assert result.output == "reading\n", (result.error, result.output)
    await asyncio.sleep(0.5)  # the read is under way in the host
    loop = asyncio.get_running_loop()
    started = loop.time()
    await asyncio.wait_for(rt.aclose(), 10)
    assert loop.time() - started < 1.5, loop.time() - started
