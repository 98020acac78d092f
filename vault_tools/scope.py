"""Which files a ruling governs: its `scope`, a flat list of globs. Pure: paths in, matches out.

Globs are matched against forward-slash paths relative to the scope root: the vault, or the project
folder named by `project_root` in the config when the files an agent edits live outside the vault.
`**` crosses folders, `*` and `?` stay within one, `{a,b}` is either, `[abc]` one of; names that start
with a dot are matched like any other. Matching is case-sensitive, as git's is.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path


def problem(pattern: str) -> str | None:
    """Why a glob cannot be a scope (None when it can): it must name files below the scope root."""
    if not pattern.strip():
        return "is empty"
    if "\\" in pattern:
        return f"{pattern!r} uses a backslash; write folders with forward slashes"
    if pattern.startswith("/") or (len(pattern) > 1 and pattern[1] == ":"):
        return f"{pattern!r} is an absolute path; write it relative to the vault (or to project_root)"
    if ".." in pattern.split("/"):
        return f"{pattern!r} climbs out with '..'; write it relative to the vault (or to project_root)"
    return None


def matches(pattern: str, path: str) -> bool:
    from wcmatch import glob as wcglob  # here: most vaults have no scoped ruling, and it costs ~10 ms to load

    flags = wcglob.GLOBSTAR | wcglob.BRACE | wcglob.DOTGLOB
    return problem(pattern) is None and bool(wcglob.globmatch(path, pattern, flags=flags))


def specificity(pattern: str) -> tuple[int, int]:
    """How narrowly a glob names files: more literal characters, and fewer wildcards, come first."""
    wild = sum(pattern.count(mark) for mark in ("*", "?", "["))
    return (len(pattern) - sum(pattern.count(mark) for mark in "*?[]{}"), -wild)


@dataclass(frozen=True)
class Governing:
    """A ruling that governs a path, through the most specific of its globs that matches."""

    ruling_id: str
    glob: str


# docs/design/0037-scope-globs.md
def governing(scopes: Iterable[tuple[str, Sequence[str]]], path: str) -> list[Governing]:
    """The rulings (id, globs), in the order given, whose scope matches `path`, each with its best glob;
    sorted most specific glob first (a stable sort keeps the given order, e.g. newest first, on ties)."""
    found = []
    for ruling_id, globs in scopes:
        hits = [pattern for pattern in globs if matches(pattern, path)]
        if hits:
            found.append(Governing(ruling_id, max(hits, key=specificity)))
    return sorted(found, key=lambda item: specificity(item.glob), reverse=True)


def scope_path(root: Path, path: Path | str, cwd: Path) -> str | None:
    """`path` (absolute, or relative to `cwd`) as a forward-slash path below `root`; None when outside it."""
    given = Path(path).expanduser()
    absolute = given if given.is_absolute() else cwd / given
    for candidate in (absolute, absolute.resolve()):
        try:
            return candidate.relative_to(root).as_posix()
        except ValueError:
            continue
    try:
        return absolute.resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        return None


def root_of(vault_root: Path, project_root: str) -> Path:
    """The folder scope globs are relative to: `project_root` (absolute, or relative to the vault) or the vault."""
    configured = project_root.strip()
    if not configured:
        return vault_root
    root = Path(configured).expanduser()
    return (root if root.is_absolute() else vault_root / root).resolve()
