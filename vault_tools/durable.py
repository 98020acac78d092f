"""Writing files so that a kill or a full disk never leaves one torn: a temp file in the same folder, written,
synced and renamed over the old one, many at once when a reconcile writes many. Every note, page and record file
vault-tools writes goes through here, and a process that keeps its own view of the vault is told what was written.
A command the resident process runs has each of these writes made by the process that asked for it, with that
process's own rights (`written_by`, `make_asked`).
"""
from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import NoteError
from .notes import BOM, Written

TEMP_PREFIX, TEMP_SUFFIX = ".vault-tools-", ".tmp"  # the names write_atomic gives its temp files

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor  # threads only for batches of writes

    from .notes import Note


def encode(text: str, *, bom: bool) -> bytes:
    return ((BOM if bom else "") + text).encode("utf-8")


def _mode_for(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


class WriteDeclined(BaseException):
    """A write of the vault where `nothing_written` holds, raised before it touches anything. Not an Exception:
    no handler of a command takes it for that command's own failure."""


_writes_declined: ContextVar[bool] = ContextVar("writes_declined", default=False)


@contextmanager
def nothing_written() -> Iterator[None]:
    """While the block runs (in this thread), each write of the vault (a note, a page, a record file, a ledger
    line appended or a torn one cut, a stale temp file removed) raises `WriteDeclined` before it is made: how
    the resident process tries a command that may write, answering only where it writes nothing (`resident_process`).
    Derived data (caches, memos) is written as any reader writes it."""
    token = _writes_declined.set(True)
    try:
        yield
    finally:
        _writes_declined.reset(token)


class CallerWrites:
    """The writes of a command tried where the process that asked for it makes them (`written_by`): `send` asks
    that process to make one batch (what it says, the bytes) and returns each file's error, or None where it was
    made. `made`: a batch was sent (from then on the command cannot be handed back to be run there)."""

    def __init__(self, send: Callable[[dict[str, Any], bytes], list[OSError | None]]) -> None:
        self._send = send
        self.made = False

    def files(self, writes: list[tuple[Path, bytes, Note | None]], *, make_folders: bool) -> list[OSError | None]:
        """`write_files` made there; each file made is told to whoever records this thread's writes, as here."""
        for callback in _before_write.get():
            callback()
        self.made = True
        found = self._send({"op": "files", "paths": [str(path) for path, _, _ in writes],
                            "sizes": [len(data) for _, data, _ in writes], "folders": make_folders},
                           b"".join(data for _, data, _ in writes))
        for (path, data, parsed), error in zip(writes, found, strict=True):
            if error is None:
                for recorder in _recorders.get():
                    recorder.append(Written(path, data, parsed))
        return found

    def remove(self, path: Path) -> None:
        """`remove` made there."""
        self.made = True
        error = self._send({"op": "remove", "paths": [str(path)], "sizes": [0]}, b"")[0]
        if error is not None:
            raise error

    def append(self, path: Path, payload: bytes, size: int) -> None:
        """`payload` appended there to the file at `path`, which holds `size` bytes (see `make_asked`)."""
        self.made = True
        error = self._send({"op": "append", "paths": [str(path)], "sizes": [len(payload)], "at": size,
                                  "folders": True}, payload)[0]
        if error is not None:
            raise error


_caller_writes: ContextVar[CallerWrites | None] = ContextVar("caller_writes", default=None)


@contextmanager
def written_by(writes: CallerWrites) -> Iterator[None]:
    """As `nothing_written`, but each write of a file of the vault (`write_atomic`, `write_files`, an append to
    a ledger file) is made by the process that asked for the command, with its own rights (`writes`): how the
    resident process runs `ask` and `rule` for the console script. What cannot be made so (a device's tag
    drawn, a stale temp file removed, a torn ledger line cut) raises `WriteDeclined`, as under `nothing_written`."""
    token = _caller_writes.set(writes)
    try:
        with nothing_written():
            yield
    finally:
        _caller_writes.reset(token)


def caller_writes() -> CallerWrites | None:
    """Who makes this thread's writes, under `written_by`; None: this process makes them."""
    return _caller_writes.get()


def writes_declined() -> bool:
    """Whether `nothing_written` holds here (then a lock taken only to write need not be waited for)."""
    return _writes_declined.get()


def may_write(path: Path | str) -> None:
    """Before a write of the vault at `path`: raises `WriteDeclined` where `nothing_written` holds."""
    if _writes_declined.get():
        raise WriteDeclined(str(path))


_recorders: ContextVar[tuple[list[Written], ...]] = ContextVar("note_write_recorders", default=())


_before_write: ContextVar[tuple[Callable[[], None], ...]] = ContextVar("before_note_writes", default=())


@contextmanager
def before_writes(callback: Callable[[], None]) -> Iterator[None]:
    """Call `callback` before each file `write_atomic` writes while the block runs (in this thread): how
    another file is made durable before a note written after it (the ledger, when its appends are synced
    together)."""
    token = _before_write.set((*_before_write.get(), callback))
    try:
        yield
    finally:
        _before_write.reset(token)


_kept_sync_threads: ContextVar[ThreadPoolExecutor | None] = ContextVar("kept_sync_threads", default=None)


@contextmanager
def sync_threads_kept() -> Iterator[None]:
    """While the block runs (in this thread), the threads that sync each batch of writes (see `_sync_all`) are
    started once and kept for every batch: a reconcile writes batch after batch, and starting eight threads
    for each was a fortieth of its time."""
    from concurrent.futures import ThreadPoolExecutor  # threads only for batches of writes

    threads = ThreadPoolExecutor(max_workers=SYNC_THREADS, thread_name_prefix="vault-tools-syncs")
    token = _kept_sync_threads.set(threads)
    try:
        yield
    finally:
        _kept_sync_threads.reset(token)
        threads.shutdown(wait=True)


@contextmanager
def recording_writes() -> Iterator[list[Written]]:
    """Every file `write_atomic` writes while the block runs (in this thread), in order: how a process that
    keeps its own view of the vault knows what to read again."""
    written: list[Written] = []
    token = _recorders.set((*_recorders.get(), written))
    try:
        yield written
    finally:
        _recorders.reset(token)


def write_atomic(path: Path, data: bytes, parsed: Note | None = None, *, derived: bool = False) -> None:
    """Write through a temp file in the same folder, then replace: never a torn note. `parsed` is the note
    `data` parses to, when the caller has it (see `Written`). `derived`: a cache, written even where
    `nothing_written` holds."""
    if not derived:
        caller = _caller_writes.get()
        if caller is not None:
            error = caller.files([(path, data, parsed)], make_folders=True)[0]
            if error is not None:
                raise error
            return
        may_write(path)  # before its folder is made (`write_files` checks the file again)
    path.parent.mkdir(parents=True, exist_ok=True)
    error = write_files([(path, data, parsed)], derived=derived)[0]
    if error is not None:
        raise error


def write_notes(writes: list[tuple[Note, str, Note | None]]) -> list[OSError | None]:
    """`write_note` for several notes at once (see `write_files`)."""
    return write_files([(note.path, encode(text, bom=note.bom), _parse_of(note, text, parsed))
                        for note, text, parsed in writes])


def write_files(writes: list[tuple[Path, bytes, Note | None]], *, derived: bool = False) -> list[OSError | None]:
    """`write_atomic` for several files at once, each as atomic as alone: every temp file is made first, then
    each is filled and synced, then each replaces its file, in order. Made one after another, each file's
    creation waits for the previous file's sync on a journaling file system; this way the syncs come
    together. Returns, for each file, None when it was written, else what stopped it (it is then left as
    it was: an error on one file does not stop the others). What `before_writes` asked for is done while the
    temp files are synced, before the first file is replaced."""
    if not derived:
        caller = _caller_writes.get()
        if caller is not None:
            return caller.files(writes, make_folders=False) if writes else []
        for path, _, _ in writes:
            may_write(path)
    before = _before_write.get()
    if not writes:
        for callback in before:
            callback()
    found: list[OSError | None] = []
    for start in range(0, len(writes), WRITES_AT_ONCE):  # each holds a file open until it is in place
        found += _write_files(writes[start:start + WRITES_AT_ONCE], before)
    return found


WRITES_AT_ONCE = 64


# docs/design/0016-faults-are-the-machines-state.md
def _write_files(writes: list[tuple[Path, bytes, Note | None]],
                 before: tuple[Callable[[], None], ...] = ()) -> list[OSError | None]:
    import tempfile  # tempfile only when something is written

    found: list[OSError | None] = [None] * len(writes)
    made: list[tuple[int, int, str, Path, bytes, Note | None]] = []  # index, fd, temp, path, data, parsed
    for index, (path, data, parsed) in enumerate(writes):
        try:
            fd, temp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=TEMP_SUFFIX, dir=path.parent)
        except OSError as error:
            found[index] = error
            continue
        made.append((index, fd, temp, path, data, parsed))
    placed: set[int] = set()
    try:
        try:
            for index, fd, temp, path, data, _ in made:
                try:
                    os.chmod(temp, _mode_for(path))  # mkstemp makes 0600; keep the note's own mode
                    _write_all(fd, data)
                except OSError as error:
                    found[index] = error
            _sync_all([(index, fd) for index, fd, *_ in made if found[index] is None], found, before)
        finally:
            for _, fd, *_ in made:
                os.close(fd)
        for index, _, temp, path, data, parsed in made:
            if found[index] is None:
                try:
                    os.replace(temp, path)
                except OSError as error:
                    found[index] = error
                else:
                    placed.add(index)
                    for recorder in _recorders.get():
                        recorder.append(Written(path, data, parsed))
    finally:  # what was not put in place goes
        for index, _, temp, *_ in made:
            if index not in placed:
                _unlink_quietly(temp)
    return found


SYNC_THREADS = 8


def _sync_all(files: list[tuple[int, int]], found: list[OSError | None],
              first: tuple[Callable[[], None], ...] = ()) -> None:
    """fsync each (index, fd), its error put at `found[index]`, while calling `first` in this thread (what
    raises there is raised once every sync is done). Several files are synced from a few threads at once: a
    journaling file system then commits them together, where one after another each waits for its own commit
    (196 notes: 45-90 ms one by one, 16 ms from 8 threads, on this project's build machines)."""
    def sync(part: list[tuple[int, int]]) -> None:
        for index, fd in part:
            try:
                os.fsync(fd)
            except OSError as error:
                found[index] = error

    workers = min(SYNC_THREADS, len(files)) if len(files) > 1 or first else 0
    parts = [files[start::workers] for start in range(workers)]
    kept = _kept_sync_threads.get()
    waits: list[Callable[[], object]] = []  # one for each part, returning once it is synced
    if kept is not None:  # a reconcile, writing batch after batch (see `sync_threads_kept`)
        waits = [kept.submit(sync, part).result for part in parts]
    else:
        for part in parts:
            thread = threading.Thread(target=sync, args=(part,))
            thread.start()
            waits.append(thread.join)
    try:
        for callback in first:
            callback()
        if not parts:
            sync(files)
    finally:
        for wait in waits:
            wait()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if not written:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[written:]


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


STALE_TEMP_SECONDS = 60


def remove_stale_temps(paths: Iterable[Path], now: float) -> list[Path]:
    """Remove our temp files (by name) older than a minute: a write killed before it replaced its
    note leaves one behind. A younger one may belong to a write still going on. Returns those removed."""
    removed = []
    for path in paths:
        if not (path.name.startswith(TEMP_PREFIX) and path.name.endswith(TEMP_SUFFIX)):
            continue
        try:
            if now - path.lstat().st_mtime > STALE_TEMP_SECONDS:
                may_write(path)
                path.unlink()
                removed.append(path)
        except OSError:
            pass  # gone already, or not ours to remove: the next write tries again
    return removed


def remove(path: Path) -> None:
    """Remove a file of the vault (a sync engine's copy of a page), by the process that asked for the command
    under `written_by`."""
    caller = _caller_writes.get()
    if caller is not None:
        caller.remove(path)
        return
    may_write(path)
    path.unlink()


def write_note(note: Note, text: str, parsed: Note | None = None) -> bytes:
    """Write `text` back with the note's own BOM and line endings; returns the bytes written. `parsed` is
    `text` parsed already (by `edited`), if the caller has it."""
    data = encode(text, bom=note.bom)
    write_atomic(note.path, data, _parse_of(note, text, parsed))
    return data


def _parse_of(note: Note, text: str, parsed: Note | None) -> Note | None:
    """`parsed` when it is `text` as written back to `note` (same text, same BOM), else None."""
    return parsed if parsed is not None and parsed.text == text and parsed.bom == note.bom else None


def create_note(path: Path, text: str) -> bytes:
    """Create a new note; never replaces an existing file."""
    if path.exists():
        raise NoteError("already exists; not overwriting it", path=str(path))
    data = encode(text, bom=False)
    write_atomic(path, data)
    return data


ASKED_AT_ONCE = 4096  # files in one write asked for; `ask` and `rule` write a few


def make_asked(asked: dict[str, Any], data: bytes, inside: str) -> list[OSError | None]:
    """Make the writes another process asked for (`CallerWrites`), each file within the folder `inside` (the
    vault: a path elsewhere is not written): each file's error, or None where it was made. A batch of files is
    written as `write_files` writes it (with their folders made first, when asked); an append checks that the
    file still holds the bytes the asker read, and takes back a partial line on a full disk; a removal removes."""
    caller, declined = _caller_writes.set(None), _writes_declined.set(False)  # made here, whoever asks
    try:
        return _make_asked(asked, data, inside)
    finally:
        _caller_writes.reset(caller)
        _writes_declined.reset(declined)


def _make_asked(asked: dict[str, Any], data: bytes, inside: str) -> list[OSError | None]:
    if asked["op"] not in ("files", "append", "remove"):
        raise ValueError(f"no such write: {asked['op']!r}")
    paths, sizes = [Path(path) for path in asked["paths"]], [int(size) for size in asked["sizes"]]
    if len(paths) != len(sizes) or len(paths) > ASKED_AT_ONCE or min(sizes, default=0) < 0 or \
            sum(sizes) != len(data):
        raise ValueError("a write asked for does not match its bytes")
    if time.monotonic() > float(asked.get("by", "inf")):  # the asker may have given up on it: made by nobody
        return [TimeoutError(errno.ETIMEDOUT, "asked for too late", str(path)) for path in paths]
    root = os.path.realpath(inside)
    chunks, start = [], 0
    for size in sizes:
        chunks.append(data[start:start + size])
        start += size
    found: list[OSError | None] = [None] * len(paths)
    for index, path in enumerate(paths):
        # An append goes through a link its file may be; a file written or removed replaces or removes the link
        where = os.path.realpath(path) if asked["op"] == "append" else \
            os.path.join(os.path.realpath(path.parent), path.name)
        if os.path.commonpath([root, where]) != root or ".git" in Path(where).relative_to(root).parts:
            found[index] = PermissionError(errno.EPERM, "outside the vault", str(path))
        elif asked["op"] == "append" and _size_of(path) != int(asked["at"]):
            found[index] = OSError(errno.EAGAIN, "changed while the command was recorded", str(path))
        elif asked.get("folders"):
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                found[index] = error
    if asked["op"] == "append":
        return [found[0] or _append_at(paths[0], chunks[0], int(asked["at"]))]
    if asked["op"] == "remove":
        return [found[0] or _removed(paths[0])]
    todo = [index for index, error in enumerate(found) if error is None]
    made = write_files([(paths[index], chunks[index], None) for index in todo])
    for index, outcome in zip(todo, made, strict=True):
        found[index] = outcome
    return found


def _size_of(path: Path) -> int:
    """The file's size; 0 where there is none yet, -1 where none can be (a file where its folder should be)."""
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0
    except OSError:
        return -1


def _removed(path: Path) -> OSError | None:
    try:
        path.unlink()
    except OSError as error:
        return error
    return None


def _append_at(path: Path, payload: bytes, size: int) -> OSError | None:
    """`payload` appended to the file at `path` holding `size` bytes (made when `size` is 0), and synced."""
    try:
        with open(path, "ab", buffering=0) as handle:
            if handle.seek(0, os.SEEK_END) != size:
                return OSError(errno.EAGAIN, "changed while the command was recorded", str(path))
            append_whole(handle.fileno(), payload, size)
    except OSError as error:
        return error
    return None


def append_whole(fd: int, payload: bytes, size: int, *, sync: bool = True) -> None:
    """`payload` written at the end of the file open as `fd` (in append mode), which holds `size` bytes, and
    synced unless not `sync`: all of it, or none, where the disk takes part of it and refuses the rest (full):
    the file is cut back to `size`, never left with a torn line, and the error raised."""
    try:
        _write_all(fd, payload)
        if sync:
            os.fsync(fd)
    except OSError:
        os.ftruncate(fd, size)
        raise
