"""Allow rules (rules.py): exact rules stay exact, the kinds of config entries, the stored file
(adding to a non-empty one, hand-written entries, added_at, a corrupt or unreadable one), and
the rule an "always" answer stores being the one in force at run time."""

from __future__ import annotations

import os
import pickle
import re
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

from conftest import Approver
from hermes_tui.runtime.rules import (
    Rule,
    active_rules,
    add_rule,
    allowlist_path,
    load_allowlist,
    remove_rule,
    rule_from_config,
)

STRICT = "approvals:\n  mode: strict\n"
"""Every terminal() call asks unless a rule allows it."""

NOBODY = 65534


def kinds(rules: list[Rule]) -> list[tuple[str, str]]:
    return [(r.kind, r.pattern) for r in rules]


# -- exact rules are exact ------------------------------------------------------------------------

EXACT_ONLY = [
    # (stored command, commands it must NOT allow)
    ("rm *.o", ["rm a.o", "rm main.o", "rm *.c", "rm *.o b.o"]),
    ("ls ?.txt", ["ls a.txt", "ls ab.txt"]),
    ("echo [ab]", ["echo a", "echo b", "echo [ab] c"]),
    ("ls | wc -l", ["ls | wc -l; rm -rf ~", "ls", "ls | wc"]),
    ("make && make test", ["make && make test && rm -rf ~", "make", "make test"]),
    ("git log > log.txt", ["git log > /etc/passwd", "git log"]),
    ("echo $(date)", ["echo $(rm -rf ~)", "echo date"]),
]


@pytest.mark.parametrize(("command", "others"), EXACT_ONLY)
def test_an_exact_rule_with_glob_characters_or_operators_allows_only_itself(
        command: str, others: list[str], tmp_path: Path) -> None:
    path = tmp_path / "allowlist.yaml"
    rule = add_rule(path, command)
    (stored,) = load_allowlist(path)[0]
    for r in (rule, stored):
        assert (r.kind, r.pattern) == ("exact", command)
        assert r.matches(command) and r.matches(f"  {command}\n")  # surrounding blanks do not count
        for other in others:
            assert not r.matches(other), (command, other)


def test_an_exact_stored_rule_is_not_taken_for_a_glob_with_the_same_text(tmp_path: Path) -> None:
    path = tmp_path / "allowlist.yaml"
    path.write_text('rules:\n- glob: "rm *.o"\n')
    rule = add_rule(path, "rm *.o")  # "always" on the literal command `rm *.o`
    assert (rule.kind, rule.pattern) == ("exact", "rm *.o")
    assert kinds(load_allowlist(path)[0]) == [("glob", "rm *.o"), ("exact", "rm *.o")]


@pytest.mark.parametrize(
    ("entry", "kind"),
    [("git status", "exact"), ("make && make test", "exact"), ("ls | wc -l", "exact"), ("echo $(date)", "exact"),
     ("git log *", "glob"), ("ls ?.txt", "glob"), ("ls [ab]", "glob"), ("*", "glob")],
)
def test_the_kind_of_a_command_allowlist_entry(entry: str, kind: str, tmp_path: Path) -> None:
    rule = rule_from_config(entry, tmp_path / "config.yaml")
    assert (rule.kind, rule.pattern, rule.source, rule.added_at) == (kind, entry, tmp_path / "config.yaml", None)
    if kind == "exact":
        assert rule.matches(entry) and rule.matches(f" {entry} ")
        assert not rule.matches(entry + " x") and not rule.matches(entry + "; rm -rf ~")


@pytest.mark.parametrize(
    ("entry", "allowed", "refused"),
    [("git log *", ["git log --oneline", "git log -3 main"],
      ["git log", "git status", "git log -3; rm -rf ~", "git log -3 &", "{ git log -3; }",
       "git log -3;"]),  # any shell operator at all: backgrounded, a group, a trailing `;`
     ("ls ?.txt", ["ls a.txt", "ls b.txt"], ["ls ab.txt", "ls a.txt b.txt"]),
     ("ls [ab]", ["ls a", "ls b"], ["ls c", "ls ab"])],
)
def test_a_glob_entry_matches_by_pattern(entry: str, allowed: list[str], refused: list[str], tmp_path: Path) -> None:
    rule = rule_from_config(entry, tmp_path / "config.yaml")
    assert all(rule.matches(c) for c in allowed) and not any(rule.matches(c) for c in refused)


def test_active_rules_are_config_entries_then_stored_ones(tmp_path: Path) -> None:
    home = tmp_path / "home"
    add_rule(allowlist_path(home), "make test")
    rules, problem = active_rules(["git status", "  ", "", "git log *"], tmp_path / "config.yaml", home)
    assert problem is None
    assert kinds(rules) == [("exact", "git status"), ("glob", "git log *"), ("exact", "make test")]
    assert [r.source for r in rules] == [tmp_path / "config.yaml"] * 2 + [home / "tui" / "allowlist.yaml"]


# -- the stored file ------------------------------------------------------------------------------

STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}\Z")

HAND_WRITTEN = """\
# my rules
rules:
- glob: git log *
  added_at: 2026-01-02
- exact: make
  added_at: '2026-01-03T10:00:00+0100'
- glob: "   "
- exact: ""
- glob: 5
- exact: [a, list]
- just a string
- 7
- exact: npm test
- glob: cargo *
  exact: cargo build
"""


def test_hand_written_entries(tmp_path: Path) -> None:
    path = tmp_path / "allowlist.yaml"
    path.write_text(HAND_WRITTEN)
    rules, problem = load_allowlist(path)
    assert problem is None
    assert [(r.kind, r.pattern, r.added_at) for r in rules] == [
        ("glob", "git log *", "2026-01-02"), ("exact", "make", "2026-01-03T10:00:00+0100"), ("exact", "npm test", None),
        ("exact", "cargo build", None), ("glob", "cargo *", None)]
    assert all(r.source == path for r in rules)
    glob = rules[0]
    assert glob.matches("git log --oneline -3") and not glob.matches("git log")
    assert not glob.matches("git status") and not glob.matches("git log; rm -rf ~")
    assert not glob.matches("git log $(rm -rf ~)") and not glob.matches("git log\nrm -rf ~")


@pytest.mark.parametrize("text", ["", "# only a comment\n", "rules:\n", "rules: []\n", "other: 1\n"])
def test_files_without_rules(text: str, tmp_path: Path) -> None:
    path = tmp_path / "allowlist.yaml"
    path.write_text(text)
    assert load_allowlist(path) == ([], None)


def test_a_missing_file_has_no_rules_and_no_problem(tmp_path: Path) -> None:
    assert load_allowlist(tmp_path / "none.yaml") == ([], None)
    assert load_allowlist(tmp_path / "no" / "dir" / "allowlist.yaml") == ([], None)


def test_add_rule_to_a_non_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "tui" / "allowlist.yaml"
    path.parent.mkdir()
    path.write_text(HAND_WRITTEN)
    before = load_allowlist(path)[0]
    rule = add_rule(path, "echo héllo")
    assert (rule.kind, rule.pattern, rule.source) == ("exact", "echo héllo", path)
    assert rule.added_at and STAMP.match(rule.added_at), rule.added_at
    after = load_allowlist(path)[0]
    assert after == [*before, rule]  # the others kept as they were (kinds, patterns, added_at), the new one last
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text()
    assert text.startswith("# hermes-tui approval rules")
    # Readable: one entry per rule, its kind first, no escapes.
    assert f"- exact: echo héllo\n  added_at: {rule.added_at}\n" in text

    again = add_rule(path, "echo héllo")  # already there: the stored rule, the file untouched
    assert again == rule and path.read_text() == text
    for existing in ("make", "npm test", "cargo build"):
        kept = add_rule(path, existing)
        assert (kept.kind, kept.pattern) == ("exact", existing) and path.read_text() == text
    assert add_rule(path, "make").added_at == "2026-01-03T10:00:00+0100"
    assert len(load_allowlist(path)[0]) == len(after)


def test_added_at_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "allowlist.yaml"
    first = add_rule(path, "make")
    second = add_rule(path, "make test")
    loaded = load_allowlist(path)[0]
    assert loaded == [first, second]
    assert [r.added_at for r in loaded] == [first.added_at, second.added_at] and STAMP.match(first.added_at)
    path.write_text("rules:\n- exact: old\n")  # written by hand, without a date
    add_rule(path, "new")
    old, new = load_allowlist(path)[0]
    assert old.added_at is None and STAMP.match(new.added_at)
    assert "added_at: null" in path.read_text()  # and stays without one


def test_remove_rule(tmp_path: Path) -> None:
    path = tmp_path / "allowlist.yaml"
    path.write_text("rules:\n- exact: make\n  added_at: '2026-01-03T10:00:00+0100'\n- glob: git *\n- exact: git *\n"
                    "- exact: ls\n")
    assert remove_rule(path, "git *") is True  # both rules with that pattern
    assert [(r.kind, r.pattern, r.added_at) for r in load_allowlist(path)[0]] == [
        ("exact", "make", "2026-01-03T10:00:00+0100"), ("exact", "ls", None)]
    text = path.read_text()
    assert remove_rule(path, "nothing") is False and path.read_text() == text
    assert remove_rule(path, "ls") is True and kinds(load_allowlist(path)[0]) == [("exact", "make")]
    assert remove_rule(tmp_path / "missing.yaml", "make") is False and not (tmp_path / "missing.yaml").exists()


@pytest.mark.parametrize("content", [b"rules: [exact: {\n", b"rules:\n- exact: a\n  - b\n", b"\xff\xfe\x00garbage\x00",
                                     b"rules:\n  - exact: \"unterminated\n", b"rules: nope\n", b"- exact: make\n"])
def test_a_corrupt_allowlist_gives_no_rules_and_one_line_naming_it(content: bytes, tmp_path: Path) -> None:
    path = tmp_path / "allowlist.yaml"
    path.write_bytes(content)
    rules, problem = load_allowlist(path)
    assert rules == []
    assert problem and problem.startswith(f"{path} ") and "\n" not in problem
    home = tmp_path / "home"
    allowlist_path(home).parent.mkdir(parents=True)
    shutil.copy(path, allowlist_path(home))
    rules, problem = active_rules(["make"], tmp_path / "config.yaml", home)
    assert kinds(rules) == [("exact", "make")]  # the config's rules still hold
    assert problem and str(allowlist_path(home)) in problem


def test_an_allowlist_that_is_a_directory_is_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "allowlist.yaml"
    path.mkdir()
    rules, problem = load_allowlist(path)
    assert rules == [] and problem and problem.startswith(f"{path} ") and "\n" not in problem


def in_child_as_nobody(function, *args):
    """Run ``function(*args)`` in a forked child whose uid and gid are nobody's; its return
    value (or the exception it raised) comes back pickled. Works when the tests run as root."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 0
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            try:
                payload = pickle.dumps(("ok", function(*args)))
            except BaseException as exc:  # noqa: BLE001 — handed to the parent
                payload = pickle.dumps(("raised", repr(exc)))
            with os.fdopen(write, "wb") as out:
                out.write(payload)
        except BaseException:  # noqa: BLE001
            code = 1
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as incoming:
        data = incoming.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0 and data, "the child could not run as nobody"
    kind, value = pickle.loads(data)
    assert kind == "ok", value
    return value


@pytest.fixture
def shared_dir():
    """A temp dir nobody can enter (pytest's own tmp dirs are private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="hermes-rules-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_an_unreadable_allowlist_is_a_problem(shared_dir: Path) -> None:
    if os.geteuid() != 0:
        pytest.fail("this test switches to the nobody user, which needs root (CI and these machines run as root)")
    path = shared_dir / "allowlist.yaml"
    path.write_text("rules:\n- exact: make\n")
    assert kinds(in_child_as_nobody(load_allowlist, path)[0]) == [("exact", "make")]  # readable: read
    path.chmod(0o000)
    rules, problem = in_child_as_nobody(load_allowlist, path)
    assert rules == [] and problem and problem.startswith(f"{path} ") and "ermission denied" in problem
    assert "\n" not in problem


# -- the rules at run time ------------------------------------------------------------------------


async def test_always_on_a_command_with_glob_characters_allows_only_that_command(
        runtime_factory, hermes_home: Path, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("")
    (tmp_path / "b.txt").write_text("")
    approver = Approver("always")
    rt = await runtime_factory(STRICT, approver=approver)
    first = await rt.terminal("ls *.txt", session="a", cwd=tmp_path)
    assert first["output"] == "a.txt\nb.txt\n"
    approver.choice = "deny"
    # Another session: no "session" answer applies there, only the rule "always" stored.
    again = await rt.terminal("ls *.txt", session="b", cwd=tmp_path)
    narrower = await rt.terminal("ls a.txt", session="b", cwd=tmp_path)
    chained = await rt.terminal("ls *.txt; touch pwned", session="b", cwd=tmp_path)
    assert again["output"] == "a.txt\nb.txt\n"
    assert narrower["status"] == "blocked" and chained["status"] == "blocked"
    assert [r.text for r in approver.asked] == ["ls *.txt", "ls a.txt", "ls *.txt; touch pwned"]
    assert kinds(load_allowlist(allowlist_path(hermes_home))[0]) == [("exact", "ls *.txt")]
    assert not (tmp_path / "pwned").exists()

    later = Approver("deny")
    rt2 = await runtime_factory(STRICT, approver=later)  # a new run: the rule comes from the file
    assert (await rt2.terminal("ls *.txt", session="c", cwd=tmp_path))["output"] == "a.txt\nb.txt\n"
    assert (await rt2.terminal("ls a.txt", session="c", cwd=tmp_path))["status"] == "blocked"
    assert [r.text for r in later.asked] == ["ls a.txt"]


async def test_an_exact_config_entry_allows_its_flagged_command_and_nothing_near_it(
        runtime_factory, tmp_path: Path) -> None:
    (tmp_path / "build").mkdir()
    (tmp_path / "build2").mkdir()
    approver = Approver("deny")
    rt = await runtime_factory("command_allowlist: ['rm -rf ./build', 'ls *']\n", approver=approver)
    exact = await rt.terminal("rm -rf ./build", session="s", cwd=tmp_path)
    near = await rt.terminal("rm -rf ./build2", session="s", cwd=tmp_path)
    flagged_by_glob = await rt.terminal("ls x; rm -rf ./build2", session="s", cwd=tmp_path)
    assert exact["exit_code"] == 0 and not (tmp_path / "build").exists()
    assert near["status"] == "blocked" and flagged_by_glob["status"] == "blocked" and (tmp_path / "build2").exists()
    assert [r.text for r in approver.asked] == ["rm -rf ./build2", "ls x; rm -rf ./build2"]


def test_an_allowlist_over_one_mib_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "allowlist.yaml"
    body = "rules:\n- exact: make\n"
    path.write_text(body + "#" * ((1 << 20) - len(body) - 1) + "\n")  # exactly 1 MiB: read
    assert path.stat().st_size == 1 << 20
    assert kinds(load_allowlist(path)[0]) == [("exact", "make")]
    with path.open("a") as more:
        more.write("\n")  # one byte over
    rules, problem = load_allowlist(path)
    assert rules == [] and problem and problem.startswith(f"{path} ") and "1 MiB" in problem
