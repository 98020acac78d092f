"""Hygiene rules (VT040-VT045), warnings by default: questions left open, rulings due for review,
topic spellings that drift apart, rulings with no source, rulings on one matter under different topics,
notes left half-written.
"""
from __future__ import annotations

from collections.abc import Iterator

from ..dates import local_date
from ..decision_words import unsaid_same_matter_pairs
from ..drafts import being_written, lacks_id
from ..model import Decision, Status
from ..topics import TopicIndex, canonical_topic
from .facts import Facts, first_line
from .registry import WARNING, Finding, rule


@rule("VT040", "stale-question", WARNING, remembered=True)
def stale_question(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a question open for longer than `stale_after_days` (default 14), counted from `asked_at`.

    ## Why
    An open question is work the owner has not done; left long enough it stops being seen.

    ## How to fix
    Rule on it, or withdraw it with `vault-tools withdraw ID --reason ...`.
    """
    limit = facts.config.stale_after_days
    for decision in facts.state.decisions:
        if decision.status is not Status.OPEN or decision.asked_at is None:
            continue
        age = (facts.today - local_date(decision.asked_at, facts.config.tz)).days
        if age > limit:
            yield Finding(decision.path, first_line(decision, "asked_at"),
                          f"{decision.id} has been open for {age} days (stale_after_days is {limit})")


@rule("VT041", "revisit-date-passed", WARNING, remembered=True)
def revisit_date_passed(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a current ruling whose `revisit_by` date has passed.

    ## Why
    The owner asked to look at this ruling again by that date.

    ## How to fix
    Review it with the owner: confirm it with a new ruling that supersedes it (with a new `revisit_by`),
    or retract it. To keep it as it is, add `vault-tools-ignore: [VT041]` to the note.
    """
    for decision in facts.state.decisions:
        if decision.status is Status.RULED and decision.revisit_by and decision.revisit_by < facts.today:
            yield Finding(decision.path, first_line(decision, "revisit_by"),
                          f"{decision.id} was to be revisited by {decision.revisit_by.isoformat()}")


@rule("VT042", "similar-topics", WARNING, remembered=True)
def similar_topics(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports topics that look like variants of each other: plural and singular, another word order, a
    missing hyphen, or one typo (`article-footer`, `article-footers`, `footer-article`,
    `artcle-footer`). It uses the same near-match as `ask`. The less used spelling is reported.

    ## Why
    `ask` and `lookup` treat them as one topic anyway, but pages group by exact spelling, and a reader
    cannot tell whether two topics were meant to differ.

    ## How to fix
    Use one spelling in notes that are not sealed yet. For sealed notes, whose topics cannot change,
    merge the spellings into one topic: tick the item `vault-tools review` proposes, or list the alias
    under its topic in `vault-tools/topics.yaml` (`article-footer: [article-footers]`).
    """
    uses: dict[str, list[Decision]] = {}
    for decision in sorted(facts.state.decisions, key=lambda d: d.order):
        for topic in decision.topics:
            uses.setdefault(topic, []).append(decision)
    # The most used spelling (then the earliest) of each group is the one the others are measured against.
    canonical = TopicIndex()
    for topic in sorted(uses, key=lambda t: (-len(uses[t]), uses[t][0].order, t)):
        common = next(iter(canonical.matches(topic)), None)
        if common is not None and canonical_topic(topic) == canonical_topic(common):
            continue  # merged by the owner in vault-tools/topics.yaml: one topic, on purpose
        if common is None:
            canonical.add(topic)
            continue
        users = ", ".join(d.id for d in uses[common][:3]) + (", ..." if len(uses[common]) > 3 else "")
        for decision in uses[topic]:
            yield Finding(decision.path, first_line(decision, "topics"),
                          f"topic {topic!r} looks like a variant of {common!r} (used by {users})")


@rule("VT043", "ruling-without-source", WARNING, remembered=True)
def ruling_without_source(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a current ruling with no `source`.

    ## Why
    The source (a link to a note, "chat", a message id) is how anyone checks later that the owner
    really said this.

    ## How to fix
    Add `source` before the ruling is sealed. A sealed ruling cannot take one any more: add
    `vault-tools-ignore: [VT043]` to acknowledge it, or turn the rule off in `vault-tools/config.yaml`.
    """
    for decision in facts.state.decisions:
        if decision.status is Status.RULED and not decision.source:
            yield Finding(decision.path, first_line(decision, "status"), f"{decision.id} is a ruling with no source")


@rule("VT044", "same-matter-rulings", WARNING, remembered=True)
def same_matter_rulings(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports two current rulings whose words say the same matter under different topic keys (no topic of
    one near-matches a topic of the other), by the check `rule` uses to refuse a ruling given directly as
    the matter of another (its strong tier): the older ruling's summary, topics and `## Question` and
    `## Ruling` sections say most of what the newer one's summary and topics say. So a ruling typed in
    Obsidian is judged as one given to `rule`. Each ruling is reported once, on the newer note, naming the
    older ruling closest to it; the other older rulings on the same matter are named after it (the first
    five, and how many more).

    ## Why
    Two rulings on one matter filed apart are read apart: `lookup` on one key never shows the other, and
    when they disagree no one is told which one stands.

    ## How to fix
    If one replaces the other, say so: `vault-tools rule ... --supersedes ID` (or `supersede`). If they are
    one matter that both still rule on, give them one topic key while they are not sealed. If they are
    different matters, add `vault-tools-ignore: [VT044]` to the newer note.
    """

    current = [d for d in facts.state.decisions if d.status is Status.RULED]
    # a newer ruling's path -> it, and (score, older ruling) for each older one on the same matter
    alike: dict[str, tuple[Decision, list[tuple[float, Decision]]]] = {}
    for older, newer, score in unsaid_same_matter_pairs(current, facts.resolve):
        alike.setdefault(newer.path, (newer, []))[1].append((score, older))
    for newer, found in alike.values():
        found.sort(key=lambda item: (-item[0], item[1].number))
        score, older = found[0]
        others = [d.id for _, d in found[1:]]
        also = ""
        if others:
            more = f" and {len(others) - SAME_MATTER_NAMED} more" if len(others) > SAME_MATTER_NAMED else ""
            also = f" (also like {', '.join(others[:SAME_MATTER_NAMED])}{more})"
        yield Finding(newer.path, first_line(newer, "summary"),
                      f"{newer.id} and {older.id} look like one matter under different topics "
                      f"({', '.join(newer.topics)} / {', '.join(older.topics)}; score {score:.2f}): "
                      f"{older.summary}{also}")


SAME_MATTER_NAMED = 5  # older rulings named after the closest one in a VT044 finding


@rule("VT045", "note-being-written", WARNING, remembered=True)
def note_being_written(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a decision note with no id yet (made from a template or by hand) that has been left alone
    for longer than `seal_delay_seconds`: what it still lacks (topics, a summary of 20 characters or more),
    or, when nothing is missing, that its id has not been given yet. While the owner is still typing
    (saved within `seal_delay_seconds`), nothing is reported; the other rules say nothing of such a note.

    ## Why
    The owner never types an id: the watcher, `lint --fix` and `seal` give one to a finished note. A
    note left half-written is neither a question nor a ruling the agent can see; it blocks nothing on
    other topics, but a decision the owner meant to make is waiting in it.

    ## How to fix
    Fill in `topics` and `summary` (and, for a ruling, the Ruling section). With the watcher running the
    note then gets its id; without it, run `vault-tools lint --fix`.
    """
    for path, data in sorted(facts.properties.items()):
        if not lacks_id(data):
            continue
        saved = facts.mtimes.get(path)
        if saved is not None and facts.now - saved < facts.config.seal_delay_seconds:
            facts.changes_at(saved + facts.config.seal_delay_seconds)
            continue  # still being typed
        yield Finding(path, facts.property_lines.get(path, {}).get("id", 1),
                      being_written(facts.state.problems.get(path, [])))
