"""`ask` catches the same question under another topic key; the check's figures on the labelled pairs."""
from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from benchmarks.judgments import (
    TARGET_STOPPED,
    TARGET_STOPPED_STRONG,
    choose_thresholds,
    load_cases,
    scored_cases,
    split_figures,
)
from benchmarks.same_question import TARGET_FALSE_REFUSALS, figures, load_pairs
from vault_tools.matter import POSSIBLE_MATCH_THRESHOLD, SAME_MATTER_THRESHOLD
from vault_tools.reconcile import reconcile
from vault_tools.services.workspace import Workspace
from vault_tools.vault import Vault

from .helpers import TZ, decision, ledger_file, made_id, make_vault, snapshot, vt_here

FOOTER = "Every article footer carries the author bio."


def asked_events(vault: Path, kind: str = "asked") -> list:
    return [e for e in Vault(vault).ledger.read() if e.event == kind]


# -- the labelled pairs ----------------------------------------------------------------------------

def test_the_labelled_set_is_large_and_balanced():
    pairs = load_pairs()
    assert len(pairs) >= 60
    same = sum(pair.same for pair in pairs)
    assert 0.4 <= same / len(pairs) <= 0.6
    assert 15 <= sum(pair.held_out for pair in pairs) <= 40
    assert len({pair.question for pair in pairs}) == len(pairs)


def test_the_thresholds_are_the_ones_chosen_on_the_tuning_part_of_the_judgments():
    tuning = [case for case in load_cases() if not case.held_out]
    assert choose_thresholds(tuning) == (SAME_MATTER_THRESHOLD, POSSIBLE_MATCH_THRESHOLD)


def test_the_held_out_judgments_are_refused_no_more_than_the_target():
    """Chosen on four fifths of tests/data/judgments/, the tiers keep to the targets on the fifth held out: at most
    5% of different matters refused by both tiers, at most 1% by the strong tier (design 0045)."""
    held_out = split_figures(scored_cases([case for case in load_cases() if case.held_out]),
                             SAME_MATTER_THRESHOLD, POSSIBLE_MATCH_THRESHOLD)
    assert held_out.stopped <= TARGET_STOPPED * held_out.different
    assert held_out.stopped_strong <= TARGET_STOPPED_STRONG * held_out.different
    assert held_out.caught >= 0.3 * held_out.same  # the figure quoted in design 0045; a change lowering it fails


def test_the_strong_tier_does_not_get_worse_than_measured_on_the_older_pairs():
    """The labelled pairs of design 0031, written before the judgments: the strong tier refuses none of their
    different-matter pairs and catches what design 0045 quotes."""
    whole = figures(load_pairs())
    assert whole.recall >= 0.23
    assert whole.false_refusals <= TARGET_FALSE_REFUSALS


# -- ask -------------------------------------------------------------------------------------------

BOTTOM = "What should the bottom of each article carry?"  # the same matter as FOOTER (the strong tier)
NEAR_BOTTOM = "What should go at the bottom of each article?"  # may be (the possible tier)


def test_ask_refuses_the_same_question_under_another_topic_and_says_how_to_go_through(cli, vault):
    assert cli("rule", "--topic", "article-footer", "--summary", FOOTER, "--source", "chat").code == 0
    refused = cli("ask", BOTTOM, "--topic", "article-endings")
    assert refused.code == 1
    assert "D-0001 already settles this under other topics" in refused.err
    assert "(the same matter: shares bottom, article, carry, score" in refused.err  # the evidence, in its words
    assert "--reask-reason" in refused.err and "--not-the-same D-0001" in refused.err
    assert not list((vault / "Decisions").glob("D-0002*"))

    through = cli("ask", BOTTOM, "--topic", "article-endings", "--not-the-same", "D-0001")
    assert through.code == 0, through.err
    assert asked_events(vault)[-1].not_the_same == (made_id(vault, "D-0001"),)


def test_an_open_question_on_the_same_matter_refuses_even_a_reask(cli, vault):
    assert cli("ask", "What should the footer of each article carry?", "--topic", "article-footer").code == 0
    refused = cli("ask", BOTTOM, "--topic", "article-endings",
                  "--reask-reason", "Readers complained about the bios being too long.")
    assert refused.code == 1
    assert "D-0001 already asks this" in refused.err


def test_a_reask_reason_goes_through_a_ruling_on_the_same_matter(cli, vault):
    assert cli("rule", "--topic", "article-footer", "--summary", FOOTER, "--source", "chat").code == 0
    assert cli("ask", BOTTOM, "--topic", "article-endings",
               "--reask-reason", "Readers complained about the bios being too long.").code == 0


def test_a_possible_match_is_refused_once_with_the_ruling_shown_and_goes_through_when_judged(cli, vault):
    assert cli("rule", "--topic", "article-footer", "--summary", FOOTER, "--source", "chat",
               "--body", "The bio is two lines, with a photo.").code == 0
    refused = cli("ask", NEAR_BOTTOM, "--topic", "article-endings")
    assert refused.code == 1
    assert "may be the matter of D-0001" in refused.err
    assert FOOTER in refused.err and "The bio is two lines, with a photo." in refused.err  # its text, to judge by
    assert "(may be the matter: shares bottom, article, score" in refused.err  # the words it stands on
    assert "--not-the-same D-0001" in refused.err and "--reask-reason" in refused.err
    assert not list((vault / "Decisions").glob("D-0002*"))

    asked = cli("ask", NEAR_BOTTOM, "--topic", "article-endings", "--not-the-same", "D-0001")
    assert asked.code == 0, asked.err
    assert asked_events(vault)[-1].not_the_same == (made_id(vault, "D-0001"),)


def test_a_question_sharing_a_word_of_the_trade_goes_through(cli, vault):
    """The footer shared, the matter another: no refusal to click through (tests/data/judgments/ measures this)."""
    assert cli("rule", "--topic", "article-footer", "--summary", FOOTER, "--source", "chat").code == 0
    asked = cli("ask", "Should the newsletter footer carry a sponsor?", "--topic", "newsletter-sponsor")
    assert asked.code == 0, asked.err


def test_a_question_sharing_no_word_is_let_through_and_writes_no_not_the_same(cli, vault):
    assert cli("rule", "--topic", "article-footer", "--summary", FOOTER, "--source", "chat").code == 0
    asked = cli("ask", "Which city hosts the spring meetup?", "--topic", "meetup-city")
    assert asked.code == 0, asked.err
    assert asked_events(vault)[-1].not_the_same == ()
    assert '"not_the_same"' not in ledger_file(vault).read_text(encoding="utf-8")  # old lines keep their checksums


@pytest.mark.parametrize("shared", [False, True], ids=["hidden layout", "shared layout, no device tag yet"])
def test_not_the_same_must_name_a_decision(cli, tmp_path, shared):
    vault = make_vault(tmp_path / "layout", shared=shared)
    before = snapshot(vault)
    for bad, said in (("D-0042", "no decision note has id D-0042"), ("footer", "footer")):
        for command in (["ask", NEAR_BOTTOM], ["rule", "--summary", "The bottom of each article carries the bio."]):
            result = cli(*command, "--topic", "article-endings", "--not-the-same", bad, root=vault)
            assert result.code in (1, 2) and said in result.err and len(result.err.strip().splitlines()) == 1
            assert snapshot(vault) == before  # nothing written, not even a tag drawn for the device


def test_the_check_finds_a_match_among_many_decisions_through_the_index(vault, monkeypatch):
    """Past the shortlist size the index picks the candidates; the match is still found."""
    from vault_tools.commands import same
    monkeypatch.setattr(same, "SHORTLIST", 25)  # 500 in use: forty rulings then go through the index
    write_rulings(vault, [(f"area-{number}", f"Team {number} reviews its dashboards every quarter.")
                          for number in range(40)] + [("article-footer", FOOTER)])
    refused = vt_here("ask", NEAR_BOTTOM, "--topic", "article-endings", cwd=vault)
    assert refused.code == 1 and "D-0041" in refused.err


def test_closed_decisions_saying_the_same_words_do_not_crowd_the_current_one_out_of_the_shortlist(vault, monkeypatch):
    """The index ranks every decision; the shortlist takes the best of those in effect: a dozen retracted rulings
    saying the question's very words rank above the current ruling, which is still the one found."""
    from vault_tools.commands import same
    monkeypatch.setattr(same, "SHORTLIST", 5)
    write_rulings(vault, [(f"area-{number}", f"Team {number} reviews its dashboards every quarter.")
                          for number in range(30)] + [("article-footer", FOOTER)])  # the footer's: D-0031
    for number in range(40, 52):
        decision(vault, number, status="retracted", topics=("article-footer",), summary=NEAR_BOTTOM.replace("?", "."),
                 title=f"D-{number:04d}")
    refused = vt_here("ask", NEAR_BOTTOM, "--topic", "article-endings", cwd=vault)
    assert refused.code == 1 and "D-0031" in refused.err


def write_rulings(vault: Path, rulings: list[tuple[str, str]]) -> None:
    """Rulings written as the owner writes notes in Obsidian (D-0001 upward), then recorded as the watcher does."""
    for number, (topic, summary) in enumerate(rulings, start=1):
        decision(vault, number, topics=(topic,), summary=summary, title=f"D-{number:04d}")
    later = time.time() + 1  # past the quiet window: the notes are not being typed
    reconcile(Workspace(Vault(vault)), quiet_before=later, seal_before=later)


# -- rule given directly ---------------------------------------------------------------------------

NEWSLETTER_DAY = "The newsletter goes out every Thursday at 07:00."
MONDAYS = "The newsletter goes out on Mondays at 09:00 from now on."
BOTTOM_RULING = "The bottom of every article carries the author bio."  # the same matter as FOOTER
SPONSOR = "The footer of each article carries a sponsor."  # the same words, near enough to ask


def test_a_ruling_on_the_matter_of_a_ruling_under_another_topic_is_refused_until_it_says_which_way(cli, vault):
    """Two current rulings on one matter, neither saying it replaces the other, would both be quoted to agents."""
    assert cli("rule", "--topic", "article-footer", "--summary", FOOTER, "--source", "chat",
               "--body", "Readers like to know who wrote it.").code == 0
    before = snapshot(vault)
    refused = cli("rule", "--topic", "article-endings", "--summary", BOTTOM_RULING, "--source", "chat")
    assert refused.code == 1 and snapshot(vault) == before
    assert "this ruling is the matter of D-0001, under other topics" in refused.err
    assert FOOTER in refused.err and "Readers like to know who wrote it." in refused.err
    assert "(the same matter: shares bottom, every, article, carries, author, bio, score" in refused.err
    assert "--supersedes ID --reason" in refused.err and "--not-the-same D-0001" in refused.err

    replaced = cli("rule", "--topic", "article-endings", "--summary", BOTTOM_RULING, "--source", "chat",
                   "--supersedes", "D-0001", "--reason", "The owner moved the bio from the footer to the bottom.")
    assert replaced.code == 0, replaced.err
    assert cli("show", "D-0001", "--json").out.count('"status": "superseded"') == 1


def test_a_ruling_judged_another_matter_goes_through_and_the_ledger_keeps_the_judgement(cli, vault):
    assert cli("rule", "--topic", "article-footer", "--summary", FOOTER, "--source", "chat").code == 0
    assert cli("rule", "--topic", "meetup-city", "--summary", "The spring meetup is in Lisbon this year.",
               "--source", "chat").code == 0  # shares no word: no refusal
    assert asked_events(vault, "ruled")[-1].not_the_same == ()
    sponsor = ["rule", "--topic", "newsletter-sponsor", "--summary", SPONSOR, "--source", "chat"]
    assert cli(*sponsor).code == 1
    assert cli(*sponsor, "--not-the-same", "D-0001").code == 0
    assert asked_events(vault, "ruled")[-1].not_the_same == (made_id(vault, "D-0001"),)


def test_a_ruling_that_names_what_it_replaces_is_refused_only_by_the_same_matter(cli, vault):
    assert cli("rule", "--topic", "article-footer", "--summary", FOOTER, "--source", "chat").code == 0
    assert cli("rule", "--topic", "newsletter-schedule", "--summary", NEWSLETTER_DAY, "--source", "chat").code == 0
    assert cli("rule", "--topic", "newsletter-schedule", "--summary", MONDAYS, "--source", "chat", "--supersedes",
               "D-0002", "--reason", "The owner moved the newsletter to Monday mornings.").code == 0
    same = cli("rule", "--topic", "article-endings", "--summary", BOTTOM_RULING, "--source", "chat",
               "--alongside", "D-0003")
    assert same.code == 1 and "this ruling is the matter of D-0001" in same.err


def test_a_ruling_on_the_matter_of_an_open_question_says_how_to_answer_it(cli, vault):
    """An answer says more than its question: it is scored both ways against an open question."""
    assert cli("ask", "What should every article footer carry?", "--topic", "article-footer").code == 0
    refused = cli("rule", "--topic", "article-endings", "--summary", FOOTER, "--source", "chat")
    assert refused.code == 1 and "D-0001 open question" in refused.err
    assert "vault-tools rule ID --summary" in refused.err


@pytest.mark.parametrize("count", [3, 41, 300])
def test_the_nth_of_n_look_alike_rulings_takes_at_most_two_calls(vault, count):
    """Routine rulings matched by the same words are one entry of the refusal, judged by one flag: the next one
    goes through on the second call, with a refusal that stays short however many there are."""
    write_rulings(vault, [(f"routine-{number}", f"Routine operations ruling number {number}: keep the checklist "
                                                "item as it is.") for number in range(1, count + 1)])
    new = ["rule", "--topic", f"routine-{count + 1}", "--summary", f"Routine operations ruling number {count + 1}: "
           "keep the checklist item as it is.", "--source", "chat"]
    refused = vt_here(*new, cwd=vault)
    assert refused.code == 1 and len(refused.err) < 2000, (len(refused.err), refused.err)
    if count >= 3:
        assert f"and {count - 1} look-alike(s)" in refused.err
    flags = refused.err.split("rule again with ")[1].split(" (kept")[0].split()
    assert flags == ["--not-the-same", "D-0001"]
    through = vt_here(*new, *flags, cwd=vault)
    assert through.code == 0, through.err
    assert len(asked_events(vault, "ruled")[-1].not_the_same) == count  # the ledger keeps each one judged


def test_look_alikes_on_one_topic_stand_together_by_one_flag(vault):
    """Expense approvals on one topic: the 50th says it stands beside the other 49 with one flag, in a refusal that
    stays short, and its note stores no link to each."""
    write_rulings(vault, [("expenses", f"Expense claim {number} approved: train ticket to the client site.")
                          for number in range(1, 50)])
    new = ["rule", "--topic", "expenses", "--summary", "Expense claim 50 approved: train ticket to the client site.",
           "--source", "chat"]
    refused = vt_here(*new, cwd=vault)
    assert refused.code == 1 and len(refused.err) < 2000, refused.err
    assert "already has 49 current ruling(s)" in refused.err and "--alongside-all" in refused.err
    through = vt_here(*new, "--alongside-all", cwd=vault)
    assert through.code == 0, through.err
    note = next((vault / "Decisions").glob("D-0050*")).read_text(encoding="utf-8")
    assert "alongside_all: true" in note and "[[D-00" not in note
    assert "D-0050" not in vt_here("lint", cwd=vault).out  # no VT016 on it: it said how it stands to them all
    assert vt_here("rule", *new[1:], "--alongside-all", "--alongside", "D-0001", cwd=vault).code == 2


def test_a_ruling_on_the_topic_of_an_open_question_is_recorded_as_its_answer(cli, vault):
    """Given beside it, the question would stay open on a settled topic."""
    assert cli("ask", "Which day should the newsletter go out?", "--topic", "newsletter-schedule").code == 0
    before = snapshot(vault)
    refused = cli("rule", "--topic", "newsletter-schedule", "--summary", MONDAYS, "--source", "chat")
    assert refused.code == 1 and snapshot(vault) == before
    assert "D-0001 is open on this topic" in refused.err and "vault-tools rule D-0001 --summary" in refused.err
    assert cli("rule", "D-0001", "--summary", MONDAYS, "--source", "chat").code == 0
    assert '"status": "ruled"' in cli("show", "D-0001", "--json").out


def test_naming_an_unrelated_ruling_to_stand_beside_does_not_let_a_ruling_past_the_check(cli, vault):
    assert cli("rule", "--topic", "article-footer", "--summary", FOOTER, "--source", "chat").code == 0
    assert cli("rule", "--topic", "meetup-city", "--summary", "The spring meetup is held in Lisbon this year.",
               "--source", "chat").code == 0
    refused = cli("rule", "--topic", "article-endings", "--summary", BOTTOM_RULING, "--source", "chat",
                  "--alongside", "D-0002")
    assert refused.code == 1 and "is the matter of D-0001" in refused.err


def test_superseding_a_ruling_on_another_matter_by_a_mistyped_id_is_refused(cli, vault):
    """A superseded ruling never comes back: an id that names a ruling sharing no topic and no word of substance
    with the new one is taken for a typo, for `rule` and `relate` alike, until the reason names it."""
    assert cli("rule", "--topic", "analytics", "--summary", "No third-party trackers; page counts come from the "
               "server logs.", "--source", "chat").code == 0
    assert cli("rule", "--topic", "newsletter-schedule", "--summary", NEWSLETTER_DAY, "--source", "chat").code == 0
    before = snapshot(vault)
    wrong = ["rule", "--topic", "meetup-city", "--summary", "The spring meetup is held in Lisbon this year.",
             "--source", "chat", "--supersedes", "D-0001", "--reason", "The owner chose the city in chat today."]
    refused = cli(*wrong)
    assert refused.code == 1 and "would supersede D-0001, which is on another matter (analytics)" in refused.err
    assert "--topic analytics" in refused.err and snapshot(vault) == before
    assert cli("rule", "--topic", "meetup-city", "--summary", "The spring meetup is held in Lisbon this year.",
               "--source", "chat").code == 0
    related = cli("relate", "D-0003", "--supersedes", "D-0001", "--reason", "The owner chose the city in chat today.")
    assert related.code == 1 and "which is on another matter" in related.err and "--topic" not in related.err
    before = snapshot(vault)
    assert cli("relate", "D-0003", "--supersedes", "D-0001", "--reason", "The owner chose the city in chat "
               "today.").code == 1 and snapshot(vault) == before  # nothing written
    # the same matter in new words under another key, one word of substance shared (the newsletter): replaced as
    # said, the reason naming no id
    assert cli("rule", "--topic", "publishing-calendar", "--summary", "All publishing follows the shared calendar; "
               "the newsletter goes out on Tuesdays.", "--source", "chat", "--supersedes", "D-0002", "--reason",
               "Every channel moved onto one calendar in December.").code == 0
    # meant, and said so (the short id counts; "D-00010" names no D-0001)
    assert cli("relate", "D-0003", "--supersedes", "D-0001", "--reason", "The owner said so, see note D-00010."
               ).code == 1
    assert cli("relate", "D-0003", "--supersedes", "D-0001", "--reason", "The meetup budget replaces D-0001's "
               "tracker rule, the owner said.").code == 0
    # on the day the replaced ruling was made: a day alone is not "before" it
    assert cli("rule", "--topic", "publishing-calendar", "--summary", "The newsletter goes out on Tuesdays at "
               "08:00.", "--source", "chat", "--supersedes", "D-0004", "--reason", "The owner moved it again the "
               "same day.", "--ruled-at", today_in_the_vault()).code == 0


def today_in_the_vault() -> str:
    """The vault's day (zone `TZ`), which is not the machine's for some hours of each day."""
    return dt.datetime.now(ZoneInfo(TZ)).date().isoformat()


# -- lookup ----------------------------------------------------------------------------------------

def test_lookup_with_free_text_puts_the_same_matter_first(cli, vault):
    assert cli("rule", "--topic", "newsletter-sponsor", "--summary",
               "The newsletter footer carries one sponsor, never an article's author.", "--source", "chat").code == 0
    assert cli("rule", "--topic", "article-footer", "--summary", FOOTER, "--source", "chat", judge=True).code == 0
    result = cli("lookup", "what goes at the bottom of an article", "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)[0]["id"] == "D-0002"


@pytest.mark.parametrize("words_kept", [True, False])
def test_lint_pairs_are_every_pair_a_full_comparison_finds_on_the_labelled_texts(monkeypatch, words_kept):
    """Lint scores only pairs sharing a word that is not weak and not used by hundreds of rulings; on the
    labelled set's texts (questions and rulings as rulings: many share words, some say the same matter) it
    finds exactly what scoring every pair as `rule` scores a ruling given directly finds, and at the strong
    tier exactly the pairs `rule`'s check calls the same matter: lint and `rule` never disagree. The same
    whether the words' bits are kept from the call before or numbered anew at each call (a long-running
    process forgets them past `BITS_REMEMBERED`)."""
    from itertools import combinations

    from vault_tools import decision_words
    from vault_tools.decision_words import decision_terms, same_matter_pairs
    if not words_kept:
        monkeypatch.setattr(decision_words, "BITS_REMEMBERED", 1)
    from vault_tools.matter import matches, question_terms, similarity
    from vault_tools.model import build_decision

    texts = {(p.question, tuple(p.topics)) for p in load_pairs()} | {(p.ruling, tuple(p.ruling_topics)) for p in load_pairs()}
    decisions = []
    for number, (text, topics) in enumerate(sorted(texts), start=1):
        decision, _ = build_decision({"type": "decision", "id": f"D-{number:04d}", "status": "ruled",
                                      "topics": list(topics), "summary": text, "ruled_at": "2026-01-01T09:00:00",
                                      "ruled_by": "owner"}, path=f"Decisions/D-{number:04d}.md")
        decisions.append(decision)
    for threshold in (0.3, 0.45, SAME_MATTER_THRESHOLD, 0.8):
        full = sorted((a.id, b.id) for a, b in combinations(decisions, 2)
                      if similarity(question_terms(b.summary, b.topics), decision_terms(a)) >= threshold)
        found = sorted((a.id, b.id) for a, b, _ in same_matter_pairs(decisions, threshold=threshold))
        assert found == full
        assert len(full) >= 2, threshold  # the comparison is not empty
    refused = sorted((a.id, b.id) for a, b in combinations(decisions, 2)
                     if any(m.score >= SAME_MATTER_THRESHOLD for m in
                            matches(b.summary, b.topics, [(a, decision_terms(a), a.number)])))
    assert refused == sorted((a.id, b.id) for a, b, _ in same_matter_pairs(decisions))


def test_a_strong_match_is_refused_as_one_even_when_the_text_alone_matches_another_more(cli, vault):
    """The question's topic keys make it the same matter as D-0001; its words alone say more of D-0002: the
    refusal is still the strong one, naming D-0001."""
    assert cli("rule", "--topic", "footer-bio", "--summary", "Footers carry the bio of the author.",
               "--source", "chat").code == 0
    assert cli("rule", "--topic", "plan-choice", "--summary", "Pick the cheapest hosting plan every time.",
               "--source", "chat").code == 0
    refused = cli("ask", "Which should we pick?", "--topic", "footer-bio-author")
    assert refused.code == 1 and "D-0001 already settles this" in refused.err, refused.err


def test_the_words_bits_stay_as_few_as_the_words_paired():
    """A process that paired many words before (a watcher over weeks, another vault) numbers the words again
    rather than pair rulings as long numbers: a word's bit is its number."""
    from vault_tools import decision_words
    from vault_tools.decision_words import same_matter_pairs
    from vault_tools.model import build_decision

    def rulings(words: list[str]) -> list:
        return [build_decision({"type": "decision", "id": f"D-{number:04d}", "status": "ruled", "topics": ["t"],
                                "summary": f"The {word} rule holds for the {word} team.",
                                "ruled_at": "2026-01-01T09:00:00", "ruled_by": "owner"},
                               path=f"Decisions/D-{number:04d}.md")[0] for number, word in enumerate(words, 1)]
    many = rulings([f"zq{index:05d}x" for index in range(5000)])
    same_matter_pairs(many)
    assert len(decision_words._BIT_OF) >= 5000
    few = rulings(["glossary", "footer", "pricing"])
    same_matter_pairs(few)
    assert len(decision_words._BIT_OF) < 1100


def test_the_pairs_of_one_ruling_more_are_those_every_pair_scored_again_gives(monkeypatch):
    """A process that pairs the rulings after each new one (the resident process, the watcher) scores only the
    new ruling's pairs: whatever it says, wherever its note sits, however it is numbered, and as words come to be
    used by more decisions than are looked up, the pairs are those of scoring every pair again."""
    import dataclasses
    import random

    from vault_tools import decision_words
    from vault_tools.decision_words import same_matter_pairs
    from vault_tools.model import build_decision

    monkeypatch.setattr(decision_words, "WORDS_MOST_USED", 6)  # words pass the bound within the run
    monkeypatch.setattr(decision_words, "_LAST_PAIRED", [])
    rng = random.Random(5)
    words = ["footer", "sponsor", "pricing", "archive", "podcast", "tune", "reply", "slot", "newsletter", "tax",
             "author", "comment", "thursday", "design", "header", "colour", "image", "caption", "budget", "launch"]

    def ruling(number: int, tag: str = "") -> object:
        said = " ".join(rng.sample(words, rng.randint(2, 5)))
        found, _ = build_decision({"type": "decision", "id": f"D-{number:04d}{tag}", "status": "ruled",
                                   "topics": [f"topic-{rng.randint(1, 30)}"], "summary": f"The {said} rule holds.",
                                   "ruled_at": "2026-01-01T09:00:00", "ruled_by": "owner"},
                                  path=f"Decisions/{rng.random():.6f}.md")
        return found

    def fresh(decisions: list) -> list:
        kept = list(decision_words._LAST_PAIRED)
        decision_words._LAST_PAIRED.clear()
        try:
            return same_matter_pairs(decisions)
        finally:
            decision_words._LAST_PAIRED[:] = kept

    def named(pairs: list) -> list:
        return [(older.id, newer.id, round(score, 9)) for older, newer, score in pairs]

    scored_once: list[bool] = []  # whether each call scored only the new ruling's pairs
    one_added = decision_words._Paired.one_added

    def counted(self, *args):
        found = one_added(self, *args)
        scored_once.append(found is not None)
        return found

    monkeypatch.setattr(decision_words._Paired, "one_added", counted)
    decisions: list = []
    compared = 0
    for number in range(1, 90):
        step = rng.random()
        if step < 0.65 or not decisions:  # one ruling more, its note anywhere among the others
            decisions.insert(rng.randint(0, len(decisions)), ruling(number))
        elif step < 0.8:  # and the one before read again (another object saying the same)
            again = rng.randrange(len(decisions))
            decisions[again] = dataclasses.replace(decisions[again])
            decisions.insert(rng.randint(0, len(decisions)), ruling(number))
        elif step < 0.9:  # one numbered below others (another device's, pulled)
            decisions.insert(rng.randint(0, len(decisions)), ruling(rng.randint(1, number), tag="-b2"))
        else:  # one superseded: no longer among the current rulings
            decisions.pop(rng.randrange(len(decisions)))
        found = same_matter_pairs(decisions)
        assert named(found) == named(fresh(decisions)), number
        compared += len(found)
    assert compared > 200  # the comparison is not empty
    assert 30 < sum(scored_once) < len(scored_once)  # both ways taken, often
    monkeypatch.setattr(decision_words, "WORDS_MOST_USED", 2)  # under another bound, every pair scored again
    decisions.append(ruling(1000))
    assert named(same_matter_pairs(decisions)) == named(fresh(decisions))
