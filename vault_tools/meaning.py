"""What a seal covers: the meaning of a note (its sealed properties' values, links by the id they resolve to, the
body with line endings normalised), its hash, and the links that name another note than when it was sealed.
Pure. Which record a note is: `record_ties`.
"""
from __future__ import annotations

import datetime as dt
import functools
import hashlib
import re
from typing import Any

from .dates import instant
from .ledger_lines import canonical_json
from .links import WIKILINK, Resolve, leading_id, link_target, name_key
from .model import SEALED_FIELDS, SEALED_WHEN_SET, Decision, Status


def normalise_body(body: str) -> str:
    return body.replace("\r\n", "\n").replace("\r", "\n").strip("\n") + "\n"


# Where Obsidian shows `[[...]]` as typed, not as a link.
_VERBATIM_TOKENS = frozenset({"fence", "code_block", "code_inline", "html_block", "html_inline"})


def _wikilink_rule(state: Any, silent: bool) -> bool:
    match = WIKILINK.match(state.src, state.pos)
    if not match:
        return False
    if not silent:
        state.push("wikilink", "", 0).content = match.group(0)
    state.pos = match.end()
    return True


@functools.cache
def _markdown() -> Any:
    from markdown_it import MarkdownIt  # only notes with links need it

    parser = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    parser.inline.ruler.before("link", "wikilink", _wikilink_rule)
    return parser


def wikilinks(text: str) -> list[re.Match[str]]:
    """The wikilinks of a Markdown text that Obsidian shows as links, in order: not those inside
    code spans, fenced or indented code, or HTML. Read with markdown-it-py's tokens; when the
    tokens cannot be matched up with the text (a link inside a link's title, say), every `[[...]]`
    counts as typed text, so that changing any of them shows."""
    found = list(WIKILINK.finditer(text)) if "[[" in text else []
    if not found:
        return []
    seen: list[tuple[str, bool]] = []  # every `[[...]]` the tokens hold, in reading order: (text, is a link)
    for block in _markdown().parse(text):
        for token in (block.children or []) if block.type == "inline" else [block]:
            if token.type == "wikilink":
                seen.append((token.content, True))
            elif token.type in _VERBATIM_TOKENS:
                seen += [(match.group(0), False) for match in WIKILINK.finditer(token.content)]
    if [raw for raw, _ in seen] != [match.group(0) for match in found]:
        return []
    return [match for match, (_, is_link) in zip(found, seen, strict=True) if is_link]


def _links_as_meaning(text: str, resolve: Resolve) -> str:
    """Wikilinks as what they mean, not how they are spelt: Obsidian rewrites them when a note or a
    heading is renamed or moved, and that is not an edit. A link to a decision becomes its id; a
    link to any other note becomes just "a link" here, and which note it names is checked against
    the sealed text (`retargeted_links`). Text in code is kept as typed."""
    parts: list[str] = []
    last = 0
    for match in wikilinks(text):
        decision_id = resolve(match.group(0)) or leading_id(match.group(0))
        parts += [text[last:match.start()], f"[[{decision_id}]]" if decision_id else "[[]]"]
        last = match.end()
    return "".join(parts) + text[last:] if parts else text


def hash_alone_vouching(decision: Decision, resolve: Resolve, digest: str) -> str | None:
    """`digest`, the note's seal hash, where it alone says what the note means; None where the body or `source`
    links a note that is not a decision: the hash reads such a link as "a link" (`_links_as_meaning`; which note
    it names is checked against the sealed text), so it cannot say which note the link named when sealed."""
    names_others = any(not (resolve(match.group(0)) or leading_id(match.group(0)))
                       for text in (decision.source or "", normalise_body(decision.body)) for match in wikilinks(text))
    return None if names_others else digest


# docs/design/0001-a-seal-covers-meaning-not-bytes.md
# docs/design/0002-fields-added-later-join-only-when-set.md
def seal_payload(decision: Decision, resolve: Resolve, tz: dt.tzinfo) -> dict[str, Any]:
    """The meaning of a note: what the seal covers, with links resolved to ids."""
    payload: dict[str, Any] = {}
    for name in SEALED_FIELDS:
        value = getattr(decision, name)
        if name == "status":
            # Moving to superseded/retracted is the tool's own edit, checked against the ledger.
            value = Status.RULED.value if value in (Status.SUPERSEDED, Status.RETRACTED) else value.value
        elif name in ("supersedes", "alongside"):
            # A deleted note's link still names its id: deleting it does not change this note.
            value = sorted(resolve(link) or leading_id(link) or link for link in value)
            if not value and name in SEALED_WHEN_SET:
                continue
        elif name == "source" and value:
            value = _links_as_meaning(value, resolve)
        elif name == "topics":
            value = list(value)
        elif name == "scope":
            if not value:
                continue
            value = list(value)
        elif name == "alongside_all":
            if not value:
                continue
        elif name == "terms":
            if not value and name in SEALED_WHEN_SET:
                continue
            value = dict(sorted(value.items()))
        elif isinstance(value, dt.datetime):
            value = instant(value, tz).isoformat()
        elif isinstance(value, dt.date):
            value = value.isoformat()
        payload[name] = value
    payload["body"] = _links_as_meaning(normalise_body(decision.body), resolve)
    return payload


def seal_hash(decision: Decision, resolve: Resolve, tz: dt.tzinfo) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(seal_payload(decision, resolve, tz)).encode("utf-8")).hexdigest()


def retargeted_links(decision: Decision, sealed: Decision, resolve: Resolve, identity: Resolve) -> list[str]:
    """The fields ("source", "body") where a link to a note that is not a decision now names another
    note than the sealed text's link did. A link may change only to follow its note: the note the
    sealed link named is gone (renamed, moved or deleted) and the new link names a note that exists.
    Pointing a ruling at a different existing note, or rewording a link that names no note, is an edit.
    Call it only when the seal hashes agree (so the links line up one for one)."""
    changed = []
    for name, now_text, then_text in (("source", decision.source or "", sealed.source or ""),
                                      ("body", decision.body, sealed.body)):
        now_links, then_links = wikilinks(now_text), wikilinks(then_text)
        if len(now_links) != len(then_links):
            changed.append(name)
            continue
        for now, then in zip(now_links, then_links, strict=True):
            if resolve(then.group(0)) or leading_id(then.group(0)):
                continue  # a link to a decision: the hash compares its id
            before, after = identity(then.group(0)), identity(now.group(0))
            if before is not None:
                moved = after != before
            elif after is None:  # named no note then or now: the words are what it says
                moved = name_key(link_target(now.group(0))) != name_key(link_target(then.group(0)))
            else:
                moved = False  # followed its note to a new name or folder
            if moved:
                changed.append(name)
                break
    return changed
