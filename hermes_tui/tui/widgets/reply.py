"""The model's reply block: Textual's Markdown (and markdown-it under it) are imported here,
with the first reply, so the first frame does not wait for them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.content import Content
from textual.widgets import Markdown
from textual.widgets.markdown import MarkdownBlock, MarkdownFence

from hermes_tui.tui.widgets.safe import visible

if TYPE_CHECKING:
    from textual.widgets.markdown import MarkdownStream


class ReplyFence(MarkdownFence):
    """A code block of a reply. Pygments imports a language's lexer with its first block; when
    the host refuses that import (a file changed after it started: runtime/import_guard.py) the
    block is shown plain, not a traceback (the refusal is said once in the conversation)."""

    @classmethod
    def highlight(cls, code: str, language: str, ansi: bool = False, dark: bool = False) -> Content:
        try:
            return super().highlight(code, language, ansi, dark)
        except ImportError:
            return Content(code)


class ReplyBlock(Markdown):
    """The model's reply, rendered as Markdown while it streams."""

    BLOCKS: dict[str, type[MarkdownBlock]] = {**Markdown.BLOCKS, "fence": ReplyFence, "code_block": ReplyFence}

    DEFAULT_CSS = """
    ReplyBlock { margin: 0 0 1 0; padding: 0 1; height: auto; }
    ReplyBlock.interrupted, ReplyBlock.error { border-left: thick $warning; }
    """

    def __init__(self, text: str = "") -> None:
        super().__init__(visible(text))
        self.text = text
        self._stream: MarkdownStream | None = None

    async def add(self, delta: str) -> None:
        """More of the reply (appended through Textual's Markdown stream, which batches)."""
        self.text += delta
        if self._stream is None:
            self._stream = Markdown.get_stream(self)
        await self._stream.write(visible(delta))

    async def finish(self, text: str, status: str) -> None:
        """The reply is complete (or was cut: ``status`` interrupted / error)."""
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None
        if text != self.text:
            self.text = text
            await self.update(visible(text))
        if status != "done":
            self.add_class(status)
