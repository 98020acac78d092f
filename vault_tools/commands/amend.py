"""Lifecycle steps taken on a sealed ruling by editing its properties, in Obsidian or with `relate`.

A sealed ruling is never edited in place, with two exceptions that are lifecycle steps, not edits:
- retracting it: `status: retracted` and a `reason` of at least 20 characters, nothing else changed;
- saying how it stands to other current rulings: links added to `alongside`, or to `supersedes` with a
  `reason`, or `alongside_all` ticked, nothing else changed.
Each is recorded in the ledger, and the seal then covers the note as it is. Anything else changed at
the same time makes the whole edit a revision, as any other edit of a sealed note.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .. import durable, note_edits, notes
from ..cjk import text_size
from ..errors import Refused, UsageError
from ..history import History, seal_text_without_bom
from ..meaning import seal_hash, seal_payload
from ..model import MIN_TEXT, Decision, Status, build_decision
from ..record_files import agent_calls
from ..ruling_graph import duplicate_ids
from ..services.checks import check_id, check_text
from ..services.workspace import Workspace
from ..vault import VaultState
from .agreement import matches_ledger, unreviewed_edit
from .supersede import apply_superseded, plan_superseded, refuse_an_unrelated_target, supersede_targets

RELATION_FIELDS = frozenset({"alongside", "supersedes"})
BESIDE_ALL = "alongside_all"  # the checkbox: beside every current ruling on its topics


@dataclass(frozen=True)
class OwnerStep:
    """What the owner did to a sealed ruling, when it is a lifecycle step and not an edit."""

    kind: str  # "retracted", "related", or "incomplete" (meant as a step, not applicable as typed)
    why: str  # for the watcher's log, or the problem in plain words when incomplete


def sealed_version(ws: Workspace, current: Decision, history: History) -> Decision:
    """The note as the ledger last fixed it."""
    note = notes.parse_text(seal_text_without_bom(history), ws.vault.path_of(current))
    found, _ = build_decision(note.data, path=current.path, body=note.body, key_lines=note.key_lines)
    return found or current


# docs/design/0007-relations-said-later-are-amendments.md
def owner_step(ws: Workspace, state: VaultState, decision: Decision, history: History) -> OwnerStep | None:
    """A sealed current ruling changed only as a retraction or a statement of how it relates to other
    rulings. None when the change is anything else (an edit, to become a revision)."""
    if history.seal is None or history.status is not Status.RULED:
        return None
    sealed = sealed_version(ws, decision, history)
    resolve = state.resolver()
    before, after = seal_payload(sealed, resolve, ws.tz), seal_payload(decision, resolve, ws.tz)
    changed = {key for key in before.keys() | after.keys() if before.get(key) != after.get(key)}
    if decision.status is Status.RETRACTED:
        if changed:
            return None
        if decision.reason is None or text_size(decision.reason) < MIN_TEXT:
            return OwnerStep("incomplete", f"{decision.id} is marked retracted, but the retraction is not applied "
                                           f"until `reason` says why in at least {MIN_TEXT} characters; until then "
                                           "it is still current")
        return OwnerStep("retracted", f"retracted in Obsidian: {decision.reason}")
    if decision.status is not Status.RULED or not changed or not changed <= RELATION_FIELDS | {BESIDE_ALL}:
        return None
    if before.get(BESIDE_ALL) and not after.get(BESIDE_ALL):
        return None  # unticked: taking a relation back is an edit
    added: dict[str, set[str]] = {}
    for name in RELATION_FIELDS:
        old, new = set(before.get(name) or ()), set(after.get(name) or ())
        if old - new:
            return None  # taking a relation back is an edit: it changes what the ruling said
        added[name] = new - old
    problem = _relation_problem(ws, state, decision, added)
    if problem:
        return OwnerStep("incomplete", problem)
    said = [f"supersedes {', '.join(sorted(added['supersedes']))}"] if added["supersedes"] else []
    said += [f"stands alongside {', '.join(sorted(added['alongside']))}"] if added["alongside"] else []
    said += ["stands alongside every current ruling on its topics"] if BESIDE_ALL in changed else []
    return OwnerStep("related", " and ".join(said))


def _relation_problem(ws: Workspace, state: VaultState, decision: Decision, added: dict[str, set[str]]) -> str | None:
    by_id = state.by_id()  # as the notes say: this ruling's own new `supersedes` already ends its targets in effect
    for name, ids in added.items():
        for target_id in sorted(ids):
            target = by_id.get(target_id)
            if target is None or target_id == decision.id:
                return f"{decision.id} names {target_id!r} in `{name}`, but no other decision note has that id"
            status = ws.status_of(state, target)
            if target.status is not Status.RULED or status is not Status.RULED:
                return (f"{decision.id} names {target_id} in `{name}`, but {target_id} is {status.value}; "
                        "only a current ruling can be")
    if added["supersedes"] and (decision.reason is None or text_size(decision.reason) < MIN_TEXT):
        return (f"{decision.id} now supersedes {', '.join(sorted(added['supersedes']))}, but the supersession is not "
                f"applied until `reason` says why in at least {MIN_TEXT} characters")
    return None


def apply_owner_step(ws: Workspace, state: VaultState, decision: Decision, history: History, note: notes.Note,
                     step: OwnerStep) -> None:
    """Record a retraction or a relation the owner made on a sealed ruling (the note is already as they left it)."""
    text = note_edits.file_text(note, note.text)
    digest = seal_hash(decision, state.resolver(), ws.tz)
    actor = ws.config.default_ruler
    if step.kind == "retracted":
        ws.vault.ledger.append([ws.event("retracted", decision, actor, record=history.record, reason=decision.reason,
                                         text=text, hash=digest)])
        return
    if step.kind != "related":
        raise ValueError(f"not a step to apply: {step.kind}")
    resolve = state.resolver()
    sealed = sealed_version(ws, decision, history)
    already = {resolve(link) for link in sealed.supersedes}
    new_targets = [link for link in decision.supersedes if resolve(link) not in already]
    targets = supersede_targets(ws, state, decision, new_targets)
    plans = [plan_superseded(ws, state, target, decision, decision.reason or "") for target in targets]
    ws.vault.ledger.append([ws.event(
        "amended", decision, actor, record=history.record, hash=digest, text=text,
        supersedes=tuple(sorted(filter(None, (resolve(link) for link in decision.supersedes)))),
        alongside=tuple(sorted(filter(None, (resolve(link) for link in decision.alongside)))))])
    for plan in plans:
        apply_superseded(ws, state, plan, actor)


def apply_owner_steps(ws: Workspace) -> tuple[list[str], list[str]]:
    """Every pending owner step in the vault (for `lint --fix`): (done, not done with why)."""
    done: list[str] = []
    not_done: list[str] = []
    with ws.vault.ledger.locked():
        state = ws.state()
        known = ws.histories()
        duplicated = duplicate_ids(state.decisions)
        calls = agent_calls(ws.vault.root)
        for decision in sorted(state.decisions, key=lambda d: d.order):
            history = ws.history_of(state, decision, known)
            if decision.id in duplicated or (history is not None and history.conflict is not None):
                continue  # left alone until renumbered or settled
            if history is None or history.seal is None or matches_ledger(ws, state, decision, history):
                continue
            if decision.held or calls.changed_during(ws.vault.path_of(decision)):
                continue  # held for the owner (`commands.held`), or the agent's call looks at it first
            step = owner_step(ws, state, decision, history)
            if step is None:
                continue
            if step.kind == "incomplete":
                not_done.append(step.why)
                continue
            apply_owner_step(ws, state, decision, history, ws.read(ws.vault.path_of(decision)), step)
            done.append(f"{decision.id} {step.kind}: {step.why}")
            state, known = ws.state(), ws.histories()
    return done, not_done


def relate(ws: Workspace, decision_id: str, *, alongside: Iterable[str] = (), supersedes: Iterable[str] = (),
           reason: str | None = None) -> Decision:
    """Say how a current ruling stands to other current rulings: it replaces them (`supersedes`, with a
    reason) or they stand beside it (`alongside`). What the owner does by adding the links in Obsidian."""
    alongside_ids = [check_id(value) for value in alongside]
    superseded_ids = [check_id(value) for value in supersedes]
    reason = check_text("--reason", reason)
    if not alongside_ids and not superseded_ids:
        raise UsageError("say --alongside ID or --supersedes ID (with --reason)")
    if superseded_ids and reason is None:
        raise UsageError("--supersedes needs --reason saying why (at least 20 characters)")
    with ws.vault.ledger.locked():
        state = ws.state_for_write()
        decision = ws.find(state, decision_id)
        ws.check_writable(state, decision)
        history = ws.history_of(state, decision)
        if ws.status_of(state, decision) is not Status.RULED or history is None or history.seal is None:
            raise Refused(f"{decision.id} is not a sealed current ruling; say it when recording it "
                          "(`vault-tools rule --alongside/--supersedes`)", path=decision.path)
        edited = unreviewed_edit(ws, state, decision, history)
        if edited:
            raise Refused(edited, path=decision.path)
        path = ws.vault.path_of(decision)
        note = ws.read(path)
        changes: dict[str, Any] = {}
        if alongside_ids:
            changes["alongside"] = [*decision.alongside, *(ws.link_to(state, i) for i in alongside_ids)]
        if superseded_ids:
            changes["supersedes"] = [*decision.supersedes, *(ws.link_to(state, i) for i in superseded_ids)]
            changes["reason"] = reason
        text = note_edits.with_fields(note, changes)
        updated = ws.parse_new(path, text)
        refuse_an_unrelated_target(updated, [ws.find(state, value) for value in superseded_ids], reason,
                                   topics_given=False)
        step = owner_step(ws, state, updated, history)
        if step is None or step.kind != "related":
            raise Refused(step.why if step else f"{decision.id} cannot take these links", path=decision.path)
        durable.write_note(note, text)
        written = ws.read(path)
        apply_owner_step(ws, state, updated, history, written, step)
        return updated

