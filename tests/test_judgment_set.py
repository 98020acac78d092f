"""The labelled set that measures the record's refusals both ways (tests/data/judgments/, `make bench`) says what
its README says: every id a case names is in its vault, a same-matter case is filed under none of its target's
topic keys (the check measured is about a matter held under another topic), and both halves are there."""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

SET = Path(__file__).resolve().parent / "data" / "judgments"
TOPIC = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
SAME = {"other-words", "other-angle", "contradicts", "answers-open"}
DIFFERENT = {"trade-noun", "may", "weekday", "money", "product-name", "place", "look-alike", "related-but-different"}


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def judged_vaults() -> dict[str, dict[str, dict]]:
    return {path.stem: {item["id"]: item for item in lines(path)} for path in sorted((SET / "vaults").glob("*.jsonl"))}


def test_the_vaults_are_realistic_records_of_50_to_300_decisions_and_more() -> None:
    for name, decisions in judged_vaults().items():
        assert len(decisions) >= 50, name
        assert list(decisions) == [f"D-{number:04d}" for number in range(1, len(decisions) + 1)], name
        for item in decisions.values():
            assert item["status"] in ("ruled", "open")
            assert all(TOPIC.match(topic) for topic in item["topics"]), item
            assert 20 <= len(item["summary"]) <= 200, item
            assert item["summary"].endswith("?") == (item["status"] == "open"), item
        assert 0.1 < Counter(item["status"] for item in decisions.values())["open"] / len(decisions) < 0.3


def test_each_case_is_labelled_against_decisions_its_vault_holds() -> None:
    held = judged_vaults()
    cases = lines(SET / "cases.jsonl")
    assert len(cases) >= 200
    for case in cases:
        decisions = held[case["vault"]]
        assert case["kind"] in ("ask", "rule")
        assert case["text"].endswith("?") == (case["kind"] == "ask"), case
        assert case["category"] in (SAME if case["same_as"] else DIFFERENT), case
        for target in case["same_as"]:
            assert not set(case["topics"]) & set(decisions[target]["topics"]), f"filed under its target's topic: {case}"
        if case["category"] == "answers-open":
            assert all(decisions[target]["status"] == "open" for target in case["same_as"]), case
    same = sum(1 for case in cases if case["same_as"])
    assert 0.4 < same / len(cases) < 0.6, "about half the same matter, half different matters sharing words"


def test_the_supersessions_name_a_ruling_of_their_vault_and_both_kinds_are_there() -> None:
    held = judged_vaults()
    cases = lines(SET / "supersessions.jsonl")
    for case in cases:
        assert held[case["vault"]][case["supersedes"]]["status"] == "ruled", case
        assert case["supersedes"] not in case["reason"], "a reason naming the id would pass any check"
    assert Counter(case["valid"] for case in cases) == Counter({True: 22, False: 11})
