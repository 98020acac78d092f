"""Whether anything changed in a vault since a walk, as the kernel says it (Linux's inotify): where nothing did, a
process that keeps its last read (the resident process, `vault.KEEP_LAST_READ`) takes that read again without
stat'ing every note (a walk of 6,500 notes is 0.02-0.05 s of each of its answers).

The kernel queues an event for a watched folder or file within the very system call that changes it (a write, a
rename, a file added or removed, its times or links changed), whichever process makes it and through whichever
mount: a command that finds the queue empty knows that nothing a walk would see changed since the queue was
last emptied, before that walk. Each folder the walk enters is watched, and each decision note itself (a change
made through another name of the file, or a descriptor opened under one, is said to the file's own watch
only). Where it cannot know, the vault is walked as before:

- off Linux, or where inotify cannot be had (a sandbox), or where watching every decision note would take more
  than an eighth of the user's inotify watches (the watcher and other programs need theirs);
- a folder on a file system whose changes may come from elsewhere (NFS, SMB, FUSE, 9p, overlayfs, and file
  systems that roll a folder back without a word: only those of `LOCAL_FILE_SYSTEMS` are trusted), a folder
  that could not be listed or watched, a note that is a symbolic link or has a second link;
- after any event at all (the queue overflowing among them), a mount or unmount anywhere (the mount table is
  polled), the vault's folder itself replaced, and for the walk after a folder or note first watched (it was
  listed before its watch was there);
- once the last walk is `MOST_SECONDS_UNWALKED` old: what no event says (a write through a memory mapping) is
  seen that late at the latest.

docs/design/0049-the-kernel-says-what-changed.md
"""
from __future__ import annotations

import ctypes
import functools
import itertools
import os
import select
import struct
import sys
import time
from pathlib import Path

# inotify(7): the changes that alter what a walk meets (content, times, links, names), and to the watched itself
_IN_MODIFY, _IN_ATTRIB, _IN_CLOSE_WRITE = 0x2, 0x4, 0x8
_IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE, _IN_DELETE = 0x40, 0x80, 0x100, 0x200
_IN_DELETE_SELF, _IN_MOVE_SELF = 0x400, 0x800
_IN_IGNORED = 0x8000  # a watch removed (by this process, or because what it watched went)
_IN_ONLYDIR, _IN_DONT_FOLLOW = 0x01000000, 0x02000000
FOLDER_EVENTS = (_IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE
                 | _IN_DELETE | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_ONLYDIR | _IN_DONT_FOLLOW)
NOTE_EVENTS = _IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_DONT_FOLLOW
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (the name's bytes follow)

# statfs(2)'s f_type of the file systems whose every change is made by this kernel through its files: ext2/3/4,
# XFS, Btrfs, tmpfs, F2FS. Anything else is walked every time: a network or FUSE file system, overlayfs, 9p, and
# ZFS (a rollback changes files without an event).
LOCAL_FILE_SYSTEMS = frozenset({0xEF53, 0x58465342, 0x9123683E, 0x01021994, 0xF2F52010})
MOST_SECONDS_UNWALKED = 30.0
SHARE_OF_WATCHES = 8  # at most this fraction (1/8) of the user's inotify watches for one vault
MOST_WATCHED_VAULTS = 8  # a process answering for more vaults than this forgets the watch used least lately
_ARMED = itertools.count(1)  # numbers `arm` gives, never twice in a process (a watch forgotten and made again)


class FolderWatch:
    """One vault under watch. `arm` before a walk, `cover` after it and the read; then `quiet_since` the number
    `arm` gave says whether the walk would meet what it met."""

    def __init__(self, fd: int, mounts: select.poll, mounts_fd: int) -> None:
        self._fd, self._mounts, self._mounts_fd = fd, mounts, mounts_fd
        self._watches: dict[int, str] = {}  # watch descriptor -> the folder's or note's path
        self._removed: set[int] = set()  # watches this process removed: their IN_IGNORED says nothing changed
        self._local: dict[int, bool] = {}  # a folder's watch descriptor -> whether its file system is trusted
        self._changed = True
        self._armed = 0
        self._walked_at = 0.0
        self._root: tuple[str, int, int] | None = None  # the vault's folder, its device and inode

    @classmethod
    def start(cls) -> FolderWatch | None:
        """A watch of nothing yet; None where inotify or the mount table cannot be had."""
        if not sys.platform.startswith("linux"):
            return None
        try:
            fd = _libc().inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
            if fd < 0:
                return None
            mounts_fd = os.open("/proc/self/mountinfo", os.O_RDONLY | os.O_CLOEXEC)
        except (OSError, AttributeError):
            return None
        mounts = select.poll()
        mounts.register(mounts_fd, select.POLLPRI)
        return cls(fd, mounts, mounts_fd)

    def arm(self) -> int:
        """Take in what happened so far and start anew, before a walk: the number `quiet_since` is then asked."""
        self._take_in()
        self._mounts.poll(0)  # a mount made before this is seen by the walk
        self._changed = False
        self._armed = next(_ARMED)
        self._walked_at = time.monotonic()
        return self._armed

    def cover(self, folders: list[str | None], notes: list[str], notes_plain: bool) -> None:
        """After the walk armed last and the read that followed: watch each folder it entered (full paths, the
        vault's first; None for one it could not list) and each decision note (full paths), and no longer what
        they no longer are. `notes_plain`: every note met is a regular file with one link."""
        if not folders or folders[0] is None or None in folders or not notes_plain or \
                len(folders) + len(notes) > _most_watches() // SHARE_OF_WATCHES:
            self._changed = True
            notes = []  # a note's own watch is of no use while the vault is walked every time anyway
        kept: dict[int, str] = {}
        for path, events in itertools.chain(((folder, FOLDER_EVENTS) for folder in folders if folder is not None),
                                            ((note, NOTE_EVENTS) for note in notes)):
            wd = _libc().inotify_add_watch(self._fd, os.fsencode(path), events)
            if wd < 0:
                self._changed = True  # gone since, or past the watch limit: walked again, and again
                continue
            if wd not in self._watches:
                self._changed = True  # listed before its watch was there: what changed between is not known
                if events == FOLDER_EVENTS:
                    self._local[wd] = on_local_file_system(path)
            kept[wd] = path
        for wd in self._watches.keys() - kept.keys():
            if _libc().inotify_rm_watch(self._fd, wd) == 0:
                self._removed.add(wd)
            self._local.pop(wd, None)
        self._watches = kept
        if not all(self._local.get(wd, True) for wd in kept):
            self._changed = True
        root = folders[0] if folders else None
        try:
            found = os.stat(root) if root is not None else None
        except OSError:
            found = None
        self._root = (root, found.st_dev, found.st_ino) if root is not None and found is not None else None

    def quiet_since(self, armed: int) -> bool:
        """Whether nothing a walk meets changed since the walk armed with `armed` (the last one) began."""
        self._take_in()
        if self._mounts.poll(0):
            self._changed = True
        if armed != self._armed or self._changed or self._root is None or \
                time.monotonic() - self._walked_at >= MOST_SECONDS_UNWALKED:
            return False
        try:
            found = os.stat(self._root[0])
        except OSError:
            return False
        return (found.st_dev, found.st_ino) == self._root[1:]

    def close(self) -> None:
        os.close(self._fd)
        os.close(self._mounts_fd)

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


def _most_watches() -> int:
    """The user's inotify watches in all (fs.inotify.max_user_watches); 8,192, the old default, where unknown."""
    try:
        with open("/proc/sys/fs/inotify/max_user_watches", encoding="ascii") as limit:
            return int(limit.read())
    except (OSError, ValueError):
        return 8192


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


_watches: dict[str, FolderWatch | None] = {}  # vault root -> its watch (None: none can be had), least used first


def watch_of(root: Path) -> FolderWatch | None:
    """The watch kept for the vault at `root`, started on first use."""
    key = str(root)
    if key in _watches:
        _watches[key] = _watches.pop(key)  # the last used goes last: the first is forgotten first
        return _watches[key]
    if len(_watches) >= MOST_WATCHED_VAULTS:
        oldest = _watches.pop(next(iter(_watches)))
        if oldest is not None:
            oldest.close()
    _watches[key] = FolderWatch.start()
    return _watches[key]
