"""What the app's parts share: :class:`AppParts` names the attributes the kernel actions, the
sub-agents' transcripts and the model commands use, which :class:`~hermes_tui.tui.app.HermesApp`
sets. Each part is a subclass, so its ``@on`` handlers and workers are the app's."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.app import App

if TYPE_CHECKING:
    from hermes_tui.agent.loop import Agent
    from hermes_tui.agent.models.providers import ProviderSettings
    from hermes_tui.agent.workspace import Workspace
    from hermes_tui.config import Config
    from hermes_tui.runtime import Runtime
    from hermes_tui.tui.heap import HeapKeeper
    from hermes_tui.tui.screens.main import MainScreen


class AppParts(App[None]):
    """The app as its parts see it (declarations only)."""

    config: Config
    home: Path
    session: str
    settings: ProviderSettings | None
    provider_problem: str | None
    main: MainScreen
    heap: HeapKeeper
    _session_ready: asyncio.Event

    @property
    def workspace(self) -> Workspace:
        raise NotImplementedError

    @property
    def runtime(self) -> Runtime:
        raise NotImplementedError

    @property
    def agent(self) -> Agent | None:
        raise NotImplementedError

    def refresh_kernels(self) -> Any:
        """Redraw the kernels' rows (a worker)."""
        raise NotImplementedError

    def switch_session(self, session_id: str | None) -> Any:
        """Leave this session and open ``session_id``, or a new one for None (a worker)."""
        raise NotImplementedError

    def update_topbar(self) -> None:
        raise NotImplementedError

    def last_key(self) -> float:
        raise NotImplementedError
