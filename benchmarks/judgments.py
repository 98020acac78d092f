"""How the record's refusals judge, both ways, on the labelled set in tests/data/judgments/ (its README says how
the set was made).

Three vaults of a realistic size (60, 150 and 300 decisions) are recorded as an agent and the owner would, and
each labelled case goes through the real operation on its own copy of its vault:

- `ask`: a question the agent puts (`commands.ask.ask`); `rule`: a ruling given directly (`commands.rule.rule`);
- the question hook: each question (the `ask` cases) as Claude Code's `AskUserQuestion` (`hooks.answer`, pre-tool-use), each
  in a session of its own;
- the supersede check: a ruling given with `--supersedes ID` and a reason (tests/data/judgments/supersessions.jsonl).

For each, per tier (strong: the same matter; possible: shown for the agent to judge; topic: a topic key
shared with a current ruling or an open question), the figures are: of the same-matter cases, those refused
naming a decision they are on (caught); of the different-matter cases, those refused (wrongly stopped). The
targets (issue: judgments worth obeying): different matters refused at most 5% by all tiers together and at
most 1% by the strong tier; same matters caught at least 90% by all tiers together.

    python benchmarks/judgments.py
"""
from __future__ import annotations

import datetime as dt
import json
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vault_tools import matter
from vault_tools.agents import hooks
from vault_tools.commands.ask import ask
from vault_tools.commands.rule import rule
from vault_tools.commands.setup import init_vault
from vault_tools.errors import PossibleMatch, Refused
from vault_tools.reconcile import reconcile
from vault_tools.services.workspace import Workspace
from vault_tools.topics import topics_match
from vault_tools.vault import Vault

SET = Path(__file__).resolve().parent.parent / "tests" / "data" / "judgments"
TARGET_CAUGHT = 0.90  # same matters refused by either tier, naming one of them, at least
TARGET_STOPPED = 0.05  # different matters refused by either tier, at most
TARGET_STOPPED_STRONG = 0.01  # ... by the strong tier, at most
HELD_OUT = 5  # every fifth case of cases.jsonl is held out: the thresholds are chosen on the others


@dataclass(frozen=True)
class Case:
    vault: str
    kind: str  # ask, rule or supersede
    text: str
    topics: tuple[str, ...]
    same_as: tuple[str, ...]  # the set's ids; empty: a different matter
    category: str
    reason: str = ""

    @property
    def same(self) -> bool:
        return bool(self.same_as)


    @property
    def held_out(self) -> bool:
        return self.number % HELD_OUT == HELD_OUT - 1

    number: int = 0  # its line in cases.jsonl


@dataclass(frozen=True)
class Outcome:
    tier: str | None  # strong, possible, topic, or None: went through
    named: tuple[str, ...]  # the ids the refusal names
    topic_first: bool = False  # a ruling the topic rule refused first, then given --alongside-all


def load_cases() -> list[Case]:
    cases = []
    for number, line in enumerate((SET / "cases.jsonl").read_text(encoding="utf-8").splitlines()):
        item = json.loads(line)
        cases.append(Case(item["vault"], item["kind"], item["text"], tuple(item["topics"]), tuple(item["same_as"]),
                          item["category"], number=number))
    for line in (SET / "supersessions.jsonl").read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        # a valid supersession is "the same matter" as its target: it should go through; a mistyped target
        # (valid false) should be refused
        cases.append(Case(item["vault"], "supersede", item["text"], tuple(item["topics"]), (item["supersedes"],),
                          "valid" if item["valid"] else "mistyped", item["reason"]))
    return cases


def load_vault(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (SET / "vaults" / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()]


# -- the thresholds, chosen on the words alone ----------------------------------------------------------------

def scores(case: Case, decisions: Sequence[dict[str, Any]]) -> list[tuple[str, float, float]]:
    """Each decision of the case's vault the check scores, with the case's score against it with its topic keys and
    by its text alone (`matter.matches`, as `commands.same.same_matter` calls it): all of them for a question, those
    under other topics for a ruling (its own topics are `rule`'s topic refusal). A decision's words are those
    `decision_words.decision_terms` reads of the notes `make_vault` writes (summary, topics, the summary again as its section)."""
    candidates = [(item, matter.terms("\n".join((item["summary"], *item["topics"], item["summary"]))), number)
                  for number, item in enumerate(decisions)
                  if case.kind != "rule" or not any(topics_match(mine, theirs) for mine in case.topics
                                                    for theirs in item["topics"])]
    answers = (lambda item: item["status"] == "open") if case.kind == "rule" else None
    return [(found.decision["id"], found.score, found.text_alone)
            for found in matter.matches(case.text, case.topics, candidates, 0.0, answers)]


@dataclass(frozen=True)
class Split:
    """The check's figures at two thresholds on some cases: same matters caught, different matters stopped."""

    same: int
    caught: int
    different: int
    stopped: int
    stopped_strong: int

    def line(self, name: str) -> str:
        return (f"{name:<9} same matters caught {_share(self.caught, self.same)}; different matters refused "
                f"{_share(self.stopped, self.different)} (strong tier {_share(self.stopped_strong, self.different)})")


def split_figures(scored: Sequence[tuple[Case, list[tuple[str, float, float]]]], strong: float,
                  possible: float) -> Split:
    same = caught = different = stopped = stopped_strong = 0
    for case, found in scored:
        refused = {decision for decision, score, alone in found if matter.tier(score, alone, strong, possible)}
        if case.same:
            same += 1
            caught += bool(refused & set(case.same_as))
        else:
            different += 1
            stopped += bool(refused)
            stopped_strong += any(score >= strong for _, score, _ in found)
    return Split(same, caught, different, stopped, stopped_strong)


def scored_cases(cases: Sequence[Case]) -> list[tuple[Case, list[tuple[str, float, float]]]]:
    vaults = {name: load_vault(name) for name in {case.vault for case in cases}}
    return [(case, scores(case, vaults[case.vault])) for case in cases if case.kind in ("ask", "rule")]


def choose_thresholds(cases: Sequence[Case]) -> tuple[float, float]:
    """The strong tier: the lowest two-decimal threshold at which it refuses at most TARGET_STOPPED_STRONG of the
    different matters; the possible tier: the lowest at which both together refuse at most TARGET_STOPPED."""
    steps = [value / 100 for value in range(1, 101)]
    # A decision scored under the lowest step either way is refused at no step: left out, the figures are the same
    scored = [(case, [found for found in each if max(found[1], found[2]) >= steps[0]])
              for case, each in scored_cases(cases)]

    def strong_holds(value: float) -> bool:
        split = split_figures(scored, value, 1.01)
        return split.stopped_strong <= TARGET_STOPPED_STRONG * split.different

    def possible_holds(value: float) -> bool:
        split = split_figures(scored, strong, value)
        return split.stopped <= TARGET_STOPPED * split.different

    strong = next(value for value in steps if strong_holds(value))
    possible = next(value for value in steps if value <= strong and possible_holds(value))
    return strong, possible


def make_vault(root: Path, name: str) -> dict[str, str]:
    """The set's vault `name` at `root`: its decisions written as notes, as the owner writes them in Obsidian
    (with their ids), then recorded and sealed as the watcher does. The set's id -> the vault's (the same)."""
    items = load_vault(name)
    (root / ".obsidian").mkdir(parents=True, exist_ok=True)
    init_vault(root, timezone="Europe/Lisbon")
    folder = root / "Decisions"
    folder.mkdir()
    for number, item in enumerate(items):
        day = dt.date(2026, 1, 1) + dt.timedelta(days=number % 300)
        when = "ruled_at" if item["status"] == "ruled" else "asked_at"
        section = "Ruling" if item["status"] == "ruled" else "Question"
        fields = {"type": "decision", "id": item["id"], "status": item["status"], "topics": item["topics"],
                  "summary": item["summary"], when: f"{day.isoformat()}T09:00:00"}
        front = "\n".join(f"{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in fields.items())
        (folder / f"{item['id']}.md").write_text(f"---\n{front}\n---\n## {section}\n{item['summary']}\n",
                                                 encoding="utf-8")
    later = time.time() + 1
    reconcile(Workspace(Vault(root)), quiet_before=later, seal_before=later)
    return {item["id"]: item["id"] for item in items}


def refused(call: Callable[[], object]) -> Outcome:
    """What an operation did: went through, or which tier refused it and the ids it named."""
    try:
        call()
    except PossibleMatch as error:
        return Outcome("strong" if error.same else "possible", error.nearest)
    except Refused as error:  # the topic rule, or a supersession's target refused
        return Outcome("topic", tuple(matter.named_ids("\n".join((str(error), *error.details)))))
    return Outcome(None, ())


def through_command(case: Case, root: Path, ids: dict[str, str]) -> Outcome:
    ws = Workspace(Vault(root))
    if case.kind == "ask":
        return refused(lambda: ask(ws, case.text, case.topics))
    if case.kind == "rule":
        first = refused(lambda: rule(ws, None, case.text, topics=case.topics, source="chat"))
        if first.tier != "topic":
            return first
        # what an agent does that is told the topic's rulings stand beside this one: say so, and meet the check
        again = refused(lambda: rule(ws, None, case.text, topics=case.topics, source="chat", alongside_all=True))
        return again if again.tier == "topic" else Outcome(again.tier, again.named, topic_first=True)
    return refused(lambda: rule(ws, None, case.text, topics=case.topics, source="chat",
                                supersedes=[ids[case.same_as[0]]], reason=case.reason))


def through_hook(case: Case, root: Path, number: int) -> Outcome:
    question = {"question": case.text, "header": "Question", "multiSelect": False,
                "options": [{"label": "Yes", "description": "Yes"}, {"label": "No", "description": "No"}]}
    payload = {"hook_event_name": "PreToolUse", "session_id": f"judgments-{number}", "cwd": str(root),
               "tool_name": "AskUserQuestion", "tool_input": {"questions": [question]}}
    answer = hooks.answer("pre-tool-use", payload, root, hooks.CLAUDE_BOUNDS)
    specific = (answer or {}).get("hookSpecificOutput") or {}
    if specific.get("permissionDecision") != "deny":
        return Outcome(None, ())
    reason = specific["permissionDecisionReason"]
    tier = "possible" if "may be about" in reason else "strong"
    return Outcome(tier, tuple(matter.named_ids(reason)))


@dataclass
class Tally:
    """One route's figures. A case the topic rule refused (a topic key of the case shared with a current ruling or an
    open question: `ask` refuses it as settled or open, `rule` asks which way it goes) is counted apart: a question
    refused so never reaches the same-matter check and is out of its figures; a ruling is given again with
    `--alongside-all`, as an agent told the topic's rulings stand beside it does, and then meets the check."""

    same: int = 0
    different: int = 0
    caught: Counter[str] = field(default_factory=Counter)  # by tier
    stopped: Counter[str] = field(default_factory=Counter)
    topic: Counter[bool] = field(default_factory=Counter)  # cases the topic rule refused, by whether same

    def add(self, case: Case, outcome: Outcome, ids: dict[str, str]) -> None:
        if outcome.tier == "topic" or outcome.topic_first:
            self.topic[case.same] += 1
        if outcome.tier == "topic":
            return
        if case.same:
            self.same += 1
            wanted = {ids[i] for i in case.same_as}
            if outcome.tier and wanted & set(outcome.named):
                self.caught[outcome.tier] += 1
        else:
            self.different += 1
            if outcome.tier:
                self.stopped[outcome.tier] += 1

    def line(self, name: str) -> str:
        tiers = ("strong", "possible", "target")
        per_caught = ", ".join(f"{tier} {self.caught[tier]}" for tier in tiers if self.caught[tier])
        per_stopped = ", ".join(f"{tier} {self.stopped[tier]}" for tier in tiers if self.stopped[tier])
        topic = (f"; the topic rule refused {self.topic[True]} same and {self.topic[False]} different"
                 if self.topic else "")
        return (f"{name:<16} same matters caught {_share(sum(self.caught.values()), self.same)}"
                f"{f' ({per_caught})' if per_caught else ''}; different matters refused "
                f"{_share(sum(self.stopped.values()), self.different)}{f' ({per_stopped})' if per_stopped else ''}"
                + topic)

    def meets_target(self) -> bool:
        return (sum(self.caught.values()) >= TARGET_CAUGHT * self.same
                and sum(self.stopped.values()) <= TARGET_STOPPED * self.different
                and self.stopped["strong"] <= TARGET_STOPPED_STRONG * self.different)


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({part / whole:.0%})" if whole else "0/0"


def measure(cases: Sequence[Case], workdir: Path) -> dict[str, Tally]:
    tallies = {name: Tally() for name in ("ask", "rule", "question hook", "supersede")}
    supersede = {"valid": Tally(), "mistyped": Tally()}
    for name in sorted({case.vault for case in cases}):
        built = workdir / name / "built"
        ids = make_vault(built, name)
        for number, case in enumerate(case for case in cases if case.vault == name):
            copy = workdir / name / f"case-{number}"
            shutil.copytree(built, copy)
            outcome = through_command(case, copy, ids)
            if case.kind == "supersede":
                if outcome.tier == "topic":  # the target refused as on no shared matter
                    outcome = Outcome("target", outcome.named)
                # valid: a real replacement, to go through; mistyped: an unrelated target, to be refused
                supersede[case.category].add(
                    Case(case.vault, case.kind, case.text, case.topics,
                         case.same_as if case.category == "mistyped" else (), case.category), outcome, ids)
            else:
                tallies[case.kind].add(case, outcome, ids)
                if case.kind == "ask":  # the question hook sees questions only
                    tallies["question hook"].add(case, through_hook(case, built, number), ids)
            shutil.rmtree(copy)
    valid, mistyped = supersede["valid"], supersede["mistyped"]
    tallies["supersede"] = Tally(mistyped.same, valid.different, mistyped.caught, valid.stopped, valid.topic)
    return tallies


def report() -> list[str]:
    cases = load_cases()
    tuning, held_out = [case for case in cases if not case.held_out], [case for case in cases if case.held_out]
    strong, possible = choose_thresholds(tuning)
    lines = [f"Same-matter check's thresholds chosen on the tuning part (4/5 of the cases): strong {strong}, possible "
             f"{possible} (in use: {matter.SAME_MATTER_THRESHOLD}, {matter.POSSIBLE_MATCH_THRESHOLD}); by the words "
             "alone, ask and rule cases:"]
    for name, part in (("tuning", tuning), ("held out", held_out), ("all", cases)):
        lines.append("  " + split_figures(scored_cases(part), strong, possible).line(name))
    with tempfile.TemporaryDirectory() as folder:
        tallies = measure(cases, Path(folder))
    counts = Counter((case.kind, case.same) for case in cases)
    lines += ["Through the commands and the hook, each case on its own copy of its vault ("
             + ", ".join(f"{kind} {counts[kind, True]} same / {counts[kind, False]} different"
                         for kind in ("ask", "rule")) + f", supersede {counts['supersede', True]}): "
             f"targets caught >= {TARGET_CAUGHT:.0%}, refused <= {TARGET_STOPPED:.0%} "
             f"(strong <= {TARGET_STOPPED_STRONG:.0%}; the topic tier, a topic key shared with a current ruling or "
             "an open question, is the design's own rule and counted apart)"]
    for name, tally in tallies.items():
        label = name if name != "supersede" else "supersede"
        lines.append(tally.line(label) + ("" if tally.meets_target() else "  [target missed]"))
    lines.append("  (supersede: 'caught' is a mistyped target refused; 'different matters refused' a real "
                 "replacement refused)")
    return lines


if __name__ == "__main__":
    print("\n".join(report()))
