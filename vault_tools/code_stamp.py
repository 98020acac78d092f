"""What code a process runs (`code_fingerprint`): what a memo or page kept by other code is made anew under, and
what the console script and the resident process compare before one answers for the other; and the digest it is
taken with (`digest`), which names the resident process's socket too. A leaf: the console script imports it
before asking the resident process, so it imports nothing a memo needs (pickle, hmac), nor OpenSSL's digests.
"""
from __future__ import annotations

import os
import sys

from . import __version__

try:  # the digest hashlib gives, without loading OpenSSL's (4 ms of the console script's start-up)
    from _blake2 import blake2b
except ImportError:  # a Python built without its own BLAKE2
    from hashlib import blake2b

_CODE: list[str] = []


def code_fingerprint() -> str:
    """The package's version, Python's, where it is installed and its source files by name, size and mtime: what
    other code kept (another install, an edit, another Python) is made anew."""
    if not _CODE:
        package = os.path.dirname(os.path.abspath(__file__))
        found = []
        for folder, folders, files in os.walk(package):  # os.walk and os.stat: a third of pathlib's 3 ms
            folders[:] = [name for name in folders if name != "__pycache__"]
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    info = os.stat(path)
                    found.append((os.path.relpath(path, package), info.st_size, info.st_mtime_ns))
        found.sort()
        _CODE.append(digest(repr((__version__, sys.version, package, found)).encode("utf-8"), 32))
    return _CODE[0]


def digest(data: bytes, size: int) -> str:
    """A BLAKE2b digest of `data`, `size` bytes long, in hex."""
    return blake2b(data, digest_size=size).hexdigest()
