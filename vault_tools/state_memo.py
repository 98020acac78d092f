"""What a whole read gave (the vault's decisions, the ledger's events), kept under `.vault-tools/cache/` so that the
next command, when nothing changed, takes it in a few milliseconds instead of reading and checking it all again.

A memo is a pickle: the fastest way Python has to bring back a million objects. A pickle can run code when it is
loaded, and a vault is carried by git and sync engines from other machines, so a memo is signed with a key only
this user has (`~/.cache/vault-tools/memo-key`, made on first use, readable by the user alone); one that is not
signed so, not this version's, or not for what is asked, is never unpickled. Derived data, as every cache: any
trouble (no home folder, a read-only vault, a damaged file) means reading the vault as if there were none, and
`rm -rf .vault-tools/cache` changes no answer. docs/performance.md says what is kept and when it is thrown away.
"""
from __future__ import annotations

import hmac
import io
import os
import pickle
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .code_stamp import code_fingerprint

SIGNATURE_BYTES = 32


_KEYS: dict[str, bytes | None] = {}  # by where the key is kept: read once per process


def _user_key() -> bytes | None:
    """This user's signing key, made on first use; None where there is no home to keep it in."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if base not in _KEYS:
        _KEYS[base] = _read_or_make_key(base)
    return _KEYS[base]


def _read_or_make_key(base: str) -> bytes | None:
    path = os.path.join(base, "vault-tools", "memo-key")
    try:
        with open(path, "rb") as handle:
            key = handle.read()
        if len(key) >= 32:
            return key
    except OSError:
        pass
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fresh = os.urandom(32)
        temp = f"{path}.{os.getpid()}.tmp"
        descriptor = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(fresh)
        try:
            os.link(temp, path)  # the first process to make one wins; the others read it
        except FileExistsError:
            pass
        finally:
            os.unlink(temp)
        with open(path, "rb") as handle:
            key = handle.read()
        return key if len(key) >= 32 else None
    except OSError:
        return None


def _sign(key: bytes, payload: bytes) -> bytes:
    # HMAC-SHA256 through OpenSSL: twice keyed BLAKE2b's speed where the processor hashes SHA-256 itself (a 3.8 MB
    # memo 2 ms against 4 ms), and every command that recalls a memo has loaded OpenSSL with hashlib already
    return hmac.digest(key, payload, "sha256")


def recall(path: Path, key: Any) -> Any | None:
    """What was kept at `path` under `key` (compared with ==), or None when there is none to trust. The code
    stamp and the key come first in the file, so a memo of other inputs is told apart without unpickling what
    it keeps."""
    found = recall_signed(path, key)
    return found[1] if found is not None else None


def recall_signed(path: Path, key: Any) -> tuple[bytes, Any] | None:
    """`recall`, with the memo's signature: (signature, what it keeps)."""
    secret = _user_key()
    if secret is None:
        return None
    signed = _signed_payload(path, secret)
    if signed is None:
        return None
    try:
        stream = io.BytesIO(signed[1])
        if pickle.load(stream) != (code_fingerprint(), key):  # signed by this user: checked above
            return None
        return signed[0], pickle.load(stream)  # a pickler of its own: each pickle numbers its objects from 0
    except Exception:  # signed by this user, but made by code that no longer loads: not taken
        return None


# A memo of a mapping (each note's parts by its path) is megabytes whole, and changes in a few entries from one
# command to the next (a note edited, a ruling recorded): those entries are kept in a small memo beside it, its
# delta, signed for the whole memo's very signature (a delta is never taken with another), until they are more
# than this; then the whole is written again.
DELTA_MOST = 256
Origin = tuple[bytes, frozenset[Any]]  # the whole memo's signature, the keys its delta holds


def recall_mapping(path: Path, key: Any) -> tuple[dict[Any, Any], Origin] | None:
    """A mapping `keep_mapping` kept at `path` under `key`: the whole memo with its delta's entries in place, and
    where it came from (what `keep_mapping` needs to keep only what changes); None as `recall`."""
    found = recall_signed(path, key)
    if found is None or not isinstance(found[1], dict):
        return None
    signature, mapping = found
    delta = recall_delta(path, key, signature)
    if delta is None:
        return mapping, (signature, frozenset())
    changed, removed = delta
    mapping.update(changed)
    for name in removed:
        mapping.pop(name, None)
    return mapping, (signature, frozenset(changed) | frozenset(removed))


def keep_mapping(path: Path, key: Any, mapping: dict[Any, Any], origin: Origin | None, changed: Iterable[Any]) -> None:
    """Keep `mapping` at `path` under `key`. Where it was recalled (`origin`, from `recall_mapping`; `changed`: the
    keys added, changed or removed since) and at most `DELTA_MOST` entries differ from the whole memo kept there,
    only those, in its delta; else the whole, its delta removed."""
    if origin is not None:
        covered = origin[1] | frozenset(changed)
        if len(covered) <= DELTA_MOST:
            keep_delta(path, key, origin[0], ({name: mapping[name] for name in covered if name in mapping},
                                               [name for name in covered if name not in mapping]))
            return
    keep_whole(path, key, mapping)


def recall_delta(path: Path, key: Any, signature: bytes) -> Any | None:
    """What the delta beside the memo at `path` keeps for the whole memo signed `signature`, or None."""
    return recall(delta_path(path), (key, signature))


def keep_delta(path: Path, key: Any, signature: bytes, value: Any) -> None:
    """Keep `value` in the delta beside the memo at `path`, for the whole memo signed `signature` only."""
    keep(delta_path(path), (key, signature), value)


def keep_whole(path: Path, key: Any, value: Any) -> None:
    """Keep `value` at `path`, the whole memo, and remove its delta (it names the memo replaced: never taken)."""
    keep(path, key, value)
    try:
        delta_path(path).unlink(missing_ok=True)
    except OSError:
        pass


def delta_path(path: Path) -> Path:
    """Where the delta beside the memo at `path` is kept."""
    return path.with_name(f"{path.stem}-delta{path.suffix}")


# A process that answers command after command (the resident process) keeps the last payload of each memo it
# found signed, under the file's stat key, and takes it again while the file is the same file, unchanged: the
# read and the check of its signature are then not paid again. A one-command process keeps none.
KEEP_SIGNED_PAYLOADS = False
_PAYLOADS: dict[Path, tuple[tuple[int, int, int, int], bytes, tuple[bytes, bytes]]] = {}  # path -> stat key, secret, signed


def _signed_payload(path: Path, secret: bytes) -> tuple[bytes, bytes] | None:
    """The memo at `path` as (its signature, the rest), when this user's key signed it; None otherwise."""
    try:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            stat_key = (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
            kept = _PAYLOADS.get(path)
            if kept is not None and kept[0] == stat_key and kept[1] == secret:
                return kept[2]
            data = handle.read()
    except OSError:
        return None
    signature, payload = data[:SIGNATURE_BYTES], data[SIGNATURE_BYTES:]
    if len(signature) < SIGNATURE_BYTES or not hmac.compare_digest(signature, _sign(secret, payload)):
        return None
    if KEEP_SIGNED_PAYLOADS:
        _PAYLOADS[path] = (stat_key, secret, (signature, payload))
    return signature, payload


def keep(path: Path, key: Any, value: Any) -> None:
    """Keep `value` at `path` under `key`, signed; quietly nothing when it cannot be (derived data)."""
    secret = _user_key()
    if secret is None:
        return
    try:
        payload = pickle.dumps((code_fingerprint(), key), protocol=pickle.HIGHEST_PROTOCOL) + \
            pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return
    temp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(temp, "wb") as handle:
            handle.write(_sign(secret, payload))
            handle.write(payload)
        os.replace(temp, path)
    except OSError:
        try:
            temp.unlink(missing_ok=True)
        except OSError:
            pass
