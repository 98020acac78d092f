"""The same-matter check's two tiers on the labelled pairs in tests/data/same_question_pairs.jsonl.

Each pair is a question (with its topic keys) and a ruling (its summary and topic keys) labelled `same`
(the same matter in other words) or not (a different matter sharing words). The two floors were once chosen
here (design 0031, 0042); they are now chosen on the larger set of tests/data/judgments/ (design 0045,
`benchmarks/judgments.py`), and these pairs, written before it, are a second check of them: one question
against one ruling each, where the judgments put a case against a whole vault.

    python benchmarks/same_question.py
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from vault_tools.matter import POSSIBLE_MATCH_THRESHOLD, SAME_MATTER_THRESHOLD, question_terms, similarity, terms

PAIRS = Path(__file__).resolve().parent.parent / "tests" / "data" / "same_question_pairs.jsonl"
TARGET_FALSE_REFUSALS = 0.03  # of different-matter pairs the strong tier refuses, at most


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
        """The question with its topic keys (the strong tier's score)."""
        return similarity(question_terms(self.question, self.topics), self._theirs())

    def loose_score(self) -> float:
        """The better of that and the question's text alone (the possible tier's: `matter.tier`)."""
        return max(self.score(), similarity(question_terms(self.question), self._theirs()))

    def _theirs(self) -> frozenset[str]:
        return terms("\n".join((self.ruling, *self.ruling_topics)))


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
        return self.false_refusals <= TARGET_FALSE_REFUSALS

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
    """The strong tier's figures at `threshold`, or, under SAME_MATTER_THRESHOLD, both tiers' (the possible
    tier scores a question by its text alone too)."""
    scores = [(pair.score() if threshold >= SAME_MATTER_THRESHOLD else pair.loose_score(), pair.same)
              for pair in pairs]
    return Figures(len(pairs), sum(same for _, same in scores),
                   sum(1 for score, same in scores if same and score >= threshold),
                   sum(1 for score, same in scores if not same and score >= threshold))


def report() -> list[str]:
    pairs = load_pairs()
    tuning = [pair for pair in pairs if not pair.held_out]
    held_out = [pair for pair in pairs if pair.held_out]
    lines = [f"same-matter check on the older pairs, strong tier (threshold {SAME_MATTER_THRESHOLD}; target: "
             f"different-matter refused <= {TARGET_FALSE_REFUSALS:.0%})"]
    for name, part in (("tuning", tuning), ("held out", held_out), ("all", pairs)):
        lines.append("  " + figures(part).line(name))
    lines.append(f"same-matter check on the older pairs, both tiers (possible match from {POSSIBLE_MATCH_THRESHOLD}; "
                 "a different matter over it is refused, with the decision for the asker to judge)")
    for name, part in (("tuning", tuning), ("held out", held_out), ("all", pairs)):
        lines.append("  " + figures(part, POSSIBLE_MATCH_THRESHOLD).line(name))
    return lines


if __name__ == "__main__":
    print("\n".join(report()))
