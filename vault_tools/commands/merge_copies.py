"""Outcomes a merge found in a note and no ledger holds: recorded from the copies git's notes driver kept.

The owner answers (or withdraws, or retracts) a decision in Obsidian, and the commit that carries it is made
before the watcher recorded it (an Obsidian Git auto-commit). Another clone closed the same decision its own
way. When the two meet in a pull, the notes merge driver (`gitmerge`) keeps one outcome in the note and both
sides whole in this device's `.vault-tools/merged/`; a rebase may then drop the commit altogether. Here those
copies are filed under `kept/` (where they travel with the notes), and each kept side whose outcome the
record lacks is recorded, as the watcher would have recorded it had it seen the note first, so the record
holds both outcomes and shows them as a conflict to settle (`history.History.conflict`). An outcome the ledger
already holds (recorded on its clone, or from this copy before: its events name the copy in `origin`) is left.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import durable, note_edits, notes
from ..errors import NoteError
from ..history import History, latest_with_id, properties_of
from ..ledger_lines import Event
from ..links import linked_ids
from ..meaning import seal_hash
from ..model import Status, build_decision
from ..record_files import KEPT_FOLDER, agent_calls, merge_copy_id
from ..services.workspace import Workspace
from ..vault import VaultState

ORIGIN = "merge:"  # an event recorded from a merge copy names it: `merge:<file name>`


@dataclass(frozen=True)
class Recorded:
    """One outcome recorded from a merge copy (or why it could not be)."""

    id: str
    copy: str  # the copy's path in the vault
    outcome: str  # ruled, withdrawn, retracted
    problem: str | None = None


def file_merge_copies(ws: Workspace) -> list[str]:
    """Move the copies the notes driver made during a merge under `kept/`, each once: a rebase replaying a merge
    this clone made before makes the same copy again. Returns the paths filed."""
    staged = ws.vault.layout.merge_copies_dir
    try:
        found = sorted(staged.iterdir())
    except OSError:
        return []
    filed = []
    for path in found:
        data = path.read_bytes()
        name = path.stem.rpartition(" ")[0] or path.stem  # less the checksum that made it unique here
        if not any(kept.read_bytes() == data for _, kept in merge_copies(ws) if kept.name.startswith(name)):
            filed.append(ws.keep_copy(name, data))
        path.unlink()
    return filed


def merge_copies(ws: Workspace) -> Iterator[tuple[str, Path]]:
    """The notes driver's copies under `kept/`: (the id each is of, its path), oldest name first."""
    folder = ws.vault.record_dir / KEPT_FOLDER
    try:
        names = sorted(entry.name for entry in folder.iterdir() if entry.name.endswith(".md"))
    except OSError:
        return
    for name in names:
        decision_id = merge_copy_id(name)
        if decision_id is not None:
            yield decision_id, folder / name


def record_merge_outcomes(ws: Workspace, state: VaultState, known: dict[str, History]) -> list[Recorded]:
    """Record every outcome a merge copy holds that the record lacks; the caller holds the ledger's lock."""
    done: list[Recorded] = []
    origins = {event.origin for history in known.values() for event in history.events
               if event.origin and event.origin.startswith(ORIGIN)}
    calls = agent_calls(ws.vault.root)
    for decision_id, path in merge_copies(ws):
        if ORIGIN + path.name in origins:
            continue
        if calls.changed_during(path):  # an agent's call wrote it (a script, a pull it ran): never the owner's step
            done.append(Recorded(decision_id, ws.vault.relative(path), "unknown",
                                 "was written during an agent's command, so is not recorded; the owner files it"))
            continue
        history = latest_with_id(known, decision_id)
        if history is None or history.path is None:
            continue  # a record this vault does not hold (yet): its ledger lines may still be on their way
        shown = ws.vault.relative(path)
        try:
            text, _ = notes.decode(path.read_bytes(), path)
            note = notes.parse_text(text, Path(history.path))
            decision, _ = build_decision(note.data, path=history.path, body=note.body, key_lines=note.key_lines)
        except (NoteError, OSError) as error:
            done.append(Recorded(decision_id, shown, "unknown", f"cannot be read: {error}"))
            continue
        if decision is None or decision.status not in (Status.RULED, Status.WITHDRAWN, Status.RETRACTED):
            continue  # an open question, or a supersession (recorded with its successor): nothing of its own
        if _holds(history, decision.status.value, note.data):
            continue
        if decision.reason is None and decision.status is not Status.RULED:
            done.append(Recorded(decision_id, shown, decision.status.value, "has no reason, so is not recorded"))
            continue
        events = _events(ws, state, note, decision, history, ORIGIN + path.name)
        ws.vault.ledger.append(events)
        _stamp_the_note(ws, history.path, text, events[-1].text)
        done.append(Recorded(decision_id, shown, decision.status.value))
    return done


def _stamp_the_note(ws: Workspace, rel: str, copied: str, sealed: str | None) -> None:
    """The note still holds the very ruling recorded from its copy, unstamped: it gets what sealing it stamped
    (its time and ruler), so the note is that sealed ruling, as when the watcher seals one."""
    path = ws.vault.root / rel
    try:
        note = notes.read_note(path)
    except (NoteError, OSError):
        return
    if sealed is not None and note.text == copied and sealed.removeprefix(notes.BOM) != note.text:
        durable.write_note(note, sealed.removeprefix(notes.BOM))


def _same_answer(data: Any, sealed: Any) -> bool:
    """Whether a sealed text's answer is the one `data` holds (its summary; its time and ruler where it has them)."""
    return sealed is not None and str(sealed.get("summary")) == str(data.get("summary")) and \
        all(data.get(key) in (None, sealed.get(key)) for key in ("ruled_at", "ruled_by"))


def _holds(history: History, outcome: str, data: Any) -> bool:
    """Whether the record already has this outcome: the same answer (summary, and its time and ruler where the
    copy has them: a ruling committed before it was sealed has none yet), or a closing with the same reason."""
    for event in history.events:
        if outcome == Status.RULED.value and event.event == "sealed":
            if _same_answer(data, properties_of(event.text)):
                return True
        elif event.event == outcome and outcome != Status.RULED.value and event.reason == data.get("reason"):
            return True
    return False


def _events(ws: Workspace, state: VaultState, note: notes.Note, decision: Any, history: History,
            origin: str) -> list[Event]:
    actor = ws.config.default_ruler
    if decision.status is not Status.RULED:  # closing the answer the copy holds: two clones may hold two
        hash_ = next((event.hash for event in reversed(history.events) if event.event == "sealed"
                      and _same_answer(note.data, properties_of(event.text))),
                     history.seal.hash if history.seal is not None else None)
        return [ws.event(decision.status.value, decision, actor, record=history.record, reason=decision.reason,
                         text=note_edits.file_text(note, note.text), hash=hash_, origin=origin)]
    stamps = {key: value for key, value in (("ruled_at", ws.now_local()), ("ruled_by", actor))
              if getattr(decision, key) is None}
    stamped = note_edits.edited(note, stamps) if stamps else note
    if stamps:
        decision, _ = build_decision(stamped.data, path=decision.path, body=stamped.body,
                                     key_lines=stamped.key_lines)
    resolve = state.resolver()
    digest = seal_hash(decision, resolve, ws.tz)
    supersedes, alongside = linked_ids(decision, resolve)
    text = note_edits.file_text(note, stamped.text)
    return [ws.event("ruled", decision, decision.ruled_by or actor, record=history.record, hash=digest,
                     supersedes=supersedes, alongside=alongside, origin=origin),
            ws.event("sealed", decision, decision.ruled_by or actor, record=history.record, hash=digest, text=text,
                     origin=origin)]
