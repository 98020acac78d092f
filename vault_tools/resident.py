"""The vault's resident process, seen from the console script: asking it to run a command (where it listens:
`resident_address`). `vault-tools watch` keeps one beside it (`resident_process`, started by `console.watch`); the console script sends it the
agent's commands (`launch.RESIDENT_COMMANDS`), which it answers as the console script would in a process of
their own, without paying for Python's start-up and the package's imports again
(docs/design/0048-a-resident-process-answers-the-agents-commands.md).

Not asked on a terminal (a person is not waiting on tenths of a second there, and the answer's colours and
width are the terminal's), nor for a command that reads stdin (`--body -`), nor when `VAULT_TOOLS_NO_RESIDENT`
is set; when none answers, or it runs other code than the console script's, the command runs in its own
process as before.
"""
from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

from .record_files import vault_above
from .resident_address import NO_RESIDENT_ENV, private_folder, socket_path
from .state_memo import code_fingerprint

GONE = 4  # it took the command and ended before answering: whether the command ran is not known
WRITING_COMMANDS = ("ask", "rule")  # asked again here when it ends before answering: the others only read


def _vault_named(args: list[str]) -> str | None:
    """The resolved root of the vault the command names, or of the one around the working folder; None when
    there is none (the command then says so itself). Only which resident process to ask: it finds the vault
    again from the same arguments and folder."""
    given = None
    for index, token in enumerate(args):
        if token == "--vault" and index + 1 < len(args):
            given = args[index + 1]
        elif token.startswith("--vault="):
            given = token.removeprefix("--vault=")
    try:
        found = Path(given).expanduser().resolve() if given else vault_above(Path.cwd().resolve(), Path.resolve)
    except (OSError, RuntimeError):
        return None
    return str(found) if found is not None else None


def answer_there(args: list[str]) -> int | None:
    """The command answered by the vault's resident process, its output written here: its exit code; None when
    there is none to ask (or it runs other code), and the command runs here."""
    if "-" in args or os.environ.get(NO_RESIDENT_ENV) or sys.stdout.isatty() or sys.stderr.isatty():
        return None
    root = _vault_named(args)
    path = socket_path(root) if root is not None else None
    if root is None or path is None or not private_folder(os.path.dirname(path)):
        return None
    mask = os.umask(0o22)
    os.umask(mask)
    request = {"argv": args, "cwd": os.getcwd(), "env": dict(os.environ), "umask": mask, "code": code_fingerprint(),
               "encodings": [getattr(stream, "encoding", None) or "utf-8" for stream in (sys.stdout, sys.stderr)]}
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.settimeout(1.0)  # to connect, not to answer: a resident process takes one command at a time
        connection.connect(path)
        connection.settimeout(None)
        connection.sendall(json.dumps(request).encode("utf-8", "surrogateescape"))
        connection.shutdown(socket.SHUT_WR)
    except OSError:
        connection.close()
        return None  # nothing was taken: the command runs here
    head, out, err = _reply(connection)
    if head is not None and (head.get("stale") or head.get("elsewhere")):
        return None  # it runs other code than this (an upgrade), or cannot see its folder: the command runs here
    code = head.get("exit") if head is not None else None
    if not isinstance(code, int):
        if args[0] not in WRITING_COMMANDS:
            return None  # a reading command: asked again here
        sys.stderr.write(f"error: the resident process of {root} ended before answering `{args[0]}`: see whether "
                         "it was recorded (`vault-tools lookup`) before running it again\n")
        return GONE
    for stream, data in ((sys.stdout, out), (sys.stderr, err)):
        stream.flush()
        if hasattr(stream, "buffer"):
            stream.buffer.write(data)  # the bytes it printed in this stream's encoding
        else:
            stream.write(data.decode(getattr(stream, "encoding", None) or "utf-8", "replace"))
        stream.flush()
    return code


def _reply(connection: socket.socket) -> tuple[dict[str, object] | None, bytes, bytes]:
    """The answer's head (None when it did not come whole), and what the command printed to each stream."""
    with connection, connection.makefile("rb") as reply:
        try:
            head = json.loads(reply.readline() or b"null")
            out, err = reply.read(head["out"]), reply.read(head["err"])
        except (OSError, ValueError, TypeError, KeyError):
            return None, b"", b""
    if not isinstance(head, dict) or len(out) != head["out"] or len(err) != head["err"]:
        return None, b"", b""
    return head, out, err
