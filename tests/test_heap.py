"""Full collections of the heap wait for idle moments (hermes_tui/tui/heap.py, issue 20): in a long
session they walked the whole transcript (up to 109 ms) while a run's output was shown, and a key
pressed then waited for them. Memory stays bounded: what froze is collected in full later."""

from __future__ import annotations

import gc
import time
import weakref

import pytest

from hermes_tui.tui import heap as heap_module
from hermes_tui.tui.heap import HeapKeeper


class Cycle:
    def __init__(self) -> None:
        self.me = self  # only the cyclic collector frees it


@pytest.fixture(autouse=True)
def unfrozen():
    yield
    gc.unfreeze()


def garbage_after_a_run(keeper: HeapKeeper, **run) -> weakref.ref:
    """A cycle alive when a run ends (frozen with it), dropped right after."""
    cycle = Cycle()
    dead = weakref.ref(cycle)
    keeper.run_ended(**run)
    del cycle
    return dead


def test_a_run_end_freezes_the_heap_and_an_idle_moment_collects_it() -> None:
    keeper = HeapKeeper(every=30)
    dead = garbage_after_a_run(keeper)
    assert gc.get_freeze_count() > 0 and keeper.frozen_runs == 1
    gc.collect()
    assert dead() is not None  # frozen: no collection made while the next run goes walks it
    assert not keeper.idle()  # the run just ended: not idle yet
    keeper.last_run_end = time.monotonic() - heap_module.IDLE_SECONDS
    assert not keeper.idle(busy=True)  # a turn still runs
    assert not keeper.idle(last_key=time.monotonic())  # the user is typing
    assert keeper.idle()
    assert dead() is None and keeper.frozen_runs == 0 and keeper.settled == 1
    assert not keeper.idle()  # nothing froze since


def test_never_idle_it_still_collects_every_so_many_runs_waiting_for_a_pause_in_typing() -> None:
    keeper = HeapKeeper(every=5)
    dead = garbage_after_a_run(keeper)
    typing = {"last_key": time.monotonic() + 3600}  # a key "just now" at every run's end
    for _ in range(5):
        keeper.run_ended(**typing)
    assert dead() is not None and keeper.settled == 0  # due, but a key would wait for it
    keeper.run_ended()  # a run ends while nobody types: now
    assert dead() is None and keeper.settled == 1 and keeper.frozen_runs == 0
    dead = garbage_after_a_run(keeper, **typing)
    for _ in range(9):
        keeper.run_ended(**typing)
    assert dead() is None and keeper.settled == 2  # twice as many: whatever the keys


async def test_the_app_freezes_after_a_run_and_collects_when_idle(hermes_home, tmp_path, monkeypatch) -> None:
    from helpers.pilot import make_app
    from helpers.pilot import run

    monkeypatch.setattr(heap_module, "IDLE_SECONDS", 0.3)
    app = make_app(hermes_home, tmp_path)
    async with app.run_test() as pilot:
        await run(pilot, app, "x = 1")
        await pilot.pause(0.1)
        assert app.heap.frozen_runs == 1 and gc.get_freeze_count() > 0
        deadline = time.monotonic() + 5
        while not app.heap.settled and time.monotonic() < deadline:  # the app's one-second check
            await pilot.pause(0.1)
        assert app.heap.settled == 1 and app.heap.frozen_runs == 0
    assert gc.get_freeze_count() == 0  # the app gave it all back when it ended
