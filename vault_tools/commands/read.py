"""Reading decisions: `show`, `list`, `lookup`."""
from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..bodies import BodyView, inline_plain, preview, section_text, sections, view, without_comments
from ..dates import local_date
from ..decision_words import unsaid_same_matter
from ..errors import UsageError
from ..history import History
from ..index import CURRENT, SearchIndex, SearchResult, fts5_available, fts_query, notice_once, scan
from ..links import leading_id
from ..matter import fold
from ..model import CONFIRMED, TOPIC_PATTERN, Decision, Problem, Status, newest_first_key
from ..pages import PageProblem
from ..ruling_graph import Overlap, describe_chain, settled_topics, unresolved_overlaps
from ..services.checks import check_topics
from ..services.workspace import Workspace
from ..topics import topics_match
from ..vault import ReadPostponed, VaultState
from .page_inputs import page_problems, remembered
from .same import remember_terms


@dataclass
class Lookup:
    ruling: Decision
    chain: list[Decision]  # what it superseded, newest first
    matched: list[str] = field(default_factory=list)  # the asked topics it matched
    # asked topic -> the topic it matched and, when that topic came from a superseded ruling, how
    via: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    alongside: list[Decision] = field(default_factory=list)  # current rulings it stands beside, by its word or theirs
    not_said: list[Decision] = field(default_factory=list)  # rulings on its topic it has not said it replaces (or they it)


def show(ws: Workspace, decision_id: str) -> tuple[Decision, History, list[Problem]]:
    """The note as written, its history and its problems; a change held for the owner is one of them, saying
    how every other reader takes the note (`commands.held`)."""
    state = ws.state()
    decision = ws.with_conflict(state, ws.find(state, decision_id))
    problems = list(state.problems.get(decision.path, []))
    if decision.held:
        in_effect = next((d.status for d in ws.decisions_in_effect(state) if d.path == decision.path), None)
        if in_effect is not decision.status:
            read_as = f"read everywhere else as {in_effect.value}" if in_effect else "in no reader's view"
            problems.append(Problem(CONFIRMED, f"held: changed during an agent's command, {read_as} until the owner "
                                               f"ticks `{CONFIRMED}`", decision.line_of(CONFIRMED), "VT056"))
    return decision, ws.history_alone(state, decision) or History(decision.id), problems


def list_decisions(ws: Workspace, status: str | None = None,
                   topic: str | None = None) -> tuple[list[Decision], list[PageProblem]]:
    """The decisions asked for, and the decision notes that could not be read (one may be among them)."""
    if status is not None and status not in {s.value for s in Status}:
        raise UsageError(f"unknown status {status!r} (expected one of: {', '.join(s.value for s in Status)})")
    state = ws.state()
    found = [d for d in ws.decisions_in_effect(state)
             if (status is None or d.status.value == status)
             and (topic is None or any(topics_match(topic, t) for t in d.topics))]
    return sorted(found, key=lambda d: d.order), page_problems(state)


def lookup(ws: Workspace, topics: Iterable[str]) -> tuple[list[Lookup], list[PageProblem]]:
    """Current rulings on these topics, and the decision notes that could not be read (one of
    them might be a ruling on these topics)."""
    asked = check_topics(topics)
    state = ws.state()
    return current_rulings_on(ws, state, asked), page_problems(state)


def became_of(ws: Workspace, topics: Iterable[str], state: VaultState | None = None) -> list[Decision]:
    """What else became of these topics besides their current rulings: the open questions on them, and the
    questions withdrawn and rulings retracted or superseded there (each with its reason), newest first."""
    asked = check_topics(topics)
    shown = (Status.OPEN, Status.WITHDRAWN, Status.RETRACTED, Status.SUPERSEDED)
    found = [d for d in ws.decisions_in_effect(state or ws.state()) if d.status in shown
             and any(topics_match(topic, theirs) for topic in asked for theirs in d.topics)]
    return sorted(found, key=lambda d: (d.status is not Status.OPEN, -d.number))


def is_topic_key(text: str) -> bool:
    return TOPIC_PATTERN.match(text) is not None


def search(ws: Workspace, query: str, *, history: bool = False, limit: int = 20) -> SearchResult:
    """Decisions whose words match `query`, best first: current rulings and open questions, and with
    `history` superseded, withdrawn and retracted ones too (marked so)."""
    if limit < 1:
        raise UsageError("--limit must be at least 1")
    if fts_query(query) is None and fold(query).strip():
        return SearchResult(notices=[f"every word of {query!r} is too common to search for (such as \"decision\" "
                                     "or \"what\"): give a word of the matter itself"])
    if not fts5_available():
        result = SearchResult()
        notice = notice_once(ws.vault)
        if notice:
            result.notices.append(notice)
        in_effect = ws.decisions_in_effect(ws.state())
        result.hits = scan(in_effect, query, history=history, limit=limit)
        if not history:
            every = scan(in_effect, query, history=True, limit=CLOSED_COUNTED)
            result.notices += _closed_also(query, sum(hit.historical for hit in every))
        return result
    index = SearchIndex(ws.vault, ws.state_read())  # checked against the notes as read, when they were: no walk again
    hits = index.search(query, history=history, limit=limit)
    notices = list(index.notices)
    if not history:
        notices += _closed_also(query, index.count(query, set(Status) - set(CURRENT)))
    return SearchResult(hits, notices)


# A read made ahead of any command takes on this many changed notes at most: more (a pull, a first read, an index
# not built yet) is left to the command that needs it, which a read ahead must not hold up for long.
READ_AHEAD_MOST = 50
READ_AHEAD_LEDGER_BYTES = 512 * 1024  # and as many of the ledger's bytes (a ledger file replaced whole: later)


def read_ahead(ws: Workspace) -> None:
    """What the reading commands read, read now with nothing said (the resident process does it while no command
    waits), where few notes changed: the notes, the ledger, and the search index checked against the notes as
    read, with the decisions in effect among them. A process keeps each only as it keeps any read (trusted while
    its files are unchanged)."""
    try:
        state = ws.vault.load(most_read=READ_AHEAD_MOST)
    except ReadPostponed:
        return
    if sum(file.bytes_to_read() for file in ws.vault.ledger.files()) <= READ_AHEAD_LEDGER_BYTES:
        ws.histories()
    if fts5_available():
        SearchIndex(ws.vault, state).ready(READ_AHEAD_MOST)


CLOSED_COUNTED = 1000  # matches looked at for the closed decisions a search without --history counts


def _closed_also(query: str, closed: int) -> list[str]:
    """What a search without `--history` says of the superseded, withdrawn and retracted decisions that also
    match: how many, and the command that shows them (an agent looking for a question withdrawn as settled
    would otherwise conclude nothing was ever decided)."""
    if not closed:
        return []
    return [f"{closed} closed decision(s) (superseded, withdrawn or retracted) also match: "
            f"vault-tools search --history {shlex.quote(query)} shows them"]


def day_said(ws: Workspace, decision: Decision) -> str:
    """The day a line about a decision gives: when it was ruled (or asked); for a superseded ruling, the day it
    was replaced and by which ruling first, apart from the day it was ruled ("2026-10-07 by D-0009 (ruled
    2026-07-17)"): a reader takes the day beside "superseded" for the day it stopped being the answer."""
    when = decision.ruled_at or decision.asked_at
    day = local_date(when, ws.tz).isoformat() if when else "undated"
    if decision.status is not Status.SUPERSEDED or not decision.superseded_by:
        return day
    state = ws.state()
    successor = state.get(state.resolver()(decision.superseded_by) or leading_id(decision.superseded_by) or "")
    if successor is None or successor.ruled_at is None:
        return day
    return f"{local_date(successor.ruled_at, ws.tz).isoformat()} by {successor.id} (ruled {day})"


def remembered_overlaps(ws: Workspace, state: VaultState, in_effect: list[Decision]) -> list[Overlap]:
    """Every pair of current rulings nobody related: on one topic (`unresolved_overlaps`) and on one matter
    (`unsaid_same_matter`), kept (`remembered`) while none of the decisions changes: scoring every pair of a
    thousand rulings is most of what `ask` and `lookup` would take."""
    resolve = state.resolver()

    def make() -> list[tuple[int, int, str]]:
        remember_terms(ws, state, [decision for decision in in_effect if decision.status is Status.RULED])
        place = {id(decision): index for index, decision in enumerate(in_effect)}
        return [(place[id(overlap.newer)], place[id(overlap.older)], overlap.topic)
                for overlap in unresolved_overlaps(in_effect, resolve, ws.tz) + unsaid_same_matter(in_effect, resolve)]

    kept = remembered(ws, state, "overlaps nobody resolved", make)
    try:
        return [Overlap(in_effect[newer], in_effect[older], str(topic)) for newer, older, topic in kept]
    except (TypeError, ValueError, IndexError):  # kept by hand or damaged: made again
        return unresolved_overlaps(in_effect, resolve, ws.tz) + unsaid_same_matter(in_effect, resolve)


def current_rulings_on(ws: Workspace, state: VaultState, asked: tuple[str, ...], *,
                       with_pairs: bool = True) -> list[Lookup]:
    """The current rulings on the topics `asked` (or that took them over), newest first; with `with_pairs`, each
    with the rulings it stands beside and those neither it nor they say replaces the other (what `lookup`
    shows; `ask` and `rule` refuse on the rulings alone)."""
    in_effect = ws.decisions_in_effect(state)
    by_id, resolve = {d.id: d for d in in_effect}, state.resolver()
    not_said: dict[str, list[Decision]] = {}
    for overlap in remembered_overlaps(ws, state, in_effect) if with_pairs else []:
        not_said.setdefault(overlap.newer.id, []).append(overlap.older)
        not_said.setdefault(overlap.older.id, []).append(overlap.newer)
    alongside: dict[str, list[Decision]] = {}
    for ruling in in_effect:
        if ruling.is_current:
            for other in (by_id.get(resolve(link) or "") for link in ruling.alongside):
                if other is not None and other.is_current:
                    alongside.setdefault(ruling.id, []).append(other)
                    alongside.setdefault(other.id, []).append(ruling)
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
            results.append(Lookup(ruling, _chain(ws, ruling, by_id, resolve), list(via), via,
                                  alongside.get(ruling.id, []), not_said.get(ruling.id, [])))
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


def body_view(decision: Decision, limit: int | None) -> BodyView:
    """The note's body as an agent is shown it, cut at `limit` characters (None: all) with a marker."""
    return view(decision.body, limit, how_to_see_all=f"vault-tools show {decision.id} --all")


def ruling_preview(decision: Decision) -> list[str]:
    """The first lines of the note's `## Ruling` section (none when it has no such section; an imported ADR's
    own decision section after its title: `section_text`)."""
    section = section_text(sections(without_comments(decision.body.replace("\r\n", "\n"))), "Ruling")
    return [inline_plain(line) for line in preview(section)] if section else []


def settled_line(ws: Workspace, found: Lookup) -> str:
    ruling = found.ruling
    day = local_date(ruling.ruled_at, ws.tz).isoformat() if ruling.ruled_at else "undated"
    remarks = []
    for topic, (key, chain) in found.via.items():
        if key != topic:
            remarks.append(f"your topic {topic} matched {key}")
        if chain:
            remarks.append(chain)
    via = f" ({'; '.join(remarks)})" if remarks else ""
    return f"{ruling.id} ruled {day}{via}: {ruling.summary}"
