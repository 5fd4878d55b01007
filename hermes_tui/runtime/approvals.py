"""Approvals: who must allow what (SPEC §4), and the gate every terminal() call passes.

The policy, by session kind and turn origin:

=========  ======================  ========================  ==================
session    turn                    whole script asked first  terminal() calls
=========  ======================  ========================  ==================
local      typed by the user       no                        ask (per mode)
local      injected / automation   yes                       ask (per mode)
gateway    any                     yes                       ask (per mode)
=========  ======================  ========================  ==================

``approvals.mode``: ``strict`` asks for every terminal() call no rule allows; ``manual`` (Hermes
Agent's meaning, the default) asks only for flagged ones; ``smart`` has a :data:`Judge` (an
auxiliary model, :mod:`hermes_tui.agent.judge`) answer for flagged ones first, escalating to the
person what it does not approve or deny; ``off`` (YOLO) asks for nothing. A write to an agent
instruction file (:mod:`.instructions`) asks in every mode, once or deny. The hard floor
(:mod:`hermes_tui.runtime.danger`) is refused in every mode, with no dialog, and no rule can
allow it. An :data:`Approver` (the app's dialog, the CLI's prompt) answers once / session /
always / deny; no answer within ``approvals.timeout`` is a deny. Every request and decision is
appended to ``$HERMES_HOME/tui/approvals.jsonl``; when a line cannot be appended (a directory or
a FIFO in its place, a full disk), the call is refused with "the approvals log cannot be
written: ..." — nothing runs unlogged, and the gate never raises.

Rules are read when the runtime starts and when the host reloads them on purpose: a script
that edits allowlist.yaml or config.yaml changes nothing in the running session (and writing
those files is itself flagged).

A ``command_allowlist`` entry that names a Hermes Agent dangerous pattern (``recursive delete``:
what Hermes Agent stores for an "always" answer) is a category rule: the flags it covers are
removed before the gate decides, and a command left with no flag is treated as unflagged (it
runs in ``manual`` mode, audited as allowed by that category; ``strict`` still asks unless a
command rule allows it). Flags it does not cover still ask, and the dialog shows only those.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import hashlib
import json
import logging
import os
import re
import secrets
import stat
import time
import unicodedata
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

import msgspec

from hermes_tui.base.structs import Record
from hermes_tui.runtime.danger import Analysis, analyze
from hermes_tui.runtime.danger.instruction_names import is_instruction_reason
from hermes_tui.runtime.instructions import ABSENT, InstructionGuard
from hermes_tui.runtime.models import Origin
from hermes_tui.runtime.rules import (
    Rule, RulesNotSaved, active_rules, add_rule, allowlist_path, category_why, denied_by, lift_flags,
)

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from hermes_tui.config import Config

Choice = Literal["once", "session", "always", "deny"]
CHOICES: tuple[Choice, ...] = ("once", "session", "always", "deny")
DENIED_RUNS_KEPT = 256
"""Script runs denied whole that the gate remembers (the oldest is forgotten first)."""
SessionKind = Literal["local", "gateway"]


class FileChange(Record, kw_only=True):
    """One file a ``write_file`` or ``patch`` request would write."""

    path: str
    size: int | None = None
    """Its size in bytes now; None when it does not exist yet (it would be created)."""
    sha256: str | None = None
    """SHA-256 (hex) of what the call would leave in the file; None for a deletion or a read.
    A "session" answer allows this path with this content only (see :meth:`ApprovalGate.check_file`)."""


RequestKind = Literal["script", "terminal", "file", "sandbox"]


class ApprovalRequest(Record, kw_only=True):
    """What the user is asked to allow."""

    id: str = msgspec.field(default_factory=lambda: secrets.token_hex(6))
    kind: RequestKind
    text: str
    """The full command, script, or (kind ``file``) ``write_file PATH`` / ``patch PATH ...``."""
    cwd: str
    session: str
    kernel: str | None = None
    exec_id: str | None = None
    where: str | None = None
    """Where it runs when that is not this machine (``docker:<id>``, ``ssh:user@host``); ``cwd``
    is then a path there."""
    call_id: str | None = None
    """The model's (or the typed turn's) tool call this request belongs to, if any."""
    origin: Origin = "user"
    reasons: list[str] = msgspec.field(default_factory=list)
    """Why it is flagged, or why it asks at all."""
    choices: list[Choice] = msgspec.field(default_factory=lambda: list(CHOICES))
    created_at: float = msgspec.field(default_factory=time.time)
    deadline: float
    """``time.time()`` after which no answer means deny."""
    session_rule: str | None = None
    """What "session" allows: this exact text, for the rest of the session."""
    always_rule: str | None = None
    """What "always" stores (an exact rule), when it is offered ..."""
    always_file: str | None = None
    """... and the file it is stored in."""
    files: list[FileChange] = msgspec.field(default_factory=list)
    """Kind ``file``: the files that would be written."""
    diff: str | None = None
    """Kind ``file``: a unified diff of the change (for a new file, a diff from nothing)."""
    protected: bool = False
    """A write to an agent instruction file (AGENTS.md ...): asked in every mode, ``off``
    included; never judged by a model, never approved unattended."""
    confined: bool = False
    """What it would do stays in the sandbox (a whole script for a sandboxed kernel, a flagged
    command run in the sandbox): ``approvals.unattended: approve-safe`` may allow it."""

    def file_question(self) -> str:
        """Kind ``file``: ``read_file`` wants to read this file / ``patch`` to change these 2 files."""
        tool = self.text.split(" ", 1)[0]
        what = "this file" if len(self.files) <= 1 else f"these {len(self.files)} files"
        return f"{tool} to {'read' if self.reads() else 'change'} {what}"

    def reads(self) -> bool:
        """Kind ``file``: the tool asks to read the files (not to write them)."""
        return self.text.split(" ", 1)[0] in READING_TOOLS


INSTRUCTION_PREFIX = "instruction file: "
"""What an allowed instruction-file write is remembered under (a restart's "once"; never a rule)."""
_NAMED = re.compile(r"an agent instruction file \((.*?)\): it steers")
_TO_JUDGE = re.compile(
    r"\b(?:approv\w*|deny|denie[sd]|escalat\w*|verdict\w*|judg\w*|review\w*|classif\w*|guardian\w*|"
    r"safe to run|harmless|system prompt|authori[sz]\w*|already (?:confirmed|allowed|ok\w*)|"
    r"(?:ignore|disregard|forget|override)\W+(?:\w+\W+){0,3}?(?:instructions?|rules?|prompts?|polic\w*)|"
    r"you are (?:an? |the )?(?:ai|assistant|model|llm))\b",
    re.IGNORECASE)
_LOOKALIKE = str.maketrans({
    # Cyrillic and Greek letters drawn like Latin ones, and digits written for letters
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s", "к": "k",
    "м": "m", "т": "t", "в": "b", "н": "h", "ԁ": "d", "ɡ": "g", "α": "a", "ε": "e", "ο": "o", "ρ": "p", "ν": "v",
    "ι": "i", "κ": "k", "τ": "t", "υ": "u", "0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a",
    "$": "s", "_": " ", "-": " ", ".": " ", "*": " ", "`": " ", "~": " ",
})


def instruction_names(reasons: list[str]) -> set[str]:
    """The file names the instruction-file reasons name."""
    return {m.group(1) for r in reasons for m in _NAMED.finditer(r)}


def addressed_to_judge(command: str) -> str | None:
    """How ``command``'s text seems to speak to a reviewer (``speaks to a reviewer ('APPROVE')``),
    if it does: words of a verdict, of a reviewer, of consent, of instructions to ignore — also
    spelled with lookalike letters, digits, separators or invisible characters. Best effort: it
    spares the judge the plainest manipulation; what the judge may decide is bounded anyway
    (docs/approvals.md). None: nothing found."""
    text = unicodedata.normalize("NFKC", command)
    text = "".join(c for c in text if unicodedata.category(c) != "Cf")  # zero-width joiners and kin
    for variant in (text, text.lower().translate(_LOOKALIKE)):
        found = _TO_JUDGE.search(variant)
        if found:
            return f"speaks to a reviewer ({found.group(0)[:40]!r})"
    return None


SANDBOX_PREFIX = "outside the sandbox: "
"""What a "run outside the sandbox?" request is remembered under (never a command rule)."""
READING_TOOLS = frozenset({"read_file", "search_files"})
"""Tools whose file requests are reads (a credentials file), not changes."""


class ApprovalDecision(Record, kw_only=True):
    """The user's answer."""

    choice: Choice
    reason: str | None = None
    """With ``deny``: goes back to the script / model."""
    by: str | None = None
    """Who answered, when not the user at this screen (``hermes-tui approve`` from a shell, or a
    headless run refusing what it cannot ask): said in the refusal and the audit log."""
    whole_run: bool = False
    """With ``deny``: deny every request of the same script run (its ``exec_id``) — this one,
    those waiting behind it, and those it makes later, which are refused without asking for the
    rest of the run ("deny all of this script"). Ignored for a request of no script run."""

    def __post_init__(self) -> None:
        # A record is not checked when built (base/structs.py); an answer's choice always is.
        if self.choice not in CHOICES:
            raise ValueError(f"approval choice {self.choice!r} is not allowed: one of {', '.join(CHOICES)}")


Approver = Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]

Verdict = Literal["approve", "deny", "escalate"]


@dataclass
class JudgeQuestion:
    """What the approval judge (``approvals.mode: smart``) is shown about one flagged command."""

    command: str
    reasons: list[str]
    """Why the analysis flagged it."""
    cwd: str
    session: str
    where: str | None = None


@dataclass
class Judgement:
    """The judge's answer and what it cost."""

    verdict: Verdict
    why: str
    """One line: what the judge said, or why it was not asked or not believed."""
    model: str = ""
    """``provider · model`` (empty when no model was asked)."""
    latency_s: float = 0.0
    cost_usd: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0


Judge = Callable[[JudgeQuestion], Awaitable[Judgement]]
"""Answers one :class:`JudgeQuestion`; never raises (a failure is an ``escalate``)."""


class ApprovalPaused(Exception):
    """Raised by an approver that will not answer now: a headless run pauses here
    (``hermes-tui run --pause-on approval``). The request stays pending in its session, the
    call gets this as its refusal, and ``hermes-tui resume`` asks it again."""


def blocked(error: str) -> dict[str, object]:
    """What a denied terminal() returns to the script (SPEC §4)."""
    return {"output": "", "exit_code": -1, "status": "blocked", "error": f"BLOCKED: {error}"}


class AuditError(Exception):
    """The audit log cannot be written: the call that needed it is refused (never run unlogged)."""


class AuditLog:
    """Appends one JSON line per request and decision to ``approvals.jsonl``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    async def write(self, **entry: Any) -> None:
        """Append ``entry``; raises :class:`AuditError` (one line saying why) if it cannot."""
        line = json.dumps({"at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **entry}, ensure_ascii=False) + "\n"
        try:
            await asyncio.to_thread(self._append, line)
        except OSError as exc:
            raise AuditError(f"the approvals log cannot be written: {exc.strerror or exc} ({self.path})") from exc

    def _append(self, line: str) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError) as exc:  # a file where a folder should be
            raise OSError(errno.ENOTDIR, f"{exc.filename or self.path.parent} is not a directory") from exc
        # O_NOFOLLOW: a symlink planted in its place must not make us append to ~/.bashrc;
        # O_NONBLOCK: a FIFO planted there must not hang the gate (it fails with ENXIO instead).
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(self.path, flags, 0o600)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise OSError(exc.errno, "it is a symbolic link") from exc
            if exc.errno == errno.ENXIO:
                raise OSError(exc.errno, "it is not a regular file") from exc
            raise
        with os.fdopen(fd, "ab") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(errno.EINVAL, "it is not a regular file")
            # backslashreplace: a lone surrogate sent by a script becomes a valid JSON \udXXX escape
            handle.write(line.encode("utf-8", "backslashreplace"))


def audit_path(home: Path) -> Path:
    """``$HERMES_HOME/tui/approvals.jsonl``."""
    return home / "tui" / "approvals.jsonl"


def session_key(text: str, files: list[FileChange]) -> str:
    """What a "session" answer to a file request remembers: the tool and paths, plus the hash of
    each file's new content when there is one (``text`` alone for a read or a deletion)."""
    hashes = [f.sha256 or "-" for f in files]
    return text if not any(f.sha256 for f in files) else f"{text} sha256:{','.join(hashes)}"


def content_hash(data: str | bytes) -> str:
    """The SHA-256 (hex) of ``data`` (text is hashed as UTF-8, as the file tools write it)."""
    return hashlib.sha256(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data).hexdigest()


Check = TypeVar("Check", bound=Callable[..., Awaitable["str | None"]])


def refused_unlogged(check: Check) -> Check:
    """Make a public check of the gate return the audit log's failure as its refusal: a call
    that cannot be logged is never run (and never raises out of the gate)."""
    @functools.wraps(check)
    async def checked(*args: Any, **kwargs: Any) -> str | None:
        try:
            return await check(*args, **kwargs)
        except AuditError as exc:
            return str(exc)

    return cast(Check, checked)


class ApprovalGate:
    """Decides, asks, remembers and records.

    Args:
        approver: who answers (None: nobody; everything that must ask is denied).
        config: approvals.mode / timeout and command_allowlist are read from it.
        home: HERMES_HOME (allowlist.yaml and the audit log live under ``tui/``).
        session_kind: ``local`` (CLI, TUI) or ``gateway`` (messaging platforms).
    """

    def __init__(
        self, approver: Approver | None, config: Config, home: Path, session_kind: SessionKind = "local"
    ) -> None:
        self.approver = approver
        self.config = config
        self.home = home
        self.session_kind = session_kind
        self.mode = config.approvals.mode
        self.timeout = config.approvals.timeout
        self.instructions: tuple[str, ...] = config.security.instruction_patterns
        """Names (globs) of agent instruction files: their writes always ask."""
        self.guard = InstructionGuard(self.instructions, home / "cache" / "instructions")
        """What the instruction files hold with a person's consent (the runtime checks around calls)."""
        self.judge: Judge | None = None
        """The approval judge of ``smart`` mode (set by the host that has a model); without one,
        every flagged command escalates to a person."""
        self.confined: Callable[[], bool] = lambda: False
        """True when scripts and commands run confined (the sandbox, or a container)."""
        self.rules: list[Rule] = []
        self.rules_problem: str | None = None
        self.audit = AuditLog(audit_path(home))
        self._session_allowed: dict[str, set[str]] = {}
        self._allowed_once: dict[str, list[str]] = {}
        self._denied_runs: dict[str, str] = {}
        """Script runs (exec ids) whose every request was denied: the refusal each later request
        gets. Bounded (:data:`DENIED_RUNS_KEPT`); an exec id is never reused."""
        self._asking_runs: dict[str, set[asyncio.Future[ApprovalDecision]]] = {}
        """Per script run, the questions being asked (or waiting in the front end's line)."""

    @property
    def yolo(self) -> bool:
        """True when approvals are off (the UI shows a permanent badge)."""
        return self.mode == "off"

    async def load_rules(self) -> None:
        """(Re)read approvals settings and rules. Only the host calls this, on purpose."""
        self.mode = self.config.approvals.mode
        self.timeout = self.config.approvals.timeout
        self.instructions = self.guard.patterns = self.config.security.instruction_patterns
        source = self.config.source or (self.home / "config.yaml")
        self.rules, self.rules_problem = await asyncio.to_thread(
            active_rules, list(self.config.command_allowlist), source, self.home
        )

    def forget_session(self, session: str) -> None:
        """Drop the "session" answers of ``session``."""
        self._session_allowed.pop(session, None)
        self._allowed_once.pop(session, None)

    def allow_once(self, session: str, key: str) -> None:
        """The next check of ``key`` in ``session`` passes, once, without asking."""
        self._allowed_once.setdefault(session, []).append(key)

    def _take_once(self, session: str, key: str) -> bool:
        waiting = self._allowed_once.get(session)
        if waiting and key in waiting:
            waiting.remove(key)
            return True
        return False

    @refused_unlogged
    async def ask_restored(self, request: ApprovalRequest) -> str | None:
        """Ask again a request that was pending when the app stopped (SPEC §4: it survives a
        restart). None if allowed — then the next identical check in the session passes once,
        so the re-run of its tool call does not ask twice; else the reason it was refused."""
        restored = request.model_copy(update={
            "deadline": time.time() + self.timeout,
            "reasons": [*request.reasons, "asked again: the app stopped while this waited; if allowed, its tool "
                                          "call runs again from the start"]})
        key = request.session_rule or request.text
        refusal = await self._ask(restored, key)
        if refusal is None:
            self._allowed_once.setdefault(request.session, []).append(key)
        return refusal

    # -- scripts --------------------------------------------------------------------------

    @refused_unlogged
    async def check_script(
        self, code: str, *, cwd: str, session: str, origin: Origin, exec_id: str | None, call_id: str | None = None,
    ) -> str | None:
        """None if the script may run; else the reason it is blocked (no ``BLOCKED:`` prefix)."""
        if self.session_kind == "local" and origin == "user":
            return None  # typed by the user: file and process work in Python runs unprompted
        if self.yolo:
            await self.audit.write(event="auto", kind="script", session=session, origin=origin, decision="allow",
                                   why="approvals.mode is off", text=code)
            return None
        if code in self._session_allowed.get(session, set()) or self._take_once(session, code):
            return None
        why = "a gateway session" if self.session_kind == "gateway" else f"an {origin} turn"
        request = self._request("script", code, cwd, session, None, exec_id, origin,
                                [f"{why}: the whole script is asked first"], ["once", "session", "deny"], call_id)
        request.confined = self.confined()
        return await self._ask(request)

    # -- terminal commands ----------------------------------------------------------------

    @refused_unlogged
    async def check_terminal(
        self,
        command: str,
        *,
        cwd: str,
        session: str,
        kernel: str | None,
        exec_id: str | None,
        origin: Origin = "user",
        call_id: str | None = None,
        typed: bool = False,
        env: Mapping[str, str] | None = None,
        where: str | None = None,
        noted: set[str] | None = None,
    ) -> str | None:
        """None if ``command`` may run; else the reason it is blocked (no ``BLOCKED:`` prefix).
        ``where``: the backend it runs on when not this machine (the dialog says so).
        ``noted`` gets ``flagged`` when the analysis flagged it and ``asked`` when a person was
        asked (a checkpoint is taken before such a command runs).

        ``cwd`` is the folder it will run in and ``env`` the environment its shell gets: the
        analysis judges every path as it resolves there (``rm -rf -- *`` in your home, ``>>
        .ssh/authorized_keys`` there). ``typed``: the user typed it as a ``!cmd`` in a local
        session. It is the user's own command: it runs without asking unless it is flagged,
        and the hard floor still refuses.
        """
        analysis, reasons, lifted_by, rule = await self._read(command, cwd, env)
        base = dict(kind="terminal", session=session, origin=origin, text=command)
        if noted is not None and (reasons or analysis.flags):
            noted.add("flagged")
        if analysis.hard:
            await self.audit.write(event="auto", decision="refused", why=analysis.hard, **base)
            return (f"refused: this command {'; '.join(analysis.hard)}. Such commands are never run "
                    "and cannot be allowed")
        denied = denied_by(command, self.config.approvals.deny, analysis.runs)
        if denied is not None:
            await self.audit.write(event="auto", decision="refused", why=f"approvals.deny: {denied}", **base)
            return f"refused: this command matches approvals.deny {denied!r} in config.yaml; it is never run"
        protected = [r for r in analysis.flags if is_instruction_reason(r)]
        if protected:  # before every mode, answer and rule: a person says yes to this write, each time
            key = INSTRUCTION_PREFIX + command
            if self._take_once(session, key):
                await self.audit.write(event="auto", decision="allow", why="approved after a restart", **base)
                return None
            request = self._request("terminal", command, cwd, session, kernel, exec_id, origin,
                                    [*protected, *(r for r in reasons if r not in protected)], ["once", "deny"],
                                    call_id)
            request.where, request.protected, request.session_rule = where, True, key
            if noted is not None:  # the terminal tool leaves these writable in the command's sandbox
                noted.update(("asked", "instruction", *(f"instruction:{n}" for n in instruction_names(protected))))
            return await self._ask(request, key)  # what it leaves is shown and asked again after the call
        if self.yolo:
            await self.audit.write(event="auto", decision="allow", why="approvals.mode is off", **base)
            return None
        if command in self._session_allowed.get(session, set()):
            await self.audit.write(event="auto", decision="allow", why="allowed for this session", **base)
            return None
        if self._take_once(session, command):
            await self.audit.write(event="auto", decision="allow", why="approved after a restart", **base)
            return None
        if rule is not None:
            await self.audit.write(event="auto", decision="allow", why=f"rule {rule.kind}: {rule.pattern} ({rule.source})",
                                   **base)
            return None
        typed_here = typed and origin == "user" and self.session_kind == "local"
        # A typed !cmd first: the audit says the person typed it, whatever the mode.
        if typed_here and not reasons:
            why = (f"typed by the user (!cmd); its flags are allowed by {category_why(lifted_by)}" if lifted_by
                   else "typed by the user (!cmd), not flagged")
            await self.audit.write(event="auto", decision="allow", why=why, **base)
            return None
        if self.mode in ("manual", "smart") and not reasons:
            why = category_why(lifted_by) if lifted_by else f"not flagged (approvals.mode {self.mode})"
            await self.audit.write(event="auto", decision="allow", why=why, **base)
            return None
        if self.mode == "smart" and reasons and not typed_here and not self._run_denied(exec_id):
            # (a person typing it is asked, not a model; a run a person denied whole stays denied)
            judged = await self._judged(JudgeQuestion(command, reasons, cwd, session, where), base)
            if judged.verdict == "approve":
                return None
            if judged.verdict == "deny":
                return (f"denied by the approval judge ({judged.model}) of approvals.mode smart: {judged.why}. "
                        "Do not retry it in another form; if it is needed, say why to the user, who can run it")
            reasons = [*reasons, f"the approval judge escalated it to you: {judged.why}"]
        choices: list[Choice] = ["once", "session", "deny"] if reasons else ["once", "session", "always", "deny"]
        request = self._request("terminal", command, cwd, session, kernel, exec_id, origin, reasons, choices,
                                call_id)
        request.where = where
        request.session_rule = command
        request.confined = not typed and self.confined()
        if "always" in choices:
            request.always_rule = command
            request.always_file = str(allowlist_path(self.home))
        if noted is not None:
            noted.add("asked")
        return await self._ask(request, command)

    def _run_denied(self, exec_id: str | None) -> bool:
        """True when a person denied every request of script run ``exec_id``."""
        return exec_id is not None and exec_id in self._denied_runs

    async def _judged(self, question: JudgeQuestion, base: dict[str, Any]) -> Judgement:
        """The judge's verdict on a flagged command, audited with its model, latency and cost;
        ``escalate`` when there is no judge, when it fails, and when the command's text speaks
        to it (docs/approvals.md: a command is data, and data that gives orders is suspect)."""
        addressed = addressed_to_judge(question.command)
        if addressed is not None:
            judged = Judgement("escalate", f"not asked: the command's text {addressed}")
        elif self.judge is None:
            judged = Judgement("escalate", "no approval judge is configured (auxiliary.approval)")
        else:
            try:
                judged = await self.judge(question)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a broken judge escalates; it never approves
                judged = Judgement("escalate", f"the judge failed ({type(exc).__name__})")
        decision = {"approve": "allow", "deny": "refused", "escalate": "escalated"}[judged.verdict]
        await self.audit.write(event="judged", decision=decision, why=judged.why, model=judged.model,
                               latency_s=round(judged.latency_s, 3), cost_usd=judged.cost_usd,
                               tokens=[judged.input_tokens, judged.output_tokens], **base)
        return judged

    @refused_unlogged
    async def check_unsandboxed(
        self, command: str, why: str, *, cwd: str, session: str, kernel: str | None, exec_id: str | None,
        origin: Origin = "user", call_id: str | None = None,
    ) -> str | None:
        """Ask whether ``command``, which the sandbox stopped (``why``), may run again outside it.
        None if a person said once; else why not. Asked in every approvals mode (``off`` lifts
        approvals, not the sandbox), answered once or deny: no rule or session answer covers it."""
        key = SANDBOX_PREFIX + command
        if self._take_once(session, key):
            await self.audit.write(event="auto", kind="sandbox", session=session, origin=origin, text=command,
                                   decision="allow", why="approved after a restart")
            return None
        # What the command does, in words, even where approvals are off: the person lifting the
        # sandbox must see a recursive delete or decoded code before saying once.
        analysis, _, _, _ = await self._read(command, cwd)
        request = self._request("sandbox", command, cwd, session, kernel, exec_id, origin,
                                [f"blocked by the sandbox: {why}", *analysis.flags,
                                 "run outside the sandbox? it would run again, unconfined, as you"],
                                ["once", "deny"], call_id)
        request.session_rule = key
        return await self._ask(request, key)

    async def _read(
        self, command: str, cwd: str | None = None, env: Mapping[str, str] | None = None,
    ) -> tuple[Analysis, list[str], list[Rule], Rule | None]:
        """The analysis of ``command`` run in ``cwd`` with ``env``; its flags that no category
        rule covers; the category rules that covered the others; and the rule that allows the
        command, if one does (only an exact rule allows a command with flags left).

        It is read in a thread: the analysis looks at the file system (where each path it
        deletes or writes resolves, what a glob matches: bounded), and a script must not stall
        the event loop with that or with a megabyte of shell."""
        def read() -> tuple[Analysis, list[str], list[Rule], Rule | None]:
            analysis = analyze(command, os.path.expanduser("~"), str(self.home), cwd=cwd, env=env,
                               instructions=self.instructions)
            flags, lifted_by = lift_flags(analysis.flags, self.rules)
            allowed = next((r for r in self.rules if r.matches(command) and (r.kind == "exact" or not flags)), None)
            return analysis, flags, lifted_by, allowed

        return await asyncio.to_thread(read)

    # -- file writes ----------------------------------------------------------------------

    @refused_unlogged
    async def check_file(
        self, tool: str, files: list[FileChange], diff: str, reasons: list[str], *, cwd: str, session: str,
        kernel: str | None, exec_id: str | None, origin: Origin = "user", call_id: str | None = None,
        where: str | None = None,
    ) -> str | None:
        """Ask to let ``tool`` write ``files`` (the change shown as ``diff``); None if it may.

        Asked for files that hold keys, rules or start-up code, and for the direct write_file /
        patch calls of injected and automation turns; also for reads of a credentials file
        (``read_file``, ``search_files``: no hash, ``diff`` says nothing is written). "session"
        allows the same tool on the same files *with the same content* (each file's
        :attr:`FileChange.sha256`) for the rest of the session: a script that was allowed to
        write one text to ~/.bashrc is asked again before it writes another. There is no
        "always" for a file request. In ``off`` mode nothing asks.
        """
        text = f"{tool} {' '.join(f.path for f in files)}"
        key = session_key(text, files)
        base: dict[str, Any] = dict(kind="file", session=session, origin=origin, text=text)
        if any(f.sha256 for f in files):
            base["sha256"] = [f.sha256 for f in files]
        protected = [r for r in reasons if is_instruction_reason(r)]
        if protected:  # asked in every mode, each time: no session answer covers it
            key = INSTRUCTION_PREFIX + key
            if self._take_once(session, key):
                await self.audit.write(event="auto", decision="allow", why="approved after a restart", **base)
                self._allow_files(files)
                return None
        elif self.yolo:
            await self.audit.write(event="auto", decision="allow", why="approvals.mode is off", **base)
            return None
        elif key in self._session_allowed.get(session, set()) or self._take_once(session, key):
            await self.audit.write(event="auto", decision="allow", why="allowed for this session", **base)
            return None
        request = self._request("file", text, cwd, session, kernel, exec_id, origin, reasons,
                                ["once", "deny"] if protected else ["once", "session", "deny"], call_id)
        request.files, request.diff, request.session_rule, request.where = files, diff, key, where
        request.protected = bool(protected)
        refusal = await self._ask(request, key)
        if refusal is None and protected:
            self._allow_files(files)
        return refusal

    def _allow_files(self, files: list[FileChange]) -> None:
        """A person allowed these writes: each file may hold what the write leaves in it."""
        for change in files:
            self.guard.allow(change.path, change.sha256 or ABSENT)

    def _request(
        self, kind: RequestKind, text: str, cwd: str, session: str, kernel: str | None,
        exec_id: str | None, origin: Origin, reasons: list[str], choices: list[Choice], call_id: str | None,
    ) -> ApprovalRequest:
        return ApprovalRequest(
            kind=kind, text=text, cwd=cwd, session=session, kernel=kernel, exec_id=exec_id, call_id=call_id,
            origin=origin, reasons=reasons, choices=choices, deadline=time.time() + self.timeout,
        )

    async def _ask(self, request: ApprovalRequest, allow_key: str | None = None) -> str | None:
        key = allow_key or request.text
        run = run_of(request)
        refusal: str | None
        await self.audit.write(event="request", id=request.id, kind=request.kind, session=request.session,
                               origin=request.origin, call_id=request.call_id, reasons=request.reasons, cwd=request.cwd,
                               text=request.text, **({"where": request.where} if request.where else {}))
        if run is not None and run in self._denied_runs:  # "deny all of this script": nobody is asked again
            refusal = self._denied_runs[run]
            await self.audit.write(event="decision", id=request.id, decision="deny", why=refusal, scope="run")
            return refusal
        if self.approver is None:
            refusal = "no one to approve this (no approver / no terminal to ask on); it was not run"
            await self.audit.write(event="decision", id=request.id, decision="deny", why=refusal)
            return refusal
        decision: ApprovalDecision | None
        try:
            decision = await self._answer(request, run)
        except TimeoutError:
            decision, refusal = None, f"no answer within {self.timeout:g}s (approvals.timeout); denied"
        except ApprovalPaused as exc:  # not answered now: pending, asked again on resume
            await self.audit.write(event="decision", id=request.id, decision="paused", why=str(exc))
            return str(exc)
        except Exception as exc:  # a broken approver denies; it never runs the command
            decision, refusal = None, f"the approver failed ({exc}); denied"
        else:
            refusal = None
            if decision is None:  # another request of its run was answered "deny all of this script"
                assert run is not None
                refusal = self._denied_runs.get(run, "denied with every request of this script")
                await self.audit.write(event="decision", id=request.id, decision="deny", why=refusal, scope="run")
                return refusal
            if decision.choice not in request.choices:
                refusal = f"the answer {decision.choice!r} was not offered; denied"
            elif decision.choice == "deny":
                refusal = f"denied by {decision.by or 'the user'}" + (f": {decision.reason}" if decision.reason else "")
                if decision.whole_run and run is not None:
                    refusal = self._deny_run(run, decision)
        allowed = refusal is None and decision is not None
        choice = decision.choice if allowed and decision is not None else "deny"
        stored = str(allowlist_path(self.home)) if allowed and choice == "always" else None
        # Logged before it takes effect: if the line cannot be written, AuditError refuses the
        # call and nothing (no session answer, no rule) is remembered.
        await self.audit.write(event="decision", id=request.id, decision=choice,
                               why=refusal or (decision.reason if decision else None), stored_in=stored,
                               **({"scope": "run"} if run is not None and run in self._denied_runs else {}))
        if allowed and choice in ("session", "always"):
            self._session_allowed.setdefault(request.session, set()).add(key)
        if allowed and choice == "always":
            try:
                rule = await asyncio.to_thread(add_rule, allowlist_path(self.home), key)
            except RulesNotSaved as exc:  # allowed now and for the session; not for good
                log.warning("the \"always\" rule was not saved: %s", exc)
                await self.audit.write(event="rule_not_saved", id=request.id, why=str(exc))
                return refusal
            self.rules = [r for r in self.rules if not (r.kind == "exact" and r.pattern == key)] + [rule]
        return refusal

    async def _answer(self, request: ApprovalRequest, run: str | None) -> ApprovalDecision | None:
        """The approver's answer to ``request``; None when the user denied its whole script run
        meanwhile (the question is withdrawn then). Raises ``TimeoutError`` after
        ``approvals.timeout`` seconds (the question is withdrawn too)."""
        assert self.approver is not None
        asking = asyncio.ensure_future(self.approver(request))
        waiting = self._asking_runs.setdefault(run, set()) if run is not None else None
        if waiting is not None:
            waiting.add(asking)
        try:
            done, _ = await asyncio.wait({asking}, timeout=self.timeout)
            if not done:
                asking.cancel()
                await asyncio.wait({asking})  # let it withdraw its dialog and record that
                raise TimeoutError
        except asyncio.CancelledError:  # the call itself was stopped (its turn ended)
            asking.cancel()
            raise
        finally:
            if waiting is not None:
                waiting.discard(asking)
                if not waiting:
                    self._asking_runs.pop(run, None)  # type: ignore[arg-type]
        if asking.cancelled():
            if run is not None and run in self._denied_runs:
                return None
            raise RuntimeError("the question was withdrawn")
        return asking.result()

    def _deny_run(self, run: str, decision: ApprovalDecision) -> str:
        """Deny every request of script run ``run``: the questions of it still waiting are
        withdrawn, and the run's later requests are refused without asking. Returns the
        refusal of the request that was answered so."""
        who = decision.by or "the user"
        because = f": {decision.reason}" if decision.reason else ""
        self._denied_runs[run] = (f"denied by {who} with every request of this script (run {run}){because}; "
                                  "its requests are refused without asking until the run ends")
        while len(self._denied_runs) > DENIED_RUNS_KEPT:
            del self._denied_runs[next(iter(self._denied_runs))]
        for asking in list(self._asking_runs.get(run, ())):
            asking.cancel()
        return (f"denied by {who}, with every other request of this script (run {run}){because}; its later "
                "requests are refused without asking until the run ends")


def run_of(request: ApprovalRequest) -> str | None:
    """The script run a "deny all of this script" answer to ``request`` covers (its exec id);
    None for a request of no script (the model's own ``terminal`` call, a ``!cmd``) and for the
    question whether to run a whole script at all."""
    return request.exec_id if request.exec_id and request.kind != "script" else None
