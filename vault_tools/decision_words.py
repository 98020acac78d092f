"""What a decision note is about, as the same-matter check reads it: the start of its `## Question` and `## Ruling`
sections and its words (`matter.terms`), and the pairs of current rulings that say one matter under different
topics. Pure: decisions in, words and pairs out; `commands/same.py` asks it for `ask` and `rule`, lint (VT044) and
every reader that flags a ruling that has not said how it stands to another (context, the pages, lookup).
"""
from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence
from typing import NamedTuple

from .bodies import above_import_note, adr_decision, inline_plain, preview, sections, without_comments
from .links import Resolve, leading_id
from .matter import SAME_MATTER_THRESHOLD, WEAK, About, about, fold, question_terms, share, terms, thirds
from .model import ByDecision, Decision, Status, the_very
from .ruling_graph import Overlap
from .topics import topics_match

SECTION_CHARS = 400  # of each of `## Question` and `## Ruling`, compared (the start says what it is about)

class Starts(NamedTuple):
    """The first SECTION_CHARS characters of a decision's sections that say what it is about ("" where none)."""

    question: str
    ruling: str
    context: str  # a question's `## Context`: shown, not compared
    decided: str = ""  # an imported ADR's own decision section (`bodies.adr_decision`): shown, not compared


def first_lines(decision: Decision, starts: Starts | None = None, limit: int = 240) -> str:
    """The start of what a decision says beyond its summary, on one line (`bodies.preview`'s first lines): its
    `## Ruling` (an imported ADR's own decision section), or a question's `## Question` (its `## Context` where
    that is the summary again), less a first line repeating the summary and HTML comments (Obsidian shows
    neither), links as their text; "" when there is nothing more."""
    starts = starts or section_starts(decision)
    said = fold(decision.summary).rstrip(".?! ")
    found = [starts.ruling] if decision.status is not Status.OPEN and starts.ruling else []
    for part in (*found, starts.decided, starts.question, starts.context):
        text = inline_plain(" ".join(preview(_HTML_COMMENT.sub(" ", part), say_more=False)))
        if fold(text).startswith(said) and _SENTENCE_ENDS.match(text[len(said):]):  # the summary again, then more
            text = text[len(said):].lstrip(" .?!")
        if text:
            return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " ..."
    return ""


_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
_SENTENCE_ENDS = re.compile(r"$|[.?!]|\s+[A-Z_*(\[]")  # after the summary: its sentence is over


def about_decision(decision: Decision, starts: Starts | None = None) -> About:
    """A decision as the owner's-message relevance reads it (`matter.about`): its sections' start and reason too."""
    starts = starts or section_starts(decision)
    return about(decision.summary, decision.topics, "\n".join((starts.question, starts.ruling, decision.reason or "")))


def section_starts(decision: Decision) -> Starts:
    if "#" not in decision.body:
        return Starts("", "", "")
    body = decision.body.replace("\r\n", "\n")
    # Markdown is parsed only where a code block or comment could hide a heading: it costs milliseconds.
    found = sections(without_comments(body)) if "```" in body or "~~~" in body or "%%" in body or "    #" in body \
        else _plain_sections(body)
    question, ruling = found.get("Question", ""), found.get("Ruling", "")
    # An imported ADR's is its summary above the importer's line (the ADR's preamble below it says nothing)
    imported_question, imported_ruling = above_import_note(question), above_import_note(ruling)
    decided = adr_decision(found) if imported_question is not None or imported_ruling is not None else ""
    return Starts(*(text[:SECTION_CHARS] for text in (
        question if imported_question is None else imported_question,
        ruling if imported_ruling is None else imported_ruling, found.get("Context", ""), decided)))


def decision_terms(decision: Decision, starts: Starts | None = None) -> frozenset[str]:
    """What a decision is about: summary, topics and the start of its `## Question` and `## Ruling` sections.
    Worked out once per decision (object) in a process, or taken as `known_terms` was told them."""
    known = _TERMS.get(decision)
    if known is not None:
        return known
    starts = starts or section_starts(decision)
    found = terms("\n".join((decision.summary, *decision.topics, starts.question, starts.ruling)))
    known_terms(decision, found)
    return found


_TERMS: ByDecision[frozenset[str]] = ByDecision(most=50_000)  # each decision's words


def known_terms(decision: Decision, found: frozenset[str]) -> None:
    """`decision_terms` of `decision` are `found` (worked out by an earlier run, kept on disk)."""
    _TERMS.keep(decision, found)


# A heading line, after the line break before it: a pattern starting with a fixed character is looked for by
# that character (five times faster than `^` in multiline mode, tried at every position of a body).
_HEADING = re.compile(r"\n#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)


def _plain_sections(body: str) -> dict[str, str]:
    """The text under each heading, to the next heading, of a body with no code and no comments."""
    found: dict[str, str] = {}
    text = "\n" + body
    marks = list(_HEADING.finditer(text))
    for position, mark in enumerate(marks):
        end = marks[position + 1].start() if position + 1 < len(marks) else len(text)
        found.setdefault(mark.group(1).strip(), text[mark.end():end].strip("\n"))
    return found


def same_matter_pairs(decisions: Sequence[Decision], *, threshold: float = SAME_MATTER_THRESHOLD,
                      said_terms: Sequence[frozenset[str]] | None = None) -> list[tuple[Decision, Decision, float]]:
    """Pairs (older, newer, score) of decisions where the newer (the higher number) is the same matter as the older
    as `rule` scores a ruling given directly: its summary and topics against the older's words (`decision_terms`),
    at or over `threshold` (the strong tier: what `rule` refuses as the matter of another). Only pairs sharing a
    word that is not weak are scored. Used by lint (VT044) on current rulings, so that a ruling typed in Obsidian
    is judged as `rule` judges one. `said_terms`: each decision's `question_terms`, where the caller has them.
    Given the decisions of the last call and one newer than all of them (a ruling just recorded), only its pairs
    are scored (`_Paired`)."""
    said = list(said_terms) if said_terms is not None else [question_terms(d.summary, d.topics) for d in decisions]
    described = [decision_terms(d) for d in decisions]
    kept = _LAST_PAIRED.pop() if _LAST_PAIRED else None  # taken out: `one_added` extends it in place
    added = kept.one_added(decisions, said, described) if kept is not None and kept.threshold == threshold and \
        kept.words_most_used == WORDS_MOST_USED and len(_BITS) < BITS_REMEMBERED else None
    if added is not None:
        _LAST_PAIRED.append(added)
        return [(decisions[older], decisions[newer], value) for older, newer, value in added.pairs]
    # Numbered anew (only here, between calls: bits numbered before and after never meet) once the words met
    # are many more than this call's: a word's bit is its number, and pairs of long numbers take longer to AND.
    if len(_BIT_OF) > 2 * len(frozenset().union(*said, *described)) + 1024 or len(_BITS) >= BITS_REMEMBERED:
        _BIT_OF.clear()
        _BITS.clear()
    paired = _Paired.of(decisions, said, described, threshold)
    _LAST_PAIRED[:] = [paired]
    return [(decisions[older], decisions[newer], value) for older, newer, value in paired.pairs]


WORDS_MOST_USED = 200  # a word more decisions use than this says nothing of a pair: not looked up


class _Paired:
    """One call of `same_matter_pairs`: the decisions, their words as bits, who uses each word, and the pairs (by
    position), kept so that the next call, given the same decisions and one newer than all (a ruling just
    recorded), scores only that one's pairs."""

    def __init__(self, decisions: tuple[Decision, ...], said: list[frozenset[str]], described: list[frozenset[str]],
                 threshold: float, users: dict[str, list[int]], order: list[int],
                 pairs: list[tuple[int, int, float]]) -> None:
        self.decisions, self.said, self.described, self.threshold = decisions, said, described, threshold
        self.users, self.order, self.pairs = users, order, pairs  # users: word -> ranks; order: rank -> position
        self.words_most_used = WORDS_MOST_USED  # the bound the pairs were found under

    @classmethod
    def of(cls, decisions: Sequence[Decision], said: list[frozenset[str]], described: list[frozenset[str]],
           threshold: float) -> _Paired:
        order = sorted(range(len(decisions)), key=lambda position: decisions[position].number)
        rank = {position: place for place, position in enumerate(order)}
        users: dict[str, list[int]] = {}  # the ranks of the decisions that use each word, in order
        for position in order:
            for term in described[position] - WEAK:
                users.setdefault(term, []).append(rank[position])
        pairs = []
        for newer in range(len(decisions)):
            pairs += _pairs_of(newer, rank[newer], said, described, users, order, threshold)
        pairs.sort(key=lambda p: (rank[p[0]], rank[p[1]]))
        return cls(tuple(decisions), said, described, threshold, users, order, pairs)

    def one_added(self, decisions: Sequence[Decision], said: list[frozenset[str]],
                  described: list[frozenset[str]]) -> _Paired | None:
        """The pairs of `decisions`, when they are the last call's (in the same order, numbered and saying the
        same: a note read again is another object) and one more numbered above all of them, using no word that
        becomes one too many use; else None. Extends this one in place: the caller keeps only what it returns."""
        kept = self.decisions
        if len(decisions) != len(kept) + 1:
            return None
        mine = [(decision.number, said[place], described[place]) for place, decision in enumerate(decisions)]
        theirs = [(decision.number, self.said[place], self.described[place]) for place, decision in enumerate(kept)]
        at = next((place for place, (one, other) in enumerate(zip(mine[:len(kept)], theirs, strict=True))
                   if one != other), len(kept))
        if mine[:at] + mine[at + 1:] != theirs:
            return None
        new = decisions[at]
        if any(new.number <= other.number for other in kept) or any(
                len(self.users.get(term, ())) == WORDS_MOST_USED for term in described[at] - WEAK):
            return None  # a word one more decision uses would be looked up no more: every pair is scored again

        def moved(position: int) -> int:
            return position + 1 if position >= at else position
        order = [moved(position) for position in self.order] + [at]
        users = self.users
        for term in described[at] - WEAK:
            users.setdefault(term, []).append(len(kept))
        pairs = [(moved(older), moved(newer), value) for older, newer, value in self.pairs]
        rank = {position: place for place, position in enumerate(order)}
        pairs += _pairs_of(at, len(kept), said, described, users, order, self.threshold)
        pairs.sort(key=lambda p: (rank[p[0]], rank[p[1]]))
        return _Paired(tuple(decisions), said, described, self.threshold, users, order, pairs)


def _pairs_of(newer: int, below: int, said: list[frozenset[str]], described: list[frozenset[str]],
              users: dict[str, list[int]], order: list[int], threshold: float) -> list[tuple[int, int, float]]:
    """(older, newer, score) by position: the decisions ranked below `below` that `newer` says the same matter
    as, found through the words it says that are not weak nor used by too many decisions."""
    olders: set[int] = set()
    for term in said[newer] - WEAK:
        ranks = users.get(term)
        if ranks and len(ranks) <= WORDS_MOST_USED:
            olders.update(ranks[:bisect_left(ranks, below)])
    found = []
    said_bits, whole = _bits(said[newer]), thirds(said[newer])
    for older in map(order.__getitem__, olders):
        described_bits = _bits(described[older])
        shared = 3 * (said_bits[0] & described_bits[0]).bit_count() + \
            (said_bits[1] & described_bits[1]).bit_count()  # `thirds` of what both say
        value = share(shared, whole)
        if value >= threshold:
            found.append((older, newer, value))
    return found


_LAST_PAIRED: list[_Paired] = []


# Each set of words as two sets of bits (its strong words, its weak ones): a pair's shared weight is then two ANDs
# and two counts, where intersecting the sets took ten times as long (a vault whose rulings share many words has a
# hundred thousand pairs to score). Kept from call to call: a process that pairs the rulings again (the resident
# process, the watcher, a command that writes and then rebuilds its pages) numbers only words it has not met.
_BIT_OF: dict[str, int] = {}
_BITS: dict[frozenset[str], tuple[int, int]] = {}
BITS_REMEMBERED = 1 << 16  # sets of words: past this all are forgotten (a watcher running for weeks)


def _bits(found: frozenset[str]) -> tuple[int, int]:
    known = _BITS.get(found)
    if known is not None:
        return known
    strong = weak = 0
    for term in found:
        bit = _BIT_OF.setdefault(term, 1 << len(_BIT_OF))
        if term in WEAK:
            weak |= bit
        else:
            strong |= bit
    _BITS[found] = (strong, weak)
    return strong, weak


# Rulings saying the same words, but for a number or a name the words leave out, under their own topics: a routine
# series of one kind (expense claims by number), each its own matter. The same summary twice is one matter twice.
LOOK_ALIKES = 3


def unsaid_same_matter(decisions: Sequence[Decision], resolve: Resolve) -> list[Overlap]:
    """Pairs of current rulings on one matter under topics that do not match, neither naming the other (see
    `unsaid_same_matter_pairs`), each as an `Overlap` (newer, older, the older's topic), so every reader of
    unsaid replacements shows it; lint reports them as VT044 (a pair on one topic is VT016's)."""
    return [Overlap(newer, older, f"{older.topics[0] if older.topics else 'its topic'}, the same matter by its words")
            for older, newer, _ in unsaid_same_matter_pairs(decisions, resolve)]


def unsaid_same_matter_pairs(decisions: Sequence[Decision],
                             resolve: Resolve) -> list[tuple[Decision, Decision, float]]:
    """(older, newer, score) of current rulings on one matter under topics that do not match (`same_matter_pairs`:
    what `rule` refuses as the matter of another), neither naming the other in `supersedes` or `alongside`: the
    record does not say which stands."""
    current = [d for d in decisions if d.status is Status.RULED and not d.conflict]
    related = {(d.id, target) for d in current for link in (*d.supersedes, *d.alongside)
               if (target := resolve(link) or leading_id(link))}
    limits = (SAME_MATTER_THRESHOLD, LOOK_ALIKES)
    kept = _LAST_UNSAID[0] if _LAST_UNSAID else None
    if kept is not None and kept[0] == limits and kept[2] == related and the_very(kept[1], current):
        return [(current[older], current[newer], score) for older, newer, score in kept[3]]
    found = _unsaid_same_matter_pairs(current, related)
    position = {id(decision): place for place, decision in enumerate(current)}
    _LAST_UNSAID[:] = [(limits, tuple(current), related,
                        [(position[id(older)], position[id(newer)], score) for older, newer, score in found])]
    return found


# The last answer of `unsaid_same_matter_pairs`, by the very decisions it was given (frozen: the same objects say
# the same words) and the links among them as resolved then: a process that pairs the same current rulings again
# (the resident process after a question, the watcher after a note that is no ruling) takes it again.
_LAST_UNSAID: list[tuple[tuple[float, int], tuple[Decision, ...], set[tuple[str, str]],
                         list[tuple[int, int, float]]]] = []


def _unsaid_same_matter_pairs(current: list[Decision],
                              related: set[tuple[str, str]]) -> list[tuple[Decision, Decision, float]]:
    whole = [question_terms(d.summary, d.topics) for d in current]  # worked out once: a vault has thousands
    said = {d.id: found - {term for topic in d.topics for term in terms(topic)}
            for d, found in zip(current, whole, strict=True)}
    families: dict[frozenset[str], int] = {}
    for words in said.values():
        families[words] = families.get(words, 0) + 1
    found = []
    for older, newer, score in same_matter_pairs(current, said_terms=whole):
        if (newer.id, older.id) in related or (older.id, newer.id) in related or any(
                topics_match(mine, theirs) for mine in newer.topics for theirs in older.topics):
            continue
        if said[newer.id] == said[older.id] and families[said[newer.id]] >= LOOK_ALIKES and \
                fold(newer.summary) != fold(older.summary):
            continue  # a routine series ("Expense 12 approved ...", "Expense 13 ..."): one kind, many matters
        found.append((older, newer, score))
    return found
