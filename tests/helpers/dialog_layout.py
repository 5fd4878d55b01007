"""Where the approval dialog's buttons are on a screen of a given size, found by the app itself.

A browser shows the served app as pixels (xterm.js draws on a canvas); a test that presses a
button there needs the button's cell. This lays the same request out in the same app with
Textual's pilot, at the same size, and prints each button's centre cell as JSON::

    python tests/helpers/dialog_layout.py REQUEST.json COLUMNS ROWS   ->  {"once": [x, y], ...}

Run as its own process: the caller's Playwright owns its event loop.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: conftest, helpers


async def centres(request_json: str, columns: int, rows: int) -> dict[str, list[int]]:
    from textual.widgets import Button

    from hermes_tui.runtime.approvals import ApprovalRequest
    from hermes_tui.tui.screens.main import MainScreen
    from helpers.pilot import dialog_ready, make_app, wait_until

    request = ApprovalRequest.model_validate_json(request_json)
    with tempfile.TemporaryDirectory() as scratch:
        home, work = Path(scratch) / "home", Path(scratch) / "work"
        home.mkdir()
        work.mkdir()
        app = make_app(home, work)
        async with app.run_test(size=(columns, rows)) as pilot:
            answer = asyncio.get_running_loop().create_future()
            app.main.post_message(MainScreen.ApprovalNeeded(request, answer))
            await wait_until(pilot, lambda: dialog_ready(app))
            await pilot.pause()
            found = {}
            for button in app.screen.query(Button):
                region = button.region
                if button.id and region.area:
                    found[button.id] = [region.x + region.width // 2, region.y + region.height // 2]
            app.exit()
    return found


if __name__ == "__main__":
    import os

    os.environ.setdefault("HERMES_HOME", tempfile.mkdtemp())
    print(json.dumps(asyncio.run(centres(Path(sys.argv[1]).read_text(), int(sys.argv[2]), int(sys.argv[3])))))
