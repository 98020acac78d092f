"""The command line's shared parts: the typer app every command registers on, the options many take, and how
commands print and refresh the pages.
"""
from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .. import console
from ..dates import parse_day_option
from ..errors import UsageError, VaultToolsError

if TYPE_CHECKING:
    from ..model import Decision
    from ..services.workspace import Workspace

# Imports inside functions: what one command needs is loaded when it runs: start-up (see `cli`).

APP_SETTINGS: dict[str, Any] = {
    "name": "vault-tools",
    "help": "Keep an owner's decisions in an Obsidian vault, so agents stop re-asking settled questions. "
            "`vault-tools --version` prints the version.",
    "no_args_is_help": True,
    "add_completion": False,
    "pretty_exceptions_enable": False,
    "rich_markup_mode": None,
}
app = typer.Typer(**APP_SETTINGS)


stderr = console.stderr

VaultOption = Annotated[Path | None, typer.Option("--vault", metavar="PATH", help="The vault (default: the nearest folder up "
                                                     "from here with .vault-tools/ or .obsidian/).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")]
ByOption = Annotated[str | None, typer.Option("--by", metavar="NAME", help="Who is recording this (default from config).")]


workspace = console.workspace
out = console.out
print_json = console.print_json


def decision_line(decision: Decision, ws: Workspace) -> str:
    from .. import answers  # the reading commands' module: loaded by every family using it

    return answers.decision_line(decision, ws)


# -- commands -----------------------------------------------------------------------


TodayOption = Annotated[str | None, typer.Option(
    "--today", metavar="DATE", help="Compute ages and due dates against this date (default: today in the vault's time zone).")]


today_from = console.today_option


refresh_pages = console.refresh_pages


ReasonOption = Annotated[str, typer.Option(help="Why (at least 20 characters).")]


def usage_error(message: str) -> VaultToolsError:
    return UsageError(message)


def day_option(name: str, value: str | None) -> dt.date | None:
    return parse_day_option(name, value)


RecordedOption = Annotated[bool, typer.Option("--recorded", help="Go by when the vault recorded each step (the "
                                                                  "ledger's time) instead of when it was decided.")]
