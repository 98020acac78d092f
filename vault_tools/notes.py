"""Read one note: split its frontmatter from its body byte for byte, and read its values.

The frontmatter is split from the body here rather than with python-frontmatter,
because its `loads` strips the body and normalises line endings and the BOM;
every byte must be given back as it was (editing is `note_edits`, writing `durable`).
Values are read with PyYAML's libyaml loader (fifteen times faster than a pure-Python
parser, which matters on vaults of tens of thousands of notes), resolving plain
scalars by YAML 1.2's core schema as Obsidian does.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from .errors import NoteError
from .record_files import claims_decision, mentions_decision

if TYPE_CHECKING:
    import yaml

# Imports inside functions: PyYAML is loaded only when a note's frontmatter is not plain enough to read without it.

BOM = "\ufeff"
MAX_NOTE_BYTES = 5 * 1024 * 1024
HEAD_BYTES = 16 * 1024

_OPEN_FENCE = re.compile(r"^---[ \t]*\r?\n")
_CLOSE_FENCE = re.compile(r"^---[ \t]*(\r?\n|$)", re.MULTILINE)
_CLOSING_LINE = re.compile(rb"\n---[ \t]*\r?\n")  # a closing fence, its line whole in the bytes read
_OPENING_LINE = re.compile(rb"(?:\xef\xbb\xbf)?---[ \t]*\r?\n")  # `_OPEN_FENCE` in the bytes read


_CORE_SCHEMA = (
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    ("tag:yaml.org,2002:float", r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
     r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$", "-+.0123456789"),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
)


def _core_schema_int(loader: Any, node: Any) -> int:
    """An integer as YAML 1.2's core schema reads it: `08` is eight (PyYAML's own reader takes a leading zero
    for octal, and refuses `08`), `0o17` octal, `0x1f` hexadecimal."""
    text = loader.construct_scalar(node).replace("_", "")
    if text[:2] in ("0o", "0x"):
        return int(text, 8 if text[1] == "o" else 16)
    return int(text, 10)


_LOADER: Any = None


def _yaml() -> Any:
    """PyYAML, loaded on first use: a command that finds every note in the note cache never imports it."""
    import yaml

    return yaml


def _loader() -> Any:
    """PyYAML's loader, libyaml's when present, resolving plain scalars as YAML 1.2's core schema does (as
    Obsidian does): `yes`/`on` stay text, and timestamps stay the text the owner typed, for the model to parse.

    Made on first use: a command that finds every note in the cache never imports yaml.
    """
    global _LOADER
    if _LOADER is None:
        yaml = _yaml()

        class FastLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
            yaml_implicit_resolvers: ClassVar[dict[str, list[Any]]] = {}

        for tag, pattern, first in _CORE_SCHEMA:
            FastLoader.add_implicit_resolver(tag, re.compile(pattern), list(first))
        FastLoader.add_constructor("tag:yaml.org,2002:int", _core_schema_int)
        _LOADER = FastLoader
    return _LOADER


@dataclass
class Note:
    """One note as found on disk: exact text plus the parsed frontmatter."""

    path: Path
    text: str  # decoded, without the BOM
    bom: bool
    newline: str
    frontmatter: str | None  # the text between the fences, exactly
    body: str
    data: Any = None  # parsed frontmatter (a mapping for a well-formed note)
    key_lines: dict[str, int] = field(default_factory=dict)  # 1-based file lines


@dataclass(frozen=True)
class Written:
    """A file `durable.write_atomic` wrote: its path and bytes, and the note they parse to where the writer had
    parsed it (`read_note` then need not parse them again)."""

    path: Path
    data: bytes
    parsed: Note | None = None


def newline_of(text: str) -> str:
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


# docs/design/0010-frontmatter-read-and-written-by-vault-tools.md
def split(text: str) -> tuple[str | None, str, int]:
    """(frontmatter, body, offset of body) as Obsidian reads a note: `---` on line 1."""
    opening = _OPEN_FENCE.match(text)
    if not opening:
        return None, text, 0
    start = opening.end()
    if text.startswith("---", start) and _CLOSE_FENCE.match(text, start):
        closing = _CLOSE_FENCE.match(text, start)
        return "", text[closing.end():], closing.end()  # type: ignore[union-attr]
    closing = _CLOSE_FENCE.search(text, start)
    if not closing or text[closing.start() - 1] != "\n":
        return None, text, 0
    return text[start:closing.start()], text[closing.end():], closing.end()


def decode(raw: bytes, path: Path) -> tuple[str, bool]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise NoteError("not UTF-8 text; save it as UTF-8", path=str(path), line=line) from None
    if text.startswith(BOM):
        return text[1:], True
    return text, False


def read_head(path: str | Path) -> str | None:
    """The frontmatter text of a note if it might be a decision note, else None.

    Reads only the first few KiB unless the frontmatter is longer: ordinary notes
    are never read in full.
    """
    return read_start(path)[0]


def read_start(path: str | Path) -> tuple[str | None, bytes | None]:
    """What `read_head` gives, and, where that is a head, the note's whole bytes when they were all read on
    the way (a note shorter than the head): a decision note that short is then parsed without being read again."""
    head, data, _ = read_start_keyed(path)
    return head, data


StatKey = tuple[int, int, int, int]  # size, mtime_ns, ctime_ns, inode


def stat_key(found: os.stat_result) -> StatKey:
    """A file's version as stat sees it: what a cache keeps what it read under (any write changes it; a file
    replaced by a rename, even with the same size and times, has another inode)."""
    return found.st_size, found.st_mtime_ns, found.st_ctime_ns, found.st_ino


def read_start_keyed(path: str | Path) -> tuple[str | None, bytes | None, StatKey]:
    """`read_start`, and the file's (size, mtime_ns, ctime_ns, inode) as it was opened, before a byte of it
    was read: what a cache may keep what was read under (a later write changes it)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        opened = os.fstat(fd)
        key = stat_key(opened)
        raw = os.read(fd, HEAD_BYTES)  # nearly always the whole head at once: an ordinary note is known by it
        if _plainly_ordinary(raw):
            return None, None, key
        more, whole = _read_up_to(fd, HEAD_BYTES - len(raw))
        raw += more
        if not (raw.startswith(b"---") or raw.startswith(b"\xef\xbb\xbf---")):
            return None, None, key
        if not mentions_decision(raw):
            if whole or raw.count(b"\n---", 3) > 0:
                return None, None, key
            more, whole = _read_up_to(fd, MAX_NOTE_BYTES)
            raw += more
    finally:
        os.close(fd)
    head = _decision_head(raw)
    return head, (raw if whole and head is not None else None), key


def _plainly_ordinary(raw: bytes) -> bool:
    """Whether the first bytes of a note (however many one read gave) already show it is no decision note:
    no frontmatter, or frontmatter closed without the word. Then it need not be read to its end."""
    if raw.startswith(b"---") or raw.startswith(b"\xef\xbb\xbf---"):
        closing = _CLOSING_LINE.search(raw, 3)
        if closing is None:
            return False
        # Below a fence, the properties end at the first closing line: the word is looked for there alone (a
        # body, most of the bytes read, may say it freely). A first line only like one (`----`) leaves the
        # note without properties, judged on all it holds (`_decision_head`).
        return not mentions_decision(raw, closing.start() if _OPENING_LINE.match(raw) else None)
    return len(raw) >= 6  # too long to be the start of an opening `---`, even after a byte order mark


def _read_up_to(fd: int, limit: int) -> tuple[bytes, bool]:
    """Up to `limit` bytes from `fd`, and whether the end of the file was reached."""
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = os.read(fd, limit - size)
        if not chunk:
            return b"".join(chunks), True
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), False


def _decision_head(raw: bytes) -> str | None:
    text = raw.decode("utf-8", errors="replace").removeprefix(BOM)
    frontmatter, _, _ = split(text)
    if frontmatter is None:
        # Unclosed within the head: judge on what is there.
        return text if claims_decision(text) else None
    return frontmatter if claims_decision(frontmatter) else None


def _check_events(frontmatter: str, path: Path) -> None:
    """Anchors, aliases and explicit tags have no place in a decision's properties.

    Refusing them up front also disarms alias bombs and `!!python/object` tags.
    """
    yaml = _yaml()

    for event in yaml.parse(frontmatter, Loader=_loader()):
        mark = getattr(event, "start_mark", None)
        line = mark.line + 2 if mark is not None else None
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise NoteError("YAML anchors and aliases are not allowed in a decision note",
                            path=str(path), line=line)
        if isinstance(event, yaml.ScalarEvent | yaml.CollectionStartEvent) and event.tag is not None:
            if isinstance(event, yaml.ScalarEvent) and event.implicit and event.implicit[0]:
                continue
            if event.tag == "!":  # a quoted scalar in some emitters' events: no tag really given
                continue
            raise NoteError(f"YAML tag {event.tag} is not allowed in a decision note",
                            path=str(path), line=line)


def _yaml_error(exc: yaml.YAMLError, frontmatter: str, path: Path) -> NoteError:
    """What is wrong with the frontmatter and on which line of the file, as PyYAML found it."""
    yaml = _yaml()

    if isinstance(exc, yaml.reader.ReaderError):  # a character YAML refuses (a control character): where it is
        # found again by the character: libyaml counts its position in bytes, PyYAML's own reader in characters
        at = frontmatter.find(chr(exc.character)) if isinstance(exc.character, int) else -1
        return NoteError(f"invalid YAML in frontmatter: {str(exc).splitlines()[0]}", path=str(path),
                         line=frontmatter[:at].count("\n") + 2 if at >= 0 else None)
    if not isinstance(exc, yaml.MarkedYAMLError):
        return NoteError(f"invalid YAML in frontmatter: {str(exc).splitlines()[0]}", path=str(path))
    mark = exc.problem_mark or exc.context_mark
    left_open = exc.context_mark is not None and ("flow" in (exc.context or "")
                                                  or mark.line >= frontmatter.count("\n"))
    if left_open:
        mark = exc.context_mark  # an unclosed bracket or quote: point at where it opened
    last_line = max(frontmatter.count("\n") - 1, 0)
    line = min(mark.line, last_line) + 2 if mark is not None else None
    problem = (exc.problem or exc.context or "invalid YAML").strip()
    return NoteError(f"invalid YAML in frontmatter: {problem}", path=str(path), line=line)


def parse_frontmatter(frontmatter: str, path: Path) -> tuple[Any, dict[str, int]]:
    """The parsed properties and the file line of each top-level key."""
    yaml = _yaml()

    if "&" in frontmatter or "*" in frontmatter or "!" in frontmatter:  # else no anchor, alias or tag can be there
        try:
            _check_events(frontmatter, path)
        except yaml.YAMLError as exc:
            raise _yaml_error(exc, frontmatter, path) from None
    plain = _plain_values(frontmatter)
    return plain if plain is not None else _full_values(frontmatter, path)


def _full_values(frontmatter: str, path: Path) -> tuple[Any, dict[str, int]]:
    """The properties and their lines through PyYAML's composer and constructor, which name what is wrong."""
    yaml = _yaml()

    loader = _loader()(frontmatter)
    try:
        node = loader.get_single_node()
        key_lines: dict[str, int] = {}
        if isinstance(node, yaml.MappingNode):
            for key_node, _ in node.value:
                key = str(key_node.value)
                if key in key_lines:
                    raise NoteError(f"invalid YAML in frontmatter: duplicate key {key!r} "
                                    f"(first on line {key_lines[key]})", path=str(path), line=key_node.start_mark.line + 2)
                key_lines[key] = key_node.start_mark.line + 2
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, frontmatter, path) from None
    except (TypeError, ValueError) as exc:  # e.g. a list used as a mapping key
        raise NoteError(f"invalid YAML in frontmatter: {str(exc).splitlines()[0]}", path=str(path)) from None
    finally:
        loader.dispose()
    return data, key_lines


class _NotPlain(Exception):
    """The frontmatter holds what only PyYAML's own composer and constructor deal with (or an error)."""


# Whether a scalar may be taken as it was resolved: (its text, whether it was written plain, not quoted nor as a
# block, and the tag it resolved to).
ScalarCheck = Callable[[str, bool, str], bool]


def plain_yaml(text: str, first_line: int, accept: ScalarCheck) -> tuple[Any, dict[str, int]] | None:
    """A YAML document of plain values (as `_plain_values` reads a note's properties, keys' lines counted from
    `first_line`), or None when it holds anything else or any scalar `accept` refuses: the caller then reads
    it with a full parser, which says what is wrong and where."""
    return _plain_values(text, first_line, accept)


def _plain_values(frontmatter: str, first_line: int = 2,
                  accept: ScalarCheck | None = None) -> tuple[Any, dict[str, int]] | None:
    """The properties and their lines, built straight from libyaml's events, as PyYAML's composer and
    constructor would build them, in about half the time (parsing decision notes is most of a first read).

    Only for what nearly every frontmatter is: one document of scalars, lists and mappings, keyed by
    scalars, each key once at the top, with no tag, anchor or alias. Anything else, an error included,
    gives None: `parse_frontmatter` then reads it the full way, which says what is wrong and where.
    """
    yaml = _yaml()

    loader = _loader()(frontmatter)
    try:
        loader.get_event()  # the stream's start
        if isinstance(loader.peek_event(), yaml.StreamEndEvent):
            return None, {}
        loader.get_event()  # the document's start
        root = loader.get_event()
        key_lines: dict[str, int] = {}
        if type(root) is yaml.MappingStartEvent and _untagged(root):
            data: Any = {}
            while type(key := loader.get_event()) is not yaml.MappingEndEvent:
                if type(key) is not yaml.ScalarEvent or key.value in key_lines:
                    raise _NotPlain
                key_lines[key.value] = key.start_mark.line + first_line
                data[_scalar(loader, key, accept)] = _value(loader, loader.get_event(), accept)
        else:
            data = _value(loader, root, accept)
        loader.get_event()  # the document's end
        if not isinstance(loader.get_event(), yaml.StreamEndEvent):
            raise _NotPlain  # a second document
        return data, key_lines
    except (_NotPlain, yaml.YAMLError, TypeError, ValueError):
        return None
    finally:
        loader.dispose()


def _untagged(event: Any) -> bool:
    return (event.tag is None or event.tag == "!") and event.anchor is None


def _value(loader: Any, event: Any, accept: ScalarCheck | None = None) -> Any:
    yaml = _yaml()

    kind = type(event)
    if kind is yaml.ScalarEvent:
        return _scalar(loader, event, accept)
    if kind is yaml.SequenceStartEvent and _untagged(event):
        items = []
        while type(item := loader.get_event()) is not yaml.SequenceEndEvent:
            items.append(_value(loader, item, accept))
        return items
    if kind is yaml.MappingStartEvent and _untagged(event):
        mapping = {}
        while type(key := loader.get_event()) is not yaml.MappingEndEvent:
            if type(key) is not yaml.ScalarEvent:
                raise _NotPlain  # a list or mapping as a key: the constructor refuses it, naming the line
            name = _scalar(loader, key, accept)
            if name in mapping:
                raise _NotPlain  # said (or taken as the last) as the full way does
            mapping[name] = _value(loader, loader.get_event(), accept)
        return mapping
    raise _NotPlain  # an alias, or a tagged or anchored collection


def _scalar(loader: Any, event: Any, accept: ScalarCheck | None = None) -> Any:
    """A scalar as the constructor makes it: its tag resolved (YAML 1.2's core schema), then built."""
    if not _untagged(event):
        raise _NotPlain
    value, plain = event.value, event.implicit[0]
    resolvers = loader.yaml_implicit_resolvers
    # What the resolver gives, without calling it for the scalars no pattern could take (most of them: a quoted
    # one, or a plain one whose first character starts none of `_CORE_SCHEMA`'s patterns)
    if (plain and (not value or value[0] in resolvers)) or None in resolvers or loader.yaml_path_resolvers:
        tag = loader.resolve(_yaml().ScalarNode, value, event.implicit)
    else:
        tag = loader.DEFAULT_SCALAR_TAG
    if accept is not None and not accept(value, bool(plain), tag):
        raise _NotPlain
    if tag == "tag:yaml.org,2002:str":
        return value
    node = _yaml().ScalarNode(tag, value, event.start_mark, event.end_mark, event.style)
    return loader.yaml_constructors[tag](loader, node)


def parse_text(text: str, path: Path, *, bom: bool = False) -> Note:
    frontmatter, body, _ = split(text)
    note = Note(path=path, text=text, bom=bom, newline=newline_of(text), frontmatter=frontmatter, body=body)
    if frontmatter is not None and frontmatter.strip():
        note.data, note.key_lines = parse_frontmatter(frontmatter, path)
    return note


def read_note(path: Path, data: bytes | None = None, written: Written | None = None) -> Note:
    """The note at `path`, read now, or parsed from `data` when its bytes were read already; when they are
    what this process `written` there and parsed, that parse."""
    size = path.stat().st_size if data is None else len(data)
    if size > MAX_NOTE_BYTES:
        raise NoteError(f"note is {size:,} bytes, over the {MAX_NOTE_BYTES:,}-byte limit for a decision note",
                        path=str(path))
    if data is None:
        data = path.read_bytes()
    if written is not None and written.parsed is not None and written.data == data:
        return written.parsed
    text, bom = decode(data, path)
    marker = merge_marker_line(text)
    if marker is not None:
        raise NoteError("holds git's conflict markers from a merge that stopped; keep the text you mean, delete the "
                        "marker lines (<<<<<<<, =======, >>>>>>>), then finish the merge", path=str(path), line=marker)
    return parse_text(text, path, bom=bom)


_MERGE_MARKER = re.compile(r"^<<<<<<< ", re.MULTILINE)


def merge_marker_line(text: str) -> int | None:
    """The line of the first conflict hunk git left in `text` (`<<<<<<<`, then `=======`, then `>>>>>>>`, each
    starting a line), or None. A note left so by a stopped merge holds two versions and is neither."""
    found = _MERGE_MARKER.search(text) if "<<<<<<< " in text else None  # looking first costs a tenth of the search
    if found is None:
        return None
    middle = re.search(r"^=======[ \t]*\r?$", text[found.end():], re.MULTILINE)
    if middle is None or re.search(r"^>>>>>>> ", text[found.end() + middle.end():], re.MULTILINE) is None:
        return None
    return text.count("\n", 0, found.start()) + 1


# -- writing ------------------------------------------------------------------------


