"""Decisions, their statuses and lifecycle rules. Pure: no I/O, no printing.

A decision is built from the already-parsed frontmatter mapping of a note; every problem found is returned
as a `Problem` (field, message, line) so the caller decides whether it is an error, a lint finding or a page entry.
"""
from __future__ import annotations

import datetime as dt
import enum
import functools
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from .cjk import text_size
from .dates import instant, parse_date, parse_datetime
from .topics import edit_distance

T = TypeVar("T")

# `D-0007` (sequential, one writer) or `D-0007-k7q2` (a counter and the tag of the clone that made it:
# unique without coordination across clones; see docs/several-machines.md).
ID_PATTERN = re.compile(r"^D-(\d{1,9})(?:-([0-9a-z]{2,8}))?$")
CLONE_TAG_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case: no i, l, o, u
CLONE_TAG_LENGTH = 4
TOPIC_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
MIN_TEXT = 20  # summary, reason and reask_reason must be at least this long (`cjk.text_size`)
MAX_SUMMARY = 300  # the most one note's fields may hold (lint VT009): a summary is one line an agent reads
MAX_TEXT = 2000  # reason, reask_reason, revisit_if, source, asked_by, ruled_by
MAX_TOPICS = 20
MAX_TOPIC_CHARS = 64
MAX_SUPERSEDES = 20


class Status(enum.StrEnum):
    OPEN = "open"
    RULED = "ruled"
    SUPERSEDED = "superseded"
    WITHDRAWN = "withdrawn"
    RETRACTED = "retracted"


FINAL_STATUSES = frozenset({Status.SUPERSEDED, Status.WITHDRAWN, Status.RETRACTED})

TRANSITIONS: dict[Status, frozenset[Status]] = {
    Status.OPEN: frozenset({Status.RULED, Status.WITHDRAWN}),
    Status.RULED: frozenset({Status.SUPERSEDED, Status.RETRACTED}),
    Status.SUPERSEDED: frozenset(),
    Status.WITHDRAWN: frozenset(),
    Status.RETRACTED: frozenset(),
}

# Every property the ledger gives a meaning to. Any other property is the owner's.
TEXT_FIELDS = ("type", "id", "status", "summary", "asked_by", "ruled_by", "source",
               "superseded_by", "reason", "reask_reason", "revisit_if")
DATETIME_FIELDS = ("asked_at", "ruled_at")
DATE_FIELDS = ("revisit_by", "due")
LIST_FIELDS = ("topics", "supersedes", "alongside", "scope")
# A checkbox: `alongside_all: true`, a ruling standing beside every ruling current on its topics when it was ruled
# (routine rulings of one kind: "Expense 12 approved", "Expense 13 approved"), without a link to each.
BOOL_FIELDS = ("alongside_all",)
KNOWN_FIELDS = frozenset(TEXT_FIELDS + DATETIME_FIELDS + DATE_FIELDS + LIST_FIELDS + BOOL_FIELDS)
# A ruling's terms, for `gate`: flat properties named `term_<key>` holding one value each (text, number,
# checkbox or date), as Obsidian's Properties panel edits them; sealed with the ruling.
TERM_PREFIX = "term_"
TERM_KEY_PATTERN = re.compile(r"^[a-z0-9]+(_[a-z0-9]+)*$")

# The owner's mark for a ruling the agent's view always lists in full. Not a ledger field: the owner
# sets and clears it at any time, on sealed rulings too, like `tags`.
PINNED = "pinned"

# The checkbox vault-tools adds, unticked, to a decision note an agent's tool call changed as only the owner may
# (an answer, a retraction, a withdrawal, a ruling written by hand): the change is held, out of every reader's
# view and never sealed or recorded, until the owner ticks it in Obsidian (docs/agents.md, "Held for the owner").
# Not a ledger field, not sealed.
CONFIRMED = "confirmed_by_owner"


def is_unticked(value: Any) -> bool:
    """A checkbox left unticked (`false`), or the text `false` / `no` typed by hand; not an absent property."""
    return value is False or (isinstance(value, str) and value.strip().lower() in ("false", "no"))


def is_pinned(value: Any) -> bool:
    """An Obsidian checkbox (`pinned: true`), or the text `true` / `yes` typed by hand (also what a checkbox of
    BOOL_FIELDS holds)."""
    return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "yes"))


# The fields whose parsed values the seal covers (plus the body).
SEALED_FIELDS = ("id", "status", "topics", "summary", "asked_at", "asked_by", "ruled_at",
                 "ruled_by", "source", "supersedes", "revisit_if", "revisit_by", "alongside", "terms", "scope",
                 "alongside_all")
# Sealed fields that join the seal only when they hold something, so seals made before they existed stay valid.
SEALED_WHEN_SET = frozenset({"alongside", "terms", "scope", "alongside_all"})


def answer_of(data: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """What tells one answer to a question from another, whatever became of it since (sealed, related to
    other rulings, renumbered, superseded, retracted): its summary, ruled_at and ruled_by. None without a
    summary. Two agents recording one owner's words on one day may write all three alike: the ledger's
    histories tell answers apart by their bodies too (`History.same_answer`)."""
    if data.get("summary") is None:
        return None
    return str(data.get("summary")), str(data.get("ruled_at")), str(data.get("ruled_by"))


def is_ledger_property(name: str) -> bool:
    """A property the ledger gives a meaning to (a known field or a term), as opposed to the owner's own."""
    return name in KNOWN_FIELDS or name.startswith(TERM_PREFIX)

REQUIRED_BY_STATUS: dict[Status, tuple[str, ...]] = {
    Status.OPEN: (),
    Status.RULED: ("ruled_at", "ruled_by"),
    Status.SUPERSEDED: ("ruled_at", "superseded_by", "reason"),
    Status.WITHDRAWN: ("reason",),
    Status.RETRACTED: ("reason",),
}
ALWAYS_REQUIRED = ("id", "status", "topics", "summary")


@dataclass(frozen=True)
class Problem:
    field: str | None
    message: str
    line: int | None = None
    code: str | None = None  # the lint rule that reports it (VT002...); set where the problem is found

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


@dataclass(frozen=True)
class Decision:
    id: str
    status: Status
    topics: tuple[str, ...]
    summary: str
    path: str  # vault-relative, forward slashes
    body: str = ""
    asked_at: dt.datetime | dt.date | None = None
    asked_by: str | None = None
    ruled_at: dt.datetime | dt.date | None = None
    ruled_by: str | None = None
    source: str | None = None
    supersedes: tuple[str, ...] = ()  # links as written
    alongside: tuple[str, ...] = ()  # links to current rulings this one stands beside without replacing them
    alongside_all: bool = False  # stands beside every ruling current on its topics when it was ruled (BOOL_FIELDS)
    scope: tuple[str, ...] = ()  # globs of the files this ruling governs (relative to the vault or project_root)
    superseded_by: str | None = None
    reason: str | None = None
    reask_reason: str | None = None
    revisit_if: str | None = None
    revisit_by: dt.date | None = None
    due: dt.date | None = None
    terms: Mapping[str, str] = field(default_factory=dict)  # term key (without `term_`) -> value as text
    pinned: bool = False  # the owner's `pinned: true`: always listed in full in the agent's view
    held: bool = False  # `confirmed_by_owner: false`: a change an agent's call made, held until the owner ticks it
    key_lines: Mapping[str, int] = field(default_factory=dict, compare=False, repr=False)
    # Set by `Workspace.decisions_in_effect`: a sealed ruling whose note is gone, read from the ledger's sealed
    # text (it stands until the ledger records its end, see `missing_rulings`); outcomes two clones recorded
    # that cannot both stand (`conflicts.conflict_line`), which every reader says, neither presented as in effect.
    note_missing: bool = field(default=False, compare=False)
    conflict: str | None = field(default=None, compare=False)

    @property
    def number(self) -> int:
        return id_number(self.id)

    @property
    def order(self) -> tuple[int, str]:
        """Creation order as far as ids tell: the counter, then the clone tag."""
        return self.number, self.id

    @property
    def title(self) -> str:
        """The file name without folder and `.md`: what an Obsidian link names."""
        return self.path.rsplit("/", 1)[-1].removesuffix(".md")

    @property
    def is_current(self) -> bool:
        return self.status is Status.RULED

    def line_of(self, name: str) -> int | None:
        return self.key_lines.get(name)


@functools.cache  # every sort of decisions asks, a hundred thousand times in a lint of a large vault
def id_number(decision_id: str) -> int:
    match = ID_PATTERN.match(decision_id)
    if not match:
        raise ValueError(f"not a decision id: {decision_id!r}")
    return int(match.group(1))


def format_id(number: int, digits: int = 4, tag: str | None = None) -> str:
    return f"D-{number:0{digits}d}" + (f"-{tag}" if tag else "")


def id_matches(typed: str, decision_id: str) -> bool:
    """Whether a typed id names this decision: the whole id, or its counter alone (`D-0003` for
    `D-0003-k7q2`), as a short form that only counts when it names one note."""
    return decision_id == typed or decision_id.startswith(typed + "-")


class ByDecision(Generic[T]):
    """What a long-running process worked out from one decision (frozen: the very object says the same), with what
    else it was worked out from (`given`, compared with ==): the decision is kept with it, so an id is never
    another's. Forgotten all at once past `most` (a watcher running for weeks reads many versions of each note)."""

    def __init__(self, most: int) -> None:
        self.most = most
        self._kept: dict[int, tuple[Decision, object, T]] = {}

    def get(self, decision: Decision, given: object = None) -> T | None:
        known = self._kept.get(id(decision))
        return known[2] if known is not None and known[0] is decision and known[1] == given else None

    def keep(self, decision: Decision, value: T, given: object = None) -> None:
        if len(self._kept) >= self.most:
            self._kept.clear()
        self._kept[id(decision)] = (decision, given, value)

    def clear(self) -> None:
        self._kept.clear()


def the_very(kept: Sequence[Decision], given: Sequence[Decision]) -> bool:
    """Whether `given` are the very decision objects `kept` holds, in the same order: what a long-running process
    worked out from them holds for them (frozen; compared by identity, since what readers add to a decision, a
    conflict or a missing note, is not compared by equality)."""
    return len(kept) == len(given) and all(mine is theirs for mine, theirs in zip(kept, given, strict=True))


def is_decision_mapping(data: Any) -> bool:
    return isinstance(data, Mapping) and str(data.get("type", "")).strip().casefold() == "decision"  # `Decision` too


# -- building a Decision from frontmatter ------------------------------------------

class _Problems(list[Problem]):
    """The problems found in one note's frontmatter, each placed on its key's line where known."""

    def __init__(self, lines: Mapping[str, int]) -> None:
        super().__init__()
        self.lines = lines

    def add(self, name: str | None, message: str, code: str) -> None:
        self.append(Problem(name, message, self.lines.get(name) if name else None, code))


def build_decision(data: Mapping[str, Any], *, path: str, body: str = "",
                   key_lines: Mapping[str, int] | None = None) -> tuple[Decision | None, list[Problem]]:
    """Turn a parsed frontmatter mapping into a Decision, with every problem found.

    Returns `(None, problems)` when the note cannot be understood at all
    (no valid id or status); otherwise a Decision, possibly with problems.
    """
    lines = dict(key_lines or {})
    problems = _Problems(lines)
    for name in ALWAYS_REQUIRED:
        if data.get(name) in (None, "", []):
            problems.add(name, "is required", "VT002")
    values = _typed_values(data, problems)
    terms = _terms(data, problems)

    decision_id = values.get("id")
    if decision_id is not None and not ID_PATTERN.match(decision_id):
        problems.add("id", f"must look like D-0007, not {decision_id!r}", "VT003")
        decision_id = None
    status = None
    if "status" in values:
        try:
            status = Status(str(values["status"]).strip().casefold())  # `Ruled` is meant as `ruled`
        except ValueError:
            allowed = ", ".join(s.value for s in Status)
            problems.add("status", f"unknown status {values['status']!r} (expected one of: {allowed})", "VT006")
    _check_values(values, status, problems)
    if decision_id is None or status is None:
        return None, list(problems)

    decision = Decision(
        id=decision_id,
        status=status,
        topics=values.get("topics", ()),
        summary=values.get("summary") or "",
        path=path,
        body=body,
        asked_at=values.get("asked_at"),
        asked_by=values.get("asked_by"),
        ruled_at=values.get("ruled_at"),
        ruled_by=values.get("ruled_by"),
        source=values.get("source"),
        supersedes=values.get("supersedes", ()),
        alongside=values.get("alongside", ()),
        alongside_all=values.get("alongside_all", False),
        scope=values.get("scope", ()),
        superseded_by=values.get("superseded_by"),
        reason=values.get("reason"),
        reask_reason=values.get("reask_reason"),
        revisit_if=values.get("revisit_if"),
        revisit_by=values.get("revisit_by"),
        due=values.get("due"),
        terms=terms,
        pinned=is_pinned(data.get(PINNED)),
        held=is_unticked(data.get(CONFIRMED)),
        key_lines=lines,
    )
    return decision, list(problems)


def _typed_values(data: Mapping[str, Any], problems: _Problems) -> dict[str, Any]:
    """Each known property read as its type (text, date, list, checkbox); one of the wrong type is a problem."""
    values: dict[str, Any] = {}
    for name in TEXT_FIELDS:
        value = data.get(name)
        if value is None or name == "type":
            continue
        if isinstance(value, list | dict | Mapping):
            problems.add(name, f"must be text, not a {'list' if isinstance(value, list) else 'mapping'}", "VT003")
            continue
        values[name] = str(value).strip()

    for name in DATETIME_FIELDS:
        if data.get(name) in (None, ""):
            continue
        try:
            values[name] = parse_datetime(data[name])
        except ValueError:
            problems.add(name, f"must be a date and time like 2026-07-17T08:30:00, not {data[name]!r}", "VT003")

    for name in DATE_FIELDS:
        if data.get(name) in (None, ""):
            continue
        try:
            values[name] = parse_date(data[name])
        except ValueError:
            problems.add(name, f"must be a date like 2026-07-17, not {data[name]!r}", "VT003")

    for name in LIST_FIELDS:
        value = data.get(name)
        if value is None:
            continue
        if not isinstance(value, list):
            problems.add(name, "must be a list", "VT003")
            continue
        items = []
        for item in value:
            if not isinstance(item, str) or not item.strip():
                problems.add(name, f"items must be text, not {item!r}", "VT003")
                continue
            items.append(item.strip())
        values[name] = tuple(items)

    for name in BOOL_FIELDS:
        value = data.get(name)
        if value in (None, "", False):
            continue
        if not is_pinned(value) and not (isinstance(value, str) and value.strip().lower() in ("false", "no")):
            problems.add(name, f"must be a checkbox (true or false), not {value!r}", "VT003")
            continue
        values[name] = is_pinned(value)
    return values


def _terms(data: Mapping[str, Any], problems: _Problems) -> dict[str, str]:
    """The `term_*` properties, keyed without the prefix, each one value as `gate` compares it."""
    terms: dict[str, str] = {}
    for name, value in data.items():
        if not isinstance(name, str) or not name.startswith(TERM_PREFIX) or value in (None, ""):
            continue
        key = name[len(TERM_PREFIX):]
        if not TERM_KEY_PATTERN.match(key):
            problems.add(name, f"a term is named term_ and a lowercase key like term_budget, not {name!r}", "VT003")
        elif isinstance(value, list | dict | Mapping):
            problems.add(name, "a term holds one value (text, number, checkbox or date), not a list", "VT003")
        else:
            terms[key] = term_text(value)
    return terms


def _check_values(values: Mapping[str, Any], status: Status | None, problems: _Problems) -> None:
    """The rules across values: topic keys, one-line summaries, lengths, what each status requires."""
    for topic in values.get("topics", ()):
        if not TOPIC_PATTERN.match(topic):
            problems.add("topics", f"{topic!r} is not a kebab-case key (like article-footer)", "VT004")

    summary = values.get("summary")
    if summary is not None:
        if "\n" in summary:
            problems.add("summary", "must be one line", "VT003")
        if text_size(summary) < MIN_TEXT:
            problems.add("summary", f"must be at least {MIN_TEXT} characters ({len(summary)} given)", "VT005")
    for name in ("reason", "reask_reason"):
        text = values.get(name)
        if text is not None and text_size(text) < MIN_TEXT:
            problems.add(name, f"must be at least {MIN_TEXT} characters ({len(text)} given)", "VT005")

    for name in TEXT_FIELDS:
        most = MAX_SUMMARY if name == "summary" else MAX_TEXT
        if name in values and len(values[name]) > most:
            problems.add(name, f"must be at most {most:,} characters ({len(values[name]):,} given)", "VT009")
    for name, most in (("topics", MAX_TOPICS), ("supersedes", MAX_SUPERSEDES)):
        if len(values.get(name, ())) > most:
            problems.add(name, f"must list at most {most} ({len(values[name]):,} given)", "VT009")
    long_topics = [t for t in values.get("topics", ()) if len(t) > MAX_TOPIC_CHARS]
    if long_topics:
        problems.add("topics",
                     f"a topic must be at most {MAX_TOPIC_CHARS} characters ({len(long_topics[0]):,} given)", "VT009")

    if status is not None:
        for name in REQUIRED_BY_STATUS[status]:
            if name not in values:
                problems.add(name, f"is required when status is {status.value}", "VT002")


def term_text(value: Any) -> str:
    """A term's value as `gate` compares it: checkboxes as true/false, dates in ISO form, text stripped."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return value.isoformat(timespec="seconds")
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value).strip()


# -- lifecycle ----------------------------------------------------------------------

def superseded_changes(new: Decision, reason: str) -> dict[str, str]:
    """What marking a ruling superseded by `new` changes in its note."""
    return {"status": Status.SUPERSEDED.value, "superseded_by": f"[[{new.title}]]", "reason": reason}


def status_in_effect(status: Status, recorded: Status | None, replaced: bool) -> Status:
    """Where a note stands for everything that reads it: the ledger's final statuses win over what the
    note says (a retracted ruling set back to `ruled` by hand is still retracted), and a ruling named in
    a current ruling's `supersedes` is no longer current, even before sealing marks it (an open question
    named there is answered by it: withdrawn, see `commands.supersede.answered_questions`)."""
    if recorded in FINAL_STATUSES:
        return recorded
    if recorded is Status.RULED and status is Status.RETRACTED:
        return Status.RULED  # a retraction typed in Obsidian counts once it is recorded
    if replaced and status in (Status.RULED, Status.OPEN):  # an open question named so is answered: closed
        return Status.SUPERSEDED if status is Status.RULED else Status.WITHDRAWN
    return status


# The statuses of a ruling that took effect: current, or superseded since.
TOOK_EFFECT = frozenset({Status.RULED, Status.SUPERSEDED})


# docs/design/0004-statuses-in-effect.md
def statuses_in_effect(notes: Sequence[tuple[str, Status, Status | None, Iterable[str]]]) -> list[Status]:
    """Where each decision stands, the one place that decides it for every reader: from each note's (id, status
    as written, status the ledger recorded or None, ids its `supersedes` names). A ruling that took effect,
    current or superseded since, keeps what it superseded superseded: superseding a ruling before its own
    `supersedes` were applied never brings back what it replaced (see `status_in_effect`)."""
    replaced = {target for note_id, status, recorded, targets in notes
                if status_in_effect(status, recorded, False) in TOOK_EFFECT
                for target in targets if target and target != note_id}
    return [status_in_effect(status, recorded, note_id in replaced) for note_id, status, recorded, _ in notes]


def held_statuses_in_effect(notes: Sequence[tuple[str, Status, Status | None, Iterable[str], bool]]) \
        -> list[Status | None]:
    """`statuses_in_effect`, for notes that may be held for the owner (the last of each tuple: `held`, see
    `CONFIRMED`): a held note stands as the ledger recorded it, its `supersedes` not applied, and one the ledger
    never recorded is in no reader's view (None) unless it is an open question."""
    rows = []
    hidden = set()
    for place, (note_id, status, recorded, targets, held) in enumerate(notes):
        if held:
            if recorded is None and status is not Status.OPEN:
                hidden.add(place)
            status, targets = recorded or status, ()
        rows.append((note_id, status, recorded, targets))
    return [None if place in hidden else status for place, status in enumerate(statuses_in_effect(rows))]


def can_move(current: Status, new: Status) -> bool:
    return new in TRANSITIONS[current]


def transition_problem(current: Status, new: Status) -> str | None:
    if can_move(current, new):
        return None
    if current in FINAL_STATUSES:
        return f"is {current.value}, which is final"
    instead = {(Status.RULED, Status.WITHDRAWN): " (a ruling ends by being retracted, or superseded by a new ruling)",
               (Status.OPEN, Status.RETRACTED): " (a question ends by being answered, or withdrawn)"}
    return f"is {current.value}; it cannot become {new.value}" + instead.get((current, new), "")


# -- file names ---------------------------------------------------------------------

_UNSAFE_IN_NAME = re.compile(r'[*"\\/<>:|?#^\[\]\x00-\x1f]')
MAX_TITLE_CHARS = 60


def note_title(decision_id: str, summary: str) -> str:
    """A file name (without `.md`) that is safe on Windows, macOS and Linux."""
    words = _UNSAFE_IN_NAME.sub(" ", unicodedata.normalize("NFC", summary)).split()
    text = ""
    for word in words:
        candidate = f"{text} {word}".strip()
        if len(candidate) > MAX_TITLE_CHARS:
            break
        text = candidate
    if not text and words:
        text = words[0][:MAX_TITLE_CHARS]
    text = text.strip(" .")
    return f"{decision_id} {text}" if text else decision_id


# -- time ---------------------------------------------------------------------------

def newest_first_key(decision: Decision, tz: dt.tzinfo) -> tuple[dt.datetime, int, str]:
    when = decision.ruled_at or decision.asked_at
    moment = instant(when, tz) if when else dt.datetime.min.replace(tzinfo=dt.UTC)
    return moment, decision.number, decision.id


# -- what a ruling settles ------------------------------------------------------------


# -- a note the owner is still writing ---------------------------------------------------


# -- a ruling that does not answer yet -----------------------------------------------------


# -- whole-vault consistency ----------------------------------------------------------


def near_field_name(name: str) -> str | None:
    """A known field this unknown property is probably a typo of (`supercedes`, `ruledAt`)."""
    if is_ledger_property(name):
        return None
    squashed = re.sub(r"[^a-z0-9]", "", name.lower())
    for known in sorted(KNOWN_FIELDS):
        known_squashed = known.replace("_", "")
        if squashed == known_squashed or (len(squashed) > 4 and edit_distance(squashed, known_squashed, 2) <= 2):
            return known
    return None
