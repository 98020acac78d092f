"""`withdraw` and `retract`: the closings with a reason; and closings made in Obsidian."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from .. import durable, note_edits, notes
from ..cjk import text_size
from ..errors import InconsistentVault, NoteError, Refused
from ..history import History, new_record, seal_text_without_bom
from ..ledger_lines import Event
from ..meaning import seal_hash
from ..model import MIN_TEXT, Decision, Status, transition_problem
from ..services.checks import check_name, check_text
from ..services.workspace import Workspace
from ..vault import VaultState
from .agreement import unreviewed_edit
from .twins import made_origin


def withdraw(ws: Workspace, decision_id: str, reason: str | None, actor: str | None = None) -> Decision:
    return _close(ws, decision_id, Status.WITHDRAWN, reason, actor)


def retract(ws: Workspace, decision_id: str, reason: str | None, actor: str | None = None) -> Decision:
    return _close(ws, decision_id, Status.RETRACTED, reason, actor)


def _close(ws: Workspace, decision_id: str, new_status: Status, reason: str | None, actor: str | None) -> Decision:
    reason = check_text("--reason", reason, required=True)
    who = check_name(actor) or ws.config.default_ruler
    with ws.vault.ledger.locked():
        state = ws.state_for_write()
        decision = ws.find(state, decision_id)
        ws.check_writable(state, decision)
        problem = transition_problem(ws.status_of(state, decision), new_status)
        if problem:
            raise Refused(f"{decision.id} {problem}", path=decision.path)
        history = ws.history_of(state, decision)
        edited = unreviewed_edit(ws, state, decision, history)
        if edited:
            raise InconsistentVault(edited, path=decision.path)
        path = ws.vault.path_of(decision)
        note = ws.read(path)
        text = note_edits.with_fields(note, {"status": new_status.value, "reason": reason})
        updated = ws.parse_new(path, text)
        durable.write_note(note, text)
        kind = "withdrawn" if new_status is Status.WITHDRAWN else "retracted"
        extra: dict[str, Any] = {"reason": reason, "text": note_edits.file_text(note, text)}  # as the other clones will see
        if new_status is Status.RETRACTED:
            extra.update(hash=seal_hash(updated, state.resolver(), ws.tz))
        record = history.record if history is not None else new_record()
        ws.vault.ledger.append([ws.event(kind, updated, who, record=record, **extra)])
        return updated


def hand_made_events(ws: Workspace, decision: Decision, kind: str, history: History | None,
                     unchanged: str | None = None) -> list[Event]:
    """What the ledger records of a question made or withdrawn in Obsidian, as of any other. `unchanged` is
    the note's text (BOM included) when the caller knows the file still holds what `decision` was read from."""
    if kind == "withdrawn" and decision.reason is None:
        raise NoteError("withdrawn without a reason (at least 20 characters)", path=decision.path)
    actor = decision.asked_by if kind == "asked" and decision.asked_by else ws.config.default_ruler
    record = history.record if history is not None else new_record()
    if unchanged is None:
        note = ws.read(ws.vault.path_of(decision))
        unchanged = note_edits.file_text(note, note.text)
    origin = made_origin(unchanged) if history is None else None  # see `twins`: one note, two ids
    if kind == "asked":
        return [replace(ws.asked_event(decision, actor, unchanged, record=record), origin=origin)]
    return [ws.event(kind, decision, actor, record=record, reason=decision.reason, text=unchanged, origin=origin)]


def finish_interrupted_close(ws: Workspace, state: VaultState, decision: Decision, history: History,
                             note: notes.Note) -> bool:
    """A supersession or retraction whose note was written but whose event was not (a crash between):
    record the event. False when the note is not exactly what that operation writes."""
    if history.status is not Status.RULED or decision.status not in (Status.SUPERSEDED, Status.RETRACTED):
        return False
    if decision.reason is None or text_size(decision.reason) < MIN_TEXT:
        return False  # the tool never writes a closing without its reason
    sealed = notes.parse_text(seal_text_without_bom(history), note.path)
    changes: dict[str, Any] = {"status": decision.status.value, "reason": decision.reason}
    successor: Decision | None = None
    if decision.status is Status.SUPERSEDED:
        successor = state.get(state.resolver()(decision.superseded_by or "") or "")
        if successor is None or successor.status is not Status.RULED:
            return False
        changes = {"status": decision.status.value, "superseded_by": f"[[{successor.title}]]",
                   "reason": decision.reason}
    try:
        expected = note_edits.with_fields(sealed, changes)
    except NoteError:
        return False
    if expected != note.text:
        return False
    ws.vault.ledger.append([ws.event(decision.status.value, decision, ws.config.default_ruler,
                                     record=history.record, reason=decision.reason, hash=history.seal.hash if history.seal else None,
                                     text=note_edits.file_text(note, note.text),
                                     successor=successor.id if successor else None)])
    return True
