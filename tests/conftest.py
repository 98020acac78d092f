"""Fixtures and pytest's hooks. The helpers the tests share (the CLI in-process and as a subprocess, notes
written by hand, the watcher driven by a script) are in tests/helpers.py."""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from tests.clones import clone, make_origin
from tests.helpers import FOOTER, Result, judged, make_vault, untagged
from vault_tools.cli import run


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: one worker more than processors; the tests wait on processes, the disk and file events
    about as much as they compute, so a third worker fills a two-core machine's waits."""
    return (os.cpu_count() or 1) + 1


@pytest.fixture(autouse=True)
def no_real_vaults(tmp_path, monkeypatch):
    """No test may walk up into a real vault: discovery stops at the test's temp folder."""
    monkeypatch.setenv("VAULT_TOOLS_CEILING", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))  # the state memo's signing key
    monkeypatch.setenv("VAULT_TOOLS_NO_RESIDENT", "1")  # no watcher a test starts keeps a resident process, but in
    # tests/test_resident.py
    monkeypatch.chdir(tmp_path)


@pytest.fixture(autouse=True)
def no_thread_leaks():
    """Fail a test that leaves a thread running (a watcher loop or an observer not stopped, a pool not shut down).

    Threads that were running before the test are not its business; new ones get a short grace to finish.
    """
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + 2
    leaked = []
    for thread in threading.enumerate():
        if thread in before:
            continue
        thread.join(timeout=max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            leaked.append(thread)
    if leaked:
        pytest.fail("the test left threads running: " + ", ".join(
            f"{t.name} ({'daemon' if t.daemon else 'non-daemon'})" for t in leaked), pytrace=False)


# The modules whose tests run in both layouts: a vault set up before the shared layout keeps the hidden one
# until its owner runs `migrate`, and the everyday commands must hold there too.
BOTH_LAYOUTS = ("test_cli_flow.py", "test_bad_input.py", "test_owner_lifecycle.py", "test_replaces.py")


def pytest_generate_tests(metafunc):
    if metafunc.definition.path.name in BOTH_LAYOUTS and "vault" in metafunc.fixturenames \
            and not metafunc.definition.get_closest_marker("shared_layout"):
        metafunc.parametrize("vault_layout", ["shared", "hidden"], indirect=True)


@pytest.fixture
def vault_layout(request) -> str:
    """The layout the `vault` fixture makes: shared, unless a module of BOTH_LAYOUTS runs it in the hidden one."""
    return getattr(request, "param", "shared")


@pytest.fixture
def vault(tmp_path, vault_layout) -> Path:
    """A new vault in the layout `init` makes (see `make_vault`), or the hidden one (`BOTH_LAYOUTS`)."""
    return make_vault(tmp_path / "vault", shared=vault_layout == "shared")


@pytest.fixture
def cli(capsys, vault):
    """Run the command line in-process against the `vault` fixture."""

    def invoke(*args: str, root: Path | None = None, judge: bool = False) -> Result:
        """`args` run (`judge`: a near-matter refusal judged in one more call, as an agent does: `helpers.judged`)."""
        def once(given: list[str]) -> Result:
            capsys.readouterr()
            code = run([*given, "--vault", str(root or vault)])
            captured = capsys.readouterr()
            return untagged(root or vault, Result(code, captured.out, captured.err))
        return judged(args, once, lambda r: r.code, lambda r: r.err) if judge else once(list(args))

    return invoke


@pytest.fixture
def footer_vault(vault, cli) -> Path:
    """A vault whose footer ruling still requires promotion, a ruling on images, and an open question."""
    assert cli("rule", "--topic", "article-footer", "--summary", FOOTER, "--source", "chat").code == 0  # D-0001
    assert cli("rule", "--topic", "article-images", "--summary", "Articles use only images we took ourselves.",
               "--term", "budget=0").code == 0  # D-0002
    assert cli("ask", "Should the agent cross-post new articles to Mastodon?", "--topic", "social-crossposting").code == 0
    return vault


# The modules whose tests take longest (git clones, real processes, the demo), run first: the workers then end
# together on short tests instead of one finishing a long test alone at the end (46-47 s -> 40-41 s on two cores).
SLOW_FIRST = ("test_machines_conflicts.py", "test_resident.py", "test_machines.py", "test_pulls.py", "test_launch.py",
              "test_demo.py", "test_held.py", "test_watch.py", "test_import.py", "test_hostile.py", "test_reconcile.py",
              "test_owner_week.py", "test_owner_lifecycle.py", "test_mcp.py")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    def rank(item) -> int:
        name = item.path.name
        return SLOW_FIRST.index(name) if name in SLOW_FIRST else len(SLOW_FIRST)

    items.sort(key=rank)  # stable: the order within each module, and of the rest, is kept


# `VAULT_TOOLS_TEST_CPU=FOLDER make test` writes each test's processor time (this process's, and its children's
# that it waited for) to FOLDER, one file per worker; `python scripts/suite_time.py FOLDER` sums it by module.
_CPU_FOLDER = os.environ.get("VAULT_TOOLS_TEST_CPU")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not _CPU_FOLDER:
        yield
        return
    import json
    import resource

    def used() -> tuple[float, float]:
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime
    before = used()
    yield
    after = used()
    Path(_CPU_FOLDER).mkdir(parents=True, exist_ok=True)
    with open(Path(_CPU_FOLDER) / f"cpu-{os.getpid()}.jsonl", "a", encoding="utf-8") as out:
        out.write(json.dumps({"test": item.nodeid, "own": after[0] - before[0],
                              "children": after[1] - before[1]}) + "\n")


@pytest.fixture(scope="session")
def owner_messages_vault(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """The vault of tests/data/owner_messages.json (108 decisions, made through the commands: seconds), made
    once for the whole run and shared by the workers; a test copies it before writing. (root, topic -> id)"""
    import json

    from filelock import FileLock

    from benchmarks.owner_messages import load, make_vault

    shared = tmp_path_factory.getbasetemp().parent / "owner-messages"
    with FileLock(str(shared) + ".lock"):
        made = shared / "ids.json"
        if not made.exists():
            ids = make_vault(shared / "vault", load()[0])
            made.write_text(json.dumps(ids), encoding="utf-8")
    return shared / "vault", json.loads(made.read_text(encoding="utf-8"))


@pytest.fixture
def two(tmp_path, capsys):
    """Two clones, A and B, of one vault carried by git (tests/clones.py)."""
    origin = make_origin(tmp_path, capsys)
    return clone(origin, "A"), clone(origin, "B")
