"""Generated cache/exec trees for tests and benchmarks: our records and Hermes-style files."""

from __future__ import annotations

import json
import os
import time
from datetime import datetime
from pathlib import Path

from hermes_tui.runtime.records import RECORD_FORMAT

STATUSES = ("success", "error", "timeout", "interrupted")


def make_tree(folder: Path, records: int, hermes_files: int, now: float | None = None) -> None:
    """Write ``records`` hermes-tui records (every 10th with a spill) and ``hermes_files``
    Hermes Agent-style ``stdout-<hash>.txt`` files, one minute apart, newest first."""
    folder.mkdir(parents=True, exist_ok=True)
    now = now or time.time()
    for i in range(records):
        when = now - 3600 - i * 60
        exec_id = f"{datetime.fromtimestamp(when):%Y%m%d-%H%M%S}-{i:08x}"
        spill = folder / f"{exec_id}.stdout.txt" if i % 10 == 0 else None
        if spill is not None:
            spill.write_text(f"full output of run {i}\n" * 200)
        record = {"format": RECORD_FORMAT, "id": exec_id, "status": STATUSES[i % 4], "session": f"s{i % 7}",
                  "kernel_id": f"k{i % 3}", "started_at": datetime.fromtimestamp(when).astimezone().isoformat(),
                  "finished_at": datetime.fromtimestamp(when + 1).astimezone().isoformat(),
                  "title": f"print('run {i}')", "stdout_bytes_total": 4000 if spill else 12,
                  "stdout_spill_path": str(spill) if spill else None, "stdout_truncated": bool(spill),
                  "code": f"print('run {i}')\n", "output": f"run {i}\n"}
        path = folder / f"{exec_id}.json"
        path.write_text(json.dumps(record, indent=1))
        os.utime(path, (when, when))
        if spill is not None:
            os.utime(spill, (when, when))
    for i in range(hermes_files):
        when = now - 7200 - i * 60
        path = folder / f"stdout-{i:012x}.txt"
        path.write_text(f"hermes agent output {i}\nmore\n")
        os.utime(path, (when, when))
