"""``hermes-tui doctor [--verbose] [--json] [--offline]``: what hermes-tui makes of this machine.

First what it makes of the config: which file was read, each start-up notice about it, which
model the input goes to (and where its key comes from — never the key), the approvals mode, the
terminal backend, the sandbox, the limits, and with ``--verbose`` the Hermes Agent keys
hermes-tui does not use. Then the checks of :mod:`hermes_tui.cli.doctor.checks`, one line each,
``✓`` / ``!`` / ``✗`` with the fix: the config, the model and its key, the endpoint
(``--offline`` skips it), ``$HERMES_HOME``, free space, ``sessions.db``, the cache, the sandbox
in force, a kernel, the project interpreter, ripgrep, checkpoints, the allowlist and the audit log, the
socket paths (docs/doctor.md).

Exit 0: nothing failed (``!`` lines are not failures). 1: a check failed, or the model cannot
be used (a ``ProviderError``), or ``terminal.backend`` refuses every command, or no sandbox can
be applied. 2: the config cannot be read (``main`` says so in one line, as for every command,
before doctor runs).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from collections.abc import Callable
from typing import Any

from hermes_tui.cli.errors import EXIT_FAILED, EXIT_OK
from hermes_tui.base.text import shown
from hermes_tui.config import Config
from hermes_tui.config.notes import backend_refusal
from hermes_tui.cli.doctor.checks import Check, run_checks
from hermes_tui.config.hermes_keys import TURN_LIMIT_UNLIMITED
from hermes_tui.base.paths import config_path, hermes_home
from hermes_tui.runtime.danger.hermes_names import unmapped_allowlist_entries
from hermes_tui.base.units import plural

MODES = {
    "manual": "flagged commands ask, the others run",
    "smart": "an approval judge (auxiliary.approval) answers for flagged commands; what it escalates asks you, the "
             "others run",
    "strict": "every terminal() command of a script or the model asks unless a rule allows it (a !cmd you type "
              "asks only when flagged)",
    "off": "nothing asks (YOLO); hard-blocked commands are still refused",
}


SYMBOLS = {"ok": "✓", "warn": "!", "fail": "✗"}
UNATTENDED = {"pause": "it pauses (answer with hermes-tui approve)", "deny": "denied",
              "approve-safe": "what stays in the sandbox is approved, the rest denied"}


def _judge(config: Config, home: Any, main: Any, problems: list[str]) -> dict[str, Any] | None:
    """The approval judge of ``smart`` mode, as doctor shows it (a problem when it cannot be used)."""
    if config.approvals.mode != "smart":
        return None
    from hermes_tui.agent.judge import judge_settings
    from hermes_tui.agent.models.keys import ProviderError

    try:
        judge = judge_settings(config, home, main)
    except ProviderError as exc:
        problems.append(f"approval judge: {exc}; flagged commands ask you, as in manual")
        return None
    return {"provider": judge.name, "model": judge.model, "base_url": judge.shown_url, "timeout": judge.timeout,
            "key_source": judge.key_source, "why": judge.why, "withheld": list(judge.withheld)}


def doctor_command(args: argparse.Namespace, config: Config, config_error: str | None = None) -> int:
    """Print the report; 0 without problems, 1 with (``config_error``: config.yaml could not be
    read; it is the config check's ✗ and the rest is checked with the defaults)."""
    report = build_report(config, flags={"provider": args.provider, "model": args.model, "base_url": args.base_url},
                          offline=bool(getattr(args, "offline", False)), config_error=config_error)
    if args.json:
        print(json.dumps(report, indent=2))  # ensure_ascii: every control or hidden character escaped
    else:
        _print(report, verbose=args.verbose)
    return EXIT_FAILED if report["problems"] else EXIT_OK


def build_report(config: Config, flags: dict[str, str | None] | None = None, *, offline: bool = False,
                 checks: bool = True, config_error: str | None = None) -> dict[str, Any]:
    """Everything ``doctor`` says, as plain data (what ``--json`` prints); ``checks=False``
    leaves the checks out (the config's part alone)."""
    from hermes_tui.agent.models.providers import ProviderError, resolve_provider

    home = hermes_home()
    problems: list[str] = []
    model: dict[str, Any] | None = None
    try:
        settings = resolve_provider(config, home, os.environ, **{k: v for k, v in (flags or {}).items() if v})
    except ProviderError as exc:
        settings = None
        problems.append(f"model: {exc}")
    except Exception as exc:  # a diagnosis must finish: anything else is a problem found, in one line
        settings = None
        problems.append(f"model: could not be resolved: {type(exc).__name__}: {exc}")
    if settings is not None:
        model = {
            "provider": settings.name,
            "model": settings.model,
            "base_url": settings.shown_url,
            "key_source": settings.key_source,  # where the key comes from, never the key
            "missing_key": bool(getattr(settings, "missing_key", False)),
            "why": settings.why,
            "context_length": settings.context_length,
            "streaming": settings.streaming,
            "fallbacks": [{"provider": f.name, "model": f.model, "base_url": f.shown_url, "key_source": f.key_source}
                          for f in settings.fallbacks],
            "fallback_problems": list(settings.fallback_problems),
            "withheld": list(settings.withheld),
        }
    judge = _judge(config, home, settings, problems)
    model_error = problems[0][len("model: "):] if problems and problems[0].startswith("model: ") else None
    refusal = backend_refusal(config.terminal)
    if refusal:
        problems.append(refusal)
    found: list[Check] = []
    run = config.code_execution
    sandbox: dict[str, Any] = {"mode": run.sandbox, "network": run.network, "writable_roots": list(run.writable_roots),
                               "deny_read": list(run.deny_read), "tier": None, "label": None, "detail": None,
                               "error": None}  # the tier: probed by the checks
    if checks:
        found = asyncio.run(run_checks(config, home, settings=settings, model_error=model_error, offline=offline,
                                       refusal=refusal, config_error=config_error, sandbox=sandbox))
    for check in found:
        # Said once: the model's resolution error, the refused backend and a sandbox that cannot
        # be applied (no kernel can start then) are problems already.
        covered = (check.name == "model" and model_error is not None) or \
            (check.name == "kernel" and (refusal or sandbox["error"]))
        if check.status == "fail" and not covered:
            problems.append(f"{check.name}: {check.detail}")
    return {
        "config": str(config.source) if config.source else None,
        "config_looked_for": str(config_path(home)),
        "config_error": config_error,
        "notices": list(config.notices),
        "model": model,
        "approvals": {"mode": config.approvals.mode, "timeout": config.approvals.timeout,
                      "command_allowlist": len(config.command_allowlist), "deny": list(config.approvals.deny),
                      "judge": judge, "unattended": config.approvals.unattended,
                      "instruction_files": list(config.security.instruction_patterns),
                      "unmapped": [{"entry": entry, "why": why}
                                   for entry, why in unmapped_allowlist_entries(config.command_allowlist)]},
        "terminal": {"backend": config.terminal.backend, "refused": refusal, "timeout": config.terminal.timeout,
                     "where": _where(config), "cwd": shown(config.terminal.cwd)},
        "sandbox": sandbox,
        "limits": {"script_timeout": run.timeout, "max_tool_calls": run.max_tool_calls,
                   "max_session_kernels": run.max_session_kernels, "kernel_idle_timeout": run.kernel_idle_timeout,
                   "max_steps": config.agent.max_steps if config.agent.max_steps < TURN_LIMIT_UNLIMITED else None},
        "ignored": list(config.ignored_keys),
        "checks": [check.as_dict() for check in found],
        "problems": problems,
    }


def _print(report: dict[str, Any], *, verbose: bool) -> None:
    def line(label: str, text: object) -> None:
        print(f"{label:<10} {shown(text)}")

    if report.get("config_error"):
        line("config", f"{report['config_looked_for']} cannot be read (see ✗ config below); the defaults are shown")
    else:
        line("config", report["config"] or f"none: defaults ({report['config_looked_for']} does not exist)")
    for notice in report["notices"]:
        if notice != report["terminal"]["refused"]:  # that one is a problem, said below
            line("notice", notice)
    model = report["model"]
    if model is not None:
        at = f" at {model['base_url']}" if model["base_url"] else ""
        line("model", f"{model['provider']} · {model['model']}{at}")
        line("", f"key: {model['key_source']}")
        if model["why"]:
            line("", f"why: {model['why']}")
        if model["missing_key"]:
            line("warning", f"no API key for {model['provider']}: requests go without one; the server will likely "
                            "refuse them until the setting above is added")
        for fallback in model["fallbacks"]:
            line("fallback", f"{fallback['provider']} · {fallback['model']} at {fallback['base_url']}; "
                             f"key: {fallback['key_source']}")
        for problem in [*model["withheld"], *model["fallback_problems"]]:
            line("warning", problem)
    elif any(p.startswith("model:") for p in report["problems"]):
        line("model", "not usable (the problem is below): typed input runs as Python")
    else:
        line("model", "no model: typed input runs as Python")
    approvals = report["approvals"]
    line("approvals", f"{approvals['mode']}: {MODES.get(approvals['mode'], '')}; an approval waits "
                      f"{approvals['timeout']:g}s; {plural(approvals['command_allowlist'], 'command_allowlist rule')}")
    judge = approvals.get("judge")
    if judge is not None:
        line("judge", f"{judge['provider']} · {judge['model']} at {judge['base_url']}, {judge['timeout']:g}s; "
                      f"key: {judge['key_source']}")
        for problem in judge["withheld"]:
            line("warning", problem)
    line("", f"a headless run nobody can answer: {UNATTENDED.get(approvals['unattended'], approvals['unattended'])} "
             "(approvals.unattended)")
    files = approvals["instruction_files"]
    line("", f"writes to {', '.join(files[:6])}{' …' if len(files) > 6 else ''} always ask, in every mode"
         if files else "writes to agent instruction files (AGENTS.md …) are not guarded "
                       "(security.protected_instruction_files: false)")
    for pattern in approvals["deny"]:
        line("", f"approvals.deny refuses {pattern!r} in every mode")
    for unmapped in approvals["unmapped"]:
        line("warning", f"command_allowlist {unmapped['entry']!r} is a Hermes Agent pattern name with no equivalent "
                        f"here; it allows nothing ({unmapped['why']})")
    terminal = report["terminal"]
    if terminal["refused"]:
        line("terminal", f"{terminal['backend']}: REFUSED — no command or script runs")
    elif terminal["backend"] == "docker":
        line("terminal", f"docker: kernels and commands run in a container of {terminal['where']} per session "
                         f"(cwd {terminal['cwd']} there), {terminal['timeout']:g}s each")
    elif terminal["backend"] == "ssh":
        line("terminal", f"ssh: kernels and commands run on {terminal['where']} (cwd {terminal['cwd']} there), "
                         f"{terminal['timeout']:g}s each")
    else:
        line("terminal", f"local: commands run on this machine, {terminal['timeout']:g}s each")
    _print_sandbox(line, report["sandbox"])
    limits = report["limits"]
    steps = limits["max_steps"]
    line("limits", f"scripts {limits['script_timeout']:g}s, {plural(limits['max_tool_calls'], 'tool call')} each; "
                   f"at most {plural(limits['max_session_kernels'], 'kernel')}, reaped after "
                   f"{limits['kernel_idle_timeout']:g}s idle; "
                   + (f"{plural(steps, 'model call')} per turn" if steps is not None else "no limit on model calls per turn"))
    ignored = report["ignored"]
    if verbose:
        line("ignored", f"{plural(len(ignored), 'Hermes Agent key')} hermes-tui does not use" + (":" if ignored else ""))
        for key in ignored:
            line("", f"  {key}")
    elif ignored:
        line("ignored", f"{plural(len(ignored), 'Hermes Agent key')} hermes-tui does not use (--verbose lists them)")
    for check in report["checks"]:
        fix = f"; fix: {check['fix']}" if check["fix"] and check["status"] != "ok" else ""
        print(f"{SYMBOLS.get(check['status'], '?')} {check['name']:<10} {shown(check['detail'] + fix)}")
    named = {f"{c['name']}: {c['detail']}" for c in report["checks"]}
    for problem in report["problems"]:
        if problem not in named:  # a failed check's line above says it
            line("problem", problem)
    count = len(report["problems"])
    print("No problems found." if not count else f"{plural(count, 'problem')} found.")


SANDBOX_WRITES = {
    "workspace-write": "scripts and the commands they run write only the working dir and their temp dir",
    "read-only": "scripts and the commands they run write only their temp dir",
    "off": "off: scripts and the commands they run are not confined (they run as you)",
}


def _print_sandbox(line: Callable[[str, object], None], sandbox: dict[str, Any]) -> None:
    """The configured sandbox (``code_execution.sandbox``, ``network``, ``writable_roots``,
    ``deny_read``); the tier in force is the ``sandbox`` check's line."""
    mode = sandbox["mode"]
    said = [f"{mode}: {SANDBOX_WRITES.get(mode, '')}" if mode != "off" else SANDBOX_WRITES["off"]]
    if mode != "off":
        if mode == "workspace-write" and sandbox["writable_roots"]:
            said[0] += ", and writable_roots: " + ", ".join(sandbox["writable_roots"])
        said.append("network allowed (TCP/UDP)" if sandbox["network"] else "no network")
        said.append("a !cmd typed in the app is not confined (as in your shell)")
        if sandbox["deny_read"]:
            said.append("deny_read: " + ", ".join(sandbox["deny_read"]))
    line("sandbox", "; ".join(said))


def _where(config: Any) -> str:
    """The image (docker) or ``user@host:port`` (ssh) kernels run on; ``this machine``."""
    terminal = config.terminal
    if terminal.backend == "docker":
        return shown(terminal.docker_image)
    if terminal.backend == "ssh":
        return shown(f"{terminal.ssh_user + '@' if terminal.ssh_user else ''}{terminal.ssh_host}:{terminal.ssh_port}")
    return "this machine"
