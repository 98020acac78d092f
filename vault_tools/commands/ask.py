"""`ask`: register a question for the owner, refused when its topic is settled or already open."""
from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from .. import durable, note_edits
from ..dates import parse_day_option
from ..errors import PossibleMatch, Refused
from ..matter import POSSIBLE_MATCH_THRESHOLD
from ..model import MIN_TEXT, Decision, Status
from ..note_edits import sections
from ..services.checks import check_name, check_text, check_topics
from ..services.live import writing_on
from ..services.workspace import Workspace
from ..topics import topics_match
from ..vault import VaultState
from .read import became_of, current_rulings_on, settled_line
from .same import Match, Near, grouped, judged_ids, near_lines, not_the_same_flags, same_matter, with_look_alikes


def ask(ws: Workspace, summary: str, topics: Iterable[str], *, body: str | None = None, due: str | None = None,
        reask_reason: str | None = None, asked_by: str | None = None, not_the_same: Iterable[str] = ()) -> Decision:
    """Register a question. Refused when its topic is open or settled, or when its words say the same matter
    as a current ruling or open question (unless `reask_reason` says what changed, or `not_the_same` names
    each match the asker checked and found to be a different matter)."""
    summary = check_text("summary", summary, required=True) or ""
    asked = check_topics(topics)
    reask_reason = check_text("--reask-reason", reask_reason)
    due_day = parse_day_option("--due", due)
    actor = check_name(asked_by) or ws.config.default_asker
    # The live view the pages are rebuilt from (`writing_on`) is set up only to write: most asks an agent makes
    # of a settled matter are refused before that
    with ws.vault.ledger.locked():
        read_started = time.time_ns()
        state = ws.state_for_write(asked)
        checked = judged_ids(ws, state, not_the_same)
        for question in ws.decisions_in_effect(state):
            if question.status is Status.OPEN:
                shared = [t for t in asked if any(topics_match(t, theirs) for theirs in question.topics)]
                if shared:
                    raise Refused(
                        f"{question.id} is already open on topic {shared[0]}: {question.summary}",
                        details=[_WAITING.format(id=question.id), _ANOTHER_MATTER])
        if reask_reason is None:
            settled = current_rulings_on(ws, state, asked, with_pairs=False)
            _refuse_a_conflict([found.ruling for found in settled])
            if settled:
                details = [settled_line(ws, found) for found in settled]
                details.append("If something changed, ask again with --reask-reason \"what changed\" "
                               f"(at least {MIN_TEXT} characters).")
                details.append(_ANOTHER_MATTER)
                raise Refused(f"topic {settled[0].matched[0]} is settled: {len(settled)} current ruling(s)",
                              details=details)
            withdrawn = [d for d in became_of(ws, asked, state) if d.status is Status.WITHDRAWN]
            if withdrawn:  # a question withdrawn is settled as "not to be asked", until something changes
                last = withdrawn[0]
                raise Refused(f"{last.id} asked this topic before and was withdrawn: {last.summary}",
                              details=[f"Withdrawn because: {last.reason}",
                                       "If something changed, ask again with --reask-reason \"what changed\" "
                                       f"(at least {MIN_TEXT} characters)."])
        checked = refuse_same_matter(ws, state, summary, asked, checked, open_only=reask_reason is not None)
        decision_id = ws.next_id(state)
        path = ws.new_note_path(decision_id, summary)
        fields: list[tuple[str, Any]] = [
            ("type", "decision"), ("id", decision_id), ("status", Status.OPEN.value), ("topics", list(asked)),
            ("summary", summary), ("asked_at", ws.now_local()), ("asked_by", actor)]
        if due_day:
            fields.append(("due", due_day))
        if reask_reason:
            fields.append(("reask_reason", reask_reason))
        text = note_edits.render_note(fields, sections(("Question", summary), ("Context", body)))
        decision = ws.parse_new(path, text)
        with writing_on(ws, state, read_started):
            durable.create_note(path, text)
            ws.vault.ledger.append([ws.asked_event(decision, actor, text, checked)])
        return decision


def _refuse_a_conflict(found: list[Decision]) -> None:
    """A decision on the matter is in conflict between clones: the owner is asked which outcome stands and
    `settle` records it; a new question would stand beside both."""
    conflicted = next((decision for decision in found if decision.conflict), None)
    if conflicted is not None:
        raise Refused(f"{conflicted.id} is {conflicted.conflict}",
                      details=["Ask the owner which outcome stands, then record their answer with that settle "
                               "command; a new question would only stand beside both."])


def refuse_same_matter(ws: Workspace, state: VaultState, summary: str, asked: tuple[str, ...],
                       checked: tuple[str, ...], *, open_only: bool) -> tuple[str, ...]:
    """Refuse a question that is (the strong tier) or may be (the possible tier) the matter of a current ruling, an
    open question or a withdrawn one filed under other topic keys. The refusal lists every decision it stands
    on, look-alikes grouped, so that one call judging them goes on: `--not-the-same ID` for each entry (an
    entry's first id judges its look-alikes too), or `--reask-reason`. A re-ask (`open_only`) is still refused
    by an open question on the same matter: that one is waiting already. Returns the ids judged not the matter,
    each group whole (what the ledger keeps)."""
    statuses = (Status.OPEN,) if open_only else (Status.RULED, Status.OPEN, Status.WITHDRAWN)
    matches = same_matter(ws, state, summary, asked, statuses=statuses, threshold=POSSIBLE_MATCH_THRESHOLD)
    if open_only:
        matches = [match for match in matches if match.strong]
    judged = set(with_look_alikes(checked, matches))
    unjudged = [match for match in matches if match.decision.id not in judged]
    if unjudged:
        strong = [match for match in unjudged if match.strong]  # not always first: the text alone may score higher
        _refuse_a_conflict([match.decision for match in strong])
        _refuse(sorted(unjudged, key=lambda match: not match.strong))
    return with_look_alikes(checked, matches)


_ANOTHER_MATTER = "If it is another matter, ask it under a topic key of its own (--topic KEY)."
_WAITING = ("It waits for the owner's answer: put it to them naming {id}, and record what they say with "
            "vault-tools rule {id} --summary \"<the answer>\" --source chat.")


def _refuse(matches: list[Match]) -> None:
    """Refused, every decision the question is or may be the matter of listed (the same matter first), with
    the words it stands on and each way on."""
    entries = grouped(matches)
    first = matches[0].decision
    details = near_lines(entries)
    if any(match.decision.status is Status.OPEN for match in matches):
        details.append(_WAITING.format(id=next(m.decision.id for m in matches if m.decision.status is Status.OPEN)))
    if any(match.decision.status is not Status.OPEN for match in matches):
        details.append(f"If it is one of them and something changed, ask again with --reask-reason \"what changed\" "
                       f"(at least {MIN_TEXT} characters).")
    details.append(f"If it is none of them, ask again with {not_the_same_flags(entry.first.decision.id for entry in entries)}"
                   " (kept in the ledger).")
    if matches[0].strong:
        kind = {Status.OPEN: "already asks this", Status.WITHDRAWN: "asked this and was withdrawn"}.get(
            first.status, "already settles this")
        raise PossibleMatch(f"{first.id} {kind} under other topics: {first.summary}",
                            tuple(entry.first.decision.id for entry in entries), details, same=True)
    raise PossibleMatch(f"this may be the matter of {first.id} ({_count(entries)}): read them and say",
                        tuple(entry.first.decision.id for entry in entries), details)


def _count(entries: list[Near]) -> str:
    decisions = sum(len(entry.ids) for entry in entries)
    return f"{decisions} near decision(s)" + (f" in {len(entries)} entries" if len(entries) != decisions else "")
