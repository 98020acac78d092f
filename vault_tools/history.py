"""A record's history as the ledger tells it: its events in order, the status they leave, what a settlement
kept, and the conflicts two clones' outcomes make. Pure: events in, histories out.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .ledger_lines import STATUS_AFTER, Event, canonical_json, checksum, event_key
from .model import Status, answer_of

# Events that fix a note's whole content: its seal is the latest of them that carries text.
SEALING_EVENTS = ("sealed", "amended", "superseded", "retracted", "imported", "renumbered", "relinked", "settled")


# The ways a record can end, and so conflict when two clones each took one.
CLOSING_EVENTS = ("superseded", "retracted")


_MAY_CONFLICT = frozenset(("withdrawn", "settled", *CLOSING_EVENTS))  # see `History.conflict`

# Steps that give an answer a new seal hash but keep the answer (`History.same_answer` follows it through them)
_AMENDING = ("amended", "relinked")

# Events that carry one answer's seal hash (`History.of_dropped_answer`)
_OF_AN_ANSWER = frozenset(("ruled", "sealed", *_AMENDING, *CLOSING_EVENTS))


def placed(event: Event, **where: Any) -> Event:
    """`event` with `where` changed (its place: line, source, position; or its clock), as `dataclasses.replace`
    makes it but without running `__init__` again: ten times faster, and reads and appends do it for every event."""
    placed = object.__new__(Event)
    placed.__dict__.update(event.__dict__, **where)
    return placed


def new_record() -> str:
    """A record's identity: random, so clones that record at the same time never share one."""
    import uuid  # only a new record needs an identity

    return uuid.uuid4().hex


@dataclass(frozen=True)
class Conflict:
    """Outcomes two clones recorded for one record that cannot both stand; the owner decides."""

    record: str
    id: str
    kind: str  # ruled-and-withdrawn, ruled-twice (two answers), closed-twice (superseded by two rulings, or
    # superseded and retracted), or kept-and-superseded (one clone settled on an answer while another
    # superseded the answer that settlement dropped)
    outcomes: tuple[str, ...]  # what each clone did: "ruled", "withdrawn", "retracted", "superseded by D-0007"
    successors: tuple[str, ...] = ()  # closed-twice: the rulings that each superseded it
    ruling: str | None = None  # ruled-and-withdrawn: the ruling's summary, as sealed
    reason: str | None = None  # ruled-and-withdrawn: why it was withdrawn
    rulings: tuple[str, ...] = ()  # ruled-twice: each answer's summary, in ledger order (kept as ruling-1, ...)


@dataclass
class History:
    """What the ledger knows of one record (one note's whole life, whatever its id or path became)."""

    id: str  # the id its latest event names (renumbering changes it)
    events: list[Event] = field(default_factory=list)
    record: str = ""

    @property
    def _settlements(self) -> tuple[list[Event], list[Event]]:
        """The settlements no other settlement knew of (in ledger order), and the events none of them knew of;
        worked out once for the events the record has (`histories` asks an older line's record for its status
        while it is still adding events to it)."""
        kept: tuple[int, tuple[list[Event], list[Event]]] | None = self.__dict__.get("_settled_for")
        if kept is not None and kept[0] == len(self.events):
            return kept[1]
        found = self._settlements_of_events()
        self.__dict__["_settled_for"] = (len(self.events), found)
        return found

    def _settlements_of_events(self) -> tuple[list[Event], list[Event]]:
        """`_settlements`, worked out.

        A settlement knows the events it names in `settles` (an older one: every line before it), and what
        the settlements among them knew. Line order alone does not say what a clone knew: a rebase replays
        this clone's lines after the other's, whatever each had seen."""
        settlements = [e for e in self.events if e.event == "settled"]
        if not settlements:
            return [], list(self.events)
        keys = [event_key(e) for e in self.events]
        direct: dict[str, set[str]] = {}
        for index, event in enumerate(self.events):
            if event.event == "settled":
                direct[keys[index]] = set(event.settles) if event.settles else set(keys[:index])
        knows: dict[str, set[str]] = {}

        def known_by(key: str, seen: frozenset[str] = frozenset()) -> set[str]:
            if key not in knows:
                found = set(direct[key])
                for other in direct[key] & direct.keys():
                    if other not in seen:
                        found |= known_by(other, seen | {key})
                knows[key] = found
            return knows[key]

        known_by_any = set().union(*(known_by(key) for key in direct))
        frontier_keys = [key for key in direct if key not in known_by_any]
        frontier = [e for e, key in zip(self.events, keys, strict=True) if key in frontier_keys]
        known = set().union(*(known_by(key) for key in frontier_keys)) | set(frontier_keys)
        return frontier, [e for e, key in zip(self.events, keys, strict=True) if key not in known]

    @property
    def settled(self) -> Event | None:
        """The settlement that stands (where two clones settled differently, they are in conflict)."""
        frontier, _ = self._settlements
        return frontier[-1] if frontier else None

    @property
    def since_settled(self) -> list[Event]:
        """What no standing settlement knew of: all events, if none was settled."""
        return self._settlements[1]

    @property
    def status(self) -> Status | None:
        settled = self.settled
        if settled is not None:
            for event in reversed(self.since_settled):  # what happened since
                if event.event in STATUS_AFTER:
                    return STATUS_AFTER[event.event]
            if settled.outcome and settled.outcome != Status.RULED.value:
                return Status(settled.outcome)
        # A settlement that kept one answer stands at what became of that answer (retracted on its clone
        # since, say), whatever became of the answers it dropped, in whatever order the clones' events merged.
        for event in reversed(self.events):
            if self.of_dropped_answer(event, settled):
                continue
            # Keeping a ruling over a withdrawal keeps what became of the ruling since (a retraction, say).
            if event.event in STATUS_AFTER and not (settled is not None and event.event == "withdrawn") \
                    and not self.closed_a_dropped_answer(event, settled):
                return STATUS_AFTER[event.event]
        return None

    def of_dropped_answer(self, event: Event, settled: Event | None) -> bool:
        """Whether `event` (ruled, sealed, a closing, or an amendment made on its clone) is about an answer the
        standing settlement `settled` did not keep."""
        if not (settled is not None and settled.outcome == Status.RULED.value and event.event in _OF_AN_ANSWER
                and bool(event.hash) and bool(settled.hash) and event.hash != settled.hash):
            return False
        if event.text is None:  # a `ruled` line: about the answer sealed under its hash, kept or not
            kept = self.chosen(settled)
            return kept is None or kept.hash != event.hash
        return not self.same_answer(event, settled)

    def closed_a_dropped_answer(self, event: Event, settled: Event | None) -> bool:
        """A supersession or retraction of an answer that the standing settlement did not keep."""
        return event.event in CLOSING_EVENTS and self.of_dropped_answer(event, settled)

    @property
    def seal(self) -> Event | None:
        """The latest event that fixed the note's content (sealed, or a tool's lifecycle edit), but for those of
        an answer the standing settlement dropped (closed on its clone, not knowing of the settlement)."""
        settled = self.settled
        if settled is None:
            return next((e for e in reversed(self.events) if e.event in SEALING_EVENTS and e.text is not None), None)
        # What a clone did not knowing of the settlement (related the kept answer, say) is newer than what the
        # settlement wrote, wherever its line sorts; but not what it did to what the settlement did not keep
        for events in (self.since_settled, self.events):
            for event in reversed(events):
                if event.event in SEALING_EVENTS and event.text is not None and \
                        not self.of_dropped_answer(event, settled) and not _of_an_outcome_not_kept(event, settled):
                    return event
        return None

    @property
    def sealed(self) -> bool:
        return any(event.event == "sealed" for event in self.events)

    @property
    def seal_lost(self) -> Event | None:
        """The `ruled` event, when the ledger has no `sealed` line to go with it. The two are always
        written together, so the `sealed` line was removed: the ruling must not be sealed again
        from whatever its note says now."""
        if self.sealed:
            return None
        return next((event for event in self.events if event.event == "ruled" and event.hash), None)

    def seal_lost_for(self, digest: str | None) -> Event | None:
        """`seal_lost`, unless the note now (its seal hash `digest`) still means what the `ruled` line recorded:
        sealing it then seals nothing but the ruling. A kill in the middle of the append that wrote both lines
        leaves just that; a note edited since keeps the refusal (docs/design/0017). `digest` is None where the
        hash cannot vouch for the note alone (`meaning.hash_alone_vouching`)."""
        lost = self.seal_lost
        return None if lost is not None and digest is not None and lost.hash == digest else lost

    @property
    def path(self) -> str | None:
        return self.events[-1].path if self.events else None

    @property
    def paths(self) -> list[str]:
        """Every path its events named, latest first."""
        return list(dict.fromkeys(event.path for event in reversed(self.events)))

    @property
    def seal_hash(self) -> str | None:
        seal = self.seal
        return seal.hash if seal else None

    @functools.cached_property
    def summary(self) -> RecordSummary:
        """What the record stands at, worked out once: a History is not changed once built (events appended
        later make a new one, see `extend_histories`), and both the ledger's summaries and a live view's ask."""
        return RecordSummary(self.record, self.id, self.status, self.paths, self.seal_hash, self.conflict)

    @property
    def closing(self) -> Event | None:
        """The event that ended the ruling as it stands (a settlement's choice wins over the events it settled)."""
        if self.status not in (Status.SUPERSEDED, Status.RETRACTED):
            return None
        settled = self.settled
        since = self.since_settled if settled is not None else []
        closings = [e for e in since if e.event in CLOSING_EVENTS]
        if closings:  # the kept answer's own, where it was closed too
            return next((e for e in reversed(closings) if not self.closed_a_dropped_answer(e, settled)), closings[-1])
        if settled is not None and settled.outcome == "superseded":
            return next((e for e in reversed(self.events) if e.event == "superseded"
                         and e.successor == settled.successor), None)
        if settled is not None and settled.outcome == "retracted":  # the retraction `settle` wrote back
            return next((e for e in reversed(self.events) if e.event == "retracted" and e.text), None)
        # A settlement that kept an answer retracted on its clone: that retraction, not a closing of an
        # answer it dropped that sorts later in the merged ledger
        return next((e for e in reversed(self.events) if e.event in CLOSING_EVENTS
                     and not self.closed_a_dropped_answer(e, settled)), None)

    def same_answer(self, event: Event, other: Event | None) -> bool:
        """Whether `event` is about the answer `other` seals (or a settlement kept), though its seal hash differs:
        the ruling was related to others (`alongside`), renumbered, relinked or shortened by its owner since,
        which gives it a new hash but keeps its answer: its summary, ruled_at and ruled_by. Where two of the
        record's answers share those (two agents recording one owner's words on one day), their bodies tell
        them apart, links blanked (relinking moves them)."""
        if other is None:
            return False
        mine, theirs = _answer_key(event.text), _answer_key(other.text)
        if mine is None or theirs is None or mine[0] != theirs[0]:
            return False
        return mine[1] == theirs[1] or not self._answers_alike(mine[0])

    def _answers_alike(self, fields: tuple[str, str, str]) -> bool:
        """Whether two of the record's answers share `fields` (summary, ruled_at, ruled_by)."""
        bodies = {key[1] for e in self.events if e.event == "sealed" and (key := _answer_key(e.text)) is not None
                  and key[0] == fields}
        return len(bodies) > 1

    def as_it_stands(self, answer: Event) -> Event:
        """The answer sealed as `answer`, as it now stands on its clone: its latest amendment, relinking or closing,
        each carrying the note's text then. An amendment gives the answer a new hash, followed by its answer
        (`same_answer`); a closing carries the hash the answer had, so it is followed by hash alone. The other
        answers' own events are never taken."""
        others = {e.hash for e in self.events if e.event == "sealed" and e.hash != answer.hash}
        hashes, found = {answer.hash}, answer
        for event in self.events:
            if not event.text or event.hash in others:
                continue
            if event.event in _AMENDING and (event.hash in hashes or self.same_answer(event, answer)):
                hashes.add(event.hash)
                found = event
            elif event.event in CLOSING_EVENTS and event.hash in hashes:
                found = event
        return found

    def ruling_as_it_stands(self) -> Event | None:
        """The ruling to keep when the owner keeps it (`settle`), as it stands on its clone: the answer the
        standing settlement kept, where one did, else the last one sealed (`as_it_stands`)."""
        settled = self.settled
        answer = self.chosen(settled) if settled is not None and settled.outcome == Status.RULED.value else \
            next((e for e in reversed(self.events) if e.event == "sealed"), None)
        return self.as_it_stands(answer) if answer is not None else None

    def chosen(self, settlement: Event) -> Event | None:
        """The outcome a settlement kept, as the event that recorded it."""
        if settlement.outcome == "superseded":
            return next((e for e in self.events if e.event == "superseded" and e.successor == settlement.successor),
                        None)
        if settlement.outcome == Status.RULED.value:
            # The kept answer's seal: by its hash, or by its answer where it was related before it was kept (the
            # settlement then carries the amended hash); an older settlement with neither, the last answer.
            sealed = [e for e in self.events if e.event == "sealed"]
            return next((e for e in sealed if e.hash == settlement.hash), None) or \
                next((e for e in sealed if self.same_answer(e, settlement)), None) or (sealed[-1] if sealed else None)
        return next((e for e in self.events if e.event == settlement.outcome), None)

    @property
    def conflict_events(self) -> list[Event]:
        """The outcomes that may conflict: what no standing settlement knew of, and what each kept."""
        frontier, since = self._settlements
        chosen = [event for event in (self.chosen(s) for s in frontier) if event is not None]
        if len(frontier) == 1 and not any(e.event in ("withdrawn", "sealed", *CLOSING_EVENTS) for e in since):
            return since  # settled, and nothing it did not know of has ended or answered it since
        return sorted({id(e): e for e in chosen + since}.values(), key=self.events.index) if chosen else since

    # docs/design/0027-conflicts-are-kept-not-resolved.md
    @property
    def conflict(self) -> Conflict | None:
        """Two outcomes recorded on two clones that cannot both stand, until the owner settles them."""
        # A settlement decides what it knew of; what clones record without knowing of it may conflict anew.
        if not any(e.event in _MAY_CONFLICT for e in self.events) and \
                sum(e.event == "sealed" for e in self.events) <= 1:
            return None  # never withdrawn, closed or settled, one answer at most: the kinds below need one of those
        events = self.conflict_events
        kinds = {e.event for e in events}
        if "withdrawn" in kinds and kinds & {"ruled", "sealed"}:
            withdrawn = next(e for e in events if e.event == "withdrawn")
            return Conflict(self.record, self.id, "ruled-and-withdrawn", ("ruled", "withdrawn"),
                            ruling=_summary_of(self.seal.text if self.seal else None), reason=withdrawn.reason)
        answers = list({e.hash: e for e in events if e.event == "sealed" and e.hash}.values())
        if len(answers) > 1:
            return Conflict(self.record, self.id, "ruled-twice", tuple(f"ruling-{n}" for n in range(1, len(answers) + 1)),
                            rulings=tuple(_summary_of(e.text) or "?" for e in answers))
        settled = self.settled
        since = self.since_settled
        dropped = [e for e in since if self.closed_a_dropped_answer(e, settled)]
        # The kept answer closed since as well: the clones' closings are what may differ (below), not "ruled".
        kept_closed = any(e.event in CLOSING_EVENTS and not self.closed_a_dropped_answer(e, settled) for e in since)
        if settled is not None and dropped and not kept_closed:
            outcome = dropped[-1]
            successor = outcome.successor if outcome.event == "superseded" else None
            return Conflict(self.record, self.id, "kept-and-superseded",
                            ("ruled", f"superseded by {successor}" if successor else outcome.event),
                            (successor,) if successor else (), ruling=_summary_of(settled.text),
                            reason=outcome.reason)
        closings: dict[tuple[str, str | None], None] = {}
        for event in events:
            if event.event in CLOSING_EVENTS:
                closings.setdefault((event.event, event.successor if event.event == "superseded" else None), None)
        if len(closings) > 1:
            outcomes = tuple(f"superseded by {successor}" if kind == "superseded" else kind
                             for kind, successor in closings)
            successors = tuple(successor for kind, successor in closings if kind == "superseded" and successor)
            return Conflict(self.record, self.id, "closed-twice", outcomes, successors)
        return None


def _of_an_outcome_not_kept(event: Event, settled: Event) -> bool:
    """An amendment or relinking of a text in another status than the one a settlement kept where it kept no
    answer (a withdrawal, a retraction, a successor): the ruling it relates is not what the record stands at."""
    if settled.outcome in (None, Status.RULED.value) or event.event not in _AMENDING:
        return False
    data = properties_of(event.text)
    return data is None or str(data.get("status")) != settled.outcome


@functools.lru_cache(maxsize=256)
def _answer_key(text: str | None) -> tuple[tuple[str, str, str], str] | None:
    """What tells one answer from another in an event's text (`History.same_answer`); None where it cannot be
    read."""
    parsed = _parsed(text)
    answer = answer_of(parsed[0]) if parsed is not None else None
    if parsed is None or answer is None:
        return None
    return answer, _ANY_LINK.sub("[[]]", parsed[1].replace("\r\n", "\n")).strip()


_ANY_LINK = re.compile(r"\[\[[^\[\]]*\]\]")  # a link, wherever it points (relinking moves it)


def _summary_of(text: str | None) -> str | None:
    data = properties_of(text)
    summary = data.get("summary") if data is not None else None
    return str(summary) if summary is not None else None


def properties_of(text: str | None) -> Mapping[str, Any] | None:
    """The properties of a text an event holds; None when it has none that can be read."""
    parsed = _parsed(text)
    return parsed[0] if parsed is not None else None


@functools.lru_cache(maxsize=256)
def _parsed(text: str | None) -> tuple[Mapping[str, Any], str] | None:
    """The properties and body of a text an event holds; None when it has no properties that can be read."""
    if not text:
        return None
    from .notes import parse_text  # only a conflict, or a settled one, needs to read a sealed text

    try:
        note = parse_text(text.removeprefix("\ufeff"), Path("sealed.md"))
    except Exception:  # a text that cannot be read has no properties to compare or show
        return None
    return (note.data, note.body) if hasattr(note.data, "get") else None


def seal_text_without_bom(history: History) -> str:
    seal = history.seal
    return (seal.text or "").removeprefix("\ufeff") if seal else ""


def _derived_record(event: Event) -> str:
    """The identity of a record begun before records were written down: its first event line's checksum."""
    return "L" + checksum(canonical_json(event.to_json()))


def _legacy_record(event: Event, found: Mapping[str, History], by_id: Mapping[str, list[str]]) -> str:
    """The record an event without one belongs to. Ledgers of two clones that both handed out an id
    (before ids carried a clone tag) hold two records under it: an `asked` for an id already asked, or
    a `ruled` with no open question under that id, starts another; other events go to the record of
    that id whose notes lived at the event's path, else the latest."""
    candidates = [found[key] for key in by_id.get(event.id, [])]
    if not candidates:
        return _derived_record(event)
    if event.event in ("asked", "imported"):
        return _derived_record(event)
    if event.event == "ruled":
        open_ones = [h for h in candidates if h.status in (None, Status.OPEN)]
        if not open_ones:
            return _derived_record(event)
        candidates = open_ones
    for history in reversed(candidates):
        if event.path in history.paths:
            return history.record
    return candidates[-1].record


def histories(events: Iterable[Event]) -> dict[str, History]:
    """Every record the ledger holds, by its identity."""
    found: dict[str, History] = {}
    by_id: dict[str, list[str]] = {}  # current id -> records, oldest first
    for event in events:
        key = event.record or _legacy_record(event, found, by_id)
        history = found.get(key)
        if history is None:
            history = found[key] = History(event.id, record=key)
            by_id.setdefault(event.id, []).append(key)
        elif event.id != history.id:  # renumbered
            by_id[history.id].remove(key)
            history.id = event.id
            by_id.setdefault(event.id, []).append(key)
        if event not in history.events:  # a line a union merge kept twice is one event
            history.events.append(event)
    return found


def extend_histories(found: Mapping[str, History], appended: Iterable[Event]) -> dict[str, History] | None:
    """`histories` of the events behind `found` and then `appended`, without reading them all again: a new
    dict, with a new History for each record the new events belong to (the others are shared). None when an
    appended event has no record of its own (an older line: which record it belongs to needs them all)."""
    extended = dict(found)
    for event in appended:
        if event.record is None:
            return None
        history = extended.get(event.record)
        if history is None:
            extended[event.record] = History(event.id, [event], record=event.record)
        elif event.id != history.id or event not in history.events:  # as `histories` takes them, one by one
            events = history.events if event in history.events else [*history.events, event]
            extended[event.record] = History(event.id, events, record=event.record)
    return extended


@dataclass(frozen=True)
class RecordSummary:
    """A record as far as reading the vault needs it, without its events."""

    record: str
    id: str
    status: Status | None
    paths: list[str]
    seal_hash: str | None
    conflict: Conflict | None = None

    @classmethod
    def of(cls, history: History) -> RecordSummary:
        return history.summary

    def to_json(self) -> dict[str, Any]:
        """As `from_json` reads it (`asdict` deep-copies every field: slow for a thousand records)."""
        return {"record": self.record, "id": self.id, "status": self.status, "paths": list(self.paths),
                "seal_hash": self.seal_hash, "conflict": asdict(self.conflict) if self.conflict else None}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RecordSummary:
        conflict = data.get("conflict")
        return cls(data["record"], data["id"], Status(data["status"]) if data.get("status") else None,
                   list(data["paths"]), data.get("seal_hash"),
                   Conflict(**{**conflict, "outcomes": tuple(conflict["outcomes"]),
                               "successors": tuple(conflict["successors"]),
                               "rulings": tuple(conflict.get("rulings", ()))}) if conflict else None)


def histories_by_id(events: Iterable[Event]) -> dict[str, History]:
    """Every record by its current id; where two records share an id, the one begun last."""
    found: dict[str, History] = {}
    for history in histories(events).values():
        found[history.id] = history
    return found


def latest_with_id(known: Mapping[str, History], decision_id: str) -> History | None:
    """The newest record that has this id now (an id named inside an event, like a successor)."""
    found = [history for history in known.values() if history.id == decision_id]
    return max(found, key=lambda h: (h.events[0].position or h.events[0].line or 0, h.events[0].at)) if found else None


# -- one note given two ids (`commands.twins`) ---------------------------------------------------------------

MADE = "made:"  # the mark's prefix in a first event's `origin` (`commands.twins.made_origin`)


@dataclass(frozen=True)
class Twins:
    """The records one note became on two or more devices."""

    records: tuple[History, ...]  # in the order every device keeps them: the first event's checksum

    @property
    def ids(self) -> list[str]:
        return [record.id for record in self.records]


def twin_notes(known: dict[str, History]) -> Iterator[Twins]:
    """Each note that two or more records began from, by the mark of their first events."""
    by_mark: dict[str, list[History]] = {}
    for history in known.values():
        first = history.events[0] if history.events else None
        if first is not None and first.origin and first.origin.startswith(MADE):
            by_mark.setdefault(first.origin, []).append(history)
    for records in by_mark.values():
        if len({record.id for record in records}) > 1:
            yield Twins(tuple(sorted(records, key=lambda record: event_key(record.events[0]))))
