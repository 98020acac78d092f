"""What a sealed note must still say: the ledger's seal and the lifecycle fields the tool wrote."""
from __future__ import annotations

from ..ledger import History
from ..model import Decision, Status
from ..vault import VaultState
from .workspace import Workspace


def matches_ledger(ws: Workspace, state: VaultState, decision: Decision, history: History) -> bool:
    """A sealed note as the ledger last fixed it: its meaning, and the lifecycle fields the tool wrote."""
    seal = history.seal
    if seal is None or ws.seal_hash_of(state, decision) != seal.hash or decision.status is not history.status:
        return False
    closing = history.closing
    if decision.status in (Status.SUPERSEDED, Status.RETRACTED) and closing is not None:
        if decision.reason != closing.reason:
            return False
        if closing.successor and state.resolver()(decision.superseded_by or "") != closing.successor:
            return False
    return True


def unreviewed_edit(ws: Workspace, state: VaultState, decision: Decision, history: History | None) -> str | None:
    """Why a sealed note may not be built on now: it was edited in place, and that edit is not reviewed."""
    if history is None or history.seal is None or matches_ledger(ws, state, decision, history):
        return None
    return (f"{decision.id} was edited in place since it was sealed; that edit must become a revision first "
            "(the watcher does it, or run `vault-tools watch --once`)")
