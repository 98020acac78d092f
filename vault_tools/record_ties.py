"""Which record a note is: each decision note tied to its history in the ledger, by its id and what the ledger
says of its paths and content, never by its id alone when two notes or two records share it. Pure.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, TypeVar

from .links import name_key
from .model import Decision


class RecordLike(Protocol):
    """What tying a note to its record needs of a record (a History or its remembered summary)."""

    @property
    def id(self) -> str: ...
    @property
    def record(self) -> str: ...
    @property
    def paths(self) -> list[str]: ...
    @property
    def seal_hash(self) -> str | None: ...


R = TypeVar("R", bound=RecordLike)


def tie_notes(decisions: Sequence[Decision], records: Iterable[R],
              content_hash: Callable[[Decision], str]) -> dict[str, R]:
    """Each note's record, by the note's path; a note with none is not in the ledger yet.

    A note is tied by its id and what the ledger says of its paths and content, never by its id
    alone when two notes or two records share the id: the exact path it was last written at, then
    any path it had, then the same name as Obsidian compares names, then the sealed content. A note
    that matches no record of its id gets none, so no seal is ever compared with or restored onto it.
    """
    records_by_id: dict[str, list[R]] = {}
    for record in records:
        records_by_id.setdefault(record.id, []).append(record)
    notes_by_id: dict[str, list[Decision]] = {}
    for decision in decisions:
        notes_by_id.setdefault(decision.id, []).append(decision)
    tied: dict[str, R] = {}
    for decision_id, notes in notes_by_id.items():
        candidates = records_by_id.get(decision_id, [])
        if not candidates:
            continue
        if len(notes) == 1 and len(candidates) == 1:
            tied[notes[0].path] = candidates[0]
            continue
        scored = []
        for note in notes:
            for index, record in enumerate(candidates):
                score = _tie_score(note, record, content_hash)
                if score:
                    scored.append((-score, note.path, index, note, record))
        used: set[str] = set()
        for _, _, _, note, record in sorted(scored, key=lambda item: item[:3]):
            if note.path not in tied and record.record not in used:
                tied[note.path] = record
                used.add(record.record)
    return tied


def _tie_score(note: Decision, record: RecordLike, content_hash: Callable[[Decision], str]) -> int:
    paths = record.paths
    if paths and note.path == paths[0]:
        return 5
    if note.path in paths:
        return 4
    key = name_key(note.path)
    if any(name_key(path) == key for path in paths):
        return 3
    if record.seal_hash and content_hash(note) == record.seal_hash:
        return 2
    return 0
