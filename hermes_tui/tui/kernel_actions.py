"""The kernels in the app: their rows (a state change at once, memory each second), and reset
(F5, ``r``), kill (``k``), interrupt and the variables view, asked first when a kernel holds
variables that would be lost."""

from __future__ import annotations

from textual import on, work

from hermes_tui.base.units import plural
from hermes_tui.runtime.notices import STOP_NOTICE
from hermes_tui.tui.app_parts import AppParts
from hermes_tui.tui.widgets.kernels import KernelsPane
from hermes_tui.tui.widgets.safe import visible


class KernelActions(AppParts):
    """A part of :class:`~hermes_tui.tui.app.HermesApp`: the kernels pane's rows, and what it
    and F5 ask for."""

    _memory: dict[str, int]

    def show_kernel_states(self) -> None:
        """A kernel started, changed state or died: its row now, with the memory last read. A
        run starts and ends with a state change, and reading /proc in a thread then (a worker,
        a thread hop) was work on the event loop while the run's output wanted it (issue 20);
        the memory is read again within the second."""
        self.main.show_kernels(self.runtime.kernels(), self._memory)

    @work(exclusive=True, group="kernels", exit_on_error=False)
    async def refresh_kernels(self) -> None:
        """Kernel rows and their memory (read off /proc by the runtime, in a thread)."""
        self._memory = await self.runtime.kernel_memory()
        self.main.show_kernels(self.runtime.kernels(), self._memory)

    @on(KernelsPane.Action)
    async def _kernel_action(self, event: KernelsPane.Action) -> None:
        kernel_id = event.kernel_id
        if event.action in ("reset", "kill"):
            self.end_kernel(kernel_id, event.action)
        elif event.action == "interrupt":
            session = self.runtime.session_of(kernel_id)
            count = await self.runtime.interrupt(session, STOP_NOTICE) if session else 0
            self.notify(f"Interrupted {plural(count, 'running script')}." if count else "Nothing is running there.")
        elif event.action == "variables":
            self.show_variables(kernel_id)
        self.refresh_kernels()

    @work(group="reset", exit_on_error=False)
    async def action_reset_session(self) -> None:
        """End this session's kernels (asked first when they hold variables)."""
        mine = [k.id for k in self.runtime.kernels() if self.runtime.session_of(k.id) == self.session]
        if not await self.confirm_loss("reset", mine):
            return
        await self.runtime.dispose_session(self.session)
        self.main.conversation.add_note("Kernel reset: the next input starts a fresh one.")
        self.refresh_kernels()

    @work(group="end-kernel", exit_on_error=False)
    async def end_kernel(self, kernel_id: str, action: str) -> None:
        """Reset or kill one kernel (``k`` is the hard kill), asked first when it holds variables."""
        if not await self.confirm_loss(action, [kernel_id]):
            return
        reason = "was reset by the user" if action == "reset" else "was killed by the user"
        if await self.runtime.kill_kernel(kernel_id, reason):
            self.notify(f"Kernel {visible(kernel_id)} {'reset' if action == 'reset' else 'killed'}.", markup=False)
        self.refresh_kernels()

    async def confirm_loss(self, action: str, kernel_ids: list[str]) -> bool:
        """True when ending these kernels loses no user variables, or the user said yes."""
        from hermes_tui.tui.screens.dialogs import ConfirmScreen, loss_question

        if not kernel_ids:
            return True
        if isinstance(self.screen, ConfirmScreen):  # F5 again while the question is open
            return False
        names = await self.runtime.names_held(kernel_ids)
        if names == 0:
            return True
        if await self.push_screen_wait(ConfirmScreen(loss_question(action, kernel_ids, names), yes=action.capitalize())):
            return True
        self.notify("Cancelled: the kernel keeps its variables.")
        return False

    @work(exclusive=True, group="variables", exit_on_error=False)
    async def show_variables(self, kernel_id: str) -> None:
        try:
            variables = await self.runtime.inspect_kernel(kernel_id)
        except TimeoutError as exc:  # the walk calls each variable's __repr__ and __len__
            self.notify(visible(f"{exc}: one of its variables is slow to show (its __repr__ or __len__); the "
                                "walk was cut short, try again"), severity="warning", markup=False)
            return
        except Exception as exc:  # gone, busy, or it did not answer: say so
            self.notify(visible(str(exc)), severity="warning", markup=False)
            return
        from hermes_tui.tui.screens.dialogs import VariablesScreen

        await self.push_screen(VariablesScreen(kernel_id, variables))
