"""The watcher: a watchdog observer, a per-file debouncer and reconcile.

`reconcile` compares every decision note with the ledger and applies the
commands' operations (seal, supersede, reject an edit, record) where they
disagree. The same code runs at start, after each quiet period and in
`watch --once`, so a change made while the watcher was stopped is handled as if
it had been seen live. The watcher decides *when*: after a file has been quiet
for `debounce_ms` (each save restarts its wait, so nothing is touched while the
owner types), and for a ruling after `settle_seconds`. Its own writes are
recognised by content hash and cause no work.
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
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from . import notes
from .commands.amend import apply_owner_step, owner_step
from .commands.build import build
from .commands.close import finish_interrupted_close, hand_made_events
from .commands.ids import awaiting_ids, give_ids
from .commands.live import LiveState
from .commands.repair import pending_chain
from .commands.restore import describe, restore_missing
from .commands.revise import merge_twin_revisions, reject_edit
from .commands.seal import seal_one
from .commands.sealed import matches_ledger
from .commands.supersede import EditedSinceSealed, PendingWrites, supersede_now
from .commands.workspace import Workspace
from .errors import ConfigError, NoteError, Unfinished, VaultToolsError
from .history import History
from .ledger_lines import STATUS_AFTER
from .model import FINAL_STATUSES, Decision, Status, being_written, lacks_id
from .notes import stat_key
from .vault import STATE_DIR, StatKey, VaultState, notes_changed_since

EpochClock = Callable[[], float]  # seconds since the epoch, comparable with file times
Progress = Callable[[int, int], None]  # (done, total), for a progress bar
PROGRESS_EVERY = 50  # notes between two reports of a reconcile's progress
# Rounds through the notes before reconciling gives up: each round goes through every note once, and one that
# changes nothing ends it (two rounds, three at most, on any vault seen so far).
MAX_RECONCILE_ROUNDS = 20
# Longest the loop sleeps with nothing due: it wakes to see whether the day changed (a scheduled review),
# and a deadline that passed while the machine was suspended is acted on this long after it wakes at most.
IDLE_WAKE_SECONDS = 30.0
MAX_LEFT_SHOWN = 20  # lines `watch --once` shows of what it left; the rest are counted
IGNORED_NAMES = ("*.tmp", "*.swp", "*.swx", ".#*", "*~", ".~*", "4913")  # editor temp and swap files
IGNORED_FOLDERS = (".obsidian", ".trash", ".git", STATE_DIR)


@dataclass(frozen=True)
class Action:
    """One thing reconciling did or found, for the watcher's log."""

    kind: str  # sealed, superseded, edit-rejected, restored, restore-deferred, recorded, invalid, page-kept, pages
    id: str | None
    path: str | None
    why: str


@dataclass
class Reconciled:
    actions: list[Action] = field(default_factory=list)
    touched: set[str] = field(default_factory=set)  # vault-relative paths written
    busy: dict[str, float] = field(default_factory=dict)  # path -> mtime of a note still being typed
    busy_agreeing: set[str] = field(default_factory=set)  # notes of `busy` that agree with the ledger as they are
    settle_deadlines: dict[str, float] = field(default_factory=dict)  # path -> when it may be sealed (epoch s)
    waiting_on: set[str] = field(default_factory=set)  # rulings of those that wait for a note they supersede
    state: VaultState | None = None  # the vault as reconciling left it
    # What could not be done just now (a note that could not be read, rounds that ran out): with `busy` and
    # `settle_deadlines`, what was left for a later reconcile. What the owner has to fix or decide is not in it.
    unresolved: list[Action] = field(default_factory=list)
    # path -> when the note of a sealed ruling went from there, too recently to write it back (epoch s)
    missing_since: dict[str, float] = field(default_factory=dict)


def reconcile(ws: Workspace, *, quiet_before: float, settle_before: float | None,
              progress: Progress | None = None,
              before_fork: Callable[[Mapping[str, StatKey], list[str]], None] | None = None,
              missing_before: float | None = None) -> Reconciled:
    """Bring notes and ledger into agreement, as if every change had been seen live.

    Notes modified after `quiet_before` (epoch seconds) are still being typed and
    are left for later. Ruled notes unchanged since `settle_before` are sealed;
    `None` means seal nothing and only say when they will be. The vault is read
    once; after each change the notes it wrote and the events it appended are read
    again (`LiveState`), so every decision is taken on the current state. Rounds go
    through the notes in order (after the first, those that changed since they were
    looked at) until one changes nothing. `progress(done, total)` is told how far a
    round has gone. `before_fork` stops the caller's other threads before a child is forked to work ahead
    (see `LiveState.before_fork`). Sealed rulings whose note is gone are written back; with `missing_before`,
    only those gone since before then (epoch seconds).
    """
    result = Reconciled()
    with ws.vault.ledger.locked(), ws.vault.ledger.synced_together(), LiveState(ws) as live, \
            notes.sync_threads_kept():
        live.before_fork = before_fork
        ws.remove_stale_temps(live.state)
        _Reconcile(ws, live, result, quiet_before, settle_before, progress, missing_before).run()
        result.state = live.state
    return result


class _Reconcile:
    """One reconcile: rounds through the notes, each decided on the vault as the previous step left it.

    The first round looks at every note that is quiet; each later one only at those that changed since they
    were looked at (their note, their record, a note they name in `supersedes` or `alongside`, or the set of
    notes). A round that changes nothing ends the reconcile."""

    def __init__(self, ws: Workspace, live: LiveState, result: Reconciled, quiet_before: float,
                 settle_before: float | None, progress: Progress | None = None,
                 missing_before: float | None = None) -> None:
        self.ws = ws
        self.missing_before = missing_before
        self.live = live
        self.result = result
        self.progress = progress
        self.quiet_before = quiet_before
        self.settle_before = settle_before
        self.reported: set[tuple[str | None, str]] = set()
        # What could not be reconciled, by the note (or step) it was found at; looked at again, it is found anew
        self.found: dict[str, dict[tuple[str | None, str], Action]] = {}
        self.looking_at = ""
        self.seen: dict[str, int] = {}  # path -> the view's version after this note was last looked at
        self.deadlines: dict[str, float] = {}  # path -> when a ruling may be sealed, as last looked at
        self.waiting_on: set[str] = set()  # rulings that wait for a note they supersede to be left alone
        # path -> (its time as this reconcile left it, the owner's last save before): a note this reconcile
        # wrote was left alone by the owner, so its own write does not make it "still being typed"
        self.own_writes: dict[str, tuple[float, float]] = {}
        self.saved_at: dict[str, float] = {}  # path -> the owner's last save, as this round found it
        self.pending = PendingWrites(ws)  # seals, questions recorded and supersessions, written together

    @property
    def state(self) -> VaultState:
        return self.live.state

    def run(self) -> None:
        if self.settle_before is not None:  # ids for notes made without one, once left alone to settle
            self.give_ids()
        self.merge_twin_revisions()
        for _ in range(MAX_RECONCILE_ROUNDS):
            if not self.round():
                break
        else:
            self.looking_at = "rounds"
            self.invalid(None, None, f"still changing notes after {MAX_RECONCILE_ROUNDS} rounds through the vault; "
                                     "the last changes are in the log above", left=True)
        self.restore_missing()
        self.result.settle_deadlines = {rel: when for rel, when in self.deadlines.items()
                                        if rel in self.seen and self.live.decision_at(rel) is not None}
        for rel in awaiting_ids(self.state):  # finished but for its id: wake up when it may be given one
            saved = self.mtime_of(rel)
            if saved is not None:
                self.result.settle_deadlines[rel] = saved + self.ws.config.settle_seconds
        self.result.waiting_on = self.waiting_on & self.result.settle_deadlines.keys()
        self.result.busy_agreeing = {rel for rel in self.result.busy if self.agrees(rel)}
        self.result.unresolved = [action for found in self.found.values() for action in found.values()]

    def invalid(self, decision_id: str | None, path: str | None, why: str, *, left: bool = False) -> None:
        """Report what cannot be reconciled: the owner's to fix or decide (shown on the pages), or, `left`, what
        could not be done just now and is left for a later reconcile."""
        action = Action("invalid", decision_id, path, why)
        if left:
            self.found.setdefault(self.looking_at, {})[(path, why)] = action
        if (path, why) not in self.reported:
            self.result.actions.append(action)
            self.reported.add((path, why))

    def act(self, kind: str, decision_id: str | None, path: str | None, why: str) -> None:
        self.result.actions.append(Action(kind, decision_id, path, why))

    def changed(self, removed: Iterable[str] = ()) -> bool:
        """Bring the view up to date with what the last step wrote; True when it wrote anything."""
        # A note whose held events have just reached the ledger, untouched since it was looked at, is as it was
        # left by its step, as if those had been written then: it is not looked at again for them.
        looked_at = [rel for rel in self.pending.take_landed()
                     if rel in self.seen and not self.live.changed_since(rel, self.seen[rel])]
        if not self.live.refresh(removed):
            return False
        for rel in looked_at:
            if rel not in self.live.written:
                self.seen[rel] = self.live.version
        for rel in self.live.written:
            try:
                after = os.stat(os.path.join(self.state.root, rel)).st_mtime
            except OSError:
                continue
            before = self.own_writes[rel][1] if rel in self.own_writes else self.saved_at.get(rel, self.quiet_before)
            self.own_writes[rel] = (after, before)
        self.result.touched |= self.live.written
        return True

    def give_ids(self) -> None:
        assert self.settle_before is not None
        given = give_ids(self.ws, quiet_before=self.settle_before, state=self.state)
        for item in given:
            self.saved_at[item.path] = item.saved_at  # the owner's last save, before the id was written
            self.result.touched.add(item.was)
            self.act("id-given", item.id, item.path, f"made without an id (was {item.was})")
        self.changed(removed=[item.was for item in given if item.was != item.path])

    def merge_twin_revisions(self) -> None:
        """One edit that two devices' watchers each made a revision of becomes one revision again."""
        twins = merge_twin_revisions(self.ws, self.state)
        for loser, path, kept in twins:
            self.act("withdrawn", loser, path, f"the same revision as {kept}, made on another device")
        if twins:
            self.changed(removed=[path for _, path, _ in twins if path and not (self.state.root / path).exists()])

    def restore_missing(self) -> None:
        """Sealed rulings in force whose note is gone, written back from the ledger (see `commands.restore`)."""
        self.looking_at = "missing notes"
        self.found.pop(self.looking_at, None)
        restoring = restore_missing(self.ws, self.state, self.missing_before)
        for item in restoring.done:
            self.act("restored", item.id, item.path, describe(item))
        for why in restoring.failed:
            self.invalid(None, None, why, left=True)
        self.result.missing_since = restoring.waiting
        if restoring.done:
            self.changed()

    def mtime_of(self, rel: str) -> float | None:
        try:
            mtime = os.stat(os.path.join(self.state.root, rel)).st_mtime  # a str path: pathlib costs more here
        except OSError:
            return None
        after, before = self.own_writes.get(rel, (None, None))
        if after == mtime and before is not None:
            mtime = before  # our own write: the owner's last save is what counts
        self.saved_at[rel] = mtime
        return mtime

    def due(self, decision: Decision) -> bool:
        """Whether to look at this note in this round: never looked at, or changed since, or a note it names."""
        seen = self.seen.get(decision.path)
        if seen is None or self.live.changed_since(decision.path, seen):
            return True
        by_id, resolve = self.state.by_id(), self.state.resolver()
        for link in (*decision.supersedes, *decision.alongside, *filter(None, [decision.superseded_by])):
            named = by_id.get(resolve(link) or "")
            if named is not None and self.live.touched_at.get(named.path, 0) > seen:
                return True
        return False

    def round(self) -> bool:
        """Each note due, in order, on the current state; True when a note or the ledger was written."""
        state, result = self.state, self.result
        result.busy.clear()
        for error in state.broken:
            if lacks_id(state.properties.get(error.path or "")):  # being written: what it still needs
                self.invalid(None, error.path, being_written(state.problems.get(error.path or "", [])))
                continue
            self.invalid(None, f"{error.path}:{error.line}" if error.line else error.path, error.message)
        quiet: list[tuple[str, float]] = []
        for decision in sorted(state.decisions, key=lambda d: d.order):
            mtime = self.mtime_of(decision.path)
            if mtime is None:
                continue
            if mtime > self.quiet_before:
                result.busy[decision.path] = mtime  # still being typed: left for the next quiet period
            elif self.due(decision):
                quiet.append((decision.path, mtime))
        try:
            changed = self.look_at(quiet)
        except BaseException:
            self.pending.write_before_failing()  # the rulings sealed before it keep their supersessions
            raise
        changed |= self.write_pending()
        for rel in result.busy:
            self.seen.pop(rel, None)  # saved again meanwhile: looked at anew once quiet
        return self.finish_supersessions() or changed

    def look_at(self, quiet: list[tuple[str, float]]) -> bool:
        """Reconcile each of these notes (path, the owner's last save) in turn; True when any step wrote."""
        live, changed = self.live, False
        live.work_ahead(rel for rel, _ in quiet)  # on the first round: a child starts on what sealing needs
        for done, (rel, mtime) in enumerate(quiet):
            if self.progress is not None and done % PROGRESS_EVERY == 0:
                self.progress(done, len(quiet))
            current = live.decision_at(rel)  # as the steps before left it
            if current is not None and self.pending.names_held(self.state, current):
                self.pending.append_held()
                changed |= self.changed()
                current = live.decision_at(rel)
            if current is not None and self.pending and \
                    self.pending.needed_by(self.state, current, live.history_of):
                changed |= self.write_pending()
                current = live.decision_at(rel)
            if current is None:
                continue
            self.looking_at = rel
            self.found.pop(rel, None)
            self.deadlines.pop(rel, None)
            self.waiting_on.discard(rel)
            try:
                self.reconcile_one(current, mtime)
            except VaultToolsError as error:
                self.invalid(current.id, current.path, error.message)
            except OSError as error:  # renamed or deleted while being read: the next quiet period sees it anew
                self.invalid(current.id, current.path, f"could not be read just now ({error.strerror}); will retry",
                             left=True)
            changed |= self.changed()
            self.seen[rel] = live.version
        if self.progress is not None and quiet:
            self.progress(len(quiet), len(quiet))
        return changed

    def write_pending(self) -> bool:
        """Write what was held back (see `PendingWrites`); True when anything was written."""
        if not self.pending:
            return False
        self.pending.write()  # what it could not write is a pending chain `finish_supersessions` looks at
        return self.changed()

    def agrees(self, rel: str) -> bool:
        """Whether a note left alone because it is being typed already agrees with the ledger as it is: sealed
        and unchanged, or a question recorded as it stands (then nothing was left undone)."""
        decision = self.live.decision_at(rel)
        history = self.live.history_of(decision) if decision is not None else None
        if decision is None or history is None or history.conflict is not None:
            return False
        if history.seal is not None:
            return matches_ledger(self.ws, self.state, decision, history)
        return decision.status in (Status.OPEN, Status.WITHDRAWN) and history.status is decision.status

    def reconcile_one(self, decision: Decision, mtime: float) -> None:
        history = self.live.history_of(decision)
        duplicated = self.ws.duplicated(self.state)
        if decision.id in duplicated:  # which record is which waits for `renumber`: nothing is written
            others = ", ".join(d.path for d in duplicated[decision.id] if d.path != decision.path)
            self.invalid(decision.id, decision.path, f"id {decision.id} is also used by {others}; left alone "
                         f"until one is renumbered (vault-tools renumber {decision.id} --path ...)")
            return
        if history is not None and history.conflict is not None:
            conflict = history.conflict
            self.invalid(decision.id, decision.path, f"in conflict ({' / '.join(conflict.outcomes)}, recorded on "
                         f"different clones); left alone until settled (vault-tools settle {decision.id} ...)")
            return
        # A sealed note whose id was changed in place: the note at its path is that note, edited.
        lost = self.live.lost_at(decision.path) if history is None else None
        if lost is not None:
            self.reject_edit(decision, lost)
            return
        self.apply_lifecycle(decision, history, mtime)

    def apply_lifecycle(self, decision: Decision, history: History | None, mtime: float) -> None:
        """Seal a quiet ruling, or record a question made or withdrawn by hand."""
        ws = self.ws
        if history is not None and history.seal is not None:
            self.enforce_seal(decision, history)
            return
        if history is not None and history.status in FINAL_STATUSES and decision.status is not history.status:
            if self.restore_latest(decision, history):
                return
            raise NoteError(f"was {history.status.value} (final), but the note now says {decision.status.value}; "
                            "ask again as a new question", path=decision.path, line=decision.line_of("status"))
        if decision.status is Status.RULED:
            waiting_on = ws.targets_paths(self.state, decision) & set(self.result.busy)
            if self.settle_before is None or mtime > self.settle_before or waiting_on:
                self.deadlines[decision.path] = mtime + ws.config.settle_seconds
                if waiting_on:
                    self.waiting_on.add(decision.path)
                return
            sealed = seal_one(ws, self.state, decision, history, self.live.unchanged_text(decision.path),
                              pending=self.pending)
            self.act("sealed", sealed.id, sealed.path, "ruled and quiet for the settle window")
            return
        # Below, only the ledger is written.
        if (history is None or history.status is None) and decision.status in (Status.OPEN, Status.WITHDRAWN):
            kind = "asked" if decision.status is Status.OPEN else "withdrawn"
            self.pending.hold(decision.path, hand_made_events(ws, decision, kind, history,
                                                              self.live.unchanged_text(decision.path)))
            self.act("recorded", decision.id, decision.path, f"new {decision.status.value} note")
        elif history is not None and history.status is Status.OPEN and decision.status is Status.WITHDRAWN:
            self.pending.hold(decision.path, hand_made_events(ws, decision, "withdrawn", history,
                                                              self.live.unchanged_text(decision.path)))
            self.act("recorded", decision.id, decision.path, "withdrawn in Obsidian")

    def restore_latest(self, decision: Decision, history: History) -> bool:
        """A question the ledger closed (withdrawn) whose note a merge brought back to a version the ledger
        holds from before: put the latest recorded text back. Nothing typed is lost, its text is in the ledger.
        (A merge of two clones that each added the note, as after a rebase, has no common base: git's driver
        keeps this clone's lines, which may be the older ones.)"""
        latest = next((e for e in reversed(history.events) if e.text is not None), None)
        if latest is None or latest.text is None or STATUS_AFTER.get(latest.event) is not history.status:
            return False
        note = self.ws.read(self.ws.vault.path_of(decision))
        typed = notes.file_text(note, note.text)
        if typed == latest.text or not any(e.text == typed for e in history.events if e is not latest):
            return False
        notes.write_atomic(self.ws.vault.path_of(decision), latest.text.encode("utf-8"))
        self.act("restored", history.id, decision.path, "an earlier recorded version came back with a merge; "
                                                         "the current one put back")
        return True

    def enforce_seal(self, decision: Decision, history: History) -> None:
        """A sealed note that no longer matches the ledger: finish an interrupted closing, or reject the edit."""
        ws, state, seal = self.ws, self.state, history.seal
        assert seal is not None and seal.text is not None
        if matches_ledger(ws, state, decision, history):
            return
        note = ws.read(ws.vault.path_of(decision))
        if notes.file_text(note, note.text) == seal.text:
            # The text is exactly what was sealed: what changed is around it. Restoring would change nothing.
            raise NoteError("reads differently from when it was sealed because a note it links to was renamed "
                            "or removed; restore that note or its name", path=decision.path)
        typed = notes.file_text(note, note.text)
        if history.settled is not None and any(event.text == typed for event in history.events if event is not seal):
            # A conflict was settled, and a merge or a rebase brought back a version the ledger already holds
            # from before: nothing typed is lost by putting the settled text back.
            notes.write_atomic(ws.vault.path_of(decision), seal.text.encode("utf-8"))
            self.act("restored", history.id, decision.path, "an earlier recorded version came back with a merge; "
                                                             "the current one put back")
            return
        if ws.seal_hash_of(state, decision) == seal.hash and \
                finish_interrupted_close(ws, state, decision, history, note):
            self.act(decision.status.value, decision.id, decision.path, "finished an interrupted operation")
            return
        step = owner_step(ws, state, decision, history)
        if step is not None and step.kind == "incomplete":
            self.invalid(decision.id, decision.path, step.why)  # left as typed: the owner is not done
            return
        if step is not None:
            apply_owner_step(ws, state, decision, history, note, step)
            self.act(step.kind, decision.id, decision.path, step.why)
            return
        self.reject_edit(decision, history, note)

    def reject_edit(self, decision: Decision, history: History, note: notes.Note | None = None) -> None:
        ws = self.ws
        note = note or ws.read(ws.vault.path_of(decision))
        done = reject_edit(ws, self.state, decision, history, note)
        if done.as_revision:
            why = f"in-place edit of a sealed note; the typed text is kept in {done.kept_in}"
        else:
            why = f"the fields vault-tools writes were edited; the edited copy is kept in {done.kept_in}"
        self.act("edit-rejected", history.id, decision.path, why)
        if done.restored:
            self.act("restored", history.id, decision.path, "sealed text put back")
        else:
            self.act("restore-deferred", history.id, decision.path,
                     "saved again while being restored; retrying after the next quiet period")
            self.found.setdefault(self.looking_at, {})[(decision.path, "restore")] = Action(
                "restore-deferred", history.id, decision.path, "saved again while its sealed text was being put back; "
                "put back once left alone")

    def finish_supersessions(self) -> bool:
        """A sealed ruling whose `supersedes` were not all applied (a crash in between): apply them."""
        ws, changed = self.ws, False
        self.looking_at = "chains"
        self.found.pop("chains", None)
        for ruling, target in pending_chain(ws, self.state):
            current = self.live.decision_at(target.path)
            if target.path in self.result.busy:
                self.invalid(target.id, target.path, f"not marked superseded by {ruling.id} yet: saved again "
                             "meanwhile; done once left alone", left=True)
                continue
            if current is None or current.id != target.id or current.status is not Status.RULED:
                continue  # changed by a step before: the next round looks again
            try:
                supersede_now(ws, self.state, current, self.live.decision_at(ruling.path) or ruling)
            except EditedSinceSealed:  # saved in place while this reconcile ran
                self.invalid(target.id, target.path, f"not marked superseded by {ruling.id} yet: edited in place "
                             "while being reconciled; done once that edit is kept as a revision", left=True)
                continue
            except VaultToolsError as error:
                self.invalid(target.id, target.path, error.message)
            except OSError as error:
                self.invalid(target.id, target.path, f"could not be read just now ({error.strerror}); will retry",
                             left=True)
            else:
                self.act("superseded", target.id, target.path, f"superseded by {ruling.id}")
            changed |= self.changed()
        return changed


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
    """What the loop waits for: debounced paths and rulings settling."""

    debouncer: Debouncer
    settle: dict[str, float] = field(default_factory=dict)  # path -> epoch second it may be sealed

    def next_deadline(self) -> float | None:
        deadlines = [d for d in (self.debouncer.next_deadline(), min(self.settle.values(), default=None)) if d]
        return min(deadlines) if deadlines else None


class Watcher:
    """Watches one vault. `start()` takes the lock and reconciles; `run()` loops until `stop()`."""

    def __init__(self, ws: Workspace, *, on_actions: Callable[[list[Action]], None], clock: EpochClock = time.time,
                 debounce_seconds: float | None = None, settle_seconds: float | None = None) -> None:
        self.ws = ws
        self.vault = ws.vault
        self.on_actions = on_actions  # told what each pass did, together (a first reconcile: thousands)
        self.clock = clock
        config = ws.config
        self.debounce = config.debounce_ms / 1000 if debounce_seconds is None else debounce_seconds
        self.settle = config.settle_seconds if settle_seconds is None else settle_seconds
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
        if a path has been quiet for the debounce time or a ruling's settle window has passed.

        The loop calls it after each wait; a test calls it directly with a scripted clock,
        after feeding `notice()` the paths an observer would have reported.
        """
        with self._condition:
            due = self.schedule.debouncer.due()
            now = self.clock()
            settled = [p for p, when in self.schedule.settle.items() if when <= now]
        if due or settled or self.review_due():
            return self.process(paths=due)
        return []

    def review_due(self) -> bool:
        """`review_every_days` after the last review (and none waiting): time to write the next one."""
        every = self.ws.config.review_every_days
        if every <= 0:
            return False
        if self._next_review is None:
            from .commands.review_notes import last_review_day, waiting_reviews
            last = last_review_day(self.ws)
            waiting = bool(waiting_reviews(self.ws))
            self._next_review = dt.date.max if waiting else (last + dt.timedelta(days=every) if last else dt.date.min)
        return self.ws.today() >= self._next_review

    def _scheduled_review(self) -> list[Action]:
        """The review and the Stats page, written on the schedule; a review waiting for the owner is left alone."""
        if not self.review_due():
            return []
        from .commands.review import write_review
        from .commands.stats import stats, write_stats_page
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

        A reconcile with hundreds of rulings to seal forks a child to work ahead (`commands.ahead`), which
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
                from .commands.import_ import harvest_changed
                actions += [Action("harvested", d.id, d.path, "a decision written in passing, proposed as a question")
                            for d in harvest_changed(self.ws, paths)]
            # `watch --once` writes back every ruling whose note is gone; a running watcher waits the settle
            # window first (see `commands.restore`)
            result = reconcile(self.ws, quiet_before=now - self.debounce, settle_before=now - self.settle,
                               progress=self.progress if everything else None,
                               before_fork=self._stop_observing if self._observer is not None else None,
                               missing_before=None if self._last_pass else now - self.settle)
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
            self.schedule.settle = {**{rel: gone + self.settle for rel, gone in result.missing_since.items()},
                                    **result.settle_deadlines}
            for relative, mtime in result.busy.items():
                self.schedule.debouncer.touch(relative, at=mtime)
        self._report(actions)
        return actions

    def _left(self, result: Reconciled, now: float) -> list[str]:
        """What a reconcile left for later, and why: notes still being typed, rulings inside their settle
        window, notes it could not reconcile."""
        left = [f"{action.path or 'the vault'}: {action.why}" for action in result.unresolved]
        for rel, mtime in sorted(result.busy.items()):
            if rel in result.busy_agreeing:
                continue
            left.append(f"{rel}: saved {max(now - mtime, 0):.0f} s ago; looked at once left alone for "
                        f"{self.debounce:g} s (debounce_ms)")
        for rel, when in sorted(result.settle_deadlines.items(), key=lambda item: (item[1], item[0])):
            at = dt.datetime.fromtimestamp(when).astimezone(self.ws.tz).strftime("%H:%M:%S")
            if rel in result.waiting_on:
                left.append(f"{rel}: ruled; sealed once the notes it supersedes are left alone")
            else:
                left.append(f"{rel}: ruled; sealed once left alone for {self.settle:g} s (settle_seconds), at {at}, "
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
    from watchdog.events import FileSystemEvent, FileSystemEventHandler
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
    logger.addHandler(RotatingFileHandler(state_dir / "watch.log", maxBytes=1_000_000, backupCount=3, encoding="utf-8"))
    return logger


def format_action(action: Action, as_json: bool, at: str | None = None) -> str:
    """One log line for an action: plain text, or a JSON object. `at`: when (now, unless given)."""
    at = at or dt.datetime.now().astimezone().isoformat(timespec="seconds")
    if as_json:
        return json.dumps({"at": at, "action": action.kind, "id": action.id, "path": action.path, "why": action.why},
                          ensure_ascii=False)
    subject = " ".join(part for part in (action.id, action.path) if part)
    return f"{at} {action.kind} {subject + ': ' if subject else ''}{action.why}"
