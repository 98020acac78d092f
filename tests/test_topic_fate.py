"""What became of a topic, however it ended: `lookup` says it, and `ask` treats a withdrawn question as settled."""
from __future__ import annotations

import json

QUESTION = "Should the agent cross-post new articles to Mastodon?"
WITHDRAWN = "The owner left Mastodon, so there is nothing to cross-post to."
RETRACTED = "Recorded in error: the owner never decided on analytics."


def test_a_withdrawn_question_is_told_by_lookup_and_refuses_asking_again_until_something_changed(cli):
    assert cli("ask", QUESTION, "--topic", "mastodon-crosspost").code == 0
    assert cli("withdraw", "D-0001", "--reason", WITHDRAWN).code == 0
    looked = cli("lookup", "mastodon-crosspost")
    assert looked.code == 0 and "withdrawn" in looked.out and WITHDRAWN in looked.out
    assert [d["status"] for d in json.loads(cli("lookup", "mastodon-crosspost", "--json").out)] == ["withdrawn"]
    again = cli("ask", "Should we post new articles on Mastodon too?", "--topic", "mastodon-crosspost")
    assert again.code == 1 and "D-0001" in again.err and WITHDRAWN in again.err and "--reask-reason" in again.err
    reasked = cli("ask", "Should we post new articles on Mastodon too?", "--topic", "mastodon-crosspost",
                  "--reask-reason", "The owner is back on Mastodon since December.")
    assert reasked.code == 0, reasked.err


def test_a_retracted_ruling_is_told_by_lookup_and_by_ask(cli):
    assert cli("rule", "--topic", "analytics", "--summary", "No third-party tracker on the blog; page counts only.",
               "--source", "chat").code == 0
    assert cli("retract", "D-0001", "--reason", RETRACTED).code == 0
    looked = cli("lookup", "analytics")
    assert looked.code == 0 and "retracted" in looked.out and RETRACTED in looked.out
    asked = cli("ask", "Which page-count tool should the blog use?", "--topic", "analytics")
    assert asked.code == 0 and "D-0001 on this topic was retracted" in asked.err and RETRACTED in asked.err


def test_lookup_of_a_topic_nothing_was_ever_on_says_so_and_exits_1(cli):
    done = cli("lookup", "podcast-sponsors")
    assert done.code == 1 and "no topic matches 'podcast-sponsors'" in done.err


def test_show_says_when_a_ruling_was_recorded_later_than_it_was_ruled(cli):
    assert cli("rule", "--topic", "newsletter-day", "--summary", "The newsletter goes out every Thursday morning.",
               "--source", "chat", "--ruled-at", "2026-06-03T09:00:00").code == 0
    shown = cli("show", "D-0001").out
    assert "  ruled 2026-06-03, recorded 20" in shown
    assert cli("rule", "--topic", "article-footer", "--summary", "Footers carry only the author bio from now on.",
               "--source", "chat").code == 0
    assert "recorded" not in cli("show", "D-0002").out  # ruled and recorded the same day: nothing to say


def test_the_owners_message_brings_in_a_withdrawn_question_with_why_and_a_question_on_it_is_denied(cli, vault):
    from .helpers import hook

    assert cli("ask", QUESTION, "--topic", "mastodon-crosspost").code == 0
    assert cli("withdraw", "D-0001", "--reason", WITHDRAWN).code == 0
    told = hook("user-prompt-submit", {"prompt": "Post the new article on Mastodon too"}, vault)
    said = told["hookSpecificOutput"]["additionalContext"]
    assert "The owner withdrew a question (D-0001" in said and WITHDRAWN in said
    asked = hook("pre-tool-use", {"tool_name": "AskUserQuestion", "tool_input": {"questions": [
        {"question": "Should the agent cross-post new articles to Mastodon?"}]}}, vault)
    reason = asked["hookSpecificOutput"]["permissionDecisionReason"]
    assert asked["hookSpecificOutput"]["permissionDecision"] == "deny" and WITHDRAWN in reason
