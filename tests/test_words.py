"""A text's words as the same-matter check compares them (`matter.terms`): phrases read as the one word they mean,
a year counts and other numbers do not, a decision's id names a note and adds no word."""
from __future__ import annotations

from vault_tools.matter import terms


def test_a_phrase_reads_as_the_word_it_means_only_where_its_words_stand_together():
    assert "login" in terms("How do contributors sign in to the portal?")
    assert "login" in terms("Sign-in for contributors")
    assert "2fa" in terms("Do we ask for two factor codes?")
    assert "login" not in terms("Sign the form in blue ink")  # both words, apart
    assert "2fa" not in terms("Two people decide each factor")


def test_a_year_counts_and_other_numbers_and_single_letters_do_not():
    said = terms("Plan B for the 2026 budget, 12 teams")
    assert "2026" in said
    assert "12" not in said and "b" not in said


def test_a_decision_id_adds_no_word():
    assert terms("As D-0012-4fpb says, keep the footer") == terms("As says, keep the footer")
    assert terms("as d-7 says, keep the footer") == terms("as says, keep the footer")


def test_accented_and_cjk_words_are_compared_as_they_read():
    assert terms("Café pricing") == terms("cafe pricing")
    assert terms("文章の足元に広告") != terms("")  # CJK runs give pairs of characters
