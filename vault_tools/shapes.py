"""The JSON shapes of what the record answers, the same from the command line's `--json` and the MCP server.

Neither face owns them: `cli` and `console` print them, `agents/mcp_server` returns them, so an agent gets the
same answer whichever way it asks.
"""
from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from .bodies import LOOKUP_FULL_LIMIT

if TYPE_CHECKING:
    from .history import History
    from .model import Decision


def when(value: dt.date | None) -> str | None:
    if value is None:
        return None
    return value.isoformat() if not isinstance(value, dt.datetime) else value.isoformat(timespec="seconds")


def decision_json(decision: Decision) -> dict[str, Any]:
    """A decision as every JSON output shows it; `conflict` only where two clones' outcomes are in conflict."""
    return _fields_json(decision) | ({"conflict": decision.conflict} if decision.conflict else {})


def _fields_json(decision: Decision) -> dict[str, Any]:
    return {
        "id": decision.id, "status": decision.status.value, "topics": list(decision.topics),
        "summary": decision.summary, "path": decision.path,
        "asked_at": when(decision.asked_at), "asked_by": decision.asked_by,
        "ruled_at": when(decision.ruled_at), "ruled_by": decision.ruled_by,
        "source": decision.source, "supersedes": list(decision.supersedes), "alongside": list(decision.alongside),
        "alongside_all": decision.alongside_all, "superseded_by": decision.superseded_by, "reason": decision.reason,
        "reask_reason": decision.reask_reason, "revisit_if": decision.revisit_if,
        "revisit_by": when(decision.revisit_by), "due": when(decision.due), "terms": dict(decision.terms),
    }


def show_json(decision: Decision, history: History, problems: list[Any], body: Any) -> dict[str, Any]:
    """What `show --json` prints (the MCP server's `show` gives the same)."""
    data = decision_json(decision)
    data.update(body_json(body))
    data["history"] = [{"event": e.event, "at": e.at, "actor": e.actor} for e in history.events]
    data["sealed"] = history.sealed
    data["problems"] = [{"field": p.field, "line": p.line, "message": p.message} for p in problems]
    return data


def body_json(body: Any) -> dict[str, Any]:
    return {"body": body.text, "sections": body.sections, "body_left_out": body.left_out}


def lookup_json(found: list[Any], full: bool) -> list[dict[str, Any]]:
    """What `lookup --json` prints (the MCP server's `lookup` gives the same)."""
    from .commands.read import body_view, ruling_preview  # the read commands load the vault's modules
    items = []
    for item in found:
        data = _lookup_item(item)
        data["ruling_preview"] = ruling_preview(item.ruling)
        if item.ruling.note_missing:  # read from the ledger's sealed text until the note is written back
            data["note_missing"] = True
        if full:
            data.update(body_json(body_view(item.ruling, LOOKUP_FULL_LIMIT)))
        items.append(data)
    return items


def _lookup_item(item: Any) -> dict[str, Any]:
    data = decision_json(item.ruling)
    data["matched_topics"] = item.matched
    data["alongside"] = [other.id for other in item.alongside]
    data["not_said_whether_replaces"] = [other.id for other in item.not_said]
    data["settled_through"] = {topic: {"topic": key, "chain": chain} for topic, (key, chain) in item.via.items() if chain}
    data["chain"] = [decision_json(old) for old in item.chain]
    return data


def gate_json(result: Any) -> dict[str, Any]:
    return {"id": result.ruling.id, "passed": result.passed, "status": result.ruling.status.value,
            "summary": result.ruling.summary, "terms": dict(result.ruling.terms), "required": result.required,
            "failures": result.failures, "current_ruling": result.successor}
