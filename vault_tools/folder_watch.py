"""Whether anything changed in a vault since a walk, as the kernel says it (Linux's inotify): where nothing did, a
process that keeps its last read (the resident process, `vault.KEEP_LAST_READ`) takes that read again without
stat'ing every note (a walk of 6,500 notes is 0.02-0.05 s of each of its answers).

The kernel queues an event for a watched folder or file within the very system call that changes it (a write, a
rename, a file added or removed, its times or links changed), whichever process makes it and through whichever
mount: a command that finds the queue empty knows that nothing a walk would see changed since the queue was
last emptied, before that walk. Each folder the walk enters is watched, and each note itself (a change made
through another name of the file, or a descriptor opened under one, is said to the file's own watch only).
Where it cannot know, the vault is walked as before, and nothing is watched:

- off Linux, or where inotify cannot be had (a sandbox), or where the vault's folders and notes would take more
  than an eighth of the user's inotify watches (the watcher and other programs need theirs);
- a folder on a file system whose changes may come from elsewhere (NFS, SMB, FUSE, 9p, overlayfs, and file
  systems that roll a folder back without a word: only those of `LOCAL_FILE_SYSTEMS` are trusted), a file
  system mounted on a folder or note inside the vault, a folder that could not be listed or watched, a note
  that is a symbolic link, has a second link or could not be stat'ed.

And it walks after any event at all (the queue overflowing among them), a mount or unmount anywhere (the mount
table is polled), the vault's folder itself replaced, for the walk after a folder first watched (it was listed
before its watch was there) or a note changed between its read and its watch, and once the last walk is
`MOST_SECONDS_UNWALKED` old: what no event says (a write through a memory mapping) is seen that late at the
latest. Where every event since the last walk named a file (`named_since`), that walk stats only the notes
named, the others keeping the stat keys the last walk found; any other change, and the first walk
`MOST_SECONDS_UNWALKED` after the last one that stat'ed every note, stats them all.

docs/design/0049-the-kernel-says-what-changed.md
"""
from __future__ import annotations

import ctypes
import functools
import itertools
import os
import re
import select
import struct
import sys
import time
from pathlib import Path

from .notes import StatKey, stat_key

# inotify(7): the changes that alter what a walk meets (content, times, links, names), and to the watched itself
_IN_MODIFY, _IN_ATTRIB, _IN_CLOSE_WRITE = 0x2, 0x4, 0x8
_IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE, _IN_DELETE = 0x40, 0x80, 0x100, 0x200
_IN_DELETE_SELF, _IN_MOVE_SELF = 0x400, 0x800
_IN_Q_OVERFLOW = 0x4000  # events were lost
_IN_IGNORED = 0x8000  # a watch removed (by this process, or because what it watched went)
_IN_ISDIR = 0x40000000  # the event's name is a folder
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
MOUNT_TABLE = "/proc/self/mountinfo"
_ARMED = itertools.count(1)  # numbers `arm` gives, never twice in a process (a watch forgotten and made again)


class FolderWatch:
    """One vault under watch. `arm` before a walk, `cover` after it and the read; then `quiet_since` the number
    `arm` gave says whether the walk would meet what it met."""

    def __init__(self, fd: int, mounts: select.poll, mounts_fd: int) -> None:
        self._fd, self._mounts, self._mounts_fd = fd, mounts, mounts_fd
        self._watches: dict[int, str] = {}  # watch descriptor -> the folder's or note's path
        self._notes: dict[tuple[str, int], int] = {}  # (a note's path, its inode) -> its watch descriptor
        self._removed: set[int] = set()  # watches this process removed: their IN_IGNORED says nothing changed
        self._local: dict[int, bool] = {}  # a folder's watch descriptor -> whether its file system is trusted
        self._changed = True  # since the last arm: something a walk meets changed that no path says
        self._named: set[str] = set()  # since the last arm: the notes and files the kernel named as changed
        self._armed = 0
        self._armed_at = 0.0
        self._stat_all_at = 0.0  # when the last walk that stat'ed every note was armed
        self._named_before: tuple[int, frozenset[str] | None] = (0, None)  # see `named_since`
        self._keys_taken = False  # the walk armed last took stat keys from `named_since` rather than stat all
        self._root: tuple[str, int, int] | None = None  # the vault's folder, its device and inode
        self._mounted_inside: bool | None = None  # whether a mount point lies inside it (None: to be looked at)

    @classmethod
    def start(cls) -> FolderWatch | None:
        """A watch of nothing yet; None where inotify or the mount table cannot be had."""
        if not sys.platform.startswith("linux"):
            return None
        try:
            fd = _libc().inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError):
            return None
        if fd < 0:
            return None
        try:
            mounts_fd = os.open(MOUNT_TABLE, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            os.close(fd)
            return None
        mounts = select.poll()
        mounts.register(mounts_fd, select.POLLPRI)
        return cls(fd, mounts, mounts_fd)

    def arm(self) -> int:
        """Take in what happened so far and start anew, before a walk: the number `quiet_since` is then asked."""
        self._take_in()
        named = None if self._changed or not self._root_in_place() or \
            time.monotonic() - self._stat_all_at >= MOST_SECONDS_UNWALKED else frozenset(self._named)
        if self._mounts.poll(0):  # a mount made before this is looked at once the walk is over
            self._mounted_inside, named = None, None
        self._named_before = (self._armed, named)
        self._changed, self._keys_taken = False, False
        self._named = set()
        self._armed = next(_ARMED)
        self._armed_at = time.monotonic()
        return self._armed

    def named_since(self, armed: int) -> frozenset[str] | None:
        """After `arm`: the full paths of the notes and files the kernel named as changed between the walk armed
        with `armed` (the one before) and this arm, where it named every change a walk would meet (nothing else
        of those it met can have another stat key); None where it did not, or `armed` was not the last walk."""
        before, named = self._named_before
        if armed != before or named is None:
            return None
        self._keys_taken = True
        return named

    def cover(self, folders: list[str | None], notes: list[tuple[str, StatKey | None]], notes_plain: bool) -> None:
        """After the walk armed last and the read that followed: watch each folder it entered (full paths, the
        vault's first; None for one it could not list) and each note it met (its full path and the stat key the
        read holds for it), and no longer what they no longer are. `notes_plain`: every note met is a regular
        file with one link. Where the vault cannot be trusted to say all its changes, nothing is watched."""
        if not self._keys_taken:  # the walk stat'ed every note: what no event says is seen from here on
            self._stat_all_at = self._armed_at
        root = folders[0] if folders else None
        if root is None or None in folders or not notes_plain or self._mount_inside(root) or \
                len(folders) + len(notes) > _most_watches() // SHARE_OF_WATCHES:
            self._refuse({})
            return
        kept: dict[int, str] = {}
        notes_kept: dict[tuple[str, int], int] = {}
        for folder in folders:
            assert folder is not None
            wd = _libc().inotify_add_watch(self._fd, os.fsencode(folder), FOLDER_EVENTS)
            if wd < 0:  # gone since, or no watch left for the user: none is held
                self._refuse(kept)
                return
            if wd not in self._watches:
                self._changed = True  # listed before its watch was there: what changed between is not known
                self._local[wd] = on_local_file_system(folder)
            kept[wd] = folder
        if not all(self._local.get(wd, False) for wd in kept):  # a folder whose changes may come from elsewhere
            self._refuse(kept)
            return
        for path, key in notes:
            if key is None:  # not read whole (gone since its walk): the next read walks
                self._changed = True
                continue
            known = self._notes.get((path, key[3]))
            wd = known if known is not None else _libc().inotify_add_watch(self._fd, os.fsencode(path), NOTE_EVENTS)
            if wd < 0:
                self._refuse(kept)
                return
            if known is None and not _still(path, key):
                # Changed since it was read: the watch is on whatever file is there now, maybe one held already
                # for another note (two names swapped meanwhile). Filed under this path and the inode read, it
                # would say changes to that file under this note's path from then on: none is filed.
                self._changed = True
                continue
            kept[wd] = path
            notes_kept[(path, key[3])] = wd
        self._keep(kept)
        self._notes = notes_kept
        try:
            found = os.stat(root)
        except OSError:
            self._changed, self._root = True, None
            return
        self._root = (root, found.st_dev, found.st_ino)

    def quiet_since(self, armed: int) -> bool:
        """Whether nothing a walk meets changed since the walk armed with `armed` (the last one) began."""
        self._take_in()
        if self._mounts.poll(0):
            self._changed, self._mounted_inside = True, None
        return armed == self._armed and not self._changed and not self._named and \
            time.monotonic() - self._stat_all_at < MOST_SECONDS_UNWALKED and self._root_in_place()

    def _root_in_place(self) -> bool:
        """Whether the vault's folder covered last is still the one at its path (a folder above it renamed and
        another put in its place says nothing inside either)."""
        if self._root is None:
            return False
        try:
            found = os.stat(self._root[0])
        except OSError:
            return False
        return (found.st_dev, found.st_ino) == self._root[1:]

    def close(self) -> None:
        os.close(self._fd)
        os.close(self._mounts_fd)

    def _refuse(self, added: dict[int, str]) -> None:
        """Hold no watch (`added`: those this cover added so far): the vault is walked at every read."""
        self._watches.update(added)
        self._keep({})
        self._changed, self._root = True, None

    def _keep(self, kept: dict[int, str]) -> None:
        """Watch what `kept` names (watches added already), and remove every other watch."""
        for wd in self._watches.keys() - kept.keys():
            if _libc().inotify_rm_watch(self._fd, wd) == 0:
                self._removed.add(wd)
            self._local.pop(wd, None)
        self._watches = kept
        if not kept:
            self._notes = {}

    def _mount_inside(self, root: str) -> bool:
        """Whether a file system is mounted on a folder or note inside the vault (its changes, a bind mount's
        among them, are said elsewhere), as the mount table says it now; looked at again once it changes."""
        if self._mounted_inside is None:
            try:
                with open(MOUNT_TABLE, "rb") as table:
                    points = [_unescaped(line.split(b" ")[4]) for line in table.read().split(b"\n") if line]
            except (OSError, IndexError):
                return True
            inside = os.fsencode(root).rstrip(b"/") + b"/"
            self._mounted_inside = any(point.startswith(inside) for point in points)
        return self._mounted_inside

    def _take_in(self) -> None:
        """Empty the queue: any event but a watch this process removed means a change. One on a note's own watch,
        or on a folder's naming a file in it (not a folder), names what changed; any other changes what a walk
        meets in a way no path says (a folder came or went, a folder's own times, the queue overflowing)."""
        gone: set[int] = set()  # watches the kernel removed (what they watched went): one added again is new
        while True:
            try:
                events = os.read(self._fd, 64 * 1024)
            except BlockingIOError:
                break
            except OSError:
                self._changed = True
                break
            at = 0
            while at + _EVENT.size <= len(events):
                wd, mask, _, length = _EVENT.unpack_from(events, at)
                name = events[at + _EVENT.size:at + _EVENT.size + length].rstrip(b"\0")
                at += _EVENT.size + length
                if mask & _IN_IGNORED and wd in self._removed:
                    self._removed.discard(wd)
                    continue
                if mask & _IN_IGNORED:
                    gone.add(wd)
                self._take_event(wd, mask, name)
        if gone:
            for wd in gone:
                self._watches.pop(wd, None)
                self._local.pop(wd, None)
            self._notes = {pair: kept for pair, kept in self._notes.items() if kept not in gone}

    def _take_event(self, wd: int, mask: int, name: bytes) -> None:
        """What one event says changed: a path named, or a change no path says (`_changed`)."""
        watched = self._watches.get(wd)
        if watched is None or mask & _IN_Q_OVERFLOW:
            self._changed = True
        elif wd not in self._local:  # a note's own watch (only folders are looked at for their file system)
            self._named.add(watched)
        elif name and not mask & _IN_ISDIR:
            self._named.add(os.path.join(watched, os.fsdecode(name)))
        else:
            self._changed = True


def _still(path: str, key: StatKey) -> bool:
    """Whether the file at `path` has the stat key `key` now."""
    try:
        return stat_key(os.stat(path)) == key
    except OSError:
        return False


def _unescaped(field: bytes) -> bytes:
    """A path as the mount table writes it (space, tab, newline and backslash as octal escapes)."""
    return re.sub(rb"\\([0-7]{3})", lambda escape: bytes([int(escape.group(1), 8)]), field)


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
