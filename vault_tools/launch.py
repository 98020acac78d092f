"""The `vault-tools` console script's front door: what must answer fast skips the command line's imports.

An agent waits on every hook call, and importing the full command line (typer) costs more than a hook may
take, so `vault-tools hook AGENT EVENT [--vault PATH]` is answered from here, printing only the hook's JSON;
`vault-tools version` prints the version; git's merge driver, `vault-tools merge-note BASE OURS THEIRS SHOWN`,
runs once per conflicting decision note of a pull and is answered from here too. Anything else, including
any other spelling of these, goes to `cli.main`, which parses it (and reports a mistake) as every other
command.
"""
from __future__ import annotations

import sys


def _hook_arguments(args: list[str]) -> tuple[str, str, str | None] | None:
    from .agents import HOOK_AGENTS, hook_module

    if len(args) not in (3, 5) or args[0] != "hook" or args[1] not in HOOK_AGENTS:
        return None
    if args[2] not in hook_module(args[1]).EVENTS:
        return None
    if len(args) == 3:
        return args[1], args[2], None
    if args[3] != "--vault":
        return None
    return args[1], args[2], args[4]


def main() -> None:
    args = sys.argv[1:]
    if args == ["version"]:
        from . import __version__
        sys.stdout.write(__version__ + "\n")
        sys.exit(0)
    if len(args) == 5 and args[0] == "merge-note" and not any(arg.startswith("-") for arg in args[1:]):
        _merge_note(*args[1:])
    found = _hook_arguments(args)
    if found is None:
        from .cli import main as cli_main
        cli_main()
        return
    from pathlib import Path

    from .agents import hook_module
    agent, event, vault = found
    text = hook_module(agent).run(event, sys.stdin.read(), Path(vault) if vault is not None else None)
    if text:
        sys.stdout.write(text + "\n")
    sys.exit(0)


def _merge_note(base: str, ours: str, theirs: str, shown: str) -> None:
    """git's merge driver: exit 0 merged, 1 conflicts left in OURS; 2 (git keeps OURS) when the sides cannot
    be read or merged, said in one line naming the note."""
    from pathlib import Path

    from .commands.gitmerge import merge_note
    from .errors import VaultToolsError

    try:
        code = merge_note(Path(base), Path(ours), Path(theirs), shown)
    except VaultToolsError as error:
        sys.stderr.write(f"error: {error}\n")
        code = 2
    except OSError as error:
        sys.stderr.write(f"error: {shown}: cannot merge: {error.strerror or error}\n")
        code = 2
    sys.exit(code)
