"""Mutation testing: do the tests notice when the code is wrong?

    .venv/bin/python tests/mutation/run.py MODULE.py TEST_FILE... [--mutants 60] [--seed 13]

Makes small AST mutants of MODULE.py (flipped and shifted comparisons, changed constants,
``and``/``or`` swaps, negated conditions, deleted statements, removed ``return x``, ``+``/``-``
swaps), samples ``--mutants`` of them deterministically (``--seed``), and runs the test files
against each with ``pytest -x -q``. A mutant the tests fail on is *killed*; one they pass is a
*survivor*: either a gap in the tests or an *equivalent* mutant (same behaviour), which
``tests/mutation/equivalent.txt`` lists by id with the reason.

The real file is never touched: the source is read once, each mutant is compiled to a code
object in a temp dir, and the pytest subprocess (and every Python it starts with the same
environment: ``python -m hermes_tui`` CLI runs...) loads that code object in place of the
module through a ``sitecustomize`` import hook (``HERMES_TUI_MUTANT``). ``__file__`` stays the
real path. Kernels get a scrubbed environment, so they run the real code — mutate only what
the host runs. Two workers at most; each has its own ``--basetemp`` and Hypothesis database.

See tests/mutation/README.md.
"""

from __future__ import annotations

import argparse
import ast
import copy
import hashlib
import importlib.util
import json
import marshal
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EQUIVALENT_FILE = Path(__file__).with_name("equivalent.txt")
ENV_VAR = "HERMES_TUI_MUTANT"

SITECUSTOMIZE = '''\
"""Installed by tests/mutation/run.py: load one module from a mutated code object."""
import os as _os

_spec_file = _os.environ.get("HERMES_TUI_MUTANT")
if _spec_file:
    def _install(spec_file):
        import importlib.abc, importlib.util, json, marshal, sys
        with open(spec_file, encoding="utf-8") as f:
            spec = json.load(f)
        if importlib.util.MAGIC_NUMBER.hex() != spec["magic"]:
            return  # another Python (a project venv's kernel): leave it alone
        with open(spec["code"], "rb") as f:
            code = marshal.load(f)

        class Loader(importlib.abc.Loader):
            def create_module(self, _spec):
                return None

            def exec_module(self, module):
                exec(code, module.__dict__)

        class Finder:
            @staticmethod
            def find_spec(name, path=None, target=None):
                if name != spec["module"]:
                    return None
                locations = [_os.path.dirname(spec["path"])] if spec["path"].endswith("__init__.py") else None
                return importlib.util.spec_from_file_location(
                    name, spec["path"], loader=Loader(), submodule_search_locations=locations)

        sys.meta_path.insert(0, Finder)

    _install(_spec_file)
'''


PLUGIN = '''\
"""Installed by tests/mutation/run.py: Hypothesis reports a failing example without shrinking
it (shrinking re-runs the test many times; a killed mutant needs only the first failure)."""


def pytest_configure(config):
    try:
        from hypothesis import Phase, settings
    except ImportError:
        return
    settings.register_profile("hermes-mutation", phases=[Phase.explicit, Phase.reuse, Phase.generate])
    settings.load_profile("hermes-mutation")
'''


# -- mutants ----------------------------------------------------------------------------------

COMPARE_SWAPS: dict[type, list[type]] = {
    ast.Lt: [ast.GtE, ast.LtE], ast.LtE: [ast.Gt, ast.Lt], ast.Gt: [ast.LtE, ast.GtE],
    ast.GtE: [ast.Lt, ast.Gt], ast.Eq: [ast.NotEq], ast.NotEq: [ast.Eq], ast.In: [ast.NotIn],
    ast.NotIn: [ast.In], ast.Is: [ast.IsNot], ast.IsNot: [ast.Is],
}
ARITH_SWAPS: dict[type, type] = {ast.Add: ast.Sub, ast.Sub: ast.Add}
DELETABLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.If, ast.For, ast.While,
             ast.Raise, ast.Delete, ast.With, ast.Try, ast.Continue, ast.Break)


@dataclass(slots=True)
class Mutation:
    """One way to change one node: ``apply`` edits a (copied) tree in place."""

    index: int
    """Position of the node in the walk (the same on every parse of the same source)."""
    op: str
    line: int
    before: str
    after: str
    apply: Callable[[ast.AST], None] = field(repr=False)
    id: str = ""


def _short(text: str, width: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _skipped_nodes(tree: ast.Module) -> set[int]:
    """ids of nodes never mutated: docstrings, annotations, decorators, imports."""
    skip: set[int] = set()

    def mark(node: ast.AST | None) -> None:
        if node is not None:
            skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                mark(body[0])
            if not isinstance(node, ast.Module):
                for deco in node.decorator_list:
                    mark(deco)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                mark(node.returns)
                for arg in [*node.args.args, *node.args.posonlyargs, *node.args.kwonlyargs,
                            node.args.vararg, node.args.kwarg]:
                    if arg is not None:
                        mark(arg.annotation)
        elif isinstance(node, ast.AnnAssign):
            mark(node.annotation)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            mark(node)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            mark(node)  # attribute docstrings
    return skip


def _bodies(node: ast.AST) -> Iterator[list[ast.stmt]]:
    for name in ("body", "orelse", "finalbody"):
        body = getattr(node, name, None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            yield body


def _walk(tree: ast.AST) -> list[ast.AST]:
    """Every node, in a fixed order (pre-order, fields in declaration order)."""
    out: list[ast.AST] = []

    def visit(node: ast.AST) -> None:
        out.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return out


def _at(tree: ast.AST, index: int) -> ast.AST:
    return _walk(tree)[index]


def mutations(tree: ast.Module) -> list[Mutation]:
    """Every mutation of ``tree``, in source order."""
    skip = _skipped_nodes(tree)
    found: list[Mutation] = []
    module_level = {id(s) for s in tree.body}
    for index, node in enumerate(_walk(tree)):
        if id(node) in skip:
            continue
        line = getattr(node, "lineno", 0)

        def add(op: str, before: str, after: str, apply: Callable[[ast.AST], None], line: int = line) -> None:
            found.append(Mutation(index, op, line, _short(before), _short(after), apply))

        if isinstance(node, ast.Compare):
            for pos, cmp in enumerate(node.ops):
                for new in COMPARE_SWAPS.get(type(cmp), []):
                    def apply(n: ast.AST, pos: int = pos, new: type = new) -> None:
                        n.ops[pos] = new()  # type: ignore[attr-defined]
                    changed = copy.deepcopy(node)
                    changed.ops[pos] = new()
                    add("compare", ast.unparse(node), ast.unparse(changed), apply)
        elif isinstance(node, ast.BoolOp):
            new_op = ast.Or if isinstance(node.op, ast.And) else ast.And
            def apply(n: ast.AST, new_op: type = new_op) -> None:
                n.op = new_op()  # type: ignore[attr-defined]
            changed = copy.deepcopy(node)
            changed.op = new_op()
            add("and/or", ast.unparse(node), ast.unparse(changed), apply)
        elif isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in ARITH_SWAPS:
            new_op = ARITH_SWAPS[type(node.op)]
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and any(
                    isinstance(side, (ast.Constant, ast.JoinedStr)) and isinstance(getattr(side, "value", ""), str)
                    for side in (node.left, node.right)):
                pass  # string concatenation: `-` is a TypeError, nothing learned
            else:
                def apply(n: ast.AST, new_op: type = new_op) -> None:
                    n.op = new_op()  # type: ignore[attr-defined]
                changed = copy.deepcopy(node)
                changed.op = new_op()
                add("arith", ast.unparse(node), ast.unparse(changed), apply)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            def apply(n: ast.AST) -> None:
                # `not x` → `bool(x)`: same truth value as `x`, and the node stays an expression
                operand = n.operand  # type: ignore[attr-defined]
                n.__class__ = ast.Call
                n.func, n.args, n.keywords = ast.Name("bool", ast.Load()), [operand], []  # type: ignore[attr-defined]
                del n.op, n.operand  # type: ignore[attr-defined]
            add("negate", ast.unparse(node), ast.unparse(node.operand), apply)
        elif isinstance(node, ast.Constant) and not isinstance(node.value, type(Ellipsis)) and node.value is not None:
            value = node.value
            variants: list[object]
            if isinstance(value, bool):
                variants = [not value]
            elif isinstance(value, int):
                variants = [1] if value == 0 else [0, 2] if value == 1 else [value + 1, 0]
            elif isinstance(value, float):
                variants = [value + 1.0]
            elif isinstance(value, str):
                variants = ["" if value else "XX"]
            elif isinstance(value, bytes):
                variants = [b"" if value else b"XX"]
            else:
                variants = []
            for new in variants:
                def apply(n: ast.AST, new: object = new) -> None:
                    n.value = new  # type: ignore[attr-defined]
                add("constant", repr(value), repr(new), apply)

        if isinstance(node, (ast.If, ast.While, ast.IfExp)):
            def apply(n: ast.AST) -> None:
                n.test = ast.UnaryOp(ast.Not(), n.test)  # type: ignore[attr-defined]
            add("negate", ast.unparse(node.test), f"not ({ast.unparse(node.test)})", apply)
        if isinstance(node, ast.comprehension):
            for pos, cond in enumerate(node.ifs):
                def apply(n: ast.AST, pos: int = pos) -> None:
                    n.ifs[pos] = ast.UnaryOp(ast.Not(), n.ifs[pos])  # type: ignore[attr-defined]
                add("negate", ast.unparse(cond), f"not ({ast.unparse(cond)})", apply)

        for body in _bodies(node):
            for pos, stmt in enumerate(body):
                if id(stmt) in skip or id(stmt) in module_level or not isinstance(stmt, DELETABLE):
                    continue
                if isinstance(stmt, ast.AnnAssign) and stmt.value is None:
                    continue  # a declaration (a dataclass field): deleting it changes the signature
                op = "remove return" if isinstance(stmt, ast.Return) and stmt.value is not None else "delete"
                first = ast.unparse(stmt).splitlines()[0]
                def apply(n: ast.AST, body_name: str = _body_name(node, body), pos: int = pos) -> None:
                    target = _body_of(n, body_name)
                    target[pos] = ast.copy_location(ast.Pass(), target[pos])
                add(op, first, "pass", apply, line=stmt.lineno)
    _name_ids(found)
    return found


def _body_name(node: ast.AST, body: list[ast.stmt]) -> str:
    for name in ("body", "orelse", "finalbody"):
        if getattr(node, name, None) is body:
            return name
    raise ValueError("not a body of this node")


def _body_of(node: ast.AST, name: str) -> list[ast.stmt]:
    return getattr(node, name)  # an except clause's body is its own node's `body`


def _name_ids(found: list[Mutation]) -> None:
    """Stable ids: what changed (and which occurrence of that change), not the line number,
    so an id survives edits elsewhere in the file."""
    seen: dict[str, int] = {}
    for m in found:
        key = f"{m.op}|{m.before}|{m.after}"
        n = seen[key] = seen.get(key, 0) + 1
        m.id = hashlib.sha1(f"{key}|{n}".encode()).hexdigest()[:8]


def sample(found: list[Mutation], count: int, seed: int) -> list[Mutation]:
    if count <= 0 or count >= len(found):
        return list(found)
    picked = random.Random(seed).sample(range(len(found)), count)
    return [found[i] for i in sorted(picked)]


def module_name(path: Path) -> str:
    rel = path.resolve().relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[0] in ("widgets", "themes"):
        parts.insert(0, "hermes_tui")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


# -- running ----------------------------------------------------------------------------------


@dataclass(slots=True)
class Outcome:
    mutant: Mutation | None
    status: str  # killed / survived / timeout / baseline-failed
    seconds: float
    detail: str = ""


def load_equivalents() -> dict[str, str]:
    known: dict[str, str] = {}
    if EQUIVALENT_FILE.exists():
        for raw in EQUIVALENT_FILE.read_text(encoding="utf-8").splitlines():
            raw = raw.strip()
            if raw and not raw.startswith("#"):
                ident, _, rest = raw.partition(" ")
                known[ident] = rest.strip()
    return known


class Runner:
    def __init__(self, module_path: Path, tests: list[str], timeout: float | None, workdir: Path) -> None:
        self.module_path = module_path.resolve()
        self.module = module_name(module_path)
        self.tests = tests
        self.timeout = timeout
        self.workdir = workdir
        self.hookdir = workdir / "hook"
        self.hookdir.mkdir()
        (self.hookdir / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
        (self.hookdir / "hermes_mutation_plugin.py").write_text(PLUGIN, encoding="utf-8")
        self.source = self.module_path.read_text(encoding="utf-8")  # read once: others may edit the file
        self.tree = ast.parse(self.source, filename=str(self.module_path))

    def compile(self, mutant: Mutation | None, name: str) -> Path:
        tree = copy.deepcopy(self.tree)
        if mutant is not None:
            mutant.apply(_at(tree, mutant.index))
            ast.fix_missing_locations(tree)
        code = compile(tree, str(self.module_path), "exec", dont_inherit=True)
        target = self.workdir / f"{name}.code"
        target.write_bytes(marshal.dumps(code))
        spec = self.workdir / f"{name}.json"
        spec.write_text(json.dumps({"module": self.module, "path": str(self.module_path), "code": str(target),
                                    "magic": importlib.util.MAGIC_NUMBER.hex()}), encoding="utf-8")
        return spec

    def run(self, mutant: Mutation | None, name: str, timeout: float | None) -> Outcome:
        spec = self.compile(mutant, name)
        scratch = self.workdir / f"{name}.tmp"
        scratch.mkdir()
        env = dict(os.environ)
        env[ENV_VAR] = str(spec)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(self.hookdir), env.get("PYTHONPATH")) if p)
        env["HYPOTHESIS_STORAGE_DIRECTORY"] = str(scratch / "hypothesis")
        env.pop("PYTEST_ADDOPTS", None)
        command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "hermes_mutation_plugin",
                   "--basetemp",
                   str(scratch / "basetemp"), *self.tests]
        started = time.monotonic()
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True, text=True, errors="replace")
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # our own process group: pytest and what it started
            proc.communicate()
            shutil.rmtree(scratch, ignore_errors=True)
            return Outcome(mutant, "timeout", time.monotonic() - started, f"no result in {timeout:g}s")
        seconds = time.monotonic() - started
        shutil.rmtree(scratch, ignore_errors=True)
        if proc.returncode == 0:
            return Outcome(mutant, "survived", seconds)
        failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", out, re.M)
        detail = failed[0] if failed else (out.strip().splitlines() or ["?"])[-1]
        if proc.returncode == 5:
            return Outcome(mutant, "error", seconds, "no tests ran: " + detail)
        return Outcome(mutant, "killed", seconds, detail if mutant else out[-4000:])


def run_replaced(runner: Runner, replacements: list[list[str]]) -> int:
    """Run the tests against the module with hand-made text replacements; 0 when the tests
    fail on it (the bug is noticed), 1 when they pass."""
    source = runner.source
    for old, new in replacements:
        if source.count(old) != 1:
            print(f"{old!r} occurs {source.count(old)} times in {runner.module_path}; it must occur once")
            return 2
        source = source.replace(old, new)
    base = runner.run(None, "baseline", runner.timeout)
    if base.status != "survived":
        print(f"the tests fail without the replacement ({base.status}):\n{base.detail}")
        return 2
    runner.tree = ast.parse(source, filename=str(runner.module_path))
    outcome = runner.run(None, "replaced", runner.timeout or 3 * base.seconds + 30)
    shown = "; ".join(f"{_short(old, 40)!r} → {_short(new, 40)!r}" for old, new in replacements)
    if outcome.status in ("killed", "timeout"):
        failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", outcome.detail, re.M)
        print(f"noticed ({outcome.status}): {shown}" + (f"  [{failed[0]}]" if failed else ""))
        return 0
    print(f"NOT noticed ({outcome.status}): {shown}")
    return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("module", type=Path, help="the source file to mutate, e.g. hermes_tui/runtime/rules.py")
    parser.add_argument("tests", nargs="+", help="test files (or node ids) run against each mutant")
    parser.add_argument("--mutants", type=int, default=60, help="how many to sample (0: all); default 60")
    parser.add_argument("--seed", type=int, default=13, help="sampling seed; default 13")
    parser.add_argument("--workers", type=int, default=2, choices=(1, 2), help="parallel pytest runs; default 2")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds per mutant; default 3× the unmutated run + 30")
    parser.add_argument("--list", action="store_true", help="print the sampled mutants and stop")
    parser.add_argument("--only", default="", help="comma-separated mutant ids to run (of the sample)")
    parser.add_argument("--json", type=Path, help="also write the outcomes here")
    parser.add_argument("--replace", nargs=2, metavar=("OLD", "NEW"), action="append", default=[],
                        help="instead of sampled mutants, run the tests once against the module with the text OLD "
                             "replaced by NEW (in the copy; repeatable): does a test notice this hand-made bug?")
    args = parser.parse_args(argv)

    module_path = args.module if args.module.is_absolute() else ROOT / args.module
    workdir = Path(tempfile.mkdtemp(prefix="hmut-"))
    try:
        runner = Runner(module_path, args.tests, args.timeout, workdir)
        if args.replace:
            return run_replaced(runner, args.replace)
        every = mutations(runner.tree)
        chosen = sample(every, args.mutants, args.seed)
        if args.only:
            wanted = set(args.only.split(","))
            chosen = [m for m in chosen if m.id in wanted] or [m for m in every if m.id in wanted]
        print(f"{runner.module}: {len(every)} mutants, {len(chosen)} sampled (seed {args.seed});"
              f" tests: {' '.join(args.tests)}", flush=True)
        if args.list:
            for m in chosen:
                print(f"  {m.id}  line {m.line:<4} {m.op:<13} {m.before}  →  {m.after}")
            return 0
        base = runner.run(None, "baseline", None)
        if base.status != "survived":
            print(f"the tests fail without any mutant ({base.status}); fix that first:\n{base.detail}")
            return 2
        timeout = args.timeout or 3 * base.seconds + 30
        print(f"unmutated run: {base.seconds:.1f}s; timeout per mutant {timeout:.0f}s", flush=True)
        equivalents = load_equivalents()

        def one(m: Mutation) -> Outcome:
            outcome = runner.run(m, f"m-{m.id}", timeout)
            mark = {"killed": "killed  ", "timeout": "timeout ", "survived": "SURVIVED", "error": "ERROR   "}
            note = outcome.detail
            if outcome.status == "survived" and m.id in equivalents:
                note = "equivalent: " + equivalents[m.id]
            print(f"{mark[outcome.status]} {m.id}  line {m.line:<4} {m.op:<13} {m.before}  →  {m.after}"
                  + (f"   [{note}]" if note else ""), flush=True)
            return outcome

        with ThreadPoolExecutor(max_workers=args.workers) as pool:
            outcomes = list(pool.map(one, chosen))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    killed = sum(o.status in ("killed", "timeout") for o in outcomes)
    survivors = [o for o in outcomes if o.status == "survived"]
    equivalent = [o for o in survivors if o.mutant and o.mutant.id in equivalents]
    errors = [o for o in outcomes if o.status == "error"]
    total = len(outcomes)
    live = total - len(equivalent)
    print(f"\n{runner.module}: killed {killed}/{total} ({100 * killed / max(total, 1):.0f}%);"
          f" equivalent {len(equivalent)}; non-equivalent killed {killed}/{live}"
          f" ({100 * killed / max(live, 1):.0f}%)" + (f"; {len(errors)} errors" if errors else ""))
    gaps = [o for o in survivors if o not in equivalent]
    if gaps:
        print("survivors not known to be equivalent (add a test, or list the id in tests/mutation/equivalent.txt):")
        for o in gaps:
            assert o.mutant
            m = o.mutant
            print(f"  {m.id}  line {m.line:<4} {m.op:<13} {m.before}  →  {m.after}")
    if args.json:
        args.json.write_text(json.dumps([
            {"id": o.mutant.id, "line": o.mutant.line, "op": o.mutant.op, "before": o.mutant.before,
             "after": o.mutant.after, "status": o.status, "seconds": round(o.seconds, 2), "detail": o.detail}
            for o in outcomes if o.mutant], indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
