"""The conversation pane: messages, streamed replies, tool calls, notes, and the input.

- ``prompt.py``: the input (:class:`PromptInput`): Enter sends or runs, history and its
  Ctrl+R search, Tab completion, big pastes as placeholders, the frames held after Enter.
- ``blocks.py``: the transcript's blocks (a run, a message, a queued input, a note, a tool
  call's block) and what /find and /copy read of them.
- ``transcript.py``: the scroller that holds them (:class:`Transcript`).
- ``pane.py``: the pane (:class:`ConversationPane`), which draws the agent's events, and the
  hint line above the input.

The names other modules use are importable from here too. ``ReplyBlock`` lives in
tui/widgets/reply.py and is imported from here only when asked for (Textual's Markdown and
markdown-it load with the first reply, not before the first frame).
"""

from __future__ import annotations

from hermes_tui.tui.widgets.conversation.blocks import (
    MessageBlock,
    PastedRunBlock,
    PendingBlock,
    RunBlock,
    block_text,
    code_blocks,
    code_theme,
    copy_text,
    note,
    output_preview,
    pasted_run,
    tool_block,
    tool_output_note,
)
from hermes_tui.tui.widgets.conversation.pane import (
    MAX_BLOCKS,
    ConversationPane,
    Hint,
    fit_hint,
    prompt_language,
    wrapped_rows,
)
from hermes_tui.tui.widgets.conversation.prompt import HOLD_SECONDS, PromptInput, is_complete, next_indent
from hermes_tui.tui.widgets.conversation.transcript import QuietScrollBar, Transcript

__all__ = [  # (not ReplyBlock: a star import would load the Markdown stack)
    "HOLD_SECONDS",
    "MAX_BLOCKS",
    "ConversationPane",
    "Hint",
    "MessageBlock",
    "PastedRunBlock",
    "PendingBlock",
    "PromptInput",
    "QuietScrollBar",
    "RunBlock",
    "Transcript",
    "block_text",
    "code_blocks",
    "code_theme",
    "copy_text",
    "fit_hint",
    "is_complete",
    "next_indent",
    "note",
    "output_preview",
    "pasted_run",
    "prompt_language",
    "tool_block",
    "tool_output_note",
    "wrapped_rows",
]


def __getattr__(name: str) -> object:
    """``ReplyBlock`` lives in :mod:`hermes_tui.tui.widgets.reply` (Textual's Markdown and markdown-it
    are imported with the first reply, not before the first frame); still importable from here."""
    if name == "ReplyBlock":
        from hermes_tui.tui.widgets.reply import ReplyBlock

        return ReplyBlock
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
