"""Writing back a sealed ruling whose note is gone, from the text the ledger sealed.

A ruling ends only by a retraction or a supersession the ledger records. Its note deleted (by an agent's `rm`,
a sync engine, the owner), moved where notes are not read, or turned into something other than a decision note
ends nothing: the watcher and `lint --fix` write the sealed text back where the note was last seen. What is at
that path now (the note with its `type` changed, another file) is kept under `kept/` first: no text is lost.
"""
from __future__ import annotations

from typing import NamedTuple

from .. import notes
from ..errors import VaultToolsError
from ..ledger import latest_with_id
from ..vault import VaultState
from .workspace import Workspace


class Restored(NamedTuple):
    id: str
    path: str
    kept: str | None  # where what stood at `path` was kept, if anything did


def restore_missing(ws: Workspace, state: VaultState) -> tuple[list[Restored], list[str]]:
    """Write back every sealed ruling in force whose note is gone (`Workspace.missing_rulings`). Returns what
    was written back, and why any could not be."""
    done: list[Restored] = []
    failed: list[str] = []
    missing = ws.missing_rulings(state)
    if not missing:
        return done, failed
    known = ws.histories()
    for ruling in missing:
        history = latest_with_id(known, ruling.id)
        seal = history.seal if history is not None else None
        if seal is None or not seal.text:
            continue
        target = ws.vault.root / ruling.path
        try:
            kept = None
            if target.exists():
                kept = ws.keep_copy(f"{target.stem} (in place of sealed {ruling.id})", target.read_bytes())
            notes.write_atomic(target, seal.text.encode("utf-8"))
        except (OSError, VaultToolsError) as error:
            failed.append(f"could not write back {ruling.id} at {ruling.path}: {getattr(error, 'strerror', None) or error}")
            continue
        done.append(Restored(ruling.id, ruling.path, kept))
    return done, failed


def describe(item: Restored) -> str:
    """One line for the log and `lint --fix`."""
    line = (f"wrote back {item.id} at {item.path} from the ledger's sealed text (its note was gone: deleted, moved "
            "out of what is read, or no longer a decision note)")
    return line + (f"; what stood there is kept as {item.kept}" if item.kept else "")
