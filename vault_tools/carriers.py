"""Conflict copies: the files a sync engine makes when a note was changed on two devices between syncs.

Each engine names them its own way (see docs/several-machines.md for the sources):

- Obsidian Sync ("Create conflict file"): `Name (Conflicted copy DEVICE YYYYMMDDHHMM).md`
- Dropbox: `Name (EDITOR's conflicted copy YYYY-MM-DD).md`
- Syncthing: `Name.sync-conflict-YYYYMMDD-HHMMSS-DEVICEID.md`
- iCloud Drive: a numbered twin, `Name 2.md`

A copy of a decision note holds the same id as its original. It is never read as a note of its own (that
would be a second record with the same id): it is set aside, reported by lint with the original it
shadows, and shown to the owner to settle. A numbered twin counts only when its original is beside it
with the same id, since `Untitled 2.md` is how Obsidian names any new note. Pure: no I/O.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_PATTERNS = (
    ("Obsidian Sync", re.compile(r"^(?P<stem>.+) \(Conflicted copy (?P<device>.+) \d{12}\)(?P<ext>\.md)$")),
    ("Dropbox", re.compile(r"^(?P<stem>.+) \((?:(?P<device>.+)'s )?conflicted copy \d{4}-\d{2}-\d{2}(?: \(\d+\))?\)"
                           r"(?P<ext>\.md)$", re.IGNORECASE)),
    ("Syncthing", re.compile(r"^(?P<stem>.+)\.sync-conflict-\d{8}-\d{6}(?:-(?P<device>[A-Z0-9]+))?(?P<ext>\.md)$")),
)
_NUMBERED = re.compile(r"^(?P<stem>.+) (?P<number>[2-9]|[1-9]\d+)(?P<ext>\.md)$")
ICLOUD = "iCloud Drive"


@dataclass(frozen=True)
class ConflictCopy:
    path: str  # the copy, vault-relative
    original: str  # the note it shadows
    carrier: str  # the engine that made it
    id: str  # the decision id both hold

    def describe(self) -> str:
        return f"{self.path} is a conflict copy {self.carrier} made of {self.original}"


# docs/design/0028-conflict-copies-and-twin-revisions.md
def original_name(path: str) -> tuple[str, str] | None:
    """(the original's path, the engine) when `path` is named as a conflict copy; numbered twins aside."""
    folder, _, name = path.rpartition("/")
    for carrier, pattern in _PATTERNS:
        match = pattern.match(name)
        if match:
            original = match.group("stem") + match.group("ext")
            return (f"{folder}/{original}" if folder else original), carrier
    return None


def numbered_original(path: str) -> str | None:
    """The original's path when `path` is a numbered twin (`Name 2.md`), as iCloud Drive makes them."""
    folder, _, name = path.rpartition("/")
    match = _NUMBERED.match(name)
    if not match:
        return None
    original = match.group("stem") + match.group("ext")
    return f"{folder}/{original}" if folder else original


def find_copies(notes: dict[str, str]) -> list[ConflictCopy]:
    """The conflict copies among decision notes, given each note's id by path. A copy must share its id
    with another note: with its original where that is still there, else (the original was renamed or
    moved on the other device) with the one other note of that id."""
    by_id: dict[str, list[str]] = {}
    for path, decision_id in notes.items():
        by_id.setdefault(decision_id, []).append(path)
    found = []
    for path, decision_id in sorted(notes.items()):
        twins = [other for other in by_id.get(decision_id, []) if other != path]
        if not twins:
            continue
        named = original_name(path)
        if named is not None:
            original, carrier = named
            if original not in twins:
                plain = [t for t in twins if original_name(t) is None]
                if len(plain) != 1:
                    continue
                original = plain[0]
            found.append(ConflictCopy(path, original, carrier, decision_id))
            continue
        numbered = numbered_original(path)
        if numbered is not None and numbered in twins:
            found.append(ConflictCopy(path, numbered, ICLOUD, decision_id))
    return found
