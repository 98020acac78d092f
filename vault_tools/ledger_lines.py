"""One ledger line: the event it holds, its canonical JSON and checksum, and reading a ledger's text into events.

Every line is one JSON event carrying its own checksum (`sum`), so a changed line is found on its own, and a
merge of two machines' ledgers (git's `merge=union`) stays valid line by line. Pure: text in, events out.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import MISSING, dataclass, field, fields
from typing import Any

from .errors import InconsistentVault
from .model import ID_PATTERN, Status, id_number

# What each event says about a note's status.
STATUS_AFTER = {
    "asked": Status.OPEN,
    "ruled": Status.RULED,
    "superseded": Status.SUPERSEDED,
    "withdrawn": Status.WITHDRAWN,
    "retracted": Status.RETRACTED,
}


@dataclass(frozen=True)
class Event:
    event: str
    id: str
    at: str  # UTC, ISO 8601 with Z
    actor: str
    path: str
    hash: str | None = None
    text: str | None = None  # the note's full text, for events that fix its content
    reason: str | None = None
    successor: str | None = None
    supersedes: tuple[str, ...] = ()
    alongside: tuple[str, ...] = ()  # ids of the current rulings a ruling stands beside
    origin: str | None = None  # on `imported`: the foreign record it came from ("adr:...", "owner-ask:R-003")
    # On `asked`: the question's summary and topics (its full text is in `text`), so its history
    # outlives the note. Left out when empty, so lines written before they existed keep their checksums.
    summary: str | None = None
    topics: tuple[str, ...] = ()
    # On `asked`: ids the asker checked and said are a different matter (`ask --not-the-same ID`); left out when empty.
    not_the_same: tuple[str, ...] = ()
    record: str | None = None  # the record's identity, fixed at its first event (older lines: derived)
    was: str | None = None  # `renumbered`: the id the record had before
    outcome: str | None = None  # `settled`: the status the owner kept
    # `settled`: the checksums of every event of the record the settling clone knew, so what it decided does
    # not depend on the order lines end up in after a merge; left out when empty (older `settled` lines know
    # every line before them).
    settles: tuple[str, ...] = ()
    # In the shared layout: one more than the highest clock the writing device had read (see `Ledger`).
    clock: int | None = None
    line: int | None = field(default=None, compare=False)  # in its file
    source: str | None = field(default=None, compare=False)  # the file, as shown
    position: int | None = field(default=None, compare=False)  # in the ledger as read (all files)

    def to_json(self) -> dict[str, Any]:
        """The fields a line holds: those set, the lists as lists (every field is flat: no deep copy needed)."""
        values, data = self.__dict__, {}  # read directly: each appended event is made into a line
        for name in _EVENT_FIELDS:
            value = values[name]
            if value is None:
                continue
            if name in _LIST_FIELDS:
                if not value:
                    continue
                value = list(value)
            data[name] = value
        return data


_EVENT_FIELDS = tuple(f.name for f in fields(Event) if f.name not in ("line", "source", "position"))


_LIST_FIELDS = frozenset(f.name for f in fields(Event) if f.default == ())  # tuples, lists in a line


_LINE_FIELDS = frozenset(_EVENT_FIELDS)  # what a ledger line may hold


_REQUIRED_FIELDS = frozenset(f.name for f in fields(Event) if f.default is MISSING and f.default_factory is MISSING)


_DEFAULTS = {f.name: f.default for f in fields(Event) if f.default is not MISSING}


def _event_of(data: dict[str, Any], number: int, source: str | None) -> Event:
    """`Event(**data, line=number, ...)` for a line's fields, without the generated `__init__`: a frozen
    dataclass sets each of its 23 fields through `object.__setattr__`, a third of reading a ledger line."""
    if not data.keys() <= _LINE_FIELDS or not data.keys() >= _REQUIRED_FIELDS:
        raise TypeError("unknown or missing fields")
    event = object.__new__(Event)
    values = event.__dict__
    values.update(_DEFAULTS)
    values.update(data)
    values["line"] = values["position"] = number
    values["source"] = source
    return event


def canonical_json(data: Any) -> str:
    return _CANONICAL.encode(data)


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)  # made once: one per line


def checksum(canonical: str) -> str:
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


SUM_MARK = ',"sum":"'


def event_line(event: Event) -> str:
    data = event.to_json()
    encoded = _encoded_ahead.pop(event.text, None) if _encoded_ahead and event.text is not None else None
    if encoded is not None and all(key <= "text" for key in data):  # `text` is the last key: spliced in
        del data["text"]
        body = f'{canonical_json(data)[:-1]},"text":{encoded}}}'
    else:
        body = canonical_json(data)
    return f'{body[:-1]}{SUM_MARK}{checksum(body)}"}}\n'


# Texts of events about to be appended, as JSON, worked out ahead (by a child: see `services.prefetch`) so that
# their lines need not encode them again: at 50,000 notes, encoding texts was a tenth of a first reconcile.
# Keyed by the text itself (the same object, so its hash is worked out once); each is used once.
_encoded_ahead: dict[str, str] = {}


def encode_text(text: str) -> str:
    """`text` as an event's line holds it (see `encoded_ahead`)."""
    return canonical_json(text)


def encoded_ahead(text: str, encoded: str) -> None:
    """Remember `encode_text(text)`, worked out elsewhere, for the line of the event that will hold `text`."""
    _encoded_ahead[text] = encoded


def forget_encoded_ahead() -> None:
    _encoded_ahead.clear()


def event_key(event: Event) -> str:
    """The checksum of an event's line: what a `settled` event names the events it knew by."""
    return checksum(canonical_json(event.to_json()))


def parse_line(text: str, number: int, where: str, source: str | None = None) -> Event:
    """One ledger line as an Event; `source` (the file's name as shown) is kept on it."""
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError
        stored = data.pop("sum")
    except (ValueError, KeyError):
        raise InconsistentVault("ledger line is not a checksummed JSON event", path=where, line=number) from None
    head, mark, _ = text.rpartition(SUM_MARK)
    written_as_is = mark and checksum(head + "}") == stored  # as `event_line` wrote it: no need to re-encode
    if not written_as_is and checksum(canonical_json(data)) != stored:
        raise InconsistentVault("ledger line was changed after it was written (checksum mismatch)",
                                path=where, line=number)
    try:
        data["supersedes"] = tuple(data.get("supersedes", ()))
        data["alongside"] = tuple(data.get("alongside", ()))
        data["topics"] = tuple(data.get("topics", ()))
        data["not_the_same"] = tuple(data.get("not_the_same", ()))
        data["settles"] = tuple(data.get("settles", ()))
        return _event_of(data, number, source)  # a merge of files renumbers `position`
    except TypeError:
        raise InconsistentVault("ledger line has unknown fields", path=where, line=number) from None


TORN = "torn last line (a write was interrupted)"


def scan_ledger(text: str, where: str, source: str | None = None,
                first_line: int = 1) -> tuple[list[Event], list[tuple[int, str]]]:
    """Every event that can be read, and every damaged line as (line number, what is wrong); `text` begins at
    line `first_line` of its file."""
    events: list[Event] = []
    damage: list[tuple[int, str]] = []
    lines = text.split("\n")
    last = first_line + len(lines) - 1
    for number, line in enumerate(lines, first_line):
        if number == last:
            if line:
                damage.append((number, TORN))
            break
        if not line.strip():
            continue
        try:  # a checkout that turned line endings into CRLF leaves each event as it was
            events.append(parse_line(line.rstrip("\r"), number, where, source))
        except InconsistentVault as error:
            damage.append((number, error.message))
    return events, damage


def parse_ledger(text: str, where: str, source: str | None = None, first_line: int = 1) -> list[Event]:
    """All events in `text` (which begins at line `first_line` of its file); raises on a torn last line or a
    damaged one."""
    events, damage = scan_ledger(text, where, source, first_line)
    if damage:
        number, message = damage[0]
        if message == TORN:
            message += "; the next write on this device cuts it off (`vault-tools lint --fix` does now)"
        raise InconsistentVault(message, path=where, line=number)
    return events


def id_marks_from(events: list[Event], top: int = 0, tags: set[str] | None = None) -> tuple[int, frozenset[str]]:
    """The highest number of any id `events` name (as `id` or `was`: an id handed out once is never handed out
    again), at least `top`, and the device tags of those ids, with `tags`."""
    found = set(tags or ())
    for event in events:
        for known in (event.id, event.was):
            if known and ID_PATTERN.match(known):
                top = max(top, id_number(known))
                if known.count("-") == 2:
                    found.add(known.rsplit("-", 1)[1])
    return top, frozenset(found)
