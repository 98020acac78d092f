"""What the pages, the agent's view and the reading commands make alike from the decisions as they stand: the notes
they list as problems (`page_problems`), and what they made, kept between runs while everything it was made from
is unchanged (`remembered`, [0023](../../docs/design/0023-remembered-pages-and-findings.md)). Apart from the page
builder (`build`), which a reading command (`lookup`, `show`, `search`, a refused `ask` or `rule`) does not import.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import durable
from ..code_stamp import code_fingerprint
from ..drafts import being_written, lacks_id, unanswered
from ..model import Decision, Status
from ..pages import NOTE_MISSING, QUESTION_NOTE_MISSING, PageProblem
from ..record_files import RACY_NANOSECONDS
from ..services.missing import not_here_said
from ..services.workspace import Workspace, blocking_problems
from ..topics import topic_aliases_in_use
from ..vault import VaultState
from .review_notes import waiting_line


def page_problems(state: VaultState, recorded: Mapping[str, Status] | None = None,
                  missing: Sequence[Decision] = (),
                  not_here: Mapping[str, Sequence[Decision]] | None = None) -> list[PageProblem]:
    """The decision notes that cannot be read or used, as the pages and the agent's view list them; with
    the ledger's statuses (`recorded`), also the rulings not sealed yet that do not hold an answer; the
    sealed rulings whose note is `missing`; and the notes of devices whose ledger is `not_here`."""
    writing = {path for path, data in state.properties.items() if lacks_id(data)}
    found = [PageProblem(e.path or "?", e.line, e.message[:MAX_PROBLEM_CHARS]) for e in state.broken
             if e.path not in writing]
    for path in sorted(writing):
        found.append(PageProblem(path, None, being_written(state.problems.get(path, []))[:MAX_PROBLEM_CHARS]))
    for path, problems in state.problems.items():
        if path in writing:
            continue
        blocking = blocking_problems(problems)
        found += [PageProblem(path, p.line, str(p)[:MAX_PROBLEM_CHARS]) for p in blocking[:MAX_PROBLEMS_PER_NOTE]]
        if len(blocking) > MAX_PROBLEMS_PER_NOTE:
            found.append(PageProblem(path, None, f"and {len(blocking) - MAX_PROBLEMS_PER_NOTE:,} more problems"))
    if recorded is not None:
        for decision in state.decisions:
            why = unanswered(decision) if recorded.get(decision.id) is None or recorded[decision.id] is Status.OPEN else None
            if why:
                found.append(PageProblem(decision.path, decision.line_of("summary"), why[:MAX_PROBLEM_CHARS]))
    found += [PageProblem(ruling.path, None, f"{ruling.id} (sealed ruling): {NOTE_MISSING}"
                          if ruling.status is Status.RULED else
                          f"{ruling.id} ({ruling.status.value} question): {QUESTION_NOTE_MISSING}")
              for ruling in missing]
    found += [PageProblem(decision.path, decision.line_of("id"), f"{decision.id} was {not_here_said(tag)}")
              for tag, decisions in (not_here or {}).items() for decision in decisions]
    return found


# One note's problems take a few lines of the pages at most: `lint` lists them all.
MAX_PROBLEMS_PER_NOTE = 3
MAX_PROBLEM_CHARS = 300


MEMO_FILE = "cache/memo-v2"  # a new name whenever what is kept changes


def remembered(ws: Workspace, state: VaultState, name: str, make: Callable[[], Any], *,
               memo_file: str = MEMO_FILE, extra: object = None, anew: bool = False) -> Any:
    """What `make` gives (JSON values made from the decisions as they stand), taken from an earlier run when
    everything they are made from is as it was then: every decision note (by size, times and inode), what
    could not be read, the ledger files, the config, the merged topics, a waiting review and the code
    itself (see `inputs_key`). `name` tells apart what is kept from the same inputs (a page set, a context
    for one budget and day). Any doubt (a state changed since it was read, an input written within the racy
    window, a memo that cannot be read) means making it. Kept as JSON: a cache a cloned vault could carry is
    never run as code. What depends on more than that keeps its own `memo_file`, with the rest of what it
    is made from in `extra` (JSON values): one file holds what one set of inputs made. The file's first
    line is the key, so a memo of other inputs is never parsed (a lint memo of a large vault is megabytes).
    With `anew`, what was kept under `name` is made again and kept (the caller found it no longer holds)."""
    key, storable = inputs_key(ws, state, extra)
    memo = ws.vault.state_dir / memo_file
    kept = _read_memo(memo, key) if key is not None else {}
    if name in kept and not anew:
        return kept[name]
    made = make()
    if key is not None and storable and inputs_key(ws, state, extra) == (key, True):  # nothing changed meanwhile
        _write_memo(memo, key, {**kept, name: made})
    return made


def _read_memo(path: Path, key: str) -> dict[str, Any]:
    """What the memo at `path` keeps, when it was made from the inputs `key` names; else nothing. Only a regular
    file is read (a FIFO put there would wait forever), and whatever it holds that is not a JSON object, or
    nests too deep for the parser, counts as nothing."""

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return {}
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return {}
        with os.fdopen(os.dup(fd), encoding="utf-8") as handle:
            if handle.readline() != key + "\n":
                return {}
            found = json.load(handle)
    except (OSError, ValueError, RecursionError):
        return {}
    finally:
        os.close(fd)
    return found if isinstance(found, dict) else {}


# docs/design/0023-remembered-pages-and-findings.md
def inputs_key(ws: Workspace, state: VaultState, extra: object = None) -> tuple[str | None, bool]:
    """A digest of what the pages and the agent's view are made from (and `extra`), and whether none of it
    was written within the racy window (else it is not kept). None when the state is not as read from disk."""

    if state.stat_keys is None:
        return None, False
    decision_notes = sorted(set(state.properties) | {error.path or "" for error in state.broken})
    keys = [state.stat_keys.get(rel) for rel in decision_notes]
    ledger = ws.vault.ledger.stat_key()
    ledger_keys = [ledger] if ledger is None or isinstance(ledger[0], int) else [key for _, key in ledger]
    stamps = [max(key[1], key[2]) for key in (*keys, *ledger_keys) if key is not None]
    # A live view that has not read the ledger as it is now makes what it makes from the ledger as it was
    storable = all(key is not None for key in keys) and state.ledger_seen in (None, ledger) and \
        time.time_ns() - max(stamps, default=0) > RACY_NANOSECONDS
    parts = (decision_notes, keys, [(e.path, e.line, e.message) for e in state.broken],
             [repr(copy) for copy in state.conflict_copies], repr(ledger), repr(ws.config),
             sorted(topic_aliases_in_use().items()), waiting_line(ws), code_fingerprint(), extra)
    return hashlib.sha256(json.dumps(parts, default=str).encode("utf-8")).hexdigest(), storable


def _write_memo(path: Path, key: str, made: dict[str, object]) -> None:
    """Derived data: written whole through a temp file, never synced (lost or torn, it is made again). Only
    where `.vault-tools/` is: a folder that was never set up (a lint of someone's notes) is left as it was."""
    import tempfile  # tempfile only when a page is written

    try:
        path.parent.mkdir(exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=durable.TEMP_PREFIX, suffix=durable.TEMP_SUFFIX, dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(key + "\n")
                json.dump(made, handle, ensure_ascii=False)
            os.replace(temp, path)
        except BaseException:
            os.unlink(temp)
            raise
    except (OSError, ValueError):  # ValueError: what JSON or UTF-8 cannot hold; then it is made again next time
        pass
