"""The conversation in the app, with the pilot: a real model server on 127.0.0.1, real
kernels, the approval dialog answered by keys, the sessions database (a resumed session drawn
as it was live), inject, export."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from hermes_tui.storage import sessions as db
from hermes_tui.storage import opening
from hermes_tui.tui.app import HermesApp
from hermes_tui.agent.export import to_sharegpt
from hermes_tui.tui.widgets.conversation import MessageBlock, RunBlock

from conftest import make_config
from fake_models import FakeModelServer
from helpers.pilot import dialog_ready, SIZE, submit, wait_until
from helpers.models import model_app, replies


async def ask_from_script(pilot, app: HermesApp, message: str) -> None:
    """Send ``message``; the model's script asks to run SCRIPT's command: wait for the dialog."""
    await submit(pilot, app, message)
    await wait_until(pilot, lambda: dialog_ready(app))
    assert app.screen.request.text == "echo approved-$((40 + 2))"


def stored(home: Path, session: str) -> db.StoredSession:
    conn = opening.connect(opening.sessions_db_path(home))
    try:
        found = db.load_session(conn, session)
    finally:
        conn.close()
    assert found is not None
    return found


BANG = "echo from-the-$((1 + 1))-shell && chmod -R u+rw ."
"""A typed command that asks: chmod -R is flagged (an unflagged typed !cmd runs unasked)."""
MEANWHILE = "echo typed-meanwhile && chmod -R u+rw ."

SCRIPT = ("from hermes_tools import terminal\n"
          "r = terminal('echo approved-$((40 + 2))')\n"
          "print(r.get('output', r))\n")


async def test_full_loop_message_tool_call_approval_reply(hermes_home: Path, tmp_path: Path) -> None:
    with FakeModelServer([
        {"text": "I'll run a command.", "tool_calls": [{"name": "execute_code", "arguments": {"code": SCRIPT}}]},
        {"text": "The command printed **approved-42**."},
    ]) as server:
        app = model_app(hermes_home, tmp_path, server, session="s-loop")
        async with app.run_test(size=SIZE) as pilot:
            await ask_from_script(pilot, app, "run the check")
            await pilot.press("1")
            await wait_until(pilot, lambda: "approved-42**" in replies(app))
            run = app.query(RunBlock).last()
            assert run.status == "success" and run.result.output.strip() == "approved-42"
            assert [m.text for m in app.query(MessageBlock)] == ["run the check"]
            assert "fake-model" in str(app.query_one("#topbar").render())
    session = stored(hermes_home, "s-loop")
    assert [m["role"] for m in session.messages] == ["user", "assistant", "tool", "assistant"]
    call = next(iter(session.tool_calls.values()))
    assert call["status"] == "success" and call["exec_id"]
    assert (hermes_home / "cache" / "exec" / f"{call['exec_id']}.json").exists()  # linked to its record
    [approval] = session.pending_approvals or [None]
    assert approval is None  # answered, not pending
    record = to_sharegpt(session)
    assert [c["from"] for c in record["conversations"]] == ["system", "human", "gpt", "tool", "gpt"]
    assert "<tool_call>" in record["conversations"][2]["value"]
    assert record["conversations"][3]["value"].startswith("<tool_response>")


async def test_provider_error_shows_and_retry_continues(hermes_home: Path, tmp_path: Path) -> None:
    with FakeModelServer([{"status": 500, "error": "boom"}, {"text": "recovered"}]) as server:
        app = model_app(hermes_home, tmp_path, server)
        async with app.run_test(size=SIZE) as pilot:
            await submit(pilot, app, "hello")
            await wait_until(pilot, lambda: any("HTTP 500: boom" in str(n.render()) for n in app.query(".note.error")))
            await submit(pilot, app, "/retry")
            await wait_until(pilot, lambda: "recovered" in replies(app))
            assert [m.text for m in app.query(MessageBlock)] == ["hello"]


async def test_typing_interrupts_the_running_script(hermes_home: Path, tmp_path: Path) -> None:
    slow = "import time\nprint('working', flush=True)\ntime.sleep(60)\n"
    with FakeModelServer([
        {"tool_calls": [{"name": "execute_code", "arguments": {"code": slow}}]},
        {"text": "Switched to the new question."},
    ]) as server:
        app = model_app(hermes_home, tmp_path, server)
        async with app.run_test(size=SIZE) as pilot:
            await submit(pilot, app, "long job")
            await wait_until(pilot, lambda: "working" in "\n".join(app.query_one("#output-log").lines))
            await submit(pilot, app, "never mind")
            await wait_until(pilot, lambda: "Switched" in replies(app))
            run = app.query(RunBlock).first()
            assert run.status == "interrupted"
            assert "[execution interrupted — user sent a new message]" in run.result.output


async def test_inject_into_running_app(hermes_home: Path, tmp_path: Path) -> None:
    with FakeModelServer([
        {"tool_calls": [{"name": "execute_code", "arguments": {"code": "print('injected work')"}}]},
        {"text": "Injected task done."},
    ]) as server:
        app = model_app(hermes_home, tmp_path, server, session="s-inject")
        async with app.run_test(size=SIZE) as pilot:
            sock = hermes_home / "tui" / "inject" / "s-inject.sock"
            await wait_until(pilot, lambda: sock.exists())
            assert oct(Path(os.path.realpath(sock)).stat().st_mode & 0o777) == "0o600"  # (a long path is a link)
            done = subprocess.Popen([sys.executable, "-m", "hermes_tui.cli", "inject", "check the build"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            # An injected turn has its whole script approved first.
            await wait_until(pilot, lambda: dialog_ready(app))
            assert app.screen.request.kind == "script" and app.screen.request.origin == "injected"
            await pilot.press("1")
            await wait_until(pilot, lambda: "Injected task done." in replies(app))
            out, err = done.communicate(timeout=10)
            assert done.returncode == 0 and "injected into session s-inject" in out, err
            [message] = list(app.query(MessageBlock))
            assert message.origin == "injected" and message.has_class("injected")
            assert app.query(RunBlock).last().result.output == "injected work\n"
        assert not sock.exists()  # removed when the app stops
    bad = subprocess.run([sys.executable, "-m", "hermes_tui.cli", "inject", "--session", "nope", "x"],
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2 and "no app is running session nope" in bad.stderr


async def test_resume_answers_a_pending_approval_and_the_turn_goes_on(hermes_home: Path, tmp_path: Path) -> None:
    with FakeModelServer([
        {"tool_calls": [{"name": "execute_code", "arguments": {"code": SCRIPT}}]},
        {"text": "After the restart it printed approved-42."},
    ]) as server:
        app = model_app(hermes_home, tmp_path, server, session="s-resume")
        async with app.run_test(size=SIZE) as pilot:
            await ask_from_script(pilot, app, "check after restart")
            # The app stops here, the question unanswered (the e2e test kills it with -9 instead).
        session = stored(hermes_home, "s-resume")
        assert [a["status"] for a in session.pending_approvals] == ["pending"]
        again = model_app(hermes_home, tmp_path, server, session="s-resume")
        async with again.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: dialog_ready(again))
            assert again.screen.request.text == "echo approved-$((40 + 2))"
            assert any("asked again" in reason for reason in again.screen.request.reasons)
            await pilot.press("1")
            await wait_until(pilot, lambda: "After the restart" in replies(again))
            assert [m.text for m in again.query(MessageBlock)] == ["check after restart"]
            assert any("interrupted" in str(n.render()) for n in again.query(".note.warning"))
            assert again.query(RunBlock).last().result.output.strip() == "approved-42"
    session = stored(hermes_home, "s-resume")
    assert not session.pending_approvals
    assert [t["status"] for t in session.turns] == ["done"]
    tool_message = next(m for m in session.messages if m["role"] == "tool")
    assert "approved-42" in json.loads(tool_message["content"])["output"]


async def test_no_model_input_runs_python_and_is_stored(hermes_home: Path, tmp_path: Path) -> None:
    app = HermesApp(make_config(), cwd=str(tmp_path), home=hermes_home, session="s-py")
    async with app.run_test(size=SIZE) as pilot:
        assert "No model" in str(app.query_one("#hint").render())
        await submit(pilot, app, "print(6 * 7)")
        await wait_until(pilot, lambda: app.query(RunBlock) and app.query(RunBlock).last().status == "success")
    session = stored(hermes_home, "s-py")
    assert [m["role"] for m in session.messages] == ["user", "assistant", "tool"]
    assert json.loads(session.messages[2]["content"])["output"] == "42\n"


async def test_sessions_picker_switches_session(hermes_home: Path, tmp_path: Path) -> None:
    with FakeModelServer([{"text": "first session reply"}, {"text": "second"}]) as server:
        app = model_app(hermes_home, tmp_path, server, session="s-a")
        async with app.run_test(size=SIZE) as pilot:
            await submit(pilot, app, "hello a")
            await wait_until(pilot, lambda: "first session reply" in replies(app))
            await submit(pilot, app, "/new")
            await wait_until(pilot, lambda: app.session != "s-a" and app.agent is not None
                             and app.agent.session_id == app.session)
            assert not list(app.query(MessageBlock))
            await pilot.press("ctrl+o")
            from hermes_tui.tui.screens.sessions import SessionsScreen

            await wait_until(pilot, lambda: isinstance(app.screen, SessionsScreen))
            await pilot.press("enter")  # the newest stored session: s-a
            await wait_until(pilot, lambda: app.session == "s-a" and [m.text for m in app.query(MessageBlock)] == ["hello a"])
            assert "first session reply" in replies(app)


async def test_unusable_database_is_said_and_the_app_still_works(hermes_home: Path, tmp_path: Path) -> None:
    (hermes_home / "tui" / "sessions.db").mkdir(parents=True)  # a directory where the file should be
    app = HermesApp(make_config(), cwd=str(tmp_path), home=hermes_home, session="s-mem")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: any("cannot be opened" in str(n.render()) for n in app.query(".note.error")))
        await submit(pilot, app, "print('still works')")
        await wait_until(pilot, lambda: app.query(RunBlock) and app.query(RunBlock).last().status == "success")
        assert app.query(RunBlock).last().result.output == "still works\n"


async def test_inject_without_a_model_runs_python_after_approval(hermes_home: Path, tmp_path: Path) -> None:
    from hermes_tui.agent.inject import inject

    app = HermesApp(make_config(), cwd=str(tmp_path), home=hermes_home, session="s-py-inject")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.agent is not None and app.workspace.listening)
        answer = await asyncio.to_thread(inject, "print('via inject', 6 * 7)", None, hermes_home)
        assert answer == {"ok": True, "session": "s-py-inject", "queued": 0}
        await wait_until(pilot, lambda: dialog_ready(app))
        assert app.screen.request.kind == "script" and "via inject" in app.screen.request.text
        await pilot.press("1")
        await wait_until(pilot, lambda: app.query(RunBlock) and app.query(RunBlock).last().status == "success")
        assert app.query(RunBlock).last().result.output == "via inject 42\n"
        assert [m.origin for m in app.query(MessageBlock)] == ["injected"]


async def test_config_naming_an_unknown_provider_still_opens(hermes_home: Path, tmp_path: Path) -> None:
    app = HermesApp(make_config("model:\n  provider: some-future-provider\n  default: m1\n"), cwd=str(tmp_path),
                    home=hermes_home, session="s-unknown")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: any("'some-future-provider' is not known" in str(n.render())
                                            for n in app.query(".note.error")))
        assert "input runs Python" in str(app.query_one("#hint").render())
        await submit(pilot, app, "print('python still works')")
        await wait_until(pilot, lambda: app.query(RunBlock) and app.query(RunBlock).last().status == "success")


async def test_escape_stops_a_streaming_reply(hermes_home: Path, tmp_path: Path) -> None:
    words = " ".join(f"w{i}" for i in range(400))
    with FakeModelServer([{"text": words, "chunk": 3, "delay": 0.02}]) as server:
        app = model_app(hermes_home, tmp_path, server, session="s-stop")
        async with app.run_test(size=SIZE) as pilot:
            await submit(pilot, app, "talk a lot")
            await wait_until(pilot, lambda: "w3" in replies(app))
            await pilot.press("escape")
            await wait_until(pilot, lambda: "[interrupted]" in replies(app))
            assert "w399" not in replies(app)
    session = stored(hermes_home, "s-stop")
    assert [t["status"] for t in session.turns] == ["interrupted"]
    assert session.messages[-1]["status"] == "interrupted" and "[interrupted]" in session.messages[-1]["content"]


def approvals_of(home: Path, session: str) -> list[dict]:
    conn = opening.connect(opening.sessions_db_path(home))
    try:
        return [dict(row) for row in conn.execute(
            "SELECT * FROM approvals WHERE session_id = ? ORDER BY created_at", (session,))]
    finally:
        conn.close()


async def test_bang_command_is_stored_seen_by_the_model_resumed_and_exported(hermes_home: Path, tmp_path: Path) -> None:
    with FakeModelServer([{"text": "It printed from-the-shell."}]) as server:
        app = model_app(hermes_home, tmp_path, server, session="s-bang")
        async with app.run_test(size=SIZE) as pilot:
            await submit(pilot, app, "!" + BANG)
            await wait_until(pilot, lambda: dialog_ready(app))
            asked = app.screen.request
            await pilot.press("1")
            await wait_until(pilot, lambda: app.query(RunBlock) and app.query(RunBlock).last().status == "success")
            assert not list(app.query(MessageBlock))  # a !cmd shows as its run, not as a message
            await submit(pilot, app, "what did it print?")
            await wait_until(pilot, lambda: "It printed" in replies(app))
        # The model was sent the command and its output, as a call and its result.
        sent = server.requests[0]["messages"]
        assert [m["role"] for m in sent[1:]] == ["user", "assistant", "tool", "user"]
        assert sent[1]["content"] == "!" + BANG
        assert sent[2]["tool_calls"][0]["function"]["name"] == "terminal"
        assert "from-the-2-shell" in json.loads(sent[3]["content"])["output"]
    session = stored(hermes_home, "s-bang")
    [shell_call] = [c for c in session.tool_calls.values() if c["name"] == "terminal"]
    assert shell_call["status"] == "success" and "from-the-2-shell" in shell_call["result"]["output"]
    # Its approval is recorded under its own call, and answered.
    [approval] = approvals_of(hermes_home, "s-bang")
    assert asked.call_id == shell_call["id"] == approval["tool_call_id"]
    assert approval["status"] == "answered" and approval["decision"] == "once"
    # Exported: the command as the human's turn, its call and its output.
    exported = json.dumps(to_sharegpt(session), ensure_ascii=False)
    assert "!" + BANG in exported and "from-the-2-shell" in exported
    assert '\\"name\\": \\"terminal\\"' in exported
    # Resumed: the run is drawn again, with its outcome.
    again = model_app(hermes_home, tmp_path, server, session="s-bang")
    async with again.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: any(b.code == BANG for b in again.query(RunBlock)))
        run = next(b for b in again.query(RunBlock) if b.code == BANG)
        assert run.status == "success"


async def test_a_bang_command_typed_during_a_model_call_waits_and_keeps_its_own_call_id(
        hermes_home: Path, tmp_path: Path) -> None:
    slow = ("import time\nfrom hermes_tools import terminal\ntime.sleep(1.5)\n"
            "print(terminal('echo approved-$((40 + 2))')['output'])\n")
    with FakeModelServer([
        {"tool_calls": [{"name": "execute_code", "arguments": {"code": slow}}]},
        {"text": "Model turn done."},
    ]) as server:
        app = model_app(hermes_home, tmp_path, server, session="s-ids")
        async with app.run_test(size=SIZE) as pilot:
            await submit(pilot, app, "run the slow check")
            await wait_until(pilot, lambda: app.query(RunBlock) and app.query(RunBlock).last().status == "running")
            await submit(pilot, app, "!" + MEANWHILE)
            from hermes_tui.tui.widgets.conversation import PendingBlock

            await wait_until(pilot, lambda: any("pending command" in str(b.render()) for b in app.query(PendingBlock)))
            await wait_until(pilot, lambda: dialog_ready(app))
            model_request = app.screen.request
            assert model_request.text == "echo approved-$((40 + 2))"
            await pilot.press("1")
            await wait_until(pilot, lambda: dialog_ready(app)
                             and app.screen.request.text == MEANWHILE)
            shell_request = app.screen.request
            await pilot.press("1")
            await wait_until(pilot, lambda: app.agent is not None and not app.agent.busy
                             and app.query(RunBlock).last().status == "success")
    session = stored(hermes_home, "s-ids")
    by_name = {c["name"]: c["id"] for c in session.tool_calls.values()}
    assert model_request.call_id == by_name["execute_code"]
    assert shell_request.call_id == by_name["terminal"] != model_request.call_id
    assert {a["text"]: a["tool_call_id"] for a in approvals_of(hermes_home, "s-ids")} == {
        "echo approved-$((40 + 2))": by_name["execute_code"], MEANWHILE: by_name["terminal"]}
    assert [t["text"] for t in session.turns] == ["run the slow check", "!" + MEANWHILE]


async def test_python_beside_the_chat_runs_in_the_kernel_and_the_model_sees_it(hermes_home: Path,
                                                                                tmp_path: Path) -> None:
    """Issue 32: with a model set, every input went to the model; `>>>` runs Python in the
    session's kernel as a user turn (a REPL session's pasted prompts too), stored and shown like
    any run, and the model reads it on its next request, as it reads a !cmd."""
    with FakeModelServer([{"text": "x is 42."}]) as server:
        app = model_app(hermes_home, tmp_path, server)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app._session_ready.is_set())
            await submit(pilot, app, ">>> x = 6 * 7")
            await wait_until(pilot, lambda: any(r.status == "success" for r in app.query(RunBlock)))
            await submit(pilot, app, ">>> for i in range(2):\n...     x += 0\n... print(x)")
            await wait_until(pilot, lambda: [r.status for r in app.query(RunBlock)] == ["success", "success"])
            assert "42" in app.query(RunBlock).last().result.output
            assert server.requests == []  # the model was not asked
            await submit(pilot, app, "what is x?")
            await wait_until(pilot, lambda: "x is 42." in replies(app))
        sent = json.dumps(server.requests[-1]["messages"])
    assert "x = 6 * 7" in sent and "execute_code" in sent  # the run is in the history it reads


def transcript_rows(app) -> list[tuple[str, str]]:
    """(kind, text) of each block in the transcript (the resumed session's head line left out)."""
    from hermes_tui.tui.widgets.conversation import MessageBlock, RunBlock

    rows = []
    for widget in app.query_one("#transcript").children:
        if isinstance(widget, MessageBlock):
            rows.append(("message", widget.text))
        elif isinstance(widget, RunBlock):
            rows.append(("run", f"{widget.code} · {widget.status}"))
        elif "note" in widget.classes and not str(widget.render()).startswith("Session "):
            rows.append(("note", str(widget.render())))
    return rows


async def test_a_resumed_session_draws_a_typed_command_as_it_was_drawn_live(hermes_home: Path, tmp_path: Path) -> None:
    from conftest import make_config
    from helpers.pilot import blocks, submit

    from hermes_tui.tui.app import HermesApp

    app = HermesApp(make_config(), cwd=str(tmp_path), home=hermes_home, session="s-bang")
    async with app.run_test(size=(120, 40)) as pilot:
        await submit(pilot, app, "!echo hi there")
        await wait_until(pilot, lambda: blocks(app) and blocks(app)[-1].status == "success")
        await wait_until(pilot, lambda: any("hi there" in text for kind, text in transcript_rows(app) if kind == "note"))
        await submit(pilot, app, "print(6 * 7)")
        await wait_until(pilot, lambda: len(blocks(app)) == 2 and blocks(app)[-1].status == "success")
        await pilot.pause()
        live = transcript_rows(app)
    assert ("message", "!echo hi there") not in live
    again = HermesApp(make_config(), cwd=str(tmp_path), home=hermes_home, session="s-bang")
    async with again.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: len(blocks(again)) == 2)
        await pilot.pause()
        assert transcript_rows(again) == live
