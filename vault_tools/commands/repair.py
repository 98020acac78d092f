"""Finishing what an interrupted command left half done (a kill, a full disk): the tool's own writes only."""
from __future__ import annotations

from .. import note_edits
from ..errors import VaultToolsError
from ..model import TOOK_EFFECT, Decision, Status
from ..services.workspace import Workspace
from ..vault import VaultState
from .agreement import matches_ledger, seal_holds
from .close import finish_interrupted_close
from .supersede import pending_supersessions, supersede_now

MAX_STEPS = 200


def pending_chain(ws: Workspace, state: VaultState) -> list[tuple[Decision, Decision]]:
    """(ruling, target) for each sealed ruling, current or superseded since, whose `supersedes`
    names a ruling not marked superseded yet."""
    known = ws.histories()
    duplicated = ws.duplicated(state)
    found = []
    for ruling in sorted(state.decisions, key=lambda d: d.order):
        if ruling.status not in TOOK_EFFECT or not ruling.supersedes:
            continue
        targets = pending_supersessions(state, ruling)  # nearly always none: the cheap test first
        history = ws.history_of(state, ruling, known) if targets else None
        if history is None or history.seal is None:
            continue
        if ruling.id in duplicated or history.conflict is not None:
            continue  # a duplicated id is renumbered, a conflict settled, before anything is built on it
        if not seal_holds(ws, state, ruling, history.seal):
            continue
        for target in targets:
            target_history = ws.history_of(state, target, known)
            if target.id in duplicated or (target_history is not None and target_history.conflict is not None):
                continue
            found.append((ruling, target))
    return found


# docs/design/0016-faults-are-the-machines-state.md
def finish_interrupted(ws: Workspace) -> tuple[list[str], list[str]]:
    """Record a supersession or retraction whose note was written but whose event was not, and apply
    the `supersedes` of sealed rulings that were not all applied. Returns (done, not done)."""
    done: list[str] = []
    failed: dict[str, str] = {}
    with ws.vault.ledger.locked():
        for _ in range(MAX_STEPS):
            if not _one_step(ws, done, failed):
                break
    return done, list(failed.values())


def _one_step(ws: Workspace, done: list[str], failed: dict[str, str]) -> bool:
    state = ws.state()
    known = ws.histories()
    duplicated = ws.duplicated(state)
    for decision in sorted(state.decisions, key=lambda d: d.order):
        history = ws.history_of(state, decision, known)
        if history is None or history.seal is None or decision.status not in (Status.SUPERSEDED, Status.RETRACTED):
            continue
        if history.conflict is not None or decision.id in duplicated:
            continue
        if decision.id in failed or matches_ledger(ws, state, decision, history):
            continue
        note = ws.read(ws.vault.path_of(decision))
        if ws.seal_hash_of(state, decision) == history.seal.hash and \
                note_edits.file_text(note, note.text) != history.seal.text and \
                finish_interrupted_close(ws, state, decision, history, note):
            done.append(f"recorded {decision.id} {decision.status.value} (interrupted)")
            return True
    for ruling, target in pending_chain(ws, state):
        if target.id in failed:
            continue
        try:
            supersede_now(ws, state, target, ruling)
        except (VaultToolsError, OSError) as error:
            failed[target.id] = f"could not mark {target.id} superseded by {ruling.id}: {error}"
            continue
        done.append(f"marked {target.id} superseded by {ruling.id}")
        return True
    return False
