"""Scope rules (VT050-VT051): the globs in a ruling's `scope` name files, and files that exist."""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from ..model import Status
from ..scope import matches, problem, root_of
from .facts import Facts, first_line
from .registry import ERROR, WARNING, Finding, rule

MAX_FILES_WALKED = 200_000  # a scope root larger than this is not searched for matches


@rule("VT050", "invalid-scope", ERROR, remembered=True)
def invalid_scope(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a glob in a ruling's `scope` that cannot name files below the scope root: empty, absolute,
    climbing out with `..`, or written with backslashes.

    ## Why
    A ruling reaches the agent when it edits a file its scope matches. A glob that cannot match anything
    leaves the ruling out of every edit it was meant to govern, silently.

    ## How to fix
    Write the glob relative to the vault (or to `project_root` in the config), with forward slashes:
    `Articles/**`, `src/billing/*.py`.
    """
    for decision in facts.state.decisions:
        for pattern in decision.scope:
            why = problem(pattern)
            if why:
                yield Finding(decision.path, first_line(decision, "scope"), f"scope {why}")


@rule("VT051", "scope-matches-nothing", WARNING)
def scope_matches_nothing(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a glob in a current ruling's `scope` that matches no file below the scope root (the vault, or
    `project_root` in the config) as it is now.

    ## Why
    Usually a typo or a folder that was renamed: the ruling no longer reaches the files it governs. It
    can also be deliberate (a folder that does not exist yet), hence a warning.

    ## How to fix
    Correct the glob, or list the folder as it is named now. For a sealed ruling, record a new ruling that
    supersedes it with the right scope; or add `vault-tools-ignore: [VT051]` when the folder is to come.
    """
    scoped = [d for d in facts.state.decisions if d.status is Status.RULED and d.scope]
    if not scoped:
        return
    files = _files(root_of(facts.state.root, facts.config.project_root))
    for decision in scoped:
        for pattern in decision.scope:
            if problem(pattern) is None and not any(matches(pattern, path) for path in files):
                yield Finding(decision.path, first_line(decision, "scope"),
                              f"scope {pattern!r} matches no file below {facts.config.project_root or 'the vault'}")


def _files(root: Path) -> list[str]:
    found: list[str] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in (".git", ".vault-tools", ".obsidian", ".trash")]
        base = Path(folder).relative_to(root).as_posix()
        found += [f"{base}/{name}" if base != "." else name for name in names]
        if len(found) > MAX_FILES_WALKED:
            break
    return found
