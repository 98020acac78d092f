"""`init`: set up `.vault-tools/` and the git attributes of a vault."""
from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from .. import notes
from ..dates import machine_timezone, zone
from ..errors import ConfigError, UsageError
from ..vault import STATE_DIR

CONFIG_TEMPLATE = """\
# vault-tools settings. Every key is optional; the values shown are the defaults.
timezone: {timezone}          # dates in notes are written in this zone
# decisions_folder: Decisions  # where new decision notes go
# pinned_folder: Pinned        # generated pages
# templates_folder: Templates  # skipped when scanning
# settle_seconds: 120          # quiet time before the watcher seals a ruling
# debounce_ms: 2000            # quiet time after a save before the watcher looks
# stale_after_days: 14         # questions open longer are marked stale
# recent_days: 30              # superseded rulings stay on the log this long
# reminder_days: 7             # questions due this soon are listed as due soon
# default_asker: agent         # asked_by when a command does not say
# default_ruler: owner         # ruled_by when a command or the watcher does not say
# harvest_on_change: false     # the watcher harvests decisions written in passing
# budget:                      # what an agent loads at session start
#   lines: 200
#   bytes: 25000
# lint:                        # per-rule severity: error, warning or off
#   VT043: off
"""

GITATTRIBUTES_LINE = f"{STATE_DIR}/ledger.jsonl merge=union"
GITIGNORE_LINES = (f"{STATE_DIR}/cache/", f"{STATE_DIR}/*.lock", f"{STATE_DIR}/watch.pid", f"{STATE_DIR}/crash.log",
                   f"{STATE_DIR}/watch.log*", f"{notes.TEMP_PREFIX}*{notes.TEMP_SUFFIX}")


def _ensure_lines(path: Path, lines: Iterable[str]) -> bool:
    existing = path.read_text(encoding="utf-8") if path.exists() else ""
    missing = [line for line in lines if line not in existing.splitlines()]
    if not missing:
        return False
    prefix = "" if not existing or existing.endswith("\n") else "\n"
    notes.write_atomic(path, (existing + prefix + "\n".join(missing) + "\n").encode("utf-8"))
    return True


def make_vault_folder(given: Path) -> Path:
    """The folder `init --vault` names, made when missing (its parent must exist: a typo in a
    parent is refused rather than made into a tree of folders)."""
    root = given.expanduser()
    if root.exists() and not root.is_dir():
        raise ConfigError("is not a folder", path=str(given))
    if not root.exists():
        if not root.parent.is_dir():
            raise ConfigError(f"does not exist, nor does {root.parent}; create the folder above it first",
                              path=str(given))
        root.mkdir()
    return root.resolve()


def init_vault(root: Path, timezone: str | None = None) -> list[str]:
    """Set up `.vault-tools/` and the git attributes; returns what it created or changed."""
    if timezone is not None:
        try:
            zone(timezone)
        except ValueError as error:
            raise UsageError(str(error)) from None
    changed = []
    state_dir = root / STATE_DIR
    state_dir.mkdir(exist_ok=True)
    config = state_dir / "config.yaml"
    if not config.exists():
        from ..starter import obsidian_templates_folder

        text = CONFIG_TEMPLATE.format(timezone=timezone or machine_timezone())
        templates = obsidian_templates_folder(root)
        if templates and templates != "Templates":  # Obsidian's own setting decides what is skipped
            text = text.replace("# templates_folder: Templates ", f"templates_folder: {json.dumps(templates)}")
        notes.write_atomic(config, text.encode())
        changed.append(f"{STATE_DIR}/config.yaml")
    ledger = state_dir / "ledger.jsonl"
    if not ledger.exists():
        ledger.touch()
        changed.append(f"{STATE_DIR}/ledger.jsonl")
    if _ensure_lines(root / ".gitattributes", [GITATTRIBUTES_LINE]):
        changed.append(".gitattributes")
    if _ensure_lines(root / ".gitignore", GITIGNORE_LINES):
        changed.append(".gitignore")
    return changed
