"""Topics merged in `topics.yaml` (`vault-tools/`, or `.vault-tools/` in a vault set up before) are one topic for ask, lookup, lint and context."""
from __future__ import annotations

import json

import pytest

from tests.helpers import make_vault, shown_path, snapshot, topics_file, write


@pytest.fixture
def merged(vault, cli):
    """A ruling on `article-footer`, one on `site-bottom` (no near spelling of it), and the owner's merge."""
    for summary, topic, day in (("Every footer carries the newsletter link.", "article-footer", "01"),
                                ("The bottom of each page shows the licence.", "site-bottom", "02")):
        assert cli("rule", "--summary", summary, "--topic", topic, "--ruled-at", f"2026-07-{day}T09:00:00").code == 0
    write(topics_file(vault), "# merged by hand\narticle-footer: [site-bottom]\n")
    return vault


def test_ask_refuses_an_alias_of_a_settled_topic(merged, cli):
    result = cli("ask", "What should the bottom of the page show now?", "--topic", "site-bottom")
    assert result.code == 1
    assert "is settled: 2 current ruling(s)" in result.err and "D-0001" in result.err


def test_lookup_finds_rulings_through_the_alias(merged, cli):
    found = json.loads(cli("lookup", "site-bottom", "--json").out)
    assert [item["id"] for item in found] == ["D-0002", "D-0001"]
    assert found[0]["not_said_whether_replaces"] == ["D-0001"]


def test_lint_and_context_read_the_two_as_one_topic(merged, cli):
    lint = cli("lint")
    assert "VT016" in lint.out and "D-0002 has not said whether it replaces D-0001" in lint.out
    context = json.loads(cli("context", "--json", "--today", "2026-08-01").out)
    assert context["not_said_whether_replaces"] == [{"newer": "D-0002", "older": "D-0001", "topic": "site-bottom"}]


def test_without_the_merge_they_are_two_topics(merged, cli):
    topics_file(merged).unlink()
    assert cli("lookup", "site-bottom", "--json").out.count('"id"') == 1
    assert "VT016" not in cli("lint").out


def test_a_merged_spelling_is_no_longer_reported_as_a_variant(vault, cli):
    for summary, topic in (("Every footer carries the newsletter link.", "article-footer"),
                           ("Footers show the author bio under each article.", "article-footers")):
        cli("rule", "--summary", summary, "--topic", topic, "--ruled-at", "2026-07-01T09:00:00",
            *(["--alongside", "D-0001"] if topic.endswith("s") else []))
    assert "VT042" in cli("lint").out
    write(topics_file(vault), "article-footer: [article-footers]\n")
    assert "VT042" not in cli("lint").out


@pytest.mark.parametrize(("text", "line", "message"), [
    ("article-footer: [Site Bottom]\n", 1, "alias 'Site Bottom' is not a kebab-case topic"),
    ("a-topic: [x-one]\nb-topic: [x-one]\n", 2, "x-one is an alias of both a-topic and b-topic"),
    ("article-footer: [site-bottom\n", 2, "invalid YAML"),
    ("- article-footer\n", None, "must map each topic to a list of its aliases"),
])
def test_a_bad_topics_file_is_one_line_naming_it(vault, cli, text, line, message):
    write(topics_file(vault), text)
    before = snapshot(vault)
    result = cli("lookup", "article-footer")
    assert result.code == 2
    where = shown_path(vault, topics_file(vault)) + (f":{line}" if line else "")
    assert result.err.startswith(f"error: {where}: ") and message in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert snapshot(vault) == before


def test_a_bad_topics_file_is_named_where_it_is_in_the_shared_layout(cli, tmp_path):
    shared = make_vault(tmp_path / "shared", shared=True)
    write(shared / "vault-tools" / "topics.yaml", "article-footer: [Site Bottom]\n")
    result = cli("lookup", "article-footer", root=shared)
    assert result.code == 2 and result.err.startswith("error: vault-tools/topics.yaml:1: "), result.err


@pytest.fixture(autouse=True)
def forget_aliases():
    """Aliases are read with each vault; a test run in-process leaves none behind for the next."""
    yield
    from vault_tools.topics import use_topic_aliases
    use_topic_aliases({})
