"""The walk of a vault: which of its files are notes a decision could live in, in a stable order, and which
changed since a read (what the watcher looks at again after a pause).
"""
from __future__ import annotations

import os
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path

from . import durable, notes
from .config import Config
from .layout import is_shared
from .notes import StatKey
from .record_files import RECORD_DIR

SKIPPED_FOLDERS = {".trash", "node_modules"}


def skipped_folders(root: Path, config: Config, shared: bool | None = None) -> set[str]:
    """The vault-relative folders whose notes are not the vault's decision notes (`shared`: whether `vault-tools/`
    holds the record, where the caller knows it)."""
    skipped = {config.templates_folder.strip("/"), config.pinned_folder.strip("/")}
    if is_shared(root) if shared is None else shared:
        skipped.add(RECORD_DIR)  # the record: kept copies of notes are the owner's text, not notes of the vault
    return skipped


def iter_markdown(root: Path, config: Config, others: list[str] | None = None,
                  temps: list[str] | None = None, misnamed: list[str] | None = None,
                  folders: list[str | None] | None = None,
                  shared: bool | None = None) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """(vault-relative path, directory entry) of every note a decision could live in, in a stable order.

    Every other file met is added to `others` (what a link can name), and our own temp files
    to `temps`; each folder entered (its full path, None for one that could not be listed) to `folders`, the
    vault's first; `shared` as `skipped_folders` takes it. A file or folder whose name is not valid
    UTF-8 (no note can link to it, and its name can be neither stored nor printed as it is) is passed over, its
    path added to `misnamed`. Works on strings rather than Path objects: on a vault of 50,000 notes the
    difference is a large part of the whole run.
    """
    skipped = skipped_folders(root, config, shared)
    stack = [""]
    while stack:
        prefix = stack.pop()
        folder = os.path.join(root, prefix) if prefix else str(root)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            if folders is not None:
                folders.append(None)
            continue
        if folders is not None:
            folders.append(folder)
        subfolders = []
        for entry in entries:
            name = entry.name
            if not name.isascii() and not _utf8(name):
                if misnamed is not None and not name.startswith("."):
                    misnamed.append(entry.path)
                continue
            if name.startswith(".") or name in SKIPPED_FOLDERS:
                if temps is not None and name.startswith(durable.TEMP_PREFIX) and name.endswith(durable.TEMP_SUFFIX):
                    temps.append(f"{prefix}/{name}" if prefix else name)
                continue
            relative_name = f"{prefix}/{name}" if prefix else name
            if entry.is_dir(follow_symlinks=False):
                if relative_name not in skipped:
                    subfolders.append(relative_name)
            elif name.endswith(".md") and (entry.is_file() or entry.is_symlink()):
                yield relative_name, entry
            elif others is not None:
                others.append(relative_name)
        stack.extend(reversed(subfolders))


def notes_changed_since(root: Path, config: Config, keys: Mapping[str, StatKey], files: Collection[str]) -> list[str]:
    """The notes (vault-relative, as `iter_markdown` walks them) whose file no longer has its stat key in `keys`,
    that came since `files` were listed, or that went: what a watcher that stopped observing for a while has
    to look at again."""
    found, walked = [], set()
    for rel, entry in iter_markdown(root, config):
        walked.add(rel)
        try:
            stat = entry.stat()
        except OSError:
            found.append(rel)
            continue
        if keys.get(rel) != notes.stat_key(stat):
            found.append(rel)
    found += sorted(rel for rel in files if rel.endswith(".md") and rel not in walked)
    return found


def _utf8(name: str) -> bool:
    """Whether a name read from the file system is valid UTF-8 (Python keeps the bytes that are not as
    lone surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
