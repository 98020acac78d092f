"""What the agent hooks need from a vault, kept in `.vault-tools/cache/` so a hook answers fast.

A full read of a vault of 10,000 notes takes longer than a hook may (the agent waits on every
call), so the hooks keep a snapshot of what they need: the current rulings with the topics each
settles, the open questions, and the session-start text. It is derived data, checked before each
use against everything that can change it without touching any other note: the folder listing
of the vault (a note added, removed or renamed changes its folder's mtime), the size and mtime of
every decision note, the ledger, the config and the merged topics, and the day. A plain note turned into a decision
note by editing its properties in place changes none of these; it is seen at the next full read,
which happens at least every `MAX_AGE_SECONDS`.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import time
from pathlib import Path
from typing import Any, NamedTuple

from ..page_names import PAGE_NAMES
from ..record_files import (
    CONFIG_FILE,
    DECISION_PATHS,
    RACY_NANOSECONDS,
    RECORD_DIR,
    STATE_DIR,
    TOPICS_FILE,
    ledger_paths,
)
from ..topics import topics_match  # standard library only: nothing to load at start-up

# Imports inside functions: a full read of the vault happens only when the snapshot is stale.

SNAPSHOT_FILE = "agent-snapshot.json"
FORMAT = 10
MAX_AGE_SECONDS = 300
SKIPPED_FOLDERS = {".trash", "node_modules"}  # as vault.iter_markdown skips them


# Named tuples, not dataclasses: importing dataclasses would cost a hook more than its own work.
class RulingView(NamedTuple):
    id: str
    topics: tuple[str, ...]  # every topic it settles: its own, then those it took over
    summary: str
    day: str  # ruled on, in the vault's zone
    path: str
    scope: tuple[str, ...] = ()  # globs of the files it governs
    conflict: str | None = None  # two clones' outcomes that cannot both stand (`Decision.conflict`): follow neither
    number: int = 0
    text: str = ""  # the start of its `## Ruling` beyond the summary (`decision_words.first_lines`)
    same: tuple[str, ...] = ()  # its words as the same-matter check compares them (`decision_words.decision_terms`)
    words: tuple[str, ...] = ()  # its words as an owner's message is weighed against them (`matter.About`)
    topic_words: tuple[str, ...] = ()
    summary_words: tuple[str, ...] = ()
    names: tuple[str, ...] = ()


class QuestionView(NamedTuple):
    id: str
    topics: tuple[str, ...]
    summary: str
    day: str  # asked on
    path: str
    closed: str | None = None  # how it ended, when it did: "withdrawn" (a question) or "retracted" (a ruling)
    reason: str | None = None  # why it was closed
    number: int = 0
    text: str = ""  # as RulingView's
    same: tuple[str, ...] = ()
    words: tuple[str, ...] = ()
    topic_words: tuple[str, ...] = ()
    summary_words: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    # The current rulings it concerns, shown beside it: those an open question proposes to revise (`supersedes`),
    # else those in force on its topics
    concerns: tuple[str, ...] = ()
    proposal: bool = False  # an open question that proposes a revision of a ruling (a rejected edit), not in force


class Snapshot(NamedTuple):
    rulings: list[RulingView]
    questions: list[QuestionView]  # the open questions, then those withdrawn and the rulings retracted
    session_text: str  # the session-start context, within the budget it was made for
    scope_root: str = ""  # the folder scope globs are relative to (absolute)
    scope_on_read: bool = False
    documents: dict[str, int] = {}  # how many of the decisions above use each word (`matter.rarity`)  # noqa: RUF012


def _stat(path: str) -> list[int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return [found.st_size, found.st_mtime_ns]


def _fingerprint(root: Path, skipped: set[str], notes: list[str], known: list[str] | None = None) -> dict[str, Any]:
    """The folders' mtimes and the decision notes' sizes and mtimes, as of now. Checking a snapshot, the
    `known` folders are stat'ed without listing them: a folder added, removed or renamed inside one of
    them changes its mtime."""
    if known is not None:
        stamps = {prefix: _stat(os.path.join(root, prefix) if prefix else str(root)) for prefix in known}
        folders = {prefix: stamp[1] if stamp else -1 for prefix, stamp in stamps.items()}
    else:
        folders = _folders(root, skipped)
    state_dir = os.path.join(root, STATE_DIR)
    record_dir = os.path.join(root, RECORD_DIR)
    return {"folders": folders, "notes": {rel: _stat(os.path.join(root, rel)) for rel in notes},
            "ledger": [[path, _stat(path)] for path in ledger_paths(root)],
            "config": [_stat(os.path.join(folder, name)) for folder in (state_dir, record_dir)
                       for name in (CONFIG_FILE, TOPICS_FILE)]}  # the merged topics change what a ruling settles


def _folders(root: Path, skipped: set[str]) -> dict[str, int]:
    """Every folder a note could be in, with its mtime."""
    folders: dict[str, int] = {}
    stack = [""]
    while stack:
        prefix = stack.pop()
        folder = os.path.join(root, prefix) if prefix else str(root)
        try:
            folders[prefix] = os.stat(folder).st_mtime_ns
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name.startswith(".") or entry.name in SKIPPED_FOLDERS:
                        continue
                    rel = f"{prefix}/{entry.name}" if prefix else entry.name
                    if rel not in skipped and entry.is_dir(follow_symlinks=False):
                        stack.append(rel)
        except OSError:
            folders[prefix] = -1
    return folders


def _newest_ns(fingerprint: dict[str, Any]) -> int:
    stamps = [*fingerprint["folders"].values(), *(s[1] for s in fingerprint["notes"].values() if s)]
    stamps += [s[1] for _, s in fingerprint["ledger"] if s] + [s[1] for s in fingerprint["config"] if s]
    return max(stamps, default=0)


def _day_ends_at(now_local: dt.datetime) -> float:
    """The instant the vault's day ends (the session text names the day): kept as a number, so checking it
    needs no time zone database."""
    tomorrow = now_local.date() + dt.timedelta(days=1)
    return dt.datetime.combine(tomorrow, dt.time(), tzinfo=now_local.tzinfo).timestamp()


# docs/design/0033-hooks-answer-from-a-snapshot.md
def load(root: Path, session_budget: str) -> Snapshot:
    """The snapshot, from the cache when nothing it depends on changed, else from a full read. Its
    session-start text is made within `session_budget` (a `context --budget` value)."""
    path = root / ".vault-tools" / "cache" / SNAPSHOT_FILE
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
        if (kept.get("format") == FORMAT and kept["session_budget"] == session_budget
                and time.time() - kept["made_at"] < MAX_AGE_SECONDS and time.time() < kept["day_ends_at"]
                and _fingerprint(root, set(kept["skipped"]), list(kept["fingerprint"]["notes"]),
                                 list(kept["fingerprint"]["folders"])) == kept["fingerprint"]):
            return _from_json(kept)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return _rebuild(root, path, session_budget)


def _from_json(data: dict[str, Any]) -> Snapshot:
    def fields(item: dict[str, Any]) -> dict[str, Any]:
        return {name: tuple(value) if isinstance(value, list) else value for name, value in item.items()}
    return Snapshot([RulingView(**fields(r)) for r in data["rulings"]],
                    [QuestionView(**fields(q)) for q in data["questions"]],
                    data["session_text"], data["scope_root"], data["scope_on_read"], data["documents"])


def _rebuild(root: Path, path: Path, session_budget: str) -> Snapshot:
    from ..commands.build import as_the_agent_reads, context
    from ..dates import local_date
    from ..decision_words import about_decision, decision_terms, first_lines, section_starts
    from ..model import Decision, Status, newest_first_key
    from ..ruling_graph import settled_topics  # a full read, only when the snapshot is stale
    from ..services.workspace import Workspace
    from ..vault import Vault

    ws = Workspace(Vault(root))
    started_ns = time.time_ns()
    state = ws.state()
    in_effect = as_the_agent_reads(ws.decisions_in_effect(state))
    by_id, resolve = {d.id: d for d in in_effect}, state.resolver()

    def day(value: dt.date | None) -> str:
        return local_date(value, ws.tz).isoformat() if value else "undated"

    current = sorted((d for d in in_effect if d.is_current or d.conflict), key=lambda d: newest_first_key(d, ws.tz),
                     reverse=True)
    def matter(d: Decision) -> dict[str, Any]:
        starts = section_starts(d)
        about = about_decision(d, starts)
        return {"number": d.number, "text": first_lines(d, starts), "same": tuple(sorted(decision_terms(d, starts))),
                "words": tuple(sorted(about.terms)), "topic_words": tuple(sorted(about.topic)),
                "summary_words": tuple(sorted(about.summary)), "names": about.names}

    rulings = [RulingView(d.id, tuple(settled_topics(d, by_id, resolve)) or d.topics, d.summary, day(d.ruled_at),
                          d.path, d.scope, d.conflict, **matter(d)) for d in current]
    in_force = {ruling.id for ruling in rulings if not ruling.conflict}
    settling = [(ruling.id, ruling.topics) for ruling in rulings if ruling.id in in_force]

    def concerns(d: Decision) -> dict[str, Any]:
        revised = tuple(target for link in d.supersedes if (target := resolve(link)) in in_force)
        if revised:
            return {"concerns": revised, "proposal": d.status is Status.OPEN}
        return {"concerns": tuple(ruling for ruling, topics in settling if ruling != d.id and any(
            topics_match(mine, theirs) for mine in d.topics for theirs in topics))}

    questions = [QuestionView(d.id, d.topics, d.summary, day(d.asked_at), d.path, **matter(d), **concerns(d))
                 for d in sorted(in_effect, key=lambda d: d.number) if d.status is Status.OPEN and not d.conflict]
    questions += [QuestionView(d.id, d.topics, d.summary, day(d.asked_at or d.ruled_at), d.path, d.status.value,
                               d.reason, **matter(d), **concerns(d)) for d in sorted(in_effect, key=lambda d: -d.number)
                  if d.status in (Status.WITHDRAWN, Status.RETRACTED) and not d.conflict]
    documents: dict[str, int] = {}
    for words in (*(r.words for r in rulings), *(q.words for q in questions)):
        for word in words:
            documents[word] = documents.get(word, 0) + 1
    from ..commands.govern import scope_root
    snapshot = Snapshot(rulings, questions, context(ws, session_budget, ws.today(), state).text,
                        str(scope_root(ws)), ws.config.scope_on_read, documents)
    skipped = {ws.config.templates_folder.strip("/"), ws.config.pinned_folder.strip("/")}
    notes = sorted({*state.properties, *(e.path for e in state.broken if e.path)})
    fingerprint = _fingerprint(root, skipped, notes)
    if started_ns - _newest_ns(fingerprint) > RACY_NANOSECONDS:
        _keep(path, snapshot, {"format": FORMAT, "made_at": time.time(), "session_budget": session_budget,
                               "day_ends_at": _day_ends_at(ws.now_local()), "skipped": sorted(skipped),
                               "fingerprint": fingerprint,
                               "pages": [f"{ws.config.pinned_folder.strip('/')}/{name}.md" for name in PAGE_NAMES]})
    return snapshot


def _keep(path: Path, snapshot: Snapshot, stamp: dict[str, Any]) -> None:
    """Write the snapshot with what tells whether it is still current (`stamp`)."""
    data = {**stamp, "session_text": snapshot.session_text, "scope_root": snapshot.scope_root,
            "scope_on_read": snapshot.scope_on_read, "rulings": [r._asdict() for r in snapshot.rulings],
            "questions": [q._asdict() for q in snapshot.questions], "documents": snapshot.documents}
    try:
        from ..durable import write_atomic
        write_atomic(path, json.dumps(data, ensure_ascii=False).encode("utf-8"))
        # the decision notes as read, for the tripwire after each call (`record_files.decision_notes_changed_since`)
        write_atomic(path.parent.parent / DECISION_PATHS, json.dumps(
            {"notes": list(stamp["fingerprint"]["notes"]), "pages": stamp["pages"]}, ensure_ascii=False).encode("utf-8"))
    except OSError:
        pass  # derived data: a read-only vault just answers from full reads
