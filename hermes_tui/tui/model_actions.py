"""``/usage``, ``/budget`` and ``/model`` in the app: the work is below it
(:mod:`hermes_tui.agent.commands`); here the screens open and the notes are shown."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import work

from hermes_tui.tui.app_parts import AppParts

if TYPE_CHECKING:
    from hermes_tui.agent.commands import Note


class ModelActions(AppParts):
    """A part of :class:`~hermes_tui.tui.app.HermesApp`."""

    def say(self, notes: list[Note]) -> None:
        """Notes in the conversation, in order."""
        for text, level in notes:
            self.main.conversation.add_note(text, level)

    @work(group="usage", exclusive=True, exit_on_error=False)
    async def action_usage(self) -> None:
        """``/usage``: tokens and cost of this session, per turn and per model."""
        await self._session_ready.wait()
        assert self.agent is not None
        rows = await self.workspace.usage_rows(self.session)
        from hermes_tui.tui.screens.usage import UsageScreen

        await self.push_screen(UsageScreen(self.session, rows, self.agent.totals))

    async def action_budget(self, argument: str = "") -> None:
        """``/budget``: show the ceilings; ``/budget 5.00`` sets the session's, ``/budget turn 1.00``
        the turn's, ``/budget off`` removes the session's."""
        from hermes_tui.agent.commands import budget_command

        await self._session_ready.wait()
        assert self.agent is not None
        self.say(await budget_command(self.agent, argument))

    @work(group="model", exclusive=True, exit_on_error=False)
    async def action_model(self, argument: str = "") -> None:
        """``/model``: the picker; ``/model NAME`` or ``/model PROVIDER:NAME`` switches directly."""
        from hermes_tui.agent.commands import NO_MODEL_TO_PICK, model_argument, model_choices
        from hermes_tui.tui.screens.model_picker import ModelPicker

        await self._session_ready.wait()
        if argument.strip():
            parsed = model_argument(argument, self.config, self.settings)
            if isinstance(parsed, str):
                self.say([(parsed, "info")])
            else:
                await self.use_model(*parsed)
            return
        if self.agent is not None and self.agent.provider is not None and self.settings is not None:
            self.notify("Asking the provider for its models…")
        offered, why = await model_choices(self.config, self.settings, self.agent)
        if not offered:
            self.say([(NO_MODEL_TO_PICK, "info")])
            return
        chosen = await self.push_screen_wait(ModelPicker(offered, why))
        if chosen is not None and not chosen.current:
            await self.use_model(chosen.provider, chosen.model)

    async def use_model(self, provider: str | None, model: str) -> None:
        """Use a chosen model from the next call; the top bar, usage and input say so."""
        from hermes_tui.agent.commands import use_model

        settings, notes = await use_model(self.workspace, provider, model)
        if settings is not None and self.agent is not None:
            self.settings = settings
            self.provider_problem = None
            self.update_topbar()
            self.main.set_usage(self.agent.totals)
            self.main.set_model(settings)
        self.say(notes)
