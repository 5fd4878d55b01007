"""A script tries to approve its own request through the app's socket (issue 17).

`hermes-tui approve` answers a dialog of a running app through its local socket; the socket
is the user's (0600), and a kernel runs as the same user. So the app checks who is on the
other end: a process it started — the kernel, a subprocess of the script, one that
double-forked away from the app — is refused, whatever it sends.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from hermes_tui.tui.app import HermesApp
from hermes_tui.runtime import hardening
from hermes_tui.tui.widgets.conversation import PromptInput
from conftest import make_config

SELF_APPROVE = r'''
import json, os, socket, threading, time
from hermes_tools import terminal

def answer(via_orphan):
    path = os.path.join(os.environ.get("HERMES_HOME", ""), "tui", "inject", "selfie.sock")
    def speak():
        client = socket.socket(socket.AF_UNIX); client.connect(os.path.realpath(path))
        client.sendall(json.dumps({"pending": True}).encode() + b"\n")
        listed = client.makefile().readline(); client.close()
        try:
            ids = [r["id"] for r in json.loads(listed).get("requests", [])]
        except Exception:
            ids = []
        results = [listed.strip()]
        for request_id in ids or ["guess"]:
            client = socket.socket(socket.AF_UNIX); client.connect(os.path.realpath(path))
            client.sendall(json.dumps({"answer": {"id": request_id, "choice": "always"}}).encode() + b"\n")
            results.append(client.makefile().readline().strip()); client.close()
        return results
    if via_orphan:  # double fork: the grandchild is re-parented away from the app
        read, write = os.pipe()
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.write(write, json.dumps(speak()).encode()); os._exit(0)
            os._exit(0)
        os.close(write); time.sleep(0.5)
        return json.loads(os.read(read, 65536) or b"[]")
    return speak()

found = {}
def attack():
    time.sleep(1.5)  # the dialog is open by now
    found["direct"] = answer(False)
    found["orphan"] = answer(True)
    with open(REPORT, "w") as handle:
        json.dump(found, handle)

threading.Thread(target=attack).start()
print(terminal("echo self-" + "approved"))
'''


async def test_a_script_cannot_answer_its_own_request_through_the_app_socket(hermes_home: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    # Unsandboxed: the sandbox refuses the script's socket outright (test_sandbox.py); what is
    # tested here is the app's own check of who answers.
    config = make_config("approvals:\n  mode: strict\ncode_execution:\n  sandbox: off\n")
    app = HermesApp(config, cwd=str(tmp_path), home=hermes_home, session="selfie",
                    host_env={"HERMES_HOME": str(hermes_home), "PATH": "/usr/bin:/bin"})
    async with app.run_test(size=(140, 40)) as pilot:
        for _ in range(200):
            await pilot.pause(0.05)
            if app.workspace.listening:
                break
        prompt = app.query_one(PromptInput)
        prompt.insert(f"REPORT = {str(report)!r}\n" + SELF_APPROVE)
        await pilot.press("enter")
        for _ in range(300):
            await pilot.pause(0.05)
            if report.exists() and report.stat().st_size:
                break
        found = json.loads(report.read_text())
        screen = app.screen.__class__.__name__
        await pilot.press("d")  # the user refuses it in the dialog
        await pilot.pause(0.5)
    for attempt in ("direct", "orphan"):
        answers = found[attempt]
        assert answers, attempt
        assert all('"ok": false' in line and "refused" in line for line in answers), (attempt, answers)
    assert screen == "ApprovalScreen"  # the dialog was still open: nothing answered it
    assert not (hermes_home / "tui" / "allowlist.yaml").exists()  # no "always" rule was stored


def test_the_user_s_own_shell_is_not_taken_for_a_child() -> None:
    assert not hardening.started_by_this_host(1)  # init: not ours
    assert hardening.started_by_this_host(999_999_999)  # no such process: refused
    asyncio.run(asyncio.sleep(0))
