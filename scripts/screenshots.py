"""Regenerate screenshots/ from the real app: SVG always, PNG when Chromium is installed (and
then ``hermes-tui serve`` in the browser, desktop and phone-sized).

    python scripts/screenshots.py [--out screenshots]

PNGs come from ../shared/tools/svg2png (headless Chromium; Debian packages chromium,
fonts-firacode, fonts-symbola). Runs with a temporary HERMES_HOME, never your own.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SVG2PNG = ROOT.parent / "shared" / "tools" / "svg2png"
SIZE = (140, 40)

DEMO = """import json, statistics
samples = [12.5, 13.1, 12.9, 14.2, 13.3]
print("mean", statistics.mean(samples))
for i, s in enumerate(samples):
    print(f"sample {i}: {s:5.1f} ms")
"""
REPORT = """from pathlib import Path
Path("report.md").write_text("# Timings\\n\\nmean 13.2 ms over 5 samples\\n")
Path("samples.csv").write_text("i,ms\\n0,12.5\\n1,13.1\\n2,12.9\\n3,14.2\\n4,13.3\\n")
"""
FLAGGED = "from hermes_tools import terminal\nr = terminal('rm -rf ./build && git clean -fdx')\n"


async def shoot(out: Path) -> list[Path]:
    from hermes_tui.tui.app import HermesApp
    from hermes_tui.tui.screens.approval import ApprovalScreen
    from hermes_tui.tui.widgets.conversation import PromptInput, RunBlock

    shots: list[Path] = []
    project = Path(tempfile.mkdtemp(prefix="demo-project-"))
    app = HermesApp(cwd=str(project), session="demo")

    async def run(pilot, code: str, wait_done: bool = True) -> None:
        prompt = app.query_one(PromptInput)
        prompt.focus()
        prompt.insert(code)
        prompt.move_cursor(prompt.document.end)
        await pilot.press("enter")
        count = len(app.query(RunBlock))
        for _ in range(300):
            await pilot.pause(0.05)
            blocks = app.query(RunBlock)
            if not wait_done and isinstance(app.screen, ApprovalScreen):
                return
            if wait_done and blocks and blocks.last().status != "running" and len(blocks) >= count:
                return

    def save(name: str) -> None:
        app.query_one(PromptInput).cursor_blink = False
        path = out / f"{name}.svg"
        app.save_screenshot(filename=path.name, path=str(out))
        shots.append(path)

    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await run(pilot, "x = 41")
        await run(pilot, DEMO)
        await pilot.pause(1.1)
        save("main")
        await run(pilot, FLAGGED, wait_done=False)
        await pilot.pause(ApprovalScreen.ARMING + 0.3)  # armed: the dialog as it takes answers
        save("approval")
        await pilot.press("d")
        await pilot.pause(0.5)
        await pilot.press("ctrl+t")
        await pilot.pause(0.3)
        save("light-theme")
        await pilot.press("ctrl+t")
        await pilot.press("ctrl+t")
        await pilot.pause(0.3)
        await run(pilot, "for i in range(5000):\n    print(f'row {i:05d}: ' + 'data ' * 8)\n")
        await pilot.press("f9")
        await pilot.pause(1.0)
        save("output-browser")
        await pilot.press("enter")
        await pilot.pause(1.0)
        save("pager")
        await pilot.press("escape")
        await pilot.press("escape")
        await pilot.pause(0.3)
        await run(pilot, REPORT)
        prompt = app.query_one(PromptInput)
        prompt.insert("/checkpoints")
        await pilot.press("enter")
        await pilot.pause(1.0)
        save("checkpoints")
        await pilot.press("down", "down")  # the checkpoint before the script: its diff shows what it wrote
        await pilot.press("d")
        await pilot.pause(1.0)
        save("diff")
    shots.extend(await shoot_conversation(out))
    shots.append(await shoot_subagents(out))
    return shots


ANALYSIS = """from hermes_tools import search_files, read_file
hits = search_files('TODO', file_glob='*.py')
print(hits['total'], 'TODOs')
for m in hits.get('matches', [])[:3]:
    print(m['path'], m['line'], m['text'].strip())
"""
REPLY = """Found them. The **TODO** markers in the project:

| file | line | note |
|---|---|---|
| `app.py` | 3 | cache the config |
| `app.py` | 7 | retry on timeout |

Next step: I can open `app.py` and fix the retry, if you want."""


def demo_config(url: str, cache_read: bool = False) -> object:
    """The demo's model: the scripted server, a 32k window and prices, so the top bar has figures."""
    from hermes_tui.config import parse_config

    return parse_config(f"model:\n  provider: custom\n  default: hermes-4-70b\n  base_url: {url}\n"
                        "  context_window: 32768\n  pricing:\n    input_per_mtok: 0.13\n    output_per_mtok: 0.40\n"
                        + ("    cache_read_per_mtok: 0.05\n" if cache_read else ""))


async def ask(app: object, pilot: object, text: str, until: str, tries: int = 200) -> None:
    """Send ``text`` and wait until a reply holds ``until`` (and the screen settles)."""
    from hermes_tui.tui.widgets.conversation import PromptInput, ReplyBlock

    prompt = app.query_one(PromptInput)  # type: ignore[attr-defined]
    prompt.insert(text)
    await pilot.press("enter")  # type: ignore[attr-defined]
    for _ in range(tries):
        await pilot.pause(0.05)  # type: ignore[attr-defined]
        if any(until in b.text for b in app.query(ReplyBlock)):  # type: ignore[attr-defined]
            break
    await pilot.pause(1.2)  # type: ignore[attr-defined]
    prompt.cursor_blink = False


async def shoot_conversation(out: Path) -> list[Path]:
    """The conversation with a model (a scripted server on 127.0.0.1 answers, reporting its
    usage), then its /usage breakdown."""
    import sys

    sys.path.insert(0, str(ROOT / "tests"))
    from fake_models import FakeModelServer

    from hermes_tui.tui.app import HermesApp
    from hermes_tui.tui.widgets.conversation import PromptInput

    project = Path(tempfile.mkdtemp(prefix="demo-project-"))
    (project / "app.py").write_text("import os\n\n# TODO: cache the config\n\n\ndef run():\n    # TODO: retry on timeout\n")
    replies = [{"text": "I'll search the project for TODOs.",
                "tool_calls": [{"name": "execute_code", "arguments": {"code": ANALYSIS}}],
                "usage": {"prompt_tokens": 4210, "completion_tokens": 164}},
               {"text": REPLY, "chunk": 12,
                "usage": {"prompt_tokens": 4702, "completion_tokens": 121, "prompt_tokens_details": {"cached_tokens": 4096}}}]
    with FakeModelServer(replies) as server:
        app = HermesApp(demo_config(server.url, cache_read=True), cwd=str(project), session="20261129-101500-demo")
        async with app.run_test(size=SIZE) as pilot:
            await ask(app, pilot, "Find the TODOs in this project", "Next step")
            app.save_screenshot(filename="conversation.svg", path=str(out))
            app.query_one(PromptInput).insert("/usage")
            await pilot.press("enter")
            for _ in range(100):
                await pilot.pause(0.05)
                if app.screen.__class__.__name__ == "UsageScreen":
                    break
            await pilot.pause(0.3)
            app.save_screenshot(filename="usage.svg", path=str(out))
    return [out / "conversation.svg", out / "usage.svg"]


async def shoot_subagents(out: Path) -> Path:
    """A delegate block: three sub-agents read a file each and come back with a line."""
    import sys

    sys.path.insert(0, str(ROOT / "tests"))
    from fake_models import FakeModelServer

    from hermes_tui.tui.app import HermesApp

    project = Path(tempfile.mkdtemp(prefix="demo-project-"))
    parent = "working in the user's terminal"
    names = {"auth": "How are sessions signed?", "upload": "Where are uploads size-checked?",
             "billing": "Which module computes invoices?"}
    tasks = [{"name": name, "goal": goal} for name, goal in names.items()]
    answers = {"auth": "Sessions are signed with HMAC-SHA256 in auth/tokens.py (key from SECRET_KEY).",
               "upload": "uploads/views.py checks MAX_UPLOAD (20 MB) before saving.",
               "billing": "billing/invoice.py: Invoice.total() sums line items plus tax."}
    replies = [{"match": parent, "text": "I'll split this across three sub-agents.",
                "tool_calls": [{"name": "delegate_task", "arguments": {"tasks": tasks}}],
                "usage": {"prompt_tokens": 3900, "completion_tokens": 140}}]
    for name, goal in names.items():
        replies += [{"match": goal, "text": "", "hang": 0.3, "usage": {"prompt_tokens": 2100, "completion_tokens": 60},
                     "tool_calls": [{"name": "execute_code", "arguments": {"code": f"print('reading {name}')"}}]},
                    {"match": goal, "text": answers[name], "usage": {"prompt_tokens": 2600, "completion_tokens": 45}}]
    replies.append({"match": parent, "text": "Sessions: HMAC in `auth/tokens.py`; uploads capped at 20 MB in "
                                            "`uploads/views.py`; invoices in `billing/invoice.py`.",
                    "usage": {"prompt_tokens": 4600, "completion_tokens": 60}})
    with FakeModelServer(replies) as server:
        app = HermesApp(demo_config(server.url), cwd=str(project), session="20261130-090000-fan")
        async with app.run_test(size=SIZE) as pilot:
            await ask(app, pilot, "Where are sessions signed, uploads checked and invoices computed?", "invoices in",
                      tries=300)
            app.save_screenshot(filename="subagents.svg", path=str(out))
    return out / "subagents.svg"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "screenshots"))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="hermes-shots-") as home:
        os.environ["HERMES_HOME"] = home
        shots = asyncio.run(shoot(out))
    chromium = shutil.which("chromium")
    for svg in shots:
        if chromium and SVG2PNG.exists():
            subprocess.run([str(SVG2PNG), str(svg), str(svg.with_suffix(".png"))], check=True)
        print(svg, "(+ png)" if chromium else "(no chromium: svg only)")
    if chromium:
        shoot_served(out)


def shoot_served(out: Path) -> None:
    """``hermes-tui serve`` in chromium, desktop and phone-sized, each with its approval dialog
    open: taken by the browser tests themselves (tests/test_serve.py), which save them here."""
    import sys

    env = {**os.environ, "HERMES_SERVE_SCREENSHOTS": str(out.resolve())}
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
                    str(ROOT / "tests" / "test_serve.py"), "-k", "button or phone"], cwd=ROOT, env=env, check=True)
    for name in ("serve-desktop.png", "serve-phone.png"):
        print(out / name)


if __name__ == "__main__":
    main()
