"""A seeded generator of an ADR folder (adr-tools format) for the import benchmark.

    python benchmarks/make_adrs.py PATH --count 2000 [--seed 1]

About one ADR in eight supersedes an earlier one (said on both sides, as adr-tools writes it), one in
twenty is deprecated, one in ten is still proposed; the rest are accepted. Bodies are a few paragraphs.
"""
from __future__ import annotations

import argparse
import random
from pathlib import Path

WORDS = ["cache", "queue", "database", "service", "deploy", "logging", "metrics", "tracing", "session", "token",
         "schema", "migration", "backup", "region", "cluster", "gateway", "client", "library", "format", "policy"]


def make_adrs(folder: Path, count: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    titles = []
    superseded_by: dict[int, int] = {}
    statuses: dict[int, str] = {}
    for number in range(1, count + 1):
        title = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 6))).capitalize() + f" {number}"
        titles.append(title)
        roll = rng.random()
        candidates = [n for n in range(max(1, number - 200), number) if n not in superseded_by
                      and statuses.get(n) == "Accepted"]
        if roll < 0.125 and candidates:
            superseded_by[rng.choice(candidates)] = number
            statuses[number] = "Accepted"
        else:
            statuses[number] = "Deprecated" if roll < 0.175 else "Proposed" if roll < 0.275 else "Accepted"
    supersedes = {new: old for old, new in superseded_by.items()}
    for number, title in enumerate(titles, 1):
        slug = title.lower().replace(" ", "-")
        status = statuses[number]
        if number in superseded_by:
            later = superseded_by[number]
            status = f"Superseded by [{later}. {titles[later - 1]}]({later:04d}-{titles[later - 1].lower().replace(' ', '-')}.md)"
        lines = [f"# {number}. {title}", "", f"Date: 2024-{1 + number % 12:02d}-{1 + number % 28:02d}", "",
                 "## Status", "", status]
        if number in supersedes:
            old = supersedes[number]
            lines += ["", f"Supersedes [{old}. {titles[old - 1]}]({old:04d}-{titles[old - 1].lower().replace(' ', '-')}.md)"]
        lines += ["", "## Context", "", " ".join(rng.choice(WORDS) for _ in range(60)).capitalize() + ".",
                  "", "## Decision", "", " ".join(rng.choice(WORDS) for _ in range(40)).capitalize() + ".",
                  "", "## Consequences", "", " ".join(rng.choice(WORDS) for _ in range(30)).capitalize() + ".", ""]
        (folder / f"{number:04d}-{slug}.md").write_text("\n".join(lines), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    make_adrs(args.path, args.count, args.seed)


if __name__ == "__main__":
    main()
