"""Read one note and write one back, changing only the bytes of the fields changed.

The frontmatter is split from the body here rather than with python-frontmatter,
because its `loads` strips the body and normalises line endings and the BOM;
this module must give back every byte it was not asked to change. Values are
read with PyYAML's libyaml loader (fifteen times faster than a pure-Python
parser, which matters on vaults of tens of thousands of notes), resolving plain
scalars by YAML 1.2's core schema as Obsidian does. An edit never re-dumps the
owner's YAML: it replaces only the lines of the keys that change, with values
rendered by ruamel.yaml, then re-parses the result and refuses to write if any
other value moved.
"""
from __future__ import annotations

import datetime as dt
import errno
import io
import json
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from .errors import NoteError

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    import yaml

BOM = "\ufeff"
MAX_NOTE_BYTES = 5 * 1024 * 1024
HEAD_BYTES = 16 * 1024

_OPEN_FENCE = re.compile(r"^---[ \t]*\r?\n")
_CLOSE_FENCE = re.compile(r"^---[ \t]*(\r?\n|$)", re.MULTILINE)
# Loose on purpose: a frontmatter that is a list or broken YAML but says
# `type: decision` is a decision note the owner got wrong, not someone else's note.
_CLOSING_LINE = re.compile(rb"\n---[ \t]*\r?\n")  # a closing fence, its line whole in the bytes read
_CLAIMS_DECISION = re.compile(r"""^[ \t-]*["']?type["']?[ \t]*:[ \t]*["']?decision\b""", re.MULTILINE)


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


def _loader() -> Any:
    """PyYAML's loader, libyaml's when present, resolving plain scalars as YAML 1.2's core schema does (as
    Obsidian does): `yes`/`on` stay text, and timestamps stay the text the owner typed, for the model to parse.

    Made on first use: a command that finds every note in the cache never imports yaml.
    """
    global _LOADER
    if _LOADER is None:
        import yaml

        class FastLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
            yaml_implicit_resolvers: ClassVar[dict[str, list[Any]]] = {}

        for tag, pattern, first in _CORE_SCHEMA:
            FastLoader.add_implicit_resolver(tag, re.compile(pattern), list(first))
        FastLoader.add_constructor("tag:yaml.org,2002:int", _core_schema_int)
        _LOADER = FastLoader
    return _LOADER


_dumpers = threading.local()


def _dumper() -> Any:
    """ruamel.yaml's round-trip dumper, made once per thread (making one costs as much as a dump)."""
    found = getattr(_dumpers, "yaml", None)
    if found is None:
        from ruamel.yaml import YAML  # only writes need it; reading starts faster without it

        found = _dumpers.yaml = YAML(typ="rt")
        found.width = 4096
        found.indent(mapping=2, sequence=4, offset=2)
    return found


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


def newline_of(text: str) -> str:
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


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


def claims_decision(frontmatter: str) -> bool:
    return bool(_CLAIMS_DECISION.search(frontmatter))


def read_head(path: str | Path) -> str | None:
    """The frontmatter text of a note if it might be a decision note, else None.

    Reads only the first few KiB unless the frontmatter is longer: ordinary notes
    are never read in full.
    """
    return read_start(path)[0]


def read_start(path: str | Path) -> tuple[str | None, bytes | None]:
    """What `read_head` gives, and the note's whole bytes when they were all read on the way (a note
    shorter than the head): a decision note that short is then parsed without being read again."""
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
        if b"decision" not in raw:
            if whole or raw.count(b"\n---", 3) > 0:
                return None, None, key
            more, whole = _read_up_to(fd, MAX_NOTE_BYTES)
            raw += more
    finally:
        os.close(fd)
    return _decision_head(raw), (raw if whole else None), key


def _plainly_ordinary(raw: bytes) -> bool:
    """Whether the first bytes of a note (however many one read gave) already show it is no decision note:
    no frontmatter, or frontmatter closed without the word. Then it need not be read to its end."""
    if raw.startswith(b"---") or raw.startswith(b"\xef\xbb\xbf---"):
        return b"decision" not in raw and _CLOSING_LINE.search(raw, 3) is not None
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
    import yaml

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
    import yaml

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
    import yaml

    if "&" in frontmatter or "*" in frontmatter or "!" in frontmatter:  # else no anchor, alias or tag can be there
        try:
            _check_events(frontmatter, path)
        except yaml.YAMLError as exc:
            raise _yaml_error(exc, frontmatter, path) from None
    plain = _plain_values(frontmatter)
    return plain if plain is not None else _full_values(frontmatter, path)


def _full_values(frontmatter: str, path: Path) -> tuple[Any, dict[str, int]]:
    """The properties and their lines through PyYAML's composer and constructor, which name what is wrong."""
    import yaml

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
    import yaml

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
    import yaml

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
    import yaml

    if not _untagged(event):
        raise _NotPlain
    tag = loader.resolve(yaml.ScalarNode, event.value, event.implicit)
    if accept is not None and not accept(event.value, bool(event.implicit[0]), tag):
        raise _NotPlain
    if tag == "tag:yaml.org,2002:str":
        return event.value
    node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
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
    return parse_text(text, path, bom=bom)


# -- writing ------------------------------------------------------------------------

_DATE_TEXT = re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?")


def render_field(name: str, value: Any, newline: str = "\n") -> str:
    """One top-level property as Obsidian's Properties panel would write it."""
    if isinstance(value, dt.datetime):
        rendered = f"{name}: {value.replace(tzinfo=None).isoformat(timespec='seconds')}\n"
    elif isinstance(value, dt.date):
        rendered = f"{name}: {value.isoformat()}\n"
    elif isinstance(value, str) and _DATE_TEXT.fullmatch(value):  # a date read as text: written plain, as a date
        rendered = f"{name}: {value}\n"
    elif isinstance(value, str) and _SIMPLE_KEY.fullmatch(name) and len(value) <= _SIMPLE_MAX and (
            (_PLAIN_TEXT.fullmatch(value) and value.lower() not in _NOT_PLAIN) or _QUOTED_LINK.fullmatch(value)):
        # What ruamel.yaml writes as it is (or, for a link, in double quotes with nothing to escape), written
        # here without it: a note marked superseded is written this way hundreds of times in a reconcile.
        rendered = f'{name}: "{value}"\n' if value.startswith("[[") else f"{name}: {value}\n"
    else:
        stream = io.StringIO()
        _dumper().dump({name: _yaml_value(value)}, stream)
        rendered = stream.getvalue()
    return rendered.replace("\n", newline)


_SIMPLE_KEY = re.compile(r"[a-z_]+")
_SIMPLE_MAX = 1000  # far below the dumper's line width
_PLAIN_TEXT = re.compile(r"[A-Za-z]([A-Za-z0-9 .,;()'/_-]*[A-Za-z0-9.)])?")
_NOT_PLAIN = frozenset({"true", "false", "yes", "no", "on", "off", "null", "y", "n"})
_QUOTED_LINK = re.compile(r"\[\[[A-Za-z0-9 .,;()'/_#|^-]*\]\]")


def _yaml_value(value: Any) -> Any:
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString

    if isinstance(value, str) and value.startswith("[["):
        return DoubleQuotedScalarString(value)
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_yaml_value(item) for item in value]
    return value


def render_note(fields: Sequence[tuple[str, Any]], body: str, newline: str = "\n") -> str:
    lines = "".join(render_field(name, value, newline) for name, value in fields)
    return f"---{newline}{lines}---{newline}{body.replace(chr(10), newline) if newline != chr(10) else body}"


def _key_spans(frontmatter: str, key_lines: Mapping[str, int]) -> dict[str, tuple[int, int]]:
    """For each top-level key, the [start, end) line range (0-based, in the frontmatter)."""
    lines = frontmatter.splitlines(keepends=True)
    starts = sorted((line - 2, key) for key, line in key_lines.items())
    spans: dict[str, tuple[int, int]] = {}
    for index, (start, key) in enumerate(starts):
        end = starts[index + 1][0] if index + 1 < len(starts) else len(lines)
        while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
            end -= 1
        spans[key] = (start, end)
    return spans


REMOVE = object()  # as a value in `with_fields` changes: delete the property
# `key: value  # comment` where the value has no quotes or `#` that could hide the comment's start.
_INLINE_COMMENT = re.compile(r"^([^'\"#\n]*?)(\s+#[^\n]*?)\r?\n?$")


def with_fields(note: Note, changes: Mapping[str, Any]) -> str:
    """The note's text with `changes` applied to its frontmatter, every other byte kept.

    A key already present is replaced where it stands; a new key is added at the
    end of the frontmatter. The result is parsed again and compared with the
    original, so a change can never disturb a property it was not asked to touch.
    """
    return edited(note, changes).text


def edited(note: Note, changes: Mapping[str, Any]) -> Note:
    """`with_fields`, as the note it makes (parsed already, to check it)."""
    if note.frontmatter is None or not hasattr(note.data, "items"):
        raise NoteError("has no frontmatter mapping to change", path=str(note.path))
    lines = note.frontmatter.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += note.newline
    spans = _key_spans(note.frontmatter, note.key_lines)
    # The owner's keys may all be indented (valid YAML): new lines follow their indentation.
    indent = ""
    if spans:
        first = lines[min(start for start, _ in spans.values())]
        indent = first[:len(first) - len(first.lstrip(" "))]

    def rendered(name: str, value: Any, old: list[str]) -> list[str]:
        if value is REMOVE:
            return []
        new = [indent + line for line in render_field(name, value, note.newline).splitlines(keepends=True)]
        # Keep the owner's comments: one at the end of the key's line, and comment lines under it.
        comment = _INLINE_COMMENT.match(old[0]) if old else None
        if comment and len(new) == 1:
            new[0] = new[0].rstrip("\r\n") + comment.group(2) + note.newline
        elif comment:
            new.append(indent + comment.group(2).strip() + note.newline)
        return new + [line for line in old[1:] if line.lstrip().startswith("#")]

    # Replace from the bottom up so earlier line numbers stay valid.
    for name in sorted((n for n in changes if n in spans), key=lambda n: -spans[n][0]):
        start, end = spans[name]
        lines[start:end] = rendered(name, changes[name], lines[start:end])
    additions = [line for name, value in changes.items() if name not in spans for line in rendered(name, value, [])]
    frontmatter = "".join(lines) + "".join(additions)
    prefix_end = note.text.index("\n") + 1  # the opening fence, as written
    fence_start = len(note.text) - len(note.body)
    closing = note.text[prefix_end + len(note.frontmatter):fence_start]
    text = note.text[:prefix_end] + frontmatter + closing + note.body
    return _verify_edit(note, text, changes)


def plain(value: Any) -> Any:
    """Parsed YAML as plain JSON-able Python values (dates as the text written), keys as JSON writes them
    (`true`, `null`): the note cache keeps properties as JSON, so properties read from it and read afresh
    compare equal here."""
    if isinstance(value, Mapping):
        return {_json_key(k): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=None).isoformat(timespec="seconds")
    if isinstance(value, dt.date):
        return value.isoformat()
    return value if value is None or isinstance(value, bool | int | float) else str(value)


def _json_key(key: Any) -> str:
    return json.dumps(key) if key is None or isinstance(key, bool) else str(key)


def _verify_edit(before: Note, text: str, changes: Mapping[str, Any]) -> Note:
    after = parse_text(text, before.path, bom=before.bom)
    old, new = plain(before.data), plain(after.data)
    for name, value in changes.items():
        if value is REMOVE:
            old.pop(name, None)
        else:
            old[name] = plain(value)
    if old != new or after.body != before.body:
        raise NoteError("refusing to write: the edit would change more than the fields asked for",
                        path=str(before.path))
    return after


def file_text(note: Note, text: str) -> str:
    """`text` as the file holds it: with the note's BOM, if it had one."""
    return (BOM if note.bom else "") + text


def encode(text: str, *, bom: bool) -> bytes:
    return ((BOM if bom else "") + text).encode("utf-8")


def _mode_for(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


@dataclass(frozen=True)
class Written:
    """A file `write_atomic` wrote: its path and bytes, and the note they parse to where the writer had
    parsed it (`read_note` then need not parse them again)."""

    path: Path
    data: bytes
    parsed: Note | None = None


_recorders: ContextVar[tuple[list[Written], ...]] = ContextVar("note_write_recorders", default=())
_before_write: ContextVar[tuple[Callable[[], None], ...]] = ContextVar("before_note_writes", default=())


@contextmanager
def before_writes(callback: Callable[[], None]) -> Iterator[None]:
    """Call `callback` before each file `write_atomic` writes while the block runs (in this thread): how
    another file is made durable before a note written after it (the ledger, when its appends are synced
    together)."""
    token = _before_write.set((*_before_write.get(), callback))
    try:
        yield
    finally:
        _before_write.reset(token)


_kept_sync_threads: ContextVar[ThreadPoolExecutor | None] = ContextVar("kept_sync_threads", default=None)


@contextmanager
def sync_threads_kept() -> Iterator[None]:
    """While the block runs (in this thread), the threads that sync each batch of writes (see `_sync_all`) are
    started once and kept for every batch: a reconcile writes batch after batch, and starting eight threads
    for each was a fortieth of its time."""
    from concurrent.futures import ThreadPoolExecutor

    threads = ThreadPoolExecutor(max_workers=SYNC_THREADS, thread_name_prefix="vault-tools-syncs")
    token = _kept_sync_threads.set(threads)
    try:
        yield
    finally:
        _kept_sync_threads.reset(token)
        threads.shutdown(wait=True)


@contextmanager
def recording_writes() -> Iterator[list[Written]]:
    """Every file `write_atomic` writes while the block runs (in this thread), in order: how a process that
    keeps its own view of the vault knows what to read again."""
    written: list[Written] = []
    token = _recorders.set((*_recorders.get(), written))
    try:
        yield written
    finally:
        _recorders.reset(token)


def write_atomic(path: Path, data: bytes, parsed: Note | None = None) -> None:
    """Write through a temp file in the same folder, then replace: never a torn note. `parsed` is the note
    `data` parses to, when the caller has it (see `Written`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    error = write_files([(path, data, parsed)])[0]
    if error is not None:
        raise error


def write_notes(writes: list[tuple[Note, str, Note | None]]) -> list[OSError | None]:
    """`write_note` for several notes at once (see `write_files`)."""
    return write_files([(note.path, encode(text, bom=note.bom), _parse_of(note, text, parsed))
                        for note, text, parsed in writes])


def write_files(writes: list[tuple[Path, bytes, Note | None]]) -> list[OSError | None]:
    """`write_atomic` for several files at once, each as atomic as alone: every temp file is made first, then
    each is filled and synced, then each replaces its file, in order. Made one after another, each file's
    creation waits for the previous file's sync on a journaling file system; this way the syncs come
    together. Returns, for each file, None when it was written, else what stopped it (it is then left as
    it was: an error on one file does not stop the others). What `before_writes` asked for is done while the
    temp files are synced, before the first file is replaced."""
    before = _before_write.get()
    if not writes:
        for callback in before:
            callback()
    found: list[OSError | None] = []
    for start in range(0, len(writes), WRITES_AT_ONCE):  # each holds a file open until it is in place
        found += _write_files(writes[start:start + WRITES_AT_ONCE], before)
    return found


WRITES_AT_ONCE = 64


def _write_files(writes: list[tuple[Path, bytes, Note | None]],
                 before: tuple[Callable[[], None], ...] = ()) -> list[OSError | None]:
    import tempfile

    found: list[OSError | None] = [None] * len(writes)
    made: list[tuple[int, int, str, Path, bytes, Note | None]] = []  # index, fd, temp, path, data, parsed
    for index, (path, data, parsed) in enumerate(writes):
        try:
            fd, temp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=TEMP_SUFFIX, dir=path.parent)
        except OSError as error:
            found[index] = error
            continue
        made.append((index, fd, temp, path, data, parsed))
    placed: set[int] = set()
    try:
        try:
            for index, fd, temp, path, data, _ in made:
                try:
                    os.chmod(temp, _mode_for(path))  # mkstemp makes 0600; keep the note's own mode
                    _write_all(fd, data)
                except OSError as error:
                    found[index] = error
            _sync_all([(index, fd) for index, fd, *_ in made if found[index] is None], found, before)
        finally:
            for _, fd, *_ in made:
                os.close(fd)
        for index, _, temp, path, data, parsed in made:
            if found[index] is None:
                try:
                    os.replace(temp, path)
                except OSError as error:
                    found[index] = error
                else:
                    placed.add(index)
                    for recorder in _recorders.get():
                        recorder.append(Written(path, data, parsed))
    finally:  # what was not put in place goes
        for index, _, temp, *_ in made:
            if index not in placed:
                _unlink_quietly(temp)
    return found


SYNC_THREADS = 8


def _sync_all(files: list[tuple[int, int]], found: list[OSError | None],
              first: tuple[Callable[[], None], ...] = ()) -> None:
    """fsync each (index, fd), its error put at `found[index]`, while calling `first` in this thread (what
    raises there is raised once every sync is done). Several files are synced from a few threads at once: a
    journaling file system then commits them together, where one after another each waits for its own commit
    (196 notes: 45-90 ms one by one, 16 ms from 8 threads, on this project's build machines)."""
    def sync(part: list[tuple[int, int]]) -> None:
        for index, fd in part:
            try:
                os.fsync(fd)
            except OSError as error:
                found[index] = error

    workers = min(SYNC_THREADS, len(files)) if len(files) > 1 or first else 0
    parts = [files[start::workers] for start in range(workers)]
    kept = _kept_sync_threads.get()
    waits: list[Callable[[], object]] = []  # one for each part, returning once it is synced
    if kept is not None:  # a reconcile, writing batch after batch (see `sync_threads_kept`)
        waits = [kept.submit(sync, part).result for part in parts]
    else:
        for part in parts:
            thread = threading.Thread(target=sync, args=(part,))
            thread.start()
            waits.append(thread.join)
    try:
        for callback in first:
            callback()
        if not parts:
            sync(files)
    finally:
        for wait in waits:
            wait()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if not written:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[written:]


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


TEMP_PREFIX, TEMP_SUFFIX = ".vault-tools-", ".tmp"  # the names write_atomic gives its temp files
STALE_TEMP_SECONDS = 60


def remove_stale_temps(paths: Iterable[Path], now: float) -> list[Path]:
    """Remove our temp files (by name) older than a minute: a write killed before it replaced its
    note leaves one behind. A younger one may belong to a write still going on. Returns those removed."""
    removed = []
    for path in paths:
        if not (path.name.startswith(TEMP_PREFIX) and path.name.endswith(TEMP_SUFFIX)):
            continue
        try:
            if now - path.lstat().st_mtime > STALE_TEMP_SECONDS:
                path.unlink()
                removed.append(path)
        except OSError:
            pass  # gone already, or not ours to remove: the next write tries again
    return removed


def write_note(note: Note, text: str, parsed: Note | None = None) -> bytes:
    """Write `text` back with the note's own BOM and line endings; returns the bytes written. `parsed` is
    `text` parsed already (by `edited`), if the caller has it."""
    data = encode(text, bom=note.bom)
    write_atomic(note.path, data, _parse_of(note, text, parsed))
    return data


def _parse_of(note: Note, text: str, parsed: Note | None) -> Note | None:
    """`parsed` when it is `text` as written back to `note` (same text, same BOM), else None."""
    return parsed if parsed is not None and parsed.text == text and parsed.bom == note.bom else None


def create_note(path: Path, text: str) -> bytes:
    """Create a new note; never replaces an existing file."""
    if path.exists():
        raise NoteError("already exists; not overwriting it", path=str(path))
    data = encode(text, bom=False)
    write_atomic(path, data)
    return data
