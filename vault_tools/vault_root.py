"""Which folder is a vault: the nearest one from a folder up that holds `.vault-tools/`, `.obsidian/` or a shared
record, on plain strings. A leaf that imports only `os`, `stat` and `errno`: the console script finds the vault
with it before it asks the resident process (`resident`), where pathlib, the regular expressions and typing that
`record_files` loads would be most of its start-up; `record_files.find_vault` walks up with it too.
"""
from __future__ import annotations

import errno
import os
import stat

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable

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
        if _is(os.path.join(folder, STATE_DIR), stat.S_ISDIR) or _is(os.path.join(folder, ".obsidian"), stat.S_ISDIR) \
                or holds_record(folder):
            return folder
        parent = os.path.dirname(folder)
        if folder == stop or parent == folder:
            return None
        folder = parent


def vault_above_folder(here: str, normal: Callable[[str], str]) -> str | None:
    """`vault_folder_above` not above `$VAULT_TOOLS_CEILING`, made comparable by `normal` as `here` was."""
    ceiling = os.environ.get(CEILING_ENV)
    return vault_folder_above(here, normal(ceiling) if ceiling else None)


def holds_record(root: str) -> bool:
    """Whether `vault-tools/` holds a record (a folder of that name holding none is the owner's)."""
    folder = os.path.join(root, RECORD_DIR)
    return _is(os.path.join(folder, CONFIG_FILE), stat.S_ISREG) or _is(os.path.join(folder, LEDGER_FOLDER), stat.S_ISDIR)


# What says a file is not there, as pathlib's `is_dir` and `is_file` take it; any other error (a folder that may
# not be read, a name too long) is raised: a record that cannot be read is not taken for no record (the command
# would then write a second one, or work on a vault further up)
_ABSENT = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP})


def _is(path: str, kind: Callable[[int], bool]) -> bool:
    try:
        return kind(os.stat(path).st_mode)
    except OSError as error:
        if error.errno in _ABSENT:
            return False
        raise
    except ValueError:  # a name the system cannot take (a NUL in it)
        return False


def vault_named(given: str | None) -> str | None:
    """The vault a command names with `--vault` (`given`), else the one around the working folder, resolved as
    `record_files.find_vault` resolves it; None where there is none."""
    if given is not None:
        root = os.path.realpath(os.path.expanduser(given))
        return root if _is(root, stat.S_ISDIR) else None
    return vault_above_folder(os.path.realpath(os.getcwd()), os.path.realpath)
