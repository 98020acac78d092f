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


ALIKE = 3  # decisions a text matches in exactly the same way (the same words, the same score) that make a group
SHOWN_IN_FULL = 3  # entries of a refusal shown with their text; the rest by id and summary
SUMMARY_CHARS = 90  # of a summary on a refusal's "also near" line


@dataclass(frozen=True)
class Near:
    """An entry of a refusal: a decision, or a group of look-alikes the text matches in exactly the same way
    (routine rulings "Expense 12 approved ...", "Expense 13 approved ..."), judged together by naming the first."""

    first: Match
    alike: tuple[Match, ...] = ()

    @property
    def ids(self) -> tuple[str, ...]:
        return (self.first.decision.id, *(match.decision.id for match in self.alike))


def grouped(matches: Sequence[Match]) -> list[Near]:
    """`matches` as a refusal lists them, in their order: ALIKE or more matched by the same words with the same
    score take one entry."""
    groups: dict[tuple[float, tuple[str, ...]], list[Match]] = {}
    for match in matches:
        groups.setdefault((round(match.score, 9), match.shared), []).append(match)
    entries, placed = [], set()
    for match in matches:
        key = (round(match.score, 9), match.shared)
        if key in placed:
            continue
        members = groups[key]
        if len(members) >= ALIKE:
            placed.add(key)
            entries.append(Near(members[0], tuple(members[1:])))
        else:
            entries.append(Near(match))
    return entries


def with_look_alikes(judged: Iterable[str], matches: Sequence[Match]) -> tuple[str, ...]:
    """The ids judged not the matter, each look-alike group named by one of its ids taken whole: what one
    `--not-the-same` on a group's entry says."""
    judged = tuple(judged)
    named = set(judged)
    found = [decision_id for entry in grouped(matches) if len(entry.ids) > 1 and named & set(entry.ids)
             for decision_id in entry.ids]
    return tuple(dict.fromkeys((*judged, *found)))


def near_lines(entries: Sequence[Near]) -> list[str]:
    """The entries of a refusal, nearest first: the first SHOWN_IN_FULL with their text and the words they were
    matched by, the rest on one line by id and summary; a group with the count and ids of its look-alikes."""
    lines: list[str] = []
    rest = []
    for position, entry in enumerate(entries):
        if position >= SHOWN_IN_FULL:
            rest.append(f"{entry.first.decision.id}{_alike_count(entry)} [{', '.join(entry.first.decision.topics)}]: "
                        f"{_cut(entry.first.decision.summary)} ({entry.first.why})")
            continue
        lines += described(entry.first.decision, entry.first.why)
        if entry.alike:
            ids = [match.decision.id for match in entry.alike]
            named = ", ".join(ids) if len(ids) <= 4 else f"{', '.join(ids[:2])}, ... {ids[-1]}"
            lines.append(f"    and {len(ids)} look-alike(s) matched by the same words ({named}): "
                         f"--not-the-same {entry.first.decision.id} judges them all")
    if rest:
        lines.append("Also near: " + "; ".join(rest))
    return lines


def _alike_count(entry: Near) -> str:
    return f" (and {len(entry.alike)} look-alikes)" if entry.alike else ""


def _cut(summary: str) -> str:
    return summary if len(summary) <= SUMMARY_CHARS else summary[:SUMMARY_CHARS].rsplit(" ", 1)[0] + " ..."


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
        """The evidence: the words both say and the score, and which tier it reached."""
        said = "the same matter" if self.strong else "may be the matter"
        return f"{said}: shares {', '.join(self.shared)}, score {max(self.score, self.text_alone):.2f}"

    def as_json(self) -> dict[str, Any]:
        return {"id": self.decision.id, "status": self.decision.status.value, "summary": self.decision.summary,
                "topics": list(self.decision.topics), "score": round(self.score, 3), "shared": list(self.shared)}


# docs/design/0031-the-same-matter-check.md, 0042
def same_matter(ws: Workspace, state: VaultState, text: str, topics: Sequence[str] = (), *,
                threshold: float = SAME_MATTER_THRESHOLD, statuses: Iterable[Status] = CURRENT,
                ignore: Iterable[str] = (), ruling: bool = False) -> list[Match]:
    """Current rulings and open questions (or the `statuses` given) that are the same matter as the question
    `text` (with its topic keys), best first, each with its score and the words that matched: at or over
    `threshold` (POSSIBLE_MATCH_THRESHOLD for both tiers, where the text alone counts too: `Match.strong` says
    which). `ignore`: ids left out. `ruling`: the text is a ruling, which may answer an open question (scored both
    ways against one: `matter.matches`)."""
    wanted, skipped = set(statuses), set(ignore)
    in_effect = [d for d in ws.decisions_in_effect(state) if d.status in wanted and d.id not in skipped]
    candidates = ((d, decision_terms(d), d.number) for d in shortlist(ws, state, in_effect, text, topics))
    return [Match(found.decision, found.score, found.shared, found.text_alone)
            for found in matches(text, topics, candidates, threshold,
                                 (lambda d: d.status is Status.OPEN) if ruling else None)]


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
    """Pairs (older, newer, score) of decisions where the newer (the higher number) is the same matter as the older
    as `rule` scores a ruling given directly: its summary and topics against the older's words (`decision_terms`),
    at or over `threshold` (the strong tier: what `rule` refuses as the matter of another). Only pairs sharing a
    word that is not weak are scored. Used by lint (VT044) on current rulings, so that a ruling typed in Obsidian
    is judged as `rule` judges one."""
    said = [question_terms(d.summary, d.topics) for d in decisions]
    described = [decision_terms(d) for d in decisions]
    # Each set of words as two sets of bits (its strong words, its weak ones): a pair's shared weight is then two
    # ANDs and two counts, where intersecting the sets took ten times as long (a vault whose rulings share many
    # words has a hundred thousand pairs to score).
    bit_of: dict[str, int] = {}

    def bits(found: frozenset[str]) -> tuple[int, int]:
        strong = weak = 0
        for term in found:
            bit = bit_of.setdefault(term, 1 << len(bit_of))
            if term in WEAK:
                weak |= bit
            else:
                strong |= bit
        return strong, weak
    said_bits, described_bits = [bits(found) for found in said], [bits(found) for found in described]
    whole = [thirds(found) for found in said]
    by_term: dict[str, list[int]] = {}
    for position, found in enumerate(described):
        for term in found - WEAK:
            by_term.setdefault(term, []).append(position)
    order = sorted(range(len(decisions)), key=lambda position: decisions[position].number)
    rank = {position: place for place, position in enumerate(order)}
    pairs = []
    for newer, found in enumerate(said):
        olders = {older for term in found - WEAK for older in by_term.get(term, ())
                  if len(by_term[term]) <= 200 and rank[older] < rank[newer]}  # a word half the vault uses says nothing
        for older in olders:
            shared = 3 * (said_bits[newer][0] & described_bits[older][0]).bit_count() + \
                (said_bits[newer][1] & described_bits[older][1]).bit_count()  # `thirds` of what both say
            value = share(shared, whole[newer])
            if value >= threshold:
                pairs.append((older, newer, value))
    pairs.sort(key=lambda p: (rank[p[0]], rank[p[1]]))
    return [(decisions[older], decisions[newer], value) for older, newer, value in pairs]


def rank_hits(ws: Workspace, text: str, hits: Sequence[Hit]) -> list[Hit]:
    """Search hits reordered by the same-matter score of `text` against each (bm25's order breaks ties), for
    `lookup` with free text: the decision on the same matter first, not the one repeating a word most."""
    by_id = {d.id: d for d in ws.decisions_in_effect(ws.state())}
    asked = question_terms(text)
    scored = [(similarity(asked, decision_terms(by_id[hit.id])) if hit.id in by_id else 0.0, position, hit)
              for position, hit in enumerate(hits)]
    return [hit for _, _, hit in sorted(scored, key=lambda item: (-item[0], item[1]))]
