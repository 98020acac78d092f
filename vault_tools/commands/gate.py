"""`gate`: for scripts, whether a ruling is current, sealed and grants exactly the terms asked for."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..errors import Refused
from ..history import History
from ..model import TERM_PREFIX, Decision, Status
from ..services.checks import parse_terms
from ..services.workspace import Workspace
from ..vault import VaultState
from .agreement import matches_ledger


@dataclass
class GateResult:
    ruling: Decision  # as in effect (its status is the ledger's word where it has one)
    required: dict[str, str]
    failures: list[str] = field(default_factory=list)
    successor: str | None = None  # the current end of its supersession chain, when it was superseded

    @property
    def passed(self) -> bool:
        return not self.failures


# docs/design/0036-terms-are-flat-properties.md
def gate(ws: Workspace, decision_id: str, requirements: Iterable[str] = ()) -> GateResult:
    """Check one ruling for a script: every reason it does not grant what is asked, in order."""
    required = parse_terms("--require", requirements)
    state = ws.state()
    found = ws.find(state, decision_id)
    in_effect = {d.id: d for d in ws.decisions_in_effect(state)}
    if found.id not in in_effect:  # held for the owner, and never recorded: no one's ruling yet
        raise Refused(f"{found.id} was written during an agent's command and waits for the owner's confirmation "
                      "(`confirmed_by_owner`): it is not a ruling", path=found.path)
    ruling = in_effect[found.id]
    result = GateResult(ruling, required)
    history = ws.history_of(state, found) or History(ruling.id)
    if ruling.conflict is not None:  # neither outcome stands: no script may rely on either
        result.failures.append(f"{ruling.id} is {ruling.conflict}")
    elif ruling.status is Status.SUPERSEDED:
        successors = _successors(state, in_effect)
        by = successors.get(ruling.id) or ruling.superseded_by or "a later ruling"
        result.successor = _current_end(ruling.id, successors, in_effect)
        now = f"; the current ruling is {result.successor}" if result.successor and result.successor != by else ""
        result.failures.append(f"{ruling.id} is superseded by {by}{now}")
    elif ruling.status is Status.RETRACTED:
        reason = f": {ruling.reason}" if ruling.reason else ""
        result.failures.append(f"{ruling.id} is retracted{reason}")
    elif ruling.status is not Status.RULED:
        result.failures.append(f"{ruling.id} is {ruling.status.value}, not a ruling")
    elif not history.sealed:
        result.failures.append(f"{ruling.id} is not sealed yet (`vault-tools seal {ruling.id}` seals it)")
    elif not matches_ledger(ws, state, found, history):
        result.failures.append(f"{ruling.id} was edited in place since it was sealed; its terms are not the ones granted")
    for key, wanted in required.items():
        granted = ruling.terms.get(key)
        if granted is None:
            result.failures.append(f"term {key} is not granted ({ruling.id} has no {TERM_PREFIX}{key})")
        elif granted != wanted:
            result.failures.append(f"term {key} differs: {ruling.id} grants {granted!r}, not {wanted!r}")
    return result


def _successors(state: VaultState, in_effect: dict[str, Decision]) -> dict[str, str]:
    """Each superseded ruling's id -> the id of the ruling that names it in `supersedes`."""
    resolve = state.resolver()
    found: dict[str, str] = {}
    for other in sorted(in_effect.values(), key=lambda d: d.number):
        if other.status in (Status.RULED, Status.SUPERSEDED):
            for link in other.supersedes:
                target = resolve(link)
                if target and target != other.id:
                    found.setdefault(target, other.id)
    return found


def _current_end(start: str, successors: dict[str, str], in_effect: dict[str, Decision]) -> str | None:
    """The current ruling at the end of the supersession chain from `start`, if it ends in one."""
    seen, current = {start}, start
    while current in successors and successors[current] not in seen:
        current = successors[current]
        seen.add(current)
    return current if current != start and in_effect[current].status is Status.RULED else None
