"""Rewrite the generated sections of README.md from the code.

The sections sit between `<!-- NAME:start -->` and `<!-- NAME:end -->` markers;
`vault_tools/docs.py` says which exist and what generates each one:

- `commands`: the command reference, from the typer app;
- `config`: the keys of `.vault-tools/config.yaml`, from `vault.Config` and `vault.CONFIG_DOC`;
- `lint-rules`: the lint rule table, from the rules' docs.

    .venv/bin/python scripts/update_readme.py           # rewrite README.md
    .venv/bin/python scripts/update_readme.py --check   # write nothing; exit 1 when a section is stale

Everything else in README.md is left byte for byte as it is.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))  # run from a clone without installing

from vault_tools import docs  # noqa: E402

README = REPOSITORY / "README.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Rewrite the generated sections of README.md from the code.")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a section is out of date")
    parser.add_argument("--readme", type=Path, default=README, help="the file to update (default: README.md)")
    args = parser.parse_args(argv)
    raw = args.readme.read_bytes()
    text = raw.decode("utf-8")
    try:
        stale = docs.stale_sections(text)
        updated = docs.render(text)
    except KeyError as error:
        print(f"{args.readme}: {error.args[0]}", file=sys.stderr)
        return 2
    if args.check:
        for name in stale:
            print(f"{args.readme}: section {name!r} is out of date; run `python scripts/update_readme.py`",
                  file=sys.stderr)
        return 1 if stale else 0
    if updated.encode("utf-8") != raw:
        args.readme.write_bytes(updated.encode("utf-8"))
        print(f"updated {', '.join(stale) or 'whitespace in'} section(s) of {args.readme}")
    else:
        print(f"{args.readme} is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
