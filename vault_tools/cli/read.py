"""Commands that read the record: show, list, lookup, search, build, context, gate."""
from __future__ import annotations

from typing import Annotated

import typer

from .. import answers, console
from ..bodies import LOOKUP_FULL_LIMIT, SHOW_LIMIT
from ..commands.gate import gate
from ..commands.read import list_decisions
from ..shapes import decision_json, gate_json
from .common import JsonOption, TodayOption, VaultOption, app, decision_line, out, print_json, stderr, workspace


@app.command()
def show(decision_id: Annotated[str, typer.Argument(metavar="ID", help="A decision id, like D-0007.")],
         all_: Annotated[bool, typer.Option("--all", help="The whole body, however long (default: cut at "
                                                          f"{SHOW_LIMIT:,} characters, saying so).")] = False,
         vault: VaultOption = None,
         json_: JsonOption = False) -> None:
    """One decision note: its properties, its body (Obsidian comments left out) and its ledger history."""
    answers.show(decision_id, all_, vault, json_)


@app.command("list")
def list_(status: Annotated[str | None, typer.Option(metavar="STATUS", help="open, ruled, superseded, withdrawn or retracted.")] = None,
          topic: Annotated[str | None, typer.Option(metavar="TOPIC", help="Only this topic (near matches count).")] = None,
          vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Decision notes, filtered by status and topic."""
    ws = workspace(vault).reads_once()
    found, problems = list_decisions(ws, status, topic)
    if json_:
        print_json([decision_json(d) for d in found])
    else:
        for decision in found:
            out(decision_line(decision, ws))
    answers.unreadable(problems)


@app.command()
def lookup(topics: Annotated[list[str], typer.Argument(metavar="TOPIC...", help="Topic keys (near spellings count), "
                                                                              "or free text, searched when no topic matches.")],
           full: Annotated[bool, typer.Option("--full", help="Each ruling's whole body (cut at "
                                                              f"{LOOKUP_FULL_LIMIT:,} characters, saying so).")] = False,
           vault: VaultOption = None,
           json_: JsonOption = False) -> None:
    """Current rulings on these topics, newest first, each with the start of its ruling and what it superseded;
    then what else became of the topics: an open question, questions withdrawn and rulings retracted (with why).
    Exit 1 when nothing was ever on them and no decision mentions the words."""
    answers.lookup(topics, full, vault, json_)


@app.command()
def search(query: Annotated[list[str], typer.Argument(metavar="QUERY...", help="Words to look for (any of them; "
                                                                               "accents and word endings do not matter).")],
           history: Annotated[bool, typer.Option("--history", help="Also superseded, withdrawn and retracted "
                                                                    "decisions, marked as such.")] = False,
           limit: Annotated[int, typer.Option("--limit", metavar="N", help="At most this many results.")] = 20,
           vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Find decisions by their words: current rulings and open questions, best match first, with the matching passage."""
    answers.search(query, history, limit, vault, json_)


@app.command()
def build(check: Annotated[bool, typer.Option("--check", help="Write nothing; exit 1 if a page is stale.")] = False,
          today: Annotated[str | None, typer.Option("--today", metavar="DATE", hidden=True,
                                                    help="Accepted for older scripts; the pages do not depend on the date.")] = None,
          vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Regenerate the pinned pages (open questions, decisions log, archive)."""
    console.build(check, today, vault, json_)


@app.command()
def context(budget: Annotated[str, typer.Option(
                "--budget", metavar="BUDGET",
                help="What the consumer loads without cutting: claude-hook (9,500 characters), codex-hook (2,400 "
                     "tokens, counted as 1 per 3 ASCII characters and 1 per other character), memory-file (200 lines, "
                     "25,000 bytes), config (the vault's budget.lines and budget.bytes; the default) or a number of "
                     "characters.")] = "config",
            hook: Annotated[bool, typer.Option(
                "--hook", help="For an agent hook, which must not fail: if the open questions alone overflow the "
                               "budget, print the most urgent that fit and a line counting the rest, warn on "
                               "stderr, and exit 0.")] = False,
            today: TodayOption = None, vault: VaultOption = None, json_: JsonOption = False) -> None:
    """What an agent reads at session start: open questions, settled topics and rulings, within a budget."""
    console.context(budget, hook, today, vault, json_)


@app.command("gate")
def gate_command(decision_id: Annotated[str, typer.Argument(metavar="ID", help="The ruling a script relies on, like D-0007.")],
         require: Annotated[list[str], typer.Option("--require", metavar="KEY=VALUE", help="A term the ruling must grant "
                                                    "exactly (its property term_KEY); repeatable.")] = [],  # noqa: B006
         vault: VaultOption = None, json_: JsonOption = False) -> None:
    """For scripts: exit 0 only if ID is a current, sealed ruling granting every --require exactly; else exit 1 saying why."""
    result = gate(workspace(vault), decision_id, require)
    if json_:
        print_json(gate_json(result))
    elif result.passed:
        out(f"{result.ruling.id} grants it: {result.ruling.summary}")
    for failure in result.failures:
        stderr.print(f"refused: {failure}", markup=False)
    if not result.passed:
        raise typer.Exit(1)
