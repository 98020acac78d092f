"""The sealed rulings in force whose note is gone: deleted, moved where notes are not read (the templates folder,
a dot-folder), or no longer a decision note. A ruling ends only by a retraction or a supersession the ledger
records, never by losing its file: every reader keeps it, read from the ledger's sealed text (`restore`
writes the note back).
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..errors import InconsistentVault, NoteError
from ..model import Decision, Status, build_decision
from ..notes import parse_text

if TYPE_CHECKING:
    from ..vault import VaultState
    from .workspace import Workspace


# docs/design/0005-a-ruling-ends-only-in-the-ledger.md
def missing_rulings(ws: Workspace, state: VaultState) -> list[Decision]:
    """The sealed rulings in force whose note is gone: deleted, moved where notes are not read (the
    templates folder, a dot-folder), or no longer a decision note. Each is read from the ledger's sealed
    text, at the path the ledger last recorded for it, marked `note_missing`: a ruling ends only by a retraction or a
    supersession the ledger records, never by losing its file. Not one whose note is there but cannot
    be read (it is reported as such), one in conflict, or one whose id another note now holds (lint's
    VT023 names both)."""
    if "missing_rulings" in state.derived:
        memo: list[Decision] = state.derived["missing_rulings"]
        return memo
    try:
        summaries = ws.record_summaries()
    except InconsistentVault:
        summaries = []
    candidates = [s for s in summaries if s.status is Status.RULED and s.seal_hash and s.conflict is None]
    found: list[Decision] = []
    if candidates:
        if state.decisions:
            ws.summary_of(state, state.decisions[0])  # ties every note to its record
        tied = {summary.record for summary in state.derived.get("summary_ties", {}).values()}
        held = {d.id for d in state.decisions}
        unreadable = {e.path for e in state.broken if e.path}
        try:
            known = ws.histories()
        except InconsistentVault:
            known = {}
        for summary in candidates:
            if summary.record in tied or summary.id in held or unreadable & set(summary.paths):
                continue
            history = known.get(summary.record)
            seal = history.seal if history is not None else None
            if history is None or seal is None or not seal.text:
                continue
            path = history.path or seal.path
            try:
                note = parse_text(seal.text.removeprefix("\ufeff"), ws.vault.root / path)
            except NoteError:
                continue
            decision, _ = build_decision(note.data, path=path, body=note.body, key_lines=note.key_lines)
            if decision is not None and decision.status is Status.RULED:
                found.append(replace(decision, note_missing=True))
    state.derived["missing_rulings"] = found
    return found
