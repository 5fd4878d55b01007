"""Issue 32, item 1: ``store migrate`` never overwrites another session that has the same id.

Two machines each ran ``--session dup-1`` (different work): migrating one store into the other
replaced the target's session. A session's identity is its id *and* its creation (the
``created_at`` every copy keeps) *and* its messages, one side's the start of the other's; a
conflict is refused with one line naming both, or copied under a new id with ``--rename``.
Real SQLite files and a real PostgreSQL server (tests/pg_server.py); no mocks.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_tui.storage import sessions as db
from hermes_tui.storage import opening
from hermes_tui.cli import main
from hermes_tui.storage import copy
from hermes_tui.config.store_url import parse_store_url


def open_url(url: str) -> db.Database:
    return opening.open_database(parse_store_url(url, origin="--store"))


def sqlite_url(path: Path) -> str:
    return f"sqlite://{path}"


def work(conn: db.Database, sid: str, texts: list[str]) -> None:
    """A session as a run makes it: one turn per text, the user's words and a reply."""
    db.create_session(conn, sid, "openrouter", "model-x", "/work")
    for index, text in enumerate(texts):
        turn = f"{sid}-t{index}"  # the same turn ids on both machines: a rename must not clash
        db.start_turn(conn, sid, turn, "user", text)
        db.add_message(conn, sid, turn, "assistant", f"done: {text}")
        db.end_turn(conn, turn, "done")
    db.add_input(conn, sid, texts[0])


def contents(conn: db.Database, sid: str) -> list[str]:
    return [r[0] for r in conn.execute("SELECT content FROM messages WHERE session_id = ? ORDER BY id", (sid,))]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(params=["sqlite", "postgresql"])
def target_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return sqlite_url(tmp_path / "target.db")
    return request.getfixturevalue("pg_url")


@pytest.mark.parametrize("sid", ["dup-1", "migrate-1"])
def test_an_unrelated_session_with_the_same_id_is_refused_not_replaced(
        tmp_path: Path, target_url: str, sid: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's case: the source's session has more messages (it looked as if it "grew")."""
    source_path = tmp_path / "laptop.db"
    mine = opening.connect(source_path)
    work(mine, sid, ["fix the parser", "add a test", "run the tests"])
    mine.close()
    theirs = open_url(target_url)
    work(theirs, sid, ["write the docs"])
    before = contents(theirs, sid)
    theirs.close()

    code, out, err = run(capsys, "store", "migrate", "--from", sqlite_url(source_path), "--to", target_url,
                         "--dry-run")
    assert code == 0, err
    line = next(line for line in out.splitlines() if line.startswith(f"would refuse {sid} "))
    assert "grew" not in out and "would replace" not in out
    assert "'fix the parser'" in line and "'write the docs'" in line and "--rename" in line

    code, out, err = run(capsys, "store", "migrate", "--from", sqlite_url(source_path), "--to", target_url)
    assert code == 1, (out, err)
    assert "replaced 0" in out and "refused 1" in out
    refused = [line for line in out.splitlines() if line.startswith("refused ")]
    assert len(refused) == 1 and refused[0].startswith(f"refused {sid}: ")
    assert "'fix the parser'" in refused[0] and "'write the docs'" in refused[0] and "--rename" in refused[0]
    conn = open_url(target_url)
    try:
        assert contents(conn, sid) == before  # the target's own work is there, untouched
        inputs = [r[0] for r in conn.execute("SELECT text FROM input_history WHERE session_id = ?", (sid,))]
        assert inputs == ["write the docs"]  # the source's history is not filed under another's session
    finally:
        conn.close()

    code, out, err = run(capsys, "store", "migrate", "--from", sqlite_url(source_path), "--to", target_url,
                         "--rename", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert [(r["id"], r["new_id"], r["messages"]) for r in summary["renamed"]] == [(sid, f"{sid}-2", 6)]
    assert summary["replaced"] == 0 and summary["refused"] == []
    conn = open_url(target_url)
    try:
        assert contents(conn, sid) == before
        assert contents(conn, f"{sid}-2")[0] == "fix the parser" and len(contents(conn, f"{sid}-2")) == 6
        stored = db.load_session(conn, f"{sid}-2")
        assert stored is not None and len(stored.turns) == 3
        inputs = [r[0] for r in conn.execute("SELECT text FROM input_history WHERE session_id = ?", (f"{sid}-2",))]
        assert inputs == ["fix the parser"]
    finally:
        conn.close()

    # Again: the renamed copy is recognised, not copied a third time.
    code, out, err = run(capsys, "store", "migrate", "--from", sqlite_url(source_path), "--to", target_url,
                         "--rename")
    assert code == 0, err
    assert "skipped 1 already there" in out
    conn = open_url(target_url)
    try:
        assert int(conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]) == 2
    finally:
        conn.close()


def test_the_rename_prints_the_new_id_and_takes_the_sub_agents(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    source_path, target_path = tmp_path / "a.db", tmp_path / "b.db"
    mine = opening.connect(source_path)
    work(mine, "dup-1", ["fix the parser"])
    work(mine, "dup-1::child::helper", ["count the files"])
    mine.close()
    theirs = opening.connect(target_path)
    work(theirs, "dup-1", ["write the docs"])
    theirs.close()
    code, out, err = run(capsys, "store", "migrate", "--from", sqlite_url(source_path), "--to", sqlite_url(target_path))
    assert code == 1 and "refused dup-1: " in out and "refused dup-1::child::helper: its parent" in out
    code, out, err = run(capsys, "store", "migrate", "--from", sqlite_url(source_path), "--to", sqlite_url(target_path),
                         "--rename")
    assert code == 0, err
    assert "copied dup-1 as dup-1-2 (2 messages): " in out
    assert "copied dup-1::child::helper as dup-1-2::child::helper" in out
    conn = opening.connect(target_path)
    try:
        assert contents(conn, "dup-1") == ["write the docs", "done: write the docs"]
        assert contents(conn, "dup-1-2::child::helper") == ["count the files", "done: count the files"]
    finally:
        conn.close()


def test_one_session_continued_apart_in_both_is_refused_and_a_true_growth_still_replaces(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source_path, target_path = tmp_path / "a.db", tmp_path / "b.db"
    mine = opening.connect(source_path)
    work(mine, "job", ["first"])
    mine.close()
    assert run(capsys, "store", "migrate", "--from", sqlite_url(source_path), "--to", sqlite_url(target_path))[0] == 0
    mine = opening.connect(source_path)
    db.start_turn(mine, "job", "job-more", "user", "more on the laptop")
    mine.close()
    code, out, _ = run(capsys, "store", "migrate", "--from", sqlite_url(source_path), "--to", sqlite_url(target_path))
    assert code == 0 and "replaced 1" in out  # it grew in the source: the same session, further on
    theirs = opening.connect(target_path)
    db.start_turn(theirs, "job", "job-there", "user", "more on the build box")
    theirs.close()
    mine = opening.connect(source_path)
    db.start_turn(mine, "job", "job-again", "user", "even more on the laptop")
    mine.close()
    code, out, _ = run(capsys, "store", "migrate", "--from", sqlite_url(source_path), "--to", sqlite_url(target_path))
    assert code == 1 and "refused job: job was continued apart in both stores (the first 3 messages shared" in out
    theirs = opening.connect(target_path)
    assert contents(theirs, "job")[-1] == "more on the build box"
    theirs.close()
    code, out, err = run(capsys, "store", "migrate", "--from", sqlite_url(source_path), "--to", sqlite_url(target_path),
                         "--rename")
    assert code == 0 and "copied job as job-2 (4 messages)" in out, (out, err)


# -- the property: random pairs of stores never lose a message ---------------------------------

IDS = ["s1", "s2", "s1::child::c"]
TEXTS = st.lists(st.text("abc xyz", min_size=1, max_size=6), max_size=4)
SCENARIO = st.one_of(
    st.tuples(st.just("source only"), TEXTS, st.just([]), st.just([])),
    st.tuples(st.just("target only"), st.just([]), st.just([]), TEXTS),
    st.tuples(st.just("unrelated"), TEXTS, st.just([]), TEXTS),
    st.tuples(st.just("shared"), TEXTS, TEXTS, TEXTS),  # a common start, then each side's own
)


def _write(conn: db.Database, sid: str, created: float, messages: list[tuple[str, float]]) -> None:
    """A session with these messages, every time given (so two stores can hold the very same)."""
    conn.execute("INSERT INTO sessions (id, title, created_at, updated_at) VALUES (?, '', ?, ?)",
                 (sid, created, created))
    _grow(conn, sid, messages)
    if messages:
        conn.execute("INSERT INTO input_history (session_id, text, created_at) VALUES (?, ?, ?)",
                     (sid, messages[0][0], created))


def _fill(source, target, scenarios, clock) -> None:
    """Write each scenario's session (``IDS`` in order) into one store or both: the same session
    (created at the same moment, sharing its first messages) or another one with the same id."""
    for sid, (kind, mine, common, theirs) in zip(IDS, scenarios):
        created = float(next(clock)) + 0.123456
        shared = [(text, float(next(clock))) for text in common]
        ours = shared + [(text, float(next(clock))) for text in mine]
        others = shared + [(text, float(next(clock))) for text in theirs]
        if kind != "target only":
            _write(source, sid, created, ours)
        if kind != "source only":
            _write(target, sid, created if kind == "shared" else created + 0.5, others)  # another moment


def _starts(shorter: list[str], longer: list[str]) -> bool:
    return longer[:len(shorter)] == shorter


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios=st.lists(SCENARIO, min_size=len(IDS), max_size=len(IDS)), rename=st.booleans(),
       twice=st.booleans())
def test_random_pairs_of_stores_never_lose_a_message_in_a_migrate(scenarios, rename: bool, twice: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        source, target = opening.connect(Path(folder) / "a.db"), opening.connect(Path(folder) / "b.db")
        clock = iter(range(1_000, 10_000))
        try:
            _fill(source, target, scenarios, clock)
            source_had = {sid: contents(source, sid) for sid in IDS if contents_exist(source, sid)}
            target_had = {sid: contents(target, sid) for sid in IDS if contents_exist(target, sid)}
            for _ in range(2 if twice else 1):
                plan = copy.plan_copy(source, target, **({"rename": True} if rename else {}))
                report = copy.copy_sessions(source, target, plan, all_inputs=True)
                assert not report.of(copy.FAILED)
            ids = [r[0] for r in target.execute("SELECT id FROM sessions")]
            after = {sid: contents(target, sid) for sid in ids}
            # Nothing the target held is lost: each of its sessions holds what it held, and more only
            # when the source's is that same session further on.
            for sid, texts in target_had.items():
                assert _starts(texts, after[sid]), (sid, texts, after[sid])
                if after[sid] != texts:
                    assert after[sid] == source_had[sid]
            # Nothing the source held is lost either: each of its sessions is in the target (under
            # its id or a new one), or it was refused, and said so.
            refused = {s.id for s in report.of(copy.REFUSED)}
            for sid, texts in source_had.items():
                if sid in refused:
                    continue
                assert any(_starts(texts, held) for held in after.values()), (sid, texts, after)
            assert not (rename and refused), refused  # with --rename everything is copied
            assert len(ids) == len(set(ids))
        finally:
            source.close()
            target.close()


def contents_exist(conn: db.Database, sid: str) -> bool:
    return conn.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone() is not None


def test_a_renamed_copy_grows_when_the_source_grows_not_copied_again(
        tmp_path: Path, target_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The issue-32 trial: ``--rename`` made ``dup-1-2``; the laptop's ``dup-1`` went on; the same
    migrate again made ``dup-1-3``, a second copy of one session. The second run knows ``dup-1-2``
    for the earlier copy (created at the same moment, its messages the start of the source's)
    and grows it, with its sub-agent, and says so in one line."""
    source_path = tmp_path / "laptop.db"
    mine = opening.connect(source_path)
    work(mine, "dup-1", ["fix the parser"])
    work(mine, "dup-1::child::helper", ["count the files"])
    mine.close()
    theirs = open_url(target_url)
    work(theirs, "dup-1", ["write the docs", "check the links"])
    before = contents(theirs, "dup-1")
    theirs.close()
    argv = ("store", "migrate", "--from", sqlite_url(source_path), "--to", target_url, "--rename")
    code, out, err = run(capsys, *argv)
    assert code == 0 and "copied dup-1 as dup-1-2 (2 messages)" in out, (out, err)

    mine = opening.connect(source_path)  # the laptop's session goes on, its sub-agent too
    for sid, text in (("dup-1", "add a test"), ("dup-1::child::helper", "count again")):
        db.start_turn(mine, sid, f"{sid}-more", "user", text)
        db.add_message(mine, sid, f"{sid}-more", "assistant", f"done: {text}")
        db.end_turn(mine, f"{sid}-more", "done")
    grown = {sid: contents(mine, sid) for sid in ("dup-1", "dup-1::child::helper")}
    mine.close()

    code, out, err = run(capsys, *argv, "--dry-run")
    assert code == 0, err
    assert "dup-1-3" not in out, out
    lines = [line for line in out.splitlines() if line.startswith("would replace dup-1 as dup-1-2 ")]
    assert len(lines) == 1 and "(4 messages)" in lines[0] and "earlier --rename" in lines[0], out
    assert "would replace dup-1::child::helper as dup-1-2::child::helper (4 messages)" in out, out

    code, out, err = run(capsys, *argv)
    assert code == 0, (out, err)
    assert "dup-1-3" not in out, out
    assert "replaced 2" in out.splitlines()[0], out
    lines = [line for line in out.splitlines() if line.startswith("replaced dup-1 as dup-1-2 ")]
    assert len(lines) == 1 and "(4 messages)" in lines[0] and "grew" in lines[0], out
    conn = open_url(target_url)
    try:
        ids = sorted(r[0] for r in conn.execute("SELECT id FROM sessions"))
        assert ids == ["dup-1", "dup-1-2", "dup-1-2::child::helper"]  # grown, not copied again
        assert contents(conn, "dup-1") == before  # the target's own session untouched
        assert contents(conn, "dup-1-2") == grown["dup-1"]
        assert contents(conn, "dup-1-2::child::helper") == grown["dup-1::child::helper"]
        stored = db.load_session(conn, "dup-1-2")
        assert stored is not None and len(stored.turns) == 2
        inputs = sorted((r[0], r[1]) for r in conn.execute("SELECT session_id, text FROM input_history"))
        assert inputs == [("dup-1", "write the docs"), ("dup-1-2", "fix the parser"),
                          ("dup-1-2::child::helper", "count the files")]  # none filed under another's id
    finally:
        conn.close()

    code, out, err = run(capsys, *argv, "--json")  # and once more: nothing to do
    summary = json.loads(out)
    assert (code, summary["copied"], summary["replaced"], summary["skipped"], summary["renamed"],
            summary["inputs"]) == (0, 0, 0, 2, [], 0), out


def _said(conn: db.Database, sid: str) -> list[tuple[str, float]]:
    """A session's messages by text and time (times are unique here: a text alone may repeat)."""
    return [(r[0], float(r[1])) for r in conn.execute(
        "SELECT content, created_at FROM messages WHERE session_id = ? ORDER BY id", (sid,))]


def _created(conn: db.Database) -> dict[str, float]:
    return {r[0]: float(r[1]) for r in conn.execute("SELECT id, created_at FROM sessions")}


def _grow(conn: db.Database, sid: str, messages: list[tuple[str, float]]) -> None:
    for text, when in messages:
        turn = f"{sid}-{when}"
        conn.execute("INSERT INTO turns (id, session_id, origin, text, status, started_at) "
                     "VALUES (?, ?, 'user', ?, 'done', ?)", (turn, sid, text, when))
        conn.execute("INSERT INTO messages (session_id, turn_id, role, content, created_at) "
                     "VALUES (?, ?, 'user', ?, ?)", (sid, turn, text, when))


GROWTHS = st.lists(st.tuples(st.sampled_from(IDS), st.lists(st.text("abc", min_size=1, max_size=3), max_size=2)),
                   min_size=1, max_size=4)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios=st.lists(SCENARIO, min_size=len(IDS), max_size=len(IDS)), growths=GROWTHS)
def test_random_grow_then_migrate_with_rename_never_duplicates_a_session_nor_loses_a_message(
        scenarios, growths: list[tuple[str, list[str]]]) -> None:
    """Migrate with --rename, then again and again as the source's sessions grow: each source
    session is in the target exactly once (under its id or the one the first --rename gave it),
    whole; what the target held of its own is never lost; no input is filed twice."""
    with tempfile.TemporaryDirectory() as folder:
        source, target = opening.connect(Path(folder) / "a.db"), opening.connect(Path(folder) / "b.db")
        clock = iter(range(1_000, 100_000))
        try:
            _fill(source, target, scenarios, clock)
            target_had = {sid: _said(target, sid) for sid in _created(target)}
            home: dict[str, str] = {}  # each source session: where the target holds it
            for step, (grown, texts) in enumerate([(None, [])] + growths):
                if grown is not None and contents_exist(source, grown):
                    _grow(source, grown, [(text, float(next(clock))) for text in texts])
                report = copy.copy_sessions(source, target, copy.plan_copy(source, target, rename=True),
                                            all_inputs=True)
                assert not report.of(copy.FAILED) and not report.of(copy.REFUSED)
                mine_created, theirs_created = _created(source), _created(target)
                after = {sid: _said(target, sid) for sid in theirs_created}
                for sid, created in sorted(mine_created.items()):  # parents before their sub-agents
                    said = _said(source, sid)
                    # Its copies: the target's sessions of the same creation that hold its messages.
                    copies = [t for t, held in after.items()
                              if abs(theirs_created[t] - created) < 1e-6 and _starts(said, held)]
                    parent, child, name = sid.partition(copy.CHILD)
                    if child and home.get(parent, parent) != parent:  # a sub-agent goes where its renamed
                        home[sid] = home[parent] + child + name  # parent is (in both branches of a
                        assert home[sid] in copies, (step, sid, said, home, copies)  # parent continued apart)
                    else:  # never twice: one session of this creation holds its messages
                        assert len(copies) == 1, (step, sid, said, {t: after[t] for t in copies})
                        home[sid] = copies[0]  # (another than last time only when continued apart in both)
                    if after[home[sid]] != said:  # the target's own, further on: kept as it was
                        assert after[home[sid]] == target_had.get(home[sid]), (step, sid, said, after[home[sid]])
                for sid, held in target_had.items():
                    assert _starts(held, after[sid]), (step, sid, held, after[sid])
                inputs = [tuple(r) for r in target.execute("SELECT session_id, text, created_at FROM input_history")]
                assert len(inputs) == len(set(inputs)), inputs
                for sid, text, when in source.execute("SELECT session_id, text, created_at FROM input_history"):
                    assert (home[sid], text, when) in inputs, (sid, home, inputs)
        finally:
            source.close()
            target.close()
