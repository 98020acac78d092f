"""The resident process's walk of its vault: each note's stat key kept from one command to the next, and taken
again only for the notes its own watchdog observer saw something happen to since
(docs/performance.md, "The walk of the resident process").

Every walk still lists every folder (what was made, removed, moved or renamed is seen there, moves out of the
vault included); only the stat of each note is spared. A kept key stands for the note's stat only once a touch
of this process's marker file has come through the observer behind every earlier change: inotify queues the
events of one instance in order, and watchdog passes them on in that order (holding back only a move out of the
vault, which then holds the marker back too). Where that cannot be told, every note is stat'ed, as in a process
of its own: the marker not through in time, a queue overflow, a folder made, removed or moved, the observer not
running, a file system inotify does not hear every change of (a network or FUSE mount, or another mount inside
the vault), a watchdog that does not say when it lost events. A note reached through a symbolic link, or with
more than one link (a write through another name says nothing to the vault's folders), is stat'ed every time.
Left: a note given a second name outside the vault after its key was kept, and then written in place through
that name, says nothing to the vault's folders either; the stat of every kept note once the commands pause
(`look_again`) catches it there.
"""
from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import Any

from watchdog import events
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from .notes import StatKey, stat_key
from .record_files import STATE_DIR

# A file of this process's own made at each walk, under a number of its own: a walk waits for its own file's
# making to come through, so an earlier one's heard late, or one lost (its folder made just then), is not taken
# for it
MARKER = f"{STATE_DIR}/cache/resident-walk-{{pid}}-"
MARKER_WITHIN_SECONDS = 0.05  # the marker not through by then (a move out of the vault holds it 0.5 s): stat all
# File systems whose every change to a file is made by this kernel, so inotify hears of it
HEARD_FILE_SYSTEMS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "ramfs", "f2fs", "zfs", "bcachefs",
                                "overlay", "jfs", "reiserfs", "nilfs2", "vfat", "exfat", "ntfs3", "hfsplus"})


class WatchedWalk(FileSystemEventHandler):
    """The notes of the vault at `root` whose stat keys still hold, told by its own observer (`start`)."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._prefix = root.rstrip(os.sep) + os.sep
        self._marker = os.path.join(root, MARKER.format(pid=os.getpid()))
        self._heard = threading.Condition()
        self._changed: set[str] = set()  # vault-relative paths something happened to since the last walk began
        self._everything = True  # every note to be stat'ed at the next walk
        self._marks_made = 0
        self._mark_heard = 0  # the number of the last marker whose making came through
        self._kept: dict[str, StatKey] = {}
        self._observer: Any = None
        self.spared = 0  # the keys the last walk was given as holding (notes it did not stat)

    def start(self) -> bool:
        """Start observing; False (and every walk stats every note) where this process could not be sure of
        hearing every change."""
        if not Observer.__module__.endswith(".inotify") or not hasattr(events, "EventsLostEvent") \
                or mount_type(self.root) not in HEARD_FILE_SYSTEMS:
            return False
        try:
            heard = [events.FileCreatedEvent, events.FileDeletedEvent, events.FileModifiedEvent,
                     events.FileMovedEvent, events.FileClosedEvent, events.DirCreatedEvent, events.DirDeletedEvent,
                     events.DirMovedEvent, events.EventsLostEvent, events.FileAttribEvent]
            observer = Observer()
            observer.schedule(self, self.root, recursive=True, event_filter=heard)
            observer.daemon = True
            observer.start()
        except (OSError, TypeError, AttributeError):  # out of watches, or a watchdog without these
            return False
        self._observer = observer
        return True

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join()
            self._observer = None
        with contextlib.suppress(OSError):
            os.unlink(self._marker_numbered(self._marks_made))

    def on_any_event(self, event: FileSystemEvent) -> None:
        with self._heard:
            if event.event_type == events.EVENT_TYPE_EVENTS_LOST or event.is_directory:
                self._everything = True  # a folder's own modified and attrib events are not asked for
                return
            for path in (event.src_path, getattr(event, "dest_path", "")):
                path = os.fsdecode(path)
                if path.startswith(self._marker):
                    number = path[len(self._marker):].partition(".")[0]
                    if event.event_type == events.EVENT_TYPE_CREATED and number.isdigit():
                        self._mark_heard = max(self._mark_heard, int(number))
                        self._heard.notify_all()
                elif path.startswith(self._prefix):
                    self._changed.add(path[len(self._prefix):])

    def kept_keys(self) -> dict[str, StatKey]:
        """The stat keys still holding, as of now, for the notes kept by the last walk (`keep`): empty when it
        cannot be told. Each call begins a walk: what happens from here on is heard for the next."""
        through = self._observer is not None and self._mark()
        with self._heard:
            changed, self._changed = self._changed, set()
            everything, self._everything = self._everything or not through, False
        if everything:
            self._kept = {}
        for rel in changed:
            self._kept.pop(rel, None)
        self.spared = len(self._kept)
        return self._kept

    def keep(self, keys: dict[str, StatKey]) -> None:
        """The stat keys a walk took or kept, of the notes a write through another name cannot change unheard."""
        self._kept = keys if self._observer is not None else {}

    def look_again(self) -> None:
        """Forget each kept key whose note's stat says otherwise now (or has another link): run while the
        commands pause, it catches what the observer cannot hear (see the module's docstring)."""
        for rel, key in list(self._kept.items()):
            try:
                found = os.stat(self._prefix + rel, follow_symlinks=False)
            except OSError:
                found = None
            if found is None or found.st_nlink != 1 or stat_key(found) != key:
                self._kept.pop(rel, None)

    def _mark(self) -> bool:
        """Make the next marker file and wait for the observer to pass its making on: True once every change
        made before it has been heard."""
        self._marks_made += 1
        marker = self._marker_numbered(self._marks_made)
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_WRONLY, 0o600))
        except FileNotFoundError:  # the cache folder removed: made again, and this walk stats every note
            with contextlib.suppress(OSError):
                Path(marker).parent.mkdir(parents=True, exist_ok=True)
            return False
        except OSError:
            return False
        finally:
            with contextlib.suppress(OSError):
                os.unlink(self._marker_numbered(self._marks_made - 1))
        with self._heard:
            return self._heard.wait_for(lambda: self._mark_heard >= self._marks_made, MARKER_WITHIN_SECONDS)

    def _marker_numbered(self, number: int) -> str:
        return f"{self._marker}{number}.marker"


def mount_type(path: str) -> str | None:
    """The type of the file system `path` is on, or None where another mount lies inside it (or /proc says
    nothing): from the longest mount point holding it in /proc/self/mountinfo."""
    real = os.path.realpath(path)
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as mounts:
            lines = mounts.read().splitlines()
    except OSError:
        return None
    best, kind = "", None
    for line in lines:
        fields = line.split(" ")
        if "-" not in fields or len(fields) < 5:
            continue
        point = fields[4].replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")
        if point != real and point.startswith(real.rstrip("/") + "/"):
            return None  # another file system inside the vault
        if (real == point or real.startswith(point.rstrip("/") + "/")) and len(point) >= len(best):
            best, kind = point, fields[fields.index("-") + 1]
    return kind
