"""Time travel: `history`, `as-of`, `changed` and `export`, read from the ledger.

The ledger's events carry what rebuilds each record without its note: an `asked` event the
question's text, summary and topics; `sealed` (and the tool's own lifecycle edits) the note's
text; closings their reason. Ledgers written before `asked` carried its text lack it: the text is
then taken from the note's first version in git, else from the note as it is now while it is still
open, and the answer says so.

Two clocks: *event time* is when the owner decided (a ruling's `ruled_at`, a question's `asked_at`);
*record time* is when the vault learnt of it (the ledger event's `at`). `as-of` answers by event
time unless asked `--recorded`; `changed` lists ledger events, so it goes by record time.
"""
from __future__ import annotations

import datetime as dt
import difflib
import json
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import notes
from ..dates import instant, parse_option
from ..errors import NoteError, NotFound, UsageError
from ..history import History
from ..ledger_lines import Event
from ..links import LinkResolver, leading_id
from ..model import Decision, Status, build_decision, id_matches
from ..services.checks import check_id, check_topics
from ..services.workspace import Workspace
from ..topics import topics_match

# Events that change where a record stands, for `changed`.
LIFECYCLE_EVENTS = ("asked", "ruled", "superseded", "withdrawn", "retracted", "imported", "amended")
# Events whose text is the ruling as sealed (or amended by the tool while it stood).
RULING_TEXT_EVENTS = ("sealed", "amended", "imported")
EXPORT_FORMAT = "vault-tools export"
EXPORT_VERSION = 1


@dataclass
class Version:
    """One ledger event of a record, with the record's text as that event left it (when known)."""

    event: Event
    text: str | None = None
    decision: Decision | None = None
    taken_from: str | None = None  # None: the ledger itself; else where the text was found ("git abc1234", "the note")


@dataclass
class RecordHistory:
    id: str
    versions: list[Version] = field(default_factory=list)
    remarks: list[str] = field(default_factory=list)  # where content came from other than the ledger
    conflict: str | None = None  # two clones' outcomes in conflict now (`Decision.conflict`), as every reader says

    def texts(self) -> list[Version]:
        return [v for v in self.versions if v.text is not None]


def parse_record_text(text: str, path: str) -> Decision | None:
    """A record as a stored text gives it (None when the text is not a valid decision)."""
    try:
        note = notes.parse_text(text.removeprefix(notes.BOM), Path(path))
    except NoteError:
        return None
    if not hasattr(note.data, "items"):
        return None
    decision, _ = build_decision(note.data, path=path, body=note.body, key_lines=note.key_lines)
    return decision


def _git_first_version(ws: Workspace, path: str) -> tuple[str, str] | None:
    """(short commit, text) of the first committed version of a note, following renames; None without git."""
    root = ws.vault.root
    try:
        log = subprocess.run(["git", "log", "--follow", "--diff-filter=A", "--format=%h", "--name-only", "--", path],
                             cwd=root, capture_output=True, text=True, timeout=30)
        if log.returncode != 0:
            return None
        lines = [line for line in log.stdout.splitlines() if line.strip()]
        if len(lines) < 2:
            return None
        commit, name = lines[-2], lines[-1]
        shown = subprocess.run(["git", "show", f"{commit}:{name}"], cwd=root, capture_output=True, timeout=30)
        if shown.returncode != 0:
            return None
        return commit, shown.stdout.decode("utf-8", errors="replace")
    except (OSError, subprocess.SubprocessError):
        return None


def record_history(ws: Workspace, history: History, current: Decision | None) -> RecordHistory:
    """Every event of one record, oldest first, each with the text it fixed; gaps filled from git or the note."""
    found = RecordHistory(history.id)
    for event in sorted(history.events, key=lambda e: (e.at, e.position or e.line or 0)):
        version = Version(event, event.text)
        if event.event == "asked" and event.text is None:
            from_git = _git_first_version(ws, event.path)
            if from_git is not None:
                version.text, version.taken_from = from_git[1], f"git {from_git[0]}"
            elif current is not None and current.status is Status.OPEN:
                note = ws.read(ws.vault.path_of(current))
                version.text, version.taken_from = note.text, "the note as it is now"
            if version.taken_from:
                found.remarks.append(f"the question's text was not kept in the ledger (written by an earlier "
                                     f"version); taken from {version.taken_from}")
            else:
                found.remarks.append("the question's text was not kept in the ledger and is not found in git "
                                     "or the note")
        if version.text is not None:
            version.decision = parse_record_text(version.text, event.path)
        found.versions.append(version)
    return found


def history(ws: Workspace, decision_id: str) -> RecordHistory:
    decision_id = check_id(decision_id)
    known = ws.histories_by_id()
    state = ws.state()
    if decision_id not in known:  # the counter alone, as every command takes it, when it names one record
        named = sorted({i for i in [*known, *(d.id for d in state.decisions)] if id_matches(decision_id, i)})
        if len(named) > 1:
            raise UsageError(f"{decision_id} names {len(named)} decisions: {', '.join(named)}; give the whole id")
        decision_id = named[0] if named else decision_id
    current = state.get(decision_id)
    if decision_id not in known:
        if current is None:
            raise NotFound(f"no decision note and no ledger event has id {decision_id}")
        raise NotFound(f"the ledger has no event for {decision_id} (a note not recorded yet: run `vault-tools "
                       "watch --once` or `lint --fix`)", path=current.path)
    found = record_history(ws, known[decision_id], current)
    found.conflict = _conflicts(ws).get(decision_id)
    return found


def _conflicts(ws: Workspace) -> dict[str, str]:
    """The decisions in conflict between clones now, with what every reader says of each."""
    return {d.id: d.conflict for d in ws.decisions_in_effect(ws.state()) if d.conflict}


def text_diff(before: Version | None, after: Version) -> list[str]:
    """A unified diff from one version's text to the next (the whole text for the first)."""
    old = (before.text or "").removeprefix(notes.BOM) if before else ""
    new = (after.text or "").removeprefix(notes.BOM)
    label_old = f"{before.event.event} {before.event.at}" if before else "(nothing)"
    label_new = f"{after.event.event} {after.event.at}"
    return [line.rstrip("\n") for line in difflib.unified_diff(
        old.replace("\r\n", "\n").splitlines(keepends=True), new.replace("\r\n", "\n").splitlines(keepends=True),
        fromfile=label_old, tofile=label_new)]


# -- the records as they stood --------------------------------------------------------------------

@dataclass
class Standing:
    """One record as it stood at a moment."""

    decision: Decision  # content and status as of the moment
    since: dt.datetime | None  # when it came to stand so (by the clock asked for)


def parse_moment(name: str, value: str, tz: dt.tzinfo, *, end_of_day: bool = True) -> dt.datetime:
    """A date or date and time from the command line, as a UTC instant. A bare date means the end of that
    day in the vault's zone (what was in force *on* it), or its start with `end_of_day=False`."""
    found = parse_option(name, value)
    assert found is not None
    if not isinstance(found, dt.datetime) and end_of_day:
        return instant(found + dt.timedelta(days=1), tz) - dt.timedelta(microseconds=1)
    return instant(found, tz)


def _at(event: Event) -> dt.datetime:
    return dt.datetime.fromisoformat(event.at.replace("Z", "+00:00"))


def _of_text(versions: Iterable[Version], kinds: tuple[str, ...]) -> Version | None:
    chosen = None
    for version in versions:
        if version.event.event in kinds and version.decision is not None:
            chosen = version
    return chosen


@dataclass
class _Timeline:
    """When a record was asked, ruled and ended, by both clocks, and its texts."""

    id: str
    asked: Version | None = None
    ruling: Version | None = None  # the latest text of the ruling while it stood
    ended: Version | None = None  # superseded or retracted
    withdrawn: Version | None = None
    ruled_event: Event | None = None

    def ruled_at(self, recorded: bool, tz: dt.tzinfo) -> dt.datetime | None:
        if self.ruling is None or self.ruling.decision is None:
            return None
        if recorded:
            return _at(self.ruled_event or self.ruling.event)
        when = self.ruling.decision.ruled_at
        return instant(when, tz) if when else _at(self.ruled_event or self.ruling.event)

    def asked_at(self, recorded: bool, tz: dt.tzinfo) -> dt.datetime | None:
        if self.asked is None:
            return None
        when = self.asked.decision.asked_at if self.asked.decision else None
        return instant(when, tz) if when and not recorded else _at(self.asked.event)


def _timelines(ws: Workspace, state_decisions: dict[str, Decision]) -> dict[str, _Timeline]:
    timelines = {}
    for decision_id, known in ws.histories_by_id().items():
        record = record_history(ws, known, state_decisions.get(decision_id))
        line = _Timeline(decision_id)
        # Where the owner settled a conflict, what the settlement kept is what stood: not an answer it dropped,
        # nor a closing it did not keep
        settled, closing = known.settled, known.closing
        versions = [v for v in record.versions if not known.of_dropped_answer(v.event, settled)]
        line.asked = _of_text(versions, ("asked",))
        line.ruling = _of_text([v for v in versions if v.decision and v.decision.status is Status.RULED],
                               RULING_TEXT_EVENTS)
        line.ruled_event = next((v.event for v in versions if v.event.event in ("ruled", "sealed")), None)
        line.ended = next((v for v in versions if v.event.event in ("superseded", "retracted")
                           and (settled is None or settled.outcome == Status.RULED.value or v.event is closing)),
                          None)
        if settled is not None and settled.outcome == Status.WITHDRAWN.value:  # kept the withdrawal
            line.ruling = line.ruled_event = None
        line.withdrawn = next((v for v in record.versions if v.event.event == "withdrawn"), None)
        timelines[decision_id] = line
    return timelines


def records_as_of(ws: Workspace, moment: dt.datetime, *, recorded: bool = False) -> list[Standing]:
    """Every record as it stood at `moment` (a UTC instant), by event time or, `recorded`, by record time."""
    tz = ws.tz
    state = ws.state()
    timelines = _timelines(ws, state.by_id())
    found = []
    for line in timelines.values():
        ruled_at = line.ruled_at(recorded, tz)
        if ruled_at is not None and ruled_at <= moment and line.ruling and line.ruling.decision:
            ruling = line.ruling.decision
            ended_at = _ended_at(line, timelines, recorded, tz)
            if ended_at is not None and ended_at <= moment and line.ended is not None:
                status = Status(line.ended.event.event)
                closed = line.ended.decision or replace(ruling, status=status, reason=line.ended.event.reason)
                found.append(Standing(closed, ended_at))
            else:
                found.append(Standing(replace(ruling, status=Status.RULED), ruled_at))
            continue
        asked_at = line.asked_at(recorded, tz)
        if asked_at is None or asked_at > moment or line.asked is None or line.asked.decision is None:
            continue
        question = line.asked.decision
        if line.withdrawn is not None and _at(line.withdrawn.event) <= moment:
            found.append(Standing(replace(question, status=Status.WITHDRAWN, reason=line.withdrawn.event.reason),
                                  _at(line.withdrawn.event)))
        else:
            found.append(Standing(replace(question, status=Status.OPEN), asked_at))
    # a decision in conflict now is marked in the past it appears in too: neither outcome is presented as the answer
    conflicts = _conflicts(ws)
    found = [Standing(replace(s.decision, conflict=conflicts[s.decision.id]), s.since)
             if s.decision.id in conflicts else s for s in found]
    return sorted(found, key=lambda s: s.decision.number)


def _ended_at(line: _Timeline, timelines: dict[str, _Timeline], recorded: bool, tz: dt.tzinfo) -> dt.datetime | None:
    """When a ruling stopped being in force: its successor's ruling time (event time) or the closing's record."""
    if line.ended is None:
        return None
    if not recorded and line.ended.event.event == "superseded" and line.ended.event.successor:
        successor = timelines.get(line.ended.event.successor)
        when = successor.ruled_at(False, tz) if successor else None
        if when is not None:
            return when
    return _at(line.ended.event)


# docs/design/0030-history-has-two-clocks.md
def rulings_as_of(ws: Workspace, when: str, topics: Iterable[str] = (), *, recorded: bool = False) -> list[Standing]:
    """The rulings in force at `when`, on any of `topics` (all when none)."""
    asked = check_topics(topics) if list(topics) else ()
    moment = parse_moment("DATE", when, ws.tz)
    return [s for s in records_as_of(ws, moment, recorded=recorded) if s.decision.status is Status.RULED
            and (not asked or any(topics_match(t, theirs) for t in asked for theirs in s.decision.topics))]


# -- what changed ---------------------------------------------------------------------------------

@dataclass
class Change:
    event: Event
    summary: str | None
    ruled_at: dt.datetime | dt.date | None = None  # on `ruled`: when the owner decided (event time)


def changed(ws: Workspace, since: str, until: str | None = None) -> list[Change]:
    """Lifecycle events recorded from `since` (its start, for a bare date) to `until` (its end)."""
    start = parse_moment("--since", since, ws.tz, end_of_day=False)
    end = parse_moment("--until", until, ws.tz) if until else None
    if end is not None and end < start:
        raise UsageError("--until is before --since")
    known = ws.histories_by_id()
    state = ws.state()
    found = []
    for decision_id, record in known.items():
        if not any(e.event in LIFECYCLE_EVENTS for e in record.events):
            continue
        versions = record_history(ws, record, state.get(decision_id)).versions
        sealed = next((v.decision for v in versions if v.event.event == "sealed" and v.decision), None)
        latest: Decision | None = state.get(decision_id)
        for version in versions:
            event = version.event
            if version.decision is not None:
                latest = version.decision
            if event.event not in LIFECYCLE_EVENTS or _at(event) < start or (end is not None and _at(event) > end):
                continue
            if event.event == "ruled" and sealed is not None:
                found.append(Change(event, sealed.summary, sealed.ruled_at))
            else:
                found.append(Change(event, event.summary or (latest.summary if latest else None)))
    return sorted(found, key=lambda c: (c.event.at, c.event.position or c.event.line or 0))


# -- export ---------------------------------------------------------------------------------------

def _when(value: dt.date | None) -> str | None:
    if value is None:
        return None
    return value.isoformat(timespec="seconds") if isinstance(value, dt.datetime) else value.isoformat()


def _ids(links: Iterable[str], resolve: Any) -> list[str]:
    return [resolve(link) or leading_id(link) or link for link in links]


def export_records(ws: Workspace, as_of: str | None = None, *, recorded: bool = False) -> list[dict[str, Any]]:
    """A snapshot: every decision as it stands now (from the notes, with the status in effect), or as
    it stood at `as_of` (from the ledger). Links are given as ids."""
    state = ws.state()
    if as_of is None:
        decisions = ws.decisions_in_effect(state)
        resolve = state.resolver()
        return [_row(decision, resolve) for decision in sorted(decisions, key=lambda d: d.number)]
    moment = parse_moment("--as-of", as_of, ws.tz)
    standing = records_as_of(ws, moment, recorded=recorded)
    resolve = LinkResolver([s.decision for s in standing])
    return [_row(s.decision, resolve) for s in standing]


def _row(decision: Decision, resolve: Any) -> dict[str, Any]:
    return {
        "id": decision.id, "status": decision.status.value, "topics": list(decision.topics),
        "summary": decision.summary, "asked_at": _when(decision.asked_at), "asked_by": decision.asked_by,
        "ruled_at": _when(decision.ruled_at), "ruled_by": decision.ruled_by, "source": decision.source,
        "supersedes": _ids(decision.supersedes, resolve), "alongside": _ids(decision.alongside, resolve),
        "superseded_by": (_ids([decision.superseded_by], resolve)[0] if decision.superseded_by else None),
        "reason": decision.reason, "reask_reason": decision.reask_reason, "revisit_if": decision.revisit_if,
        "revisit_by": _when(decision.revisit_by), "due": _when(decision.due), "path": decision.path,
        "body": decision.body,
    } | ({"conflict": decision.conflict} if decision.conflict else {})


def export_jsonl(ws: Workspace, rows: list[dict[str, Any]], as_of: str | None) -> str:
    header = {"format": EXPORT_FORMAT, "version": EXPORT_VERSION, "timezone": ws.config.timezone,
              "as_of": as_of, "records": len(rows)}
    return "".join(json.dumps(item, ensure_ascii=False, sort_keys=True) + "\n" for item in [header, *rows])


def export_markdown(rows: list[dict[str, Any]], as_of: str | None) -> str:
    title = f"# Decisions as of {as_of}" if as_of else "# Decisions"
    out = [title, ""]
    for status in ("open", "ruled", "superseded", "retracted", "withdrawn"):
        group = [row for row in rows if row["status"] == status]
        if not group:
            continue
        out += [f"## {status.capitalize()} ({len(group)})", ""]
        for row in group:
            out += [f"### {row['id']} {row['summary']}", ""]
            if row.get("conflict"):
                out += [f"**IN CONFLICT**: {row['conflict']}", ""]
            for name in ("topics", "asked_at", "asked_by", "ruled_at", "ruled_by", "source", "supersedes", "alongside",
                         "superseded_by", "reason", "reask_reason", "revisit_if", "revisit_by", "due"):
                value = row[name]
                if value:
                    shown = ", ".join(value) if isinstance(value, list) else value
                    out.append(f"- {name}: {shown}")
            body = (row["body"] or "").strip("\n")
            if body:
                out += ["", "\n".join(("#### " + line.lstrip("#").strip()) if line.startswith("#") else line
                                      for line in body.splitlines())]
            out.append("")
    return "\n".join(out).rstrip("\n") + "\n"
