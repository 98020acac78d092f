"""`migrate`: move a vault's record from `.vault-tools/` (hidden: Obsidian Sync never carries it) to
`vault-tools/`, the layout every carrier brings to every device.

Nothing is lost and nothing is rewritten: the config, topic aliases and kept copies move byte for
byte; the ledger's lines move, byte for byte, into this device's own ledger file. Each step is
safe to cut short and to run again: a line already moved is not moved twice, and until the old
ledger is removed both are read (the same line in both is one event).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .. import durable
from ..errors import InconsistentVault, UsageError
from ..layout import device_tag, is_shared
from ..ledger_lines import parse_ledger
from ..record_files import (
    CONFIG_FILE,
    KEPT_FOLDER,
    LEDGER_COPIES_FOLDER,
    LEDGER_FOLDER,
    LEDGER_STAMP,
    LEDGER_SUFFIX,
    LEGACY_LEDGER,
    RECORD_DIR,
    STATE_DIR,
    TOPICS_FILE,
    remember_settings,
)
from ..vault import Vault
from .setup import init_vault


@dataclass
class Migrated:
    moved: list[str] = field(default_factory=list)  # "from -> to", as shown to the owner
    lines: int = 0  # ledger lines moved
    ledger: str | None = None  # this device's ledger file
    changed: list[str] = field(default_factory=list)  # what setting up the shared layout wrote
    already: bool = False  # nothing was left to move


def migrate(root: Path) -> Migrated:
    """Move the record to the shared layout; refused (nothing written) when the old ledger is damaged."""
    done = Migrated()
    local = root / STATE_DIR
    legacy = local / LEGACY_LEDGER
    old_config = local / CONFIG_FILE
    leftovers = [path for path in (legacy, old_config, local / TOPICS_FILE, local / KEPT_FOLDER) if path.exists()]
    if is_shared(root) and not leftovers:
        done.already = True
        return done
    if not (local.is_dir() or is_shared(root)):
        raise UsageError("has no record to move (no .vault-tools/ folder); `vault-tools init` sets up a new vault",
                         path=str(root))
    text = ""
    if legacy.exists():
        try:
            text = legacy.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            raise InconsistentVault("ledger is not UTF-8; nothing was moved", path=f"{STATE_DIR}/{LEGACY_LEDGER}") from None
        parse_ledger(text, f"{STATE_DIR}/{LEGACY_LEDGER}")  # a damaged or torn line stops the move before it starts
    record = root / RECORD_DIR
    vault = Vault(root)
    with vault.ledger.locked():
        record.mkdir(exist_ok=True)
        # The config first: from the moment `vault-tools/` holds it, every command reads the shared layout.
        for name in (CONFIG_FILE, TOPICS_FILE):
            if (local / name).exists():
                _move(local / name, record / name, root, done)
        if (local / KEPT_FOLDER).is_dir():
            for path in sorted((local / KEPT_FOLDER).rglob("*")):
                if path.is_file():
                    _move(path, record / KEPT_FOLDER / path.relative_to(local / KEPT_FOLDER), root, done)
            _remove_empty_folders(local / KEPT_FOLDER)
        done.changed = init_vault(root, shared=True)
        remember_settings(root, None)  # the settings moved: the tripwire knows them where they are now
        tag = device_tag(root, shared=True)
        own = record / LEDGER_FOLDER / f"{tag}{LEDGER_SUFFIX}"
        done.ledger = own.relative_to(root).as_posix()
        if legacy.exists():
            done.lines = _move_lines(text, own, record / LEDGER_FOLDER)
            # the tripwire's copy goes with it: a copy of the old file would put it back
            copies = local / LEDGER_COPIES_FOLDER
            for stale in (copies / LEGACY_LEDGER, copies / LEDGER_STAMP):
                stale.unlink(missing_ok=True)
            legacy.unlink()
            done.moved.append(f"{STATE_DIR}/{LEGACY_LEDGER} -> {done.ledger} ({done.lines} lines)")
    return done


def _move(source: Path, target: Path, root: Path, done: Migrated) -> None:
    """Move one file byte for byte; a file already at the target is kept, and this one beside it."""
    data = source.read_bytes()
    if target.exists() and target.read_bytes() != data:
        counter = 2
        while (candidate := target.with_name(f"{target.stem} {counter}{target.suffix}")).exists():
            counter += 1
        target = candidate
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        durable.write_atomic(target, data)
    source.unlink()
    done.moved.append(f"{source.relative_to(root).as_posix()} -> {target.relative_to(root).as_posix()}")


def _move_lines(text: str, own: Path, folder: Path) -> int:
    """Append the old ledger's lines, as they are, to this device's file; lines any ledger file holds already
    (a move cut short, or made on another clone first) are not written again."""
    present: set[str] = set()
    for path in folder.glob(f"*{LEDGER_SUFFIX}"):
        present.update(line.rstrip("\r") for line in path.read_text(encoding="utf-8").split("\n") if line.strip())
    lines = [line.rstrip("\r") for line in text.split("\n") if line.strip()]
    missing = [line for line in lines if line not in present]
    if not missing:
        return 0
    payload = "".join(line + "\n" for line in missing).encode("utf-8")
    own.parent.mkdir(parents=True, exist_ok=True)
    with open(own, "a+b", buffering=0) as handle:
        size = handle.seek(0, os.SEEK_END)
        if size:
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) != b"\n":
                raise InconsistentVault("torn last line; check it and remove the partial line by hand",
                                        path=own.name)
            handle.seek(0, os.SEEK_END)
        handle.write(payload)
        os.fsync(handle.fileno())
    return len(missing)


def _remove_empty_folders(folder: Path) -> None:
    for path in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()
    if folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
