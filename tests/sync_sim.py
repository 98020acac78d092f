"""A sync engine between device folders, with each carrier's documented rules (docs/several-machines.md):

- Obsidian Sync: files and folders beginning with `.` are skipped (but `.obsidian`); Markdown always
  syncs, other types only with "Sync all other types" on; a Markdown file changed on two devices gives
  a conflict file ("Create conflict file": `Name (Conflicted copy DEVICE YYYYMMDDHHMM).md`), any other
  file: the last modified version wins and the other is dropped.
- Syncthing: everything but what `.stignore` names (and `.stignore` itself); a file changed on two
  devices: the one modified earlier becomes `Name.sync-conflict-YYYYMMDD-HHMMSS-DEVICE.ext`.
- Dropbox: everything; the version saved last becomes `Name (DEVICE's conflicted copy YYYY-MM-DD).ext`.
- iCloud Drive: everything; the last modified version keeps the name, the other becomes `Name 2.ext`.

A sync uploads what changed on the device since its last sync, then brings it what the cloud has.
Modification times travel with the files.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

CARRIERS = ("obsidian-sync", "syncthing", "dropbox", "icloud")


@dataclass
class Version:
    data: bytes | None  # None: deleted
    mtime: float


@dataclass
class Device:
    name: str
    root: Path
    base: dict[str, bytes] = field(default_factory=dict)  # what each path held after this device's last sync


class Cloud:
    def __init__(self, carrier: str, *, other_types: bool = True) -> None:
        assert carrier in CARRIERS
        self.carrier = carrier
        self.other_types = other_types  # Obsidian Sync's "Sync all other types"
        self.files: dict[str, Version] = {}
        self.stamp = 0

    def carries(self, device: Device, rel: str) -> bool:
        parts = rel.split("/")
        if self.carrier == "obsidian-sync":
            if any(part.startswith(".") for part in parts) and parts[0] != ".obsidian":
                return False
            return rel.endswith(".md") or self.other_types
        if self.carrier == "syncthing":
            if rel in (".stignore",) or parts[0] == ".stfolder":
                return False
            ignore = device.root / ".stignore"
            patterns = ignore.read_text().split() if ignore.exists() else []
            return not any(part in patterns for part in parts)
        return True

    def _scan(self, device: Device) -> dict[str, Version]:
        found = {}
        for path in device.root.rglob("*"):
            rel = path.relative_to(device.root).as_posix()
            if path.is_file() and not path.name.endswith(".lock") and self.carries(device, rel):
                found[rel] = Version(path.read_bytes(), path.stat().st_mtime)
        return found

    def _copy_name(self, rel: str, device: Device) -> str:
        self.stamp += 1
        folder, _, name = rel.rpartition("/")
        stem, dot, ext = name.rpartition(".")
        if not dot:
            stem, ext = name, ""
        ext = f".{ext}" if ext else ""
        copy = {
            "obsidian-sync": f"{stem} (Conflicted copy {device.name} 2026120110{self.stamp:02d}){ext}",
            "syncthing": f"{stem}.sync-conflict-20261201-1000{self.stamp:02d}-{device.name.upper():A<7}{ext}",
            "dropbox": f"{stem} ({device.name}'s conflicted copy 2026-12-01){ext}",
            "icloud": f"{stem} {self.stamp + 1}{ext}",
        }[self.carrier]
        return f"{folder}/{copy}" if folder else copy

    def sync(self, device: Device) -> None:
        local = self._scan(device)
        for rel in sorted(set(local) | set(device.base)):
            mine = local.get(rel, Version(None, 0.0))
            base = device.base.get(rel)
            if mine.data == base:
                continue  # unchanged here since the last sync
            theirs = self.files.get(rel)
            if theirs is None or theirs.data == base or theirs.data == mine.data:
                self.files[rel] = mine
                continue
            if mine.data is None or theirs.data is None:  # changed on one side, deleted on the other: kept
                self.files[rel] = mine if mine.data is not None else theirs
                continue
            self._conflict(device, rel, mine, theirs)
        for rel, version in self.files.items():
            if not self.carries(device, rel):
                continue
            path = device.root / rel
            if version.data is None:
                path.unlink(missing_ok=True)
                continue
            if not path.exists() or path.read_bytes() != version.data:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(version.data)
                os.utime(path, (version.mtime, version.mtime))
        device.base = {rel: v.data for rel, v in self.files.items() if v.data is not None and self.carries(device, rel)}

    def _conflict(self, device: Device, rel: str, mine: Version, theirs: Version) -> None:
        markdown = rel.endswith(".md")
        if self.carrier == "obsidian-sync" and not markdown:
            self.files[rel] = mine if mine.mtime >= theirs.mtime else theirs  # last modified wins
            return
        if self.carrier == "obsidian-sync":  # "Create conflict file": the remote version keeps the name
            self.files[self._copy_name(rel, device)] = mine
            return
        if self.carrier == "dropbox":  # the version saved last is the conflicted copy
            self.files[self._copy_name(rel, device)] = mine
            return
        newer, older = (mine, theirs) if mine.mtime >= theirs.mtime else (theirs, mine)
        self.files[rel] = newer
        self.files[self._copy_name(rel, device)] = older

    def settle(self, *devices: Device, rounds: int = 3) -> None:
        """Sync every device in turn until nothing moves."""
        for _ in range(rounds):
            for device in devices:
                self.sync(device)
