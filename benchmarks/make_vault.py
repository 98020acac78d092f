"""A seeded generator of realistic synthetic vaults for the benchmarks.

    python benchmarks/make_vault.py PATH --notes 10000 [--seed 1]
    python benchmarks/make_vault.py PATH --notes 0 --decisions 1000 --max-open 20 [--oversized]

About 10% of the notes are decision notes (rulings, supersession chains, open
questions); the rest are ordinary notes with frontmatter, wikilinks, callouts
and bodies whose sizes follow a log-normal law (mean about 2 KB, a long tail
up to 200 KB), in nested folders. Rulings are sealed through the real commands,
so the ledger is consistent and `lint` sees a vault in good order.
"""
from __future__ import annotations

import argparse
import datetime as dt
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vault_tools.commands.seal import seal
from vault_tools.commands.setup import init_vault
from vault_tools.services.workspace import Workspace
from vault_tools.vault import Vault

WORDS = ["article", "footer", "newsletter", "author", "promotion", "reader", "reply", "sign-off", "pricing", "sale", "draft", "edition", "archive", "category", "tag", "editor", "publish", "schedule", "budget", "sponsor", "podcast", "episode", "guest", "review", "policy", "template", "index", "summary", "weekly", "monthly", "plan", "launch", "audience", "growth", "metric", "survey"]
FOLDERS = ("Projects/Newsletter", "Projects/Blog", "Projects/Podcast/Episodes", "Areas/Publishing",
           "Areas/Finance", "Resources/Reading", "Daily/2025", "Daily/2026", "Meetings", "People")
BIG_FOLDER = "01 - Community"
MEAN_BODY_BYTES = 2048
MAX_BODY_BYTES = 200 * 1024


def sentence(rng: random.Random, links: list[str]) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(6, 16))]
    if links and rng.random() < 0.3:
        words.insert(rng.randrange(len(words)), f"[[{rng.choice(links)}]]")
    return " ".join(words).capitalize() + "."


def body(rng: random.Random, links: list[str]) -> str:
    sigma = 1.0
    target = min(MAX_BODY_BYTES, int(rng.lognormvariate(math.log(MEAN_BODY_BYTES) - sigma ** 2 / 2, sigma)))
    parts: list[str] = []
    size = 0
    while size < target:
        roll = rng.random()
        if roll < 0.1:
            part = f"## {rng.choice(WORDS).capitalize()} {rng.choice(WORDS)}"
        elif roll < 0.2:
            part = f"> [!{rng.choice(['note', 'tip', 'warning'])}]\n> {sentence(rng, links)}"
        elif roll < 0.35:
            part = "\n".join(f"- {sentence(rng, links)}" for _ in range(rng.randint(2, 5)))
        else:
            part = " ".join(sentence(rng, links) for _ in range(rng.randint(2, 6)))
        parts.append(part)
        size += len(part) + 2
    return "\n\n".join(parts) + "\n"


def ordinary_note(rng: random.Random, index: int, links: list[str]) -> str:
    created = dt.date(2024, 1, 1) + dt.timedelta(days=rng.randrange(1000))
    tags = ", ".join(rng.sample(WORDS, rng.randint(1, 3)))
    front = [f"created: {created.isoformat()}", f"tags: [{tags}]"]
    if rng.random() < 0.3:
        front.append(f'aliases: ["{rng.choice(WORDS)} {index}"]')
    if rng.random() < 0.2:
        front.append(f'related: "[[{rng.choice(links)}]]"' if links else "related:")
    return "---\n" + "\n".join(front) + "\n---\n" + body(rng, links)


def decision_note(rng: random.Random, number: int, status: str, topic: str, day: dt.date,
                  supersedes: str | None, alongside: list[str]) -> str:
    summary = f"Ruling {number} on {topic.replace('-', ' ')}: " + sentence(rng, [])[:60].rstrip(".") + "."
    lines = ["type: decision", f"id: D-{number:05d}", f"status: {status}", f"topics: [{topic}]",
             f'summary: "{summary}"', f"asked_at: {day.isoformat()}T09:00:00", "asked_by: agent"]
    if status == "ruled":
        lines += [f"ruled_at: {day.isoformat()}T17:00:00", "ruled_by: owner", 'source: "chat"']
    if supersedes:
        lines += [f'supersedes: ["[[{supersedes}]]"]', "reason: The owner changed course after a review of results."]
    if alongside:  # the other current rulings on its topic, which it does not replace (as lint asks)
        lines.append("alongside: [" + ", ".join(f'"[[{title}]]"' for title in alongside) + "]")
    return "---\n" + "\n".join(lines) + "\n---\n## Question\n\n" + sentence(rng, []) + "\n\n" + body(rng, [])


def oversized_note(number: int) -> str:
    """One ruling as no owner should write it: 10,000 topics and a 1 MB summary."""
    topics = ", ".join(f"oversized-topic-{n}" for n in range(10000))
    summary = "An enormous ruling that goes on and on. " * 26000
    return ("---\n" + "\n".join(["type: decision", f"id: D-{number:05d}", "status: ruled", f"topics: [{topics}]",
                                 f'summary: "{summary.strip()}"', "ruled_at: 2026-11-01T17:00:00", "ruled_by: owner",
                                 'source: "chat"']) + "\n---\n## Ruling\n\nSee the summary.\n")


def make_vault(root: Path, notes: int, seed: int = 1, decisions: int | None = None, max_open: int | None = None,
               oversized: bool = False, unsealed: bool = False, shared: bool = False, big_folder: int = 0) -> Path:
    """`notes` notes, a tenth of them decisions unless `decisions` says how many (then on top of `notes`);
    about 8% of the decisions are open questions, at most `max_open`. With `unsealed`, nothing is recorded:
    the rulings wait for the watcher, as after an import or on a vault filled by hand. With `shared`, the
    record is in the shared layout `init` makes (`vault-tools/`, one ledger file per device), else hidden.
    With `big_folder`, that many of the ordinary notes are in one folder, `BIG_FOLDER`."""
    rng = random.Random(seed)
    (root / ".obsidian").mkdir(parents=True, exist_ok=True)
    init_vault(root, "UTC", shared=shared)
    if decisions is None:
        decisions = notes // 10
        notes -= decisions
    opened = 0
    topics = [f"{rng.choice(WORDS)}-{rng.choice(WORDS)}-{n}" for n in range(max(1, decisions // 4))]
    titles: list[str] = []
    latest_by_topic: dict[str, str] = {}
    current_by_topic: dict[str, list[str]] = {}
    start = dt.date(2024, 1, 1)
    for number in range(1, decisions + 1):
        topic = rng.choice(topics)
        day = start + dt.timedelta(days=number * 900 // max(decisions, 1))
        status = "open" if rng.random() < 0.08 and (max_open is None or opened < max_open) else "ruled"
        opened += status == "open"
        supersedes = latest_by_topic.get(topic) if status == "ruled" and rng.random() < 0.3 else None
        title = f"D-{number:05d} Ruling on {topic}"
        path = root / "Decisions" / f"{title}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        current = current_by_topic.setdefault(topic, [])
        if supersedes:
            current.remove(supersedes)
        alongside = list(current) if status == "ruled" else []
        path.write_text(decision_note(rng, number, status, topic, day, supersedes, alongside), encoding="utf-8")
        if status == "ruled":
            latest_by_topic[topic] = title
            current.append(title)
        titles.append(title)
    for index in range(notes):
        folder = root / (BIG_FOLDER if index < big_folder else rng.choice(FOLDERS))
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{rng.choice(WORDS).capitalize()} {rng.choice(WORDS)} {index}"
        (folder / f"{name}.md").write_text(ordinary_note(rng, index, [*titles[-50:], name]), encoding="utf-8")
    if not unsealed:
        seal(Workspace(Vault(root)))  # seals the rulings and applies their supersedes, as the watcher would
    if oversized:  # written after: sealing refuses a note over the field limits, so it stays a ruling not sealed
        (root / "Decisions" / f"D-{decisions + 1:05d} Oversized.md").write_text(oversized_note(decisions + 1),
                                                                               encoding="utf-8")
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--decisions", type=int, help="decision notes, on top of --notes (default: a tenth of --notes)")
    parser.add_argument("--max-open", type=int, help="at most this many open questions (default: about 8%%)")
    parser.add_argument("--oversized", action="store_true", help="add one ruling with 10,000 topics and a 1 MB summary")
    parser.add_argument("--unsealed", action="store_true",
                        help="leave every ruling unsealed and the ledger empty, for the watcher to reconcile")
    parser.add_argument("--shared", action="store_true",
                        help="the shared layout `init` makes (vault-tools/, a ledger file per device), not the hidden one")
    parser.add_argument("--big-folder", type=int, default=0, help=f"put this many ordinary notes in {BIG_FOLDER!r}")
    args = parser.parse_args()
    make_vault(args.path, args.notes, args.seed, args.decisions, args.max_open, args.oversized, args.unsealed,
               args.shared, args.big_folder)
    print(f"{args.notes} notes in {args.path}")


if __name__ == "__main__":
    main()
