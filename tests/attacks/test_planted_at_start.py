"""A module a kernel plants on the host's ``sys.path`` before the host imported it is never
imported by the host (issue 38).

The host no longer imports every tool's dependencies before its first kernel starts: it closes
its imports first (runtime/import_guard.py) and imports them in a thread once the first result
is back. So a first script can run before ``whatthepatch`` or ``markdownify`` are imported:
it plants its own, earlier on ``sys.path`` than the real ones, with the sandbox off (as root a
script could also write site-packages). The host must refuse them, both as the CLI runs it
(imports closed for good) and as a library's host (checked while the thread imports).

Each host is a process of its own, so this test's process never imports what was planted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HOST = r'''
import asyncio, json, sys
sys.path.insert(0, sys.argv[1])  # a folder the script can write, first on the host's path
from hermes_tui.config import parse_config
from hermes_tui.runtime import Runtime, import_guard

if sys.argv[3] == "armed":
    import_guard.arm()

PLANT = """
import os
for name in ("whatthepatch", "markdownify"):
    with open(os.path.join(FOLDER, name + ".py"), "w") as handle:
        handle.write("open(MARKER, 'a').write('%s ran in pid %d\\\\n' % (__name__, __import__('os').getpid()))\\n"
                     "raise SystemExit('planted')\\n")
print("planted")
"""

PATCH = """
from hermes_tools import patch, write_file
write_file("notes.txt", "one\\\\n")
print(patch("notes.txt", old_string="one", new_string="two"))
"""


async def main():
    config = parse_config("code_execution:\n  sandbox: 'off'\napprovals:\n  mode: 'off'\n")
    async with Runtime(config) as rt:
        source = PLANT.replace("FOLDER", repr(sys.argv[1])).replace("MARKER", repr(sys.argv[2]))
        first = await rt.execute_code(source.replace("MARKER", repr(sys.argv[2])), session="s", cwd=sys.argv[4])
        second = await rt.execute_code(PATCH, session="s", cwd=sys.argv[4])
        loaded = {name: getattr(sys.modules.get(name), "__file__", None) for name in ("whatthepatch", "markdownify")}
        print(json.dumps({"first": first.output, "second": second.output, "error": second.error, "loaded": loaded}))

asyncio.run(main())
'''


@pytest.mark.parametrize("mode", ["armed", "library"])
def test_a_module_planted_before_the_host_imported_it_is_never_imported(tmp_path: Path, hermes_home: Path,
                                                                         mode: str) -> None:
    folder, marker, work = tmp_path / "on-path", tmp_path / "planted-code-ran", tmp_path / "work"
    folder.mkdir()
    work.mkdir()
    env = {**os.environ, "HERMES_HOME": str(hermes_home)}
    done = subprocess.run([sys.executable, "-c", HOST, str(folder), str(marker), mode, str(work)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["first"] == "planted\n"  # the plant landed on the host's path before any import
    assert (folder / "whatthepatch.py").exists()
    assert not marker.exists(), f"the planted code ran in the host: {marker.read_text()}"
    for name, file in seen["loaded"].items():  # the host holds no module from the planted folder
        assert file is None or not file.startswith(str(folder)), (name, file)
    # The tool that needs it still works, with the real module, imported before the plant was.
    assert "'replacements': 1" in seen["second"], (seen["second"], seen["error"])
