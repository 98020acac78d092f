"""What the owner's message brings in (the `user-prompt-submit` hook), on the labelled set in
tests/data/owner_messages.json through the real hook on a real vault: figures as `make bench` prints them, and
the messages that went wrong before, one by one."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from benchmarks.owner_messages import (
    TARGET_NOISE,
    TARGET_PRECISION,
    TARGET_RECALL,
    answers,
    brought_in,
    choose_floor,
    figures,
    load,
    with_the_ruling_in_force,
)
from vault_tools import matter

from .helpers import hook


@pytest.fixture(scope="module")
def messages_vault(owner_messages_vault, tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A copy of the set's vault: (root, topic -> id)."""
    root = tmp_path_factory.mktemp("owner-messages") / "vault"
    shutil.copytree(owner_messages_vault[0], root)
    return root, owner_messages_vault[1]


@pytest.fixture(scope="module")
def given(messages_vault):
    return answers(messages_vault[0], load()[1])


def told(root: Path, message: str) -> str:
    answer = hook("user-prompt-submit", {"prompt": message}, root)
    return answer["hookSpecificOutput"]["additionalContext"] if answer else ""


def test_the_hook_brings_in_what_the_figures_count(messages_vault, given):
    """The figures are taken from the hook's matcher on one reading of the snapshot; the hook's own answer names
    the same decisions in the same order."""
    for message, ids in given[::9]:
        assert brought_in(messages_vault[0], message.text) == ids, message.text


def test_the_set_is_large_and_a_quarter_of_it_is_about_nothing():
    decisions, messages = load()
    assert len(decisions) >= 100 and len(messages) >= 80
    assert sum(1 for m in messages if not m.about) * 4 >= len(messages)
    topics = {d["topic"] for d in decisions}
    assert all(m.about <= topics for m in messages)
    assert {"open", "withdrawn", "retracted"} <= {d["kind"] for d in decisions}
    held_out = [m for m in messages if m.held_out]
    assert len(messages) // 4 <= len(held_out) <= len(messages) // 2
    assert len({m.text for m in messages}) == len(messages)


def test_the_floor_is_the_one_chosen_on_the_tuning_part(messages_vault):
    root, ids = messages_vault
    tuning = [m for m in load()[1] if not m.held_out]
    assert choose_floor(root, tuning, ids) == (matter.MESSAGE_FLOOR, matter.MESSAGE_SHARE)


def test_the_figures_do_not_get_worse_than_measured(given, messages_vault):
    """The figures quoted in docs/design/0042-what-the-agent-is-told-follows-the-matter.md."""
    _, ids = messages_vault
    whole = figures(given, ids)
    assert whole.recall >= 0.92 and whole.noise <= 0.11 and whole.precision >= 0.87
    # (the held-out third is every third message in the order of a hash of its text: a message added to the set
    # moves which ones are held out, so its figures move with the set)
    held_out = figures([a for a in given if a[0].held_out], ids)
    assert held_out.recall >= 0.85 and held_out.noise <= 0.11 and held_out.precision >= 0.85


def test_the_ruling_in_force_comes_with_an_open_question_or_a_proposal_on_its_matter(given, messages_vault):
    """A message whose nearest decision is a proposed revision, an open question or a closed decision on a ruled
    matter brings the ruling in force beside it, every time; the set holds such messages."""
    with_it, such = with_the_ruling_in_force(messages_vault[0], given)
    assert such >= 5 and with_it == such


def test_a_proposed_revision_is_shown_as_not_in_force_beside_the_ruling_it_would_revise(messages_vault):
    root, ids = messages_vault
    said = told(root, "Make an AI-drawn header picture for the piece on typesetting.")
    ruling, proposal = ids["ai-images"], ids["ai-images-revision"]
    assert f"- A proposed revision of {ruling} since" in said and f"({proposal}), not in force" in said
    assert "- The owner ruled on" in said and f"({ruling}; topics ai-images)" in said
    asked = told(root, "Send the newsletter this Sunday and again next Sunday, weekly from now on.")
    reask, in_force = ids["newsletter-frequency-reask"], ids["newsletter-frequency"]
    assert f"({reask}, on the matter of {in_force}, which is in force until the owner answers)" in asked
    assert f"({in_force}; topics newsletter-frequency)" in asked


@pytest.mark.xfail(strict=True, reason="3 of 29 unrelated messages bring something (10% is 2.9), and no floor "
                                       "words can set keeps the recall when it leaves them out: see design 0042")
def test_the_figures_meet_the_target(given, messages_vault):
    whole = figures(given, messages_vault[1])
    assert whole.recall >= TARGET_RECALL and whole.noise <= TARGET_NOISE and whole.precision >= TARGET_PRECISION


@pytest.mark.parametrize("message,topic,said", [
    ("A customer wants their money back after six weeks. What do I tell them?", "refund-policy",
     "Later requests get store credit"),  # the first lines of its text come with it
    ("What tone should the new piece have? Any emoji?", "brand-voice", "no emoji"),
    ("Could we move the website to Netlify?", "site-hosting", "Managed platforms were considered and turned down."),
    ("Post the new article on Mastodon too", "mastodon-crosspost",
     "The owner withdrew a question ({id}, asked"),
    ("Find a sponsor for the next podcast episode", "podcast-sponsors",
     "Why: The sponsors pulled out; the podcast runs without any sponsor for now."),
    ("Let's pick a newsletter tool this week: Ghost or Buttondown?", "newsletter-platform", "An open question since"),
    # a service named by its name, against a question naming two others of its kind
    ("Is Beehiiv any good for us?", "newsletter-platform", "Buttondown is simple and cheap"),
])
def test_the_owners_message_brings_in_the_decision_on_its_matter_first(messages_vault, message, topic, said):
    root, ids = messages_vault
    text = told(root, message)
    first = next(line for line in text.splitlines() if line.startswith("- "))
    assert f"({ids[topic]}" in first, text
    assert said.format(id=ids[topic]) in text


@pytest.mark.parametrize("message", ["Translate the intro of the last article into Portuguese",
                                     "Add the new article to the sitemap", "Put 100 euros into ads",
                                     "Make the headings in the draft bold"])
def test_a_message_about_nothing_recorded_brings_nothing(messages_vault, message):
    """A generic word ("article"), a bare number (100 against "Expense 100") or a word of a title ('The second
    draft') is not a matter."""
    assert told(messages_vault[0], message) == ""


def test_a_name_that_is_an_everyday_word_is_a_name_only_with_a_capital(messages_vault):
    root, ids = messages_vault
    assert f"({ids['social-platforms']};" in told(root, "Should we post on Threads as well?")
    assert f"({ids['social-platforms']};" not in told(root, "Reply to the email thread from the printer")
    assert f"({ids['social-platforms']};" not in told(root, "Threads in the forum are too long, trim them")


def test_look_alike_rulings_take_one_place_and_leave_room_for_the_one_on_the_matter(messages_vault):
    root, ids = messages_vault
    text = told(root, "When is the next podcast episode out?")
    assert re.search(r"\(9 more alike: D-\d+", text)
    assert f"({ids['podcast-schedule']};" in text
    assert len([line for line in text.splitlines() if line.startswith("- ")]) <= matter.MESSAGE_MAX


def test_the_answer_stays_within_the_hook_bound_and_is_json(messages_vault):
    answer = hook("user-prompt-submit", {"prompt": "What goes at the bottom of each article? " * 200}, messages_vault[0])
    assert answer is None or len(json.dumps(answer, ensure_ascii=False)) <= 9500


def test_no_word_that_five_decisions_use_brings_one_in_alone(messages_vault):
    """A word used by five or more of the vault's decisions (article, newsletter, episode...) is generic here:
    a message saying only it brings nothing, even where it is a word of a topic key."""
    from vault_tools.agents import snapshot
    kept = snapshot.load(messages_vault[0], "claude-hook")
    common = [word for word, count in kept.documents.items() if count >= 5 and word.isalpha()]
    assert len(common) >= 10
    for word in common:
        assert told(messages_vault[0], f"{word}?") == "", word
