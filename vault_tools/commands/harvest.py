"""`harvest`: decisions written in passing in ordinary notes, proposed as decision notes (see docs/import.md).

Each one found becomes a decision note through the same steps as `ask` and `rule`, followed by an `imported`
event naming where it was found, so a second run proposes nothing twice.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import durable, note_edits, notes
from ..cjk import text_size
from ..errors import NoteError, Refused, UsageError
from ..history import new_record
from ..importers import (  # one foreign format's reader, loaded for its import only
    OPEN,
    RULED,
    Skipped,
    first_sentence,
)
from ..importers import harvest as harvesting  # one foreign format's reader, loaded for its import only
from ..model import MIN_TEXT, Decision, Status
from ..note_edits import sections
from ..services.workspace import Workspace
from ..vault import VaultState
from ..vault_walk import iter_markdown
from .build import build
from .import_ import Outcome, imported_ids
from .rule import rule


@dataclass
class HarvestResult:
    dry_run: bool
    notes_read: int = 0
    created: list[Outcome] = field(default_factory=list)
    confirmed: list[Outcome] = field(default_factory=list)  # recorded as ruled
    to_confirm: list[Outcome] = field(default_factory=list)  # reads as ruled, left open until confirmed
    already: list[Outcome] = field(default_factory=list)
    linked_back: list[str] = field(default_factory=list)  # notes given a block id
    skipped: list[Skipped] = field(default_factory=list)
    pages_written: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "notes_read": self.notes_read,
                "created": [o.as_json() for o in self.created], "confirmed": [o.as_json() for o in self.confirmed],
                "to_confirm": [o.as_json() for o in self.to_confirm],
                "already_harvested": [o.as_json() for o in self.already], "linked_back": self.linked_back,
                "skipped": [{"file": s.file, "why": s.why} for s in self.skipped], "pages_written": self.pages_written}


def _notes_to_read(ws: Workspace, paths: Iterable[Path]) -> list[tuple[str, Path]]:
    wanted = [p if p.is_absolute() else Path.cwd() / p for p in paths]
    found = []
    root = ws.vault.root.resolve()
    for rel, entry in iter_markdown(ws.vault.root, ws.config):
        absolute = Path(entry.path)
        here = root / rel  # where the note is in the vault, a symlinked one too (not where its link leads)
        if not wanted or any(here == w.resolve() or w.resolve() in here.parents
                             or absolute.resolve() == w.resolve() for w in wanted):
            found.append((rel, absolute))
    for path in wanted:
        if not path.exists():
            raise UsageError("does not exist", path=str(path))
        if not ws.vault.inside(path):
            raise UsageError("is not inside the vault", path=str(path))
    return found


def harvest(ws: Workspace, paths: Iterable[Path] = (), *, dry_run: bool = False, link_back: bool = False,
            confirm_ids: Iterable[str] = (), confirm: Callable[[Outcome], bool] | None = None,
            progress: Callable[[int, int], None] | None = None, build_pages: bool = True) -> HarvestResult:
    """Propose a decision note for every decision written in passing that was not harvested before."""
    result = HarvestResult(dry_run)
    with ws.vault.ledger.locked():
        state = ws.state_for_write()
        known = imported_ids(ws)
        for decision_id in confirm_ids:
            result.confirmed.append(_confirm(ws, state, decision_id, known))
            state = ws.state()
        to_read = _notes_to_read(ws, paths)
        for done, (rel, path) in enumerate(to_read, 1):
            if progress:
                progress(done, len(to_read))
            try:
                raw = path.read_bytes()
                text, bom = notes.decode(raw, path)
            except (OSError, NoteError) as error:
                result.skipped.append(Skipped(rel, getattr(error, "message", None) or str(error)))
                continue
            result.notes_read += 1
            if notes.read_head(path) is not None:
                continue  # a decision note: what it says is already recorded
            added = 0  # lines a block id put on a line of its own added above the next candidates
            for candidate in harvesting.find(text, rel):
                candidate = replace(candidate, line=candidate.line + added, end_line=candidate.end_line + added)
                outcome = Outcome(candidate.key, f"{rel}:{candidate.line}", OPEN, candidate.text)
                if candidate.key in known:
                    outcome.id = known[candidate.key]
                    result.already.append(outcome)
                    continue
                summary = _candidate_summary(candidate)
                if summary is None:
                    result.skipped.append(Skipped(f"{rel}:{candidate.line}", f"too short to stand as a decision "
                                                  f"(under {MIN_TEXT} characters): {candidate.text!r}"))
                    continue
                outcome.summary = summary
                if dry_run:
                    (result.to_confirm if candidate.says_ruled else result.created).append(outcome)
                    continue
                decision, linked = _harvested_note(ws, state, candidate, summary, text, bom, path, link_back)
                known[candidate.key] = decision.id
                if linked:
                    added += linked.count("\n") - text.count("\n")
                    text = linked
                    if rel not in result.linked_back:
                        result.linked_back.append(rel)
                state = ws.state()
                outcome.id, outcome.path = decision.id, decision.path
                result.created.append(outcome)
                if candidate.says_ruled:
                    if confirm is not None and confirm(outcome):
                        result.confirmed.append(_confirm(ws, state, decision.id, known))
                        state = ws.state()
                    else:
                        result.to_confirm.append(outcome)
        if build_pages and not dry_run and (result.created or result.confirmed):
            result.pages_written = build(ws).written
    return result


def _candidate_summary(candidate: harvesting.Candidate) -> str | None:
    summary = first_sentence(candidate.text, limit=200)
    if text_size(summary) < MIN_TEXT:
        title = candidate.path.rsplit("/", 1)[-1].removesuffix(".md")
        summary = f"{summary} (noted in {title})"
    return summary if text_size(summary) >= MIN_TEXT else None


def _harvested_note(ws: Workspace, state: VaultState, candidate: harvesting.Candidate, summary: str, text: str,
                    bom: bool, path: Path, link_back: bool) -> tuple[Decision, str | None]:
    new_id = ws.next_id(state)
    link_back = link_back and candidate.kind != "table"  # a table row holds no block id: linked by heading
    block_id = candidate.block_id or (new_id.lower() if link_back else None)
    link = harvesting.link_target(candidate, block_id)
    where = f"Written in {link}, line {candidate.line}" + (f", under \"{candidate.heading}\"" if candidate.heading else "")
    context = where + "." + (f"\n\n> {candidate.text}" if candidate.text != summary else "")
    if candidate.says_ruled:
        context += (f"\n\nIt reads as a decision already made: to record it as ruled, run "
                    f"`vault-tools harvest --confirm {new_id}`.")
    fields: list[tuple[str, Any]] = [
        ("type", "decision"), ("id", new_id), ("status", Status.OPEN.value), ("topics", list(candidate.topics)),
        ("summary", summary), ("asked_at", ws.now_local()), ("asked_by", ws.config.default_ruler), ("source", link)]
    note_text = note_edits.render_note(fields, sections(("Question", summary), ("Context", context)))
    note_path = ws.new_note_path(new_id, summary)
    decision = ws.parse_new(note_path, note_text)
    linked = None
    if link_back and candidate.block_id is None:
        linked = harvesting.with_block_id(text, candidate, block_id or new_id.lower())
    durable.create_note(note_path, note_text)
    made = new_record()
    ws.vault.ledger.append([ws.asked_event(decision, ws.config.default_ruler, note_text, record=made),
                            ws.event("imported", decision, "vault-tools harvest", origin=candidate.key, record=made)])
    if linked is not None:  # through a symlinked note to the file it names: the link stays a link
        durable.write_atomic(path.resolve() if path.is_symlink() else path, durable.encode(linked, bom=bom))
    return decision, linked


def _confirm(ws: Workspace, state: VaultState, decision_id: str, known: dict[str, str]) -> Outcome:
    """Record a harvested question as the owner's ruling, in the words it was written in."""
    decision = ws.find(state, decision_id)
    if decision.id not in {v for k, v in known.items() if k.startswith("harvest:")}:
        raise Refused(f"{decision.id} was not harvested; use `vault-tools rule {decision.id}` to rule on it",
                      path=decision.path)
    ruled = rule(ws, decision.id, decision.summary, source=decision.source)
    return Outcome(next(k for k, v in known.items() if v == decision.id), decision.id, RULED, ruled.summary,
                   ruled.id, ruled.path)


def harvest_changed(ws: Workspace, relative_paths: Iterable[str]) -> list[Decision]:
    """For the watcher: harvest the notes that just changed (never links back, never rules)."""
    paths = [ws.vault.root / rel for rel in relative_paths if rel.endswith(".md") and (ws.vault.root / rel).is_file()]
    if not paths:
        return []
    result = harvest(ws, paths, build_pages=False)
    state = ws.state()
    return [d for d in (state.get(o.id or "") for o in result.created) if d is not None]
