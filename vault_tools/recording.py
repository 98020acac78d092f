"""The recording commands an agent runs many times a session (`ask`, `rule`): their bodies, called as `answers`'
are (`launch.QUICK`, or `cli` once typer has parsed the arguments), kept apart so that the readers do not load
the operations that write.
"""
from __future__ import annotations

from pathlib import Path

from .commands.ask import ask as ask_question
from .commands.read import became_of
from .console import out, print_json, read_body, refresh_pages, stderr, workspace
from .model import Status
from .shapes import decision_json


def ask(summary: str, topic: list[str], body: str | None = None, due: str | None = None,
        reask_reason: str | None = None, not_the_same: list[str] | None = None, by: str | None = None,
        vault: Path | str | None = None, json_: bool = False) -> None:
    ws = workspace(vault)
    decision = ask_question(ws, summary, topic, body=read_body(body), due=due, reask_reason=reask_reason, asked_by=by,
                            not_the_same=not_the_same or [])
    ws.reads_once()  # written: the pages and what is said after are made from one read of the vault as it is now
    refresh_pages(ws)
    if json_:
        print_json(decision_json(decision))
    else:
        out(f"{decision.id} asked: {decision.path}")
    for closed in became_of(ws, decision.topics):  # a ruling retracted on the topic: what ended it, and why
        if closed.status is Status.RETRACTED:
            stderr.print(f"note: {closed.id} on this topic was retracted: {closed.summary} (because: {closed.reason})",
                         markup=False)


def rule(decision_id: str | None = None, summary: str = "", topic: list[str] | None = None, source: str | None = None,
         ruled_at: str | None = None, supersedes: list[str] | None = None, alongside: list[str] | None = None,
         alongside_all: bool = False, reason: str | None = None, body: str | None = None,
         revisit_if: str | None = None, revisit_by: str | None = None, term: list[str] | None = None,
         scope: list[str] | None = None, not_the_same: list[str] | None = None, by: str | None = None,
         vault: Path | str | None = None, json_: bool = False) -> None:
    from .commands.rule import rule as record_ruling  # here: a refused `ask` does not load what a ruling needs

    ws = workspace(vault)
    decision = record_ruling(ws, decision_id, summary, topics=topic or [], source=source, ruled_at=ruled_at,
                             ruled_by=by, supersedes=supersedes or [], alongside=alongside or [],
                             alongside_all=alongside_all, reason=reason, body=read_body(body), revisit_if=revisit_if,
                             revisit_by=revisit_by, terms=term or [], scope=scope or [],
                             not_the_same=not_the_same or [])
    refresh_pages(ws)
    if json_:
        print_json(decision_json(decision))
    else:
        out(f"{decision.id} ruled and sealed: {decision.path}")
        for link in decision.supersedes:
            out(f"  supersedes {link}")
