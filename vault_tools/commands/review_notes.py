"""The review notes in the pinned folder: where they are, which wait for the owner, what the pages say of them.

`review` writes and applies them; the pages and the watcher only need to know whether one is waiting.
"""
from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from .. import notes
from ..errors import VaultToolsError
from ..services.workspace import Workspace

REVIEW_PREFIX = "Review "


WAITING = "waiting"


PROPOSAL_MARKER = re.compile(r"%%vt (?P<action>[a-z-]+)(?P<args>(?: [A-Za-z0-9-]+)+)%%")


ITEM_LINE = re.compile(r"^- \[(?P<mark>.)\] (?P<text>.*)$")


def review_folder(ws: Workspace) -> Path:
    return ws.vault.root / ws.config.pinned_folder


def waiting_reviews(ws: Workspace) -> list[Path]:
    """Review notes written and not applied yet, oldest first."""
    folder = review_folder(ws)
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.glob(f"{REVIEW_PREFIX}*.md")):
        try:
            note = notes.read_note(path)
        except (VaultToolsError, OSError):
            continue
        if hasattr(note.data, "get") and note.data.get("vault-tools") == "review" and \
                note.data.get("review_status") == WAITING:
            found.append(path)
    return found


def last_review_day(ws: Workspace) -> dt.date | None:
    """The day of the newest review note, by its name (`Review 2026-07-17.md`)."""
    days = []
    folder = review_folder(ws)
    for path in folder.glob(f"{REVIEW_PREFIX}*.md") if folder.is_dir() else ():
        try:
            days.append(dt.date.fromisoformat(path.stem.removeprefix(REVIEW_PREFIX)))
        except ValueError:
            continue
    return max(days, default=None)


def waiting_line(ws: Workspace) -> str | None:
    """What the open-questions page says while a review waits for the owner."""
    waiting = waiting_reviews(ws)
    if not waiting:
        return None
    path = waiting[-1]
    text = path.read_text(encoding="utf-8-sig")
    count = sum(1 for line in text.splitlines() if ITEM_LINE.match(line) and PROPOSAL_MARKER.search(line))
    return (f"A review is waiting: [[{path.stem}]] proposes {count} change{'' if count == 1 else 's'}. "
            "Tick what you accept there, then run `vault-tools review --apply`.")
