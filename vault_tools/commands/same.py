"""Is a question the same matter as a current ruling or an open question, whatever its topic key?

`same_matter` is the one check `ask`, `lint` (VT044), `lookup` with free text and the agents' hooks call.
A decision is described by the content words of its summary, topics and its `## Question` and `## Ruling`
sections: folded, stopwords out, word endings taken off, and words that name one thing in everyday
English (bottom and footer, annual and yearly, hire and employ) brought to one word by a short lexicon.

The score of a question against a decision is the weighted share of the question's words the decision
says (a word that says little, like "use" or "new", weighs a third): 1.0 when it says them all, 0 when it
says none. Unlike bm25 it does not grow with the vault, so one threshold means the same on ten notes and on ten thousand.
The search index (bm25) only shortlists candidates, so a question is compared with a few dozen decisions,
not all of them.

The threshold (SAME_MATTER_THRESHOLD) was chosen on the labelled pairs in
tests/data/same_question_pairs.jsonl; `make bench` prints its precision and recall.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..bodies import sections, without_comments
from ..cjk import content_pairs, has_cjk
from ..index import Hit, SearchIndex, fold, fts5_available, words
from ..model import Decision, Status
from ..vault import VaultState
from .workspace import Workspace

SAME_MATTER_THRESHOLD = 0.61  # chosen from data: see docs/design/0031-the-same-matter-check.md
SHORTLIST = 25  # candidates the index hands over for scoring
SECTION_CHARS = 400  # of each of `## Question` and `## Ruling`, compared (the start says what it is about)
CURRENT = (Status.RULED, Status.OPEN)

# Words that carry little of what a question is about: they count for a third of a word.
WEAK = frozenset("""add allow allowed always answer any approach around ask available base best choose
current day default each enough every exist extra first full general get give go good have help hour include
instead keep kind let like list long make many may mean much must need new next offer often one only
other over own part per put question rule run say see set should show start stay still support take team
time two use way week work year""".split())  # noqa: SIM905 (a list of words reads better as text)

# Everyday words for one thing, each brought to the first word of its group. Kept general (no vault's
# jargon): a word belongs here when swapping it in a question would not change what is asked.
SYNONYMS = (
    "footer bottom",
    "header top cover hero",
    "image picture photo illustration",
    "article post story piece",
    "author writer contributor",
    "guest outside external contributed",
    "annual yearly year",
    "month monthly",
    "week weekly",
    "price cost pricing priced charge fee",
    "discount reduced cheaper off",
    "plan tier subscription package",
    "refund money-back",
    "vat tax",
    "customer user client",
    "hire hiring employ employment recruit recruiting recruitment",
    "employee staff worker people personnel",
    "candidate applicant",
    "salary pay wage compensation paid",
    "ad advert advertisement posting listing",
    "remote home remotely",
    "office site onsite",
    "probation probationary",
    "exercise assignment take-home",
    "expense reimburse reimbursed reimbursement",
    "meal lunch dinner food",
    "travel trip travelling traveling",
    "host hosting provider",
    "backup snapshot",
    "database db postgres",
    "deploy deployment release ship",
    "backend server-side",
    "vm virtual-machine",
    "keep retain retention store stored",
    "delete erase remove close",
    "app application",
    "mobile native ios android",
    "translate translation localise localize localisation localization language",
    "interface ui",
    "2fa mfa two-factor multi-factor",
    "login sign-in signin",
    "session",
    "analytics statistics stats tracking",
    "website site",
    "weekend saturday sunday",
    "weekday monday-to-friday",
    "license licence",
    "password credential",
    "on-call pager",
    "rota rotation",
    "ci pipeline build",
    "nonprofit charity ngo",
    "eu europe european",
    "data information",
)

# Phrases read as one word before the words are split (so "two-factor" or "from home" keep their sense).
PHRASES = (
    ("two factor", "2fa"), ("multi factor", "2fa"), ("sign in", "login"), ("log in", "login"),
    ("logged in", "login"), ("money back", "refund"), ("server side", "backend"), ("virtual machine", "vm"),
    ("from home", "remote"), ("on call", "pager"), ("on site", "office"), ("non profit", "nonprofit"),
    ("monday to friday", "weekday"), ("european union", "eu"), ("take home", "exercise"),
    ("job ad", "ad"), ("job posting", "ad"), ("dark mode", "dark theme"), ("trial period", "probation"),
)

_PHRASE = re.compile(r"\b(" + "|".join(re.escape(a) for a, _ in PHRASES) + r")\b")
_PHRASE_TO = dict(PHRASES)


def stem(word: str) -> str:
    """A light English stemmer: plurals and common verb endings off, the same on both sides of a comparison."""
    if len(word) <= 3 or word.isdigit():
        return word
    for suffix, replacement in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", ""), ("s", ""),
                                ("ly", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                return word
            if suffix == "es" and not word.endswith(("ches", "shes", "xes", "sses", "zes")):
                continue
            base = word[: -len(suffix)] + replacement
            if suffix in ("ing", "ed") and len(base) > 3 and base[-1] == base[-2] and base[-1] not in "lsz":
                base = base[:-1]  # shipped -> ship
            return base
    return word


def _lexicon() -> dict[str, str]:
    canonical: dict[str, str] = {}
    for group in SYNONYMS:
        members = group.split()
        for member in members:
            canonical.setdefault(stem(member.replace("-", "")), stem(members[0].replace("-", "")))
    return canonical


LEXICON = _lexicon()


@lru_cache(maxsize=4096)
def terms(text: str) -> frozenset[str]:
    """The words of a text as the check compares them: folded, stopwords out, stemmed, synonyms merged."""
    folded = fold(text).replace("-", " ").replace("_", " ")
    folded = _PHRASE.sub(lambda match: _PHRASE_TO[match.group(1)].replace(" ", "-"), folded)
    found = frozenset(map(_term, (word for word in words(folded.replace("-", "")) if not has_cjk(word))))
    return found | frozenset(content_pairs(text)) if has_cjk(text) else found  # pairs, as written (`cjk`)


@lru_cache(maxsize=65536)
def _term(word: str) -> str:
    """A word as compared, stemmed and merged with its synonyms: words repeat from note to note."""
    stemmed = stem(word)
    return LEXICON.get(stemmed, stemmed)


def weight(term: str) -> float:
    return _thirds(frozenset((term,))) / 3


def similarity(asked: frozenset[str], theirs: frozenset[str]) -> float:
    """How much of what is asked the decision says, 0..1: the weighted share of the question's words that the
    decision's words cover. A word of the question the decision does not say (the newsletter in "should the
    newsletter footer carry a sponsor?" against a ruling on article footers) pulls it down."""
    return _share(_thirds(asked & theirs), _thirds(asked))


def _thirds(found: frozenset[str]) -> int:
    """The words' weight in thirds (a weak word weighs one, another three): whole numbers, so the score is
    the same however it is summed."""
    weak = len(found & WEAK)
    return 3 * (len(found) - weak) + weak


def _share(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def question_terms(text: str, topics: Iterable[str] = ()) -> frozenset[str]:
    return terms(" ".join((text, *topics)))


def decision_terms(decision: Decision) -> frozenset[str]:
    """What a decision is about: summary, topics and the start of its `## Question` and `## Ruling` sections."""
    parts = [decision.summary, *decision.topics]
    if "#" in decision.body:
        body = decision.body.replace("\r\n", "\n")
        # Markdown is parsed only where a code block or comment could hide a heading: it costs milliseconds.
        found = sections(without_comments(body)) if any(m in body for m in ("```", "~~~", "%%", "    #")) \
            else _plain_sections(body)
        parts.extend(found.get(name, "")[:SECTION_CHARS] for name in ("Question", "Ruling"))
    return terms("\n".join(parts))


_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)


def _plain_sections(body: str) -> dict[str, str]:
    """The text under each heading, to the next heading, of a body with no code and no comments."""
    found: dict[str, str] = {}
    marks = list(_HEADING.finditer(body))
    for position, mark in enumerate(marks):
        end = marks[position + 1].start() if position + 1 < len(marks) else len(body)
        found.setdefault(mark.group(1).strip(), body[mark.end():end].strip("\n"))
    return found


@dataclass(frozen=True)
class Match:
    decision: Decision
    score: float  # 0..1; at or over SAME_MATTER_THRESHOLD the check calls it the same matter
    shared: tuple[str, ...]  # the words (as compared) both say, the strongest first

    @property
    def why(self) -> str:
        kind = "open question" if self.decision.status is Status.OPEN else "current ruling"
        return f"{kind} sharing {', '.join(self.shared)} (score {self.score:.2f})"

    def as_json(self) -> dict[str, Any]:
        return {"id": self.decision.id, "status": self.decision.status.value, "summary": self.decision.summary,
                "topics": list(self.decision.topics), "score": round(self.score, 3), "shared": list(self.shared)}


def score(asked: frozenset[str], decision: Decision) -> Match:
    theirs = decision_terms(decision)
    shared = sorted(asked & theirs, key=lambda t: (-weight(t), t))
    return Match(decision, similarity(asked, theirs), tuple(shared))


def rank(asked: frozenset[str], candidates: Iterable[Decision]) -> list[Match]:
    """Every candidate scored, best first."""
    return sorted((score(asked, d) for d in candidates), key=lambda m: (-m.score, m.decision.number))


# docs/design/0031-the-same-matter-check.md
def same_matter(ws: Workspace, state: VaultState, text: str, topics: Sequence[str] = (), *,
                threshold: float = SAME_MATTER_THRESHOLD, statuses: Iterable[Status] = CURRENT,
                ignore: Iterable[str] = ()) -> list[Match]:
    """Current rulings and open questions that are the same matter as the question `text` (with its topic
    keys), best first, each with its score and the words that matched. `ignore`: ids left out."""
    wanted, skipped = set(statuses), set(ignore)
    in_effect = [d for d in ws.decisions_in_effect(state) if d.status in wanted and d.id not in skipped]
    return [m for m in rank(question_terms(text, topics), shortlist(ws, state, in_effect, text, topics))
            if m.score >= threshold]


def shortlist(ws: Workspace, state: VaultState, decisions: Sequence[Decision], text: str,
              topics: Sequence[str]) -> list[Decision]:
    """The decisions worth scoring: the index's best bm25 matches for the question's words and their
    synonyms; without FTS5 (or on a small vault) all of them."""
    if len(decisions) <= SHORTLIST or not fts5_available():
        return list(decisions)
    asked = question_terms(text, topics)
    query = " ".join((text, *topics, *asked, *(w for w, c in LEXICON.items() if c in asked)))
    by_id = {d.id: d for d in decisions}
    index = SearchIndex(ws.vault, state)
    hits = index.search(query, limit=SHORTLIST, statuses={d.status for d in decisions})
    return [by_id[hit.id] for hit in hits if hit.id in by_id]


def same_matter_pairs(decisions: Sequence[Decision], *,
                      threshold: float = SAME_MATTER_THRESHOLD) -> list[tuple[Decision, Decision, float]]:
    """Pairs of decisions that are the same matter, compared both ways (the lower score counts: each must say what the other says), each pair
    once; only pairs sharing a word are scored. Used by lint on current rulings."""
    described = [decision_terms(d) for d in decisions]
    # Each decision's words as two sets of bits (its strong words, its weak ones): a pair's shared weight is
    # then two ANDs and two counts, where intersecting the sets took ten times as long (a vault whose
    # rulings share many words has a hundred thousand pairs to score).
    bit_of: dict[str, int] = {}
    strong_bits, weak_bits, whole = [], [], []
    for found in described:
        strong = weak = 0
        for term in found:
            bit = bit_of.setdefault(term, 1 << len(bit_of))
            if term in WEAK:
                weak |= bit
            else:
                strong |= bit
        strong_bits.append(strong)
        weak_bits.append(weak)
        whole.append(_thirds(found))

    by_term: dict[str, list[int]] = {}
    for position, found in enumerate(described):
        for term in found:
            if term not in WEAK:
                by_term.setdefault(term, []).append(position)
    seen: set[int] = set()  # first * len(decisions) + second
    count = len(decisions)
    pairs = []
    for positions in by_term.values():
        if len(positions) > 200:  # a word half the vault uses says nothing about a pair
            continue
        for i, first in enumerate(positions):
            for second in positions[i + 1:]:
                key = first * count + second
                if key in seen:
                    continue
                seen.add(key)
                shared = 3 * (strong_bits[first] & strong_bits[second]).bit_count() + \
                    (weak_bits[first] & weak_bits[second]).bit_count()  # `_thirds` of what both say
                value = min(_share(shared, whole[first]), _share(shared, whole[second]))
                if value >= threshold:
                    pairs.append((first, second, value))
    numbers = [d.number for d in decisions]
    pairs.sort(key=lambda p: (numbers[p[0]], numbers[p[1]]))
    return [(decisions[first], decisions[second], value) for first, second, value in pairs]


def rank_hits(ws: Workspace, text: str, hits: Sequence[Hit]) -> list[Hit]:
    """Search hits reordered by the same-matter score of `text` against each (bm25's order breaks ties), for
    `lookup` with free text: the decision on the same matter first, not the one repeating a word most."""
    by_id = {d.id: d for d in ws.decisions_in_effect(ws.state())}
    asked = question_terms(text)
    scored = [(similarity(asked, decision_terms(by_id[hit.id])) if hit.id in by_id else 0.0, position, hit)
              for position, hit in enumerate(hits)]
    return [hit for _, _, hit in sorted(scored, key=lambda item: (-item[0], item[1]))]
