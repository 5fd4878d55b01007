"""The runtime's records (ExecResult, KernelInfo, the approval request and answer) without
pydantic (issue 38): the methods their callers use behave as pydantic's did, what is read
back is checked, and the first result of a runtime does not wait for pydantic."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import pytest

from hermes_tui.runtime.approvals import ApprovalDecision, ApprovalRequest, FileChange
from hermes_tui.runtime.models import ExecResult, KernelInfo, KernelRef


def _result(**changes: object) -> ExecResult:
    fields: dict[str, object] = {
        "status": "success", "output": "1\n", "duration_seconds": 0.25, "exec_id": "e1",
        "kernel": KernelRef(id="k1", reused=False, execution_count=1, state_reset=False),
    }
    return ExecResult(**{**fields, **changes})  # type: ignore[arg-type]


def test_a_result_dumps_reads_back_and_copies_like_a_pydantic_model() -> None:
    result = _result(warning="w")
    dumped = result.model_dump(mode="json")
    assert dumped["kernel"] == {"id": "k1", "reused": False, "execution_count": 1, "state_reset": False}
    assert dumped["status"] == "success" and dumped["tool_calls_made"] == 0 and dumped["stdout_spill_path"] is None
    assert json.loads(result.model_dump_json()) == dumped
    assert ExecResult.model_validate(dumped) == result
    assert ExecResult.model_validate_json(result.model_dump_json()) == result
    assert ExecResult.model_validate(result) is result
    copy = result.model_copy(update={"exec_id": "e2"})
    assert (copy.exec_id, result.exec_id, copy.kernel) == ("e2", "e1", result.kernel)
    result.warning = "changed"  # callers add notes to a result after it is made
    assert result.model_dump()["warning"] == "changed"


def test_what_is_read_back_is_checked_and_the_error_names_the_field() -> None:
    dumped = _result().model_dump(mode="json")
    with pytest.raises(ValueError, match="status"):
        ExecResult.model_validate({**dumped, "status": "exploded"})
    with pytest.raises(ValueError, match="kernel"):
        ExecResult.model_validate({**dumped, "kernel": "k1"})
    with pytest.raises(ValueError, match="exec_id"):
        ExecResult.model_validate({k: v for k, v in dumped.items() if k != "exec_id"})
    # A stored result of an older version, with a field this one does not have, still reads.
    assert ExecResult.model_validate({**dumped, "retired_field": 1}).exec_id == "e1"


def test_an_approval_request_round_trips_through_the_store_shape() -> None:
    request = ApprovalRequest(kind="file", text="write_file a.txt", cwd="/w", session="s", deadline=5.0,
                              files=[FileChange(path="/w/a.txt", size=3, sha256="ab")])
    assert len(request.id) == 12 and request.choices == ["once", "session", "always", "deny"]
    assert request.created_at > 0 and request.reasons == []
    stored = json.loads(json.dumps(request.model_dump(mode="json")))
    back = ApprovalRequest.model_validate(stored)
    assert back == request and isinstance(back.files[0], FileChange)
    other = ApprovalRequest(kind="script", text="x", cwd="/", session="s", deadline=1.0)
    assert other.id != request.id and other.reasons is not request.reasons  # fresh defaults each time
    with pytest.raises(ValueError, match="choices"):
        ApprovalRequest.model_validate({**stored, "choices": ["once", "everything"]})


def test_an_answer_with_a_choice_that_does_not_exist_is_refused() -> None:
    assert ApprovalDecision(choice="once").model_copy(update={"reason": "r"}).reason == "r"
    with pytest.raises(ValueError, match="'sometimes' is not allowed: one of once, session, always, deny"):
        ApprovalDecision(choice="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ApprovalDecision.model_validate({"choice": "yes"})


def test_kernel_info_keeps_its_times_as_datetimes_and_writes_them_as_iso_text() -> None:
    now = datetime(2026, 12, 3, 15, 0, tzinfo=timezone.utc)
    info = KernelInfo(id="k", key="s|m", session="s", mode="m", interpreter="python3", cwd="/", pid=7,
                      state="idle", started_at=now, last_used=now, execution_count=2, idle_deadline=None)
    assert info.model_dump()["started_at"] == now and info.tools == [] and info.skill_env == []
    assert info.model_dump(mode="json")["started_at"].startswith("2026-12-03T15:00:00")
    assert KernelInfo.model_validate(info.model_dump(mode="json")).started_at == now


FIRST_RESULT = textwrap.dedent('''
    import asyncio, json, sys
    from hermes_tui.config import parse_config
    from hermes_tui.runtime import Runtime

    async def main():
        async with Runtime(parse_config("code_execution:\\n  sandbox: 'off'\\n")) as runtime:
            result = await runtime.execute_code("print(6 * 7)", session="s")
            seen = {"output": result.output, "json": result.model_dump_json(),
                    "pydantic": sorted(m for m in sys.modules if m == "pydantic" or m.startswith("pydantic."))}
        print(json.dumps(seen))

    asyncio.run(main())
''')


def test_the_first_result_does_not_wait_for_pydantic(tmp_path: Path) -> None:
    """pydantic (about 100 ms) comes with the tools' modules, after the first result: a
    runtime's records and its start never import it."""
    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run([sys.executable, "-c", FIRST_RESULT], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HERMES_HOME": str(home)}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["output"] == "42\n"
    assert json.loads(seen["json"])["status"] == "success"
    assert seen["pydantic"] == [], f"imported before the first result: {seen['pydantic'][:5]}"


FORGED_DONE = textwrap.dedent('''
    import json, os, stat
    line = (json.dumps({"op": "done", "id": 1, "status": "error", "error": {"not": "a string"}}) + "\\n").encode()
    for fd in range(3, 64):
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                os.write(fd, line)
        except OSError:
            pass
''')


async def test_a_script_that_forges_its_end_with_an_error_that_is_not_text_gets_text(tmp_path: Path) -> None:
    """The end of a run comes from the driver inside the script's own process: a script can
    write one itself. Whatever it puts in ``error``, the result's error is text (the app and
    the headless printer split it into lines; --json promises a string)."""
    from hermes_tui.config import parse_config
    from hermes_tui.runtime import Runtime

    async with Runtime(parse_config("code_execution:\n  sandbox: 'off'\n")) as runtime:
        result = await runtime.execute_code(FORGED_DONE, session="s", cwd=tmp_path)
    assert result.error is None or isinstance(result.error, str), result.error
    assert isinstance(json.loads(result.model_dump_json())["error"], (str, type(None)))


@pytest.mark.parametrize("size", ["boom", True, 2.5, -1, {"n": 1}])
async def test_a_far_end_that_answers_a_size_that_is_not_a_count_shows_no_size(tmp_path: Path, size: object) -> None:
    """A remote backend's answers come from a process a script there can change (a
    sitecustomize.py in the container): a size that is not a count is shown as unknown, and
    the approval request it goes into reads back from the store."""
    from hermes_tui.config import parse_config
    from hermes_tui.runtime.tools.base import ToolContext
    from hermes_tui.runtime.tools.files import WriteFileArgs
    from hermes_tui.runtime.tools.remote_files import preview

    class FarEnd:  # what the container's loader answered, changed by a script there
        async def file(self, op: str, path: str, cwd: str, **_: object) -> tuple[dict[str, object], bytes]:
            return {"size": size}, b"old\n"

    ctx = ToolContext(cwd="/work", env={}, config=parse_config(""), gate=None,  # type: ignore[arg-type]
                      session="s", cache_dir=tmp_path, remote=FarEnd())  # type: ignore[arg-type]
    changes, diff = await preview(ctx, "write_file", WriteFileArgs(path="a.txt", content="new\n"))
    assert [c.size for c in changes] == [None] and "+new" in diff
    request = ApprovalRequest(kind="file", text="write_file /work/a.txt", cwd="/work", session="s", deadline=1.0,
                              files=changes)
    assert ApprovalRequest.model_validate(json.loads(json.dumps(request.model_dump(mode="json")))) == request
