"""Find a vault and load its decision notes into a state (`VaultState`): what every command reads.

Only notes whose frontmatter says `type: decision` are parsed in full; every
other note is read no further than its first few KiB and never written.
"""
from __future__ import annotations

import json
import os
import pickle
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import notes, state_memo
from .carriers import ConflictCopy, find_copies
from .config import Config, check_folders_on_disk, load_config
from .errors import NoteError, VaultToolsError
from .layout import Layout, device_tag, layout_of, relative
from .ledger import Ledger
from .links import LinkResolver, NoteIndex
from .model import Decision, Problem, build_decision
from .reading import (
    CACHE_FILE,
    CachedNote,
    NoteCache,
    Read,
    Stored,
    inside_vault,
    read_payload,
    read_payloads,
    stored_of,
    stores_running,
)
from .record_files import LEDGER_SUFFIX, find_vault, settled_by
from .topic_aliases import load_aliases
from .topics import topic_aliases_in_use, use_topic_aliases
from .vault_walk import iter_markdown

if TYPE_CHECKING:
    from .folder_watch import FolderWatch
    from .history import History, RecordSummary

FEW_CHANGED = 200  # notes changed since the state memo, at most, for which the note cache is read note by note
# A process that answers command after command (the resident process) keeps its last whole read of each vault:
# while the walk meets the same files with the same stat keys (all past the racy window when it was kept), the
# same config and merged topics, the next command takes those notes as they were read, without recalling the
# memo. What the services work out from a state (`derived`) is worked out again: it depends on the ledger too.
# Where the walk meets changed files, each note's parts as that read built them stand for the memo (not
# recalled, nor written: a process of its own writes it when it reads). A one-command process keeps none.
KEEP_LAST_READ = False
# vault root -> what its walk met, the state (None when a note was in the racy window), each note's parts, and the
# number `FolderWatch.arm` gave before that walk
_last_reads: dict[str, tuple[tuple[Any, ...], VaultState | None, dict[str, tuple[StatKey, Piece]], int]] = {}
# Set by such a process (`folder_watch.watch_of`): where the kernel says nothing in a vault's folders changed since
# the walk its last whole read came from, that read is taken again without a walk (docs/design/0049).
WATCH_FOLDERS: Callable[[Path], FolderWatch | None] | None = None
# Such a process also keeps each vault's ledger reader: it checks its files' stat keys at each read and reads
# again what changed, as the watcher's does over hours; what it worked out from them (events, histories,
# summaries) is taken again while they are unchanged. The resident writes none of it (`Ledger.writes_memos`): the
# commands' own processes and the watcher do, and what a command it runs writes in the vault is written by the
# process that asked for it (`durable.written_by`).
_kept_ledgers: dict[tuple[str, bool], Ledger] = {}  # (vault root, shared layout) -> its ledger
STATE_MEMO = "cache/state-memo.pickle"  # in the state folder: each note's parts, signed (`state_memo`)


# What one note gives a state: nothing (not a decision note), the error that keeps it from being read, or its
# parts: the decision it is (None: too broken to be one), its problems, its properties, the line of each and the
# line its body starts on. Kept in the state memo under the note's stat key.
NoteParts = tuple[Decision | None, list[Problem], dict[str, Any], dict[str, int], int]
Piece = NoteError | NoteParts | None


# What a command that needs something of every decision (the pages: each ruling's words) does with each decision a
# first read in several processes builds, done while the other processes read (`Vault._read_into`): work it would
# otherwise do once all is read. Set for the length of a read (`commands.same.words_while_reading`).
WHILE_READING: list[Callable[[Decision], object]] = []


def _piece(rel: str, kind: str, payload: dict[str, Any] | None, decided: Decision | None = None) -> Piece:
    if kind == "other" or payload is None:
        return None
    if kind == "broken":
        kind_of_error = UnreadableNote if payload.get("unreadable") else NoteError
        return kind_of_error(payload["message"], path=rel, line=payload["line"])
    decision: Decision | None
    problems: list[Problem]
    if decided is not None and decided.path == rel:  # built from these very parts, without a problem
        decision, problems = decided, []
    else:
        decision, problems = build_decision(payload["data"], path=rel, body=payload["body"],
                                            key_lines=payload["lines"])
    return decision, problems, payload["data"], payload["lines"], payload["body_line"]


def _forget_frames(errors: Iterable[BaseException]) -> None:
    """Errors a command raised before, kept to be raised again: the frames they carried go with them."""
    for kept_error in errors:
        kept_error.__traceback__ = kept_error.__context__ = kept_error.__cause__ = None


def _cover(watch: FolderWatch | None, folders: list[str | None] | None,
           listed: list[tuple[str, str, StatKey | OSError | None]], stat_keys: Mapping[str, StatKey] | None,
           plain: bool) -> None:
    """Tell the watch what the walk armed last entered and met, each note with the stat key the read holds."""
    if watch is not None and folders is not None:
        keys = stat_keys or {}
        watch.cover(folders, [(path, keys.get(rel)) for rel, path, _ in listed], plain)


def _known_keys(watch: FolderWatch | None, last: tuple[Any, ...] | None, memo_key: Any,
                layout: Layout) -> dict[str, StatKey] | None:
    """After the watch is armed: each note the last walk stat'ed (by its full path) with that stat key, but for
    those the kernel named as changed since that walk; None where it cannot say (`FolderWatch.named_since`), or
    the last read was made under another config, merged topics or layout. A stat of 6,500 notes is three
    quarters of a walk: the first command after a change stats what changed."""
    if watch is None or last is None or not _walked_under(last[0], memo_key, layout):
        return None
    named = watch.named_since(last[3])
    if named is None:
        return None
    return {path: key for _, path, key in last[0][1] if isinstance(key, tuple) and path not in named}


def _unchanged(watch: FolderWatch | None, last: tuple[Any, ...], memo_key: Any, layout: Layout) -> bool:
    """Whether the kernel says no folder or note changed since the walk the last read came from, made under the
    same config, merged topics and layout (`_walked_under`)."""
    return watch is not None and _walked_under(last[0], memo_key, layout) and watch.quiet_since(last[3])


def _walked_under(walked: tuple[Any, ...], memo_key: Any, layout: Layout) -> bool:
    """Whether a walk (memo key, listed, others, temps, misnamed, layout.shared) was made under this config and
    merged topics (`memo_key`) and this layout (which folders the walk skips)."""
    return bool(walked[0] == memo_key and walked[5] == layout.shared)


def _walked_alike(root: str, last: tuple[Any, ...], armed: int, watch: FolderWatch | None,
                  folders: list[str | None] | None, listed: list[tuple[str, str, StatKey | OSError | None]],
                  plain: bool) -> VaultState:
    """The last read, which the walk armed with `armed` met alike: kept as that walk's."""
    _last_reads[root] = (*last[:3], armed)
    _cover(watch, folders, listed, last[1].stat_keys, plain)
    return _taken_again(last[1])


def _taken_again(kept: VaultState) -> VaultState:
    """The state a process kept, for another command (what that command works out of it is worked out anew)."""
    _forget_frames(kept.broken)
    return replace(kept, derived=Derived())


def _keep_last_read(root: str, walked: tuple[Any, ...], state: VaultState, pieces: dict[str, Piece], walked_at: int,
                    armed: int, keep: bool) -> None:
    """Keep this read for the next command (`_last_reads`): the state, where every note was past the racy window
    when walked, and each such note's parts; with `keep` False, forget the last one."""
    if not keep or state.stat_keys is None:
        _last_reads.pop(root, None)
        return
    settled = {rel: (key, pieces[rel]) for rel, key in state.stat_keys.items() if settled_by(key, walked_at)}
    whole = len(settled) == len(walked[1])
    _last_reads[root] = (walked, replace(state, derived=Derived()) if whole else None, settled, armed)


def _place(state: VaultState, rel: str, piece: NoteError | NoteParts) -> None:
    if isinstance(piece, NoteError):
        state.broken.append(piece)
        return
    decision, problems, data, lines, body_line = piece
    state.properties[rel] = data
    state.property_lines[rel] = lines
    state.body_lines[rel] = body_line
    if problems:
        state.problems[rel] = problems
    if decision is not None:
        state.decisions.append(decision)
    elif problems:
        state.broken.append(NoteError("; ".join(map(str, problems)), path=rel, line=problems[0].line))


# Such a process also hands out again the very decision it last built from a note, where reading the note again
# under the same config and merged topics builds one alike in every field (pickled the same): a note read again
# only because it was written within the racy window, or built by the command that wrote it and read by the next.
# What it worked out from that object by identity (`model.the_very`, `ByDecision`: the topic pairing, the pairs on
# one matter, each ruling's words) then holds for the next command as well, as for a note it did not read again.
_last_built: dict[str, tuple[Any, dict[str, Decision]]] = {}  # vault root -> (`_memo_key`, note -> decision)
LAST_BUILT_MOST = 100_000  # forgotten all at once past this many (a watcher running for weeks meets many notes)


def _take_last_built(root: str, memo_key: Any, pieces: dict[str, Piece], read: Iterable[str]) -> None:
    """The notes just `read` (of `pieces`), each holding the decision last built from it where alike."""
    built = _last_built.get(root)
    if built is None or built[0] != memo_key:  # built under another config or other topics: they say nothing
        built = _last_built[root] = (memo_key, {})
    for rel in read:
        pieces[rel] = _as_last_built(built[1], rel, pieces[rel])
    for rel in built[1].keys() - pieces.keys():  # a note gone, renamed or no longer a note: forgotten
        del built[1][rel]


def _as_last_built(built: dict[str, Decision], rel: str, piece: Piece) -> Piece:
    """`piece` as read, or holding the decision last built from the note at `rel` (in `built`) where that one is
    alike in every field; the decision it holds is the one last built from that note from now on."""
    if not isinstance(piece, tuple) or piece[0] is None:
        return piece
    last = built.get(rel)
    if last is not None and last is not piece[0] and last == piece[0] and _pickled_alike(last, piece[0]):
        return (last, *piece[1:])
    if len(built) >= LAST_BUILT_MOST:
        built.clear()
    built[rel] = piece[0]
    return piece


def _pickled_alike(one: Decision, other: Decision) -> bool:
    try:
        return pickle.dumps(one, pickle.HIGHEST_PROTOCOL) == pickle.dumps(other, pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError):  # as `state_memo.keep`: not alike
        return False


# docs/design/0011-names-and-output-that-are-not-utf-8.md
def _misnamed_problem(root: Path, path: str) -> NoteError | None:
    """What to say of a file or folder the walk passed over for its name (see `iter_markdown`): a decision
    note, or a folder holding Markdown files, cannot be read until renamed. Anything else is no concern."""
    shown = relative(root, Path(path)).encode("utf-8", "backslashreplace").decode("utf-8")
    why = "its name is not valid UTF-8, so it is not read; rename it (in Obsidian or the file manager)"
    if os.path.isdir(path):
        holds_notes = any(name.endswith(".md") for _, _, names in os.walk(path) for name in names)
        return NoteError(f"folder: {why}, with the notes in it", path=shown) if holds_notes else None
    if not path.endswith(".md"):
        return None
    kind, _ = read_payload(root, path)
    return NoteError(why, path=shown) if kind != "other" else None


class UnreadableNote(NoteError):
    """A file the walk met but could not open: whether it is a decision note is not known."""


@dataclass
class Derived:
    """What the services work out from one read of the vault, kept with it: each None (or empty) until first
    asked. `services.live` keeps some of it current as it writes, and forgets the rest (`forget`)."""

    in_effect: list[Decision] | None = None  # `Workspace.decisions_in_effect`
    missing_rulings: list[Decision] | None = None  # `services.missing.missing_rulings`
    summary_ties: Mapping[str, RecordSummary] | None = None  # note path -> its record's summary (`Workspace.summary_of`)
    history_ties: tuple[dict[str, History], dict[str, History]] | None = None  # (histories, note path -> its record)
    seal_hashes: dict[tuple[str, str], str] = field(default_factory=dict)  # (id, path) -> seal hash
    seal_holds: dict[str, dict[tuple[str, str | None], bool]] = field(default_factory=dict)  # `commands.agreement`
    duplicate_ids: dict[str, list[Decision]] | None = None  # `Workspace.duplicated`
    note_index: NoteIndex | None = None  # `VaultState.note_index`

    def forget(self, keep: Collection[str]) -> None:
        """Forget all but the fields named in `keep`."""
        for name, value in vars(Derived()).items():
            if name not in keep:
                setattr(self, name, value)


@dataclass
class VaultState:
    """The decision notes of a vault as read now, with the notes that could not be read."""

    root: Path
    config: Config
    decisions: list[Decision] = field(default_factory=list)
    broken: list[NoteError] = field(default_factory=list)  # decision notes that cannot be parsed
    problems: dict[str, list[Problem]] = field(default_factory=dict)  # by relative path
    # For every decision note (valid or not), by relative path: its properties as parsed,
    # the line of each, and the line its body starts on.
    properties: dict[str, dict[str, Any]] = field(default_factory=dict)
    property_lines: dict[str, dict[str, int]] = field(default_factory=dict)
    body_lines: dict[str, int] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)  # every file of the vault a link can name
    temp_files: list[str] = field(default_factory=list)  # our writes' temp files (left by a kill when old)
    # Conflict copies a sync engine made of decision notes: set aside, never read as notes of their own.
    conflict_copies: list[ConflictCopy] = field(default_factory=list)
    _by_id: dict[str, Decision] | None = field(default=None, repr=False, compare=False)
    _resolver: LinkResolver | None = field(default=None, repr=False, compare=False)
    derived: Derived = field(default_factory=lambda: Derived(), repr=False, compare=False)  # what others work out
    # Each note's (size, mtime_ns, ctime_ns, inode) as the read found it: what a derived index checks itself
    # against without walking the vault again; None once the state was changed after the read.
    stat_keys: dict[str, StatKey] | None = field(default_factory=dict, repr=False, compare=False)
    # The ledger's stat key as of the last time a live view (`LiveState`) read it: what it says of each note's
    # record is as of then. None: the ledger is read as it is whenever asked.
    ledger_seen: Any = field(default=None, repr=False, compare=False)

    # A state is read once and not changed after; what derives from it is computed once.
    def by_id(self) -> dict[str, Decision]:
        if self._by_id is None:
            self._by_id = {decision.id: decision for decision in self.decisions}
        return self._by_id

    def resolver(self) -> LinkResolver:
        if self._resolver is None:
            self._resolver = LinkResolver(self.decisions)
        return self._resolver

    def get(self, decision_id: str) -> Decision | None:
        return self.by_id().get(decision_id)

    def note_index(self) -> NoteIndex:
        if self.derived.note_index is None:
            self.derived.note_index = NoteIndex(self.files)
        return self.derived.note_index


StatKey = notes.StatKey


def set_aside_conflict_copies(state: VaultState) -> None:
    """Take the conflict copies sync engines made out of the decisions (see `carriers`)."""
    copies = find_copies({d.path: d.id for d in state.decisions})
    if not copies:
        return
    paths = {copy.path for copy in copies}
    state.decisions = [d for d in state.decisions if d.path not in paths]
    for path in paths:
        state.problems.pop(path, None)
    state.conflict_copies = copies


def _own_file_name(root: Path) -> str | None:
    """This device's ledger file's name in the shared layout as its tag says now (None: it has no tag yet)."""
    tag = device_tag(root, shared=True, create=False)
    return f"{tag}{LEDGER_SUFFIX}" if tag else None


class ReadPostponed(Exception):
    """More to read than a read made ahead of any command takes on (`Vault.load`'s `most_read`)."""


class Vault:
    """A vault on disk: its root, config and ledger."""

    def __init__(self, root: Path, config: Config | None = None) -> None:
        self.root = root
        self.config = config if config is not None else load_config(root)
        check_folders_on_disk(root, self.config)
        self._paths: dict[str, Path] = {}  # vault-relative path -> where it is (see `path_of`)
        self.layout = layout_of(root)
        self.state_dir = self.layout.local_dir  # this device's own files
        self.record_dir = self.layout.record_dir  # config, topic aliases, kept copies: carried to every device
        kept_as = (str(root), self.layout.shared)
        kept = _kept_ledgers.get(kept_as) if KEEP_LAST_READ else None
        if kept is not None and kept.shared and kept.own_name() != _own_file_name(root):
            # This device's tag, which says which ledger file is its own, changed (a vault set up again at this
            # path, its git folder made, its devices folder removed): read as a process of its own reads
            kept = None
        if kept is not None:
            self.ledger = kept  # it reads again whatever changed in its files since (as the watcher's does)
        elif self.layout.shared:
            self.ledger = Ledger(self.state_dir, shared_dir=self.layout.ledger_dir, kept_dir=self.layout.kept_dir,
                                 device=lambda create: device_tag(root, shared=True, create=create))
        else:
            self.ledger = Ledger(self.state_dir, kept_dir=self.layout.kept_dir)
        if KEEP_LAST_READ:
            self.ledger.writes_memos = False
            _kept_ledgers[kept_as] = self.ledger

    @classmethod
    def find(cls, explicit: Path | None = None) -> Vault:
        return cls(find_vault(explicit))

    def relative(self, path: Path) -> str:
        return relative(self.root, path)

    def inside(self, path: Path) -> bool:
        return inside_vault(self.root, path)

    def load(self, *, most_read: int | None = None) -> VaultState:
        """Every decision note, from the state memo or the note cache when its file is certainly unchanged, else
        read afresh. With `most_read`: `ReadPostponed` rather than read more notes than that."""
        state = VaultState(self.root, self.config)
        aliases = load_aliases(self.record_dir)
        use_topic_aliases(aliases)  # every comparison of topics from here reads them
        memo_path = self.state_dir / STATE_MEMO
        last = _last_reads.get(str(self.root)) if KEEP_LAST_READ else None
        watch = WATCH_FOLDERS(self.root) if WATCH_FOLDERS is not None and KEEP_LAST_READ else None
        if last is not None and last[1] is not None and _unchanged(watch, last, self._memo_key(aliases), self.layout):
            return _taken_again(last[1])
        armed = watch.arm() if watch is not None else 0
        others, misnamed = list[str](), list[str]()
        walked_at = time.time_ns()
        warm = last is not None or memo_path.is_file() or (self.state_dir / CACHE_FILE).is_file()
        folders: list[str | None] | None = [] if watch is not None else None
        linked: list[str] | None = [] if watch is not None else None  # what only a watch asks
        listed = self._walk(others, state.temp_files, misnamed, stat=warm, folders=folders, linked=linked,
                            known=_known_keys(watch, last, self._memo_key(aliases), self.layout))
        state.files += [rel for rel, _, _ in listed]
        walked = (self._memo_key(aliases), listed, others, state.temp_files, misnamed, self.layout.shared)
        if last is not None and last[0] == walked and last[1] is not None:
            return _walked_alike(str(self.root), last, armed, watch, folders, listed, warm and not linked)
        # Each note's parts as the last whole read built them, under its stat key (see `_memo_key` for the rest)
        recalled: dict[str, tuple[StatKey, Piece]] | None
        origin = None  # where the memo recalled came from: what keeping it again needs (`state_memo.keep_mapping`)
        if last is not None and last[0][0] == walked[0]:  # kept by this process, under the same config and topics
            recalled = last[2]
            _forget_frames(piece for _, piece in recalled.values() if isinstance(piece, NoteError))
        else:
            found = state_memo.recall_mapping(memo_path, walked[0]) if memo_path.is_file() else None
            recalled, origin = found if found is not None else (None, None)
        memo = recalled or {}
        pieces: dict[str, Piece] = {rel: memo[rel][1] for rel, _, key in listed
                                    if key is not None and not isinstance(key, OSError) and rel in memo
                                    and memo[rel][0] == key}
        stat_keys: dict[str, StatKey] = {rel: key for rel, _, key in listed if rel in pieces}  # type: ignore[misc]
        if most_read is not None and len(listed) - len(pieces) > most_read:
            raise ReadPostponed(f"{len(listed) - len(pieces)} notes to read")
        if len(pieces) < len(listed) or len(memo) != len(listed):
            known = set(pieces) if KEEP_LAST_READ else None
            self._read_into(pieces, stat_keys, listed, state, memo.keys())
            if known is not None:
                _take_last_built(str(self.root), walked[0], pieces, pieces.keys() - known)
            if warm and not KEEP_LAST_READ:  # a first read stores the note cache (in a child); the next, the memo
                self._keep_memo(memo_path, aliases, pieces, stat_keys, walked_at, recalled, origin)
        state.stat_keys = stat_keys
        for rel in state.files:
            piece = pieces.get(rel)
            if piece is not None:
                _place(state, rel, piece)
        state.files += others
        state.broken += filter(None, (_misnamed_problem(self.root, path) for path in misnamed))
        set_aside_conflict_copies(state)
        _cover(watch, folders, listed, stat_keys, warm and not linked)
        # Not kept while a name is not UTF-8: what is said of such a file depends on what it holds (a decision
        # note or not), which the walk does not compare
        if KEEP_LAST_READ:
            _keep_last_read(str(self.root), walked, state, pieces, walked_at, armed, warm and not misnamed)
        return state

    def _walk(self, others: list[str], temps: list[str], misnamed: list[str], *, stat: bool,
              folders: list[str | None] | None = None, linked: list[str] | None = None,
              known: Mapping[str, StatKey] | None = None) -> list[tuple[str, str, StatKey | OSError | None]]:
        """Every Markdown file in the walk's order (`iter_markdown`, which fills `others`, `temps`, `misnamed` and
        `folders`): its path, where it is, and with `stat` its stat key or why it could not be stat'ed (None
        without: a first read takes each note's key as it opens it). Each note stat'ed that is a symbolic link, has
        a second link or could not be stat'ed is added to `linked`. `known`: the stat key of each note (by its full
        path) that the kernel says is unchanged since it was stat'ed (`_known_keys`), taken without a stat."""
        listed: list[tuple[str, str, StatKey | OSError | None]] = []
        # With `folders` (a watch), as the read is kept under: the layout this Vault was made with
        shared = self.layout.shared if folders is not None else None
        for rel, entry in iter_markdown(self.root, self.config, others, temps, misnamed, folders, shared):
            kept = known.get(entry.path) if known is not None and stat else None
            if kept is not None:
                listed.append((rel, entry.path, kept))
                continue
            try:
                found = entry.stat() if stat else None
            except OSError as error:
                listed.append((rel, entry.path, error))
                if linked is not None:
                    linked.append(rel)
                continue
            listed.append((rel, entry.path, notes.stat_key(found) if found is not None else None))
            if linked is not None and found is not None and (found.st_nlink != 1 or entry.is_symlink()):
                linked.append(rel)
        return listed

    def unchanged_since(self, state: VaultState) -> bool:
        """Whether a walk finds every Markdown file `state` was read from, and only those, with the stat keys it
        has for them (a state changed since its read has none: False)."""
        if state.stat_keys is None:
            return False
        listed = self._walk([], [], [], stat=True)
        return len(listed) == len(state.stat_keys) and all(state.stat_keys.get(rel) == key for rel, _, key in listed)

    def _memo_key(self, aliases: Any) -> tuple[Any, ...]:
        """What the state memo is kept under besides each note's stat key: what a note is built with."""
        return (str(self.root), repr(self.config), repr(aliases))

    def _keep_memo(self, path: Path, aliases: Any, pieces: dict[str, Piece], stat_keys: dict[str, StatKey],
                   walked_at: int, memo: dict[str, tuple[StatKey, Piece]] | None,
                   origin: state_memo.Origin | None) -> None:
        """Keep each note's parts under its stat key, but for a note written in the racy window before the walk
        (a later write in the same clock tick could leave the key as it was): it is read again next time. Not
        written again when it would hold what `memo`, the one read, holds (the notes read afresh were all
        written in the racy window: a command reading the vault again after writing a note). Where `memo` was
        recalled from `path` (`origin`), only the notes that differ from it are written, in its delta."""
        if not self.state_dir.is_dir():
            return  # a clone this device never wrote in: a read writes nothing there
        kept = {rel: (key, piece) for rel, piece in pieces.items()
                if (key := stat_keys.get(rel)) is not None and settled_by(key, walked_at)}
        changed = [rel for rel, (key, _) in kept.items() if memo is None or rel not in memo or memo[rel][0] != key]
        gone = [rel for rel in memo if rel not in kept] if memo is not None else []
        if memo is not None and not changed and not gone:
            return  # the same notes under the same stat keys: the same parts
        state_memo.keep_mapping(path, self._memo_key(aliases), kept, origin, changed + gone)

    def _read_into(self, pieces: dict[str, Piece], stat_keys: dict[str, StatKey],
                   listed: list[tuple[str, str, StatKey | OSError | None]], state: VaultState,
                   remembered: Collection[str] = ()) -> None:
        """The parts of every listed note not in `pieces` yet: from the note cache where its file is certainly
        unchanged, else read (in worker processes for a large first read). `remembered`: the notes the state
        memo held; when it held nearly all, only the others are looked up in the note cache, and the notes it
        held that are gone now are the ones the cache forgets."""
        cache = NoteCache(self.state_dir / CACHE_FILE) if self.state_dir.is_dir() else None
        missing = [rel for rel, _, _ in listed if rel not in pieces]
        if cache and remembered and len(missing) <= FEW_CHANGED:
            cached = cache.load(only=missing)
            listed_paths = {rel for rel, _, _ in listed}
            gone_since = [rel for rel in remembered if rel not in listed_paths]
        else:
            cached = cache.load() if cache else {}
            gone_since = []
        held: dict[str, CachedNote] = {}
        to_read: list[tuple[str, str]] = []
        for rel, path, key in listed:
            known = cached.pop(rel, None)  # what is left at the end is gone from the vault
            if rel in pieces:
                continue
            if isinstance(key, OSError):
                pieces[rel] = UnreadableNote(f"cannot be read: {key.strerror}", path=rel)
            elif known is not None and key is not None and known[0] == key:
                held[rel] = known
                stat_keys[rel] = key
            else:
                to_read.append((rel, path))
        # What is cached is trusted only once the file is older than the racy window at this moment, before
        # any note was read: a write right after a note was read, in the same tick, then never hides
        reading_from = time.time_ns()
        gone = list(cached) + gone_since

        def store(rows: Iterable[Stored]) -> None:  # by a reader, while this process goes on; or by this one
            assert cache is not None
            cache.save(zip((rel for rel, _ in to_read), rows, strict=True), reading_from, gone)

        # Each note's parts built as its chunk comes in, while other processes read: by the read it was built
        # from (a chunk of a reader that failed is read again, and built again)
        built: dict[int, tuple[Read, Piece]] = {}

        def build_meanwhile(start: int, reads: list[Read]) -> None:
            for (rel, _), read in zip(to_read[start:start + len(reads)], reads, strict=True):
                if read[0] != "other":
                    piece = _piece(rel, read[0], read[1])
                    built[id(read)] = (read, piece)
                    if isinstance(piece, tuple) and piece[0] is not None:
                        for work in WHILE_READING:
                            try:
                                work(piece[0])
                            except Exception:  # done ahead of being asked: any trouble is met when it is asked
                                pass

        results, storing = read_payloads(self.root, [path for _, path in to_read], meanwhile=self._read_ledger,
                                         store=store if cache and cache.enabled else None,
                                         taken=build_meanwhile)
        if storing is not None:  # a reader writes the cache while this process goes on: waited for at exit
            stores_running.append(storing)
        for (rel, _), read in zip(to_read, results, strict=True):
            kind, payload, stat_key, _ = read
            if stat_key is not None:  # None: it could not be opened
                stat_keys[rel] = stat_key
            early = built.get(id(read))
            pieces[rel] = early[1] if early is not None and early[0] is read else _piece(rel, kind, payload)
        for rel, (_, kind, form, body) in held.items():
            payload = json.loads(form) if kind != "other" and form is not None else None
            if payload is not None and body is not None:
                payload["body"] = body
            pieces[rel] = _piece(rel, kind, payload)
        if cache and storing is None:
            store(map(stored_of, results))

    def _read_ledger(self) -> None:
        """What the ledger's records stand at, worked out while other processes read the notes: nearly every
        command asks, and on a first read of a large vault it costs a sixth of the time (it is remembered)."""
        try:
            self.ledger.summaries()
        except (VaultToolsError, OSError):
            pass  # said when asked again

    def read_one(self, rel: str, written: notes.Written | None = None, decided: Decision | None = None) -> VaultState:
        """One note read as `load` reads it, in a state of its own: how a process that wrote it (`written`, its
        last write there) reads it again. `decided` is the decision `written.parsed` is, where the writer built it:
        taken when the file still holds what was written (not built again)."""
        state = VaultState(self.root, self.config)
        kind, payload = read_payload(self.root, self.root / rel, written)
        parsed = written.parsed if written is not None else None
        as_written = parsed is not None and payload is not None and payload.get("data") is parsed.data and \
            payload.get("body") is parsed.body  # the very parse `read_note` handed back for those bytes
        piece = _piece(rel, kind, payload, decided if as_written else None)
        built = _last_built.get(str(self.root)) if KEEP_LAST_READ else None
        if built is not None and built[0] == self._memo_key(topic_aliases_in_use()):  # as built: the same config
            piece = _as_last_built(built[1], rel, piece)  # and merged topics (those every comparison reads now)
        if piece is not None:
            _place(state, rel, piece)
        return state

    def read_payload(self, path: str | Path) -> tuple[str, dict[str, Any] | None]:
        return read_payload(self.root, path)

    def path_of(self, decision: Decision) -> Path:
        path = self._paths.get(decision.path)
        if path is None:  # made once for each note: a reconcile asks for each many times
            path = self._paths[decision.path] = self.root / decision.path
        return path

