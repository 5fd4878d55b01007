"""What the app does with what is typed: a ``/command``, a ``!cmd``, ``>>> Python``, or a
message (or Python, with no model) for the agent; the input's history, its completions from the
idle kernel, and the keys that stop, retry, find and copy."""

from __future__ import annotations

import inspect
import textwrap

from textual import on, work

from hermes_tui.agent.events import TurnKind
from hermes_tui.runtime.notices import STOP_NOTICE
from hermes_tui.tui.app_parts import AppParts
from hermes_tui.tui.commands import PYTHON_PREFIX, command_argument, parse_command, python_of
from hermes_tui.tui.widgets.conversation.blocks import PendingBlock
from hermes_tui.tui.widgets.conversation.prompt import PromptInput


class InputActions(AppParts):
    """A part of :class:`~hermes_tui.tui.app.HermesApp`."""

    @on(PendingBlock.Removed)
    async def _remove_pending(self, event: PendingBlock.Removed) -> None:
        """Esc on a queued input: it never runs."""
        if self.agent is not None and self.agent.remove_queued(event.block.turn_id):
            await self.main.conversation.drop_pending(event.block.turn_id)
            self.main.conversation.add_note("Removed from the queue: it will not run.")
            self.main.focus_pane("conversation")

    @on(PromptInput.Submitted)
    async def _submitted(self, event: PromptInput.Submitted) -> None:
        text = event.text
        self.remember_input(text)
        if text.lstrip().startswith(("/", "!")):  # a stray blank line before a command is not Python
            text = text.lstrip()
        elif text[:1] in (" ", "\t") and self.agent is not None and self.agent.provider is None:
            # A leading space keeps an input out of the history (as in shells); as Python it
            # would be an IndentationError: the block is run dedented.
            text = textwrap.dedent(text).lstrip("\n")
        if text.startswith("/"):
            # Its answer is a note at the end: scrolled up (PageUp), the view follows the end again,
            # as it does for a message sent (/find then scrolls to what it found).
            self.main.conversation.scroll_transcript("end")
            command = parse_command(text[1:])
            if isinstance(command, str):
                self.main.conversation.add_note(command)
            elif command.takes_argument:
                outcome = getattr(self, f"action_{command.action}")(command_argument(text[1:]))
                if inspect.isawaitable(outcome):  # a worker action returns its Worker: not awaited
                    await outcome
            else:
                await self.run_action(command.action)
        elif text.startswith("!"):
            if text[1:].strip():
                self.send(text[1:].strip(), kind="shell")
            else:
                self.main.conversation.add_note("Type a command after ! (for example: !git status).")
        elif text.lstrip().startswith(PYTHON_PREFIX):  # Python beside the chat: a run in the kernel
            code = python_of(text.lstrip())
            if code.strip():
                self.send(code, kind="python")
            else:
                self.main.conversation.add_note("Type Python after >>> (for example: >>> df.head()).")
        else:
            self.send(text)

    @work(group="send", exit_on_error=False)
    async def send(self, text: str, kind: TurnKind | None = None) -> None:
        """Hand a turn to the agent once the session is open: a message, Python, or a ``!cmd``."""
        await self._session_ready.wait()
        assert self.agent is not None
        await self.agent.submit(text, "user", kind)

    @work(group="history", exit_on_error=False)
    async def remember_input(self, text: str) -> None:
        """Store a submitted input in sessions.db: Up and Ctrl+R find it, in later sessions too."""
        await self._session_ready.wait()
        await self.workspace.remember_input(self.session, text)

    @on(PromptInput.NamesWanted)
    def _names_wanted(self, event: PromptInput.NamesWanted) -> None:
        self.kernel_names(event)

    @work(group="names", exclusive=True, exit_on_error=False)
    async def kernel_names(self, event: PromptInput.NamesWanted) -> None:
        """Tab on a Python name: the idle session kernel's names (asked without disturbing it;
        None when it is busy or there is none: builtins and keywords only)."""
        event.reply(await self.runtime.kernel_names(self.session))

    @on(PromptInput.CompletionsWanted)
    def _completions_wanted(self, event: PromptInput.CompletionsWanted) -> None:
        self.kernel_completions(event)

    @work(group="names", exclusive=True, exit_on_error=False)
    async def kernel_completions(self, event: PromptInput.CompletionsWanted) -> None:
        """Tab after ``a.b.``, in ``d["`` or in a string: the idle session kernel's attributes,
        keys or paths (asked without disturbing it, running none of the script's code)."""
        event.reply(await self.runtime.kernel_completions(self.session, event.text))

    async def action_retry(self) -> None:
        if self.agent is None or not await self.agent.retry():
            self.main.conversation.add_note(
                "Nothing to retry or continue: /retry (or /continue) sends the conversation again after a failed "
                "request, or after the app stopped in the middle of a turn.")

    @on(PromptInput.StopRequested)
    async def action_stop(self) -> None:
        """Stop the running turn (a running script is interrupted, a reply is cut)."""
        if self.agent is not None and await self.agent.interrupt(STOP_NOTICE):
            self.notify("Stopped the running turn.")

    def action_new_session(self) -> None:
        self.switch_session(None)

    def action_find(self, argument: str = "") -> None:
        """``/find TEXT``: scroll to the newest block holding TEXT (again: the next older);
        ``/find`` alone: the last search again."""
        conversation = self.main.conversation
        query = argument.strip() or conversation.find_query
        if not query:
            conversation.add_note("Type what to find after /find (for example: /find traceback). Ctrl+F does it too.")
            return
        conversation.find(query)

    def action_copy(self, argument: str = "") -> None:
        """``/copy``: the last reply to the clipboard; ``/copy code``, ``/copy output``."""
        self.main.conversation.copy(argument)
