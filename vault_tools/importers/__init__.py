"""Importers: each module reads one foreign record format into neutral `Record`s. Pure: they read
the foreign files (never write them) and know nothing of vaults, notes or the ledger; the writer
is `vault_tools.commands.import_`."""
from __future__ import annotations

import datetime as dt
import re
import unicodedata
from dataclasses import dataclass, field

# The statuses a record can be imported with (the vault's lifecycle).
RULED, OPEN, SUPERSEDED, WITHDRAWN, RETRACTED = "ruled", "open", "superseded", "withdrawn", "retracted"
IMPORT_ACTOR = "vault-tools import"  # who records an import, and who asks its review questions (not the owner)


@dataclass
class Record:
    """One foreign decision, as the writer needs it."""

    key: str  # the foreign identity, stable across runs: "adr:adr-tools/doc/adr/0002-x.md", "owner-ask:R-003"
    label: str  # how reports name it: "ADR 2", "R-003"
    status: str  # ruled, open, superseded, withdrawn or retracted
    title: str
    summary: str  # one line, at least 20 characters
    topics: tuple[str, ...]
    source: str  # where it came from, written as the note's `source`
    body: str = ""  # Markdown for the note's body (the record's own text)
    ruled_at: dt.datetime | dt.date | None = None
    asked_at: dt.datetime | dt.date | None = None
    deciders: tuple[str, ...] = ()
    asked_by: str | None = None
    question: str | None = None  # the question this ruling answered
    supersedes: tuple[str, ...] = ()  # keys of the records this one replaces
    superseded_by: str | None = None  # key of the record that replaced this one, as this one says
    reason: str | None = None  # why it was withdrawn, retracted or supersedes
    reask_reason: str | None = None
    remarks: list[str] = field(default_factory=list)  # what the importer assumed, for the report
    # What a vault-tools export carries besides (left at their defaults by the other importers):
    id: str | None = None  # the id to give the note, when the vault does not use it yet
    whole_body: bool = False  # `body` is the note's whole body: no Question/Ruling sections are added
    supersede_reason: str | None = None  # why it supersedes, when `reason` says why it was later closed
    alongside: tuple[str, ...] | None = None  # keys of the rulings it stands beside (None: those on its topic)
    revisit_if: str | None = None
    revisit_by: dt.date | None = None
    due: dt.date | None = None


@dataclass
class Review:
    """Something the owner has to decide: a replacement that is only implied, a partial one."""

    key: str  # the foreign identity of the review itself ("review:" + the record's key + what)
    record: str  # key of the record that raises it
    others: tuple[str, ...]  # keys of the records it may replace
    text: str  # one line: what the record says and what is asked


@dataclass
class Skipped:
    file: str
    why: str


@dataclass
class Parsed:
    """What reading one foreign record gave."""

    kind: str  # owner-ask, adr
    files_read: int = 0
    records: list[Record] = field(default_factory=list)
    reviews: list[Review] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # understood, but not everything (unknown fields)


MIN_TEXT = 20
_NOT_TOPIC = re.compile(r"[^a-z0-9]+")
MAX_TOPIC_WORDS = 6


def kebab(text: str, max_words: int = MAX_TOPIC_WORDS) -> str:
    """A kebab-case topic key from any text: accents folded, other characters dropped, at most
    `max_words` words. Empty when nothing is left (a title in a script with no ASCII letters)."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()
    words = [w for w in _NOT_TOPIC.split(folded) if w]
    return "-".join(words[:max_words])


def one_line(text: str) -> str:
    return " ".join(text.split())


def first_sentence(text: str, limit: int = 200) -> str:
    """The text's first sentence on one line, cut at a word near `limit` characters."""
    line = one_line(text)
    match = re.search(r"(?<=[.!?])\s", line)
    if match and match.start() >= MIN_TEXT:
        line = line[:match.start()]
    if len(line) > limit:
        line = line[:limit].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    return line
