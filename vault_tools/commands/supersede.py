"""Superseding: which rulings a new ruling replaces, and marking each of them superseded."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .. import notes
from ..errors import InconsistentVault, Refused
from ..ledger import seal_hash
from ..model import Decision, Status, unresolved_link
from ..vault import VaultState
from .sealed import unreviewed_edit
from .workspace import Workspace


@dataclass(frozen=True)
class SupersedePlan:
    note: notes.Note  # the old note as read
    text: str  # its text once marked superseded
    record: str  # the old note's record
    updated: Decision
    successor: Decision
    reason: str
    parsed: notes.Note | None = None  # `text`, parsed


def supersede_targets(ws: Workspace, state: VaultState, decision: Decision, links: Iterable[str]) -> list[Decision]:
    """The rulings `decision` will supersede; refuses a target that is missing, not current,
    or edited in place since it was sealed (that edit has to be reviewed first)."""
    links = list(links)
    if not links:
        return []
    by_id, resolve = state.by_id(), ws.resolver_with(state, decision)
    known = ws.histories()
    targets = []
    # A ruling given on the command line is not written yet: errors name no file for it.
    where: dict[str, Any] = {"path": decision.path, "line": decision.line_of("supersedes")} \
        if (ws.vault.root / decision.path).exists() else {}
    for link in links:
        target_id = resolve(link)
        if target_id is None or target_id not in by_id:
            raise Refused(unresolved_link(resolve, link), **where)
        target = by_id[target_id]
        if target_id == decision.id:
            raise Refused("a ruling cannot supersede itself", **where)
        ws.check_writable(state, target)
        history = ws.history_of(state, target, known)
        status = (history.status if history is not None else None) or target.status
        if target.status is not Status.RULED or status is not Status.RULED:
            successor = f" by {target.superseded_by}" if target.superseded_by else ""
            raise Refused(f"{target.id} is {status.value}{successor}; only a current ruling can be superseded",
                          **where)
        edited = unreviewed_edit(ws, state, target, history)
        if edited:
            raise InconsistentVault(edited, path=target.path)
        targets.append(target)
    return targets


def plan_superseded(ws: Workspace, state: VaultState, old: Decision, new: Decision, reason: str) -> SupersedePlan:
    """The old note's text once marked superseded, worked out and checked before anything is written."""
    path = ws.vault.path_of(old)
    note = ws.read(path)
    marked = notes.edited(note, {"status": Status.SUPERSEDED.value, "superseded_by": f"[[{new.title}]]",
                                 "reason": reason})
    return SupersedePlan(note, marked.text, ws.record_for(state, old), ws.parse_new(path, marked.text, marked), new,
                         reason, marked)


def apply_superseded(ws: Workspace, state: VaultState, plan: SupersedePlan, actor: str) -> None:
    notes.write_note(plan.note, plan.text, plan.parsed)
    digest = seal_hash(plan.updated, ws.resolver_with(state, plan.successor), ws.tz)
    ws.vault.ledger.append([ws.event("superseded", plan.updated, actor, record=plan.record, hash=digest,
                                     text=notes.file_text(plan.note, plan.text), reason=plan.reason,
                                     successor=plan.successor.id)])


def supersede_now(ws: Workspace, state: VaultState, target: Decision, ruling: Decision) -> None:
    """Mark `target` superseded by the sealed `ruling` (finishing what a crash interrupted)."""
    plan = plan_superseded(ws, state, target, ruling, ruling.reason or "")
    apply_superseded(ws, state, plan, ruling.ruled_by or ws.config.default_ruler)


def pending_supersessions(state: VaultState, ruling: Decision) -> list[Decision]:
    """The rulings `ruling` names in `supersedes` that are not marked superseded yet."""
    by_id, resolve = state.by_id(), state.resolver()
    found = (by_id.get(resolve(link) or "") for link in ruling.supersedes)
    return [t for t in found if t is not None and t.id != ruling.id and t.status is Status.RULED]


def seal_targets_first(ws: Workspace, state: VaultState, targets: Iterable[Decision]) -> None:
    """A ruling about to be superseded that is not sealed yet is sealed first, its own `supersedes`
    applied: the chain is recorded in order, and what it replaced never becomes current again."""
    from .seal import seal_one  # seal builds on this module

    for target in targets:
        history = ws.history_of(state, target)
        if history is None or not history.sealed:
            seal_one(ws, state, target, history)
