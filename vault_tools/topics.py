"""Topic keys: the owner's merged topics (aliases), near spellings (plural, word order, a missing hyphen, one typo)
and the index that finds a topic's near matches without comparing every pair. Pure.
"""
from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass


def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("es") and word[-3] in "sxz":
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


# The owner's merged topics (`vault-tools/topics.yaml`): each alias -> the topic it is read as. Set once per
# vault read (`use_topic_aliases`); every comparison of topics goes through `topic_key`, so they all honour it.
_ALIASES: dict[str, str] = {}


def use_topic_aliases(aliases: Mapping[str, str]) -> None:
    """Read each alias as its topic from now on, in every comparison of topics."""
    if dict(aliases) != _ALIASES:
        _ALIASES.clear()
        _ALIASES.update(aliases)
        topic_key.cache_clear()
        TopicIndex._signatures.cache_clear()


def topic_aliases_in_use() -> dict[str, str]:
    """The merged topics every comparison reads now (see `use_topic_aliases`)."""
    return dict(_ALIASES)


def canonical_topic(topic: str) -> str:
    """The topic an alias was merged into (the topic itself when it is no alias)."""
    return _ALIASES.get(topic, topic)


@functools.lru_cache(maxsize=65536)
def topic_key(topic: str) -> str:
    """Plural/singular and word order do not matter: `footers-article` ~ `article-footer`; an alias
    the owner merged is its topic."""
    return "-".join(sorted(_singular(word) for word in canonical_topic(topic).split("-")))


def edit_distance(a: str, b: str, limit: int) -> int:
    """Damerau-Levenshtein (adjacent swaps) distance, cut off at `limit + 1`."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], previous2[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        previous2, previous = previous, current
    return previous[-1]


# docs/design/0012-topic-matching.md
def topics_match(a: str, b: str) -> bool:
    """The same topic, or one that is nearly the same (plural, word order, one typo)."""
    if a == b:
        return True
    key_a, key_b = topic_key(a), topic_key(b)
    a, b = canonical_topic(a), canonical_topic(b)
    if key_a == key_b or a.replace("-", "") == b.replace("-", ""):
        return True
    words_a, words_b = key_a.split("-"), key_b.split("-")
    if len(words_a) != len(words_b):
        return False
    only_a, only_b = list(words_a), list(words_b)
    for word in words_a:  # the words both share, in any order
        if word in only_b:
            only_a.remove(word)
            only_b.remove(word)
    # One typo in one word, and only in words long enough for a typo to be plain.
    return (len(only_a) == 1 and min(len(only_a[0]), len(only_b[0])) >= 5
            and edit_distance(only_a[0], only_b[0], limit=1) <= 1)


class TopicIndex:
    """The known topics a topic nearly matches (as `topics_match` says), without comparing it
    against every known topic: candidates share a signature (the same key, the same letters
    without hyphens, or the same words once one letter is deleted from one word of five
    letters or more: two such words one typo apart share one), and only candidates are compared."""

    def __init__(self) -> None:
        self._order: dict[str, int] = {}
        self._by_signature: dict[tuple[object, ...], list[str]] = {}

    @staticmethod
    @functools.lru_cache(maxsize=8192)  # each topic is looked up, then added: its signatures are made once
    def _signatures(topic: str) -> frozenset[tuple[object, ...]]:
        words = topic_key(topic).split("-")
        flat = canonical_topic(topic).replace("-", "")
        found: set[tuple[object, ...]] = {("key", topic_key(topic)), ("flat", flat)}
        for index, word in enumerate(words):
            if len(word) < 5:  # `topics_match` allows a typo only between words of five letters or more
                continue
            others = tuple(sorted(words[:index] + words[index + 1:]))
            for variant in {word, *(word[:j] + word[j + 1:] for j in range(len(word)))}:
                found.add(("typo", others, variant))
        return frozenset(found)

    def add(self, topic: str) -> None:
        if topic in self._order:
            return
        self._order[topic] = len(self._order)
        for signature in self._signatures(topic):
            self._by_signature.setdefault(signature, []).append(topic)

    def topics(self) -> list[str]:
        """The topics added, in the order they were added."""
        return list(self._order)

    def matches(self, topic: str) -> list[str]:
        """Known topics that match `topic`, in the order they were added."""
        candidates = {known for signature in self._signatures(topic) for known in self._by_signature.get(signature, ())}
        if topic in self._order:
            candidates.add(topic)
        return sorted((known for known in candidates if topics_match(topic, known)), key=self._order.__getitem__)


def topic_signatures(topic: str) -> frozenset[tuple[object, ...]]:
    """What `TopicIndex` files a topic under (kept for each topic seen): two topics that share none do not
    match (`topics_match`), so what checks many pairs of topics compares these first."""
    return TopicIndex._signatures(topic)


