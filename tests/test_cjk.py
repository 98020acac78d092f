"""Words inside Chinese, Japanese and Korean text are found: search, lookup, the same-matter check and the hooks,
on the labelled set in tests/data/cjk_search.json (written for these tests: see its `about`)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from vault_tools.agent_view import estimate_tokens

from .helpers import hook, vt_here

DATA = json.loads((Path(__file__).parent / "data" / "cjk_search.json").read_text(encoding="utf-8"))
LANGUAGES = ["ja", "zh-Hans", "zh-Hant", "ko"]


@pytest.fixture(scope="module")
def vaults(tmp_path_factory) -> dict[str, tuple[Path, dict[str, str]]]:
    """A vault per language holding its ten rulings: (root, topic -> id)."""
    made = {}
    for language in LANGUAGES:
        root = tmp_path_factory.mktemp(language)
        (root / ".obsidian").mkdir()
        assert vt_here("init", "--timezone", "Asia/Tokyo", cwd=root).code == 0
        ids = {}
        for topic, summary in DATA[language]["rulings"].items():
            done = vt_here("rule", "--topic", topic, "--summary", summary, "--source", "chat", cwd=root)
            assert done.code == 0, done.err
            ids[topic] = done.out.split()[0]
        made[language] = (root, ids)
    return made


@pytest.mark.parametrize("language", LANGUAGES)
def test_search_finds_a_word_inside_the_sentence_and_nothing_unrelated(vaults, language):
    root, ids = vaults[language]
    assert len(DATA[language]["rulings"]) >= 10 and len(DATA[language]["queries"]) >= 20
    for query, topic in DATA[language]["queries"].items():
        hits = [hit["id"] for hit in json.loads(vt_here("search", query, "--json", cwd=root).out)]
        if topic is None:
            assert hits == [], (query, hits)
        else:
            assert hits[:1] == [ids[topic]], (query, hits)


@pytest.mark.parametrize("language", LANGUAGES)
def test_lookup_with_free_text_finds_the_ruling(vaults, language):
    root, ids = vaults[language]
    query, topic = next((q, t) for q, t in DATA[language]["queries"].items() if t is not None)
    found = json.loads(vt_here("lookup", query, "--json", cwd=root).out)
    assert found[0]["id"] == ids[topic]


def test_the_owners_message_in_japanese_brings_the_ruling_in(vaults):
    root, ids = vaults["ja"]
    told = hook("user-prompt-submit", {"prompt": "ゲストの謝礼はいくらにしますか？"}, root)
    assert told is not None and ids["guest-fee"] in told["hookSpecificOutput"]["additionalContext"]
    assert hook("user-prompt-submit", {"prompt": "明日の天気予報を教えて"}, root) is None


@pytest.mark.parametrize("language,question,key,topic", [
    ("ja", "ポッドキャストのゲストへの謝礼はいくら支払いますか？", "open-item", "guest-fee"),  # the words alone
    ("ja", "ゲストの謝礼はいくらですか？", "visitor-payments", "guest-fee"),
    ("zh-Hans", "超过三十天的退款怎么处理？", "late-refunds", "refund"),
    ("zh-Hant", "超過三十天只能換店鋪積分嗎？", "late-refunds", "refund"),
    ("ko", "택배는 우체국 택배로 보내나요?", "courier-service", "courier"),
])
def test_ask_on_the_same_matter_under_another_key_is_refused(vaults, language, question, key, topic):
    root, ids = vaults[language]
    done = vt_here("ask", question, "--topic", key, cwd=root)
    assert done.code == 1 and ids[topic] in done.err, done.err


def test_french_elisions_find_the_word(tmp_path):
    root = tmp_path / "fr"
    (root / ".obsidian").mkdir(parents=True)
    assert vt_here("init", "--timezone", "Europe/Paris", cwd=root).code == 0
    assert vt_here("rule", "--topic", "footer", "--summary", "Le pied de l'article ne porte que la bio de l'auteur.",
                   "--source", "chat", cwd=root).code == 0
    hits = json.loads(vt_here("search", "article", "--json", cwd=root).out)
    assert len(hits) == 1
    assert [h["id"] for h in json.loads(vt_here("search", "auteur", "--json", cwd=root).out)] == [hits[0]["id"]]


def test_the_agents_budgets_count_cjk_text_as_it_costs(vaults):
    """Codex's hook budget is in tokens: a character of these scripts costs about one, so the estimate counts one
    for each; what `context --budget codex-hook` prints stays within it."""
    root, _ = vaults["ja"]
    summary = DATA["ja"]["rulings"]["guest-fee"]
    assert estimate_tokens(summary) >= len(summary) - 3
    context = json.loads(vt_here("context", "--budget", "codex-hook", "--json", cwd=root).out)
    assert context["used"]["tokens"] <= 2400 and estimate_tokens(context["text"]) == context["used"]["tokens"]


def test_lint_names_one_matter_ruled_twice_under_two_keys_in_japanese(tmp_path):
    root = tmp_path / "ja"
    (root / ".obsidian").mkdir(parents=True)
    assert vt_here("init", "--timezone", "Asia/Tokyo", cwd=root).code == 0
    for topic, summary in (("guest-fee", DATA["ja"]["rulings"]["guest-fee"]),
                           ("podcast-payments", "ポッドキャストのゲストへの謝礼は一律150ユーロとする。"),
                           ("shipping", DATA["ja"]["rulings"]["shipping"])):
        # `rule` refuses the second as the first's matter; judged another by the agent, lint still names the pair
        assert vt_here("rule", "--topic", topic, "--summary", summary, "--source", "chat", cwd=root,
                       judge=True).code == 0
    found = [line for line in vt_here("lint", cwd=root).out.splitlines() if "VT044" in line]
    assert len(found) == 1 and "podcast-payments / guest-fee" in found[0]


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_search_passage_is_the_rulings_own_text_with_the_match_marked(vaults, language):
    """The index keeps pairs of characters beside the words; a passage shows the text as written, never the pairs."""
    root, ids = vaults[language]
    rulings = DATA[language]["rulings"]
    for query, topic in DATA[language]["queries"].items():
        if topic is None:
            continue
        hit = json.loads(vt_here("search", query, "--json", cwd=root).out)[0]
        assert hit["id"] == ids[topic]
        marked = re.findall(r"\*\*(.+?)\*\*", hit["snippet"])
        assert marked, (query, hit["snippet"])
        shown = hit["snippet"].replace("**", "").strip("…")
        assert shown in rulings[topic] or shown in hit["summary"], (query, hit["snippet"])
