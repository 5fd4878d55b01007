"""The tool channel: authentication, forged requests, the budget, threads, both transports."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_tui.runtime import Runtime

FORGER = r"""
import json, os, socket, sys
path = sys.argv[1]
def connect():  # as the stub does: a new connection asked for on the inherited connector
    connector = socket.socket(fileno=os.dup(int(os.environ["HERMES_RPC_FD"])))
    connector.sendall(b"c")
    _, ancillary, _, _ = connector.recvmsg(16, socket.CMSG_LEN(4))
    connector.close()
    return socket.socket(fileno=int.from_bytes(ancillary[0][2][:4], sys.byteorder))
def ask(raw):
    s = connect()
    s.sendall(raw)
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    return json.loads(data) if data else None
token = sys.argv[2]
out = {
    "no_token": ask(b'{"id": 1, "tool": "read_file", "args": {"path": "/etc/hostname"}}\n'),
    "wrong_token": ask(json.dumps({"id": 2, "token": "x" * 43, "tool": "read_file", "args": {"path": "/etc/hostname"}}).encode() + b"\n"),
    "execute_code": ask(json.dumps({"id": 3, "token": token, "tool": "execute_code", "args": {"code": "1"}}).encode() + b"\n"),
    "delegate": ask(json.dumps({"id": 4, "token": token, "tool": "delegate_task", "args": {}}).encode() + b"\n"),
    "mcp": ask(json.dumps({"id": 5, "token": token, "tool": "mcp_github_create_issue", "args": {}}).encode() + b"\n"),
    "garbage": ask(b"\x00\xffnot json at all\n"),
    "list": ask(b"[1, 2, 3]\n"),
    "bad_args": ask(json.dumps({"id": 6, "token": token, "tool": "read_file", "args": "nope"}).encode() + b"\n"),
}
print(json.dumps(out))
"""


async def test_forged_requests_get_errors_and_the_host_keeps_running(runtime: Runtime, tmp_path: Path) -> None:
    # A script's own subprocess forges requests (only the kernel's processes may connect at
    # all): the script knows its socket and token (it can always read its own module).
    forger = tmp_path / "forger.py"
    forger.write_text(FORGER)
    info = await runtime.execute_code(
        "import os, subprocess, sys, hermes_tools\npath = os.environ['HERMES_RPC_SOCKET']\n"
        f"done = subprocess.run([sys.executable, {str(forger)!r}, path, hermes_tools._token()], capture_output=True, "
        "text=True, timeout=60, pass_fds=[int(os.environ['HERMES_RPC_FD'])])\nprint(done.returncode, path, done.stdout.strip(), done.stderr.strip()[-500:], sep='\\n')",
        session="s", timeout=90,
    )
    code, path, stdout, stderr = (info.output.split("\n", 3) + ["", "", "", ""])[:4]
    assert code == "0", (info.output, info.error)
    assert Path(path).stat().st_mode & 0o777 == 0o600
    assert Path(path).parent.stat().st_mode & 0o777 == 0o700
    replies = json.loads(stdout)
    assert "unauthorized" in replies["no_token"]["result"]["error"]
    assert "unauthorized" in replies["wrong_token"]["result"]["error"]
    for name in ("execute_code", "delegate", "mcp"):
        error = replies[name]["result"]["error"]
        assert "not available inside execute_code" in error and "scripts may call only" in error
    assert "not a JSON object" in replies["garbage"]["result"]["error"]
    assert "not a JSON object" in replies["list"]["result"]["error"]
    assert "args must be a JSON object" in replies["bad_args"]["result"]["error"]
    # Nothing above counted against a script or broke the host.
    after = await runtime.execute_code(
        "from hermes_tools import read_file\nopen('empty.txt', 'w').close()\nprint(read_file('empty.txt')['total_lines'])",
        session="s", cwd=tmp_path,
    )
    assert after.output == "0\n" and after.tool_calls_made == 1


async def test_between_scripts_tools_refuse(runtime: Runtime) -> None:
    await runtime.execute_code(
        "import threading, time\nfrom hermes_tools import read_file\nbox = []\n"
        "def later():\n    time.sleep(0.5)\n    box.append(read_file('/etc/hostname'))\n"
        "threading.Thread(target=later).start()",
        session="s",
    )
    await asyncio.sleep(1.0)
    result = await runtime.execute_code("print(box[0])", session="s")
    assert "no script is running" in result.output


async def test_budget_stops_calls_but_not_the_script(runtime_factory, tmp_path: Path) -> None:
    rt = await runtime_factory("code_execution:\n  max_tool_calls: 3\n")
    (tmp_path / "f.txt").write_text("x\n")
    result = await rt.execute_code(
        "from hermes_tools import read_file, terminal\n"
        "r = [read_file('f.txt') for _ in range(5)]\n"
        "print(sum('error' not in x for x in r))\nprint(r[3]['error'])\nprint(r[4]['error'])\n"
        "print(terminal('x', background=True)['error'][:30])\nprint('script went on')",
        session="s", cwd=tmp_path,
    )
    lines = result.output.splitlines()
    assert lines[0] == "3"
    assert lines[1] == lines[2] == "Tool call limit reached (3). No more tool calls allowed in this execution."
    assert lines[4] == "script went on"
    assert result.status == "success" and result.tool_calls_made == 3
    assert "tool call limit (3" in result.warning
    fresh = await rt.execute_code("from hermes_tools import read_file\nprint('error' in read_file('f.txt'))",
                                  session="s", cwd=tmp_path)
    assert fresh.output == "False\n" and fresh.tool_calls_made == 1 and fresh.warning is None


async def test_threads_call_concurrently_over_one_connection(runtime_factory, tmp_path: Path) -> None:
    rt = await runtime_factory()
    for i in range(20):
        (tmp_path / f"f{i}.txt").write_text(f"file {i}\n")
    result = await rt.execute_code(
        "from concurrent.futures import ThreadPoolExecutor\nfrom hermes_tools import read_file\n"
        "with ThreadPoolExecutor(8) as pool:\n"
        "    out = list(pool.map(lambda i: read_file(f'f{i}.txt')['content'], range(20)))\n"
        "print(all(o.endswith(f'|file {i}\\n') for i, o in enumerate(out)))",
        session="s", cwd=tmp_path,
    )
    assert result.output == "True\n" and result.tool_calls_made == 20


async def test_only_enabled_tools_are_generated(runtime: Runtime) -> None:
    result = await runtime.execute_code(
        "import hermes_tools\nprint(sorted(n for n in hermes_tools.__all__))\n"
        "print(hasattr(hermes_tools, 'terminal'))",
        session="s", tools=["read_file", "search_files"],
    )
    assert result.output == "['json_parse', 'read_file', 'retry', 'search_files', 'shell_quote']\nFalse\n"
    info = next(k for k in runtime.kernels() if k.session == "s")
    assert info.tools == ["read_file", "search_files"]
    everything = await runtime.execute_code("import hermes_tools\nprint(hasattr(hermes_tools, 'terminal'))", session="s")
    assert everything.output == "True\n" and everything.kernel.id != result.kernel.id  # the tool set is in the key
    with pytest.raises(ValueError, match="unknown tool"):
        await runtime.execute_code("1", tools=["execute_code"])


async def test_helpers(runtime: Runtime) -> None:
    result = await runtime.execute_code(
        "from hermes_tools import json_parse, shell_quote, retry\n"
        "print(json_parse('```json\\n{\"a\": 1}\\n```'))\n"
        "print(shell_quote(\"it's here\"))\n"
        "n = []\n"
        "def flaky():\n    n.append(1)\n    return {'error': 'no'} if len(n) < 2 else {'ok': len(n)}\n"
        "print(retry(flaky, delay=0.01))",
        session="s",
    )
    assert result.output == "{'a': 1}\n'it'\"'\"'s here'\n{'ok': 2}\n"


async def test_file_transport_end_to_end(runtime_factory, tmp_path: Path) -> None:
    rt = await runtime_factory("code_execution:\n  rpc_transport: file\n")
    (tmp_path / "f.txt").write_text("via files\n")
    result = await rt.execute_code(
        "import os\nfrom hermes_tools import read_file, write_file\n"
        "print('HERMES_RPC_SOCKET' in os.environ, os.path.isdir(os.environ['HERMES_RPC_DIR']))\n"
        "print(read_file('f.txt')['content'], end='')\nprint(write_file('g.txt', 'ok')['bytes_written'])\n"
        "print(read_file('missing')['error'])",
        session="s", cwd=tmp_path,
    )
    assert result.output.splitlines() == [
        "False True", "     1|via files", "2", f"File not found: {tmp_path / 'missing'}"]
    assert result.tool_calls_made == 3 and (tmp_path / "g.txt").read_text() == "ok"


@pytest.mark.parametrize("transport", ["socket", "file"])
async def test_each_counted_tool_call_is_an_event(runtime_factory, tmp_path, transport: str) -> None:
    from hermes_tui.runtime import ToolCallMade

    rt = await runtime_factory(f"code_execution:\n  rpc_transport: {transport}\n  max_tool_calls: 3\n")
    (tmp_path / "f.txt").write_text("x\n")
    subscription = rt.subscribe()
    try:
        result = await rt.execute_code(
            "from hermes_tools import read_file\nfor _ in range(4):\n    read_file('f.txt')", session="s", cwd=tmp_path)
        made = []
        while (event := subscription.get_nowait()) is not None:
            if isinstance(event, ToolCallMade):
                made.append(event)
    finally:
        subscription.close()
    # The fourth call was refused at the limit: it is not counted, so it is no event.
    assert [(e.exec_id, e.session, e.tool, e.calls) for e in made] == [
        (result.exec_id, "s", "read_file", n) for n in (1, 2, 3)]
    assert result.tool_calls_made == 3
