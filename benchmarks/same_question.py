"""Precision and recall of the same-matter check on the labelled pairs in tests/data/same_question_pairs.jsonl.

Each pair is a question (with its topic keys) and a ruling (its summary and topic keys) labelled `same`
(the same matter in other words) or not (a different matter sharing words). The pairs are split in two
by a hash of the question: the threshold is chosen on the tuning part only (the lowest score that refuses
at most 5% of its different-matter pairs), and the held-out part says how it does on pairs it was not
chosen on.

    python benchmarks/same_question.py
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

from vault_tools.commands.same import SAME_MATTER_THRESHOLD, question_terms, similarity, terms

PAIRS = Path(__file__).resolve().parent.parent / "tests" / "data" / "same_question_pairs.jsonl"
TARGET_RECALL = 0.90  # of same-matter pairs caught
TARGET_FALSE_REFUSALS = 0.05  # of different-matter pairs refused, at most


@dataclass(frozen=True)
class Pair:
    question: str
    topics: tuple[str, ...]
    ruling: str
    ruling_topics: tuple[str, ...]
    same: bool
    note: str

    @property
    def held_out(self) -> bool:
        return hashlib.sha256(self.question.encode()).digest()[0] % 3 == 0

    def score(self) -> float:
        return similarity(question_terms(self.question, self.topics),
                          terms("\n".join((self.ruling, *self.ruling_topics))))


@dataclass(frozen=True)
class Figures:
    pairs: int
    same: int
    caught: int  # same-matter pairs at or over the threshold
    refused: int  # different-matter pairs at or over the threshold

    @property
    def recall(self) -> float:
        return self.caught / self.same if self.same else 0.0

    @property
    def false_refusals(self) -> float:
        different = self.pairs - self.same
        return self.refused / different if different else 0.0

    @property
    def precision(self) -> float:
        flagged = self.caught + self.refused
        return self.caught / flagged if flagged else 1.0

    def meets_target(self) -> bool:
        return self.recall >= TARGET_RECALL and self.false_refusals <= TARGET_FALSE_REFUSALS

    def line(self, name: str) -> str:
        return (f"{name:<10} {self.pairs:>3} pairs: precision {self.precision:.0%}, recall {self.recall:.0%} "
                f"({self.caught}/{self.same} same-matter caught), different-matter refused "
                f"{self.false_refusals:.0%} ({self.refused}/{self.pairs - self.same})")


def load_pairs(path: Path = PAIRS) -> list[Pair]:
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            data = json.loads(line)
            pairs.append(Pair(data["question"], tuple(data.get("topics", ())), data["ruling"],
                              tuple(data.get("ruling_topics", ())), bool(data["same"]), data.get("note", "")))
    return pairs


def figures(pairs: list[Pair], threshold: float = SAME_MATTER_THRESHOLD) -> Figures:
    scores = [(pair.score(), pair.same) for pair in pairs]
    return Figures(len(pairs), sum(same for _, same in scores),
                   sum(1 for score, same in scores if same and score >= threshold),
                   sum(1 for score, same in scores if not same and score >= threshold))


def choose_threshold(pairs: list[Pair]) -> float:
    """The lowest threshold refusing at most TARGET_FALSE_REFUSALS of the different-matter pairs."""
    different = sorted((pair.score() for pair in pairs if not pair.same), reverse=True)
    allowed = int(len(different) * TARGET_FALSE_REFUSALS)  # this many may be at or over it
    above = different[allowed] if allowed < len(different) else 0.0
    # The first two-decimal value strictly over the first different-matter score that must stay under: a
    # threshold equal to that score would refuse it (rounding above + 0.005 gave exactly 0.6 for 0.6).
    threshold = math.floor(above * 100) / 100 + 0.01
    while threshold <= above:
        threshold += 0.01
    return round(threshold, 2)


def report() -> list[str]:
    pairs = load_pairs()
    tuning = [pair for pair in pairs if not pair.held_out]
    held_out = [pair for pair in pairs if pair.held_out]
    lines = [f"same-matter check (threshold {SAME_MATTER_THRESHOLD}; chosen on the tuning part: "
             f"{choose_threshold(tuning)}; target: recall >= {TARGET_RECALL:.0%}, "
             f"different-matter refused <= {TARGET_FALSE_REFUSALS:.0%})"]
    for name, part in (("tuning", tuning), ("held out", held_out), ("all", pairs)):
        lines.append("  " + figures(part).line(name))
    return lines


if __name__ == "__main__":
    print("\n".join(report()))
