"""What an agent reads at session start (`context`): every open question, every settled topic by name, the rulings
most likely to matter, within a budget it never passes, and a last line counting what was left out.

Pure: decisions in, text out. The owner's pages are `pages`; this view is made from the same state.
"""
from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from .dates import local_date
from .decision_words import unsaid_same_matter
from .errors import UsageError
from .links import WIKILINK, Resolve
from .model import Decision, Status, newest_first_key
from .pages import (
    IN_CONFLICT,
    MAX_OVERLAPS_LISTED,
    NOTE_MISSING,
    Lines,
    PageConflict,
    PageProblem,
    Settings,
    asked_key,
    largest_fitting,
    plural,
    ruled_day,
    unsaid_notes,
)
from .ruling_graph import Overlap, settled_topics, unresolved_overlaps


@dataclass(frozen=True)
class Usage:
    chars: int  # Python `len` of the text, the final newline included
    lines: int
    bytes: int  # UTF-8
    tokens: int  # estimated, see `estimate_tokens`
    json_chars: int = 0  # as a JSON string (quotes and escapes counted), as a hook's answer carries it


def estimate_tokens(text: str) -> int:
    """A conservative token count: one token per 3 ASCII characters (English runs nearer 4) and one per
    character beyond ASCII (Japanese, Chinese, emoji and accented letters often cost one or more)."""
    ascii_chars = len(text.encode("ascii", "ignore"))
    return -(-ascii_chars // 3) + (len(text) - ascii_chars)


def measure(text: str) -> Usage:
    return Usage(len(text), text.count("\n"), len(text.encode("utf-8")), estimate_tokens(text),
                 len(json.dumps(text, ensure_ascii=False)))


@dataclass(frozen=True)
class Budget:
    """The most one consumer loads without cutting; None where it sets no limit."""

    name: str
    chars: int | None = None
    lines: int | None = None
    bytes: int | None = None
    tokens: int | None = None
    json_chars: int | None = None

    def fits(self, usage: Usage) -> bool:
        return all(limit is None or used <= limit for used, limit in (
            (usage.chars, self.chars), (usage.lines, self.lines), (usage.bytes, self.bytes), (usage.tokens, self.tokens),
            (usage.json_chars, self.json_chars)))

    def describe(self) -> str:
        parts = [f"{value:,} {unit}" for value, unit in ((self.chars, "characters"), (self.lines, "lines"),
                                                        (self.bytes, "bytes"), (self.tokens, "tokens"),
                                                        (self.json_chars, "characters as JSON"))
                 if value is not None]
        return " and ".join(parts) or "no limit"


# Each agent's real limit, with a margin where the limit is only known from reports (see docs/agents.md).
BUDGETS = {
    # Claude Code keeps 10,000 characters of hook output; the hook's whole answer stays within 9,500
    # (`hooks.MAX_OUTPUT`): the text, escaped as a JSON string, within 9,400 leaves room for the rest of it.
    "claude-hook": Budget("claude-hook", chars=9500, json_chars=9400),
    "codex-hook": Budget("codex-hook", tokens=2400),  # Codex moves hook output past ~2,500 tokens to a file
    "memory-file": Budget("memory-file", lines=200, bytes=25000),  # Claude Code loads MEMORY.md up to this
}


def parse_budget(value: str, default: Budget) -> Budget:
    """`claude-hook`, `codex-hook`, `memory-file`, `config` (the vault's own) or a number of characters."""
    if value == "config":
        return default
    if value in BUDGETS:
        return BUDGETS[value]
    digits = value.replace(",", "").replace("_", "")
    if digits.isdigit() and int(digits) > 0:
        return Budget(str(int(digits)), chars=int(digits))
    raise ValueError(f"unknown budget {value!r} (expected {', '.join(BUDGETS)}, config or a number of characters)")


@dataclass
class Context:
    """What an agent reads at the start of a session: `text`, and what it holds."""

    text: str
    budget: Budget
    usage: Usage
    open_questions: list[Decision]  # shown, most urgent first
    questions_left_out: int  # > 0 only when the open questions alone overflow the budget
    problems: list[PageProblem]
    problems_left_out: int
    topics: list[str]  # named in the index
    topics_left_out: int
    rulings: list[tuple[Decision, list[str]]]  # listed in full, each with why it was chosen
    rulings_left_out: int
    overlaps: list[Overlap] = field(default_factory=list)  # newer rulings not saying whether they replace older
    conflicts: list[PageConflict] = field(default_factory=list)  # always shown in full, like open questions

    @property
    def questions_overflow(self) -> str | None:
        if not self.questions_left_out:
            return None
        total = len(self.open_questions) + self.questions_left_out
        return (f"the {total} open questions alone do not fit the budget {self.budget.name} "
                f"({self.budget.describe()}); answer or withdraw questions, or use a larger budget")


FIELD_LIMIT = 300  # characters of one field (summary, reason) in the agent's view


TOPIC_LIMIT = 60  # characters of one topic name


TOPICS_PER_LINE = 5  # topics named on one question or ruling line; the index names them all


TOPICS_INDEXED_PER_NOTE = 20  # past this, a note's topic list is over-long: the index names 20 and says so


PROBLEMS_LISTED = 10


INDEX_WIDTH = 160


# docs/design/0015-one-note-cannot-starve-the-rest.md
def plain(text: str, limit: int = FIELD_LIMIT, note_id: str | None = None) -> str:
    """Owner's text on one line, without wikilink syntax (a link shows its alias or its target), cut past
    `limit` characters with a marker saying where the rest is."""
    text = WIKILINK.sub(lambda m: (m["alias"][1:] if m["alias"] else m["target"] + (m["part"] or "")).strip(),
                        " ".join(text.split()))
    for pair, single in (("[[", "["), ("]]", "]")):
        while pair in text:
            text = text.replace(pair, single)
    if len(text) <= limit:
        return text
    where = f": vault-tools show {note_id}" if note_id else ""
    return f"{text[:limit].rstrip()} [… {len(text) - limit:,} more characters{where}]"


def _topic_list(topics: Sequence[str]) -> str:
    shown = [plain(t, TOPIC_LIMIT) for t in topics[:TOPICS_PER_LINE]]
    more = f", +{len(topics) - TOPICS_PER_LINE:,} more" if len(topics) > TOPICS_PER_LINE else ""
    return "[" + ", ".join(shown) + more + "]"


def _days(count: int) -> str:
    return plural(count, "day")


def _agent_question_line(question: Decision, replaces: Sequence[Decision], today: dt.date, tz: dt.tzinfo,
                         settings: Settings) -> str:
    parts = [f"- {question.id} {_topic_list(question.topics)} {plain(question.summary, note_id=question.id)}"]
    if replaces:
        parts.append("proposed revision of " + ", ".join(old.id for old in replaces))
    if question.asked_at:
        asked = local_date(question.asked_at, tz)
        age = (today - asked).days
        by = f" by {plain(question.asked_by, TOPIC_LIMIT)}" if question.asked_by else ""
        when = "" if age < 0 else " (today)" if age == 0 else f" ({_days(age)} ago{', stale' if age > settings.stale_after_days else ''})"
        parts.append(f"asked {asked.isoformat()}{by}{when}")
    if question.due:
        left = (question.due - today).days
        when = "today" if left == 0 else f"{_days(-left)} overdue" if left < 0 else f"in {_days(left)}"
        parts.append(f"due {question.due.isoformat()} ({when})")
    if question.reask_reason:
        parts.append("asked again because: " + plain(question.reask_reason, note_id=question.id))
    return " · ".join(parts)


def _why_listed(ruling: Decision, today: dt.date, tz: dt.tzinfo, settings: Settings) -> list[str]:
    why = []
    if ruling.pinned:
        why.append("pinned")
    if ruling.revisit_by and ruling.revisit_by <= today:
        why.append("revisit due")
    if _has_history(ruling):
        why.append("history")
    if ruling.ruled_at and (today - local_date(ruling.ruled_at, tz)).days <= settings.recent_days:
        why.append("recent")
    return why


WHY_RANK = ("pinned", "revisit due", "history", "recent")  # the order rulings are listed in, then the newest


def _has_history(ruling: Decision) -> bool:
    """A ruling with more to it than its words: it replaced one, answered a question asked again, grants terms,
    governs files, says why, or when to look again. Such rulings are listed before routine ones."""
    return bool(ruling.supersedes or ruling.reask_reason or ruling.terms or ruling.scope or ruling.reason
                or ruling.revisit_if or ruling.revisit_by)


LOOK_ALIKE = 4  # rulings whose topic keys start alike ("expense-92", "expense-93", ...) that make a family
_FIRST_SEGMENT = re.compile(r"[^-\d]+")


def _families(rulings: Sequence[Decision], tz: dt.tzinfo) -> dict[str, int]:
    """Each ruling's place in its family, newest first (0 for the newest, and for a ruling in no family): a
    family is LOOK_ALIKE or more rulings whose first topic key starts with the same word, the routine rulings
    of one kind. Listing one of each family before the second of any keeps look-alikes from filling the lines."""
    families: dict[str, list[Decision]] = {}
    for ruling in rulings:
        found = _FIRST_SEGMENT.match(ruling.topics[0]) if ruling.topics else None
        families.setdefault(found.group(0) if found else ruling.id, []).append(ruling)
    place: dict[str, int] = {}
    for members in families.values():
        if len(members) < LOOK_ALIKE:
            place.update((member.id, 0) for member in members)
            continue
        newest = sorted(members, key=lambda member: newest_first_key(member, tz), reverse=True)
        place.update((member.id, position) for position, member in enumerate(newest))
    return place


def _agent_ruling_line(ruling: Decision, replaced: Sequence[str], why: Sequence[str], tz: dt.tzinfo,
                       unsaid: Sequence[str] = ()) -> str:
    parts = [f"- {ruling.id} {ruled_day(ruling, tz)} {_topic_list(ruling.topics)} {plain(ruling.summary, note_id=ruling.id)}"]
    parts += [f"UNSETTLED: {note}" for note in unsaid]
    if "pinned" in why:
        parts.append("pinned by the owner")
    if replaced:
        parts.append("replaces " + ", ".join(replaced[:TOPICS_PER_LINE])
                     + (f" and {len(replaced) - TOPICS_PER_LINE:,} more" if len(replaced) > TOPICS_PER_LINE else ""))
    if ruling.revisit_by:
        parts.append(f"revisit by {ruling.revisit_by.isoformat()}{' (due)' if 'revisit due' in why else ''}")
    if ruling.note_missing:
        parts.append(NOTE_MISSING)
    if ruling.conflict:
        parts.append(IN_CONFLICT)
    return " · ".join(parts)


def _index_lines(topics: Sequence[str], left_out: int) -> list[str]:
    lines: list[str] = []
    current = ""
    for topic in topics:
        item = plain(topic, TOPIC_LIMIT)
        if current and len(current) + 2 + len(item) > INDEX_WIDTH:
            lines.append(current + ",")
            current = item
        else:
            current = f"{current}, {item}" if current else item
    if left_out:
        current += f"{'; ' if current else ''}{left_out:,} more topics not named here (budget)"
    if current:
        lines.append(current)
    return lines


# docs/design/0014-the-agents-view-is-cut-out-loud.md
def agent_context(decisions: Sequence[Decision], resolve: Resolve, today: dt.date, tz: dt.tzinfo,
                  settings: Settings, budget: Budget, problems: Sequence[PageProblem] = (),
                  conflicts: Sequence[PageConflict] = ()) -> Context:
    """The agent's view of the decisions in effect, never longer than `budget`.

    In order, each part only where the parts before it leave room: every open question (if they alone do
    not fit, the most urgent that do, and `questions_left_out` says how many did not), up to
    PROBLEMS_LISTED unreadable notes, the index of every settled topic, then one line each for the rulings
    most likely to matter: pinned by the owner, revisit due, with a history (`_has_history`), ruled in the last
    `recent_days`, then newest; within each, one of each family of look-alike rulings before the second of any.
    The last line counts what was left out. Ages are computed against `today`: this is not a file.
    """
    parts = _ContextParts.of(decisions, resolve, today, tz, settings, problems, conflicts)
    shown = _fitting(parts, budget)
    text = parts.render(shown)
    return Context(text=text, budget=budget, usage=measure(text), open_questions=parts.questions[:shown.questions],
                   questions_left_out=len(parts.questions) - shown.questions,
                   problems=parts.problems[:shown.problems],
                   problems_left_out=len(parts.problem_lines) - shown.problems, topics=parts.topics[:shown.topics],
                   topics_left_out=len(parts.topics) - shown.topics,
                   rulings=[(r, parts.why[r.id]) for r in parts.ordered[:shown.rulings]],
                   rulings_left_out=len(parts.current) - shown.rulings,
                   overlaps=parts.overlaps, conflicts=list(conflicts))


@dataclass(frozen=True)
class _Shown:
    """How many of each part a context shows."""

    questions: int = 0
    problems: int = 0
    topics: int = 0
    rulings: int = 0
    overlaps: int = 0


def _fitting(parts: _ContextParts, budget: Budget) -> _Shown:
    """As many of each part as fit, in order: questions, overlaps, problems, topics, then rulings (each part
    only once all before it fit)."""
    def fits(shown: _Shown) -> bool:
        return budget.fits(measure(parts.render(shown)))

    if not fits(_Shown()):
        frame = measure(parts.render(_Shown()))
        raise UsageError(f"the budget {budget.name} ({budget.describe()}) is too small for even an empty context "
                         f"({frame.chars:,} characters, {frame.lines} lines, {frame.tokens:,} tokens)")
    shown = _Shown(questions=largest_fitting(len(parts.questions), lambda n: fits(_Shown(questions=n))))
    if shown.questions < len(parts.questions):
        return shown
    shown = replace(shown, overlaps=largest_fitting(min(MAX_OVERLAPS_LISTED, len(parts.overlap_lines)),
                                                    lambda n: fits(replace(shown, overlaps=n))))
    shown = replace(shown, problems=largest_fitting(min(PROBLEMS_LISTED, len(parts.problem_lines)),
                                                    lambda n: fits(replace(shown, problems=n))))
    shown = replace(shown, topics=largest_fitting(len(parts.topics), lambda n: fits(replace(shown, topics=n))))
    if shown.topics < len(parts.topics):
        return shown
    return replace(shown, rulings=largest_fitting(len(parts.ordered), lambda n: fits(replace(shown, rulings=n))))


@dataclass
class _ContextParts:
    """Every line a context may show, made once; `render` takes as many of each as asked."""

    today: dt.date
    questions: list[Decision]
    question_lines: list[str]
    conflicts: Sequence[PageConflict]
    overlaps: list[Overlap]
    overlap_lines: Lines[Overlap]
    problems: list[PageProblem]
    problem_lines: list[str]
    topics: list[str]
    cut_lines: list[str]  # rulings whose topic list is cut
    current: list[Decision]
    ordered: list[Decision]  # the current rulings, most likely to matter first
    ruling_lines: Lines[Decision]
    why: dict[str, list[str]]  # why each ruling is listed

    @classmethod
    def of(cls, decisions: Sequence[Decision], resolve: Resolve, today: dt.date, tz: dt.tzinfo, settings: Settings,
           problems: Sequence[PageProblem], conflicts: Sequence[PageConflict]) -> _ContextParts:
        by_id = {d.id: d for d in decisions}

        def targets(decision: Decision) -> list[Decision]:
            return [by_id[t] for t in (resolve(link_text) for link_text in decision.supersedes) if t in by_id]

        questions = _questions_in_order(decisions, tz)
        question_lines = [_agent_question_line(q, targets(q) if q.supersedes else [], today, tz, settings)
                          for q in questions]
        current = [d for d in decisions if d.status is Status.RULED]
        topics, cut_lines = _settled_topic_index(current, by_id, resolve)
        why = {ruling.id: _why_listed(ruling, today, tz, settings) for ruling in current}
        family_place = _families(current, tz)

        def priority(ruling: Decision) -> tuple[int, int, dt.datetime, int, str]:
            rank = next((place for place, reason in enumerate(WHY_RANK) if reason in why[ruling.id]), len(WHY_RANK))
            moment, number, decision_id = newest_first_key(ruling, tz)
            return -rank, -family_place[ruling.id], moment, number, decision_id

        ordered = sorted(current, key=priority, reverse=True)
        overlaps = unresolved_overlaps(decisions, resolve, tz) + unsaid_same_matter(decisions, resolve)
        unsaid = unsaid_notes(overlaps)
        ruling_lines = Lines(ordered, lambda r: _agent_ruling_line(r, [t.id for t in targets(r)], why[r.id], tz,
                                                                     unsaid.get(r.id, ())))
        overlap_lines = Lines(overlaps, lambda o: (
            f"- {o.newer.id} ({ruled_day(o.newer, tz)}: {plain(o.newer.summary, note_id=o.newer.id)}) has not "
            f"said whether it replaces {o.older.id} ({ruled_day(o.older, tz)}: "
            f"{plain(o.older.summary, note_id=o.older.id)}) on {plain(o.topic, TOPIC_LIMIT)}"))
        problem_list = sorted(problems, key=lambda p: (p.path, p.line or 0))
        problem_lines = [f"- {plain(p.path, FIELD_LIMIT)}{f':{p.line}' if p.line else ''} {plain(p.message)}"
                         for p in problem_list]
        return cls(today, questions, question_lines, conflicts, overlaps, overlap_lines, problem_list, problem_lines,
                   topics, cut_lines, current, ordered, ruling_lines, why)

    def render(self, shown: _Shown) -> str:
        out = [f"# Decisions in effect (vault-tools, {self.today.isoformat()})", "",
               "The current rulings below are the owner's answers in force. `vault-tools lookup TOPIC` prints a "
               "topic's rulings; a new question is registered with `vault-tools ask`.", ""]
        self._questions_and_troubles(out, shown)
        if out[-1]:
            out.append("")
        if self.topics:
            out += [f"## Settled topics ({len(self.topics):,}): each has a current ruling", ""]
            out += _index_lines(self.topics[:shown.topics], len(self.topics) - shown.topics)
            out += self.cut_lines[:PROBLEMS_LISTED]
            if len(self.cut_lines) > PROBLEMS_LISTED:
                out.append(f"{len(self.cut_lines) - PROBLEMS_LISTED:,} more rulings with over-long topic lists: "
                           "`vault-tools lint`")
            out += ["", f"## Rulings ({shown.rulings:,} of {len(self.current):,} listed; most likely to matter first)",
                    ""]
            out += self.ruling_lines.first(shown.rulings)
            if out[-1]:
                out.append("")
        else:
            out += ["## Settled topics: none yet", ""]
        out.append(self._left_out(shown))
        return "\n".join(out) + "\n"

    def _questions_and_troubles(self, out: list[str], shown: _Shown) -> None:
        """The open questions, then conflicts, overlaps and unreadable notes: what an agent must not miss."""
        questions, overlap_lines, problem_lines = self.questions, self.overlap_lines, self.problem_lines
        if questions:
            out += [f"## Open questions ({len(questions)}): the owner has not ruled on these yet", ""]
            out += self.question_lines[:shown.questions]
            if shown.questions < len(questions):
                out.append(f"- {len(questions) - shown.questions:,} more open questions not shown (budget): "
                           "`vault-tools list --status open`")
        else:
            out += ["## Open questions: none", ""]
        if self.conflicts:
            out += ["", f"## Conflicts ({len(self.conflicts)}): two clones recorded outcomes that cannot both stand; "
                    "the owner decides", ""]
            out += [f"- {c.id} {plain(c.what, note_id=c.id)} · settle: {c.settle}" for c in self.conflicts]
        if overlap_lines:
            out += ["", f"## Not said whether it replaces ({len(overlap_lines)}): neither ruling is the plain answer "
                    "until the owner says which stands", ""]
            out += overlap_lines.first(shown.overlaps)
            if shown.overlaps < len(overlap_lines):
                out.append(f"- {len(overlap_lines) - shown.overlaps:,} more pairs: `vault-tools lint`")
        if problem_lines and (questions or overlap_lines):
            out.append("")
        if problem_lines:
            out += [f"## Decision notes unreadable or missing ({len(problem_lines)}): a ruling may be hiding in them",
                    ""]
            out += problem_lines[:shown.problems]
            if shown.problems < len(problem_lines):
                out.append(f"- {len(problem_lines) - shown.problems:,} more: `vault-tools lint`")

    def _left_out(self, shown: _Shown) -> str:
        current, topics = self.current, self.topics
        left = []
        if len(current) - shown.rulings:
            left.append(f"{len(current) - shown.rulings:,} of {len(current):,} current rulings")
        if len(topics) - shown.topics:
            left.append(f"{len(topics) - shown.topics:,} of {len(topics):,} topic names")
        if shown.questions < len(self.questions):
            left.append(f"{len(self.questions) - shown.questions:,} open questions")
        if shown.problems < len(self.problem_lines):
            left.append(f"{len(self.problem_lines) - shown.problems:,} unreadable or missing notes")
        if shown.overlaps < len(self.overlap_lines):
            left.append(f"{len(self.overlap_lines) - shown.overlaps:,} pairs of rulings not saying whether one "
                        "replaces the other")
        summary = "Left out: " + ", ".join(left) + "." if left else "Left out: nothing."
        return f"{summary} `vault-tools lookup TOPIC` shows the rulings on a topic and what they replaced."


def _questions_in_order(decisions: Sequence[Decision], tz: dt.tzinfo) -> list[Decision]:
    """Open questions, most urgent first: those due by date, then the rest as asked, then proposed revisions."""
    open_notes = [d for d in decisions if d.status is Status.OPEN]
    dated = sorted((q for q in open_notes if q.due and not q.supersedes), key=lambda q: (q.due, asked_key(q, tz)))
    undated = sorted((q for q in open_notes if not q.due and not q.supersedes), key=lambda q: asked_key(q, tz))
    revisions = sorted((q for q in open_notes if q.supersedes), key=lambda q: asked_key(q, tz))
    return [*dated, *undated, *revisions]


def _settled_topic_index(current: Sequence[Decision], by_id: dict[str, Decision],
                         resolve: Resolve) -> tuple[list[str], list[str]]:
    """Every topic a current ruling settles (at most TOPICS_INDEXED_PER_NOTE from one ruling), and a line for each
    ruling whose list was cut."""
    named: set[str] = set()
    over_long: list[tuple[str, int]] = []  # (id, topics not named)
    for ruling in current:
        settles = list(settled_topics(ruling, by_id, resolve))  # its own topics first
        named.update(settles[:TOPICS_INDEXED_PER_NOTE])
        if len(settles) > TOPICS_INDEXED_PER_NOTE:
            over_long.append((ruling.id, len(settles) - TOPICS_INDEXED_PER_NOTE))
    cut_lines = [f"{ruling_id} settles {count:,} more topics than named here (an over-long list): "
                 f"`vault-tools show {ruling_id}`" for ruling_id, count in sorted(over_long)]
    return sorted(named), cut_lines
