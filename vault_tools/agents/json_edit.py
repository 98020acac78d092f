"""Editing a JSON settings file in place: only the members and elements that differ are written, laid out as
their neighbours are, so that `init --agent --remove` gives the owner's file back byte for byte.

The settings are changed as data (`with_hooks`, `without_mcp`, ...); `edited_json` then writes the change
into the owner's text touching only the members and elements that differ, laid out as their neighbours
are (indentation, line endings). An item appended after the last one takes over the whitespace before
the closing bracket, and taking it out gives that whitespace back, so `--remove` returns the owner's file
byte for byte. Where that would take state we do not keep, the bytes differ and the data does not: a
container of the owner's that was empty and that we added to (`"hooks": {}`) goes when it is empty
again, as `without_hooks` and `without_mcp` take out what they leave empty; a file left holding nothing
(`{}`, or blank) is deleted, as one that did not exist before is; and a file with a key written twice is
written anew (two-space indentation), since which of the two to edit is not clear.
"""
from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_DECODER = json.JSONDecoder()


def _skip(text: str, at: int, blanks: str = " \t\n\r") -> int:
    """Past the whitespace at `at`."""
    while at < len(text) and text[at] in blanks:
        at += 1
    return at


class _NotEditable(ValueError):
    """The text cannot be edited in place (a repeated key): it is written anew instead."""


@dataclass
class _Value:
    """Where a JSON value is in the text; an object's members or an array's elements, None for a scalar."""

    start: int
    end: int
    items: list[_Item] | None = None
    is_object: bool = False


@dataclass
class _Item:
    pre: str  # the whitespace before it, after `{`, `[` or `,`
    head: str  # an object member's `"key": ` as written; empty in an array
    key: str | None
    value: _Value
    post: str  # the whitespace after it, before `,` or the closing bracket


def _parse(text: str, at: int) -> _Value:
    """The value starting at `at` in `text`, which `json.loads` has read already."""
    opening = text[at]
    if opening not in "{[":
        end = _DECODER.raw_decode(text, at)[1]
        return _Value(at, end)
    closing = "}" if opening == "{" else "]"
    items: list[_Item] = []
    index = at + 1
    while True:
        start = _skip(text, index)
        if text[start] == closing and not items:
            return _Value(at, start + 1, items, opening == "{")
        key = None
        value_at = start
        if opening == "{":
            key, key_end = _DECODER.raw_decode(text, start)
            colon = _skip(text, key_end)
            value_at = _skip(text, colon + 1)
        value = _parse(text, value_at)
        after = _skip(text, value.end)
        items.append(_Item(text[index:start], text[start:value_at], key, value, text[value.end:after]))
        if text[after] == closing:
            return _Value(at, after + 1, items, opening == "{")
        index = after + 1  # past the comma


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


@dataclass(frozen=True)
class _Layout:
    eol: str
    unit: str | None  # one level of indentation; None: the file is on one line

    def render(self, value: Any, indent: str | None) -> str:
        """`value` as JSON, its inner lines indented from `indent` (None: on one line)."""
        if indent is None or self.unit is None:
            return json.dumps(value, ensure_ascii=False)
        return json.dumps(value, indent=self.unit, ensure_ascii=False).replace("\n", self.eol + indent)

    def maker(self, value: Any, head: str = "") -> Callable[[str | None], str]:
        """What gives a new item's text (`head`: an object member's `"key": `) from its line's indentation."""
        return lambda indent: head + self.render(value, indent)


def _layout(text: str) -> _Layout:
    if "\n" not in text.strip():
        return _Layout(eol_of(text), None)
    indents = re.findall(r"\n([ \t]+)\S", text)
    if not indents:
        unit = "  "
    elif any("\t" in indent for indent in indents):
        unit = "\t"
    else:
        unit = " " * min(len(indent) for indent in indents)
    return _Layout(eol_of(text), unit)


def _line_indent(text: str, at: int) -> str:
    start = text.rfind("\n", 0, at) + 1
    return text[start:_skip(text, start, " \t")]


Row = list[str]  # an item as it will be written: [whitespace before, text, whitespace after]


def _delete(rows: list[Row], index: int) -> None:
    """Take an item out with the comma and whitespace that `_insert` added with it."""
    if len(rows) == 1:
        rows.clear()
    elif index == len(rows) - 1:
        rows[index - 1][2] = rows[index][2]
        del rows[index]
    elif index == 0:
        rows[1][0] = rows[0][0]
        del rows[0]
    else:
        del rows[index]


def _insert(rows: list[Row], index: int, make: Callable[[str | None], str], outer: str, layout: _Layout) -> None:
    """Put a new item at `index` (`len(rows)`: after the last), laid out as its neighbours are; `make`
    gives its text from the indentation of its line (None: on one line). `outer`: the container's."""
    if not rows:
        if layout.unit is None:
            rows.append(["", make(None), ""])
        else:
            inner = outer + layout.unit
            rows.append([layout.eol + inner, make(inner), layout.eol + outer])
        return
    if index == len(rows):
        last = rows[-1]
        pre = last[0] if "\n" in last[0] or len(rows) > 1 else " "
        rows.append([pre, "", last[2]])
        last[2] = ""
    else:
        rows.insert(index, [rows[index][0], "", ""])
    pre = rows[index][0]
    rows[index][1] = make(pre.rsplit("\n", 1)[1] if "\n" in pre else None)


def _rewrite(text: str, node: _Value, new: Any, layout: _Layout) -> str:
    """The text of `node` changed to hold `new`, keeping what does not change as it is written."""
    written = text[node.start:node.end]
    if _canonical(json.loads(written)) == _canonical(new):
        return written
    outer = _line_indent(text, node.start)
    if node.items is None or not isinstance(new, dict if node.is_object else list):
        return layout.render(new, outer)
    rows: list[Row] = [[item.pre, item.head + text[item.value.start:item.value.end], item.post] for item in node.items]
    if isinstance(new, dict):
        keys = [item.key for item in node.items]
        if len(set(keys)) != len(keys):
            raise _NotEditable("a key is repeated")
        for index in reversed(range(len(node.items))):
            item = node.items[index]
            if item.key not in new:
                _delete(rows, index)
            else:
                rows[index][1] = item.head + _rewrite(text, item.value, new[item.key], layout)
        for key, value in new.items():
            if key not in keys:
                _insert(rows, len(rows), layout.maker(value, json.dumps(key, ensure_ascii=False) + ": "), outer, layout)
    else:
        old = [_canonical(json.loads(text[item.value.start:item.value.end])) for item in node.items]
        matcher = difflib.SequenceMatcher(None, old, [_canonical(value) for value in new], autojunk=False)
        for tag, i1, i2, j1, j2 in reversed(matcher.get_opcodes()):
            if tag == "equal":
                continue
            if tag == "replace" and i2 - i1 == j2 - j1:
                for offset in range(i2 - i1):
                    rows[i1 + offset][1] = _rewrite(text, node.items[i1 + offset].value, new[j1 + offset], layout)
                continue
            for index in reversed(range(i1, i2)):
                _delete(rows, index)
            for offset, value in enumerate(new[j1:j2]):
                _insert(rows, i1 + offset, layout.maker(value), outer, layout)
    opening, closing = written[0], written[-1]
    return opening + ",".join("".join(row) for row in rows) + closing


def edited_json(text: str, data: dict[str, Any]) -> str:
    """`text`, a JSON object, changed to hold `data`, touching only what differs (see above). Text that
    cannot be edited so (a repeated key) is written anew: the owner's keys and values are kept, but not
    their layout, so `--remove` cannot give those bytes back."""
    layout = _layout(text)
    start = _skip(text, 0)
    if start < len(text):
        try:
            root = _parse(text, start)
            if not root.items:  # `{}`: nothing of the owner's to keep (and `--remove` deletes a file left so)
                return json_text(data).replace("\n", layout.eol)
            edited = text[:start] + _rewrite(text, root, data, layout) + text[root.end:]
            if _canonical(json.loads(edited)) == _canonical(data):
                return edited
        except (ValueError, IndexError):
            pass
    return json_text(data).replace("\n", layout.eol)


def eol_of(text: str) -> str:
    """A file's own line ending: CRLF when most of its line endings are CRLF, else LF (and LF for a new
    file). What we add is written in it, so in a file that has our part it only gets more of its own."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf > text.count("\n") - crlf else "\n"


def json_text(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
