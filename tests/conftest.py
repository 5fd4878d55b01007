"""Shared fixtures: a temp HERMES_HOME for every test, runtimes that always close, and a
check that no kernel process outlives its test."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from hermes_tui.base.safe_yaml import load_yaml
from hermes_tui.config import Config, parse_config
from hermes_tui.runtime import Runtime
from hermes_tui.runtime.approvals import ApprovalDecision, ApprovalRequest

NEEDS_BUBBLEWRAP = ("bwrap", "bubblewrap")
"""A test whose name says either runs its kernels under bubblewrap; the snapshots show its label."""


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Without bubblewrap (a machine the README's test command runs on, before `.ci/run` installs
    it), the tests that need it skip and say why; every other sandbox test runs under Landlock."""
    if shutil.which("bwrap") is not None:
        return
    if any(word in item.name for word in NEEDS_BUBBLEWRAP) or item.module.__name__.endswith("test_snapshots"):
        pytest.skip("bubblewrap is not installed (.ci/run installs it: apt-get install bubblewrap)")

DRIVER_NAME = "hermes_kernel_driver.py"

# -- running in parallel (pytest-xdist: `-n 4 --dist loadgroup` in pyproject's addopts) -----------

HEAVY_MODULES = (
    "tests/attacks/test_secrets.py",  # one test of ~25 s: first, so it never ends the run
    "tests/test_e2e_tmux.py",
    "tests/test_shared_store.py",
    "tests/attacks/test_sandbox_headless.py",
    "tests/test_headless.py",
)
"""End-to-end modules that drive the installed app or CLI in real processes (a terminal, two
apps on one store, headless runs and resumes): marked ``heavy`` and run first, so that the
workers finish together. ``-m "not heavy"`` leaves them out of a quick local run; the README's
command (and so `.ci/run`) runs them all."""


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """A worker's temp dir is ``.../pytest-N/gw0``, not xdist's ``.../pytest-N/popen-gw0``: tests
    put Unix sockets under ``tmp_path`` (at most 107 bytes), so it stays as short as it can."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    given = getattr(config.option, "basetemp", None)
    if worker and given and Path(given).name == f"popen-{worker}":
        config.option.basetemp = str(Path(given).with_name(worker))


def _module_fixture_group(item: pytest.Item) -> str | None:
    """The tests sharing a module-scoped fixture (a server, a venv, a folder for ``nobody``) run
    on one worker, so that it is made once, not once per worker."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    for name in info.names_closure:
        defs = info.name2fixturedefs.get(name)
        if defs and defs[-1].scope in ("module", "class", "package"):
            return f"{item.nodeid.split('::')[0]}::{name}"
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the heavy modules' tests and put them first (in HEAVY_MODULES' order), and group the
    tests that share a module-scoped fixture (xdist's loadgroup keeps a group on one worker).
    Runs before xdist reads the groups; every worker sorts the same collection the same way."""
    rank = {}
    for item in items:
        path = item.nodeid.split("::")[0]
        if path in HEAVY_MODULES:
            item.add_marker(pytest.mark.heavy)
            rank[item.nodeid] = HEAVY_MODULES.index(path)
        group = _module_fixture_group(item)
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: rank.get(item.nodeid, len(HEAVY_MODULES)))  # stable: the rest keep their order



@pytest.fixture(autouse=True)
def hermes_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point HERMES_HOME at a temp dir: tests never touch the real ~/.hermes."""
    home = tmp_path / "hermes-home"
    home.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(home))
    yield home
    leftovers = wait_for(lambda: not kernel_pids(home), timeout=5.0)
    assert leftovers, f"kernel processes outlived the test: {kernel_pids(home)}"


def kernel_pids(home: Path) -> list[int]:
    """Pids of live kernel processes started with this HERMES_HOME."""
    found = []
    marker = f"HERMES_HOME={home}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            if DRIVER_NAME.encode() not in cmdline:
                continue
            if marker not in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                continue
            state = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state != b"Z":
            found.append(int(entry))
    return found


def pid_running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat.rsplit(b")", 1)[1].split()[0] != b"Z"


def running_with(marker: str) -> list[int]:
    """Live processes (not zombies) whose command line holds ``marker``, by this host's pids.

    A script's pids are no use here: under bubblewrap a kernel has its own pid namespace, and
    the number it prints names another process out here. Tests give the processes they
    look for a unique argument (``sleep 300.17``) and find them by it."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker.encode() in words and pid_running(int(entry.name)):
            found.append(int(entry.name))
    return found


def wait_for(predicate, timeout: float = 5.0, interval: float = 0.02) -> bool:
    """Poll ``predicate`` until it is true or ``timeout`` passes; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)


def make_config(yaml_text: str = "") -> Config:
    """A Config from YAML text (defaults for what it leaves out)."""
    return parse_config(yaml_text)


def strict_config(yaml_text: str = "") -> Config:
    """A Config from YAML text whose approvals.mode is ``strict`` (every terminal() call asks
    unless a rule allows it) when the text sets no mode: for tests of the gate's asking."""
    config = parse_config(yaml_text)
    if "mode" not in ((load_yaml(yaml_text) or {}).get("approvals") or {}):
        config.approvals.mode = "strict"
    return config


@pytest.fixture
async def runtime(hermes_home: Path):
    """A started Runtime with default config; closed (kernels ended) after the test."""
    async with Runtime(make_config(), home=hermes_home) as rt:
        yield rt


@pytest.fixture
async def runtime_factory(hermes_home: Path):
    """Make runtimes from config YAML; every one is closed after the test."""
    made: list[Runtime] = []

    async def factory(yaml_text: str = "", **kwargs) -> Runtime:
        rt = Runtime(make_config(yaml_text), home=hermes_home, **kwargs)
        made.append(rt)
        return await rt.start()

    yield factory
    for rt in made:
        await rt.aclose()


class Approver:
    """An approver that answers every request with ``choice`` (and ``reason``), running
    ``before(request)`` first when given, and records what it was asked."""

    def __init__(self, choice: str = "once", reason: str | None = None, before=None) -> None:
        self.choice, self.reason, self.before = choice, reason, before
        self.asked: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        self.asked.append(request)
        if self.before is not None:
            self.before(request)
        return ApprovalDecision(choice=self.choice, reason=self.reason)  # type: ignore[arg-type]


# -- a real PostgreSQL server (tests/pg_server.py) ------------------------------------------------


@pytest.fixture(scope="session")
def pg_server():
    """One PostgreSQL server for the whole run (started on first use, stopped at the end).
    Without PostgreSQL (the README's test command on a fresh machine, before `.ci/run`
    installs it) the tests that need it skip, saying so: they never fail for a missing package."""
    from pg_server import PostgresServer, bindir

    if bindir() is None:
        pytest.skip("PostgreSQL is not installed (.ci/run installs it: apt-get install postgresql)")
    server = PostgresServer()
    server.start()
    yield server
    server.destroy()


@pytest.fixture
def pg_url(pg_server, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh database on the test server; its URL (over the Unix socket, no password)."""
    return pg_server.url(pg_server.new_database())


@pytest.fixture(params=["sqlite", "postgresql"])
def store_backend(request, monkeypatch: pytest.MonkeyPatch, hermes_home: Path):
    """Run the test on each backend: ``postgresql`` points ``HERMES_TUI_STORE_URL`` (which every
    store this process and its children open without naming one reads) at a fresh database, and
    checks at the end that nothing fell back to the SQLite file."""
    from hermes_tui.storage import choice, opening

    monkeypatch.setattr(choice, "_chosen", None)
    monkeypatch.setattr(choice, "_chosen_problem", None)
    if request.param == "postgresql":
        monkeypatch.setenv("HERMES_TUI_STORE_URL", request.getfixturevalue("pg_url"))
    else:
        monkeypatch.delenv("HERMES_TUI_STORE_URL", raising=False)
    yield request.param
    if request.param == "postgresql":
        assert not opening.sessions_db_path(hermes_home).exists(), "the test used the SQLite file, not PostgreSQL"


def open_store_db(home: Path | None = None):
    """The store the test's backend uses, opened directly (a :class:`Database`; close it)."""
    from hermes_tui.storage import opening
    from hermes_tui.storage.choice import store_url
    return opening.open_database(store_url(None, home))


@pytest.fixture(autouse=True)
def _store_choice_reset():
    """``hermes_tui.cli.main`` chooses the store for its process; in-process tests run many."""
    yield
    from hermes_tui.storage import sessions as store
    store.choose_store(None)


# -- a real Docker daemon and real SSH servers (tests/helpers/backends.py) -----------------------


def _is_controller(config: pytest.Config) -> bool:
    """The xdist controller, or the one process of a run without xdist (not a worker)."""
    return not hasattr(config, "workerinput")


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """The controller holds a shared lock for the whole run (before xdist starts its workers):
    another run on this machine that ends first then leaves the tests' dockerd running for this one."""
    if _is_controller(session.config):
        from helpers.backends import register_test_run

        register_test_run()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The controller, once every worker is done, stops the dockerd a test started (any worker
    may have started it: one per machine, see ``docker_daemon``) and removes ``hermes-``
    containers left behind. A dockerd that was running before the tests is left alone."""
    if _is_controller(session.config):
        from helpers.backends import stop_dockerd_if_started

        stop_dockerd_if_started()


@pytest.fixture(scope="session")
def docker_daemon() -> list[str]:
    """A Docker daemon that answers, and the offline test images (``TEST_IMAGE``,
    ``NO_PYTHON_IMAGE``); its value is ``HOST_MOUNTS``, the ``docker run`` arguments that give a
    container of ``TEST_IMAGE`` the host's ``/usr`` (and so ``python3``). Uses a running dockerd
    or starts one, once per machine under a lock (the four workers ask at once); the controller
    stops it at the end (``pytest_sessionfinish``). Name containers ``hermes-...``: any left
    are removed then. Without Docker the tests that need it skip, saying so."""
    from helpers.backends import HOST_MOUNTS, ensure_dockerd, ensure_images

    ensure_dockerd()  # skips when docker.io is not installed
    ensure_images()
    return HOST_MOUNTS


@pytest.fixture(scope="session")
def jupyter_gateway():
    """A real Jupyter Kernel Gateway of this worker's own on 127.0.0.1 with a token, for the
    whole run (``url``, ``token``, ``kernels()``, ``stop()``/``start()``); stopped at the end
    with every kernel it started."""
    from helpers.backends import JupyterGateway

    with JupyterGateway() as gateway:
        yield gateway


def _ssh_server(no_python: bool):
    from helpers.backends import SshServer, sshd_installed

    if not sshd_installed():
        pytest.skip("OpenSSH's server is not installed (.ci/run installs it: apt-get install openssh-server)")
    server = SshServer(no_python=no_python)
    try:
        server.start()
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session")
def ssh_server():
    """An sshd of this worker's own on 127.0.0.1 (a free port), for the whole run: ``root``
    logs in with ``server.key``; ``server.run(cmd)`` runs a command there, ``server.ssh_options()``
    are the ssh options for a backend. Stopped, with everything its logins started, at the end.
    Without openssh-server the tests that need it skip, saying so."""
    yield from _ssh_server(no_python=False)


@pytest.fixture(scope="session")
def ssh_server_no_python():
    """Like ``ssh_server``, but a login's ``PATH`` has everything except ``python3``
    (``python3 -c 1`` exits 127, "command not found"; ``echo``, ``sh``, ``cat`` work)."""
    yield from _ssh_server(no_python=True)
