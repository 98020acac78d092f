"""Work done in a forked child and handed back through a pipe, record by record, while the command goes on.

Plain forks and pipes: a `multiprocessing` pool costs 20-25 ms to import and start, more than most of what a
child saves. A child is forked only where that is safe and cheap (`can_fork`); where it is not, or when a child
dies, the command does the work itself, so a child only ever makes a command faster.
"""
from __future__ import annotations

import os
import sys
import threading
from typing import Any

# Imports inside functions: only a large first read forks workers; pickle and fcntl are loaded then.

_LENGTH_BYTES = 8  # bytes of a record's length, before it (see `record`)


def can_fork() -> bool:
    """Whether this process may fork a child to work beside it: on Linux (elsewhere starting one costs more
    than it saves), with no other thread running (a thread holding a lock at the fork would leave it held in
    the child for ever)."""
    return sys.platform.startswith("linux") and threading.active_count() == 1


def free_processors() -> int:
    """The processors this process may run on, less those other work keeps busy now: two processes on one free
    processor take longer than one. Linux counts the threads running or ready to run at this moment (this one
    among them) in /proc/loadavg; the load average itself lags a minute behind, so a command run just after
    another would find the machine busy with work that has finished."""
    mine = len(os.sched_getaffinity(0))
    try:
        with open("/proc/loadavg", encoding="ascii") as loadavg:
            others = int(loadavg.read().split()[3].split("/")[0]) - 1
    except (OSError, ValueError, IndexError):
        try:
            others = int(os.getloadavg()[0] - 1 + 0.5)  # this process counted in, as it has been running
        except OSError:
            others = 0
    return max(1, min(mine, mine - others))


def record(item: Any) -> bytes:
    """`item` as a child hands it over: its length, then it pickled; None gives the end (length 0)."""
    import pickle

    data = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL) if item is not None else b""
    return len(data).to_bytes(_LENGTH_BYTES, "big") + data


def hand_over(fd: int, waiting: bytearray) -> None:
    """Write what `waiting` holds to the pipe `fd`: as much as it takes now when it does not block, else all."""
    while waiting:
        try:
            written = os.write(fd, waiting)
        except BlockingIOError:
            return
        del waiting[:written]


def widen(fd: int) -> None:
    """A pipe that holds what a child hands over while the command is busy (Linux lets a user have pipes of
    1 MiB); where it cannot be widened, the child keeps the rest until it is taken."""
    import fcntl

    try:
        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
    except OSError:
        pass


class Receiver:
    """The records a child handed over through the pipe `fd`, unpickled as they come in."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.whole = False  # the child got to its end
        self._rest = b""  # the start of a record the last read ended in

    def take_in(self) -> list[Any]:
        """The records the pipe holds now (when it is set not to block), else all of them, to the end."""
        import pickle

        found: list[Any] = []
        while not self.whole:
            try:
                data = os.read(self.fd, 1 << 20)
            except BlockingIOError:
                break
            if not data:
                break
            if self._rest:
                data = self._rest + data
            view, taken = memoryview(data), 0  # records are unpickled where they lie: no copy of the chunk
            try:
                while len(data) - taken >= _LENGTH_BYTES:
                    length = int.from_bytes(view[taken:taken + _LENGTH_BYTES], "big")
                    start = taken + _LENGTH_BYTES
                    if length == 0:
                        self.whole = True
                        taken = start
                        break
                    if len(data) - start < length:
                        break
                    found.append(pickle.loads(view[start:start + length]))
                    taken = start + length
            finally:  # what was not taken in yet (a record cut by the read, or one an interruption stopped at)
                self._rest = data[taken:] if not self.whole else b""
        return found
