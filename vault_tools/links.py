"""Links in properties and bodies: `[[D-0003 Title]]`, `[[Title|shown]]`, `[[Title#heading]]`, resolved to the id of
the note they name as Obsidian resolves them (exact name first, then case and Unicode form folded). Pure.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import Decision


# The one wikilink grammar: `[[target#heading|alias]]` or `[[target^block]]`. A target holds none of `[ ] | # ^`
# (Obsidian refuses those in a note's name); `part` starts with `#` or `^`, `alias` with `|`.
WIKILINK = re.compile(r"\[\[(?P<target>[^\[\]|#^]*)(?P<part>[#^][^\[\]|]*)?(?P<alias>\|[^\[\]]*)?\]\]")


def link_target(link: str) -> str:
    """`[[Folder/D-0003 Title#Ruling|alias]]` -> `D-0003 Title`; a bare id stays as is."""
    match = WIKILINK.fullmatch(link.strip())
    target = match.group("target") if match else link.strip()
    target = target.strip().rsplit("/", 1)[-1]
    return target.removesuffix(".md")


def leading_id(link: str) -> str | None:
    """The decision id a link's target starts with (`[[D-0003 Old rule]]` -> D-0003), existing or not."""
    match = re.match(r"^(D-\d+(?:-[0-9a-z]{2,8})?)(?![\w-])", link_target(link))
    return match.group(1) if match else None


def name_key(name: str) -> str:
    """How Obsidian compares note names: Unicode NFC, case-insensitive."""
    return unicodedata.normalize("NFC", name).casefold()


# docs/design/0001-a-seal-covers-meaning-not-bytes.md
class LinkResolver:
    """Resolves links to decision ids: by file name as Obsidian would, else by a leading id.

    Names compare as Obsidian compares them (NFC, any case), but a name spelt exactly as the
    link spells it wins over one that differs only in case. Two names that differ only in case,
    neither spelt as the link is, are ambiguous: such a link resolves to nothing, and
    `ambiguous` names the files."""

    def __init__(self, decisions: Iterable[Decision]) -> None:
        self._by_name: dict[str, list[Decision]] = {}
        self._ids: set[str] = set()
        for decision in decisions:
            self._by_name.setdefault(name_key(decision.title), []).append(decision)
            self._ids.add(decision.id)
        self._resolved: dict[str, str | None] = {}  # link -> id: the names above never change

    def extended(self, extra: Iterable[Decision]) -> LinkResolver:
        """This resolver also knowing `extra`, notes whose ids it does not know yet (notes about to be written),
        without working out every name again."""
        new = LinkResolver(())
        new._by_name, new._ids = dict(self._by_name), set(self._ids)
        for decision in extra:
            key = name_key(decision.title)
            new._by_name[key] = [*new._by_name.get(key, ()), decision]
            new._ids.add(decision.id)
        return new

    def knows(self, decision_id: str) -> bool:
        return decision_id in self._ids

    def _candidates(self, link: str) -> tuple[list[Decision], str]:
        target = link_target(link)
        return self._by_name.get(name_key(target), []), unicodedata.normalize("NFC", target)

    def ambiguous(self, link: str) -> list[str] | None:
        """The paths of the notes a link could name when only their case tells them apart."""
        found, target = self._candidates(link)
        titles = {unicodedata.normalize("NFC", d.title) for d in found}
        if len(titles) > 1 and target not in titles:
            return sorted(d.path for d in found)
        return None

    def __call__(self, link: str) -> str | None:
        if link not in self._resolved:
            self._resolved[link] = self._resolve(link)
        return self._resolved[link]

    def _resolve(self, link: str) -> str | None:
        found, target = self._candidates(link)
        if found:
            exact = [d for d in found if unicodedata.normalize("NFC", d.title) == target]
            if exact:
                return exact[0].id
            if len({unicodedata.normalize("NFC", d.title) for d in found}) == 1:
                return found[0].id
            return None  # only the case tells them apart: refused where it matters (`ambiguous`)
        by_id = leading_id(link)
        return by_id if by_id in self._ids else None


class NoteIndex:
    """Which file of the vault a link names, as Obsidian resolves it: a path when the link gives
    one, else the name (NFC, any case; a name spelt exactly as the link wins), the shortest path
    first when several notes share it. Gives the file's vault-relative path, or None."""

    def __init__(self, paths: Iterable[str]) -> None:
        self._by_name: dict[str, list[str]] = {}
        for path in paths:
            name = path.rsplit("/", 1)[-1]
            self._by_name.setdefault(name_key(name.removesuffix(".md") if name.endswith(".md") else name),
                                     []).append(path)

    def __call__(self, link: str) -> str | None:
        match = WIKILINK.fullmatch(link.strip())
        target = (match.group("target") if match else link).strip().removesuffix(".md")
        if not target:
            return None
        folder, _, name = target.rpartition("/")
        found = self._by_name.get(name_key(name), [])
        if folder:
            wanted = name_key(target)
            found = [p for p in found if name_key(p.removesuffix(".md")).endswith(wanted)
                     and (len(p.removesuffix(".md")) == len(target) or p.removesuffix(".md")[-len(target) - 1] == "/")]
        if not found:
            return None
        spelt = unicodedata.normalize("NFC", name)
        return min(found, key=lambda p: (unicodedata.normalize("NFC", p.rsplit("/", 1)[-1].removesuffix(".md")) != spelt,
                                         p.count("/"), len(p), p))


Resolve = Callable[[str], str | None]


def linked_ids(decision: Decision, resolve: Resolve) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The ids a ruling names in `supersedes` and in `alongside`, each sorted (what its `ruled` event records)."""
    return (tuple(sorted(filter(None, map(resolve, decision.supersedes)))),
            tuple(sorted(filter(None, map(resolve, decision.alongside)))))


def unresolved_link(resolve: Resolve, link: str) -> str:
    """Why a `supersedes` link names no decision: no note is called that, or only case tells two apart."""
    paths = resolve.ambiguous(link) if isinstance(resolve, LinkResolver) else None
    if paths:
        return (f"supersedes {link!r}, which could name {' or '.join(paths)}: their names differ only in case; "
                "spell the link exactly as the file is named")
    return f"supersedes {link!r}, but no decision note is called that"
