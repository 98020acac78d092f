"""Pinned pages built from real temp vaults through the real CLI."""
from __future__ import annotations

import json
import re

from .helpers import config_file, decision, kept_dir, note_path, snapshot

TODAY = "2026-11-29"


def page(vault, name):
    return (vault / "Pinned" / f"{name}.md").read_text(encoding="utf-8")


def build(cli, *args):
    return cli("build", "--today", TODAY, *args)


def test_open_questions_due_dates_first_then_oldest_with_dates_not_ages(cli, vault):
    decision(vault, 1, "open", ("a-topic",), "Oldest question, asked in October?", asked_at="2026-10-31T10:00:00")
    decision(vault, 2, "open", ("b-topic",), "Due tomorrow, asked yesterday?", asked_at="2026-11-28T10:00:00",
             due="2026-11-30")
    decision(vault, 3, "open", ("c-topic",), "Overdue since last week, asked recently?", asked_at="2026-11-20T10:00:00",
             due="2026-11-22")
    decision(vault, 4, "open", ("d-topic",), "Newest question, asked this morning?", asked_at="2026-11-29T08:00:00",
             reask_reason="The printer changed its prices in November.")
    assert build(cli).code == 0
    text = page(vault, "Open questions")
    order = re.findall(r"\|(D-\d+)\]\]", text)
    assert order == ["D-0003", "D-0002", "D-0001", "D-0004"]
    assert "4 open questions, 2 with a due date." in text
    assert "· asked 2026-11-20 · due 2026-11-22\n" in text and "· due 2026-11-30\n" in text
    assert "· asked 2026-10-31\n" in text  # no asked_by on these notes
    assert not re.search(r"ago|overdue|stale|today|in \d+ day", text)  # nothing computed from the date
    assert "  - asked again because: The printer changed its prices in November." in text


def test_log_groups_by_first_topic_newest_first_and_gives_revisit_dates(cli, vault):
    decision(vault, 1, topics=("footer", "promotion"), summary="Older footer ruling from January.",
             ruled_at="2026-01-05T09:00:00")
    decision(vault, 2, topics=("footer",), summary="Newer footer ruling from March.", ruled_at="2026-03-05T09:00:00",
             revisit_by="2026-11-01", alongside='["[[D-0001 Note]]"]')
    decision(vault, 3, topics=("pricing",), summary="Pricing ruling from February.", ruled_at="2026-02-05T09:00:00")
    assert build(cli).code == 0
    text = page(vault, "Decisions log")
    footer = text.index("## footer")
    pricing = text.index("## pricing")
    assert footer < text.index("D-0002 Note|D-0002") < text.index("D-0001 Note|D-0001") < pricing
    assert "(also: `promotion`)" in text and text.count("|D-0001]]") == 1
    assert "Newer footer ruling from March. · revisit by 2026-11-01\n" in text and "passed" not in text
    assert "3 current rulings" in text


def test_superseded_chain_on_log_and_archive(cli, vault):
    reason = "reason: Readers complained about sign-off delays in November."
    decision(vault, 1, "superseded", ("reply-signoff",), "Yes: private replies need the owner's sign-off.",
             ruled_at="2026-06-01T09:00:00", superseded_by='"[[D-0002 Note]]"', reason="Sign-off slowed replies down too much.")
    decision(vault, 2, "superseded", ("reply-signoff",), "No: private replies go out without sign-off.",
             ruled_at="2026-09-01T09:00:00", supersedes='["[[D-0001 Note]]"]', superseded_by='"[[D-0003 Note]]"',
             reason="Readers complained about sign-off delays in November.")
    decision(vault, 3, "ruled", ("reply-signoff",), "Yes again: sign-off is back for private replies.",
             ruled_at="2026-11-20T09:00:00", supersedes='["[[D-0002 Note]]"]', reason=reason.split(": ", 1)[1])
    assert build(cli).code == 0
    log = page(vault, "Decisions log")
    assert ("[[D-0002 Note|D-0002]] superseded by [[D-0003 Note|D-0003]] on 2026-11-20 because: Readers complained "
            "about sign-off delays in November.") in log
    assert "[[D-0001 Note|D-0001]] superseded" not in log  # older than recent_days
    archive = page(vault, "Decisions archive")
    assert 'D0001["D-0001 · 2026-06-01"] -->|superseded by| D0002["D-0002 · 2026-09-01"]' in archive
    assert 'D0002["D-0002 · 2026-09-01"] -->|superseded by| D0003["D-0003 · 2026-11-20"]' in archive
    assert "## Superseded (2)" in archive


def test_proposed_revisions_have_their_own_section(cli, vault):
    decision(vault, 1, topics=("footer",), summary="Footers carry the newsletter link.")
    decision(vault, 2, "open", ("footer",), "Proposed revision of D-0001 typed in place.", asked_at="2026-11-28T10:00:00",
             supersedes='["[[D-0001 Note]]"]')
    assert build(cli).code == 0
    text = page(vault, "Open questions")
    section = text[text.index("## Proposed revisions"):]
    assert "[[D-0002 Note|D-0002]]" in section and "would replace [[D-0001 Note|D-0001]]" in section
    assert "## Open\n" not in text


def test_six_hundred_rulings_fit_the_budget_and_the_rest_is_archived(cli, vault):
    for number in range(1, 601):
        decision(vault, number, topics=(f"topic-{number % 40}",),
                 summary=f"Ruling number {number} says something long enough to matter here.")
    assert build(cli).code == 0
    loaded = page(vault, "Open questions") + page(vault, "Decisions log")
    assert loaded.count("\n") <= 200 and len(loaded.encode()) <= 25000
    log, archive = page(vault, "Decisions log"), page(vault, "Decisions archive")
    shown = set(re.findall(r"\|(D-\d+)\]\]", log))
    kept = set(re.findall(r"\|(D-\d+)\]\]", archive))
    left_out = 600 - len(shown)
    assert left_out > 0 and shown | kept == {f"D-{n:04d}" for n in range(1, 601)} and not shown & kept
    assert f"{left_out} older rulings not listed here (load budget): see [[Decisions archive]]." in log
    assert f"## Current rulings left off the log ({left_out})" in archive
    budget = json.loads(build(cli, "--json").out)["budget"]
    assert budget["rulings_left_out"] == left_out and budget["used_lines"] <= 200
    # The oldest are cut first.
    dates = lambda text: re.findall(r"\]\] (2026-\d\d-\d\d) ", text)  # noqa: E731
    assert min(dates(log)) >= max(dates(archive[archive.index("## Current"):archive.index("## Superseded")]))


def test_open_questions_over_budget_are_never_cut(cli, vault):
    for number in range(1, 251):
        decision(vault, number, "open", (f"topic-{number}",), f"Open question number {number}, still unanswered?",
                 asked_at="2026-11-01T10:00:00")
    result = build(cli)
    assert result.code == 1 and "open-question backlog is over budget" in result.err
    assert len(re.findall(r"\|D-\d+\]\]", page(vault, "Open questions"))) == 250


def test_second_build_writes_nothing_and_check_finds_no_stale_page(cli, vault):
    decision(vault, 1)
    first = build(cli)
    assert first.code == 0 and first.out.count("wrote") == 3
    before = snapshot(vault)
    second = build(cli)
    assert second.code == 0 and second.out == ""
    assert snapshot(vault) == before
    assert build(cli, "--check").code == 0
    decision(vault, 2)
    stale = build(cli, "--check")
    assert stale.code == 1 and "Pinned/Decisions log.md" in stale.err
    assert snapshot(vault) == {**before, "Decisions/D-0002 Note.md": (vault / "Decisions/D-0002 Note.md").read_bytes()}


def test_injection_like_summaries_stay_text(cli, vault):
    evil = "Use [[Secret note]] | #tag <script>x</script> %% hidden and $math$ ==hl== `code`"
    decision(vault, 1, topics=("footer",), summary=evil)
    assert build(cli).code == 0
    text = page(vault, "Decisions log")
    line = next(line for line in text.splitlines() if "D-0001" in line)
    assert "[[Secret note]]" not in line and "<script>" not in line and " #tag" not in line and "%%" not in line
    assert r"\[\[Secret note\]\] \| \#tag \<script\>" in line
    # Only the one real link to the note itself.
    assert re.findall(r"(?<!\\)\[\[", line) == ["[["]


def test_broken_notes_are_listed_as_problems(cli, vault):
    decision(vault, 1)
    (vault / "Decisions" / "D-0002 Bad.md").write_text("---\ntype: decision\nid: D-0002\nstatus: [\n---\n")
    assert build(cli).code == 0
    assert "## Problems" in page(vault, "Open questions") and "D-0002 Bad.md:4" in page(vault, "Open questions")


def test_context_prints_what_the_agent_loads(cli, vault):
    decision(vault, 1, topics=("footer",), summary="Footers carry the newsletter link.")
    decision(vault, 2, "open", ("pricing",), "What should the spring sale price be?", asked_at="2026-11-28T10:00:00")
    out = cli("context", "--today", TODAY).out
    assert "- D-0002 [pricing] What should the spring sale price be? · asked 2026-11-28 (1 day ago)\n" in out
    assert "## Settled topics (1): each has a current ruling\n\nfooter\n" in out
    assert "- D-0001 2026-01-02 [footer] Footers carry the newsletter link.\n" in out
    assert out.endswith("Left out: nothing. `vault-tools lookup TOPIC` shows the rulings on a topic and what they "
                        "replaced.\n")
    data = json.loads(cli("context", "--today", TODAY, "--json").out)
    assert [q["id"] for q in data["open_questions"]] == ["D-0002"]
    assert [r["id"] for r in data["rulings"]] == ["D-0001"] and data["topics"] == ["footer"]
    assert data["text"] == out and data["used"]["characters"] == len(out)


def test_a_page_without_a_generation_record_is_not_taken_as_hand_edited(cli, vault):
    decision(vault, 1)
    assert build(cli).code == 0
    (vault / ".vault-tools" / "cache" / "pages.json").unlink()  # as in a fresh clone
    decision(vault, 2)
    rebuilt = build(cli)
    assert rebuilt.code == 0 and "kept" not in rebuilt.err
    assert not kept_dir(vault).exists()


def test_build_keeps_a_copy_of_a_hand_edited_page(cli, vault):
    decision(vault, 1)
    build(cli)
    log = vault / "Pinned" / "Decisions log.md"
    log.write_text(log.read_text() + "\nMy own line.\n")
    decision(vault, 2)
    rebuilt = build(cli)
    kept_in = kept_dir(vault).relative_to(vault).as_posix()
    assert f"edited by hand; the edited copy is kept in {kept_in}/Decisions log " in rebuilt.err
    kept = list(kept_dir(vault).iterdir())
    assert len(kept) == 1 and kept[0].read_text().endswith("My own line.\n")


def test_recent_history_never_pushes_current_rulings_off_the_log(cli, vault):
    # (the two pages' embedded base views take 4 of the lines)
    config_file(vault).write_text("timezone: Asia/Tokyo\nbudget:\n  lines: 54\n")
    for n in range(8):
        decision(vault, 2 * n + 1, "superseded", (f"topic-{n}",), f"Old ruling on topic number {n} here.",
                 ruled_at="2026-11-01T09:00:00", superseded_by=f'"[[D-{2 * n + 2:04d} Note]]"',
                 reason="The owner changed course after a review.")
        decision(vault, 2 * n + 2, "ruled", (f"topic-{n}",), f"New ruling on topic number {n} here.",
                 ruled_at="2026-11-20T09:00:00", supersedes=f'["[[D-{2 * n + 1:04d} Note]]"]',
                 reason="The owner changed course after a review.")
    result = build(cli)
    assert result.code == 0, result.err
    log = page(vault, "Decisions log")
    assert all(f"|D-{2 * n + 2:04d}]] 2026-11-20" in log for n in range(8))  # every current ruling
    assert "more superseded rulings (load budget): see [[Decisions archive]]" in log
    agent = cli("context", "--today", TODAY).out
    assert agent.count("\n") <= 54


def test_context_is_exactly_within_the_budget(cli, vault):
    config_file(vault).write_text("timezone: Asia/Tokyo\nbudget:\n  lines: 30\n")
    for number in range(1, 40):
        decision(vault, number, topics=(f"topic-{number}",), summary=f"Ruling number {number} on its own topic.")
    assert build(cli).code == 0
    assert cli("context", "--today", TODAY).out.count("\n") <= 30


def test_readers_take_the_ledger_and_pending_supersessions_as_they_stand(cli, vault):
    assert cli("rule", "--topic", "pricing", "--summary", "Prices always include VAT for every reader.").code == 0
    assert cli("retract", "D-0001", "--reason", "It was recorded in error, says the owner.").code == 0
    path = note_path(vault, "D-0001")
    path.write_text(path.read_text().replace("status: retracted", "status: ruled"))  # a merge put it back
    assert [d for d in json.loads(cli("lookup", "pricing", "--json").out) if d["status"] == "ruled"] == []
    decision(vault, 2, "ruled", ("footer",), "Footers carry the newsletter link for now.")
    decision(vault, 3, "ruled", ("footer",), "Footers carry only the author bio from today.",
             supersedes='["[[D-0002 Note]]"]', reason="The owner banned promotion inside articles.")
    found = json.loads(cli("lookup", "footer", "--json").out)
    assert [item["id"] for item in found] == ["D-0003"] and [o["id"] for o in found[0]["chain"]] == ["D-0002"]
    assert [r["id"] for r in json.loads(cli("context", "--today", TODAY, "--json").out)["rulings"]] == ["D-0003"]


def test_lookup_and_context_say_when_a_decision_note_cannot_be_read(cli, vault):
    (vault / "Decisions").mkdir()
    (vault / "Decisions" / "D-0001 Prices.md").write_text("---\ntype: decision\nid: D-0001\nstatus: [ruled\n---\n")
    looked = cli("lookup", "pricing", "--json")
    assert looked.code == 3 and json.loads(looked.out) == [] and "D-0001 Prices.md:4" in looked.err
    problems = json.loads(cli("context", "--json").out)["problems"]
    assert problems[0]["path"] == "Decisions/D-0001 Prices.md" and problems[0]["line"] == 4


def test_the_lines_made_again_for_the_same_rulings_are_those_made_afresh():
    """A long-running process makes each ruling's line once and takes it again for the very same ruling; what else
    the line says of it (a newer ruling on its topic that says nothing of it, the zone) is made afresh."""
    import datetime as dt
    from zoneinfo import ZoneInfo

    from vault_tools import decision_words, pages, ruling_graph
    from vault_tools.links import LinkResolver
    from vault_tools.model import build_decision

    def made(number: int, topics: list[str], summary: str, ruled_at: str) -> object:
        found, _ = build_decision({"type": "decision", "id": f"D-{number:04d}", "status": "ruled", "topics": topics,
                                   "summary": summary, "ruled_at": ruled_at, "ruled_by": "owner"},
                                  path=f"Decisions/D-{number:04d} Ruling.md")
        return found

    older = made(1, ["article-footer"], "Footers carry the unsubscribe link.", "2026-03-01T23:30:00Z")
    newer = made(2, ["article-footer"], "Footers carry the author's name.", "2026-03-02T10:00:00Z")
    other = made(3, ["pricing"], "Prices are shown with tax.", "2026-03-03T10:00:00Z")

    def texts(decisions: list, tz: dt.tzinfo, fresh: bool) -> dict[str, str]:
        if fresh:
            pages._LINES.clear()
            pages._LAST_ARCHIVE.clear()
            decision_words._LAST_UNSAID.clear()
            ruling_graph._LAST_PAIRING.clear()
        return pages.build_pages(decisions, LinkResolver(decisions), tz, pages.Settings()).texts

    utc, tokyo = dt.UTC, ZoneInfo("Asia/Tokyo")
    alone = texts([older, other], utc, fresh=True)
    both = texts([older, newer, other], utc, fresh=False)
    assert both == texts([older, newer, other], utc, fresh=True) != alone  # the older ruling's line says more now
    assert texts([older, other], utc, fresh=False) == alone
    assert texts([older, other], tokyo, fresh=False) == texts([older, other], tokyo, fresh=True) != alone  # its day


def test_the_archive_made_again_from_the_very_same_decisions_is_the_one_made_afresh():
    """A process making the pages again (the resident process after a question) takes the archive it made last
    when given the very same decisions; any other decision object, even one equal to the last but for what
    only readers add (a conflict between clones, a note gone), another zone or what the lines say, makes it
    afresh."""
    import dataclasses
    import datetime as dt
    from zoneinfo import ZoneInfo

    from vault_tools import pages
    from vault_tools.links import LinkResolver
    from vault_tools.model import build_decision

    def made(number: int, status: str = "ruled", **more: object) -> object:
        found, _ = build_decision({"type": "decision", "id": f"D-{number:04d}", "status": status,
                                   "topics": [f"topic-{number % 7}"], "summary": f"Ruling {number} says this.",
                                   "ruled_at": f"2026-03-{1 + number % 27:02d}T10:00:00Z", "ruled_by": "owner",
                                   **more}, path=f"Decisions/D-{number:04d} Ruling.md")
        return found

    rulings = [made(number) for number in range(1, 60)] + [made(60, "withdrawn", reason="Not needed any more.")]
    small = pages.Settings(budget_lines=40, budget_bytes=4000)  # most current rulings left off the log

    def archive(decisions: list, tz: dt.tzinfo = dt.UTC, fresh: bool = False) -> str:
        if fresh:
            pages._LINES.clear()
            pages._LAST_ARCHIVE.clear()
        return pages.build_pages(decisions, LinkResolver(decisions), tz, small).texts[pages.ARCHIVE]

    first = archive(rulings, fresh=True)
    assert "Current rulings left off the log" in first and "D-0003" in first
    assert archive(rulings) == first
    question = made(61, "open")
    assert archive([*rulings, question]) == first  # a question changes no line of the archive
    in_conflict = [*rulings[:2], dataclasses.replace(rulings[2], conflict="ruled here, withdrawn there"),
                   *rulings[3:]]
    assert in_conflict[2] == rulings[2]  # equal as decisions: the conflict is what readers add
    marked = archive(in_conflict)
    assert marked == archive(in_conflict, fresh=True) != first and pages.IN_CONFLICT in marked
    assert archive(rulings, ZoneInfo("Pacific/Kiritimati")) == archive(rulings, ZoneInfo("Pacific/Kiritimati"),
                                                                         fresh=True)
    assert archive(rulings) == first
