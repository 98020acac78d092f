"""Is a question the same matter as a current ruling, an open or a withdrawn question, whatever its topic key?

`same_matter` is the check `ask` (and the MCP tool), `lint` (VT044) and `lookup` with free text call; the
agents' question hooks make the same one on their snapshot (`agents/recall.py`). The words and the score are
`matter`'s: a decision is described by the content words of its summary, topics and its `## Question` and
`## Ruling` sections (folded, stopwords out, word endings taken off, everyday synonyms brought to one word),
and a question's score is the weighted share of its words the decision says (a word that says little, like
"use" or "new", weighs a third): 1.0 when it says them all, 0 when it says none. Unlike bm25 it does not grow
with the vault, so one threshold means the same on ten notes and on ten thousand. In a vault of more than
SHORTLIST current decisions, the search index (bm25) shortlists the ones scored.

Two tiers (`matter.tier`): at SAME_MATTER_THRESHOLD the same matter (refused), from POSSIBLE_MATCH_THRESHOLD
a possible one (shown to the asker, who says). Both were chosen on the labelled pairs in
tests/data/same_question_pairs.jsonl; `make bench` prints their figures (design 0031, 0042).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..bodies import above_import_note, adr_decision, inline_plain, preview, sections, without_comments
from ..index import Hit, SearchIndex, fts5_available
from ..matter import (
    LEXICON,
    SAME_MATTER_THRESHOLD,
    WEAK,
    About,
    about,
    fold,
    matches,
    question_terms,
    share,
    similarity,
    terms,
    thirds,
    tier,
)
from ..model import Decision, Status
from ..vault import VaultState
from .checks import check_id
from .workspace import Workspace

SHORTLIST = 500  # candidates the index hands over for scoring, in a vault with more current decisions
SECTION_CHARS = 400  # of each of `## Question` and `## Ruling`, compared (the start says what it is about)
CURRENT = (Status.RULED, Status.OPEN)

class Starts(NamedTuple):
    """The first SECTION_CHARS characters of a decision's sections that say what it is about ("" where none)."""

    question: str
    ruling: str
    context: str  # a question's `## Context`: shown, not compared
    decided: str = ""  # an imported ADR's own decision section (`bodies.adr_decision`): shown, not compared


def section_starts(decision: Decision) -> Starts:
    if "#" not in decision.body:
        return Starts("", "", "")
    body = decision.body.replace("\r\n", "\n")
    # Markdown is parsed only where a code block or comment could hide a heading: it costs milliseconds.
    found = sections(without_comments(body)) if any(m in body for m in ("```", "~~~", "%%", "    #")) \
        else _plain_sections(body)
    question, ruling = found.get("Question", ""), found.get("Ruling", "")
    # An imported ADR's is its summary above the importer's line (the ADR's preamble below it says nothing)
    imported_question, imported_ruling = above_import_note(question), above_import_note(ruling)
    decided = adr_decision(found) if imported_question is not None or imported_ruling is not None else ""
    return Starts(*(text[:SECTION_CHARS] for text in (
        question if imported_question is None else imported_question,
        ruling if imported_ruling is None else imported_ruling, found.get("Context", ""), decided)))


def decision_terms(decision: Decision, starts: Starts | None = None) -> frozenset[str]:
    """What a decision is about: summary, topics and the start of its `## Question` and `## Ruling` sections."""
    starts = starts or section_starts(decision)
    return terms("\n".join((decision.summary, *decision.topics, starts.question, starts.ruling)))


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


def described(decision: Decision, why: str = "") -> list[str]:
    """A decision as a refusal shows it for the asker to judge: its id, kind, topics and summary (and why it
    matched), then the first lines of its text, and why a withdrawn question was withdrawn."""
    kind = {Status.OPEN: "open question", Status.WITHDRAWN: "withdrawn question"}.get(decision.status, "ruling")
    lines = [f"{decision.id} {kind} [{', '.join(decision.topics)}]: {decision.summary}" + (f" ({why})" if why else "")]
    if more := first_lines(decision):
        lines.append(f"    {more}")
    if decision.status is Status.WITHDRAWN:
        lines.append(f"    withdrawn because: {decision.reason}")
    return lines


def judged_ids(ws: Workspace, state: VaultState, given: Iterable[str]) -> tuple[str, ...]:
    """The decisions an asker said are not the matter (`--not-the-same`), each once, as whole ids (`D-0003`
    for `D-0003-k7q2`); an id two notes share still names them."""
    known = {decision.id for decision in state.decisions}
    return tuple(dict.fromkeys(value if value in known else ws.find(state, value).id for value in map(check_id, given)))


def not_the_same_flags(ids: Iterable[str]) -> str:
    return " ".join(f"--not-the-same {decision_id}" for decision_id in ids)


_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
_SENTENCE_ENDS = re.compile(r"$|[.?!]|\s+[A-Z_*(\[]")  # after the summary: its sentence is over


def about_decision(decision: Decision, starts: Starts | None = None) -> About:
    """A decision as the owner's-message relevance reads it (`matter.about`): its sections' start and reason too."""
    starts = starts or section_starts(decision)
    return about(decision.summary, decision.topics, "\n".join((starts.question, starts.ruling, decision.reason or "")))


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
    score: float  # 0..1, the question with its topic keys; at or over SAME_MATTER_THRESHOLD: the same matter
    shared: tuple[str, ...]  # the words both say, the strongest first
    text_alone: float = 0.0  # the score of the question's text without its topic keys

    @property
    def strong(self) -> bool:
        """The same matter (the check refuses); else a possible match (shown to the asker to judge)."""
        return tier(self.score, self.text_alone) == "same"

    @property
    def why(self) -> str:
        kind = {Status.OPEN: "open question", Status.WITHDRAWN: "withdrawn question"}.get(
            self.decision.status, "current ruling")
        return f"{kind} sharing {', '.join(self.shared)} (score {self.score:.2f})"

    def as_json(self) -> dict[str, Any]:
        return {"id": self.decision.id, "status": self.decision.status.value, "summary": self.decision.summary,
                "topics": list(self.decision.topics), "score": round(self.score, 3), "shared": list(self.shared)}


# docs/design/0031-the-same-matter-check.md, 0042
def same_matter(ws: Workspace, state: VaultState, text: str, topics: Sequence[str] = (), *,
                threshold: float = SAME_MATTER_THRESHOLD, statuses: Iterable[Status] = CURRENT,
                ignore: Iterable[str] = ()) -> list[Match]:
    """Current rulings and open questions (or the `statuses` given) that are the same matter as the question
    `text` (with its topic keys), best first, each with its score and the words that matched: at or over
    `threshold` (POSSIBLE_MATCH_THRESHOLD for both tiers, where the text alone counts too: `Match.strong` says
    which). `ignore`: ids left out."""
    wanted, skipped = set(statuses), set(ignore)
    in_effect = [d for d in ws.decisions_in_effect(state) if d.status in wanted and d.id not in skipped]
    candidates = ((d, decision_terms(d), d.number) for d in shortlist(ws, state, in_effect, text, topics))
    return [Match(found.decision, found.score, found.shared, found.text_alone)
            for found in matches(text, topics, candidates, threshold)]


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
        whole.append(thirds(found))

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
                value = min(share(shared, whole[first]), share(shared, whole[second]))
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
