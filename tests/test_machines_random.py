"""Random work on several clones (`make soak`): asks, rulings, outcomes typed by hand, pulls and pushes in a
seeded order; `check_invariants` after every merge. VAULT_TOOLS_SOAK_SEED replays a run (tests/README.md).
"""
from __future__ import annotations

import json
import os
import random
import shutil
import time
from pathlib import Path

import pytest

from vault_tools import note_edits, notes
from vault_tools.model import CLONE_TAG_ALPHABET, CLONE_TAG_LENGTH

from .clones import Clone, check_invariants, clone, make_origin
from .git_repo import git


@pytest.mark.soak
def test_random_work_on_several_clones_merges_without_loss(tmp_path, capsys):
    """Random asks, rulings, supersessions, withdrawals and retractions on 2-3 clones, merged by pulls in
    between (merge or rebase); the invariants are checked after every pull. Bounded in time."""
    seed = int(os.environ.get("VAULT_TOOLS_SOAK_SEED", time.time_ns() % 10_000))
    _random_work_on_clones(tmp_path, capsys, seed, float(os.environ.get("VAULT_TOOLS_SOAK_SECONDS", "40")))


def _random_work_on_clones(tmp_path: Path, capsys: pytest.CaptureFixture[str], seed: int, budget: float) -> None:
    rng = random.Random(seed)
    tags = ["".join(rng.choice(CLONE_TAG_ALPHABET) for _ in range(CLONE_TAG_LENGTH)) for _ in range(4)]
    # what the owner typed is sealed by the next watcher
    origin = make_origin(tmp_path, capsys, seal_delay_seconds=0, tag=tags[0])
    clones = [clone(origin, name, tags[number]) for number, name in enumerate("ABC"[:rng.choice((2, 3))], 1)]
    deadline = time.monotonic() + budget
    words = ["podcast", "shop", "survey", "footer", "archive", "sponsor", "events", "merch"]
    counter = 0
    while time.monotonic() < deadline:
        for each in clones:
            for _ in range(rng.randint(1, 3)):
                counter += 1
                state = json.loads(each.vt("list", "--json")[1])
                open_ = [d["id"] for d in state if d["status"] == "open"]
                ruled = [d["id"] for d in state if d["status"] == "ruled"]
                action = rng.choice(["ask", "rule", "answer", "supersede", "withdraw", "retract", "typed"])
                topic = f"{rng.choice(words)}-{counter}"
                summary = f"Decision {counter} about {topic}, made on {each.root.name} (seed {seed})."
                if action == "ask":
                    # a refusal (the same matter asked under another key) is an outcome like any other
                    each.vt("ask", f"Question {counter} about {topic}, asked on {each.root.name}?", "--topic",
                            topic, expect=None)
                elif action == "answer" and open_:
                    each.vt("rule", rng.choice(open_), "--summary", summary, "--source", "chat", expect=None)
                elif action == "supersede" and ruled:
                    each.vt("rule", "--topic", topic, "--summary", summary, "--supersedes", rng.choice(ruled),
                            "--reason", f"Replaced on {each.root.name} in step {counter}.", expect=None)
                elif action == "withdraw" and open_:
                    each.vt("withdraw", rng.choice(open_), "--reason", f"Dropped on {each.root.name}, step {counter}.",
                            expect=None)
                elif action == "retract" and ruled:
                    each.vt("retract", rng.choice(ruled), "--reason", f"Recorded in error, step {counter}.",
                            expect=None)
                elif action == "typed" and (open_ or ruled):
                    # typed in Obsidian and committed before the watcher saw it (an Obsidian Git auto-commit); a
                    # ruling is retracted once the record holds it (an answer typed and then retracted before any
                    # watcher saw either is a lint error for the owner: test_an_answer_typed_then_retracted_...)
                    shown = {i: each.vt("show", i, "--json", expect=None) for i in ruled}
                    recorded = [i for i, (code, out, _) in shown.items() if code == 0 and json.loads(out)["sealed"]]
                    if not (open_ or recorded):
                        continue
                    _type_an_outcome(each, rng, open_, recorded, summary, f"Typed on {each.root.name} in step {counter}.")
                    git(each.root, "add", "-A")
                    git(each.root, "commit", "-q", "--no-verify", "-m", f"typed {counter}")
                    continue
                else:  # a refusal (every generated summary is near the others in words) is an outcome too
                    each.vt("rule", "--topic", topic, "--summary", summary, "--source", "chat", expect=None)
            each.commit(f"work {counter}")
        puller, other = rng.sample(clones, 2)
        before = [puller.decision_texts(), other.decision_texts()]
        puller.pull(other, rebase=rng.random() < 0.5)
        conflicts = len(json.loads(puller.vt("context", "--json")[1])["conflicts"])
        # Two clones that each ruled on one topic without knowing of the other are asked (VT016) which stands.
        check_invariants(puller, before, conflicts, also=("VT016",))
        for conflict in json.loads(puller.vt("context", "--json")[1])["conflicts"]:
            keep = conflict["settle"].split("--keep ")[1].split(" ")[0].split("|")[0]
            puller.vt("settle", conflict["id"], "--keep", keep, "--reason", f"Settled in the soak test, seed {seed}.")
        puller.commit("settled")
        check_invariants(puller, before, also=("VT016",))
    shutil.rmtree(tmp_path, ignore_errors=True)


def _type_an_outcome(each: Clone, rng: random.Random, open_: list[str], ruled: list[str], summary: str,
                     reason: str) -> None:
    """What the owner types in Obsidian: an answer or a withdrawal of an open question, or a retraction."""
    target = rng.choice(open_ + ruled)
    path = next(p for p in (each.root / "Decisions").iterdir() if p.name.startswith(target + " "))
    text = path.read_text(encoding="utf-8")
    if target in ruled:
        change = {"status": "retracted", "reason": reason}
    elif rng.random() < 0.5:
        change = {"status": "withdrawn", "reason": reason}
    else:
        change = {"status": "ruled", "summary": summary}
    note = notes.parse_text(text, path)
    path.write_text(note_edits.edited(note, change).text, encoding="utf-8")
