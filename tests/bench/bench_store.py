"""Benchmark of the sessions store, SQLite against PostgreSQL. Prints figures; asserts nothing.

    python tests/bench/bench_store.py [--chunks 3000] [--turns 20] [--messages 2000]
                                      [--backend sqlite|postgresql|both]

Both backends run in this one process, one after the other, through the real ``SessionStore``
(its writer thread): SQLite is a file in a temp dir, opened as the app opens it (WAL,
``synchronous=NORMAL``); PostgreSQL is a server this bench starts itself
(``tests/pg_server.py``, ``PostgresServer(fast=False)``: fsync on, the default durability),
reached over its Unix socket, and destroyed at the end, on error too. Without PostgreSQL's
programs (or psycopg) only SQLite runs. Each figure is a table with the backends side by side:

1. streaming: a reply of N chunks stored as the agent stores it (``agent/loop.py``
   ``_StreamedText``: ``update_message`` with the whole text so far, awaited through
   ``SessionStore.call``, one write in flight; chunks that arrive meanwhile go in the next).
   First with one commit per chunk (chunks slower than commits: the most writes there can be):
   per-chunk commit latency (from submitting the write to its future resolving, i.e.
   committed) median / p90 / p99 / max, early against late chunks (the row grows: each write
   rewrites the whole reply so far), the total, and on PostgreSQL the WAL it wrote. Then the same reply through a real ``Agent`` from the scripted model server
   (``tests/fake_models.py``, real HTTP and SSE): wall time and how many writes the batching
   needed. (There the event loop is busy parsing the stream, so after each blocking round trip
   to the server the writer thread waits for the GIL, up to ``sys.getswitchinterval()``: a
   PostgreSQL unit is three round trips, BEGIN, the statement, COMMIT; SQLite's is one call.)
2. a run of M turns on a real ``Agent`` + ``Runtime`` + ``SessionStore`` against the scripted
   model server, each turn model -> execute_code -> model -> reply (as bench_agent.py): turn
   time median / p90 and the total (after one warm-up turn that starts the kernel), and the
   store's share (writes per turn, sum of their commit latencies). The backends take turns,
   one turn at a time (and the 5 loads of figure 3 alternate too), so other work on the
   machine weighs on both alike.
3. opening a stored session of K messages (turns of user / assistant-with-tool-call / tool /
   assistant messages, usage rows; built with the statement functions): ``load_session``
   through the writer thread, median of 5.
4. the servers: versions, durability settings (PostgreSQL's fsync, synchronous_commit,
   wal_sync_method; SQLite's journal mode and synchronous), the transport, and for scale how
   long this disk takes to ``fdatasync`` 8 KiB (what a durable commit waits for).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import random
import shutil
import signal
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pg_server  # noqa: E402
from fake_models import FakeModelServer  # noqa: E402

from hermes_tui.storage import sessions as db  # noqa: E402
from hermes_tui.storage.writer import SessionStore  # noqa: E402
from hermes_tui.config.store_url import StoreURL, parse_store_url  # noqa: E402

BACKENDS = ("sqlite", "postgresql")


# -- helpers ------------------------------------------------------------------------------


def pct(values: list[float], p: float) -> float:
    """The ``p``-th percentile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(p / 100 * len(ordered))) - 1))]


def ms(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1000:.3f} ms" if seconds < 0.01 else f"{seconds * 1000:.1f} ms"


class TimedStore(SessionStore):
    """A SessionStore that notes each write's commit latency: from :meth:`submit` to its
    future resolving (the writer thread resolves it once the unit is committed)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.commits: list[tuple[str, float]] = []
        super().__init__(*args, **kwargs)

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future[Any]:
        started = time.perf_counter()
        future = super().submit(fn, *args, **kwargs)
        name = getattr(fn, "__name__", "?")
        future.add_done_callback(lambda _f: self.commits.append((name, time.perf_counter() - started)))
        return future


class Backends:
    """Where each backend's stores go: a fresh SQLite file, or a fresh database on the one
    PostgreSQL server this bench started."""

    def __init__(self, root: Path, wanted: list[str], server: pg_server.PostgresServer | None) -> None:
        self.root = root
        self.wanted = wanted
        self.server = server
        self._count = 0

    def target(self, backend: str) -> Path | StoreURL:
        self._count += 1
        if backend == "sqlite":
            return self.root / f"sqlite-{self._count}" / "sessions.db"
        assert self.server is not None
        return parse_store_url(self.server.url(self.server.new_database("bench")), origin="bench")

    def store(self, backend: str) -> TimedStore:
        return TimedStore(self.target(backend))


def table(title: str, rows: list[tuple[str, dict[str, str]]], backends: list[str]) -> None:
    """Print ``rows`` (label, {backend: cell}) with the backends side by side."""
    width = max([len(label) for label, _ in rows] + [10])
    cells = [max([len(r.get(b, "")) for _, r in rows] + [len(b)]) for b in backends]
    print(f"\n{title}")
    print("  " + " " * width + "  " + "  ".join(b.rjust(w) for b, w in zip(backends, cells)))
    for label, row in rows:
        print("  " + label.ljust(width) + "  " + "  ".join(row.get(b, "-").rjust(w) for b, w in zip(backends, cells)))


# -- 1. streaming, one commit per chunk ---------------------------------------------------------


WORDS = ("the", "session", "store", "commit", "reply", "kernel", "model", "result", "value", "a", "of", "to",
         "is", "in", "that", "print", "mean", "list", "file", "server", "chunk", "text", "every", "when")


def chunk_text(chunks: int) -> list[str]:
    """A reply's pieces, 4 characters each as bench_agent.py streams them, of varied words (text
    that compresses about as prose does: PostgreSQL compresses a long row, and ``tok tok`` would
    make that free)."""
    rng = random.Random(7)
    text = ""
    while len(text) < chunks * 4:
        text += rng.choice(WORDS) + rng.choice((" ", " ", " ", ", ", ".\n"))
    return [text[i:i + 4] for i in range(0, chunks * 4, 4)]


async def stream_direct(store: TimedStore, chunks: int) -> dict[str, Any]:
    """The agent's writes for a streamed reply when every chunk gets its own commit."""
    await store.call(db.create_session, "stream", "custom", "m", "/tmp")
    await store.call(db.start_turn, "stream", "stream-t", "user", "stream")
    reply_id = await store.call(db.add_message, "stream", "stream-t", "assistant", "", status="streaming")
    text = ""
    latencies: list[float] = []
    awaited: list[float] = []
    wal_before = await store.call(wal_position)
    started = time.perf_counter()
    for piece in chunk_text(chunks):
        text += piece
        resolved: list[float] = []
        submitted = time.perf_counter()
        future = store.submit(db.update_message, reply_id, text, "streaming")
        future.add_done_callback(lambda _f, out=resolved: out.append(time.perf_counter()))
        await asyncio.wrap_future(future)
        back = time.perf_counter()
        latencies.append(resolved[0] - submitted)
        awaited.append(back - submitted)
    await store.call(db.update_message, reply_id, text, "done")
    total = time.perf_counter() - started
    wal = await store.call(wal_position)
    return {"latencies": latencies, "awaited": awaited, "total": total,
            "wal": None if wal is None or wal_before is None else wal - wal_before, "length": len(text)}


def wal_position(d: db.Database) -> int | None:
    """PostgreSQL's write-ahead log position in bytes (None on SQLite)."""
    if d.kind != "postgresql":
        return None
    return int(d.execute("SELECT CAST(pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0') AS BIGINT)").fetchone()[0])


# -- 2. a real Agent against the scripted model server -------------------------------------------


class AgentRig:
    """One backend's real Agent + Runtime against its own scripted model server."""

    def __init__(self, store: TimedStore, home: Path) -> None:
        self.store = store
        self.home = home
        self.ended = asyncio.Event()
        self.statuses: list[str] = []

    async def open(self, stack: contextlib.AsyncExitStack) -> None:
        from hermes_tui.agent.events import TurnEnded
        from hermes_tui.agent.loop import Agent
        from hermes_tui.agent.models.providers import resolve_provider
        from hermes_tui.config import parse_config
        from hermes_tui.runtime import Runtime

        self.server = stack.enter_context(FakeModelServer())
        config = parse_config(f"model:\n  provider: custom\n  default: m\n  base_url: {self.server.url}\n"
                              "  max_retries: 0\n")
        runtime = await stack.enter_async_context(Runtime(config, home=self.home))

        def listener(event: Any) -> None:
            if isinstance(event, TurnEnded):
                self.statuses.append(event.status)
                self.ended.set()

        self.agent = Agent(runtime, self.store, "bench", settings=resolve_provider(config, self.home, {}),
                           listener=listener, cwd=str(self.home))
        await self.agent.open()
        stack.push_async_callback(self.agent.aclose)

    async def turn(self, text: str, *replies: dict[str, Any]) -> tuple[float, list[tuple[str, float]]]:
        """Run one turn; its wall time and the store writes it made (name, commit latency)."""
        self.server.add(*replies)
        self.ended.clear()
        before = len(self.store.commits)
        started = time.perf_counter()
        await self.agent.submit(text)
        await self.ended.wait()
        wall = time.perf_counter() - started
        return wall, self.store.commits[before:]


def step(index: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The model's two replies of a turn: call execute_code, then answer."""
    return ({"text": "Running.", "tool_calls": [{"name": "execute_code", "arguments": {"code": f"print({index} * 2)"}}]},
            {"text": f"Result {index * 2}."})


async def agent_runs(stores: dict[str, TimedStore], root: Path, chunks: int, turns: int) -> dict[str, dict[str, Any]]:
    """On each backend: one warm-up turn (starts the kernel), a streamed reply of ``chunks``
    chunks, then ``turns`` timed turns (model -> execute_code -> model -> reply), as
    bench_agent.py runs them. The backends take turns, one turn at a time, so what else the
    machine is doing weighs on both alike."""
    out: dict[str, dict[str, Any]] = {backend: {} for backend in stores}
    async with contextlib.AsyncExitStack() as stack:
        rigs: dict[str, AgentRig] = {}
        for backend, store in stores.items():
            home = root / f"home-{backend}"
            home.mkdir()
            rigs[backend] = AgentRig(store, home)
            await rigs[backend].open(stack)
        for rig in rigs.values():  # first-call costs (imports, the HTTP client, the kernel): not counted
            await rig.turn("warm-up", *step(-1))
        for backend, rig in rigs.items():
            wall, commits = await rig.turn("stream", {"text": "".join(chunk_text(chunks)), "chunk": 4})
            out[backend]["stream"] = {"wall": wall, "updates": [lat for name, lat in commits if name == "update_message"]}
        for backend in rigs:
            out[backend]["turns"] = {"times": [], "writes": [], "store": [], "done": 0}
        for index in range(turns):
            for backend, rig in rigs.items():
                wall, commits = await rig.turn(f"turn {index}", *step(index))
                figures = out[backend]["turns"]
                figures["times"].append(wall)
                figures["writes"].append(len(commits))
                figures["store"].append(sum(lat for _, lat in commits))
                figures["done"] += rig.statuses[-1] == "done"
    return out


# -- 3. opening a stored session ------------------------------------------------------------------


def stored_turn(d: db.Database, session_id: str, index: int) -> None:
    """One turn as the agent stores it: user, assistant with an execute_code call, the tool
    result, the reply, two usage rows; one transaction."""
    turn_id = f"turn-{index}"
    call_id = f"call_{index}"
    code = f"import statistics\nvalues = [{index}, {index + 1}, {index + 2}]\nprint(statistics.mean(values))\n"
    arguments = json.dumps({"code": code})
    with d.transaction():
        db.start_turn(d, session_id, turn_id, "user",
                      f"Question {index}: what is the mean of the next three numbers after {index}? " * 2)
        call_message = db.add_message(d, session_id, turn_id, "assistant", "Let me compute that.", tool_calls=[
            {"id": call_id, "type": "function", "function": {"name": "execute_code", "arguments": arguments}}])
        db.start_tool_call(d, session_id, turn_id, call_message, call_id, "execute_code", arguments)
        result = {"status": "ok", "output": f"{index + 1}.0\n", "error": None, "duration_s": 0.012,
                  "kernel": {"session": "bench", "reused": True, "state_reset": False},
                  "stdout_bytes_total": 6, "stderr_bytes_total": 0}
        db.finish_tool_call(d, session_id, turn_id, call_id, "ok", result, json.dumps(result), f"exec-{index}")
        reply = db.add_message(d, session_id, turn_id, "assistant",
                               f"The mean is {index + 1}.0. " + "It is the middle value of three in a row. " * 6)
        for message_id in (call_message, reply):
            db.add_usage(d, session_id, turn_id, message_id, {
                "provider": "custom", "model": "m", "input_tokens": 1200 + index, "output_tokens": 80,
                "cost_usd": 0.0004, "cost_source": "price table", "latency_s": 0.8})
        db.end_turn(d, turn_id, "done")


def build_session(store: TimedStore, messages: int) -> float:
    """Store a session of about ``messages`` messages (4 a turn); how long that took."""
    store.sync(db.create_session, BIG, "custom", "m", "/tmp")
    started = time.perf_counter()
    for index in range((messages + 3) // 4):
        store.sync(stored_turn, BIG, index)
    return time.perf_counter() - started


def load_once(store: TimedStore) -> tuple[float, int]:
    """``load_session`` through the writer thread: its time and how many messages it read."""
    started = time.perf_counter()
    loaded = store.sync(db.load_session, BIG)
    return time.perf_counter() - started, len(loaded.messages) if loaded else 0


BIG = "big-session"


# -- 4. what ran ------------------------------------------------------------------------------------


def pg_settings(d: db.Database) -> dict[str, Any]:
    row = d.execute("SELECT current_setting('server_version'), current_setting('fsync'), "
                    "current_setting('synchronous_commit'), current_setting('wal_sync_method'), "
                    "current_setting('full_page_writes'), CAST(inet_server_addr() AS TEXT), "
                    "current_setting('unix_socket_directories')").fetchone()
    keys = ("version", "fsync", "synchronous_commit", "wal_sync_method", "full_page_writes", "address", "socket_dir")
    return dict(zip(keys, row))


def sqlite_settings(d: db.Database) -> dict[str, Any]:
    return {"version": sqlite3.sqlite_version, "journal_mode": d.execute("PRAGMA journal_mode").fetchone()[0],
            "synchronous": {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}.get(
                d.execute("PRAGMA synchronous").fetchone()[0], "?")}


def fdatasync_latency(directory: Path, rounds: int = 200) -> float:
    """Median time to write 8 KiB and ``fdatasync`` it, in ``directory``."""
    path = directory / "fdatasync-probe"
    times = []
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        block = os.urandom(8192)
        for index in range(rounds):
            os.pwrite(fd, block, (index % 16) * 8192)
            started = time.perf_counter()
            os.fdatasync(fd)
            times.append(time.perf_counter() - started)
    finally:
        os.close(fd)
        path.unlink()
    return statistics.median(times)


# -- main -------------------------------------------------------------------------------------------


def load_average() -> str:
    """The 1-minute load average (other work on the machine skews the figures)."""
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:
        return "?"


def postgres_problem() -> str | None:
    """Why PostgreSQL cannot run here, or None."""
    if pg_server.bindir() is None:
        return "PostgreSQL is not installed (initdb not found: apt-get install -y postgresql)"
    missing = [name for name in ("psycopg", "psycopg_pool") if importlib.util.find_spec(name) is None]
    if missing:
        return f"{' and '.join(missing)} not installed (pip install 'psycopg[binary,pool]')"
    return None


def run(args: argparse.Namespace, root: Path) -> None:
    wanted = list(BACKENDS) if args.backend == "both" else [args.backend]
    server: pg_server.PostgresServer | None = None
    if "postgresql" in wanted:
        problem = postgres_problem()
        if problem:
            print(f"{problem}: running SQLite only")
            wanted = ["sqlite"]
    if not wanted:
        return
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load average {load_average()}; "
          f"backends: {', '.join(wanted)}")
    try:
        if "postgresql" in wanted:
            server = pg_server.PostgresServer(fast=False)
            started = time.perf_counter()
            server.start()
            print(f"PostgreSQL started in {time.perf_counter() - started:.1f} s ({server.base})")
        backends = Backends(root, wanted, server)
        figures(args, backends, root)
    finally:
        if server is not None:
            server.destroy()


def figures(args: argparse.Namespace, backends: Backends, root: Path) -> None:
    wanted = backends.wanted
    info: dict[str, dict[str, Any]] = {}

    # 1a. one commit per chunk
    direct: dict[str, dict[str, Any]] = {}
    for backend in wanted:
        store = backends.store(backend)
        try:
            info[backend] = store.sync(pg_settings if backend == "postgresql" else sqlite_settings)
            direct[backend] = asyncio.run(stream_direct(store, args.chunks))
        finally:
            store.close()

    # 1b + 2. the real agent, the backends taking turns
    stores: dict[str, TimedStore] = {}
    try:
        for backend in wanted:
            stores[backend] = backends.store(backend)
        agent = asyncio.run(agent_runs(stores, root, args.chunks, args.turns))
    finally:
        for store in stores.values():
            store.close()

    tenth = max(1, args.chunks // 10)
    rows: list[tuple[str, dict[str, str]]] = []

    def row(label: str, cell: Callable[[str], str]) -> None:
        rows.append((label, {b: cell(b) for b in wanted}))

    row("commit latency median", lambda b: ms(statistics.median(direct[b]["latencies"])))
    row("  p90", lambda b: ms(pct(direct[b]["latencies"], 90)))
    row("  p99", lambda b: ms(pct(direct[b]["latencies"], 99)))
    row("  max", lambda b: ms(max(direct[b]["latencies"])))
    row(f"  median, first {tenth} chunks", lambda b: ms(statistics.median(direct[b]["latencies"][:tenth])))
    row(f"  median, last {tenth} chunks", lambda b: ms(statistics.median(direct[b]["latencies"][-tenth:])))
    row("awaited on the event loop, median", lambda b: ms(statistics.median(direct[b]["awaited"])))
    row(f"total, {args.chunks} commits", lambda b: ms(direct[b]["total"]))
    row("WAL written for it", lambda b: "-" if direct[b]["wal"] is None else
        f"{direct[b]['wal'] / 2**20:.1f} MiB ({direct[b]['length'] / 1024:.0f} KiB reply)")
    row("through the Agent: wall", lambda b: ms(agent[b]["stream"]["wall"]))
    row("  update_message writes", lambda b: f"{len(agent[b]['stream']['updates'])} for {args.chunks} chunks")
    row("  their commit median / max", lambda b: (
        f"{ms(statistics.median(agent[b]['stream']['updates']))} / {ms(max(agent[b]['stream']['updates']))}"
        if agent[b]["stream"]["updates"] else "-"))
    table(f"1. streaming a reply of {args.chunks} chunks: update_message with the text so far, awaited "
          "(one commit per chunk, then through the Agent's batching)", rows, wanted)

    rows = []
    row("turns done", lambda b: f"{agent[b]['turns']['done']} / {args.turns}")
    row("turn time median", lambda b: ms(statistics.median(agent[b]["turns"]["times"])))
    row("  p90", lambda b: ms(pct(agent[b]["turns"]["times"], 90)))
    row("  min / max", lambda b: f"{ms(min(agent[b]['turns']['times']))} / {ms(max(agent[b]['turns']['times']))}")
    row(f"total, {args.turns} turns", lambda b: ms(sum(agent[b]["turns"]["times"])))
    row("store writes per turn", lambda b: f"{statistics.median(agent[b]['turns']['writes']):.0f}")
    row("  sum of their commit latencies, median", lambda b: ms(statistics.median(agent[b]["turns"]["store"])))
    table(f"2. {args.turns} turns on a real Agent + Runtime (model -> execute_code -> model -> reply; "
          "after one warm-up turn)", rows, wanted)

    # 3. opening a stored session
    opened: dict[str, dict[str, Any]] = {backend: {"times": [], "count": 0} for backend in wanted}
    stores = {}
    try:
        for backend in wanted:
            stores[backend] = backends.store(backend)
            opened[backend]["built"] = build_session(stores[backend], args.messages)
        for _ in range(5):  # the backends taking turns
            for backend, store in stores.items():
                spent, opened[backend]["count"] = load_once(store)
                opened[backend]["times"].append(spent)
    finally:
        for store in stores.values():
            store.close()
    rows = []
    row("messages loaded", lambda b: str(opened[b]["count"]))
    row("load_session median of 5", lambda b: ms(statistics.median(opened[b]["times"])))
    row("  min / max", lambda b: f"{ms(min(opened[b]['times']))} / {ms(max(opened[b]['times']))}")
    row("(building it, one commit a turn)", lambda b: ms(opened[b]["built"]))
    table(f"3. opening a stored session of {args.messages} messages (store.load_session via the writer thread)",
          rows, wanted)

    # 4. what ran
    print("\n4. what ran")
    if "sqlite" in info:
        s = info["sqlite"]
        print(f"  SQLite {s['version']}: journal_mode={s['journal_mode']}, synchronous={s['synchronous']}, "
              f"a file in {root}")
    if "postgresql" in info:
        p = info["postgresql"]
        transport = (f"Unix socket in {p['socket_dir']}" if p["address"] is None
                     else f"TCP to {p['address']}")
        print(f"  PostgreSQL {p['version']}: fsync={p['fsync']}, synchronous_commit={p['synchronous_commit']}, "
              f"wal_sync_method={p['wal_sync_method']}, full_page_writes={p['full_page_writes']} "
              f"({'default durability' if p['fsync'] == 'on' and p['synchronous_commit'] == 'on' else 'NOT durable'}), "
              f"over a {transport}")
        assert backends.server is not None
        print(f"  this disk: write 8 KiB + fdatasync median {ms(fdatasync_latency(backends.server.base))} "
              "(in PostgreSQL's dir; what each durable commit waits for)")
    else:
        print(f"  this disk: write 8 KiB + fdatasync median {ms(fdatasync_latency(root))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=3000)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    args = parser.parse_args()

    def stop(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)  # through the finally blocks: the server is destroyed

    signal.signal(signal.SIGTERM, stop)
    root = Path(tempfile.mkdtemp(prefix="hermes-bench-store-"))
    os.environ["HERMES_HOME"] = str(root / "hermes-home")  # never the user's real ~/.hermes
    started = time.perf_counter()
    try:
        run(args, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"\nbench wall time {time.perf_counter() - started:.1f} s, load average {load_average()}")


if __name__ == "__main__":
    main()
