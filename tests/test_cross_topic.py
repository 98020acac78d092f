"""A ruling that supersedes one on another topic settles that topic too, however long the chain."""
from __future__ import annotations

import json

from .helpers import made_id, snapshot, vt_here

THURSDAY = "The newsletter goes out every Thursday morning."
CALENDAR = "All publishing follows the shared calendar; newsletter on Tuesdays."
EDITORIAL = "An editorial board owns the publishing calendar and every send date."


def _rule(vault, *args):
    done = vt_here("rule", *args, "--source", "chat", cwd=vault, counted=True)
    assert done.code == 0, done.err


def test_the_newsletter_day_story(vault):
    _rule(vault, "--topic", "newsletter-day", "--summary", THURSDAY, "--ruled-at", "2026-10-01T09:00:00")
    _rule(vault, "--topic", "publishing-schedule", "--summary", CALENDAR, "--ruled-at", "2026-10-02T09:00:00",
          "--supersedes", "D-0001", "--reason", "One calendar for every channel replaces D-0001's per-channel days.")

    looked = vt_here("lookup", "newsletter-day", cwd=vault, counted=True)
    assert looked.code == 0, looked.err
    lines = looked.out.splitlines()
    assert lines[0].startswith("D-0002") and CALENDAR in lines[0]
    assert "D-0002 superseded D-0001 on newsletter-day" in looked.out

    as_json = json.loads(vt_here("lookup", "newsletter-day", "--json", cwd=vault, counted=True).out)
    assert [item["id"] for item in as_json] == ["D-0002"]
    assert as_json[0]["settled_through"] == {
        "newsletter-day": {"topic": "newsletter-day", "chain": "D-0002 superseded D-0001 on newsletter-day"}}

    before = snapshot(vault)
    asked = vt_here("ask", "Which day should the newsletter go out?", "--topic", "newsletter-day", cwd=vault, counted=True)
    assert asked.code == 1 and "settled" in asked.err
    assert "D-0002" in asked.err and "D-0002 superseded D-0001 on newsletter-day" in asked.err
    assert snapshot(vault) == before


def test_a_three_step_chain_across_three_topics_settles_each(vault):
    _rule(vault, "--topic", "newsletter-day", "--summary", THURSDAY, "--ruled-at", "2026-10-01T09:00:00")
    _rule(vault, "--topic", "publishing-schedule", "--summary", CALENDAR, "--ruled-at", "2026-10-02T09:00:00",
          "--supersedes", "D-0001", "--reason", "One calendar for every channel replaces D-0001's per-channel days.")
    _rule(vault, "--topic", "editorial-board", "--summary", EDITORIAL, "--ruled-at", "2026-10-03T09:00:00",
          "--supersedes", "D-0002", "--reason", "The board now sets the calendar; D-0002 had no owner.")

    expected_chain = {
        "newsletter-day": "D-0003 superseded D-0002, which superseded D-0001 on newsletter-day",
        "publishing-schedule": "D-0003 superseded D-0002 on publishing-schedule",
        "editorial-board": None,
    }
    for topic, chain in expected_chain.items():
        found = json.loads(vt_here("lookup", topic, "--json", cwd=vault, counted=True).out)
        assert [item["id"] for item in found] == ["D-0003"], topic
        assert found[0]["settled_through"].get(topic, {}).get("chain") == chain
        # a near spelling of a topic taken over counts too
        asked = vt_here("ask", "Is this still an open matter for the owner?", "--topic", topic + "s", cwd=vault, counted=True)
        assert asked.code == 1 and "D-0003" in asked.err, (topic, asked.err)

    built = vt_here("build", cwd=vault, counted=True)
    assert built.code == 0, built.err
    log = (vault / "Pinned" / "Decisions log.md").read_text()
    line = next(line for line in log.splitlines() if "D-0003" in line and "also settles" in line)
    assert f"`newsletter-day` (from {made_id(vault, 'D-0001')})" in line
    assert f"`publishing-schedule` (from {made_id(vault, 'D-0002')})" in line


def test_a_retracted_successor_leaves_the_topic_open_again(vault):
    _rule(vault, "--topic", "newsletter-day", "--summary", THURSDAY)
    _rule(vault, "--topic", "publishing-schedule", "--summary", CALENDAR,
          "--supersedes", "D-0001", "--reason", "One calendar for every channel replaces D-0001's per-channel days.")
    retracted = vt_here("retract", "D-0002", "--reason", "Recorded in error: the owner was quoting another team.", cwd=vault, counted=True)
    assert retracted.code == 0, retracted.err
    looked = vt_here("lookup", "newsletter-day", cwd=vault, counted=True)
    assert " ruled " not in looked.out and "no current ruling" in looked.err  # only what ended there, with why
    asked = vt_here("ask", "Which day should the newsletter go out?", "--topic", "newsletter-day", cwd=vault, counted=True)
    assert asked.code == 0, asked.err
