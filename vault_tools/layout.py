"""Where a vault keeps its record, this device's name for itself, and paths spelt relative to the vault.

Two layouts read; `init` makes the first, `migrate` moves a vault from the second to it:

- **shared** (the record travels with the notes on any carrier: git, Obsidian Sync, iCloud, Dropbox,
  Syncthing): `vault-tools/` holds what every device needs (`config.yaml`, `topics.yaml`, `kept/`,
  and `ledger/`, one append-only file per device, each written by that device alone and read as a
  union). Nothing in it is hidden, and no file in it has two writers, so a carrier that keeps "the
  last modified version" of a file never drops a line. `.vault-tools/` holds only what is this
  device's own: the cache, locks, the watcher's pid and log, a crash log, the device's tag.
- **hidden** (before): everything in `.vault-tools/`, one `ledger.jsonl` that git merges by line union.
  Obsidian Sync never carries a folder whose name begins with a dot.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .errors import InconsistentVault
from .model import CLONE_TAG_ALPHABET, CLONE_TAG_LENGTH
from .record_files import (
    CONFIG_FILE,
    KEPT_FOLDER,
    LEDGER_FOLDER,
    LEDGER_SUFFIX,
    LEGACY_LEDGER,
    MERGE_COPIES_FOLDER,
    RECORD_DIR,
    STATE_DIR,
    holds_shared_record,
)

CLONE_FILE = "vault-tools-clone"  # in a git directory: this clone's tag
DEVICE_FOLDER = "devices"  # under `.vault-tools/` outside git: this device's tag, by where it runs


@dataclass(frozen=True)
class Layout:
    """The paths of one vault's record."""

    root: Path
    shared: bool

    @property
    def local_dir(self) -> Path:
        """This device's own files (cache, locks, logs); the whole record in the hidden layout."""
        return self.root / STATE_DIR

    @property
    def record_dir(self) -> Path:
        """What every device needs: config, topic aliases, kept copies, the ledger."""
        return self.root / (RECORD_DIR if self.shared else STATE_DIR)

    @property
    def record_name(self) -> str:
        return RECORD_DIR if self.shared else STATE_DIR

    @property
    def config_path(self) -> Path:
        return self.record_dir / CONFIG_FILE

    @property
    def config_shown(self) -> str:
        return f"{self.record_name}/{CONFIG_FILE}"

    @property
    def ledger_dir(self) -> Path:
        return self.root / RECORD_DIR / LEDGER_FOLDER

    @property
    def legacy_ledger(self) -> Path:
        return self.local_dir / LEGACY_LEDGER

    @property
    def kept_dir(self) -> Path:
        return self.record_dir / KEPT_FOLDER

    @property
    def merge_copies_dir(self) -> Path:
        """Where git's notes driver keeps both sides of a note during a merge (this device's own: a file put in a
        tracked folder mid-rebase would stop the rebase on a later commit that adds it); the watcher moves them
        under `kept_dir`."""
        return self.local_dir / MERGE_COPIES_FOLDER


is_shared = holds_shared_record


# docs/design/0025-the-shared-layout.md
def layout_of(root: Path) -> Layout:
    return Layout(root, is_shared(root))


def git_dir(root: Path) -> Path | None:
    """The git directory of the repository the vault is in (a worktree's own), or None."""
    for folder in (root, *root.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return dot_git
        if dot_git.is_file():
            try:
                text = dot_git.read_text(encoding="utf-8").strip()
            except OSError:
                return None
            if text.startswith("gitdir:"):
                found = Path(text.removeprefix("gitdir:").strip())
                return found if found.is_absolute() else (folder / found).resolve()
            return None
    return None


def _where(root: Path) -> str:
    if hasattr(os, "uname"):  # gethostname(2) is uname's node name on every POSIX system: no socket module loaded
        return f"{os.uname().nodename}:{root.resolve()}"
    import socket  # imported here, as `secrets` below: most commands never need this device's tag

    return f"{socket.gethostname()}:{root.resolve()}"


def _stored_tag(path: Path, where: str) -> str | None:
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
        if stored.get("for") == where and isinstance(stored.get("tag"), str) and stored["tag"]:
            return str(stored["tag"])
    except (OSError, ValueError, AttributeError):
        pass
    return None


# docs/design/0026-ids-and-record-identity.md
def device_tag(root: Path, taken: Iterable[str] = (), *, shared: bool | None = None, create: bool = True,
               keep: bool = True) -> str | None:
    """This device's tag: what its new ids end with (`D-0012-k7q2`) and, in the shared layout, the name of
    the ledger file only it writes. In a git repository it is the clone's, kept in the git directory (never
    committed); outside git, in the shared layout, it is kept under `.vault-tools/devices/` in a file named
    after the machine and folder it is for, so a copy another carrier brought from another device is not
    taken for this one's. Outside git in the hidden layout there is none (ids stay `D-NNNN`). A folder copied
    elsewhere draws a tag of its own, avoiding every tag the vault already holds. Without `keep`, a tag drawn
    is not written down (`keep_device_tag` does it)."""
    where = _where(root)
    path = _tag_file(root, where, shared)
    if path is None:
        return None
    found = _stored_tag(path, where)
    if found or not create:
        return found
    import secrets  # only a new tag is drawn

    avoid = set(taken) | ledger_tags(root)
    tag = ""
    while not tag or tag in avoid:
        tag = "".join(secrets.choice(CLONE_TAG_ALPHABET) for _ in range(CLONE_TAG_LENGTH))
    if keep:
        _keep_tag(path, tag, where)
    return tag


def keep_device_tag(root: Path, tag: str) -> None:
    """Write down `tag`, drawn by `device_tag(..., keep=False)`, as this device's (refused when another was
    kept meanwhile: the ids made with `tag` would name no device)."""
    where = _where(root)
    path = _tag_file(root, where, None)
    if path is None:
        return
    stored = _stored_tag(path, where)
    if stored is None:
        _keep_tag(path, tag, where)
    elif stored != tag:
        raise InconsistentVault(f"this device's id tag became {stored} while a new id was made with {tag}; "
                                "run the command again", path=str(path))


def _tag_file(root: Path, where: str, shared: bool | None) -> Path | None:
    """Where this device's tag is kept (see `device_tag`), or None where it has none."""
    folder = git_dir(root)
    if folder is not None:
        return folder / CLONE_FILE
    if shared if shared is not None else is_shared(root):
        return root / STATE_DIR / DEVICE_FOLDER / (hashlib.sha256(where.encode("utf-8")).hexdigest()[:16] + ".json")
    return None


def _keep_tag(path: Path, tag: str, where: str) -> None:
    from .durable import may_write, write_atomic  # only a new tag is written: most commands never need it

    # Declined before its folder is made, also where the caller would make the writes (`durable.written_by`):
    # the tag may be kept in the git directory, outside the vault the caller writes in
    may_write(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps({"tag": tag, "for": where}).encode("utf-8"))
    except OSError as error:
        raise InconsistentVault(f"cannot record this device's id tag: {error.strerror}", path=str(path)) from None


def ledger_tags(root: Path) -> set[str]:
    """The tags of the devices whose ledger files the shared layout holds."""
    try:
        names = os.listdir(root / RECORD_DIR / LEDGER_FOLDER)
    except OSError:
        return set()
    tags = (name.removesuffix(LEDGER_SUFFIX) for name in names if name.endswith(LEDGER_SUFFIX))
    return {tag for tag in tags if len(tag) == CLONE_TAG_LENGTH and all(c in CLONE_TAG_ALPHABET for c in tag)}


def relative(root: Path, path: Path) -> str:
    """A vault-relative path, spelt as on disk (names are compared NFC and case-folded elsewhere)."""
    if os.sep == "/":  # the common case without pathlib's parsing (a reconcile asks thousands of times)
        text, base = str(path), str(root)
        if text.startswith(base) and text[len(base):len(base) + 1] == "/" and base != "/":
            return text[len(base) + 1:]
    return path.relative_to(root).as_posix()
