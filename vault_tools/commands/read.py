"""Reading decisions: `show`, `list`, `lookup`."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..errors import UsageError
from ..ledger import History
from ..model import Decision, Problem, Status, describe_chain, newest_first_key, settled_topics, topics_match
from ..pages import PageProblem
from ..vault import VaultState
from .build import page_problems
from .checks import check_topics
from .workspace import Workspace


@dataclass
class Lookup:
    ruling: Decision
    chain: list[Decision]  # what it superseded, newest first
    matched: list[str] = field(default_factory=list)  # the asked topics it matched
    # asked topic -> the topic it matched and, when that topic came from a superseded ruling, how
    via: dict[str, tuple[str, str | None]] = field(default_factory=dict)


def show(ws: Workspace, decision_id: str) -> tuple[Decision, History, list[Problem]]:
    state = ws.state()
    decision = ws.find(state, decision_id)
    return decision, ws.histories().get(decision.id, History(decision.id)), state.problems.get(decision.path, [])


def list_decisions(ws: Workspace, status: str | None = None,
                   topic: str | None = None) -> tuple[list[Decision], list[PageProblem]]:
    """The decisions asked for, and the decision notes that could not be read (one may be among them)."""
    if status is not None and status not in {s.value for s in Status}:
        raise UsageError(f"unknown status {status!r} (expected one of: {', '.join(s.value for s in Status)})")
    state = ws.state()
    found = [d for d in ws.decisions_in_effect(state)
             if (status is None or d.status.value == status)
             and (topic is None or any(topics_match(topic, t) for t in d.topics))]
    return sorted(found, key=lambda d: d.number), page_problems(state)


def lookup(ws: Workspace, topics: Iterable[str]) -> tuple[list[Lookup], list[PageProblem]]:
    """Current rulings on these topics, and the decision notes that could not be read (one of
    them might be a ruling on these topics)."""
    asked = check_topics(topics)
    state = ws.state()
    return current_rulings_on(ws, state, asked), page_problems(state)


def current_rulings_on(ws: Workspace, state: VaultState, asked: tuple[str, ...]) -> list[Lookup]:
    in_effect = ws.decisions_in_effect(state)
    by_id, resolve = {d.id: d for d in in_effect}, state.resolver()
    results = []
    for ruling in in_effect:
        if not ruling.is_current:
            continue
        settles = settled_topics(ruling, by_id, resolve)
        via: dict[str, tuple[str, str | None]] = {}
        for topic in asked:
            # the ruling's own topics first, then those it took over, nearest first
            key = next((t for t, chain in sorted(settles.items(), key=lambda item: len(item[1]))
                        if topics_match(topic, t)), None)
            if key is not None:
                chain = settles[key]
                via[topic] = (key, describe_chain(chain, key) if chain else None)
        if via:
            results.append(Lookup(ruling, _chain(ws, ruling, by_id, resolve), list(via), via))
    return sorted(results, key=lambda found: newest_first_key(found.ruling, ws.tz), reverse=True)


def _chain(ws: Workspace, ruling: Decision, by_id: dict[str, Decision],
           resolve: Callable[[str], str | None]) -> list[Decision]:
    chain, seen, todo = [], {ruling.id}, list(ruling.supersedes)
    while todo:
        target = resolve(todo.pop(0))
        if target is None or target in seen or target not in by_id:
            continue
        seen.add(target)
        chain.append(by_id[target])
        todo.extend(by_id[target].supersedes)
    return sorted(chain, key=lambda d: newest_first_key(d, ws.tz), reverse=True)
