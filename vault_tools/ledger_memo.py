"""The ledger's events memo (`cache/ledger-events.pickle`): every event in the ledger's order and each file as it was
read, so that the next command reads only the lines appended since (`Ledger._events`).

Between two commands the ledger's files only grow (a ruling recorded appends two lines to one file), while the memo
holds every event, sealed texts included: megabytes. So the events a later read added after those the whole memo
holds, in the ledger's order and in each file, are kept in a small memo beside it (its delta), signed and kept under
the whole memo's very signature, until they are more than `DELTA_MOST`; then the whole is written again. A read that
is not the whole memo's lists grown at their end (a file replaced, events placed before others) writes the whole.
"""
from __future__ import annotations

import operator
from itertools import islice
from pathlib import Path
from typing import Any

from . import state_memo
from .ledger_file import FileRead, LedgerFile
from .ledger_lines import Event

DELTA_MOST = 2048  # events added since the whole memo, at most, kept in its delta
# The whole memo's signature, and the lists it held with their lengths then: the events in order, each file's
Origin = tuple[bytes, tuple[list[Event], int], list[tuple[list[Event], int]]]


def memo_key_of(files: list[LedgerFile]) -> list[tuple[str, bool]]:
    """What the ledger's memos are kept under: its files (the keys each was read as are kept inside)."""
    return [(file.display_path, file.in_transit_ok) for file in files]


def recall_events(path: Path, key: Any) -> tuple[tuple[Any, list[Event], list[FileRead]], Origin] | None:
    """(the files' key, the events in order, each file's read) kept at `path` under `key`, with its delta's events
    after the whole memo's, and where they came from (for `keep_events`); None where none is to be trusted."""
    found = state_memo.recall_signed(path, key)
    if found is None:
        return None
    signature, (files_key, merged, reads) = found
    origin = (signature, (merged, len(merged)), [(read.events, len(read.events)) for read in reads])
    delta = state_memo.recall_delta(path, key, signature)
    if delta is not None and len(delta[2]) == len(reads):
        files_key, merged_tail, tails = delta
        merged = merged + merged_tail
        reads = [FileRead(read_key, read.events + added, digest, lines)
                 for read, (read_key, added, digest, lines) in zip(reads, tails, strict=True)]
    return (files_key, merged, reads), origin


def keep_events(path: Path, key: Any, value: tuple[Any, list[Event], list[FileRead | None]],
                origin: Origin | None) -> None:
    """Keep `value` at `path` under `key`: where it is what `recall_events` gave (`origin`) with events added at the
    end of each list, only those, in the delta; else the whole, its delta removed."""
    files_key, merged, reads = value
    if origin is not None and len(reads) == len(origin[2]) and _same_places(merged, *origin[1]) and \
            all(read is not None and _grown(read.events, *was) for read, was in zip(reads, origin[2], strict=True)) \
            and len(merged) - origin[1][1] <= DELTA_MOST:
        tails = [(read.key, read.events[was[1]:], read.digest, read.lines)
                 for read, was in zip(reads, origin[2], strict=True) if read is not None]
        state_memo.keep_delta(path, key, origin[0], (files_key, merged[origin[1][1]:], tails))
        return
    state_memo.keep_whole(path, key, value)


def _grown(now: list[Event], before: list[Event], count: int) -> bool:
    """Whether `now` starts with the very `count` first events of `before`: a file's events, only appended to."""
    return len(now) >= count and all(map(operator.is_, islice(now, count), islice(before, count)))


def _same_places(now: list[Event], before: list[Event], count: int) -> bool:
    """Whether the `count` first events in the ledger's order are the lines they were, in the same places: each
    event in order is placed anew from its file's line (`Ledger._merge`), and every file's events before are the
    very ones it holds now (`_grown`), so the same file and line is the same event."""
    return len(now) >= count and all(mine.source == theirs.source and mine.line == theirs.line and
                                     mine.position == theirs.position  # `before` held `count` then, and only grows
                                     for mine, theirs in zip(islice(now, count), islice(before, count), strict=True))

