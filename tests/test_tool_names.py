"""The seven tools are one list (issue 33): every place that names them names the same ones.

``runtime.tools.base.TOOL_NAMES`` is the list. The kernel's stub (``hermes_tools.py``, read as
source: it runs in the kernel, not here), the host's dispatch, the model's declarations and
descriptions, ``execute_code``'s description and the system prompts must all follow it — a tool
added or renamed in one place and not another fails here.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

from hermes_tui.agent import tools as agent_tools
from hermes_tui.agent.loop import SYSTEM_PROMPT
from hermes_tui.agent.subagents import SUBAGENT_PROMPT
from hermes_tui.runtime.tools.base import TOOL_NAMES
from hermes_tui.runtime.tools.dispatch import registry

STUB = Path(str(importlib.util.find_spec("hermes_tui.runtime.child.hermes_tools").origin))
"""Found, not imported: the stub is the kernel's module."""


def stub_names() -> tuple[tuple[str, ...], set[str]]:
    """The stub's ``_ALL_TOOLS`` and the public functions it defines."""
    tree = ast.parse(STUB.read_text())
    listed: tuple[str, ...] = ()
    functions = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_ALL_TOOLS" for t in node.targets):
            listed = tuple(ast.literal_eval(node.value))
        elif isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            functions.add(node.name)
    return listed, functions


def named_in(text: str) -> set[str]:
    return {name for name in re.findall(r"\b[a-z_]+\b", text) if name in set(TOOL_NAMES)}


def test_the_stub_offers_exactly_the_tools_in_the_list_order() -> None:
    listed, functions = stub_names()
    assert listed == TOOL_NAMES
    assert set(TOOL_NAMES) <= functions


def test_the_host_dispatches_exactly_the_tools() -> None:
    assert set(registry()) == set(TOOL_NAMES)


def test_the_model_is_told_of_exactly_the_tools() -> None:
    assert agent_tools.MODEL_TOOLS == ("execute_code", *TOOL_NAMES)
    assert set(agent_tools.DESCRIPTIONS) == set(TOOL_NAMES)
    assert [d["function"]["name"] for d in agent_tools.declarations()] == list(agent_tools.MODEL_TOOLS)
    for text in (agent_tools.EXECUTE_CODE_DESCRIPTION, SYSTEM_PROMPT):
        assert named_in(text) == set(TOOL_NAMES), text


def test_a_sub_agent_is_told_where_its_tools_come_from() -> None:
    assert "from hermes_tools import" in SUBAGENT_PROMPT and "execute_code" in SUBAGENT_PROMPT
