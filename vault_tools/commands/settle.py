"""`settle`: the owner decides a conflict that two clones recorded (ruled here, withdrawn there; a ruling
superseded by two different rulings; an answer kept here whose dropped rival was superseded there). Both
outcomes were kept until now; this keeps one."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import durable, note_edits, notes
from ..conflicts import keep_choices
from ..errors import NoteError, Refused, UsageError
from ..history import History
from ..ledger_lines import Event, event_key
from ..meaning import seal_hash
from ..model import Decision, Status
from ..services.checks import check_id, check_name, check_text
from ..services.workspace import Workspace
from ..vault import VaultState


@dataclass
class CopySettled:
    original: str
    removed: str  # the conflict copy, gone
    kept: str  # original or copy
    kept_copy: str  # where the text that was not kept went (under kept/)


def settle_copy(ws: Workspace, decision_id: str, copy_path: str, keep: str) -> CopySettled:
    """Settle a conflict copy a sync engine made: keep the original's text or the copy's in the original
    note; the text not kept goes under `kept/` in the record's folder, and the copy is removed. Keeping the
    copy of a sealed ruling is an in-place edit like any other: the watcher (or `lint --fix`) restores the
    seal and makes the copy's words a proposed revision."""
    decision_id = check_id(decision_id)
    if keep not in ("original", "copy"):
        raise UsageError("--keep must be original or copy (with --copy)")
    wanted = copy_path.replace("\\", "/").strip().removeprefix("./")
    with ws.vault.ledger.locked():
        state = ws.state()
        found = [c for c in state.conflict_copies if c.path == wanted or ws.vault.root / c.path == Path(copy_path)]
        if not found:
            raise UsageError(f"{copy_path} is not a conflict copy of a decision note (lint VT052 lists them)")
        copy = found[0]
        if copy.id != decision_id and not copy.id.startswith(decision_id + "-"):
            raise UsageError(f"{copy.path} is a copy of {copy.id}, not of {decision_id}")
        original_path, copy_file = ws.vault.root / copy.original, ws.vault.root / copy.path
        copied = copy_file.read_bytes()
        if keep == "original":
            kept_copy = ws.keep_copy(copy_file.stem, copied)
        else:
            kept_copy = ws.keep_copy(original_path.stem, original_path.read_bytes())
            durable.write_atomic(original_path, copied)
        copy_file.unlink()
        from .build import build  # the copy left the open-questions page

        build(ws)
        return CopySettled(copy.original, copy.path, keep, kept_copy)


@dataclass
class Settled:
    decision: Decision
    kept: str
    retracted: list[str] = field(default_factory=list)  # rulings dropped in favour of the one kept
    kept_copy: str | None = None  # where the text replaced in the note was kept


# docs/design/0027-conflicts-are-kept-not-resolved.md
def settle(ws: Workspace, decision_id: str, keep: str, reason: str | None, actor: str | None = None) -> Settled:
    reason = check_text("--reason", reason, required=True) or ""
    who = check_name(actor) or ws.config.default_ruler
    decision_id = check_id(decision_id)
    with ws.vault.ledger.locked():
        state = ws.state_for_write()
        decision = ws.find(state, decision_id)
        known = ws.histories()
        history = ws.history_of(state, decision, known)
        conflict = history.conflict if history is not None else None
        if history is None or conflict is None:
            raise Refused(f"{decision.id} is not in conflict; nothing to settle", path=decision.path)
        choices = keep_choices(conflict)
        wanted = keep.strip()
        if wanted not in choices:
            matches = [choice for choice in choices if choice.startswith(wanted + "-")]
            if len(matches) != 1:
                raise UsageError(f"--keep must be one of: {', '.join(choices)}")
            wanted = matches[0]
        if conflict.kind == "ruled-and-withdrawn":
            return _settle_outcome(ws, state, decision, history, wanted, reason, who)
        if conflict.kind == "ruled-twice":
            return _settle_answer(ws, state, decision, history, int(wanted.rsplit("-", 1)[1]), reason, who)
        if wanted == "retracted" or (conflict.kind == "kept-and-superseded" and wanted == "ruled"):
            return _settle_kept(ws, state, decision, history, wanted, reason, who)
        return _settle_successor(ws, state, decision, history, wanted, reason, who)


def _write(ws: Workspace, state: VaultState, decision: Decision, text: str) -> tuple[Decision, str, str | None]:
    """Write the chosen text into the note; returns the note as written, its file text and where the text
    it replaced was kept (when it differed)."""
    path = ws.vault.path_of(decision)
    note = ws.read(path)
    current = note_edits.file_text(note, note.text)
    kept = None
    if current != text:
        kept = ws.keep_copy(f"{decision.id} before settling", current.encode("utf-8"))
        durable.write_atomic(path, text.encode("utf-8"))
    written = ws.read(path)
    updated = ws.parse_new(path, written.text)
    return updated, note_edits.file_text(written, written.text), kept


def _settled_event(ws: Workspace, state: VaultState, updated: Decision, history: History, who: str, outcome: str,
                   text: str, reason: str, successor: str | None = None) -> Event:
    return ws.event("settled", updated, who, record=history.record, outcome=outcome, text=text, reason=reason,
                    hash=seal_hash(updated, state.resolver(), ws.tz), successor=successor,
                    settles=tuple(event_key(event) for event in history.events))


def _settle_outcome(ws: Workspace, state: VaultState, decision: Decision, history: History, keep: str, reason: str,
                    who: str) -> Settled:
    """A question ruled on one clone and withdrawn on another: keep the ruling, or the withdrawal."""
    if keep == "ruled":
        seal = history.ruling_as_it_stands()  # sealed, related or closed since on its clone
        if seal is None or seal.text is None:
            raise Refused(f"{decision.id}: the ledger holds no sealed text of the ruling to keep", path=decision.path)
        text = seal.text
    else:
        withdrawn = next(e for e in reversed(history.events) if e.event == "withdrawn")
        asked = next((e for e in history.events if e.event == "asked" and e.text), None)
        base = notes.parse_text(asked.text.removeprefix(notes.BOM), ws.vault.path_of(decision)) if asked and asked.text \
            else ws.read(ws.vault.path_of(decision))
        changes: dict[str, Any] = {"status": Status.WITHDRAWN.value, "reason": withdrawn.reason or reason}
        for name in ("ruled_at", "ruled_by", "source", "superseded_by"):
            if name in (base.data or {}):
                changes[name] = note_edits.REMOVE
        try:
            text = note_edits.with_fields(base, changes)
        except NoteError as error:
            raise Refused(f"{decision.id}: cannot write the withdrawn question back: {error.message}",
                          path=decision.path) from None
    updated, written, kept = _write(ws, state, decision, text)
    ws.vault.ledger.append([_settled_event(ws, state, updated, history, who, keep, written, reason)])
    return Settled(updated, keep, kept_copy=kept)


def _settle_answer(ws: Workspace, state: VaultState, decision: Decision, history: History, number: int, reason: str,
                   who: str) -> Settled:
    """A question answered on two clones: one answer stays; the other stays in the ledger and a kept copy."""
    answers = list({e.hash: e for e in history.conflict_events if e.event == "sealed" and e.hash}.values())
    # The answer as it now stands on its clone: related to other rulings, superseded or retracted there since,
    # it is kept so (each of those events carries its note's text then).
    chosen = history.as_it_stands(answers[number - 1])
    if chosen.text is None:
        raise Refused(f"{decision.id}: the ledger holds no text of ruling-{number}", path=decision.path)
    updated, written, kept = _write(ws, state, decision, chosen.text)
    ws.vault.ledger.append([_settled_event(ws, state, updated, history, who, Status.RULED.value, written, reason)])
    return Settled(updated, f"ruling-{number}", kept_copy=kept)


def _settle_kept(ws: Workspace, state: VaultState, decision: Decision, history: History, keep: str, reason: str,
                 who: str) -> Settled:
    """One clone settled on an answer while another superseded (or retracted) the answer that was dropped:
    keep the settled answer (its successor there is retracted), or the retraction."""
    if keep == "retracted":
        chosen = next((e for e in reversed(history.events) if e.event == "retracted" and e.text), None)
    else:  # the settled answer as it stands: related since on its clone, say
        chosen = history.ruling_as_it_stands()
    if chosen is None or chosen.text is None:
        raise Refused(f"{decision.id}: the ledger holds no text to keep", path=decision.path)
    plans = []
    for other_id in (history.conflict.successors if history.conflict and keep == "ruled" else ()):
        other = state.by_id().get(other_id)
        if other is None or ws.status_of(state, other) is not Status.RULED:
            continue
        ws.check_writable(state, other)
        note = ws.read(ws.vault.path_of(other))
        because = f"Settled a conflict: {decision.id} keeps the answer this ruling did not know of. {reason}"
        plans.append((other, note, note_edits.with_fields(note, {"status": Status.RETRACTED.value, "reason": because}),
                      because))
    updated, written, kept = _write(ws, state, decision, chosen.text)
    outcome = Status.RULED.value if keep == "ruled" else Status.RETRACTED.value
    events = [_settled_event(ws, state, updated, history, who, outcome, written, reason)]
    events += _retract_all(ws, state, plans, who)
    ws.vault.ledger.append(events)
    return Settled(updated, keep, [other.id for other, *_ in plans], kept)


def _retract_all(ws: Workspace, state: VaultState, plans: list[tuple[Decision, notes.Note, str, str]],
                 who: str) -> list[Event]:
    """Write each retraction planned and return its ledger events."""
    events = []
    for other, note, text, because in plans:
        retracted = ws.parse_new(ws.vault.path_of(other), text)
        durable.write_note(note, text)
        events.append(ws.event("retracted", retracted, who, record=ws.record_for(state, other), reason=because,
                               text=note_edits.file_text(note, text), hash=seal_hash(retracted, state.resolver(), ws.tz)))
    return events


def _settle_successor(ws: Workspace, state: VaultState, decision: Decision, history: History, keep: str, reason: str,
                      who: str) -> Settled:
    """A ruling superseded by two rulings on two clones: one stays its successor, the others are retracted."""
    chosen = next((e for e in reversed(history.events) if e.event == "superseded" and e.successor == keep
                   and e.text), None)
    if chosen is None or chosen.text is None:
        raise Refused(f"{decision.id}: the ledger holds no text of its supersession by {keep}", path=decision.path)
    dropped = [s for s in (history.conflict.successors if history.conflict else ()) if s != keep]
    by_id = state.by_id()
    plans = []
    for other_id in dropped:
        other = by_id.get(other_id)
        if other is None or ws.status_of(state, other) is not Status.RULED:
            continue
        ws.check_writable(state, other)
        note = ws.read(ws.vault.path_of(other))
        because = f"Settled a conflict: {decision.id} stays superseded by {keep}, not by this ruling. {reason}"
        text = note_edits.with_fields(note, {"status": Status.RETRACTED.value, "reason": because})
        plans.append((other, note, text, because))
    updated, written, kept = _write(ws, state, decision, chosen.text)
    events = [_settled_event(ws, state, updated, history, who, Status.SUPERSEDED.value, written, reason, keep)]
    events += _retract_all(ws, state, plans, who)
    ws.vault.ledger.append(events)
    return Settled(updated, keep, [other.id for other, *_ in plans], kept)
