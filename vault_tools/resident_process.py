"""The vault's resident process (`python -m vault_tools.resident_process ROOT WATCHER_PID`, which
`console.start_resident` runs): it answers the agent's commands (`launch.RESIDENT_COMMANDS`) sent by the
console script over a Unix socket, each one as the console script would have answered it in its own
process, without paying for Python's start-up and the package's imports again
(docs/design/0048-a-resident-process-answers-the-agents-commands.md).

What it answers is what the front door gives, run here with the command's own arguments, working folder,
environment and umask, its output caught in the caller's encodings: the state it keeps between commands is
the caches every process keeps, each trusted only while the files it came from are unchanged. One command at
a time. It stops when the watcher that started it does, and when the code installed is no longer its own.
"""
from __future__ import annotations

import codecs
import contextlib
import errno
import gc
import io
import json
import os
import signal
import socket
import struct
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from typing import Any

from . import answers, cli, console, durable, index, launch, state_memo, vault  # noqa: F401  (loaded now, not on the first command)
from .commands.read import read_ahead
from .folder_watch import watch_of
from .reading import finish_stores
from .resident import runtime_stamp
from .resident_address import NO_RESIDENT_ENV, private_folder, socket_path

REQUEST_LIMIT = 16 * 1024 * 1024  # a command's arguments and environment; what is longer is not a command


def serve(root: str, parent: int) -> None:
    """Answer commands for the vault at `root` until the process `parent` ends, this one is told to stop, or
    another resident process takes the socket."""
    path = socket_path(root)
    if path is None:
        return
    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    if not private_folder(folder):
        return  # another user's folder, or one others may enter: no socket of ours goes there
    stopping = signal.signal(signal.SIGTERM, _stop_between_commands)
    listening = None
    try:
        listening = _listen(path)
        if listening is None:
            return
        listener = listening[0]
        _warm_up()
        gc.collect()
        gc.freeze()  # the modules and what they keep, looked over by no later collection
        stamp = runtime_stamp()
        while os.getppid() == parent and not _told_to_stop:
            if _read_again and time.monotonic() - _read_again[0][0] >= READ_AGAIN_AFTER_SECONDS:
                _read_vault_again(root, *_read_again.pop()[1:])
                continue  # told to stop meanwhile: out now, not after a wait for a command
            try:
                _waiting.append(True)
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            finally:
                _waiting.clear()
            with connection:
                if not _answer(connection, stamp):
                    break
    except SystemExit:
        pass
    finally:
        signal.signal(signal.SIGTERM, stopping)
        if listening is not None:
            _remove_if_ours(path, *listening)


_waiting: list[bool] = []  # waiting for a command: nothing is under way
_told_to_stop: list[bool] = []
# Once the agent's commands stop for READ_AGAIN_AFTER_SECONDS after one that wrote (past the racy window of what
# it wrote, so what is read then is kept), the vault is read as the reading commands read it
# (`commands.read.read_ahead`), nothing said: the next command finds the notes, the ledger and the search index
# read already and kept, and pays for the walk that checks them (not for reading what a ruling changed). Only
# where few notes changed (`read.READ_AHEAD_MOST`): a command arriving meanwhile waits for it, so it is never
# the whole read of a large vault. Run as that command was (its folder, environment and umask), writing no note;
# each kept read is trusted later only as any is (the files it came from unchanged).
READ_AGAIN_AFTER_SECONDS = 2.5
_read_again: list[tuple[float, str, dict[str, str], int]] = []  # since a write: when the last command ended, how it ran


def _read_vault_again(root: str, cwd: str, env: dict[str, str], umask: int) -> None:
    gc.disable()
    try:
        with _as_run_by(cwd, env, umask), durable.nothing_written():
            read_ahead(console.workspace(root))
    except Exception:  # what cannot be read now, the next command reads and reports
        pass
    finally:
        gc.enable()
        finish_stores()
    gc.collect()


def _stop_between_commands(*_: object) -> None:
    """SIGTERM: out at once while waiting for a command; otherwise once what is under way is done (a ruling is
    not cut in the middle, nor the socket left behind)."""
    _told_to_stop.append(True)
    if _waiting:
        raise SystemExit(0)


def _listen(path: str) -> tuple[socket.socket, int] | None:
    """A socket listening at `path`, and the inode of the file it made there (fstat of a socket gives the
    socket's own); None when another resident process answers there already."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
        probe.close()
        listener.close()
        return None  # one answers there already (a second watcher of the same vault)
    except OSError:
        probe.close()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # left by a resident process that was killed
    try:
        listener.bind(path)
        listener.listen(16)
        bound = os.stat(path).st_ino
    except OSError:
        listener.close()
        return None
    listener.settimeout(1.0)  # each second: is the watcher still there?
    return listener, bound


def _remove_if_ours(path: str, listener: socket.socket, bound: int) -> None:
    """Close `listener` and remove its socket file, unless another resident process has bound that path since."""
    listener.close()
    try:
        if os.stat(path).st_ino == bound:
            os.unlink(path)
    except OSError:
        pass


def _warm_up() -> None:
    """typer's command group of each command it answers that needs one, made now, not on the first command."""
    for name in sorted(launch.RESIDENT_COMMANDS - set(launch.QUICK)):
        cli._parser([name])  # typer's command group for each, made once


def _answer(connection: socket.socket, stamp: str) -> bool:
    """Run one command sent on `connection` and send its answer; False when this process should end (its code
    is no longer the code installed). A command it does not run gets no answer: its caller runs it."""
    connection.settimeout(5.0)
    reader = connection.makefile("rb")
    try:
        request = json.loads(_read_line(reader, or_closed=True).decode("utf-8", "surrogateescape"))
        argv, cwd, env = request["argv"], request["cwd"], request["env"]
        if not (_same_user(connection) and isinstance(argv, list) and all(isinstance(a, str) for a in argv)
                and argv and argv[0] in launch.RESIDENT_COMMANDS | launch.RESIDENT_TRIES and isinstance(cwd, str)):
            return True
    except (OSError, ValueError, KeyError, TypeError):
        return True  # not a command: nothing was run
    if request.get("code") != stamp:
        return False  # other code is installed: this process ends, the caller runs the command
    if request.get("file_names") != [sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()]:
        return True  # file names are read otherwise there (another locale): the caller runs it
    if not os.path.isdir(cwd):
        return True  # its folder is not here (another mount namespace)
    try:
        connection.sendall(b"+")  # taken: the caller now waits for the answer
    except OSError:
        return True
    gc.disable()  # a command makes about a million objects; looking them over while it runs finds nothing to free
    try:
        writes = _CallerWrites(connection, reader) if argv[0] in launch.RESIDENT_TRIES else None
        umask = int(request.get("umask", 0o22))
        code, out, err = _run(argv, cwd, env, umask, request.get("encodings") or [],
                              merged=request.get("merged") is True, writes=writes)
    finally:
        gc.enable()
        finish_stores()  # the note-cache writes of a first read's readers, as the command's own process waits
    if (writes is not None and writes.made) or _read_again:  # read what it changed once the commands stop
        _read_again[:] = [(time.monotonic(), cwd, env, umask)]
    connection.settimeout(SEND_WITHIN_SECONDS)
    with contextlib.suppress(OSError):
        # declined (it would write): no exit code, and its caller runs it
        head: dict[str, Any] = {"exit": code} if code is not None else {"declined": True}
        if writes is not None:
            head["writes_answered"] = writes.answered  # a write made after this process gave up on it is said there
        _send(connection, head, out, err)
        connection.close()  # the caller has its answer: what is left to free is freed while nobody waits
    gc.collect()
    return True


SEND_WITHIN_SECONDS = 30  # a caller not reading its answer (stopped) holds up the next commands no longer
# A caller starts a write within CALLER_STARTS_WITHIN_SECONDS of being asked or makes none of it, and has it
# made within CALLER_WRITES_WITHIN_SECONDS: a caller stopped longer holds the commands after it up no longer.
# One frozen in the middle of a write may still finish it later: the answer says how many writes this process
# heard back about, and the caller names the files it made beyond them.
CALLER_STARTS_WITHIN_SECONDS = 20
CALLER_WRITES_WITHIN_SECONDS = 120


def _read_line(reader: io.BufferedReader, *, or_closed: bool = False) -> bytes:
    """One message of the caller's: a line of JSON (a command, or what became of the writes it was asked for);
    `or_closed`: or all it sent before it closed its side (as the console script of other code sends one)."""
    line = reader.readline(REQUEST_LIMIT + 1)
    if len(line) > REQUEST_LIMIT or not (line.endswith(b"\n") or or_closed):
        raise ValueError("not a whole message")
    return line


class _CallerWrites(durable.CallerWrites):
    """The writes of a command tried here, made by the console script that sent it (`durable.written_by`): each
    batch sent as a line of JSON and its bytes, and what became of each file read back."""

    def __init__(self, connection: socket.socket, reader: io.BufferedReader) -> None:
        super().__init__(self._asked)
        self._connection, self._reader = connection, reader
        self._gone = False  # an exchange failed: nothing more is asked, whatever the caller does later
        self.answered = 0  # the exchanges whose answer came: told to the caller, which made the writes of each

    def _asked(self, asked: dict[str, Any], data: bytes) -> list[OSError | None]:
        if self._gone:
            return self._not_made(asked)
        try:
            self._connection.settimeout(CALLER_WRITES_WITHIN_SECONDS)
            # the caller makes none of it after `by` (the clock both processes share: `time.monotonic`)
            asked = {**asked, "by": time.monotonic() + CALLER_STARTS_WITHIN_SECONDS}
            self._connection.sendall(json.dumps({"write": asked, "size": len(data)}).encode("utf-8") + b"\n" + data)
            done = json.loads(_read_line(self._reader))["done"]
            if not isinstance(done, list) or len(done) != len(asked["paths"]):
                raise ValueError("not an answer to the writes asked for")
            self.answered += 1
            return [None if error is None else OSError(int(error["errno"]), str(error["strerror"]),
                                                       str(error["filename"])) for error in done]
        except (OSError, ValueError, TypeError, KeyError):
            # the caller went away, stalled or said something else: nothing more is asked of it
            self._gone = True
            return self._not_made(asked)

    @staticmethod
    def _not_made(asked: dict[str, Any]) -> list[OSError | None]:
        return [TimeoutError(errno.ETIMEDOUT, "the command's own process did not make this write", path)
                for path in asked["paths"]]


def _same_user(connection: socket.socket) -> bool:
    """The peer runs as this user (where the system says; the socket's folder already lets no one else in)."""
    peer_credentials = getattr(socket, "SO_PEERCRED", None)
    if peer_credentials is None:
        return True
    credentials = connection.getsockopt(socket.SOL_SOCKET, peer_credentials, struct.calcsize("3i"))
    return bool(struct.unpack("3i", credentials)[1] == os.getuid())


def _send(connection: socket.socket, head: dict[str, Any], out: bytes, err: bytes) -> None:
    connection.sendall(json.dumps({**head, "out": len(out), "err": len(err)}).encode("utf-8") + b"\n" + out + err)


def _run(argv: list[str], cwd: str, env: dict[str, str], umask: int, encodings: list[str], *,
         merged: bool = False, writes: durable.CallerWrites | None = None) -> tuple[int | None, bytes, bytes]:
    """The front door run with the command's arguments, folder, environment and umask: its exit code and the
    bytes it printed to each stream, in that stream's encoding (as the command's own process prints them); with
    `merged` (the caller's two streams are one file), all of it in the first, in the order printed. `writes`
    (`launch.RESIDENT_TRIES`): each write of the vault is made by the caller (`durable.written_by`); the exit
    code is None, and nothing said, where the command would make a write the caller cannot (a device's tag
    drawn, a stale temp file removed, a torn ledger line cut) or read the caller's stdin, before any write."""
    saved_argv, saved_stdin = sys.argv, sys.stdin
    out_bytes = io.BytesIO()
    err_bytes = out_bytes if merged else io.BytesIO()
    out, err = (io.TextIOWrapper(stream, encoding=_encoding(encodings, index), errors="backslashreplace",
                                 write_through=True) for index, stream in enumerate((out_bytes, err_bytes)))
    try:
        with _as_run_by(cwd, env, umask), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                durable.written_by(writes) if writes is not None else contextlib.nullcontext():
            sys.argv, sys.stdin = ["vault-tools", *argv], _CallersInput() if writes is not None else io.StringIO("")
            try:
                launch.main()
                code = 0
            except (durable.WriteDeclined, _CallersInput.Wanted) as declined:
                if writes is None or not writes.made:
                    return None, b"", b""
                err.write(f"error: {declined}: cannot be written for this command after what it wrote "
                          "already; run `vault-tools lint`, then the command again\n")
                code = 1
            except SystemExit as done:
                code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
            except BaseException:  # the command's own process would have ended so
                err.write(traceback.format_exc())
                code = 1
    except OSError as error:  # the command's folder is gone
        return 2, b"", f"error: {cwd}: {error.strerror or error}\n".encode()
    finally:
        sys.argv, sys.stdin = saved_argv, saved_stdin
    out.flush()
    err.flush()
    return code, out_bytes.getvalue(), b"" if merged else err_bytes.getvalue()


@contextlib.contextmanager
def _as_run_by(cwd: str, env: dict[str, str], umask: int) -> Iterator[None]:
    """This process as the caller's own would be: its environment (time zone included), folder and umask, put
    back after. Raises OSError where the folder is not here."""
    try:
        saved_cwd = os.getcwd()
    except OSError:  # this process's own folder was removed: it is left at the root
        saved_cwd = os.sep
    saved_env, saved_umask = dict(os.environ), os.umask(umask)
    try:
        os.environ.clear()
        os.environ.update({**env, NO_RESIDENT_ENV: "1"})  # the front door must not ask this very process
        time.tzset()
        tempfile.tempdir = None  # found again from the command's environment
        console.vault_root = None  # where a crash is logged: the command's vault, once it finds it
        os.chdir(cwd)
        yield
    finally:
        os.umask(saved_umask)
        os.environ.clear()
        os.environ.update(saved_env)
        time.tzset()
        tempfile.tempdir = None
        with contextlib.suppress(OSError):
            os.chdir(saved_cwd)


class _CallersInput(io.StringIO):
    """The stdin of a command tried (`writes`): the caller's is not here, so reading it declines the command."""

    class Wanted(BaseException):
        pass

    def read(self, size: int | None = -1) -> str:
        raise self.Wanted

    readline = read  # type: ignore[assignment]


def _encoding(encodings: list[str], index: int) -> str:
    """The caller's encoding of stream `index` (0 stdout, 1 stderr), or UTF-8 where it names none Python knows."""
    given = encodings[index] if index < len(encodings) and isinstance(encodings[index], str) else "utf-8"
    try:
        return codecs.lookup(given).name
    except LookupError:
        return "utf-8"


if __name__ == "__main__":
    state_memo.KEEP_SIGNED_PAYLOADS = True
    vault.KEEP_LAST_READ = True
    vault.WATCH_FOLDERS = watch_of  # a read kept is taken again where the kernel says no folder changed
    index.KEEP_DOCS_IN_EFFECT = index.KEEP_ROWS = True
    gc.set_threshold(launch.YOUNG_COLLECTION_AFTER, *gc.get_threshold()[1:])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in the watcher's terminal stops the watcher, which stops this
    serve(sys.argv[1], int(sys.argv[2]))
