"""Where the vault's resident process listens (`resident`, `resident_process`), and whether a socket found there
can be trusted: what the console script, the watcher and the resident process itself all need, without the
imports of any of them.
"""
from __future__ import annotations

import os
import socket
import stat

from .code_stamp import digest

NO_RESIDENT_ENV = "VAULT_TOOLS_NO_RESIDENT"  # set (to anything): every command runs in its own process


def socket_path(root: str) -> str | None:
    """Where the resident process of the vault at `root` (resolved) listens: a socket in a folder of this
    user's own (`$XDG_RUNTIME_DIR`, else `$TMPDIR` or /tmp, then `vault-tools-UID/`); None where this system has
    no such sockets or the path would be too long for one."""
    if os.name != "posix" or not hasattr(socket, "AF_UNIX"):
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
