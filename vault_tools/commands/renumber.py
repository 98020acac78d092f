"""`renumber`: give one of two notes that share an id a new id, with its file name and the links to it."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import durable, note_edits, notes
from ..errors import NoteError, Refused, UsageError
from ..history import History, new_record
from ..links import WIKILINK, LinkResolver, name_key
from ..meaning import seal_hash
from ..model import Decision
from ..services.checks import check_id, check_name
from ..services.workspace import Workspace
from ..vault import VaultState

LINK_FIELDS = ("supersedes", "superseded_by", "source")


@dataclass
class Renumbered:
    old_id: str
    new_id: str
    path: str  # the renumbered note, where it is now
    old_path: str
    relinked: list[str] = field(default_factory=list)  # notes whose links were rewritten


def renumber(ws: Workspace, decision_id: str, path: str | None = None, actor: str | None = None,
             cwd: Path | None = None) -> Renumbered:
    decision_id = check_id(decision_id)
    who = check_name(actor) or ws.config.default_ruler
    with ws.vault.ledger.locked():
        state = ws.state_for_write()
        known = ws.histories()
        sharing = sorted((d for d in state.decisions if d.id == decision_id), key=lambda d: d.path)
        if not sharing:
            raise Refused(f"no decision note has id {decision_id}")
        target = _choose(ws, state, sharing, known, path, cwd)
        history = ws.history_of(state, target, known)
        new_id = ws.next_id(state)
        old_file = ws.vault.path_of(target)
        note = ws.read(old_file)
        new_file = old_file
        name = old_file.name
        if name[:len(decision_id)].upper() == decision_id.upper() and not name[len(decision_id):len(decision_id) + 1].isalnum():
            new_file = old_file.with_name(new_id + name[len(decision_id):])
            if new_file.exists():
                raise Refused(f"cannot rename to {ws.vault.relative(new_file)}: a file of that name exists",
                              path=target.path)
        text = note_edits.with_fields(note, {"id": new_id})
        renamed = ws.parse_new(new_file, text)
        others = [d for d in state.decisions if d.path != target.path]
        resolver = LinkResolver([*others, renamed])
        plans = _relinks(ws, others, target.title, renamed.title, decision_id)
        # Write: the renamed note first (a new file, then the old one goes), then the links, then the ledger.
        if new_file != old_file:
            durable.create_note(new_file, note_edits.file_text(note, text))
            old_file.unlink()
        else:
            durable.write_note(note, text)
        written_text = note_edits.file_text(note, text)
        record = history.record if history is not None else new_record()
        extra: dict[str, Any] = {}
        if history is not None and history.seal is not None:  # it stays sealed, as renumbered
            extra = {"text": written_text, "hash": seal_hash(renamed, resolver, ws.tz)}
        events = [ws.event("renumbered", renamed, who, record=record, was=decision_id, **extra)]
        done = Renumbered(decision_id, new_id, renamed.path, target.path)
        for other, other_note, other_text, updated in plans:
            durable.write_note(other_note, other_text)
            done.relinked.append(other.path)
            other_history = ws.history_of(state, other, known)
            if other_history is not None and other_history.seal is not None:
                events.append(ws.event("relinked", updated, who, record=other_history.record, was=decision_id,
                                       text=note_edits.file_text(other_note, other_text),
                                       hash=seal_hash(updated, resolver, ws.tz), successor=new_id))
        ws.vault.ledger.append(events)
        return done


def _relinks(ws: Workspace, others: list[Decision], old_title: str, new_title: str,
             decision_id: str) -> list[tuple[Decision, notes.Note, str, Decision]]:
    """Each other decision note whose links name the renumbered one, with its text relinked: (the decision, its
    note, the new text, the decision that text makes). A link names it by its file name as written, exactly,
    or as Obsidian compares names when no other note has that exact name."""
    exact_elsewhere = any(d.title == old_title for d in others)

    def points_here(link_target: str) -> bool:
        written = link_target.strip().rsplit("/", 1)[-1].removesuffix(".md")
        if written == old_title:
            return True
        return not exact_elsewhere and name_key(written) == name_key(old_title) and \
            not any(d.title == written for d in others)

    def relink(value: str) -> str:
        def swap(match: re.Match[str]) -> str:
            if not points_here(match.group("target")):
                return match.group(0)
            folder = match.group("target").rsplit("/", 1)[0] + "/" if "/" in match.group("target") else ""
            return f"[[{folder}{new_title}{match.group('part') or ''}{match.group('alias') or ''}]]"
        return WIKILINK.sub(swap, value)

    plans: list[tuple[Decision, notes.Note, str, Decision]] = []
    for other in others:
        other_note = ws.read(ws.vault.path_of(other))
        changes: dict[str, Any] = {}
        data = other_note.data if hasattr(other_note.data, "get") else {}
        for key in LINK_FIELDS:
            value = data.get(key)
            if isinstance(value, str) and relink(value) != value:
                changes[key] = relink(value)
            elif isinstance(value, list) and any(isinstance(v, str) and relink(v) != v for v in value):
                changes[key] = [relink(v) if isinstance(v, str) else v for v in value]
        new_body = relink(other_note.body)
        if not changes and new_body == other_note.body:
            continue
        try:
            other_text = note_edits.with_fields(other_note, changes) if changes else other_note.text
        except NoteError as error:
            raise Refused(f"cannot rewrite its links to {decision_id}: {error.message}", path=other.path) from None
        other_text = other_text[:len(other_text) - len(other_note.body)] + new_body
        plans.append((other, other_note, other_text, ws.parse_new(ws.vault.path_of(other), other_text)))
    return plans


def _choose(ws: Workspace, state: VaultState, sharing: list[Decision], known: dict[str, History],
            path: str | None, cwd: Path | None) -> Decision:
    """The note to renumber: the one named by --path; else the one the ledger has no record of (the copy),
    or whose record began last (a note merged in from another clone)."""
    if path is not None:
        wanted = _relative(ws, path, cwd)
        for decision in sharing:
            if decision.path == wanted:
                return decision
        matches = [d for d in sharing if name_key(d.path) == name_key(wanted)]
        if len(matches) == 1:
            return matches[0]
        raise UsageError(f"--path {path!r} is not one of the notes with id {sharing[0].id}: "
                         + ", ".join(d.path for d in sharing))
    if len(sharing) < 2:
        raise Refused(f"only one note has id {sharing[0].id}; nothing to renumber", path=sharing[0].path)
    untied = [d for d in sharing if ws.history_of(state, d, known) is None]
    if len(untied) == 1:
        return untied[0]
    if not untied:
        def began(decision: Decision) -> tuple[int, str]:
            history = ws.history_of(state, decision, known)
            first = history.events[0] if history and history.events else None
            return (first.position or first.line or 0, first.at) if first else (0, "")
        ordered = sorted(sharing, key=began)
        if began(ordered[-1]) != began(ordered[-2]):
            return ordered[-1]
    raise UsageError(f"{len(sharing)} notes have id {sharing[0].id}; say which to renumber with --path: "
                     + ", ".join(d.path for d in sharing))


def _relative(ws: Workspace, path: str, cwd: Path | None) -> str:
    given = Path(path).expanduser()
    if not given.is_absolute():
        in_vault = ws.vault.root / given
        given = in_vault if in_vault.exists() else (cwd or Path.cwd()) / given
    try:
        return given.resolve().relative_to(ws.vault.root.resolve()).as_posix()
    except ValueError:
        raise UsageError("is not inside the vault", path=path) from None

