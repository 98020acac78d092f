"""Architecture decision records: adr-tools, MADR 2, MADR 3/4 and log4brains (see docs/import.md).

Every `.md` file under DIR is read; a file is an ADR when its name is numbered (`0007-slug.md`,
`007-slug.md`) or dated (`20240117-slug.md`, log4brains). Its format is told by what it carries:
YAML frontmatter with `status` (MADR 3 with `deciders`, MADR 4 with `decision-makers`), a
`## Status` section (adr-tools), or `Status:` bullets under the title (MADR 2; log4brains when the
name is dated). Foreign files are read with python-frontmatter and never written.
"""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

import frontmatter
import yaml

from ..bodies import IMPORT_NOTE
from . import (
    MIN_TEXT,
    OPEN,
    RETRACTED,
    RULED,
    SUPERSEDED,
    WITHDRAWN,
    Parsed,
    Record,
    Review,
    Skipped,
    first_sentence,
    kebab,
    one_line,
)

NUMBERED = re.compile(r"^(\d{3,4})[-_](.+)\.md$", re.I)  # `0007-slug.md`, and `0031_slug.md` as some sets name them
DATED = re.compile(r"^(\d{4})(\d{2})(\d{2})-(.+)\.md$")
TEMPLATE_FOLDERS = {"template", "templates"}
SKIPPED_FOLDERS = {"node_modules", ".git"}

_H1 = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.M)
_H2 = re.compile(r"^##[ \t]+(.+?)[ \t#]*$", re.M)
_NUMBER_PREFIX = re.compile(r"^(?:ADR[- ]?)?\d+[.:)]?\s+", re.I)  # `7. `, `ADR-7: `, `7) `
_ATTRIBUTES = re.compile(r"\s*\{[#.][^{}]*\}\s*$")  # a heading's `{#adr_0001}` (Pandoc / kramdown attributes)
_BULLET = re.compile(r"^[ \t]*[*+-][ \t]+(?:\*\*)?([A-Za-z][A-Za-z -]*?)(?:\*\*)?[ \t]*:(?:\*\*)?[ \t]*(.*)$")
_DATE_LINE = re.compile(r"^Date:\s*(\S+)", re.M | re.I)
_LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")
_SUPERSEDED_BY = re.compile(r"\bsuper[sc]eded\s+by\b", re.I)
_SUPERSEDES = re.compile(r"\bsuper[sc]edes\b", re.I)
_PARTLY = re.compile(r"\b(?:in\s+part|partly|partially)\s+super[sc]ed", re.I)
_ADR_NUMBER = re.compile(r"(?:ADR[- #]*|#|\[)0*(\d{1,4})\b", re.I)
_ANY_NUMBER = re.compile(r"(?<![\w.-])(?:ADR[- #]*|#)?0*(\d{1,4})(?![\w.-]*\d)", re.I)  # `3`, `0003`, `ADR 3`, `#3`
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{2,4}")

# Status words, lower-cased, first match wins (checked in this order).
STATUS_WORDS: tuple[tuple[str, str], ...] = (
    ("partly superseded", RULED), ("partially superseded", RULED), ("in part superseded", RULED),
    ("superseded", SUPERSEDED), ("superceded", SUPERSEDED),
    ("accepted", RULED), ("approved", RULED), ("adopted", RULED), ("decided", RULED), ("done", RULED),
    ("rejected", RULED), ("declined", RULED),
    ("deprecated", RETRACTED), ("obsolete", RETRACTED),
    ("withdrawn", WITHDRAWN), ("abandoned", WITHDRAWN),
    ("proposed", OPEN), ("draft", OPEN), ("pending", OPEN), ("incomplete", OPEN), ("on hold", OPEN),
    ("in progress", OPEN), ("under review", OPEN), ("open", OPEN),
)


def _status_of(text: str) -> tuple[str, str] | None:
    """(lifecycle status, the word matched) for an ADR status line, emoji and links aside."""
    words = " ".join(re.sub(r"[^a-z ]+", " ", _LINK.sub(r"\1", text).lower()).split())
    for word, status in STATUS_WORDS:
        if words.startswith(word):
            return status, word
    return None


class _Adr:
    """What one file says, before links between files are resolved."""

    def __init__(self, rel: str, fmt: str, number: str, title: str, status_text: str | None, content: str,
                 metadata: dict[str, Any], bullets: dict[str, str]) -> None:
        self.rel, self.fmt, self.number, self.title = rel, fmt, number, title
        self.status_text, self.content, self.metadata, self.bullets = status_text, content, metadata, bullets
        self.superseded_by: list[str] = []  # link targets or ADR numbers, as written
        self.supersedes: list[str] = []
        self.partly: list[str] = []
        self.record: Record | None = None

    @property
    def folder(self) -> str:
        return str(PurePosixPath(self.rel).parent)


def iter_files(root: Path) -> Iterable[Path]:
    for path in sorted(root.rglob("*.md")):
        if any(part.startswith(".") or part in SKIPPED_FOLDERS for part in path.relative_to(root).parts[:-1]):
            continue
        if path.is_file():
            yield path


def parse(root: Path, now: dt.datetime | None = None) -> Parsed:
    parsed = Parsed("adr")
    base = root.resolve().name or "adr"
    adrs: list[_Adr] = []
    for path in iter_files(root):
        parsed.files_read += 1
        rel = path.relative_to(root).as_posix()
        adr = _read(path, rel, parsed)
        if adr is not None:
            adrs.append(adr)
    common = _common_folder([adr.folder for adr in adrs])
    for adr in adrs:
        record = _record(adr, base, common, parsed)
        if record is not None:
            adr.record = record
            parsed.records.append(record)
    _chain(parsed, _supersession_edges(adrs, parsed))
    _partly_without_target(adrs, parsed)
    parsed.records = _ordered(parsed.records)
    return parsed


def _supersession_edges(adrs: list[_Adr], parsed: Parsed) -> dict[str, set[str]]:
    """Successor key -> predecessor keys, from what each ADR says it supersedes or was superseded by; a
    reference to no ADR found is a remark, one that supersedes in part a question to review."""
    by_path = {adr.rel.casefold(): adr for adr in adrs}
    by_number: dict[tuple[str, int], _Adr] = {}
    for adr in adrs:
        by_number.setdefault((adr.folder, int(adr.number)), adr)

    def resolve(adr: _Adr, ref: str) -> _Adr | None:
        if ref.endswith(".md") or "/" in ref:
            target = PurePosixPath(adr.folder) / ref.split("#", 1)[0]
            parts: list[str] = []
            for part in target.parts:
                if part == "..":
                    if parts:
                        parts.pop()
                elif part != ".":
                    parts.append(part)
            found = by_path.get("/".join(parts).casefold())
            if found is not None:
                return found
            name = NUMBERED.match(PurePosixPath(ref).name) or None
            return by_number.get((adr.folder, int(name.group(1)))) if name else None
        number = _ADR_NUMBER.search(ref)
        return by_number.get((adr.folder, int(number.group(1)))) if number else None

    edges: dict[str, set[str]] = {}
    for adr in adrs:
        if adr.record is None:
            continue
        for ref in adr.superseded_by:
            target = resolve(adr, ref)
            if target is None or target.record is None:
                adr.record.remarks.append(f"says it was superseded by {ref}, which was not found among the ADRs")
                continue
            edges.setdefault(target.record.key, set()).add(adr.record.key)
        for ref in adr.supersedes:
            target = resolve(adr, ref)
            if target is None or target.record is None:
                adr.record.remarks.append(f"says it supersedes {ref}, which was not found among the ADRs")
                continue
            edges.setdefault(adr.record.key, set()).add(target.record.key)
        for ref in adr.partly:
            target = resolve(adr, ref)
            if target is None or target.record is None or target is adr:
                continue
            review_key = f"review:{adr.record.key}:partly:{target.record.key}"
            if any(r.key == review_key for r in parsed.reviews):
                continue
            parsed.reviews.append(Review(
                key=review_key, record=adr.record.key, others=(target.record.key,),
                text=f"{adr.record.label} says it in part supersedes {target.record.label} ({target.title}): "
                     f"which parts of {target.record.label} still stand?"))
    return edges


def _chain(parsed: Parsed, edges: dict[str, set[str]]) -> None:
    """Link each successor to what it supersedes; a superseded ADR with no successor found becomes a question
    to review, never a ruling in force on the importer's guess."""
    by_key = {r.key: r for r in parsed.records}
    for successor_key, predecessors in edges.items():
        successor = by_key[successor_key]
        successor.supersedes = tuple(sorted(predecessors))
        for key in predecessors:
            by_key[key].superseded_by = successor_key
        names = ", ".join(by_key[k].label for k in sorted(predecessors))
        successor.reason = f"{successor.label} ({successor.title}) supersedes {names}, as the ADRs record"
    for record in parsed.records:
        if record.status == SUPERSEDED and record.superseded_by is None:
            record.status, record.asked_at, record.ruled_at = OPEN, record.ruled_at, None
            record.summary = record.question = (f"Does {record.label} still stand ({record.title})? It is marked "
                                                "superseded, and no ADR says what replaced it.")
            record.remarks = [remark for remark in record.remarks if not remark.startswith("has no date")]
            record.remarks.append("is marked superseded, but no successor was found: imported as a question to "
                                  "review")


def _common_folder(folders: list[str]) -> tuple[str, ...]:
    """The deepest folder holding every ADR found."""
    split = [PurePosixPath(f).parts if f != "." else () for f in folders]
    common: tuple[str, ...] = split[0] if split else ()
    for parts in split[1:]:
        size = 0
        while size < min(len(common), len(parts)) and common[size] == parts[size]:
            size += 1
        common = common[:size]
    return common


def _partly_without_target(adrs: list[_Adr], parsed: Parsed) -> None:
    """A status like "Partly superseded" with no link: the owner is asked which parts stand."""
    reviewed = {r.record for r in parsed.reviews} | {o for r in parsed.reviews for o in r.others}
    for adr in adrs:
        if adr.record is None or adr.record.key in reviewed or not adr.status_text:
            continue
        if _PARTLY.search(adr.status_text) or (_status_of(adr.status_text) or ("", ""))[1].startswith(("partly", "partially", "in part")):
            parsed.reviews.append(Review(key=f"review:{adr.record.key}:partly", record=adr.record.key, others=(),
                                         text=f"{adr.record.label} ({adr.title}) is marked \"{one_line(adr.status_text)}\": "
                                              "which parts still stand?"))


def _ordered(records: list[Record]) -> list[Record]:
    """By number and date, with every record after the ones it supersedes."""
    by_key = {r.key: r for r in records}
    done: set[str] = set()
    result: list[Record] = []

    def visit(record: Record, seen: frozenset[str]) -> None:
        if record.key in done or record.key in seen:
            return
        for key in record.supersedes:
            visit(by_key[key], seen | {record.key})
        done.add(record.key)
        result.append(record)

    for record in records:
        visit(record, frozenset())
    return result


def _read(path: Path, rel: str, parsed: Parsed) -> _Adr | None:
    name = path.name
    numbered, dated = NUMBERED.match(name), DATED.match(name)
    parts = PurePosixPath(rel).parts[:-1]
    if not numbered and not dated:
        parsed.skipped.append(Skipped(rel, "not an ADR file name (NNNN-title.md or YYYYMMDD-title.md)"))
        return None
    if any(part.lower() in TEMPLATE_FOLDERS for part in parts):
        parsed.skipped.append(Skipped(rel, "in a template folder"))
        return None
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        parsed.skipped.append(Skipped(rel, "not UTF-8 text"))
        return None
    text = text.replace("\r\n", "\n")
    try:
        post = frontmatter.loads(text)
    except yaml.YAMLError as error:
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        parsed.skipped.append(Skipped(rel, f"invalid YAML frontmatter: {problem}"))
        return None
    metadata = dict(post.metadata) if isinstance(post.metadata, dict) else {}
    content = post.content
    h1 = _H1.search(content)
    given = metadata.get("title")
    title = one_line(given) if isinstance(given, str) else ""
    if not title and h1:
        title = _NUMBER_PREFIX.sub("", _ATTRIBUTES.sub("", one_line(h1.group(1)))).strip()
    slug = (numbered.group(2) if numbered else dated.group(4)) if (numbered or dated) else ""  # type: ignore[union-attr]
    if not title:
        title = slug.replace("-", " ").replace("_", " ").strip().capitalize()
    if h1:  # the title is kept as the note's, not repeated in its body
        content = content[:h1.start()] + content[h1.end():].lstrip("\n")
    number = numbered.group(1) if numbered else "".join(dated.groups()[:3])  # type: ignore[union-attr]
    bullets = _bullets(content)
    section = _section(content, "status")
    fmt: str
    status_text: str | None
    if isinstance(metadata.get("status"), str | int | float) and str(metadata.get("status")).strip():
        fmt = "madr-4" if "decision-makers" in metadata else "madr-3"
        status_text = one_line(str(metadata["status"]))
    elif section is not None:
        fmt = "adr-tools"
        lines = [line.strip() for line in section.splitlines() if line.strip()]
        status_text = lines[0] if lines else None
    elif "status" in bullets:
        fmt = "log4brains" if dated else "madr-2"
        status_text = bullets["status"]
    else:
        fmt = ("madr-4" if "decision-makers" in metadata else "madr-3") if metadata.keys() & {"deciders", "decision-makers", "date"} \
            else ("log4brains" if dated else "madr-2" if _section(content, "decision outcome") is not None else
                  "adr-tools" if _section(content, "decision") is not None else "unknown")
        status_text = None
    adr = _Adr(rel, fmt, number, title, status_text, content.strip("\n"), metadata, bullets)
    _links(adr, section)
    return adr


def _bullets(content: str) -> dict[str, str]:
    """`* Key: value` bullets of the first list between the title and the first `##` heading."""
    first_h2 = _H2.search(content)
    head = content[:first_h2.start()] if first_h2 else content
    found: dict[str, str] = {}
    for line in head.splitlines():
        match = _BULLET.match(line)
        if match:
            found.setdefault(match.group(1).strip().lower(), match.group(2).strip())
        elif found and line.strip():
            break
    return found


def _section(content: str, heading: str) -> str | None:
    """The text under `## heading` (case-insensitive), up to the next `##` heading."""
    headings = list(_H2.finditer(content))
    for index, match in enumerate(headings):
        if match.group(1).strip().lower() == heading:
            end = headings[index + 1].start() if index + 1 < len(headings) else len(content)
            return content[match.end():end]
    return None


def _refs(text: str) -> list[str]:
    """What a supersession line points at: its links' targets, else every ADR number it names ("by 3", "by
    0003", "ADR 1 and ADR 2"), dates aside."""
    links = [target for _, target in _LINK.findall(text)]
    if links:
        return links
    return [f"ADR {int(number)}" for number in _ANY_NUMBER.findall(_DATE.sub(" ", text))]


# Found first, then widened to its line: a pattern starting with `[^\n]*` tries every position of every line.
_PARTLY_ANYWHERE = re.compile(r"\b(?:in\s+part|partly|partially)\s+super[sc]edes?\b", re.I)


def _links(adr: _Adr, status_section: str | None) -> None:
    lines: list[str] = []
    if adr.status_text:
        lines += re.split(r"[;\n]", adr.status_text)
    if status_section:
        lines += status_section.splitlines()[1:] if adr.fmt == "adr-tools" else []
    links_section = _section(adr.content, "links")
    if links_section:
        lines += links_section.splitlines()
    for line in lines:
        if _PARTLY.search(line):
            adr.partly += _refs(line)
        elif _SUPERSEDED_BY.search(line):
            adr.superseded_by += _refs(line[_SUPERSEDED_BY.search(line).end():])  # type: ignore[union-attr]
        elif _SUPERSEDES.search(line):
            adr.supersedes += _refs(line[_SUPERSEDES.search(line).end():])  # type: ignore[union-attr]
    last_end = -1
    for match in _PARTLY_ANYWHERE.finditer(adr.content):  # each line saying it, once
        start = adr.content.rfind("\n", 0, match.start()) + 1
        if start < last_end:
            continue
        end = adr.content.find("\n", match.end())
        last_end = len(adr.content) if end == -1 else end
        adr.partly += _refs(adr.content[start:last_end])


def _day(value: Any) -> dt.date | None:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        text = value.strip()
        for pattern in ("%Y-%m-%d", "%Y%m%d", "%d/%m/%Y", "%Y/%m/%d"):
            try:
                return dt.datetime.strptime(text, pattern).date()
            except ValueError:
                continue
    return None


def _names(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        items: list[Any] = re.split(r"[,;]", value)
    elif isinstance(value, list):
        items = value
    else:
        return ()
    return tuple(dict.fromkeys(n for n in (one_line(str(item)).strip("[]{} ") for item in items if item) if n))


def topics_for(adr_title: str, tags: Iterable[str], folders: Iterable[str], number: str) -> tuple[str, ...]:
    """Tags when the ADR has any; else the title's first six words; plus each sub-folder's name."""
    found = [t for t in (kebab(tag.lstrip("#").replace("/", "-")) for tag in tags) if t]
    if not found:
        found = [kebab(adr_title) or f"adr-{int(number)}"]
    found += [t for t in (kebab(folder) for folder in folders) if t]
    return tuple(dict.fromkeys(found))


def _record(adr: _Adr, base: str, common: tuple[str, ...], parsed: Parsed) -> Record | None:
    label = f"ADR {int(adr.number)}" if len(adr.number) <= 4 else f"ADR {adr.number}"
    remarks: list[str] = []
    if adr.status_text is None:
        status, word = RULED, "accepted"
        remarks.append("has no status: imported as accepted (ruled)")
    else:
        found = _status_of(adr.status_text)
        status, word = found if found is not None else (OPEN, "")
        if found is None:  # never a current ruling on a word nobody defined: the owner says whether it stands
            remarks.append(f"status {one_line(adr.status_text)!r} is not one vault-tools can place (accepted, "
                           "proposed, rejected, deprecated, superseded, ...): imported as a question to review")
    day = _day(adr.metadata.get("date")) or _day(adr.bullets.get("date"))
    if day is None:
        date_line = _DATE_LINE.search(adr.content)
        day = _day(date_line.group(1)) if date_line else None
    if day is None and len(adr.number) == 8:
        day = _day(adr.number)
    summary = f"Rejected: {adr.title}" if word in ("rejected", "declined") else adr.title
    if found_unplaced := (status == OPEN and adr.status_text is not None and word == ""):
        summary = f"Does {label} stand ({adr.title})? Its status reads \"{one_line(adr.status_text)}\"."
    if len(summary) < MIN_TEXT:
        summary = f"Architecture decision {int(adr.number)}: {summary}"
    summary = summary if found_unplaced else first_sentence(summary, limit=200)
    deciders = _names(adr.metadata.get("decision-makers") or adr.metadata.get("deciders") or adr.bullets.get("deciders"))
    tags = list(_names(adr.metadata.get("tags") or adr.bullets.get("tags")))
    if adr.bullets.get("tags") and len(tags) == 1 and " " in tags[0]:
        tags = tags[0].split()
    below = PurePosixPath(adr.rel).parts[len(common):-1]  # a sub-folder of the ADR folder groups a topic
    source = f"{base}/{adr.rel}"
    status_said = one_line(adr.status_text) if adr.status_text else "none"
    note = IMPORT_NOTE.format(source=source, format=adr.fmt, status=status_said)
    body = f"{note}\n\n{adr.content}\n" if adr.content else f"{note}\n"
    record = Record(key=f"adr:{source}", label=label, status=status, title=adr.title, summary=summary,
                    topics=topics_for(adr.title, tags, below[:1], adr.number),
                    source=source, body=body, deciders=deciders, remarks=remarks)
    if status == OPEN:
        record.asked_at = day
        record.question = summary
    else:
        record.ruled_at = day
        if day is None:
            remarks.append("has no date: ruled_at is the time of the import")
    if status == RETRACTED:
        record.reason = f"{label} is marked {status_said} in the ADR record"
    elif status == WITHDRAWN:
        record.reason = f"{label} is marked {status_said} in the ADR record"
        record.question = summary
    return record


__all__ = ["parse", "topics_for"]
