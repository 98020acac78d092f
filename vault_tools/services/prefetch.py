"""Work a reconcile does ahead of itself, in a forked child, while it goes through the notes in order.

Sealing a quiet ruling reads its text again, works out its seal hash, checks that it answers, resolves its
links and writes its text in the ledger; marking the rulings it supersedes edits each one's text, parses the
result to check the edit and hashes it. All of that depends only on the notes as the vault was read.
A child forked once the vault is read does it for every quiet ruling, in the order the reconcile meets them,
and hands each result back through a pipe (see `handover`); the reconcile takes a result only where it is
certainly what it would work out itself now:

- a text, only while the view has not read the note again and its file still has the stat key it had when
  the vault was read (as `LiveState.unchanged_text` asks of a text it reads itself);
- a seal hash, or the note's links as ids, only while the note is the very one the child saw and no note came,
  went or changed its id since (the links resolve as they did); whether it answers, for that very note;
- a supersession's edit, only for the same note text, the same changes and the same path: the edit is a
  function of those alone; the decision that edit is, only for that very edit, and its seal hash only while
  the links resolve as they did (as for a ruling's hash);
- a text as JSON (the `sealed` and `superseded` events hold texts), only for that very text: it is a function
  of the text alone (`ledger.encoded_ahead`).

A watcher that observes the vault has a thread running: `LiveState.before_fork` stops it first (the watcher
then looks at what changed meanwhile: see `Watcher.process`). Where a child cannot be forked (not Linux,
another thread running), when there is too little to do for a fork to pay, or when the child dies, the
reconcile does it all itself.
"""
from __future__ import annotations

import os
import signal
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .. import note_edits, notes
from ..drafts import unanswered
from ..errors import VaultToolsError
from ..handover import Receiver, can_fork, free_processors, hand_over, record, widen
from ..history import new_record
from ..ledger_lines import encode_text, encoded_ahead, forget_encoded_ahead
from ..links import LinkResolver, linked_ids
from ..meaning import seal_hash
from ..model import Decision, Status, superseded_changes
from .workspace import KnownSeal

if TYPE_CHECKING:
    from ..history import History
    from ..notes import StatKey
    from ..vault import VaultState
    from .workspace import Workspace


class LiveView(Protocol):
    """What working ahead asks of the reconcile's live view (`live.LiveState` is one): typed so, this module does
    not import the live view, which starts it."""

    @property
    def ws(self) -> Workspace: ...

    @property
    def state(self) -> VaultState: ...

    @property
    def reshaped_at(self) -> int: ...

    @property
    def read_keys(self) -> Mapping[str, StatKey]: ...

    @property
    def before_fork(self) -> Callable[[Mapping[str, StatKey], list[str]], None] | None: ...

    def decision_at(self, rel: str) -> Decision | None: ...

    def is_unchanged(self, rel: str) -> bool: ...

    def history_of(self, decision: Decision) -> History | None: ...

    def unchanged_text(self, rel: str) -> str | None: ...

    def note_as_read(self, path: Path) -> notes.Note | None: ...

# Fewer quiet rulings than this are sealed sooner than a child is forked and handed its work.
MIN_RULINGS = 100

EditKey = tuple[str, str, tuple[tuple[str, str], ...]]  # the note's path, its text, the changes


def edit_key(rel: str, text: str, changes: Mapping[str, Any]) -> EditKey:
    return rel, text, tuple(sorted((name, str(value)) for name, value in changes.items()))


# docs/design/0020-work-ahead-in-a-forked-child.md
class WorkAhead:
    """A child working out, for the quiet rulings `rels` (in the order they are met), what sealing each needs
    (see the module's docstring), and what it handed back so far."""

    def __init__(self, live: LiveView, rels: Sequence[str]) -> None:
        self.live = live
        self.texts: dict[str, str] = {}  # rel -> the note's text, read while its file had its unchanged key
        # rel -> the text of a ruling to be marked superseded, for its successor: apart, as the ruling's own
        # text is taken when it is sealed, which may be after both were handed over
        self.targets: dict[str, str] = {}
        self.edits: dict[EditKey, notes.Note] = {}  # a supersession's edit, made and checked by parsing
        self._seals: dict[str, tuple[Decision, KnownSeal]] = {}  # rel -> (the note, what sealing it needs)
        # id(edit) -> (that edit, the decision it is, its seal hash): see `decided_of`
        self._decided: dict[int, tuple[notes.Note, Decision, str | None]] = {}
        self._seen: dict[str, Decision] = {}  # rel -> the note the child worked on
        self._reshaped_at = live.reshaped_at
        self._pid: int | None = None
        self._receiver: Receiver | None = None
        rulings = [rel for rel in rels if _worth(live, rel)]
        if len(rulings) < MIN_RULINGS or free_processors() < 2:
            return  # on one free processor the child would only take time from the reconcile
        if not can_fork() and live.before_fork is not None:  # a watcher's observer: stopped, looked again later
            live.before_fork(live.read_keys, list(live.state.files))
        if not can_fork():
            return
        for rel in rulings:
            decision = live.decision_at(rel)
            assert decision is not None
            self._seen[rel] = decision

        try:
            reading, writing = os.pipe()
        except OSError:
            return  # no pipe to be had (too many open files): the reconcile does it all
        # Ctrl-C waits until the child is known here (so `close` stops it) and is ignored in the child
        interrupt = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            widen(writing)
            pid = os.fork()
            if pid == 0:  # the child: work, hand over, leave without running the parent's exit handlers
                _child(live, rulings, reading, writing)
            self._pid, self._receiver = pid, Receiver(reading)
        except OSError:  # no process to be had (a limit, memory): the reconcile does it all
            os.close(reading)
        finally:
            os.close(writing)
            signal.signal(signal.SIGINT, interrupt)
        if self._receiver is not None:
            os.set_blocking(reading, False)

    def text_of(self, rel: str) -> str | None:
        """The text the child read of the note at `rel` (while its file had its unchanged key), if handed over."""
        text = self._text_taken(rel)
        if text is None and self.take_in():
            text = self._text_taken(rel)
        return text

    def _text_taken(self, rel: str) -> str | None:
        text = self.texts.pop(rel, None)
        return text if text is not None else self.targets.pop(rel, None)

    def edit_of(self, key: EditKey) -> notes.Note | None:
        """The edit the child made of that text with those changes at that path, if handed over."""
        marked = self.edits.pop(key, None)
        if marked is None and self.take_in():
            marked = self.edits.pop(key, None)
        return marked

    def seal_of(self, decision: Decision) -> KnownSeal | None:
        """What sealing the ruling needs (`KnownSeal`), for the very note the child worked on: its links as ids
        only while they resolve as the child resolved them (no note came, went or changed its id since)."""
        found = self._seals.pop(decision.path, None)
        if found is None and self.take_in():
            found = self._seals.pop(decision.path, None)
        if found is None or found[0] is not decision:
            return None
        known = found[1]
        return known if self.live.reshaped_at == self._reshaped_at else known._replace(links=None)

    def decided_of(self, marked: notes.Note) -> tuple[Decision, str | None] | None:
        """The decision an edit handed over (`edit_of`) is, and its seal hash while the links resolve as the
        child resolved them (no note came, went or changed its id since; else None)."""
        known = self._decided.get(id(marked))
        if known is None or known[0] is not marked:
            return None
        return known[1], known[2] if self.live.reshaped_at == self._reshaped_at else None

    def take_in(self) -> bool:
        """Take what the child handed over since the last call (never waiting for it); True when there was
        any. Asked for only when what is wanted is not there yet: each look at the pipe costs a call."""
        if self._receiver is None:
            return False
        live, found = self.live, self._receiver.take_in()
        for kind, *item in (item for ruling in found for item in ruling):
            if kind == "text":
                rel, text, encoded = item
                self.texts[rel] = text
                encoded_ahead(text, encoded)
            elif kind == "seal":
                rel, known = item
                decision = live.decision_at(rel)
                if decision is not None and decision is self._seen.get(rel):
                    self._seals[rel] = (decision, known)
            elif kind == "target":
                rel, text = item
                self.targets[rel] = text
            elif kind == "hash":
                rel, digest = item
                decision = live.decision_at(rel)
                if decision is not None and decision is self._seen.get(rel) and live.reshaped_at == self._reshaped_at:
                    live.ws.remember_seal_hash(live.state, decision, digest)
            elif kind == "edit":
                key, marked, text, encoded, updated, digest = item
                self.edits[key] = marked
                encoded_ahead(text, encoded)
                if updated is not None:
                    self._decided[id(marked)] = (marked, updated, digest)
        return bool(found)

    def close(self) -> None:
        """Stop the child (done or not) and forget what it handed over."""

        if self._pid is not None:
            try:
                os.kill(self._pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(self._pid, 0)
            self._pid = None
        if self._receiver is not None:
            os.close(self._receiver.fd)
            self._receiver = None
        self.texts.clear()
        self.targets.clear()
        self._decided.clear()
        self._seals.clear()
        self.edits.clear()
        forget_encoded_ahead()


def _worth(live: LiveView, rel: str) -> bool:
    """Whether sealing the note at `rel` would take what the child works out: a ruling not sealed yet whose
    stamps are there, valid, unchanged since the vault was read."""
    decision = live.decision_at(rel)
    if decision is None or decision.status is not Status.RULED or rel in live.state.problems:
        return False
    if decision.ruled_at is None or decision.ruled_by is None or not live.is_unchanged(rel):
        return False
    history = live.history_of(decision)
    return history is None or history.seal is None


def _child(live: LiveView, rulings: list[str], reading: int, writing: int) -> None:
    """In the forked child: each ruling's text, seal hash and supersessions' edits, handed over ruling by ruling
    (the pipe blocks when full: the reconcile takes them as it goes). A ruling the child cannot work out
    (unreadable, an edit refused) is left to the reconcile, which says why."""
    try:  # SIGINT is ignored here from the fork on (see `WorkAhead`): Ctrl-C is the reconcile's to act on
        os.close(reading)
        resolve, by_id = live.state.resolver(), live.state.by_id()
        for rel in rulings:
            try:
                items = _ruling_ahead(live, rel, resolve, by_id)
            except Exception:  # whatever it is, the reconcile meets it itself and says so
                continue
            hand_over(writing, bytearray(record(items)))  # one record for each ruling: its parts come together
        hand_over(writing, bytearray(record(None)))
    except OSError:
        pass  # the reconcile was done with it (a closed pipe)
    finally:
        os._exit(0)


def _ruling_ahead(live: LiveView, rel: str, resolve: LinkResolver,
                  by_id: Mapping[str, Decision]) -> list[tuple[Any, ...]]:
    decision, text = live.decision_at(rel), live.unchanged_text(rel)
    if decision is None or text is None:
        return []
    ws = live.ws
    items: list[tuple[Any, ...]] = [("text", rel, text, encode_text(text)),
                                    ("hash", rel, seal_hash(decision, resolve, ws.tz)),
                                    ("seal", rel, KnownSeal(unanswered(decision), new_record(),
                                                            linked_ids(decision, resolve)))]
    for link in decision.supersedes:
        target = by_id.get(resolve(link) or "")
        note = live.note_as_read(ws.vault.path_of(target)) if target is not None else None
        if target is None or note is None:
            continue
        changes = superseded_changes(decision, decision.reason or "")
        text = note_edits.file_text(note, note.text)
        marked = note_edits.edited(note, changes)
        marked_text = note_edits.file_text(note, marked.text)  # what the `superseded` event holds
        try:  # the decision the marked note is, and its seal hash (what the `superseded` event holds)
            updated: Decision | None = ws.parse_new(ws.vault.path_of(target), marked.text, marked)
            digest = seal_hash(updated, resolve, ws.tz) if updated is not None else None
        except VaultToolsError:  # the reconcile meets it itself and says so
            updated = digest = None
        items += [("target", target.path, text),
                  ("edit", edit_key(target.path, note.text, changes), marked, marked_text, encode_text(marked_text),
                   updated, digest)]
    return items
