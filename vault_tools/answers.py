"""The reading commands an agent runs many times a session (`show`, `lookup`, `search`): their bodies, which
`launch` calls without the parser when their arguments are plain (`launch.QUICK`) and `cli` calls once typer has
parsed anything else. Importing typer costs about a fifth of what one of them takes on a large vault. The
recording ones (`ask`, `rule`) are in `recording`: a reader does not load what recording needs (4 ms).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .bodies import LOOKUP_FULL_LIMIT, SHOW_LIMIT
from .commands.read import became_of, body_view, day_said, is_topic_key, ruling_preview
from .commands.read import lookup as lookup_topics
from .commands.read import search as search_decisions
from .commands.read import show as show_decision
from .commands.same import rank_hits
from .console import out, print_json, stderr, workspace
from .dates import local_date
from .history import History
from .model import Decision, Status
from .services.workspace import Workspace
from .shapes import decision_json, lookup_json, show_json


def decision_line(decision: Decision, ws: Workspace) -> str:
    line = f"{decision.id}  {decision.status.value:<10} {day_said(ws, decision)}  [{', '.join(decision.topics)}]  " \
        f"{decision.summary}"
    return line + (f"\n    ! {decision.conflict}" if decision.conflict else "")


def show(decision_id: str, all_: bool = False, vault: Path | str | None = None, json_: bool = False) -> None:
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
        raise SystemExit(3)


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


def lookup(topics: list[str], full: bool = False, vault: Path | str | None = None, json_: bool = False) -> None:
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
    unreadable(problems)  # a ruling on these topics may be hiding in a note that cannot be read


def unreadable(problems: list[Any]) -> None:
    """Warn of decision notes that cannot be read, and exit 3: the answer may be incomplete."""
    if not problems:
        return
    for problem in problems:
        where = f"{problem.path}:{problem.line}" if problem.line else problem.path
        stderr.print(f"warning: {where}: {problem.message}", markup=False)
    stderr.print(f"error: {len(problems)} decision note(s) cannot be read; the answer may be incomplete",
                 style="red", markup=False)
    raise SystemExit(3)


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
        raise SystemExit(1)  # nothing on the topic at all (anything there, however it ended, is listed)
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


def search(query: list[str], history: bool = False, limit: int = 20, vault: Path | str | None = None,
           json_: bool = False) -> None:
    result = search_decisions(workspace(vault), " ".join(query), history=history, limit=limit)
    for notice in result.notices:
        stderr.print(f"note: {notice}", markup=False)
    if json_:
        print_json([hit.as_json() for hit in result.hits])
        return
    if not result.hits:
        stderr.print("no decision matches", markup=False)
    _print_hits(result.hits)
