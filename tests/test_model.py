from __future__ import annotations

import datetime as dt

import pytest

from vault_tools.links import link_target
from vault_tools.model import Decision, Status, build_decision, near_field_name, note_title
from vault_tools.topics import topics_match


@pytest.mark.parametrize("a,b", [
    ("article-footer", "article-footers"), ("article-footer", "footer-article"),
    ("article-footer", "artcle-footer"), ("category", "categories"), ("reply-policy", "replies-policy"),
    ("hosting-image", "ohsting-image"),  # the typo moves the word past the other when sorted
])
def test_near_identical_topics_match(a, b):
    assert topics_match(a, b) and topics_match(b, a)


@pytest.mark.parametrize("a,b", [("article-footer", "article-header"), ("seo", "sea"), ("pricing", "privacy"), ("topic-a", "topic-b"), ("plan-2025", "plan-2026")])
def test_different_topics_do_not_match(a, b):
    assert not topics_match(a, b)


def test_link_targets():
    assert link_target("[[Decisions/D-0003 Old rule#Ruling|old]]") == "D-0003 Old rule"
    assert link_target("D-0003") == "D-0003"
    assert link_target("[[D-0003 Old rule.md]]") == "D-0003 Old rule"


@pytest.mark.parametrize("summary", ['../../etc/passwd: "x" <y> | z? #1 ^b [c]', "..", "a" * 300, "CON\\*"])
def test_file_names_are_safe_everywhere(summary):
    title = note_title("D-0001", summary)
    assert title.startswith("D-0001")
    assert not set(title) & set('*"\\/<>:|?#^[]')
    assert len(title) <= 7 + 60


def test_typo_fields_are_recognised():
    assert near_field_name("supercedes") == "supersedes"
    assert near_field_name("ruledAt") == "ruled_at"
    assert near_field_name("tags") is None and near_field_name("status") is None


def test_validation_names_each_problem():
    decision, problems = build_decision(
        {"type": "decision", "id": "D-0001", "status": "ruled", "topics": ["Article Footer"], "summary": "short"},
        path="x.md", key_lines={"topics": 5, "summary": 6})
    found = {(p.field, p.line) for p in problems}
    assert ("topics", 5) in found and ("summary", 6) in found and ("ruled_at", None) in found
    assert decision is not None and decision.status is Status.RULED


def test_unknown_status_gives_no_decision():
    decision, problems = build_decision({"type": "decision", "id": "D-0001", "status": "accepted",
                                         "topics": ["a"], "summary": "x" * 20}, path="x.md")
    assert decision is None and "unknown status 'accepted'" in problems[0].message


def test_topic_index_finds_what_pairwise_matching_finds():
    """The index is an optimisation: on a realistic set of topics it must agree with comparing every pair."""
    import random

    from vault_tools.topics import TopicIndex
    rng = random.Random(7)
    words = ["article", "footer", "newsletter", "author", "promotion", "reader", "reply", "pricing", "sale", "draft", "archive"]
    topics = {f"{rng.choice(words)}-{rng.choice(words)}" for _ in range(300)}
    topics |= {"article-footers", "footer-article", "artcle-footer", "articlefooter", "pricing-sales", "raeder-reply",
               "hosting-image", "ohsting-image",
               # at the five-letter edge: a typo counts in "reply" (substituted, swapped), never in "sale"
               "reoly-archive", "rpely-archive", "reply-archive", "sael-draft", "salr-draft", "sale-draft", "drat-sale"}
    ordered = sorted(topics)
    index = TopicIndex()
    for topic in ordered:
        index.add(topic)
    for topic in ordered:
        assert index.matches(topic) == [known for known in ordered if topics_match(topic, known)], topic


def test_the_repeated_hour_of_a_clock_set_back_is_two_instants_however_often_asked():
    """01:30 on the night New York sets its clocks back happens twice (`fold` tells which): the times a
    process takes during that hour (as `local_now` gives them) stay apart when worked out again and again."""
    import datetime as dt
    from zoneinfo import ZoneInfo

    from vault_tools.dates import instant

    zone = ZoneInfo("America/New_York")
    first, second = dt.datetime(2026, 11, 1, 1, 30), dt.datetime(2026, 11, 1, 1, 30, fold=1)
    for _ in range(2):
        assert instant(first, zone) == dt.datetime(2026, 11, 1, 5, 30, tzinfo=dt.UTC)
        assert instant(second, zone) == dt.datetime(2026, 11, 1, 6, 30, tzinfo=dt.UTC)
    assert instant(dt.date(2026, 11, 1), zone) == dt.datetime(2026, 11, 1, 4, 0, tzinfo=dt.UTC)


def test_the_ledger_stamp_of_each_moment_is_its_own_second_in_utc():
    """Stamps are remembered for the second just stamped (a reconcile stamps thousands in one second): a
    moment in another second (either side of 1970, or far ahead), or the same wall-clock time in the repeated
    hour, still gets its own; a naive time is the machine's local time."""
    import datetime as dt
    from zoneinfo import ZoneInfo

    from vault_tools.dates import utc_stamp

    zone = ZoneInfo("America/New_York")
    moments = [
        (dt.datetime(2026, 11, 1, 1, 30, 0, 100, tzinfo=zone), "2026-11-01T05:30:00Z"),
        (dt.datetime(2026, 11, 1, 1, 30, 0, 999_999, tzinfo=zone), "2026-11-01T05:30:00Z"),
        (dt.datetime(2026, 11, 1, 1, 30, 0, fold=1, tzinfo=zone), "2026-11-01T06:30:00Z"),
        (dt.datetime(2026, 11, 1, 6, 30, 1, tzinfo=dt.UTC), "2026-11-01T06:30:01Z"),
        (dt.datetime(2026, 11, 1, 6, 30, 0, 500_000, tzinfo=dt.UTC), "2026-11-01T06:30:00Z"),
        (dt.datetime(1970, 1, 1, 0, 0, 0, 500_000, tzinfo=dt.UTC), "1970-01-01T00:00:00Z"),
        (dt.datetime(1969, 12, 31, 23, 59, 59, 500_000, tzinfo=dt.UTC), "1969-12-31T23:59:59Z"),
        (dt.datetime(2600, 1, 1, 0, 0, 0, 999_999, tzinfo=dt.UTC), "2600-01-01T00:00:00Z"),
        (dt.datetime(2026, 11, 1, 1, 30), dt.datetime(2026, 11, 1, 1, 30).astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")),
    ]
    for _ in range(2):
        assert [utc_stamp(moment) for moment, _ in moments] == [stamp for _, stamp in moments]


def test_unresolved_overlaps_are_every_pair_of_current_rulings_on_matching_topics_neither_relates():
    """Which pairs the pages and lint call unresolved, and in what order, against comparing every pair."""
    import datetime as dt
    import random

    from vault_tools.links import LinkResolver
    from vault_tools.model import newest_first_key
    from vault_tools.ruling_graph import unresolved_overlaps
    rng = random.Random(11)
    topics = ["article-footer", "article-footers", "footer-article", "artcle-footer", "pricing", "pricing-sales",
              "reader-reply", "raeder-reply", "sale-draft", "sael-draft", "newsletter", "archive-policy"]
    rulings = []
    for number in range(1, 90):
        earlier = [d.id for d in rulings]
        data = {"type": "decision", "id": f"D-{number:04d}", "status": "ruled",
                "topics": rng.sample(topics, rng.choice([1, 1, 2])), "summary": f"ruling number {number} on it",
                "ruled_at": f"2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}", "ruled_by": "owner",
                "alongside": rng.sample(earlier, min(len(earlier), rng.choice([0, 0, 1, 3])))}
        decision, _ = build_decision(data, path=f"D-{number:04d} Ruling.md")
        assert decision is not None
        rulings.append(decision)
    tz = dt.UTC
    related = {frozenset((d.id, other)) for d in rulings for other in d.alongside}
    by_age = sorted(rulings, key=lambda d: newest_first_key(d, tz))
    expected = []
    for position, newer in enumerate(by_age):
        for older in by_age[:position]:
            if frozenset((newer.id, older.id)) in related:
                continue
            shared = [topic for topic in sorted(newer.topics) if any(topics_match(topic, t) for t in older.topics)]
            if shared:
                expected.append((newer.id, older.id, shared[0]))
    by_id = {d.id: d for d in rulings}
    expected.sort(key=lambda pair: (newest_first_key(by_id[pair[0]], tz), newest_first_key(by_id[pair[1]], tz)),
                  reverse=True)
    found = [(o.newer.id, o.older.id, o.topic) for o in unresolved_overlaps(rulings, LinkResolver(rulings), tz)]
    assert len(found) > 50 and found == expected


def test_a_ruling_added_as_the_newest_is_paired_alone_and_the_pairs_are_those_worked_out_afresh():
    """A long-running process given the rulings it paired last and one more, the newest (the pages after a
    ruling), pairs that one alone; the pairs are those a fresh pairing finds, also when the new one is not the
    newest, repeats an id, stands beside all or is said to stand beside an earlier one later."""
    import datetime as dt
    import random

    from vault_tools import ruling_graph
    from vault_tools.links import LinkResolver
    from vault_tools.ruling_graph import unresolved_overlaps
    rng = random.Random(7)
    topics = ["article-footer", "article-footers", "footer-article", "artcle-footer", "pricing", "pricing-sales",
              "reader-reply", "raeder-reply", "sale-draft", "newsletter", "archive-policy", "archive-policies"]
    tz = dt.UTC

    def made(number: int, day: int, *, number_as: int | None = None, path: str = "", **more) -> Decision:
        earlier = [f"D-{n:04d}" for n in range(1, number)]
        data = {"type": "decision", "id": f"D-{number_as or number:04d}", "status": "ruled",
                "topics": rng.sample(topics, rng.choice([1, 1, 2])), "summary": f"ruling number {number} on it",
                "ruled_at": (dt.date(2026, 1, 1) + dt.timedelta(days=day)).isoformat(), "ruled_by": "owner",
                "alongside": [f"[[{n}]]" for n in rng.sample(earlier, min(len(earlier), rng.choice([0, 0, 1, 2])))],
                **more}
        decision, _ = build_decision(data, path=path or f"Decisions/D-{number:04d} Ruling.md")
        assert decision is not None
        return decision

    def pairs(decisions: list[Decision]) -> list[tuple[str, str, str]]:
        return [(o.newer.id, o.older.id, o.topic) for o in unresolved_overlaps(decisions, LinkResolver(decisions), tz)]

    def fresh(decisions: list[Decision]) -> list[tuple[str, str, str]]:
        ruling_graph._LAST_PAIRING.clear()
        return pairs(decisions)

    rulings = [made(number, number) for number in range(1, 40)]
    assert fresh(rulings)
    added_alone = 0
    for number in range(40, 70):
        before = ruling_graph._LAST_PAIRING[0]
        shape = number % 6
        if shape == 0:  # ruled before the newest: paired afresh
            ruling = made(number, rng.randint(1, 38))
        elif shape == 1:  # an id another ruling has: paired afresh
            ruling = made(number, number, number_as=rng.randint(1, number - 1))
        elif shape == 2:
            ruling = made(number, number, alongside_all=True)
        else:
            ruling = made(number, number)
        rulings.append(ruling)
        found = pairs(rulings)
        added_alone += ruling_graph._LAST_PAIRING[0] is before
        assert found == fresh(rulings), number
    assert added_alone >= 15  # each added as the newest, under an id of its own, was paired alone
    # an earlier ruling now said to stand beside another: the links among the earlier ones changed, paired afresh
    rulings[5] = made(6, 6, alongside=[f"[[{ruling.id}]]" for ruling in rulings[:5]])
    assert pairs(rulings) == fresh(rulings)
    # a link of an earlier ruling that named one note, ambiguous once the new one comes: those two are paired now
    rulings += [made(70, 70, topics=["pricing"], alongside=[], path="Decisions/Footers.md"),
                made(71, 71, topics=["pricing"], alongside=["[[footers]]"])]
    assert ("D-0071", "D-0070", "pricing") not in pairs(rulings)
    rulings.append(made(72, 72, topics=["newsletter"], alongside=[], path="Decisions/FOOTERS.md"))
    found = pairs(rulings)
    assert ("D-0071", "D-0070", "pricing") in found and found == fresh(rulings)


def test_the_pairs_taken_again_for_the_same_rulings_are_those_worked_out_afresh():
    """A long-running process takes the last pairs again when given the very same current rulings (the pages after
    a question); any change to them, to a ruling a chain reaches, or to how a link resolves, pairs them afresh."""
    from vault_tools import decision_words, ruling_graph
    from vault_tools.decision_words import unsaid_same_matter_pairs
    from vault_tools.links import LinkResolver
    from vault_tools.ruling_graph import unresolved_overlaps

    def made(number: int, topics: list[str], summary: str, path: str = "", **more) -> Decision:
        data = {"type": "decision", "id": f"D-{number:04d}", "status": "ruled", "topics": topics, "summary": summary,
                "ruled_at": f"2026-03-{number:02d}", "ruled_by": "owner", **more}
        decision, _ = build_decision(data, path=path or f"Decisions/D-{number:04d} Ruling.md")
        assert decision is not None
        return decision

    old = made(1, ["archive-policy"], "Old issues stay online forever.", status="superseded")
    rulings = [old, made(2, ["article-footer"], "Footers carry the unsubscribe link."),
               made(3, ["email-footer"], "Footers carry the unsubscribe link in every email.",
                    alongside=["[[Unsubscribe link]]"]),  # no note of that name yet
               made(4, ["article-footers"], "Footers name the author.", alongside=["[[Unsubscribe link]]"]),
               made(5, ["archive-policy-new"], "Old issues move to the archive.", supersedes=["[[D-0001]]"]),
               made(6, ["archive-policy"], "Archive pages show the year.")]
    question = made(7, ["sponsor-slot"], "May sponsors choose the slot?", status="open")
    tz = dt.UTC

    def fresh(decisions: list[Decision]) -> tuple[list, list]:
        decision_words._LAST_UNSAID.clear()
        ruling_graph._LAST_PAIRING.clear()
        return answers(decisions)

    def answers(decisions: list[Decision]) -> tuple[list, list]:
        resolve = LinkResolver(decisions)
        return ([(o.newer, o.older, o.topic) for o in unresolved_overlaps(decisions, resolve, tz)],
                [(a, b, round(score, 6)) for a, b, score in unsaid_same_matter_pairs(decisions, resolve)])

    first = fresh(rulings)
    assert first[0] and first[1]  # pairs of both kinds: D-0006 takes over D-0005's topic; D-0003 says D-0002's words
    assert answers([*rulings, question]) == first  # kept: the same rulings (a question is none)
    newer, older, _ = answers(rulings)[0][0]
    assert newer is first[0][0][0] and older is first[0][0][1]  # this call's very decisions
    moved = [made(1, ["reader-reply"], "Old issues stay online forever.", status="superseded"), *rulings[1:]]
    assert answers(moved) == fresh(moved) != first  # a ruling the chain reaches says other topics
    named = [*rulings[:3], made(4, ["article-footers"], "Footers name the author.", alongside=["[[D-0002]]"]),
             *rulings[4:]]  # D-0004 now stands beside D-0002
    assert answers(named) == fresh(named) != first
    answers(rulings)
    # The very same rulings, and a note (another id D-0002 lint reports) that D-0003's and D-0004's link now names
    linked = [*rulings, made(2, ["article-footer"], "Do footers link out?", path="Decisions/Unsubscribe link.md",
                             status="open")]
    assert answers(linked) == fresh(linked) != first
    answers(rulings)
    same_words = [*rulings[:2], made(3, ["email-footer"], "Footers carry the unsubscribe link in every email.",
                                     alongside=["[[Unsubscribe link]]"]),
                  *rulings[3:]]  # another object saying the same: paired again, the same pairs
    assert answers(same_words) == fresh(same_words)


@pytest.mark.parametrize("value, expected", [(True, True), ("yes", True), (False, False), ("no", False),
                                             ("maybe", None), (["x"], None), (3, None)])
def test_alongside_all_is_a_checkbox_and_anything_else_is_named_as_wrong(value, expected):
    """`alongside_all` as Obsidian's Properties panel writes a checkbox (or typed by hand as yes/no); another
    value is a problem naming the property, never taken as either."""
    data = {"type": "decision", "id": "D-0001", "status": "ruled", "topics": ["expenses"],
            "summary": "Expense claim 12 approved: a train ticket.", "ruled_at": "2026-07-17T08:30:00",
            "ruled_by": "owner", "alongside_all": value}
    decision, problems = build_decision(data, path="Decisions/D-0001.md")
    if expected is None:
        assert any(p.field == "alongside_all" and "must be a checkbox" in p.message and p.code == "VT003"
                   for p in problems), problems
    else:
        assert problems == [] and decision is not None and decision.alongside_all is expected
