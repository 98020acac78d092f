"""Rules about carrying a vault between devices with a sync engine (Obsidian Sync, iCloud, Dropbox, Syncthing)."""
from __future__ import annotations

from collections.abc import Iterator

from ..conflicts import copy_settle_hint
from .facts import Facts
from .registry import ERROR, Finding, rule


@rule("VT052", "conflict-copy", ERROR, remembered=True)
def conflict_copy(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a conflict copy a sync engine made of a decision note, with the note it shadows: Obsidian
    Sync's `Name (Conflicted copy DEVICE YYYYMMDDHHMM).md`, Dropbox's `Name (EDITOR's conflicted copy
    YYYY-MM-DD).md`, Syncthing's `Name.sync-conflict-YYYYMMDD-HHMMSS-DEVICE.md`, or iCloud Drive's
    numbered twin `Name 2.md` beside a note with the same id.

    ## Why
    The note was changed on two devices between syncs and the engine kept both versions. The copy holds
    the same id: read as a note of its own it would be a second record. It is set aside (never read as
    a decision) until the owner decides which text stands; meanwhile it is on the open-questions page.

    ## How to fix
    Compare the two, then `vault-tools settle ID --copy "COPY" --keep original` (the copy's text goes
    under `kept/`) or `--keep copy` (its text replaces the original's, which goes under `kept/`).
    """
    for copy in facts.state.conflict_copies:
        line = facts.property_lines.get(copy.path, {}).get("id")
        yield Finding(copy.path, line, f"conflict copy {copy.carrier} made of {copy.original} ({copy.id}); compare "
                                       f"them and keep one: {copy_settle_hint(copy)}")
