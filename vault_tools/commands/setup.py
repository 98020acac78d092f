"""`init`: set up a vault's record (`vault-tools/`, or `.vault-tools/` in a vault set up before) and its git
attributes; say what each carrier needs switched on."""
from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from .. import durable
from ..config import load_config
from ..dates import machine_timezone, zone
from ..errors import ConfigError, UsageError
from ..layout import Layout, git_dir, is_shared
from ..record_files import (
    CONFIG_FILE,
    LEDGER_COPIES_FOLDER,
    LEDGER_FOLDER,
    LEGACY_LEDGER,
    RECORD_DIR,
    SETTINGS_COPIES_FOLDER,
    STATE_DIR,
    remember_settings,
)

if TYPE_CHECKING:
    import subprocess

CONFIG_TEMPLATE = """\
# vault-tools settings. Every key is optional; the values shown are the defaults.
timezone: {timezone}          # dates in notes are written in this zone
# decisions_folder: Decisions  # where new decision notes go
# pinned_folder: Pinned        # generated pages
# templates_folder: Templates  # skipped when scanning
# seal_delay_seconds: 120          # quiet time before the watcher seals a ruling
# debounce_ms: 2000            # quiet time after a save before the watcher looks
# stale_after_days: 14         # questions open longer are marked stale
# recent_days: 30              # superseded rulings stay on the log this long
# reminder_days: 7             # questions due this soon are listed as due soon
# default_asker: agent         # asked_by when a command does not say
# default_ruler: owner         # ruled_by when a command or the watcher does not say
# harvest_on_change: false     # the watcher harvests decisions written in passing
# project_root: ""             # scope globs are relative to this folder (default: the vault)
# scope_on_read: false         # the agent hook adds governing rulings on reads too, not only edits
# budget:                      # what an agent loads at session start
#   lines: 200
#   bytes: 25000
# lint:                        # per-rule severity: error, warning or off
#   VT043: off
"""

GITATTRIBUTES_LINE = f"{STATE_DIR}/ledger.jsonl merge=union"
SHARED_GITATTRIBUTES_LINE = f"{RECORD_DIR}/{LEDGER_FOLDER}/*.jsonl merge=union"  # one writer each; union if ever
# Everything derived: the cache, locks, the watcher's pid and logs, a crash log, and the temp files of
# writes in progress. Kept copies (`.vault-tools/kept/`) are the owner's text and stay tracked.
GITIGNORE_LINES = (f"{STATE_DIR}/cache/", f"{STATE_DIR}/*.lock", f"{STATE_DIR}/watch.pid", f"{STATE_DIR}/crash.log",
                   f"{STATE_DIR}/watch.log*", f"{STATE_DIR}/{LEDGER_COPIES_FOLDER}/",
                   f"{STATE_DIR}/{SETTINGS_COPIES_FOLDER}/", f"{durable.TEMP_PREFIX}*{durable.TEMP_SUFFIX}", "vault-tools-crash.log")
# The shared layout: `.vault-tools/` is this device's alone, all of it.
SHARED_GITIGNORE_LINES = (f"{STATE_DIR}/", f"{durable.TEMP_PREFIX}*{durable.TEMP_SUFFIX}", "vault-tools-crash.log")
SYNCTHING_MARKER = ".stfolder"  # Syncthing's folder marker (its docs: users/config.rst, markerName)
PAGES_DRIVER = "vault-tools-pages"
NOTES_DRIVER = "vault-tools-notes"
GIT_TIMEOUT_SECONDS = 10


def _git_pattern(folder: str, pattern: str) -> str:
    path = f"{folder.strip('/')}/{pattern}" if folder.strip("/") else pattern
    return json.dumps(path) if " " in path else path  # git reads a quoted pattern (C-style) since 2.x


# Every note: a decision note may be in any folder, and the driver merges any other note as git's own text merge
# does (`gitmerge.merge_note`). Before the pinned pages' line, which overrides it for them (git: a later line
# wins).
NOTES_LINE = f"*.md merge={NOTES_DRIVER}"


def gitattributes_lines(root: Path) -> list[str]:
    """The ledger merges by line union; pinned pages keep this clone's copy (the next build or the
    watcher regenerates them); notes merge as text, and a decision note both clones closed differently
    keeps this clone's lifecycle fields (the ledger keeps both outcomes, shown as a conflict)."""
    config = load_config(root)
    lines = [SHARED_GITATTRIBUTES_LINE if is_shared(root) else GITATTRIBUTES_LINE, NOTES_LINE,
             f"{_git_pattern(config.pinned_folder, '*.md')} merge={PAGES_DRIVER}"]
    if is_shared(root):  # the digests of the pages each device wrote: derived like the pages
        lines.append(f"{RECORD_DIR}/pages/*.json merge={PAGES_DRIVER}")
    return lines


def merge_driver_settings() -> dict[str, str]:
    python = shlex.quote(sys.executable)
    return {
        f"merge.{PAGES_DRIVER}.name": "vault-tools pinned pages: keep this clone's, regenerated after the merge",
        f"merge.{PAGES_DRIVER}.driver": "true",
        f"merge.{NOTES_DRIVER}.name": "vault-tools decision notes: text merge; lifecycle conflicts kept in the ledger",
        f"merge.{NOTES_DRIVER}.driver": f"{python} -m vault_tools merge-note %O %A %B %P",
    }


def run_git(root: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    import subprocess  # here: a build in a clone whose config holds the merge drivers starts no git

    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_SECONDS, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return None


def _driver_settings(root: Path) -> dict[str, str] | None:
    """This clone's `merge.vault-tools-*` settings as git prints them (`key value` per line; the keys are all
    lower case already); None outside git or when git cannot be run."""
    if git_dir(root) is None:
        return None
    found = run_git(root, "config", "--get-regexp", r"^merge\.vault-tools-")
    if found is None:
        return None
    return dict(line.split(" ", 1) for line in found.stdout.splitlines() if " " in line)


def merge_drivers_missing(root: Path) -> list[str]:
    """The merge drivers this clone's git config lacks (none outside git, or when git is not installed).
    Every `build` asks: when the clone's own config file defines both, as `init` writes them, git is not
    started to ask it (that would cost more than a warm build of a small vault)."""
    folder = git_dir(root)
    if folder is None:
        return []
    if {PAGES_DRIVER, NOTES_DRIVER} <= _drivers_in_config_file(folder / "config"):
        return []
    present = _driver_settings(root)
    if present is None:
        return []
    return [name for name in (PAGES_DRIVER, NOTES_DRIVER) if f"merge.{name}.driver" not in present]


def _drivers_in_config_file(path: Path) -> set[str]:
    """The `merge "NAME"` sections of a git config file that set a `driver` (an unreadable file, a
    worktree's folder without one, or one git would read differently only gives fewer: git is asked then)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return set()
    found: set[str] = set()
    section = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            header = stripped[1:stripped.find("]")] if "]" in stripped else ""
            kind, _, name = header.partition(" ")
            name = name.strip()
            quoted = len(name) > 1 and name[0] == name[-1] == '"'
            section = name[1:-1] if kind.lower() == "merge" and quoted and "\\" not in name else None
        elif section is not None and stripped.split("=", 1)[0].strip().lower() == "driver" and "=" in stripped:
            found.add(section)
    return found


def setup_git(root: Path) -> bool:
    """Define the merge drivers in this clone's `.git/config` (git never copies it to a clone). True when
    something was set."""
    present = _driver_settings(root)
    if present is None:
        return False
    changed = False
    for key, value in merge_driver_settings().items():
        if present.get(key) == value:
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
    if NOTES_LINE in missing and f"merge={PAGES_DRIVER}" in existing:  # a vault set up before: the pages' lines
        # must stay after it, so the new line goes before the first of them
        kept = existing.splitlines(keepends=True)
        at = next(i for i, line in enumerate(kept) if f"merge={PAGES_DRIVER}" in line)
        existing = "".join([*kept[:at], NOTES_LINE + "\n", *kept[at:]])
        missing.remove(NOTES_LINE)
    prefix = "" if not existing or existing.endswith("\n") or not missing else "\n"
    durable.write_atomic(path, (existing + prefix + "".join(line + "\n" for line in missing)).encode("utf-8"))
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


def init_vault(root: Path, timezone: str | None = None, *, shared: bool | None = None) -> list[str]:
    """Set up the vault's record and the git attributes; returns what it created or changed.

    A new vault gets the shared layout (`vault-tools/`, carried by every sync engine); a vault set up
    before keeps `.vault-tools/` until `vault-tools migrate` moves it. `shared=False` makes a new vault
    in the hidden layout."""
    if timezone is not None:
        try:
            zone(timezone)
        except ValueError as error:
            raise UsageError(str(error)) from None
    changed = []
    hidden_before = (root / STATE_DIR / CONFIG_FILE).exists() or (root / STATE_DIR / LEGACY_LEDGER).exists()
    if shared is None:
        shared = is_shared(root) or not hidden_before
    layout = Layout(root, shared)
    layout.record_dir.mkdir(exist_ok=True)
    config = layout.config_path
    if not config.exists() and not (shared and hidden_before and (root / STATE_DIR / CONFIG_FILE).exists()):
        from ..starter import obsidian_templates_folder  # only a new vault gets the templates

        text = CONFIG_TEMPLATE.format(timezone=timezone or machine_timezone())
        templates = obsidian_templates_folder(root)
        if templates and templates != "Templates":  # Obsidian's own setting decides what is skipped
            text = text.replace("# templates_folder: Templates ", f"templates_folder: {json.dumps(templates)}")
        durable.write_atomic(config, text.encode())
        remember_settings(root, None)  # vault-tools' own write: the tripwire does not take it back
        changed.append(layout.config_shown)
    if shared:
        if not layout.ledger_dir.is_dir():
            layout.ledger_dir.mkdir(parents=True)
            changed.append(f"{RECORD_DIR}/{LEDGER_FOLDER}/")
        # This device's own folder: its caches are kept from the first read on (a read never makes it, so that
        # a clone this device never set up is left as it was)
        layout.local_dir.mkdir(exist_ok=True)
    else:
        ledger = layout.legacy_ledger
        if not ledger.exists():
            ledger.touch()
            changed.append(f"{STATE_DIR}/{LEGACY_LEDGER}")
    if _ensure_lines(root / ".gitattributes", gitattributes_lines(root)):
        changed.append(".gitattributes")
    if _ensure_lines(root / ".gitignore", SHARED_GITIGNORE_LINES if shared else GITIGNORE_LINES):
        changed.append(".gitignore")
    if shared and (root / SYNCTHING_MARKER).is_dir() and _ensure_lines(root / ".stignore", (STATE_DIR,)):
        changed.append(".stignore")  # Syncthing carries hidden folders; this one is this device's alone
    if setup_git(root):
        changed.append("git merge drivers (.git/config)")
    return changed


def carriers_note(root: Path) -> str:
    """What `init` tells the owner about carrying the vault between devices."""
    if not is_shared(root):
        return (f"The record is in {STATE_DIR}/, which Obsidian Sync never carries (a hidden folder). To carry it "
                f"with Obsidian Sync, iCloud, Dropbox or Syncthing: vault-tools migrate (see docs/several-machines.md).\n")
    return f"""\
The record travels with the notes in {RECORD_DIR}/ (config; the ledger, one file per device). Per carrier:
  git            run `vault-tools init` in every clone (the merge drivers live in .git/config)
  Obsidian Sync  on every device: Settings > Sync > Selective sync > "Sync all other types" on
                 (the ledger is .jsonl, the config .yaml); Headless Sync: ob sync-config --file-types with unsupported
  iCloud/Dropbox nothing to switch on
  Syncthing      nothing to switch on ({STATE_DIR} is this device's own: init adds it to .stignore)
"""


