"""Writing back a sealed ruling whose note is gone, from the text the ledger sealed (and an open or withdrawn
question, from the text the ledger keeps of it).

A ruling ends only by a retraction or a supersession the ledger records. Its note deleted (by an agent's `rm`,
a sync engine, the owner), moved where notes are not read, or turned into something other than a decision note
ends nothing: the watcher and `lint --fix` write the sealed text back at the path the ledger last recorded for
it (where it was sealed, or renumbered). What is at that path now (the note with its `type` changed, another file) is kept under `kept/` first: no text is lost.
"""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from .. import durable
from ..errors import VaultToolsError
from ..history import latest_with_id
from ..services.missing import kept_text
from ..services.workspace import Workspace
from ..vault import VaultState


class Restored(NamedTuple):
    id: str
    path: str
    kept: str | None  # where what stood at `path` was kept, if anything did


class Restoring(NamedTuple):
    done: list[Restored]
    failed: list[str]  # why a ruling could not be written back
    waiting: dict[str, float]  # path -> when its note went (epoch s), for a ruling gone too recently


# docs/design/0005-a-ruling-ends-only-in-the-ledger.md
def restore_missing(ws: Workspace, state: VaultState, gone_before: float | None = None) -> Restoring:
    """Write back every sealed ruling in force whose note is gone (`Workspace.missing_rulings`); with
    `gone_before` (epoch s), only those gone since before then. A running watcher waits the sealing delay: a
    sync engine that carries a rename as a delete and, seconds later, a create, or an owner halfway through
    typing `type`, is not answered with a second copy of the ruling."""
    result = Restoring([], [], {})
    missing = ws.missing_rulings(state)
    if not missing:
        return result
    known = ws.histories()
    for ruling in missing:
        target = ws.vault.root / ruling.path
        gone_at = _changed_at(target)
        if gone_before is not None and gone_at is not None and gone_at > gone_before:
            result.waiting[ruling.path] = gone_at
            continue
        history = latest_with_id(known, ruling.id)
        text = kept_text(history, ruling.status) if history is not None else None
        if text is None:
            continue
        try:
            kept = None
            if target.exists():
                kept = ws.keep_copy(f"{target.stem} (in place of sealed {ruling.id})", target.read_bytes())
            durable.write_atomic(target, text.encode("utf-8"))
        except (OSError, VaultToolsError) as error:
            result.failed.append(f"could not write back {ruling.id} at {ruling.path}: "
                                 f"{getattr(error, 'strerror', None) or error}")
            continue
        result.done.append(Restored(ruling.id, ruling.path, kept))
    return result


def _changed_at(path: Path) -> float | None:
    """When what stands at `path` last changed: the file there, or the nearest folder above that is left (a
    file removed or moved away changes its folder's time)."""
    for candidate in (path, *path.parents):
        try:
            return candidate.stat().st_mtime
        except OSError:
            continue
    return None


def describe(item: Restored) -> str:
    """One line for the log and `lint --fix`."""
    line = (f"wrote back {item.id} at {item.path} from the text the ledger keeps (its note was gone: deleted, moved "
            "out of what is read, or no longer a decision note)")
    return line + (f"; what stood there is kept as {item.kept}" if item.kept else "")
