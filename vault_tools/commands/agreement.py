"""Whether a note agrees with the ledger: a sealed note still says what its seal and the lifecycle fields the tool
wrote say (`matches_ledger`, `seal_holds`), and which edits of it are not reviewed yet."""
from __future__ import annotations

from pathlib import Path

from .. import notes
from ..errors import NoteError
from ..history import History
from ..ledger_lines import Event
from ..meaning import retargeted_links
from ..model import Decision, Status, build_decision
from ..services.workspace import Workspace
from ..vault import VaultState


def matches_ledger(ws: Workspace, state: VaultState, decision: Decision, history: History) -> bool:
    """A sealed note as the ledger last fixed it: its meaning, and the lifecycle fields the tool wrote."""
    seal = history.seal
    if seal is None or not seal_holds(ws, state, decision, seal) or decision.status is not history.status:
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


def decision_of_text(text: str, path: str) -> Decision | None:
    """The decision a sealed text held (None when it cannot be read as one)."""
    try:
        note = notes.parse_text(text.removeprefix(notes.BOM), Path(path))
        found, _ = build_decision(note.data, path=path, body=note.body, key_lines=note.key_lines)
    except (NoteError, TypeError, AttributeError):
        return None
    return found


def retargeted(state: VaultState, decision: Decision, seal: Event) -> list[str]:
    """The fields where a link now names another note than the sealed text's link (see `retargeted_links`)."""
    if "[[" not in decision.body + (decision.source or "") or not seal.text:
        return []
    sealed = decision_of_text(seal.text, decision.path)
    if sealed is None:
        return []
    return retargeted_links(decision, sealed, state.resolver(), state.note_index())


def seal_holds(ws: Workspace, state: VaultState, decision: Decision, seal: Event) -> bool:
    """The note still means what was sealed: the same seal hash, and every link to a note that is not a
    decision still names the note it named (or followed that note when it was renamed or moved)."""
    by_path = state.derived.seal_holds
    memo = by_path.setdefault(decision.path, {})  # by path: a process that rewrites a note forgets its entries
    key = (decision.id, seal.hash)
    if key not in memo:
        memo[key] = ws.seal_hash_of(state, decision) == seal.hash and not retargeted(state, decision, seal)
    return memo[key]
