"""The ledger's files: appending events under a cross-platform lock, flushed to disk, and reading them back.

In the shared layout each device appends to a file of its own in `vault-tools/ledger/` and all are read as
one; in the hidden layout there is one `.vault-tools/ledger.jsonl`. A torn last line (a kill mid-write) is
reported; the next writer on the device that wrote it, holding the lock, cuts it off (its events were never
acknowledged) and keeps the cut bytes. No complete line is ever dropped or rewritten. The line format is
`ledger_lines`; what the events say of each record, `history`.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import pickle
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from . import durable, state_memo
from .errors import InconsistentVault
from .history import History, RecordSummary, extend_histories, histories, placed
from .ledger_file import LedgerFile, Look, ends_a_line, start_of_last_line, whole_json
from .ledger_lines import Event, event_line, id_marks_from, parse_line
from .ledger_lock import LedgerLock, LockTimeout
from .ledger_memo import Origin, keep_events, memo_key_of, recall_events
from .model import Status
from .record_files import (
    KEPT_FOLDER,
    LEDGER_COPIES_FOLDER,
    LEDGER_LOCK,
    LEDGER_SUFFIX,
    LEGACY_LEDGER,
    RACY_NANOSECONDS,
    settled_by,
)

# In the state folder: the ledger's events and histories as a whole read of its files as they are made them
EVENTS_MEMO = "cache/ledger-events.pickle"
HISTORIES_MEMO = "cache/ledger-histories.pickle"
RECORDS_MEMO = "cache/ledger-records.json"  # each record's summary (`summaries`), JSON
VERIFIED_MEMO = "cache/ledger-verified.pickle"  # the files' stat keys as a whole read verified them, signed
LOCK_TIMEOUT_SECONDS = 30


# A file or folder looked at within this long of its last change may change again within the same tick of the
# file system's clock (two seconds on FAT) without its times showing it: what was read of it is not trusted
# later on its times alone (git treats its index the same way).


# docs/design/0025-the-shared-layout.md
class Ledger:
    """The vault's ledger: one file (the hidden layout), or one file per device read as a union (the shared
    layout: each device appends to its own file only, so no carrier ever has two versions of one to pick
    from). In the union, events are ordered by their `clock` (one more than the highest clock the writing
    device had read), so what a device had seen when it wrote comes before what it wrote, whatever the
    machines' clocks say; then by file and line."""

    def __init__(self, state_dir: Path, display_path: str = ".vault-tools/ledger.jsonl", *,
                 shared_dir: Path | None = None, device: Callable[[bool], str | None] | None = None,
                 kept_dir: Path | None = None) -> None:
        self.local_dir = state_dir
        self.kept_dir = kept_dir if kept_dir is not None else state_dir / KEPT_FOLDER
        self.torn_lines_kept: list[Path] = []  # torn last lines this process cut off, as kept
        # Its memos kept under `.vault-tools/cache/`; not by a reader kept from command to command (the resident
        # process): it keeps them in memory, and the commands' own processes and the watcher write them
        self.writes_memos = True
        self.shared_dir = shared_dir
        self._device = device
        self._lock_path = state_dir / LEDGER_LOCK
        self._lock: LedgerLock | None = None  # made on first use: only writers lock
        self._files: dict[Path, LedgerFile] = {}
        self._legacy = LedgerFile(state_dir / LEGACY_LEDGER, display_path)
        self._own: LedgerFile | None = None if shared_dir is not None else self._legacy
        self._merged: tuple[Any, list[Event]] | None = None  # (the files' stat keys, the events as read)
        # (the files' stat keys, event count, histories, last event): appends extend the histories
        self._histories_memo: tuple[Any, int, dict[str, History], Event | None] | None = None
        self._histories_kept: tuple[dict[str, History], dict[str, bytes], Any] | None = None  # as the memo held them
        self._events_origin: Origin | None = None  # where the events memo recalled came from (`keep_events`)
        # `id_marks` of the events list `_events` keeps, as far as it was looked at: (the list, its length then, marks)
        self._marks: tuple[list[Event], int, tuple[int, frozenset[str]]] | None = None
        self._sync_later = 0  # inside `synced_together`: appends are fsynced by `sync`
        self._unsynced: LedgerFile | None = None
        self._tag: str | None = None  # this device's tag once it has one (it never changes after)
        self._summaries_memo: tuple[Any, list[RecordSummary]] | None = None
        self._clock_memo: tuple[list[Event], int, int] | None = None  # (events as kept, how many, highest clock)
        self._files_memo: tuple[tuple[bool, tuple[str, ...], str | None], list[LedgerFile]] | None = None
        # (the folder's key, trusted, the names, when listed: monotonic seconds)
        self._listing: tuple[tuple[int, int, int], bool, tuple[str, ...], float] | None = None
        self._appends = 0  # how many appends this process made: a look taken before one no longer holds
        self._look: Look | None = None  # inside `looked_at_once`: the files as that look found them
        self._kept_look: tuple[Look, int, float] | None = None  # the last look, the appends then, when (monotonic)

    @property
    def shared(self) -> bool:
        return self.shared_dir is not None

    @property
    def own(self) -> LedgerFile:
        """The file this device appends to."""
        if self._own is None:
            assert self.shared_dir is not None and self._device is not None
            path = self.shared_dir / f"{self._device(True)}{LEDGER_SUFFIX}"
            self._own = self._file(path)
            self._own.in_transit_ok = False
        return self._own

    def own_name(self) -> str | None:
        """The name of this device's file, without drawing a tag when it has none yet."""
        if self._own is not None:
            return self._own.path.name
        if self._tag is None and self._device is not None:
            self._tag = self._device(False)
        return f"{self._tag}{LEDGER_SUFFIX}" if self._tag else None

    @property
    def path(self) -> Path:
        return self.own.path

    @property
    def display_path(self) -> str:
        return self.own.display_path

    def _file(self, path: Path) -> LedgerFile:
        found = self._files.get(path)
        if found is None:
            assert self.shared_dir is not None
            own = self._own is not None and self._own.path == path
            display = f"{self.shared_dir.parent.name}/{self.shared_dir.name}/{path.name}"
            found = self._files[path] = LedgerFile(path, display, in_transit_ok=not own)
        return found

    def files(self) -> list[LedgerFile]:
        """Every file the ledger is read from, in reading order (the hidden layout's file first, when a
        vault moved to the shared layout still has one)."""
        if self.shared_dir is None:
            return [self._legacy]
        if self._look is not None:
            return list(self._look.files)
        names = self._listed(self.shared_dir)
        seen = (os.path.exists(self._legacy.fspath), names, self.own_name())
        if self._files_memo is not None and self._files_memo[0] == seen:
            return list(self._files_memo[1])
        found = [self._legacy] if seen[0] else []
        for name in names:
            file = self._file(self.shared_dir / name)
            file.in_transit_ok = name != seen[2]
            found.append(file)
        self._files_memo = (seen, found)
        return list(found)

    def _listed(self, folder: Path) -> tuple[str, ...]:
        """The names of the ledger files in `folder` (none while it does not exist), listed again only when it
        may have changed since: its times or inode differ from the last listing's, that listing was made
        within the racy window of the folder's last change (a file may have come in the same tick of the file
        system's clock), or it is a second old (a file system whose folders' times do not move when a file
        comes: another device's file is then read at most a second late, as if it had come a second later).
        Every append and every look at the ledger asks, a first reconcile thousands of times. A folder that
        cannot be listed raises: an append on a ledger read as empty would misplace its events."""
        if self._listing is not None and time.monotonic() - self._listing[3] > 1:
            self._listing = None  # a second old
        try:
            found = os.stat(folder)
        except FileNotFoundError:
            return ()
        key = (found.st_mtime_ns, found.st_ctime_ns, found.st_ino)
        if self._listing is not None and self._listing[0] == key and self._listing[1]:
            return self._listing[2]
        listed_at, listed_since = time.time_ns(), time.monotonic()
        try:
            names = tuple(sorted(name for name in os.listdir(folder) if name.endswith(LEDGER_SUFFIX)))
        except FileNotFoundError:  # removed since it was stat'ed: as if it had never been there
            return ()
        self._listing = (key, listed_at - max(key[0], key[1]) > RACY_NANOSECONDS, names, listed_since)
        return names

    @contextmanager
    def looked_at_once(self, kept_for: float = 0.0) -> Iterator[None]:
        """Inside, the ledger's files are listed and their sizes and times taken once: each read is of the
        ledger as that look found it, as if what arrives meanwhile came just after (the next look sees it).
        For a step that asks of the ledger several ways at once (a live view brought up to date after each
        note it writes: a first reconcile does it thousands of times). An append ends the look. `kept_for`
        (seconds): a look taken that recently, with no append since, is taken again as it was, as if what
        arrived since came just after it (a reconcile looks after each of thousands of steps, and another
        device's events arrive between two of them at any moment anyway)."""
        outer, appends = self._look, self._appends
        if outer is None:
            kept, now = self._kept_look, time.monotonic()
            if kept is not None and kept[1] == appends and now - kept[2] < kept_for:
                self._look = kept[0]
            else:
                self._look = self._looked()
                self._kept_look = (self._look, appends, now)
        try:
            yield
        finally:
            self._look = outer if self._appends == appends else None

    def kept_key(self, kept_for: float) -> Any:
        """The stat key of the look `looked_at_once(kept_for)` would take again now without looking (None: it
        would look anew): a caller that wants only to know whether the ledger changed need not enter one."""
        kept = self._kept_look
        if self._look is None and kept is not None and kept[1] == self._appends and \
                time.monotonic() - kept[2] < kept_for:
            return kept[0].stat_key
        return None

    def _looked(self) -> Look:
        files = self.files()
        key = self._files_key(files)
        if self.shared_dir is None:
            return Look(files, key, key[0][1])
        return Look(files, key, [(os.path.basename(path), stat) for path, stat in key] or None)

    def look_again(self) -> None:
        """The next look at the ledger's files is a new one (see `looked_at_once`'s `kept_for`): a live view
        starting does not take over the look a view before it took."""
        self._kept_look = None

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the ledger lock: id allocation, note writes and appends happen inside it."""
        if durable.writes_declined():  # a try, which writes nothing: its caller holds the lock (`resident.answer_there`)
            self._cut_torn_tail()  # which declines where there is a torn line to cut
            yield
            return
        if self._lock is None:
            self._lock = LedgerLock(self._lock_path, LOCK_TIMEOUT_SECONDS)
        try:
            self.local_dir.mkdir(parents=True, exist_ok=True)
            with self._lock:
                self._cut_torn_tail()
                yield
        except LockTimeout:
            raise InconsistentVault(
                f"another vault-tools process has held the ledger lock for {LOCK_TIMEOUT_SECONDS} s",
                path=self.display_path if not self.shared else str(LEDGER_LOCK)) from None

    # docs/design/0017-torn-and-removed-ledger-lines.md
    def _cut_torn_tail(self) -> None:
        """With the lock held: a last line without its newline in this device's own file is an append that a
        kill cut short (no other process writes that file, and this one writes only under the lock). Its
        events were never acknowledged and nothing was written after them, so the line is cut off, its bytes
        kept under `kept/`. A complete event that only lacks the newline gets it instead."""
        name = self.own_name()
        if name is None:
            return
        path = self._legacy.path if self.shared_dir is None else self.shared_dir / name
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            return
        if size == 0:
            return
        with open(path, "r+b", buffering=0) as handle:  # the lock is held: nothing else writes it now
            handle.seek(size - 1)
            if handle.read(1) == b"\n":
                return
            durable.may_write(path)
            start = start_of_last_line(handle, size)
            handle.seek(start)
            tail = handle.read()
            try:
                parse_line(tail.decode("utf-8").rstrip("\r"), 0, str(path))
                handle.write(b"\n")
            except (UnicodeDecodeError, InconsistentVault):
                if start == 0 or whole_json(tail):  # no line before it, or a whole line changed: refused
                    return
                self.kept_dir.mkdir(parents=True, exist_ok=True)
                stamp = dt.datetime.now().strftime("%Y-%m-%d %H%M%S")
                kept = self.kept_dir / f"torn ledger line {name} {stamp} {os.getpid()}.txt"
                kept.write_bytes(tail)
                handle.truncate(start)
                self.torn_lines_kept.append(kept)
            os.fsync(handle.fileno())

    # docs/design/0019-writes-made-durable-together.md
    @contextmanager
    def synced_together(self) -> Iterator[None]:
        """Appends inside the block reach the file at once (any reader, and this process after a kill -9, sees
        them) but are made durable together: before the next note is written and when the block ends. After a
        power cut the disk then never holds a note written after an event it lacks, as with one fsync per
        append, for one fsync per burst of appends."""
        self._sync_later += 1
        try:
            with durable.before_writes(self.sync):
                yield
        finally:
            self._sync_later -= 1
            try:
                self.sync()
            finally:
                if not self._sync_later and self._own is not None:
                    self._own.close()

    def sync(self) -> None:
        """Make what was appended durable (see `synced_together`)."""
        if self._unsynced is not None:
            self._unsynced.sync()
            self._unsynced = None

    def _files_key(self, files: list[LedgerFile]) -> tuple[tuple[str, Any], ...]:
        return tuple((str(file.path), file.stat_key()) for file in files)

    def read(self) -> list[Event]:
        """Every event, verified. A long-running process re-reads only what changed."""
        return list(self._events())

    def verify(self) -> None:
        """Raises as `read` does where the ledger is torn or was changed (what stops every write), without
        reading its events where this user's code verified its files as they are now (`VERIFIED_MEMO`: a
        command refused before it writes does not pay for reading the events)."""
        self._verified_marks()

    def id_marks(self) -> tuple[int, frozenset[str]]:
        """The highest number of any id the events name (as `id` or `was`: an id handed out once is never handed
        out again) and the device tags of those ids; read and verified as `verify` does."""
        return self._verified_marks()

    def _verified_marks(self) -> tuple[int, frozenset[str]]:
        if self._merged is None and self._look is None:  # a first look in this process: the stamp may do
            files = self.files()
            key, memo_key, stamp = self._files_key(files), memo_key_of(files), self.local_dir / VERIFIED_MEMO
            kept = state_memo.recall(stamp, memo_key) if key else None
            if isinstance(kept, tuple) and len(kept) == 2 and kept[0] == key:
                return kept[1]  # type: ignore[no-any-return]
            read_at = time.time_ns()
            events = self._events()
            marks = self._marks_of(events)
            if key and self._merged is not None and self._merged[0] == key:
                self._remember(stamp, key, read_at, lambda: state_memo.keep(stamp, memo_key, (key, marks)))
            return marks
        return self._marks_of(self._events())

    def _marks_of(self, events: list[Event]) -> tuple[int, frozenset[str]]:
        """`id_marks` of `events`, the list `_events` keeps: only the events appended to it since the last call
        are looked at (it is only ever extended; another read makes another list)."""
        kept = self._marks
        extended = kept is not None and kept[0] is events and kept[1] <= len(events)
        start, top, tags = (kept[1], kept[2][0], set(kept[2][1])) if kept and extended else (0, 0, set())
        marks = id_marks_from(events[start:], top, tags)
        self._marks = (events, len(events), marks)
        return marks

    def appended_since(self, count: int, last: Event | None) -> list[Event] | None:
        """The events after the first `count`, when those are still the events this process read (`last` the
        count-th); None when the ledger changed otherwise (then read it all)."""
        events = self._events()
        if len(events) < count or (count and events[count - 1] is not last):
            return None
        return events[count:]

    def _events(self) -> list[Event]:
        """`read` without the copy: the list this process keeps, not to be changed by the caller."""
        if self._look is not None:
            files, key = list(self._look.files), self._look.key
        else:
            files = self.files()
            key = self._files_key(files)
        if self._merged is not None and self._merged[0] == key:
            return self._merged[1]
        first = self._merged is None  # after it, a file unchanged since is not read again: no memo needed
        memo_key = memo_key_of(files)
        remembered = recall_events(self.local_dir / EVENTS_MEMO, memo_key) if first else None
        if remembered is not None:
            (kept_key, kept_merged, each), self._events_origin = remembered
            for file, read in zip(files, each, strict=True):
                file.take_read(read)  # as it is, or the start of what it holds now (appended to since)
            if kept_key == key:
                self._merged = (key, kept_merged)
                return kept_merged
        read_at = time.time_ns()
        merged = self._merge(files)
        self._merged = (key, merged)
        if first and self._read_as(files, key):
            self._remember(self.local_dir / EVENTS_MEMO, key, read_at, lambda: keep_events(self.local_dir / EVENTS_MEMO,
                           memo_key, (key, merged, [file.as_read() for file in files]), self._events_origin))
        return merged

    def _remember(self, path: Path, key: tuple[tuple[str, Any], ...], read_at: int, keep: Callable[[], None]) -> None:
        """Keep (`keep`) the memo at `path` made from the files as `key` found them, unless one was written within
        the racy window before they were read (a later write in the same clock tick could leave its key as it
        was). Not on a first read with no cache at all (a new clone, a cleared cache): the next command keeps it."""
        if not self.writes_memos or (not path.exists() and not (self.local_dir / RECORDS_MEMO).exists()):
            return
        if self.local_dir.is_dir() and all(settled_by(file_key, read_at) for _, file_key in key if file_key is not None):
            keep()

    def _merge(self, files: list[LedgerFile]) -> list[Event]:
        """Every event of `files`, in the ledger's order."""
        if self.shared_dir is None:
            return self._legacy.read()  # read positions them by line
        ordered: list[tuple[int, int, int, Event]] = []
        for rank, file in enumerate(files):
            for event in file.read():
                ordered.append((event.clock or 0, rank, event.line or 0, event))
        seen: set[Event] = set()
        merged: list[Event] = []
        for _, _, _, event in sorted(ordered, key=lambda item: item[:3]):
            if event in seen:  # the same line in two files (a vault moved on two clones) is one event
                continue
            seen.add(event)
            merged.append(placed(event, position=len(merged) + 1))
        return merged

    def append(self, events: Iterable[Event]) -> None:
        """Append events; the caller holds `locked()` and has read (so verified) the ledger.

        A torn last line was cut off when the lock was taken (`locked`).
        """
        events = list(events)
        if not events:
            return
        self._look = None  # what this process writes is seen by every read after it
        self._appends += 1
        current = self._events()  # verified, and the view the appended events extend
        before = self._merged
        if self.shared_dir is not None:
            clock = self._top_clock(current)
            events = [placed(event, clock=clock + index) for index, event in enumerate(events, 1)]
        own = self.own
        numbered = own.append(events, durable=not self._sync_later)
        self._mirrored(own, "".join(event_line(event) for event in events).encode("utf-8"))
        if self._sync_later:
            self._unsynced = own
        # The appended events have the highest clocks, so they come last in the union too.
        if numbered is not None and before is not None and self._merged is before:
            if self.shared_dir is None:  # one file: positions are its lines, and its key is known
                before[1].extend(numbered)
                self._merged = (((str(own.path), own.known_key()),), before[1])
            else:
                before[1].extend(placed(event, position=len(before[1]) + index)
                                 for index, event in enumerate(numbered, 1))
                self._merged = (self._key_after_append(before[0], own), before[1])
        else:
            self._merged = None

    def copy_of(self, file: LedgerFile) -> Path:
        """This device's copy of a ledger file (`tripwire`): what the file held when vault-tools last wrote or
        checked it, so that lines another program took out can be put back, with or without git."""
        return self.local_dir / LEDGER_COPIES_FOLDER / file.path.name

    def _mirrored(self, file: LedgerFile, payload: bytes) -> None:
        """What an append wrote, written to the file's copy too (the whole file, for a copy not made yet or cut
        short). A copy left behind by a crash lacks lines, and the tripwire reads whole lines only: it never puts
        back one that was not written."""
        copy = self.copy_of(file)
        try:
            if copy.exists() and ends_a_line(copy):
                caller = durable.caller_writes()
                if caller is not None:  # a command run by the resident process: its caller writes the copy too
                    caller.append(copy, payload, copy.stat().st_size)
                    return
                with open(copy, "ab") as handle:
                    handle.write(payload)
            else:  # no copy yet, or one a kill or a full disk cut short: made again from the file
                copy.parent.mkdir(parents=True, exist_ok=True)
                durable.write_atomic(copy, file.path.read_bytes())
        except OSError:
            pass  # a copy is a safeguard: a full disk or a read-only folder must not stop the record's own write

    def _key_after_append(self, key: tuple[tuple[str, Any], ...], own: LedgerFile) -> tuple[tuple[str, Any], ...]:
        """The files' key `key` (as the append found them) with this device's file as it is after the append:
        the change it made. Looked at anew when that file is not in it (the append made it)."""
        path = str(own.path)
        if not any(name == path for name, _ in key):
            self._listing = None  # the append made the file: listed again, whatever the folder's times say
            return self._files_key(self.files())
        return tuple((name, own.known_key() if name == path else stat) for name, stat in key)

    def _top_clock(self, events: list[Event]) -> int:
        """The highest clock of `events` (the list `_events` keeps): worked out once for a list as read, then
        only over what appends added to it (each append would otherwise go through the whole ledger)."""
        memo = self._clock_memo
        if memo is not None and memo[0] is events and memo[1] <= len(events):
            top = max((event.clock or 0 for event in events[memo[1]:]), default=memo[2])
            top = max(top, memo[2])
        else:
            top = max((event.clock or 0 for event in events), default=0)
        self._clock_memo = (events, len(events), top)
        return top

    def stat_key(self) -> Any:
        """What changes whenever any ledger file does (sizes, times, inodes)."""
        if self._look is not None:
            return self._look.stat_key
        if self.shared_dir is None:
            return self._legacy.stat_key()
        keys = [(str(file.path.name), file.stat_key()) for file in self.files()]
        return keys or None

    def histories(self) -> dict[str, History]:
        """Every record, by identity: the same object for as long as the ledger files are unchanged."""
        memo = self._histories_memo
        key = self.stat_key()
        if memo is not None and memo[0] is not None and memo[0] == key:
            return memo[2]  # the files are as they were: no need to look at their events
        files, files_key = self._files_and_key()
        if memo is None:  # a first look in this process: an earlier one may have kept them
            remembered = state_memo.recall_mapping(self.local_dir / HISTORIES_MEMO, memo_key_of(files))
            rest = remembered[0].pop(None, None) if remembered is not None else None  # each record pickled apart,
            if remembered is not None and rest is not None and remembered[0].keys() == set(rest[3]):  # the rest: None
                kept_key, count, kept_last, order = rest  # the ledger's order (in the mapping a delta's come last)
                kept = {record: pickle.loads(remembered[0][record]) for record in order}  # signed: see state_memo
                self._histories_kept = (kept, *remembered)
                memo = (kept_key, count, kept, kept_last)  # extended below when lines were appended since
                if kept_key == files_key:
                    self._histories_memo = (key, count, kept, kept_last)
                    return kept
        first = self._histories_memo is None
        read_at = time.time_ns()
        events = self._events()
        found: dict[str, History] | None = None
        if memo is not None and 0 < memo[1] < len(events) and events[memo[1] - 1] == memo[3]:
            found = extend_histories(memo[2], events[memo[1]:])  # only appended to
        if found is None:
            found = histories(events)
        last = events[-1] if events else None
        self._histories_memo = (key, len(events), found, last)
        if first and self._read_as(files, files_key):
            self._remember(self.local_dir / HISTORIES_MEMO, files_key, read_at, lambda: self._keep_histories(
                memo_key_of(files), (files_key, len(events), last, tuple(found)), found))
        return found

    def _keep_histories(self, memo_key: Any, rest: tuple[Any, ...], found: dict[str, History]) -> None:
        """Each record pickled apart (`history` takes one alone), and under None the rest, the records' order with
        it; only those that changed since the memo was recalled are pickled and kept anew (`keep_mapping`)."""
        held, pickled, origin = self._histories_kept or ({}, {}, None)
        mapping: dict[str, Any] = {record: pickled[record] if held.get(record) is h else
                                   pickle.dumps(h, pickle.HIGHEST_PROTOCOL) for record, h in found.items()}
        changed: list[str | None] = [None, *(record for record, one in mapping.items() if one is not pickled.get(record)),
                                     *(record for record in pickled if record not in mapping)]
        state_memo.keep_mapping(self.local_dir / HISTORIES_MEMO, memo_key, {**mapping, None: rest}, origin, changed)

    def _files_and_key(self) -> tuple[list[LedgerFile], tuple[tuple[str, Any], ...]]:
        """The ledger's files and their key, as the look in force found them, else as they are now."""
        files = list(self._look.files) if self._look is not None else self.files()
        return files, self._look.key if self._look is not None else self._files_key(files)

    def history(self, record: str) -> History | None:
        """One record (`histories()[record]`), from the memo without the others' events where it holds them."""
        memo = self._histories_memo
        if memo is None or memo[0] != self.stat_key():
            files, files_key = self._files_and_key()
            remembered = state_memo.recall_mapping(self.local_dir / HISTORIES_MEMO, memo_key_of(files))
            if remembered is not None and remembered[0].get(None, (None,))[0] == files_key:
                one = remembered[0].get(record)
                return pickle.loads(one) if one is not None else None
        return self.histories().get(record)

    @staticmethod
    def _read_as(files: list[LedgerFile], key: tuple[tuple[str, Any], ...]) -> bool:
        """Whether each file's events were read from the file as `key` found it."""
        return len(files) == len(key) and all(
            (found := file.as_read()) is not None and found.key == file_key for file, (_, file_key) in zip(files, key, strict=True))

    def statuses(self) -> dict[str, Status]:
        """Each id's status where the ledger has one, for readers that know notes by id alone (where two
        records share an id, the later one's; a record in conflict has none)."""
        return {s.id: s.status for s in self.summaries() if s.status is not None and s.conflict is None}

    def summaries(self) -> list[RecordSummary]:
        """What each record stands at (id, status, paths, seal, conflict). Remembered in
        `.vault-tools/cache/` against the ledger files' sizes and times, so reading it costs nothing
        while the ledger is unchanged."""
        key = self.stat_key()
        if key is None:
            return []
        key = json.loads(json.dumps(key))
        if self._summaries_memo is not None and self._summaries_memo[0] == key:
            return list(self._summaries_memo[1])
        found = self._summaries_of(key)
        self._summaries_memo = (key, found)
        return list(found)

    def _summaries_of(self, key: Any) -> list[RecordSummary]:
        memo = self.local_dir / RECORDS_MEMO
        try:
            stored = json.loads(memo.read_text(encoding="utf-8"))
            if stored.get("key") == key:
                return [RecordSummary.from_json(item) for item in stored["records"]]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass
        found = [RecordSummary.of(history) for history in self.histories().values()]
        if not self.local_dir.is_dir() or not self.writes_memos:
            return found  # a clone this device never wrote in: a read writes nothing there (nor do the other caches)
        try:
            memo.parent.mkdir(exist_ok=True)
            temp = memo.with_suffix(f".{os.getpid()}.tmp")
            temp.write_text(json.dumps({"key": key, "records": [item.to_json() for item in found]}),
                            encoding="utf-8")
            os.replace(temp, memo)
        except OSError:
            pass  # derived data: without it the next run reads the ledger again
        return found

