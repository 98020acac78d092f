"""A vault's state kept current while one process changes note after note: read once, then only what it wrote.

`Workspace.state()` reads the whole vault, and what derives from a state (links, the ties of notes to the
ledger's records, seal hashes) is computed once per state. A process that changes many notes in turn (the
watcher's reconcile, `seal`) must take each decision on the vault as it is after the previous change. Reading
the vault again after each change costs a whole read per change; `LiveState` reads it once, and after each
step reads again only the notes that step wrote (`durable.recording_writes` names them) and the events it
appended to the ledger, and brings what derives from them up to date.

The state it keeps is the one `Vault.load` would give now, in the same order; a step that adds, removes or
renames a decision note (rare: ids given, a revision written) recomputes the derived data from the notes in
memory, without reading them again.
"""
from __future__ import annotations

import bisect
import contextlib
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from .. import durable, notes
from ..history import History, RecordSummary
from ..layout import relative
from ..model import Decision
from ..notes import StatKey, stat_key
from ..record_files import RACY_NANOSECONDS
from ..record_ties import tie_notes
from ..vault import VaultState
from ..vault_walk import SKIPPED_FOLDERS, skipped_folders
from .workspace import KnownSeal, Workspace

if TYPE_CHECKING:
    from .prefetch import WorkAhead  # a child works ahead only in a large reconcile

T = TypeVar("T")
# How long a look at the ledger's files stands for a live view while this process appends nothing: events
# another process adds are seen that much later at most (a first reconcile of 50,000 notes refreshed its view
# 6,820 times in 1.8 s, each with a look: 0.2 s of it).
LOOK_KEPT_SECONDS = 0.05
# What a state's `derived` holds that this module keeps current; anything else is dropped on a change.
_KEPT = frozenset({"history_ties", "summary_ties", "seal_hashes", "seal_holds", "duplicate_ids", "note_index"})


def walk_key(rel: str) -> tuple[tuple[int, str], ...]:
    """Where `iter_markdown` meets a note: in each folder its notes by name, then its subfolders by name."""
    parts = rel.split("/")
    return (*((1, part) for part in parts[:-1]), (0, parts[-1]))


# docs/design/0018-the-reconcile-reads-the-vault-once.md
class LiveState:
    """The vault as it is now, for a process that writes to it: use it as a context manager (it then sees
    every note written in this thread) and call `refresh()` after each step."""

    def __init__(self, ws: Workspace, load: Callable[[], VaultState] | None = None, *,
                 read_started: int | None = None) -> None:
        """`load` reads the vault (default: `ws.state()`), or hands over a state read from `read_started` on
        (`time.time_ns()`): each note the read found past the racy window then is taken as unchanged."""
        self.ws = ws
        ws.vault.ledger.look_again()
        started = time.time_ns() if read_started is None else read_started
        self.state = (load or ws.state)()
        self.written: set[str] = set()  # what the last `refresh` read again (vault-relative)
        # Each refresh that changed anything is a new version; for each note, the last version that changed
        # it or its record (`touched_at`), and the last that added, removed or renamed a note (`reshaped_at`):
        # what a caller that looked at a note at some version needs to know to look again or not.
        self.version = 0
        self.touched_at: dict[str, int] = {}
        self.reshaped_at = 0
        self._recorded: list[notes.Written] = []
        self._exit = contextlib.ExitStack()
        self._ledger_key = self.state.ledger_seen = self._ledger_stat()
        events = ws.vault.ledger.read()
        self._events, self._last_event = len(events), events[-1] if events else None  # how far this view has read
        self.known = ws.histories()
        config = ws.config
        self._skipped = skipped_folders(ws.vault.root, config)
        self._summary_ties = _Summaries(self)
        # path -> stat key of a decision note whose file holds what the state says: it has not changed since
        # before the vault was read (the note cache's own rule: older than the racy window), nor been written
        self._unchanged: dict[str, StatKey] = {}
        read_at = self.state.stat_keys or {}  # each note's key as the read found it
        self.read_keys = read_at  # kept: the state's own is dropped at its first write
        # Called before a child is forked to work ahead, with the notes' keys as read and the files listed now,
        # when other threads run in this process: it stops them (a watcher's observer) and looks again later
        self.before_fork: Callable[[Mapping[str, StatKey], list[str]], None] | None = None
        for decision in self.state.decisions:
            key = read_at.get(decision.path)
            if key is not None and max(key[1], key[2]) < started - RACY_NANOSECONDS:
                self._unchanged[decision.path] = key
        self._index_notes()
        self._index_records()
        self._tie_all()
        self.ahead: WorkAhead | None = None  # what a child works out ahead (see `work_ahead`)
        # id(parsed) -> (parsed, the decision it is, its seal hash or None, `reshaped_at` then): notes this
        # process is about to write, as the writer built them (see `writing`)
        self._writing: dict[int, tuple[notes.Note, Decision, str | None, int]] = {}

    def __enter__(self) -> LiveState:
        self._recorded = self._exit.enter_context(durable.recording_writes())
        # What the workspace asks this view while it is in use; it gets back what it had once the view is done
        hooks = {"read_as_known": self.note_as_read, "edit_as_known": self.edited_as_known,
                 "writing_as_known": self.writing, "decided_as_known": self.decided_as_known,
                 "seal_as_known": self.seal_as_known}
        for name, hook in hooks.items():
            self._exit.callback(setattr, self.ws, name, getattr(self.ws, name))
            setattr(self.ws, name, hook)
        return self

    def work_ahead(self, rels: Iterable[str]) -> None:
        """Have a child work out what sealing the quiet rulings among `rels` needs, in that order, while this
        process goes through them (see `services.prefetch`); stopped when the view is done with."""
        if self.ahead is None:
            from .prefetch import WorkAhead  # a child works ahead only in a large reconcile

            self.ahead = WorkAhead(self, list(rels))
            self._exit.callback(self.ahead.close)

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._exit.close()

    # -- reading it ------------------------------------------------------------------

    def decision_at(self, rel: str) -> Decision | None:
        position = self._position.get(rel)
        return self.state.decisions[position] if position is not None else None

    def history_of(self, decision: Decision) -> History | None:
        """The record this note is (see `Workspace.history_of`), as the ledger stands now."""
        return self.ties.get(decision.path)

    def unchanged_text(self, rel: str) -> str | None:
        """The text of the note at `rel` (as the file holds it, BOM included) when it is certainly what the state
        was read from, so it need not be parsed again; else None."""
        key = self._unchanged.get(rel)
        if key is None:
            return None
        path = os.path.join(self.state.root, rel)
        if self.ahead is not None:
            known = self.ahead.text_of(rel)  # read by the child while the file had this key
            if known is not None:
                return known if _stat_key(path) == key else None
        try:
            with open(path, "rb") as handle:
                raw = handle.read()
        except OSError:
            return None
        if _stat_key(path) != key:  # written since, perhaps while being read
            return None
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return None

    def is_unchanged(self, rel: str) -> bool:
        """Whether the note at `rel` has not been written since before the vault was read (see `unchanged_text`)."""
        return rel in self._unchanged

    def edited_as_known(self, note: notes.Note, changes: Mapping[str, Any]) -> notes.Note | None:
        """`note` with `changes` made, as a child made it ahead for that very text (see `services.prefetch`)."""
        if self.ahead is None:
            return None
        from .prefetch import edit_key  # a child works ahead only in a large reconcile

        rel = self._relative(note.path)
        return self.ahead.edit_of(edit_key(rel, note.text, changes)) if rel is not None else None

    def seal_as_known(self, decision: Decision) -> KnownSeal | None:
        """What sealing this very ruling needs, as a child worked it out ahead (see `WorkAhead.seal_of`)."""
        return self.ahead.seal_of(decision) if self.ahead is not None else None

    def decided_as_known(self, note: notes.Note) -> tuple[Decision, str | None] | None:
        """The decision an edit a child made ahead is, and its seal hash (see `WorkAhead.decided_of`)."""
        return self.ahead.decided_of(note) if self.ahead is not None else None

    def writing(self, parsed: notes.Note, decision: Decision, digest: str | None) -> None:
        """A note about to be written is `decision`, with that seal hash (see `Workspace.writing`): reading it
        back, the view takes both while the file holds what was written and the links resolve as they did."""
        self._writing[id(parsed)] = (parsed, decision, digest, self.reshaped_at)

    def note_as_read(self, path: Path) -> notes.Note | None:
        """The decision note at `path` as the state has it, its properties not parsed again, when its file
        certainly still holds what the state was read from (see `unchanged_text`); else None. Marking a ruling
        superseded reads it: a first reconcile marks hundreds."""
        rel = self._relative(path)
        text = self.unchanged_text(rel) if rel is not None else None
        if text is None or rel is None:
            return None
        data, lines = self.state.properties.get(rel), self.state.property_lines.get(rel)
        if data is None or lines is None:
            return None
        bom = text.startswith(notes.BOM)
        text = text.removeprefix(notes.BOM)
        frontmatter, body, _ = notes.split(text)
        return notes.Note(path=path, text=text, bom=bom, newline=notes.newline_of(text), frontmatter=frontmatter,
                          body=body, data=data, key_lines=lines)

    def lost_at(self, rel: str) -> History | None:
        """A sealed record last written at `rel` that no note is tied to and whose id no note has: the note
        there is that record's note, its id changed in place (the latest such record)."""
        found = None
        by_id = self.state.by_id()
        for record in self._records_at.get(rel, ()):
            history = self.known[record]
            if history.seal is not None and record not in self._tied_at and history.id not in by_id:
                found = history
        return found

    # -- keeping it current -------------------------------------------------------------

    def refresh(self, removed: Iterable[str] = ()) -> bool:
        """Read again what was written since the last refresh (and what `removed` names: deleted or moved
        away); True when anything had changed. Cheap when nothing was: one stat of the ledger, at most every
        `LOOK_KEPT_SECONDS` while this process appends nothing."""
        if not self._recorded and not removed:  # most steps write nothing: the look kept says whether any other did
            key = self.ws.vault.ledger.kept_key(LOOK_KEPT_SECONDS)
            if key is not None and key == self._ledger_key:
                self.written = set()
                return False
        with self.ws.vault.ledger.looked_at_once(LOOK_KEPT_SECONDS):  # one look at its files for what follows
            return self._refresh(removed)

    def _refresh(self, removed: Iterable[str]) -> bool:
        last_writes = {rel: each for each in self._recorded if (rel := self._relative(each.path)) is not None}
        written = set(last_writes) | set(removed)
        self._recorded.clear()
        key = self._ledger_stat()
        self.written = {rel for rel in written if self._scanned(rel)}
        if not self.written and key == self._ledger_key:
            return False
        self.version += 1
        ids: set[str] = set()
        for rel in self.written:
            self.touched_at[rel] = self.version
        if self.written:
            ids |= self._reread(sorted(self.written, key=walk_key), last_writes)
        if key != self._ledger_key:
            self._ledger_key = self.state.ledger_seen = key
            records = self._read_ledger()
            if records is None:
                self._index_records()
                self._tie_all()
                self.reshaped_at = self.version
                return True
            ids |= self._update_records(records)
        self._retie(ids)
        return True

    def refresh_with_keys(self) -> None:
        """`refresh`, and the state's stat keys made whole again: as the read found them, but for the notes
        written since, taken before they are read again (as `Vault.load` takes them: an edit landing between
        the two is read under the older key, so whatever is kept under that key is read again next time,
        never the reverse). What keeps derived data under them, and `Vault.unchanged_since`, can then use them."""
        written: dict[str, StatKey | None] = {}
        for each in self._recorded:
            rel = self._relative(each.path)
            if rel is not None:
                try:
                    written[rel] = stat_key(os.stat(each.path))
                except OSError:
                    written[rel] = None
        self.refresh()
        keys = dict(self.read_keys)
        for rel, key in written.items():
            if key is None:
                keys.pop(rel, None)
            else:
                keys[rel] = key
        self.state.stat_keys = keys

    def changed_since(self, rel: str, version: int) -> bool:
        """Whether the note at `rel`, its record or the set of notes changed after `version`."""
        return self.reshaped_at > version or self.touched_at.get(rel, 0) > version

    def _reread(self, rels: list[str], last_writes: dict[str, notes.Written]) -> set[str]:
        """Read the notes at `rels` again (what this process last wrote at each is `last_writes`); returns the
        ids whose ties must be worked out again."""
        state = self.state
        ids: set[str] = set()
        reshaped = stale = False  # stale: notes came or went since the positions were worked out
        for rel in rels:
            if stale and rel in self._position:  # positions of notes already there are needed: work them out
                self._index_notes()
                stale = False
            path = state.root / rel
            written = last_writes.get(rel)
            parsed = written.parsed if written is not None else None
            known = self._writing.pop(id(parsed), None) if parsed is not None else None
            if known is not None and known[0] is not parsed:
                known = None  # another note, made after the one told of was let go
            fresh = self.ws.vault.read_one(rel, written, known[1] if known else None) \
                if path.is_file() or path.is_symlink() else None
            old = self.decision_at(rel)
            new = fresh.decisions[0] if fresh is not None and fresh.decisions else None
            ids.update(d.id for d in (old, new) if d is not None)
            self._unchanged.pop(rel, None)
            self._forget(rel, old)
            if old is not None and new is not None and old.id == new.id and fresh is not None:
                self._replace(rel, new, fresh)  # the common case: same note, same id, new content
                if known is not None and new is known[1] and known[2] is not None and known[3] == self.reshaped_at:
                    self.ws.remember_seal_hash(state, new, known[2])  # as written: looked at again, it matches
                continue
            self._remove(rel)
            if fresh is not None:
                self._insert(rel, fresh)
            stale = reshaped = True  # positions worked out once for a run of new notes, not once per note
        if stale:
            self._index_notes()
        if reshaped:  # a note came, went or changed its id: links between notes may name other notes now
            self.reshaped_at = self.version
            state._by_id = state._resolver = None  # rebuilt on first use
            state.derived.forget(keep=("history_ties", "summary_ties"))
            ids = {d.id for d in state.decisions} | {h.id for h in self.known.values()}
        state.derived.forget(keep=_KEPT)
        return ids

    def _forget(self, rel: str, old: Decision | None) -> None:
        """What was worked out from the note at `rel` as it was."""
        derived = self.state.derived
        derived.seal_holds.pop(rel, None)
        if old is not None:
            derived.seal_hashes.pop((old.id, rel), None)

    def _replace(self, rel: str, new: Decision, fresh: VaultState) -> None:
        state = self.state
        state.stat_keys = None  # no longer what a walk would find
        position = self._position[rel]
        old = state.decisions[position]
        state.decisions[position] = new
        group = self._notes_by_id[new.id]
        group[group.index(old)] = new
        state.by_id()[new.id] = group[-1]  # as `by_id` builds it: the last note with that id
        duplicated = state.derived.duplicate_ids
        if duplicated is not None and new.id in duplicated:
            duplicated[new.id] = list(group)
        state.derived.seal_hashes.pop((new.id, rel), None)
        state.properties[rel] = fresh.properties[rel]
        state.property_lines[rel] = fresh.property_lines[rel]
        state.body_lines[rel] = fresh.body_lines[rel]
        if rel in fresh.problems:
            if rel in state.problems:
                state.problems[rel] = fresh.problems[rel]
            else:
                state.problems = _inserted(state.problems, rel, fresh.problems[rel])
        elif rel in state.problems:
            del state.problems[rel]

    def _remove(self, rel: str) -> None:
        state = self.state
        state.stat_keys = None  # no longer what a walk would find
        position = self._position.get(rel)
        if position is not None:
            del state.decisions[position]
        state.broken = [error for error in state.broken if error.path != rel]
        for table in (state.problems, state.properties, state.property_lines, state.body_lines):
            table.pop(rel, None)
        if rel in self._files and not (state.root / rel).exists():
            self._files.discard(rel)
            state.files.remove(rel)
            self._notes_end -= 1
            self.state.derived.note_index = None

    def _insert(self, rel: str, fresh: VaultState) -> None:
        state = self.state
        state.stat_keys = None  # no longer what a walk would find
        for decision in fresh.decisions:
            state.decisions.insert(bisect.bisect(state.decisions, walk_key(rel), key=lambda d: walk_key(d.path)),
                                   decision)
        for error in fresh.broken:
            state.broken.insert(bisect.bisect(state.broken, walk_key(rel), key=lambda e: walk_key(e.path or "")),
                                error)
        for name in ("problems", "properties", "property_lines", "body_lines"):
            table = getattr(fresh, name)
            if rel in table:
                setattr(state, name, _inserted(getattr(state, name), rel, table[rel]))
        if rel not in self._files:
            self._files.add(rel)
            at = bisect.bisect(state.files, walk_key(rel), hi=self._notes_end, key=walk_key)
            state.files.insert(at, rel)
            self._notes_end += 1
            self.state.derived.note_index = None

    def _read_ledger(self) -> set[str] | None:
        """The records the events appended since the last look belong to; None when the ledger changed
        otherwise (rewritten from outside, or an older line without a record): then all are worked out again."""
        ledger = self.ws.vault.ledger
        appended = ledger.appended_since(self._events, self._last_event)
        self.known = self.ws.histories()
        if appended is None:
            events = ledger.read()
            self._events, self._last_event = len(events), events[-1] if events else None
            return None
        if appended:
            self._events, self._last_event = self._events + len(appended), appended[-1]
        if any(event.record is None for event in appended):
            return None
        return {event.record for event in appended if event.record is not None}

    def _update_records(self, records: set[str]) -> set[str]:
        """Index again the records that gained events; returns their ids, before and after."""
        ids: set[str] = set()
        for record in sorted(records, key=lambda r: self._order.get(r, len(self._order))):
            history = self.known[record]
            if record not in self._order:
                self._order[record] = len(self._order)
            else:
                old_id, old_path = self._indexed[record]
                ids.add(old_id)
                self._records_by_id[old_id].remove(record)
                self._records_at[old_path].remove(record)
            ids.add(history.id)
            for rel in (self._indexed.get(record, ("", ""))[1], history.path or ""):
                self.touched_at[rel] = self.version  # a note there may be this record's, its id changed in place
            self._indexed[record] = (history.id, history.path or "")
            _add_in_order(self._records_by_id.setdefault(history.id, []), record, self._order)
            _add_in_order(self._records_at.setdefault(history.path or "", []), record, self._order)
        return ids

    # -- indexes ---------------------------------------------------------------------------

    def _index_notes(self) -> None:
        state = self.state
        self._position = {decision.path: index for index, decision in enumerate(state.decisions)}
        self._notes_by_id: dict[str, list[Decision]] = {}
        for decision in state.decisions:
            self._notes_by_id.setdefault(decision.id, []).append(decision)
        self._files = set(state.files)
        self._notes_end = next((index for index, rel in enumerate(state.files) if not rel.endswith(".md")),
                               len(state.files))

    def _index_records(self) -> None:
        self._order = {record: index for index, record in enumerate(self.known)}  # the ledger's order
        self._indexed: dict[str, tuple[str, str]] = {}  # record -> (id, latest path) as indexed
        self._records_by_id: dict[str, list[str]] = {}
        self._records_at: dict[str, list[str]] = {}
        for record, history in self.known.items():
            self._indexed[record] = (history.id, history.path or "")
            self._records_by_id.setdefault(history.id, []).append(record)
            self._records_at.setdefault(history.path or "", []).append(record)

    def _tie_all(self) -> None:
        self.ties: dict[str, History] = tie_notes(self.state.decisions, self.known.values(), self._seal_hash)
        self._tied_at = {history.record: path for path, history in self.ties.items()}
        self._summaries: dict[str, tuple[History, RecordSummary]] = {}
        self._install()

    def _retie(self, ids: set[str]) -> None:
        """Tie again the notes and records of `ids` (`tie_notes` works id by id, so the rest stand)."""
        for rel in self.written:
            self._untie(rel)
        for decision_id in ids:
            group = self._notes_by_id.get(decision_id, [])
            for decision in group:
                self._untie(decision.path)
                self.touched_at[decision.path] = self.version
            records = [self.known[record] for record in self._records_by_id.get(decision_id, ())]
            if group and records:
                for rel, history in tie_notes(group, records, self._seal_hash).items():
                    self.ties[rel] = history
                    self._tied_at[history.record] = rel
        self._install()

    def _untie(self, rel: str) -> None:
        history = self.ties.pop(rel, None)
        if history is not None and self._tied_at.get(history.record) == rel:
            del self._tied_at[history.record]

    def _install(self) -> None:
        """Hand the ties to the workspace's readers (`history_of`, `summary_of`) as their memos of this state."""
        self.state.derived.history_ties = (self.known, self.ties)
        self.state.derived.summary_ties = self._summary_ties

    def summary(self, rel: str) -> RecordSummary:
        history = self.ties[rel]
        memo = self._summaries.get(rel)
        if memo is None or memo[0] is not history:
            memo = self._summaries[rel] = (history, RecordSummary.of(history))
        return memo[1]

    def _seal_hash(self, decision: Decision) -> str:
        return self.ws.seal_hash_of(self.state, decision)

    # -- paths ---------------------------------------------------------------------------------

    def _relative(self, path: Path) -> str | None:
        try:
            return relative(self.state.root, path)
        except ValueError:
            return None

    def _scanned(self, rel: str) -> bool:
        """Whether `Vault.load` reads a note at `rel` (as `iter_markdown` walks the vault)."""
        parts = rel.split("/")
        if not rel.endswith(".md") or any(part.startswith(".") or part in SKIPPED_FOLDERS for part in parts):
            return False
        return not any("/".join(parts[:depth]) in self._skipped for depth in range(1, len(parts)))

    def _ledger_stat(self) -> Any:
        return self.ws.vault.ledger.stat_key()  # every device's file, in the shared layout


def _stat_key(path: str) -> StatKey | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return stat_key(found)


class _Summaries(Mapping[str, RecordSummary]):
    """The ledger's summary of the record each note is tied to, worked out when asked for (`summary_of`)."""

    def __init__(self, live: LiveState) -> None:
        self._live = live

    def __getitem__(self, rel: str) -> RecordSummary:
        return self._live.summary(rel)

    def __iter__(self) -> Iterator[str]:
        return iter(self._live.ties)

    def __len__(self) -> int:
        return len(self._live.ties)


def _inserted(table: dict[str, T], rel: str, value: T) -> dict[str, T]:
    """`table` with `rel` added where the walk of the vault meets it (tables keep that order)."""
    items = list(table.items())
    at = bisect.bisect(items, walk_key(rel), key=lambda item: walk_key(item[0]))
    return dict([*items[:at], (rel, value), *items[at:]])


def _add_in_order(records: list[str], record: str, order: Mapping[str, int]) -> None:
    records.insert(bisect.bisect(records, order[record], key=order.__getitem__), record)


@contextlib.contextmanager
def writing_on(ws: Workspace, state: VaultState, read_started: int) -> Iterator[LiveState]:
    """For a command that records one step (`ask`, `rule`), which read the vault for writing itself (`state`,
    read from `read_started` on, under the ledger's lock held since: `Workspace.state_for_write`) and checked
    what it read before writing: the live view is set up only once the step is certain, so a step refused pays
    nothing for it. Once the step is written, the view reads again only what it wrote and the pages rebuilt
    next are made from it (`Workspace.written`), instead of from a second walk of the vault."""
    with LiveState(ws, load=lambda: state, read_started=read_started) as live:
        yield live
        live.refresh_with_keys()
        ws.written(live.state)
