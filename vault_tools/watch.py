"""The watcher: a watchdog observer, a per-file debouncer, and when to reconcile.

The watcher decides *when*: after a file has been quiet for `debounce_ms` (each save restarts its wait, so
nothing is touched while the owner types), and for a ruling after `seal_delay_seconds`; `reconcile` decides *what*.
Its own writes are recognised by content hash and cause no work.
"""
from __future__ import annotations

import datetime as dt
import fnmatch
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from .commands.build import build
from .commands.harvest import harvest_changed
from .commands.review import write_review
from .commands.review_notes import last_review_day, waiting_reviews
from .commands.stats import stats, write_stats_page
from .errors import ConfigError, Unfinished, VaultToolsError
from .notes import stat_key
from .reconcile import Action, Progress, Reconciled, reconcile
from .record_files import STATE_DIR, WATCH_LOG
from .services.workspace import Workspace
from .vault import StatKey
from .vault_walk import notes_changed_since

EpochClock = Callable[[], float]  # seconds since the epoch, comparable with file times
# Longest the loop sleeps with nothing due: it wakes to see whether the day changed (a scheduled review),
# and a deadline that passed while the machine was suspended is acted on this long after it wakes at most.
IDLE_WAKE_SECONDS = 30.0
MAX_LEFT_SHOWN = 20  # lines `watch --once` shows of what it left; the rest are counted
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

    def __init__(self, quiet_seconds: float, clock: EpochClock = time.time) -> None:
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

    def forget(self, key: str) -> None:
        """No longer wait for `key` (what woke it was the watcher's own write)."""
        self._last.pop(key, None)

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
    """What the loop waits for: debounced paths and rulings in their sealing delay."""

    debouncer: Debouncer
    seal_at: dict[str, float] = field(default_factory=dict)  # path -> epoch second it may be sealed

    def next_deadline(self) -> float | None:
        deadlines = [d for d in (self.debouncer.next_deadline(), min(self.seal_at.values(), default=None)) if d]
        return min(deadlines) if deadlines else None


class Watcher:
    """Watches one vault. `start()` takes the lock and reconciles; `run()` loops until `stop()`."""

    def __init__(self, ws: Workspace, *, on_actions: Callable[[list[Action]], None], clock: EpochClock = time.time,
                 debounce_seconds: float | None = None, seal_delay_seconds: float | None = None) -> None:
        self.ws = ws
        self.vault = ws.vault
        self.on_actions = on_actions  # told what each pass did, together (a first reconcile: thousands)
        self.clock = clock
        config = ws.config
        self.debounce = config.debounce_ms / 1000 if debounce_seconds is None else debounce_seconds
        self.seal_delay = config.seal_delay_seconds if seal_delay_seconds is None else seal_delay_seconds
        self.schedule = Schedule(Debouncer(self.debounce, clock))
        self._reported_invalid: set[tuple[str | None, str]] = set()
        self.last_error: VaultToolsError | None = None  # what stopped the last pass, if anything
        self.left: list[str] = []  # what the last pass left for later, and why (one line each)
        self.progress: Progress | None = None  # told how far a reconcile of the whole vault has gone
        self._own_writes: dict[str, str] = {}  # relative path -> digest of what we last wrote there
        self._last_pass = False  # `watch --once`: nothing is watched after this pass
        self._condition = threading.Condition()
        self._stopping = False
        self._observer: Any = None  # a watchdog observer, once started
        # While the observer is stopped for a pass (see `process`): the notes' keys as read, the files listed,
        # and the pinned pages' and templates' keys when it stopped
        self._unobserved: tuple[Mapping[str, StatKey], list[str], dict[str, StatKey]] | None = None
        self._pass_touched: set[str] = set()  # the notes the last pass wrote, moved or removed
        self._lock = FileLock(str(self.vault.state_dir / "watch.lock"), timeout=0)
        self._next_review: dt.date | None = None  # when the scheduled review is due (None: look it up)

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

    def start(self, *, observe: bool = True) -> list[Action]:
        """Take the single-instance lock, start observing, then reconcile the whole vault.

        With `observe=False` no observer is started: events come only from whoever calls `notice()`.
        """
        self.acquire()
        if observe:  # started first: a change made during the reconcile is not missed
            self._observer = _observe(self, self.vault.root)
        return self.process(everything=True)

    def stop(self) -> None:
        with self._condition:
            self._stopping = True
            self._condition.notify_all()

    def run(self) -> None:
        """Loop until `stop()`: wait for the next deadline (or a notice), then `step()`."""
        while True:
            with self._condition:
                if self._stopping:
                    return
                deadline = self.schedule.next_deadline()
                timeout = IDLE_WAKE_SECONDS if deadline is None else max(0.0, deadline - self.clock())
                if timeout > 0:
                    self._condition.wait(timeout=min(timeout, IDLE_WAKE_SECONDS))
                if self._stopping:
                    return
            self.step()

    def step(self) -> list[Action]:
        """What the loop does each time it wakes, at the clock's current time: process the vault
        if a path has been quiet for the debounce time or a ruling's sealing delay has passed.

        The loop calls it after each wait; a test calls it directly with a scripted clock,
        after feeding `notice()` the paths an observer would have reported.
        """
        with self._condition:
            due = self.schedule.debouncer.due()
            now = self.clock()
            sealable = [p for p, when in self.schedule.seal_at.items() if when <= now]
        if due or sealable or self.review_due():
            return self.process(paths=due)
        return []

    def review_due(self) -> bool:
        """`review_every_days` after the last review (and none waiting): time to write the next one."""
        every = self.ws.config.review_every_days
        if every <= 0:
            return False
        if self._next_review is None:
            last = last_review_day(self.ws)
            waiting = bool(waiting_reviews(self.ws))
            self._next_review = dt.date.max if waiting else (last + dt.timedelta(days=every) if last else dt.date.min)
        return self.ws.today() >= self._next_review

    def _scheduled_review(self) -> list[Action]:
        """The review and the Stats page, written on the schedule; a review waiting for the owner is left alone."""
        if not self.review_due():
            return []
        self._next_review = None
        written = write_review(self.ws)
        page, _ = write_stats_page(self.ws, stats(self.ws))
        self._own_writes[page] = _digest(self.vault.root / page) or ""
        if not written.written:
            self._next_review = self.ws.today() + dt.timedelta(days=1)  # nothing to propose: look again tomorrow
            return []
        self._own_writes[written.path] = _digest(self.vault.root / written.path) or ""
        return [Action("review", None, written.path, f"{len(written.proposals)} proposal(s) for the owner to tick")]

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

    def run_once(self) -> None:
        """Reconcile the whole vault once under the single-watcher lock (`watch --once`); raises what
        stopped it, after it was logged, or `Unfinished` naming what it left for later."""
        self.acquire()
        self._last_pass = True
        try:
            self.process(everything=True)
        finally:
            self.release()
        if self.last_error is not None:
            raise self.last_error
        if self.left:
            shown = self.left[:MAX_LEFT_SHOWN]
            more = [f"and {len(self.left) - len(shown):,} more"] if len(self.left) > len(shown) else []
            raise Unfinished(f"left {len(self.left):,} decision note{'s' if len(self.left) > 1 else ''} "
                             "not reconciled:", details=[*shown, *more])

    def process(self, paths: list[str] | None = None, *, everything: bool = False) -> list[Action]:
        """Reconcile the vault, then rebuild the pages; report what was done.

        `paths` (what woke it) and `everything` only document the call: reconcile
        always looks at the whole vault, leaving notes still being typed for later.

        A reconcile with hundreds of rulings to seal forks a child to work ahead (`services.prefetch`), which
        a running observer would forbid and slow down (it would also be told of each note the reconcile
        writes): the observer is stopped then, and started again once the pass is done, every note that
        changed since the vault was read noticed as the observer would have.
        """
        try:
            return self._process(paths, everything)
        finally:
            self._observe_again()

    def _stop_observing(self, read_keys: Mapping[str, StatKey], files: list[str]) -> None:
        """Stop the observer until the pass is done (see `process`); `read_keys` and `files`: the notes as read.
        The pinned pages and templates, which the vault's read passes over, are looked at as they are now."""
        observer, self._observer = self._observer, None
        if observer is None:
            return
        self._unobserved = (read_keys, files, self._pages_and_templates())
        observer.stop()
        observer.join(timeout=5)  # a thread still running only keeps the child from being forked

    def _observe_again(self) -> None:
        if self._unobserved is None:
            return
        read_keys, files, pages = self._unobserved
        self._unobserved = None
        self._observer = _observe(self, self.vault.root)
        changed = notes_changed_since(self.vault.root, self.ws.config, read_keys, files)
        now = self._pages_and_templates()
        changed += sorted(rel for rel in pages.keys() | now.keys() if pages.get(rel) != now.get(rel))
        for rel in changed:  # what this pass removed or renamed itself is not looked at again
            if rel not in self._pass_touched or (self.vault.root / rel).exists():
                self.notice(str(self.vault.root / rel))

    def _pages_and_templates(self) -> dict[str, StatKey]:
        """The notes in the pinned and templates folders, with their stat keys."""
        found: dict[str, StatKey] = {}
        for folder in (self.ws.config.pinned_folder, self.ws.config.templates_folder):
            for current, folders, names in os.walk(self.vault.root / folder.strip("/")):
                folders[:] = [name for name in folders if not name.startswith(".")]
                for name in names:
                    if name.endswith(".md") and not name.startswith("."):
                        try:
                            stat = os.stat(os.path.join(current, name))
                        except OSError:
                            continue
                        rel = self.vault.relative(Path(current) / name)
                        found[rel] = stat_key(stat)
        return found

    def _process(self, paths: list[str] | None, everything: bool) -> list[Action]:
        actions: list[Action] = []
        self._pass_touched = set()
        now = self.clock()
        if paths:
            self._next_review = None  # a review may have been applied or removed: look again
        try:
            if paths and self.ws.config.harvest_on_change:
                actions += [Action("harvested", d.id, d.path, "a decision written in passing, proposed as a question")
                            for d in harvest_changed(self.ws, paths)]
            # `watch --once` writes back every ruling whose note is gone; a running watcher waits the sealing delay
            # first (see `commands.restore`)
            result = reconcile(self.ws, quiet_before=now - self.debounce, seal_before=now - self.seal_delay,
                               progress=self.progress if everything else None,
                               before_fork=self._stop_observing if self._observer is not None else None,
                               missing_before=None if self._last_pass else now - self.seal_delay)
            self._pass_touched = result.touched
            actions += result.actions
            actions += self._scheduled_review()
            built = build(self.ws, state=result.state, remembered=True)  # only what it wrote and kept is used
            actions += [Action("page-kept", None, None, f"a pinned page was edited by hand; copy kept in {kept}")
                        for kept in built.kept]
        except OSError as error:  # a note moved away mid-pass: the events it made bring it back
            actions.append(Action("invalid", None, error.filename, f"could not be read just now ({error.strerror}); "
                                  "will retry"))
            self.left = [f"{error.filename}: could not be read just now ({error.strerror}); run it again"]
            self._report(actions)
            return actions
        except VaultToolsError as error:  # a torn ledger, say: reported, and tried again on the next change
            self.last_error = error
            actions.append(Action("invalid", None, f"{error.path}:{error.line}" if error.line else error.path,
                                  error.message))
            self._report(actions)
            return actions
        self.last_error = None
        self.left = self._left(result, now)
        if not self._last_pass:  # after `watch --once`'s only pass, no event of its own writes comes
            digests = {rel: _digest(self.vault.root / rel) for rel in {*result.touched, *built.written}}
            self._own_writes.update((relative, digest) for relative, digest in digests.items() if digest)
            with self._condition:  # the observer reported these writes while they were made: they need no look
                for relative in result.touched:
                    if digests.get(relative):
                        self.schedule.debouncer.forget(relative)
        if built.written:
            actions.append(Action("pages", None, None, "rebuilt " + ", ".join(built.written)))
        with self._condition:
            self.schedule.seal_at = {**{rel: gone + self.seal_delay for rel, gone in result.missing_since.items()},
                                    **result.seal_deadlines}
            for relative, mtime in result.busy.items():
                self.schedule.debouncer.touch(relative, at=mtime)
        self._report(actions)
        return actions

    def _left(self, result: Reconciled, now: float) -> list[str]:
        """What a reconcile left for later, and why: notes still being typed, rulings inside their sealing delay,
        notes it could not reconcile."""
        left = [f"{action.path or 'the vault'}: {action.why}" for action in result.unresolved]
        for rel, mtime in sorted(result.busy.items()):
            if rel in result.busy_agreeing:
                continue
            if rel in result.in_agent_call:
                left.append(f"{rel}: changed during an agent's command still under way; looked at once it is done "
                            "(the tripwire after it holds what only the owner may do)")
                continue
            left.append(f"{rel}: saved {max(now - mtime, 0):.0f} s ago; looked at once left alone for "
                        f"{self.debounce:g} s (debounce_ms)")
        for rel, when in sorted(result.seal_deadlines.items(), key=lambda item: (item[1], item[0])):
            at = dt.datetime.fromtimestamp(when).astimezone(self.ws.tz).strftime("%H:%M:%S")
            if rel in result.waiting_on:
                left.append(f"{rel}: ruled; sealed once the notes it supersedes are left alone")
            else:
                left.append(f"{rel}: ruled; sealed once left alone for {self.seal_delay:g} s (seal_delay_seconds), at {at}, "
                            "or now with `vault-tools seal`")
        return left

    def _report(self, actions: list[Action]) -> None:
        """Say each thing once: a note that stays invalid is not reported again on every pass."""
        invalid = {(a.path, a.why) for a in actions if a.kind == "invalid"}
        told = [a for a in actions if a.kind != "invalid" or (a.path, a.why) not in self._reported_invalid]
        if told:
            self.on_actions(told)
        self._reported_invalid = invalid


def _observe(watcher: Watcher, root: Path) -> Any:
    """A started watchdog observer telling `watcher` of every change under `root` (watchdog is imported only
    here: `watch --once` has no use for it)."""
    from watchdog.events import (  # watchdog only for a running watcher, not `watch --once`
        FileSystemEvent,
        FileSystemEventHandler,
    )
    from watchdog.observers import Observer

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            if event.event_type in ("opened", "closed_no_write") or event.is_directory:
                return
            for path in (event.src_path, getattr(event, "dest_path", "")):
                if path:
                    watcher.notice(os.fsdecode(path))

    observer = Observer()
    observer.schedule(Handler(), str(root), recursive=True)
    observer.daemon = True
    observer.start()
    return observer


def open_log(state_dir: Path) -> logging.Logger:
    """The watcher's log file, `.vault-tools/watch.log`, rotated at 1 MB (three kept)."""
    logging.getLogger("watchdog").setLevel(logging.ERROR)  # its shutdown notices are not the owner's business
    logger = logging.getLogger("vault_tools.watch")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
    state_dir.mkdir(parents=True, exist_ok=True)  # this device's own folder: a fresh clone has none yet
    logger.addHandler(RotatingFileHandler(state_dir / WATCH_LOG, maxBytes=1_000_000, backupCount=3, encoding="utf-8"))
    return logger


def format_action(action: Action, as_json: bool, at: str | None = None) -> str:
    """One log line for an action: plain text, or a JSON object. `at`: when (now, unless given)."""
    at = at or dt.datetime.now().astimezone().isoformat(timespec="seconds")
    if as_json:
        return json.dumps({"at": at, "action": action.kind, "id": action.id, "path": action.path, "why": action.why},
                          ensure_ascii=False)
    subject = " ".join(part for part in (action.id, action.path) if part)
    return f"{at} {action.kind} {subject + ': ' if subject else ''}{action.why}"
