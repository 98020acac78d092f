"""`vault-tools stats`: every figure of a vault whose history is known, and the Stats page."""
from __future__ import annotations

import json

import pytest

from tests.helpers import ask_at, kept_dir, made_id, snapshot

TODAY = "2026-08-01"


@pytest.fixture
def history(vault, cli):
    """A vault with a known history (times in the vault's zone, Asia/Tokyo):

    D-0001 asked 07-01 09:00 on approvals, ruled 10:30 (1.5 h); superseded by D-0004
    D-0002 asked 07-02 09:00 on article-footer, ruled 07-04 09:00 (48 h)
    D-0003 ruled directly 07-03 on deploy-day, then retracted
    D-0004 asked again 07-08 09:00 on approvals (a week after D-0001: weekly), ruled 09:06 (0.1 h); superseded by D-0005
    D-0005 asked again 07-20 09:00 on approvals (12 days after D-0004), ruled 07-23 09:00 (72 h)
    D-0006 asked 07-05 by alice on publishing, withdrawn
    D-0007 asked 07-10 on newsletter, open (22 days on 08-01)
    D-0008 asked 07-25 on colour-scheme, open (7 days)
    D-0009 ruled directly 07-26 by bob on article-footers (a near spelling of article-footer), alongside D-0002
    """
    def ok(*args: str) -> None:
        result = cli(*args)
        assert result.code == 0, result.err

    ask_at(vault, "2026-07-01T09:00:00", "Who approves the weekly release notes?", "approvals")
    ok("rule", "D-0001", "--summary", "The editor approves the weekly release notes.", "--ruled-at", "2026-07-01T10:30:00")
    ask_at(vault, "2026-07-02T09:00:00", "What goes into every article footer?", "article-footer")
    ok("rule", "--summary", "Deploys may happen on any weekday but Friday.", "--topic", "deploy-day",
       "--ruled-at", "2026-07-03T12:00:00")
    ok("rule", "D-0002", "--summary", "Every footer carries the newsletter link.", "--ruled-at", "2026-07-04T09:00:00")
    ask_at(vault, "2026-07-08T09:00:00", "Who approves this week's release notes?", "approvals",
           reask="The editor is away this week, someone else must approve.")
    ok("rule", "D-0004", "--summary", "The deputy editor approves while the editor is away.",
       "--ruled-at", "2026-07-08T09:06:00", "--supersedes", "D-0001", "--reason", "The editor is away for a while now.")
    ask_at(vault, "2026-07-20T09:00:00", "Who approves release notes from now on?", "approvals",
           reask="The editor is back and the deputy has left the team.")
    ok("rule", "D-0005", "--summary", "The editor approves release notes again, as before.",
       "--ruled-at", "2026-07-23T09:00:00", "--supersedes", "D-0004", "--reason", "The editor is back and the deputy left.")
    ask_at(vault, "2026-07-05T09:00:00", "Should we publish on weekends at all?", "publishing", by="alice")
    ok("withdraw", "D-0006", "--reason", "Nobody needs weekend publishing any more.")
    ask_at(vault, "2026-07-10T09:00:00", "Which newsletter tool should we move to?", "newsletter")
    ok("retract", "D-0003", "--reason", "Recorded by mistake; deploy days were never restricted.")
    ask_at(vault, "2026-07-25T09:00:00", "Which colour scheme should the site use?", "colour-scheme")
    ok("rule", "--summary", "Article footers also show the author bio.", "--topic", "article-footers",
       "--ruled-at", "2026-07-26T09:00:00", "--alongside", "D-0002", "--by", "bob")
    return vault


def test_every_figure_of_a_known_history(history, cli):
    result = cli("stats", "--json", "--today", TODAY)
    assert result.code == 0, result.err
    figures = json.loads(result.out)
    assert figures["rulings"] == {"total": 6, "current": 3, "superseded": 2, "retracted": 1,
                                  "answering_a_question": 4, "direct": 2}
    assert figures["questions"] == {"total": 7, "answered": 4, "withdrawn": 1, "open": 2}
    assert figures["time_to_answer_hours"] == {"count": 4, "median": 24.75, "min": 0.1, "max": 72.0}
    assert figures["answer_buckets"] == {"under 1 hour": 1, "1 to 24 hours": 1, "1 to 7 days": 2, "over 7 days": 0}
    assert figures["oldest_open"] == {"id": "D-0007", "summary": "Which newsletter tool should we move to?",
                                      "asked_on": "2026-07-10", "age_days": 22}
    assert [(q["id"], q["age_days"]) for q in figures["open_questions"]] == [("D-0007", 22), ("D-0008", 7)]
    assert figures["reasked_with_reason"] == 2
    assert figures["reasked_weekly"] == 1
    assert figures["rulings_sharing_a_topic_with_an_earlier_ruling"] == 3  # D-0004, D-0005, D-0009
    assert figures["supersessions"] == 2
    assert figures["topics"] == [
        {"topic": "approvals", "questions": 3, "rulings": 3, "current": 1},
        {"topic": "article-footer", "questions": 1, "rulings": 1, "current": 1},
        {"topic": "article-footers", "questions": 0, "rulings": 1, "current": 1},
        {"topic": "colour-scheme", "questions": 1, "rulings": 0, "current": 0},
        {"topic": "deploy-day", "questions": 0, "rulings": 1, "current": 0},
        {"topic": "newsletter", "questions": 1, "rulings": 0, "current": 0},
        {"topic": "publishing", "questions": 1, "rulings": 0, "current": 0},
    ]
    assert figures["recorded_by"] == {
        "agent": {"asked": 6},
        "alice": {"asked": 1},
        "bob": {"ruled": 1},
        "owner": {"retracted": 1, "ruled": 5, "superseded": 2, "withdrawn": 1},
    }
    assert figures["weeks"] == [
        {"week_of": "2026-06-29", "asked": 3, "answered": 2},
        {"week_of": "2026-07-06", "asked": 2, "answered": 1},
        {"week_of": "2026-07-13", "asked": 0, "answered": 0},
        {"week_of": "2026-07-20", "asked": 2, "answered": 1},
    ]


def test_since_counts_only_what_was_asked_or_ruled_from_that_day(history, cli):
    figures = json.loads(cli("stats", "--json", "--since", "2026-07-08", "--today", TODAY).out)
    assert figures["since"] == "2026-07-08"
    assert figures["questions"] == {"total": 4, "answered": 2, "withdrawn": 0, "open": 2}
    assert figures["rulings"] == {"total": 3, "current": 2, "superseded": 1, "retracted": 0,
                                  "answering_a_question": 2, "direct": 1}
    assert figures["time_to_answer_hours"] == {"count": 2, "median": 36.05, "min": 0.1, "max": 72.0}
    assert figures["rulings_sharing_a_topic_with_an_earlier_ruling"] == 3  # earlier rulings before 07-08 still count
    assert figures["supersessions"] == 2
    assert (figures["reasked_with_reason"], figures["reasked_weekly"]) == (2, 1)


def test_text_output_names_the_headline_figures(history, cli):
    result = cli("stats", "--today", TODAY)
    assert result.code == 0
    lines = result.out.splitlines()
    assert lines[0] == ("rulings: 6 (3 current, 2 superseded, 1 retracted; 4 answering a question, 2 given directly)")
    assert lines[1] == "questions: 7 (4 answered, 1 withdrawn, 2 open)"
    assert lines[2] == ("time to answer: median 24.8 h, fastest 0.1 h, slowest 3.0 days "
                        "(4 answered with both times known)")
    assert lines[3] == ("oldest open question: D-0007, asked 2026-07-10, open 22 days: "
                        "Which newsletter tool should we move to?")
    assert lines[4] == "asked again on a settled topic with a reason: 2 (1 repeating weekly)"
    assert "  bob: ruled 1" in lines


def test_stats_writes_nothing_unless_asked(history, cli):
    before = snapshot(history)
    assert cli("stats", "--today", TODAY).code == 0
    assert snapshot(history) == before


def test_stats_page_charts_the_figures_and_is_never_stale(history, cli):
    assert cli("stats", "--write", "--today", TODAY).code == 0
    page = (history / "Pinned" / "Stats.md").read_text(encoding="utf-8")
    assert "Figures as of 2026-08-01." in page
    assert "```mermaid\npie title Questions by outcome\n    \"Answered\" : 4\n    \"Withdrawn\" : 1\n    \"Open\" : 2\n```" in page
    assert "pie title Time to answer" in page and '"1 to 7 days" : 2' in page
    assert "gantt" in page and f"    {made_id(history, 'D-0007')} asked 2026-07-10 : 2026-07-10, 22d" in page
    assert "| 2026-06-29 | 3 | ███ | 2 | ██ |" in page
    assert "| `approvals` | 3 | 3 | 1 |" in page
    # Not one of the agent's pages: an unchanged vault is current on a later day, page or no page.
    assert cli("build", "--check").code == 0
    assert cli("lint", "--today", "2026-09-30").code in (0, 1)
    assert "Stats.md" not in cli("lint", "--today", "2026-09-30").out
    # The same day again: the same bytes; a later day: the page says which day it counts to.
    before = snapshot(history)
    assert cli("stats", "--write", "--today", TODAY).code == 0
    assert snapshot(history) == before
    assert cli("stats", "--write", "--today", "2026-08-08").code == 0
    assert f"{made_id(history, 'D-0007')} asked 2026-07-10 : 2026-07-10, 29d" in (history / "Pinned" / "Stats.md").read_text(encoding="utf-8")


def test_a_stats_page_edited_by_hand_is_kept(history, cli):
    page = history / "Pinned" / "Stats.md"
    page.parent.mkdir(exist_ok=True)
    page.write_text("my own notes about the figures\n", encoding="utf-8")
    result = cli("stats", "--write", "--today", TODAY)
    assert result.code == 0 and "edited copy is kept" in result.err
    kept = list(kept_dir(history).glob("Stats *.md"))
    assert kept and kept[0].read_text(encoding="utf-8") == "my own notes about the figures\n"


def test_an_empty_vault_has_zero_figures(vault, cli):
    figures = json.loads(cli("stats", "--json", "--today", TODAY).out)
    assert figures["questions"] == {"total": 0, "answered": 0, "withdrawn": 0, "open": 0}
    assert figures["time_to_answer_hours"] is None and figures["oldest_open"] is None
    assert cli("stats", "--write", "--today", TODAY).code == 0


def test_a_bad_since_is_a_usage_error(vault, cli):
    result = cli("stats", "--since", "last week")
    assert result.code == 2 and "--since" in result.err
