"""``terminal.backend: jupyter``: session kernels that are Jupyter kernels, a local ipykernel
(in the sandbox) and a real Jupyter Kernel Gateway on 127.0.0.1 with a token (started by the
``jupyter_gateway`` fixture) — the engine's contract over both, then the gateway's faults."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
from pathlib import Path

import pytest

from conftest import Approver
from hermes_tui.config import parse_config
from hermes_tui.runtime.backends.jupyter import JupyterBackend
from hermes_tui.runtime.runtime import Runtime

pytestmark = pytest.mark.timeout(180)


def _yaml(kind: str, gateway=None, **extra: object) -> str:
    lines = ["terminal:", "  backend: jupyter"]
    if kind == "gateway":
        lines += [f"  jupyter_gateway_url: {gateway.url}", f"  jupyter_auth_token: {gateway.token}"]
    lines += [f"  {key}: {json.dumps(value)}" for key, value in extra.items() if not key.startswith("ce_")]
    ce = {key[3:]: value for key, value in extra.items() if key.startswith("ce_")}
    if ce:
        lines += ["code_execution:", *(f"  {key}: {json.dumps(value)}" for key, value in ce.items())]
    return "\n".join(lines) + "\n"


@pytest.fixture(params=["local", "gateway"])
def jupyter(request):
    """(kind, yaml maker): ``yaml(**extra)`` gives the config of that kind of Jupyter kernel."""
    gateway = request.getfixturevalue("jupyter_gateway") if request.param == "gateway" else None
    return request.param, (lambda **extra: _yaml(request.param, gateway, **extra)), gateway


def _runtime(yaml_text: str, home: Path, **kwargs) -> Runtime:
    return Runtime(parse_config(yaml_text), home=home, **kwargs)


async def test_state_persists_where_it_runs_and_rich_output_is_text(jupyter, hermes_home, tmp_path) -> None:
    kind, yaml, gateway = jupyter
    async with _runtime(yaml(cwd=str(tmp_path)), hermes_home) as rt:
        first = await rt.execute_code("import os\nx = 41\nprint(os.getcwd())", session="s", cwd=tmp_path)
        assert first.status == "success", first.error
        assert first.output.strip() == str(tmp_path)
        second = await rt.execute_code("x += 1\nprint(x)\nfrom IPython.display import display, HTML\n"
                                       "display(HTML('<b>hi</b>'))", session="s", cwd=tmp_path)
        assert second.kernel.reused
        assert second.output.splitlines()[0] == "42"
        assert "<IPython.core.display.HTML object>" in second.output and "text/html not shown" in second.output
        (info,) = rt.kernels()
        memory = await rt.kernel_memory()
        assert 10 << 20 < memory[info.id] < 1 << 30, memory
        if kind == "local":
            assert info.where == "jupyter:local" and info.sandbox.startswith("workspace-write")
        else:
            (there,) = gateway.kernels()
            assert info.where == f"jupyter:127.0.0.1:{gateway.port} {there['id'][:8]}"
    if kind == "gateway":  # ended with the runtime: shut down on the gateway, crossed out here
        assert gateway.kernels() == []
        assert not list((hermes_home / "jupyter" / "kernels").glob("*.json"))


async def test_traceback_is_pythons_own_and_exit_ends_the_kernel(jupyter, hermes_home, tmp_path) -> None:
    _, yaml, _ = jupyter
    async with _runtime(yaml(cwd=str(tmp_path)), hermes_home) as rt:
        result = await rt.execute_code("def f():\n    raise ValueError('boom')\nf()", session="s", cwd=tmp_path)
        assert result.status == "error" and result.error == "ValueError: boom"
        assert 'File "<cell 1>", line 3, in <module>' in result.output
        assert "\x1b[" not in result.output and "__hermes" not in result.output and "ipykernel" not in result.output
        names = {item["name"] for item in await rt.inspect_kernel(rt.kernels()[0].id)}
        assert "f" in names and "In" not in names and "get_ipython" not in names
        ended = await rt.execute_code("import sys\nsys.exit(3)", session="s", cwd=tmp_path)
        assert ended.exit_code == 3
        fresh = await rt.execute_code("print('f' in dir())", session="s", cwd=tmp_path)
        assert fresh.output == "False\n"


async def test_big_output_is_capped_head_and_tail_and_spilled_whole(jupyter, hermes_home, tmp_path) -> None:
    _, yaml, _ = jupyter
    async with _runtime(yaml(cwd=str(tmp_path)), hermes_home) as rt:
        result = await rt.execute_code("for i in range(200000):\n    print('line', i)", session="s", cwd=tmp_path)
        assert result.status == "success"
        assert result.stdout_truncated and "line 0\n" in result.output and "line 199999\n" in result.output
        spilled = Path(result.stdout_spill_path).read_text()
        assert spilled.count("\n") == 200000 and spilled.startswith("line 0\n")
        lines = [line for line in spilled.splitlines()]
        assert lines == [f"line {i}" for i in range(200000)]  # in order, none twice, none lost


async def test_interrupt_keeps_state_and_timeout_restarts(jupyter, hermes_home, tmp_path) -> None:
    _, yaml, _ = jupyter
    async with _runtime(yaml(cwd=str(tmp_path)), hermes_home) as rt:
        await rt.execute_code("kept = 'yes'", session="s", cwd=tmp_path)
        running = asyncio.ensure_future(rt.execute_code("import time\nfor _ in range(600): time.sleep(0.1)",
                                                        session="s", cwd=tmp_path))
        await asyncio.sleep(1.5)
        assert await rt.interrupt("s") == 1
        interrupted = await asyncio.wait_for(running, 30)
        assert interrupted.status == "interrupted", (interrupted.status, interrupted.error)
        after = await rt.execute_code("print(kept)", session="s", cwd=tmp_path)
        assert after.output == "yes\n" and after.kernel.reused
        timed = await rt.execute_code("import time\ntime.sleep(30)", session="s", cwd=tmp_path, timeout=2)
        assert timed.status == "timeout"
        fresh = await rt.execute_code("print('kept' in dir())", session="s", cwd=tmp_path)
        assert fresh.output == "False\n"


async def test_tools_and_approvals_reach_the_kernels_machine(jupyter, hermes_home, tmp_path) -> None:
    _, yaml, _ = jupyter
    approver = Approver("deny")
    async with _runtime(yaml(cwd=str(tmp_path)), hermes_home, approver=approver) as rt:
        code = ("from hermes_tools import write_file, read_file, terminal, patch, search_files\n"
                "print(write_file('notes.txt', 'alpha\\nbeta\\n'))\n"
                "print(patch('notes.txt', 'beta', 'gamma')['diff'].count('+gamma'))\n"
                "print(read_file('notes.txt')['content'])\n"
                "print(search_files('gam', path='.')['matches'][0]['path'])\n"
                "print(terminal('cat notes.txt | wc -l'))\n"
                "print(terminal('rm -rf ~/important'))")
        result = await rt.execute_code(code, session="s", cwd=tmp_path)
        assert result.status == "success", result.error
        assert (tmp_path / "notes.txt").read_text() == "alpha\ngamma\n"
        out = result.output
        assert "'bytes_written': 11" in out and "\n1\n" in out and "2|gamma" in out
        assert "'output': '2\\n', 'exit_code': 0" in out
        assert "'status': 'blocked'" in out  # asked, denied
        assert [request.text for request in approver.asked] == ["rm -rf ~/important"]
        assert result.tool_calls_made == 6


async def test_a_secret_of_the_host_never_reaches_the_kernel(jupyter, hermes_home, tmp_path, monkeypatch) -> None:
    _, yaml, _ = jupyter
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-host-secret-1234")
    async with _runtime(yaml(cwd=str(tmp_path)), hermes_home) as rt:
        result = await rt.execute_code("import os\nprint(os.environ.get('OPENAI_API_KEY'))\n"
                                       "print(any('sk-test-host' in v for v in os.environ.values()))",
                                       session="s", cwd=tmp_path)
        assert result.output == "None\nFalse\n"
        tool = await rt.execute_code("from hermes_tools import terminal\n"
                                     "print(terminal('echo ${OPENAI_API_KEY:-unset}')['output'])",
                                     session="s", cwd=tmp_path)
        assert tool.output == "unset\n\n"


async def test_a_call_with_another_token_is_refused(jupyter, hermes_home, tmp_path) -> None:
    _, yaml, _ = jupyter
    async with _runtime(yaml(cwd=str(tmp_path)), hermes_home) as rt:
        code = ("import json\nline = json.dumps({'id': 1, 'token': 'forged', 'tool': 'read_file', "
                "'args': {'path': 'x'}})\nprint(__import__('__hermes_jupyter__').call(line))")
        result = await rt.execute_code(code, session="s", cwd=tmp_path)
        assert "token" in result.output.lower() and "content" not in result.output


async def test_top_level_calls_run_in_a_kernel_of_the_session(jupyter_gateway, hermes_home, tmp_path) -> None:
    async with _runtime(_yaml("gateway", jupyter_gateway, cwd=str(tmp_path)), hermes_home) as rt:
        written = await rt.call_tool("write_file", {"path": "top.txt", "content": "top\n"}, session="s", cwd=tmp_path)
        assert written.get("bytes_written") == 4, written
        shell = await rt.terminal("cat top.txt", session="s", cwd=tmp_path)
        assert shell["output"] == "top\n"
        (info,) = rt.kernels()
        assert info.where.startswith("jupyter:127.0.0.1")


async def test_local_kernel_reaches_no_network_outside_its_sandbox(hermes_home, tmp_path) -> None:
    """Its ZeroMQ is TCP on a loopback of its own: a port listening on this machine's loopback
    is not reachable from it (the sandbox's network namespace)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    accepted: list[object] = []
    threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True).start()
    try:
        async with _runtime(_yaml("local", cwd=str(tmp_path)), hermes_home) as rt:
            result = await rt.execute_code(
                f"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), 3)\n    print('reached')\n"
                "except OSError as exc:\n    print('refused', type(exc).__name__)", session="s", cwd=tmp_path)
            assert result.output.startswith("refused"), result.output
            assert rt.kernels()[0].where == "jupyter:local"
    finally:
        server.close()
    assert accepted == []


# -- the gateway's faults -----------------------------------------------------------------------

async def test_wrong_token_and_a_gateway_that_is_down_fail_in_one_line(jupyter_gateway, hermes_home, tmp_path):
    bad = _yaml("gateway", jupyter_gateway, cwd=str(tmp_path)).replace(jupyter_gateway.token, "wrong-token")
    async with _runtime(bad, hermes_home) as rt:
        result = await rt.execute_code("print(1)", session="s", cwd=tmp_path)
        assert result.status == "error" and "\n" not in result.error
        assert "refused the token (HTTP 403)" in result.error or "refused the token (HTTP 401)" in result.error
        assert "wrong-token" not in result.error
    from helpers.backends import _free_port

    down = f"terminal:\n  backend: jupyter\n  jupyter_gateway_url: http://127.0.0.1:{_free_port()}\n"
    async with _runtime(down, hermes_home) as rt:
        result = await rt.execute_code("print(1)", session="s", cwd=tmp_path)
        assert result.status == "error" and "\n" not in result.error
        assert "cannot reach the gateway at 127.0.0.1" in result.error and "jupyter_gateway_url" in result.error


async def test_token_from_env_and_from_a_command(jupyter_gateway, hermes_home, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("KG_TOKEN_FOR_TEST", jupyter_gateway.token)
    for extra in ({"jupyter_auth_token": "${KG_TOKEN_FOR_TEST}"}, {"jupyter_auth_token_env": "KG_TOKEN_FOR_TEST"},
                  {"jupyter_auth_token_cmd": ["printenv", "KG_TOKEN_FOR_TEST"]}):
        yaml = f"terminal:\n  backend: jupyter\n  jupyter_gateway_url: {jupyter_gateway.url}\n" + "".join(
            f"  {key}: {json.dumps(value)}\n" for key, value in extra.items())
        async with _runtime(yaml, hermes_home) as rt:
            result = await rt.execute_code("print(6 * 7)", session="s", cwd=tmp_path)
            assert result.output == "42\n", (extra, result.error)


async def test_a_cut_websocket_is_reconnected_and_output_is_whole(jupyter_gateway, hermes_home, tmp_path) -> None:
    proxy = await _Proxy.start(jupyter_gateway.port)
    yaml = _yaml("gateway", jupyter_gateway, cwd=str(tmp_path)).replace(jupyter_gateway.url, proxy.url)
    try:
        async with _runtime(yaml, hermes_home) as rt:
            running = asyncio.ensure_future(rt.execute_code(
                "import time\nfor i in range(40):\n    print('tick', i, flush=True)\n    time.sleep(0.1)",
                session="s", cwd=tmp_path))
            for _ in range(600):  # the script runs (a loaded machine may take seconds to start its kernel)
                await asyncio.sleep(0.05)
                if any(k.state == "busy" for k in rt.kernels()):
                    break
            await asyncio.sleep(0.5)
            proxy.cut()  # every connection through it, mid-output
            result = await asyncio.wait_for(running, 60)
            assert result.status == "success", result.error
            ticks = [line for line in result.output.splitlines() if line.startswith("tick")]
            numbers = [int(line.split()[1]) for line in ticks]
            assert numbers == sorted(set(numbers)) and numbers[0] == 0 and numbers[-1] == 39  # in order, none twice
            assert len(numbers) >= 36  # at most what was on the wire at the cut is gone...
            assert "connection to the Jupyter gateway dropped and was restored" in result.output  # ...and said
            again = await rt.execute_code("print('after')", session="s", cwd=tmp_path)
            assert again.output == "after\n" and again.kernel.reused
    finally:
        proxy.close()


async def test_gateway_killed_mid_cell_then_restarted(hermes_home, tmp_path, monkeypatch) -> None:
    from helpers.backends import JupyterGateway

    monkeypatch.setenv("HERMES_JUPYTER_RECONNECT", "3")
    with JupyterGateway() as gateway:
        async with _runtime(_yaml("gateway", gateway, cwd=str(tmp_path)), hermes_home) as rt:
            await rt.execute_code("x = 1", session="s", cwd=tmp_path)
            running = asyncio.ensure_future(rt.execute_code("import time\ntime.sleep(20)", session="s", cwd=tmp_path))
            await asyncio.sleep(1.0)
            gateway.stop()
            failed = await asyncio.wait_for(running, 60)
            assert failed.status == "error"
            assert "jupyter" in failed.output + (failed.error or "")
            down = await rt.execute_code("print(1)", session="s", cwd=tmp_path)
            assert down.status == "error" and "cannot reach the gateway" in down.error
            gateway.start()
            back = await rt.execute_code("print('back', 'x' in dir())", session="s", cwd=tmp_path)
            assert back.output == "back False\n", back.error


async def test_kernels_left_by_a_crash_are_found_and_cleaned(jupyter_gateway, hermes_home) -> None:
    config = parse_config(_yaml("gateway", jupyter_gateway))
    crashed = JupyterBackend(config, hermes_home)
    place = await crashed.acquire("old-session", "/tmp")
    for fd in crashed._held.values():  # as a SIGKILLed app: its locks are gone, its records stay
        os.close(fd)
    crashed._held.clear()
    fresh = JupyterBackend(config, hermes_home)
    left = await fresh.leftovers()
    assert [item["kernel_id"] for item in left] == [place.name] and left[0]["session"] == "old-session"
    assert await fresh.clean([place.name]) == [place.name]
    assert place.name not in {kernel["id"] for kernel in jupyter_gateway.kernels()}
    assert await fresh.leftovers() == []


class _Proxy:
    """A TCP proxy to the gateway whose connections can all be cut at once."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.writers: list[asyncio.StreamWriter] = []
        self.server: asyncio.AbstractServer | None = None

    @classmethod
    async def start(cls, target: int) -> _Proxy:
        proxy = cls(target)
        proxy.server = await asyncio.start_server(proxy._serve, "127.0.0.1", 0)
        return proxy

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        self.writers += [writer, up_writer]

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                sink.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    def cut(self) -> None:
        for writer in self.writers:
            transport = writer.transport
            transport.abort()
        self.writers.clear()

    def close(self) -> None:
        self.cut()
        if self.server is not None:
            self.server.close()


def test_where_and_describe_never_show_the_token(jupyter_gateway, hermes_home) -> None:
    backend = JupyterBackend(parse_config(_yaml("gateway", jupyter_gateway)), hermes_home)
    assert jupyter_gateway.token not in backend.describe() + backend.where(None) + backend.sandbox_label
    assert jupyter_gateway.token not in repr(backend.config.terminal)


# -- doctor, the cleanup command, the note at start -----------------------------------------------

async def test_doctor_checks_the_gateway_and_names_what_is_wrong(jupyter_gateway, hermes_home) -> None:
    from hermes_tui.cli.doctor.checks import check_backend

    good = await check_backend(parse_config(_yaml("gateway", jupyter_gateway)), hermes_home)
    assert good is not None and good.status == "ok"
    assert "token accepted" in good.detail and "kernelspec 'python3' present" in good.detail
    assert "round trip in" in good.detail and jupyter_gateway.token not in good.detail
    missing = await check_backend(parse_config(_yaml("gateway", jupyter_gateway, jupyter_kernel_name="julia-1.9")),
                                  hermes_home)
    assert missing.status == "fail" and "no kernelspec 'julia-1.9'" in missing.detail and "python3" in missing.detail
    wrong = _yaml("gateway", jupyter_gateway).replace(jupyter_gateway.token, "nope")
    refused = await check_backend(parse_config(wrong), hermes_home)
    assert refused.status == "fail" and "refused the token" in refused.detail and "nope" not in refused.detail
    local = await check_backend(parse_config(_yaml("local")), hermes_home)
    assert local.status == "ok" and "kernelspec 'python3'" in local.detail


def test_cleanup_command_lists_and_shuts_down_what_a_crash_left(jupyter_gateway, hermes_home, capsys,
                                                                  monkeypatch) -> None:
    from hermes_tui.cli import main

    (hermes_home / "config.yaml").write_text(_yaml("gateway", jupyter_gateway))
    config = parse_config(_yaml("gateway", jupyter_gateway))

    async def crash() -> str:
        backend = JupyterBackend(config, hermes_home)
        place = await backend.acquire("lost-session", "/tmp")
        for fd in backend._held.values():
            os.close(fd)
        return place.name

    kernel_id = asyncio.run(crash())
    assert main(["jupyter-cleanup", "--list"]) == 0
    listed = capsys.readouterr().out
    assert kernel_id in listed and "session lost-session" in listed
    note = asyncio.run(_note(config, hermes_home))
    assert note is not None and "1 Jupyter kernel left on 127.0.0.1" in note and "jupyter-cleanup" in note
    assert main(["jupyter-cleanup", "--yes"]) == 0
    assert "shut down 1 of 1 kernel(s)" in capsys.readouterr().out
    assert kernel_id not in {kernel["id"] for kernel in jupyter_gateway.kernels()}
    assert main(["jupyter-cleanup"]) == 0
    assert "no kernels left" in capsys.readouterr().out


async def _note(config, home: Path) -> str | None:
    async with Runtime(config, home=home) as rt:
        return await rt.leftovers_note()


async def test_without_bubblewrap_a_local_kernel_says_what_it_needs(hermes_home, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HERMES_TUI_SANDBOX_TIER", "landlock")
    async with _runtime(_yaml("local", cwd=str(tmp_path)), hermes_home) as rt:
        if rt.sandbox.tier != "landlock":
            pytest.skip(f"Landlock is not usable here ({rt.sandbox.error})")
        result = await rt.execute_code("print(1)", session="s", cwd=tmp_path)
        assert result.status == "error" and result.kernel.id is None
        assert "TCP on loopback" in result.error and "code_execution.network: true" in result.error


async def test_an_answer_that_comes_after_its_script_was_interrupted_goes_nowhere(jupyter, hermes_home,
                                                                                   tmp_path) -> None:
    _, yaml, _ = jupyter
    (tmp_path / "mine.txt").write_text("mine\n")
    async with _runtime(yaml(cwd=str(tmp_path)) + "approvals:\n  mode: off\n", hermes_home) as rt:
        running = asyncio.ensure_future(rt.execute_code(
            "from hermes_tools import terminal\nprint(terminal('sleep 2; echo late'))", session="s", cwd=tmp_path))
        await asyncio.sleep(1.0)
        assert await rt.interrupt("s") == 1
        assert (await asyncio.wait_for(running, 30)).status == "interrupted"
        await asyncio.sleep(2.0)  # the command's answer comes back meanwhile
        after = await rt.execute_code("from hermes_tools import read_file, terminal\n"
                                      "print(read_file('mine.txt')['content'])\nprint(terminal('echo now')['output'])",
                                      session="s", cwd=tmp_path)
        assert after.output == "     1|mine\n\nnow\n\n", after.output


async def test_a_reply_that_comes_while_the_relay_sends_is_read(tmp_path) -> None:
    """jupyter_client sends on a blocking shadow of a channel's asyncio socket: the send takes
    the socket's wake-up for a reply that came meanwhile. The relay still reads that reply and
    the ones after it (once in CI they stayed unread: after 30 s the exec was taken as lost,
    "the kernel did not run it")."""
    import contextlib
    import select
    import sys
    import time

    import zmq

    from hermes_tui.runtime.backends.jupyter_relay import ZmqTransport

    transport = ZmqTransport({"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                              "log": str(tmp_path / "kernel.log"), "cwd": str(tmp_path)}, str(tmp_path))
    await transport.open()

    async def replies(wanted: set[str]) -> None:
        while wanted:
            channel, message = await transport.receive()
            if channel == "shell":
                wanted.discard((message.get("parent_header") or {}).get("msg_id"))

    async def quiet() -> None:  # what wait_for_ready left (its kernel_info replies), read
        with contextlib.suppress(asyncio.TimeoutError):
            while True:
                await asyncio.wait_for(transport.receive(), 0.5)

    try:
        session, shell = transport.session(), transport.client.shell_channel.socket
        for _ in range(3):
            await quiet()
            first, second = session.msg("kernel_info_request", {}), session.msg("kernel_info_request", {})
            await transport.send("shell", first)  # nothing awaited inside: the loop does not run meanwhile
            # The loop is held (as a busy relay's is) until the reply's wake-up is on the socket's fd,
            # which the next send takes.
            select.select([shell.get(zmq.FD)], [], [], 10)
            time.sleep(0.2)
            await transport.send("shell", second)
            await asyncio.wait_for(replies({first["header"]["msg_id"], second["header"]["msg_id"]}), 10)
    finally:
        await transport.close()
