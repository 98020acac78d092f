"""Editing a note's properties without reformatting the owner's YAML: only the lines of the keys that change are
replaced, with values rendered by ruamel.yaml; the result is parsed again and refused if any other value moved.
"""
from __future__ import annotations

import datetime as dt
import io
import json
import re
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .errors import NoteError
from .notes import BOM, Note, parse_text

if TYPE_CHECKING:
    pass


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
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString  # ruamel.yaml only when a value is written

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


# docs/design/0010-frontmatter-read-and-written-by-vault-tools.md
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
    # New keys go before YAML's document end marker, if the properties end with one: after it is not YAML.
    last = max((at for at, line in enumerate(lines) if line.strip()), default=-1)
    end = last if last >= 0 and lines[last].rstrip("\r\n") == "..." else len(lines)
    frontmatter = "".join(lines[:end]) + "".join(additions) + "".join(lines[end:])
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


def sections(*parts: tuple[str, str | None]) -> str:
    """A note body of `## Heading` sections, leaving out those with no text."""
    return "".join(f"## {heading}\n\n{text.strip()}\n\n" for heading, text in parts if text).rstrip("\n") + "\n"
