"""Decisions written in passing in any note: a list item or paragraph tagged `#decision`, a
`> [!decision]` callout, or a Dataview inline field `decision:: ...` (on a line of its own, or
`[decision:: ...]` / `(decision:: ...)` anywhere). Parsed with markdown-it-py tokens, so nothing
inside code (fenced, indented or inline) counts. Pure: text in, candidates out."""
from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from ..bodies import blank_comments
from ..notes import split
from . import kebab, one_line

TAG = re.compile(r"(?<![\w/#&])#decision(?:/[\w/-]*)?(?![\w-])", re.I)
OTHER_TAG = re.compile(r"(?<![\w/#&])#([\w][\w/-]*)", re.U)
CALLOUT = re.compile(r"^\[!decision\][+-]?[ \t]*(.*)$", re.I)
# A `Key:: Value` line: markup before the key is skipped, as Dataview does (`**Decision**:: ...`).
FULL_LINE_FIELD = re.compile(r"^[^\w]*?[*_~`]*decision[*_~`]*[ \t]*::(.*)$", re.I)
BRACKET_FIELD = re.compile(r"[\[(][ \t]*decision[ \t]*::", re.I)
BLOCK_ID = re.compile(r"[ \t]\^([A-Za-z0-9-]+)[ \t]*$")
OWN_LINE_BLOCK_ID = re.compile(r"^\^([A-Za-z0-9-]+)[ \t]*$")
CHECKBOX = re.compile(r"^\[[ xX/-]\][ \t]+")
# The text says a decision was made (not only that one is needed): it starts with one of these words.
SAYS_RULED = re.compile(r"^(?:we\s+)?(?:decided|ruled|ruling|agreed|approved|settled|final)\b", re.I)
CODE = "\x00"
_WORD = re.compile("decision", re.I)  # matched as the markers match it (re.I, not str.casefold)


@dataclass(frozen=True)
class Candidate:
    path: str  # vault-relative
    line: int  # first line of the block in the file (1-based)
    end_line: int  # last line of the block in the file (1-based)
    kind: str  # tag, callout, field, or table (a cell of a table row: no block id can go there)
    text: str  # the decision as written, on one line, its marker taken out
    heading: str | None  # the heading it is written under
    block_id: str | None  # its Obsidian block id, if it has one
    tags: tuple[str, ...]  # its other tags
    says_ruled: bool

    @property
    def key(self) -> str:
        """Its identity across runs: the words written, however the note is edited around them."""
        return "harvest:" + hashlib.sha256(" ".join(self.text.lower().split()).encode("utf-8")).hexdigest()[:16]

    @property
    def topics(self) -> tuple[str, ...]:
        found = [t for t in (kebab(tag.replace("/", "-")) for tag in self.tags) if t]
        if not found:
            title = self.path.rsplit("/", 1)[-1].removesuffix(".md")
            found = [kebab(self.heading or "") or kebab(title) or "decision"]
        return tuple(dict.fromkeys(found))


@functools.cache
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark").enable(["table", "strikethrough"])


def _plain(children: list[Token] | None) -> tuple[str, str]:
    """(text, masked): the inline text with code spans kept, and the same with them blanked out."""
    text: list[str] = []
    masked: list[str] = []
    for child in children or []:
        if child.type == "code_inline":
            shown = f"`{child.content}`"
            text.append(shown)
            masked.append(CODE * len(shown))
        elif child.type in ("softbreak", "hardbreak"):
            text.append("\n")
            masked.append("\n")
        elif child.type in ("text", "html_inline"):
            text.append(child.content)
            masked.append(child.content)
        elif child.children:
            inner, inner_masked = _plain(child.children)
            text.append(inner)
            masked.append(inner_masked)
    return "".join(text), "".join(masked)


def _bracket_fields(text: str, masked: str) -> list[tuple[int, int, str]]:
    """`[decision:: value]` and `(decision:: value)`: (start, end, value), brackets nested as Dataview scans them."""
    found = []
    for match in BRACKET_FIELD.finditer(masked):
        opening = masked[match.start()]
        closing = "]" if opening == "[" else ")"
        depth = 0
        for index in range(match.end(), len(masked)):
            char = masked[index]
            if char == opening:
                depth += 1
            elif char == closing:
                if depth == 0:
                    found.append((match.start(), index + 1, text[match.end():index].strip()))
                    break
                depth -= 1
    return found


def _clean(text: str) -> str:
    text = TAG.sub(" ", text)
    text = BLOCK_ID.sub("", text.rstrip())
    text = CHECKBOX.sub("", text.strip())
    text = re.sub(r"^\[![\w-]+\][+-]?[ \t]*", "", text)  # a callout of another type around it
    return one_line(text).strip(" -–—:")


def find(text: str, path: str) -> list[Candidate]:
    """Every decision written in passing in one note's text (frontmatter aside)."""
    frontmatter, body, offset = split(text)
    if not _WORD.search(body):
        return []  # every marker spells the word: most notes are passed over without being parsed
    body = blank_comments(body)  # what an Obsidian comment holds is not shown, and proposes nothing
    first_line = text[:offset].count("\n") + 1 if frontmatter is not None else 1
    lines = body.split("\n")
    tokens = _parser().parse(body)
    found: list[Candidate] = []
    heading: str | None = None
    callout_until = -1  # token index where the current callout ends: nothing inside it counts twice

    def block_id_after(end: int) -> str | None:
        """An id on its own line after a quote or callout (Obsidian's form for such blocks)."""
        for line in lines[end:end + 2]:
            match = OWN_LINE_BLOCK_ID.match(line.strip())
            if match:
                return match.group(1)
            if line.strip():
                return None
        return None

    def add(kind: str, start: int, end: int, said: str, masked_said: str, says_ruled: bool | None = None,
            block_id: str | None = None) -> None:
        cleaned = _clean(said)
        if not cleaned:
            return
        tags = tuple(dict.fromkeys(m.group(1) for m in OTHER_TAG.finditer(masked_said)
                                   if not m.group(1).lower().startswith("decision") and not m.group(1).isdigit()))
        last = lines[end - 1] if 0 < end <= len(lines) else ""
        own_id = BLOCK_ID.search(last)
        ruled = bool(SAYS_RULED.match(cleaned)) if says_ruled is None else says_ruled
        found.append(Candidate(path, first_line + start, first_line + end - 1, kind, cleaned, heading,
                               block_id or (own_id.group(1) if own_id else None), tags, ruled))

    for index, token in enumerate(tokens):
        if token.type == "heading_open" and index + 1 < len(tokens):
            heading = one_line(tokens[index + 1].content) or None
            continue
        if token.type == "blockquote_open" and index > callout_until:
            inline = tokens[index + 2] if index + 2 < len(tokens) and tokens[index + 1].type == "paragraph_open" else None
            text_, masked = _plain(inline.children) if inline is not None else ("", "")
            first, _, rest = masked.partition("\n")
            match = CALLOUT.match(first)
            if match and token.map:
                close = _closing(tokens, index)
                callout_until = close
                title = text_[len(first) - len(match.group(1)):len(first)].strip()
                parts = [title] if title else []
                parts.append(text_[len(first) + 1:] if rest else "")
                for inner in tokens[index + 3:close]:
                    if inner.type == "inline" and inner is not inline:
                        parts.append(_plain(inner.children)[0])
                said = " ".join(p for p in parts if p.strip())
                says = bool(SAYS_RULED.match(title)) or bool(SAYS_RULED.match(_clean(said)))
                add("callout", token.map[0], token.map[1], said, said, says, block_id_after(token.map[1]))
            continue
        if token.type != "inline" or index <= callout_until or not token.map:
            continue
        if tokens[index - 1].type not in ("paragraph_open", "td_open", "th_open"):
            continue  # a heading is not where a decision is noted
        text_, masked = _plain(token.children)
        start, end = token.map
        _marked_lines(add, start, end, text_, masked, in_cell=tokens[index - 1].type != "paragraph_open")
    return found


def _marked_lines(add: Any, start: int, end: int, text: str, masked: str, *, in_cell: bool) -> None:
    """The decisions one paragraph (or table cell) marks: one per marked line, whatever marks it (a field in
    brackets, a `decision::` line, a tag), in any mix. A paragraph whose one tagged line is its last line is
    one decision, the whole paragraph."""
    text_lines, masked_lines = text.split("\n"), masked.split("\n")
    tagged = [number for number, line in enumerate(masked_lines)
              if TAG.search(line) and not _bracket_fields(text_lines[number], line) and not FULL_LINE_FIELD.match(line)]
    whole = len(tagged) == 1 and tagged[0] == len(masked_lines) - 1 and not in_cell
    for number, (line_text, line_masked) in enumerate(zip(text_lines, masked_lines, strict=True)):
        first = start + number
        fields = _bracket_fields(line_text, line_masked)
        for field_start, field_end, value in fields:
            add("table" if in_cell else "field", first, first + 1, value, line_masked[field_start:field_end])
        if fields:
            continue
        match = FULL_LINE_FIELD.match(line_masked)
        if match:
            add("table" if in_cell else "field", first, first + 1, line_text[match.start(1):], match.group(1))
        elif number in tagged and whole:
            add("tag", start, end, text, masked)
        elif number in tagged:
            add("table" if in_cell else "tag", first, first + 1, line_text, line_masked)


def _closing(tokens: list[Token], index: int) -> int:
    depth = 0
    for position in range(index, len(tokens)):
        kind = tokens[position].type
        if kind == "blockquote_open":
            depth += 1
        elif kind == "blockquote_close":
            depth -= 1
            if depth == 0:
                return position
    return len(tokens) - 1


def link_target(candidate: Candidate, block_id: str | None = None) -> str:
    """A wikilink to where the decision was written: its block, else its heading, else the note."""
    note = candidate.path.removesuffix(".md")
    block = block_id or candidate.block_id
    if block:
        return f"[[{note}#^{block}]]"
    if candidate.heading and not re.search(r"[#|^\[\]:%]", candidate.heading):
        return f"[[{note}#{candidate.heading}]]"
    return f"[[{note}]]"


def with_block_id(text: str, candidate: Candidate, block_id: str) -> str:
    """The note's text with `^block_id` added where Obsidian reads it: at the end of a paragraph or
    list item, or on a line of its own after a callout. Every other byte is kept."""
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.split("\n")
    if candidate.kind == "callout":
        at = candidate.end_line  # the line after the callout (0-based index)
        insert = [f"^{block_id}" + ("\r" if newline == "\r\n" else "")]
        if at < len(lines) and lines[at].strip():
            insert.append("\r" if newline == "\r\n" else "")
        if at > 0 and lines[at - 1].strip():
            insert.insert(0, "\r" if newline == "\r\n" else "")
        lines[at:at] = insert
    else:
        last = candidate.end_line - 1
        line = lines[last]
        ending = "\r" if line.endswith("\r") else ""
        lines[last] = line.removesuffix("\r").rstrip(" \t") + f" ^{block_id}" + ending
    return "\n".join(lines)
