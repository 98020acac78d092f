"""Commands that read the record: show, list, lookup, search, build, context, gate."""
from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from .. import console
from ..bodies import LOOKUP_FULL_LIMIT, SHOW_LIMIT
from ..dates import local_date
from ..model import Status
from ..shapes import decision_json, gate_json, lookup_json, show_json

if TYPE_CHECKING:
    from ..commands.workspace import Workspace
    from ..history import History
    from ..model import Decision

from ..commands.gate import gate as check_gate
from ..commands.read import became_of, body_view, is_topic_key, list_decisions, ruling_preview
from ..commands.read import lookup as lookup_topics
from ..commands.read import search as search_decisions
from ..commands.read import show as show_decision
from ..commands.same import rank_hits
from .common import JsonOption, TodayOption, VaultOption, app, decision_line, out, print_json, stderr, workspace


@app.command()
def show(decision_id: Annotated[str, typer.Argument(metavar="ID", help="A decision id, like D-0007.")],
         all_: Annotated[bool, typer.Option("--all", help="The whole body, however long (default: cut at "
                                                          f"{SHOW_LIMIT:,} characters, saying so).")] = False,
         vault: VaultOption = None,
         json_: JsonOption = False) -> None:
    """One decision note: its properties, its body (Obsidian comments left out) and its ledger history."""
    ws = workspace(vault).reads_once()
    decision, history, problems = show_decision(ws, decision_id)
    body = body_view(decision, None if all_ else SHOW_LIMIT)
    if json_:
        print_json(show_json(decision, history, problems, body))
    else:
        _show(ws, decision, history, body.text)
    if problems:
        for problem in problems:
            stderr.print(f"{decision.path}:{problem.line or 1}: {problem}", markup=False)
        raise typer.Exit(3)


def _show(ws: Workspace, decision: Decision, history: History, body: str) -> None:
    out(decision_line(decision, ws))
    out(f"  file: {decision.path}")
    for name in ("source", "reask_reason", "revisit_if", "superseded_by", "reason"):
        value = getattr(decision, name)
        if value:
            out(f"  {name}: {value}")
    for link in decision.supersedes:
        out(f"  supersedes: {link}")
    for link in decision.alongside:
        out(f"  alongside: {link}")
    out(f"  sealed: {'yes' if history.sealed else 'no'}")
    recorded = next((e.at[:10] for e in history.events if e.event == "ruled"), None)
    ruled = local_date(decision.ruled_at, ws.tz).isoformat() if decision.ruled_at else None
    if recorded and ruled and recorded > ruled:  # recorded after the fact: an import, a ruling given in chat
        out(f"  ruled {ruled}, recorded {recorded}")
    for event in history.events:
        out(f"  {event.at}  {event.event} by {event.actor}")
    if body:
        out("")
        out(body)


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
    _unreadable(problems)


def _unreadable(problems: list[Any]) -> None:
    """Warn of decision notes that cannot be read, and exit 3: the answer may be incomplete."""
    if not problems:
        return
    for problem in problems:
        where = f"{problem.path}:{problem.line}" if problem.line else problem.path
        stderr.print(f"warning: {where}: {problem.message}", markup=False)
    stderr.print(f"error: {len(problems)} decision note(s) cannot be read; the answer may be incomplete",
                 style="red", markup=False)
    raise typer.Exit(3)


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
    ws = workspace(vault).reads_once()
    keys = all(map(is_topic_key, topics))
    found, problems = lookup_topics(ws, topics) if keys else ([], [])
    others = [d for d in (became_of(ws, topics) if keys else [])  # a replaced ruling is in its successor's chain
              if not (found and d.status is Status.SUPERSEDED)]
    if not found and not problems and not others:
        _search_fallback(ws, " ".join(topics), json_)
        return
    if json_:
        print_json(lookup_json(found, full) + [decision_json(d) for d in others])
    else:
        if not found:
            stderr.print(f"no current ruling on {', '.join(topics)}", markup=False)
        for other in others:  # an open question, or what was withdrawn or retracted there, and why
            out(decision_line(other, ws))
            if other.reason:
                out(f"    {other.status.value} because: {other.reason}")
        for item in found:
            out(decision_line(item.ruling, ws))
            if full:
                out("")
                out("\n".join("    " + line if line else "" for line in
                               body_view(item.ruling, LOOKUP_FULL_LIMIT).text.split("\n")))
                out("")
            else:
                for line in ruling_preview(item.ruling):
                    out(f"    | {line}")
            for _key, chain in item.via.values():
                if chain:
                    out(f"    settles it because {chain}")
            for other in item.alongside:
                out(f"    stands alongside {decision_line(other, ws)}")
            for other in item.not_said:
                out(f"    NOT SAID whether one replaces the other: {decision_line(other, ws)}")
            for old in item.chain:
                out(f"    superseded {decision_line(old, ws)}")
                if old.reason:
                    out(f"      because: {old.reason}")
    _unreadable(problems)  # a ruling on these topics may be hiding in a note that cannot be read


def _search_fallback(ws: Workspace, text: str, json_: bool) -> None:
    """`lookup` with no topic matching: the decisions whose words match, best first."""
    result = search_decisions(ws, text.replace("-", " "), limit=20)
    result.hits = rank_hits(ws, text, result.hits)[:5]
    for notice in result.notices:
        stderr.print(f"note: {notice}", markup=False)
    if json_:
        print_json([hit.as_json() | {"matched_by": "words"} for hit in result.hits])
    elif not result.hits:
        stderr.print(f"no topic matches {text!r}: nothing was ever asked, ruled, withdrawn or retracted on it, "
                     "and no decision mentions it", markup=False)
    if not result.hits:
        raise typer.Exit(1)  # nothing on the topic at all (anything there, however it ended, is listed)
    if json_:
        return
    stderr.print(f"no topic matches {text!r}; decisions whose words match:", markup=False)
    _print_hits(result.hits)


def _print_hits(hits: list[Any]) -> None:
    for hit in hits:
        mark = f" [{hit.status.value.upper()}]" if hit.historical else ""
        out(f"{hit.id}  {hit.status.value:<10} [{', '.join(hit.topics)}]  {hit.summary}{mark}")
        if hit.conflict:
            out(f"    ! {hit.conflict}")
        out(f"    | {' '.join(hit.snippet.split())}")


@app.command()
def search(query: Annotated[list[str], typer.Argument(metavar="QUERY...", help="Words to look for (any of them; "
                                                                               "accents and word endings do not matter).")],
           history: Annotated[bool, typer.Option("--history", help="Also superseded, withdrawn and retracted "
                                                                    "decisions, marked as such.")] = False,
           limit: Annotated[int, typer.Option("--limit", metavar="N", help="At most this many results.")] = 20,
           vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Find decisions by their words: current rulings and open questions, best match first, with the matching passage."""
    result = search_decisions(workspace(vault), " ".join(query), history=history, limit=limit)
    for notice in result.notices:
        stderr.print(f"note: {notice}", markup=False)
    if json_:
        print_json([hit.as_json() for hit in result.hits])
        return
    if not result.hits:
        stderr.print("no decision matches", markup=False)
    _print_hits(result.hits)


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


@app.command()
def gate(decision_id: Annotated[str, typer.Argument(metavar="ID", help="The ruling a script relies on, like D-0007.")],
         require: Annotated[list[str], typer.Option("--require", metavar="KEY=VALUE", help="A term the ruling must grant "
                                                    "exactly (its property term_KEY); repeatable.")] = [],  # noqa: B006
         vault: VaultOption = None, json_: JsonOption = False) -> None:
    """For scripts: exit 0 only if ID is a current, sealed ruling granting every --require exactly; else exit 1 saying why."""
    result = check_gate(workspace(vault), decision_id, require)
    if json_:
        print_json(gate_json(result))
    elif result.passed:
        out(f"{result.ruling.id} grants it: {result.ruling.summary}")
    for failure in result.failures:
        stderr.print(f"refused: {failure}", markup=False)
    if not result.passed:
        raise typer.Exit(1)
