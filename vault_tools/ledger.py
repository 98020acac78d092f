"""The append-only ledger (`.vault-tools/ledger.jsonl`) and seal hashes.

Every line is one JSON event carrying its own checksum (`sum`), so a changed
line is found on its own, and a merge of two machines' ledgers (git's
`merge=union`) stays valid line by line. Appends happen under a cross-platform
lock and are flushed to disk. A torn last line (a crash mid-write) is reported,
never dropped or repaired by rewriting history.
"""
from __future__ import annotations

import datetime as dt
import errno
import functools
import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from .dates import instant
from .errors import InconsistentVault
from .model import SEALED_FIELDS, SEALED_WHEN_SET, Decision, Resolve, Status, leading_id, link_target, name_key

LEDGER_FILE = "ledger.jsonl"
LOCK_FILE = "ledger.lock"
LOCK_TIMEOUT_SECONDS = 30


# What each event says about a note's status.
STATUS_AFTER = {
    "asked": Status.OPEN,
    "ruled": Status.RULED,
    "superseded": Status.SUPERSEDED,
    "withdrawn": Status.WITHDRAWN,
    "retracted": Status.RETRACTED,
}


@dataclass(frozen=True)
class Event:
    event: str
    id: str
    at: str  # UTC, ISO 8601 with Z
    actor: str
    path: str
    hash: str | None = None
    text: str | None = None  # the note's full text, for events that fix its content
    reason: str | None = None
    successor: str | None = None
    supersedes: tuple[str, ...] = ()
    alongside: tuple[str, ...] = ()  # ids of the current rulings a ruling stands beside
    origin: str | None = None  # on `imported`: the foreign record it came from ("adr:...", "owner-ask:R-003")
    # On `asked`: the question's summary and topics (its full text is in `text`), so its history
    # outlives the note. Left out when empty, so lines written before they existed keep their checksums.
    summary: str | None = None
    topics: tuple[str, ...] = ()
    line: int | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("line")
        data["supersedes"] = list(self.supersedes)
        data["alongside"] = list(self.alongside)
        data["topics"] = list(self.topics)
        return {key: value for key, value in data.items() if value not in (None, [])}


def _canonical(data: dict[str, Any]) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _checksum(canonical: str) -> str:
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def event_line(event: Event) -> str:
    body = _canonical(event.to_json())
    return f'{body[:-1]},"sum":"{_checksum(body)}"}}\n'


def parse_line(text: str, number: int, where: str) -> Event:
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError
        stored = data.pop("sum")
    except (ValueError, KeyError):
        raise InconsistentVault("ledger line is not a checksummed JSON event", path=where, line=number) from None
    if _checksum(_canonical(data)) != stored:
        raise InconsistentVault("ledger line was changed after it was written (checksum mismatch)",
                                path=where, line=number)
    try:
        data["supersedes"] = tuple(data.get("supersedes", ()))
        data["alongside"] = tuple(data.get("alongside", ()))
        data["topics"] = tuple(data.get("topics", ()))
        return Event(**data, line=number)
    except TypeError:
        raise InconsistentVault("ledger line has unknown fields", path=where, line=number) from None


TORN = "torn last line (a write was interrupted)"


def scan_ledger(text: str, where: str) -> tuple[list[Event], list[tuple[int, str]]]:
    """Every event that can be read, and every damaged line as (line number, what is wrong)."""
    events: list[Event] = []
    damage: list[tuple[int, str]] = []
    lines = text.split("\n")
    for number, line in enumerate(lines, 1):
        if number == len(lines):
            if line:
                damage.append((number, TORN))
            break
        if not line.strip():
            continue
        try:  # a checkout that turned line endings into CRLF leaves each event as it was
            events.append(parse_line(line.rstrip("\r"), number, where))
        except InconsistentVault as error:
            damage.append((number, error.message))
    return events, damage


def parse_ledger(text: str, where: str) -> list[Event]:
    """All events in `text`; raises on a torn last line or a damaged one."""
    events, damage = scan_ledger(text, where)
    if damage:
        number, message = damage[0]
        if message == TORN:
            message += "; check it and remove the partial line by hand"
        raise InconsistentVault(message, path=where, line=number)
    return events


class Ledger:
    def __init__(self, state_dir: Path, display_path: str = ".vault-tools/ledger.jsonl") -> None:
        self.path = state_dir / LEDGER_FILE
        self.display_path = display_path
        self._lock = FileLock(str(state_dir / LOCK_FILE), timeout=LOCK_TIMEOUT_SECONDS)
        self._read_cache: tuple[tuple[int, int, int, int], list[Event]] | None = None

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the ledger lock: id allocation, note writes and appends happen inside it."""
        try:
            with self._lock:
                yield
        except Timeout:
            raise InconsistentVault(
                f"another vault-tools process has held the ledger lock for {LOCK_TIMEOUT_SECONDS} s",
                path=self.display_path) from None

    def read(self) -> list[Event]:
        """Every event, verified. A long-running process re-reads only when the file changed."""
        key = self._stat_key()
        if key is None:
            return []
        if self._read_cache is not None and self._read_cache[0] == key:
            return list(self._read_cache[1])
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return []
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InconsistentVault("ledger is not UTF-8", path=self.display_path) from None
        events = parse_ledger(text, self.display_path)
        if len(raw) == key[0]:  # not appended to while being read
            self._read_cache = (key, events)
        return list(events)

    def append(self, events: Iterable[Event]) -> None:
        """Append events; the caller holds `locked()` and has read (so verified) the ledger.

        Refuses to write after a torn last line: that line is left for a person to look at.
        """
        events = list(events)
        payload = "".join(event_line(event) for event in events).encode("utf-8")
        if not payload:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        before = self._stat_key()
        with open(self.path, "a+b", buffering=0) as handle:
            size = handle.seek(0, os.SEEK_END)
            if size > 0:
                handle.seek(-1, os.SEEK_END)
                if handle.read(1) != b"\n":
                    self.read()  # raises, naming the torn line
            handle.seek(0, os.SEEK_END)
            try:
                written = 0
                while written < len(payload):  # a full disk may take part of a write before it refuses
                    step = handle.write(payload[written:])
                    if not step:
                        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))
                    written += step
                os.fsync(handle.fileno())
            except OSError:  # a full disk: take back a partial line rather than leave it torn
                handle.truncate(size)
                raise
        # What was read before plus what was just written is the ledger now: no need to read it all again.
        if self._read_cache is not None and before is not None and self._read_cache[0] == before and size == before[0]:
            first_line = (self._read_cache[1][-1].line or 0) + 1 if self._read_cache[1] else 1
            numbered = [replace(event, line=first_line + index) for index, event in enumerate(events)]
            after = self._stat_key()
            if after is not None and after[0] == size + len(payload):
                self._read_cache = (after, self._read_cache[1] + numbered)
                return
        self._read_cache = None

    def statuses(self) -> dict[str, Status]:
        """Where the ledger says each note stands. Remembered in `.vault-tools/cache/` against the
        ledger file's size and times, so reading it costs nothing while the ledger is unchanged."""
        key = self._stat_key()
        if key is None:
            return {}
        memo = self.path.parent / "cache" / "ledger-statuses.json"
        try:
            stored = json.loads(memo.read_text(encoding="utf-8"))
            if stored.get("key") == list(key):
                return {decision_id: Status(status) for decision_id, status in stored["statuses"].items()}
        except (OSError, ValueError, KeyError, AttributeError):
            pass
        found = {decision_id: history.status for decision_id, history in histories(self.read()).items()
                 if history.status is not None}
        try:
            memo.parent.mkdir(parents=True, exist_ok=True)
            temp = memo.with_suffix(f".{os.getpid()}.tmp")
            temp.write_text(json.dumps({"key": list(key), "statuses": {k: v.value for k, v in found.items()}}),
                            encoding="utf-8")
            os.replace(temp, memo)
        except OSError:
            pass  # derived data: without it the next run reads the ledger again
        return found

    def _stat_key(self) -> tuple[int, int, int, int] | None:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return None
        return (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino)


# -- what the events say ------------------------------------------------------------

@dataclass
class History:
    """What the ledger knows of one note."""

    id: str
    events: list[Event] = field(default_factory=list)

    @property
    def status(self) -> Status | None:
        for event in reversed(self.events):
            if event.event in STATUS_AFTER:
                return STATUS_AFTER[event.event]
        return None

    @property
    def seal(self) -> Event | None:
        """The latest event that fixed the note's content (sealed, or a tool's lifecycle edit)."""
        for event in reversed(self.events):
            if event.event in ("sealed", "amended", "superseded", "retracted", "imported") and event.text is not None:
                return event
        return None

    @property
    def sealed(self) -> bool:
        return any(event.event == "sealed" for event in self.events)

    @property
    def seal_lost(self) -> Event | None:
        """The `ruled` event, when the ledger has no `sealed` line to go with it. The two are always
        written together, so the `sealed` line was removed: the ruling must not be sealed again
        from whatever its note says now."""
        if self.sealed:
            return None
        return next((event for event in self.events if event.event == "ruled" and event.hash), None)

    @property
    def path(self) -> str | None:
        return self.events[-1].path if self.events else None


def seal_text_without_bom(history: History) -> str:
    seal = history.seal
    return (seal.text or "").removeprefix("\ufeff") if seal else ""


def histories(events: Iterable[Event]) -> dict[str, History]:
    found: dict[str, History] = {}
    for event in events:
        found.setdefault(event.id, History(event.id)).events.append(event)
    return found


# -- seal hash ----------------------------------------------------------------------

def normalise_body(body: str) -> str:
    return body.replace("\r\n", "\n").replace("\r", "\n").strip("\n") + "\n"


_WIKILINK = re.compile(r"\[\[([^\[\]|]*?)(\|[^\[\]]*)?\]\]")
# Where Obsidian shows `[[...]]` as typed, not as a link.
_VERBATIM_TOKENS = frozenset({"fence", "code_block", "code_inline", "html_block", "html_inline"})


def _wikilink_rule(state: Any, silent: bool) -> bool:
    match = _WIKILINK.match(state.src, state.pos)
    if not match:
        return False
    if not silent:
        state.push("wikilink", "", 0).content = match.group(0)
    state.pos = match.end()
    return True


@functools.cache
def _markdown() -> Any:
    from markdown_it import MarkdownIt  # only notes with links need it

    parser = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    parser.inline.ruler.before("link", "wikilink", _wikilink_rule)
    return parser


def wikilinks(text: str) -> list[re.Match[str]]:
    """The wikilinks of a Markdown text that Obsidian shows as links, in order: not those inside
    code spans, fenced or indented code, or HTML. Read with markdown-it-py's tokens; when the
    tokens cannot be matched up with the text (a link inside a link's title, say), every `[[...]]`
    counts as typed text, so that changing any of them shows."""
    found = list(_WIKILINK.finditer(text)) if "[[" in text else []
    if not found:
        return []
    seen: list[tuple[str, bool]] = []  # every `[[...]]` the tokens hold, in reading order: (text, is a link)
    for block in _markdown().parse(text):
        for token in (block.children or []) if block.type == "inline" else [block]:
            if token.type == "wikilink":
                seen.append((token.content, True))
            elif token.type in _VERBATIM_TOKENS:
                seen += [(match.group(0), False) for match in _WIKILINK.finditer(token.content)]
    if [raw for raw, _ in seen] != [match.group(0) for match in found]:
        return []
    return [match for match, (_, is_link) in zip(found, seen, strict=True) if is_link]


def _links_as_meaning(text: str, resolve: Resolve) -> str:
    """Wikilinks as what they mean, not how they are spelt: Obsidian rewrites them when a note or a
    heading is renamed or moved, and that is not an edit. A link to a decision becomes its id; a
    link to any other note becomes just "a link" here, and which note it names is checked against
    the sealed text (`retargeted_links`). Text in code is kept as typed."""
    parts: list[str] = []
    last = 0
    for match in wikilinks(text):
        decision_id = resolve(match.group(0)) or leading_id(match.group(0))
        parts += [text[last:match.start()], f"[[{decision_id}]]" if decision_id else "[[]]"]
        last = match.end()
    return "".join(parts) + text[last:] if parts else text


def seal_payload(decision: Decision, resolve: Resolve, tz: dt.tzinfo) -> dict[str, Any]:
    """The meaning of a note: what the seal covers, with links resolved to ids."""
    payload: dict[str, Any] = {}
    for name in SEALED_FIELDS:
        value = getattr(decision, name)
        if name == "status":
            # Moving to superseded/retracted is the tool's own edit, checked against the ledger.
            value = Status.RULED.value if value in (Status.SUPERSEDED, Status.RETRACTED) else value.value
        elif name in ("supersedes", "alongside"):
            # A deleted note's link still names its id: deleting it does not change this note.
            value = sorted(resolve(link) or leading_id(link) or link for link in value)
            if not value and name in SEALED_WHEN_SET:
                continue
        elif name == "source" and value:
            value = _links_as_meaning(value, resolve)
        elif name == "topics":
            value = list(value)
        elif isinstance(value, dt.datetime):
            value = instant(value, tz).isoformat()
        elif isinstance(value, dt.date):
            value = value.isoformat()
        payload[name] = value
    payload["body"] = _links_as_meaning(normalise_body(decision.body), resolve)
    return payload


def seal_hash(decision: Decision, resolve: Resolve, tz: dt.tzinfo) -> str:
    return "sha256:" + hashlib.sha256(_canonical(seal_payload(decision, resolve, tz)).encode("utf-8")).hexdigest()


def retargeted_links(decision: Decision, sealed: Decision, resolve: Resolve, identity: Resolve) -> list[str]:
    """The fields ("source", "body") where a link to a note that is not a decision now names another
    note than the sealed text's link did. A link may change only to follow its note: the note the
    sealed link named is gone (renamed, moved or deleted) and the new link names a note that exists.
    Pointing a ruling at a different existing note, or rewording a link that names no note, is an edit.
    Call it only when the seal hashes agree (so the links line up one for one)."""
    changed = []
    for name, now_text, then_text in (("source", decision.source or "", sealed.source or ""),
                                      ("body", decision.body, sealed.body)):
        now_links, then_links = wikilinks(now_text), wikilinks(then_text)
        if len(now_links) != len(then_links):
            changed.append(name)
            continue
        for now, then in zip(now_links, then_links, strict=True):
            if resolve(then.group(0)) or leading_id(then.group(0)):
                continue  # a link to a decision: the hash compares its id
            before, after = identity(then.group(0)), identity(now.group(0))
            if before is not None:
                moved = after != before
            elif after is None:  # named no note then or now: the words are what it says
                moved = name_key(link_target(now.group(0))) != name_key(link_target(then.group(0)))
            else:
                moved = False  # followed its note to a new name or folder
            if moved:
                changed.append(name)
                break
    return changed
