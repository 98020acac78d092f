"""`import`: decisions brought in from other records, as decision notes (`harvest` brings those of notes).

Each foreign record becomes one decision note through the same steps as `ask`, `rule`, `withdraw`
and `retract` (a ruling is sealed at once, and its supersessions applied), followed by an
`imported` event naming the record's foreign identity. That identity is what makes a second run
create nothing: a record whose identity the ledger already has is reported, not imported again.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import durable, note_edits, notes
from ..cjk import text_size
from ..dates import to_vault_time
from ..drafts import unanswered
from ..errors import NoteError, UsageError, VaultToolsError
from ..history import latest_with_id, new_record
from ..importers import (  # one foreign format's reader, loaded for its import only
    IMPORT_ACTOR,
    OPEN,
    RETRACTED,
    RULED,
    SUPERSEDED,
    WITHDRAWN,
    Parsed,
    Record,
    Review,
    Skipped,
    first_sentence,
)
from ..meaning import seal_hash
from ..model import MIN_TEXT, Decision, Status, newest_first_key
from ..note_edits import sections
from ..ruling_graph import settled_topics
from ..services.live import LiveState
from ..services.workspace import Workspace
from ..topics import TopicIndex
from ..vault import VaultState
from .build import build
from .ids import id_after
from .seal import seal_events
from .supersede import SupersedePlan, plan_superseded, supersede_targets, superseded_event

MAX_NAME = 100


@dataclass
class Outcome:
    """What became of one foreign record (or review item, or harvested candidate)."""

    key: str
    label: str
    status: str  # the status it has (or would have) in the vault
    summary: str
    id: str | None = None  # its decision note's id; None in a dry run
    path: str | None = None
    remarks: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"key": self.key, "label": self.label, "status": self.status, "summary": self.summary,
                "id": self.id, "path": self.path, "remarks": self.remarks}


@dataclass
class ImportResult:
    kind: str
    dry_run: bool
    files_read: int = 0
    created: list[Outcome] = field(default_factory=list)  # or, in a dry run, would be
    reviews: list[Outcome] = field(default_factory=list)  # open questions for the owner
    already: list[Outcome] = field(default_factory=list)  # imported by an earlier run
    skipped: list[Skipped] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    pages_written: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "dry_run": self.dry_run, "files_read": self.files_read,
                "created": [o.as_json() for o in self.created], "reviews": [o.as_json() for o in self.reviews],
                "already_imported": [o.as_json() for o in self.already],
                "skipped": [{"file": s.file, "why": s.why} for s in self.skipped],
                "warnings": self.warnings, "pages_written": self.pages_written}


def imported_ids(ws: Workspace) -> dict[str, str]:
    """Foreign identity -> decision id, for everything imported or harvested before."""
    return {event.origin: event.id for event in ws.vault.ledger.read() if event.event == "imported" and event.origin}


def parse_source(kind: str, folder: Path) -> Parsed:
    from ..importers import adr, export, owner_ask  # one foreign format's reader, loaded for its import only

    if kind == "export":
        if not folder.is_file():
            raise UsageError("is not a file (give the JSONL that `vault-tools export` wrote)", path=str(folder))
        return export.parse(folder)
    if not folder.is_dir():
        raise UsageError("is not a folder", path=str(folder))
    if kind == "owner-ask":
        parsed = owner_ask.parse(folder)
        if owner_ask.find_state_folder(folder) is None:
            raise UsageError(f"has neither state/{owner_ask.RULINGS_FILE} nor state/{owner_ask.ASKS_FILE}",
                             path=str(folder))
        return parsed
    if kind == "adr":
        return adr.parse(folder)
    raise UsageError(f"unknown record kind {kind!r} (known: owner-ask, adr, export)")


# docs/design/0029-imports-keep-a-foreign-identity.md
def import_records(ws: Workspace, parsed: Parsed, *, dry_run: bool = False,
                   progress: Callable[[int, int], None] | None = None) -> ImportResult:
    """Create a decision note for every record not imported before; then the review items; then the pages."""
    result = ImportResult(parsed.kind, dry_run, parsed.files_read, skipped=list(parsed.skipped),
                          warnings=list(parsed.warnings))
    total = len(parsed.records) + len(parsed.reviews)
    with ws.vault.ledger.locked(), LiveState(ws, load=ws.state_for_write) as live:
        known = imported_ids(ws)
        importing = _Importing(ws, live.state)
        for done, record in enumerate(parsed.records, 1):
            named = {known.get(key) for key in (*record.supersedes, *(record.alongside or ()))}
            if importing.unseen & (named | importing.current_on(record.topics)):
                live.refresh()  # it builds on notes this run wrote since the view was last brought up to date
                importing.unseen.clear()
            state = live.state
            outcome = Outcome(record.key, record.label, _final_status(record), record.summary,
                              remarks=list(record.remarks))
            if record.key in known:
                if not dry_run and _finish(ws, state, known[record.key]):  # a run cut short between its steps
                    live.refresh()
                found = live.state.get(known[record.key])
                outcome.id, outcome.path = known[record.key], found.path if found else None
                outcome.status = ws.status_of(live.state, found).value if found else outcome.status
                result.already.append(outcome)
            elif dry_run:
                result.created.append(outcome)
            else:
                try:
                    decision = _create(ws, state, record, known, outcome, importing)
                except VaultToolsError as error:
                    result.skipped.append(Skipped(record.source, f"{record.label}: {error.message}"))
                else:
                    known[record.key] = decision.id
                    importing.unseen.add(decision.id)
                    outcome.id, outcome.path = decision.id, decision.path
                    result.created.append(outcome)
            if progress:
                progress(done, total)
        live.refresh()
        state = live.state
        by_key = {r.key: r for r in parsed.records}
        for done, review in enumerate(parsed.reviews, len(parsed.records) + 1):
            raised_by = by_key.get(review.record)
            if raised_by is None:
                continue
            outcome = Outcome(review.key, f"review of {raised_by.label}", OPEN, review.text)
            if review.key in known:
                outcome.id = known[review.key]
                result.already.append(outcome)
            elif dry_run:
                result.reviews.append(outcome)
            elif raised_by.key in known:
                decision = _review_question(ws, state, review, raised_by, by_key, known)
                known[review.key] = decision.id
                live.refresh()
                state = live.state
                outcome.id, outcome.path, outcome.summary = decision.id, decision.path, decision.summary
                result.reviews.append(outcome)
            if progress:
                progress(done, total)
        if not dry_run:  # also after a run that created nothing: the one before may have been cut short
            result.pages_written = build(ws).written
    return result


def _final_status(record: Record) -> str:
    return SUPERSEDED if record.superseded_by and record.status in (RULED, SUPERSEDED) else record.status


def _name(names: Sequence[str], default: str) -> str:
    text = ", ".join(names)
    if len(text) > MAX_NAME:
        text = text[:MAX_NAME - 1].rsplit(",", 1)[0] + "…"
    return text or default


def _when(ws: Workspace, value: dt.datetime | dt.date | None) -> dt.datetime | dt.date:
    return to_vault_time(value, ws.tz) if value is not None else ws.now_local()


class _Importing:
    """What an import keeps from one record to the next instead of working it out on the whole vault again:
    the current rulings by the topics they settle (updated as each record is written), and the next id."""

    def __init__(self, ws: Workspace, state: VaultState) -> None:
        self.ws = ws
        self.index = TopicIndex()
        self.owners: dict[str, set[str]] = {}  # topic -> the current rulings settling it
        self.last_id: str | None = None
        # Written by this run since the live view was last brought up to date: each refresh of the view after a
        # new note works out every note's ties again, so it is brought up to date only when a record builds on one
        self.unseen: set[str] = set()
        in_effect = ws.decisions_in_effect(state)
        by_id, resolve = {d.id: d for d in in_effect}, state.resolver()
        for decision in in_effect:
            if decision.is_current:
                self._own(decision.id, settled_topics(decision, by_id, resolve))

    def _own(self, decision_id: str, topics: Iterable[str]) -> None:
        for topic in topics:
            self.index.add(topic)
            self.owners.setdefault(topic, set()).add(decision_id)

    def current_on(self, topics: Iterable[str]) -> set[str]:
        """The ids of the current rulings settling one of `topics` (near spellings count)."""
        return {owner for topic in topics for match in self.index.matches(topic) for owner in self.owners[match]}

    def recorded(self, decision: Decision, replaced: list[Decision], current: bool) -> None:
        gone = {old.id for old in replaced}
        for owners in self.owners.values():
            owners -= gone
        if current:  # it settles its own topics and those of what it replaced
            self._own(decision.id, [*decision.topics, *(topic for old in replaced for topic in old.topics)])

    def next_id(self, state: VaultState) -> str:
        """The vault's next id once, then one more each time (the ledger's lock is held: no one else gives any)."""
        if self.last_id is None:
            self.last_id = self.ws.next_id(state)
        else:
            self.last_id = id_after(self.last_id)
        return self.last_id


def _create(ws: Workspace, state: VaultState, record: Record, known: dict[str, str], outcome: Outcome,
            importing: _Importing) -> Decision:
    if text_size(record.summary) < MIN_TEXT or "\n" in record.summary:
        raise NoteError(f"summary must be one line of at least {MIN_TEXT} characters: {record.summary!r}")
    if record.id and record.id not in importing.unseen and _id_free(ws, state, record.id):
        new_id, importing.last_id = record.id, None  # the next id is the vault's again
    else:
        new_id = importing.next_id(state)
    path = ws.new_note_path(new_id, record.summary)
    fields: list[tuple[str, Any]] = [("type", "decision"), ("id", new_id)]
    ruling = record.status in (RULED, SUPERSEDED, RETRACTED)
    fields.append(("status", Status.RULED.value if ruling else Status.OPEN.value))
    fields += [("topics", list(record.topics)), ("summary", record.summary)]
    if record.asked_at is not None or not ruling:
        fields += [("asked_at", _when(ws, record.asked_at)), ("asked_by", record.asked_by or ws.config.default_asker)]
    ruler = _name(record.deciders, ws.config.default_ruler)
    if ruling:
        fields += [("ruled_at", _when(ws, record.ruled_at)), ("ruled_by", ruler)]
    if record.source:
        fields.append(("source", record.source))
    links, replaced = [], []
    for key in record.supersedes:
        target = state.get(known.get(key, ""))
        if target is None:
            outcome.remarks.append(f"supersedes {key.split(':', 1)[-1]}, which was not imported")
        elif ws.status_of(state, target) is not Status.RULED or target.status is not Status.RULED:
            outcome.remarks.append(f"supersedes {target.id}, which is {ws.status_of(state, target).value}: "
                                   "left as it is")
        else:
            links.append(f"[[{target.title}]]")
            replaced.append(target)
    reason = (record.supersede_reason or record.reason) if links else None
    if links:
        fields += [("supersedes", links), ("reason", reason)]
    if ruling:  # a current ruling on the same topic that this record does not say it replaces stands beside it
        said = [d for d in (state.get(known.get(key, "")) for key in record.alongside or ()) if d is not None]
        # `alongside` given (an export, or a record whose relation to another is left to a review): only those
        beside_ids = set() if record.alongside is not None else \
            importing.current_on(record.topics) - {d.id for d in said} - {d.id for d in replaced}
        beside = sorted((d for d in map(state.get, beside_ids) if d is not None),
                        key=lambda d: newest_first_key(d, ws.tz), reverse=True)
        if said or beside:
            fields.append(("alongside", [f"[[{d.title}]]" for d in [*said, *beside]]))
        if beside:
            outcome.remarks.append(f"stands alongside {', '.join(d.id for d in beside)}, on the same topic")
    if record.reask_reason and text_size(record.reask_reason) >= MIN_TEXT:
        fields.append(("reask_reason", record.reask_reason))
    fields += [(name, value) for name, value in (("revisit_if", record.revisit_if), ("revisit_by", record.revisit_by),
                                                 ("due", record.due)) if value]
    body = record.body if record.whole_body else sections(("Question", record.question),
                    ("Ruling" if ruling else "Context", record.summary if ruling else None))
    if record.body and not record.whole_body:
        body = body.rstrip("\n") + "\n\n" + record.body.strip("\n") + "\n" if body.strip() else record.body
    text = _fitted(ws, record, fields, body)
    decision = _write_record(ws, state, path, text, record, ruler, reason)
    importing.recorded(decision, replaced, current=ruling and record.status != RETRACTED)
    return decision


# docs/design/0040-an-import-is-all-or-nothing-per-record.md
def _write_record(ws: Workspace, state: VaultState, path: Path, text: str, record: Record, ruler: str,
                  reason: str | None) -> Decision:
    """Every event of one record in one append (asked or ruled and sealed, imported, then its closing and the
    supersessions it makes), then its note in its final state, then the notes it supersedes. A kill before the
    append leaves nothing; after it, the ledger holds the whole record and the next run writes what notes it
    lacks (`_finish`), so a rerun ends where one clean run ends."""
    decision = ws.parse_new(path, text)
    plans: list[SupersedePlan] = []
    if record.status in (RULED, SUPERSEDED, RETRACTED):
        why = unanswered(decision, unchanged_question_counts=False)
        if why:
            raise NoteError(why, path=decision.path)
        targets = supersede_targets(ws, state, decision, decision.supersedes)
        if targets and reason is None:
            raise NoteError("supersedes a ruling but has no reason", path=decision.path)
        plans = [plan_superseded(ws, state, target, decision, reason or "") for target in targets]
        events = seal_events(ws, state, decision, text, None, ruler)
    else:
        events = [ws.asked_event(decision, record.asked_by or ws.config.default_asker, text, record=new_record())]
    made = events[0].record or new_record()
    events.append(ws.event("imported", decision, IMPORT_ACTOR, origin=record.key, record=made))
    final = text
    if record.status in (RETRACTED, WITHDRAWN):
        closing = Status.RETRACTED if record.status == RETRACTED else Status.WITHDRAWN
        final = note_edits.with_fields(notes.parse_text(text, path), {"status": closing.value, "reason": record.reason})
        closed = ws.parse_new(path, final)
        events.append(ws.event(closing.value, closed, ruler if closing is Status.RETRACTED else ws.config.default_ruler,
                               record=made, reason=record.reason, text=final,
                               hash=seal_hash(closed, state.resolver(), ws.tz) if closing is Status.RETRACTED else None))
        decision = closed
    events += [superseded_event(ws, state, plan, ruler) for plan in plans]
    ws.vault.ledger.append(events)
    durable.create_note(path, final)
    for plan in plans:
        durable.write_note(plan.note, plan.text, plan.parsed)
    return decision


def _finish(ws: Workspace, state: VaultState, decision_id: str) -> bool:
    """An imported record whose note is not (yet) what its ledger says, because a run was cut short after
    its append: the note written from the ledger's latest text, where it is missing or still holds a text
    the ledger recorded before (never over what the owner typed). True when a note was written."""
    history = latest_with_id(ws.histories(), decision_id)
    latest = next((e for e in reversed(history.events) if e.text is not None), None) if history else None
    if history is None or latest is None or latest.text is None:
        return False
    note = state.get(decision_id)
    path = ws.vault.root / (note.path if note is not None else history.path or latest.path)
    if note is not None:
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == latest.text or not any(e.text == current for e in history.events if e is not latest):
            return False
    path.parent.mkdir(parents=True, exist_ok=True)
    durable.write_atomic(path, latest.text.encode("utf-8"))
    return True


def _fitted(ws: Workspace, record: Record, fields: list[tuple[str, Any]], body: str) -> str:
    """The note's text; a body too long for a decision note (`notes.MAX_NOTE_BYTES`) is cut at a line, with a line
    saying so, and kept whole under `kept/` first, so the note written can always be read back."""
    text = note_edits.render_note(fields, body)
    size = len(text.encode("utf-8"))
    if size <= notes.MAX_NOTE_BYTES:
        return text
    kept = ws.keep_copy(f"{record.label} full text", body.encode("utf-8"))
    said = (f"\n\n_Cut here: the whole text ({size:,} bytes) is longer than a decision note holds; it is kept in "
            f"`{kept}`, and at its source `{record.source}`._\n")
    room = notes.MAX_NOTE_BYTES - (size - len(body.encode("utf-8"))) - len(said.encode("utf-8")) - 4096
    cut = body.encode("utf-8")[:max(room, 0)].decode("utf-8", errors="ignore")
    return note_edits.render_note(fields, cut[:cut.rfind("\n") + 1 or len(cut)].rstrip("\n") + said)


def _id_free(ws: Workspace, state: VaultState, decision_id: str) -> bool:
    """No note has the id and the ledger never gave it out."""
    return state.get(decision_id) is None and decision_id not in ws.histories_by_id()


def _review_question(ws: Workspace, state: VaultState, review: Review, record: Record, by_key: dict[str, Record],
                     known: dict[str, str]) -> Decision:
    """An open question asking the owner to settle what a record only implies."""
    own = known[record.key]
    others = [f"{by_key[k].label} ({known[k]})" for k in review.others if k in known and k in by_key]
    topics = list(dict.fromkeys([*record.topics, *(t for k in review.others if k in by_key for t in by_key[k].topics)]))
    summary = first_sentence(f"Review the import of {record.label} ({own}): {review.text}", limit=300)
    new_id = ws.next_id(state)
    path = ws.new_note_path(new_id, f"Review import of {record.label}")
    how = [f"Imported {record.label} as {own}. {review.text}"]
    if others:
        how.append(f"It may concern {', '.join(others)}.")
        how.append(f"If {own} does replace one of them, rule this question with `vault-tools rule {new_id} --summary "
                   f"\"...\" --supersedes ID --reason \"...\"`; if not, withdraw it with `vault-tools withdraw {new_id} "
                   "--reason \"...\"`.")
    fields: list[tuple[str, Any]] = [
        ("type", "decision"), ("id", new_id), ("status", Status.OPEN.value), ("topics", topics),
        ("summary", summary), ("asked_at", ws.now_local()), ("asked_by", IMPORT_ACTOR), ("source", record.source),
        ("reask_reason", f"An imported record leaves this open: {record.label} as imported from {record.source}")]
    text = note_edits.render_note(fields, sections(("Question", summary), ("Context", " ".join(how))))
    decision = ws.parse_new(path, text)
    durable.create_note(path, text)
    made = new_record()
    ws.vault.ledger.append([ws.asked_event(decision, IMPORT_ACTOR, text, record=made),
                            ws.event("imported", decision, IMPORT_ACTOR, origin=review.key, record=made)])
    return decision
