"""Shared fixtures: real temp vaults, the CLI in-process and as a subprocess."""
from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from vault_tools.cli import run
from vault_tools.commands.setup import init_vault

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"
TZ = "Asia/Tokyo"


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: one worker more than processors; the tests wait on processes, the disk and file events
    about as much as they compute, so a third worker fills a two-core machine's waits."""
    return (os.cpu_count() or 1) + 1


@pytest.fixture(autouse=True)
def no_real_vaults(tmp_path, monkeypatch):
    """No test may walk up into a real vault: discovery stops at the test's temp folder."""
    monkeypatch.setenv("VAULT_TOOLS_CEILING", str(tmp_path))
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


def make_vault(root: Path) -> Path:
    (root / ".obsidian").mkdir(parents=True)
    init_vault(root, TZ, shared=False)  # most tests read the hidden layout; the shared one has its own
    return root


@pytest.fixture
def vault(tmp_path) -> Path:
    return make_vault(tmp_path / "vault")


@dataclass
class Result:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys, vault):
    """Run the command line in-process against the `vault` fixture."""

    def invoke(*args: str, root: Path | None = None) -> Result:
        capsys.readouterr()
        code = run([*args, "--vault", str(root or vault)])
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return invoke


def vt(*args: str, cwd: Path, stdin: str | None = None, timeout: float = 60) -> Result:
    """Run the real `python -m vault_tools` in a subprocess."""
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    done = subprocess.run([sys.executable, "-m", "vault_tools", *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=timeout, env=env)
    return Result(done.returncode, done.stdout, done.stderr)


def vt_on_terminal(*args: str, cwd: Path, timeout: float = 60) -> Result:
    """`vt` with its stderr on a pseudo-terminal, as a person at a terminal runs it (stdout still piped)."""
    return python_on_terminal("-m", "vault_tools", *args, cwd=cwd, timeout=timeout)


def python_on_terminal(*args: str, cwd: Path, timeout: float = 60) -> Result:
    """Python run with `args`, its stderr on a pseudo-terminal (stdout still piped)."""
    import pty
    import select

    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("FORCE_COLOR", None)
    process = subprocess.Popen([sys.executable, *args], cwd=cwd, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=follower, env=env)
    os.close(follower)
    err = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.1)
            if not ready:
                if process.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed with the process
                break
            if not chunk:
                break
            err += chunk
        out = process.communicate(timeout=max(0.1, deadline - time.monotonic()))[0]
    finally:
        os.close(leader)
        if process.poll() is None:
            process.kill()
    return Result(process.wait(), out.decode("utf-8"), err.decode("utf-8", errors="replace"))


def vt_here(*args: str, cwd: Path, stdin: str | None = None) -> Result:
    """`vt` without the process: the same entry point (the console script's front door, hooks included),
    run in this process from `cwd` with `stdin`, its output and exit code caught. For tests about what a
    command does; tests about the process itself (exit status, start-up, concurrency, kill -9) use `vt`."""
    from vault_tools import launch

    out, err = io.StringIO(), io.StringIO()
    saved = sys.argv, sys.stdin, Path.cwd()
    sys.argv, sys.stdin = ["vault-tools", *args], io.StringIO(stdin or "")
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                launch.main()
                code = 0
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    finally:
        sys.argv, sys.stdin = saved[0], saved[1]
        os.chdir(saved[2])
    return Result(code, out.getvalue(), err.getvalue())


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file's bytes (lock files and the derived cache aside): compare to prove nothing was written."""
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.endswith(".lock") and ".vault-tools/cache" not in p.as_posix()}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    return path


def decision(root: Path, number: int, status: str = "ruled", topics: tuple[str, ...] = ("article-footer",),
             summary: str | None = None, title: str | None = None, **fields: str) -> Path:
    """Write a decision note by hand, as the owner would in Obsidian."""
    decision_id = f"D-{number:04d}"
    lines = ["---", "type: decision", f"id: {decision_id}", f"status: {status}",
             "topics: [" + ", ".join(topics) + "]", "summary: " + json.dumps(summary or f"Summary of decision number {number}.")]
    if status != "open":
        fields.setdefault("ruled_at", f"2026-{1 + number // 28 % 12:02d}-{1 + number % 28:02d}T09:00:00")
        fields.setdefault("ruled_by", "owner")
    lines += [f"{key}: {value}" for key, value in fields.items()]
    lines += ["---", f"## Body of {decision_id}", ""]
    return write(root / "Decisions" / f"{title or decision_id + ' Note'}.md", "\n".join(lines))


def load_script(path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """Import one of the project's scripts (they are not a package) for an in-process test."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module
