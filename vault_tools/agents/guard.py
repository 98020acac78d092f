"""What the agent hooks refuse to let an agent write: the record's files (`record_files`) and the decision notes.

Reads are never refused. A write is: a file tool's write (Claude Code's Write, Edit, MultiEdit, NotebookEdit;
Gemini CLI's write_file and replace; each file of a Codex patch), or what a shell command plainly writes
(`shell` finds it), a folder that holds one of these counting whole when the command removes, moves or resets
it. A path is judged as typed and as the links it goes through resolve; text written into a plain note that
would make it a decision note is refused too. Each refusal names the command that makes the change properly.
Imported on every write a hook sees: nothing here reads a vault beyond the files it names.
"""
from __future__ import annotations

import fnmatch
import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

from ..page_names import BASE_FILE, PAGE_NAMES
from ..record_files import (
    CONFIG,
    KEPT,
    LEDGER,
    LEDGER_FOLDER,
    LEDGER_SUFFIX,
    LEGACY_LEDGER,
    PAGE,
    RECORD_DIR,
    STATE_DIR,
    TOPICS,
    mentions_decision,
    record_part,
)
from .shell import bash_write_targets

SEALABLE_STATUSES = ("ruled", "superseded", "retracted")
_ID_LINE = re.compile(r"""^["']?id["']?:[ \t]*["']?(D-\d+(?:-[0-9a-z]{2,8})?)["']?[ \t]*$""", re.MULTILINE)
_STATUS_LINE = re.compile(r"""^["']?status["']?:[ \t]*["']?([a-z]+)["']?[ \t]*$""", re.MULTILINE)
_WALK_SKIPPED = {".git", ".obsidian", ".trash", "node_modules"}
_PAGE_KEYS = {name.casefold() for name in PAGE_NAMES}
# Text that makes a note a decision note, typed into a command or an edit (`record_files.claims_decision` judges files).
_TYPES_DECISION = re.compile(r"""["']?type["']?[ \t]*:[ \t]*["']?decision\b""", re.IGNORECASE)  # `Decision` too


class Guard:
    """The refusals for one vault, worked out once per hook call (the pinned folder, the ledger's bytes)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._pinned: str | None = None
        self._templates = "Templates"
        self._ledger: bytes | None = None

    # -- the record's files -----------------------------------------------------------------

    def reason(self, target: Path, *, whole: bool = False, content: str | None = None,
               names: tuple[str, ...] = ()) -> str | None:
        """Why writing `target` is refused (a record file, a decision note, or, `whole`, a folder holding one
        of them, among the files `names` match when given); None when it is not. `content` is what will
        stand there (a file tool's text, the file a copy brings)."""
        found = self._reason_at(target, whole, content, names)
        real = Path(os.path.realpath(target))
        if found is None and real != target:  # a link into the record, or `..` after one
            found = self._reason_at(real, whole, content, names)
        return found

    def _reason_at(self, target: Path, whole: bool, content: str | None, names: tuple[str, ...]) -> str | None:
        rel = self._relative(target)
        if rel is None:
            if whole and _contains(target, self.root):  # `rm -rf ..` from inside the vault
                return self._folder_reason(self.root, ".", names)
            return None
        if whole and os.path.isdir(target):
            return self._folder_reason(target, rel, names)
        return self.file_reason(target, rel, content)

    def file_reason(self, target: Path, rel: str, content: str | None = None) -> str | None:
        part = record_part(self.root, rel, lambda: self.pinned_folder) if _may_be_record(rel) else None
        if part is not None:
            return _PART_REASONS[part].format(rel=rel)
        name = rel.rsplit("/", 1)[-1].casefold()
        if name == BASE_FILE.casefold() and rel.casefold() == f"{self.pinned_folder}/{BASE_FILE}".casefold():
            return _OWNERS_VIEW.format(rel=rel)
        if name in _TEMPLATE_NAMES and self.templates_folder and \
                rel.casefold() == f"{self.templates_folder}/{name}".casefold():
            return _OWNERS_TEMPLATE.format(rel=rel)
        if not rel.endswith(".md") or any(piece.startswith(".") for piece in rel.split("/")):
            return None
        found = self._decision_reason(target, rel)
        if found is None and content is not None and types_decision(content) and not self._in_templates(rel):
            return made_by_hand(rel)
        return found

    def _in_templates(self, rel: str) -> bool:
        """A template is the owner's to edit: it carries `type: decision` for the notes made from it."""
        return bool(self.templates_folder) and rel.startswith(self.templates_folder + "/")

    @property
    def pinned_folder(self) -> str:
        return self._folders()[0]

    @property
    def templates_folder(self) -> str:
        return self._folders()[1]

    def _folders(self) -> tuple[str, str]:
        """The pinned and templates folders the config names (read only for a page's name or a decision note)."""
        if self._pinned is None:
            from ..config import load_config  # the config only for a path named as a page, or a decision note
            try:
                config = load_config(self.root)
                self._pinned, self._templates = config.pinned_folder.strip("/"), config.templates_folder.strip("/")
            except Exception:  # a broken config: the default folders still count
                self._pinned, self._templates = "Pinned", "Templates"
        return self._pinned, self._templates

    def _relative(self, target: Path) -> str | None:
        try:
            rel = target.relative_to(self.root).as_posix()
        except ValueError:
            try:  # the vault may be reached through a link
                rel = target.resolve().relative_to(self.root.resolve()).as_posix()
            except (ValueError, OSError):
                return None
        return "." if rel in ("", ".") else rel

    def _folder_reason(self, folder: Path, rel: str, names: tuple[str, ...] = ()) -> str | None:
        for path, file_rel in self._files_under(folder):
            if names and not any(fnmatch.fnmatch(path.name.casefold(), name.casefold()) for name in names):
                continue
            found = self.file_reason(path, file_rel)
            if found:
                shown = "the vault" if rel == "." else f"{rel}/"
                return f"It removes or moves {shown}, which holds {file_rel}. {found}"
        return None

    def _files_under(self, folder: Path) -> Iterator[tuple[Path, str]]:
        """Every file under `folder`, the record's folders first (where a refusal is most likely found)."""
        tops = sorted(os.scandir(folder), key=lambda entry: entry.name not in (STATE_DIR, RECORD_DIR)) \
            if os.path.isdir(folder) else []
        for entry in tops:
            if entry.name in _WALK_SKIPPED:
                continue
            path = Path(entry.path)
            if entry.is_file(follow_symlinks=False):
                rel = self._relative(path)
                if rel is not None:
                    yield path, rel
            elif entry.is_dir(follow_symlinks=False):
                for where, folders, files in os.walk(path):
                    folders[:] = sorted(name for name in folders if name not in _WALK_SKIPPED)
                    for name in sorted(files):
                        file_path = Path(where) / name
                        rel = self._relative(file_path)
                        if rel is not None:
                            yield file_path, rel

    # -- decision notes -----------------------------------------------------------------------

    def _decision_reason(self, target: Path, rel: str) -> str | None:
        head = _decision_head(target)
        if head is None or self._in_templates(rel):
            return None
        found = _ID_LINE.search(head)
        note_id = found.group(1) if found else None
        status_line = _STATUS_LINE.search(head)
        status = status_line.group(1) if status_line else None
        sealed = self._sealed_id(note_id, rel, status)
        name = note_id or rel
        if sealed:
            return (f"{rel} is {sealed}, a sealed ruling: the owner's rulings are never edited in place. To change "
                    f'it, record a new ruling that supersedes it: vault-tools rule --topic TOPIC --summary "<the new '
                    f'ruling>" --supersedes {sealed} --reason "<why, at least 20 characters>". `vault-tools show '
                    f'{sealed}` prints it.')
        if status == "open":
            return (f"{rel} is {name}, an open question of the decision record: its note is the owner's, and "
                    f'vault-tools writes its steps. Record the owner\'s answer with `vault-tools rule {name} --summary '
                    f'"<the answer>" --source chat`, or drop it with `vault-tools withdraw {name} --reason "<why>"`.')
        if status == "ruled":
            return (f"{rel} is {name}, a ruling of the owner's (sealed once left alone): the owner's to edit, never "
                    f"an agent's. To change it, record a new ruling: vault-tools rule --topic TOPIC --summary "
                    f'"<the new ruling>" --supersedes {name} --reason "<why, at least 20 characters>".')
        return (f"{rel} is {name}, a decision note of the record ({status or 'no status'}): kept as written. Record "
                "what changed as a new decision: `vault-tools ask` or `vault-tools rule`.")

    def _sealed_id(self, note_id: str | None, rel: str, status: str | None) -> str | None:
        """The id the ledger sealed for this note. With no readable ledger, a note whose status says it was
        ruled is taken as sealed: a write to a sealed note is always refused."""
        try:
            ledger = self.ledger_bytes()
        except (OSError, ValueError):
            return (note_id or rel) if status in SEALABLE_STATUSES else None
        return _sealed_in_ledger(ledger, note_id, rel)

    def ledger_bytes(self) -> bytes:
        """Every ledger file of either layout, joined; OSError when there is none, ValueError when one is not
        UTF-8."""
        if self._ledger is None:
            paths = [self.root / STATE_DIR / LEGACY_LEDGER]
            folder = self.root / RECORD_DIR / LEDGER_FOLDER
            try:
                paths += [folder / name for name in sorted(os.listdir(folder)) if name.endswith(LEDGER_SUFFIX)]
            except OSError:
                pass
            found = []
            for path in paths:
                try:
                    found.append(path.read_bytes())
                except FileNotFoundError:
                    continue
            if not found:
                raise FileNotFoundError("no ledger")
            joined = b"\n".join(found)
            joined.decode("utf-8")
            self._ledger = joined
        return self._ledger


def _may_be_record(rel: str) -> bool:
    top = rel.split("/", 1)[0].casefold()
    return top in (STATE_DIR, RECORD_DIR) or rel.rsplit("/", 1)[-1].casefold().removesuffix(".md") in _PAGE_KEYS


def _contains(folder: Path, inner: Path) -> bool:
    try:
        inner.resolve().relative_to(folder.resolve())
    except (ValueError, OSError):
        return False
    return True


def _decision_head(target: Path) -> str | None:
    """The frontmatter of the decision note at `target` (line endings as LF); None when it is none, or not a
    regular file (opening a FIFO would wait for a writer)."""
    try:
        if not stat.S_ISREG(os.stat(target).st_mode):
            return None
        with open(target, "rb") as handle:
            start = handle.read(4096)
    except (OSError, ValueError):
        return None  # a new note, a folder, a name the system refuses
    # As notes.read_head judges a note, without importing what parsing one needs.
    if not start.lstrip(b"\xef\xbb\xbf").startswith(b"---") or (
            not mentions_decision(start) and (len(start) < 4096 or start.count(b"\n---", 3) > 0)):
        return None
    from ..notes import read_head  # parsing only a file that may be a decision note
    try:
        head = read_head(target)
    except (OSError, ValueError):
        return None
    return head.replace("\r\n", "\n") if head is not None else None  # `read_head` judged it by `claims_decision`


def types_decision(text: str) -> bool:
    """Whether text about to be written (a note, an edit's new text, a command) says `type: decision`."""
    return bool(_TYPES_DECISION.search(text))


def made_by_hand(rel: str) -> str:
    return (f"{rel} would become a decision note written by hand, past the checks that recording one makes. "
            'Register a question with `vault-tools ask "<question>" --topic TOPIC`, or record the owner\'s '
            'ruling with `vault-tools rule --topic TOPIC --summary "<the ruling>" --source chat`.')


def _sealed_in_ledger(ledger: bytes, note_id: str | None, rel: str) -> str | None:
    """The id the ledger sealed for this note: by its id, or (when the note's id cannot be read) by the
    path it was sealed at. Ledger lines are canonical JSON (compact, sorted keys), so only the lines
    naming the id are parsed."""
    if note_id is not None:
        needle = json.dumps({"id": note_id}, separators=(",", ":"))[1:-1].encode()
        at = ledger.find(needle)
        while at != -1:
            line_start = ledger.rfind(b"\n", 0, at) + 1
            line_end = ledger.find(b"\n", at)
            line = ledger[line_start:line_end if line_end != -1 else len(ledger)]
            if b'"event":"sealed"' in line:
                try:
                    if json.loads(line).get("id") == note_id:
                        return note_id
                except ValueError:
                    pass
            at = ledger.find(needle, line_end if line_end != -1 else len(ledger))
        return None
    for line in ledger.splitlines():
        if b'"event":"sealed"' in line:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("path") == rel and isinstance(event.get("id"), str):
                return str(event["id"])
    return None


# The owner's view of the record in Obsidian and the templates their notes are made from: written by `init` and
# `init --templates`, then the owner's to change (a view filtered by an agent hides what the owner should see).
_TEMPLATE_NAMES = frozenset({"decision.md", "question.md"})  # vault_tools/templates/
_OWNERS_VIEW = ("{rel} is the owner's view of the decision record in Obsidian (a Base): the owner's to change, "
                "never an agent's. `vault-tools list` and `vault-tools lookup` show the record.")
_OWNERS_TEMPLATE = ("{rel} is a template the owner makes decision notes from (`vault-tools init --templates` writes "
                    "it): the owner's to change. A question is registered with `vault-tools ask`.")


# What each of the record's files is, and how it changes instead; `{rel}` is the path as the agent named it.
_PART_REASONS = {
    LEDGER: "{rel} is the decision ledger: append-only, written only by vault-tools. Record a change with "
            "`vault-tools ask`, `rule`, `withdraw` or `retract` instead.",
    CONFIG: "{rel} is the decision record's config: the owner's to change (it says where decisions are read from, "
            "so a change can hide every ruling). Ask the owner; `vault-tools lint` checks it.",
    TOPICS: "{rel} holds the topics the owner merged; it is written by `vault-tools review --apply` once the owner "
            "ticks a merge in the waiting review. Propose one with `vault-tools review`.",
    KEPT: "{rel} is a copy vault-tools kept of text it replaced, for the owner to read; it is the owner's to delete.",
    PAGE: "{rel} is generated by vault-tools from the decision notes and rewritten on every build. Change the "
          "decisions instead (to change a ruling: `vault-tools rule --supersedes ID --reason ...`), then "
          "`vault-tools build`.",
}


# -- shell commands -----------------------------------------------------------------------------

_MAX_SOURCE_BYTES = 1 << 20  # a file a copy brings is judged by its text up to this size


def shell_reason(guard: Guard, command: str, cwd: Path) -> str | None:
    """Why a shell command is refused: the first thing of the record it plainly writes; None when none."""
    typed_decision = types_decision(command)
    for target in bash_write_targets(command, cwd):
        content = command if target.text and typed_decision else _source_text(target.source)
        found = guard.reason(Path(target.path), whole=target.whole, content=content, names=target.names)
        if found:
            return f"This command writes {target.shown}. {found}"
    return None


def _source_text(source: str | None) -> str | None:
    if source is None:
        return None
    try:
        if not stat.S_ISREG(os.stat(source).st_mode):
            return None
        with open(source, "rb") as handle:
            return handle.read(_MAX_SOURCE_BYTES).decode("utf-8", "replace")
    except (OSError, ValueError):
        return None


