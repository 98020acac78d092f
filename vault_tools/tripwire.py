"""The tripwire: lines of the ledger that vault-tools did not take out are put back.

The ledger is append-only and only vault-tools writes it; refusing an agent's writes beforehand cannot see every
shell form (`python3 -c`, a variable, `git checkout -f`). So this device keeps a copy of each ledger file
(`Ledger.copy_of`), extended by every append vault-tools makes, and checks the files against their copies after
every agent tool call (the `post-tool-use` hook) and at every watcher pass:

- a file that no longer holds every line of its copy (lines taken out or rewritten, the file emptied or deleted)
  is written back: its copy's lines in their order, then the lines the file holds that the copy does not (another
  device's, arrived by git);
- a file holding every line of its copy, and more, is the record growing (an append a crash kept from the copy, a
  pull): the copy takes the new lines.

A vault without git is covered as well as one with it. What is checked is remembered by the files' sizes and
times (`record_files.LEDGER_STAMP`), so a call that changed nothing costs a few stats. Docs: docs/agents.md ("The tripwire").
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from . import durable
from .record_files import LEDGER_COPIES_FOLDER, LEDGER_STAMP, LEDGER_SUFFIX, LEGACY_LEDGER, file_stat, read_stamp
from .vault import Vault

if TYPE_CHECKING:
    from .ledger import Ledger

@dataclass(frozen=True)
class PutBack:
    """A ledger file written back from this device's copy."""

    shown: str  # the file, as a person types its path
    lines: int  # lines of the copy the file had lost


def put_back_at(root: Path) -> list[PutBack]:
    """`put_back_ledgers` for the vault at `root` (the `post-tool-use` hook, once a ledger file changed)."""
    return put_back_ledgers(Vault(root).ledger)


def put_back_ledgers(ledger: Ledger) -> list[PutBack]:
    """Check every ledger file against this device's copy; put back what was taken out. The caller need not hold
    the ledger's lock: it is taken only when a file changed since it was last checked."""
    folder = ledger.local_dir / LEDGER_COPIES_FOLDER
    pairs = _pairs(ledger, folder)
    stamp = {str(path): file_stat(path) for path, _, _ in pairs}
    if pairs and stamp == read_stamp(folder) and all(copy.exists() for _, copy, _ in pairs):
        return []
    found: list[PutBack] = []
    with ledger.locked():
        for path, copy, shown in _pairs(ledger, folder):
            restored = _checked(path, copy)
            if restored:
                found.append(PutBack(shown, restored))
        stamp = {str(path): file_stat(path) for path, _, _ in _pairs(ledger, folder)}
        try:
            folder.mkdir(parents=True, exist_ok=True)
            durable.write_atomic(folder / LEDGER_STAMP, json.dumps(stamp, sort_keys=True).encode("utf-8"))
        except OSError:
            pass  # checked again next time
    return found  # the ledger's own caches go by the files' stat: a file written back is read again


def damaged_ledgers(ledger: Ledger) -> list[PutBack]:
    """What `put_back_ledgers` would put back, writing nothing (for lint)."""
    folder = ledger.local_dir / LEDGER_COPIES_FOLDER
    found = []
    for path, copy, shown in _pairs(ledger, folder):
        try:
            kept = copy.read_bytes().splitlines(keepends=True)
        except OSError:
            continue
        now = set(_lines(path))
        lost = sum(1 for line in kept if line not in now)
        if lost:
            found.append(PutBack(shown, lost))
    return found


def _pairs(ledger: Ledger, folder: Path) -> list[tuple[Path, Path, str]]:
    """(ledger file, its copy, its path as shown) for every file the ledger is read from and every copy whose file
    is gone."""
    found = {file.path: (file.path, ledger.copy_of(file), file.display_path) for file in ledger.files()}
    try:
        copies = sorted(name for name in os.listdir(folder) if name.endswith(LEDGER_SUFFIX))
    except OSError:
        copies = []
    for name in copies:
        path = ledger.local_dir / LEGACY_LEDGER if name == LEGACY_LEDGER or ledger.shared_dir is None \
            else ledger.shared_dir / name
        if path not in found:
            shown = f"{ledger.shared_dir.parent.name}/{ledger.shared_dir.name}/{name}" \
                if ledger.shared_dir is not None and path.parent == ledger.shared_dir else f".vault-tools/{name}"
            found[path] = (path, folder / name, shown)
    return list(found.values())


def _checked(path: Path, copy: Path) -> int:
    """Put back into `path` the lines of `copy` it lost (how many), or bring `copy` up to `path`."""
    current = _lines(path)
    try:
        kept = copy.read_bytes().splitlines(keepends=True)
    except FileNotFoundError:
        kept = None
    if kept is None:
        if current:
            copy.parent.mkdir(parents=True, exist_ok=True)
            durable.write_atomic(copy, b"".join(current))
        return 0
    present = set(current)
    lost = [line for line in kept if line not in present]
    if not lost:
        if current != kept:
            durable.write_atomic(copy, b"".join(current))  # the record grew (a pull, an append the copy missed)
        return 0
    known = set(kept)
    whole = kept + [line for line in current if line not in known]
    path.parent.mkdir(parents=True, exist_ok=True)
    durable.write_atomic(path, b"".join(line if line.endswith(b"\n") else line + b"\n" for line in whole))
    durable.write_atomic(copy, b"".join(whole))
    return len(lost)


def _lines(path: Path) -> list[bytes]:
    try:
        return path.read_bytes().splitlines(keepends=True)
    except FileNotFoundError:
        return []


def told(found: list[PutBack]) -> str:
    """What the agent (and the watcher's log) is told of lines put back."""
    files = "; ".join(f"{item.shown} ({item.lines} line(s))" for item in found)
    return (f"The decision ledger lost lines a command took out, and vault-tools put them back: {files}. The ledger is "
            "append-only and written only by vault-tools: a change to the record is made with `vault-tools ask`, "
            "`rule`, `withdraw` or `retract`.")
