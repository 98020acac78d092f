"""The search index: SQLite FTS5 over the decision notes, in `.vault-tools/cache/search-v1.sqlite`.

What is indexed: each decision's summary, topics, body (Obsidian comments left out) and reason.
Accents are folded and words stemmed (FTS5's porter tokenizer over unicode61 with
remove_diacritics 2), so "décision" finds "decisions". Results are ranked by bm25, the summary and
topics weighing more than the body.

The index follows the notes by the same key as the note cache (size, modification time, change
time and inode, trusted only two seconds after the last write): each search stats every note and
reads again only those that changed. Statuses come from the ledger at query time (the ledger's final
statuses win, as everywhere), so a closing recorded without a note change is seen at once. The
index is derived data: missing, it is built; damaged, it is deleted and built again.

Where the Python build has no FTS5, search scans the decision notes instead (slower, no stemming
beyond plurals) and says so once.
"""
from __future__ import annotations

import hashlib
import json
import marshal
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .bodies import without_comments
from .cjk import cjk_terms, has_cjk, marked_passage, query_forms, runs
from .conflicts import conflict_line
from .errors import InconsistentVault
from .links import leading_id, link_target, name_key
from .matter import words
from .model import FINAL_STATUSES, Decision, Status, build_decision, held_statuses_in_effect
from .notes import StatKey, stat_key
from .record_files import RACY_NANOSECONDS, settled_by
from .vault import ReadPostponed, Vault, VaultState
from .vault_walk import iter_markdown

INDEX_FILE = "cache/search-v3.sqlite"  # a new name whenever what is indexed changes
NOTICE_FILE = "cache/search-without-fts5.notice"
NO_FTS5_ENV = "VAULT_TOOLS_NO_FTS5"  # set to 1 to search as a Python build without FTS5 does
TOKENIZER = "porter unicode61 remove_diacritics 2"
# `cjk`: the pairs of characters of the Chinese, Japanese and Korean text of the other four (see `cjk`)
COLUMNS = ("summary", "topics", "body", "reason", "cjk")
WEIGHTS = (5.0, 4.0, 1.0, 2.0, 3.0)  # bm25 weight of each column, in COLUMNS order
_RANK = f"bm25(search, {', '.join(str(w) for w in WEIGHTS)})"  # a match's rank, lowest best
CURRENT = frozenset({Status.RULED, Status.OPEN})
# Set by the resident process (`resident_process`), which answers command after command: the decisions in
# effect an index worked out are taken again by the next command while the index's listing (the digest of the
# notes it was brought up to date with, and when: written anew with each write of its rows), the index's own
# file and the ledger's files are as they were then.
KEEP_DOCS_IN_EFFECT = False
_kept_docs_in_effect: dict[str, tuple[tuple[Any, ...], tuple[dict[int, _Doc], dict[int, Status]]]] = {}
# Set by the resident process too: the index's rows of notes as this process last read or wrote them, taken again
# instead of reading them all while the index's listing and its file's stat key are as it left them (every
# writer of rows writes a new listing).
KEEP_ROWS = False
_kept_rows: dict[str, tuple[str | None, StatKey, _Rows]] = {}
SNIPPET_TOKENS = 12
NO_FTS5_NOTICE = ("this Python's SQLite has no FTS5: search scans the notes instead (slower, plurals only "
                  "for stemming); a Python built with a recent SQLite gives ranked search")

def fts_query(text: str) -> str | None:
    """A user's free text as an FTS5 query: any of its words, each quoted (so no word is read as syntax), and
    each Chinese, Japanese or Korean run as the sequence of its character pairs in the `cjk` column (as written:
    folding would take the voicing marks off kana and break Hangul into letters)."""
    found = [f'"{w}"' for w in dict.fromkeys(words(text)) if not has_cjk(w)]
    found += [f'cjk : "{" ".join(form)}"' for run in dict.fromkeys(runs(text)) for form in query_forms(run)]
    return " OR ".join(found) if found else None


def fts5_available() -> bool:
    if os.environ.get(NO_FTS5_ENV) == "1":
        return False
    try:
        with closing(sqlite3.connect(":memory:")) as connection:
            connection.execute(f"CREATE VIRTUAL TABLE probe USING fts5(x, tokenize='{TOKENIZER}')")
        return True
    except sqlite3.Error:
        return False


@dataclass
class Hit:
    id: str
    path: str
    status: Status  # in effect
    summary: str
    topics: tuple[str, ...]
    snippet: str
    score: float  # higher is better (bm25, sign turned)
    conflict: str | None = None  # see `Decision.conflict`

    @property
    def historical(self) -> bool:
        return self.status in FINAL_STATUSES

    def as_json(self) -> dict[str, Any]:
        found = {"id": self.id, "path": self.path, "status": self.status.value, "historical": self.historical,
                 "summary": self.summary, "topics": list(self.topics), "snippet": self.snippet,
                 "score": round(self.score, 4)}
        return found | ({"conflict": self.conflict} if self.conflict else {})


@dataclass
class SearchResult:
    hits: list[Hit] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # said once or when something was repaired


class _Rows:
    """The index's rows of notes: each note's doc (None: not a decision note), and the stat key of each whose
    row may be trusted on its key alone (indexed well after its last write: `settled_by`). Not a dataclass:
    making one costs every command importing the index a few hundred microseconds."""
    __slots__ = ("docs", "trusted")

    def __init__(self, docs: dict[str, int | None], trusted: dict[str, StatKey]) -> None:
        self.docs, self.trusted = docs, trusted

    def hold(self, listing: list[tuple[str, StatKey]]) -> bool:
        """Whether every note listed, and only those, has a row trusted under its stat key."""
        return len(listing) == len(self.docs) and self.trusted == dict(listing)

    def changes(self, listing: list[tuple[str, StatKey]], most: int | None) -> tuple[list[tuple[str, StatKey]], list[str]]:
        """The notes listed whose row is not trusted under their stat key, and the rows of notes no longer
        listed; `ReadPostponed` where they are more than `most`."""
        changed = [(rel, key) for rel, key in listing if self.trusted.get(rel) != key]
        listed = {rel for rel, _ in listing}
        gone = [rel for rel in self.docs if rel not in listed]
        if most is not None and len(changed) + len(gone) > most:
            raise ReadPostponed(f"{len(changed) + len(gone)} notes to index")
        return changed, gone


def _listing_digest(listing: list[tuple[str, StatKey]]) -> str:
    # marshal's version 2 writes no references: the same listing is the same bytes in every process
    return hashlib.sha256(marshal.dumps(listing, 2)).hexdigest()


@dataclass(frozen=True)
class _Doc:
    rowid: int
    id: str
    path: str
    status: Status
    title: str
    summary: str
    topics: tuple[str, ...]
    supersedes: tuple[str, ...]
    held: bool  # see `model.CONFIRMED`


class SearchIndex:
    """The FTS5 index of one vault."""

    def __init__(self, vault: Vault, state: VaultState | None = None) -> None:
        """`state`: the vault as just read; the index checks itself against the notes that read found
        (their sizes and times) rather than walking the vault again."""
        self.vault = vault
        self.state = state
        self.path = vault.state_dir / INDEX_FILE
        self.notices: list[str] = []
        self._synced = False  # brought up to date once: one command asks it more than once of the same notes
        self._docs_in_effect: tuple[dict[int, _Doc], dict[int, Status]] | None = None  # as of that once
        self._listing: str | None = None  # its listing as brought up to date: the digest, and when it was written
        self._most_changed: int | None = None  # see `ready`

    # -- keeping it current

    def _connect(self, *, wait: float = 5) -> sqlite3.Connection:
        """The index, waiting up to `wait` seconds for another process's write."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=wait, isolation_level=None)
        # Derived data: a crash mid-write at worst damages it, and a damaged index is built again.
        connection.execute("PRAGMA synchronous = OFF")
        connection.executescript(f"""
            CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, size INT, mtime_ns INT, ctime_ns INT, inode INT,
                                              indexed_at_ns INT, doc INT);
            CREATE TABLE IF NOT EXISTS docs (rowid INTEGER PRIMARY KEY, id TEXT, path TEXT, status TEXT, title TEXT,
                                             summary TEXT, topics TEXT, supersedes TEXT, held INT);
            CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT);
            CREATE VIRTUAL TABLE IF NOT EXISTS search USING fts5({", ".join(COLUMNS)}, tokenize='{TOKENIZER}');
        """)
        return connection

    def open(self) -> sqlite3.Connection:
        """The index brought up to date with the notes; built afresh when missing or damaged."""
        try:
            connection = self._connect()
            if not self._synced:
                self._sync(connection)
                self._synced = True
            return connection
        except sqlite3.DatabaseError as error:
            if isinstance(error, sqlite3.OperationalError) and "locked" in str(error):
                raise InconsistentVault("the search index is locked by another vault-tools process; try again",
                                        path=f".vault-tools/{INDEX_FILE}") from None
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        self.notices.append(f"the search index (.vault-tools/{INDEX_FILE}) was damaged; it was built again")
        connection = self._connect()
        self._sync(connection)
        self._synced = True
        return connection

    def _sync(self, connection: sqlite3.Connection) -> None:
        listing = list(self._notes())
        found = connection.execute("SELECT value FROM meta WHERE name = 'listing'").fetchone()
        stamp: str | None = found[0] if found else None
        digest = None
        if not KEEP_ROWS:
            # The whole listing's digest: while every note is as it was (and was so well before the index last
            # checked), nothing is compared note by note.
            digest = _listing_digest(listing)
            newest = max((max(key[1], key[2]) for _, key in listing), default=0)
            kept_digest, _, kept_at = stamp.partition(" ") if stamp else ("", "", "0")
            if kept_digest == digest and int(kept_at) - newest > RACY_NANOSECONDS:
                self._listing = stamp
                return
        rows = self._rows_kept(stamp) or self._rows_read(connection)
        if KEEP_ROWS and rows.hold(listing):  # every note has a row trusted under its stat key: nothing to write
            self._listing = stamp
            self._keep(rows)
            return
        rows = self._sync_notes(connection, listing, rows, stamp, digest)
        if KEEP_ROWS:
            self._keep(rows)

    def _keep(self, rows: _Rows) -> None:
        """Keep `rows` for the next command, under the listing stamp and the file's stat key they go with."""
        try:
            _kept_rows[str(self.path)] = (self._listing, stat_key(os.stat(self.path)), rows)
        except OSError:
            _kept_rows.pop(str(self.path), None)

    def _rows_kept(self, stamp: str | None) -> _Rows | None:
        """The rows this process last left in the index, while nothing else has written it since."""
        kept = _kept_rows.get(str(self.path)) if KEEP_ROWS else None
        if kept is None or stamp != kept[0]:
            return None
        try:
            return kept[2] if stat_key(os.stat(self.path)) == kept[1] else None
        except OSError:
            return None

    @staticmethod
    def _rows_read(connection: sqlite3.Connection) -> _Rows:
        rows = _Rows({}, {})
        for rel, size, mtime, ctime, inode, indexed_at, doc in connection.execute(
                "SELECT path, size, mtime_ns, ctime_ns, inode, indexed_at_ns, doc FROM files"):
            rows.docs[rel] = doc
            if settled_by(key := (size, mtime, ctime, inode), indexed_at):
                rows.trusted[rel] = key
        return rows

    def _sync_notes(self, connection: sqlite3.Connection, listing: list[tuple[str, StatKey]], rows: _Rows,
                    stamp: str | None, digest: str | None) -> _Rows:
        """The index's `rows` (as of the listing stamp `stamp`) brought up to date with `listing`, with a new
        stamp in the same transaction (`digest`: the listing's, where it was taken), and returned as they now
        are. Rows another process wrote since they were read are read again under the write's lock."""
        changed, gone = rows.changes(listing, self._most_changed)
        written: dict[str, tuple[StatKey, int, int | None]] = {}
        connection.execute("BEGIN IMMEDIATE")
        try:
            found = connection.execute("SELECT value FROM meta WHERE name = 'listing'").fetchone()
            if (found[0] if found else None) != stamp:
                rows = self._rows_read(connection)
                changed, gone = rows.changes(listing, self._most_changed)
            for rel in gone:
                self._forget(connection, rel, rows.docs[rel])
            for rel, key in changed:
                self._forget(connection, rel, rows.docs.get(rel))
                written[rel] = (key, time.time_ns(), self._index_note(connection, rel, self.vault.root / rel))
                connection.execute("INSERT INTO files VALUES (?, ?, ?, ?, ?, ?, ?)", (rel, *key, *written[rel][1:]))
            # a new value at each write: rows may have new numbers
            listing_stamp = f"{digest or _listing_digest(listing)} {time.time_ns()}"
            connection.execute("INSERT OR REPLACE INTO meta VALUES ('listing', ?)", (listing_stamp,))
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        self._listing = listing_stamp
        now = _Rows(dict(rows.docs), dict(rows.trusted))
        for rel in gone:
            del now.docs[rel]
            now.trusted.pop(rel, None)
        for rel, (key, indexed_at, doc) in written.items():
            now.docs[rel] = doc
            if settled_by(key, indexed_at):
                now.trusted[rel] = key
            else:
                now.trusted.pop(rel, None)
        return now

    def _notes(self) -> Iterator[tuple[str, StatKey]]:
        """(path relative to the vault, stat key) of every note: as the state read them, or walked now."""
        if self.state is not None and self.state.stat_keys is not None:
            yield from self.state.stat_keys.items()
            return
        for rel, entry in iter_markdown(self.vault.root, self.vault.config):
            try:
                stat = entry.stat()
            except OSError:
                continue
            yield rel, stat_key(stat)

    @staticmethod
    def _forget(connection: sqlite3.Connection, rel: str, doc: int | None) -> None:
        connection.execute("DELETE FROM files WHERE path = ?", (rel,))
        if doc is not None:
            connection.execute("DELETE FROM docs WHERE rowid = ?", (doc,))
            connection.execute("DELETE FROM search WHERE rowid = ?", (doc,))

    def _index_note(self, connection: sqlite3.Connection, rel: str, path: Path) -> int | None:
        kind, payload = self.vault.read_payload(path)
        if kind != "decision" or payload is None:
            return None
        decision, _ = build_decision(payload["data"], path=rel, body=payload["body"], key_lines=payload["lines"])
        if decision is None:
            return None
        cursor = connection.execute(
            "INSERT INTO docs (id, path, status, title, summary, topics, supersedes, held) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (decision.id, rel, decision.status.value, decision.title, decision.summary,
             json.dumps(decision.topics), json.dumps(decision.supersedes), int(decision.held)))
        rowid = cursor.lastrowid
        connection.execute("INSERT INTO search (rowid, summary, topics, body, reason, cjk) VALUES (?, ?, ?, ?, ?, ?)",
                           (rowid, *document_fields(decision)))
        return rowid

    # -- asking it

    def _docs_and_statuses(self, connection: sqlite3.Connection) -> tuple[dict[int, _Doc], dict[int, Status]]:
        """Every indexed decision, and each one's status in effect: worked out once for an index brought up to date."""
        if self._docs_in_effect is not None:
            return self._docs_in_effect
        key = self._docs_key() if KEEP_DOCS_IN_EFFECT else None
        kept = _kept_docs_in_effect.get(str(self.path)) if key is not None else None
        if kept is not None and kept[0] == key:
            self._docs_in_effect = kept[1]
            return kept[1]
        docs = self._docs(connection)
        statuses = self.statuses(docs)
        self._docs_in_effect = ({rowid: doc for rowid, doc in docs.items() if statuses[rowid] is not None},
                                {rowid: status for rowid, status in statuses.items() if status is not None})
        if key is not None:
            _kept_docs_in_effect[str(self.path)] = (key, self._docs_in_effect)
        return self._docs_in_effect

    def _docs_key(self) -> tuple[Any, ...] | None:
        """What the decisions in effect are worked out from: the index's rows, as its listing says when it was
        last written (read through the connection: a file's times may not change within a second, nor at all
        while its writes wait in a journal) and as its file's stat key says of writes by other programs, and the
        ledger's files; None where one cannot be said."""
        try:
            file = stat_key(os.stat(self.path))
            ledger = self.vault.ledger.stat_key()
        except (OSError, InconsistentVault):
            return None
        return None if self._listing is None or ledger is None else (self._listing, file, ledger)

    def _docs(self, connection: sqlite3.Connection) -> dict[int, _Doc]:
        return {row[0]: _Doc(row[0], row[1], row[2], Status(row[3]), row[4], row[5], tuple(json.loads(row[6])),
                             tuple(json.loads(row[7])), bool(row[8]))
                for row in connection.execute("SELECT rowid, id, path, status, title, summary, topics, supersedes, "
                                              "held FROM docs")}

    def statuses(self, docs: dict[int, _Doc]) -> dict[int, Status | None]:
        """Each indexed note's status in effect (the ledger's word and supersession by a current ruling); None for
        one held for the owner that is in no reader's view (`model.held_statuses_in_effect`)."""
        try:
            recorded = self.vault.ledger.statuses()
        except InconsistentVault:
            recorded = {}
        by_name = {name_key(doc.title): doc.id for doc in docs.values()}
        ids = {doc.id for doc in docs.values()}

        def named(link: str) -> str:
            target = by_name.get(name_key(link_target(link))) or leading_id(link)
            return target if target in ids else ""

        rowids = list(docs)
        found = held_statuses_in_effect([(doc.id, doc.status, recorded.get(doc.id),
                                          [named(link) for link in doc.supersedes], doc.held) for doc in docs.values()])
        return dict(zip(rowids, found, strict=True))

    def search(self, text: str, *, history: bool = False, limit: int = 20,
               statuses: Iterable[Status] | None = None, passages: bool = True) -> list[Hit]:
        """The decisions matching `text`, best first; each with the passage that matched (unless `passages` is
        False: then the summary, for a caller that only ranks them)."""
        query = fts_query(text)
        if query is None:
            return []
        wanted = set(statuses) if statuses is not None else (set(Status) if history else set(CURRENT))
        with closing(self.open()) as connection:
            docs, in_effect = self._docs_and_statuses(connection)
            ranked = connection.execute(f"SELECT rowid, {_RANK} FROM search WHERE search MATCH ? "
                                        "ORDER BY 2", (query,)).fetchall()
            chosen = [(rowid, rank) for rowid, rank in ranked if rowid in docs and in_effect[rowid] in wanted][:limit]
            if not chosen:
                return []
            marks = ",".join("?" * len(chosen))
            snippets = {} if not passages else dict(connection.execute(
                f"SELECT rowid, snippet(search, -1, '**', '**', '…', {SNIPPET_TOKENS}) FROM search "
                f"WHERE search MATCH ? AND rowid IN ({marks})", (query, *(rowid for rowid, _ in chosen))).fetchall())
            if passages and has_cjk(text):  # the best column may be the index's pairs: the passage is taken from the text itself
                for rowid, summary, body, reason in connection.execute(
                        f"SELECT rowid, summary, body, reason FROM search WHERE rowid IN ({marks})",
                        tuple(rowid for rowid, _ in chosen)).fetchall():
                    found = next(filter(None, (marked_passage(part, text) for part in (summary, body, reason))), None)
                    if found is not None:
                        snippets[rowid] = found
        conflicts = self.conflicts()
        return [Hit(docs[rowid].id, docs[rowid].path, in_effect[rowid], docs[rowid].summary, docs[rowid].topics,
                    snippets.get(rowid, docs[rowid].summary), -rank, conflicts.get(docs[rowid].id))
                for rowid, rank in chosen]

    def ranked_ids(self, text: str) -> list[str]:
        """The ids of the decisions matching `text`, best first (bm25, as `search` ranks them), whatever their
        status: for a caller that knows the decisions in effect itself and takes the best of those (the same-matter
        shortlist), without the index working out every decision's status in effect."""
        query = fts_query(text)
        if query is None:
            return []
        with closing(self.open()) as connection:
            ids = dict(connection.execute("SELECT rowid, id FROM docs").fetchall())
            ranked = connection.execute(f"SELECT rowid FROM search WHERE search MATCH ? ORDER BY {_RANK}",
                                        (query,)).fetchall()
        return [ids[rowid] for rowid, in ranked if rowid in ids]

    def ready(self, most_changed: int) -> None:
        """Brought up to date with the notes and the decisions in effect among them worked out, as a search does
        first (kept where the process keeps them: `KEEP_DOCS_IN_EFFECT`), where that means indexing at most
        `most_changed` notes again, at once; otherwise (none built yet, more changed, another process writing
        it, damaged: what a search repairs and says) left as it is to the next search."""
        if not self.path.is_file():
            return
        self._most_changed = most_changed
        try:
            with closing(self._connect(wait=0)) as connection:
                self._sync(connection)
                self._synced = True
                self._docs_and_statuses(connection)
        except (ReadPostponed, sqlite3.Error):
            pass
        finally:
            self._most_changed = None

    def count(self, text: str, statuses: Iterable[Status]) -> int:
        """How many decisions whose status in effect is one of `statuses` match `text`."""
        query = fts_query(text)
        if query is None:
            return 0
        wanted = set(statuses)
        with closing(self.open()) as connection:
            docs, in_effect = self._docs_and_statuses(connection)
            matched = connection.execute("SELECT rowid FROM search WHERE search MATCH ?", (query,)).fetchall()
        return sum(1 for (rowid,) in matched if rowid in docs and in_effect[rowid] in wanted)

    def conflicts(self) -> dict[str, str]:
        """Each id whose record is in conflict -> what every reader says of it."""
        try:
            return {s.id: conflict_line(s.conflict) for s in self.vault.ledger.summaries() if s.conflict is not None}
        except InconsistentVault:
            return {}


def document_fields(decision: Decision) -> tuple[str, str, str, str, str]:
    """What is indexed of a decision, in COLUMNS order."""
    fields = (decision.summary, " ".join(decision.topics), without_comments(decision.body), decision.reason or "")
    return (*fields, " ".join(cjk_terms(" ".join(fields))))


# -- without FTS5 ------------------------------------------------------------------------------------

def _stem(word: str) -> str:
    for suffix in ("ies", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[:-len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def scan(decisions: Sequence[Decision], text: str, *, history: bool = False, limit: int = 20) -> list[Hit]:
    """Search by reading every decision: the fallback where SQLite has no FTS5."""
    asked = {_stem(w) for w in words(text) if not has_cjk(w)}
    asked_runs = [(run, form) for run in dict.fromkeys(runs(text)) for form in query_forms(run)]
    if not asked and not asked_runs:
        return []
    hits = []
    for decision in decisions:
        if not history and decision.status not in CURRENT:
            continue
        score = 0.0
        fields = document_fields(decision)
        for weight, value in zip(WEIGHTS[:-1], fields[:-1], strict=True):
            found = [_stem(w) for w in words(value)]
            score += weight * sum(1 for w in found if w in asked) / (1 + len(found)) ** 0.5
            score += weight * sum(1 for _, form in asked_runs if form[0][0] + "".join(p[1] for p in form) in value)
        if score > 0:
            hits.append(Hit(decision.id, decision.path, decision.status, decision.summary, decision.topics,
                            decision.summary, score, decision.conflict))
    return sorted(hits, key=lambda hit: -hit.score)[:limit]


def notice_once(vault: Vault) -> str | None:
    """The no-FTS5 notice, the first time only (remembered in the cache)."""
    marker = vault.state_dir / NOTICE_FILE
    if marker.exists():
        return None
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(NO_FTS5_NOTICE + "\n", encoding="utf-8")
    except OSError:
        pass
    return NO_FTS5_NOTICE
