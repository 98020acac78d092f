"""The `vault-tools` command line: parse, call the commands, print, map errors to exit codes.

The commands live in this package by family (`record`, `read`, `running`, `upkeep`, `past`), each registering
on the one typer app of `common`. Only this package and `console` (what it prints, how errors become exit codes,
and the commands `launch` answers without the parser) print. Data goes to stdout, messages to stderr; `--json` output is one JSON
document on stdout and nothing else.

Start-up time counts (hooks and pre-commit run a command on every call), so this package loads only the
family of the command asked for (`COMMANDS`), and `run` builds the parser of that one command rather than of
all of them.
"""
from __future__ import annotations

import functools
import importlib
import sys
from typing import Any

import typer

from .. import console
from . import common

__all__ = ["app", "main", "run"]

# The families of commands, in the order `--help` and docs/commands.md list them; each module registers its
# commands on `common.app` when it is loaded, and loads the operations they run.
FAMILIES = ("record", "read", "running", "upkeep", "past")
# Which family registers each command, so that running one loads its family alone (start-up: loading them all
# costs more than most commands take). A test checks it against what the families register.
COMMANDS = {
    "init": "record", "migrate": "record", "ask": "record", "rule": "record", "withdraw": "record",
    "retract": "record", "relate": "record", "seal": "record",
    "show": "read", "list": "read", "lookup": "read", "search": "read", "build": "read", "context": "read",
    "gate": "read",
    "hook": "running", "mcp": "running", "watch": "running", "for": "running", "check": "running", "lint": "running",
    "service": "running",
    "import": "upkeep", "harvest": "upkeep", "stats": "upkeep", "review": "upkeep", "settle": "upkeep",
    "renumber": "upkeep", "merge-note": "upkeep",
    "history": "past", "as-of": "past", "changed": "past", "export": "past", "version": "past",
}


def _load(families: tuple[str, ...]) -> None:
    for family in families:
        importlib.import_module(f"{__name__}.{family}")


def all_commands() -> typer.Typer:
    """The app with every command registered, in the order the families list them."""
    _load(FAMILIES)
    order = [f"{__name__}.{family}" for family in FAMILIES]
    common.app.registered_commands.sort(key=lambda info: order.index(info.callback.__module__))
    return common.app


def __getattr__(name: str) -> Any:
    if name == "app":  # whoever asks for the app (the docs, the tests) gets all of it
        return all_commands()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

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
    family = COMMANDS.get(first or "")
    _load((family,) if family else FAMILIES)
    named = [info for info in common.app.registered_commands if first == _command_name(info)]
    if not named:
        return typer.main.get_command(all_commands())
    one = typer.Typer(**common.APP_SETTINGS)
    one.registered_commands = named
    return typer.main.get_group(one)


def run(argv: list[str] | None = None) -> int:
    """Run the command line and return its exit code; never exits the process."""
    command = _parser(sys.argv[1:] if argv is None else argv)
    # standalone mode lets typer report usage errors (exit 2) its own way; every other exception comes through
    return console.exit_code_of(lambda: command.main(args=argv, prog_name="vault-tools", standalone_mode=True))


def main() -> None:
    sys.exit(run())
