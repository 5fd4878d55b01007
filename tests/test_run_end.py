"""A run's end is shown in its block and the output pane together (issue 20).

The runtime says a run ended as soon as its kernel is done; the agent says so once the result is
stored. The output pane used to draw the result at the first, so a frame of the pane came
between the run's end and its block's result, and the block's result waited for it. The pane
now draws it with the block, and draws it by itself only when the agent's word does not come
(a store that is not answering): the output is never hidden behind the store.
"""

from __future__ import annotations

import threading

from hermes_tui.tui.widgets.output import OutputPane

from helpers.pilot import blocks, make_app, submit, wait_until
from helpers.pilot import run
from helpers.pilot import SMALL


async def test_the_output_pane_draws_a_runs_end_with_its_block(hermes_home, tmp_path, monkeypatch) -> None:
    app = make_app(hermes_home, tmp_path)
    at_show: list[str] = []
    show = OutputPane.show

    def spy(pane, result):  # the pane draws a finished run: what does its block say then?
        run = [b for b in blocks(app) if b.result is not None or b.status == "running"]
        at_show.append(run[-1].status if run else "no block")
        return show(pane, result)

    monkeypatch.setattr(OutputPane, "show", spy)
    async with app.run_test(size=SMALL) as pilot:
        for code in ("x = 41", "print(x + 1)", "for n in range(50_000):\n    print(n)\n"):
            await run(pilot, app, code)
        assert app.query_one(OutputPane).status == "success"
        assert "49999" in "\n".join(app.query_one("#output-log").lines)
    # Once per run, and each time with its block already showing the result (not "running").
    assert at_show == ["success"] * 3, at_show


async def test_a_store_that_does_not_answer_does_not_hide_a_runs_output(hermes_home, tmp_path) -> None:
    app = make_app(hermes_home, tmp_path)
    held = threading.Event()
    async with app.run_test(size=SMALL) as pilot:
        await submit(pilot, app, "import time\ntime.sleep(1.0)\nprint('out of the kernel')\n")
        pane = app.query_one(OutputPane)
        await wait_until(pilot, lambda: blocks(app) and pane.status == "running", timeout=30)
        # The writer thread waits from now on: the run's result cannot be stored.
        app.workspace.store.submit(lambda db: held.wait(30))
        try:
            await wait_until(pilot, lambda: pane.status == "success", timeout=15)
            assert "out of the kernel" in "\n".join(app.query_one("#output-log").lines)
            assert blocks(app)[-1].status == "running"  # its result is not stored yet: not shown
        finally:
            held.set()
        await wait_until(pilot, lambda: blocks(app)[-1].status == "success", timeout=15)
