"""An agent on a real runtime and store, with the events it sent (``Harness``), and the fixture
that makes them (``harness_factory``; import it into a test module to use it)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hermes_tui.agent.loop import Agent, ReplyText, TurnEnded
from hermes_tui.agent.models.providers import resolve_provider
from hermes_tui.storage.writer import SessionStore

from conftest import make_config
from fake_models import FakeModelServer


class Harness:
    """A runtime, a store and an agent for one session, with the events it sent."""

    def __init__(self, runtime, store, agent) -> None:
        self.runtime, self.store, self.agent = runtime, store, agent
        self.events: list = []
        self.ended = asyncio.Event()

    def on_event(self, event) -> None:
        self.events.append(event)
        if isinstance(event, TurnEnded):
            self.ended.set()

    async def turn(self, text: str, origin: str = "user", timeout: float = 30) -> str:
        self.ended.clear()
        await self.agent.submit(text, origin)
        await asyncio.wait_for(self.ended.wait(), timeout)
        return [e for e in self.events if isinstance(e, TurnEnded)][-1].status

    def of(self, kind):
        return [e for e in self.events if isinstance(e, kind)]

    def reply_text(self) -> str:
        return "".join(e.delta for e in self.of(ReplyText))

    async def until(self, predicate, timeout: float = 15.0) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not predicate():
            assert loop.time() < deadline, "condition not met in time"
            await asyncio.sleep(0.05)


@pytest.fixture
async def harness_factory(hermes_home: Path, tmp_path: Path):
    made = []

    async def make(server: FakeModelServer | None, yaml_extra: str = "", provider: str = "custom",
                   approver=None, session: str = "s1", tool_format: str | None = None):
        yaml_text = yaml_extra
        if server is not None:
            yaml_text += f"\nmodel:\n  provider: {provider}\n  default: fake-model\n  base_url: {server.url}\n  max_retries: 0\n"
            if tool_format:
                yaml_text += f"  tool_format: {tool_format}\n"
            if provider == "anthropic":  # a conventional key goes to a local server only when named for it
                yaml_text += "  key_env: ANTHROPIC_API_KEY\n"
        config = make_config(yaml_text)
        from hermes_tui.runtime import Runtime

        runtime = Runtime(config, home=hermes_home, approver=approver)
        await runtime.start()
        store = SessionStore.open(hermes_home)
        settings = resolve_provider(config, hermes_home, {"ANTHROPIC_API_KEY": "k-test"})
        harness = Harness(runtime, store, None)
        agent = Agent(runtime, store, session, settings=settings, listener=harness.on_event, cwd=str(tmp_path),
                      max_steps=config.agent.max_steps, max_context_chars=config.agent.max_context_chars)
        harness.agent = agent
        await agent.open()
        made.append(harness)
        return harness

    yield make
    for h in made:
        await h.agent.aclose()
        await h.runtime.aclose()
        h.store.close()
