"""The record's own figures: what the decisions and the ledger say about how questions are asked and
answered. Pure: decisions and events in, numbers out.

Definitions (docs/stats.md explains them to the owner):
- a *question* is a decision that was asked (it has `asked_at`, or the ledger has its `asked` event),
  whatever became of it; a *ruling* is a decision that was ruled (current, superseded or retracted);
  a ruling *answers a question* when it was asked first, else it was given *directly*;
- *time to answer* runs from `asked_at` to `ruled_at`, for questions answered with both times known;
- a *re-ask* is a question with a `reask_reason`; it *repeats weekly* when the question on a matching
  topic asked just before it was asked 6 to 8 days earlier (a week, give or take a day);
- a ruling *shares a topic with an earlier ruling* when a ruling ruled before it has a matching topic;
- a *supersession* is a ruling naming at least one ruling it replaces in `supersedes`;
- *who recorded what* counts the ledger's events by actor.
With `since`, only questions asked and rulings ruled on or after that day count (and events from it).
"""
from __future__ import annotations

import datetime as dt
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .dates import instant, local_date
from .importers import IMPORT_ACTOR
from .ledger_lines import Event
from .links import Resolve
from .model import Decision, Status
from .pages import escape, link
from .topics import TopicIndex, canonical_topic

WEEKLY_DAYS = (6, 8)  # a re-ask repeats weekly when the previous question on its topic is this many days older
RECORDED_EVENTS = ("asked", "ruled", "withdrawn", "retracted", "superseded", "amended", "imported")
ANSWER_BUCKETS = (("under 1 hour", 1.0), ("1 to 24 hours", 24.0), ("1 to 7 days", 24.0 * 7),
                  ("over 7 days", float("inf")))


@dataclass(frozen=True)
class Spread:
    count: int
    median: float
    min: float
    max: float


@dataclass(frozen=True)
class OpenQuestion:
    id: str
    summary: str
    asked_on: dt.date
    age_days: int
    link: str  # to the note, as the pinned pages write it


@dataclass(frozen=True)
class TopicCount:
    topic: str
    questions: int
    rulings: int
    current: int


@dataclass(frozen=True)
class Week:
    start: dt.date  # the Monday
    asked: int
    answered: int


@dataclass
class Figures:
    today: dt.date
    since: dt.date | None
    rulings: dict[str, int] = field(default_factory=dict)  # total, current, superseded, retracted, direct, answering
    questions: dict[str, int] = field(default_factory=dict)  # total, answered, withdrawn, open
    time_to_answer_hours: Spread | None = None
    answer_buckets: dict[str, int] = field(default_factory=dict)
    oldest_open: OpenQuestion | None = None
    open_questions: list[OpenQuestion] = field(default_factory=list)  # oldest first
    reasked: int = 0
    reasked_weekly: int = 0
    sharing_topic: int = 0
    supersessions: int = 0
    topics: list[TopicCount] = field(default_factory=list)  # most used first
    recorded_by: dict[str, dict[str, int]] = field(default_factory=dict)  # actor -> event -> count
    weeks: list[Week] = field(default_factory=list)
    # The questions an import asked the owner to review (`asked_by` the importer): counted here, not above
    import_reviews: dict[str, int] = field(default_factory=dict)  # total, open
    # Decisions two clones closed differently, neither outcome standing until the owner settles them (each id)
    in_conflict: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, object]:
        def spread(value: Spread | None) -> dict[str, float] | None:
            if value is None:
                return None
            return {"count": value.count, "median": round(value.median, 2), "min": round(value.min, 2),
                    "max": round(value.max, 2)}

        def question(item: OpenQuestion | None) -> dict[str, object] | None:
            return None if item is None else {"id": item.id, "summary": item.summary,
                                              "asked_on": item.asked_on.isoformat(), "age_days": item.age_days}

        return {
            "today": self.today.isoformat(), "since": self.since.isoformat() if self.since else None,
            "rulings": self.rulings, "questions": self.questions,
            "time_to_answer_hours": spread(self.time_to_answer_hours), "answer_buckets": self.answer_buckets,
            "oldest_open": question(self.oldest_open),
            "open_questions": [question(item) for item in self.open_questions],
            "reasked_with_reason": self.reasked, "reasked_weekly": self.reasked_weekly,
            "rulings_sharing_a_topic_with_an_earlier_ruling": self.sharing_topic,
            "supersessions": self.supersessions,
            "topics": [{"topic": t.topic, "questions": t.questions, "rulings": t.rulings, "current": t.current}
                       for t in self.topics],
            "recorded_by": self.recorded_by,
            "weeks": [{"week_of": w.start.isoformat(), "asked": w.asked, "answered": w.answered} for w in self.weeks],
            "import_review_questions": self.import_reviews,
            "in_conflict": self.in_conflict,
        }


def _asked_moment(decision: Decision, asked_events: Mapping[str, Event], tz: dt.tzinfo) -> dt.datetime | None:
    if decision.asked_at is not None:
        return instant(decision.asked_at, tz)
    event = asked_events.get(decision.id)
    return dt.datetime.fromisoformat(event.at.replace("Z", "+00:00")) if event else None


def _has_time(value: dt.date | None) -> bool:
    return isinstance(value, dt.datetime)


def compute(decisions: Sequence[Decision], events: Iterable[Event], resolve: Resolve, tz: dt.tzinfo,
            today: dt.date, since: dt.date | None = None) -> Figures:
    """Every figure, for `decisions` with the status in effect and the ledger's `events`."""
    events = list(events)
    asked_events = {e.id: e for e in events if e.event == "asked"}
    figures = Figures(today=today, since=since)
    reviews = [d for d in decisions if d.asked_by == IMPORT_ACTOR]  # the importer's questions, not the owner's
    figures.import_reviews = {"total": len(reviews), "open": sum(d.status is Status.OPEN for d in reviews)}
    figures.in_conflict = sorted(d.id for d in decisions if d.conflict)
    decisions = [d for d in decisions if d.asked_by != IMPORT_ACTOR]

    def counts(moment: dt.datetime | dt.date | None) -> bool:
        return since is None or (moment is not None and local_date(moment, tz) >= since)

    asked_at = {d.id: _asked_moment(d, asked_events, tz) for d in decisions}
    questions = [d for d in decisions if asked_at[d.id] is not None and counts(asked_at[d.id])]
    ruled_statuses = (Status.RULED, Status.SUPERSEDED, Status.RETRACTED)
    rulings = [d for d in decisions if d.status in ruled_statuses and counts(d.ruled_at)]

    figures.rulings = {
        "total": len(rulings),
        "current": sum(d.status is Status.RULED for d in rulings),
        "superseded": sum(d.status is Status.SUPERSEDED for d in rulings),
        "retracted": sum(d.status is Status.RETRACTED for d in rulings),
        "answering_a_question": sum(asked_at[d.id] is not None for d in rulings),
        "direct": sum(asked_at[d.id] is None for d in rulings),
    }
    answered = [d for d in questions if d.status in ruled_statuses]
    still_open = [d for d in questions if d.status is Status.OPEN]
    figures.questions = {
        "total": len(questions), "answered": len(answered),
        "withdrawn": sum(d.status is Status.WITHDRAWN for d in questions), "open": len(still_open),
    }

    hours = []
    for d in answered:
        asked = asked_at[d.id]
        if asked is not None and _has_time(d.ruled_at) and (_has_time(d.asked_at) or d.asked_at is None):
            hours.append(max(0.0, (instant(d.ruled_at, tz) - asked).total_seconds() / 3600))  # type: ignore[arg-type]
    if hours:
        figures.time_to_answer_hours = Spread(len(hours), statistics.median(hours), min(hours), max(hours))
    figures.answer_buckets = {label: 0 for label, _ in ANSWER_BUCKETS}
    for value in hours:
        label = next(label for label, limit in ANSWER_BUCKETS if value < limit)
        figures.answer_buckets[label] += 1

    def asked_on(d: Decision) -> dt.date:
        moment = asked_at[d.id]
        assert moment is not None
        return local_date(moment, tz)

    figures.open_questions = [OpenQuestion(d.id, d.summary, asked_on(d), max(0, (today - asked_on(d)).days), link(d))
                              for d in sorted(still_open, key=lambda d: (asked_at[d.id], d.number))]
    figures.oldest_open = figures.open_questions[0] if figures.open_questions else None

    reasks = [d for d in questions if d.reask_reason]
    figures.reasked = len(reasks)
    figures.reasked_weekly = sum(_repeats_weekly(d, decisions, asked_at, tz) for d in reasks)

    figures.sharing_topic = _sharing_topic(rulings, decisions, tz)
    figures.supersessions = sum(any(resolve(link) for link in d.supersedes) for d in rulings)
    figures.topics = _topic_counts(questions, rulings)
    figures.recorded_by = _recorded_by(events, since, tz)
    figures.weeks = _weeks(questions, answered, asked_on, tz)
    return figures


def _repeats_weekly(reask: Decision, decisions: Sequence[Decision],
                    asked_at: Mapping[str, dt.datetime | None], tz: dt.tzinfo) -> bool:
    moment = asked_at[reask.id]
    assert moment is not None
    index = TopicIndex()
    for topic in reask.topics:
        index.add(topic)
    earlier = [when for d in decisions
               if d.id != reask.id and (when := asked_at[d.id]) is not None and when < moment
               and any(index.matches(topic) for topic in d.topics)]
    if not earlier:
        return False
    gap = (local_date(moment, tz) - local_date(max(earlier), tz)).days
    return WEEKLY_DAYS[0] <= gap <= WEEKLY_DAYS[1]


def _ruled_moment(decision: Decision, tz: dt.tzinfo) -> tuple[dt.datetime, int]:
    when = decision.ruled_at
    return (instant(when, tz) if when else dt.datetime.min.replace(tzinfo=dt.UTC)), decision.number


def _sharing_topic(rulings: Sequence[Decision], decisions: Sequence[Decision], tz: dt.tzinfo) -> int:
    """Rulings with a topic (near spellings and merged topics count) that a ruling ruled before them had;
    earlier rulings outside `since` count as earlier."""
    ruled_statuses = (Status.RULED, Status.SUPERSEDED, Status.RETRACTED)
    counted = {d.id for d in rulings}
    index = TopicIndex()
    found = 0
    for ruling in sorted((d for d in decisions if d.status in ruled_statuses), key=lambda d: _ruled_moment(d, tz)):
        if ruling.id in counted and any(index.matches(topic) for topic in ruling.topics):
            found += 1
        for topic in ruling.topics:
            index.add(topic)
    return found


def _topic_counts(questions: Sequence[Decision], rulings: Sequence[Decision]) -> list[TopicCount]:
    """Per topic, as merged by the owner (an alias counts as its topic)."""
    tally: dict[str, list[int]] = {}
    for items, slot in ((questions, 0), (rulings, 1)):
        for decision in items:
            for topic in {canonical_topic(t) for t in decision.topics}:
                tally.setdefault(topic, [0, 0, 0])[slot] += 1
                if slot == 1 and decision.status is Status.RULED:
                    tally[topic][2] += 1
    found = [TopicCount(topic, *values) for topic, values in tally.items()]
    return sorted(found, key=lambda t: (-(t.questions + t.rulings), t.topic))


def _recorded_by(events: Iterable[Event], since: dt.date | None, tz: dt.tzinfo) -> dict[str, dict[str, int]]:
    found: dict[str, dict[str, int]] = {}
    for event in events:
        if event.event not in RECORDED_EVENTS:
            continue
        if since is not None:
            moment = dt.datetime.fromisoformat(event.at.replace("Z", "+00:00"))
            if local_date(moment, tz) < since:
                continue
        kinds = found.setdefault(event.actor, {})
        kinds[event.event] = kinds.get(event.event, 0) + 1
    return {actor: dict(sorted(kinds.items())) for actor, kinds in sorted(found.items())}


def _weeks(questions: Sequence[Decision], answered: Sequence[Decision], asked_on: Callable[[Decision], dt.date],
           tz: dt.tzinfo) -> list[Week]:
    """Questions asked and answered per week (weeks start on Monday), every week from the first to the last."""
    def monday(day: dt.date) -> dt.date:
        return day - dt.timedelta(days=day.weekday())

    asked: dict[dt.date, int] = {}
    done: dict[dt.date, int] = {}
    for decision in questions:
        week = monday(asked_on(decision))
        asked[week] = asked.get(week, 0) + 1
    for decision in answered:
        if decision.ruled_at is not None:
            week = monday(local_date(decision.ruled_at, tz))
            done[week] = done.get(week, 0) + 1
    if not asked and not done:
        return []
    first, last = min(asked.keys() | done.keys()), max(asked.keys() | done.keys())
    weeks = []
    while first <= last:
        weeks.append(Week(first, asked.get(first, 0), done.get(first, 0)))
        first += dt.timedelta(days=7)
    return weeks


# -- the Stats page -----------------------------------------------------------------

STATS_PAGE = "Stats"
TOPICS_ON_PAGE = 40
WEEKS_ON_PAGE = 26
BAR = "█"


def _hours(value: float) -> str:
    return f"{value:.1f} h" if value < 48 else f"{value / 24:.1f} days"


def summary_lines(figures: Figures) -> list[str]:
    """The headline figures, one per line: what `vault-tools stats` prints."""
    r, q = figures.rulings, figures.questions
    lines = [
        f"rulings: {r['total']} ({r['current']} current, {r['superseded']} superseded, {r['retracted']} retracted; "
        f"{r['answering_a_question']} answering a question, {r['direct']} given directly)",
        f"questions: {q['total']} ({q['answered']} answered, {q['withdrawn']} withdrawn, {q['open']} open)",
    ]
    if figures.in_conflict:
        lines.append(f"in conflict: {len(figures.in_conflict)} ({', '.join(figures.in_conflict)}: two clones closed it "
                     "differently; `vault-tools settle` records which outcome stands)")
    if figures.import_reviews.get("total"):
        lines.append(f"import review questions (not counted above): {figures.import_reviews['total']} "
                     f"({figures.import_reviews['open']} open)")
    spread = figures.time_to_answer_hours
    if spread:
        lines.append(f"time to answer: median {_hours(spread.median)}, fastest {_hours(spread.min)}, "
                     f"slowest {_hours(spread.max)} ({spread.count} answered with both times known)")
    else:
        lines.append("time to answer: no question answered with both times known")
    oldest = figures.oldest_open
    lines.append(f"oldest open question: {oldest.id}, asked {oldest.asked_on.isoformat()}, open {oldest.age_days} "
                 f"days: {oldest.summary}" if oldest else "oldest open question: none open")
    lines += [
        f"asked again on a settled topic with a reason: {figures.reasked} ({figures.reasked_weekly} repeating weekly)",
        f"rulings sharing a topic with an earlier ruling: {figures.sharing_topic}",
        f"rulings replacing another (supersedes): {figures.supersessions}",
    ]
    return lines


def stats_page(figures: Figures, pinned_notice: str) -> str:
    """`Pinned/Stats.md`: the figures with charts Obsidian renders. Stamped with the day it was computed
    for (ages count to that day), so it is written by `stats --write` and the watcher's review, never
    checked as stale by `build --check` or lint, and not part of what an agent loads."""
    out = [pinned_notice, "", f"# {STATS_PAGE}", "",
           f"Figures as of {figures.today.isoformat()}"
           + (f", counting from {figures.since.isoformat()}" if figures.since else "")
           + ". Ages count to that day; run `vault-tools stats --write` for today's.", ""]
    out += [f"- {line}" for line in summary_lines(figures)] + [""]

    q = figures.questions
    slices = [("Answered", q["answered"]), ("Withdrawn", q["withdrawn"]), ("Open", q["open"])]
    if any(count for _, count in slices):
        out += ["## Questions", "", "```mermaid", "pie title Questions by outcome"]
        out += [f'    "{label}" : {count}' for label, count in slices if count]
        out += ["```", ""]

    weeks = figures.weeks[-WEEKS_ON_PAGE:]
    if weeks:
        out += ["## Asked and answered per week", ""]
        if len(figures.weeks) > len(weeks):
            out += [f"The last {len(weeks)} weeks of {len(figures.weeks)}.", ""]
        out += ["| week of | asked | | answered | |", "|---|--:|---|--:|---|"]
        out += [f"| {w.start.isoformat()} | {w.asked} | {BAR * w.asked} | {w.answered} | {BAR * w.answered} |"
                for w in weeks]
        out.append("")

    spread = figures.time_to_answer_hours
    if spread:
        out += ["## Time to answer", "",
                f"Median {_hours(spread.median)}, fastest {_hours(spread.min)}, slowest {_hours(spread.max)}.", "",
                "```mermaid", "pie title Time to answer"]
        out += [f'    "{label}" : {count}' for label, count in figures.answer_buckets.items() if count]
        out += ["```", ""]

    if figures.open_questions:
        out += ["## Open questions by age", "", "```mermaid", "gantt",
                f"    title Open questions as of {figures.today.isoformat()}", "    dateFormat YYYY-MM-DD",
                "    axisFormat %m-%d", "    section Open"]
        out += [f"    {item.id} asked {item.asked_on.isoformat()} : {item.asked_on.isoformat()}, "
                f"{max(1, item.age_days)}d" for item in figures.open_questions]
        out += ["```", ""]
        out += [f"- {item.link} open {item.age_days} days: {escape(item.summary)}"
                for item in figures.open_questions]
        out.append("")

    if figures.topics:
        shown = figures.topics[:TOPICS_ON_PAGE]
        out += ["## Per topic", "", "| topic | questions | rulings | current |", "|---|--:|--:|--:|"]
        out += [f"| `{t.topic}` | {t.questions} | {t.rulings} | {t.current} |" for t in shown]
        if len(figures.topics) > len(shown):
            out += ["", f"{len(figures.topics) - len(shown)} more topics: `vault-tools stats --json` lists them all."]
        out.append("")

    if figures.recorded_by:
        kinds = [k for k in RECORDED_EVENTS if any(k in counts for counts in figures.recorded_by.values())]
        out += ["## Who recorded what", "", "| who | " + " | ".join(kinds) + " |",
                "|---|" + "--:|" * len(kinds)]
        out += [f"| {escape(actor)} | " + " | ".join(str(counts.get(k, 0)) for k in kinds) + " |"
                for actor, counts in figures.recorded_by.items()]
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"
