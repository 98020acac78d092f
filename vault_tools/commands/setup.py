"""`init`: set up `.vault-tools/` and the git attributes of a vault."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from .. import notes
from ..dates import machine_timezone, zone
from ..errors import UsageError
from ..vault import STATE_DIR, load_config
from .workspace import git_dir

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
# Everything derived: the cache, locks, the watcher's pid and logs, a crash log, and the temp files of
# writes in progress. Kept copies (`.vault-tools/kept/`) are the owner's text and stay tracked.
GITIGNORE_LINES = (f"{STATE_DIR}/cache/", f"{STATE_DIR}/*.lock", f"{STATE_DIR}/watch.pid", f"{STATE_DIR}/crash.log",
                   f"{STATE_DIR}/watch.log*", ".vault-tools-*.tmp", "vault-tools-crash.log")
PAGES_DRIVER = "vault-tools-pages"
NOTES_DRIVER = "vault-tools-notes"
GIT_TIMEOUT_SECONDS = 10


def _git_pattern(folder: str, pattern: str) -> str:
    path = f"{folder.strip('/')}/{pattern}" if folder.strip("/") else pattern
    return json.dumps(path) if " " in path else path  # git reads a quoted pattern (C-style) since 2.x


def gitattributes_lines(root: Path) -> list[str]:
    """The ledger merges by line union; pinned pages keep this clone's copy (the next build or the
    watcher regenerates them); decision notes merge as text, and a note both clones closed differently
    keeps this clone's lifecycle fields (the ledger keeps both outcomes, shown as a conflict)."""
    config = load_config(root)
    return [GITATTRIBUTES_LINE,
            f"{_git_pattern(config.decisions_folder, '**/*.md')} merge={NOTES_DRIVER}",
            f"{_git_pattern(config.pinned_folder, '*.md')} merge={PAGES_DRIVER}"]


def merge_driver_settings() -> dict[str, str]:
    python = shlex.quote(sys.executable)
    return {
        f"merge.{PAGES_DRIVER}.name": "vault-tools pinned pages: keep this clone's, regenerated after the merge",
        f"merge.{PAGES_DRIVER}.driver": "true",
        f"merge.{NOTES_DRIVER}.name": "vault-tools decision notes: text merge; lifecycle conflicts kept in the ledger",
        f"merge.{NOTES_DRIVER}.driver": f"{python} -m vault_tools merge-note %O %A %B %P",
    }


def run_git(root: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_SECONDS, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return None


def merge_drivers_missing(root: Path) -> list[str]:
    """The merge drivers this clone's git config lacks (none outside git, or when git is not installed)."""
    if git_dir(root) is None:
        return []
    done = run_git(root, "config", "--get-regexp", r"^merge\.vault-tools-")
    if done is None:
        return []
    present = {line.split(" ", 1)[0] for line in done.stdout.splitlines()}
    return [name for name in (PAGES_DRIVER, NOTES_DRIVER) if f"merge.{name}.driver" not in present]


def setup_git(root: Path) -> bool:
    """Define the merge drivers in this clone's `.git/config` (git never copies it to a clone). True when
    something was set."""
    if git_dir(root) is None:
        return False
    changed = False
    for key, value in merge_driver_settings().items():
        current = run_git(root, "config", "--get", key)
        if current is None:
            return False
        if current.returncode == 0 and current.stdout.rstrip("\n") == value:
            continue
        done = run_git(root, "config", key, value)
        if done is None or done.returncode != 0:
            raise UsageError(f"cannot set {key} in the git config: {done.stderr.strip() if done else 'git failed'}")
        changed = True
    return changed


def _ensure_lines(path: Path, lines: Iterable[str]) -> bool:
    existing = path.read_text(encoding="utf-8") if path.exists() else ""
    missing = [line for line in lines if line not in existing.splitlines()]
    if not missing:
        return False
    prefix = "" if not existing or existing.endswith("\n") else "\n"
    notes.write_atomic(path, (existing + prefix + "\n".join(missing) + "\n").encode("utf-8"))
    return True


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
    if _ensure_lines(root / ".gitattributes", gitattributes_lines(root)):
        changed.append(".gitattributes")
    if _ensure_lines(root / ".gitignore", GITIGNORE_LINES):
        changed.append(".gitignore")
    if setup_git(root):
        changed.append("git merge drivers (.git/config)")
    return changed
