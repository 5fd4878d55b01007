"""``hermes-tui run | resume | inspect | approve | deny``: headless turns that pause for a person.

``run`` starts one agent turn with nobody at the keyboard (origin ``automation``); when a
request needs a person and none is at a terminal, it stores the request, says how to review
it, and exits 3. ``inspect`` shows a session and what waits; ``approve`` / ``deny`` answer
from any shell (or the open dialog of a running app); ``resume`` goes on. The runner is
:mod:`hermes_tui.cli.headless`; docs/headless.md has the workflow and the exit codes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from typing import TYPE_CHECKING, Any, cast

from hermes_tui.cli.errors import EXIT_OK, UsageError
from hermes_tui.base.text import shown

if TYPE_CHECKING:
    from hermes_tui.config import Config

CHOICES = ("once", "session", "always")


def add_parsers(commands: Any, seconds: Any, dollars: Any) -> None:
    """The five commands' arguments (``seconds`` and ``dollars`` are the CLI's number types)."""
    run = commands.add_parser(
        "run", help="one agent turn, headless: pauses (exit 3) where a person must approve",
        description="Send TEXT to the model as an automation turn (every script is approved as a whole first, then "
                    "its terminal() calls). On a terminal, requests are asked there; otherwise (or with --pause-on "
                    "approval) the run stores them and exits 3: review with `hermes-tui inspect ID --pending`, "
                    "answer with `hermes-tui approve` / `deny`, go on with `hermes-tui resume ID`. Exit codes: 0 "
                    "finished, 1 failed, 2 usage or config, 3 paused, 4 budget reached.")
    run.add_argument("text", nargs="*", metavar="TEXT", help="the message (- reads standard input)")
    run.add_argument("--task-file", metavar="FILE", help="read the message from FILE")
    _common(run, dollars)
    resume = commands.add_parser(
        "resume", help="go on with a paused run (approved calls run, denied ones are blocked)",
        description="Continue the session's paused turn: each pending request is answered as `hermes-tui approve` "
                    "/ `deny` said (one left pending is denied), its call runs again from its start, and the model "
                    "goes on. It may pause again (exit 3). A run that died mid-turn goes on from its last stored step.")
    resume.add_argument("session", metavar="ID", help="the session (id, unique prefix, or latest)")
    _common(resume, dollars, session=False)
    inspect = commands.add_parser("inspect", help="a session: turns, status, cost, and what waits for approval")
    inspect.add_argument("session", metavar="ID", help="the session (id, unique prefix, or latest)")
    inspect.add_argument("--pending", action="store_true", help="only the requests waiting for an answer")
    inspect.add_argument("--json", action="store_true", help="as one JSON object")
    approve = commands.add_parser("approve", help="approve requests a paused run (or a running app) waits on")
    approve.add_argument("session", metavar="ID", help="the session (id, unique prefix, or latest)")
    approve.add_argument("ids", nargs="*", metavar="REQUEST_ID", help="the requests (see inspect --pending)")
    approve.add_argument("--all", action="store_true", help="every pending request")
    approve.add_argument("--except", dest="excepted", action="append", default=[], metavar="TEXT",
                         help="leave requests whose text contains TEXT pending (denied on resume unless answered)")
    approve.add_argument("--as", dest="choice", choices=CHOICES, default="once",
                         help="once (default), session, or always (stores a rule in allowlist.yaml)")
    deny = commands.add_parser("deny", help="refuse requests a paused run (or a running app) waits on")
    deny.add_argument("session", metavar="ID", help="the session (id, unique prefix, or latest)")
    deny.add_argument("ids", nargs="*", metavar="REQUEST_ID", help="the requests (see inspect --pending)")
    deny.add_argument("--all", action="store_true", help="every pending request")
    deny.add_argument("--reason", metavar="TEXT", help="told to the script or the model with the refusal")


def _common(parser: argparse.ArgumentParser, dollars: Any, session: bool = True) -> None:
    if session:
        parser.add_argument("--session", dest="run_session", metavar="ID",
                            help="the session to add the turn to (created if new; default: a new one)")
    parser.add_argument("--pause-on", choices=("approval", "never"), default=None,
                        help="approval: pause at every request even on a terminal; never: never pause (asked on a "
                             "terminal, else refused)")
    parser.add_argument("--max-cost", dest="run_max_cost", type=dollars, metavar="USD",
                        help="the session's hard cost ceiling (exit 4 when reached)")
    parser.add_argument("--json", action="store_true", help="one JSON event per line")
    parser.add_argument("--config", dest="sub_config", metavar="PATH", help=argparse.SUPPRESS)


# -- run and resume ------------------------------------------------------------------------


def run_command(args: argparse.Namespace, config: Config) -> int:
    """``hermes-tui run``."""
    from hermes_tui.storage.sessions import SESSION_ID, SESSION_ID_RULE, new_session_id

    text = _message(args)
    session = args.run_session or new_session_id()
    if not SESSION_ID.fullmatch(session):
        raise UsageError(f"--session {session!r} is not allowed: {SESSION_ID_RULE}")
    return _drive(args, config, session, text)


def resume_command(args: argparse.Namespace, config: Config) -> int:
    """``hermes-tui resume``."""
    from hermes_tui.cli.sessions_cmd import resolve_session
    from hermes_tui.runtime.models import is_subagent_session, parent_session

    session = resolve_session(args.session)
    if is_subagent_session(session):
        raise UsageError(f"{session} is a sub-agent's session: it goes on only with its parent (hermes-tui resume "
                         f"{parent_session(session)})")
    return _drive(args, config, session, None)


def _message(args: argparse.Namespace) -> str:
    if args.task_file and args.text:
        raise UsageError("run: give the message as TEXT or --task-file, not both")
    if args.task_file:
        try:
            with open(args.task_file, encoding="utf-8") as handle:
                text = handle.read(1 << 20)
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"--task-file {args.task_file}: {getattr(exc, 'strerror', None) or exc}") from None
    elif args.text == ["-"]:
        text = sys.stdin.read(1 << 20)
    else:
        text = " ".join(args.text)
    if not text.strip():
        raise UsageError("run: nothing to send: give TEXT, --task-file FILE, or - to read standard input")
    return text


def _drive(args: argparse.Namespace, config: Config, session: str, text: str | None) -> int:
    from hermes_tui.cli.headless import HeadlessRun, Printer, RunApprover
    from hermes_tui.agent.workspace import SessionBusy
    from hermes_tui.storage.errors import StoreError
    from hermes_tui.agent.models.providers import ProviderError, resolve_provider
    from hermes_tui.cli.exec_cmd import _check_home
    from hermes_tui.cli.tty_approver import tty_approver
    from hermes_tui.config.notes import backend_refusal
    from hermes_tui.agent.inject import app_holds
    from hermes_tui.base.paths import hermes_home

    refusal = backend_refusal(config.terminal)
    if refusal:
        raise UsageError(refusal)
    home = hermes_home()
    if app_holds(session, home):
        raise UsageError(f"session {session} is open in a running hermes-tui: answer its requests there (or with "
                         f"`hermes-tui approve {session}`), or close the app first")
    try:
        settings = resolve_provider(config, home)
    except ProviderError as exc:
        raise UsageError(f"model: {exc}") from None
    if settings is None:
        raise UsageError("run needs a model: set model.provider and model.default in config.yaml "
                         "(`hermes-tui doctor` checks it)")
    _check_home()
    lock = _hold_session(home, session)  # one run or resume of a session at a time
    interactive = sys.stdin.isatty() and args.pause_on != "approval"
    approver = RunApprover(ask=tty_approver() if interactive else None, pause=args.pause_on != "never",
                           unattended=config.approvals.unattended if args.pause_on is None else "pause")
    printer = Printer(args.json)
    run = HeadlessRun(config, home=home, cwd=os.getcwd(), settings=settings, session=session, printer=printer,
                      approver=approver, max_cost=args.run_max_cost,
                      program="hermes-tui run" if text is not None else "hermes-tui resume")
    from hermes_tui.runtime.import_guard import arm

    arm(home=home)  # the host's imports close once its runtime has started (runtime/import_guard.py)
    try:
        outcome = asyncio.run(run.start(text) if text is not None else run.resume())
    except SessionBusy as exc:  # another machine drives it (the shared store's lease)
        raise UsageError(str(exc)) from None
    except StoreError as exc:  # the store cannot be opened: nothing would be kept, nothing runs
        raise UsageError(f"{exc}; nothing was run") from None
    finally:
        lock.close()
    return _report(outcome, printer, run.summary(), resumed=text is None)


def _hold_session(home: Any, session: str) -> Any:
    """An exclusive lock on ``session`` for this process (``tui/locks/ID.lock``, flock): a second
    ``run`` or ``resume`` of it is refused with one line, so an approval is never used twice."""
    import fcntl

    from hermes_tui.base.paths import tui_dir

    folder = tui_dir(home) / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    handle = open(folder / f"{session}.lock", "a+")  # noqa: SIM115 - held until the run ends
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise UsageError(f"session {session} is being run by another hermes-tui run or resume; wait for it to "
                         "end") from None
    return handle


def _report(outcome: Any, printer: Any, summary: str, resumed: bool) -> int:
    from hermes_tui.cli.headless import EXIT_PAUSED

    if printer.as_json:
        fields: dict[str, Any] = {"status": outcome.status, "exit_code": outcome.exit_code, "session": outcome.session,
                                  "turn": outcome.turn}
        if resumed:
            fields.update(resumed=True, resumes=outcome.resumes)
        if outcome.exit_code == EXIT_PAUSED:
            fields["pending"] = [r.id for r in outcome.paused_on]
        printer.emit("end", **fields)
        return outcome.exit_code
    if outcome.exit_code == EXIT_PAUSED:
        printer.line(f"paused for approval. session={outcome.session}")
        printer.line(f"review: hermes-tui inspect {outcome.session} --pending")
    elif outcome.status == "budget":
        printer.line(f"budget reached. session={outcome.session} (raise it with --max-cost, then hermes-tui resume)")
    else:
        printer.line(f"[{outcome.status}] session={outcome.session}" + (f" · {summary}" if summary else ""))
    return outcome.exit_code


# -- inspect -------------------------------------------------------------------------------


def inspect_command(args: argparse.Namespace) -> int:
    """``hermes-tui inspect``."""
    from hermes_tui.storage import sessions as db
    from hermes_tui.cli.sessions_cmd import _database, _find

    with _database() as conn:
        session = _find(conn, args.session)
        stored = db.load_session(conn, session)
        pending = db.pending_requests(conn, session)
    assert stored is not None
    report = _inspection(stored, pending)
    if args.json:
        print(json.dumps({k: v for k, v in report.items() if not args.pending or k in ("session", "pending")},
                         ensure_ascii=True, indent=2))
        return EXIT_OK
    if not args.pending:
        info = report
        print(f"session {shown(info['session'])} · {len(info['turns'])} turn(s) · {info['tokens']} tokens · "
              f"cost {info['cost']}")
        held = _held(info["session"])
        for index, turn in enumerate(info["turns"], 1):
            resumed = f" · resumed {turn['resumes']}x" if turn["resumes"] else ""
            status = turn["status"]
            if status == "running" and not held:  # nobody drives it: the process that did stopped
                status = "stopped mid-turn: resume it"
            print(f"  {index}. [{status}{resumed}] {shown(turn['text'][:100])}")
    if not report["pending"]:
        print(f"nothing waits for approval in session {shown(report['session'])}")
        return EXIT_OK
    print(f"{len(report['pending'])} request(s) wait for approval:")
    for item in report["pending"]:
        print(f"\n[{item['id']}] {item['kind']} · origin {item['origin']} · cwd {shown(item['cwd'])}")
        for line in shown(item["text"], one_line=False).splitlines() or [""]:
            print(f"    {line}")
        for reason in item["reasons"]:
            print(f"  why: {shown(reason)}")
        print(f"  answers: {', '.join(item['choices'])}; always would store: {shown(item['always_would_store'])}")
        if item.get("on_resume") and not (item["answer"] and item["answer"]["decision"] == "deny"):
            print(f"  on resume: {item['on_resume']}")
        if item["answer"]:
            answer = item["answer"]
            print(f"  answered: {answer['decision']} by {shown(answer['who'])}"
                  + (f" ({shown(answer['reason'])})" if answer.get("reason") else ""))
    session = report["session"]
    from hermes_tui.agent.inject import app_holds

    then = "the running app goes on by itself (it has this session open)" if app_holds(session) else \
        _driven_then(session)
    print(f"\nanswer: hermes-tui approve {session} --all   (or REQUEST_ID ..., --except TEXT, --as session|always)"
          f"\n        hermes-tui deny {session} REQUEST_ID --reason TEXT\nthen:   {then}")
    return EXIT_OK


def _driven_then(session: str) -> str:
    """What happens after an answer given from this shell: the app that drives the session on
    another machine takes it at once; else a resume."""
    from hermes_tui.cli.sessions_cmd import driver_of

    holder = driver_of(session)
    if holder is None:
        return f"hermes-tui resume {session}"
    if holder.program == "hermes-tui app":
        return f"the app that drives it ({shown(holder.describe())}) takes the answers at once"
    return f"{shown(holder.describe())} drives it now: hermes-tui resume {session} once it has paused"


def _held(session: str) -> bool:
    """True when a run, a resume or the app drives ``session`` now (on any machine sharing the store)."""
    import fcntl

    from hermes_tui.cli.sessions_cmd import driver_of
    from hermes_tui.agent.inject import app_holds
    from hermes_tui.base.paths import hermes_home, tui_dir

    if app_holds(session) or driver_of(session) is not None:
        return True
    path = tui_dir(hermes_home()) / "locks" / f"{session}.lock"
    try:
        with open(path) as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return False


def _inspection(stored: Any, pending: list[dict[str, Any]]) -> dict[str, Any]:
    from hermes_tui.agent.usage import tokens
    from hermes_tui.cli.sessions_cmd import session_cost
    from hermes_tui.runtime.approvals import allowlist_path
    from hermes_tui.base.paths import hermes_home

    from hermes_tui.storage.sessions import store_url

    info = stored.info
    shared = store_url().shared  # another machine may be the one that runs it
    items = []
    for row in pending:
        request = row["request"]
        kind = row["kind"]
        where = "the allowlist.yaml of the machine that runs it (HERMES_HOME/tui/allowlist.yaml there)" \
            if shared else allowlist_path(hermes_home())
        always = "nothing (not offered)" if "always" not in request.get("choices", []) else \
            f"{request.get('always_rule') or request['text']!r} in {where}"
        on_resume = None
        if kind in ("terminal", "sandbox") and request.get("exec_id"):
            how = "runs as answered" if kind == "terminal" else \
                "runs in the sandbox again, then outside it if you approved"
            on_resume = (f"the script that ran this command runs again from its start, and this command {how} "
                         "(the script's earlier steps run again too)")
        elif kind == "sandbox":
            on_resume = "the command runs in the sandbox again, then outside it if you approved"
        elif kind == "script":
            on_resume = "the script runs (it has not run yet)"
        items.append({"id": row["id"], "kind": kind, "text": row["text"], "cwd": request.get("cwd", ""),
                      "origin": request.get("origin"), "reasons": request.get("reasons", []),
                      "choices": request.get("choices", []), "always_would_store": always, "on_resume": on_resume,
                      "tool_call_id": row["tool_call_id"], "asked_at": row["created_at"],
                      "answer": {k: row["answer"][k] for k in ("decision", "reason", "who", "answered_at")}
                      if row["answer"] else None})
    return {
        "session": info.id, "title": info.title, "model": info.model, "provider": info.provider,
        "turns": [{"id": t["id"], "status": t["status"], "origin": t["origin"], "text": t["text"],
                   "resumes": t.get("resumes") or 0, "started_at": t["started_at"], "ended_at": t["ended_at"]}
                  for t in stored.turns],
        "tokens_in": info.tokens_in, "tokens_out": info.tokens_out, "cost_usd": info.cost_usd,
        "tokens": tokens(info.tokens_in + info.tokens_out), "cost": session_cost(info),
        "pending": items,
    }


# -- approve and deny ----------------------------------------------------------------------


def answer_command(args: argparse.Namespace, config: Config) -> int:
    """``hermes-tui approve`` and ``deny``."""
    from hermes_tui.storage import sessions as db
    from hermes_tui.cli.sessions_cmd import _database, _find
    from hermes_tui.agent.inject import InjectError, app_holds, ask_app
    from hermes_tui.base.paths import hermes_home

    approving = args.command == "approve"
    if not args.ids and not args.all:
        raise UsageError(f"{args.command}: name the requests (REQUEST_ID ..., see `hermes-tui inspect ID --pending`) "
                         "or give --all")
    if args.ids and args.all:
        raise UsageError(f"{args.command}: give REQUEST_IDs or --all, not both")
    choice = args.choice if approving else "deny"
    reason = None if approving else args.reason
    who = _who()
    home = hermes_home()
    with _database() as conn:
        session = _find(conn, args.session)
    if app_holds(session, home):  # the app's dialog answers it, as if the user had
        try:
            # the app's answer is JSON: "requests" is the list of its pending requests
            answer = ask_app(session, {"pending": True, "session": session}, home)
            waiting = cast("list[dict[str, Any]]", answer["requests"])
        except InjectError as exc:
            raise UsageError(str(exc)) from None
        targets = _select(list(waiting), args, approving)
        for request in targets:
            try:
                ask_app(session, {"session": session, "answer": {"id": request["id"], "choice": choice,
                                                                 "reason": reason, "who": who}}, home)
            except InjectError as exc:
                raise UsageError(f"request {request['id']}: {exc}") from None
            print(f"{'approved' if approving else 'denied'} in the running app: [{request['id']}] "
                  f"{shown(request['text'][:80])}")
        return EXIT_OK
    with _database() as conn:
        rows = db.pending_requests(conn, session)
        targets = _select([{**row["request"], "id": row["id"]} for row in rows], args, approving)
        for request in targets:
            if choice not in request.get("choices", []):
                raise UsageError(f"request {request['id']} cannot be answered {choice!r} (it offers "
                                 f"{', '.join(request.get('choices', []))})")
        for request in targets:
            db.answer_offline(conn, session, request["id"], choice, reason, who)
    asyncio.run(_audit(home, session, targets, choice, reason, who))
    for request in targets:
        print(f"{'approved (' + choice + ')' if approving else 'denied'}: [{request['id']}] {shown(request['text'][:80])}")
    print(f"next: {_driven_then(session)}")
    return EXIT_OK


def _select(requests: list[dict[str, Any]], args: argparse.Namespace, approving: bool) -> list[dict[str, Any]]:
    if not requests:
        raise UsageError(f"nothing waits for approval in session {args.session}")
    if args.all:
        chosen = requests
    else:
        known = {r["id"]: r for r in requests}
        missing = [i for i in args.ids if i not in known]
        if missing:
            raise UsageError(f"no pending request {', '.join(missing)} (pending: {', '.join(known)})")
        chosen = [known[i] for i in args.ids]
    if approving and args.excepted:
        chosen = [r for r in chosen if not any(text in r["text"] for text in args.excepted)]
        if not chosen:
            raise UsageError("nothing approved: every chosen request's text contains an --except text")
    return chosen


async def _audit(home: Any, session: str, targets: list[dict[str, Any]], choice: str, reason: str | None,
                 who: str) -> None:
    from hermes_tui.runtime.approvals import AuditLog, audit_path

    log = AuditLog(audit_path(home))
    for request in targets:
        await log.write(event="answer_offline", id=request["id"], session=session, decision=choice, why=reason,
                        who=who, text=request["text"])


def _who() -> str:
    """Who answered: user, host and process, for the audit log."""
    from hermes_tui.storage.opening import local_user

    return f"{local_user()} (pid {os.getpid()}, {time.strftime('%Y-%m-%d %H:%M:%S')})"

