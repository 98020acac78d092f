"""`seal`: fix a ruling's content in the ledger, stamping what is missing and applying its `supersedes`."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from .. import durable, note_edits, notes
from ..drafts import unanswered
from ..errors import InconsistentVault, NoteError, Refused, VaultToolsError
from ..history import History, new_record
from ..ledger_lines import Event
from ..links import linked_ids
from ..meaning import hash_alone_vouching, seal_hash
from ..model import CONFIRMED, FINAL_STATUSES, Decision, Status
from ..record_files import AgentCalls, agent_calls
from ..services.checks import check_id
from ..services.live import LiveState
from ..services.workspace import KnownSeal, Workspace
from ..vault import VaultState
from .ids import give_ids
from .supersede import (
    PendingWrites,
    answered_questions,
    apply_superseded,
    close_answered,
    plan_superseded,
    supersede_now,
    supersede_targets,
)
from .twins import made_origin


def seal(ws: Workspace, decision_ids: Iterable[str] = (),
         not_sealed: list[tuple[Decision, VaultToolsError]] | None = None) -> list[Decision]:
    """Seal ruled notes that are not sealed yet (all of them, or those named), each on the vault as the ones
    before it left it (read once, then only what was written: see `LiveState`). With none named and a
    `not_sealed` list, a ruling that cannot be sealed goes there, with why, and the others are sealed."""
    wanted = {check_id(value) for value in decision_ids}
    sealed = []
    with ws.vault.ledger.locked(), ws.vault.ledger.synced_together():
        give_ids(ws)  # a ruling the owner made without an id gets one first
        with LiveState(ws, load=ws.state_for_write) as live:
            state = live.state
            named = [ws.find(state, decision_id) for decision_id in sorted(wanted)]
            wanted = {decision.id for decision in named}
            for decision in named:
                ws.check_writable(state, decision)
                status = ws.status_of(state, decision)
                if decision.status is not Status.RULED or status in FINAL_STATUSES:
                    raise Refused(f"{decision.id} is {status.value}; only a ruling can be sealed", path=decision.path)
            pending = PendingWrites(ws)  # their events and the notes they supersede, written together
            in_order = [decision.path for decision in sorted(state.decisions, key=lambda d: d.order)]
            calls = agent_calls(ws.vault.root)  # the agent's calls: see `commands.held`
            live.work_ahead(in_order)
            try:
                for rel in in_order:
                    current = live.decision_at(rel)
                    if current is not None and pending.names_held(state, current):
                        pending.append_held()
                        live.refresh()
                        current = live.decision_at(rel)
                    if current is not None and pending and pending.needed_by(state, current, live.history_of):
                        pending.write()
                        live.refresh()
                        current = live.decision_at(rel)
                    if current is None or not _to_seal(ws, state, current, live.history_of(current), wanted, calls):
                        continue
                    try:
                        sealed.append(seal_one(ws, state, current, live.history_of(current),
                                               live.unchanged_text(rel), pending=pending))
                    except VaultToolsError as error:
                        if wanted or not_sealed is None:
                            raise
                        not_sealed.append((current, error))
                    live.refresh()
            except BaseException:
                pending.write_before_failing()  # the rulings sealed before it keep their supersessions
                raise
            _, left = pending.write()
            live.refresh()
            for plan, _ in left:  # saved since it was planned: marked now as it reads now, its text kept
                target = live.decision_at(plan.updated.path)
                if target is not None and target.id == plan.updated.id and target.status is Status.RULED:
                    supersede_now(ws, live.state, target, live.decision_at(plan.successor.path) or plan.successor)
                    live.refresh()
    return sealed


def _to_seal(ws: Workspace, state: VaultState, decision: Decision, history: History | None, wanted: set[str],
             calls: AgentCalls) -> bool:
    if decision.status is not Status.RULED or (history and (history.sealed or history.status in FINAL_STATUSES)):
        return False
    if decision.held or calls.changed_during(ws.vault.path_of(decision)):
        if decision.id in wanted:
            raise Refused(f"{decision.id} was changed during an agent's command: it is the owner's to confirm "
                          f"(tick `{CONFIRMED}` in Obsidian, or add `{CONFIRMED}: true`), not sealed as the owner's "
                          "ruling", path=decision.path)
        return False
    if (wanted and decision.id not in wanted) or decision.id in ws.duplicated(state):
        return False  # a duplicated id is sealed once it is renumbered (lint names both notes)
    if history is not None and history.conflict is not None:
        return False
    # a lost seal is reported by lint (VT027); sealing it again is refused when asked by id
    return bool(wanted) or lost_seal(ws, state, decision, history) is None


def lost_seal(ws: Workspace, state: VaultState, decision: Decision, history: History | None) -> Event | None:
    """The `ruled` line of `decision`'s record left without its `sealed` line, where the note no longer means what
    that line recorded (`History.seal_lost_for`): it is not sealed again from its text as it is now."""
    if history is None or history.seal_lost is None:
        return None
    return history.seal_lost_for(hash_alone_vouching(decision, state.resolver(), ws.seal_hash_of(state, decision)))


def seal_one(ws: Workspace, state: VaultState, decision: Decision, history: History | None,
             unchanged: str | None = None, pending: PendingWrites | None = None) -> Decision:
    """Seal one ruling: stamp what is missing, check it, apply its `supersedes`, record it. `unchanged` is the
    note's text when the caller knows the file still holds what `decision` was read from (then, with nothing
    to stamp, it is not parsed again). With `pending`, its events and the notes it supersedes are left there
    to be written with others (see `PendingWrites`)."""
    lost = lost_seal(ws, state, decision, history)
    if lost is not None:
        raise InconsistentVault(
            f"{decision.id} was sealed on {lost.at[:10]}, but its `sealed` line is missing from the ledger; "
            "restore the ledger from git or a backup (it is not sealed again from its text as it is now)",
            path=ws.vault.ledger.display_path, line=lost.line)
    stamping: tuple[notes.Note, str] | None = None  # the note as read, and its text once stamped
    if unchanged is not None and decision.ruled_at is not None and decision.ruled_by is not None and \
            decision.path not in state.problems:
        text_on_disk = as_made = unchanged  # what `decision` was read from, and valid as it is
    else:
        path = ws.vault.path_of(decision)
        note = ws.read(path)
        stamps: dict[str, Any] = {}
        if decision.ruled_at is None:
            stamps["ruled_at"] = ws.now_local()
        if decision.ruled_by is None:
            stamps["ruled_by"] = ws.config.default_ruler
        stamped = note_edits.edited(note, stamps) if stamps else note
        decision = ws.parse_new(path, stamped.text, stamped)
        text_on_disk = note_edits.file_text(note, stamped.text)
        as_made = note_edits.file_text(note, note.text)
        stamping = (note, stamped.text) if stamps else None
    known = ws.known_seal(decision)
    why = known.unanswered if known is not None else unanswered(decision)
    if why:
        raise Refused(why, path=decision.path, line=decision.line_of("summary"))
    targets = supersede_targets(ws, state, decision, decision.supersedes)
    if targets and decision.reason is None:
        raise NoteError("supersedes a ruling but has no reason (at least 20 characters)", path=decision.path,
                        line=decision.line_of("supersedes"))
    seal_targets_first(ws, state, targets)
    plans = [plan_superseded(ws, state, target, decision, decision.reason or "") for target in targets]
    answered = answered_questions(ws, state, decision)
    if stamping is not None:
        durable.write_note(*stamping)
    actor = decision.ruled_by or ws.config.default_ruler
    events = seal_events(ws, state, decision, text_on_disk, history, actor, known)
    if history is None:  # its first event, marked as the owner made it (`twins`: one note given two ids)
        events[0] = replace(events[0], origin=made_origin(as_made))
    events += close_answered(ws, state, decision, answered, actor)
    if pending is not None:
        pending.hold(decision.path, events)
    else:
        ws.vault.ledger.append(events)
    for plan in plans:
        if pending is not None:
            pending.add(state, plan, actor)
        else:
            apply_superseded(ws, state, plan, actor)
    return decision


def seal_events(ws: Workspace, state: VaultState, decision: Decision, text: str, history: History | None,
                actor: str, known: KnownSeal | None = None, not_the_same: tuple[str, ...] = ()) -> list[Event]:
    """`ruled` (unless the ledger has it already) and `sealed`, with the note's meaning and text. `known` is
    what was worked out already for this very note (its links as ids only while they resolve as then);
    `not_the_same`, the near decisions the recorder said are another matter (`rule`)."""
    resolve = ws.resolver_with(state, decision)
    if resolve is state.resolver() and ((found := state.get(decision.id)) is decision or found == decision):
        digest = ws.seal_hash_of(state, decision)  # the note as the state has it: later checks find the hash made
    else:
        digest = seal_hash(decision, resolve, ws.tz)
    if known is not None and known.links is not None and resolve is state.resolver():
        supersedes, alongside = known.links
    else:
        supersedes, alongside = linked_ids(decision, resolve)
    record = history.record if history is not None else known.record if known is not None else new_record()
    events = []
    if history is None or history.status is not Status.RULED:
        events.append(ws.event("ruled", decision, actor, record=record, hash=digest, supersedes=supersedes,
                               alongside=alongside, not_the_same=not_the_same))
    events.append(ws.event("sealed", decision, actor, record=record, hash=digest, text=text))
    return events


# docs/design/0003-rule-seals-at-once.md
def seal_targets_first(ws: Workspace, state: VaultState, targets: Iterable[Decision]) -> None:
    """A ruling about to be superseded that is not sealed yet is sealed first, its own `supersedes`
    applied: the chain is recorded in order, and what it replaced never becomes current again."""
    for target in targets:
        history = ws.history_of(state, target)
        if history is None or not history.sealed:
            seal_one(ws, state, target, history)
