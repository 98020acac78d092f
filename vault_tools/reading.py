"""Reading decision notes: one note at a time, or many in worker processes for a large first read, through the note
cache (`NoteCache`: what a note parsed to, kept under its file's size, times and inode).
"""
from __future__ import annotations

import atexit
import json
import os
import pickle
import select
import signal
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any, NoReturn

from . import note_edits, notes
from .errors import NoteError
from .handover import Receiver, can_fork, free_processors, hand_over, record, widen
from .layout import relative
from .model import is_decision_mapping
from .notes import StatKey
from .record_files import RACY_NANOSECONDS

CACHE_FILE = "cache/notes-v5.sqlite"  # a new name whenever what is cached changes (v5: keys as JSON writes them)


# docs/design/0022-caches-are-derived-data.md
class NoteCache:
    """What reading each note gave, in SQLite under `.vault-tools/cache/`. Derived data:
    any trouble with it (locked, corrupt, read-only) means reading the notes instead.

    A note is taken from the cache only when its size, mtime, ctime and inode are the ones cached,
    and it was not cached in the same clock tick as it was written: ctime changes on every write even
    when a tool puts the mtime back, and an entry cached within two seconds of the file's mtime could
    miss a same-size write in that tick, so it is read again (git treats its index the same way).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.enabled = True
        self.held = 0  # how many notes `load` found cached

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=2)
        connection.execute("CREATE TABLE IF NOT EXISTS notes (path TEXT PRIMARY KEY, size INT, mtime_ns INT, "
                           "ctime_ns INT, inode INT, cached_at_ns INT, kind TEXT, payload TEXT, body TEXT)")
        # Ordinary notes (nine in ten) have only their key: a table of their own, without rowids, takes a row
        # in half the time (a first read of 10,000 notes writes 9,000 of them)
        connection.execute("CREATE TABLE IF NOT EXISTS ordinary (path TEXT PRIMARY KEY, size INT, mtime_ns INT, "
                           "ctime_ns INT, inode INT, cached_at_ns INT) WITHOUT ROWID")
        return connection

    def load(self, only: list[str] | None = None) -> dict[str, CachedNote]:
        """Every cached note by vault-relative path; with `only`, those of these paths (a few notes changed
        since the whole read was kept: the rest of the cache is not read)."""
        finish_stores()  # what a reader is still writing is read too
        if not self.path.exists():  # made when the notes read are saved (by a reader, on a first read)
            self._forget_older_caches()
            return {}
        found: dict[str, CachedNote] = {}
        try:
            with closing(self._connect()) as connection:
                for where, given in _paths_among(only):
                    rows = connection.execute(
                        "SELECT path, size, mtime_ns, ctime_ns, inode, cached_at_ns - max(mtime_ns, ctime_ns) > ?, "
                        f"kind, payload, body FROM notes{where}", (RACY_NANOSECONDS, *given))
                    found.update((path, ((size, mtime, ctime, inode) if trusted else None, kind, payload, body))
                                 for path, size, mtime, ctime, inode, trusted, kind, payload, body in rows)
                    rows = connection.execute(
                        "SELECT path, size, mtime_ns, ctime_ns, inode, cached_at_ns - max(mtime_ns, ctime_ns) > ? "
                        f"FROM ordinary{where}", (RACY_NANOSECONDS, *given))
                    found.update((path, ((size, mtime, ctime, inode) if trusted else None, "other", None, None))
                                 for path, size, mtime, ctime, inode, trusted in rows)
        except (sqlite3.Error, OSError):
            self.enabled = False
            return {}
        self.held = len(found) if only is None else max(len(found), 1)  # `save` then looks in both tables
        return found

    def _forget_older_caches(self) -> None:
        """The caches earlier versions kept (another name each): what they hold is read again, never used."""
        for older in self.path.parent.glob("notes-v*.sqlite*"):
            if not older.name.startswith(self.path.name):
                try:
                    older.unlink(missing_ok=True)
                except OSError:
                    pass  # a read-only cache folder: left as it is, the cache is not used either

    def save(self, fresh: Iterable[tuple[str, Stored]], cached_at: int, gone: list[str]) -> None:
        """Store what was read afresh (by vault-relative path; `cached_at`: when the reading began) and forget
        the notes no longer there. A note that could not be opened (no key) is not stored."""
        finish_stores()  # one writer at a time
        rows = [(path, kind, key, payload, body) for path, (kind, key, payload, body) in fresh if key is not None]
        if not self.enabled or not (rows or gone):
            return
        ordinary = [(path, *key, cached_at) for path, kind, key, _, _ in rows if kind == "other"]
        others = [(path, *key, cached_at, kind, payload, body) for path, kind, key, payload, body in rows
                  if kind != "other"]
        try:
            with closing(self._connect()) as connection, connection:
                if self.held:  # a note that became or stopped being a decision note is in the other table
                    connection.executemany("DELETE FROM notes WHERE path = ?", [(row[0],) for row in ordinary])
                    connection.executemany("DELETE FROM ordinary WHERE path = ?", [(row[0],) for row in others])
                connection.executemany("INSERT OR REPLACE INTO ordinary VALUES (?, ?, ?, ?, ?, ?)", ordinary)
                connection.executemany("INSERT OR REPLACE INTO notes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", others)
                for table in ("notes", "ordinary"):
                    connection.executemany(f"DELETE FROM {table} WHERE path = ?", [(path,) for path in gone])
        except (sqlite3.Error, OSError):
            self.enabled = False


def _paths_among(only: list[str] | None) -> Iterator[tuple[str, list[str]]]:
    """The WHERE clause (and its values) of each query for the notes at `only`, in SQLite's limit of values
    per statement; one query for every note when `only` is None."""
    if only is None:
        yield "", []
        return
    for start in range(0, len(only), PATHS_PER_QUERY):
        chunk = only[start:start + PATHS_PER_QUERY]
        yield f" WHERE path IN ({', '.join('?' * len(chunk))})", chunk


PATHS_PER_QUERY = 500  # SQLite takes at least 999 values per statement


# Notes to read before reading them in several processes pays for starting those (a first read of a large vault).
PARALLEL_READ_MIN = 5000


def stored_of(read: Read) -> Stored:
    kind, payload, key, form = read
    return kind, key, form, payload.get("body") if payload is not None else None


# Note-cache writes that a reader took on after handing its share over, while the command went on: the readers'
# pids. Waited for before the command exits, and before the cache is read or written again. Should one fail
# (killed, out of memory), the cache lacks those notes and the next command reads them again, as for any
# trouble with derived data: what was read is not kept for it meanwhile (at 50,000 notes that was 20 MB more
# at the command's peak).
stores_running: list[int] = []


def finish_stores() -> None:
    """Wait for the note-cache writes readers took on (see `read_payloads`)."""
    while stores_running:
        try:
            os.waitpid(stores_running.pop(), 0)
        except ChildProcessError:
            pass


# docs/design/0021-reading-a-large-vault-in-parallel.md
def read_payloads(root: Path, paths: list[str], meanwhile: Callable[[], None] | None = None,
                  store: Callable[[list[Stored]], None] | None = None,
                  taken: Callable[[int, list[Read]], None] | None = None) -> tuple[list[Read], int | None]:
    """What each note is, and its key as it was opened (None: it could not be), in order: in several processes
    when there are many to read and processors free to read them. Only where a process can be forked safely
    (Linux, no other thread running): elsewhere starting one costs more than it saves. `meanwhile` is other
    work this process does while the others read (it is not done when they do not). `store` is handed every
    note as the note cache stores it, in order, by a reader once all are read, while this process goes on:
    then the second value is that reader's pid, which the caller waits for; None when `store` was not
    called (the caller calls it itself). `taken` is handed each chunk (where it starts among `paths`, its notes)
    as this process has it while the others read: what the caller does with them there is work it does not do
    once all are read."""
    workers = free_processors() if len(paths) >= PARALLEL_READ_MIN and can_fork() else 1
    if workers < 2:
        return _read_share(root, paths), None
    return _read_in_processes(root, paths, min(workers, 8), meanwhile, store, taken)


def _read_share(root: Path, paths: list[str]) -> list[Read]:
    read: list[Read] = []
    for path in paths:
        kind, payload, key = _read_keyed(root, path)
        read.append((kind, payload, key, _cached_form(payload)))
    return read


def _cached_form(payload: dict[str, Any] | None) -> str | None:
    """A payload as the note cache keeps it: JSON without the body (kept apart)."""
    if payload is None:
        return None
    return json.dumps({key: value for key, value in payload.items() if key != "body"}, ensure_ascii=False,
                      default=str)


# The notes are handed out in chunks, each reader taking the next one when done with the last: decision notes
# (the costly ones to parse) sit together in a folder or two, and the command does other work meanwhile, so
# shares fixed beforehand would leave one reader with most of the work.
READ_CHUNK = 64


_CHUNK_BYTES = 4  # a chunk's number as it goes through the pipe that hands them out


def _read_in_processes(root: Path, paths: list[str], readers: int, meanwhile: Callable[[], None] | None,
                       store: Callable[[list[Stored]], None] | None = None,
                       taken: Callable[[int, list[Read]], None] | None = None) -> tuple[list[Read], int | None]:
    """The notes read by this process and `readers - 1` forked children, each taking chunks from one pipe (a
    read of a few bytes from a pipe is never split between readers on Linux); what a child that fails took is
    read here. Plain forks and pipes: a `multiprocessing` pool costs 20-25 ms to import and start, a sixth of
    a first read of 10,000 notes. With `store`, the first child, once it has handed its chunks over, is sent
    every other chunk as the cache stores it and calls `store` (writing the note cache of 10,000 notes takes
    a tenth of their first read, which this process spends on the pages meanwhile)."""
    shared = _SharedRead(root, paths, store, taken)
    try:
        shared.fork_readers(readers - 1)
        shared.hand_out()
        storing, read_there = shared.take_back(meanwhile)
        for start in shared.starts:  # taken by a child that failed
            if start not in shared.found:
                shared.read_chunk(start)
        if storing is not None and not shared.send_rows(storing, read_there):
            storing = None  # it went away: the caller stores them
        return [item for start in shared.starts for item in shared.found[start]], storing
    finally:  # also on Ctrl-C or an error here: the children still reading go with the command
        shared.close()


class _SharedRead:
    """One read of many notes shared with forked children: the pipes, the children and the chunks read."""

    def __init__(self, root: Path, paths: list[str], store: Callable[[list[Stored]], None] | None,
                 taken: Callable[[int, list[Read]], None] | None = None) -> None:
        self.root, self.paths, self.store, self.taken = root, paths, store, taken
        self.size = max(READ_CHUNK, -(-len(paths) // 8192))
        self.starts = range(0, len(paths), self.size)
        self.handing_out, self.handed = os.pipe()
        self.children: list[tuple[int, int]] = []  # (pid, the pipe its chunks come back through)
        self.running: set[int] = set()
        self.found: dict[int, list[Read]] = {}
        # the chunks the storing child did not read go to it through this pipe
        self.rows_in, self.rows_out = os.pipe() if store is not None else (-1, -1)

    def read_chunk(self, start: int) -> None:
        self.found[start] = _read_share(self.root, self.paths[start:start + self.size])

    def take_chunk(self) -> int | None:
        """Read the next chunk not taken yet; its start, or None when every chunk is taken."""
        number = os.read(self.handing_out, _CHUNK_BYTES)  # whole: the numbers go in by whole pieces (`hand_out`)
        if len(number) != _CHUNK_BYTES:
            return None
        start = int.from_bytes(number, "big")
        self.read_chunk(start)
        return start

    def fork_readers(self, count: int) -> None:
        for child in range(count):
            reading, writing = os.pipe()
            widen(writing)
            pid = os.fork()
            if pid == 0:
                self._read_as_child(child, reading, writing)
            os.close(writing)  # only the child writes: its exit ends the pipe
            self.children.append((pid, reading))
            self.running.add(pid)
        if self.rows_in >= 0:
            os.close(self.rows_in)
            self.rows_in = -1

    def _read_as_child(self, child: int, reading: int, writing: int) -> NoReturn:
        """The child: read, hand over, leave without running the parent's exit handlers."""
        code = 1
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to act on
            stores_running.clear()  # the parent's to wait for, not this child's
            os.close(reading)
            os.close(self.handed)  # only the command hands chunks out: its close says they are all out
            if self.rows_out >= 0:
                os.close(self.rows_out)
            # Each chunk is handed over as soon as it is read, as far as the pipe takes it without
            # waiting: the command then has nearly all of it when it is done with its own chunks.
            os.set_blocking(writing, False)
            waiting = bytearray()
            while (start := self.take_chunk()) is not None:
                waiting += record((start, self.found[start]))
                hand_over(writing, waiting)
            waiting += record(None)  # the end: all was handed over
            os.set_blocking(writing, True)
            hand_over(writing, waiting)
            os.close(writing)
            if self.store is not None and child == 0:
                with os.fdopen(self.rows_in, "rb") as coming:
                    others: dict[int, list[Stored]] = pickle.load(coming)
                self.store([row for start in self.starts for row in (
                    others[start] if start in others else map(stored_of, self.found[start]))])
            code = 0
        finally:
            os._exit(code)

    def hand_out(self) -> None:
        """The chunks' numbers, written in pieces of at most PIPE_BUF bytes (each goes in whole or not at all,
        so no reader ever gets part of a number). When the pipe is full (a user past the kernel's pipe quota
        gets one page), this process reads the last chunk not handed out yet itself, never one from the
        pipe: it holds the pipe's only writing end, so a read there could wait for ever."""
        unsent = list(self.starts)
        sent = 0
        per_piece = select.PIPE_BUF // _CHUNK_BYTES
        os.set_blocking(self.handed, False)
        while sent < len(unsent):
            piece = unsent[sent:sent + per_piece]
            try:
                os.write(self.handed, b"".join(start.to_bytes(_CHUNK_BYTES, "big") for start in piece))
                sent += len(piece)
            except BlockingIOError:
                self.read_chunk(unsent.pop())
        os.close(self.handed)  # every chunk is out: a reader that finds the pipe empty is done
        self.handed = -1

    def take_back(self, meanwhile: Callable[[], None] | None) -> tuple[int | None, dict[int, list[Read]]]:
        """Read chunks here too while taking in what the children hand over, then wait for them; the pid of
        the child that goes on to store the cache (None if none) and the chunks it read."""
        handing_back = [Receiver(reading) for _, reading in self.children]
        chunks: list[dict[int, list[Read]]] = [{} for _ in self.children]  # what each child handed over so far
        for handed_over in handing_back:
            os.set_blocking(handed_over.fd, False)
        if meanwhile is not None:
            meanwhile()
        while True:
            for handed_over, got in zip(handing_back, chunks, strict=True):
                self._taken_in(handed_over, got)
            start = self.take_chunk()
            if start is None:
                break
            if self.taken is not None:
                self.taken(start, self.found[start])
        storing: int | None = None
        read_there: dict[int, list[Read]] = {}
        for child, ((pid, _), handed_over, got) in enumerate(zip(self.children, handing_back, chunks, strict=True)):
            os.set_blocking(handed_over.fd, True)
            self._taken_in(handed_over, got)  # the rest, to its end
            if self.store is not None and child == 0 and handed_over.whole:
                storing, read_there = pid, got  # it goes on: it stores what the others send it
                self.found.update(read_there)
                continue
            _, status = os.waitpid(pid, 0)
            self.running.discard(pid)
            if os.waitstatus_to_exitcode(status) == 0 and handed_over.whole:
                self.found.update(got)
        return storing, read_there

    def _taken_in(self, handed_over: Receiver, got: dict[int, list[Read]]) -> None:
        """What a child handed over since the last look, added to `got` (and handed to `taken`)."""
        handed = handed_over.take_in()
        got.update(handed)
        if self.taken is not None:
            for start, reads in handed:
                self.taken(start, reads)

    def send_rows(self, storing: int, read_there: dict[int, list[Read]]) -> bool:
        """Send the storing child every chunk it did not read; False if it went away."""
        try:
            with os.fdopen(self.rows_out, "wb", closefd=False) as sending:
                pickle.dump({start: list(map(stored_of, self.found[start])) for start in self.starts
                             if start not in read_there}, sending, protocol=pickle.HIGHEST_PROTOCOL)
        except OSError:
            return False
        self.running.discard(storing)
        return True

    def close(self) -> None:
        """Close every pipe end still open; kill the children still reading and wait for them."""
        os.close(self.handing_out)
        if self.handed >= 0:
            os.close(self.handed)
        for end in (self.rows_in, self.rows_out):
            if end >= 0:
                os.close(end)
        for pid, reading in self.children:
            os.close(reading)
            if pid in self.running:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)


def read_payload(root: Path, path: str | Path, written: notes.Written | None = None) -> tuple[str, dict[str, Any] | None]:
    """What one note is: ("other", None), ("decision", its parts) or ("broken", the error)."""
    kind, payload, _ = _read_keyed(root, path, written)
    return kind, payload


def _read_keyed(root: Path, path: str | Path, written: notes.Written | None = None,
                ) -> tuple[str, dict[str, Any] | None, StatKey | None]:
    key = None
    try:
        head, data, key = notes.read_start_keyed(path)
        if head is None:
            return "other", None, key
        note = read_decision_note(root, Path(path), data, written)
    except NoteError as error:
        return "broken", {"message": error.message, "line": error.line}, key
    except OSError as error:
        return "broken", {"message": f"cannot be read: {error.strerror}", "line": None, "unreadable": True}, key
    if note is None:
        return "other", None, key
    body_line = note.text[:len(note.text) - len(note.body)].count("\n") + 1
    data = note.data if all(isinstance(name, str) for name in note.data) else note_edits.plain(note.data)
    return "decision", {"data": data, "body": note.body, "lines": note.key_lines, "body_line": body_line}, key


def read_decision_note(root: Path, path: Path, data: bytes | None = None,
                       written: notes.Written | None = None) -> notes.Note | None:
    """The note if its frontmatter says `type: decision` (parsed from `data` when its bytes were read
    already, see `notes.read_note` for `written`); raises NoteError if it cannot be read."""
    rel = relative(root, path)
    if path.is_symlink() and not inside_vault(root, path):
        raise NoteError("is a link to a file outside the vault; decision notes must live inside it", path=rel)
    note = notes.read_note(path, data, written)
    if not hasattr(note.data, "items"):
        kind = "empty" if note.data is None else f"a {'list' if isinstance(note.data, list) else 'single value'}"
        raise NoteError(f"frontmatter is {kind}, not a mapping of properties", path=rel, line=2)
    return note if is_decision_mapping(note.data) else None


def inside_vault(root: Path, path: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
        return True
    except ValueError:
        return False


# What the cache holds of a note: the key it is trusted for (None: read it again), its kind, its payload as
# JSON without the body, and its body (kept apart: plain text reads back faster than a JSON string).
CachedNote = tuple[StatKey | None, str, str | None, str | None]


# What a note is (see `read_payload`), its key as it was opened (None: it could not be), and its payload as the
# note cache keeps it (JSON, without the body): made by whoever read it, a first read's readers among them.
Read = tuple[str, dict[str, Any] | None, StatKey | None, str | None]


# A note as the note cache stores it: its kind, its key as it was opened, its payload as JSON without the body,
# and its body.
Stored = tuple[str, StatKey | None, str | None, str | None]


atexit.register(finish_stores)  # a command leaving by `os._exit` calls it first (`launch.script`)
