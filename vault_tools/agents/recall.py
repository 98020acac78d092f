"""Which decisions of the hooks' snapshot a piece of text is about: an owner's message, or a question an agent is
about to put to the owner.

Both read words as `matter` does (stems, the everyday-synonym lexicon, no bare number, no stopword):

- `brought_in`: the rulings, open questions and closed ones (withdrawn, retracted) an owner's message bears on,
  best first, weighed by how rare the shared words are in the vault (`matter.relevance`), nothing under the
  floor chosen on tests/data/owner_messages.json (`make bench` prints its recall, noise and precision).
- `question_matches`: the same-matter check of `ask` (`commands/same.py`), on the snapshot: the same words of
  each decision, the same score, the same two floors, the same order. So a question the hook lets through is
  one `ask` registers, and one it stops is one `ask` refuses.
"""
from __future__ import annotations

from typing import NamedTuple

from .. import matter
from ..matter import named_ids as named_ids  # the hooks: a question naming a decision asks knowingly
from .snapshot import QuestionView, RulingView, Snapshot

Item = RulingView | QuestionView
NEAREST = matter.NEAREST  # decisions a denial shows, as `ask`'s refusal does


class Near(NamedTuple):
    item: Item
    score: float
    shared: tuple[str, ...]  # the words both say, the strongest first

    @property
    def strong(self) -> bool:
        return matter.tier(self.score, self.score) is matter.Tier.SAME


def scored(message: str, snapshot: Snapshot) -> list[tuple[float, Item]]:
    """Every decision of the snapshot with its relevance to the owner's `message` (0 left out), best first."""
    asked = matter.terms(message)
    items: list[Item] = [*snapshot.rulings, *snapshot.questions]
    count = len(items)
    found = []
    for item in items:
        if asked.isdisjoint(item.words) and not item.names:
            continue
        about = matter.About(frozenset(item.words), frozenset(item.topic_words), frozenset(item.summary_words),
                             item.names)
        value = matter.relevance(message, asked, about, snapshot.documents, count)
        if value > 0:
            found.append((value, item))
    found.sort(key=lambda pair: (-pair[0], pair[1].number))
    return found


ALIKE = 3  # decisions matched in exactly the same way that count as look-alikes


class Brought(NamedTuple):
    item: Item
    alike: tuple[Item, ...]  # decisions the message matches in exactly the same way (routine look-alikes)


def brought_in(message: str, snapshot: Snapshot, floor: float | None = None,
               best_share: float | None = None) -> list[Brought]:
    """The decisions an owner's message brings in, best first (`matter.brought_in`). Decisions it matches in
    exactly the same way (the same words, the same score: "episode 31 of the podcast has ... as guest", and the
    nine like it) take one place, in the order of their numbers, so that look-alikes do not crowd out the rest.
    An open question, a proposed revision or a closed decision comes with the current rulings it concerns right
    after it (`QuestionView.concerns`): what is in force on its matter is never left out."""
    found = candidates(message, snapshot)
    chosen = [found[position][1] for _, position in
              matter.brought_in(((value, position) for position, (value, _) in enumerate(found)), floor, best_share)]
    rulings = {ruling.id: ruling for ruling in snapshot.rulings}
    shown = {brought.item.id for brought in chosen}
    with_rulings: list[Brought] = []
    for brought in chosen:
        with_rulings.append(brought)
        for ruling_id in getattr(brought.item, "concerns", ()):
            if ruling_id not in shown and ruling_id in rulings:
                shown.add(ruling_id)
                with_rulings.append(Brought(rulings[ruling_id], ()))
    return with_rulings


def candidates(message: str, snapshot: Snapshot) -> list[tuple[float, Brought]]:
    """Every decision the message shares a word with, look-alikes together, best first, with its relevance."""
    asked = matter.terms(message)
    groups: dict[tuple[float, frozenset[str]], list[Item]] = {}
    for value, item in scored(message, snapshot):
        groups.setdefault((round(value, 9), asked.intersection(item.words)), []).append(item)
    found = []
    for (value, _), items in groups.items():
        if len(items) >= ALIKE:
            found.append((value, Brought(items[0], tuple(items[1:]))))
        else:
            found += [(value, Brought(item, ())) for item in items]
    return found


def question_matches(question: str, snapshot: Snapshot) -> list[Near]:
    """Current rulings, open questions and withdrawn questions a question may be the same matter as, best first:
    `matter.matches`, the check `ask` makes, on the words the snapshot keeps of each decision."""
    items: list[Item] = [*snapshot.rulings, *snapshot.questions]
    candidates = ((item, frozenset(item.same), item.number) for item in items
                  if not (isinstance(item, QuestionView) and item.closed == "retracted"))
    return [Near(found.decision, found.score, found.shared) for found in matter.matches(question, (), candidates)]


def offered_matches(offered: str, snapshot: Snapshot) -> list[Near]:
    """The decisions a question's options may be the matter of (`offered`: its header, text and option labels),
    never as the same matter: options are alternatives put to the owner, not a question the record answers."""
    return [near._replace(score=min(near.score, matter.POSSIBLE_MATCH_THRESHOLD))
            for near in question_matches(offered, snapshot)]
