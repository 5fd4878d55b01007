"""``/checkpoints``, ``/diff N`` and ``/rollback N`` in the app: the work is below it
(:mod:`hermes_tui.agent.checkpoints`); here the screens open, the question is asked and the
notes are shown."""

from __future__ import annotations

import secrets
from typing import Any

from textual import work

from hermes_tui.runtime.checkpoints.book import RollbackError
from hermes_tui.tui.app_parts import AppParts


class CheckpointActions(AppParts):
    """A part of :class:`~hermes_tui.tui.app.HermesApp`."""

    def _note(self, text: str, level: str = "info") -> None:
        self.main.conversation.add_note(text, level)

    @work(group="checkpoints", exclusive=True, exit_on_error=False)
    async def action_checkpoints(self) -> None:
        """``/checkpoints``: the session's checkpoints; d shows a diff, r rolls back."""
        from hermes_tui.agent.checkpoints import listing
        from hermes_tui.tui.screens.checkpoints import CheckpointsScreen

        await self._session_ready.wait()
        book = self.runtime.checkpoints
        if book.log is None:
            self._note("No checkpoints: this session has no store to keep them in.")
            return
        await book.settle()
        rows = await book.log.all(self.session)
        if not rows:
            why = "checkpoints.enabled is false" if book.config.enabled is False else \
                "none was taken yet: one is taken before each turn and each call that can write"
            self._note(f"No checkpoints in this session ({why}).")
            return
        turn = rows[-1].turn_id
        chosen = await self.push_screen_wait(CheckpointsScreen(listing(rows, turn_id=turn), [r.n for r in rows],
                                                               self.session))
        if chosen is None:
            return
        what, number = chosen
        if what == "diff":
            self.action_diff(str(number))
        else:
            self.action_rollback(str(number))

    @work(group="checkpoints-diff", exclusive=True, exit_on_error=False)
    async def action_diff(self, argument: str = "") -> None:
        """``/diff N``: the diff from checkpoint N to the files now, in the pager."""
        from hermes_tui.agent.checkpoints import diff_number, write_diff
        from hermes_tui.tui.screens.checkpoints import DiffScreen

        await self._session_ready.wait()
        number = diff_number(argument)
        if isinstance(number, str):
            self._note(number)
            return
        folder = self.home / "checkpoints" / "diffs"
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = folder / f"{secrets.token_hex(8)}.diff"
        try:
            size = await write_diff(self.runtime.checkpoints, self.session, number, path)
        except RollbackError as exc:
            path.unlink(missing_ok=True)
            self._note(f"/diff {number}: {exc}", "warning")
            return
        if not size:
            path.unlink(missing_ok=True)
            self._note(f"No file differs from checkpoint {number}.")
            return
        await self.push_screen(DiffScreen(path, f"Changes since checkpoint {number} (session {self.session})"))

    @work(group="checkpoints-rollback", exit_on_error=False)
    async def action_rollback(self, argument: str = "") -> None:
        """``/rollback N [--conversation] [--files PATH ...]``: says exactly which files change,
        asks, then takes a checkpoint and puts them back."""
        from hermes_tui.agent.checkpoints import rollback_args

        await self._session_ready.wait()
        args = rollback_args(argument)
        if isinstance(args, str):
            self._note(args)
            return
        agent = self.agent
        if agent is None or self.workspace.store is None:
            self._note("/rollback: no session is open.")
            return
        if agent.busy:
            self._note("/rollback: a turn is running; /stop it (or wait for it to end) first.", "warning")
            return
        if self._rolling_back:
            self._note("/rollback: another rollback is being asked or done; answer it first.", "warning")
            return
        self._rolling_back = True
        try:
            await self._rollback(args, agent)
        finally:
            self._rolling_back = False

    _rolling_back = False

    async def _rollback(self, args: Any, agent: Any) -> None:
        from hermes_tui.agent.checkpoints import plan_or_error, question, rollback
        from hermes_tui.tui.screens.dialogs import ConfirmScreen

        book = self.runtime.checkpoints
        await book.settle()  # the last calls' ledgers are in
        plan = await plan_or_error(book, self.session, args, self.workspace.cwd)
        if isinstance(plan, str):
            self._note(plan, "warning")
            return
        if not plan.count and not args.conversation:
            self._note(f"No file differs from checkpoint {args.n}: nothing to roll back.")
            return
        asked = question(plan, self.workspace.cwd, conversation=args.conversation)
        if not await self.push_screen_wait(ConfirmScreen(asked, yes="Roll back", no="Keep", default=False)):
            self._note("Rollback cancelled: nothing was changed.")
            return
        if agent.busy:  # a turn began while the question was open (an injected message)
            self._note("/rollback: a turn started meanwhile; nothing was changed. /stop it and ask again.", "warning")
            return
        assert self.workspace.store is not None
        try:
            done = await rollback(book, self.workspace.store, plan, conversation=args.conversation)
        except RollbackError as exc:
            self._note(f"/rollback {args.n}: {exc}", "warning")
            return
        if done.rewound is not None:  # drawn again from the store first: the notes go under it
            await self._redraw_rewound()
        for line in done.notes():
            self._note(line, "warning" if line.startswith("Not put back") else "info")

    async def _redraw_rewound(self) -> None:
        """The conversation was rewound: the model's history and the transcript from the store."""
        from hermes_tui.tui.widgets.transcript import draw_session

        agent = self.agent
        assert agent is not None
        loaded = await agent.reread()
        conversation = self.main.conversation
        conversation.action_clear()
        if loaded is not None:
            draw_session(conversation, loaded)
