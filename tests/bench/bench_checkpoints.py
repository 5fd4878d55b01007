"""Benchmark of checkpoints (issue 36). Prints figures; asserts nothing.

    python tests/bench/bench_checkpoints.py [--files 10000] [--rounds 30] [--history 2000]

Figures, on a fresh folder of N small files (100 folders of N/100):

* the first snapshot (every file hashed into the shadow repository);
* a snapshot of the unchanged folder, and of the folder with one file changed (median, p90);
* beside them, the floor: ``git status --porcelain -uall`` of the same folder as a git
  repository of its own (its ``.git`` in it, committed, git's untracked cache on);
* a 2,000-checkpoint history listed as ``/checkpoints`` lists it (read from a SQLite store
  and formatted);
* when ``dulwich`` or ``pygit2`` can be imported: their status of the same folder (why git's
  command line was chosen: docs/checkpoints.md);
* what a checkpoint adds to a warm ``execute_code`` (``print(1)``, 50 ms apart as a model's turns
  are): checkpoints off and on, in a 100-file and the N-file folder.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from figures import median_p90  # noqa: E402

from hermes_tui.runtime.checkpoints.shadow import ShadowRepo  # noqa: E402


def make_tree(root: Path, files: int) -> None:
    per = max(1, files // 100)
    for d in range((files + per - 1) // per):
        folder = root / f"pkg{d:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        for f in range(min(per, files - d * per)):
            (folder / f"mod{f:03d}.py").write_text(f"VALUE = {d * per + f}\n" * 8)


def timed(fn, rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        out.append((time.perf_counter() - started) * 1000)
    return out


def show(label: str, ms: list[float]) -> float:
    median, p90 = median_p90(ms)
    print(f"  {label:<46} median {median:7.1f} ms   p90 {p90:7.1f} ms   min {min(ms):7.1f} ms")
    return median


def own_repo(root: Path) -> None:
    git = ["git", "-C", str(root), "-c", "user.name=b", "-c", "user.email=b@x", "-c", "core.untrackedCache=true"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "bench"], check=True)
    subprocess.run([*git, "update-index", "--untracked-cache"], check=True)
    subprocess.run([*git, "status", "--porcelain"], check=True, capture_output=True)


def history(home: Path, count: int) -> None:
    from hermes_tui.agent.checkpoints import StoreLog, listing
    from hermes_tui.runtime.checkpoints.book import Checkpoint
    from hermes_tui.storage.writer import SessionStore
    from hermes_tui.storage import sessions as db
    from hermes_tui.storage import checkpoints as cdb

    store = SessionStore.open(home)

    async def main() -> None:
        await store.call(db.create_session, "bench", None, None, "/tmp")
        for n in range(1, count + 1):
            row = Checkpoint("bench", n, time.time(), "execute_code", f"call_{n}", commits={"/w": "0" * 40},
                             changed={"/w": {f"pkg/mod{n}.py": [3, 1]}})
            await store.call(cdb.save_checkpoint, row.as_json(), count + 10)
        log = StoreLog(store)
        for _ in range(3):
            await log.all("bench")  # warm
        ms = []
        for _ in range(15):
            started = time.perf_counter()
            rows = await log.all("bench")
            lines = listing(rows, turn_id=None)
            ms.append((time.perf_counter() - started) * 1000)
        assert len(lines) == count
        show(f"list a {count:,}-checkpoint history", ms)

    asyncio.run(main())
    store.close()


def others(root: Path, rounds: int) -> None:
    try:
        import dulwich.porcelain as porcelain  # type: ignore[import-not-found]
    except ImportError:
        print("  dulwich: not installed (pip install dulwich to compare)")
    else:
        show("dulwich porcelain.status (same folder)", timed(lambda: porcelain.status(str(root)), max(3, rounds // 6)))
    try:
        import pygit2  # type: ignore[import-not-found]
    except ImportError:
        print("  pygit2: not installed (pip install pygit2 to compare)")
    else:
        repo = pygit2.Repository(str(root))
        show("pygit2 Repository.status (same folder)", timed(repo.status, max(3, rounds // 3)))


def exec_cost(files: int, rounds: int) -> None:
    from hermes_tui.agent.checkpoints import StoreLog
    from hermes_tui.config import parse_config
    from hermes_tui.runtime import Runtime
    from hermes_tui.storage import sessions as db
    from hermes_tui.storage.writer import SessionStore

    async def measure() -> None:
        with tempfile.TemporaryDirectory() as scratch:
            home, work = Path(scratch) / "home", Path(scratch) / "work"
            make_tree(work, files)
            store = SessionStore.open(home)
            await store.call(db.create_session, "s", None, None, str(work))
            async with Runtime(parse_config(""), home=home) as rt:
                rt.checkpoints.sessions = {"s"}
                await rt.execute_code("1", session="s", cwd=work)
                times: dict[str, list[float]] = {"off": [], "on": []}
                for label in ("off", "on", "off", "on"):  # alternated: the machine's wandering hits both
                    rt.checkpoints.log = StoreLog(store) if label == "on" else None
                    await rt.execute_code("1", session="s", cwd=work)
                    for _ in range(rounds // 2):
                        await rt.checkpoints.settle()
                        await asyncio.sleep(0.05)
                        started = time.perf_counter()
                        await rt.execute_code("print(1)", session="s", cwd=work)
                        times[label].append((time.perf_counter() - started) * 1000)
                await rt.checkpoints.settle()
                off, on = show(f"execute_code print(1), {files:,} files, off", times["off"]), \
                    show(f"execute_code print(1), {files:,} files, checkpoints", times["on"])
                print(f"  {'':<46} a checkpoint adds {on - off:5.1f} ms")
            store.close()

    asyncio.run(measure())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--history", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        home, work = Path(scratch) / "home", Path(scratch) / "work"
        make_tree(work, args.files)
        print(f"checkpoints of a {args.files:,}-file folder ({subprocess.run(['git', '--version'], capture_output=True, text=True).stdout.strip()})")
        repo = ShadowRepo(home, str(work), max_file_size=10 << 20)
        started = time.perf_counter()
        repo.snapshot("first")
        print(f"  {'first snapshot (every file hashed)':<46} {(time.perf_counter() - started) * 1000:7.0f} ms")
        for _ in range(3):
            repo.snapshot("warm")
        unchanged = show("snapshot, unchanged", timed(lambda: repo.snapshot("same"), args.rounds))
        target = work / "pkg050" / "mod050.py"
        counter = iter(range(10**9))

        def change_and_snap() -> None:
            target.write_text(f"VALUE = {next(counter)}\n")
            repo.snapshot("changed")

        # the write is a few microseconds: the figure is the snapshot's
        changed = show("snapshot, one file changed", timed(change_and_snap, args.rounds))
        own_repo(work)
        floor = show("floor: git status of the same folder", timed(
            lambda: subprocess.run(["git", "-C", str(work), "status", "--porcelain", "-uall"], capture_output=True,
                                   check=True), args.rounds))
        print(f"  unchanged / floor {unchanged / floor:5.2f}x (target 30 ms);  changed / floor {changed / floor:5.2f}x "
              "(target 50 ms)")
        others(work, args.rounds)
        history(home, args.history)
    for files in (100, args.files):
        exec_cost(files, args.rounds)


if __name__ == "__main__":
    os.environ.setdefault("HERMES_HOME", tempfile.mkdtemp())
    main()
