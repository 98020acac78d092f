"""Ids for decision notes the owner made without one (from a template, or by hand).

The owner never types an id: a decision note whose `id` is missing, empty or still the template's
`D-` gets the next id under the same scheme as `ask` and `rule` (unique across clones), once its
topics and summary are filled in and it has been left alone for the quiet time asked for. Until then
it is "being written": listed as such, blocking nothing on other topics. A note still named as Obsidian names a new note
(`Untitled`, `Untitled 2`) is renamed after its id and summary, unless another note links to that
name: then the name stays, so no link breaks.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .. import durable, note_edits, notes
from ..drafts import lacks_id, still_missing
from ..errors import NoteError
from ..layout import git_dir
from ..links import link_target
from ..meaning import wikilinks
from ..model import format_id, id_number, note_title
from ..services.workspace import Workspace
from ..vault import VaultState
from ..vault_walk import iter_markdown
from .setup import run_git

_UNTITLED = re.compile(r"^Untitled( \d+)?$")  # the names Obsidian gives a new note


@dataclass(frozen=True)
class Given:
    id: str
    path: str  # vault-relative, after any rename
    was: str  # the path before
    saved_at: float  # when the owner last saved it (epoch seconds), before the id was written


def awaiting_ids(state: VaultState) -> list[str]:
    """The decision notes that lack only their id (topics and summary filled in), by vault-relative path."""
    return [rel for rel in sorted(state.properties)
            if lacks_id(state.properties[rel]) and not still_missing(state.problems.get(rel, []))]


# docs/design/0008-ids-the-owner-never-types.md
def give_ids(ws: Workspace, *, quiet_before: float | None = None, state: VaultState | None = None) -> list[Given]:
    """Give every decision note that lacks only its id one (those saved after `quiet_before`, epoch seconds,
    are still being typed and wait). Runs under the caller's ledger lock; writes notes only."""
    given: list[Given] = []
    state = state if state is not None else ws.state()
    for rel in awaiting_ids(state):
        path = ws.vault.root / rel
        try:
            saved_at = path.stat().st_mtime
            if quiet_before is not None and saved_at > quiet_before:
                continue
            note = ws.read(path)
        except (OSError, NoteError):
            continue
        new_id = id_after(given[-1].id) if given else ws.next_id(state)  # the next id counts those given here
        text = note_edits.with_fields(note, {"id": new_id})
        target = _renamed(ws, path, new_id, note)
        if target == path:
            durable.write_note(note, text)
        else:
            durable.create_note(target, note_edits.file_text(note, text))
            path.unlink()
        given.append(Given(new_id, ws.vault.relative(target), rel, saved_at))
    return given


def id_after(decision_id: str) -> str:
    """The id after one just given, with the same clone tag."""
    tag = decision_id.split("-")[2] if decision_id.count("-") == 2 else None
    return format_id(id_number(decision_id) + 1, tag=tag)


def _renamed(ws: Workspace, path: Path, new_id: str, note: notes.Note) -> Path:
    """Where the note goes: renamed after its id and summary when it still has Obsidian's new-note name and
    nothing links to that name; else where it is."""
    if not _UNTITLED.match(path.stem):
        return path
    summary = str((note.data or {}).get("summary") or "").strip()
    target = path.with_name(f"{note_title(new_id, summary)}.md")
    if target.exists() or _linked_to(ws, path.stem) or _committed(ws, path):
        return path
    return target


def _committed(ws: Workspace, path: Path) -> bool:
    """Whether git holds the note under this name already: another clone may number it too, and two renames of
    one file stop a pull (rename/rename), where two ids given in place merge (`gitmerge`, then `twins`)."""
    if git_dir(ws.vault.root) is None:
        return False
    done = run_git(ws.vault.root, "ls-files", "--error-unmatch", "--", str(path))
    return done is not None and done.returncode == 0


def _linked_to(ws: Workspace, title: str) -> bool:
    """Whether any note of the vault links to `title` ([[title]], [[Folder/title|alias]], [[title#heading]]),
    counting only what Obsidian shows as a link (not inside code)."""
    wanted = title.casefold()
    for rel, _ in iter_markdown(ws.vault.root, ws.vault.config):
        try:
            text = (ws.vault.root / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if "[[" in text and wanted in text.casefold() and any(link_target(match.group(0)).casefold() == wanted for match in wikilinks(text)):
            return True
    return False
