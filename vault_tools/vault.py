"""Find a vault, read its config, and load its decision notes.

Only notes whose frontmatter says `type: decision` are parsed in full; every
other note is read no further than its first few KiB and never written.
"""
from __future__ import annotations

import atexit
import datetime as dt
import hashlib
import json
import os
import re
import sqlite3
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import closing
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from . import __version__, notes
from .carriers import ConflictCopy, find_copies
from .dates import zone
from .errors import ConfigError, NoteError, VaultToolsError
from .handover import Receiver, can_fork, free_processors, hand_over, record, widen
from .layout import device_tag, is_shared, layout_of
from .ledger import RACY_NANOSECONDS as RACY_NANOSECONDS  # re-exported: the rule every cache keeps
from .ledger import Ledger
from .model import Decision, LinkResolver, NoteIndex, Problem, build_decision, is_decision_mapping, use_topic_aliases
from .record_files import CONFIG_FILE as CONFIG_FILE  # re-exported: where the hidden layout keeps it
from .record_files import RECORD_DIR
from .record_files import STATE_DIR as STATE_DIR
from .rule_codes import RULE_CODES
from .topic_aliases import load_aliases

CONFIG_CACHE = "cache/config.json"  # in this device's own folder
# Set (like GIT_CEILING_DIRECTORIES) to stop the upward search for a vault.
CEILING_ENV = "VAULT_TOOLS_CEILING"
SKIPPED_FOLDERS = {".trash", "node_modules"}


@dataclass(frozen=True)
class Config:
    """Every key of `.vault-tools/config.yaml`, with its default."""

    timezone: str = "UTC"
    decisions_folder: str = "Decisions"
    pinned_folder: str = "Pinned"
    templates_folder: str = "Templates"
    settle_seconds: float = 120.0  # a float: `settle_seconds: 0.5` is as valid as `120`
    debounce_ms: int = 2000
    stale_after_days: int = 14
    recent_days: int = 30
    reminder_days: int = 7
    budget_lines: int = 200
    budget_bytes: int = 25000
    default_asker: str = "agent"
    default_ruler: str = "owner"
    lint: dict[str, str] = field(default_factory=dict)
    harvest_on_change: bool = False
    review_every_days: int = 0
    project_root: str = ""
    scope_on_read: bool = False

    @property
    def tz(self) -> dt.tzinfo:
        return _zone(self.timezone)


CONFIG_DOC = {
    "timezone": "IANA time zone that dates in notes are written in (set by `init` from this machine)",
    "decisions_folder": "folder where new decision notes are created",
    "pinned_folder": "folder of the generated pages",
    "templates_folder": "Obsidian templates folder, skipped when scanning",
    "settle_seconds": "quiet time after a note becomes ruled before the watcher seals it",
    "debounce_ms": "quiet time after a save before the watcher looks at a note",
    "stale_after_days": "a question open longer than this is marked stale",
    "recent_days": "how long a superseded ruling stays on the decisions log",
    "reminder_days": "a question due within this many days is listed as due soon",
    "budget_lines": "most lines an agent loads (open questions + decisions log)",
    "budget_bytes": "most bytes an agent loads (open questions + decisions log)",
    "default_asker": "`asked_by` when a command does not say",
    "default_ruler": "`ruled_by` when a command or the watcher does not say",
    "lint": "per-rule severity: a mapping of code to error, warning or off",
    "harvest_on_change": "the watcher harvests decisions written in passing from notes as they change",
    "review_every_days": "the watcher writes a review (`vault-tools review`) and the Stats page this often; 0 never",
    "project_root": "folder a ruling's `scope` globs are relative to (absolute, or relative to the vault; empty: the vault)",
    "scope_on_read": "the pre-tool-use hook also adds the rulings governing a file the agent reads",
}


def _zone(name: str) -> dt.tzinfo:
    try:
        return zone(name)
    except ValueError as error:
        raise ConfigError(str(error), path=f"{STATE_DIR}/{CONFIG_FILE}") from None  # (the shared layout's is named by load_config)


def load_config(root: Path) -> Config:
    """The vault's config; taken from the cache while config.yaml's bytes are those it was made from (every
    command reads it, and parsing it means importing a YAML library), else read, checked and cached."""
    layout = layout_of(root)
    path, shown = layout.config_path, layout.config_shown
    if layout.shared and not path.exists() and (root / STATE_DIR / CONFIG_FILE).exists():  # a move cut short
        path, shown = root / STATE_DIR / CONFIG_FILE, f"{STATE_DIR}/{CONFIG_FILE}"
    try:
        raw = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return Config()
    except OSError as error:
        raise ConfigError(f"cannot read: {error.strerror}", path=shown) from None
    # Keyed by the bytes, not the file's times: an edit within the file system's clock tick is still seen.
    key = [shown, hashlib.sha256(raw).hexdigest()]
    remembered = _configs.get((key[0], key[1]))
    if remembered is not None:
        _zone(remembered.timezone)  # the machine's zone database may have changed since
        return remembered
    cache = root / STATE_DIR / CONFIG_CACHE
    try:
        kept = json.loads(cache.read_bytes())
        if kept["key"] == key and kept["version"] == __version__:
            config = Config(**kept["values"])
            _zone(config.timezone)
            _configs[(key[0], key[1])] = config
            return config
    except (OSError, ValueError, KeyError, TypeError):
        pass
    config = _read_config(raw, shown)
    _configs[(key[0], key[1])] = config
    try:
        notes.write_atomic(cache, json.dumps({"key": key, "version": __version__,
                                              "values": asdict(config)}).encode("utf-8"))
    except OSError:
        pass  # derived data: a read-only vault reads its config every time
    return config


_configs: dict[tuple[str, str], Config] = {}  # this process's configs by where they are shown and their digest


# Plain scalars ruamel.yaml (YAML 1.2) may read as another type than text start with one of these.
_NOT_TEXT_FIRST = frozenset("-+.0123456789<=")
# Numbers written so that both parsers read the same value: ruamel.yaml also reads `1_000`, `0b1` or `.5E3`.
_SAME_NUMBER = re.compile(r"[-+]?[0-9]+(?:\.[0-9]+)?")


def _read_the_same(value: str, plain: bool, tag: str) -> bool:
    """Whether a config scalar, as PyYAML with YAML 1.2's core schema resolved it, is what ruamel.yaml makes of
    it: quoted text, text ruamel.yaml too can only read as text, or a number in the form both read alike."""
    if not plain or tag in ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:null"):
        return True  # quoted; or the same words in both (YAML 1.2: `yes` and `on` are text)
    if tag == "tag:yaml.org,2002:str":
        return not value or value[0] not in _NOT_TEXT_FIRST
    return _SAME_NUMBER.fullmatch(value) is not None


def _parse_config(raw: bytes, shown: str) -> tuple[Any, Callable[[str], int]]:
    """The config's values and the line of each top-level key. A config of plain values (nearly every one) is
    read with libyaml, which every command imports anyway; whatever ruamel.yaml could read otherwise (see
    `_quick_config`) by ruamel.yaml, as it always was: importing it costs more than a whole config's read, on
    every command that finds no config in its cache."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"cannot read: {exc}", path=shown) from None
    quick = _quick_config(text)
    if quick is not None:
        data, lines = quick
        return data, lines.__getitem__
    return _parse_config_fully(text, shown)


# What libyaml and ruamel.yaml read differently: a `%YAML 1.1` directive changes what words mean; ruamel.yaml
# refuses a tab where libyaml takes it, and a block scalar's header running into a comment (`|# ...`); libyaml
# takes NEL, LS and PS (and a CR alone) for line breaks and skips a BOM anywhere, ruamel.yaml does not; a bare
# `!` tag on an empty value is text to one, nothing to the other.
_READ_OTHERWISE = re.compile("[%\t\x85\u2028\u2029\ufeff!]|[|>][-+0-9]*#|\r(?!\n)")


def _quick_config(text: str) -> tuple[Any, dict[str, int]] | None:
    """The config's values and each top-level key's line, read with libyaml; None where ruamel.yaml could read
    it otherwise (`_READ_OTHERWISE`, a value `_read_the_same` refuses, or a key that is not text, as `1:`,
    which is named by its value)."""
    if _READ_OTHERWISE.search(text):
        return None
    quick = notes.plain_yaml(text, 1, _read_the_same)
    if quick is None or (isinstance(quick[0], dict) and not all(isinstance(key, str) for key in quick[0])):
        return None
    return quick


def _parse_config_fully(text: str, shown: str) -> tuple[Any, Callable[[str], int]]:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        data = YAML(typ="rt").load(text)
    except MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        raise ConfigError(f"invalid YAML: {exc.problem}", path=shown, line=line) from None
    except YAMLError as exc:
        raise ConfigError(f"cannot read: {exc}", path=shown) from None
    return data, lambda key: int(data.lc.key(key)[0]) + 1


def _read_config(raw: bytes, shown: str) -> Config:
    data, line_of_key = _parse_config(raw, shown)
    if data is None:
        return Config()
    if not hasattr(data, "items"):
        raise ConfigError("must be a mapping of settings", path=shown)

    def line_of(key: str) -> int | None:
        if key in data:
            return line_of_key(key)
        if key.startswith("budget_") and "budget" in data:
            return line_of_key("budget")
        return None

    known = {f.name: f for f in fields(Config)}
    values: dict[str, Any] = {}
    for key, value in data.items():
        line = line_of_key(key)
        if key == "budget" and hasattr(value, "items"):
            for sub, sub_value in value.items():
                if sub not in ("lines", "bytes"):
                    raise ConfigError(f"unknown key budget.{sub} (expected lines, bytes)", path=shown, line=line)
                values[f"budget_{sub}"] = _typed(f"budget.{sub}", sub_value, int, shown, line)
            continue
        if not isinstance(key, str) or key not in known or key.startswith("budget_"):
            raise ConfigError(f"unknown key {key!r} (known: {', '.join(sorted(CONFIG_DOC))}, budget)",
                              path=shown, line=line)
        default = getattr(Config(), key)
        if key == "lint":
            if not hasattr(value, "items") or not all(v in ("error", "warning", "off") for v in value.values()):
                raise ConfigError("lint must map rule codes to error, warning or off", path=shown, line=line)
            values[key] = {str(k): str(v) for k, v in value.items()}
            # every command refuses a code that names no rule, not only `lint`
            unknown = sorted(code for code in values[key] if code not in RULE_CODES)
            if unknown:
                raise ConfigError(f"lint: {unknown[0]!r} names no rule (known: {', '.join(RULE_CODES)})",
                                  path=shown, line=line)
        else:
            values[key] = _typed(key, value, type(default), shown, line)
    for key in FOLDER_KEYS:
        if key in values:
            values[key] = _folder(key, values[key], shown, line_of_key(key))
    for key in NUMBER_LIMITS:
        if key in values:
            _at_least(key, values[key], shown, line_of(key))
    config = Config(**values)
    _check_overlap(config, shown, line_of)
    _zone(config.timezone)  # refuses an unknown zone now, naming the config file
    return config


FOLDER_KEYS = ("decisions_folder", "pinned_folder", "templates_folder")
# The least each number may be: a negative wait or a budget of nothing is a typo.
NUMBER_LIMITS = {"settle_seconds": 0, "debounce_ms": 0, "stale_after_days": 0, "recent_days": 0,
                 "reminder_days": 0, "budget_lines": 1, "budget_bytes": 1}


def _at_least(key: str, value: float, shown: str, line: int | None) -> None:
    least = NUMBER_LIMITS[key]
    if value < least:
        name = key.replace("budget_", "budget.")
        raise ConfigError(f"{name} must be at least {least}, not {value!r}", path=shown, line=line)


def _folder(key: str, value: str, shown: str, line: int) -> str:
    """A configured folder as a clean vault-relative path; refuses one that leaves the vault or hides notes."""
    text = value.strip().replace("\\", "/")
    if text.startswith("/") or re.match(r"^[A-Za-z]:", text):
        raise ConfigError(f"{key} must be a folder inside the vault, relative to it, not {value!r}",
                          path=shown, line=line)
    parts = [part for part in text.split("/") if part not in ("", ".")]
    if any(part == ".." for part in parts):
        raise ConfigError(f"{key} must stay inside the vault; {value!r} leaves it", path=shown, line=line)
    if any(part.startswith(".") for part in parts):
        raise ConfigError(f"{key} {value!r} is a hidden folder, which vault-tools does not read", path=shown, line=line)
    if not parts and key != "decisions_folder":
        raise ConfigError(f"{key} must name a folder; the whole vault would be skipped", path=shown, line=line)
    return "/".join(parts)


def _inside(folder: str, other: str) -> bool:
    """`folder` is `other` or lies inside it."""
    return other == "" or folder == other or folder.startswith(other + "/")


def _check_overlap(config: Config, shown: str, line_of: Callable[[str], int | None]) -> None:
    """Folders that would hide rulings or mix generated pages with templates are refused."""
    decisions = config.decisions_folder
    for key in ("templates_folder", "pinned_folder"):
        skipped = getattr(config, key)
        if _inside(decisions, skipped):
            raise ConfigError(f"{key} {skipped!r} holds decisions_folder {decisions!r}: every ruling would be "
                              "skipped", path=shown, line=line_of(key) or line_of("decisions_folder"))
    pinned, templates = config.pinned_folder, config.templates_folder
    if _inside(pinned, templates) or _inside(templates, pinned):
        raise ConfigError(f"pinned_folder {pinned!r} and templates_folder {templates!r} overlap",
                          path=shown, line=line_of("pinned_folder") or line_of("templates_folder"))


def check_folders_on_disk(root: Path, config: Config) -> None:
    """A decisions folder reached through a symbolic link would be skipped by the walk (its rulings
    hidden), and a pinned folder linked out of the vault would be written outside it: both refused."""
    shown = f"{STATE_DIR}/{CONFIG_FILE}"
    folder = root
    for part in [p for p in config.decisions_folder.split("/") if p]:
        folder = folder / part
        if folder.is_symlink():
            raise ConfigError(f"decisions_folder {config.decisions_folder!r}: {relative(root, folder)} is a symbolic "
                              "link; vault-tools reads only real folders, so its rulings would be hidden", path=shown)
    pinned = root / config.pinned_folder
    if pinned.exists():
        try:
            pinned.resolve().relative_to(root.resolve())
        except ValueError:
            raise ConfigError(f"pinned_folder {config.pinned_folder!r} leads outside the vault", path=shown) from None


def _typed(key: str, value: Any, kind: type, shown: str, line: int) -> Any:
    if kind is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if kind is bool:
        if isinstance(value, bool):
            return value
    elif isinstance(value, kind) and not isinstance(value, bool):
        return value
    raise ConfigError(f"{key} must be {kind.__name__}, not {value!r}", path=shown, line=line)


def _ceiling() -> Path | None:
    value = os.environ.get(CEILING_ENV)
    return Path(value).resolve() if value else None


def find_vault(explicit: Path | None, start: Path | None = None) -> Path:
    if explicit is not None:
        root = explicit.expanduser().resolve()
        if not root.is_dir():
            raise ConfigError("is not a folder", path=str(explicit))
        return root
    here = (start or Path.cwd()).resolve()
    ceiling = _ceiling()
    for folder in (here, *here.parents):
        if (folder / STATE_DIR).is_dir() or (folder / ".obsidian").is_dir() or is_shared(folder):
            return folder
        if ceiling is not None and folder == ceiling:
            break
    raise ConfigError("no vault found here or above (no .vault-tools/ or .obsidian/ folder); pass --vault PATH",
                      path=str(here))


def relative(root: Path, path: Path) -> str:
    """A vault-relative path, spelt as on disk (names are compared NFC and case-folded elsewhere)."""
    if os.sep == "/":  # the common case without pathlib's parsing (a reconcile asks thousands of times)
        text, base = str(path), str(root)
        if text.startswith(base) and text[len(base):len(base) + 1] == "/" and base != "/":
            return text[len(base) + 1:]
    return path.relative_to(root).as_posix()


def iter_markdown(root: Path, config: Config, others: list[str] | None = None,
                  temps: list[str] | None = None, misnamed: list[str] | None = None,
                  ) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """(vault-relative path, directory entry) of every note a decision could live in, in a stable order.

    Every other file met is added to `others` (what a link can name), and our own temp files
    to `temps`. A file or folder whose name is not valid UTF-8 (no note can link to it, and its name can
    be neither stored nor printed as it is) is passed over, its path added to `misnamed`. Works on strings
    rather than Path objects: on a vault of 50,000 notes the difference is a large part of the whole run.
    """
    skipped = {config.templates_folder.strip("/"), config.pinned_folder.strip("/")}
    if is_shared(root):
        skipped.add(RECORD_DIR)  # the record: kept copies of notes are the owner's text, not notes of the vault
    stack = [""]
    while stack:
        prefix = stack.pop()
        try:
            entries = sorted(os.scandir(os.path.join(root, prefix) if prefix else root), key=lambda e: e.name)
        except OSError:
            continue
        subfolders = []
        for entry in entries:
            name = entry.name
            if not name.isascii() and not _utf8(name):
                if misnamed is not None and not name.startswith("."):
                    misnamed.append(entry.path)
                continue
            if name.startswith(".") or name in SKIPPED_FOLDERS:
                if temps is not None and name.startswith(notes.TEMP_PREFIX) and name.endswith(notes.TEMP_SUFFIX):
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
    derived: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)  # memos of other modules
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
        found = self.derived.get("note_index")
        if not isinstance(found, NoteIndex):
            found = self.derived["note_index"] = NoteIndex(self.files)
        return found


CACHE_FILE = "cache/notes-v5.sqlite"  # a new name whenever what is cached changes (v5: keys as JSON writes them)
StatKey = notes.StatKey
# What the cache holds of a note: the key it is trusted for (None: read it again), its kind, its payload as
# JSON without the body, and its body (kept apart: plain text reads back faster than a JSON string).
CachedNote = tuple[StatKey | None, str, str | None, str | None]


class NoteCache:
    """What reading each note gave, in SQLite under `.vault-tools/cache/`. Derived data:
    any trouble with it (locked, corrupt, read-only) means reading the notes instead.

    A note is taken from the cache only when its size, mtime, ctime and inode are the ones cached,
    and it was not cached in the same clock tick as it was written: ctime changes on every write even
    when a tool puts the mtime back, and an entry cached within two seconds of the file's mtime could
    miss a same-size write in that tick, so it is read again (git treats its index the same way).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.enabled = True
        self.held = 0  # how many notes `load` found cached

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=2)
        connection.execute("CREATE TABLE IF NOT EXISTS notes (path TEXT PRIMARY KEY, size INT, mtime_ns INT, "
                           "ctime_ns INT, inode INT, cached_at_ns INT, kind TEXT, payload TEXT, body TEXT)")
        # Ordinary notes (nine in ten) have only their key: a table of their own, without rowids, takes a row
        # in half the time (a first read of 10,000 notes writes 9,000 of them)
        connection.execute("CREATE TABLE IF NOT EXISTS ordinary (path TEXT PRIMARY KEY, size INT, mtime_ns INT, "
                           "ctime_ns INT, inode INT, cached_at_ns INT) WITHOUT ROWID")
        return connection

    def load(self) -> dict[str, CachedNote]:
        """Every cached note by vault-relative path."""
        finish_stores()  # what a reader is still writing is read too
        if not self.path.exists():  # made when the notes read are saved (by a reader, on a first read)
            self._forget_older_caches()
            return {}
        try:
            with closing(self._connect()) as connection:
                rows = connection.execute(
                    "SELECT path, size, mtime_ns, ctime_ns, inode, cached_at_ns - max(mtime_ns, ctime_ns) > ?, kind, "
                    "payload, body FROM notes", (RACY_NANOSECONDS,))
                found: dict[str, CachedNote] = {
                    path: ((size, mtime, ctime, inode) if trusted else None, kind, payload, body)
                    for path, size, mtime, ctime, inode, trusted, kind, payload, body in rows}
                rows = connection.execute(
                    "SELECT path, size, mtime_ns, ctime_ns, inode, cached_at_ns - max(mtime_ns, ctime_ns) > ? "
                    "FROM ordinary", (RACY_NANOSECONDS,))
                found.update((path, ((size, mtime, ctime, inode) if trusted else None, "other", None, None))
                             for path, size, mtime, ctime, inode, trusted in rows)
        except (sqlite3.Error, OSError):
            self.enabled = False
            return {}
        self.held = len(found)
        return found

    def _forget_older_caches(self) -> None:
        """The caches earlier versions kept (another name each): what they hold is read again, never used."""
        for older in self.path.parent.glob("notes-v*.sqlite*"):
            if not older.name.startswith(self.path.name):
                try:
                    older.unlink(missing_ok=True)
                except OSError:
                    pass  # a read-only cache folder: left as it is, the cache is not used either

    def save(self, fresh: Iterable[tuple[str, Stored]], cached_at: int, gone: list[str]) -> None:
        """Store what was read afresh (by vault-relative path; `cached_at`: when the reading began) and forget
        the notes no longer there. A note that could not be opened (no key) is not stored."""
        finish_stores()  # one writer at a time
        rows = [(path, kind, key, payload, body) for path, (kind, key, payload, body) in fresh if key is not None]
        if not self.enabled or not (rows or gone):
            return
        ordinary = [(path, *key, cached_at) for path, kind, key, _, _ in rows if kind == "other"]
        others = [(path, *key, cached_at, kind, payload, body) for path, kind, key, payload, body in rows
                  if kind != "other"]
        try:
            with closing(self._connect()) as connection, connection:
                if self.held:  # a note that became or stopped being a decision note is in the other table
                    connection.executemany("DELETE FROM notes WHERE path = ?", [(row[0],) for row in ordinary])
                    connection.executemany("DELETE FROM ordinary WHERE path = ?", [(row[0],) for row in others])
                connection.executemany("INSERT OR REPLACE INTO ordinary VALUES (?, ?, ?, ?, ?, ?)", ordinary)
                connection.executemany("INSERT OR REPLACE INTO notes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", others)
                for table in ("notes", "ordinary"):
                    connection.executemany(f"DELETE FROM {table} WHERE path = ?", [(path,) for path in gone])
        except (sqlite3.Error, OSError):
            self.enabled = False


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
        if self.layout.shared:
            self.ledger = Ledger(self.state_dir, shared_dir=self.layout.ledger_dir, kept_dir=self.layout.kept_dir,
                                 device=lambda create: device_tag(root, shared=True, create=create))
        else:
            self.ledger = Ledger(self.state_dir, kept_dir=self.layout.kept_dir)

    @classmethod
    def find(cls, explicit: Path | None = None) -> Vault:
        return cls(find_vault(explicit))

    def relative(self, path: Path) -> str:
        return relative(self.root, path)

    def inside(self, path: Path) -> bool:
        return _inside_vault(self.root, path)

    def load(self) -> VaultState:
        """Every decision note, read afresh or from the cache when the file is certainly unchanged."""
        state = VaultState(self.root, self.config)
        use_topic_aliases(load_aliases(self.record_dir))  # every comparison of topics from here reads them
        cache = NoteCache(self.state_dir / CACHE_FILE) if self.state_dir.is_dir() else None
        cached = cache.load() if cache else {}
        others: list[str] = []
        # In the walk's order: path, where it is, and what the cache holds of it when that is still true (None:
        # it must be read), or why it could not be stat'ed. On a first read there is nothing to compare with:
        # each note's key is taken as it is opened, by whoever reads it.
        listed: list[tuple[str, str, CachedNote | OSError | None]] = []
        misnamed: list[str] = []
        for rel, entry in iter_markdown(self.root, self.config, others, state.temp_files, misnamed):
            state.files.append(rel)
            if not cached:
                listed.append((rel, entry.path, None))
                continue
            try:
                stat = entry.stat()
            except OSError as error:
                listed.append((rel, entry.path, error))
                continue
            key = notes.stat_key(stat)
            known = cached.pop(rel, None)  # what is left at the end is gone from the vault
            listed.append((rel, entry.path, known if known is not None and known[0] == key else None))
        # What is cached is trusted only once the file is older than the racy window at this moment, before
        # any note was read: a write right after a note was read, in the same tick, then never hides
        reading_from = time.time_ns()
        to_read = [(rel, path) for rel, path, held in listed if held is None]
        gone = list(cached)

        def store(rows: Iterable[Stored]) -> None:  # by a reader, while this process goes on; or by this one
            assert cache is not None
            cache.save(zip((rel for rel, _ in to_read), rows, strict=True), reading_from, gone)

        results, storing = read_payloads(self.root, [path for _, path in to_read], meanwhile=self._read_ledger,
                                         store=store if cache and cache.enabled else None)
        if storing is not None:  # a reader writes the cache while this process goes on: waited for at exit
            _stores_running.append(storing)
        read = iter(results)
        stat_keys: dict[str, StatKey] = {}
        state.stat_keys = stat_keys
        for rel, _, held in listed:
            if isinstance(held, OSError):
                state.broken.append(UnreadableNote(f"cannot be read: {held.strerror}", path=rel))
            elif held is None:
                kind, payload, stat_key, _ = next(read)
                if stat_key is not None:  # None: it could not be opened
                    stat_keys[rel] = stat_key
                self._add(state, rel, kind, payload)
            else:
                if held[0] is not None:  # always: a note is held only while its key is what was cached
                    stat_keys[rel] = held[0]
                if held[1] != "other" and held[2] is not None:
                    payload = json.loads(held[2])
                    if held[3] is not None:
                        payload["body"] = held[3]
                    self._add(state, rel, held[1], payload)
        if cache and storing is None:
            store(map(_stored, results))
        state.files += others
        state.broken += filter(None, (_misnamed_problem(self.root, path) for path in misnamed))
        set_aside_conflict_copies(state)
        return state

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
        self._add(state, rel, kind, payload, decided if as_written else None)
        return state

    def read_payload(self, path: str | Path) -> tuple[str, dict[str, Any] | None]:
        return read_payload(self.root, path)

    def _add(self, state: VaultState, rel: str, kind: str, payload: dict[str, Any] | None,
             decided: Decision | None = None) -> None:
        if kind == "other" or payload is None:
            return
        if kind == "broken":
            kind_of_error = UnreadableNote if payload.get("unreadable") else NoteError
            state.broken.append(kind_of_error(payload["message"], path=rel, line=payload["line"]))
            return
        decision: Decision | None
        problems: list[Problem]
        if decided is not None and decided.path == rel:  # built from these very parts, without a problem
            decision, problems = decided, []
        else:
            decision, problems = build_decision(payload["data"], path=rel, body=payload["body"],
                                                key_lines=payload["lines"])
        state.properties[rel] = payload["data"]
        state.property_lines[rel] = payload["lines"]
        state.body_lines[rel] = payload["body_line"]
        if problems:
            state.problems[rel] = problems
        if decision is not None:
            state.decisions.append(decision)
        elif problems:
            state.broken.append(NoteError("; ".join(map(str, problems)), path=rel, line=problems[0].line))

    def path_of(self, decision: Decision) -> Path:
        path = self._paths.get(decision.path)
        if path is None:  # made once for each note: a reconcile asks for each many times
            path = self._paths[decision.path] = self.root / decision.path
        return path


# Notes to read before reading them in several processes pays for starting those (a first read of a large vault).
PARALLEL_READ_MIN = 5000


# What a note is (see `read_payload`), its key as it was opened (None: it could not be), and its payload as the
# note cache keeps it (JSON, without the body): made by whoever read it, a first read's readers among them.
Read = tuple[str, dict[str, Any] | None, StatKey | None, str | None]


# A note as the note cache stores it: its kind, its key as it was opened, its payload as JSON without the body,
# and its body.
Stored = tuple[str, StatKey | None, str | None, str | None]


def _stored(read: Read) -> Stored:
    kind, payload, key, form = read
    return kind, key, form, payload.get("body") if payload is not None else None


# Note-cache writes that a reader took on after handing its share over, while the command went on: the readers'
# pids. Waited for before the command exits, and before the cache is read or written again. Should one fail
# (killed, out of memory), the cache lacks those notes and the next command reads them again, as for any
# trouble with derived data: what was read is not kept for it meanwhile (at 50,000 notes that was 20 MB more
# at the command's peak).
_stores_running: list[int] = []


def finish_stores() -> None:
    """Wait for the note-cache writes readers took on (see `read_payloads`)."""
    while _stores_running:
        try:
            os.waitpid(_stores_running.pop(), 0)
        except ChildProcessError:
            pass


atexit.register(finish_stores)  # a command leaving by `os._exit` calls it first (`launch.script`)


def read_payloads(root: Path, paths: list[str], meanwhile: Callable[[], None] | None = None,
                  store: Callable[[list[Stored]], None] | None = None) -> tuple[list[Read], int | None]:
    """What each note is, and its key as it was opened (None: it could not be), in order: in several processes
    when there are many to read and processors free to read them. Only where a process can be forked safely
    (Linux, no other thread running): elsewhere starting one costs more than it saves. `meanwhile` is other
    work this process does while the others read (it is not done when they do not). `store` is handed every
    note as the note cache stores it, in order, by a reader once all are read, while this process goes on:
    then the second value is that reader's pid, which the caller waits for; None when `store` was not
    called (the caller calls it itself)."""
    workers = free_processors() if len(paths) >= PARALLEL_READ_MIN and can_fork() else 1
    if workers < 2:
        return _read_share(root, paths), None
    return _read_in_processes(root, paths, min(workers, 8), meanwhile, store)


def _read_share(root: Path, paths: list[str]) -> list[Read]:
    read: list[Read] = []
    for path in paths:
        kind, payload, key = _read_keyed(root, path)
        read.append((kind, payload, key, _cached_form(payload)))
    return read


def _cached_form(payload: dict[str, Any] | None) -> str | None:
    """A payload as the note cache keeps it: JSON without the body (kept apart)."""
    if payload is None:
        return None
    return json.dumps({key: value for key, value in payload.items() if key != "body"}, ensure_ascii=False,
                      default=str)


# The notes are handed out in chunks, each reader taking the next one when done with the last: decision notes
# (the costly ones to parse) sit together in a folder or two, and the command does other work meanwhile, so
# shares fixed beforehand would leave one reader with most of the work.
READ_CHUNK = 64
_CHUNK_BYTES = 4  # a chunk's number as it goes through the pipe that hands them out


def _read_in_processes(root: Path, paths: list[str], readers: int, meanwhile: Callable[[], None] | None,
                       store: Callable[[list[Stored]], None] | None = None) -> tuple[list[Read], int | None]:
    """The notes read by this process and `readers - 1` forked children, each taking chunks from one pipe (a
    read of a few bytes from a pipe is never split between readers on Linux); what a child that fails took is
    read here. Plain forks and pipes: a `multiprocessing` pool costs 20-25 ms to import and start, a sixth of
    a first read of 10,000 notes. With `store`, the first child, once it has handed its chunks over, is sent
    every other chunk as the cache stores it and calls `store` (writing the note cache of 10,000 notes takes
    a tenth of their first read, which this process spends on the pages meanwhile)."""
    import pickle
    import select
    import signal

    size = max(READ_CHUNK, -(-len(paths) // 8192))
    starts = range(0, len(paths), size)
    handing_out, handed = os.pipe()
    children: list[tuple[int, int]] = []  # (pid, the pipe its chunks come back through)
    running: set[int] = set()
    found: dict[int, list[Read]] = {}

    def take_chunk() -> int | None:
        """Read the next chunk not taken yet; its start, or None when every chunk is taken."""
        number = os.read(handing_out, _CHUNK_BYTES)  # whole: the numbers go in by whole pieces (see below)
        if len(number) != _CHUNK_BYTES:
            return None
        start = int.from_bytes(number, "big")
        found[start] = _read_share(root, paths[start:start + size])
        return start

    rows_in, rows_out = os.pipe() if store is not None else (-1, -1)  # the chunks the storing child did not read
    try:
        for child in range(readers - 1):
            reading, writing = os.pipe()
            widen(writing)
            pid = os.fork()
            if pid == 0:  # the child: read, hand over, leave without running the parent's exit handlers
                code = 1
                try:
                    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to act on
                    _stores_running.clear()  # the parent's to wait for, not this child's
                    os.close(reading)
                    os.close(handed)  # only the command hands chunks out: its close says they are all out
                    if rows_out >= 0:
                        os.close(rows_out)
                    # Each chunk is handed over as soon as it is read, as far as the pipe takes it without
                    # waiting: the command then has nearly all of it when it is done with its own chunks.
                    os.set_blocking(writing, False)
                    waiting = bytearray()
                    while (start := take_chunk()) is not None:
                        waiting += record((start, found[start]))
                        hand_over(writing, waiting)
                    waiting += record(None)  # the end: all was handed over
                    os.set_blocking(writing, True)
                    hand_over(writing, waiting)
                    os.close(writing)
                    if store is not None and child == 0:
                        with os.fdopen(rows_in, "rb") as coming:
                            others: dict[int, list[Stored]] = pickle.load(coming)
                        store([row for start in starts for row in (
                            others[start] if start in others else map(_stored, found[start]))])
                    code = 0
                finally:
                    os._exit(code)
            os.close(writing)  # only the child writes: its exit ends the pipe
            children.append((pid, reading))
            running.add(pid)
        if rows_in >= 0:
            os.close(rows_in)
            rows_in = -1
        # The chunks' numbers, written in pieces of at most PIPE_BUF bytes (each goes in whole or not at all,
        # so no reader ever gets part of a number). When the pipe is full (a user past the kernel's pipe quota
        # gets one page), this process reads the last chunk not handed out yet itself, never one from the
        # pipe: it holds the pipe's only writing end, so a read there could wait for ever.
        unsent = list(starts)
        sent = 0
        per_piece = select.PIPE_BUF // _CHUNK_BYTES
        os.set_blocking(handed, False)
        while sent < len(unsent):
            piece = unsent[sent:sent + per_piece]
            try:
                os.write(handed, b"".join(start.to_bytes(_CHUNK_BYTES, "big") for start in piece))
                sent += len(piece)
            except BlockingIOError:
                start = unsent.pop()
                found[start] = _read_share(root, paths[start:start + size])
        os.close(handed)  # every chunk is out: a reader that finds the pipe empty is done
        handed = -1
        handing_back = [Receiver(reading) for _, reading in children]
        chunks: list[dict[int, list[Read]]] = [{} for _ in children]  # what each child handed over so far
        for handed_over in handing_back:
            os.set_blocking(handed_over.fd, False)
        if meanwhile is not None:
            meanwhile()
        while True:
            for handed_over, got in zip(handing_back, chunks, strict=True):
                got.update(handed_over.take_in())
            if take_chunk() is None:
                break
        storing: int | None = None
        read_there: dict[int, list[Read]] = {}
        for child, ((pid, _), handed_over, got) in enumerate(zip(children, handing_back, chunks, strict=True)):
            os.set_blocking(handed_over.fd, True)
            got.update(handed_over.take_in())  # the rest, to its end
            if store is not None and child == 0 and handed_over.whole:
                storing, read_there = pid, got  # it goes on: it stores what the others send it
                found.update(read_there)
                continue
            _, status = os.waitpid(pid, 0)
            running.discard(pid)
            if os.waitstatus_to_exitcode(status) == 0 and handed_over.whole:
                found.update(got)
        for start in starts:  # taken by a child that failed
            if start not in found:
                found[start] = _read_share(root, paths[start:start + size])
        if storing is not None:
            try:
                with os.fdopen(rows_out, "wb", closefd=False) as sending:
                    pickle.dump({start: list(map(_stored, found[start])) for start in starts
                                 if start not in read_there}, sending, protocol=pickle.HIGHEST_PROTOCOL)
                running.discard(storing)
            except OSError:  # it went away: the caller stores them
                storing = None
        return [item for start in starts for item in found[start]], storing
    finally:  # also on Ctrl-C or an error here: the children still reading go with the command
        os.close(handing_out)
        if handed >= 0:
            os.close(handed)
        for end in (rows_in, rows_out):
            if end >= 0:
                os.close(end)
        for pid, reading in children:
            os.close(reading)
            if pid in running:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)


def read_payload(root: Path, path: str | Path, written: notes.Written | None = None) -> tuple[str, dict[str, Any] | None]:
    """What one note is: ("other", None), ("decision", its parts) or ("broken", the error)."""
    kind, payload, _ = _read_keyed(root, path, written)
    return kind, payload


def _read_keyed(root: Path, path: str | Path, written: notes.Written | None = None,
                ) -> tuple[str, dict[str, Any] | None, StatKey | None]:
    key = None
    try:
        head, data, key = notes.read_start_keyed(path)
        if head is None:
            return "other", None, key
        note = read_decision_note(root, Path(path), data, written)
    except NoteError as error:
        return "broken", {"message": error.message, "line": error.line}, key
    except OSError as error:
        return "broken", {"message": f"cannot be read: {error.strerror}", "line": None, "unreadable": True}, key
    if note is None:
        return "other", None, key
    body_line = note.text[:len(note.text) - len(note.body)].count("\n") + 1
    data = note.data if all(isinstance(name, str) for name in note.data) else notes.plain(note.data)
    return "decision", {"data": data, "body": note.body, "lines": note.key_lines, "body_line": body_line}, key


def read_decision_note(root: Path, path: Path, data: bytes | None = None,
                       written: notes.Written | None = None) -> notes.Note | None:
    """The note if its frontmatter says `type: decision` (parsed from `data` when its bytes were read
    already, see `notes.read_note` for `written`); raises NoteError if it cannot be read."""
    rel = relative(root, path)
    if path.is_symlink() and not _inside_vault(root, path):
        raise NoteError("is a link to a file outside the vault; decision notes must live inside it", path=rel)
    note = notes.read_note(path, data, written)
    if not hasattr(note.data, "items"):
        kind = "empty" if note.data is None else f"a {'list' if isinstance(note.data, list) else 'single value'}"
        raise NoteError(f"frontmatter is {kind}, not a mapping of properties", path=rel, line=2)
    return note if is_decision_mapping(note.data) else None


def _inside_vault(root: Path, path: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
        return True
    except ValueError:
        return False
