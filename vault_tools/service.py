"""The operations on a vault: ask, rule, supersede, withdraw, retract, seal, look up.

Every write happens under the ledger lock, after the whole vault has been read
and checked, and every input is validated before the first byte is written.
Order of writes: the note first, then its ledger events; a crash in between
leaves a note the watcher's reconcile recognises and finishes.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from . import notes
from .errors import InconsistentVault, NoteError, NotFound, Refused, UsageError
from .ledger import Event, History, histories, seal_hash, seal_text_without_bom, utc_stamp
from .model import (
    FINAL_STATUSES, ID_PATTERN, KNOWN_FIELDS, MIN_TEXT, LinkResolver, TOPIC_PATTERN, Decision, Problem, Status, build_decision, duplicate_ids,
    format_id, id_number, local_date, newest_first_key, note_title, supersedes_cycle,
    topics_match, transition_problem,
)
from .pages import NOTICE, PAGE_NAMES, PageProblem, Pages, Settings, build_pages
from .vault import STATE_DIR, Vault, VaultState, machine_timezone

Clock = Callable[[], dt.datetime]
# Missing on a hand-ruled note until sealing stamps them: not a reason to block other writes.
STAMPED_FIELDS = ("ruled_at", "ruled_by")


def blocking_problems(problems: Iterable[Problem]) -> list[Problem]:
    """The problems that make a note unusable: all but the stamps sealing will add."""
    return [p for p in problems if not (p.field in STAMPED_FIELDS and p.code == "VT002")]  # VT002: missing-field


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


@dataclass(frozen=True)
class RejectedEdit:
    """What rejecting an in-place edit of a sealed note did."""

    kept_in: str  # where the typed text went: a revision note, or a copy under .vault-tools/kept/
    as_revision: bool
    restored: bool  # False: saved again meanwhile, so the restore waits for the next quiet period


@dataclass(frozen=True)
class SupersedePlan:
    note: notes.Note  # the old note as read
    text: str  # its text once marked superseded
    updated: Decision
    successor: Decision
    reason: str


@dataclass
class BuildResult:
    pages: Pages
    written: list[str] = field(default_factory=list)  # vault-relative paths
    stale: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # copies of pages edited by hand


@dataclass
class Lookup:
    ruling: Decision
    chain: list[Decision]  # what it superseded, newest first
    matched: list[str] = field(default_factory=list)  # the asked topics it matched


# -- input checks (before anything is written) ---------------------------------------

def check_id(value: str) -> str:
    value = value.strip()
    if not ID_PATTERN.match(value):
        raise UsageError(f"{value!r} is not a decision id (like D-0007)")
    return value


def check_name(value: str | None) -> str | None:
    """Who is recording something (`--by`): one short line."""
    if value is None:
        return None
    value = value.strip()
    if not value or "\n" in value or "\r" in value or len(value) > 100:
        raise UsageError(f"--by must be a name on one line (at most 100 characters): {value!r}")
    return value


def check_topics(topics: Iterable[str]) -> tuple[str, ...]:
    found = tuple(dict.fromkeys(topic.strip() for topic in topics))  # in order, each once
    if not found:
        raise UsageError("give at least one --topic")
    for topic in found:
        if not TOPIC_PATTERN.match(topic):
            raise UsageError(f"topic {topic!r} is not a kebab-case key (like article-footer)")
    return found


def check_text(name: str, value: str | None, *, required: bool = False) -> str | None:
    if value is None:
        if required:
            raise UsageError(f"{name} is required")
        return None
    value = value.strip()
    if "\n" in value or "\r" in value:
        raise UsageError(f"{name} must be one line")
    if len(value) < MIN_TEXT:
        raise UsageError(f"{name} must be at least {MIN_TEXT} characters ({len(value)} given): {value!r}")
    return value


def parse_when(name: str, value: str | None) -> dt.datetime | dt.date | None:
    if value is None:
        return None
    try:
        if len(value.strip()) == 10:
            found: dt.date = dt.date.fromisoformat(value.strip())
        else:
            found = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        if not 1900 <= found.year <= 9000:  # far dates overflow date arithmetic; none is meant
            raise ValueError
        return found
    except ValueError:
        raise UsageError(f"{name} must be a date (2026-07-17) or date and time (2026-07-17T08:30:00): {value!r}") from None


def parse_day(name: str, value: str | None) -> dt.date | None:
    found = parse_when(name, value)
    if isinstance(found, dt.datetime):
        return found.date()
    return found


# -- init ---------------------------------------------------------------------------

CONFIG_TEMPLATE = """\
# vault-tools settings. Every key is optional; the values shown are the defaults.
timezone: {timezone}          # dates in notes are written in this zone
# decisions_folder: Decisions  # where new decision notes go
# pinned_folder: Pinned        # generated pages
# templates_folder: Templates  # skipped when scanning
# settle_seconds: 120          # quiet time before the watcher seals a ruling
# debounce_ms: 2000            # quiet time after a save before the watcher looks
# stale_after_days: 14         # questions open longer are marked stale
# recent_days: 30              # superseded rulings stay on the log this long
# reminder_days: 7             # questions due this soon are listed as due soon
# default_asker: agent         # asked_by when a command does not say
# default_ruler: owner         # ruled_by when a command or the watcher does not say
# budget:                      # what an agent loads at session start
#   lines: 200
#   bytes: 25000
# lint:                        # per-rule severity: error, warning or off
#   VT043: off
"""

GITATTRIBUTES_LINE = f"{STATE_DIR}/ledger.jsonl merge=union"
GITIGNORE_LINES = (f"{STATE_DIR}/cache/", f"{STATE_DIR}/*.lock", f"{STATE_DIR}/watch.pid", f"{STATE_DIR}/crash.log",
                   f"{STATE_DIR}/watch.log*")


def _ensure_lines(path: Path, lines: Iterable[str]) -> bool:
    existing = path.read_text(encoding="utf-8") if path.exists() else ""
    missing = [line for line in lines if line not in existing.splitlines()]
    if not missing:
        return False
    prefix = "" if not existing or existing.endswith("\n") else "\n"
    notes.write_atomic(path, (existing + prefix + "\n".join(missing) + "\n").encode("utf-8"))
    return True


def init_vault(root: Path, timezone: str | None = None) -> list[str]:
    """Set up `.vault-tools/` and the git attributes; returns what it created or changed."""
    if timezone is not None:
        try:
            ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise UsageError(f"unknown timezone {timezone!r} (use an IANA name like Europe/Paris)") from None
    changed = []
    state_dir = root / STATE_DIR
    state_dir.mkdir(exist_ok=True)
    config = state_dir / "config.yaml"
    if not config.exists():
        from .starter import obsidian_templates_folder

        text = CONFIG_TEMPLATE.format(timezone=timezone or machine_timezone())
        templates = obsidian_templates_folder(root)
        if templates and templates != "Templates":  # Obsidian's own setting decides what is skipped
            text = text.replace("# templates_folder: Templates ", f"templates_folder: {json.dumps(templates)}")
        notes.write_atomic(config, text.encode())
        changed.append(f"{STATE_DIR}/config.yaml")
    ledger = state_dir / "ledger.jsonl"
    if not ledger.exists():
        ledger.touch()
        changed.append(f"{STATE_DIR}/ledger.jsonl")
    if _ensure_lines(root / ".gitattributes", [GITATTRIBUTES_LINE]):
        changed.append(".gitattributes")
    if _ensure_lines(root / ".gitignore", GITIGNORE_LINES):
        changed.append(".gitignore")
    return changed


# -- the service --------------------------------------------------------------------

class Service:
    def __init__(self, vault: Vault, clock: Clock = utc_now) -> None:
        self.vault = vault
        self.config = vault.config
        self.tz = vault.config.tz
        self.clock = clock

    # reading

    def state(self) -> VaultState:
        return self.vault.load()

    def read(self, path: Path) -> notes.Note:
        """One note, with any error naming it as the vault does (relative to the vault)."""
        try:
            return notes.read_note(path)
        except NoteError as error:
            error.path = self.vault.relative(path)
            raise

    def histories(self) -> dict[str, History]:
        return histories(self.vault.ledger.read())

    def now_local(self) -> dt.datetime:
        return self.clock().astimezone(self.tz).replace(tzinfo=None, microsecond=0)

    def today(self) -> dt.date:
        return self.now_local().date()

    def find(self, state: VaultState, decision_id: str) -> Decision:
        decision_id = check_id(decision_id)
        for broken in state.broken:
            if broken.path and broken.path.rsplit("/", 1)[-1].startswith(decision_id + " "):
                raise broken
        found = state.get(decision_id)
        if found is None:
            raise NotFound(f"no decision note has id {decision_id}")
        return found

    def show(self, decision_id: str) -> tuple[Decision, History, list[Problem]]:
        state = self.state()
        decision = self.find(state, decision_id)
        return decision, self.histories().get(decision.id, History(decision.id)), state.problems.get(decision.path, [])

    def as_they_stand(self, state: VaultState) -> list[Decision]:
        """The decisions as they stand, for everything that reads them: the ledger's final statuses
        win over what a note says (a retracted ruling set back to `ruled` by hand is still
        retracted), and a ruling named in a ruling's `supersedes` is no longer current, even
        before sealing marks it."""
        if "as_they_stand" in state.derived:
            return state.derived["as_they_stand"]
        try:
            recorded = self.vault.ledger.statuses()
        except InconsistentVault:  # a damaged ledger is reported by lint and refused by writes; read the notes
            recorded = {}
        resolve = state.resolver()
        replaced = {target for ruling in state.decisions if ruling.status is Status.RULED
                    for target in (resolve(link) for link in ruling.supersedes) if target and target != ruling.id}
        standing = []
        for decision in state.decisions:
            status = decision.status
            if recorded.get(decision.id) in FINAL_STATUSES:
                status = recorded[decision.id]
            elif status is Status.RULED and decision.id in replaced:
                status = Status.SUPERSEDED
            standing.append(decision if status is decision.status else replace(decision, status=status))
        state.derived["as_they_stand"] = standing
        return standing

    def list(self, status: str | None = None, topic: str | None = None) -> list[Decision]:
        if status is not None and status not in {s.value for s in Status}:
            raise UsageError(f"unknown status {status!r} (expected one of: {', '.join(s.value for s in Status)})")
        state = self.state()
        found = [d for d in self.as_they_stand(state)
                 if (status is None or d.status.value == status)
                 and (topic is None or any(topics_match(topic, t) for t in d.topics))]
        return sorted(found, key=lambda d: d.number)

    def lookup(self, topics: Iterable[str]) -> tuple[list[Lookup], list[PageProblem]]:
        """Current rulings on these topics, and the decision notes that could not be read (one of
        them might be a ruling on these topics)."""
        asked = check_topics(topics)
        state = self.state()
        return self._lookup(state, asked), self.page_problems(state)

    def _lookup(self, state: VaultState, asked: tuple[str, ...]) -> list[Lookup]:
        standing = self.as_they_stand(state)
        by_id, resolve = {d.id: d for d in standing}, state.resolver()
        results = []
        for ruling in standing:
            if not ruling.is_current:
                continue
            matched = [topic for topic in asked if any(topics_match(topic, t) for t in ruling.topics)]
            if matched:
                results.append(Lookup(ruling, self._chain(ruling, by_id, resolve), matched))
        return sorted(results, key=lambda found: newest_first_key(found.ruling, self.tz), reverse=True)

    def _chain(self, ruling: Decision, by_id: dict[str, Decision], resolve: Callable[[str], str | None]) -> list[Decision]:
        chain, seen, todo = [], {ruling.id}, list(ruling.supersedes)
        while todo:
            target = resolve(todo.pop(0))
            if target is None or target in seen or target not in by_id:
                continue
            seen.add(target)
            chain.append(by_id[target])
            todo.extend(by_id[target].supersedes)
        return sorted(chain, key=lambda d: newest_first_key(d, self.tz), reverse=True)

    # pinned pages

    def page_path(self, name: str) -> Path:
        return self.vault.root / self.config.pinned_folder / f"{name}.md"

    def page_problems(self, state: VaultState) -> list[PageProblem]:
        found = [PageProblem(e.path or "?", e.line, e.message) for e in state.broken]
        for path, problems in state.problems.items():
            found += [PageProblem(path, p.line, str(p)) for p in blocking_problems(problems)]
        return found

    def pages(self, today: dt.date | None = None, state: VaultState | None = None) -> Pages:
        state = state or self.state()
        settings = Settings(self.config.budget_lines, self.config.budget_bytes, self.config.stale_after_days,
                            self.config.recent_days, self.config.reminder_days)
        return build_pages(self.as_they_stand(state), state.resolver(), today or self.today(), self.tz, settings,
                           self.page_problems(state))

    def build(self, today: dt.date | None = None, *, check: bool = False, state: VaultState | None = None) -> BuildResult:
        """Write the pages whose bytes changed (or, with `check`, only say which are stale).

        A page that is neither what was last generated nor what is generated now
        was edited by hand: a copy goes to `.vault-tools/kept/` before it is replaced.
        """
        result = BuildResult(self.pages(today, state))
        generated = self._generated_digests()
        for name in PAGE_NAMES:
            path = self.page_path(name)
            data = result.pages.texts[name].encode("utf-8")
            try:
                current = path.read_bytes()
            except FileNotFoundError:
                current = None
            if current == data:
                continue
            rel = self.vault.relative(path)
            result.stale.append(rel)
            if check:
                continue
            if current is not None and self._edited_by_hand(current, generated.get(rel)):
                result.kept.append(self._keep_copy(name, current))
            notes.write_atomic(path, data)
            result.written.append(rel)
        if result.written:
            self._remember_pages({self.vault.relative(self.page_path(name)): result.pages.texts[name]
                                  for name in PAGE_NAMES})
        return result

    @staticmethod
    def _edited_by_hand(current: bytes, last_generated: str | None) -> bool:
        """Not what vault-tools last wrote there. With no record (a fresh clone, a cleared
        cache) a page still opening with the generated notice is taken as generated."""
        if last_generated is not None:
            return _digest(current) != last_generated
        return not current.startswith(NOTICE.encode("utf-8"))

    def _page_cache(self) -> Path:
        return self.vault.state_dir / "cache" / "pages.json"

    def _generated_digests(self) -> dict[str, str]:
        try:
            found = json.loads(self._page_cache().read_text(encoding="utf-8"))
            return found if isinstance(found, dict) else {}
        except (OSError, ValueError):
            return {}

    def _remember_pages(self, texts: dict[str, str]) -> None:
        digests = {rel: _digest(text.encode("utf-8")) for rel, text in texts.items()}
        notes.write_atomic(self._page_cache(), json.dumps(digests, sort_keys=True).encode())

    def _keep_copy(self, name: str, data: bytes) -> str:
        """Keep text about to be replaced under `.vault-tools/kept/`, never over an earlier copy."""
        stamp = self.clock().astimezone(self.tz).strftime("%Y-%m-%d %H%M%S")
        kept = self.vault.state_dir / "kept" / f"{name} {stamp}.md"
        counter = 1
        while kept.exists():
            counter += 1
            kept = kept.with_name(f"{name} {stamp} {counter}.md")
        notes.write_atomic(kept, data)
        return self.vault.relative(kept)

    # the operations reconciling is made of (when to apply them is the watcher's business)

    def record_hand_made(self, decision: Decision, kind: str) -> None:
        """A question made or withdrawn in Obsidian: the ledger records it like any other."""
        if kind == "withdrawn" and decision.reason is None:
            raise NoteError("withdrawn without a reason (at least 20 characters)", path=decision.path)
        actor = decision.asked_by if kind == "asked" and decision.asked_by else self.config.default_ruler
        self.vault.ledger.append([self._event(kind, decision, actor, reason=decision.reason)])

    def targets_paths(self, state: VaultState, decision: Decision) -> set[str]:
        by_id, resolve = state.by_id(), state.resolver()
        return {by_id[t].path for t in (resolve(link) for link in decision.supersedes) if t in by_id}

    def meaning(self, state: VaultState, decision: Decision) -> str:
        """The seal hash of a note as it is now, computed once per read of the vault."""
        meanings = state.derived.setdefault("meanings", {})
        key = (decision.id, decision.path)  # ids are not unique in a vault that lint would flag
        if key not in meanings:
            meanings[key] = seal_hash(decision, state.resolver(), self.tz)
        return meanings[key]

    def matches_ledger(self, state: VaultState, decision: Decision, history: History) -> bool:
        """A sealed note as the ledger last fixed it: its meaning, and the lifecycle fields the tool wrote."""
        seal = history.seal
        if seal is None or self.meaning(state, decision) != seal.hash or decision.status is not history.status:
            return False
        if decision.status in (Status.SUPERSEDED, Status.RETRACTED):
            closing = next(e for e in reversed(history.events) if e.event in ("superseded", "retracted"))
            if decision.reason != closing.reason:
                return False
            if closing.successor and state.resolver()(decision.superseded_by or "") != closing.successor:
                return False
        return True

    def unreviewed_edit(self, state: VaultState, decision: Decision, history: History | None) -> str | None:
        """Why a sealed note may not be built on now: it was edited in place, and that edit is not reviewed."""
        if history is None or history.seal is None or self.matches_ledger(state, decision, history):
            return None
        return (f"{decision.id} was edited in place since it was sealed; that edit must become a revision first "
                "(the watcher does it, or run `vault-tools watch --once`)")

    def finish_interrupted_close(self, state: VaultState, decision: Decision, history: History,
                                 note: notes.Note) -> bool:
        """A supersession or retraction whose note was written but whose event was not (a crash between):
        record the event. False when the note is not exactly what that operation writes."""
        if history.status is not Status.RULED or decision.status not in (Status.SUPERSEDED, Status.RETRACTED):
            return False
        sealed = notes.parse_text(seal_text_without_bom(history), note.path)
        changes: dict[str, Any] = {"status": decision.status.value, "reason": decision.reason}
        successor: Decision | None = None
        if decision.status is Status.SUPERSEDED:
            successor = state.get(state.resolver()(decision.superseded_by or "") or "")
            if successor is None or successor.status is not Status.RULED:
                return False
            changes = {"status": decision.status.value, "superseded_by": f"[[{successor.title}]]",
                       "reason": decision.reason}
        try:
            expected = notes.with_fields(sealed, changes)
        except NoteError:
            return False
        if expected != note.text:
            return False
        kind = decision.status.value
        self.vault.ledger.append([self._event(kind, decision, self.config.default_ruler, reason=decision.reason,
                                              hash=history.seal.hash if history.seal else None,
                                              text=notes.file_text(note, note.text),
                                              successor=successor.id if successor else None)])
        return True

    def reject_edit(self, state: VaultState, decision: Decision, history: History, note: notes.Note) -> RejectedEdit:
        """Keep what was typed into a sealed note, then put the sealed text back.

        What was typed goes to a revision note: an open note proposing to supersede the ruling
        (or, for a note whose ruling already ended, the ruling now current in its place). A later
        burst on the same note is added to that revision under its own heading; nothing in a
        revision is ever replaced. An edit of only the fields the tool writes (status, reason,
        superseded_by) is no proposal: the typed text is kept in `.vault-tools/kept/` instead.
        """
        seal = history.seal
        assert seal is not None and seal.text is not None
        sealed_id = history.id  # the note's own id, even if the typing changed it
        typed = notes.file_text(note, note.text)
        typed_bytes = notes.encode(note.text, bom=note.bom)
        now = self.now_local()
        event = Event(event="edit-rejected", id=sealed_id, at=utc_stamp(self.clock()),
                      actor=self.config.default_ruler, path=decision.path,
                      hash=seal_hash(decision, state.resolver(), self.tz), text=typed)
        as_revision = not (self.meaning(state, decision) == seal.hash and decision.id == sealed_id)
        if as_revision:
            kept_in = self._write_revision(state, decision, history, note, event, now)
        else:
            self.vault.ledger.append([event])
            kept_in = self._keep_copy(sealed_id, typed.encode("utf-8"))
        path = self.vault.path_of(decision)
        if path.read_bytes() != typed_bytes:
            return RejectedEdit(kept_in, as_revision, restored=False)
        notes.write_atomic(path, self._restored_text(history, note).encode("utf-8"))
        return RejectedEdit(kept_in, as_revision, restored=True)

    def _write_revision(self, state: VaultState, decision: Decision, history: History, note: notes.Note,
                        event: Event, now: dt.datetime) -> str:
        """Record the edit and write its revision note; returns the revision's path."""
        known = self.histories()
        previous = next((e.successor for e in reversed(history.events) if e.event == "edit-rejected" and e.successor),
                        None)
        revision = state.get(previous) if previous else None
        previous_history = known.get(previous) if previous else None
        open_in_ledger = previous_history is None or previous_history.status in (None, Status.OPEN)
        reuse = previous is not None and open_in_ledger and (
            (revision is not None and revision.status is Status.OPEN)
            or (revision is None and not self._has_note_file(state, previous)))
        revision_id = previous if reuse and previous else self._next_id(state)
        sealed_decision = self._sealed_decision(decision, seal_text_without_bom(history))
        if revision is not None and reuse:
            revision_path = self.vault.path_of(revision)
        else:
            revision_path = self._new_path(revision_id, f"Revision of {sealed_decision.title}")
        rel = self.vault.relative(revision_path)
        events = [replace(event, successor=revision_id)]
        if not reuse:
            events.append(Event(event="asked", id=revision_id, at=event.at, actor=self.config.default_ruler, path=rel))
        self.vault.ledger.append(events)
        if revision is not None and reuse:
            self._add_to_revision(revision_path, note, sealed_decision, now)
        else:  # never over an existing file: that refusal leaves the edit in place, to be tried again
            target = self._current_successor(state, sealed_decision, known)
            notes.create_note(revision_path, self._revision_text(note, sealed_decision, target, revision_id, now))
        return rel

    def _add_to_revision(self, path: Path, typed: notes.Note, sealed: Decision, now: dt.datetime) -> None:
        """A later burst: its text goes below what the revision holds, once."""
        revision = self.read(path)
        newline = revision.newline
        body = typed.body.replace("\r\n", "\n").strip("\n")
        changed = [f"- {key}: {value}" for key, value in (typed.data or {}).items()
                   if key in ("summary", "topics", "source", "revisit_if", "revisit_by")
                   and notes.plain(value) != notes.plain(getattr(sealed, key, None))
                   and not (key == "topics" and list(value or []) == list(sealed.topics))]
        content = (["Properties as typed:", "", *changed, ""] if changed else []) + [body]
        if newline.join(content).replace("\n", newline) in revision.text:
            return  # already there (a restart after a crash repeats the step)
        section = [f"## Typed into {sealed.id} on {now:%Y-%m-%d %H:%M}", "", *content]
        text = revision.text.rstrip("\r\n") + newline * 2 + newline.join(section).replace("\n", newline) + newline
        notes.write_note(revision, text)

    def _current_successor(self, state: VaultState, old: Decision, known: dict[str, History]) -> Decision | None:
        """The ruling a revision of `old` should propose to replace: `old` itself while it is current,
        else the current end of its supersession chain; none for a retracted ruling."""
        by_id, resolve = state.by_id(), state.resolver()
        current: Decision | None = by_id.get(old.id, old)
        seen: set[str] = set()
        while current is not None and current.id not in seen:
            seen.add(current.id)
            status = (known.get(current.id).status if known.get(current.id) else None) or current.status
            if status is Status.RULED:
                return current
            if status is not Status.SUPERSEDED:
                return None
            current = by_id.get(resolve(current.superseded_by or "") or "")
        return None

    def _restored_text(self, history: History, typed: notes.Note) -> str:
        """The sealed text, byte for byte, but for properties that are the owner's own (`tags`,
        `aliases`, ...): as they were changed since sealing, they stay changed."""
        seal = history.seal
        assert seal is not None and seal.text is not None
        sealed = notes.parse_text(seal_text_without_bom(history), typed.path)
        if not hasattr(sealed.data, "items") or not hasattr(typed.data, "items"):
            return seal.text
        missing = object()
        keys = {*sealed.data, *typed.data}
        differ = {key for key in keys if typed.data.get(key, missing) != sealed.data.get(key, missing)}
        if not differ - KNOWN_FIELDS:
            return seal.text
        # Start from what was typed, so the owner's lines stay as written; put back the rest.
        put_back = {key: sealed.data.get(key, notes.REMOVE) for key in sorted(differ & KNOWN_FIELDS)}
        text = notes.with_fields(typed, put_back) if put_back else typed.text
        bom = seal.text[:len(seal.text) - len(sealed.text)]
        body = sealed.body.replace("\r\n", "\n").replace("\n", typed.newline)
        return bom + text[:len(text) - len(typed.body)] + body

    def _has_note_file(self, state: VaultState, decision_id: str) -> bool:
        folder = self.vault.root / self.config.decisions_folder
        return any(folder.glob(f"{decision_id} *.md")) or any(folder.glob(f"{decision_id}.md"))

    def _sealed_decision(self, current: Decision, sealed_text: str) -> Decision:
        note = notes.parse_text(sealed_text, self.vault.path_of(current))
        found, _ = build_decision(note.data, path=current.path, body=note.body, key_lines=note.key_lines)
        return found or current

    def _revision_text(self, typed: notes.Note, old: Decision, target: Decision | None, revision_id: str,
                       now: dt.datetime) -> str:
        changes: dict[str, Any] = {
            "id": revision_id, "status": Status.OPEN.value,
            "supersedes": [f"[[{target.title}]]"] if target else notes.REMOVE,
            "reason": f"In-place edit of sealed {old.id} on {now:%Y-%m-%d %H:%M}, proposed as a revision of it.",
            "asked_at": now, "asked_by": self.config.default_ruler,
            "ruled_at": notes.REMOVE, "ruled_by": notes.REMOVE, "superseded_by": notes.REMOVE}
        return notes.with_fields(typed, changes)

    def supersede_now(self, state: VaultState, target: Decision, ruling: Decision) -> None:
        """Mark `target` superseded by the sealed `ruling` (finishing what a crash interrupted)."""
        plan = self._plan_superseded(state, target, ruling, ruling.reason or "")
        self._apply_superseded(state, plan, ruling.ruled_by or self.config.default_ruler)

    def pending_supersessions(self, state: VaultState, ruling: Decision) -> list[Decision]:
        by_id, resolve = state.by_id(), state.resolver()
        found = (by_id.get(resolve(link) or "") for link in ruling.supersedes)
        return [t for t in found if t is not None and t.id != ruling.id and t.status is Status.RULED]

    # writing: shared steps

    def _state_for_write(self) -> VaultState:
        """The vault as read now, refused when writing to it could make things worse."""
        state = self.state()
        if state.broken:
            first = state.broken[0]
            more = f" (and {len(state.broken) - 1} more)" if len(state.broken) > 1 else ""
            raise InconsistentVault(f"{first.message}; fix this decision note before recording anything{more}",
                                    path=first.path, line=first.line)
        for path, problems in sorted(state.problems.items()):
            blocking = blocking_problems(problems)
            if blocking:
                raise NoteError(f"{blocking[0]}; fix this decision note before recording anything",
                                path=path, line=blocking[0].line)
        for decision_id, found in duplicate_ids(state.decisions).items():
            paths = ", ".join(d.path for d in found)
            raise InconsistentVault(f"id {decision_id} is used by {len(found)} notes: {paths}", path=found[0].path)
        by_id, resolve = state.by_id(), state.resolver()
        for decision in state.decisions:
            cycle = supersedes_cycle(decision, by_id, resolve)
            if cycle:
                raise InconsistentVault(f"supersedes links form a cycle: {' -> '.join(cycle)}", path=decision.path,
                                        line=decision.line_of("supersedes"))
        self.vault.ledger.read()  # a torn or changed ledger stops every write
        return state

    def _next_id(self, state: VaultState) -> str:
        numbers = [d.number for d in state.decisions]
        numbers += [id_number(event.id) for event in self.vault.ledger.read() if ID_PATTERN.match(event.id)]
        folder = self.vault.root / self.config.decisions_folder
        if folder.is_dir():
            for path in folder.glob("D-*.md"):
                match = ID_PATTERN.match(path.name.split(" ", 1)[0].removesuffix(".md"))
                if match:
                    numbers.append(int(match.group(1)))
        return format_id(max(numbers, default=0) + 1)

    def _event(self, kind: str, decision: Decision, actor: str, **extra: Any) -> Event:
        return Event(event=kind, id=decision.id, at=utc_stamp(self.clock()), actor=actor, path=decision.path, **extra)

    def _understand(self, path: Path, text: str, *, ruled: bool = False) -> Decision:
        """Parse text about to be written, refusing it if it is not a valid decision."""
        note = notes.parse_text(text, path)
        rel = self.vault.relative(path)
        decision, problems = build_decision(note.data, path=rel, body=note.body, key_lines=note.key_lines)
        if problems or decision is None:
            problem = problems[0] if problems else Problem(None, "is not a decision")
            raise NoteError(f"would not be a valid decision: {problem}", path=rel, line=problem.line)
        return decision

    def _resolver_with(self, state: VaultState, *extra: Decision) -> Callable[[str], str | None]:
        """The state's resolver, also knowing notes about to be written (their titles may be new)."""
        if all(state.get(e.id) is not None and state.get(e.id).path == e.path for e in extra):  # type: ignore[union-attr]
            return state.resolver()
        others = [d for d in state.decisions if d.id not in {e.id for e in extra}]
        return LinkResolver([*others, *extra])

    def _supersede_targets(self, state: VaultState, decision: Decision, links: Iterable[str]) -> list[Decision]:
        """The rulings `decision` will supersede; refuses a target that is missing, not current,
        or edited in place since it was sealed (that edit has to be reviewed first)."""
        by_id, resolve = state.by_id(), self._resolver_with(state, decision)
        known = self.histories()
        targets = []
        for link in links:
            target_id = resolve(link)
            if target_id is None or target_id not in by_id:
                raise Refused(f"supersedes {link!r}, but no decision note is called that", path=decision.path,
                              line=decision.line_of("supersedes"))
            target = by_id[target_id]
            if target_id == decision.id:
                raise Refused("a ruling cannot supersede itself", path=decision.path)
            status = (known[target_id].status if target_id in known else None) or target.status
            if target.status is not Status.RULED or status is not Status.RULED:
                successor = f" by {target.superseded_by}" if target.superseded_by else ""
                raise Refused(f"{target.id} is {status.value}{successor}; only a current ruling can be superseded",
                              path=decision.path, line=decision.line_of("supersedes"))
            edited = self.unreviewed_edit(state, target, known.get(target_id))
            if edited:
                raise InconsistentVault(edited, path=target.path)
            targets.append(target)
        return targets

    def _seal_events(self, state: VaultState, decision: Decision, text: str, history: History | None,
                     actor: str) -> list[Event]:
        resolve = self._resolver_with(state, decision)
        digest = seal_hash(decision, resolve, self.tz)
        supersedes = tuple(sorted(filter(None, (resolve(link) for link in decision.supersedes))))
        events = []
        if history is None or history.status is not Status.RULED:
            events.append(self._event("ruled", decision, actor, hash=digest, supersedes=supersedes))
        events.append(self._event("sealed", decision, actor, hash=digest, text=text))
        return events

    def _plan_superseded(self, state: VaultState, old: Decision, new: Decision, reason: str,
                         known: dict[str, History] | None = None) -> "SupersedePlan":
        """The old note's text once marked superseded, worked out and checked before anything is written."""
        path = self.vault.path_of(old)
        note = self.read(path)
        text = notes.with_fields(note, {"status": Status.SUPERSEDED.value,
                                        "superseded_by": f"[[{new.title}]]", "reason": reason})
        return SupersedePlan(note, text, self._understand(path, text), new, reason)

    def _apply_superseded(self, state: VaultState, plan: "SupersedePlan", actor: str) -> None:
        notes.write_note(plan.note, plan.text)
        digest = seal_hash(plan.updated, self._resolver_with(state, plan.successor), self.tz)
        self.vault.ledger.append([self._event("superseded", plan.updated, actor, hash=digest,
                                              text=notes.file_text(plan.note, plan.text), reason=plan.reason,
                                              successor=plan.successor.id)])

    def _write_ruling(self, state: VaultState, path: Path, note: notes.Note | None, text: str, actor: str,
                      reason: str | None) -> Decision:
        decision = self._understand(path, text)
        targets = self._supersede_targets(state, decision, decision.supersedes)
        if targets and reason is None:
            raise UsageError("superseding a ruling needs --reason (at least 20 characters)")
        plans = [self._plan_superseded(state, target, decision, reason or "") for target in targets]
        if note is None:
            notes.create_note(path, text)
        else:
            notes.write_note(note, text)
            text = notes.file_text(note, text)
        self.vault.ledger.append(self._seal_events(state, decision, text, self.histories().get(decision.id), actor))
        for plan in plans:
            self._apply_superseded(state, plan, actor)
        return decision

    def _new_path(self, decision_id: str, summary: str) -> Path:
        folder = self.vault.root / self.config.decisions_folder
        path = folder / f"{note_title(decision_id, summary)}.md"
        if not self.vault.inside(path.parent if path.parent.exists() else self.vault.root):
            raise UsageError(f"decisions_folder {self.config.decisions_folder!r} is outside the vault")
        return path

    def _link_to(self, state: VaultState, decision_id: str) -> str:
        return f"[[{self.find(state, decision_id).title}]]"

    # writing: the operations

    def ask(self, summary: str, topics: Iterable[str], *, body: str | None = None, due: str | None = None,
            reask_reason: str | None = None, asked_by: str | None = None) -> Decision:
        summary = check_text("summary", summary, required=True) or ""
        asked = check_topics(topics)
        reask_reason = check_text("--reask-reason", reask_reason)
        due_day = parse_day("--due", due)
        actor = check_name(asked_by) or self.config.default_asker
        with self.vault.ledger.locked():
            state = self._state_for_write()
            for question in self.as_they_stand(state):
                if question.status is Status.OPEN:
                    shared = [t for t in asked if any(topics_match(t, theirs) for theirs in question.topics)]
                    if shared:
                        raise Refused(
                            f"{question.id} is already open on topic {shared[0]}: {question.summary}",
                            details=["Add to that question instead of asking again."])
            if reask_reason is None:
                settled = self._lookup(state, asked)
                if settled:
                    details = [self._settled_line(found, asked) for found in settled]
                    details.append("If something changed, ask again with --reask-reason \"what changed\" "
                                   f"(at least {MIN_TEXT} characters).")
                    raise Refused(f"topic {settled[0].matched[0]} is settled: {len(settled)} current ruling(s)",
                                  details=details)
            decision_id = self._next_id(state)
            path = self._new_path(decision_id, summary)
            fields: list[tuple[str, Any]] = [
                ("type", "decision"), ("id", decision_id), ("status", Status.OPEN.value), ("topics", list(asked)),
                ("summary", summary), ("asked_at", self.now_local()), ("asked_by", actor)]
            if due_day:
                fields.append(("due", due_day))
            if reask_reason:
                fields.append(("reask_reason", reask_reason))
            text = notes.render_note(fields, _sections(("Question", summary), ("Context", body)))
            decision = self._understand(path, text)
            notes.create_note(path, text)
            self.vault.ledger.append([self._event("asked", decision, actor)])
            return decision

    def _settled_line(self, found: Lookup, asked: tuple[str, ...]) -> str:
        ruling = found.ruling
        day = local_date(ruling.ruled_at, self.tz).isoformat() if ruling.ruled_at else "undated"
        via = ""
        for topic in found.matched:
            key = next((t for t in ruling.topics if topics_match(topic, t)), topic)
            if key != topic:
                via = f" (your topic {topic} matched {key})"
        return f"{ruling.id} ruled {day}{via}: {ruling.summary}"

    def rule(self, decision_id: str | None, summary: str, *, topics: Iterable[str] = (), source: str | None = None,
             ruled_at: str | None = None, ruled_by: str | None = None, supersedes: Iterable[str] = (),
             reason: str | None = None, body: str | None = None, revisit_if: str | None = None,
             revisit_by: str | None = None) -> Decision:
        summary = check_text("summary", summary, required=True) or ""
        reason = check_text("--reason", reason)
        superseded_ids = [check_id(value) for value in supersedes]
        if superseded_ids and reason is None:
            raise UsageError("--supersedes needs --reason saying why (at least 20 characters)")
        when = parse_when("--ruled-at", ruled_at) or self.now_local()
        if isinstance(when, dt.datetime) and when.tzinfo is not None:  # notes hold the vault's local time
            when = when.astimezone(self.tz).replace(tzinfo=None)
        revisit_day = parse_day("--revisit-by", revisit_by)
        actor = check_name(ruled_by) or self.config.default_ruler
        changes: dict[str, Any] = {"status": Status.RULED.value, "summary": summary, "ruled_at": when,
                                   "ruled_by": actor}
        for name, value in (("source", source), ("revisit_if", revisit_if), ("revisit_by", revisit_day)):
            if value:
                changes[name] = value
        with self.vault.ledger.locked():
            state = self._state_for_write()
            if superseded_ids:
                changes["supersedes"] = [self._link_to(state, value) for value in superseded_ids]
                changes["reason"] = reason
            if decision_id is None:
                asked = check_topics(topics)
                new_id = self._next_id(state)
                path = self._new_path(new_id, summary)
                fields = [("type", "decision"), ("id", new_id), ("status", Status.RULED.value),
                          ("topics", list(asked)), *((k, v) for k, v in changes.items() if k != "status")]
                text = notes.render_note(fields, _sections(("Ruling", body or summary)))
                return self._write_ruling(state, path, None, text, actor, reason)
            if topics:
                raise UsageError("--topic is for a ruling given directly; a question keeps its own topics")
            question = self.find(state, decision_id)
            problem = transition_problem(self._status(question), Status.RULED)
            if problem:
                raise Refused(f"{question.id} {problem}", path=question.path)
            path = self.vault.path_of(question)
            note = self.read(path)
            text = notes.with_fields(note, changes)
            if body:
                text = text.rstrip("\r\n") + note.newline * 2 + _sections(("Ruling", body)).replace("\n", note.newline)
            return self._write_ruling(state, path, note, text, actor, reason)

    def _close(self, decision_id: str, new_status: Status, reason: str | None, actor: str | None) -> Decision:
        reason = check_text("--reason", reason, required=True)
        who = check_name(actor) or self.config.default_ruler
        with self.vault.ledger.locked():
            state = self._state_for_write()
            decision = self.find(state, decision_id)
            problem = transition_problem(self._status(decision), new_status)
            if problem:
                raise Refused(f"{decision.id} {problem}", path=decision.path)
            edited = self.unreviewed_edit(state, decision, self.histories().get(decision.id))
            if edited:
                raise InconsistentVault(edited, path=decision.path)
            path = self.vault.path_of(decision)
            note = self.read(path)
            text = notes.with_fields(note, {"status": new_status.value, "reason": reason})
            updated = self._understand(path, text)
            notes.write_note(note, text)
            kind = "withdrawn" if new_status is Status.WITHDRAWN else "retracted"
            extra: dict[str, Any] = {"reason": reason}
            if new_status is Status.RETRACTED:
                extra.update(text=notes.file_text(note, text), hash=seal_hash(updated, state.resolver(), self.tz))
            self.vault.ledger.append([self._event(kind, updated, who, **extra)])
            return updated

    def withdraw(self, decision_id: str, reason: str | None, actor: str | None = None) -> Decision:
        return self._close(decision_id, Status.WITHDRAWN, reason, actor)

    def retract(self, decision_id: str, reason: str | None, actor: str | None = None) -> Decision:
        return self._close(decision_id, Status.RETRACTED, reason, actor)

    def seal(self, decision_ids: Iterable[str] = ()) -> list[Decision]:
        """Seal ruled notes that are not sealed yet (all of them, or those named)."""
        wanted = {check_id(value) for value in decision_ids}
        sealed = []
        with self.vault.ledger.locked():
            state = self._state_for_write()
            known = self.histories()
            for decision_id in sorted(wanted):
                decision = self.find(state, decision_id)
                status = self._status(decision)
                if decision.status is not Status.RULED or status in FINAL_STATUSES:
                    raise Refused(f"{decision.id} is {status.value}; only a ruling can be sealed", path=decision.path)
            for decision in sorted(state.decisions, key=lambda d: d.number):
                history = known.get(decision.id)
                if decision.status is not Status.RULED or (history and (history.sealed or history.status in FINAL_STATUSES)):
                    continue
                if wanted and decision.id not in wanted:
                    continue
                sealed.append(self.seal_one(state, decision, history))
        return sealed

    def seal_one(self, state: VaultState, decision: Decision, history: History | None) -> Decision:
        path = self.vault.path_of(decision)
        note = self.read(path)
        stamps: dict[str, Any] = {}
        if decision.ruled_at is None:
            stamps["ruled_at"] = self.now_local()
        if decision.ruled_by is None:
            stamps["ruled_by"] = self.config.default_ruler
        text = notes.with_fields(note, stamps) if stamps else note.text
        decision = self._understand(path, text)
        targets = self._supersede_targets(state, decision, decision.supersedes)
        if targets and decision.reason is None:
            raise NoteError("supersedes a ruling but has no reason (at least 20 characters)", path=decision.path,
                            line=decision.line_of("supersedes"))
        plans = [self._plan_superseded(state, target, decision, decision.reason or "") for target in targets]
        if stamps:
            notes.write_note(note, text)
        actor = decision.ruled_by or self.config.default_ruler
        self.vault.ledger.append(self._seal_events(state, decision, notes.file_text(note, text), history, actor))
        for plan in plans:
            self._apply_superseded(state, plan, actor)
        return decision

    def _status(self, decision: Decision) -> Status:
        """Where a note stands: the ledger's word where it has one (final statuses stay final)."""
        return self.vault.ledger.statuses().get(decision.id) or decision.status


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _sections(*sections: tuple[str, str | None]) -> str:
    return "".join(f"## {heading}\n\n{text.strip()}\n\n" for heading, text in sections if text).rstrip("\n") + "\n"
