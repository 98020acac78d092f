"""Supersession rules (VT010-VT015): `supersedes` and `superseded_by` links form one consistent chain."""
from __future__ import annotations

from collections.abc import Iterator

from ..importers import IMPORT_ACTOR
from ..links import unresolved_link
from ..matter import named_ids
from ..model import FINAL_STATUSES, Decision, Status, id_matches
from ..ruling_graph import supersedes_cycle, unresolved_overlaps
from .facts import TOOK_EFFECT, Facts, first_line
from .registry import ERROR, WARNING, Finding, rule


@rule("VT010", "dangling-supersedes", ERROR, remembered=True)
def dangling_supersedes(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a `supersedes` link that leads to no decision note, or that could name two notes whose names
    differ only in case (`D-0001 Foo.md` and `d-0001 foo.md`) while spelling neither exactly.

    ## Why
    The ruling it names stays current: an agent keeps citing a ruling the owner meant to replace.

    ## How to fix
    Point the link at the right note (`"[[D-0003 Title]]"`); if that note was renamed, Obsidian updates
    links when the rename is done inside Obsidian.
    """
    for decision in facts.state.decisions:
        for link, target in facts.targets(decision):
            if target is None:
                yield Finding(decision.path, first_line(decision, "supersedes"), unresolved_link(facts.resolve, link))


@rule("VT011", "supersedes-not-applied", ERROR, remembered=True)
def supersedes_not_applied(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a ruling whose `supersedes` did not take effect: the note it names is not `superseded` by
    this one. Either that note cannot be superseded (it is withdrawn, retracted or superseded by
    another ruling), or this ruling is sealed and the note it replaced is still `ruled`. An open question
    named there is answered by the ruling (sealing closes it, its reason naming the answer): not reported. A ruling that
    is not sealed yet is left alone while its target is still current: sealing applies the link.

    ## Why
    Only a current ruling can be superseded, and a sealed supersession that did not apply leaves two
    current rulings on one topic.

    ## How to fix
    Remove the link if it names the wrong note. If the old note was put back to `ruled` by hand, restore
    it from git; `vault-tools show ID` lists what the ledger recorded.
    """
    for decision in facts.state.decisions:
        if decision.status not in TOOK_EFFECT:
            continue  # on an open note, supersedes is a proposal
        for _, target in facts.targets(decision):
            if target is None or target.id == decision.id or len(facts.successors.get(target.id, [])) > 1 \
                    or facts.in_conflict(target) or facts.settled_away(decision, target):
                continue  # reported as dangling, as a cycle, as two successors, or as a conflict (VT026)
            where = first_line(decision, "supersedes")
            if target.status is Status.SUPERSEDED:
                successor = facts.successor_of(target)
                if successor is None or successor.id != decision.id:
                    other = successor.id if successor else target.superseded_by or "nothing"
                    yield Finding(decision.path, where, f"supersedes {target.id}, but {target.id} says it was "
                                                        f"superseded by {other}")
            elif target.status is Status.RULED:
                if facts.sealed(decision) or decision.status is not Status.RULED:
                    yield Finding(decision.path, where, f"supersedes {target.id}, but {target.id} is still ruled")
            elif not _answered_by(target, decision):
                yield Finding(decision.path, where, f"supersedes {target.id}, which is {target.status.value}; "
                                                    "only a current ruling can be superseded")


def _answered_by(question: Decision, ruling: Decision) -> bool:
    """An open question a ruling names in `supersedes`, or the question that sealing it closed as answered."""
    if question.status is Status.OPEN:
        return True
    return question.status is Status.WITHDRAWN and (question.reason or "").startswith(f"Answered by [[{ruling.title}]]")


@rule("VT012", "supersedes-cycle", ERROR, remembered=True)
def supersedes_cycle_rule(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports `supersedes` links that lead in a circle (D-0002 supersedes D-0001, which supersedes
    D-0002), including a note that supersedes itself.

    ## Why
    In a circle no ruling is the latest, so there is no current answer to give an agent.

    ## How to fix
    Remove the link from the older note: only the newer ruling says what it replaces.
    """
    seen: set[frozenset[str]] = set()
    for decision in sorted(facts.state.decisions, key=lambda d: d.order):
        cycle = supersedes_cycle(decision, facts.by_id, facts.resolve)
        if cycle and frozenset(cycle) not in seen:
            seen.add(frozenset(cycle))
            yield Finding(decision.path, first_line(decision, "supersedes"),
                          f"supersedes links form a cycle: {' -> '.join(cycle)}")


@rule("VT013", "superseded-without-successor", ERROR, remembered=True)
def superseded_without_successor(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a `superseded` note whose `superseded_by` leads to no decision note, or to a note that does
    not list it in `supersedes`. (A successor that lists it but never became a ruling is VT015.)

    ## Why
    A superseded ruling must say what replaced it; otherwise an agent finds no current answer and
    cannot tell why the old one stopped counting.

    ## How to fix
    Point `superseded_by` at the ruling that replaced it and make that ruling list it in `supersedes`.
    If nothing replaced it, the note was meant to be `retracted`: restore it and run
    `vault-tools retract ID --reason ...`.
    """
    for decision in facts.state.decisions:
        if decision.status is not Status.SUPERSEDED or not decision.superseded_by:
            continue
        where = first_line(decision, "superseded_by")
        successor = facts.successor_of(decision)
        if successor is None:
            yield Finding(decision.path, where,
                          f"superseded by {decision.superseded_by!r}, but no decision note is called that")
            continue
        points_back = any(target is not None and target.id == decision.id for _, target in facts.targets(successor))
        if not points_back:
            yield Finding(decision.path, where,
                          f"superseded by {successor.id}, but {successor.id} does not list it in supersedes")
        # a successor that points back but never became a ruling is reported on the successor (VT015)


@rule("VT014", "multiple-successors", ERROR, remembered=True)
def multiple_successors(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a ruling that two or more rulings both claim to supersede.

    ## Why
    Each ruling has at most one successor; with two, the supersession chain forks and an agent cannot
    tell which answer is current.

    ## How to fix
    Keep the link in the ruling that really replaced it (the one its `superseded_by` names); the other
    should supersede that ruling instead, or not at all.
    """
    for target_id, found in sorted(facts.successors.items()):
        if len(found) < 2:
            continue
        target = facts.by_id[target_id]
        if facts.in_conflict(target):
            continue  # two clones each superseded it: reported once as a conflict (VT026)
        recorded = facts.successor_of(target)
        for successor in sorted(found, key=lambda d: d.order):
            if recorded is not None and successor.id == recorded.id:
                continue
            others = ", ".join(d.id for d in found if d is not successor)
            yield Finding(successor.path, first_line(successor, "supersedes"),
                          f"supersedes {target_id}, which {others} also supersedes; a ruling has one successor")


@rule("VT015", "supersession-without-ruling", ERROR, remembered=True)
def supersession_without_ruling(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports an open or withdrawn note that acts as if it were a ruling: a note it lists in `supersedes`
    has been marked `superseded` by it. On an open note `supersedes` is only a proposal.

    ## Why
    Only a ruling can supersede. Here a question, or a dropped question, has knocked a current ruling
    off the log without the owner ruling on it.

    ## How to fix
    If the owner did decide, set this note's status to `ruled` (it is then sealed). Otherwise restore
    the superseded note from git so it is current again.
    """
    for decision in facts.state.decisions:
        if decision.status not in (Status.OPEN, Status.WITHDRAWN):
            continue
        for _, target in facts.targets(decision):
            if target is not None and target.status is Status.SUPERSEDED:
                successor = facts.successor_of(target)
                if successor is not None and successor.id == decision.id:
                    yield Finding(decision.path, first_line(decision, "supersedes", "status"),
                                  f"is {decision.status.value}, but {target.id} is marked superseded by it; "
                                  "only a ruling can supersede")


@rule("VT016", "replacement-not-said", ERROR, "error (warning while an import's review question asks it)",
      remembered=True)
def replacement_not_said(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports two current rulings on one topic (a near spelling, or a topic one of them took over by
    superseding a ruling on it, counts) where the newer one names the older one neither in `supersedes`
    nor in `alongside`. Each pair is reported once, on the newer ruling.

    ## Why
    The record cannot tell whether the newer ruling replaced the older one. An agent then cites
    whichever it finds first: the reversed answer keeps coming back. `vault-tools rule` refuses such a
    ruling; one made in Obsidian is sealed, then flagged on the open-questions page until you say.

    ## How to fix
    In the newer ruling, add the older one to `supersedes` with a `reason` if it replaces it, or to
    `alongside` if both stand (`alongside: ["[[D-0003 Title]]"]`). The watcher records the change; it is
    not an edit of the sealed ruling. From the command line: `vault-tools relate NEWER --supersedes OLDER
    --reason "..."` or `vault-tools relate NEWER --alongside OLDER`. A pair an import left open as a review
    question for the owner (naming both rulings) is a warning naming that question until it is answered or
    withdrawn: the importer has asked already.
    """
    in_effect = [d for d in facts.state.decisions if d.status is not Status.RULED or not _closed(facts, d)]
    reviews = _import_reviews(facts)
    for overlap in unresolved_overlaps(in_effect, facts.resolve, facts.config.tz):
        newer, older = overlap.newer, overlap.older
        shared = {t.id for _, t in facts.targets(newer) if t} & {t.id for _, t in facts.targets(older) if t}
        if any(facts.in_conflict(facts.by_id[target]) for target in shared):
            continue  # two clones each superseded one ruling with these: reported once as a conflict (VT026)
        asking = next((question for question, named in reviews if {newer.id, older.id} <= named), None)
        if asking is not None:
            yield Finding(newer.path, first_line(newer, "supersedes", "alongside", "topics"),
                          f"{newer.id} has not said whether it replaces {older.id} ({older.path}), also current on "
                          f"{overlap.topic}: the import's review question {asking.id} asks the owner", WARNING)
            continue
        yield Finding(newer.path, first_line(newer, "supersedes", "alongside", "topics"),
                      f"{newer.id} has not said whether it replaces {older.id} ({older.path}), also current on "
                      f"{overlap.topic}: add it to `supersedes` (with a reason) or to `alongside`")


def _import_reviews(facts: Facts) -> list[tuple[Decision, set[str]]]:
    """The open questions an import asked the owner (`asked_by` the importer), each with the ids of the decisions it
    names (the record it raised and those it may replace), as whole ids."""
    ids = [d.id for d in facts.state.decisions]
    found = []
    for question in facts.state.decisions:
        if question.status is Status.OPEN and question.asked_by == IMPORT_ACTOR and not _closed(facts, question):
            named = named_ids(f"{question.summary}\n{question.body}")
            found.append((question, {whole for typed in named for whole in ids if id_matches(typed, whole)}))
    return found


def _closed(facts: Facts, decision: Decision) -> bool:
    """A note still saying `ruled` that the ledger or a newer ruling's `supersedes` already ended."""
    history = facts.history_of(decision)
    if history is not None and history.status in FINAL_STATUSES:
        return True
    return decision.id in facts.successors
