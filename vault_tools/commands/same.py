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

import contextlib
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from .. import state_memo, vault
from ..decision_words import decision_terms, first_lines, known_terms
from ..index import Hit, SearchIndex, fts5_available
from ..matter import (
    LEXICON,
    SAME_MATTER_THRESHOLD,
    Tier,
    matches,
    question_terms,
    similarity,
    tier,
)
from ..model import ByDecision, Decision, Status
from ..record_files import settled_by
from ..services.checks import check_id
from ..services.workspace import Workspace
from ..vault import VaultState

SHORTLIST = 500  # candidates the index hands over for scoring, in a vault with more current decisions
TERMS_MEMO = "cache/decision-terms.pickle"  # in the state folder: each decision note's words, under its stat key
CURRENT = (Status.RULED, Status.OPEN)
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
    """`matches` as a refusal lists them, in their order: ALIKE or more of one status matched by the same words with
    the same score take one entry."""
    groups: dict[tuple[float, tuple[str, ...], Status], list[Match]] = {}
    for match in matches:
        groups.setdefault(_alike(match), []).append(match)
    entries, placed = [], set()
    for match in matches:
        key = _alike(match)
        if key in placed:
            continue
        members = groups[key]
        if len(members) >= ALIKE:
            placed.add(key)
            entries.append(Near(members[0], tuple(members[1:])))
        else:
            entries.append(Near(match))
    return entries


def _alike(match: Match) -> tuple[float, tuple[str, ...], Status]:
    """What look-alikes share: the score, the words matched, and what they are (an open question is never one of a
    group of rulings: it is answered, not judged)."""
    return round(match.score, 9), match.shared, match.decision.status


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


@dataclass(frozen=True)
class Match:
    decision: Decision
    score: float  # 0..1, the question with its topic keys; at or over SAME_MATTER_THRESHOLD: the same matter
    shared: tuple[str, ...]  # the words both say, the strongest first
    text_alone: float = 0.0  # the score of the question's text without its topic keys

    @property
    def strong(self) -> bool:
        """The same matter (the check refuses); else a possible match (shown to the asker to judge)."""
        return tier(self.score, self.text_alone) is Tier.SAME

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
    listed = shortlist(ws, state, in_effect, text, topics)
    remember_terms(ws, state, listed)
    candidates = ((d, decision_terms(d), d.number) for d in listed)
    return [Match(found.decision, found.score, found.shared, found.text_alone)
            for found in matches(text, topics, candidates, threshold,
                                 (lambda d: d.status is Status.OPEN) if ruling else None)]


def remember_terms(ws: Workspace, state: VaultState, decisions: Sequence[Decision]) -> None:
    """Make `decision_terms` of each decision known (`known_terms`) from what an earlier run kept under its note's
    stat key, and keep those worked out now: reading the words of hundreds of decisions is most of what the
    same-matter check takes, and of what the pairs nobody recorded take (`decision_words.unsaid_same_matter`).
    A decision this process took from the memo or kept in it already is passed over, and when every one is, the
    memo is not read (the resident process, command after command)."""
    path = ws.vault.state_dir / TERMS_MEMO
    waiting = [decision for decision in decisions if _REMEMBERED.get(decision, str(path)) is None]
    if not waiting:
        return
    keys = state.stat_keys or {}
    read = {id(decision) for decision in state.decisions}  # a ruling read from the ledger has no note of its own
    now = time.time_ns()
    waiting_keys = [keys.get(decision.path) if id(decision) in read else None for decision in waiting]
    # Only words kept under a key past the racy window are kept, and a note left so since is past it now: when
    # none is (a ruling just written), the memo holds none of them and is not read.
    kept: dict[str, tuple[Any, frozenset[str]]] = {}
    if any(key is not None and settled_by(key, now) for key in waiting_keys):
        kept = state_memo.recall(path, "decision terms") or {}
    fresh: list[Decision] = []
    for decision, key in zip(waiting, waiting_keys, strict=True):
        entry = kept.get(decision.path)
        if key is not None and entry is not None and entry[0] == key:
            known_terms(decision, entry[1])
            _REMEMBERED.keep(decision, True, str(path))
            continue
        words = decision_terms(decision)
        if key is None:
            _REMEMBERED.keep(decision, True, str(path))  # no note of its own to keep its words under
        elif settled_by(key, now):
            kept[decision.path] = (key, words)
            fresh.append(decision)
    if fresh and ws.vault.state_dir.is_dir():  # notes gone from the vault are left out
        state_memo.keep(path, "decision terms", {rel: entry for rel, entry in kept.items() if rel in keys})
        for decision in fresh:
            _REMEMBERED.keep(decision, True, str(path))


@contextlib.contextmanager
def words_while_reading() -> Iterator[None]:
    """Within it, a first read of a large vault in several processes works out each ruling's words as it builds
    it (`vault.WHILE_READING`), while the others read: for a command that needs every current ruling's words (the
    pages pair them), not for one that reads a few."""
    vault.WHILE_READING.append(_words_while_reading)
    try:
        yield
    finally:
        vault.WHILE_READING.remove(_words_while_reading)


def _words_while_reading(decision: Decision) -> None:
    if decision.status is Status.RULED:
        decision_terms(decision)


# The decisions whose words this process took from the memo at a path, or kept there (frozen: the very object has
# the same words and the same note); a note written within the racy window is looked up again until it is kept.
_REMEMBERED: ByDecision[bool] = ByDecision(most=50_000)


def shortlist(ws: Workspace, state: VaultState, decisions: Sequence[Decision], text: str,
              topics: Sequence[str]) -> list[Decision]:
    """The decisions worth scoring: the index's best bm25 matches for the question's words and their
    synonyms; without FTS5 (or on a small vault) all of them."""
    if len(decisions) <= SHORTLIST or not fts5_available():
        return list(decisions)
    asked = question_terms(text, topics)
    query = " ".join((text, *topics, *asked, *(w for w, c in LEXICON.items() if c in asked)))
    by_id = {d.id: d for d in decisions}
    listed: dict[str, Decision] = {}  # by id, best first: the index's order
    for found in SearchIndex(ws.vault, state).ranked_ids(query):
        if found in by_id and found not in listed:
            listed[found] = by_id[found]
            if len(listed) == SHORTLIST:
                break
    return list(listed.values())


def rank_hits(ws: Workspace, text: str, hits: Sequence[Hit]) -> list[Hit]:
    """Search hits reordered by the same-matter score of `text` against each (bm25's order breaks ties), for
    `lookup` with free text: the decision on the same matter first, not the one repeating a word most."""
    by_id = {d.id: d for d in ws.decisions_in_effect(ws.state())}
    asked = question_terms(text)
    scored = [(similarity(asked, decision_terms(by_id[hit.id])) if hit.id in by_id else 0.0, position, hit)
              for position, hit in enumerate(hits)]
    return [hit for _, _, hit in sorted(scored, key=lambda item: (-item[0], item[1]))]
