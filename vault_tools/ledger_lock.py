"""The ledger lock: one process at a time allocates ids, writes decision notes and appends to a vault's ledger
(`Ledger.locked`).

Where there is flock(2), an exclusive flock on `.vault-tools/ledger.lock`, taken with fcntl: the way filelock takes
it, so a process holding it through filelock (an earlier version of this package, a tool of the owner's) excludes
this one and the other way round, and so does a console script holding it for the resident process
(`resident._ledger_lock_held`). filelock itself is not imported for it: its import is 30-50 ms, a sixth of a
refused `ask` in a process of its own. Elsewhere (Windows) filelock takes it. Reentrant within a process, one
thread at a time.
"""
from __future__ import annotations

import errno
import os
import sys
import threading
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (3 ms of the console script's start-up)
if TYPE_CHECKING:
    from pathlib import Path
    from types import TracebackType
    from typing import Any

if sys.platform != "win32":
    import fcntl

POLL_SECONDS = 0.05  # between tries while another process holds it: filelock's own interval
_HELD_ELSEWHERE = frozenset({errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES})  # what flock says then (as filelock reads it)


class LockTimeout(Exception):
    """Another process held the lock for the whole timeout."""


class LedgerLock:
    """The lock file at `path`, waited for at most `timeout` seconds; a context manager, which may be nested."""

    def __init__(self, path: Path | str, timeout: float) -> None:
        self.path, self.timeout = path, timeout
        self._threads = threading.RLock()  # one thread of this process at a time; the same one again
        self._depth = 0
        self._held: int | Any = None  # the lock file's descriptor (or filelock's lock) while held

    def __enter__(self) -> None:
        self.take()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.let_go()

    def take(self) -> None:
        """Hold it (again, in the thread holding it), waiting at most the timeout; LockTimeout after."""
        deadline = time.monotonic() + self.timeout
        if not self._threads.acquire(timeout=self.timeout):
            raise LockTimeout
        try:
            if self._depth == 0:
                self._held = self._lock_file(deadline)
            self._depth += 1
        except BaseException:
            self._threads.release()
            raise

    def let_go(self) -> None:
        """Let go of one `take`; of the lock itself with the outermost."""
        self._depth -= 1
        try:
            if self._depth == 0:
                held, self._held = self._held, None
                if isinstance(held, int):
                    # Let go first: a child forked meanwhile (a first read's readers) holds a copy of the descriptor,
                    # and closing ours alone would leave the lock held until that child exits
                    try:
                        fcntl.flock(held, fcntl.LOCK_UN)
                    finally:
                        os.close(held)
                else:
                    held.release()
        finally:
            self._threads.release()

    def _lock_file(self, deadline: float) -> int | Any:
        if sys.platform == "win32":
            from filelock import FileLock, Timeout  # here: only where there is no flock

            lock = FileLock(str(self.path), timeout=max(0.0, deadline - time.monotonic()))
            try:
                lock.acquire()
            except Timeout:
                raise LockTimeout from None
            return lock
        while True:
            descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as error:
                os.close(descriptor)
                if error.errno not in _HELD_ELSEWHERE:
                    raise
                if time.monotonic() >= deadline:
                    raise LockTimeout from None
                time.sleep(POLL_SECONDS)
                continue
            except BaseException:
                os.close(descriptor)
                raise
            try:
                if os.fstat(descriptor).st_nlink:
                    return descriptor
            except BaseException:
                os.close(descriptor)
                raise
            os.close(descriptor)  # its file was removed meanwhile: a process opening the path now locks another
