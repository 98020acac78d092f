"""A note's body as an agent reads it: Obsidian comments left out, sections by heading, cut to a size out loud.

Pure: text in, text out. The body is read as Markdown tokens (markdown-it-py), so a `%%` or a `#` inside
code is text, never a comment or a heading.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

SHOW_LIMIT = 4_000  # characters of a body `show` prints before cutting (all of it with --all)
LOOKUP_FULL_LIMIT = 2_000  # characters of each ruling's body `lookup --full` prints
RULING_PREVIEW_LINES = 3  # lines of the `## Ruling` section plain `lookup` prints under a summary
PREVIEW_LINE_CHARS = 200

_COMMENT = re.compile(r"%%.*?%%", re.S)

# The line the ADR importer writes under an imported decision's summary (importers/adr.py), followed by what the
# ADR had above its first heading (a `Date:` line, MADR 2's bullets); and the headings ADR formats give the
# decision itself: MADR's "Decision Outcome", Nygard's and adr-tools' "Decision" (some sets: "Decisions",
# "Proposal").
IMPORT_NOTE = "_Imported from `{source}` ({format}; status: {status})._"
_IMPORT_NOTE = re.compile(r"^_Imported from `.*` \(.*\)\._[ \t]*$")
ADR_DECISION_HEADINGS = ("decision outcome", "decision", "decisions", "proposal")
_SUB_HEADING = re.compile(r"^[ ]{0,3}#{1,6}(?:[ \t]|$)", re.M)
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)


@functools.cache
def _markdown() -> object:
    from markdown_it import MarkdownIt  # markdown-it only when a body is shown

    return MarkdownIt("commonmark")


def _tokens(text: str) -> list[object]:
    return _markdown().parse(text)  # type: ignore[attr-defined, no-any-return]


def _code_lines(text: str) -> set[int]:
    lines: set[int] = set()
    for token in _tokens(text):
        if token.type in ("fence", "code_block") and token.map:  # type: ignore[attr-defined]
            start, end = token.map  # type: ignore[attr-defined]
            lines.update(range(start, end))
    return lines


def without_comments(body: str) -> str:
    """The body less its Obsidian comments (`%%...%%`, inline or over several lines), code left as written."""
    if "%%" not in body:
        return body
    code = _code_lines(body)
    lines = body.split("\n")
    out: list[str] = []
    prose: list[str] = []

    def flush() -> None:
        if prose:
            out.append(_strip_comments("\n".join(prose)))
            prose.clear()

    for number, line in enumerate(lines):
        if number in code:
            flush()
            out.append(line)
        else:
            prose.append(line)
    flush()
    return "\n".join(out)


def blank_comments(body: str) -> str:
    """The body with its Obsidian comments (`%%...%%`) blanked out, code left as written: the same length, every
    line where it was (for readers that point at lines)."""
    if "%%" not in body:
        return body
    code = _code_lines(body)
    lines = body.split("\n")
    prose = "\n".join("\x01" * len(line) if number in code else line for number, line in enumerate(lines))
    spans = [(m.start(), m.end()) for m in _INLINE_CODE.finditer(prose)]
    blanked = list(body)
    for match in _COMMENT.finditer(_INLINE_CODE.sub(lambda m: "\x01" * len(m.group(0)), prose)):
        if not any(start <= match.start() < end for start, end in spans):
            for index in range(match.start(), match.end()):
                if blanked[index] != "\n":
                    blanked[index] = " "
    return "".join(blanked)


def _strip_comments(text: str) -> str:
    """`text` less its comments, inline code left as written, and no hole where a block comment was. What is
    code and what is a comment is found in a copy with each code span blanked in place (`masked`): whatever
    characters the text holds, the two line up."""
    masked = _INLINE_CODE.sub(lambda match: "\x01" * len(match.group(0)), text)
    kept, kept_masked, start = [], [], 0
    for comment in _COMMENT.finditer(masked):
        kept.append(text[start:comment.start()])
        kept_masked.append(masked[start:comment.start()])
        start = comment.end()
    text, masked = "".join(kept) + text[start:], "".join(kept_masked) + masked[start:]
    cleaned, start = [], 0
    for blank in _BLANK_LINES.finditer(masked):  # outside code
        cleaned += [text[start:blank.start()], "\n\n"]
        start = blank.end()
    return "".join(cleaned) + text[start:]


_BLANK_LINES = re.compile(r"\n{3,}")


# A line that makes a body need CommonMark's reading to find its headings: a fence, an indented or tabbed line
# (code, or a list item's continuation), HTML, a setext underline (or a thematic break that could be one), a list
# item opening with a heading, a heading holding a backslash escape; and any of these, or a heading, in a block
# quote (an Obsidian callout is one: its plain lines need no parser). A body with none of them has
# its headings where its ATX heading lines are (tests/test_show_body.py checks it against markdown-it).
_RISKY = r"(?: {0,3}(?:```|~~~|<|=+[ \t]*$|-+[ \t]*$|(?:[-+*]|\d{1,9}[.)])[ \t]+#)| {4}|\t)"
_NEEDS_COMMONMARK = re.compile(rf"^{_RISKY}|^(?: {{0,3}}>[ ]?)+(?:{_RISKY}| {{0,3}}#)|^ {{0,3}}#{{1,6}}[ \t].*\\", re.M)
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")


def _plain_headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line, level, text) of each ATX heading of a body `_NEEDS_COMMONMARK` finds nothing in."""
    found = []
    for number, line in enumerate(lines):
        if "#" in line and (match := _ATX.match(line)):
            text = (match.group(2) or "").strip()
            found.append((number, len(match.group(1)), "" if text.strip("#") == "" else text))
    return found


def _markdown_headings(body: str) -> list[tuple[int, int, str]]:
    """(line, level, text) of each heading as CommonMark reads the body."""
    headings = []
    tokens = _tokens(body)
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and token.map:  # type: ignore[attr-defined]
            level = int(token.tag[1:])  # type: ignore[attr-defined]
            headings.append((token.map[0], level, tokens[index + 1].content.strip()))  # type: ignore[attr-defined]
    return headings


def sections(body: str) -> dict[str, str]:
    """The text under each heading, to the next heading of the same or a higher level; headings in code do not count.
    A heading met twice keeps its first section. Markdown is parsed only where a plain reading could be wrong: the
    parser's import alone is a third of what `show` takes on a large vault."""
    lines = body.split("\n")
    headings = _markdown_headings(body) if _NEEDS_COMMONMARK.search(body) else _plain_headings(lines)
    found: dict[str, str] = {}
    for position, (line, level, text) in enumerate(headings):
        end = next((other for other, other_level, _ in headings[position + 1:] if other_level <= level), len(lines))
        found.setdefault(text, "\n".join(lines[line + 1:end]).strip("\n"))
    return found


def above_import_note(section: str) -> str | None:
    """Of a section of an imported ADR (its `## Ruling`, or `## Question` when it is open), what is above the
    importer's line: its summary. None when the section has no such line (no import, or the owner changed it)."""
    if "_Imported from `" not in section:
        return None
    lines = section.split("\n")
    return next(("\n".join(lines[:at]).strip("\n") for at, line in enumerate(lines) if _IMPORT_NOTE.match(line)), None)


def adr_decision(found: dict[str, str]) -> str:
    """An imported ADR's own decision section (of its `sections`), to its first sub-heading; "" when none."""
    headings = {heading.lower(): text for heading, text in reversed(found.items())}  # the first of a name
    decided = next((headings[heading] for heading in ADR_DECISION_HEADINGS if headings.get(heading)), "")
    return _SUB_HEADING.split(decided, maxsplit=1)[0].strip("\n")


def section_text(found: dict[str, str], name: str) -> str:
    """A decision's `## Ruling` or `## Question` (of its `sections`) as it is shown. An imported ADR's holds its
    title, the importer's line and the ADR's preamble: it is shown as the title and its `adr_decision`."""
    section = found.get(name, "")
    above = above_import_note(section)
    if above is None:
        return section
    decided = adr_decision(found)
    return f"{above}\n\n{decided}" if decided else above


_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\n]*\)")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def inline_plain(text: str) -> str:
    """Markdown read as text: a link as its text, an image as its alt text, a backslash escape as the character."""
    return _ESCAPE.sub(r"\1", _LINK.sub(r"\1", text))


@dataclass(frozen=True)
class BodyView:
    text: str  # what is shown, the cut marker included
    sections: dict[str, str] = field(default_factory=dict)  # heading -> text, of the whole body
    left_out: int = 0  # characters not shown


def view(body: str, limit: int | None, *, how_to_see_all: str = "") -> BodyView:
    """The body an agent is shown: comments out, trailing space trimmed, cut at `limit` characters (None: never)
    on a line boundary where one is near, with a line saying how much was left out and how to see it."""
    text = without_comments(body.replace("\r\n", "\n")).strip("\n")
    whole = sections(text)
    if limit is None or len(text) <= limit:
        return BodyView(text, whole)
    cut = text.rfind("\n", 0, limit)
    if cut < limit // 2:
        cut = limit
    left_out = len(text) - cut
    marker = f"[… {left_out:,} more characters not shown{': ' + how_to_see_all if how_to_see_all else ''}]"
    return BodyView(text[:cut].rstrip() + "\n" + marker, whole, left_out)


def preview(section: str, lines: int = RULING_PREVIEW_LINES, width: int = PREVIEW_LINE_CHARS, *,
            say_more: bool = True) -> list[str]:
    """The first non-empty lines of a section, each cut at `width` characters with an ellipsis; a last line
    says when more lines follow (unless `say_more` is False)."""
    found = [line.rstrip() for line in without_comments(section).split("\n") if line.strip()]
    shown = [line if len(line) <= width else line[:width - 1] + "…" for line in found[:lines]]
    if len(found) > lines and say_more:
        shown.append(f"(… {len(found) - lines} more line{'s' if len(found) - lines > 1 else ''})")
    return shown
