"""Where the vault's resident process listens (`resident`, `resident_process`), and whether a socket found there
can be trusted: what the console script, the watcher and the resident process itself all need, without the
imports of any of them.
"""
from __future__ import annotations

import os
import stat
import sys

from .code_stamp import digest
from .vault_root import vault_named

NO_RESIDENT_ENV = "VAULT_TOOLS_NO_RESIDENT"  # set (to anything): every command runs in its own process


def socket_path(root: str) -> str | None:
    """Where the resident process of the vault at `root` (resolved) listens: a socket in a folder of this
    user's own (`$XDG_RUNTIME_DIR`, else `$TMPDIR` or /tmp, then `vault-tools-UID/`); None where this system has
    no such sockets or the path would be too long for one."""
    if os.name != "posix" or sys.platform in ("emscripten", "wasi"):  # where Python has no socket.AF_UNIX
        return None
    base = os.environ.get("XDG_RUNTIME_DIR") or os.environ.get("TMPDIR") or "/tmp"
    name = digest(root.encode("utf-8", "surrogateescape"), 12)
    path = os.path.join(base, f"vault-tools-{os.getuid()}", f"{name}.sock")
    return path if len(path.encode("utf-8", "surrogateescape")) < 100 else None  # sun_path holds 104-108 bytes


def private_folder(folder: str) -> bool:
    """Whether `folder` is a real folder of this user's that no one else may enter: a socket found there was
    put there by this user (another user's could hand the agent forged answers)."""
    try:
        info = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


def socket_to_ask(args: list[str]) -> tuple[str, str] | None:
    """The vault the command names (`--vault`, or the one around the working folder, as `record_files.find_vault`
    finds it) and the socket its resident process listens on, where a socket is there to ask: this user's, in a
    folder no one else may enter. None otherwise: then the command runs in its own process without loading what
    asking takes (`resident`: the socket module, threads, JSON). Only which resident process to ask: it finds
    the vault again from the same arguments and folder."""
    if os.environ.get(NO_RESIDENT_ENV) or sys.stdout.isatty() or sys.stderr.isatty():
        return None
    given = None
    for index, token in enumerate(args):
        if token == "--":
            break  # what follows is arguments, not options
        if token == "--vault" and index + 1 < len(args):
            given = args[index + 1]
        elif token.startswith("--vault="):
            given = token.removeprefix("--vault=")
    try:
        root = vault_named(given or None)
    except (OSError, ValueError):
        return None
    path = socket_path(root) if root is not None else None
    if root is None or path is None or not private_folder(os.path.dirname(path)):
        return None
    try:
        found = os.lstat(path)
    except OSError:
        return None
    return (root, path) if stat.S_ISSOCK(found.st_mode) and found.st_uid == os.getuid() else None
