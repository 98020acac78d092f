"""What the tests share besides fixtures: vaults and notes made by hand, the CLI run in this process or in a
real one, the watcher driven by a scripted clock or a real observer, a clock that runs ahead.

Fixtures and pytest's hooks are in conftest.py; a test module imports what it uses from here.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import importlib.util
import io
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from vault_tools.commands.ask import ask
from vault_tools.commands.setup import init_vault
from vault_tools.errors import PossibleMatch
from vault_tools.layout import device_tag, layout_of
from vault_tools.record_files import RACY_NANOSECONDS, TOPICS_FILE
from vault_tools.services.workspace import Workspace
from vault_tools.vault import Vault
from vault_tools.watch import Action, Watcher

REPOSITORY = Path(__file__).resolve().parents[1]  # this project's checkout
CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"  # real vaults and notes; absent: tests skip
TZ = "Asia/Tokyo"  # the time zone of the vaults the tests make


# -- vaults and notes ---------------------------------------------------------------------------

def make_vault(root: Path, *, shared: bool = True) -> Path:
    """A new vault at `root` (an Obsidian folder, `init` run, zone `TZ`) in the layout `init` makes today
    (`vault-tools/`, ids made by commands tagged with the device's tag), or without `shared` in the hidden
    layout a vault set up before keeps (`.vault-tools/`, untagged ids); returns `root`."""
    (root / ".obsidian").mkdir(parents=True)
    init_vault(root, TZ, shared=shared)
    return root


def page_name(path: Path) -> str:
    """A page of the project as its docs name it: relative to the checkout."""
    return path.relative_to(REPOSITORY).as_posix()


def note_path(root: Path, decision_id: str) -> Path:
    """The note of `decision_id` in `Decisions/`, named by its id as the commands name it: `D-0001 Title.md`,
    or in the shared layout, where an id made by a command ends with the device's tag, `D-0001-abcd Title.md`
    (given `D-0001` or the whole id)."""
    named = re.compile(re.escape(decision_id) + r"(-[a-z0-9]+)? ")
    return next(path for path in sorted((root / "Decisions").glob(f"{decision_id}*.md")) if named.match(path.name))


def config_file(root: Path) -> Path:
    """The vault's config file, in whichever layout it was made (`vault-tools/` or `.vault-tools/`)."""
    return layout_of(root).config_path


def topics_file(root: Path) -> Path:
    """The topics the owner merged (`topics.yaml`), in either layout."""
    return layout_of(root).record_dir / TOPICS_FILE


def kept_dir(root: Path) -> Path:
    """Where vault-tools keeps copies of text it replaced (an edited page, a torn ledger line), in either layout."""
    return layout_of(root).kept_dir


def ledger_file(root: Path) -> Path:
    """This device's ledger file, in either layout (in the shared layout, the first device file, else the one
    this device will write: its tag drawn as a command would draw it)."""
    layout = layout_of(root)
    if not layout.shared:
        return layout.legacy_ledger
    found = sorted(layout.ledger_dir.glob("*.jsonl"))
    return found[0] if found else layout.ledger_dir / f"{device_tag(root)}.jsonl"


def shown_path(root: Path, path: Path) -> str:
    """A file of the vault as messages name it: relative to the vault (`config_shown(root)`: its config)."""
    return path.relative_to(root).as_posix()


def config_shown(root: Path) -> str:
    return shown_path(root, config_file(root))


def add_to_config(root: Path, text: str) -> None:
    """`text` added at the end of the vault's config, as the owner would type it (ending its last line)."""
    config = config_file(root)
    config.write_text(config.read_text(encoding="utf-8") + text + ("" if text.endswith("\n") else "\n"),
                      encoding="utf-8")


def ledger_events(root: Path) -> list[dict[str, Any]]:
    """Every line of the vault's ledger as JSON, in either layout (each device's file in turn in the shared one)."""
    layout = layout_of(root)
    files = sorted(layout.ledger_dir.glob("*.jsonl")) if layout.shared else [layout.legacy_ledger]
    return [json.loads(line) for path in files if path.exists()
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def stat_all(root: Path) -> dict[str, tuple[int, int]]:
    """Each file's size and mtime: compare to prove nothing was even rewritten."""
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def write(path: Path, text: str) -> Path:
    """Write `text` to `path` as UTF-8 bytes (newlines as given), its folders made first; returns `path`."""
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


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file's bytes (lock files and the derived cache aside): compare to prove nothing was written."""
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.endswith(".lock") and ".vault-tools/cache" not in p.as_posix()}


def ask_at(vault: Path, when: str, summary: str, topic: str, *, by: str = "agent", reask: str | None = None,
           judge: bool = False) -> str:
    """Ask through the command with the clock fixed at `when` (vault time), as if the agent asked then (`judge`:
    and, shown decisions it may be the matter of, judged them all different in one more call: see `judged`)."""
    moment = dt.datetime.fromisoformat(when).replace(tzinfo=ZoneInfo(TZ))
    ws = Workspace(Vault(vault), now=lambda: moment.astimezone(dt.UTC))
    try:
        return ask(ws, summary, [topic], asked_by=by, reask_reason=reask).id
    except PossibleMatch as near:
        if not judge:
            raise
        return ask(ws, summary, [topic], asked_by=by, reask_reason=reask, not_the_same=near.nearest).id


_NOT_THE_SAME = re.compile(r"(?:ask|rule) again with ((?:--not-the-same \S+ ?)+) \(kept in the ledger\)")


def judged(args: Sequence[str], invoke: Callable[[list[str]], Any], code: Callable[[Any], int],
           err: Callable[[Any], str]) -> Any:
    """`invoke(args)`, and for an `ask` or a `rule` given directly refused as the matter (or maybe the matter) of
    decisions already recorded, `invoke` once more with the `--not-the-same` flags the refusal offers: what an
    agent does that read them all and judged them a different matter. A refusal lists everything it stands on,
    so the second call is never refused that way again. Only tests that say so judge (`judge=True`)."""
    given = list(args)
    result = invoke(given)
    if not args or args[0] not in ("ask", "rule") or code(result) != 1:
        return result
    if "the matter of" not in err(result) and not (args[0] == "ask" and "under other topics" in err(result)):
        return result
    found = _NOT_THE_SAME.search(err(result))
    assert found, err(result)
    result = invoke(given + found.group(1).split())
    assert not (code(result) == 1 and _NOT_THE_SAME.search(err(result))), f"refused again:\n{err(result)}"
    return result


# -- the command line ---------------------------------------------------------------------------

def untagged(root: Path, result: Result) -> Result:
    """`result` with the ids this device made in the vault at `root` shown by their counter alone (`D-0001`
    for `D-0001-k7q2`), as a typed id may name them: what a test of anything but the tags compares. The shared
    layout tags each id a command makes with the device's tag (design 0026); a test of the tags themselves
    reads them as printed. A path printed keeps the file's name as it is (`Decisions/D-0001-k7q2 ...`)."""
    tag = device_tag(root, create=False) if root.is_dir() else None
    if not tag:
        return result
    pattern = re.compile(rf"(?<![/\\])\b(D-\d+)-{re.escape(tag)}\b")  # a path names the file as it is
    return Result(result.code, pattern.sub(r"\1", result.out), pattern.sub(r"\1", result.err))


def made_id(root: Path, counted: str) -> str:
    """The id `counted` (`D-0001`) as a command on this device writes it in the vault at `root` (`untagged`'s
    other way): tagged with the device's tag in the shared layout, as it stands in the hidden one."""
    tag = device_tag(root, create=False)
    return f"{counted}-{tag}" if tag else counted


def counter_of(decision_id: str) -> str:
    """An id by its counter alone (`D-0001` for `D-0001-k7q2`), as `cli` and `vt` show this device's ids."""
    return "-".join(decision_id.split("-")[:2])


def vault_of(args: Sequence[str], cwd: Path) -> Path:
    """The vault a command names (`--vault`), else its folder."""
    given = list(args)
    for index, token in enumerate(given[:-1]):
        if token == "--vault":
            return Path(given[index + 1])
    return cwd


def succeeded(done: Result) -> Result:
    """`done`, which must have exited 0 (else its stderr says why)."""
    assert done.code == 0, done.err
    return done


@dataclass
class Result:
    """What a run of the command line gave: its exit code, stdout and stderr."""
    code: int
    out: str
    err: str


def vt(*args: str, cwd: Path, stdin: str | None = None, timeout: float = 60, judge: bool = False) -> Result:
    """Run the real `python -m vault_tools` in a subprocess (`judge`: a near-matter refusal judged as an agent
    does, see `judged`)."""
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}

    def invoke(given: list[str]) -> Result:
        done = subprocess.run([sys.executable, "-m", "vault_tools", *given], cwd=cwd, input=stdin,
                              capture_output=True, text=True, timeout=timeout, env=env)
        return untagged(vault_of(given, cwd), Result(done.returncode, done.stdout, done.stderr))
    return judged(args, invoke, lambda r: r.code, lambda r: r.err) if judge else invoke(list(args))


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


def vt_here(*args: str, cwd: Path, stdin: str | None = None, judge: bool = False, counted: bool = False) -> Result:
    """`vt` without the process: the same entry point (the console script's front door, hooks included),
    run in this process from `cwd` with `stdin`, its output and exit code caught (`judge`: see `judged`;
    `counted`: this device's ids shown by their counter, as `vt` shows them: see `untagged`). For tests about
    what a command does; tests about the process itself (exit status, start-up, concurrency, kill -9) use `vt`."""
    from vault_tools import launch

    def invoke(given: list[str]) -> Result:
        out, err = io.StringIO(), io.StringIO()
        saved = sys.argv, sys.stdin, Path.cwd()
        sys.argv, sys.stdin = ["vault-tools", *given], io.StringIO(stdin or "")
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
        done = Result(code, out.getvalue(), err.getvalue())
        return untagged(vault_of(given, cwd), done) if counted else done
    return judged(args, invoke, lambda r: r.code, lambda r: r.err) if judge else invoke(list(args))


def load_script(path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """Import one of the project's scripts (they are not a package) for an in-process test."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


# -- time ---------------------------------------------------------------------------------------

# Long enough for a file to be past the racy window (`RACY_NANOSECONDS`): what was read of a file younger than
# that is not trusted later on its times alone.
PAST_RACY_SECONDS = RACY_NANOSECONDS / 1e9 + 0.1


class ClockAhead:
    """The `time` module with its wall clock (`time()`, `time_ns()`) `seconds` ahead; the rest (`monotonic`,
    `sleep`, ...) is the real module's. Put in place of a module's `time`, it lets what that module compares
    with the wall clock age without waiting: a file's ctime, which no `os.utime` can set back, among them."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def time(self) -> float:
        return time.time() + self.seconds

    def time_ns(self) -> int:
        return time.time_ns() + round(self.seconds * 1e9)

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def clock_ahead_source(module: str, seconds: float = PAST_RACY_SECONDS) -> str:
    """Python source that puts a `ClockAhead` of `seconds` in place of `module`'s `time`: for a script run in a
    process of its own (which cannot import this module), the first lines of `python -c`."""
    return (f"import time as _time\nimport {module} as _module\n\n\n"
            "class _ClockAhead:\n"
            "    def __getattr__(self, name):\n        return getattr(_time, name)\n\n"
            f"    def time(self):\n        return _time.time() + {seconds!r}\n\n"
            f"    def time_ns(self):\n        return _time.time_ns() + {round(seconds * 1e9)}\n\n\n"
            f"assert _module.time is _time, '{module} reads the wall clock some other way now'\n"
            "_module.time = _ClockAhead()\n")


def past_the_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if every file now in the vault had been left alone past the racy window: a view of the vault made from
    now on (`LiveState`, as a reconcile starts) reads the wall clock `PAST_RACY_SECONDS` ahead, so it knows each
    decision note it reads unchanged since before it read the vault (as on a real first start), without the
    test sleeping. What is written after the view is made is seen as written after it, as it would be."""
    from vault_tools.services import live

    monkeypatch.setattr(live, "time", ClockAhead(PAST_RACY_SECONDS))


# -- the watcher --------------------------------------------------------------------------------

REAL_TIMEOUT = 30  # seconds a real-observer test waits for the watcher before it fails


def configure(vault: Path, debounce_ms: int = 300, settle: float = 1) -> None:
    """The vault's config: zone Asia/Tokyo, the watcher's debounce and sealing delay as given."""
    config_file(vault).write_text(
        f"timezone: Asia/Tokyo\ndebounce_ms: {debounce_ms}\nseal_delay_seconds: {settle}\n")


def obsidian_save(path: Path, text: str) -> None:
    """Obsidian saves in place: the same file, truncated and rewritten."""
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)


class Scripted:
    """A watcher on a real vault whose clock and file events are the test's: no observer, no sleep.

    Scripted time starts at the real time and only moves when the test says. Every file the
    test saves gets the scripted time as its mtime and is reported to `notice()`, as an observer
    would report it. After each `step()` of the watcher, whatever it wrote (a changed mtime, inode
    or content) is reported the same way and stamped with the scripted time, so the watcher sees
    its own writes as it would live. (Within one step its writes still carry the real time, usually
    behind the scripted time, so a later pass of the same reconcile may see them as already quiet.)
    """

    def __init__(self, vault: Path) -> None:
        self.root = vault
        self.now = time.time()
        self.actions: list[Action] = []
        self.timeline: list[tuple[float, Action]] = []  # each action with the scripted time it was reported at
        self.writes: list[tuple[float, str]] = []  # (scripted time, vault-relative path) of each watcher write
        ws = Workspace(Vault(vault), now=lambda: dt.datetime.fromtimestamp(self.now, dt.UTC))
        self.watcher = Watcher(ws, on_actions=self._report, clock=lambda: self.now)
        self._seen = self._files()

    def _report(self, actions: list[Action]) -> None:
        self.actions += actions
        self.timeline += [(self.now, action) for action in actions]

    def __enter__(self) -> Scripted:
        self.watcher.start(observe=False)
        self._observe()
        return self

    def __exit__(self, *exc) -> None:
        self.watcher.release()

    def _files(self) -> dict[str, tuple[int, int, bytes]]:
        files = {}
        for p in self.root.rglob("*"):
            if p.is_file() and not p.name.endswith(".lock") and ".vault-tools/cache" not in p.as_posix():
                stat = p.stat()
                files[p.relative_to(self.root).as_posix()] = (stat.st_mtime_ns, stat.st_ino, p.read_bytes())
        return files

    def _stamp(self, relative: str) -> None:
        path = self.root / relative
        os.utime(path, (self.now, self.now))
        stat = path.stat()
        self._seen[relative] = (stat.st_mtime_ns, stat.st_ino, path.read_bytes())

    def _observe(self) -> None:
        """Report what the watcher wrote since last time, as the observer would, stamped with the scripted time."""
        files = self._files()
        for relative in sorted(files.keys() | self._seen.keys()):
            if files.get(relative) == self._seen.get(relative):
                continue
            self.writes.append((self.now, relative))
            if relative in files:
                self._stamp(relative)
            else:
                del self._seen[relative]
            self.watcher.notice(str(self.root / relative))

    def save(self, path: Path, text: str) -> None:
        """The owner saves `path` now (scripted time)."""
        obsidian_save(path, text)
        self._stamp(path.relative_to(self.root).as_posix())
        self.watcher.notice(str(path))
        self.advance(0)

    def moved(self, source: Path, destination: Path) -> None:
        """The owner (or a sync tool) renamed `source` to `destination`: one moved event naming both."""
        del self._seen[source.relative_to(self.root).as_posix()]
        stat = destination.stat()
        self._seen[destination.relative_to(self.root).as_posix()] = (stat.st_mtime_ns, stat.st_ino,
                                                                     destination.read_bytes())
        self.watcher.notice(str(source))
        self.watcher.notice(str(destination))
        self.advance(0)

    def deleted(self, path: Path) -> None:
        """The owner (or a sync tool) deleted `path`."""
        del self._seen[path.relative_to(self.root).as_posix()]
        self.watcher.notice(str(path))
        self.advance(0)

    def advance(self, seconds: float) -> None:
        """Let `seconds` of scripted time pass, waking the watcher as its loop would:
        at each deadline it has, at least every second, and once at the end."""
        end = self.now + seconds
        while True:
            self.watcher.step()
            self._observe()
            if self.now >= end:
                return
            deadline = self.watcher.schedule.next_deadline()
            wake = self.now + 1.0 if deadline is None else min(self.now + 1.0, max(deadline, self.now + 0.01))
            self.now = min(end, wake)

    def advance_until(self, predicate, limit: float) -> float:
        """Advance in small steps until `predicate()` holds; fail after `limit` scripted seconds. Returns the time."""
        end = self.now + limit
        while not predicate():
            if self.now >= end:
                raise AssertionError(f"{predicate.__name__} did not hold within {limit} scripted seconds; "
                                     f"actions: {self.actions}")
            self.advance(min(0.1, end - self.now))
        return self.now

    def kinds(self) -> list[str]:
        return [a.kind for a in self.actions]

    def when(self, kind: str) -> float:
        """The scripted time the first action of `kind` was reported at."""
        return next(at for at, action in self.timeline if action.kind == kind)


class Running:
    """A watcher with a real observer in a thread; its actions arrive on a queue."""

    def __init__(self, vault: Path) -> None:
        self.actions: list[Action] = []
        self.queue: queue.Queue[Action] = queue.Queue()
        self.ws = Workspace(Vault(vault))
        self.watcher = Watcher(self.ws, on_actions=self._report)
        self.thread = threading.Thread(target=self.watcher.run, daemon=True)

    def _report(self, actions: list[Action]) -> None:
        self.actions += actions
        for action in actions:
            self.queue.put(action)

    def __enter__(self) -> Running:
        self.watcher.start()
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.watcher.stop()
        self.thread.join(timeout=10)
        self.watcher.release()
        assert not self.thread.is_alive()

    def until(self, predicate, timeout: float = REAL_TIMEOUT):
        """Wait for the watcher to report actions until `predicate()` holds (checked at each report); return its value."""
        deadline = time.monotonic() + timeout
        while not (value := predicate()):
            remaining = deadline - time.monotonic()
            try:
                self.queue.get(timeout=max(remaining, 0))
            except queue.Empty:
                raise AssertionError(f"timed out after {timeout} s waiting for {predicate.__name__}; "
                                     f"actions: {self.actions}") from None
        return value

    def kinds(self) -> list[str]:
        return [a.kind for a in self.actions]


# -- the agents' hooks --------------------------------------------------------------------------

FOOTER = "Every article footer carries the newsletter signup link."  # the footer ruling of `footer_vault`


def hook(event: str, payload: dict, cwd: Path, *extra: str, process: bool = False) -> dict | None:
    """Run `vault-tools hook claude EVENT` as Claude Code does: JSON on stdin, the answer's JSON on stdout;
    through the console script's front door in this process, or in a real process with `process`."""
    run = vt if process else vt_here
    done = run("hook", "claude", event, *extra, cwd=cwd, stdin=json.dumps({"cwd": str(cwd), **payload}))
    assert done.code == 0, done.err
    assert len(done.out) <= 9500
    return json.loads(done.out) if done.out.strip() else None


def sealed_path(vault: Path, decision_id: str) -> Path:
    """The note of the decision `decision_id` (its file named `<id> <title>.md` in Decisions)."""
    return note_path(vault, decision_id)


# -- property values ----------------------------------------------------------------------------

# Scalars as YAML spells them, plain, quoted, tagged, anchored and broken: for notes' and the config's readers.
SCALARS = ["x", "two words", "08", "0x1f", "0o17", "1_000", "-3", "+4", "1.5", ".5", "1e3", "-.Inf", ".nan", "true",
           "True", "yes", "on", "FALSE", "", "~", "null", "Null", "2026-07-17", "2026-07-17T08:30:00", "12:30",
           '"[[D-0001 A note]]"', "'it''s'", '"a\\tb"', "[a, b, \"c\"]", "[]", "{a: 1, b: [x]}", "{}", "[[nested]]",
           "|\n  kept\n  lines", ">\n  folded\n  text", "x # a comment", "&a x", "*a", "!!str 5", "! 5", "!!int x",
           "[unclosed", "a: b: c", "'unclosed", "\t tab"]


def typed(value):
    """A value with the type of every part spelt out: 1, 1.0 and True are equal in Python, not in a note."""
    if isinstance(value, dict):
        return ("dict", [(typed(k), typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [typed(v) for v in value])
    return (type(value).__name__, repr(value))
