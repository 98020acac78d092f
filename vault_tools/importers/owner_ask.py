"""The owner-ask ledger: `state/owner-rulings.jsonl` and `state/owner-asks.jsonl` (see docs/import.md).

Later rows for the same ask id replace earlier ones. An ask answered by a ruling becomes that
ruling's question. A ruling whose text says it replaces, revokes, overrides or supersedes a
ruling it names by id supersedes it; one that says so without naming an id, or only narrows or
amends, raises a review item for the owner.
"""
from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

from . import OPEN, RULED, WITHDRAWN, Parsed, Record, Review, Skipped, kebab, one_line

RULINGS_FILE = "owner-rulings.jsonl"
ASKS_FILE = "owner-asks.jsonl"

# Known fields, with the aliases the format's description lists.
RULING_FIELDS = {"id", "topicKeys", "ruledAt", "summary", "source", "recordedAt", "askId", "answers", "questionId"}
ASK_FIELDS = {"id", "status", "topicKeys", "question", "summary", "reaskReason", "askedAt", "createdAt",
              "answeredAt", "withdrawnAt", "rulingId", "reason", "recordedAt"}

_REPLACES = re.compile(r"\b(replac\w*|revok\w*|overrid\w*|overrule\w*|supersed\w*|supercede\w*|revers\w*)\b", re.I)
_NARROWS = re.compile(r"\b(narrow\w*|amend\w*|in part|partly|partially)\b", re.I)
_DATE_IN_TEXT = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")


def find_state_folder(root: Path) -> Path | None:
    """The folder holding the two files: DIR itself or DIR/state."""
    for folder in (root, root / "state"):
        if (folder / RULINGS_FILE).is_file() or (folder / ASKS_FILE).is_file():
            return folder
    return None


def _rows(path: Path, shown: str, parsed: Parsed) -> list[tuple[int, dict[str, Any]]]:
    if not path.is_file():
        return []
    parsed.files_read += 1
    rows = []
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        parsed.skipped.append(Skipped(shown, "not UTF-8 text"))
        return []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            parsed.skipped.append(Skipped(f"{shown}:{number}", f"not a JSON object ({error.msg})"))
            continue
        if not isinstance(row, dict) or not isinstance(row.get("id"), str) or not row["id"].strip():
            parsed.skipped.append(Skipped(f"{shown}:{number}", "not a JSON object with an `id`"))
            continue
        rows.append((number, row))
    return rows


def _when(value: Any) -> dt.datetime | dt.date | None:
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        text = value.strip().replace("Z", "+00:00")
        return dt.date.fromisoformat(text) if len(text) == 10 else dt.datetime.fromisoformat(text)
    except ValueError:
        return None


def _topics(row: dict[str, Any]) -> tuple[str, ...]:
    keys = row.get("topicKeys")
    if isinstance(keys, str):
        keys = [keys]
    if not isinstance(keys, list):
        return ()
    return tuple(dict.fromkeys(t for t in (kebab(str(k), max_words=12) for k in keys) if t))


def _text(row: dict[str, Any], *names: str) -> str | None:
    for name in names:
        value = row.get(name)
        if isinstance(value, str) and value.strip():
            return one_line(value)
    return None


def parse(root: Path) -> Parsed:
    parsed = Parsed("owner-ask")
    folder = find_state_folder(root)
    if folder is None:
        parsed.skipped.append(Skipped(root.name or str(root), f"has neither state/{RULINGS_FILE} nor state/{ASKS_FILE}"))
        return parsed
    prefix = "state/" if folder != root else ""
    ruling_rows = _rows(folder / RULINGS_FILE, prefix + RULINGS_FILE, parsed)
    ask_rows = _rows(folder / ASKS_FILE, prefix + ASKS_FILE, parsed)
    _unknown_fields(ruling_rows, RULING_FIELDS, prefix + RULINGS_FILE, parsed)
    _unknown_fields(ask_rows, ASK_FIELDS, prefix + ASKS_FILE, parsed)

    asks: dict[str, tuple[int, dict[str, Any]]] = {}
    for number, row in ask_rows:  # the latest row of an ask wins; what it leaves out, earlier rows still say
        earlier = asks[row["id"]][1] if row["id"] in asks else {}
        asks[row["id"]] = (number, {**earlier, **row})
    rulings: dict[str, tuple[int, dict[str, Any]]] = {}
    for number, row in ruling_rows:
        if row["id"] in rulings:
            parsed.skipped.append(Skipped(f"{prefix}{RULINGS_FILE}:{number}",
                                          f"ruling id {row['id']} was used before (line {rulings[row['id']][0]}); "
                                          "a ruling id is never reused"))
            continue
        rulings[row["id"]] = (number, row)

    answered_by = _answered_by(asks, rulings)
    shown_rulings = prefix + RULINGS_FILE
    imported: set[str] = set()  # the rulings that become records
    for ruling_id, (number, row) in rulings.items():
        record = _ruling(ruling_id, row, f"{shown_rulings}:{number}", parsed)
        if record is None:
            continue
        imported.add(ruling_id)
        answers = answered_by.get(ruling_id)
        if answers is not None and answers in asks:
            _, ask = asks[answers]
            record.question = _text(ask, "question", "summary")
            record.asked_at = _when(ask.get("askedAt") or ask.get("createdAt"))
            record.reask_reason = _text(ask, "reaskReason")
            record.remarks.append(f"answers {answers}")
        elif answers is not None:
            record.remarks.append(f"says it answers {answers}, which is not in {ASKS_FILE}")
        parsed.records.append(record)

    _import_asks(parsed, prefix + ASKS_FILE, asks, rulings, answered_by, imported)
    _supersessions(parsed, rulings)
    parsed.records.sort(key=lambda r: (_sort_time(r.ruled_at or r.asked_at), r.key))
    return parsed


def _answered_by(asks: dict[str, tuple[int, dict[str, Any]]],
                 rulings: dict[str, tuple[int, dict[str, Any]]]) -> dict[str, str]:
    """Which ask each ruling answers (ruling id -> ask id): named on either side, the ask's word first."""
    answered_by: dict[str, str] = {}
    for ask_id, (_, row) in asks.items():
        if row.get("status") == "answered" and isinstance(row.get("rulingId"), str):
            answered_by[row["rulingId"]] = ask_id
    for ruling_id, (_, row) in rulings.items():
        named = _text(row, "askId", "answers", "questionId")
        if named and ruling_id not in answered_by:
            answered_by[ruling_id] = named
    return answered_by


def _import_asks(parsed: Parsed, shown_asks: str, asks: dict[str, tuple[int, dict[str, Any]]],
                 rulings: dict[str, tuple[int, dict[str, Any]]], answered_by: dict[str, str],
                 imported: set[str]) -> None:
    """The open and withdrawn asks as records; an answered one is the question of its imported ruling, or
    skipped saying why it could not be."""
    for ask_id, (number, row) in asks.items():
        status = row.get("status")
        where = f"{shown_asks}:{number}"
        if status == "answered":
            answer = row.get("rulingId")
            if any(answered_by.get(ruling_id) == ask_id for ruling_id in imported):
                continue  # imported as the question of its ruling
            why = "which is not in" if answer not in rulings else "which could not be imported from"
            parsed.skipped.append(Skipped(where, f"{ask_id} is answered by {answer or 'a ruling it does not name'}, "
                                                 f"{why} {RULINGS_FILE}"))
            continue
        if status not in ("open", "withdrawn"):
            parsed.skipped.append(Skipped(where, f"{ask_id} has status {status!r} (expected open, answered or withdrawn)"))
            continue
        record = _ask(ask_id, row, status, where, parsed)
        if record is not None:
            parsed.records.append(record)


def _unknown_fields(rows: list[tuple[int, dict[str, Any]]], known: set[str], shown: str, parsed: Parsed) -> None:
    unknown: dict[str, int] = {}
    for number, row in rows:
        for name in row:
            if name not in known:
                unknown.setdefault(name, number)
    for name, number in sorted(unknown.items()):
        parsed.warnings.append(f"{shown}:{number}: field {name!r} is not understood; it was not imported")


def _sort_time(value: dt.datetime | dt.date | None) -> str:
    if value is None:
        return "9999"
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).isoformat()
    return value.isoformat()


def _ruling(ruling_id: str, row: dict[str, Any], where: str, parsed: Parsed) -> Record | None:
    summary = _text(row, "summary")
    topics = _topics(row)
    ruled_at = _when(row.get("ruledAt"))
    missing = [name for name, value in (("summary", summary), ("topicKeys", topics), ("ruledAt", ruled_at)) if not value]
    if missing:
        parsed.skipped.append(Skipped(where, f"{ruling_id} has no usable {', '.join(missing)}"))
        return None
    assert summary is not None
    if len(summary) < 20:
        parsed.skipped.append(Skipped(where, f"{ruling_id}'s summary is under 20 characters: {summary!r}"))
        return None
    source = _text(row, "source")
    return Record(key=f"owner-ask:{ruling_id}", label=ruling_id, status=RULED, title=summary, summary=summary,
                  topics=topics, source=f"{source} ({ruling_id})" if source else ruling_id, ruled_at=ruled_at)


def _ask(ask_id: str, row: dict[str, Any], status: str, where: str, parsed: Parsed) -> Record | None:
    question = _text(row, "question", "summary")
    topics = _topics(row)
    if not question or not topics:
        parsed.skipped.append(Skipped(where, f"{ask_id} has no usable {'question' if not question else 'topicKeys'}"))
        return None
    if len(question) < 20:
        parsed.skipped.append(Skipped(where, f"{ask_id}'s question is under 20 characters: {question!r}"))
        return None
    reason = _text(row, "reason")
    if status == "withdrawn" and (reason is None or len(reason) < 20):
        reason = f"Withdrawn in the owner-ask ledger ({ask_id}){': ' + reason if reason else ''}."
    return Record(key=f"owner-ask:{ask_id}", label=ask_id, status=OPEN if status == "open" else WITHDRAWN,
                  title=question, summary=question, topics=topics, source=ask_id, question=question,
                  asked_at=_when(row.get("askedAt") or row.get("createdAt")),
                  reask_reason=_text(row, "reaskReason"), reason=reason if status == "withdrawn" else None)


def _supersessions(parsed: Parsed, rulings: dict[str, tuple[int, dict[str, Any]]]) -> None:
    """Replacements said in a ruling's text: by id, a supersession; only implied, a review item."""
    by_key = {r.key: r for r in parsed.records}
    ids = sorted(rulings, key=len, reverse=True)
    for record in parsed.records:
        if record.status != RULED or record.label not in rulings:
            continue
        text = record.summary
        replaces, narrows = _REPLACES.search(text), _NARROWS.search(text)
        if not replaces and not narrows:
            continue
        named = [other for other in ids if other != record.label and re.search(rf"\b{re.escape(other)}\b", text)]
        named_keys = [f"owner-ask:{other}" for other in named if f"owner-ask:{other}" in by_key]
        if replaces and not narrows and named_keys:
            record.supersedes = tuple(named_keys)
            record.reason = f"{record.label} says: {text}"
            for key in named_keys:
                by_key[key].superseded_by = record.key
            continue
        candidates = named_keys or _implied(record, parsed.records, text)
        names = " or ".join(by_key[k].label for k in candidates)
        if narrows and not replaces:
            question = f"Which parts of {names or 'the earlier ruling'} does {record.label} narrow?"
        elif named_keys:
            question = f"Does {record.label} replace {names} in part or in full?"
        else:
            question = f"Does {record.label} replace {names or 'an earlier ruling'}? It does not name one."
        parsed.reviews.append(Review(key=f"review:{record.key}", record=record.key, others=tuple(candidates),
                                     text=f"{question} It says: {text}"))
        record.alongside = ()  # how it stands to the others is the review's question: not said here for the owner


def _implied(record: Record, records: list[Record], text: str) -> list[str]:
    """The earlier rulings an unnamed replacement may mean: same topic, and the date it gives, if any."""
    days = set(_DATE_IN_TEXT.findall(text))
    found = []
    for other in records:
        if other is record or other.status != RULED or other.ruled_at is None or record.ruled_at is None:
            continue
        if _sort_time(other.ruled_at) >= _sort_time(record.ruled_at) or not set(other.topics) & set(record.topics):
            continue
        if days and other.ruled_at.isoformat()[:10] not in days:
            continue
        found.append(other.key)
    return found
