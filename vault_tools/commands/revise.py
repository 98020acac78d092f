"""Rejecting an in-place edit of a sealed note: the typed text becomes a revision, the sealed text goes back."""
from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .. import durable, note_edits, notes
from ..dates import utc_stamp
from ..history import History, latest_with_id, new_record, seal_text_without_bom
from ..layout import git_dir
from ..ledger_lines import STATUS_AFTER, Event, event_key
from ..meaning import seal_hash
from ..model import Decision, Status, build_decision, is_ledger_property
from ..services.workspace import Workspace
from ..vault import VaultState
from .agreement import seal_holds


@dataclass(frozen=True)
class RejectedEdit:
    """What rejecting an in-place edit of a sealed note did."""

    kept_in: str  # where the typed text went: a revision note, or a copy under .vault-tools/kept/
    as_revision: bool
    restored: bool  # False: saved again meanwhile, so the restore waits for the next quiet period


# docs/design/0006-an-edit-of-a-sealed-ruling-becomes-a-revision.md
def reject_edit(ws: Workspace, state: VaultState, decision: Decision, history: History,
                note: notes.Note) -> RejectedEdit:
    """Keep what was typed into a sealed note, then put the sealed text back.

    What was typed goes to a revision note: an open note proposing to supersede the ruling
    (or, for a note whose ruling already ended, the ruling now current in its place). A later
    burst on the same note is added to that revision under its own heading; nothing in a
    revision is ever replaced. An edit of only the fields the tool writes (status, reason,
    superseded_by) is no proposal: the typed text is kept in `.vault-tools/kept/` instead.
    """
    seal = history.seal
    assert seal is not None and seal.text is not None
    sealed_id = history.id  # the note's own id, even if the typing changed it
    typed = note_edits.file_text(note, note.text)
    typed_bytes = durable.encode(note.text, bom=note.bom)
    now = ws.now_local()
    event = Event(event="edit-rejected", id=sealed_id, at=utc_stamp(ws.now()),
                  actor=ws.config.default_ruler, path=decision.path,
                  hash=seal_hash(decision, state.resolver(), ws.tz), text=typed, record=history.record)
    as_revision = not (seal_holds(ws, state, decision, seal) and decision.id == sealed_id)
    # The same edit already made a revision (on this device, or on another one that a sync engine brought it
    # from before this one's watcher saw it): it is only restored. (Of twins, the one every device keeps: see
    # `merge_twin_revisions`.) Not a revision closed before this edit was saved: typing the same text again
    # after it was withdrawn or answered proposes it anew.
    known = ws.histories()
    saved = _saved_at(note)
    already = min((e for e in history.events if e.event == "edit-rejected" and e.hash == event.hash and e.successor
                   and (state.get(e.successor) is not None or _made_elsewhere(ws, e.successor))
                   and not (saved and _closed(latest_with_id(known, e.successor), lambda c: c.at < saved))),
                  key=event_key, default=None)
    if as_revision and already is not None and already.successor:
        found = state.get(already.successor)
        kept_in = found.path if found is not None else already.successor
    elif as_revision:
        kept_in = _write_revision(ws, state, decision, history, note, event, now)
    else:
        ws.vault.ledger.append([event])
        kept_in = ws.keep_copy(sealed_id, typed.encode("utf-8"))
    path = ws.vault.path_of(decision)
    if path.read_bytes() != typed_bytes:
        return RejectedEdit(kept_in, as_revision, restored=False)
    durable.write_atomic(path, _restored_text(history, note).encode("utf-8"))
    return RejectedEdit(kept_in, as_revision, restored=True)


def _saved_at(note: notes.Note) -> str | None:
    """When the note's file was last saved, as the ledger writes times; None when it cannot be told."""
    try:
        return utc_stamp(dt.datetime.fromtimestamp(note.path.stat().st_mtime, dt.UTC))
    except OSError:
        return None


def _closed(record: History | None, before: Callable[[Event], bool]) -> bool:
    """Whether the revision `record` was closed (answered, withdrawn) by an event for which `before` holds."""
    return record is not None and not _is_open(record) and \
        any(e.event in STATUS_AFTER and e.event != "asked" and before(e) for e in record.events)


def _made_elsewhere(ws: Workspace, revision_id: str) -> bool:
    """Whether another device recorded this revision (its note may still be on its way). One this device
    recorded whose note is missing was cut short here (a kill between the ledger line and the note): it is
    written again."""
    record = latest_with_id(ws.histories(), revision_id)
    asked = next((e for e in record.events if e.event == "asked"), None) if record is not None else None
    own = ws.vault.ledger.own_name()
    return asked is not None and asked.source is not None and own is not None and not asked.source.endswith(own)


def _write_revision(ws: Workspace, state: VaultState, decision: Decision, history: History, note: notes.Note,
                    event: Event, now: dt.datetime) -> str:
    """Record the edit and write its revision note; returns the revision's path."""
    known = ws.histories()
    previous = latest_revision(history, lambda revision: _is_open(latest_with_id(known, revision)))
    revision = state.get(previous) if previous else None
    previous_history = latest_with_id(known, previous) if previous else None
    open_in_ledger = previous_history is None or previous_history.status in (None, Status.OPEN)
    reuse = previous is not None and open_in_ledger and (
        (revision is not None and revision.status is Status.OPEN)
        or (revision is None and not _has_note_file(ws, previous)))
    revision_id = previous if reuse and previous else ws.next_id(state)
    sealed_decision = _sealed_decision(ws, decision, seal_text_without_bom(history))
    if revision is not None and reuse:
        revision_path = ws.vault.path_of(revision)
    else:
        revision_path = ws.new_note_path(revision_id, f"Revision of {sealed_decision.title}")
    rel = ws.vault.relative(revision_path)
    events = [replace(event, successor=revision_id)]
    revision_text = None
    if revision is None or not reuse:
        target = _current_successor(ws, state, sealed_decision, known)
        revision_text = _revision_text(ws, note, sealed_decision, target, revision_id, now)
    if not reuse and revision_text is not None:
        asked = ws.parse_new(revision_path, revision_text)
        events.append(Event(event="asked", id=revision_id, at=event.at, actor=ws.config.default_ruler, path=rel,
                            text=revision_text, summary=asked.summary, topics=asked.topics, record=new_record()))
    ws.vault.ledger.append(events)
    if revision_text is None:
        _add_to_revision(ws, revision_path, note, sealed_decision, now)
    else:  # never over an existing file: that refusal leaves the edit in place, to be tried again
        durable.create_note(revision_path, revision_text)
    return rel


def latest_revision(history: History, is_open: Callable[[str], bool]) -> str | None:
    """The revision the latest edit of the sealed note went to (a later burst is added to it while it is
    open). Where that edit made more than one (two devices' twins, or the same text typed again after its
    first revision was closed), the first still open in the order twins keep (see `merge_twin_revisions`),
    whichever of their lines the merged ledger holds last; none open: the latest."""
    rejected = [e for e in history.events if e.event == "edit-rejected" and e.successor]
    if not rejected:
        return None
    latest = sorted((e for e in rejected if e.hash == rejected[-1].hash), key=event_key)
    return next((e.successor for e in latest if e.successor and is_open(e.successor)), rejected[-1].successor)


def _is_open(record: History | None) -> bool:
    return record is None or record.status in (None, Status.OPEN)


# docs/design/0028-conflict-copies-and-twin-revisions.md
def merge_twin_revisions(ws: Workspace, state: VaultState) -> list[tuple[str, str | None, str]]:
    """One edit of a sealed note that two devices' watchers each made a revision of (a sync engine or a pull
    brought the edit to both before either's revision reached the other) becomes one revision again: every
    device keeps the revision whose `edit-rejected` line sorts first by checksum and withdraws the other, as
    long as nobody has touched it since. Returns (withdrawn id, its note's path, kept id).

    How depends on the carrier. In a git clone the note is withdrawn in place (status withdrawn, its reason
    naming the revision kept): a clone that answered it meanwhile then merges with this one as two closings
    (a conflict the owner settles), where a removed note would stop `git pull` on a modify/delete conflict.
    Elsewhere (a sync engine) the note is removed, its text in the ledger: an engine keeps a note that one
    device changed and another removed, where two changes would leave a conflict copy."""
    known = ws.histories()
    in_place: bool | None = None  # looked up at the first twin: nearly every pass has none
    done: list[tuple[str, str | None, str]] = []
    for history in list(known.values()):
        by_hash: dict[str, list[Event]] = {}
        for event in history.events:
            if event.event == "edit-rejected" and event.hash and event.successor:
                by_hash.setdefault(event.hash, []).append(event)
        for twins in by_hash.values():
            successors = list(dict.fromkeys(e.successor for e in sorted(twins, key=event_key) if e.successor))
            for loser in successors[1:]:
                if _closed_before_asked(known, successors[0], loser):
                    continue  # the same text typed again after its revision was closed: a new proposal
                note = state.get(loser)
                in_place = git_dir(ws.vault.root) is not None if in_place is None else in_place
                withdraw = _withdraw_twin_in_place if in_place else _remove_twin
                if withdraw(ws, state, known, loser, successors[0], history.id):
                    done.append((loser, note.path if note else None, successors[0]))
    return done


def _closed_before_asked(known: dict[str, History], kept: str, other: str) -> bool:
    """Whether the revision `kept` was closed (answered, withdrawn) before `other` was asked: then `other`
    is no twin made at the same time but the same edit proposed again."""
    other_record = latest_with_id(known, other)
    asked = next((e for e in other_record.events if e.event == "asked"), None) if other_record else None
    return asked is not None and _closed(latest_with_id(known, kept), lambda closing: _before(closing, asked))


def _before(first: Event, then: Event) -> bool:
    """Whether `first` was recorded before `then`: by their places in one device's file, else by their times
    (events of two devices in the same second count as at the same time)."""
    if first.source is not None and first.source == then.source and first.line is not None and then.line is not None:
        return first.line < then.line
    return first.at < then.at


def _twin_reason(sealed_id: str, kept: str) -> str:
    return f"The same edit of {sealed_id} is revision {kept}, made on another device at the same time."


def _untouched_twin(ws: Workspace, state: VaultState, record: History, loser: str) -> notes.Note | None:
    """The twin's note, read, while it still holds exactly the text it was asked with."""
    asked = next((e for e in record.events if e.event == "asked"), None)
    decision = state.get(loser)
    if asked is None or decision is None:
        return None
    typed = ws.read(ws.vault.path_of(decision))
    return typed if note_edits.file_text(typed, typed.text) == asked.text else None


def _withdraw_twin_in_place(ws: Workspace, state: VaultState, known: dict[str, History], loser: str, kept: str,
                            sealed_id: str) -> bool:
    """The ledger's line first, then the note: a crash between leaves the note as it was asked, which the
    next pass puts at the ledger's withdrawn text (`restore_latest`). A record withdrawn already (here or on
    another device) or in conflict is left to what the watcher does for any record."""
    record = latest_with_id(known, loser)
    if record is None or record.status is not Status.OPEN or record.conflict is not None:
        return False
    typed = _untouched_twin(ws, state, record, loser)
    if typed is None:
        return False  # changed since it was made, or not here: left to the owner
    reason = _twin_reason(sealed_id, kept)
    text = note_edits.with_fields(typed, {"status": Status.WITHDRAWN.value, "reason": reason})
    ws.vault.ledger.append([Event(event="withdrawn", id=loser, at=utc_stamp(ws.now()),
                                  actor=ws.config.default_ruler, path=ws.vault.relative(typed.path),
                                  reason=reason, text=note_edits.file_text(typed, text),
                                  record=record.record)])
    durable.write_note(typed, text)
    return True


def _remove_twin(ws: Workspace, state: VaultState, known: dict[str, History], loser: str, kept: str,
                 sealed_id: str) -> bool:
    record = latest_with_id(known, loser)
    note = state.get(loser)
    if record is None or record.status not in (Status.OPEN, Status.WITHDRAWN):
        return False
    if note is not None and _untouched_twin(ws, state, record, loser) is None:
        return False  # changed since it was made: both stay, for the owner
    if record.status is Status.OPEN:
        ws.vault.ledger.append([Event(event="withdrawn", id=loser, at=utc_stamp(ws.now()),
                                      actor=ws.config.default_ruler, path=note.path if note else record.path or "",
                                      reason=_twin_reason(sealed_id, kept), record=record.record)])
    if note is None:
        return False  # withdrawn already, and its note gone: nothing left to do
    ws.vault.path_of(note).unlink(missing_ok=True)
    return True


def _add_to_revision(ws: Workspace, path: Path, typed: notes.Note, sealed: Decision, now: dt.datetime) -> None:
    """A later burst: its text goes below what the revision holds, once."""
    revision = ws.read(path)
    newline = revision.newline
    body = typed.body.replace("\r\n", "\n").strip("\n")
    changed = [f"- {key}: {value}" for key, value in (typed.data or {}).items()
               if key in ("summary", "topics", "source", "revisit_if", "revisit_by")
               and note_edits.plain(value) != note_edits.plain(getattr(sealed, key, None))
               and not (key == "topics" and list(value or []) == list(sealed.topics))]
    content = (["Properties as typed:", "", *changed, ""] if changed else []) + [body]
    if newline.join(content).replace("\n", newline) in revision.text:
        return  # already there (a restart after a crash repeats the step)
    section = [f"## Typed into {sealed.id} on {now:%Y-%m-%d %H:%M}", "", *content]
    text = revision.text.rstrip("\r\n") + newline * 2 + newline.join(section).replace("\n", newline) + newline
    durable.write_note(revision, text)


def _current_successor(ws: Workspace, state: VaultState, old: Decision, known: dict[str, History]) -> Decision | None:
    """The ruling a revision of `old` should propose to replace: `old` itself while it is current,
    else the current end of its supersession chain; none for a retracted ruling."""
    by_id, resolve = state.by_id(), state.resolver()
    current: Decision | None = by_id.get(old.id, old)
    seen: set[str] = set()
    while current is not None and current.id not in seen:
        seen.add(current.id)
        history = ws.history_of(state, current, known) if current.path in {d.path for d in state.decisions} else None
        status = (history.status if history else None) or current.status
        if status is Status.RULED:
            return current
        if status is not Status.SUPERSEDED:
            return None
        current = by_id.get(resolve(current.superseded_by or "") or "")
    return None


def _restored_text(history: History, typed: notes.Note) -> str:
    """The sealed text, byte for byte, but for properties that are the owner's own (`tags`,
    `aliases`, ...): as they were changed since sealing, they stay changed."""
    seal = history.seal
    assert seal is not None and seal.text is not None
    sealed = notes.parse_text(seal_text_without_bom(history), typed.path)
    if not hasattr(sealed.data, "items") or not hasattr(typed.data, "items"):
        return seal.text
    missing = object()
    keys = {*sealed.data, *typed.data}
    differ = {key for key in keys if typed.data.get(key, missing) != sealed.data.get(key, missing)}
    ledger_keys = {key for key in differ if is_ledger_property(str(key))}
    if differ == ledger_keys:
        return seal.text
    # Start from what was typed, so the owner's lines stay as written; put back the rest.
    put_back = {key: sealed.data.get(key, note_edits.REMOVE) for key in sorted(ledger_keys)}
    text = note_edits.with_fields(typed, put_back) if put_back else typed.text
    bom = seal.text[:len(seal.text) - len(sealed.text)]
    body = sealed.body.replace("\r\n", "\n").replace("\n", typed.newline)
    return bom + text[:len(text) - len(typed.body)] + body


def _has_note_file(ws: Workspace, decision_id: str) -> bool:
    folder = ws.vault.root / ws.config.decisions_folder
    return any(folder.glob(f"{decision_id} *.md")) or any(folder.glob(f"{decision_id}.md"))


def _sealed_decision(ws: Workspace, current: Decision, sealed_text: str) -> Decision:
    note = notes.parse_text(sealed_text, ws.vault.path_of(current))
    found, _ = build_decision(note.data, path=current.path, body=note.body, key_lines=note.key_lines)
    return found or current


def _revision_text(ws: Workspace, typed: notes.Note, old: Decision, target: Decision | None, revision_id: str,
                   now: dt.datetime) -> str:
    changes: dict[str, Any] = {
        "id": revision_id, "status": Status.OPEN.value,
        "supersedes": [f"[[{target.title}]]"] if target else note_edits.REMOVE,
        "reason": f"In-place edit of sealed {old.id} on {now:%Y-%m-%d %H:%M}, proposed as a revision of it."
                  + (" The retraction typed with it is not applied: to retract, change only `status` and `reason`."
                     if str((typed.data or {}).get("status", "")).strip() == Status.RETRACTED.value else ""),
        "asked_at": now, "asked_by": ws.config.default_ruler,
        "ruled_at": note_edits.REMOVE, "ruled_by": note_edits.REMOVE, "superseded_by": note_edits.REMOVE}
    typed_summary = (typed.data or {}).get("summary")
    if typed_summary is None or str(typed_summary).strip() == old.summary:
        # The summary was not what was edited: say what the note is, so lists do not show the line twice.
        changes["summary"] = f"Revision of {old.id}: {old.summary}"
    return note_edits.with_fields(typed, changes)
