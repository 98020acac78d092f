"""A vault opened for one command: its config, zone and clock, and the reads and checks every operation shares."""
from __future__ import annotations

import datetime as dt
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

from .. import durable, note_edits, notes
from ..conflicts import conflict_line
from ..dates import Now, local_now, utc_now, utc_stamp
from ..drafts import lacks_id
from ..errors import InconsistentVault, NoteError, NotFound, UsageError, VaultToolsError
from ..history import Conflict, History, RecordSummary, new_record
from ..layout import device_tag, keep_device_tag, ledger_tags
from ..ledger_lines import Event
from ..links import LinkResolver
from ..meaning import seal_hash
from ..model import (
    ID_PATTERN,
    Decision,
    Problem,
    Status,
    build_decision,
    format_id,
    held_statuses_in_effect,
    id_matches,
    id_number,
    note_title,
)
from ..record_files import KEPT_FOLDER
from ..record_ties import tie_notes
from ..ruling_graph import duplicate_ids, supersedes_cycle
from ..topics import topics_match
from ..vault import UnreadableNote, Vault, VaultState
from .checks import check_id
from .missing import ledgers_not_here, missing_rulings, recorded_version

# Missing on a hand-ruled note until sealing stamps them: not a reason to block other writes.
STAMPED_FIELDS = ("ruled_at", "ruled_by")


def blocking_problems(problems: Iterable[Problem]) -> list[Problem]:
    """The problems that make a note unusable: all but the stamps sealing will add, and fields over
    their limits (the note is still read; the pages cut what they show of it)."""
    return [p for p in problems if not (p.field in STAMPED_FIELDS and p.code == "VT002") and p.code != "VT009"]


class KnownSeal(NamedTuple):
    """What sealing a ruling needs that was worked out already for that very note (see `services.prefetch`)."""

    unanswered: str | None  # why it does not hold an answer yet (`drafts.unanswered`); None: it does
    record: str  # the identity its record is given if the ledger has none yet (random, as `new_record`'s)
    links: tuple[tuple[str, ...], tuple[str, ...]] | None  # its supersedes and alongside as ids (None: resolve)


class Workspace:
    # docs/design/0038-the-clock-is-injected.md
    def __init__(self, vault: Vault, now: Now = utc_now) -> None:
        self.vault = vault
        self.config = vault.config
        self.tz = vault.config.tz
        self.now = now
        # Set by a live view (`LiveState`) while it is in use: a note whose file certainly still holds what the
        # view read, as read then, without parsing it again (None: read it).
        self.read_as_known: Callable[[Path], notes.Note | None] | None = None
        # An edit worked out already for that note and those changes (see `LiveState.edited_as_known`)
        self.edit_as_known: Callable[[notes.Note, Mapping[str, Any]], notes.Note | None] | None = None
        # Told what a note about to be written is (see `writing`)
        self.writing_as_known: Callable[[notes.Note, Decision, str | None], None] | None = None
        # The decision an edit worked out already is, and its seal hash where known (see `LiveState.decided_as_known`)
        self.decided_as_known: Callable[[notes.Note], tuple[Decision, str | None] | None] | None = None
        # What sealing that very ruling needs, worked out already (see `LiveState.seal_as_known`)
        self.seal_as_known: Callable[[Decision], KnownSeal | None] | None = None
        # A command that only reads sets it (`reads_once`): the state is read once and kept for the whole command
        self._kept_state: VaultState | None = None
        self._keeps_state = False
        self._written_state: VaultState | None = None  # see `written`
        self._kept_as_written = False  # the kept state is the one a write left (`keeps`): a new write reads anew
        self._drawn_tag: str | None = None  # see `next_id`

    # reading

    def state(self) -> VaultState:
        if not self._keeps_state:
            return self.vault.load()
        if self._kept_state is None:
            self._kept_state = self.vault.load()
        return self._kept_state

    def state_read(self) -> VaultState | None:
        """The vault as this command's one read found it (`reads_once`), when it has read it; else None."""
        return self._kept_state

    def reads_once(self) -> Workspace:
        """For a command that only reads: every `state()` after the first gives the vault as the first read
        found it (one command, one answer, one walk of the vault)."""
        self._keeps_state = True
        return self

    def written(self, state: VaultState) -> None:
        """`state` is the vault as this workspace's last write left it, as a live view saw it (see
        `services.live.writing_on`): what the pages rebuilt right after, and what the command says after
        writing, are made from (`as_written`)."""
        self._written_state = state

    def keeps(self, state: VaultState) -> None:
        """From now on every `state()` of this command gives `state`: the vault as its last write left it
        (`as_written`), found unchanged since, so that what it says after writing needs no read of its own."""
        self._kept_state, self._keeps_state, self._kept_as_written = state, True, True

    def as_written(self) -> VaultState | None:
        """The vault as the last write left it, when that write said so (`written`) and nothing was written
        since (`state_for_write` forgets it); else None: read it."""
        return self._written_state

    def edited(self, note: notes.Note, changes: Mapping[str, Any]) -> notes.Note:
        """`note_edits.edited`: the note with `changes` made, parsed to check them."""
        known = self.edit_as_known(note, changes) if self.edit_as_known is not None else None
        return known if known is not None else note_edits.edited(note, changes)

    def known_decision(self, note: notes.Note) -> tuple[Decision, str | None] | None:
        """The decision an edit worked out already is, and its seal hash where known (None: work them out)."""
        return self.decided_as_known(note) if self.decided_as_known is not None else None

    def known_seal(self, decision: Decision) -> KnownSeal | None:
        """What sealing this very ruling needs, worked out already (None: work it out)."""
        return self.seal_as_known(decision) if self.seal_as_known is not None else None

    def writing(self, parsed: notes.Note, decision: Decision, digest: str | None) -> None:
        """A note about to be written (`parsed`, the text it will hold) is `decision`, with the seal hash
        `digest` (None: not known) under the state's links as they are now: a live view that reads it back
        takes both instead of working them out again."""
        if self.writing_as_known is not None:
            self.writing_as_known(parsed, decision, digest)

    def read(self, path: Path) -> notes.Note:
        """One note, with any error naming it as the vault does (relative to the vault)."""
        known = self.read_as_known(path) if self.read_as_known is not None else None
        if known is not None:
            return known
        try:
            return notes.read_note(path)
        except NoteError as error:
            error.path = self.vault.relative(path)
            raise

    def histories(self) -> dict[str, History]:
        """Every record, by identity; the same object while the ledger is unchanged."""
        return self.vault.ledger.histories()

    def now_local(self) -> dt.datetime:
        return local_now(self.now, self.tz)

    def today(self) -> dt.date:
        return self.now_local().date()

    def find(self, state: VaultState, decision_id: str) -> Decision:
        decision_id = check_id(decision_id)
        for broken in state.broken:
            if broken.path and broken.path.rsplit("/", 1)[-1].startswith(decision_id + " "):
                raise broken
        exact = [d for d in state.decisions if d.id == decision_id]
        found = exact or [d for d in state.decisions if id_matches(decision_id, d.id)]
        if not found:
            gone = [d for d in self.missing_rulings(state) if id_matches(decision_id, d.id)]
            if gone:
                kind = {Status.RULED: "a sealed ruling", Status.OPEN: "an open question"}.get(
                    gone[0].status, f"a {gone[0].status.value} question")
                raise NotFound(f"{gone[0].id} is {kind} whose note is missing (last seen at {gone[0].path})",
                               details=["It still stands. `vault-tools lint --fix` (or the watcher) writes its note "
                                        "back from the ledger; then run this again."])
            alike = sorted({d.id for d in state.decisions if id_number(d.id) == id_number(decision_id)})  # D-014
            raise NotFound(f"no decision note has id {decision_id}", details=[f"Did you mean {' or '.join(alike)}?"] if alike else [])
        if len(found) > 1:
            paths = ", ".join(d.path for d in sorted(found, key=lambda d: d.order))
            if exact or len({d.id for d in found}) == 1:  # the counter alone may name one id two notes share
                shared_id = found[0].id
                raise InconsistentVault(f"id {shared_id} is used by {len(found)} notes: {paths}",
                                        details=[f"Give one of them a new id: vault-tools renumber {shared_id} "
                                                 f"--path \"{found[-1].path}\""])
            raise UsageError(f"{decision_id} names {len(found)} notes: {', '.join(d.id for d in found)}; "
                             "give the whole id")
        return found[0]

    def histories_by_id(self) -> dict[str, History]:
        """Every record by its current id, for readers that name records by id (where two records share an
        id, the later one)."""
        return {history.id: history for history in self.histories().values()}

    def record_summaries(self) -> list[RecordSummary]:
        try:
            return self.vault.ledger.summaries()
        except InconsistentVault:  # a damaged ledger is reported by lint and refused by writes; read the notes
            return []

    def summary_of(self, state: VaultState, decision: Decision) -> RecordSummary | None:
        """What the ledger says of the record this note is (None: not in the ledger yet)."""
        if state.derived.summary_ties is None:
            state.derived.summary_ties = tie_notes(state.decisions, self.record_summaries(),
                                                      lambda d: self.seal_hash_of(state, d))
        tied = state.derived.summary_ties
        return tied.get(decision.path)

    def history_of(self, state: VaultState, decision: Decision,
                   known: dict[str, History] | None = None) -> History | None:
        """The record this note is, with its events; None when the ledger has no record of it.
        Tied by id and the paths and content the ledger knows, never by id alone (see `tie_notes`)."""
        known = self.histories() if known is None else known
        memo = state.derived.history_ties
        if memo is None or memo[0] is not known:
            memo = (known, tie_notes(state.decisions, known.values(), lambda d: self.seal_hash_of(state, d)))
            state.derived.history_ties = memo
        return memo[1].get(decision.path)

    def history_alone(self, state: VaultState, decision: Decision) -> History | None:
        """`history_of` one note, without the other records' events where the ledger's memo keeps each apart: tied
        by the records' summaries, which carry all a tie looks at (`record_ties.RecordLike`), in the same order."""
        if state.derived.history_ties is not None:
            return self.history_of(state, decision)
        # Tied afresh by the summaries read now (a damaged ledger an error, as it is to `history_of`), not by
        # `summary_of`'s, which a reader that met a write halfway took as none. Each id is tied apart.
        summaries = [summary for summary in self.vault.ledger.summaries() if summary.id == decision.id]
        summary = tie_notes([note for note in state.decisions if note.id == decision.id], summaries,
                            lambda note: self.seal_hash_of(state, note)).get(decision.path)
        return self.vault.ledger.history(summary.record) if summary is not None else None

    def record_for(self, state: VaultState, decision: Decision, known: dict[str, History] | None = None) -> str:
        """The record identity events about this note carry: its record's, or a new one."""
        history = self.history_of(state, decision, known)
        return history.record if history is not None else new_record()

    def conflicts(self, state: VaultState) -> list[tuple[Conflict, Decision | None]]:
        """Outcomes merged from two clones that cannot both stand, each with its note (if one is tied)."""
        notes_of = {}
        for decision in state.decisions:
            summary = self.summary_of(state, decision)
            if summary is not None:
                notes_of[summary.record] = decision
        found = [(s.conflict, notes_of.get(s.record)) for s in self.record_summaries() if s.conflict is not None]
        return sorted(found, key=lambda item: (item[1].order if item[1] else (0, ""), item[0].record))

    # docs/design/0004-statuses-in-effect.md
    def decisions_in_effect(self, state: VaultState) -> list[Decision]:
        """The decisions with the status in effect, for everything that reads them: the ledger's
        final statuses win over what a note says (a retracted ruling set back to `ruled` by hand
        is still retracted), and a ruling named in a ruling's `supersedes` is no longer current,
        even before sealing marks it."""
        if state.derived.in_effect is not None:
            return state.derived.in_effect
        resolve = state.resolver()

        def recorded(decision: Decision) -> Status | None:
            summary = self.summary_of(state, decision)
            return summary.status if summary is not None and summary.conflict is None else None

        statuses = held_statuses_in_effect([(decision.id, decision.status, recorded(decision),
                                             [resolve(link) or "" for link in decision.supersedes], decision.held)
                                            for decision in state.decisions])
        in_effect = [decision if status is decision.status else replace(decision, status=status)
                     for decision, status in zip(state.decisions, statuses, strict=True) if status is not None]
        in_effect = [self.as_recorded(state, decision) if decision.held else decision for decision in in_effect]
        in_effect = [self.with_conflict(state, decision) for decision in in_effect]
        in_effect += self.missing_rulings(state)
        state.derived.in_effect = in_effect
        return in_effect

    def as_recorded(self, state: VaultState, decision: Decision) -> Decision:
        """A note held for the owner (`commands.held`) as the ledger keeps it: a ruling's sealed text, a question's
        last recorded text, at the note's path, still marked held; the note itself where the ledger keeps none."""
        history = self.history_of(state, decision)
        if history is None or history.status is None:
            return decision
        kept = recorded_version(history, history.status, decision.path, self.vault.root)
        return replace(kept, status=decision.status, held=True) if kept is not None else decision

    def with_conflict(self, state: VaultState, decision: Decision) -> Decision:
        """The decision, marked with the conflict its record is in, if any."""
        summary = self.summary_of(state, decision)
        if summary is None or summary.conflict is None:
            return decision
        return replace(decision, conflict=conflict_line(summary.conflict))

    def missing_rulings(self, state: VaultState) -> list[Decision]:
        """The sealed rulings in force whose note is gone, each read from the ledger's sealed text and marked
        `note_missing` (see `services.missing`); worked out once per read of the vault."""
        return missing_rulings(self, state)

    def ledgers_not_here(self, state: VaultState) -> dict[str, list[Decision]]:
        """The notes recorded on a device whose ledger has not arrived, by its tag (see `missing.ledgers_not_here`)."""
        try:
            known = {summary.id for summary in self.vault.ledger.summaries()}
        except VaultToolsError:
            known = set()
        return ledgers_not_here(self.vault.root, state.decisions, known)

    def seal_hash_of(self, state: VaultState, decision: Decision) -> str:
        """The seal hash of a note as it is now, computed once per read of the vault."""
        hashes = state.derived.seal_hashes
        key = (decision.id, decision.path)  # ids are not unique in a vault that lint would flag
        if key not in hashes:
            hashes[key] = seal_hash(decision, state.resolver(), self.tz)
        return hashes[key]

    def remember_seal_hash(self, state: VaultState, decision: Decision, digest: str) -> None:
        """The seal hash of a note of `state` worked out elsewhere (see `services.prefetch`), as `seal_hash_of`
        keeps it."""
        state.derived.seal_hashes.setdefault((decision.id, decision.path), digest)

    def status_of(self, state: VaultState, decision: Decision) -> Status:
        """The status a lifecycle step starts from: what the ledger recorded for the note where it has a word,
        else what the note says. Where a decision stands for every reader is `decisions_in_effect`
        (`model.statuses_in_effect`), which also counts a supersession not marked yet."""
        summary = self.summary_of(state, decision)
        return (summary.status if summary is not None else None) or decision.status

    def targets_paths(self, state: VaultState, decision: Decision) -> set[str]:
        """The paths of the notes `decision` names in `supersedes`."""
        by_id, resolve = state.by_id(), state.resolver()
        return {by_id[t].path for t in (resolve(link) for link in decision.supersedes) if t in by_id}

    # shared steps of every write

    # docs/design/0009-a-broken-note-blocks-what-it-could-make-wrong.md
    def state_for_write(self, topics: tuple[str, ...] | None = None) -> VaultState:
        """The vault as read now, refused when writing to it could make things worse.

        A decision note that cannot be read or used blocks the write when it could hide a ruling
        on `topics` (every such note, when the write has no topics of its own): its topics cannot
        be read, or one of them matches. A file that cannot be opened at all blocks only when it
        could be a decision note by where it is or how it is named."""
        self._written_state = None
        if self._kept_as_written:
            self._kept_state, self._keeps_state, self._kept_as_written = None, False, False
        state = self.state()
        broken = [e for e in state.broken if self._could_hide_a_ruling(state, e, topics)]
        if broken:
            first = broken[0]
            more = f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""
            raise InconsistentVault(f"{first.message}; fix this decision note before recording anything{more}",
                                    path=first.path, line=first.line)
        for path, problems in sorted(state.problems.items()):
            blocking = blocking_problems(problems)
            if lacks_id(state.properties.get(path)) and topics is None:
                continue  # being written: it may say something on its own topics, nothing about another record
            if blocking and (topics is None or _could_be_on(state.properties.get(path, {}).get("topics"), topics)):
                raise NoteError(f"{blocking[0]}; fix this decision note before recording anything",
                                path=path, line=blocking[0].line)
        by_id, resolve = state.by_id(), state.resolver()
        for decision in state.decisions:
            cycle = supersedes_cycle(decision, by_id, resolve)
            if cycle:
                raise InconsistentVault(f"supersedes links form a cycle: {' -> '.join(cycle)}", path=decision.path,
                                        line=decision.line_of("supersedes"))
        self.vault.ledger.verify()  # a torn or changed ledger stops every write
        self.remove_stale_temps(state)
        return state

    def remove_stale_temps(self, state: VaultState) -> list[Path]:
        """Temp files a killed write left in the vault's folders, the pinned folder or `.vault-tools/`."""
        vault = self.vault
        found = [vault.root / rel for rel in state.temp_files]
        for folder in (vault.root / self.config.pinned_folder, vault.state_dir, vault.record_dir,
                       vault.record_dir / KEPT_FOLDER, vault.state_dir / "cache"):
            if folder.is_dir():
                found += folder.glob(f"{durable.TEMP_PREFIX}*{durable.TEMP_SUFFIX}")
        return durable.remove_stale_temps(found, time.time())

    def _could_hide_a_ruling(self, state: VaultState, error: NoteError, topics: tuple[str, ...] | None) -> bool:
        path = error.path or ""
        if isinstance(error, UnreadableNote):
            folder = self.config.decisions_folder
            in_folder = not folder or path.startswith(folder + "/")
            return in_folder or bool(ID_PATTERN.match(path.rsplit("/", 1)[-1].split(" ", 1)[0].removesuffix(".md")))
        if path in state.properties and lacks_id(state.properties[path]) and topics is None:
            return False  # being written (no id yet): see `state_for_write`
        if topics is None or path not in state.properties:
            return True  # no topics to compare, or properties that cannot be read: it could say anything
        return _could_be_on(state.properties[path].get("topics"), topics)

    def check_writable(self, state: VaultState, *decisions: Decision) -> None:
        """Refuse a write that touches a duplicated id or a record in conflict; every other write goes on."""
        duplicated = self.duplicated(state)
        for decision in decisions:
            found = duplicated.get(decision.id)
            if found:
                paths = ", ".join(d.path for d in found)
                raise InconsistentVault(f"id {decision.id} is used by {len(found)} notes: {paths}",
                                        path=decision.path,
                                        details=[f"Give one of them a new id first: vault-tools renumber {decision.id}"
                                                 f" --path \"{found[-1].path}\""])
            summary = self.summary_of(state, decision)
            if summary is not None and summary.conflict is not None:
                raise InconsistentVault(
                    f"{decision.id} is in conflict: {' / '.join(summary.conflict.outcomes)} were recorded on "
                    "different clones", path=decision.path,
                    details=[f"Decide first: vault-tools settle {decision.id} --keep ... (see vault-tools settle --help)"])

    def duplicated(self, state: VaultState) -> dict[str, list[Decision]]:
        """The ids more than one note has, with those notes; computed once per read of the vault."""
        if state.derived.duplicate_ids is None:
            state.derived.duplicate_ids = duplicate_ids(state.decisions)
        found = state.derived.duplicate_ids
        return found

    # docs/design/0026-ids-and-record-identity.md
    def next_id(self, state: VaultState, *, keep_tag: bool = True) -> str:
        """A new id: the next counter after every id this clone has seen, and in a git repository or the
        shared layout the device's own tag (`D-0012-k7q2`), so devices recording at the same time never hand
        out the same id. A device without a tag draws one; without `keep_tag` it is kept only by
        `keep_drawn_tag` (a command that checks its note before writing anything)."""
        numbers = [d.number for d in state.decisions]
        tags = {d.id.rsplit("-", 1)[1] for d in state.decisions if d.id.count("-") == 2}
        top, named = self.vault.ledger.id_marks()
        numbers.append(top)
        tags |= named
        try:  # the names as `[Dd]-*.md` globs them, without a Path for each (a thousand notes: 0.8 ms against 1.6-2.4)
            with os.scandir(self.vault.root / self.config.decisions_folder) as listed:
                names = [entry.name for entry in listed]
        except OSError:  # no such folder yet (or one this process may not list)
            names = []
        for name in names:
            if name[:2] in ("D-", "d-") and name.endswith(".md"):
                match = ID_PATTERN.match("D-" + name.split(" ", 1)[0].removesuffix(".md")[2:])
                if match:
                    numbers.append(int(match.group(1)))
        root = self.vault.root
        tag = device_tag(root, create=False)  # None outside git in the hidden layout, or where none is drawn yet
        if tag is None:
            tag = device_tag(root, tags | ledger_tags(root), keep=keep_tag)
            self._drawn_tag = None if keep_tag else tag
        return format_id(max(numbers, default=0) + 1, tag=tag)

    def keep_drawn_tag(self) -> None:
        """Keep the tag `next_id` drew for this device without keeping it, if it did."""
        if self._drawn_tag is not None:
            keep_device_tag(self.vault.root, self._drawn_tag)
            self._drawn_tag = None

    def event(self, kind: str, decision: Decision, actor: str, *, record: str, **extra: Any) -> Event:
        return Event(event=kind, id=decision.id, at=utc_stamp(self.now()), actor=actor, path=decision.path,
                     record=record, **extra)

    def asked_event(self, decision: Decision, actor: str, text: str, not_the_same: tuple[str, ...] = (),
                    record: str | None = None) -> Event:
        """The `asked` event of a question, carrying what rebuilds it without its note (and the decisions the
        asker said are a different matter); it begins a new record unless the note already has one."""
        return self.event("asked", decision, actor, record=record or new_record(), text=text,
                          summary=decision.summary, topics=decision.topics, not_the_same=not_the_same)

    def parse_new(self, path: Path, text: str, parsed: notes.Note | None = None) -> Decision:
        """Parse text about to be written (or already read: `parsed`), refusing it if it is not a valid decision."""
        rel = self.vault.relative(path)
        if len(text) * 4 > notes.MAX_NOTE_BYTES and (size := len(text.encode("utf-8", "surrogatepass"))) > \
                notes.MAX_NOTE_BYTES:  # the record could not read it back: nothing is written
            raise NoteError(f"would be {size:,} bytes, over the {notes.MAX_NOTE_BYTES:,}-byte limit of a decision note;"
                            " shorten the text (a note holds the decision, not every document behind it)", path=rel)
        note = parsed if parsed is not None and parsed.text == text else notes.parse_text(text, path)
        known = self.known_decision(note)
        if known is not None and known[0].path == rel:  # built from this very note, without a problem
            return known[0]
        decision, problems = build_decision(note.data, path=rel, body=note.body, key_lines=note.key_lines)
        if problems or decision is None:
            problem = problems[0] if problems else Problem(None, "is not a decision", code="VT001")
            raise NoteError(f"would not be a valid decision: {problem}", path=rel, line=problem.line)
        return decision

    def resolver_with(self, state: VaultState, *extra: Decision) -> LinkResolver:
        """The state's resolver, also knowing notes about to be written (their titles may be new)."""
        if all((known := state.get(e.id)) is not None and known.path == e.path for e in extra):
            return state.resolver()
        if not any(state.resolver().knows(e.id) for e in extra):  # new notes only: added to what is known
            return state.resolver().extended(extra)
        others = [d for d in state.decisions if d.id not in {e.id for e in extra}]
        return LinkResolver([*others, *extra])

    def new_note_path(self, decision_id: str, summary: str) -> Path:
        folder = self.vault.root / self.config.decisions_folder
        path = folder / f"{note_title(decision_id, summary)}.md"
        if not self.vault.inside(path.parent if path.parent.exists() else self.vault.root):
            raise UsageError(f"decisions_folder {self.config.decisions_folder!r} is outside the vault")
        return path

    def link_to(self, state: VaultState, decision_id: str) -> str:
        """A wikilink to a decision: by its file name, or by its id when the name holds a character
        that ends or splits a link (`[ ] | # ^`); vault-tools resolves a link by a leading id too."""
        title = self.find(state, decision_id).title
        return f"[[{decision_id}]]" if any(c in title for c in "[]|#^") else f"[[{title}]]"

    def keep_copy(self, name: str, data: bytes) -> str:
        """Keep text about to be replaced under `kept/` in the record's folder, never over an earlier copy.
        The name ends with this device's tag where it has one (the one its ids end with): two clones keeping a
        copy of the same note within the same second make two files, not one path git would stop a pull on.
        A device without a tag yet is not given one here (a new tag must avoid those the vault's ids hold, see
        `next_id`): its copies end with four random hex digits instead, for the same reason."""

        stamp = self.now().astimezone(self.tz).strftime("%Y-%m-%d %H%M%S")
        # os.urandom(2).hex() is secrets.token_hex(2), without loading `secrets` in every command
        tag = device_tag(self.vault.root, create=False) or os.urandom(2).hex()
        base = f"{name} {stamp} {tag}"
        kept = self.vault.record_dir / KEPT_FOLDER / f"{base}.md"
        counter = 1
        while kept.exists():
            counter += 1
            kept = kept.with_name(f"{base} {counter}.md")
        durable.write_atomic(kept, data)
        return self.vault.relative(kept)


def _could_be_on(value: Any, topics: tuple[str, ...]) -> bool:
    """Whether a note's `topics`, as typed (perhaps wrongly), could be about one of `topics`."""
    if value in (None, "", []):
        return False  # a note on no topic settles none (a half-filled template)
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return True
    typed = [re.sub(r"[^a-z0-9]+", "-", str(item).lower()).strip("-") for item in value]
    return any(topics_match(mine, theirs) for mine in topics for theirs in typed if theirs)
