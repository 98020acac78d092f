"""Superseding: which rulings a new ruling replaces, and marking each of them superseded."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import durable, note_edits, notes
from ..decision_words import decision_terms
from ..errors import InconsistentVault, Refused, VaultToolsError
from ..history import History, new_record
from ..ledger_lines import Event
from ..links import unresolved_link
from ..matter import named_ids, question_terms, shares_substance
from ..meaning import seal_hash
from ..model import Decision, Status, id_matches, superseded_changes
from ..services.workspace import Workspace
from ..topics import topics_match
from ..vault import VaultState
from .agreement import matches_ledger, unreviewed_edit


@dataclass(frozen=True)
class SupersedePlan:
    note: notes.Note  # the old note as read
    text: str  # its text once marked superseded
    record: str  # the old note's record
    updated: Decision
    successor: Decision
    reason: str
    parsed: notes.Note | None = None  # `text`, parsed


def refuse_an_unrelated_target(decision: Decision, targets: Iterable[Decision], reason: str | None, *,
                               topics_given: bool = True) -> None:
    """A ruling an agent says replaces another shares a topic with it, or a word of substance (the same-matter
    check's floor, `matter.shares_substance`: a replacement may say the matter in new words, but never in none of
    the old), or its reason names it: a mistyped id would otherwise end a ruling on another matter for good (a
    superseded ruling never comes back).
    `topics_given`: whether the command takes `--topic` (its refusal then offers it)."""
    named = named_ids(reason or "")
    for target in targets:
        if target.status is not Status.RULED or any(id_matches(typed, target.id) for typed in named) or any(
                topics_match(mine, theirs) for mine in decision.topics for theirs in target.topics):
            continue
        if not shares_substance(question_terms(decision.summary, decision.topics), decision_terms(target)):
            raise Refused(
                f"a ruling on {', '.join(decision.topics)} would supersede {target.id}, which is on another matter "
                f"({', '.join(target.topics)}): {target.summary}",
                details=[f"Check the id. If it does replace {target.id}, say so in --reason, naming {target.id}"
                         + (f", or add its topic (--topic {target.topics[0]})." if target.topics and topics_given
                            else ".")])


def supersede_targets(ws: Workspace, state: VaultState, decision: Decision, links: Iterable[str]) -> list[Decision]:
    """The rulings `decision` will supersede; refuses a target that is missing, not current,
    or edited in place since it was sealed (that edit has to be reviewed first)."""
    links = list(links)
    if not links:
        return []
    by_id, resolve = state.by_id(), ws.resolver_with(state, decision)
    known = ws.histories()
    targets = []

    def where() -> dict[str, Any]:  # a ruling given on the command line is not written yet: no file to name
        on_disk = ws.vault.path_of(decision).exists()
        return {"path": decision.path, "line": decision.line_of("supersedes")} if on_disk else {}

    for link in links:
        target_id = resolve(link)
        if target_id is None or target_id not in by_id:
            raise Refused(unresolved_link(resolve, link), **where())
        target = by_id[target_id]
        if target_id == decision.id:
            raise Refused("a ruling cannot supersede itself", **where())
        ws.check_writable(state, target)
        history = ws.history_of(state, target, known)
        status = (history.status if history is not None else None) or target.status
        if status is Status.OPEN and target.status is Status.OPEN:
            continue  # a question it answers (`answered_questions`), not a ruling it replaces
        if target.status is not Status.RULED or status is not Status.RULED:
            successor = f" by {target.superseded_by}" if target.superseded_by else ""
            raise Refused(f"{target.id} is {status.value}{successor}; only a current ruling can be superseded",
                          **where())
        edited = unreviewed_edit(ws, state, target, history)
        if edited:
            raise InconsistentVault(edited, path=target.path)
        targets.append(target)
    return targets


# docs/design/0039-a-ruling-that-supersedes-a-question-answers-it.md
def answered_questions(ws: Workspace, state: VaultState, decision: Decision) -> list[Decision]:
    """The open questions a ruling names in `supersedes`: it answers them, and sealing it closes each (withdrawn,
    its reason naming the answer) rather than refusing the link, so no question stays open beside its answer."""
    resolve, by_id = ws.resolver_with(state, decision), state.by_id()
    found = []
    for link in decision.supersedes:
        target = by_id.get(resolve(link) or "")
        if target is None or target.id == decision.id or target.status is not Status.OPEN:
            continue
        history = ws.history_of(state, target)  # every record's events, only where a question is named
        if history is None or history.status in (None, Status.OPEN):
            found.append(target)
    return found


def answered_changes(answer: Decision) -> dict[str, str]:
    """What closing a question answered by `answer` changes in its note."""
    return {"status": Status.WITHDRAWN.value, "reason": f"Answered by [[{answer.title}]]: {answer.summary}"}


def close_answered(ws: Workspace, state: VaultState, answer: Decision, questions: Iterable[Decision],
                   actor: str) -> list[Event]:
    """Close each question `answer` answers: its note withdrawn, its reason naming the answer; returns the
    `withdrawn` events, for the caller to write with the answer's own."""
    events = []
    for question in questions:
        path = ws.vault.path_of(question)
        note = ws.read(path)
        changes = answered_changes(answer)
        text = note_edits.with_fields(note, changes)
        closed = ws.parse_new(path, text)
        durable.write_note(note, text)
        history = ws.history_of(state, question)
        events.append(ws.event("withdrawn", closed, actor, record=history.record if history else new_record(),
                               reason=changes["reason"], text=note_edits.file_text(note, text)))
    return events


def plan_superseded(ws: Workspace, state: VaultState, old: Decision, new: Decision, reason: str) -> SupersedePlan:
    """The old note's text once marked superseded, worked out and checked before anything is written."""
    path = ws.vault.path_of(old)
    note = ws.read(path)
    marked = ws.edited(note, superseded_changes(new, reason))
    return SupersedePlan(note, marked.text, ws.record_for(state, old), ws.parse_new(path, marked.text, marked), new,
                         reason, marked)


def apply_superseded(ws: Workspace, state: VaultState, plan: SupersedePlan, actor: str) -> None:
    durable.write_note(plan.note, plan.text, plan.parsed)
    ws.vault.ledger.append([superseded_event(ws, state, plan, actor)])


def superseded_event(ws: Workspace, state: VaultState, plan: SupersedePlan, actor: str) -> Event:
    resolve = ws.resolver_with(state, plan.successor)
    known = ws.known_decision(plan.parsed) if plan.parsed is not None else None
    if known is not None and known[0] is plan.updated and known[1] is not None and resolve is state.resolver():
        digest = known[1]  # worked out ahead, under these links
    else:
        digest = seal_hash(plan.updated, resolve, ws.tz)
    return ws.event("superseded", plan.updated, actor, record=plan.record, hash=digest,
                    text=note_edits.file_text(plan.note, plan.text), reason=plan.reason, successor=plan.successor.id)


# docs/design/0019-writes-made-durable-together.md
class PendingWrites:
    """What a reconcile (or `seal`) holds back to write together: the ledger events of steps nothing else
    waits on yet (seals, questions recorded), and the supersessions planned (their successor sealed) whose
    notes are not written yet.

    Each note marked superseded must wait for the ledger to hold its successor's seal on disk, so applying
    them one by one costs a sync of the ledger each, and on a large first reconcile that is most of its
    time. Held back, they cost one sync for all: the held events are appended first, then every note is
    written (the ledger synced once, before the first), then their events are appended together. A seal
    held back costs no append of its own (1,010 appends became 58 on the 10,000-note benchmark vault).
    Until then the ledger and the notes say each ruling is not sealed yet and each
    target is still current, as after a crash between the steps (a ruling stamped but not sealed is sealed
    by the next run; a supersession not applied is finished by `pending_chain`); the caller writes them
    before anything looks at one of these notes or builds on it (`needed_by`), and at most `HELD_EVENTS`
    events wait (each holds its note's text)."""

    HELD_EVENTS = 256

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.held: list[Event] = []  # ledger events to append, in order
        self.landed: set[str] = set()  # notes whose held events were appended since the caller last took them
        self._held_paths: set[str] = set()
        self.waiting: list[tuple[SupersedePlan, Event]] = []
        self.paths: set[str] = set()  # vault-relative paths of the notes waiting to be marked superseded
        self.successors: set[str] = set()  # and of the rulings that supersede them

    def __bool__(self) -> bool:
        return bool(self.waiting or self.held)

    def hold(self, path: str, events: list[Event]) -> None:
        """Hold back the ledger events of the step taken on the note at `path`; appended when `HELD_EVENTS`
        wait (the caller's next look at the ledger sees them), or with the rest (`write`)."""
        self.held += events
        self._held_paths.add(path)
        if len(self.held) >= self.HELD_EVENTS:
            self.append_held()

    def append_held(self) -> None:
        held, self.held = self.held, []
        self.ws.vault.ledger.append(held)
        self.landed |= self._held_paths
        self._held_paths = set()

    def names_held(self, state: VaultState, decision: Decision) -> bool:
        """Whether `decision` names a note whose events are held in `supersedes` or `superseded_by`: those
        are appended first (`append_held`), and the supersessions may still wait (`needed_by` then reads that
        note as the ledger has it). A note named in `alongside` is not looked at: only its id is recorded."""
        if not self._held_paths:
            return False
        by_id, resolve = state.by_id(), self.ws.resolver_with(state, decision)
        for link in (*decision.supersedes, *filter(None, [decision.superseded_by])):
            named = by_id.get(resolve(link) or "")
            if named is not None and named.path in self._held_paths:
                return True
        return False

    def take_landed(self) -> set[str]:
        """The notes whose held events reached the ledger since the last call."""
        landed, self.landed = self.landed, set()
        return landed

    def needed_by(self, state: VaultState, decision: Decision,
                  history_of: Callable[[Decision], History | None]) -> bool:
        """Whether dealing with this note may look at a note whose events or supersession wait, so they must
        be written first: it is one, or it is a ruling to seal that names one, or one that supersedes a ruling
        not sealed yet (which sealing it first may reach: a ruling whose seal is held reads so), or one that supersedes
        the successor of a waiting note (marked together, a crash between the notes and their events would leave a note superseded by a note superseded in
        turn, which `finish_interrupted_close` cannot take for the tool's own write), or a sealed note that
        no longer matches the ledger (what is done about it may look anywhere). Sealing a ruling that names
        only sealed, current rulings, and recording a question, look at no other note."""
        if decision.path in self.paths or decision.path in self._held_paths:
            return True
        history = history_of(decision)
        if history is not None and history.seal is not None:
            return not matches_ledger(self.ws, state, decision, history)
        if decision.status is not Status.RULED:
            return False
        by_id, resolve = state.by_id(), self.ws.resolver_with(state, decision)
        superseded = len(decision.supersedes)
        for index, link in enumerate((*decision.supersedes, *decision.alongside)):
            named = by_id.get(resolve(link) or "")
            if named is None:
                continue
            if named.path in self.paths:
                return True
            # Naming a ruling `alongside` only records its id: nothing about that note (sealed or not, held
            # or not, the successor of a waiting note or not) or the note it supersedes is looked at or written.
            if index < superseded and (named.path in self.successors or
                                       (named_history := history_of(named)) is None or named_history.seal is None):
                return True
        return False

    def add(self, state: VaultState, plan: SupersedePlan, actor: str) -> None:
        event = superseded_event(self.ws, state, plan, actor)
        self.waiting.append((plan, event))
        if plan.parsed is not None:  # its hash was worked out under the state's links only if these are those
            known = self.ws.resolver_with(state, plan.successor) is state.resolver()
            self.ws.writing(plan.parsed, plan.updated, event.hash if known else None)
        self.paths.add(plan.updated.path)
        self.successors.add(plan.successor.path)

    def write(self) -> tuple[list[SupersedePlan], list[tuple[SupersedePlan, str]]]:
        """Append the held events, write every waiting note still as it was read, then their events: (the
        plans applied, (a plan not applied, why)). A note saved since it was planned is left as it is;
        `pending_chain` marks it once it is left alone, planned again from what it holds then."""
        if self.held:  # first: the successors' seals are among them, and the notes wait for those on disk
            self.append_held()
        waiting, self.waiting, self.paths, self.successors = self.waiting, [], set(), set()
        ready: list[tuple[SupersedePlan, Event]] = []
        left: list[tuple[SupersedePlan, str]] = []
        for plan, event in waiting:
            try:
                unchanged = plan.note.path.read_bytes() == durable.encode(plan.note.text, bom=plan.note.bom)
            except OSError as error:
                left.append((plan, f"could not be read just now ({error.strerror}); will retry"))
                continue
            if unchanged:
                ready.append((plan, event))
            else:
                left.append((plan, "saved since its supersession was planned; marked once left alone"))
        applied: list[tuple[SupersedePlan, Event]] = []
        try:
            errors = durable.write_notes([(plan.note, plan.text, plan.parsed) for plan, _ in ready])
            for (plan, event), problem in zip(ready, errors, strict=True):
                if problem is None:
                    applied.append((plan, event))
                else:
                    left.append((plan, f"could not be written just now ({problem.strerror}); will retry"))
        finally:  # what was written is recorded, even when something not foreseen stops the rest
            if not applied and ready:  # stopped before knowing: what is on disk says which were written
                applied = [(plan, event) for plan, event in ready
                           if _holds(plan.note.path, durable.encode(plan.text, bom=plan.note.bom))]
            self.ws.vault.ledger.append([event for _, event in applied])
        return [plan for plan, _ in applied], left

    def write_before_failing(self) -> None:
        """`write`, while another error is on its way up: that error is the one to say, and what cannot be
        written now is finished later (see `pending_chain`)."""
        try:
            self.write()
        except (VaultToolsError, OSError):
            pass


class EditedSinceSealed(InconsistentVault):
    """A ruling to mark superseded holds an edit made in place since it was sealed."""


def edited_since_sealed(ws: Workspace, state: VaultState, target: Decision) -> str | None:
    """Why `target` may not be marked superseded now: an edit made in place since it was sealed, whether the
    view of the vault (`state`) holds it or only the file does (saved after the vault was read)."""
    history = ws.history_of(state, target)
    edited = unreviewed_edit(ws, state, target, history)
    if edited or history is None or history.seal is None:
        return edited
    path = ws.vault.path_of(target)
    note = ws.read(path)
    as_read = ws.parse_new(path, note.text, note)
    if as_read.status is Status.RULED and seal_hash(as_read, state.resolver(), ws.tz) == history.seal.hash:
        return None
    return (f"{target.id} was edited in place since it was sealed; that edit must become a revision first "
            "(the watcher does it, or run `vault-tools watch --once`)")


def supersede_now(ws: Workspace, state: VaultState, target: Decision, ruling: Decision) -> None:
    """Mark `target` superseded by the sealed `ruling` (finishing what a crash interrupted). Refused while
    `target` holds an edit made in place since it was sealed: marking it would record that edit unreviewed."""
    edited = edited_since_sealed(ws, state, target)
    if edited:
        raise EditedSinceSealed(edited, path=target.path)
    plan = plan_superseded(ws, state, target, ruling, ruling.reason or "")
    apply_superseded(ws, state, plan, ruling.ruled_by or ws.config.default_ruler)


def pending_supersessions(state: VaultState, ruling: Decision) -> list[Decision]:
    """The rulings `ruling` names in `supersedes` that are not marked superseded yet."""
    by_id, resolve = state.by_id(), state.resolver()
    found = (by_id.get(resolve(link) or "") for link in ruling.supersedes)
    return [t for t in found if t is not None and t.id != ruling.id and t.status is Status.RULED]


def _holds(path: Path, data: bytes) -> bool:
    try:
        return path.read_bytes() == data
    except OSError:
        return False
