"""Rules about carrying a vault between devices with a sync engine (Obsidian Sync, iCloud, Dropbox, Syncthing)."""
from __future__ import annotations

from collections.abc import Iterator

from ..conflicts import copy_settle_hint
from ..history import twin_notes
from ..model import Status
from ..services.missing import ledgers_not_here, not_here_said
from .facts import Facts
from .registry import ERROR, Finding, rule


@rule("VT052", "conflict-copy", ERROR, remembered=True)
def conflict_copy(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a conflict copy a sync engine made of a decision note, with the note it shadows: Obsidian
    Sync's `Name (Conflicted copy DEVICE YYYYMMDDHHMM).md`, Dropbox's `Name (EDITOR's conflicted copy
    YYYY-MM-DD).md`, Syncthing's `Name.sync-conflict-YYYYMMDD-HHMMSS-DEVICE.md`, or iCloud Drive's
    numbered twin `Name 2.md` beside a note with the same id.

    ## Why
    The note was changed on two devices between syncs and the engine kept both versions. The copy holds
    the same id: read as a note of its own it would be a second record. It is set aside (never read as
    a decision) until the owner decides which text stands; meanwhile it is on the open-questions page.

    ## How to fix
    Compare the two, then `vault-tools settle ID --copy "COPY" --keep original` (the copy's text goes
    under `kept/`) or `--keep copy` (its text replaces the original's, which goes under `kept/`).
    """
    for copy in facts.state.conflict_copies:
        line = facts.property_lines.get(copy.path, {}).get("id")
        yield Finding(copy.path, line, f"conflict copy {copy.carrier} made of {copy.original} ({copy.id}); compare "
                                       f"them and keep one: {copy_settle_hint(copy)}")


@rule("VT053", "ledger-not-here", ERROR)
def ledger_not_here(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a decision note recorded on another device (its id ends with that device's tag, `D-0012-k7q2`)
    whose ledger file, `vault-tools/ledger/k7q2.jsonl`, is not in this vault, and which no ledger here knows.

    ## Why
    The carrier brought the notes but not the record: Obsidian Sync carries Markdown always, and the
    ledger (`.jsonl`) and config (`.yaml`) only with "Sync all other types" switched on. Sealing such a note
    here would begin its record a second time, under this device's ledger, and an edit made on the other
    device could no longer be told from a ruling never sealed. The watcher leaves these notes alone.

    ## How to fix
    On every device: Settings > Sync > Sync all other types, then restart Obsidian; or bring
    `vault-tools/` across with your carrier. A note copied in from elsewhere (recorded on no device of this
    vault) gets an id of this vault once its `id` line is deleted: the watcher gives it a new one.
    """
    known = {event.id for event in facts.events}
    for tag, found in ledgers_not_here(facts.state.root, facts.state.decisions, known).items():
        for decision in found:
            line = facts.property_lines.get(decision.path, {}).get("id")
            yield Finding(decision.path, line, f"{decision.id} was {not_here_said(tag)}")


@rule("VT054", "one-note-two-ids", ERROR)
def one_note_two_ids(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports two records of one note: the owner made it without an id on one device, the carrier brought it
    to another before either watcher numbered it, and each watcher gave it an id of its own.

    ## Why
    The agent would be told of the same question (or ruling) twice, and answering or replacing one would
    leave the other standing. The watcher and `lint --fix` keep one record on every device (the same one)
    and close the other, as long as nobody changed it since; once both were changed, the owner decides.

    ## How to fix
    Run `vault-tools lint --fix` (or let the watcher run). If both were changed since, keep the one you mean
    and close the other: `vault-tools withdraw ID --reason ...` for a question, `vault-tools retract ID
    --reason ...` for a ruling.
    """
    by_id = {decision.id: decision for decision in facts.state.decisions}
    for twins in twin_notes(facts.histories):
        in_force = [record for record in twins.records if record.status in (Status.OPEN, Status.RULED)]
        for record in in_force if len(in_force) > 1 else ():
            note = by_id.get(record.id)
            path = note.path if note is not None else record.path or ""
            line = facts.property_lines.get(path, {}).get("id")
            others = ", ".join(other.id for other in in_force if other is not record)
            yield Finding(path, line, f"{record.id} is the same note as {others}, made once and given an id "
                                      "on two devices; `vault-tools lint --fix` keeps one (if both were changed "
                                      "since, withdraw or retract the one you do not mean)")
