"""Whether anything changed in a vault's folders since a walk, as the kernel says it (Linux's inotify): where
nothing did, a process that keeps its last read (the resident process, `vault.KEEP_LAST_READ`) takes that read
again without stat'ing every note (a walk of 6,500 notes is 0.02-0.05 s of each of its answers).

The kernel queues an event for a watched folder within the very system call that changes it (a write, a rename,
a new file, a file removed, its times or links changed), whichever process makes it and through whichever mount:
a command that finds the queue empty knows that nothing a walk would see changed since the queue was last
emptied, before that walk. Where it cannot know, the vault is walked as before:

- off Linux, or where inotify cannot be had (a sandbox, the watch limit reached);
- a folder on a file system whose changes may come from elsewhere (NFS, SMB, FUSE, 9p, overlayfs: only the
  local file systems of `LOCAL_FILE_SYSTEMS` are trusted), or that could not be watched;
- a note that is a symbolic link, or a file with more than one link (changed through another name, elsewhere,
  nothing is said to the vault's folders);
- after any event at all (the queue overflowing among them), and for the walk after a folder first watched (it
  was listed before its watch was there).

docs/design/0049-the-kernel-says-what-changed.md
"""
from __future__ import annotations

import ctypes
import functools
import os
import struct
import sys
from pathlib import Path

# inotify(7): the changes that alter what a walk meets (content, times, links, names), and for the folder itself
_IN_MODIFY, _IN_ATTRIB, _IN_CLOSE_WRITE = 0x2, 0x4, 0x8
_IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE, _IN_DELETE = 0x40, 0x80, 0x100, 0x200
_IN_DELETE_SELF, _IN_MOVE_SELF = 0x400, 0x800
_IN_IGNORED = 0x8000  # a watch removed (by this process, or because its folder went)
_IN_ONLYDIR, _IN_DONT_FOLLOW = 0x01000000, 0x02000000
WATCHED = (_IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE
           | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_ONLYDIR | _IN_DONT_FOLLOW)
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (the name's bytes follow)

# statfs(2)'s f_type of the file systems whose every change is made by this kernel: ext2/3/4, XFS, Btrfs, tmpfs,
# F2FS, ZFS, bcachefs. Anything else (a network or FUSE file system, overlayfs, 9p) is walked every time.
LOCAL_FILE_SYSTEMS = frozenset({0xEF53, 0x58465342, 0x9123683E, 0x01021994, 0xF2F52010, 0x2FC12FC1, 0xCA451A4E})
MOST_WATCHED_VAULTS = 8  # a process answering for more vaults than this forgets the oldest one's watch


class FolderWatch:
    """One vault's folders under watch. `arm` before a walk, `cover` with the folders it entered after it; then
    `quiet_since` the number `arm` gave says whether the walk would meet what it met."""

    def __init__(self, libc: ctypes.CDLL, fd: int) -> None:
        self._libc, self._fd = libc, fd
        self._watches: dict[int, str] = {}  # watch descriptor -> the folder's path
        self._removed: set[int] = set()  # watches this process removed: their IN_IGNORED says nothing changed
        self._types: dict[int, bool] = {}  # watch descriptor -> whether its folder's file system is trusted
        self._changed = True
        self._armed = 0

    @classmethod
    def start(cls) -> FolderWatch | None:
        """A watch with no folder yet; None where inotify cannot be had."""
        if not sys.platform.startswith("linux"):
            return None
        try:
            libc = _libc()
            fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError):
            return None
        return cls(libc, fd) if fd >= 0 else None

    def arm(self) -> int:
        """Take in what happened so far and start anew, before a walk: the number `quiet_since` is then asked."""
        self._take_in()
        self._changed = False
        self._armed += 1
        return self._armed

    def cover(self, folders: list[str], notes_plain: bool) -> None:
        """After the walk armed last: watch each folder it entered (full paths), and no longer those it did not.
        `notes_plain`: every note it met is a regular file with one link (see the module's docstring)."""
        kept: dict[int, str] = {}
        for folder in folders:
            wd = self._libc.inotify_add_watch(self._fd, os.fsencode(folder), WATCHED)
            if wd < 0:
                self._changed = True  # gone since, or past the watch limit: walked again, and again
                continue
            if wd not in self._watches:
                self._changed = True  # listed before its watch was there: what changed between is not known
                self._types[wd] = on_local_file_system(folder)
            kept[wd] = folder
        for wd in self._watches.keys() - kept.keys():
            self._removed.add(wd)
            self._libc.inotify_rm_watch(self._fd, wd)
            self._types.pop(wd, None)
        self._watches = kept
        if not notes_plain or not all(self._types.get(wd, False) for wd in kept):
            self._changed = True

    def quiet_since(self, armed: int) -> bool:
        """Whether nothing a walk meets changed since the walk armed with `armed` (the last one) began."""
        self._take_in()
        return armed == self._armed and not self._changed

    def close(self) -> None:
        os.close(self._fd)

    def _take_in(self) -> None:
        """Empty the queue: any event but a watch this process removed means a change."""
        while True:
            try:
                events = os.read(self._fd, 64 * 1024)
            except BlockingIOError:
                return
            except OSError:
                self._changed = True
                return
            at = 0
            while at + _EVENT.size <= len(events):
                wd, mask, _, length = _EVENT.unpack_from(events, at)
                at += _EVENT.size + length
                if mask & _IN_IGNORED and wd in self._removed:
                    self._removed.discard(wd)
                    continue
                self._changed = True


def on_local_file_system(folder: str) -> bool:
    """Whether the folder is on a file system of `LOCAL_FILE_SYSTEMS` (statfs(2): the struct's first field is f_type,
    a machine word; 120 bytes in all on 64-bit Linux)."""
    found = ctypes.create_string_buffer(256)
    if _libc().statfs(os.fsencode(folder), found) != 0:
        return False
    return ctypes.c_long.from_buffer(found).value & 0xFFFFFFFF in LOCAL_FILE_SYSTEMS


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


_watches: dict[str, FolderWatch | None] = {}  # vault root -> its watch (None: none can be had), oldest first


def watch_of(root: Path) -> FolderWatch | None:
    """The watch kept for the vault at `root`, started on first use."""
    key = str(root)
    if key not in _watches:
        if len(_watches) >= MOST_WATCHED_VAULTS:
            oldest = _watches.pop(next(iter(_watches)))
            if oldest is not None:
                oldest.close()
        _watches[key] = FolderWatch.start()
    return _watches[key]
