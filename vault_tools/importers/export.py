"""A `vault-tools export --format jsonl` file: one header line, then one decision a line (see docs/history.md).

Each record keeps its id where the vault does not use it yet, its whole body and every property the
export carries, so importing an export into an empty vault gives the same decisions back. Records
come in an order that puts each ruling after those it supersedes.
"""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from ..dates import parse_date, parse_datetime
from . import OPEN, RETRACTED, RULED, SUPERSEDED, WITHDRAWN, Parsed, Record, Skipped

FORMAT = "vault-tools export"
STATUSES = (OPEN, RULED, SUPERSEDED, WITHDRAWN, RETRACTED)


def _key(decision_id: str) -> str:
    return f"export:{decision_id}"


def _when(value: Any) -> dt.datetime | dt.date | None:
    return parse_datetime(value) if value else None


def _record(row: dict[str, Any], rows: dict[str, dict[str, Any]]) -> Record:
    own_reason = row.get("reason")
    targets = [rows[t] for t in row.get("supersedes") or [] if t in rows]
    # A ruling later closed has its own closing reason in `reason`; why it superseded is what its targets say.
    supersede_reason = next((t.get("reason") for t in targets if t.get("reason")), None)
    return Record(
        key=_key(row["id"]), label=row["id"], status=row["status"], title=row["summary"], summary=row["summary"],
        topics=tuple(row.get("topics") or ()), source=row.get("source") or "", body=row.get("body") or "",
        ruled_at=_when(row.get("ruled_at")), asked_at=_when(row.get("asked_at")),
        deciders=(row["ruled_by"],) if row.get("ruled_by") else (), asked_by=row.get("asked_by"),
        supersedes=tuple(_key(t) for t in row.get("supersedes") or []),
        superseded_by=_key(row["superseded_by"]) if row.get("superseded_by") else None,
        reason=own_reason, reask_reason=row.get("reask_reason"),
        id=row["id"], whole_body=True, supersede_reason=supersede_reason,
        alongside=tuple(_key(t) for t in row.get("alongside") or []),
        revisit_if=row.get("revisit_if"),
        revisit_by=parse_date(row["revisit_by"]) if row.get("revisit_by") else None,
        due=parse_date(row["due"]) if row.get("due") else None,
    )


def _ordered(rows: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """By id, each ruling after what it supersedes and what it stands beside."""
    done: set[str] = set()
    out: list[dict[str, Any]] = []

    def visit(decision_id: str, path: tuple[str, ...]) -> None:
        if decision_id in done or decision_id in path or decision_id not in rows:
            return
        row = rows[decision_id]
        for before in [*(row.get("supersedes") or []), *(row.get("alongside") or [])]:
            visit(before, (*path, decision_id))
        if decision_id not in done:
            done.add(decision_id)
            out.append(row)

    for decision_id in sorted(rows, key=lambda i: (len(i), i)):
        visit(decision_id, ())
    return out


def parse(path: Path) -> Parsed:
    parsed = Parsed("export", files_read=1)
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        parsed.skipped.append(Skipped(path.name, f"cannot be read: {error}"))
        return parsed
    rows: dict[str, dict[str, Any]] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            parsed.skipped.append(Skipped(f"{path.name}:{number}", "is not JSON"))
            continue
        if not isinstance(row, dict):
            parsed.skipped.append(Skipped(f"{path.name}:{number}", "is not a JSON object"))
        elif row.get("format") == FORMAT:
            if row.get("version") != 1:
                parsed.warnings.append(f"{path.name}:{number}: export version {row.get('version')} is newer than "
                                       "this vault-tools reads; fields it does not know are left out")
        elif not isinstance(row.get("id"), str) or row.get("status") not in STATUSES or not row.get("summary"):
            parsed.skipped.append(Skipped(f"{path.name}:{number}", "needs an id, a known status and a summary"))
        else:
            rows[row["id"]] = row
    parsed.records = [_record(row, rows) for row in _ordered(rows)]
    return parsed
