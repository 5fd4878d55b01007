"""The hard floor judges a command where it will run (issue 31): its working directory, ``~``,
symlinks, globs, ``..`` and words known only at run time. Only analysed here, never run
(tests/attacks/test_hard_floor.py runs the attacks against a scratch home)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from hermes_tui.runtime.danger import analyze
from hermes_tui.runtime.danger.parse import parse


@pytest.fixture
def world(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home" / "u"
    for folder in ("proj/src/deep", ".ssh", ".hermes", "proj/build", "proj/node_modules"):
        (home / folder).mkdir(parents=True)
    (tmp_path / "LINK").symlink_to(home)
    (tmp_path / "PROJ").symlink_to(home / "proj")
    return {"top": str(tmp_path), "home": str(home), "proj": str(home / "proj"), "deep": str(home / "proj" / "src"),
            "hermes": str(home / ".hermes")}


def verdict(world: dict[str, str], command: str, where: str) -> str:
    found = analyze(command, world["home"], world["hermes"], cwd=world[where], env={"HOME": world["home"]})
    return "hard" if found.hard else "flag" if found.flags else "ok"


@pytest.mark.parametrize(("command", "where", "expected"), [
    # the home and the root, however they are reached
    ("rm -rf -- *", "home", "hard"), ("rm -rf .", "home", "hard"), ("rm -rf ./", "home", "hard"),
    ("rm -rf ../..", "deep", "hard"), ("rm -rf ../../", "deep", "hard"), ("rm -rf LINK/", "top", "hard"),
    ("rm -rf LINK/.", "top", "hard"), ("rm -rf ~/$(true)", "proj", "hard"), ('rm -rf "$HOME"/`true`', "proj", "hard"),
    ("rm -rf ~/.$(x)", "proj", "hard"), ("rm -rf /ho$(x)", "proj", "hard"), ("rm -rf */", "home", "hard"),
    ("rm -rf .*", "home", "hard"), ("rm -rf ~/[a-z]*", "proj", "hard"), ("rm -rf ~/.h*", "proj", "hard"),
    ("rm -rf $PWD", "home", "hard"), ("cd / && rm -rf $PWD", "proj", "hard"), ("cd ~ && rm -rf *", "proj", "hard"),
    ("cd ..; cd ..; rm -rf *", "deep", "hard"), ("pushd ~; rm -rf *", "proj", "hard"), ("cd && rm -rf *", "proj", "hard"),
    ("cd $X && rm -rf *", "proj", "hard"), ("find . -delete", "home", "hard"), ("find LINK/ -delete", "top", "hard"),
    ("find . -name x -exec rm -rf {} +", "home", "hard"),
    # words known only at run time
    ("rm -rf $X", "proj", "hard"), ('rm -rf "$(cat dirs)"', "proj", "hard"), ("cat dirs | xargs rm -rf", "proj", "hard"),
    ("xargs rm -rf < dirs", "proj", "hard"), ("rm -rf $X/etc", "proj", "hard"), ("rm -rf $X/*", "proj", "hard"),
    ("echo ~ | xargs rm -rf", "proj", "hard"), ("xargs rm -rf <<< ~", "proj", "hard"), ("find ~ | xargs rm -rf", "proj", "hard"),
    ("printf '%s\\0' ~ | xargs -0 rm -rf", "proj", "hard"), ("echo ~ | xargs -I{} rm -rf {}/", "proj", "hard"),
    ("d=$(mktemp -d); rm -rf \"$d\"/..", "proj", "hard"),
    # a symlink the command makes itself
    ("ln -sfn ~ x && rm -rf x/", "proj", "hard"), ("ln -s ~ x && rm -rf x/*", "proj", "hard"),
    ("ln -s $(cat f) x && rm -rf x/", "proj", "hard"), ("ln -s ~ x; rm -rf x", "proj", "flag"),
    ("ln -s build x && rm -rf x/", "proj", "flag"),
    # shells fed code that can be read
    ("bash <(echo 'rm -rf ~')", "proj", "hard"), ("source <(echo 'rm -rf ~')", "proj", "hard"),
    ("sh <<< 'rm -rf /'", "proj", "hard"), ("bash <(curl -s x)", "proj", "flag"),
    # what must stay asked, not refused
    ("rm -rf build dist", "proj", "flag"), ("rm -rf node_modules", "proj", "flag"), ("rm -rf ./*", "proj", "flag"),
    ("rm -rf -- *", "proj", "flag"), ("rm -rf *", "deep", "flag"), ("rm -rf ..", "deep", "flag"), ("rm -rf LINK", "top", "flag"),
    ("rm -rf PROJ/", "top", "flag"), ("find . -name __pycache__ -exec rm -rf {} +", "proj", "flag"),
    ("find . -name '*.pyc' | xargs rm -rf", "proj", "flag"), ("for d in build dist; do rm -rf $d; done", "proj", "flag"),
    ('tmp=$(mktemp -d); rm -rf "$tmp"', "proj", "flag"), ('rm -rf "$(mktemp -d)"', "proj", "flag"),
    ("rm -rf /tmp/build-$(date +%s)", "proj", "flag"), ('rm -rf "$BUILD/dist"', "proj", "flag"),
    ("cd build && rm -rf *", "proj", "flag"), ('cd "$(git rev-parse --show-toplevel)" && rm -rf build', "proj", "flag"),
    ("echo build | xargs rm -rf", "proj", "flag"), ("rm -rf ~/proj/build", "top", "flag"), ("ls ~", "proj", "ok"),
    ("rm notes.txt", "home", "ok"),
])
def test_a_recursive_delete_is_judged_where_it_lands(world: dict[str, str], command: str, where: str,
                                                     expected: str) -> None:
    found = analyze(command, world["home"], world["hermes"], cwd=world[where], env={"HOME": world["home"]})
    assert verdict(world, command, where) == expected, found


def test_a_refusal_from_an_unknown_target_says_what_was_unknown_and_what_to_do(world: dict[str, str]) -> None:
    (why,) = analyze("rm -rf $X", world["home"], world["hermes"], cwd=world["proj"]).hard
    assert "known only at run time" in why and "write the folder's name out instead" in why
    (why,) = analyze("rm -rf ~/$(true)", world["home"], world["hermes"], cwd=world["proj"]).hard
    assert "~/" in why and "can be empty" in why and world["home"] in why
    (why,) = analyze("rm -rf -- *", world["home"], world["hermes"], cwd=world["home"]).hard
    assert "everything in your home" in why and world["home"] in why
    (why,) = analyze("rm -rf LINK/", world["home"], world["hermes"], cwd=world["top"]).hard
    assert "as LINK/ resolves" in why


@pytest.mark.parametrize(("command", "where", "path"), [
    ("echo KEY >> .ssh/authorized_keys", "home", ".ssh/authorized_keys"), ("tee -a .ssh/authorized_keys", "home", ".ssh"),
    ("cp k .ssh/", "home", ".ssh"), ("sed -i s/a/b/ .bashrc", "home", ".bashrc"), ("echo x > config.yaml", "hermes", "config.yaml"),
    ("echo x >> .hermes/tui/allowlist.yaml", "home", "allowlist.yaml"), ("echo x > LINK/.bashrc", "top", ".bashrc"),
    ("echo x > ../../.profile", "deep", ".profile"),
])
def test_a_protected_write_by_a_relative_path_is_flagged_with_the_resolved_path(
        world: dict[str, str], command: str, where: str, path: str) -> None:
    found = analyze(command, world["home"], world["hermes"], cwd=world[where])
    assert not found.hard and any(world["home"] in r and path in r for r in found.flags), found


def test_a_write_through_a_symlink_is_judged_where_it_lands(world: dict[str, str], tmp_path: Path) -> None:
    (Path(world["proj"]) / "notes").symlink_to(Path(world["home"]) / ".bashrc")
    found = analyze("echo x >> notes", world["home"], world["hermes"], cwd=world["proj"])
    assert any("start-up file" in r and ".bashrc" in r for r in found.flags), found
    assert not analyze("echo x >> other", world["home"], world["hermes"], cwd=world["proj"]).flagged


def test_a_project_in_a_system_folder_writes_its_own_files_unasked(world: dict[str, str]) -> None:
    assert not analyze("pytest > out.log", world["home"], world["hermes"], cwd="/usr/src").flagged
    assert analyze("echo x > ../../bin/x", world["home"], world["hermes"], cwd="/usr/src/app").flags


@pytest.mark.parametrize("command", ["printf X 1<> f", "printf X <> f", "exec 3<> f", "exec 3<>f", "cat 0<>f",
                                     "echo x >| f", "echo x &> f", "echo x &>> f", "echo x 1>|f",
                                     "exec {fd}>f", "echo x >& f"])
def test_every_redirection_parses(command: str) -> None:
    parsed = parse(command)
    assert not parsed.problems and parsed.writes and parsed.writes[0].target in ("f", "1"), parsed


def test_read_write_opens_keep_their_operator() -> None:
    assert [r.op for r in parse("printf X 1<> /dev/loop0").writes] == ["<>"]
    assert [w for c in parse("echo '<>' x").commands for w in c.words] == ["echo", "<>", "x"]


@pytest.mark.parametrize("command", ["printf X 1<> /dev/loop0", "exec 3<> /dev/sda", "dd if=x of=/dev/$D",
                                     "echo x > /dev/$(ls /dev | head -1)", "dd if=x of=$OUT"])
def test_a_device_write_is_refused(command: str, world: dict[str, str]) -> None:
    assert analyze(command, world["home"], world["hermes"], cwd=world["proj"]).hard, command


def test_a_huge_glob_is_bounded(world: dict[str, str]) -> None:
    big = Path(world["proj"]) / "big"
    for n in range(1500):
        (big / f"d{n}").mkdir(parents=True)
    start = time.perf_counter()
    last_part = analyze("rm -rf big/*", world["home"], world["hermes"], cwd=world["proj"])  # no listing needed
    middle = analyze("rm -rf big/*/", world["home"], world["hermes"], cwd=world["proj"])  # listed, bounded
    assert time.perf_counter() - start < 1.0
    assert not last_part.hard and last_part.flags
    assert any("too many paths" in r for r in middle.hard), middle


def test_without_a_working_directory_relative_words_are_read_as_text(world: dict[str, str]) -> None:
    assert not analyze("rm -rf -- *", world["home"], world["hermes"]).hard
    assert analyze("rm -rf $X", world["home"], world["hermes"]).hard  # unknown wherever it runs
    assert os.path.isdir(world["home"])
