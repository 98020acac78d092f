"""The sealed rulings in force whose note is gone: deleted, moved where notes are not read (the templates folder,
a dot-folder), or no longer a decision note. A ruling ends only by a retraction or a supersession the ledger
records, never by losing its file: every reader keeps it, read from the ledger's sealed text (`restore`
writes the note back). And the other way round: notes whose device's ledger has not arrived (`ledgers_not_here`).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..errors import InconsistentVault, NoteError
from ..history import twin_notes
from ..layout import device_tag, ledger_tags
from ..model import ID_PATTERN, Decision, Status, build_decision
from ..notes import parse_text
from ..record_files import LEDGER_FOLDER, LEDGER_SUFFIX, RECORD_DIR

if TYPE_CHECKING:
    from ..history import History, RecordSummary
    from ..vault import Vault, VaultState


class RecordReader(Protocol):
    """What finding the missing rulings asks of the workspace (`Workspace` is one): typed so, this module does not
    import the workspace, which imports it."""

    vault: Vault

    def record_summaries(self) -> list[RecordSummary]: ...

    def summary_of(self, state: VaultState, decision: Decision) -> RecordSummary | None: ...

    def histories(self) -> dict[str, History]: ...


# docs/design/0005-a-ruling-ends-only-in-the-ledger.md
def missing_rulings(ws: RecordReader, state: VaultState) -> list[Decision]:
    """The sealed rulings in force whose note is gone: deleted, moved where notes are not read (the templates
    folder, a dot-folder), or no longer a decision note. Each is read from the text the ledger keeps of it
    (`kept_text`), at the path the ledger last recorded for it, marked `note_missing`: a ruling ends only by a
    retraction or a supersession the ledger records, never by losing its file. Not one whose note is there but cannot
    be read (it is reported as such), one in conflict, or one whose id another note now holds (lint's
    VT023 names both)."""
    if state.derived.missing_rulings is not None:
        return state.derived.missing_rulings
    try:
        summaries = ws.record_summaries()
    except InconsistentVault:
        summaries = []
    candidates = [s for s in summaries if s.conflict is None and (
        (s.status is Status.RULED and s.seal_hash) or s.status in (Status.OPEN, Status.WITHDRAWN))]
    found: list[Decision] = []
    if candidates:
        if state.decisions:
            ws.summary_of(state, state.decisions[0])  # ties every note to its record
        tied = {summary.record for summary in (state.derived.summary_ties or {}).values()}
        held = {d.id for d in state.decisions}
        unreadable = {e.path for e in state.broken if e.path}
        untied = [summary for summary in candidates if not (
            summary.record in tied or summary.id in held or unreadable & set(summary.paths))]
        try:
            known = ws.histories() if untied else {}  # nearly always none: the histories are not loaded
        except InconsistentVault:
            known = {}
        # a note given two ids, one record closed by `commands.twins`: its note went with it on purpose
        twins_closed = {record.record for twins in twin_notes(known) for record in twins.records
                        if record.status in (Status.WITHDRAWN, Status.RETRACTED)}
        for summary in untied:
            if summary.record in twins_closed:
                continue
            history, status = known.get(summary.record), summary.status
            if history is None or status is None or kept_text(history, status) is None:
                continue
            if summary.status is not Status.RULED and not _gone_everywhere(history, summary, held, ws.vault.root):
                continue
            path = history.path or (history.seal.path if history.seal is not None else None) or summary.paths[-1]
            decision = recorded_version(history, status, path, ws.vault.root)
            if decision is not None and decision.status is status:
                found.append(replace(decision, note_missing=True))
    state.derived.missing_rulings = found
    return found


def _gone_everywhere(history: History, summary: RecordSummary, ids_present: set[str], root: Path) -> bool:
    """Whether a question's note is gone by every name its record ever had: no note holds any id the record had
    (a renumbering on another clone gives it a new one, whose line may not be here yet), and nothing is at any
    path the record was ever at. A question is only written back then: written over a note that is its own
    under another id or name, it would put the asked text over an answer (tests/test_machines.py's random work
    found that, seed 1888, when the test was the rulings' one)."""
    ids = {event.id for event in history.events} | {event.was for event in history.events if event.was}
    if ids & ids_present:
        return False
    paths = {event.path for event in history.events if event.path} | set(summary.paths)
    return not any((root / path).exists() for path in paths)


def recorded_version(history: History, status: Status, path: str, root: Path) -> Decision | None:
    """The decision as the ledger keeps its text (`kept_text`), read as a note at `path`; None where the ledger
    keeps none, or it cannot be read."""
    text = kept_text(history, status)
    if text is None:
        return None
    try:
        note = parse_text(text.removeprefix("\ufeff"), root / path)
    except NoteError:
        return None
    decision, _ = build_decision(note.data, path=path, body=note.body, key_lines=note.key_lines)
    return decision


def kept_text(history: History, status: Status) -> str | None:
    """The text the ledger keeps of a decision as it stands now: a ruling's sealed text; a question's last text
    (as asked, or as withdrawn)."""
    if status is Status.RULED:
        return history.seal.text if history.seal is not None and history.seal.text else None
    return next((event.text for event in reversed(history.events) if event.text), None)


# docs/several-machines.md, "Setting up each device, per carrier"
def ledgers_not_here(root: Path, decisions: Iterable[Decision], known_ids: set[str]) -> dict[str, list[Decision]]:
    """The notes recorded on a device whose ledger file this vault does not hold, by that device's tag: an id
    tagged `k7q2` that no ledger here knows, and no `vault-tools/ledger/k7q2.jsonl`. A carrier that brings the
    notes but not the record (Obsidian Sync without "Sync all other types"), or one still bringing it: such a
    note is left alone (sealing it here would start its record a second time) and reported."""
    present = ledger_tags(root)
    own = device_tag(root, create=False)
    found: dict[str, list[Decision]] = {}
    for decision in decisions:
        match = ID_PATTERN.match(decision.id)
        tag = match.group(2) if match else None
        if tag and tag != own and tag not in present and decision.id not in known_ids:
            found.setdefault(tag, []).append(decision)
    return found


def not_here_said(tag: str) -> str:
    """Why a note of device `tag` is left alone, and what to switch on."""
    return (f"recorded on device {tag}, whose ledger ({RECORD_DIR}/{LEDGER_FOLDER}/{tag}{LEDGER_SUFFIX}) is not in "
            "this vault: left alone until it arrives (with Obsidian Sync, switch on Settings > Sync > Sync all "
            "other types on every device; see docs/several-machines.md)")
