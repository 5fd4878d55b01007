"""The approval dialog and untrusted text, with the pilot and the real runtime: nothing from a
script, a model, a file or the shell is parsed as markup; commands show their hidden
characters; the dialog ignores answers while it arms; queued requests say "N of M" and ring
once; file writes show their diff; typed ``!cmd`` asks only when flagged. Also the CLI's
terminal prompt (file requests, no raw control characters)."""

from __future__ import annotations

import asyncio
import io
import queue
import time
from datetime import datetime
from pathlib import Path

import pytest

from hermes_tui.tui.app import HermesApp
from hermes_tui.cli import tty_approver
from hermes_tui.runtime.approvals import ApprovalDecision, ApprovalRequest, FileChange
from hermes_tui.runtime.models import KernelInfo
from hermes_tui.tui.screens.approval import TYPING_NOTE, ApprovalScreen, NumberedLines
from hermes_tui.tui.widgets.conversation import PromptInput, RunBlock
from hermes_tui.tui.screens.dialogs import VariablesScreen
from hermes_tui.tui.widgets.kernels import KernelsPane
from hermes_tui.tui.screens.main import MainScreen

from fake_models import FakeModelServer
from helpers.pilot import dialog_ready, log_text, make_app, SIZE, submit, wait_until
from helpers.models import model_app
from helpers.pilot import screen_text, shows_literally

MARKUP = ["[/]", "[bold]x[/bold]", "[link=file:///etc]l[/link]", "[@click=app.quit]q[/]"]
"""Text that Rich/Textual markup would crash on, style, link or turn into an action."""
MIXED = " ".join(MARKUP)


def dialog(app: HermesApp) -> ApprovalScreen | None:
    return app.screen if isinstance(app.screen, ApprovalScreen) else None


def runs(app: HermesApp, count: int) -> bool:
    """``count`` runs are drawn and the last one has ended."""
    blocks = list(app.query(RunBlock))
    return len(blocks) == count and blocks[-1].status != "running"


def ask(app: HermesApp, request: ApprovalRequest) -> asyncio.Future[ApprovalDecision]:
    """Ask the way the workspace does: a message to the main screen carrying a future."""
    answer: asyncio.Future[ApprovalDecision] = asyncio.get_running_loop().create_future()
    app.main.post_message(MainScreen.ApprovalNeeded(request, answer))
    return answer


def request(kind: str = "terminal", text: str = "echo hi", **fields: object) -> ApprovalRequest:
    values: dict[str, object] = {"cwd": "/tmp", "session": "tui", "deadline": time.time() + 60, **fields}
    return ApprovalRequest(kind=kind, text=text, **values)  # type: ignore[arg-type]


@pytest.fixture
def no_arming(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dialogs take answers at once (tests of other things need not wait half a second)."""
    monkeypatch.setattr(ApprovalScreen, "ARMING", 0)


# -- 1. never markup from untrusted text -------------------------------------------------

@pytest.mark.parametrize("kind", ["terminal", "script", "file"])
async def test_markup_like_text_in_the_approval_dialog_is_shown_as_text(
        hermes_home: Path, tmp_path: Path, kind: str, no_arming: None) -> None:
    app = make_app(hermes_home, tmp_path)
    extra: dict[str, object] = dict(
        cwd="/tmp/[bold]dir[/bold]", session="[/]s", kernel="[@click=app.quit]k[/]", reasons=[f"why {MIXED}"])
    if kind == "terminal":
        text = f"echo {MIXED}"
        extra.update(always_rule=text, always_file="/h/[/]allow.yaml", session_rule=text)
    elif kind == "script":
        text = f"print({MIXED!r})"
    else:
        text = "patch /tmp/[/]f.txt"
        extra.update(files=[FileChange(path="/tmp/[/]f.txt", size=10)], choices=["once", "session", "deny"],
                     diff=f"--- a/f\n+++ b/f\n@@ -1 +1 @@\n-old\n+{MIXED}\n")
    async with app.run_test(size=(160, 50)) as pilot:
        answer = ask(app, request(kind, text, **extra))
        await wait_until(pilot, lambda: dialog_ready(app))
        await pilot.pause()
        await shows_literally(pilot, app, *MARKUP, "/tmp/[bold]dir[/bold]", "session [/]s", "kernel [@click=app.quit]k[/]")
        if kind == "terminal":
            await shows_literally(pilot, app, "/h/[/]allow.yaml")
        if kind == "file":
            await shows_literally(pilot, app, "/tmp/[/]f.txt", "10 B")
        await pilot.press("d")
        assert (await asyncio.wait_for(answer, 5)).choice == "deny"
        assert app.is_running


async def test_markup_like_text_from_the_shell_and_a_script_is_shown_as_text(
        hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await submit(pilot, app, "!echo a | tr '[/]' _")  # it used to crash the app (MarkupError)
        await wait_until(pilot, lambda: app.query(RunBlock) and app.query(RunBlock).last().status == "success")
        await submit(pilot, app, f"!echo '{MIXED}'")
        await wait_until(pilot, lambda: runs(app, 2) and app.query(RunBlock).last().status == "success")
        await pilot.pause(0.1)
        await shows_literally(pilot, app, "tr '[/]' _", "echo '[/]", *MARKUP)
        # A script: its terminal() call asks (the dialog), it prints markup, and fails with it.
        code = ("from hermes_tools import terminal\n"
                "print(terminal('ls [/]x')['exit_code'])\n"
                f"print({MIXED!r})\n"
                "raise ValueError('[@click=app.quit]boom[/] [bold]b[/bold]')\n")
        await submit(pilot, app, code)
        await wait_until(pilot, lambda: dialog_ready(app))
        await shows_literally(pilot, app, "ls [/]x")
        await pilot.press("1")
        await wait_until(pilot, lambda: runs(app, 3) and app.query(RunBlock).last().status == "error")
        await wait_until(pilot, lambda: MIXED in log_text(app))
        await pilot.pause(0.1)
        await pilot.press("f3", "f8")  # the output pane maximised: room for whole lines
        await shows_literally(pilot, app, MIXED, "ValueError: [@click=app.quit]boom[/] [bold]b[/bold]")


async def test_markup_like_text_from_a_model_is_shown_as_text(hermes_home: Path, tmp_path: Path) -> None:
    command = f"echo '{MIXED}'"
    with FakeModelServer([
        {"text": f"Running {MIXED}", "tool_calls": [{"name": "terminal", "arguments": {"command": command}}]},
        {"text": f"Done: {MIXED}"},
    ]) as server:
        app = model_app(hermes_home, tmp_path, server)
        async with app.run_test(size=(160, 50)) as pilot:
            await submit(pilot, app, f"say {MIXED}")
            await wait_until(pilot, lambda: dialog_ready(app))  # the model's own terminal call asks
            await shows_literally(pilot, app, command)
            await pilot.press("1")
            await wait_until(pilot, lambda: "Done:" in screen_text(app))
            await pilot.pause(0.1)
            await shows_literally(pilot, app, "you  say [/]", "Running [/]", "Done: [/]", "echo '[/]", *MARKUP)


async def test_kernels_variables_and_notices_show_data_as_text(hermes_home: Path, tmp_path: Path, monkeypatch) -> None:
    now = datetime.now()
    kernel = KernelInfo(id="k1", key="-", session="[/]s [bold]x[/bold]", mode="project",
                        interpreter="/[@click=app.quit]py[/]", cwd="/[link=file:///etc]c[/link]", pid=1, state="idle",
                        started_at=now, last_used=now, execution_count=1, idle_deadline=None)
    variables = [{"name": "[/]", "type": "[bold]str[/bold]", "len": 3, "size": 52, "repr": "'[@click=app.quit]q[/]'"}]

    async def inspect(kernel_id: str) -> list[dict[str, object]]:
        return variables

    async def no_memory() -> dict[str, int]:
        return {}

    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=(160, 40), notifications=True) as pilot:
        monkeypatch.setattr(app.runtime, "kernels", lambda: [kernel])
        monkeypatch.setattr(app.runtime, "kernel_memory", no_memory)
        monkeypatch.setattr(app.runtime, "inspect_kernel", inspect)
        app.refresh_kernels()
        await wait_until(pilot, lambda: app.query_one(KernelsPane).table().row_count == 1)
        await pilot.press("f4", "f8")  # maximised: every column in view
        await shows_literally(pilot, app, "[/]s [bold]x[/bold]", "/[@click=app.quit]py[/]", "/[link=file:///etc]c[/link]")
        await pilot.press("v")
        await wait_until(pilot, lambda: isinstance(app.screen, VariablesScreen))
        await pilot.pause()
        await shows_literally(pilot, app, "[bold]str[/bold]", "'[@click=app.quit]q[/]'")
        await pilot.press("escape", "f8")  # (a maximised pane hides the notices)

        async def gone(kernel_id: str) -> list[dict[str, object]]:
            raise RuntimeError(f"kernel gone: {MIXED}")

        monkeypatch.setattr(app.runtime, "inspect_kernel", gone)
        await pilot.press("v")  # the error becomes a notice
        await wait_until(pilot, lambda: any("kernel gone" in str(n.message) for n in app._notifications))
        await pilot.pause(0.2)
        await shows_literally(pilot, app, "kernel gone: [/]", *MARKUP)

        async def broken() -> dict[str, int]:
            raise OSError("disk [/] on [bold]fire[/bold]")

        monkeypatch.setattr(app.runtime, "kernel_memory", broken)
        app.refresh_kernels()  # a failing task becomes a notice too
        await wait_until(pilot, lambda: any("disk [/]" in str(n.message) for n in app._notifications))
        await pilot.pause(0.2)
        await shows_literally(pilot, app, "OSError: disk [/] on", "[bold]fire[/bold]")


# -- 2. hidden characters are shown --------------------------------------------------------

async def test_a_command_with_hidden_characters_shows_them_escaped(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:
        # The command holds a real ESC and a zero-width space (the script's string escapes).
        await submit(pilot, app, "from hermes_tools import terminal\nterminal('echo \\x1b[31mred\\u200bx')\n")
        await wait_until(pilot, lambda: dialog_ready(app))
        assert "\x1b" in dialog(app).request.text
        await shows_literally(pilot, app, "echo \\x1b[31mred\\u200bx", "⚠ contains hidden characters")
        assert "\x1b" not in screen_text(app)
        await pilot.press("d")
        await wait_until(pilot, lambda: app.query(RunBlock) and app.query(RunBlock).last().status == "success")


# -- 3. typing cannot answer it ------------------------------------------------------------

async def test_keys_in_the_first_half_second_do_not_answer(hermes_home: Path, tmp_path: Path) -> None:
    assert ApprovalScreen.ARMING == 0.5
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        answer = ask(app, request())
        await wait_until(pilot, lambda: dialog(app) is not None and hasattr(dialog(app), "opened_at"), timeout=5)
        screen = dialog(app)
        pressed = []
        for key in ("o", "enter", "escape", "o"):
            if time.monotonic() - screen.opened_at > 0.3:  # well inside the half second: no race with the timer
                break
            await pilot.press(key)
            pressed.append(key)
        if not pressed:  # the other arming test (3 s) covers a machine this loaded
            pytest.skip("the machine is too loaded to press a key within 0.3 s of the dialog opening")
        assert dialog(app) is screen and not answer.done()
        await wait_until(pilot, lambda: dialog_ready(app), timeout=5)
        assert not answer.done() and "arming" not in screen_text(app)
        await pilot.press("o")  # the same key, now
        assert (await asyncio.wait_for(answer, 5)).choice == "once"


async def test_no_answer_key_or_click_works_while_arming(hermes_home: Path, tmp_path: Path, monkeypatch) -> None:
    # Long enough to try every key however slow the machine; the arming's end is then brought
    # forward (that the timer ends it is shown by every other test of the dialog).
    monkeypatch.setattr(ApprovalScreen, "ARMING", 60.0)
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        answer = ask(app, request(always_rule="echo hi", always_file="/h/allow.yaml"))
        await wait_until(pilot, lambda: dialog(app) is not None, timeout=5)
        await pilot.press("1", "2", "3", "4", "o", "s", "a", "d", "r", "enter", "escape", "space")
        for button in ("#once", "#session", "#always", "#deny"):
            await pilot.click(button)
        screen = dialog(app)
        assert screen is not None and not screen.armed and not answer.done()
        assert all(button.disabled for button in screen.query("Button"))
        assert not screen.query_one("#deny-reason").has_class("visible")  # r did nothing either
        await shows_literally(pilot, app, "arming… keys are ignored for 60 s")
        screen._arm()
        await wait_until(pilot, lambda: dialog_ready(app), timeout=5)
        await pilot.press("a")
        assert (await asyncio.wait_for(answer, 5)).choice == "always"


async def test_clicks_after_arming_answer(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        answer = ask(app, request())
        await wait_until(pilot, lambda: dialog_ready(app), timeout=5)
        await pilot.click("#session")
        assert (await asyncio.wait_for(answer, 5)).choice == "session"


async def test_a_dialog_that_opens_while_you_type_says_so(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one(PromptInput)
        prompt.focus()
        await pilot.press("p", "r", "i")  # typing...
        answer = ask(app, request())  # ...when the question arrives
        await wait_until(pilot, lambda: dialog(app) is not None, timeout=5)
        await shows_literally(pilot, app, TYPING_NOTE)
        await wait_until(pilot, lambda: dialog_ready(app), timeout=5)
        await pilot.press("d")
        assert (await asyncio.wait_for(answer, 5)).choice == "deny"
        assert prompt.text == "pri"  # keys typed before it opened went to the input, not the dialog
        await pilot.pause(1.1)  # not typing now
        second = ask(app, request())
        await wait_until(pilot, lambda: dialog(app) is not None, timeout=5)
        await shows_literally(pilot, app, "Approve this terminal command?")
        assert not dialog(app).typing and TYPING_NOTE not in screen_text(app)
        await wait_until(pilot, lambda: dialog_ready(app), timeout=5)
        await pilot.press("d")
        await asyncio.wait_for(second, 5)


# -- 4. N of M, one bell per burst ---------------------------------------------------------

async def test_queued_requests_say_n_of_m_and_ring_once(
        hermes_home: Path, tmp_path: Path, monkeypatch, no_arming: None) -> None:
    app = make_app(hermes_home, tmp_path)
    bells: list[float] = []
    monkeypatch.setattr(app, "bell", lambda: bells.append(time.monotonic()))
    async with app.run_test(size=SIZE) as pilot:

        def title() -> str:
            screen = dialog(app)
            return screen.title_text() if screen else ""

        answers = [ask(app, request(text=f"echo {i}")) for i in range(3)]
        await wait_until(pilot, lambda: "request 1 of 3" in title())
        assert dialog(app).request.text == "echo 0"
        await shows_literally(pilot, app, "request 1 of 3")
        await pilot.press("1")
        await wait_until(pilot, lambda: "request 2 of 3" in title())
        answers.append(ask(app, request(text="echo 3")))  # one more joins the queue
        await wait_until(pilot, lambda: "request 2 of 4" in title())
        await shows_literally(pilot, app, "request 2 of 4")
        for expected in ("request 3 of 4", "request 4 of 4"):
            await pilot.press("1")
            await wait_until(pilot, lambda: expected in title())
        await pilot.press("d")
        decisions = await asyncio.wait_for(asyncio.gather(*answers), 5)
        assert [d.choice for d in decisions] == ["once", "once", "once", "deny"]
        assert len(bells) == 1  # one burst, one bell
        later = ask(app, request(text="echo later"))  # a new burst
        await wait_until(pilot, lambda: dialog(app) is not None and dialog(app).request.text == "echo later")
        assert "of" not in title() and len(bells) == 2
        await pilot.press("d")
        await asyncio.wait_for(later, 5)


# -- 5. file requests show the diff --------------------------------------------------------

async def test_a_patch_of_a_protected_file_shows_its_diff(hermes_home: Path, tmp_path: Path, monkeypatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # ~/.bashrc is a protected file: never the real one
    bashrc = home / ".bashrc"
    bashrc.write_text("export EDITOR=vim\nalias ll='ls -l'\n")
    app = make_app(hermes_home, tmp_path)
    code = ("from hermes_tools import patch\n"
            f"print(patch(path={str(bashrc)!r}, old_string=\"alias ll='ls -l'\", new_string=\"alias ll='ls -la'\")"
            ".get('error', 'patched'))\n")
    async with app.run_test(size=(160, 45)) as pilot:
        await submit(pilot, app, code)
        await wait_until(pilot, lambda: dialog_ready(app))
        screen = dialog(app)
        assert screen.request.kind == "file"
        await shows_literally(pilot, app, "Allow patch to change this file?", str(bashrc), "35 B", "-alias ll='ls -l'",
                        "+alias ll='ls -la'", " export EDITOR=vim", "once: only this time.")
        assert screen._code().lexer.name == "Diff"  # highlighted as a diff
        assert [b.id for b in screen.query("Button")] == ["once", "session", "deny", "deny_run"]  # its choices (a script's request: deny all of it too)
        await pilot.press("1")
        await wait_until(pilot, lambda: "patched" in log_text(app))
    assert bashrc.read_text() == "export EDITOR=vim\nalias ll='ls -la'\n"


async def test_an_injected_write_of_a_new_file_says_new_file(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:
        call = asyncio.create_task(app.runtime.call_tool(
            "write_file", {"path": "notes/new.txt", "content": "hello [bold]there[/bold]\n"}, session=app.session,
            origin="injected", cwd=tmp_path))
        await wait_until(pilot, lambda: dialog_ready(app))
        await shows_literally(pilot, app, "Allow write_file to change this file?", str(tmp_path / "notes" / "new.txt"),
                        "new file", "+hello [bold]there[/bold]", "an injected turn")
        await pilot.press("d")
        result = await asyncio.wait_for(call, 10)
    assert "BLOCKED: denied by the user" in str(result["error"])
    assert not (tmp_path / "notes" / "new.txt").exists()


async def test_a_credentials_read_says_what_session_would_allow_a_read(hermes_home: Path, tmp_path: Path) -> None:
    (tmp_path / "k.pem").write_text("-----BEGIN PRIVATE KEY-----\nabc\n")
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:
        call = asyncio.create_task(app.runtime.call_tool("read_file", {"path": "k.pem"}, session=app.session,
                                                         cwd=tmp_path))
        await wait_until(pilot, lambda: dialog_ready(app))
        await shows_literally(pilot, app, "Allow read_file to read this file?",
                              "session: lets the same tool read the same files again")
        assert "tool write the same" not in screen_text(app)
        await pilot.press("d")
        result = await asyncio.wait_for(call, 10)
    assert "BLOCKED: denied by the user" in str(result["error"])


async def test_a_long_diff_scrolls(hermes_home: Path, tmp_path: Path, no_arming: None) -> None:
    diff = "--- /dev/null\n+++ b/big.txt\n@@ -0,0 +1,200 @@\n" + "".join(f"+line {i}\n" for i in range(200))
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        answer = ask(app, request("file", "write_file /tmp/big.txt", files=[FileChange(path="/tmp/big.txt")],
                                  diff=diff, choices=["once", "session", "deny"]))
        await wait_until(pilot, lambda: dialog_ready(app))
        code = dialog(app).query_one("#code")
        await wait_until(pilot, lambda: code.max_scroll_y > 100, timeout=5)  # (once it is laid out)
        assert "+line 199" not in screen_text(app)
        code.scroll_end(animate=False)
        await pilot.pause()
        await shows_literally(pilot, app, "+line 199")
        await pilot.press("d")
        await asyncio.wait_for(answer, 5)


# -- 7. a typed !cmd ---------------------------------------------------------------------

async def test_typed_commands_ask_only_when_flagged(hermes_home: Path, tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "visible-file.txt").write_text("x")
    (tmp_path / "build").mkdir()
    asked: list[str] = []
    app = make_app(hermes_home, tmp_path)
    assert app.config.approvals.mode == "strict"

    def hook(message: object) -> None:
        if isinstance(message, MainScreen.ApprovalNeeded):  # (seen again as it bubbles to the app)
            asked.append(message.request.id)

    def notes() -> str:
        return "\n".join(str(n.render()) for n in app.query(".note"))

    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        await submit(pilot, app, "!ls")
        await wait_until(pilot, lambda: "visible-file.txt" in notes())  # ran, no dialog
        assert not asked
        await submit(pilot, app, "!rm -rf build")
        await wait_until(pilot, lambda: dialog_ready(app))  # flagged: it asks
        await shows_literally(pilot, app, "rm -rf build", "deletes recursively or by force")
        await pilot.press("d")
        await wait_until(pilot, lambda: runs(app, 2))
        assert (tmp_path / "build").is_dir() and len(set(asked)) == 1

        # The hard floor: refused with no dialog. Should it ever get past the gate, nothing runs.
        ran: list[str] = []

        async def never_run(command: str, **kwargs: object) -> dict[str, object]:
            ran.append(command)
            return {"output": "", "exit_code": -1, "error": "not run by the test"}

        from hermes_tui.runtime.tools import terminal as terminal_tool

        monkeypatch.setattr(terminal_tool, "run_command", never_run)
        await submit(pilot, app, "!rm -rf /")
        await wait_until(pilot, lambda: runs(app, 3))
        await pilot.pause(0.1)
        assert len(set(asked)) == 1 and dialog(app) is None and not ran
        await shows_literally(pilot, app, "BLOCKED: refused")


# -- 6. the CLI prompt ---------------------------------------------------------------------

def test_cli_prompt_reveals_hidden_characters_and_shows_file_changes() -> None:
    terminal = request(text="echo \x1b]0;owned\x07 \x1b[2J rm\u200b -rf x", reasons=["why \x1b[31m"],
                       always_rule="echo \x1b[2J", always_file="/h/allow.yaml")
    described = tty_approver.describe_request(terminal)
    assert "\x1b" not in described and "\x07" not in described
    assert "echo \\x1b]0;owned\\x07 \\x1b[2J rm\\u200b -rf x" in described and "why \\x1b[31m" in described

    script = request("script", "print('ok')\nprint('\x1b[2J')")
    assert "\x1b" not in tty_approver.describe_request(script) and "print('\\x1b[2J')" in tty_approver.describe_request(script)

    change = request("file", "write_file /tmp/a\x1b[1m.txt /tmp/b.txt", files=[
        FileChange(path="/tmp/a\x1b[1m.txt", size=None), FileChange(path="/tmp/b.txt", size=3000)],
        diff="--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+hi \x1b[5m\n", choices=["once", "session", "deny"])
    described = tty_approver.describe_request(change)
    assert "\x1b" not in described
    assert "allow write_file to change these 2 files" in described
    assert "/tmp/a\\x1b[1m.txt  (new file)" in described and "/tmp/b.txt  (2.9 KiB)" in described
    assert "  | +hi \\x1b[5m" in described and "  | --- /dev/null" in described


def test_cli_prompt_answers_a_file_request() -> None:
    out = io.StringIO()
    terminal = tty_approver._Terminal(io.StringIO(), out)
    lines: queue.SimpleQueue[str | None] = queue.SimpleQueue()
    for line in ("a\n", "s\n"):  # "always" is not offered for a file write: asked again
        lines.put(line)
    change = request("file", "patch /tmp/x", files=[FileChange(path="/tmp/x", size=12)],
                     diff="--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n", choices=["once", "session", "deny"])
    assert tty_approver._ask(terminal, lines, change).choice == "session"
    written = out.getvalue()
    assert "please answer one of: once, session, deny" in written and "  | +b" in written


async def test_the_enter_that_sent_a_command_is_not_typing(hermes_home: Path, tmp_path: Path) -> None:
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one(PromptInput)
        prompt.focus()
        prompt.insert("!rm -rf build")
        await pilot.press("enter")
        await wait_until(pilot, lambda: dialog(app) is not None, timeout=10)
        assert not dialog(app).typing and TYPING_NOTE not in screen_text(app)
        await wait_until(pilot, lambda: dialog_ready(app), timeout=5)
        await pilot.press("d")


async def test_the_answers_stay_on_a_small_terminal(hermes_home: Path, tmp_path: Path) -> None:
    diff = "--- a/x\n+++ b/x\n@@ -1,40 +1,40 @@\n" + "".join(f"-old {i}\n+new {i}\n" for i in range(40))
    many = [f"reason {i}: writes something that matters" for i in range(6)]
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        answer = ask(app, request("file", "patch /tmp/x", files=[FileChange(path="/tmp/x", size=4000)], diff=diff,
                                  reasons=many, choices=["once", "session", "deny"]))
        await wait_until(pilot, lambda: dialog_ready(app), timeout=5)
        for button in dialog(app).query("Button"):
            assert 0 <= button.region.y and button.region.bottom <= 24, button.region
        await pilot.click("#deny")
        assert (await asyncio.wait_for(answer, 5)).choice == "deny"


async def test_a_megabyte_script_is_shown_whole_without_freezing_the_app(hermes_home: Path, tmp_path: Path) -> None:
    script = "".join(f"print({i})  # {'x' * 90}\n" for i in range(10_000)) + "import os; os.system('[bold]x[/]')\n"
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        started = time.monotonic()
        answer = ask(app, request("script", script, choices=["once", "session", "deny"]))
        await wait_until(pilot, lambda: dialog_ready(app), timeout=10)
        assert time.monotonic() - started < 5  # it took 10 s when the whole script was highlighted at once
        shown = dialog(app).query_one("#code-text", NumberedLines)
        assert shown.text == script
        lines = script.splitlines()
        assert len(shown.lines) == len(lines) == 10_001
        assert all(row.split(" │ ", 1)[1] == line for row, line in zip(shown.lines, lines)), "every line, whole"
        assert shown.lines[0] == "    1 │ " + lines[0] and shown.lines[-1].startswith("10001 │ import os")
        shown.scroll_end(animate=False)
        await shows_literally(pilot, app, "10001 │ import os; os.system('[bold]x[/]')")  # the last line, as text
        await pilot.press("d")
        assert (await asyncio.wait_for(answer, 5)).choice == "deny"


async def test_at_80x24_the_dialog_scrolls_and_every_answer_shows_whole(
        hermes_home: Path, tmp_path: Path, no_arming: None) -> None:
    """The trial at 80x24 found "deny all"'s line cut mid-sentence and its button cut to
    "5 Deny all of this scr": the title and the answers stay, the text between scrolls."""
    app = make_app(hermes_home, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        ask(app, request(text="echo hi > f3", exec_id="20261202-061411-7609abcd", cwd="/tmp/trial31/home/project",
                         reasons=["writes a file", "runs decoded, hidden code", "deletes recursively or by force"],
                         choices=["once", "session", "always", "deny"], session_rule="echo hi > f3",
                         always_rule="echo hi > f3", always_file="/x/allowlist.yaml"))
        await wait_until(pilot, lambda: dialog(app) is not None)
        await shows_literally(pilot, app, "Approve this terminal command?", "1 Once", "2 Session", "3 Always",
                              "4 Deny", "5 Deny all")
        box = dialog(app).query_one("#dialog")
        assert box.max_scroll_y > 0, screen_text(app)  # more than fits: it scrolls rather than cutting
        box.scroll_end(animate=False)
        await shows_literally(pilot, app, "until it ends).", "Approve this terminal command?", "5 Deny all")
