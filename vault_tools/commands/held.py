"""Steps only the owner may take, made to decision notes during an agent's tool call: held until the owner confirms.

An answer, a retraction, a withdrawal, a relation added to a sealed ruling, or a ruling written by hand: made in
Obsidian they are the owner's, recorded as such. Made by a command an agent ran (a `cp -r`, a script), the same
bytes would be recorded "by owner" too. So the tripwire after each agent call (`hook AGENT post-tool-use`) adds
an unticked `confirmed_by_owner` checkbox to each decision note the call changed so (`hold_changes`). While it is
unticked the change is held: no reader takes it as in effect (`Workspace.decisions_in_effect` uses what the ledger
recorded), nothing seals or records it (`is_held`), and the open-questions page and lint (VT056) show it. The
owner ticks it in Obsidian to make the change theirs. An answer the owner typed during the call is held the same
way, as nothing tells the two apart; ticking it is one click. While a call is under way, the watcher, `seal` and
`lint --fix` leave the notes it changed alone (`record_files.changed_during_agent_call`).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from .. import durable, note_edits
from ..errors import NoteError
from ..history import History
from ..model import CONFIRMED, FINAL_STATUSES, Decision, Status
from ..record_files import NO_CALLS, agent_calls
from ..services.workspace import Workspace
from ..vault import Vault, VaultState
from .amend import owner_step
from .restore import Restored, restore_missing

HELD_WHY = (f"held: changed during an agent's command as only the owner may; tick `{CONFIRMED}` in Obsidian to "
            "make it yours, or put the note back")


@dataclass(frozen=True)
class Held:
    id: str
    path: str
    step: str  # what it would be recorded as: ruled, retracted, related, withdrawn


def owner_like_step(ws: Workspace, state: VaultState, decision: Decision, history: History | None) -> str | None:
    """What reconciling this note would record as the owner's own step, or None (nothing, or what anyone may do:
    a question asked or edited, an in-place edit of a sealed ruling, which becomes a proposed revision)."""
    if history is not None and history.conflict is not None:
        return None
    if history is not None and history.seal is not None:
        step = owner_step(ws, state, decision, history)
        return step.kind if step is not None and step.kind != "incomplete" else None
    if history is not None and history.status in FINAL_STATUSES:
        return None
    if decision.status is Status.RULED:
        return "ruled"
    if decision.status is Status.WITHDRAWN and (history is None or history.status is not Status.WITHDRAWN):
        return "withdrawn"
    return None


def is_held(ws: Workspace, state: VaultState, decision: Decision, history: History | None) -> bool:
    """Whether this note's change waits for the owner's tick: unticked, and a step only the owner may take."""
    return decision.held and owner_like_step(ws, state, decision, history) is not None


def hold_one(ws: Workspace, state: VaultState, decision: Decision, history: History | None) -> Held | None:
    """Hold this decision note if its change is a step only the owner may take: add `confirmed_by_owner: false`,
    every other byte kept (a note held already stays as it is; one ticked is unticked). None: nothing to hold."""
    step = owner_like_step(ws, state, decision, history)
    if step is None:
        return None
    if not decision.held:
        note = ws.read(ws.vault.path_of(decision))
        try:
            durable.write_note(note, note_edits.with_fields(note, {CONFIRMED: False}))
        except NoteError:
            return None  # properties it cannot edit without changing the owner's bytes: lint reports the note
    return Held(decision.id, decision.path, step)


def hold_changes(ws: Workspace, paths: Iterable[str]) -> list[Held]:
    """`hold_one` for each of these decision notes (vault-relative): those an agent's call changed."""
    wanted = set(paths)
    state = ws.state()
    known = ws.histories()
    found = (hold_one(ws, state, decision, ws.history_of(state, decision, known))
             for decision in sorted((d for d in state.decisions if d.path in wanted), key=lambda d: d.order))
    return [held for held in found if held is not None]


def agent_steps_not_held(ws: Workspace, state: VaultState) -> list[tuple[Decision, str]]:
    """Each decision note that last changed during an agent's call (under way, or ended) as only the owner may,
    not held yet, with the step it would be recorded as (for lint: a commit made inside the call would carry
    it to other clones as the owner's)."""
    calls = agent_calls(ws.vault.root)
    if calls == NO_CALLS:
        return []
    found = []
    for decision in state.decisions:
        if not decision.held and calls.changed_during(ws.vault.path_of(decision)):
            step = owner_like_step(ws, state, decision, ws.history_of(state, decision))
            if step is not None:
                found.append((decision, step))
    return found


def hold_agent_changes(ws: Workspace) -> list[Held]:
    """`hold_one` for every decision note that last changed during an agent's call (`record_files.agent_calls`),
    for `lint --fix`: what no hook held (a plain note made a decision note in place, a call no hook ended)."""
    calls = agent_calls(ws.vault.root)
    if calls == NO_CALLS:
        return []
    state = ws.state()
    changed = [d.path for d in state.decisions if not d.held and calls.changed_during(ws.vault.path_of(d))]
    return hold_changes(ws, changed) if changed else []


class AfterCall(NamedTuple):
    ws: Workspace  # the vault, for the pages to be built again (`commands.build`) where anything changed
    held: list[Held]
    restored: list[Restored]


def after_call(root: Path, paths: Iterable[str], notes_may_be_gone: bool) -> AfterCall:
    """After an agent's call, in the vault at `root`: `hold_changes` of the decision notes it changed, and, when a
    note may have gone (`notes_may_be_gone`), the sealed rulings and questions whose note it took away written
    back from the ledger (`restore.restore_missing`)."""
    ws = Workspace(Vault(root))
    held = hold_changes(ws, paths) if paths else []
    restored = restore_missing(ws, ws.state()).done if notes_may_be_gone else []
    return AfterCall(ws, held, restored)


def told_restored(restored: list[Restored]) -> str:
    """What the agent is told of notes written back."""
    said = _named([f"{item.id} ({item.path})" for item in restored])
    return (f"A command in this tool call took away decision notes, and vault-tools wrote them back from the ledger: "
            f"{said}. A ruling ends only by `vault-tools retract` or a ruling that supersedes it, a question by "
            "`vault-tools withdraw` or an answer (`vault-tools rule`).")


TOLD_MOST = 10  # notes named in what the agent is told; the rest counted (a hook's answer has a hard limit)


def _named(items: list[str]) -> str:
    more = len(items) - TOLD_MOST
    return "; ".join(items[:TOLD_MOST]) + (f"; and {more:,} more (`vault-tools lint` lists them)" if more > 0 else "")


def told_rebuilt(rebuilt: list[str]) -> str:
    """What the agent is told of pages built again."""
    return (f"The pinned pages are built from the decision notes, and vault-tools built them again: {', '.join(rebuilt)} "
            "(what a command wrote there is kept under `kept/`). They change when a decision does: `vault-tools "
            "ask`, `rule`, `withdraw`, `retract`.")


def told(held: list[Held]) -> str:
    """What the agent is told of changes held."""
    said = _named([f"{item.id} ({item.step}, {item.path})" for item in held])
    return (f"A command in this tool call changed decision notes as only the owner may: {said}. vault-tools held "
            f"the change: until the owner ticks `{CONFIRMED}` in Obsidian no reader takes it as in effect and "
            "nothing seals it. An answer the owner gave you is recorded with `vault-tools rule`, a question with "
            "`vault-tools ask`, a question dropped with `vault-tools withdraw`.")
