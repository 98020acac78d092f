"""The rulings as a graph: the topics each current ruling settles (its own and those of the rulings
it superseded, transitively), the chain it settled them through, pairs of current rulings on one topic that say
nothing of each other, supersession cycles and duplicated ids. Pure.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .links import Resolve, leading_id
from .model import Decision, newest_first_key, the_very
from .topics import TopicIndex


def settled_topics(ruling: Decision, by_id: Mapping[str, Decision], resolve: Resolve) -> dict[str, tuple[str, ...]]:
    """Every topic a ruling settles: its own, and those of every ruling it superseded, transitively,
    whatever topics the chain crosses. Each topic maps to the ids through which it came, from the
    ruling to the one that carried the topic (empty for the ruling's own topics)."""
    found: dict[str, tuple[str, ...]] = {topic: () for topic in ruling.topics}
    if not ruling.supersedes:  # most rulings: asked once per current ruling by the pages, lookup and ask
        return found
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
    kept = _LAST_PAIRING[0] if _LAST_PAIRING else None
    _LAST_PAIRING.clear()  # taken while it is worked on: a call that fails leaves none

    def newest_first(found: list[Overlap]) -> list[Overlap]:  # the newest ruling first, the older ones under it too
        return sorted(found, key=lambda o: (when[id(o.newer)], when[id(o.older)]), reverse=True)

    if kept is not None and kept.holds(tz, current, settles, related):
        pairing = kept
    elif kept is not None and current and kept.holds(tz, current[:-1], settles, related, newest=current[-1]):
        pairing = kept  # a ruling added as the newest (the pages after a ruling): only its own pairs are new
        pairing.found = newest_first(pairing.found + pairing.add(current[-1], settles, related))
    else:
        pairing = _Pairing(tz)
        # oldest first: each ruling meets those before it
        pairing.found = newest_first([pair for newer in current for pair in pairing.add(newer, settles, related)])
    _LAST_PAIRING.append(pairing)
    return list(pairing.found)


class _Pairing:
    """The pairs of current rulings nobody related, worked out ruling by ruling from the oldest, with what a ruling
    added as the newest meets: the topics settled so far (the rulings settling each, and when each was first
    settled), every topic met (`TopicIndex`) and the pairs found. Kept between calls by the very current rulings it
    was given (frozen: the same objects say the same), the zone, the topics each settles and the links among them:
    a process that pairs the same current rulings again (the resident process after a question, the watcher after
    a note that is no ruling) takes it again, and one given a ruling more, as the newest, pairs that one alone."""

    def __init__(self, tz: dt.tzinfo) -> None:
        self.tz = tz
        self.current: list[Decision] = []
        self.settles: dict[str, dict[str, tuple[str, ...]]] = {}
        self.related: set[tuple[str, str]] = set()
        self.topics = TopicIndex()
        self.owners: dict[str, list[Decision]] = {}  # topic -> the current rulings settling it, oldest first
        self.first_settled: dict[str, int] = {}  # topic -> when a ruling first settled it (the rulings' order)
        self.paired: set[tuple[str, str]] = set()
        self.found: list[Overlap] = []  # all pairs, the newest ruling first, under it the older ones newest first

    def holds(self, tz: dt.tzinfo, current: list[Decision], settles: Mapping[str, dict[str, tuple[str, ...]]],
              related: set[tuple[str, str]], *, newest: Decision | None = None) -> bool:
        """Whether these are the very rulings paired (with `newest` after them, of an id none of them has), in
        the same zone, settling the same topics and related as they were."""
        if tz is not self.tz or not the_very(self.current, current):
            return False
        if newest is None:
            return related == self.related and settles == self.settles
        if newest.id in self.settles or len(settles) != len(self.settles) + 1 or \
                not all(settles.get(ruling_id) == topics for ruling_id, topics in self.settles.items()):
            return False
        return self.related <= related and all(pair[0] == newest.id for pair in related - self.related)

    def add(self, newer: Decision, settles: Mapping[str, dict[str, tuple[str, ...]]],
            related: set[tuple[str, str]]) -> list[Overlap]:
        """`newer`, the newest ruling so far, paired with those before it on each topic it settles: its pairs, in
        the order they are met."""
        topics = settles[newer.id]
        for topic in topics:
            self.topics.add(topic)
        found = []
        for topic in sorted(topics) if not newer.alongside_all else ():  # it said: beside them all
            known = sorted((match for match in self.topics.matches(topic) if match in self.owners),
                           key=self.first_settled.__getitem__)
            for match in known:
                for older in self.owners[match]:
                    pair = (newer.id, older.id)
                    if older.id == newer.id or pair in self.paired or pair in related or pair[::-1] in related:
                        continue
                    self.paired.add(pair)
                    found.append(Overlap(newer, older, topic))
        for topic in topics:
            self.first_settled.setdefault(topic, len(self.first_settled))
            self.owners.setdefault(topic, []).append(newer)
        self.current.append(newer)
        self.settles[newer.id] = topics
        self.related = related
        return found


# The last `_Pairing`, taken again by the next call that gives the same current rulings (or one more).
_LAST_PAIRING: list[_Pairing] = []


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
