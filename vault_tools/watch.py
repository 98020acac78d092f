"""The watcher: a watchdog observer, a per-file debouncer and the reconcile loop.

What to do with a note is decided by `Service.reconcile`, the same code that
runs at start and in `watch --once`; this module only decides *when*: after a
file has been quiet for `debounce_ms` (each save restarts its wait, so nothing
is touched while the owner types), and for a ruling after `settle_seconds`.
Its own writes are recognised by content hash and cause no work.
"""
from __future__ import annotations

import datetime as dt
import fnmatch
import hashlib
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from filelock import FileLock, Timeout
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from .errors import ConfigError, VaultToolsError
from .service import Action, Service
from .vault import STATE_DIR

Clock = Callable[[], float]
IGNORED_NAMES = ("*.tmp", "*.swp", "*.swx", ".#*", "*~", ".~*", "4913")  # editor temp and swap files
IGNORED_FOLDERS = (".obsidian", ".trash", ".git", STATE_DIR)


def is_ignored(relative: str) -> bool:
    """Dot-folders, the trash, editor temp files and anything that is not a note."""
    parts = relative.split("/")
    if any(part.startswith(".") or part in IGNORED_FOLDERS for part in parts[:-1]):
        return True
    name = parts[-1]
    if name.startswith(".") or any(fnmatch.fnmatch(name, pattern) for pattern in IGNORED_NAMES):
        return True
    return not name.endswith(".md")


class Debouncer:
    """Per-key quiet-time debounce with an injectable clock: each touch restarts the key's wait."""

    def __init__(self, quiet_seconds: float, clock: Clock = time.time) -> None:
        self.quiet = quiet_seconds
        self.clock = clock
        self._last: dict[str, float] = {}

    def touch(self, key: str, at: float | None = None) -> None:
        self._last[key] = self.clock() if at is None else at

    def due(self) -> list[str]:
        """Keys quiet for the whole debounce time; they are handed over once."""
        now = self.clock()
        ready = sorted(key for key, last in self._last.items() if now - last >= self.quiet)
        for key in ready:
            del self._last[key]
        return ready

    def next_deadline(self) -> float | None:
        return min(self._last.values()) + self.quiet if self._last else None

    def __len__(self) -> int:
        return len(self._last)


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


@dataclass
class Schedule:
    """What the loop waits for: debounced paths and rulings settling."""

    debouncer: Debouncer
    settle: dict[str, float] = field(default_factory=dict)  # path -> epoch second it may be sealed

    def next_deadline(self) -> float | None:
        deadlines = [d for d in (self.debouncer.next_deadline(), min(self.settle.values(), default=None)) if d]
        return min(deadlines) if deadlines else None


class Watcher:
    """Watches one vault. `start()` takes the lock and reconciles; `run()` loops until `stop()`."""

    def __init__(self, service: Service, *, on_action: Callable[[Action], None], clock: Clock = time.time,
                 debounce_seconds: float | None = None, settle_seconds: float | None = None) -> None:
        self.service = service
        self.vault = service.vault
        self.on_action = on_action
        self.clock = clock
        config = service.config
        self.debounce = config.debounce_ms / 1000 if debounce_seconds is None else debounce_seconds
        self.settle = config.settle_seconds if settle_seconds is None else settle_seconds
        self.schedule = Schedule(Debouncer(self.debounce, clock))
        self._reported_invalid: set[tuple[str | None, str]] = set()
        self.last_error: VaultToolsError | None = None  # what stopped the last pass, if anything
        self._own_writes: dict[str, str] = {}  # relative path -> digest of what we last wrote there
        self._condition = threading.Condition()
        self._stopping = False
        self._observer: Observer | None = None  # type: ignore[valid-type]
        self._lock = FileLock(str(self.vault.state_dir / "watch.lock"), timeout=0)

    # -- lifetime ---------------------------------------------------------------

    def acquire(self) -> None:
        info = self.vault.state_dir / "watch.pid"
        try:
            self._lock.acquire()
        except Timeout:
            holder = info.read_text(encoding="utf-8").strip() if info.exists() else "another process"
            raise ConfigError(f"another watcher is already running on this vault ({holder})",
                              path=str(self.vault.root)) from None
        info.write_text(f"pid {os.getpid()}, started {dt.datetime.now().isoformat(timespec='seconds')}\n",
                        encoding="utf-8")

    def release(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None
        if self._lock.is_locked:
            (self.vault.state_dir / "watch.pid").unlink(missing_ok=True)
            self._lock.release()

    def start(self) -> None:
        """Take the single-instance lock, start observing, then reconcile the whole vault."""
        self.acquire()
        observer = Observer()  # started first: a change made during the reconcile is not missed
        observer.schedule(_Handler(self), str(self.vault.root), recursive=True)
        observer.daemon = True
        observer.start()
        self._observer = observer
        self.process(everything=True)

    def stop(self) -> None:
        with self._condition:
            self._stopping = True
            self._condition.notify_all()

    def run(self) -> None:
        """Loop until `stop()`: wait for the next deadline, then process what is due."""
        while True:
            with self._condition:
                if self._stopping:
                    return
                deadline = self.schedule.next_deadline()
                timeout = None if deadline is None else max(0.0, deadline - self.clock())
                if timeout is None or timeout > 0:
                    self._condition.wait(timeout=min(timeout, 1.0) if timeout is not None else 1.0)
                if self._stopping:
                    return
                due = self.schedule.debouncer.due()
                now = self.clock()
                settled = [p for p, when in self.schedule.settle.items() if when <= now]
            if due or settled:
                self.process(paths=due)

    # -- events -----------------------------------------------------------------

    def notice(self, absolute: str) -> None:
        """Called from the observer thread for every path an event names."""
        try:
            relative = self.vault.relative(Path(absolute))
        except ValueError:
            return
        if is_ignored(relative):
            return
        if self._own_writes.get(relative) is not None and self._own_writes[relative] == _digest(Path(absolute)):
            return
        with self._condition:
            self.schedule.debouncer.touch(relative)
            self._condition.notify_all()

    # -- work -------------------------------------------------------------------

    def process(self, paths: list[str] | None = None, *, everything: bool = False) -> list[Action]:
        """Reconcile the vault, then rebuild the pages; report what was done.

        `paths` (what woke it) and `everything` only document the call: reconcile
        always looks at the whole vault, leaving notes still being typed for later.
        """
        actions: list[Action] = []
        now = self.clock()
        try:
            result = self.service.reconcile(quiet_before=now - self.debounce, settle_before=now - self.settle)
            actions += result.actions
            built = self.service.build(state=result.state)
            actions += [Action("page-kept", None, None, f"a pinned page was edited by hand; copy kept in {kept}")
                        for kept in built.kept]
        except OSError as error:  # a note moved away mid-pass: the events it made bring it back
            actions.append(Action("invalid", None, error.filename, f"could not be read just now ({error.strerror}); "
                                  "will retry"))
            self._report(actions)
            return actions
        except VaultToolsError as error:  # a torn ledger, say: reported, and tried again on the next change
            self.last_error = error
            actions.append(Action("invalid", None, f"{error.path}:{error.line}" if error.line else error.path,
                                  error.message))
            self._report(actions)
            return actions
        self.last_error = None
        for relative in {*result.touched, *built.written}:
            digest = _digest(self.vault.root / relative)
            if digest:
                self._own_writes[relative] = digest
        if built.written:
            actions.append(Action("pages", None, None, "rebuilt " + ", ".join(built.written)))
        with self._condition:
            self.schedule.settle = dict(result.settle_deadlines)
            for relative, mtime in result.busy.items():
                self.schedule.debouncer.touch(relative, at=mtime)
        self._report(actions)
        return actions

    def _report(self, actions: list[Action]) -> None:
        """Say each thing once: a note that stays invalid is not reported again on every pass."""
        invalid = {(a.path, a.why) for a in actions if a.kind == "invalid"}
        for action in actions:
            if action.kind != "invalid" or (action.path, action.why) not in self._reported_invalid:
                self.on_action(action)
        self._reported_invalid = invalid


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write") or event.is_directory:
            return
        for path in (event.src_path, getattr(event, "dest_path", "")):
            if path:
                self.watcher.notice(os.fsdecode(path))
