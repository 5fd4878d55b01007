"""Completion in the input: as in IPython (``obj.attr``, ``module.``, dict keys and paths inside
strings, from the idle kernel, running none of the script's code); never a control character
put into the input (a file named ``\\x1b[2Jclear.txt`` offered by path completion cleared the
terminal: the driver leaves such names out, and the input refuses any kernel candidate that is
not printable, since the script can replace the driver's answers); typed spaces after an
auto-indent that do not double it; and the / popup, one row per command."""

from __future__ import annotations

import asyncio
from pathlib import Path

from hermes_tui.runtime.child import driver
from hermes_tui.tui.widgets.completion import asks_kernel, insertable

from fake_models import FakeModelServer
from helpers.pilot import blocks, make_app, SIZE, SMALL, wait_until
from helpers.models import model_app
from helpers.prompt import popup, ready, run, type_text

# A class whose dynamic attributes are the script's code: each writes a file and prints.
SNEAKY = """
import os

def _ran(what):
    print('RAN', what)
    with open({marker!r}, 'a') as f:
        f.write(what + '\\n')

class Sneaky:
    static_value = 1
    def static_method(self):
        return 2
    @property
    def sneaky_prop(self):
        _ran('property')
        return os
    def __getattr__(self, name):
        _ran('__getattr__ ' + name)
        return os
    def __dir__(self):
        _ran('__dir__')
        return ['from_dir']

class Guarded:
    guarded_class_attr = 1
    def __getattribute__(self, name):
        _ran('__getattribute__ ' + name)
        return object.__getattribute__(self, name)

class Meta(type):
    def __getattr__(cls, name):
        _ran('metaclass __getattr__ ' + name)
        return os
    def __eq__(cls, other):
        _ran('metaclass __eq__')
        return False
    __hash__ = type.__hash__

class WithMeta(metaclass=Meta):
    meta_class_attr = 1

class Keys(dict):
    def keys(self):
        _ran('keys')
        return ['from_keys']
    def __iter__(self):
        _ran('__iter__')
        return iter(['from_iter'])

s = Sneaky()
s.own_value = 3
g = Guarded.__new__(Guarded)
object.__setattr__(g, 'hidden_instance_attr', 1)
kd = Keys(kd_alpha=1)
"""


def values(app) -> list[str]:
    return [c.value for c in popup(app).candidates]


# -- the kernel side, directly -------------------------------------------------------------


def test_the_driver_completes_by_static_lookups_only(tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    namespace: dict[str, object] = {"__builtins__": __builtins__}
    exec(SNEAKY.format(marker=str(marker)), namespace)
    names = lambda line: [item["name"] for item in driver.complete(line, namespace)]  # noqa: E731
    assert names("os.pat") == ["path", "pathconf", "pathconf_names", "pathsep"]
    assert names("os.path.jo") == ["join"]
    assert names("s.") == ["own_value", "sneaky_prop", "static_method", "static_value"]
    assert names("s.sneaky_prop.") == []  # a property would run: not followed
    assert names("s.anything.") == []  # __getattr__ is not asked
    assert names("g.") == ["guarded_class_attr"]  # __getattribute__ overridden: no instance dict
    assert names("WithMeta.meta") == ["meta_class_attr"] and names("WithMeta.nothing.") == []
    assert names("kd[") == [] and names('kd["') == []  # not an exact dict: its keys() is the script's
    assert {item["type"] for item in driver.complete("s.sneaky", namespace)} == {"property"}
    assert not marker.exists()
    # Private names only when asked for; str methods through the builtins.
    assert "_ran" not in names("os.") and names("str.isdig") == ["isdigit"]
    assert "__init__" in names("s.__in")


def test_the_driver_completes_keys_as_literals_for_the_quote_typed() -> None:
    namespace = {"d": {"alpha": 1, "it's": 2, 'say "hi"': 3, 7: 4, b"raw": 5, (1, 2): 6},
                 "n": {"deep": {"inner": 1}}}
    complete = lambda line: [(i["name"], i["close"]) for i in driver.complete(line, namespace)]  # noqa: E731
    assert complete('d["') == [("alpha", '"]'), ("it's", '"]'), ('say \\"hi\\"', '"]')]
    assert complete("d['") == [("alpha", "']"), ("it\\'s", "']"), ('say "hi"', "']")]
    assert complete('d["al') == [("alpha", '"]')]
    assert complete('d[b"') == [("raw", '"]')]
    assert complete("d[") == [("'alpha'", "]"), ('"it\'s"', "]"), ("'say \"hi\"'", "]"), ("7", "]"), ("b'raw'", "]")]
    assert complete("n['deep'][") == []  # subscripts are not followed
    assert [i["name"] for i in driver.complete("n.", namespace)][:2] == ["clear", "copy"]


def test_the_driver_completes_paths_from_its_working_dir(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "src_code").mkdir()
    (tmp_path / "src_notes.txt").write_text("")
    (tmp_path / ".hidden_src").write_text("")
    (tmp_path / 'bad"name').write_text("")
    monkeypatch.chdir(tmp_path)
    paths = lambda line: [(i["name"], i["type"], i["replace"]) for i in driver.complete(line, {})]  # noqa: E731
    assert paths('open("sr') == [("src_code/", "folder", 2), ("src_notes.txt", "file", 2)]
    assert paths("open('./src_c") == [("./src_code/", "folder", 7)]
    assert paths('x = f"{tmp}/.hid') == []
    assert paths('p = ".hid') == [(".hidden_src", "file", 4)]
    assert paths('p = "bad') == []  # a name the quote would cut is left out
    assert paths("p = 'bad") == [('bad"name', "file", 3)]
    assert paths('print("a") # "sr') == []  # a comment, not a string


def test_the_input_knows_which_tabs_ask_the_kernel() -> None:
    for line in ("os.pa", "obj.", "x = a.b.c", 'd["', "d[", "d['al", 'open("./sr', "f(x, '~/"):
        assert asks_kernel(line), line
    for line in ("alpha", "x = ", "1.", "f().", "'abc'.up", 'print("a", x', "x = [", '# "a'):
        assert not asks_kernel(line), line


# -- through the app, with a real kernel ---------------------------------------------------


async def test_tab_completes_attributes_of_a_module_and_an_instance(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        prompt = await ready(pilot, app)
        await run(pilot, app, "import os\nclass Point:\n    kind = 'p'\n    def norm(self):\n        return 0\n"
                              "pt = Point()\npt.x_coord = 1\npt.x_label = 'a'")
        prompt.focus()
        await type_text(pilot, "os.pat")
        await pilot.press("tab")
        await wait_until(pilot, lambda: popup(app).display)
        assert prompt.text == "os.path" and values(app) == ["path", "pathconf", "pathconf_names", "pathsep"]
        assert "module" in str(popup(app).get_option_at_index(0).prompt)
        await type_text(pilot, ".jo")  # typing on closes the popup
        await pilot.press("tab")
        await wait_until(pilot, lambda: prompt.text == "os.path.join")
        prompt.clear()
        await type_text(pilot, "print(pt.")
        await pilot.press("tab")
        await wait_until(pilot, lambda: popup(app).display)
        assert values(app) == ["kind", "norm", "x_coord", "x_label"] and prompt.text == "print(pt."
        await type_text(pilot, "x_")  # narrows as you type
        assert values(app) == ["x_coord", "x_label"]
        await pilot.press("down", "tab")
        assert prompt.text == "print(pt.x_label" and not popup(app).display
        await type_text(pilot, ")")
        await pilot.press("enter")
        await wait_until(pilot, lambda: blocks(app)[-1].status == "success")


async def test_completing_attributes_runs_none_of_the_script_s_code(hermes_home: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        prompt = await ready(pilot, app)
        await run(pilot, app, SNEAKY.format(marker=str(marker)))
        assert blocks(app)[-1].status == "success"
        prompt.focus()
        await type_text(pilot, "s.")
        await pilot.press("tab")
        await wait_until(pilot, lambda: popup(app).display)
        # The static attributes, the property by name (not run); nothing __dir__ gives.
        assert values(app) == ["own_value", "sneaky_prop", "static_method", "static_value"]
        assert "property" in str(popup(app).get_option_at_index(1).prompt)
        await pilot.press("escape")
        for line in ("s.sneaky_prop.", "s.from_getattr.", "WithMeta.nothing.", "kd[", 'kd["'):
            prompt.clear()
            await type_text(pilot, line)
            await pilot.press("tab")
            await pilot.pause(0.3)
            assert prompt.text == line and not popup(app).display, line
        prompt.clear()
        await type_text(pilot, "g.guard")
        await pilot.press("tab")
        await wait_until(pilot, lambda: prompt.text == "g.guarded_class_attr")
        assert not marker.exists(), marker.read_text()
        # The file is written as soon as the script's own code does run.
        prompt.clear()
        await run(pilot, app, "s.sneaky_prop")
        assert marker.read_text() == "property\n"


async def test_tab_completes_the_keys_of_a_dict(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        prompt = await ready(pilot, app)
        await run(pilot, app, "data = {'alpha': 1, 'beta': [2], 'best': 'x', 7: None}")
        prompt.focus()
        await type_text(pilot, 'print(data["al')
        await pilot.press("tab")
        await wait_until(pilot, lambda: prompt.text == 'print(data["alpha"]')
        await type_text(pilot, ")")
        await pilot.press("enter")
        await wait_until(pilot, lambda: blocks(app)[-1].status == "success")
        await type_text(pilot, "data['")
        await pilot.press("tab")
        await wait_until(pilot, lambda: popup(app).display)
        assert values(app) == ["alpha", "beta", "best"]
        assert "list" in str(popup(app).get_option_at_index(1).prompt)
        await type_text(pilot, "be")
        assert values(app) == ["beta", "best"]
        await pilot.press("down", "enter")
        assert prompt.text == "data['best']" and not popup(app).display
        prompt.clear()
        await type_text(pilot, "data[")
        await pilot.press("tab")
        await wait_until(pilot, lambda: popup(app).display)
        assert values(app) == ["'alpha'", "'beta'", "'best'", "7"]


async def test_tab_completes_paths_in_a_string_from_the_kernel_s_working_dir(
        hermes_home: Path, tmp_path: Path) -> None:
    inner = tmp_path / "kernel_side"
    (inner / "source_tree").mkdir(parents=True)
    (inner / "source_notes.txt").write_text("hello\n")
    (inner / "source_tree" / "module_a.py").write_text("")
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        prompt = await ready(pilot, app)
        # The kernel's working dir is not the host's: the paths are the kernel's.
        await run(pilot, app, "import os\nos.chdir('kernel_side')")
        assert Path.cwd() != inner
        prompt.focus()
        await type_text(pilot, "open('./sour")
        await pilot.press("tab")
        await wait_until(pilot, lambda: popup(app).display)
        assert prompt.text == "open('./source_" and values(app) == ["./source_notes.txt", "./source_tree/"]
        assert "folder" in str(popup(app).get_option_at_index(1).prompt)
        await type_text(pilot, "t")
        await pilot.press("tab")
        assert prompt.text == "open('./source_tree/"
        await pilot.press("tab")
        await wait_until(pilot, lambda: prompt.text == "open('./source_tree/module_a.py")
        prompt.clear()
        await type_text(pilot, 'print(open("source_n')
        await pilot.press("tab")
        await wait_until(pilot, lambda: prompt.text == 'print(open("source_notes.txt')
        await type_text(pilot, '").read())')
        await pilot.press("enter")
        await wait_until(pilot, lambda: blocks(app)[-1].status == "success")


async def test_a_busy_kernel_is_not_asked_for_completions(runtime_factory) -> None:
    rt = await runtime_factory()
    await rt.execute_code("import os\nkeep = {'k': 1}", session="s")
    assert [i["name"] for i in await rt.kernel_completions("s", "os.pat")] == [
        "path", "pathconf", "pathconf_names", "pathsep"]
    assert await rt.kernel_completions("nobody", "os.") is None
    task = asyncio.create_task(rt.execute_code("import time\ntime.sleep(1)\nprint(keep)", session="s"))
    await asyncio.sleep(0.3)
    assert await rt.kernel_completions("s", "os.pat") is None
    assert (await task).output == "{'k': 1}\n"


# -- auto-indent ---------------------------------------------------------------------------


async def test_spaces_typed_after_an_auto_indent_do_not_double_it(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        prompt = await ready(pilot, app)
        await type_text(pilot, "if True:\n")
        assert prompt.text == "if True:\n    "
        await type_text(pilot, "    x = 1\n")  # the indent typed by habit: 4, not 8
        assert prompt.text == "if True:\n    x = 1\n    "
        await type_text(pilot, "  y = 2\n")  # fewer spaces: still the auto-indent
        assert prompt.text == "if True:\n    x = 1\n    y = 2\n    "
        await type_text(pilot, "for i in range(2):\n")
        assert prompt.text.endswith("for i in range(2):\n" + " " * 8)
        await type_text(pilot, " " * 12 + "z = i")  # more than the indent: the rest goes deeper
        assert prompt.text.endswith("for i in range(2):\n" + " " * 12 + "z = i")
        await pilot.press("enter")
        await pilot.press("left", "right")  # the cursor moved: a space is a space again
        await type_text(pilot, " ")
        assert prompt.text.endswith("z = i\n" + " " * 13)
        prompt.clear()
        await type_text(pilot, "if True:\n")
        await pilot.press("tab")  # Tab still adds a level
        assert prompt.text == "if True:\n" + " " * 8
        prompt.clear()
        await type_text(pilot, "if True:\n    total = 41 + 1\n    print('total', total)\n\n")
        await wait_until(pilot, lambda: blocks(app) and blocks(app)[-1].status == "success")


# -- with a model: `>>>` Python completes and indents as Python mode does -------------------


async def test_tab_after_the_python_prompt_completes_with_a_model_set(hermes_home: Path, tmp_path: Path) -> None:
    """Tab after ``>>>`` completed nothing with a model configured (the input returned early in
    chat mode): names, attributes, dict keys and paths complete as in Python mode, the kernel
    reading the line without its ``>>>``; a message to the model is left as it was."""
    (tmp_path / "notes_for_tab.txt").write_text("")
    with FakeModelServer([]) as server:
        app = model_app(hermes_home, tmp_path, server)
        async with app.run_test(size=SIZE) as pilot:
            prompt = await ready(pilot, app)
            await run(pilot, app, ">>> import os\ndataset = {'alpha': 1, 'beta': [2]}")
            assert blocks(app)[-1].status == "success"
            prompt.focus()
            await type_text(pilot, ">>> os.pat")
            await pilot.press("tab")
            await wait_until(pilot, lambda: popup(app).display)
            assert prompt.text == ">>> os.path" and values(app) == ["path", "pathconf", "pathconf_names", "pathsep"]
            await type_text(pilot, ".jo")
            await pilot.press("tab")
            await wait_until(pilot, lambda: prompt.text == ">>> os.path.join")
            for typed, done in ((">>> print(datas", ">>> print(dataset"),  # a name of the kernel's
                                (">>> dataset['al", ">>> dataset['alpha']"),  # a key, closed
                                (">>>open('./notes_f", ">>>open('./notes_for_tab.txt")):  # a path; no space
                prompt.clear()
                await type_text(pilot, typed)
                await pilot.press("tab")
                await wait_until(pilot, lambda: prompt.text == done)
            prompt.clear()
            await type_text(pilot, ">>> x = 1")
            await pilot.press("home")  # in the prompt itself: nothing to complete, nothing added
            await pilot.press("right", "tab")
            await pilot.pause(0.2)
            assert prompt.text == ">>> x = 1"
            # A message to the model: Tab completes nothing (as before).
            prompt.clear()
            await type_text(pilot, "os.pat")
            await pilot.press("tab")
            await pilot.pause(0.3)
            assert not prompt.text.startswith("os.path") and not popup(app).display
            assert server.requests == []


async def test_ctrl_j_after_the_python_prompt_indents_as_python_mode(hermes_home: Path, tmp_path: Path) -> None:
    with FakeModelServer([]) as server:
        app = model_app(hermes_home, tmp_path, server)
        async with app.run_test(size=SIZE) as pilot:
            prompt = await ready(pilot, app)
            await type_text(pilot, ">>> if True:")
            await pilot.press("ctrl+j")
            assert prompt.text == ">>> if True:\n    "
            await type_text(pilot, "    for i in range(2):")  # the indent typed by habit: 4, not 8
            await pilot.press("ctrl+j")
            assert prompt.text == ">>> if True:\n    for i in range(2):\n        "
            await type_text(pilot, "total = i * 21")
            await pilot.press("ctrl+j")
            assert prompt.text.endswith("total = i * 21\n        ")
            await pilot.press("backspace")  # back one level, as in Python mode
            await type_text(pilot, "print(total + total)")
            await pilot.press("enter")  # Enter sends, as always with a model
            await wait_until(pilot, lambda: blocks(app) and blocks(app)[-1].status == "success")
            assert "42" in blocks(app)[-1].result.output and server.requests == []
            # A message: Ctrl+J is a plain new line.
            await type_text(pilot, "why is it so:")
            await pilot.press("ctrl+j")
            assert prompt.text == "why is it so:\n"


# -- no control character into the input ---------------------------------------------------


def test_the_driver_offers_no_path_with_a_control_or_bidi_character(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "d").mkdir()
    for name in ("\x1b[2Jclear.txt", "bell\x07.txt", "flip\u202eexe.txt", "plain.txt"):
        (tmp_path / "d" / name).write_text("")
    monkeypatch.chdir(tmp_path)
    offered = [item["name"] for item in driver.complete("open('./d/", {})]
    assert offered == ["./d/plain.txt"]


def test_the_input_takes_no_candidate_that_is_not_printable() -> None:
    assert insertable({"name": "alpha", "type": "file"})
    assert not insertable({"name": "\x1b]52;c;AAAA\x07x", "type": "file"})
    assert not insertable({"name": "x", "type": "\x1b[31mred"})
    assert not insertable({"name": "x", "close": "\u202e"})
    assert not insertable({"name": 7})


async def test_tab_on_a_folder_holding_an_escape_named_file_puts_no_escape_in_the_input(hermes_home: Path, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "\x1b[2Jclear.txt").write_text("")
    (tmp_path / "d" / "zz.txt").write_text("")
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        prompt = await ready(pilot, app)
        await run(pilot, app, "x = 1")  # a kernel to ask
        prompt.focus()
        await type_text(pilot, "open('./d/")
        await pilot.press("tab")
        await pilot.pause(0.5)
        if popup(app).display:  # several offered: Enter takes the highlighted (first) one
            await pilot.press("enter")
            await pilot.pause(0.3)
        assert "\x1b" not in prompt.text
        assert prompt.text == "open('./d/zz.txt"


async def test_the_slash_popup_keeps_each_command_to_one_row(hermes_home: Path, tmp_path: Path) -> None:
    from hermes_tui.tui.widgets.completion import MAX_ITEMS, CompletionList, slash_candidates
    from hermes_tui.tui.widgets.conversation import PromptInput

    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        app.query_one(PromptInput).focus()
        await pilot.press("slash")
        popup = app.query_one(CompletionList)
        await wait_until(pilot, lambda: popup.active)
        await pilot.pause()
        shown = min(len(slash_candidates("")), MAX_ITEMS, 8)
        assert len(popup.options) >= shown > 4
        # one row per candidate: as many rows as candidates (up to the popup's height)
        assert popup.virtual_size.height == len(popup.options), (popup.virtual_size, len(popup.options))
        assert popup.region.height == shown
        rows = [popup.render_line(y).text for y in range(popup.region.height)]
        assert any(row.rstrip().endswith("…") for row in rows), rows  # a long description is cut with …
