"""The rulings as a graph: the topics each current ruling settles (its own and those of the rulings
it superseded, transitively), the chain it settled them through, pairs of current rulings on one topic that say
nothing of each other, supersession cycles and duplicated ids. Pure.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .links import Resolve, leading_id
from .model import Decision, newest_first_key
from .topics import TopicIndex


def settled_topics(ruling: Decision, by_id: Mapping[str, Decision], resolve: Resolve) -> dict[str, tuple[str, ...]]:
    """Every topic a ruling settles: its own, and those of every ruling it superseded, transitively,
    whatever topics the chain crosses. Each topic maps to the ids through which it came, from the
    ruling to the one that carried the topic (empty for the ruling's own topics)."""
    found: dict[str, tuple[str, ...]] = {topic: () for topic in ruling.topics}
    seen = {ruling.id}
    todo: list[tuple[Decision, tuple[str, ...]]] = [(ruling, (ruling.id,))]
    while todo:
        current, chain = todo.pop(0)  # breadth first: each topic keeps its shortest way back
        for link in current.supersedes:
            target_id = resolve(link)
            if target_id is None or target_id in seen or target_id not in by_id:
                continue
            seen.add(target_id)
            target = by_id[target_id]
            for topic in target.topics:
                found.setdefault(topic, (*chain, target_id))
            todo.append((target, (*chain, target_id)))
    return found


def describe_chain(chain: Sequence[str], topic: str) -> str:
    """How a ruling came to settle a topic: "D-0003 superseded D-0002, which superseded D-0001 on X"."""
    steps = [f"{chain[0]} superseded {chain[1]}"] + [f"which superseded {later}" for later in chain[2:]]
    return ", ".join(steps) + f" on {topic}"


@dataclass(frozen=True)
class Overlap:
    """Two current rulings settling one topic, the newer not saying whether it replaces the older."""

    newer: Decision
    older: Decision
    topic: str


# docs/design/0007-relations-said-later-are-amendments.md
def unresolved_overlaps(decisions: Sequence[Decision], resolve: Resolve, tz: dt.tzinfo) -> list[Overlap]:
    """Pairs of current rulings on one topic (near spellings and topics taken over by supersession count)
    where neither names the other in `supersedes` or `alongside`: the record does not say which stands."""
    when = {id(d): newest_first_key(d, tz) for d in decisions if d.is_current}  # by object: ids may repeat
    current = sorted((d for d in decisions if d.is_current), key=lambda d: when[id(d)])
    by_id = {d.id: d for d in decisions}
    settles = {d.id: settled_topics(d, by_id, resolve) for d in current}
    related = {(d.id, target) for d in current for link in (*d.supersedes, *d.alongside)
               if (target := resolve(link) or leading_id(link))}
    kept = _LAST_OVERLAPS[0] if _LAST_OVERLAPS else None
    if kept is not None and kept[0] is tz and len(kept[1]) == len(current) and kept[2] == related and \
            kept[3] == settles and all(mine is theirs for mine, theirs in zip(kept[1], current, strict=True)):
        return [Overlap(current[newer], current[older], topic) for newer, older, topic in kept[4]]
    found = _overlaps(current, settles, related, when)
    position = {id(decision): place for place, decision in enumerate(current)}
    _LAST_OVERLAPS[:] = [(tz, tuple(current), related, settles,
                          [(position[id(o.newer)], position[id(o.older)], o.topic) for o in found])]
    return found


# The last answer of `unresolved_overlaps`, by the very current rulings it was given (frozen: the same objects say
# the same), in the same zone, with the topics each settles and the links among them as found then: a process
# that pairs the same current rulings again (the resident process after a question, the watcher after a note that
# is no ruling) takes it again.
_LAST_OVERLAPS: list[tuple[dt.tzinfo, tuple[Decision, ...], set[tuple[str, str]],
                           dict[str, dict[str, tuple[str, ...]]], list[tuple[int, int, str]]]] = []


def _overlaps(current: list[Decision], settles: dict[str, dict[str, tuple[str, ...]]],
              related: set[tuple[str, str]], when: dict[int, Any]) -> list[Overlap]:
    # Each topic's matches among all topics, found once: a ruling meets those of them already settled
    every = TopicIndex()
    for topics in settles.values():
        for topic in topics:
            every.add(topic)
    matching = {topic: every.matches(topic) for topic in every.topics()}
    owners: dict[str, list[Decision]] = {}  # topic -> the current rulings settling it, oldest first
    first_settled: dict[str, int] = {}  # topic -> when a ruling first settled it (the rulings' order)
    found: list[Overlap] = []
    paired: set[tuple[str, str]] = set()
    for newer in current:  # oldest first: each ruling meets those before it
        for topic in sorted(settles[newer.id]) if not newer.alongside_all else ():  # it said: beside them all
            known = sorted((match for match in matching[topic] if match in owners), key=first_settled.__getitem__)
            for match in known:
                for older in owners[match]:
                    pair = (newer.id, older.id)
                    if older.id == newer.id or pair in paired or pair in related or pair[::-1] in related:
                        continue
                    paired.add(pair)
                    found.append(Overlap(newer, older, topic))
        for topic in settles[newer.id]:
            first_settled.setdefault(topic, len(first_settled))
            owners.setdefault(topic, []).append(newer)
    # the newest ruling first, and under it the older rulings newest first
    return sorted(found, key=lambda o: (when[id(o.newer)], when[id(o.older)]), reverse=True)


def duplicate_ids(decisions: Iterable[Decision]) -> dict[str, list[Decision]]:
    seen: dict[str, list[Decision]] = {}
    for decision in decisions:
        seen.setdefault(decision.id, []).append(decision)
    return {key: found for key, found in seen.items() if len(found) > 1}


def supersedes_cycle(start: Decision, by_id: Mapping[str, Decision], resolve: Resolve) -> list[str] | None:
    """The ids of a cycle of `supersedes` links through `start`, if there is one."""
    path = [start.id]

    def walk(decision: Decision) -> list[str] | None:
        for link in decision.supersedes:
            target = resolve(link)
            if target is None or target not in by_id:
                continue
            if target == start.id:
                return [*path, target]
            if target in path:
                continue
            path.append(target)
            found = walk(by_id[target])
            if found:
                return found
            path.pop()
        return None

    return walk(start)
