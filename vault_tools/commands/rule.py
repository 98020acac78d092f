"""`rule`: record the owner's ruling, on a question or given directly; sealed at once."""
from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .. import durable, note_edits, notes
from ..dates import instant, local_date, parse_day_option, parse_option, to_vault_time
from ..drafts import unanswered
from ..errors import PossibleMatch, Refused, UsageError
from ..matter import POSSIBLE_MATCH_THRESHOLD
from ..model import MAX_TEXT, MIN_TEXT, TERM_PREFIX, Decision, Status, transition_problem
from ..note_edits import sections
from ..scope import problem as scope_problem
from ..services.checks import check_id, check_name, check_text, check_topics, parse_terms
from ..services.live import writing_on
from ..services.workspace import Workspace
from ..topics import topics_match
from ..vault import VaultState
from .read import current_rulings_on, settled_line
from .same import grouped, judged_ids, near_lines, not_the_same_flags, same_matter, with_look_alikes
from .seal import seal_events, seal_targets_first
from .supersede import (
    answered_questions,
    apply_superseded,
    close_answered,
    plan_superseded,
    refuse_an_unrelated_target,
    supersede_targets,
)

CLOCK_SLACK = dt.timedelta(minutes=5)  # two machines' clocks differ a little; a ruling is never dated later


def rule(ws: Workspace, decision_id: str | None, summary: str, *, topics: Iterable[str] = (),
         source: str | None = None, ruled_at: str | None = None, ruled_by: str | None = None,
         supersedes: Iterable[str] = (), alongside: Iterable[str] = (), alongside_all: bool = False,
         reason: str | None = None,
         body: str | None = None, revisit_if: str | None = None, revisit_by: str | None = None,
         terms: Iterable[str] = (), scope: Iterable[str] = (), not_the_same: Iterable[str] = ()) -> Decision:
    """Record a ruling. On a topic that already has a current ruling it must say which way it goes:
    `supersedes` the current rulings it replaces (with a reason), `alongside` those that stand beside it, or
    `alongside_all` of them, whatever their number (a property of the note, not a link to each). One
    given directly that is, or may be, the matter of a current ruling or an open question under other topics
    is refused with them (`refuse_near_decisions`) until it says which way it goes, or `not_the_same`."""
    summary = check_text("summary", summary, required=True) or ""
    reason = check_text("--reason", reason)
    superseded_ids = [check_id(value) for value in supersedes]
    alongside_ids = [check_id(value) for value in alongside]
    if set(superseded_ids) & set(alongside_ids):
        raise UsageError("a ruling cannot both supersede and stand alongside "
                         + ", ".join(sorted(set(superseded_ids) & set(alongside_ids))))
    if alongside_all and alongside_ids:
        raise UsageError("--alongside-all already stands beside every current ruling on the topic: "
                         "give it or --alongside ID, not both")
    if superseded_ids and reason is None:
        raise UsageError("--supersedes needs --reason saying why (at least 20 characters)")
    actor = check_name(ruled_by) or ws.config.default_ruler
    changes = _ruling_properties(ws, summary, actor, ruled_at, source, revisit_if, revisit_by)
    direct_topics = check_topics(topics) if decision_id is None else None
    changes.update({TERM_PREFIX + key: value for key, value in parse_terms("--term", terms).items()})
    globs = list(dict.fromkeys(pattern.strip() for pattern in scope))
    for pattern in globs:
        why = scope_problem(pattern)
        if why:
            raise UsageError(f"--scope {why}")
    if globs:
        changes["scope"] = globs
    # The live view the pages are rebuilt from (`writing_on`) is set up only to write, as `ask` does: a ruling
    # refused as the matter of another pays nothing for it
    with ws.vault.ledger.locked():
        read_started = time.time_ns()
        state = ws.state_for_write(direct_topics)
        if superseded_ids:
            changes["supersedes"] = [ws.link_to(state, value) for value in superseded_ids]
            changes["reason"] = reason
        if alongside_ids:
            changes["alongside"] = [ws.link_to(state, value) for value in _current(ws, state, alongside_ids)]
        if alongside_all:
            changes["alongside_all"] = True
        if decision_id is None:
            asked = check_topics(topics)
            judged = judged_ids(ws, state, not_the_same)
            new_id = ws.next_id(state, keep_tag=False)  # a new device's tag is kept once the checks pass
            path = ws.new_note_path(new_id, summary)
            fields = [("type", "decision"), ("id", new_id), ("status", Status.RULED.value),
                      ("topics", list(asked)), *((k, v) for k, v in changes.items() if k != "status")]
            text = note_edits.render_note(fields, _ruling_section(body or summary))
            return write_ruling(ws, state, read_started, path, None, text, actor, reason, not_the_same=judged)
        if topics:
            raise UsageError("--topic is for a ruling given directly; a question keeps its own topics")
        if list(not_the_same):
            raise UsageError("--not-the-same is for a ruling given directly; an answer is recorded on its question")
        return _answer(ws, state, read_started, decision_id, changes, body, actor, reason)


def _ruling_properties(ws: Workspace, summary: str, actor: str, ruled_at: str | None, source: str | None,
                       revisit_if: str | None, revisit_by: str | None) -> dict[str, Any]:
    """The properties every ruling is written with, each option checked: never ruled in the future."""
    when: dt.datetime | dt.date = to_vault_time(parse_option("--ruled-at", ruled_at) or ws.now_local(), ws.tz)
    if instant(when, ws.tz) > instant(ws.now_local(), ws.tz) + CLOCK_SLACK:
        raise UsageError(f"--ruled-at {ruled_at} is in the future: a ruling is recorded when the owner has decided")
    revisit_day = parse_day_option("--revisit-by", revisit_by)
    changes: dict[str, Any] = {"status": Status.RULED.value, "summary": summary, "ruled_at": when,
                               "ruled_by": actor}
    for name, value in (("source", source), ("revisit_if", revisit_if), ("revisit_by", revisit_day)):
        if isinstance(value, str) and len(value) > MAX_TEXT:
            raise UsageError(f"--{name.replace('_', '-')} must be at most {MAX_TEXT:,} characters ({len(value):,} given)")
        if value:
            changes[name] = value
    return changes


def _answer(ws: Workspace, state: VaultState, read_started: int, decision_id: str, changes: dict[str, Any],
            body: str | None, actor: str, reason: str | None) -> Decision:
    """The ruling written into the open question it answers."""
    question = ws.find(state, decision_id)
    ws.check_writable(state, question)
    problem = transition_problem(ws.status_of(state, question), Status.RULED)
    if problem:
        raise Refused(f"{question.id} {problem}", path=question.path)
    path = ws.vault.path_of(question)
    note = ws.read(path)
    text = note_edits.with_fields(note, changes)
    if body:
        text = text.rstrip("\r\n") + note.newline * 2 + _ruling_section(body).replace("\n", note.newline)
    return write_ruling(ws, state, read_started, path, note, text, actor, reason, question)


_RULING_HEADING = re.compile(r"^##[ \t]+Ruling[ \t]*$", re.MULTILINE | re.IGNORECASE)


def _ruling_section(body: str) -> str:
    """The `## Ruling` section of `--body`: the text under that heading, unless the text has the heading
    already (an agent passing the section whole), then the text as given, never two headings."""
    return body.strip("\n") + "\n" if _RULING_HEADING.search(body) else sections(("Ruling", body))


# docs/design/0003-rule-seals-at-once.md
def write_ruling(ws: Workspace, state: VaultState, read_started: int, path: Path, note: notes.Note | None, text: str,
                 actor: str, reason: str | None, question: Decision | None = None, *,
                 not_the_same: tuple[str, ...] | None = None) -> Decision:
    """Write and seal a ruling (on `question`, or given directly: then `not_the_same` is what the recorder said
    the near decisions are not, and None means the check is not made), into `state`, read for writing from
    `read_started` on under the ledger's lock held since."""
    decision = ws.parse_new(path, text)
    why = unanswered(decision, unchanged_question_counts=False)
    if why:
        raise UsageError(why.replace("is marked ruled, but its summary", "would be ruled, but --summary"))
    targets = supersede_targets(ws, state, decision, decision.supersedes)
    refuse_an_unrelated_target(decision, targets, reason)
    for target in targets:
        if decision.ruled_at and target.ruled_at and _earlier(decision.ruled_at, target.ruled_at, ws.tz):
            raise UsageError(f"--ruled-at {local_date(decision.ruled_at, ws.tz)} is before {target.id} was ruled "
                             f"({local_date(target.ruled_at, ws.tz)}): a ruling replaces only what was decided before it")
    _refuse_unsaid_replacement(ws, state, decision)
    if not_the_same is not None:
        _refuse_an_unanswered_question(ws, state, decision, answered_questions(ws, state, decision))
        not_the_same = refuse_near_decisions(ws, state, decision, not_the_same)
    if targets and reason is None:
        raise UsageError("superseding a ruling needs --reason (at least 20 characters)")
    ws.keep_drawn_tag()  # its new id's tag, drawn for it: the checks have passed, the writes start
    with writing_on(ws, state, read_started):
        seal_targets_first(ws, state, targets)
        plans = [plan_superseded(ws, state, target, decision, reason or "") for target in targets]
        answered = answered_questions(ws, state, decision)
        if note is None:
            durable.create_note(path, text)
        else:
            durable.write_note(note, text)
            text = note_edits.file_text(note, text)
        history = ws.history_of(state, question) if question is not None else None
        ws.vault.ledger.append(seal_events(ws, state, decision, text, history, actor,
                                           not_the_same=not_the_same or ())
                               + close_answered(ws, state, decision, answered, actor))
        for plan in plans:
            apply_superseded(ws, state, plan, actor)
    return decision


def _current(ws: Workspace, state: VaultState, decision_ids: Iterable[str]) -> list[str]:
    """The ids given to `--alongside`, each a current ruling."""
    in_effect = {d.id: d for d in ws.decisions_in_effect(state)}
    for decision_id in decision_ids:
        found = ws.find(state, decision_id)
        status = in_effect[found.id].status
        if status is not Status.RULED:
            raise Refused(f"{found.id} is {status.value}; a ruling stands alongside current rulings only",
                          path=found.path)
    return list(decision_ids)


def _earlier(one: dt.datetime | dt.date, other: dt.datetime | dt.date, tz: dt.tzinfo) -> bool:
    """Whether `one` is before `other`: by the day where either is a day alone, else by the clock (give or take
    CLOCK_SLACK)."""
    if not isinstance(one, dt.datetime) or not isinstance(other, dt.datetime):
        return local_date(one, tz) < local_date(other, tz)
    return instant(one, tz) + CLOCK_SLACK < instant(other, tz)


def refuse_near_decisions(ws: Workspace, state: VaultState, decision: Decision,
                          not_the_same: Iterable[str]) -> tuple[str, ...]:
    """A ruling given directly that is (or may be) the matter of a current ruling or an open question filed under
    other topics says which way it goes, as one on their topic must: two current rulings on one matter, neither
    saying it replaces the other, would both be quoted to agents. Those on its own topics are left to
    `_refuse_unsaid_replacement`; those it names (`supersedes`, `alongside`) and `not_the_same` (an entry's first
    id judging its look-alikes too) to the recorder. The refusal lists every one it stands on, so one call that
    judges them goes on; a ruling naming a decision has looked, and is refused only by the same matter (the strong
    tier). Returns the ids judged not the matter, each group whole (what the ledger keeps)."""
    resolve = ws.resolver_with(state, decision)
    linked = {target for link in (*decision.supersedes, *decision.alongside) if (target := resolve(link))}

    def own_topic(other: Decision) -> bool:
        return any(topics_match(mine, theirs) for mine in decision.topics for theirs in other.topics)
    near = [match for match in same_matter(ws, state, decision.summary, decision.topics,
                                           threshold=POSSIBLE_MATCH_THRESHOLD, ruling=True)
            if not own_topic(match.decision) and match.decision.id not in linked]
    judged = with_look_alikes(not_the_same, near)
    unjudged = [match for match in near if match.decision.id not in judged and (match.strong or not linked)]
    if not unjudged:
        return judged
    entries = grouped(sorted(unjudged, key=lambda match: not match.strong))  # the same matter first
    details = near_lines(entries)
    ids = [entry.first.decision.id for entry in entries]
    details += [f"If it replaces a ruling: --supersedes ID --reason \"why\" (at least {MIN_TEXT} characters); if the "
                "ruling stands beside it: --alongside ID; if it answers an open question: vault-tools rule ID "
                "--summary \"<the ruling>\" instead.",
                f"If it is none of them, rule again with {not_the_same_flags(ids)} "
                "(kept in the ledger)."]
    said = "is the matter" if entries[0].first.strong else "may be the matter"
    count = sum(len(entry.ids) for entry in entries)
    raise PossibleMatch(f"this ruling {said} of {ids[0]}, under other topics ({count} near decision(s)): "
                        "read them and say which way it goes", tuple(ids), details, same=entries[0].first.strong)


def _refuse_an_unanswered_question(ws: Workspace, state: VaultState, decision: Decision,
                                   answered: list[Decision]) -> None:
    """A ruling given directly on the topic of an open question is that question's answer, recorded on it: given
    beside it, the question would stay open on a settled topic."""
    closed = {question.id for question in answered}
    for question in ws.decisions_in_effect(state):
        if question.status is Status.OPEN and question.id not in closed and any(
                topics_match(mine, theirs) for mine in decision.topics for theirs in question.topics):
            raise Refused(f"{question.id} is open on this topic: {question.summary}",
                          details=[f"If this ruling answers it, record it on the question: vault-tools rule "
                                   f"{question.id} --summary \"<the ruling>\" --source chat.",
                                   "If the question still stands beside it, give the ruling a topic of its own."])


SETTLED_SHOWN = 5  # current rulings on the topic a refusal names one by one; the rest are counted


def _refuse_unsaid_replacement(ws: Workspace, state: VaultState, decision: Decision) -> None:
    """A ruling on a topic with a current ruling says whether it replaces it; guessing either way is wrong. The
    refusal stays short whatever their number: the nearest few by date, a count of the rest, and the one flag
    that stands beside them all."""
    if decision.alongside_all:
        return
    resolve = ws.resolver_with(state, decision)
    addressed = {resolve(link) for link in (*decision.supersedes, *decision.alongside)}
    unsaid = [found for found in current_rulings_on(ws, state, decision.topics, with_pairs=False)
              if found.ruling.id not in addressed and found.ruling.id != decision.id]
    if not unsaid:
        return
    topic = unsaid[0].matched[0]
    details = [settled_line(ws, found) for found in unsaid[:SETTLED_SHOWN]]
    if len(unsaid) > SETTLED_SHOWN:
        details.append(f"... and {len(unsaid) - SETTLED_SHOWN} more (vault-tools lookup {topic})")
    ids = [found.ruling.id for found in unsaid]
    if len(ids) <= SETTLED_SHOWN:
        details.append(f"If it replaces them: --supersedes {' --supersedes '.join(ids)} --reason \"why\" "
                       f"(at least {MIN_TEXT} characters).")
    else:
        details.append(f"If it replaces some of them: --supersedes ID --reason \"why\" (at least {MIN_TEXT} "
                       "characters) for each, and --alongside ID for each of the others.")
    if len(ids) == 1:
        details.append(f"If it still stands beside it: --alongside {ids[0]}.")
    else:
        details.append("If they all still stand beside it: --alongside-all (one flag, whatever their number).")
    raise Refused(f"topic {topic} already has {len(unsaid)} current ruling(s); say whether this one replaces them",
                  details=details)
