"""The append-only ledger (`.vault-tools/ledger.jsonl`) and seal hashes.

Every line is one JSON event carrying its own checksum (`sum`), so a changed
line is found on its own, and a merge of two machines' ledgers (git's
`merge=union`) stays valid line by line. Appends happen under a cross-platform
lock and are flushed to disk. A torn last line (a kill mid-write) is reported; the next
writer on the device that wrote it, holding the lock, cuts it off (its events were never
acknowledged) and keeps the cut bytes. No complete line is ever dropped or rewritten.
"""
from __future__ import annotations

import datetime as dt
import errno
import functools
import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple, Protocol, TypeVar

from .dates import instant
from .errors import InconsistentVault
from .model import (
    SEALED_FIELDS,
    SEALED_WHEN_SET,
    Decision,
    Resolve,
    Status,
    answer_of,
    leading_id,
    link_target,
    name_key,
)
from .notes import StatKey, stat_key

LEDGER_FILE = "ledger.jsonl"
LEDGER_SUFFIX = ".jsonl"
LOCK_FILE = "ledger.lock"
LOCK_TIMEOUT_SECONDS = 30


# What each event says about a note's status.
STATUS_AFTER = {
    "asked": Status.OPEN,
    "ruled": Status.RULED,
    "superseded": Status.SUPERSEDED,
    "withdrawn": Status.WITHDRAWN,
    "retracted": Status.RETRACTED,
}


# A file or folder looked at within this long of its last change may change again within the same tick of the
# file system's clock (two seconds on FAT) without its times showing it: what was read of it is not trusted
# later on its times alone (git treats its index the same way).
RACY_NANOSECONDS = 2_000_000_000


@dataclass(frozen=True)
class Event:
    event: str
    id: str
    at: str  # UTC, ISO 8601 with Z
    actor: str
    path: str
    hash: str | None = None
    text: str | None = None  # the note's full text, for events that fix its content
    reason: str | None = None
    successor: str | None = None
    supersedes: tuple[str, ...] = ()
    alongside: tuple[str, ...] = ()  # ids of the current rulings a ruling stands beside
    origin: str | None = None  # on `imported`: the foreign record it came from ("adr:...", "owner-ask:R-003")
    # On `asked`: the question's summary and topics (its full text is in `text`), so its history
    # outlives the note. Left out when empty, so lines written before they existed keep their checksums.
    summary: str | None = None
    topics: tuple[str, ...] = ()
    # On `asked`: ids the asker checked and said are a different matter (`ask --not-the-same ID`); left out when empty.
    not_the_same: tuple[str, ...] = ()
    record: str | None = None  # the record's identity, fixed at its first event (older lines: derived)
    was: str | None = None  # `renumbered`: the id the record had before
    outcome: str | None = None  # `settled`: the status the owner kept
    # `settled`: the checksums of every event of the record the settling clone knew, so what it decided does
    # not depend on the order lines end up in after a merge; left out when empty (older `settled` lines know
    # every line before them).
    settles: tuple[str, ...] = ()
    # In the shared layout: one more than the highest clock the writing device had read (see `Ledger`).
    clock: int | None = None
    line: int | None = field(default=None, compare=False)  # in its file
    source: str | None = field(default=None, compare=False)  # the file, as shown
    position: int | None = field(default=None, compare=False)  # in the ledger as read (all files)

    def to_json(self) -> dict[str, Any]:
        """The fields a line holds: those set, the lists as lists (every field is flat: no deep copy needed)."""
        values, data = self.__dict__, {}  # read directly: each appended event is made into a line
        for name in _EVENT_FIELDS:
            value = values[name]
            if value is None:
                continue
            if name in _LIST_FIELDS:
                if not value:
                    continue
                value = list(value)
            data[name] = value
        return data


_EVENT_FIELDS = tuple(f.name for f in fields(Event) if f.name not in ("line", "source", "position"))
_LIST_FIELDS = frozenset(f.name for f in fields(Event) if f.default == ())  # tuples, lists in a line
_LINE_FIELDS = frozenset(_EVENT_FIELDS)  # what a ledger line may hold
_REQUIRED_FIELDS = frozenset(f.name for f in fields(Event) if f.default is MISSING and f.default_factory is MISSING)
_DEFAULTS = {f.name: f.default for f in fields(Event) if f.default is not MISSING}


def _event_of(data: dict[str, Any], number: int, source: str | None) -> Event:
    """`Event(**data, line=number, ...)` for a line's fields, without the generated `__init__`: a frozen
    dataclass sets each of its 23 fields through `object.__setattr__`, a third of reading a ledger line."""
    if not data.keys() <= _LINE_FIELDS or not data.keys() >= _REQUIRED_FIELDS:
        raise TypeError("unknown or missing fields")
    event = object.__new__(Event)
    values = event.__dict__
    values.update(_DEFAULTS)
    values.update(data)
    values["line"] = values["position"] = number
    values["source"] = source
    return event


def _canonical(data: Any) -> str:
    return _CANONICAL.encode(data)


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)  # made once: one per line


def _checksum(canonical: str) -> str:
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


_SUM_MARK = ',"sum":"'


def event_line(event: Event) -> str:
    data = event.to_json()
    encoded = _encoded_ahead.pop(event.text, None) if _encoded_ahead and event.text is not None else None
    if encoded is not None and all(key <= "text" for key in data):  # `text` is the last key: spliced in
        del data["text"]
        body = f'{_canonical(data)[:-1]},"text":{encoded}}}'
    else:
        body = _canonical(data)
    return f'{body[:-1]}{_SUM_MARK}{_checksum(body)}"}}\n'


# Texts of events about to be appended, as JSON, worked out ahead (by a child: see `commands.ahead`) so that
# their lines need not encode them again: at 50,000 notes, encoding texts was a tenth of a first reconcile.
# Keyed by the text itself (the same object, so its hash is worked out once); each is used once.
_encoded_ahead: dict[str, str] = {}


def encode_text(text: str) -> str:
    """`text` as an event's line holds it (see `encoded_ahead`)."""
    return _canonical(text)


def encoded_ahead(text: str, encoded: str) -> None:
    """Remember `encode_text(text)`, worked out elsewhere, for the line of the event that will hold `text`."""
    _encoded_ahead[text] = encoded


def forget_encoded_ahead() -> None:
    _encoded_ahead.clear()


def event_key(event: Event) -> str:
    """The checksum of an event's line: what a `settled` event names the events it knew by."""
    return _checksum(_canonical(event.to_json()))


def parse_line(text: str, number: int, where: str, source: str | None = None) -> Event:
    """One ledger line as an Event; `source` (the file's name as shown) is kept on it."""
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError
        stored = data.pop("sum")
    except (ValueError, KeyError):
        raise InconsistentVault("ledger line is not a checksummed JSON event", path=where, line=number) from None
    head, mark, _ = text.rpartition(_SUM_MARK)
    written_as_is = mark and _checksum(head + "}") == stored  # as `event_line` wrote it: no need to re-encode
    if not written_as_is and _checksum(_canonical(data)) != stored:
        raise InconsistentVault("ledger line was changed after it was written (checksum mismatch)",
                                path=where, line=number)
    try:
        data["supersedes"] = tuple(data.get("supersedes", ()))
        data["alongside"] = tuple(data.get("alongside", ()))
        data["topics"] = tuple(data.get("topics", ()))
        data["not_the_same"] = tuple(data.get("not_the_same", ()))
        data["settles"] = tuple(data.get("settles", ()))
        return _event_of(data, number, source)  # a merge of files renumbers `position`
    except TypeError:
        raise InconsistentVault("ledger line has unknown fields", path=where, line=number) from None


TORN = "torn last line (a write was interrupted)"


def scan_ledger(text: str, where: str, source: str | None = None) -> tuple[list[Event], list[tuple[int, str]]]:
    """Every event that can be read, and every damaged line as (line number, what is wrong)."""
    events: list[Event] = []
    damage: list[tuple[int, str]] = []
    lines = text.split("\n")
    for number, line in enumerate(lines, 1):
        if number == len(lines):
            if line:
                damage.append((number, TORN))
            break
        if not line.strip():
            continue
        try:  # a checkout that turned line endings into CRLF leaves each event as it was
            events.append(parse_line(line.rstrip("\r"), number, where, source))
        except InconsistentVault as error:
            damage.append((number, error.message))
    return events, damage


def parse_ledger(text: str, where: str, source: str | None = None) -> list[Event]:
    """All events in `text`; raises on a torn last line or a damaged one."""
    events, damage = scan_ledger(text, where, source)
    if damage:
        number, message = damage[0]
        if message == TORN:
            message += "; the next write on this device cuts it off (`vault-tools lint --fix` does now)"
        raise InconsistentVault(message, path=where, line=number)
    return events


def _whole_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


def _start_of_last_line(handle: BinaryIO, size: int, chunk: int = 65536) -> int:
    """Where the last line of an open file starts (just after its last newline; 0 when it has none)."""
    end = size
    while end > 0:
        start = max(0, end - chunk)
        handle.seek(start)
        found = handle.read(end - start).rfind(b"\n")
        if found >= 0:
            return start + found + 1
        end = start
    return 0


class LedgerFile:
    """One ledger file: read verified (again only when it changed), appended to under the caller's lock."""

    def __init__(self, path: Path, display_path: str, *, in_transit_ok: bool = False) -> None:
        self.path = path
        self.fspath = str(path)  # as a str: pathlib costs more, and it is looked at on every append
        self.display_path = display_path
        # Another device's file, as a carrier brings it: a torn last line is the part still on its way.
        self.in_transit_ok = in_transit_ok
        self._read_cache: tuple[StatKey, list[Event]] | None = None
        # Kept open between appends that are made durable later (`Ledger.synced_together`), with its inode
        self._handle: tuple[BinaryIO, int] | None = None

    def read(self) -> list[Event]:
        key = self.stat_key()
        if key is None:
            return []
        if self._read_cache is not None and self._read_cache[0] == key:
            return list(self._read_cache[1])
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return []
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InconsistentVault("ledger is not UTF-8", path=self.display_path) from None
        if self.in_transit_ok and not text.endswith("\n") and "\n" in text:
            text = text[:text.rindex("\n") + 1]
        elif self.in_transit_ok and "\n" not in text:
            text = ""
        events = parse_ledger(text, self.display_path, source=self.display_path)
        if len(raw) == key[0]:  # not appended to while being read
            self._read_cache = (key, events)
        return list(events)

    def append(self, events: list[Event], *, durable: bool = True) -> list[Event] | None:
        """Append `events`; fsynced unless `durable` is False (the caller syncs later, see
        `Ledger.synced_together`, and closes the file it keeps open for the next append). Returns them as a
        read would now give them (numbered), when what was read before plus them is the file now; None when
        the file must be read again."""
        payload = "".join(event_line(event) for event in events).encode("utf-8")
        if not payload:
            return []
        before = self.stat_key()
        handle = self._open(before)
        size = handle.seek(0, os.SEEK_END)
        ours = self._read_cache is not None and self._read_cache[0] == before  # ends with a line read or written
        if size > 0 and not ours:
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) != b"\n":
                self.read()  # raises, naming the torn line
            handle.seek(0, os.SEEK_END)
        try:
            written = 0
            while written < len(payload):  # a full disk may take part of a write before it refuses
                step = handle.write(payload[written:])
                if not step:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))
                written += step
            if durable:
                os.fsync(handle.fileno())
        except OSError:  # a full disk: take back a partial line rather than leave it torn
            handle.truncate(size)
            self.close()
            raise
        finally:
            if durable:
                self.close()
        # What was read before plus what was just written is the file now: no need to read it all again.
        if ours and self._read_cache is not None and before is not None and size == before[0]:
            first_line = (self._read_cache[1][-1].line or 0) + 1 if self._read_cache[1] else 1
            numbered = [_placed(event, line=first_line + index, source=self.display_path,
                                position=first_line + index) for index, event in enumerate(events)]
            after = self.stat_key()
            if after is not None and after[0] == size + len(payload):
                self._read_cache[1].extend(numbered)  # never handed out: `read` gives copies
                self._read_cache = (after, self._read_cache[1])
                return numbered
        self._read_cache = None
        return None

    def known_key(self) -> StatKey | None:
        """The stat key of the file as this process last read or wrote it."""
        return self._read_cache[0] if self._read_cache is not None else None

    def _open(self, key: StatKey | None) -> BinaryIO:
        """The file to append to: the one kept open, while it is still the file at this path."""
        if self._handle is not None:
            if key is not None and key[3] == self._handle[1]:
                return self._handle[0]
            self.close()  # replaced meanwhile (a checkout, a sync engine): append to the file there now
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+b", buffering=0)  # noqa: SIM115 (kept open across appends, see `close`)
        self._handle = (handle, os.fstat(handle.fileno()).st_ino)
        return handle

    def close(self) -> None:
        if self._handle is not None:
            self._handle[0].close()
            self._handle = None

    def sync(self) -> None:
        """Make what was appended durable."""
        if self._handle is not None:
            os.fsync(self._handle[0].fileno())
            return
        with open(self.path, "ab", buffering=0) as handle:
            os.fsync(handle.fileno())

    def stat_key(self) -> StatKey | None:
        try:
            stat = os.stat(self.fspath)
        except FileNotFoundError:
            return None
        return stat_key(stat)


class Look(NamedTuple):
    """The ledger's files as one look found them (see `Ledger.looked_at_once`)."""

    files: list[LedgerFile]
    key: tuple[tuple[str, Any], ...]  # each file's path and stat key, as `Ledger._events` keeps its events by
    stat_key: Any  # as `Ledger.stat_key` gives it


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
        self.kept_dir = kept_dir if kept_dir is not None else state_dir / "kept"
        self.torn_lines_kept: list[Path] = []  # torn last lines this process cut off, as kept
        self.shared_dir = shared_dir
        self._device = device
        self._lock_path = state_dir / LOCK_FILE
        self._lock: Any = None  # made on first use: only writers lock, and filelock is slow to import
        self._files: dict[Path, LedgerFile] = {}
        self._legacy = LedgerFile(state_dir / LEDGER_FILE, display_path)
        self._own: LedgerFile | None = None if shared_dir is not None else self._legacy
        self._merged: tuple[Any, list[Event]] | None = None  # (the files' stat keys, the events as read)
        # (the files' stat keys, event count, histories, last event): appends extend the histories
        self._histories_memo: tuple[Any, int, dict[str, History], Event | None] | None = None
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
        from filelock import FileLock, Timeout

        if self._lock is None:
            self._lock = FileLock(str(self._lock_path), timeout=LOCK_TIMEOUT_SECONDS)
        try:
            self.local_dir.mkdir(parents=True, exist_ok=True)
            with self._lock:
                self._cut_torn_tail()
                yield
        except Timeout:
            raise InconsistentVault(
                f"another vault-tools process has held the ledger lock for {LOCK_TIMEOUT_SECONDS} s",
                path=self.display_path if not self.shared else str(LOCK_FILE)) from None

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
            start = _start_of_last_line(handle, size)
            handle.seek(start)
            tail = handle.read()
            try:
                parse_line(tail.decode("utf-8").rstrip("\r"), 0, str(path))
                handle.write(b"\n")
            except (UnicodeDecodeError, InconsistentVault):
                if start == 0 or _whole_json(tail):  # no line before it, or a whole line changed: refused
                    return
                self.kept_dir.mkdir(parents=True, exist_ok=True)
                stamp = dt.datetime.now().strftime("%Y-%m-%d %H%M%S")
                kept = self.kept_dir / f"torn ledger line {name} {stamp} {os.getpid()}.txt"
                kept.write_bytes(tail)
                handle.truncate(start)
                self.torn_lines_kept.append(kept)
            os.fsync(handle.fileno())

    @contextmanager
    def synced_together(self) -> Iterator[None]:
        """Appends inside the block reach the file at once (any reader, and this process after a kill -9, sees
        them) but are made durable together: before the next note is written and when the block ends. After a
        power cut the disk then never holds a note written after an event it lacks, as with one fsync per
        append, for one fsync per burst of appends."""
        from . import notes  # notes know nothing of the ledger

        self._sync_later += 1
        try:
            with notes.before_writes(self.sync):
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
        if self.shared_dir is None:
            events = self._legacy.read()  # read positions them by line
            self._merged = (key, events)
            return events
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
            merged.append(_placed(event, position=len(merged) + 1))
        self._merged = (key, merged)
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
            events = [_placed(event, clock=clock + index) for index, event in enumerate(events, 1)]
        own = self.own
        numbered = own.append(events, durable=not self._sync_later)
        if self._sync_later:
            self._unsynced = own
        # The appended events have the highest clocks, so they come last in the union too.
        if numbered is not None and before is not None and self._merged is before:
            if self.shared_dir is None:  # one file: positions are its lines, and its key is known
                before[1].extend(numbered)
                self._merged = (((str(own.path), own.known_key()),), before[1])
            else:
                before[1].extend(_placed(event, position=len(before[1]) + index)
                                 for index, event in enumerate(numbered, 1))
                self._merged = (self._key_after_append(before[0], own), before[1])
        else:
            self._merged = None

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
        events = self._events()
        found = None
        if memo is not None and 0 < memo[1] < len(events) and events[memo[1] - 1] == memo[3]:
            found = extend_histories(memo[2], events[memo[1]:])  # only appended to
        if found is None:
            found = histories(events)
        self._histories_memo = (key, len(events), found, events[-1] if events else None)
        return found

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
        memo = self.local_dir / "cache" / "ledger-records.json"
        try:
            stored = json.loads(memo.read_text(encoding="utf-8"))
            if stored.get("key") == key:
                return [RecordSummary.from_json(item) for item in stored["records"]]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass
        found = [RecordSummary.of(history) for history in self.histories().values()]
        if not self.local_dir.is_dir():
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


# -- what the events say ------------------------------------------------------------

# Events that fix a note's whole content: its seal is the latest of them that carries text.
SEALING_EVENTS = ("sealed", "amended", "superseded", "retracted", "imported", "renumbered", "relinked", "settled")
# The ways a record can end, and so conflict when two clones each took one.
CLOSING_EVENTS = ("superseded", "retracted")
_MAY_CONFLICT = frozenset(("withdrawn", "settled", *CLOSING_EVENTS))  # see `History.conflict`


def _placed(event: Event, **where: Any) -> Event:
    """`event` with `where` changed (its place: line, source, position; or its clock), as `dataclasses.replace`
    makes it but without running `__init__` again: ten times faster, and reads and appends do it for every event."""
    placed = object.__new__(Event)
    placed.__dict__.update(event.__dict__, **where)
    return placed


def new_record() -> str:
    """A record's identity: random, so clones that record at the same time never share one."""
    import uuid

    return uuid.uuid4().hex


@dataclass(frozen=True)
class Conflict:
    """Outcomes two clones recorded for one record that cannot both stand; the owner decides."""

    record: str
    id: str
    kind: str  # ruled-and-withdrawn, ruled-twice (two answers), closed-twice (superseded by two rulings, or
    # superseded and retracted), or kept-and-superseded (one clone settled on an answer while another
    # superseded the answer that settlement dropped)
    outcomes: tuple[str, ...]  # what each clone did: "ruled", "withdrawn", "retracted", "superseded by D-0007"
    successors: tuple[str, ...] = ()  # closed-twice: the rulings that each superseded it
    ruling: str | None = None  # ruled-and-withdrawn: the ruling's summary, as sealed
    reason: str | None = None  # ruled-and-withdrawn: why it was withdrawn
    rulings: tuple[str, ...] = ()  # ruled-twice: each answer's summary, in ledger order (kept as ruling-1, ...)


@dataclass
class History:
    """What the ledger knows of one record (one note's whole life, whatever its id or path became)."""

    id: str  # the id its latest event names (renumbering changes it)
    events: list[Event] = field(default_factory=list)
    record: str = ""

    def _settlements(self) -> tuple[list[Event], list[Event]]:
        """The settlements no other settlement knew of (in ledger order), and the events none of them knew of.

        A settlement knows the events it names in `settles` (an older one: every line before it), and what
        the settlements among them knew. Line order alone does not say what a clone knew: a rebase replays
        this clone's lines after the other's, whatever each had seen."""
        settlements = [e for e in self.events if e.event == "settled"]
        if not settlements:
            return [], list(self.events)
        keys = [event_key(e) for e in self.events]
        direct: dict[str, set[str]] = {}
        for index, event in enumerate(self.events):
            if event.event == "settled":
                direct[keys[index]] = set(event.settles) if event.settles else set(keys[:index])
        knows: dict[str, set[str]] = {}

        def known_by(key: str, seen: frozenset[str] = frozenset()) -> set[str]:
            if key not in knows:
                found = set(direct[key])
                for other in direct[key] & direct.keys():
                    if other not in seen:
                        found |= known_by(other, seen | {key})
                knows[key] = found
            return knows[key]

        known_by_any = set().union(*(known_by(key) for key in direct))
        frontier_keys = [key for key in direct if key not in known_by_any]
        frontier = [e for e, key in zip(self.events, keys, strict=True) if key in frontier_keys]
        known = set().union(*(known_by(key) for key in frontier_keys)) | set(frontier_keys)
        return frontier, [e for e, key in zip(self.events, keys, strict=True) if key not in known]

    @property
    def settled(self) -> Event | None:
        """The settlement that stands (where two clones settled differently, they are in conflict)."""
        frontier, _ = self._settlements()
        return frontier[-1] if frontier else None

    @property
    def since_settled(self) -> list[Event]:
        """What no standing settlement knew of: all events, if none was settled."""
        return self._settlements()[1]

    @property
    def status(self) -> Status | None:
        settled = self.settled
        if settled is not None:
            for event in reversed(self.since_settled):  # what happened since
                if event.event in STATUS_AFTER:
                    return STATUS_AFTER[event.event]
            if settled.outcome and settled.outcome != Status.RULED.value:
                return Status(settled.outcome)
        # A settlement that kept one answer stands at what became of that answer (retracted on its clone
        # since, say), whatever became of the answers it dropped, in whatever order the clones' events merged.
        for event in reversed(self.events):
            if self.of_dropped_answer(event, settled):
                continue
            # Keeping a ruling over a withdrawal keeps what became of the ruling since (a retraction, say).
            if event.event in STATUS_AFTER and not (settled is not None and event.event == "withdrawn") \
                    and not self.closed_a_dropped_answer(event, settled):
                return STATUS_AFTER[event.event]
        return None

    @staticmethod
    def of_dropped_answer(event: Event, settled: Event | None) -> bool:
        """Whether `event` (ruled, sealed, or a closing) is about an answer the standing settlement `settled`
        did not keep."""
        return (settled is not None and settled.outcome == Status.RULED.value
                and event.event in ("ruled", "sealed", *CLOSING_EVENTS)
                and bool(event.hash) and bool(settled.hash) and event.hash != settled.hash
                and not _same_answer(event, settled))

    @staticmethod
    def closed_a_dropped_answer(event: Event, settled: Event | None) -> bool:
        """A supersession or retraction of an answer that the standing settlement did not keep."""
        return event.event in CLOSING_EVENTS and History.of_dropped_answer(event, settled)

    @property
    def seal(self) -> Event | None:
        """The latest event that fixed the note's content (sealed, or a tool's lifecycle edit)."""
        for event in reversed(self.events):
            if event.event in SEALING_EVENTS and event.text is not None:
                return event
        return None

    @property
    def sealed(self) -> bool:
        return any(event.event == "sealed" for event in self.events)

    @property
    def seal_lost(self) -> Event | None:
        """The `ruled` event, when the ledger has no `sealed` line to go with it. The two are always
        written together, so the `sealed` line was removed: the ruling must not be sealed again
        from whatever its note says now."""
        if self.sealed:
            return None
        return next((event for event in self.events if event.event == "ruled" and event.hash), None)

    @property
    def path(self) -> str | None:
        return self.events[-1].path if self.events else None

    @property
    def paths(self) -> list[str]:
        """Every path its events named, latest first."""
        return list(dict.fromkeys(event.path for event in reversed(self.events)))

    @property
    def seal_hash(self) -> str | None:
        seal = self.seal
        return seal.hash if seal else None

    @functools.cached_property
    def summary(self) -> RecordSummary:
        """What the record stands at, worked out once: a History is not changed once built (events appended
        later make a new one, see `extend_histories`), and both the ledger's summaries and a live view's ask."""
        return RecordSummary(self.record, self.id, self.status, self.paths, self.seal_hash, self.conflict)

    @property
    def closing(self) -> Event | None:
        """The event that ended the ruling as it stands (a settlement's choice wins over the events it settled)."""
        if self.status not in (Status.SUPERSEDED, Status.RETRACTED):
            return None
        settled = self.settled
        since = self.since_settled if settled is not None else []
        if any(e.event in CLOSING_EVENTS for e in since):
            return next(e for e in reversed(since) if e.event in CLOSING_EVENTS)
        if settled is not None and settled.outcome == "superseded":
            return next((e for e in reversed(self.events) if e.event == "superseded"
                         and e.successor == settled.successor), None)
        if settled is not None and settled.outcome == "retracted":  # the retraction `settle` wrote back
            return next((e for e in reversed(self.events) if e.event == "retracted" and e.text), None)
        # A settlement that kept an answer retracted on its clone: that retraction, not a closing of an
        # answer it dropped that sorts later in the merged ledger
        return next((e for e in reversed(self.events) if e.event in CLOSING_EVENTS
                     and not self.closed_a_dropped_answer(e, settled)), None)

    def _chosen(self, settlement: Event) -> Event | None:
        """The outcome a settlement kept, as the event that recorded it."""
        if settlement.outcome == "superseded":
            return next((e for e in self.events if e.event == "superseded" and e.successor == settlement.successor),
                        None)
        if settlement.outcome == Status.RULED.value:
            sealed = [e for e in self.events if e.event == "sealed"]
            return next((e for e in sealed if e.hash == settlement.hash), sealed[-1] if sealed else None)
        return next((e for e in self.events if e.event == settlement.outcome), None)

    @property
    def conflict_events(self) -> list[Event]:
        """The outcomes that may conflict: what no standing settlement knew of, and what each kept."""
        frontier, since = self._settlements()
        chosen = [event for event in (self._chosen(s) for s in frontier) if event is not None]
        if len(frontier) == 1 and not any(e.event in ("withdrawn", "sealed", *CLOSING_EVENTS) for e in since):
            return since  # settled, and nothing it did not know of has ended or answered it since
        return sorted({id(e): e for e in chosen + since}.values(), key=self.events.index) if chosen else since

    @property
    def conflict(self) -> Conflict | None:
        """Two outcomes recorded on two clones that cannot both stand, until the owner settles them."""
        # A settlement decides what it knew of; what clones record without knowing of it may conflict anew.
        if not any(e.event in _MAY_CONFLICT for e in self.events) and \
                sum(e.event == "sealed" for e in self.events) <= 1:
            return None  # never withdrawn, closed or settled, one answer at most: the kinds below need one of those
        events = self.conflict_events
        kinds = {e.event for e in events}
        if "withdrawn" in kinds and kinds & {"ruled", "sealed"}:
            withdrawn = next(e for e in events if e.event == "withdrawn")
            return Conflict(self.record, self.id, "ruled-and-withdrawn", ("ruled", "withdrawn"),
                            ruling=_summary_of(self.seal.text if self.seal else None), reason=withdrawn.reason)
        answers = list({e.hash: e for e in events if e.event == "sealed" and e.hash}.values())
        if len(answers) > 1:
            return Conflict(self.record, self.id, "ruled-twice", tuple(f"ruling-{n}" for n in range(1, len(answers) + 1)),
                            rulings=tuple(_summary_of(e.text) or "?" for e in answers))
        settled = self.settled
        dropped = [e for e in self.since_settled if self.closed_a_dropped_answer(e, settled)]
        if settled is not None and dropped:
            outcome = dropped[-1]
            successor = outcome.successor if outcome.event == "superseded" else None
            return Conflict(self.record, self.id, "kept-and-superseded",
                            ("ruled", f"superseded by {successor}" if successor else outcome.event),
                            (successor,) if successor else (), ruling=_summary_of(settled.text),
                            reason=outcome.reason)
        closings: dict[tuple[str, str | None], None] = {}
        for event in events:
            if event.event in CLOSING_EVENTS:
                closings.setdefault((event.event, event.successor if event.event == "superseded" else None), None)
        if len(closings) > 1:
            outcomes = tuple(f"superseded by {successor}" if kind == "superseded" else kind
                             for kind, successor in closings)
            successors = tuple(successor for kind, successor in closings if kind == "superseded" and successor)
            return Conflict(self.record, self.id, "closed-twice", outcomes, successors)
        return None


def _same_answer(event: Event, settled: Event | None) -> bool:
    """Whether `event` is about the answer a settlement kept, though its seal hash differs: the ruling was
    related to others (`alongside`), renumbered or relinked since, which gives it a new hash but keeps its
    answer (summary, ruled_at, ruled_by). Two clones' answers differ in those."""
    if settled is None:
        return False
    mine, kept = (_properties_of(e.text) for e in (event, settled))
    answer = answer_of(mine) if mine is not None else None
    return answer is not None and kept is not None and answer == answer_of(kept)


def _summary_of(text: str | None) -> str | None:
    data = _properties_of(text)
    summary = data.get("summary") if data is not None else None
    return str(summary) if summary is not None else None


@functools.lru_cache(maxsize=256)
def _properties_of(text: str | None) -> Mapping[str, Any] | None:
    """The properties of a text an event holds; None when it has none that can be read."""
    if not text:
        return None
    from .notes import parse_text  # only a conflict, or a settled one, needs to read a sealed text

    try:
        data = parse_text(text.removeprefix("\ufeff"), Path("sealed.md")).data
    except Exception:  # a text that cannot be read has no properties to compare or show
        return None
    return data if hasattr(data, "get") else None


def seal_text_without_bom(history: History) -> str:
    seal = history.seal
    return (seal.text or "").removeprefix("\ufeff") if seal else ""


def _derived_record(event: Event) -> str:
    """The identity of a record begun before records were written down: its first event line's checksum."""
    return "L" + _checksum(_canonical(event.to_json()))


def _legacy_record(event: Event, found: Mapping[str, History], by_id: Mapping[str, list[str]]) -> str:
    """The record an event without one belongs to. Ledgers of two clones that both handed out an id
    (before ids carried a clone tag) hold two records under it: an `asked` for an id already asked, or
    a `ruled` with no open question under that id, starts another; other events go to the record of
    that id whose notes lived at the event's path, else the latest."""
    candidates = [found[key] for key in by_id.get(event.id, [])]
    if not candidates:
        return _derived_record(event)
    if event.event in ("asked", "imported"):
        return _derived_record(event)
    if event.event == "ruled":
        open_ones = [h for h in candidates if h.status in (None, Status.OPEN)]
        if not open_ones:
            return _derived_record(event)
        candidates = open_ones
    for history in reversed(candidates):
        if event.path in history.paths:
            return history.record
    return candidates[-1].record


def histories(events: Iterable[Event]) -> dict[str, History]:
    """Every record the ledger holds, by its identity."""
    found: dict[str, History] = {}
    by_id: dict[str, list[str]] = {}  # current id -> records, oldest first
    for event in events:
        key = event.record or _legacy_record(event, found, by_id)
        history = found.get(key)
        if history is None:
            history = found[key] = History(event.id, record=key)
            by_id.setdefault(event.id, []).append(key)
        elif event.id != history.id:  # renumbered
            by_id[history.id].remove(key)
            history.id = event.id
            by_id.setdefault(event.id, []).append(key)
        if event not in history.events:  # a line a union merge kept twice is one event
            history.events.append(event)
    return found


def extend_histories(found: Mapping[str, History], appended: Iterable[Event]) -> dict[str, History] | None:
    """`histories` of the events behind `found` and then `appended`, without reading them all again: a new
    dict, with a new History for each record the new events belong to (the others are shared). None when an
    appended event has no record of its own (an older line: which record it belongs to needs them all)."""
    extended = dict(found)
    for event in appended:
        if event.record is None:
            return None
        history = extended.get(event.record)
        if history is None:
            extended[event.record] = History(event.id, [event], record=event.record)
        elif event.id != history.id or event not in history.events:  # as `histories` takes them, one by one
            events = history.events if event in history.events else [*history.events, event]
            extended[event.record] = History(event.id, events, record=event.record)
    return extended


@dataclass(frozen=True)
class RecordSummary:
    """A record as far as reading the vault needs it, without its events."""

    record: str
    id: str
    status: Status | None
    paths: list[str]
    seal_hash: str | None
    conflict: Conflict | None = None

    @classmethod
    def of(cls, history: History) -> RecordSummary:
        return history.summary

    def to_json(self) -> dict[str, Any]:
        """As `from_json` reads it (`asdict` deep-copies every field: slow for a thousand records)."""
        return {"record": self.record, "id": self.id, "status": self.status, "paths": list(self.paths),
                "seal_hash": self.seal_hash, "conflict": asdict(self.conflict) if self.conflict else None}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RecordSummary:
        conflict = data.get("conflict")
        return cls(data["record"], data["id"], Status(data["status"]) if data.get("status") else None,
                   list(data["paths"]), data.get("seal_hash"),
                   Conflict(**{**conflict, "outcomes": tuple(conflict["outcomes"]),
                               "successors": tuple(conflict["successors"]),
                               "rulings": tuple(conflict.get("rulings", ()))}) if conflict else None)


def histories_by_id(events: Iterable[Event]) -> dict[str, History]:
    """Every record by its current id; where two records share an id, the one begun last."""
    found: dict[str, History] = {}
    for history in histories(events).values():
        found[history.id] = history
    return found


def latest_with_id(known: Mapping[str, History], decision_id: str) -> History | None:
    """The newest record that has this id now (an id named inside an event, like a successor)."""
    found = [history for history in known.values() if history.id == decision_id]
    return max(found, key=lambda h: (h.events[0].position or h.events[0].line or 0, h.events[0].at)) if found else None


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


# -- seal hash ----------------------------------------------------------------------

def normalise_body(body: str) -> str:
    return body.replace("\r\n", "\n").replace("\r", "\n").strip("\n") + "\n"


_WIKILINK = re.compile(r"\[\[([^\[\]|]*?)(\|[^\[\]]*)?\]\]")
# Where Obsidian shows `[[...]]` as typed, not as a link.
_VERBATIM_TOKENS = frozenset({"fence", "code_block", "code_inline", "html_block", "html_inline"})


def _wikilink_rule(state: Any, silent: bool) -> bool:
    match = _WIKILINK.match(state.src, state.pos)
    if not match:
        return False
    if not silent:
        state.push("wikilink", "", 0).content = match.group(0)
    state.pos = match.end()
    return True


@functools.cache
def _markdown() -> Any:
    from markdown_it import MarkdownIt  # only notes with links need it

    parser = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    parser.inline.ruler.before("link", "wikilink", _wikilink_rule)
    return parser


def wikilinks(text: str) -> list[re.Match[str]]:
    """The wikilinks of a Markdown text that Obsidian shows as links, in order: not those inside
    code spans, fenced or indented code, or HTML. Read with markdown-it-py's tokens; when the
    tokens cannot be matched up with the text (a link inside a link's title, say), every `[[...]]`
    counts as typed text, so that changing any of them shows."""
    found = list(_WIKILINK.finditer(text)) if "[[" in text else []
    if not found:
        return []
    seen: list[tuple[str, bool]] = []  # every `[[...]]` the tokens hold, in reading order: (text, is a link)
    for block in _markdown().parse(text):
        for token in (block.children or []) if block.type == "inline" else [block]:
            if token.type == "wikilink":
                seen.append((token.content, True))
            elif token.type in _VERBATIM_TOKENS:
                seen += [(match.group(0), False) for match in _WIKILINK.finditer(token.content)]
    if [raw for raw, _ in seen] != [match.group(0) for match in found]:
        return []
    return [match for match, (_, is_link) in zip(found, seen, strict=True) if is_link]


def _links_as_meaning(text: str, resolve: Resolve) -> str:
    """Wikilinks as what they mean, not how they are spelt: Obsidian rewrites them when a note or a
    heading is renamed or moved, and that is not an edit. A link to a decision becomes its id; a
    link to any other note becomes just "a link" here, and which note it names is checked against
    the sealed text (`retargeted_links`). Text in code is kept as typed."""
    parts: list[str] = []
    last = 0
    for match in wikilinks(text):
        decision_id = resolve(match.group(0)) or leading_id(match.group(0))
        parts += [text[last:match.start()], f"[[{decision_id}]]" if decision_id else "[[]]"]
        last = match.end()
    return "".join(parts) + text[last:] if parts else text


def seal_payload(decision: Decision, resolve: Resolve, tz: dt.tzinfo) -> dict[str, Any]:
    """The meaning of a note: what the seal covers, with links resolved to ids."""
    payload: dict[str, Any] = {}
    for name in SEALED_FIELDS:
        value = getattr(decision, name)
        if name == "status":
            # Moving to superseded/retracted is the tool's own edit, checked against the ledger.
            value = Status.RULED.value if value in (Status.SUPERSEDED, Status.RETRACTED) else value.value
        elif name in ("supersedes", "alongside"):
            # A deleted note's link still names its id: deleting it does not change this note.
            value = sorted(resolve(link) or leading_id(link) or link for link in value)
            if not value and name in SEALED_WHEN_SET:
                continue
        elif name == "source" and value:
            value = _links_as_meaning(value, resolve)
        elif name == "topics":
            value = list(value)
        elif name == "scope":
            if not value:
                continue
            value = list(value)
        elif name == "terms":
            if not value and name in SEALED_WHEN_SET:
                continue
            value = dict(sorted(value.items()))
        elif isinstance(value, dt.datetime):
            value = instant(value, tz).isoformat()
        elif isinstance(value, dt.date):
            value = value.isoformat()
        payload[name] = value
    payload["body"] = _links_as_meaning(normalise_body(decision.body), resolve)
    return payload


def seal_hash(decision: Decision, resolve: Resolve, tz: dt.tzinfo) -> str:
    return "sha256:" + hashlib.sha256(_canonical(seal_payload(decision, resolve, tz)).encode("utf-8")).hexdigest()


def retargeted_links(decision: Decision, sealed: Decision, resolve: Resolve, identity: Resolve) -> list[str]:
    """The fields ("source", "body") where a link to a note that is not a decision now names another
    note than the sealed text's link did. A link may change only to follow its note: the note the
    sealed link named is gone (renamed, moved or deleted) and the new link names a note that exists.
    Pointing a ruling at a different existing note, or rewording a link that names no note, is an edit.
    Call it only when the seal hashes agree (so the links line up one for one)."""
    changed = []
    for name, now_text, then_text in (("source", decision.source or "", sealed.source or ""),
                                      ("body", decision.body, sealed.body)):
        now_links, then_links = wikilinks(now_text), wikilinks(then_text)
        if len(now_links) != len(then_links):
            changed.append(name)
            continue
        for now, then in zip(now_links, then_links, strict=True):
            if resolve(then.group(0)) or leading_id(then.group(0)):
                continue  # a link to a decision: the hash compares its id
            before, after = identity(then.group(0)), identity(now.group(0))
            if before is not None:
                moved = after != before
            elif after is None:  # named no note then or now: the words are what it says
                moved = name_key(link_target(now.group(0))) != name_key(link_target(then.group(0)))
            else:
                moved = False  # followed its note to a new name or folder
            if moved:
                changed.append(name)
                break
    return changed
