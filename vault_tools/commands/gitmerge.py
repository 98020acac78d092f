"""The git merge driver for decision notes (`merge.vault-tools-notes`, set up by `init`).

git calls it with the common ancestor, this clone's version and the other clone's version of one note. It
merges them as git's own text merge would. Where both clones closed one decision differently (one ruled
the question, the other withdrew it; two rulings each superseded it), their lifecycle properties conflict:
this clone's lines are kept in the note (in every hunk both sides changed), and the ledger, merged by line union, holds both outcomes with
the text each clone wrote, which `lint`, the pages and `context` show as
a conflict for the owner to settle. The same holds where both closed it the same way with different reasons
(two retractions; a rebase replaying one clone's commit over the other's meets it after the ledger's
conflict was settled). Where one side holds a ruling and the other that very ruling retracted or superseded
(a rebase copied the ruling's commit, so both look moved on from the open question), the closing is
the later step and is kept. The note always holds one outcome whole (`_one_outcome`). Where both hold another
ruling (two settlements, each keeping its own answer), every line both changed is this clone's; every other
line merges as git merges it. Any other conflict (the owner's text changed on both sides of a note whose
outcome both agree on) is left to the owner, with git's markers.

Whenever one side's lifecycle lines give way, both sides' texts are first kept whole (named by
`record_files.merge_copy_name`, in this device's `.vault-tools/merged/` until the watcher files them under
`kept/`): a side may be an outcome typed in Obsidian and committed before the watcher recorded it, which no
ledger holds, and a rebase that drops the commit it came in would lose it. The watcher records such an outcome
from its copy (`commands.merge_copies`), so two outcomes become a conflict to settle. If the copies cannot be
written, nothing is resolved: git's markers stay, for the owner.
"""
from __future__ import annotations

import hashlib
import re
import subprocess
from collections.abc import Iterable
from pathlib import Path

from .. import durable, note_edits, notes
from ..errors import NoteError, VaultToolsError
from ..layout import layout_of
from ..model import KNOWN_FIELDS, answer_of, is_decision_mapping, is_ledger_property
from ..record_files import claims_decision, find_vault, merge_copy_name

_PROPERTY_LINE = re.compile(r"^(?P<key>[A-Za-z_][\w-]*)\s*:")
_LIST_ITEM = re.compile(r"^\s*- ")
OURS, THEIRS = b"<<<<<<< ", b">>>>>>> "
_SHOWN = Path("note.md")
CLOSING_FIELDS = ("status", "superseded_by", "reason")  # what closing a decision writes
_CLOSED = ("superseded", "retracted", "withdrawn")  # the statuses a closing writes, with its reason


def _read(text: bytes | None) -> notes.Note | None:
    if text is None:
        return None
    try:
        decoded, bom = notes.decode(text, _SHOWN)
        note = notes.parse_text(decoded, _SHOWN, bom=bom)
    except Exception:  # a side that cannot be read has no lifecycle to compare
        return None
    return note if hasattr(note.data, "get") else None


def _a_decision_note(note: notes.Note | None) -> bool:
    """Whether the vault reads this side as a decision note: its properties say `type: decision` as the read
    looks for it (`claims_decision`), and mean it. A note the model would take so only through a YAML form the
    read does not look for (a block scalar, an escape) is an ordinary note to every reader, and merged as one."""
    return note is not None and note.frontmatter is not None and claims_decision(note.frontmatter) and \
        is_decision_mapping(note.data)


def _lifecycle(note: notes.Note | None) -> tuple[object, object]:
    return (note.data.get("status"), note.data.get("superseded_by")) if note else (None, None)


def _aligned(merged: bytes, side: notes.Note, other: notes.Note, keys: Iterable[str]) -> bytes:
    """The merged note with each of `keys` on which the two sides differ as it is on `side`."""
    note = _read(merged)
    if note is None:
        return merged
    changes = {key: side.data.get(key, note_edits.REMOVE) for key in keys
               if side.data.get(key) != other.data.get(key) and note.data.get(key) != side.data.get(key)}
    return durable.encode(note_edits.with_fields(note, changes), bom=note.bom) if changes else merged


def _one_outcome(merged: bytes, ours: notes.Note, theirs: notes.Note, base: notes.Note | None) -> bytes:
    """A merge takes each line from the side that changed it, so a note both sides closed, or one closed
    while the other edited its closing lines, can mix two outcomes: superseded, with a retraction's
    reason and no successor. The note keeps one outcome whole; the other is in the merged ledger.

    Both sides moved it on: this clone's outcome, with every ledger property as it is here. One side
    moved it on: its closing properties and every ledger property it changed (a ruling's `ruled_at`); the
    other side's edits elsewhere stay merged."""
    here, there, common = _lifecycle(ours), _lifecycle(theirs), _lifecycle(base)
    if here == there:
        return merged
    if common in (here, there):  # one side moved it on: what it wrote for that (a ruling's ruled_at too)
        side, other = (theirs, ours) if common == here else (ours, theirs)
        changed = {key for key in side.data if is_ledger_property(str(key))
                   and (base is None or side.data.get(key) != base.data.get(key))}
        return _aligned(merged, side, other, {*CLOSING_FIELDS, *changed})
    ledger_keys = {key for key in (*ours.data, *theirs.data) if is_ledger_property(str(key))}
    if _closes(theirs, ours):  # the other side closed the very ruling this side holds: that came later
        return _aligned(merged, theirs, ours, ledger_keys)
    return _aligned(merged, ours, theirs, ledger_keys)


def _closes(closing: notes.Note, ruling: notes.Note) -> bool:
    """Whether `closing` is `ruling` superseded or retracted: the same answer (summary, ruled_at, ruled_by),
    one step on. Seen where a rebase copied the ruling's commit, so the merge's base is the open question
    and both sides look moved on: a settlement kept the ruling on one clone, its own clone retracted it."""
    answer = answer_of(ruling.data)
    return ruling.data.get("status") == "ruled" and closing.data.get("status") in ("superseded", "retracted") \
        and answer is not None and answer_of(closing.data) == answer


def _two_rulings(ours: notes.Note | None, theirs: notes.Note | None, base: notes.Note | None) -> bool:
    """The base held a ruling and each side holds another one, neither the other's: two clones each settled
    an answers conflict, keeping another answer (`settle` writes the kept answer, and both are in the ledger).
    Only their answer's own lines, where both sides changed them, are taken from this clone."""
    if ours is None or theirs is None or base is None:
        return False
    answers = [answer_of(note.data) for note in (ours, theirs, base)]
    return ours.data.get("status") == theirs.data.get("status") == base.data.get("status") == "ruled" and \
        len(set(answers)) == 3


def _lifecycle_only(lines: list[bytes], fields: frozenset[str] = KNOWN_FIELDS, lists: bool = True) -> bool:
    for line in lines:
        text = line.decode("utf-8", errors="replace").rstrip("\r\n")
        match = _PROPERTY_LINE.match(text)
        if match and match.group("key") in fields:
            continue
        if (lists and _LIST_ITEM.match(text)) or not text.strip():
            continue
        return False
    return True


def resolve_lifecycle_conflicts(merged: bytes, fields: frozenset[str] = KNOWN_FIELDS,
                                lists: bool = True, every: bool = False) -> tuple[bytes, bool]:
    """Take this clone's side of every conflict hunk that lies in the frontmatter and holds only the
    tool's own properties (only `fields`, and list items only with `lists`), or of every hunk with `every`;
    True when no conflict is left."""
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
        if every or (fences == 1 and _lifecycle_only(ours, fields, lists) and _lifecycle_only(theirs, fields, lists)):
            out.extend(ours)
        else:
            out.extend(lines[index:end + 1])
            clean = False
        index = end + 1
    return b"".join(out), clean


def merge_note(base: Path | str, ours: Path | str, theirs: Path | str, shown: str) -> int:
    """Merge `theirs` into `ours` (written in place, as git expects); 0 when merged, 1 when conflicts remain."""
    base, ours, theirs = Path(base), Path(ours), Path(theirs)  # git's merge driver passes the paths as text
    done = subprocess.run(["git", "merge-file", "-p", "-L", "ours", "-L", "base", "-L", "theirs",
                           str(ours), str(base), str(theirs)], capture_output=True, timeout=60)
    if done.returncode < 0 or done.returncode > 127:  # git could not merge at all: ours is left as it is
        said = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        raise NoteError(f"cannot merge: {said[-1].removeprefix('error: ') if said else 'git merge-file failed'}", path=shown)
    merged = done.stdout
    mine_bytes, other_bytes = ours.read_bytes(), theirs.read_bytes()
    mine, other = _read(mine_bytes), _read(other_bytes)
    common = _read(base.read_bytes() if base.exists() else None)
    if not any(_a_decision_note(note) for note in (mine, other, common)):
        ours.write_bytes(merged)  # any other note (`*.md` names them all): git's own text merge, as without us
        return done.returncode
    here, there, before = _lifecycle(mine), _lifecycle(other), _lifecycle(common)
    closed_differently = here[0] != there[0] or (here[1] and there[1] and here[1] != there[1]) or (
        before[0] not in (here[0], there[0])) or (  # both moved it on (two answers to one question)
        here[0] == there[0] == before[0] and mine is not None and other is not None and  # one closing, two reasons
        here[0] in _CLOSED and mine.data.get("reason") != other.data.get("reason"))
    clean = done.returncode == 0
    two_rulings = _two_rulings(mine, other, common)
    if (closed_differently or two_rulings) and mine and other and mine_bytes != other_bytes and \
            not _keep_both(shown, ((mine, mine_bytes), (other, other_bytes))):
        ours.write_bytes(merged)  # the sides could not be kept: nothing of theirs is given up
        return 0 if clean else 1
    numbered_twice = common is not None and mine is not None and other is not None and \
        not common.data.get("id") and mine.data.get("id") != other.data.get("id")
    if numbered_twice and not clean:  # each clone's watcher gave the note an id: this clone's stands in it, the
        merged, clean = resolve_lifecycle_conflicts(merged, frozenset({"id"}), lists=False)  # other's record is
        # the same note's twin, closed by the watcher (`twins`)
    if (closed_differently or two_rulings) and not clean:
        # Both sides are kept whole, and each outcome is (or will be) in the ledger: the note holds this clone's
        # where both changed a line, however the lines fall, rather than markers that make it unreadable.
        merged, clean = resolve_lifecycle_conflicts(merged, every=True)
    if clean and mine and other:
        try:
            merged = _one_outcome(merged, mine, other, common)
        except NoteError:  # a frontmatter the edit cannot be made in: git's merge, for the owner to check
            clean = False
    ours.write_bytes(merged)
    return 0 if clean else 1


def _keep_both(shown: str, sides: Iterable[tuple[notes.Note, bytes]]) -> bool:
    """Keep each side's bytes under the vault's `kept/` before one of them gives way; False when they cannot be."""
    try:
        folder = layout_of(find_vault(None, Path(shown).resolve().parent)).merge_copies_dir
        for note, data in sides:
            status = str(note.data.get("status") or "unknown").casefold()
            name = merge_copy_name(str(note.data.get("id") or "unknown"), status)
            durable.write_atomic(folder / f"{name} {hashlib.sha256(data).hexdigest()[:12]}.md", data)
    except (VaultToolsError, OSError):
        return False
    return True
