"""One note given two ids: the owner made a note without an id (from the Question template, say) on one device,
a sync engine (or a pull) carried it to another before either device's watcher gave it an id, and each watcher
gave it one of its own. Both devices then hold two records of one note.

The watcher marks the first event it records of a note it did not see numbered (`made_origin`: the note's text
as the owner made it, less its `id` line), so every device can tell the two records apart from two notes that
say the same thing: they share that mark. Every device keeps the same one (`merge_twin_notes`) and closes the
other, as long as nobody has touched it since: withdrawn (a question) or retracted (a ruling), its reason naming
the one kept. How depends on the carrier, as for twin revisions (`revise.merge_twin_revisions`): in a git clone
in its note, elsewhere by removing its note (its text is in the ledger). Twins the owner has touched on both
sides are left to the owner; lint names them (VT054).
"""
from __future__ import annotations

import re

from .. import durable, note_edits, notes
from ..dates import utc_stamp
from ..errors import NoteError
from ..history import MADE, History, twin_notes
from ..layout import git_dir
from ..ledger_lines import Event, checksum
from ..model import Status
from ..services.workspace import Workspace
from ..vault import VaultState

_ID_LINE = re.compile(r"""^["']?id["']?[ \t]*:[^\r\n]*(\r?\n|$)""", re.MULTILINE)


def made_origin(text: str) -> str:
    """The mark of a note as the owner made it: the same on every device that gave the same note an id."""
    return MADE + checksum(_ID_LINE.sub("", text.removeprefix(notes.BOM), count=1))


def _untouched(ws: Workspace, state: VaultState, record: History) -> notes.Note | bool | None:
    """The twin's note (False when gone) while nothing happened to it since it was recorded: an open question
    as asked, or a ruling as sealed. None when it was touched (answered, closed, edited)."""
    kinds = [event.event for event in record.events]
    if kinds not in (["asked"], ["ruled", "sealed"]):
        return None
    decision = state.get(record.id)
    if decision is None:
        return False
    try:
        note = ws.read(ws.vault.path_of(decision))
    except (NoteError, OSError):
        return None
    return note if note_edits.file_text(note, note.text) == record.events[-1].text else None


def merge_twin_notes(ws: Workspace, state: VaultState, known: dict[str, History]) -> list[tuple[str, str, str]]:
    """Keep one record of each note that became two; returns (closed id, its note's path, kept id). Runs under
    the caller's ledger lock."""
    done: list[tuple[str, str, str]] = []
    in_place: bool | None = None  # looked up at the first twin: nearly every pass has none
    for twins in twin_notes(known):
        in_force = [record for record in twins.records if record.status in (Status.OPEN, Status.RULED)]
        if len(in_force) < 2:
            continue  # one kept already (the others closed, here or on another device)
        untouched = {record.record: _untouched(ws, state, record) for record in in_force}
        touched = [record for record in in_force if untouched[record.record] is None]
        # the one the owner changed since; else one whose note is here (a merge kept one clone's id in the note)
        kept = touched[0] if touched else next((r for r in in_force if untouched[r.record] is not False), in_force[0])
        for record in in_force:
            note = untouched[record.record]
            if record is kept or note is None:
                continue
            in_place = git_dir(ws.vault.root) is not None if in_place is None else in_place
            path = _close(ws, record, note if isinstance(note, notes.Note) else None, kept.id, in_place)
            done.append((record.id, path, kept.id))
    return done


def twin_reason(kept: str) -> str:
    return f"The same note as {kept}: made once, given an id on two devices before they synced."


def _close(ws: Workspace, record: History, note: notes.Note | None, kept: str, in_place: bool) -> str:
    """The ledger's line first, then the note: a crash between leaves the note as it was recorded, which the
    next pass puts at the ledger's text (git), or removes (a sync engine)."""
    reason = twin_reason(kept)
    status = Status.WITHDRAWN if record.status is Status.OPEN else Status.RETRACTED
    path = ws.vault.relative(note.path) if note is not None else record.path or ""
    text = note_edits.with_fields(note, {"status": status.value, "reason": reason}) if note is not None else None
    seal = record.seal
    ws.vault.ledger.append([Event(event=status.value, id=record.id, at=utc_stamp(ws.now()),
                                  actor=ws.config.default_ruler, path=path, reason=reason,
                                  text=note_edits.file_text(note, text) if note is not None and text else None,
                                  hash=seal.hash if seal is not None and status is Status.RETRACTED else None,
                                  record=record.record)])
    if note is not None and text is not None:
        if in_place:
            durable.write_note(note, text)
        else:
            note.path.unlink(missing_ok=True)
    return path
