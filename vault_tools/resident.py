"""The vault's resident process, seen from the console script: asking it to run a command (where it listens:
`resident_address`). `vault-tools watch` keeps one beside it (`resident_process`, started by
`console.start_resident`); the console script sends it the agent's reading commands
(`launch.RESIDENT_COMMANDS`), which it answers as the console script would in a process of their own, without
paying for Python's start-up and the package's imports again
(docs/design/0048-a-resident-process-answers-the-agents-commands.md).

A command that writes the record (`ask`, `rule`) must write with this process's own rights and view of the
files (a sandbox, a read-only mount), which a process started by the watcher does not share. Those are run there
too (`launch.RESIDENT_TRIES`), but each write they make (a note, a ledger line, a page) is sent back and made
here (`durable.written_by`, `durable.make_asked`): refused, they write nothing; where a write cannot be made so
(a torn ledger line cut, a stale temp file removed, a device's first tag drawn) or the command reads this
process's stdin, it is declined before any write and runs here. Not asked on a terminal (a person is not waiting
on tenths of a second there, and the answer's colours and width are the terminal's), nor when
`VAULT_TOOLS_NO_RESIDENT` is set. Whenever it does not answer in full (none listening, other code, another
file-name encoding, a folder it cannot see, stopped, gone), the command runs in its own process as before: a
reading command asked twice gives the same answer. Once a write was made here, the command is never run here
again: it says what was written instead.
"""
from __future__ import annotations

import importlib
import json
import os
import socket
import sys
import threading

from .code_stamp import code_fingerprint
from .ledger_lock import LedgerLock, LockTimeout
from .resident_address import socket_to_ask
from .vault_root import LEDGER_LOCK, STATE_DIR

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (3 ms of the console script's start-up)
if TYPE_CHECKING:
    from typing import Any

HEAD_LIMIT = 1 << 20  # a line the resident process sends before its bytes
WRITE_LIMIT = 1 << 26  # the bytes of one write it asks for (a note is at most a few hundred kilobytes)
TAKEN_WITHIN_SECONDS = 2.0  # a resident process that does not take a command by then is stopped or stuck
ANSWERED_WITHIN_SECONDS = 120.0  # and one that took it and does not answer by then


_STARTED_WITH_PYTHONPATH = os.environ.get("PYTHONPATH", "")  # what this process's sys.path was made from


def runtime_stamp() -> str:
    """The code a process runs: the package's (`code_fingerprint`), the folders its other packages come from
    with their modification times (installing or upgrading one changes them), and `PYTHONPATH` as the process
    started. Two processes with the same stamp import the same code."""
    folders = []
    for entry in sys.path:
        if os.path.basename(entry) in ("site-packages", "dist-packages"):
            try:
                folders.append((entry, os.stat(entry).st_mtime_ns))
            except OSError:
                continue
    return code_fingerprint() + repr((folders, _STARTED_WITH_PYTHONPATH))


def _request(args: list[str]) -> dict[str, object] | None:
    """What the resident process needs to run the command as this process would; None when this process cannot
    say (its working folder is gone)."""
    try:
        cwd = os.getcwd()
    except OSError:
        return None
    mask = os.umask(0o22)
    os.umask(mask)
    try:
        merged = os.path.samestat(os.fstat(sys.stdout.fileno()), os.fstat(sys.stderr.fileno()))
    except (OSError, ValueError, AttributeError):  # a stream with no file behind it (a test's)
        merged = False
    return {"argv": args, "cwd": cwd, "env": dict(os.environ), "umask": mask, "code": runtime_stamp(),
            "file_names": [sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()],
            "encodings": [getattr(stream, "encoding", None) or "utf-8" for stream in (sys.stdout, sys.stderr)],
            "merged": merged}


def answer_there(args: list[str], *, tried: bool = False) -> int | None:
    """The command answered by the vault's resident process, its output written here: its exit code; None when
    it did not answer in full, and the command runs here. A command that may write (`tried`) is sent only while
    this process holds the vault's ledger lock, as the command would hold it here: it reads the vault as no
    writer leaves it halfway, and a caller that could not take the lock (a read-only mount) runs the command
    here, which says why. Each write it makes is made by this process (`_Writes`)."""
    found = socket_to_ask(args)
    request = _request(args) if found is not None else None
    if found is None or request is None:
        return None
    root, path = found
    lock = _ledger_lock_held(root) if tried else None
    if tried and lock is None:
        return None  # a writer holds it (the command waits for it here), or this process may not take it
    writes = _Writes(root) if tried else None
    try:
        code, out, err = _asked(path, request, writes)
    finally:
        if lock is not None:
            lock.let_go()  # run here, the command takes it again
    if code is None and writes is not None and writes.made:
        # halfway: what it wrote stays, and running the command here would record it twice
        sys.stderr.write(f"error: {writes.made[-1]}: the watcher's resident process stopped answering while "
                         "this command was being recorded; run `vault-tools lint` to see what was written\n")
        return 1
    if code is None:
        return None  # not answered in full (other code, a folder it cannot see, stopped, gone): asked here
    late = writes.unanswered() if writes is not None else []
    if late:  # made while the resident process no longer waited: the command said they were not
        err += "".join(f"error: {path}: written after the watcher's resident process stopped waiting for it; "
                       "run `vault-tools lint` to see what was recorded\n" for path in late).encode()
        code = code or 1
    # stderr first: where stdout's reader has gone (`| head`), what the command said there is still said
    for stream, data in ((sys.stderr, err), (sys.stdout, out)):
        stream.flush()
        if hasattr(stream, "buffer"):
            stream.buffer.write(data)  # the bytes it printed in this stream's encoding
        else:
            stream.write(data.decode(getattr(stream, "encoding", None) or "utf-8", "replace"))
        stream.flush()
    return code


def _ledger_lock_held(root: str) -> LedgerLock | None:
    """The vault's ledger lock taken by this process at once, as `Ledger.locked` takes it; None when another
    process holds it or this one cannot open its file for writing."""
    lock = LedgerLock(os.path.join(root, STATE_DIR, LEDGER_LOCK), timeout=0)
    try:
        lock.take()
    except (LockTimeout, OSError):
        return None
    return lock


_DURABLE = f"{__package__}.durable"


class _Writes:
    """The writes of a tried command that the resident process asks this process to make (`durable.written_by`),
    made with this process's own rights, each file within the vault at `root` (`durable.make_asked`); `made`
    names the files made so far."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.made: list[str] = []
        self.exchanges: list[list[str]] = []  # the files made for each write asked for, in order
        self.answered: object = None  # how many of those the resident process got the answer of (its answer says)

    def unanswered(self) -> list[str]:
        """The files made for writes whose answer the resident process did not get (it gave up waiting, and
        the command went on as if they were not made), by how many it got as its answer says (`answered`)."""
        counted = self.answered if isinstance(self.answered, int) and self.answered >= 0 else 0
        return [path for made in self.exchanges[counted:] for path in made]

    def prepare(self) -> None:
        """Once the command is sent: the code that makes the writes, loaded while the resident process works
        towards the first (a thread the process may leave halfway: nothing at exit touches that module)."""
        threading.Thread(target=importlib.import_module, args=(_DURABLE,), daemon=True).start()

    def make(self, asked: dict[str, Any], data: bytes) -> list[dict[str, object] | None]:
        durable: Any = importlib.import_module(_DURABLE)  # only where a command writes
        try:
            found = durable.make_asked(asked, data, self.root)
        except (KeyError, TypeError, ValueError):
            raise ValueError("not a write") from None
        self.exchanges.append([path for path, error in zip(asked["paths"], found, strict=True) if error is None])
        self.made += self.exchanges[-1]
        return [None if error is None else {"errno": error.errno or 0, "strerror": error.strerror or str(error),
                                            "filename": error.filename or path}
                for path, error in zip(asked["paths"], found, strict=True)]


def _asked(path: str, request: dict[str, object],
           writes: _Writes | None = None) -> tuple[int | None, bytes, bytes]:
    """The request sent to the resident process listening at `path` (the writes it asks for made by `writes`):
    the exit code of its answer (None: not answered in full) and the bytes printed to each stream."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.settimeout(TAKEN_WITHIN_SECONDS)
        connection.connect(path)
        connection.sendall(json.dumps(request).encode("utf-8", "surrogateescape") + b"\n")
    except OSError:
        connection.close()
        return None, b"", b""
    if writes is not None:
        writes.prepare()
    head, out, err = _reply(connection, writes)
    code = head.get("exit") if head is not None else None
    return (code, out, err) if isinstance(code, int) else (None, b"", b"")


def _reply(connection: socket.socket,
           writes: _Writes | None) -> tuple[dict[str, object] | None, bytes, bytes]:
    """The answer's head (None when it did not come whole, or in time), and what the command printed to each
    stream (with `merged`, all of it in the first, in the order printed). The resident process says at once
    that it took the command (one byte); then, for a tried command, asks for each write it makes (made here
    by `writes`, what became of each file sent back), then answers."""
    with connection, connection.makefile("rb") as reply:
        try:
            if reply.read(1) != b"+":
                return None, b"", b""
            connection.settimeout(ANSWERED_WITHIN_SECONDS)
            head = json.loads(reply.readline(HEAD_LIMIT) or b"null")
            while isinstance(head, dict) and "write" in head and writes is not None:
                if not 0 <= head["size"] <= WRITE_LIMIT:
                    raise ValueError("not a write")
                done = writes.make(head["write"], reply.read(head["size"]))
                connection.sendall(json.dumps({"done": done}).encode("utf-8") + b"\n")
                head = json.loads(reply.readline(HEAD_LIMIT) or b"null")
            out, err = reply.read(head["out"]), reply.read(head["err"])
            if writes is not None:
                writes.answered = head.get("writes_answered")
        except (OSError, ValueError, TypeError, KeyError):
            return None, b"", b""
    if not isinstance(head, dict) or len(out) != head["out"] or len(err) != head["err"]:
        return None, b"", b""
    return head, out, err
