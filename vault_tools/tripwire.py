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

The config and the merged topics are put back only across one agent call (`put_back_settings`): copied by the
pre-tool-use hook as the call begins (`record_files.remember_settings`), checked by post-tool-use for that call.

A vault without git is covered as well as one with it. What is checked is remembered by the files' sizes and
times (`record_files.LEDGER_STAMP`), so a call that changed nothing costs a few stats. Docs: docs/agents.md ("The tripwire").
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from . import durable
from .layout import git_dir
from .record_files import (
    KEPT_FOLDER,
    LEDGER_COPIES_FOLDER,
    LEDGER_STAMP,
    LEDGER_SUFFIX,
    LEGACY_LEDGER,
    SETTINGS_COPIES_FOLDER,
    STATE_DIR,
    file_stat,
    read_stamp,
    remember_settings,
    settings_files,
    settings_stamp,
)
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
    if _git_at_work(ledger.local_dir.parent):
        return []  # a pull, a rebase or a merge under way rewrites the ledger as it goes: checked once it is done
    pairs = _pairs(ledger, folder)
    if _stamp(pairs) == read_stamp(folder) and all(copy.exists() for path, copy, _ in pairs if path.exists()):
        return []
    found: list[PutBack] = []
    with ledger.locked():
        pairs = _pairs(ledger, folder)
        committed = _Committed(ledger.local_dir.parent)
        for path, copy, shown in pairs:
            restored = _checked(path, copy, committed)
            if restored:
                found.append(PutBack(shown, restored))
        try:
            folder.mkdir(parents=True, exist_ok=True)
            durable.write_atomic(folder / LEDGER_STAMP, json.dumps(_stamp(pairs), sort_keys=True).encode("utf-8"))
        except OSError:
            pass  # checked again next time
    return found  # the ledger's own caches go by the files' stat: a file written back is read again


def damaged_ledgers(ledger: Ledger) -> list[PutBack]:
    """What `put_back_ledgers` would put back, writing nothing (for lint)."""
    folder = ledger.local_dir / LEDGER_COPIES_FOLDER
    committed = _Committed(ledger.local_dir.parent)
    found = []
    for path, copy, shown in _pairs(ledger, folder):
        try:
            kept = _complete(copy.read_bytes())
        except OSError:
            continue
        lost = _lost(kept, _complete(_read(path)), path, committed)
        if lost:
            found.append(PutBack(shown, len(lost)))
    return found


def _stamp(pairs: list[tuple[Path, Path, str]]) -> dict[str, list[int] | None]:
    """Each ledger file's stat, by its real path (the hook and the commands may reach the vault by two paths)."""
    return {os.path.realpath(path): file_stat(path) for path, _, _ in pairs}


def _pairs(ledger: Ledger, folder: Path) -> list[tuple[Path, Path, str]]:
    """(ledger file, its copy, its path as shown) for every file the ledger is read from and every copy whose file
    is gone."""
    found = {file.path: (file.path, ledger.copy_of(file), file.display_path) for file in ledger.files()}
    try:
        copies = sorted(name for name in os.listdir(folder) if name.endswith(LEDGER_SUFFIX))
    except OSError:
        copies = []
    for name in copies:
        if ledger.shared_dir is not None and name == LEGACY_LEDGER:
            continue  # the hidden layout's file, moved into the shared one (`migrate`): never written back
        path = ledger.local_dir / LEGACY_LEDGER if ledger.shared_dir is None else ledger.shared_dir / name
        if path not in found:
            shown = f"{ledger.shared_dir.parent.name}/{ledger.shared_dir.name}/{name}" \
                if ledger.shared_dir is not None else f".vault-tools/{name}"
            found[path] = (path, folder / name, shown)
    return list(found.values())


def _checked(path: Path, copy: Path, committed: _Committed) -> int:
    """Put back into `path` the lines of `copy` it lost (how many), or bring `copy` up to `path`. Only whole lines
    count: a last line without its newline is an append under way (a sync bringing the file in pieces) or cut
    short by a kill, and is left where it is."""
    data = _read(path)
    current = _complete(data)
    tail = data[len(b"".join(current)):] if not data.endswith(b"\n") else b""
    try:
        kept = _complete(copy.read_bytes())
    except FileNotFoundError:
        kept = None
    if kept is None:
        if current:
            copy.parent.mkdir(parents=True, exist_ok=True)
            durable.write_atomic(copy, b"".join(current))
        return 0
    lost = _lost(kept, current, path, committed)
    if not lost:
        if current != kept:  # the record grew (a pull, an append the copy missed), or went back with git
            durable.write_atomic(copy, b"".join(current))
        return 0
    present, restored = {_key(line) for line in current}, set(lost)
    kept_keys = {_key(line) for line in kept}
    whole = [line for line in kept if _key(line) in present or line in restored] + \
        [line for line in current if _key(line) not in kept_keys]
    path.parent.mkdir(parents=True, exist_ok=True)
    durable.write_atomic(path, b"".join(whole) + tail)
    durable.write_atomic(copy, b"".join(whole))
    return len(lost)


def _lost(kept: list[bytes], current: list[bytes], path: Path, committed: _Committed) -> list[bytes]:
    """The copy's lines the file no longer holds (line endings aside: a CRLF checkout holds them all), less those
    a git commit holds but the commit checked out does not: a line that went with a branch switch or a reset to
    a commit is not lost; one the checked-out commit holds and the file lost (a script emptied it) is."""
    present = {_key(line) for line in current}
    missing = [line for line in kept if _key(line) not in present]
    if not missing:
        return []
    held, checked_out = committed.lines(path), committed.head_lines(path)
    return [line for line in missing if _key(line) not in held or _key(line) in checked_out]


class _Committed:
    """The ledger lines git commits hold, of any branch (asked only when lines are missing)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._found: dict[Path, set[bytes]] = {}

    def lines(self, path: Path) -> set[bytes]:
        if path not in self._found:
            self._found[path] = self._read(path)
        return self._found[path]

    def head_lines(self, path: Path) -> set[bytes]:
        """The lines of the file in the commit checked out (HEAD)."""
        try:
            relative = path.resolve().relative_to(self.root.resolve()).as_posix()
            done = subprocess.run(["git", "show", f"HEAD:./{relative}"], cwd=self.root, capture_output=True,
                                  timeout=GIT_SECONDS, check=False)
        except (OSError, ValueError, subprocess.SubprocessError):
            return set()
        return {_key(line) for line in done.stdout.splitlines()} if done.returncode == 0 else set()

    def _read(self, path: Path) -> set[bytes]:
        try:
            done = subprocess.run(["git", "log", "--all", "--format=", "-p", "--", str(path)], cwd=self.root,
                                  capture_output=True, timeout=GIT_SECONDS, check=False)
        except (OSError, subprocess.SubprocessError):
            return set()
        if done.returncode != 0:
            return set()
        return {_key(line[1:]) for line in done.stdout.splitlines() if line.startswith(b"+") and
                not line.startswith(b"+++")}


GIT_SECONDS = 10
# What git leaves in its folder while a merge, a rebase, a cherry-pick or a revert is under way
_GIT_AT_WORK = ("MERGE_HEAD", "rebase-merge", "rebase-apply", "CHERRY_PICK_HEAD", "REVERT_HEAD", "index.lock")


def _git_at_work(root: Path) -> bool:
    found = git_dir(root)
    return found is not None and any((found / name).exists() for name in _GIT_AT_WORK)


def _key(line: bytes) -> bytes:
    return line.rstrip(b"\r\n")


def _complete(data: bytes) -> list[bytes]:
    """The whole lines of `data` (each with its newline); a last line without one is left out."""
    lines = data.splitlines(keepends=True)
    return lines if not lines or lines[-1].endswith(b"\n") else lines[:-1]


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


def put_back_settings(root: Path, call: str) -> list[str]:
    """The config and merged topics as they were before the agent's call `call`, where the call changed them
    (`record_files.remember_settings` copied them then): what the call left is kept under `kept/`, never lost.
    Each as shown, with where that copy is."""
    stamp = settings_stamp(root)
    files = stamp.get("files") if stamp is not None and stamp.get("call") == call else None
    if not isinstance(files, dict):
        return []
    copies = root / STATE_DIR / SETTINGS_COPIES_FOLDER
    found = []
    for path in settings_files(root):
        before = files.get(path.name)
        if file_stat(path) == before:
            continue
        left = _read(path) if path.exists() else None
        wanted = _read(copies / path.name) if before is not None else None
        if before is not None and not (copies / path.name).exists():
            continue  # no copy to put back (a state folder cleared meanwhile): lint still checks the file
        shown = path.relative_to(root).as_posix()
        if left is not None:
            kept = path.parent / KEPT_FOLDER / f"{path.name} as an agent's command left it {time.strftime('%Y-%m-%d %H%M%S')} {os.getpid()}.txt"
            durable.write_atomic(kept, left)
            shown += f" (what the command left is kept in {kept.relative_to(root).as_posix()})"
        if wanted is None:
            path.unlink(missing_ok=True)
        else:
            durable.write_atomic(path, wanted)
        found.append(shown)
    remember_settings(root, None)
    return found


def told_settings(found: list[str]) -> str:
    """What the agent is told of settings put back."""
    return (f"A command changed the owner's vault-tools settings, and vault-tools put them back: {'; '.join(found)}. "
            "The config and the merged topics are the owner's; a change to them is the owner's to make (topics are "
            "merged by ticking a proposal of `vault-tools review`).")


def told(found: list[PutBack]) -> str:
    """What the agent (and the watcher's log) is told of lines put back."""
    files = "; ".join(f"{item.shown} ({item.lines} line(s))" for item in found)
    return (f"The decision ledger lost lines a command took out, and vault-tools put them back: {files}. The ledger is "
            "append-only and written only by vault-tools: a change to the record is made with `vault-tools ask`, "
            "`rule`, `withdraw` or `retract`.")
