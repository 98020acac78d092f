"""Rewrite the generated sections of the documentation from the code.

The sections sit between `<!-- NAME:start -->` and `<!-- NAME:end -->` markers in
README.md or a page under docs/; `vault_tools/docs.py` says which exist and what
generates each one:

- `commands`: the command reference, from the typer app;
- `config`: the keys of `.vault-tools/config.yaml`, from `config.Config` and `config.CONFIG_DOC`;
- `lint-rules`: the lint rule table, from the rules' docs.

Each section lives in exactly one file; which one is wherever its markers are.

    .venv/bin/python scripts/update_docs.py            # rewrite what is stale in README.md and docs/*.md
    .venv/bin/python scripts/update_docs.py --check    # write nothing; exit 1 when a section is stale
    .venv/bin/python scripts/update_docs.py FILE...    # look only at these files

Everything outside the markers is left byte for byte as it is. Exit 2, writing
nothing, when a section's markers are in no file, in more than one, or half there.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))  # run from a clone without installing

from vault_tools import docs  # noqa: E402

COMMAND = "python scripts/update_docs.py"


def documentation_files(root: Path = REPOSITORY) -> list[Path]:
    """README.md and every page under docs/."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPOSITORY))
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Rewrite the generated sections of the documentation from the code.")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a section is out of date")
    parser.add_argument("files", nargs="*", type=Path,
                        help="the files to look at (default: README.md and docs/*.md)")
    args = parser.parse_args(argv)
    files: list[Path] = args.files or documentation_files()
    raw = {path: path.read_bytes() for path in files}

    holders: dict[str, list[Path]] = {}
    for path, content in raw.items():
        for name in docs.sections_in(content.decode("utf-8")):
            holders.setdefault(name, []).append(path)
    problems = []
    for name in docs.SECTIONS:
        start, end = docs.markers(name)
        where = holders.get(name, [])
        if not where:
            problems.append(f"no file holds the markers {start.strip()} ... {end}")
        elif len(where) > 1:
            problems.append(f"section {name!r} is in more than one file: {', '.join(map(_shown, where))}")

    updates: dict[Path, tuple[list[str], str]] = {}
    for path, content in raw.items():
        text = content.decode("utf-8")
        generators = {name: docs.SECTIONS[name] for name in docs.sections_in(text)}
        if not generators:
            continue
        try:
            updates[path] = (docs.stale_sections(text, generators), docs.render(text, generators))
        except KeyError as error:
            problems.append(f"{_shown(path)}: {error.args[0]}")
    if problems:
        for problem in problems:
            print(problem, file=sys.stderr)
        return 2

    if args.check:
        stale = [(path, name) for path, (names, _) in updates.items() for name in names]
        for path, name in stale:
            print(f"{_shown(path)}: section {name!r} is out of date; run `{COMMAND}`", file=sys.stderr)
        return 1 if stale else 0
    for path, (names, updated) in updates.items():
        if updated.encode("utf-8") != raw[path]:
            path.write_bytes(updated.encode("utf-8"))
            print(f"updated {', '.join(names) or 'whitespace in'} section(s) of {_shown(path)}")
        else:
            print(f"{_shown(path)} is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
