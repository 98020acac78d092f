"""One ledger file: reading its whole lines, appending events as whole lines (never a torn one left unsaid), and
knowing when it changed. `ledger` reads every device's file as one ledger and appends under a lock.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from .durable import CallerWrites, append_whole, caller_writes, may_write
from .errors import InconsistentVault
from .history import placed
from .ledger_lines import Event, event_line, parse_ledger
from .notes import StatKey, stat_key


def whole_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


def start_of_last_line(handle: BinaryIO, size: int, chunk: int = 65536) -> int:
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


class FileRead(NamedTuple):
    """A ledger file as one read found it: its stat key, its events, the digest of its bytes (None: not known, or a
    last line still in transit) and how many lines they hold."""

    key: StatKey
    events: list[Event]
    digest: bytes | None
    lines: int


def _appended_to(cached: FileRead | None, inode: int, size: int) -> bool:
    """Whether the file, now of `size` bytes at `inode`, may be what `cached` read with lines appended: the same
    file, longer, read whole (the digest of what was read checks its start)."""
    return cached is not None and cached.digest is not None and inode == cached.key[3] and size > cached.key[0]


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


class LedgerFile:
    """One ledger file: read verified (again only when it changed), appended to under the caller's lock."""

    def __init__(self, path: Path, display_path: str, *, in_transit_ok: bool = False) -> None:
        self.path = path
        self.fspath = str(path)  # as a str: pathlib costs more, and it is looked at on every append
        self.display_path = display_path
        # Another device's file, as a carrier brings it: a torn last line is the part still on its way.
        self.in_transit_ok = in_transit_ok
        self._read_cache: FileRead | None = None
        # The digest of the bytes `_read_cache` holds, as a hash that can go on: an append made here extends it,
        # so a later read of lines another process appended reads only those (None: not known in this process)
        self._hashed: Any = None
        # Kept open between appends that are made durable later (`Ledger.synced_together`), with its inode
        self._handle: tuple[BinaryIO, int] | None = None

    def read(self) -> list[Event]:
        key = self.stat_key()
        if key is None:
            return []
        cached = self._read_cache
        if cached is not None and cached.key == key:
            return list(cached.events)
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return []
        start = 0
        if _appended_to(cached, key[3], len(raw)) and cached is not None and \
                _digest(raw[:cached.key[0]]) == cached.digest:
            start = cached.key[0]  # only appended to since: the lines after what was read are read
        try:
            text = raw[start:].decode("utf-8")
        except UnicodeDecodeError:
            raise InconsistentVault("ledger is not UTF-8", path=self.display_path) from None
        if self.in_transit_ok and not text.endswith("\n") and "\n" in text:
            text = text[:text.rindex("\n") + 1]
        elif self.in_transit_ok and "\n" not in text:
            text = ""
        before = cached.events if start and cached is not None else []
        lines = cached.lines if start and cached is not None else 0
        events = before + parse_ledger(text, self.display_path, source=self.display_path, first_line=lines + 1)
        if len(raw) == key[0]:  # not appended to while being read
            whole = raw.endswith(b"\n") or not raw  # a part still in transit is read again with the rest
            self._hashed = hashlib.blake2b(raw, digest_size=16) if whole else None
            self._read_cache = FileRead(key, events, self._hashed.digest() if whole else None, raw.count(b"\n"))
        return list(events)

    def bytes_to_read(self) -> int:
        """How many of the file's bytes `read` reads now: none while it is as last read, the lines appended to a
        file read whole (its bytes' digest known), else all of them."""
        key, cached = self.stat_key(), self._read_cache
        if key is None or (cached is not None and cached.key == key):
            return 0
        return key[0] - cached.key[0] if _appended_to(cached, key[3], key[0]) and cached is not None else key[0]

    def append(self, events: list[Event], *, durable: bool = True) -> list[Event] | None:
        """Append `events`; fsynced unless `durable` is False (the caller syncs later, see
        `Ledger.synced_together`, and closes the file it keeps open for the next append). Returns them as a
        read would now give them (numbered), when what was read before plus them is the file now; None when
        the file must be read again."""
        payload = "".join(event_line(event) for event in events).encode("utf-8")
        if not payload:
            return []
        caller = caller_writes()
        if caller is not None:
            return self._append_by(caller, events, payload)
        may_write(self.path)
        before = self.stat_key()
        handle = self._open(before)
        size = handle.seek(0, os.SEEK_END)
        ours = self._read_cache is not None and self._read_cache.key == before  # ends with a line read or written
        if size > 0 and not ours:
            self._refuse_a_torn_end(handle, size)
        try:
            append_whole(handle.fileno(), payload, size, sync=durable)  # a full disk: none of it, no torn line
        except OSError:
            self.close()
            raise
        finally:
            if durable:
                self.close()
        return self._appended(events, payload, before, size, ours)

    def _append_by(self, caller: CallerWrites, events: list[Event], payload: bytes) -> list[Event] | None:
        """`append`, made by the process that asked for the command (`durable.written_by`)."""
        self.close()
        before = self.stat_key()
        size = before[0] if before is not None else 0
        ours = self._read_cache is not None and self._read_cache.key == before
        if size > 0 and not ours:
            with open(self.path, "rb") as handle:
                self._refuse_a_torn_end(handle, size)
        caller.append(self.path, payload, size)
        return self._appended(events, payload, before, size, ours)

    def _refuse_a_torn_end(self, handle: BinaryIO, size: int) -> None:
        """The file, `size` bytes long, read whole where it does not end with a whole line: a read raises,
        naming the torn line."""
        handle.seek(size - 1)
        if handle.read(1) != b"\n":
            self.read()

    def _appended(self, events: list[Event], payload: bytes, before: StatKey | None, size: int,
                  ours: bool) -> list[Event] | None:
        """What `append` returns, once `payload` (`events`) was appended to the file holding `size` bytes."""
        # What was read before plus what was just written is the file now: no need to read it all again.
        if ours and self._read_cache is not None and before is not None and size == before[0]:
            first_line = (self._read_cache.events[-1].line or 0) + 1 if self._read_cache.events else 1
            numbered = [placed(event, line=first_line + index, source=self.display_path,
                                position=first_line + index) for index, event in enumerate(events)]
            after = self.stat_key()
            if after is not None and after[0] == size + len(payload):
                self._read_cache.events.extend(numbered)  # never handed out: `read` gives copies
                # the bytes' digest goes on with the payload where this process hashed what it read
                hashed = self._hashed if self._read_cache.digest is not None else None
                if hashed is not None:
                    hashed.update(payload)
                self._hashed = hashed
                self._read_cache = FileRead(after, self._read_cache.events, hashed.digest() if hashed else None,
                                            self._read_cache.lines + payload.count(b"\n"))
                return numbered
        self._read_cache = None
        return None

    def as_read(self) -> FileRead | None:
        """The file as this process last read or wrote it (None: not read whole)."""
        return self._read_cache

    def take_read(self, read: FileRead) -> None:
        """What a read of the file as `read.key` finds it gives, known already (a memo of an earlier read): taken
        as it is while the file is so, or as the start of what it holds once lines were appended."""
        self._read_cache, self._hashed = read, None

    def known_key(self) -> StatKey | None:
        """The stat key of the file as this process last read or wrote it."""
        return self._read_cache.key if self._read_cache is not None else None

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


def ends_a_line(path: Path) -> bool:
    """Whether a file is empty or ends with a newline (a copy an append can extend)."""
    with open(path, "rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return True
        handle.seek(size - 1)
        return handle.read(1) == b"\n"
