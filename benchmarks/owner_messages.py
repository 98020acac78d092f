"""What the owner's message brings in: recall, noise and precision of the `user-prompt-submit` hook on the
labelled messages in tests/data/owner_messages.json (its `about` says how the set was made).

A real vault is made from the set's decisions (rulings with their text, open questions, questions withdrawn
and rulings retracted with their reasons), and each message goes through the hook as Claude Code sends it.
The figures:

- recall: of the messages about something recorded, those that bring in a decision they are about;
- noise: of the messages about nothing recorded, those that bring in anything;
- precision: of all the decisions brought in, those on the message's matter.

The messages are split in two by a hash of their text: the floor (`matter.MESSAGE_FLOOR`, and the share of the
best score `matter.MESSAGE_SHARE`) is chosen on the tuning part only (the highest recall with noise at most 10%
and precision at least 80%), and the held-out part says how it does on messages it was not chosen on.

    python benchmarks/owner_messages.py
"""
from __future__ import annotations

import hashlib
import json
import re
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from vault_tools import matter
from vault_tools.agents import hooks, recall, snapshot
from vault_tools.commands.ask import ask
from vault_tools.commands.close import retract, withdraw
from vault_tools.commands.rule import rule
from vault_tools.commands.setup import init_vault
from vault_tools.reconcile import reconcile
from vault_tools.services.workspace import Workspace
from vault_tools.vault import Vault

SET = Path(__file__).resolve().parent.parent / "tests" / "data" / "owner_messages.json"
TARGET_RECALL, TARGET_NOISE, TARGET_PRECISION = 0.90, 0.10, 0.80
FLOORS = [value / 4 for value in range(16, 41)]  # 4.0 .. 10.0
SHARES = [0.5, 0.6, 0.7, 0.8, 0.9]


@dataclass(frozen=True)
class Message:
    text: str
    about: frozenset[str]  # the topics of the decisions it is about; empty: about nothing recorded
    held_out: bool = False


def load(path: Path = SET) -> tuple[list[dict[str, str]], list[Message]]:
    """The set's decisions and messages. A third of the messages about something, and a third of those about
    nothing, are held out: every third in the order of a hash of their text."""
    data = json.loads(path.read_text(encoding="utf-8"))
    messages = []
    for related in (True, False):
        part = sorted((m for m in data["messages"] if bool(m["about"]) is related),
                      key=lambda m: hashlib.sha256(m["message"].encode()).hexdigest())
        messages += [Message(m["message"], frozenset(m["about"]), position % 3 == 0) for position, m in enumerate(part)]
    return data["decisions"], messages


def make_vault(root: Path, decisions: Sequence[dict[str, str]]) -> dict[str, str]:
    """The set's decisions recorded in a new vault at `root`, as an agent and the owner would: topic -> id."""
    (root / ".obsidian").mkdir(parents=True, exist_ok=True)
    init_vault(root, timezone="Europe/Berlin")
    ws = Workspace(Vault(root))
    ids: dict[str, str] = {}
    for item in decisions:
        topic, summary, text = item["topic"], item["summary"], item.get("text")
        if item["kind"] == "proposal":  # the owner types a new ruling into the sealed one: it becomes a revision
            ids[topic] = _typed_into(root, ws, ids[item["revises"]], summary)
            continue
        if item["kind"] == "reask":  # a question asked again on a ruled matter, saying what changed
            ids[topic] = ask(ws, summary, [item["reasks"]], body=text, reask_reason=item["reason"],
                             not_the_same=list(ids.values())).id
            continue
        if item["kind"] in ("ruling", "retracted"):
            made = rule(ws, None, summary, topics=[topic], source="chat", body=text, not_the_same=list(ids.values()))
            if item["kind"] == "retracted":
                retract(ws, made.id, item["reason"])
        else:  # a question; the set's own questions are told apart by hand
            made = ask(ws, summary, [topic], body=text, not_the_same=list(ids.values()))
            if item["kind"] == "withdrawn":
                withdraw(ws, made.id, item["reason"])
        ids[topic] = made.id
    return ids


def _typed_into(root: Path, ws: Workspace, ruling_id: str, summary: str) -> str:
    """Type `summary` over a sealed ruling's summary, as the owner would in Obsidian, and let the watcher's pass
    make it a proposed revision (an open question naming the ruling in `supersedes`): the revision's id."""
    note = ws.vault.path_of(ws.find(ws.state(), ruling_id))
    text = note.read_text(encoding="utf-8")
    old = next(line for line in text.splitlines() if line.startswith("summary:"))
    note.write_text(text.replace(old, f"summary: {summary}", 1), encoding="utf-8")
    later = time.time() + 1  # past the quiet window: the owner has stopped typing
    reconcile(ws, quiet_before=later, seal_before=later)
    state = Workspace(Vault(root)).state()
    return next(d.id for d in state.decisions if d.status.value == "open" and d.summary == summary)


_ID = re.compile(r"\((D-\d+(?:-[0-9a-z]+)?)[;,)]")  # D-0001, or D-0001-4fpb in the shared layout


def brought_in(root: Path, message: str) -> list[str]:
    """The ids the hook's answer names, in its order: the hook run as Claude Code runs it (in this process)."""
    told = hooks.answer("user-prompt-submit", {"prompt": message, "cwd": str(root)}, root)
    if told is None:
        return []
    text = told["hookSpecificOutput"]["additionalContext"]
    return [found.group(1) for line in text.splitlines() if line.startswith("- ") for found in [_ID.search(line)]
            if found]


def answers(root: Path, messages: Sequence[Message]) -> list[tuple[Message, list[str]]]:
    """What the hook brings in for each message (`brought_in`, without reading the snapshot again for each)."""
    kept = snapshot.load(root, hooks.CLAUDE_BOUNDS.session_budget)
    return [(message, [found.item.id for found in recall.brought_in(message.text, kept)]) for message in messages]


@dataclass(frozen=True)
class Figures:
    related: int
    found: int  # related messages that brought in a decision they are about
    unrelated: int
    noisy: int  # unrelated messages that brought anything in
    brought: int  # decisions brought in, in all
    on_the_matter: int

    @property
    def recall(self) -> float:
        return self.found / self.related if self.related else 1.0

    @property
    def noise(self) -> float:
        return self.noisy / self.unrelated if self.unrelated else 0.0

    @property
    def precision(self) -> float:
        return self.on_the_matter / self.brought if self.brought else 1.0

    def meets_target(self) -> bool:
        return self.recall >= TARGET_RECALL and self.noise <= TARGET_NOISE and self.precision >= TARGET_PRECISION

    def line(self, name: str) -> str:
        return (f"{name:<10} {self.related + self.unrelated:>3} messages: recall {self.recall:.0%} "
                f"({self.found}/{self.related}), noise {self.noise:.0%} ({self.noisy}/{self.unrelated}), "
                f"precision {self.precision:.0%} ({self.on_the_matter}/{self.brought})")


def figures(answers: Sequence[tuple[Message, Sequence[str]]], ids: dict[str, str]) -> Figures:
    related = found = unrelated = noisy = brought = on = 0
    for message, given in answers:
        wanted = {ids[topic] for topic in message.about}
        if wanted:
            related += 1
            found += bool(wanted & set(given))
        else:
            unrelated += 1
            noisy += bool(given)
        brought += len(given)
        on += len(wanted & set(given))
    return Figures(related, found, unrelated, noisy, brought, on)


def with_the_ruling_in_force(root: Path, given: Sequence[tuple[Message, Sequence[str]]]) -> tuple[int, int]:
    """Of the messages that bring in an open question, a proposed revision or a closed decision on a matter with a
    current ruling, those that bring that ruling in too: (with it, all such)."""
    kept = snapshot.load(root, hooks.CLAUDE_BOUNDS.session_budget)
    concerns = {question.id: set(question.concerns) for question in kept.questions if question.concerns}
    such = [set(brought) for _, brought in given if any(item in concerns for item in brought)]
    with_it = sum(all(concerns[item] <= brought for item in brought if item in concerns) for brought in such)
    return with_it, len(such)


def choose_floor(root: Path, messages: Sequence[Message], ids: dict[str, str]) -> tuple[float, float]:
    """The (floor, share of the best) with the most messages answered right on `messages` (recall less noise)
    and precision within its target, chosen on the hook's own scores (`recall.candidates` on the vault's
    snapshot). On a tie the pair in use stays, when it is among the best: the tuning part cannot tell them
    apart, and a floor that moved whenever a message is added would move for nothing; else the higher floor
    and share."""
    kept = snapshot.load(root, hooks.CLAUDE_BOUNDS.session_budget)
    found = [(message, [(value, brought.item.id) for value, brought in recall.candidates(message.text, kept)])
             for message in messages]
    scores: dict[tuple[float, float], float] = {}
    for floor in FLOORS:
        for share in SHARES:
            answers = [(message, [scored[position][1] for _, position in matter.brought_in(
                ((value, position) for position, (value, _) in enumerate(scored)), floor, share)])
                for message, scored in found]
            figured = figures(answers, ids)
            if figured.precision >= TARGET_PRECISION:
                scores[floor, share] = round(figured.recall - figured.noise, 9)
    if not scores:
        return matter.MESSAGE_FLOOR, matter.MESSAGE_SHARE
    top = max(scores.values())
    in_use = (matter.MESSAGE_FLOOR, matter.MESSAGE_SHARE)
    return in_use if scores.get(in_use) == top else max(pair for pair, value in scores.items() if value == top)


def report() -> list[str]:
    decisions, messages = load()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "vault"
        ids = make_vault(root, decisions)
        given = answers(root, messages)  # the hook's own answers name the same (tests/test_owner_messages.py)
        tuning = [message for message in messages if not message.held_out]
        floor, share = choose_floor(root, tuning, ids)
        in_force, such = with_the_ruling_in_force(root, given)
    unrelated = sum(1 for message in messages if not message.about)
    lines = [f"owner's message (user-prompt-submit): {len(messages)} messages ({unrelated} about nothing recorded), "
             f"{len(decisions)} decisions; floor {matter.MESSAGE_FLOOR} at {matter.MESSAGE_SHARE:.0%} of the best "
             f"(chosen on the tuning part: {floor} at {share:.0%}); target: recall >= {TARGET_RECALL:.0%}, "
             f"noise <= {TARGET_NOISE:.0%}, precision >= {TARGET_PRECISION:.0%}"]
    for name, part in (("tuning", [a for a in given if not a[0].held_out]),
                       ("held out", [a for a in given if a[0].held_out]), ("all", given)):
        lines.append("  " + figures(part, ids).line(name))
    lines.append(f"  an open question, a proposed revision or a closed decision on a ruled matter came with the ruling "
                 f"in force: {in_force}/{such} messages (target: all)")
    return lines


if __name__ == "__main__":
    print("\n".join(report()))
