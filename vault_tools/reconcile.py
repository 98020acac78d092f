"""Reconcile: bring every decision note and the ledger into agreement, as if every change had been seen live.

It compares each note with the ledger and applies the commands' operations (seal, supersede, reject an edit,
record, write back a missing ruling) where they disagree, deciding each on the vault as the step before left
it. The same code runs at the watcher's start, after each quiet period and in `watch --once`; the watcher
(`watch`) decides *when*.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from . import durable, note_edits, notes
from .commands.agreement import matches_ledger
from .commands.amend import apply_owner_step, owner_step
from .commands.close import finish_interrupted_close, hand_made_events
from .commands.held import HELD_WHY, hold_one, is_held
from .commands.ids import awaiting_ids, give_ids
from .commands.merge_copies import file_merge_copies, merge_copies, record_merge_outcomes
from .commands.repair import pending_chain
from .commands.restore import describe, restore_missing
from .commands.revise import merge_twin_revisions, reject_edit
from .commands.seal import seal_one
from .commands.supersede import EditedSinceSealed, PendingWrites, supersede_now
from .commands.twins import merge_twin_notes
from .drafts import being_written, lacks_id
from .errors import NoteError, VaultToolsError
from .history import History
from .ledger_lines import STATUS_AFTER
from .model import FINAL_STATUSES, Decision, Status
from .record_files import NO_CALLS, agent_calls
from .services.live import LiveState
from .services.missing import ledgers_not_here, not_here_said
from .services.workspace import Workspace
from .tripwire import put_back_ledgers
from .vault import StatKey, VaultState

Progress = Callable[[int, int], None]  # (done, total), for a progress bar


PROGRESS_EVERY = 50  # notes between two reports of a reconcile's progress


# Rounds through the notes before reconciling gives up: each round goes through every note once, and one that
# changes nothing ends it (two rounds, three at most, on any vault seen so far).
MAX_RECONCILE_ROUNDS = 20


@dataclass(frozen=True)
class Action:
    """One thing reconciling did or found, for the watcher's log."""

    kind: str  # sealed, superseded, edit-rejected, restored, restore-deferred, recorded, kept, invalid, page-kept, pages
    id: str | None
    path: str | None
    why: str


@dataclass
class Reconciled:
    actions: list[Action] = field(default_factory=list)
    touched: set[str] = field(default_factory=set)  # vault-relative paths written
    busy: dict[str, float] = field(default_factory=dict)  # path -> mtime of a note still being typed
    busy_agreeing: set[str] = field(default_factory=set)  # notes of `busy` that agree with the ledger as they are
    in_agent_call: set[str] = field(default_factory=set)  # notes of `busy` an agent's call under way changed
    seal_deadlines: dict[str, float] = field(default_factory=dict)  # path -> when it may be sealed (epoch s)
    waiting_on: set[str] = field(default_factory=set)  # rulings of those that wait for a note they supersede
    state: VaultState | None = None  # the vault as reconciling left it
    # What could not be done just now (a note that could not be read, rounds that ran out): with `busy` and
    # `seal_deadlines`, what was left for a later reconcile. What the owner has to fix or decide is not in it.
    unresolved: list[Action] = field(default_factory=list)
    # path -> when the note of a sealed ruling went from there, too recently to write it back (epoch s)
    missing_since: dict[str, float] = field(default_factory=dict)


# docs/design/0018-the-reconcile-reads-the-vault-once.md
def reconcile(ws: Workspace, *, quiet_before: float, seal_before: float | None,
              progress: Progress | None = None,
              before_fork: Callable[[Mapping[str, StatKey], list[str]], None] | None = None,
              missing_before: float | None = None) -> Reconciled:
    """Bring notes and ledger into agreement, as if every change had been seen live.

    Notes modified after `quiet_before` (epoch seconds) are still being typed and
    are left for later. Ruled notes unchanged since `seal_before` are sealed;
    `None` means seal nothing and only say when they will be. The vault is read
    once; after each change the notes it wrote and the events it appended are read
    again (`LiveState`), so every decision is taken on the current state. Rounds go
    through the notes in order (after the first, those that changed since they were
    looked at) until one changes nothing. `progress(done, total)` is told how far a
    round has gone. `before_fork` stops the caller's other threads before a child is forked to work ahead
    (see `LiveState.before_fork`). Sealed rulings whose note is gone are written back; with `missing_before`,
    only those gone since before then (epoch seconds). Before anything, ledger lines another program took out
    are put back (`tripwire`).
    """
    result = Reconciled()
    for put_back in put_back_ledgers(ws.vault.ledger):  # lines another program took out of the ledger, first
        result.actions.append(Action("restored", None, put_back.shown, f"{put_back.lines} ledger line(s) another "
                                                                       "program took out, put back from this "
                                                                       "device's copy"))
    with ws.vault.ledger.locked(), ws.vault.ledger.synced_together(), LiveState(ws) as live, \
            durable.sync_threads_kept():
        live.before_fork = before_fork
        ws.remove_stale_temps(live.state)
        _Reconcile(ws, live, result, quiet_before, seal_before, progress, missing_before).run()
        result.state = live.state
    return result


class _Reconcile:
    """One reconcile: rounds through the notes, each decided on the vault as the previous step left it.

    The first round looks at every note that is quiet; each later one only at those that changed since they
    were looked at (their note, their record, a note they name in `supersedes` or `alongside`, or the set of
    notes). A round that changes nothing ends the reconcile."""

    def __init__(self, ws: Workspace, live: LiveState, result: Reconciled, quiet_before: float,
                 seal_before: float | None, progress: Progress | None = None,
                 missing_before: float | None = None) -> None:
        self.ws = ws
        self.agent_calls = NO_CALLS  # the agent's tool calls under way and ended: see `commands.held`
        self.missing_before = missing_before
        self.live = live
        self.result = result
        self.progress = progress
        self.quiet_before = quiet_before
        self.seal_before = seal_before
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
        self.not_here: dict[str, str] = {}  # id -> tag of a device whose ledger has not arrived (see `run`)

    @property
    def state(self) -> VaultState:
        return self.live.state

    def run(self) -> None:
        if self.seal_before is not None:  # ids for notes made without one, once left alone for the sealing delay
            self.give_ids()
        self.merge_twin_revisions()
        self.merge_twin_notes()
        self.record_merge_outcomes()
        known_ids = {event.id for history in self.live.known.values() for event in history.events}
        self.not_here = {decision.id: tag for tag, found in
                         ledgers_not_here(self.ws.vault.root, self.state.decisions, known_ids).items()
                         for decision in found}
        self.agent_calls = agent_calls(self.ws.vault.root)
        for _ in range(MAX_RECONCILE_ROUNDS):
            if not self.round():
                break
        else:
            self.looking_at = "rounds"
            self.invalid(None, None, f"still changing notes after {MAX_RECONCILE_ROUNDS} rounds through the vault; "
                                     "the last changes are in the log above", left=True)
        self.restore_missing()
        self.result.seal_deadlines = {rel: when for rel, when in self.deadlines.items()
                                        if rel in self.seen and self.live.decision_at(rel) is not None}
        for rel in awaiting_ids(self.state):  # finished but for its id: wake up when it may be given one
            saved = self.mtime_of(rel)
            if saved is not None:
                self.result.seal_deadlines[rel] = saved + self.ws.config.seal_delay_seconds
        self.result.waiting_on = self.waiting_on & self.result.seal_deadlines.keys()
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
        assert self.seal_before is not None
        given = give_ids(self.ws, quiet_before=self.seal_before, state=self.state)
        for item in given:
            self.saved_at[item.path] = item.saved_at  # the owner's last save, before the id was written
            self.result.touched.add(item.was)
            self.act("id-given", item.id, item.path, f"made without an id (was {item.was})")
        self.changed(removed=[item.was for item in given if item.was != item.path])

    def record_merge_outcomes(self) -> None:
        """Outcomes a merge kept only in a copy (typed, committed and pulled before any watcher saw them)."""
        for filed in file_merge_copies(self.ws):
            self.act("kept", None, filed, "one side of a note that git's notes driver merged")
        if next(merge_copies(self.ws), None) is None:
            return
        for done in record_merge_outcomes(self.ws, self.state, self.live.known):
            if done.problem is not None:
                self.invalid(done.id, done.copy, f"{done.copy} {done.problem}")
            else:
                self.act("recorded", done.id, done.copy, f"{done.outcome} in a note a merge met, not recorded "
                                                         "before; a conflict to settle where it differs from the note")
        self.changed()

    def merge_twin_revisions(self) -> None:
        """One edit that two devices' watchers each made a revision of becomes one revision again."""
        twins = merge_twin_revisions(self.ws, self.state)
        for loser, path, kept in twins:
            self.act("withdrawn", loser, path, f"the same revision as {kept}, made on another device")
        if twins:
            self.changed(removed=[path for _, path, _ in twins if path and not (self.state.root / path).exists()])

    def merge_twin_notes(self) -> None:
        """One note that two devices' watchers each gave an id keeps one record (see `commands.twins`)."""
        twins = merge_twin_notes(self.ws, self.state, self.live.known)
        for closed, path, kept in twins:
            self.act("withdrawn", closed, path, f"the same note as {kept}, given an id on another device too")
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
        result.in_agent_call.clear()
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
            elif self.agent_calls.under_way_at(os.path.join(state.root, decision.path)):
                result.busy[decision.path] = time.time()  # the agent's call looks at it first: again after it
                result.in_agent_call.add(decision.path)
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
        tag = self.not_here.get(decision.id)
        if tag is not None and history is None:
            self.invalid(decision.id, decision.path, not_here_said(tag))
            return
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
        if decision.held and is_held(self.ws, self.state, decision, history):
            self.invalid(decision.id, decision.path, HELD_WHY)  # the owner's to confirm
            return
        if self.agent_calls.changed_during(self.ws.vault.path_of(decision)) and \
                hold_one(self.ws, self.state, decision, history) is not None:  # no hook held it: a plain note made one
            self.act("held", decision.id, decision.path, HELD_WHY)
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
            if self.seal_before is None or mtime > self.seal_before or waiting_on:
                self.deadlines[decision.path] = mtime + ws.config.seal_delay_seconds
                if waiting_on:
                    self.waiting_on.add(decision.path)
                return
            sealed = seal_one(ws, self.state, decision, history, self.live.unchanged_text(decision.path),
                              pending=self.pending)
            self.act("sealed", sealed.id, sealed.path, "ruled and quiet for the sealing delay")
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
        typed = note_edits.file_text(note, note.text)
        if typed == latest.text or not any(e.text == typed for e in history.events if e is not latest):
            return False
        durable.write_atomic(self.ws.vault.path_of(decision), latest.text.encode("utf-8"))
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
        if note_edits.file_text(note, note.text) == seal.text:
            # The text is exactly what was sealed: what changed is around it. Restoring would change nothing.
            raise NoteError("reads differently from when it was sealed because a note it links to was renamed "
                            "or removed; restore that note or its name", path=decision.path)
        typed = note_edits.file_text(note, note.text)
        if history.settled is not None and any(event.text == typed for event in history.events if event is not seal):
            # A conflict was settled, and a merge or a rebase brought back a version the ledger already holds
            # from before: nothing typed is lost by putting the settled text back.
            durable.write_atomic(ws.vault.path_of(decision), seal.text.encode("utf-8"))
            self.act("restored", history.id, decision.path, "an earlier recorded version came back with a merge; "
                                                             "the current one put back")
            return
        if ws.seal_hash_of(state, decision) == seal.hash and \
                finish_interrupted_close(ws, state, decision, history, note):
            self.act(decision.status.value, decision.id, decision.path, "finished an interrupted operation")
            return
        if len(seal.text.encode("utf-8")) > notes.MAX_NOTE_BYTES:  # sealed too long to be read back (before the
            # limit held on every write): restoring would make it unreadable again, so the owner's cut is sealed
            ws.vault.ledger.append([ws.event("amended", decision, ws.config.default_ruler, record=history.record,
                                             hash=ws.seal_hash_of(state, decision),
                                             text=note_edits.file_text(note, note.text))])
            self.act("sealed", decision.id, decision.path, "a ruling sealed over the size limit, shortened by the "
                                                            "owner: sealed as it now reads")
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
