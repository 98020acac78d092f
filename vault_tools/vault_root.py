"""Which folder is a vault: the nearest one from a folder up that holds `.vault-tools/`, `.obsidian/` or a shared
record, on plain strings. A leaf that imports only `os`: the console script finds the vault with it before it asks
the resident process (`resident`), where pathlib, the regular expressions and typing that `record_files` loads
would be most of its start-up; `record_files.find_vault` walks up with it too.
"""
from __future__ import annotations

import os

STATE_DIR = ".vault-tools"  # this device's own (hidden; never carried by Obsidian Sync); the whole record before
RECORD_DIR = "vault-tools"  # the shared layout's record (visible; carried with the notes)
CONFIG_FILE = "config.yaml"
LEDGER_FOLDER = "ledger"  # the shared layout's ledger: one `<device tag>.jsonl` per device
LEDGER_LOCK = "ledger.lock"  # in STATE_DIR: held by whatever writes the record (`Ledger.locked`)
CEILING_ENV = "VAULT_TOOLS_CEILING"  # set (like GIT_CEILING_DIRECTORIES) to stop the upward search for a vault


def vault_folder_above(here: str, stop: str | None) -> str | None:
    """The nearest folder from `here` (an absolute path, made comparable as the caller makes `stop`) up that is a
    vault; None when there is none at or below `stop`, the ceiling."""
    folder = here
    while True:
        if os.path.isdir(os.path.join(folder, STATE_DIR)) or os.path.isdir(os.path.join(folder, ".obsidian")) \
                or holds_record(folder):
            return folder
        parent = os.path.dirname(folder)
        if folder == stop or parent == folder:
            return None
        folder = parent


def holds_record(root: str) -> bool:
    """Whether `vault-tools/` holds a record (a folder of that name holding none is the owner's)."""
    folder = os.path.join(root, RECORD_DIR)
    return os.path.isfile(os.path.join(folder, CONFIG_FILE)) or os.path.isdir(os.path.join(folder, LEDGER_FOLDER))


def vault_named(given: str | None) -> str | None:
    """The vault a command names with `--vault` (`given`), else the one around the working folder, resolved as
    `record_files.find_vault` resolves it; None where there is none."""
    if given is not None:
        root = os.path.realpath(os.path.expanduser(given))
        return root if os.path.isdir(root) else None
    ceiling = os.environ.get(CEILING_ENV)
    return vault_folder_above(os.path.realpath(os.getcwd()), os.path.realpath(ceiling) if ceiling else None)
