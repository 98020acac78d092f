"""The `vault-tools` command line: parse, call the commands, print, map errors to exit codes.

The commands live in this package by family (`record`, `read`, `running`, `upkeep`, `past`), each registering
on the one typer app of `common`. Only this package and `console` (what it prints, how errors become exit codes,
and the commands `launch` answers without the parser) print. Data goes to stdout, messages to stderr; `--json` output is one JSON
document on stdout and nothing else.

Start-up time counts (hooks and pre-commit run a command on every call), so this package imports
only typer at the top: each command imports what it needs in its own body, and `run` builds the
parser of the one command asked for rather than of all of them.
"""
from __future__ import annotations

import functools
import sys
from typing import Any

import typer

from .. import console
from . import past, read, record, running, upkeep
from .common import APP_SETTINGS, app

__all__ = ["app", "main", "run"]

# The commands in the order `--help` and docs/commands.md list them: family by family, each in its module's order.
FAMILIES = (record, read, running, upkeep, past)
app.registered_commands.sort(key=lambda info: [family.__name__ for family in FAMILIES].index(info.callback.__module__))

report = console.report


def _command_name(info: Any) -> str:
    return str(info.name or typer.main.get_command_name(info.callback.__name__))


def _parser(argv: list[str]) -> Any:
    """The click group for `argv`: holding only the command named first when it names one (typer reads
    every parameter of every command it builds, which costs more than most commands take to run), else
    all of them, for `--help` and for a mistyped name's suggestions."""
    return _group(argv[0] if argv else None)


# docs/design/0024-start-up-time.md
@functools.cache
def _group(first: str | None) -> Any:
    """Built once per process and name: click parses each call into a context of its own."""
    named = [info for info in app.registered_commands if first == _command_name(info)]
    if not named:
        return typer.main.get_command(app)
    one = typer.Typer(**APP_SETTINGS)
    one.registered_commands = named
    return typer.main.get_group(one)


def run(argv: list[str] | None = None) -> int:
    """Run the command line and return its exit code; never exits the process."""
    command = _parser(sys.argv[1:] if argv is None else argv)
    # standalone mode lets typer report usage errors (exit 2) its own way; every other exception comes through
    return console.exit_code_of(lambda: command.main(args=argv, prog_name="vault-tools", standalone_mode=True))


def main() -> None:
    sys.exit(run())
