"""The git merge driver for decision notes (`merge.vault-tools-notes`, set up by `init`).

git calls it with the common ancestor, this clone's version and the other clone's version of one note. It
merges them as git's own text merge would. Where both clones closed one decision differently (one ruled
the question, the other withdrew it; two rulings each superseded it), their lifecycle properties conflict:
this clone's lines are kept in the note, and the ledger, merged by line union, holds both outcomes with
the text each clone wrote, which `lint`, the pages and `context` show as
a conflict for the owner to settle. Any other conflict is left to the owner, with git's markers.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

from .. import notes
from ..errors import NoteError
from ..model import KNOWN_FIELDS

_PROPERTY_LINE = re.compile(r"^(?P<key>[A-Za-z_][\w-]*)\s*:")
_LIST_ITEM = re.compile(r"^\s*- ")
OURS, THEIRS = b"<<<<<<< ", b">>>>>>> "


def _status_and_successor(text: bytes | None) -> tuple[object, object]:
    if text is None:
        return None, None
    try:
        note = notes.parse_text(notes.decode(text, Path("note.md"))[0], Path("note.md"))
    except Exception:  # a side that cannot be read has no lifecycle to compare
        return None, None
    data = note.data if hasattr(note.data, "get") else {}
    return data.get("status"), data.get("superseded_by")


def _lifecycle_only(lines: list[bytes]) -> bool:
    for line in lines:
        text = line.decode("utf-8", errors="replace").rstrip("\r\n")
        match = _PROPERTY_LINE.match(text)
        if match and match.group("key") in KNOWN_FIELDS:
            continue
        if _LIST_ITEM.match(text) or not text.strip():
            continue
        return False
    return True


def resolve_lifecycle_conflicts(merged: bytes) -> tuple[bytes, bool]:
    """Take this clone's side of every conflict hunk that lies in the frontmatter and holds only the
    tool's own properties; True when no conflict is left."""
    lines = merged.splitlines(keepends=True)
    out: list[bytes] = []
    index, fences, clean = 0, 0, True
    while index < len(lines):
        line = lines[index]
        if not line.startswith(OURS):
            if line.rstrip(b"\r\n").rstrip(b" \t") == b"---":
                fences += 1
            out.append(line)
            index += 1
            continue
        middle = next((i for i in range(index + 1, len(lines)) if lines[i].startswith(b"=======")), None)
        end = next((i for i in range(middle or index, len(lines)) if lines[i].startswith(THEIRS)), None) \
            if middle is not None else None
        if middle is None or end is None:
            return merged, False
        ours, theirs = lines[index + 1:middle], lines[middle + 1:end]
        if fences == 1 and _lifecycle_only(ours) and _lifecycle_only(theirs):
            out.extend(ours)
        else:
            out.extend(lines[index:end + 1])
            clean = False
        index = end + 1
    return b"".join(out), clean


def merge_note(base: Path, ours: Path, theirs: Path, shown: str) -> int:
    """Merge `theirs` into `ours` (written in place, as git expects); 0 when merged, 1 when conflicts remain."""
    done = subprocess.run(["git", "merge-file", "-p", "-L", "ours", "-L", "base", "-L", "theirs",
                           str(ours), str(base), str(theirs)], capture_output=True, timeout=60)
    if done.returncode < 0 or done.returncode > 127:  # git could not merge at all: ours is left as it is
        said = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        raise NoteError(f"cannot merge: {said[-1].removeprefix('error: ') if said else 'git merge-file failed'}", path=shown)
    merged = done.stdout
    if done.returncode == 0:
        ours.write_bytes(merged)
        return 0
    ours_bytes, theirs_bytes = ours.read_bytes(), theirs.read_bytes()
    ours_state, theirs_state = _status_and_successor(ours_bytes), _status_and_successor(theirs_bytes)
    base_status = _status_and_successor(base.read_bytes() if base.exists() else None)[0]
    closed_differently = ours_state[0] != theirs_state[0] or (
        ours_state[1] and theirs_state[1] and ours_state[1] != theirs_state[1]) or (
        base_status not in (ours_state[0], theirs_state[0]))  # both moved it on (two answers to one question)
    if closed_differently:
        merged, clean = resolve_lifecycle_conflicts(merged)
        if clean:
            ours.write_bytes(merged)
            return 0
    ours.write_bytes(merged)
    return 1
