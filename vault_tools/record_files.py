"""The record's files, named in one place: what an agent may read but never write, and where lint says to look.

A vault's record is its decision notes (wherever they are: a note with `type: decision`) and these files:
the ledger (every device's file in `vault-tools/ledger/`, or the one `.vault-tools/ledger.jsonl` of vaults made
before the shared layout), the config, the topics the owner merged, the copies vault-tools kept of text it
replaced, and the generated pages. The agent hooks deny writes to every one of them; `layout` builds its paths
from these names. A leaf: the hooks import it on every call, so it imports nothing that reading a vault needs.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

from . import vault_root
from .errors import ConfigError
from .page_names import PAGE_NAMES
from .vault_root import holds_record, vault_above_folder

# Defined with the walk up to a vault (`vault_root`), which the console script takes without this module
STATE_DIR = vault_root.STATE_DIR  # this device's own (hidden; never carried by Obsidian Sync); the record before
RECORD_DIR = vault_root.RECORD_DIR  # the shared layout's record (visible; carried with the notes)
CONFIG_FILE = vault_root.CONFIG_FILE
LEDGER_FOLDER = vault_root.LEDGER_FOLDER  # the shared layout's ledger: one `<device tag>.jsonl` per device
LEDGER_LOCK = vault_root.LEDGER_LOCK  # in STATE_DIR: held by whatever writes the record (`Ledger.locked`)
CEILING_ENV = vault_root.CEILING_ENV  # set (like GIT_CEILING_DIRECTORIES) to stop the upward search for a vault

TOPICS_FILE = "topics.yaml"  # the topics the owner merged (`topic_aliases`)
KEPT_FOLDER = "kept"  # copies of text vault-tools replaced (an edited page, a torn ledger line)
WATCH_LOG = "watch.log"  # in STATE_DIR: the watcher's log, rotated (`watch.open_log`; `service` prints where)
MERGE_COPIES_FOLDER = "merged"  # in STATE_DIR: both sides of a note git's notes driver merged, until filed in kept/
LEGACY_LEDGER = "ledger.jsonl"  # the hidden layout's one ledger
LEDGER_COPIES_FOLDER = "ledger-copies"  # in STATE_DIR: this device's copy of each ledger file (`tripwire`)
LEDGER_STAMP = "checked.json"  # in LEDGER_COPIES_FOLDER: each ledger file's (size, mtime_ns, inode) when checked
SETTINGS_COPIES_FOLDER = "settings-copies"  # in STATE_DIR: this device's copy of the config and merged topics
AGENT_CALLS = "agent-calls.json"  # in STATE_DIR: {"open": {call: began}, "ended": [[began, ended], ...]} (ns)
SETTINGS_STAMP = "checked.json"  # in SETTINGS_COPIES_FOLDER: the agent call it was taken for, and the files' stats
LEDGER_SUFFIX = ".jsonl"
DEFAULT_PINNED_FOLDER = "Pinned"

LEDGER, CONFIG, TOPICS, KEPT, PAGE = "ledger", "config", "topics", "kept", "page"
# A file written within this of a read may have been missed by it (the file system's clock ticks coarsely): what
# was read that recently is read again next time (the ledger's listing, the note cache, the agents' snapshot)
RACY_NANOSECONDS = 2_000_000_000


def settled_by(key: tuple[int, int, int, int], at_ns: int) -> bool:
    """Whether a file whose stat key (size, mtime, ctime, inode) is `key` was left alone past the racy window by
    `at_ns`: only then may what was read of it be trusted later on its key alone (a write in the same clock
    tick as the read could leave the key as it was)."""
    return at_ns - max(key[1], key[2]) > RACY_NANOSECONDS


_PAGE_KEYS = {name.casefold() for name in PAGE_NAMES}
# In STATE_DIR, what the tripwire keeps to check the record against (see below): guarded as the ledger is
_TRIPWIRE_STATE = {LEDGER_COPIES_FOLDER, SETTINGS_COPIES_FOLDER, AGENT_CALLS, AGENT_CALLS + ".lock"}


MERGE_COPY_WORDS = " as a merge found it"  # the middle of a kept copy's name that git's notes driver made


def merge_copy_name(decision_id: str, status: str) -> str:
    """The start of the name of a copy the notes merge driver keeps of one side (`kept_copy` adds time and tag)."""
    return f"{decision_id} {status}{MERGE_COPY_WORDS}"


def merge_copy_id(file_name: str) -> str | None:
    """The id a kept copy made by the notes merge driver is of, from its file name; None for any other name."""
    head, found, _ = file_name.partition(MERGE_COPY_WORDS)
    return head.split(" ")[0] if found and " " in head else None


def find_vault(explicit: Path | None, start: Path | None = None) -> Path:
    """The vault a command works on: `explicit` (resolved, a folder), else the nearest one from `start` (the
    working folder) up (`vault_above`); a ConfigError naming the path when there is none."""
    if explicit is not None:
        root = explicit.expanduser().resolve()
        if not root.is_dir():
            raise ConfigError("is not a folder", path=str(explicit))
        return root
    here = (start or Path.cwd()).resolve()
    found = vault_above(here, Path.resolve)
    if found is not None:
        return found
    raise ConfigError("no vault found here or above (no .vault-tools/ or .obsidian/ folder); pass --vault PATH",
                      path=str(here))


def vault_above(here: Path, normal: Callable[[Path], Path]) -> Path | None:
    """The nearest folder from `here` up that is a vault (it holds `.vault-tools/`, `.obsidian/` or a shared
    record), not above `$VAULT_TOOLS_CEILING`; None when there is none. `normal` makes a path comparable (the
    command line resolves symbolic links, the hooks keep them as the agent gave them): `here` is given so."""
    found = vault_above_folder(str(here), lambda ceiling: str(normal(Path(ceiling))))
    return Path(found) if found is not None else None


def holds_shared_record(root: Path) -> bool:
    """Whether `vault-tools/` holds a record (a folder of that name holding none is the owner's)."""
    return holds_record(str(root))


def record_part(root: Path, rel: str, pinned_folder: Callable[[], str] = lambda: DEFAULT_PINNED_FOLDER) -> str | None:
    """Which of the record's files `rel` (vault-relative, forward slashes) is: LEDGER, CONFIG, TOPICS, KEPT or
    PAGE; None for any other path (a decision note is known by its text, not its path). Both layouts count:
    a vault carried between machines on different versions may hold either. `pinned_folder` is asked only
    for a path named as a page (reading the config costs more than the rest)."""
    parts = rel.casefold().split("/")  # as a case-insensitive file system (macOS, Windows) finds them
    top, rest = parts[0], parts[1:]
    if top == STATE_DIR or (top == RECORD_DIR and holds_shared_record(root)):
        if rest == [CONFIG_FILE]:
            return CONFIG
        if rest == [TOPICS_FILE]:
            return TOPICS
        if rest and (rest[0] == KEPT_FOLDER or (top == STATE_DIR and rest[0] == MERGE_COPIES_FOLDER)):
            return KEPT  # (a merge copy waiting to be filed is one: the watcher records the outcome it holds)
        if top == STATE_DIR and (rest == [LEGACY_LEDGER] or (rest and rest[0] in _TRIPWIRE_STATE)):
            return LEDGER  # (and what the tripwire checks the record against: its copies, the agent's calls)
        if top == RECORD_DIR and len(rest) == 2 and rest[0] == LEDGER_FOLDER and rest[1].endswith(LEDGER_SUFFIX):
            return LEDGER
        return None
    folder, _, name = "/".join(parts).rpartition("/")
    if name.endswith(".md") and name[:-3] in _PAGE_KEYS and folder == pinned_folder().strip("/").casefold():
        return PAGE
    return None



def file_stat(path: Path) -> list[int] | None:
    """What a ledger file's stamp keeps of it: size, time and inode (None: not there)."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return [found.st_size, found.st_mtime_ns, found.st_ino]


def read_stamp(folder: Path) -> dict[str, list[int] | None] | None:
    try:
        found = json.loads((folder / LEDGER_STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def ledger_paths(root: Path) -> list[str]:
    """Where the ledger of the vault at `root` may be: the hidden layout's one file, then every device's file of
    the shared layout by name (whether or not each is there; `Ledger.files` reads them, keeping what it listed)."""
    found = [os.path.join(root, STATE_DIR, LEGACY_LEDGER)]
    folder = os.path.join(root, RECORD_DIR, LEDGER_FOLDER)
    try:
        found += sorted(os.path.join(folder, name) for name in os.listdir(folder) if name.endswith(LEDGER_SUFFIX))
    except OSError:
        pass
    return found


def ledgers_unchanged(root: Path) -> bool:
    """Whether no ledger file of the vault at `root` changed, came or went since the tripwire last checked them
    (`tripwire`): a few stats, nothing of the ledger's reading (the `post-tool-use` hook answers most calls so)."""
    stamp = read_stamp(root / STATE_DIR / LEDGER_COPIES_FOLDER)
    if stamp is None:
        return False
    if any(os.path.realpath(path) not in stamp for path in ledger_paths(root) if os.path.exists(path)):
        return False
    return all(file_stat(Path(path)) == found for path, found in stamp.items())


# -- the settings an agent's call may not change (`tripwire.put_back_settings`) ---------------------------------

def settings_files(root: Path) -> list[Path]:
    """The config and the merged topics of the vault at `root`, where its layout keeps them."""
    folder = root / RECORD_DIR if holds_shared_record(root) else root / STATE_DIR
    return [folder / CONFIG_FILE, folder / TOPICS_FILE]


def settings_stamp(root: Path) -> dict[str, object] | None:
    try:
        found = json.loads((root / STATE_DIR / SETTINGS_COPIES_FOLDER / SETTINGS_STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def remember_settings(root: Path, call: str | None) -> None:
    """The settings as they are before an agent's call (`call`: what tells that call apart), or after vault-tools
    wrote them (`call` None: the call under way, if any, stays the one stamped): what changed since the last look
    is the owner's, and is copied. A few stats when nothing changed; nothing at all in a vault never set up."""
    folder = root / STATE_DIR / SETTINGS_COPIES_FOLDER
    if not folder.parent.is_dir():
        return
    stamp = settings_stamp(root) or {}
    files = settings_files(root)
    now = {path.name: file_stat(path) for path in files}
    try:
        if stamp.get("files") != now:
            folder.mkdir(exist_ok=True)
            for path in files:
                _copy(path, folder / path.name)
        if stamp.get("files") != now or (call is not None and stamp.get("call") != call):
            _write(folder / SETTINGS_STAMP, json.dumps({"call": call if call is not None else stamp.get("call"),
                                                        "files": now}).encode("utf-8"))
    except OSError:
        pass  # a safeguard: a read-only state folder must not stop the agent


def settings_changed_during(root: Path, call: str) -> bool:
    """Whether the settings changed since `remember_settings` was told of this very call (not of another: a call
    no hook looked at before it ran, such as a Read, says nothing of who changed them)."""
    stamp = settings_stamp(root)
    if stamp is None or stamp.get("call") != call:
        return False
    return stamp.get("files") != {path.name: file_stat(path) for path in settings_files(root)}


def _copy(source: Path, target: Path) -> None:
    try:
        data = source.read_bytes()
    except FileNotFoundError:
        target.unlink(missing_ok=True)
        return
    _write(target, data)


def _write(path: Path, data: bytes) -> None:
    """Through a temp file, without `durable` (which a hook must not load): a torn copy is made again next time."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_bytes(data)
    os.replace(temp, path)


# -- the agent's tool calls, under way and just ended (`commands.held`) ---------------------------------------

# A call whose post-tool-use never came (the agent was killed) stops counting as under way after this long: Claude
# Code's longest Bash call is 10 minutes.
MAX_CALL_SECONDS = 900
# Calls that ended are remembered a day (at most MAX_ENDED_CALLS): a watcher started later, or a `lint --fix`,
# still holds what one of them changed.
KEPT_CALL_SECONDS = 86_400
MAX_ENDED_CALLS = 500
# In STATE_DIR: {"notes": the decision notes as last read, "pages": where the pinned pages are} (hooks' snapshot)
DECISION_PATHS = "cache/decision-paths-v2.json"
_NS = 1_000_000_000


class AgentCalls(NamedTuple):
    """The agent's tool calls this device's hooks saw: under way (call -> when it began), and ended."""

    open: dict[str, int]
    ended: list[tuple[int, int]]

    def under_way_at(self, path: str | Path) -> bool:
        """Whether the file at `path` changed since a call under way began (by its ctime: no program sets it back,
        as `touch -d` does the mtime)."""
        changed = _ctime(path) if self.open else None
        return changed is not None and changed >= min(self.open.values())

    def changed_during(self, path: str | Path) -> bool:
        """Whether the file at `path` last changed while a call was under way, or since one under way began."""
        if not self.open and not self.ended:
            return False
        changed = _ctime(path)
        if changed is None:
            return False
        return (bool(self.open) and changed >= min(self.open.values())) or \
            any(began <= changed <= ended for began, ended in self.ended)


NO_CALLS = AgentCalls({}, [])


def _ctime(path: str | Path) -> int | None:
    try:
        return os.stat(path).st_ctime_ns
    except OSError:
        return None


def agent_calls(root: Path) -> AgentCalls:
    """The calls under way and those that ended in the last KEPT_CALL_SECONDS; none when no agent worked here. A
    call whose post-tool-use never came (it failed, it was interrupted) ends MAX_CALL_SECONDS after it began:
    what it changed is held by the watcher's next pass then, never taken as the owner's."""
    try:
        found = json.loads((root / STATE_DIR / AGENT_CALLS).read_text(encoding="utf-8"))
        now, longest = time.time_ns(), MAX_CALL_SECONDS * _NS
        lapsed = [(began, began + longest) for began in found["open"].values()
                  if isinstance(began, int) and began <= now - longest]
        return AgentCalls({call: began for call, began in found["open"].items()
                           if isinstance(began, int) and began > now - longest},
                          [(began, ended) for began, ended in [*found["ended"], *lapsed]
                           if ended > now - KEPT_CALL_SECONDS * _NS])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return NO_CALLS


@contextlib.contextmanager
def _calls_locked(root: Path) -> Iterator[None]:
    """The calls' file to itself while one hook reads, changes and writes it: parallel tool calls run their hooks
    at once (an advisory lock on a file beside it, where the system has one; a lock that cannot be taken does
    not stop the agent)."""
    try:
        import fcntl  # POSIX: the hooks run on Linux and macOS; elsewhere without a lock

        handle = open(root / STATE_DIR / (AGENT_CALLS + ".lock"), "a+b")  # noqa: SIM115
    except (ImportError, OSError):
        yield
        return
    with handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        except OSError:
            pass
        yield


def _keep_calls(root: Path, calls: AgentCalls) -> None:
    try:
        _write(root / STATE_DIR / AGENT_CALLS, json.dumps({"open": calls.open, "ended": calls.ended}).encode("utf-8"))
    except OSError:
        pass  # a safeguard: a read-only state folder must not stop the agent


# Linux stamps a file's times from the clock it reads once a tick (CLOCK_REALTIME_COARSE, 1-10 ms behind
# `time_ns`; from 6.13 finer, but only for a file whose times were asked for since): a call's beginning is read
# from that clock, so a note written at once after it never looks older than the call. A note written within
# the tick before it may count as the call's: held for the owner's tick, never taken as the owner's.
_FILE_CLOCK = 5 if sys.platform.startswith("linux") else None  # <linux/time.h> CLOCK_REALTIME_COARSE


def file_clock_ns() -> int:
    """Now, by the clock the file system stamps files with where that clock is coarser than `time_ns`."""
    return time.clock_gettime_ns(_FILE_CLOCK) if _FILE_CLOCK is not None else time.time_ns()


def begin_agent_call(root: Path, call: str) -> None:
    """Note that the agent's tool call `call` begins now (pre-tool-use): a decision note it changes is not taken as
    the owner's step (see `commands.held`)."""
    if not (root / STATE_DIR).is_dir():
        return
    with _calls_locked(root):
        calls = agent_calls(root)
        _keep_calls(root, AgentCalls({**calls.open, call: file_clock_ns()}, calls.ended))


def agent_call_began(root: Path, call: str) -> int | None:
    """When the call `call` under way began (None: no pre-tool-use saw it begin)."""
    return agent_calls(root).open.get(call)


def end_agent_call(root: Path, call: str) -> None:
    """The call `call` is no longer under way: remembered as ended (a window overlapping the last one joins it)."""
    with _calls_locked(root):
        calls = agent_calls(root)
        began = calls.open.get(call)
        if began is None:
            return
        ended = sorted([*calls.ended, (began, time.time_ns())])
        joined: list[tuple[int, int]] = []
        for window in ended:
            if joined and window[0] <= joined[-1][1]:
                joined[-1] = (joined[-1][0], max(joined[-1][1], window[1]))
            else:
                joined.append(window)
        _keep_calls(root, AgentCalls({c: b for c, b in calls.open.items() if c != call}, joined[-MAX_ENDED_CALLS:]))


def mentions_decision(raw: bytes, end: int | None = None) -> bool:
    """Whether the bytes (up to `end`) hold the word `decision` in any case, or spelt with the long s (U+017F):
    the model casefolds `type`, so `type: Decision` marks a decision note as `type: decision` does. Whether some
    bytes may say so at all (the hooks ask it of every note of a folder a command would remove)."""
    low = (raw if end is None else raw[:end]).lower()  # ASCII letters only: as fast as looking twice
    return b"decision" in low or b"deci\xc5\xbfion" in low

# Loose on purpose: a frontmatter that is a list or broken YAML but says `type: decision` is a decision note the
# owner got wrong, not someone else's note. In any case (the long s too: `decision\b` matches it so).
_CLAIMS_DECISION = re.compile(r"""^[ \t-]*["']?type["']?[ \t]*:[ \t]*["']?decision\b""", re.MULTILINE | re.IGNORECASE)


def claims_decision(frontmatter: str) -> bool:
    """Whether a note's properties say `type: decision`, as the read takes a note for a decision note."""
    return bool(_CLAIMS_DECISION.search(frontmatter))


class NotesChanged(NamedTuple):
    decision_notes: list[str]  # vault-relative: changed, and saying `type: decision`
    folders_changed: bool  # a note may have gone: removed, moved or renamed
    pages_changed: bool = False  # a pinned page was written


def decision_notes_changed_since(root: Path, began: int) -> NotesChanged:
    """The notes (vault-relative) whose file changed since `began` (ns, by ctime) and whose properties, at a
    glance, say `type: decision`, and whether a folder changed (a note added, removed, moved or renamed): what
    an agent's call may have changed of the record. The decision notes as last read (`DECISION_PATHS`) are
    stat'ed, and every note of a folder that changed; without that list, every note. Dot-folders, the record's
    folder and `node_modules` are skipped; no note is parsed here (`commands.held` reads those found). A plain
    note made a decision note in place is not found here: the watcher holds it (`commands.held`)."""
    try:
        listed = json.loads((root / STATE_DIR / DECISION_PATHS).read_text(encoding="utf-8"))
        known: list[str] | None = list(listed["notes"])
        pages = [str(page) for page in listed["pages"]]
    except (OSError, ValueError, KeyError, TypeError):  # no snapshot yet: every note, the pages where they go
        known, pages = None, [f"{DEFAULT_PINNED_FOLDER}/{name}.md" for name in PAGE_NAMES]
    pages_changed = any((_ctime(root / page) or 0) >= began for page in pages)
    found = {rel for rel in known or () if (_ctime(root / rel) or 0) >= began and _says_decision(str(root / rel))}
    folders_changed = False
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        try:
            changed = os.stat(folder).st_ctime_ns >= began
            entries = os.scandir(folder)
        except OSError:
            continue
        folders_changed = folders_changed or changed
        with entries:
            for entry in entries:
                if entry.name.startswith(".") or entry.name == "node_modules" or \
                        (entry.name == RECORD_DIR and folder == str(root)):
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    elif (changed or known is None) and entry.name.endswith(".md") and \
                            entry.stat(follow_symlinks=False).st_ctime_ns >= began and _says_decision(entry.path):
                        found.add(os.path.relpath(entry.path, root).replace(os.sep, "/"))
                except OSError:
                    continue
    return NotesChanged(sorted(found), folders_changed, pages_changed)


def _says_decision(path: str) -> bool:
    try:
        with open(path, "rb") as file:
            head = file.read(16384)
    except OSError:
        return False
    head = head.removeprefix(b"\xef\xbb\xbf")
    if not head.startswith(b"---"):
        return False
    end = head.find(b"\n---", 3)
    properties = head[:end] if end >= 0 else head
    return mentions_decision(properties) and claims_decision(properties.decode("utf-8", "replace"))
