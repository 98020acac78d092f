"""`for` and `check --changed`: the current rulings that govern files, through their `scope` globs."""
from __future__ import annotations

import datetime as dt
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError
from ..model import Decision, newest_first_key
from ..ruling_graph import unresolved_overlaps
from ..scope import governing, root_of, scope_path
from ..services.workspace import Workspace
from ..vault import VaultState

GIT_TIMEOUT_SECONDS = 20


def scope_root(ws: Workspace) -> Path:
    """The folder scope globs are relative to: `project_root` from the config, else the vault."""
    return root_of(ws.vault.root, ws.config.project_root)


@dataclass
class Governed:
    path: str  # as given
    scoped: str | None  # relative to the scope root; None when outside it
    rulings: list[tuple[Decision, str]] = field(default_factory=list)  # (ruling, the glob that matched)


def current_scopes(ws: Workspace, state: VaultState) -> list[Decision]:
    """Current rulings with a scope, newest first."""
    current = [d for d in ws.decisions_in_effect(state) if d.is_current and d.scope]
    return sorted(current, key=lambda d: newest_first_key(d, ws.tz), reverse=True)


def governed(ws: Workspace, state: VaultState, paths: Iterable[str], cwd: Path) -> list[Governed]:
    """For each path, the current rulings whose scope matches it: most specific glob first, then newest."""
    root = scope_root(ws)
    rulings = current_scopes(ws, state)
    by_id = {d.id: d for d in rulings}
    scopes = [(d.id, d.scope) for d in rulings]
    found = []
    for path in paths:
        scoped = scope_path(root, path, cwd)
        if scoped is None and not Path(path).is_absolute():  # from outside: taken as relative to the scope root
            scoped = scope_path(root, path, root)
        item = Governed(path, scoped)
        if scoped is not None:
            item.rulings = [(by_id[g.ruling_id], g.glob) for g in governing(scopes, scoped)]
        found.append(item)
    return found


def changed_files(root: Path, rev: str) -> list[str]:
    """Files changed since `rev` in the git repository at `root` (committed since, or changed in the work tree)."""
    try:
        done = subprocess.run(["git", "diff", "--name-only", "--no-renames", rev, "--"], cwd=root, capture_output=True,
                              text=True, timeout=GIT_TIMEOUT_SECONDS)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise UsageError(f"cannot ask git what changed since {rev}: {error}") from None
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["git failed"])[0]
        raise UsageError(f"cannot ask git what changed since {rev}: {first}")
    return [line for line in done.stdout.splitlines() if line.strip()]


@dataclass
class Check:
    governed: list[Governed]
    problems: list[str] = field(default_factory=list)  # what --strict fails on


def check_changed(ws: Workspace, rev: str, today: dt.date | None = None) -> Check:
    """The current rulings governing each file changed since `rev`, and what --strict refuses: a file governed
    by a ruling whose `revisit_by` has passed, or by two rulings that have not said which stands."""
    state = ws.state()
    root = scope_root(ws)
    files = changed_files(root, rev)
    items = [item for item in governed(ws, state, files, root) if item.rulings]
    day = today or ws.today()
    unsettled = {frozenset((o.newer.id, o.older.id)) for o in unresolved_overlaps(ws.decisions_in_effect(state),
                                                                                   state.resolver(), ws.tz)}
    check = Check(items)
    for item in items:
        ids = [ruling.id for ruling, _ in item.rulings]
        for ruling, _ in item.rulings:
            if ruling.revisit_by and ruling.revisit_by < day:
                check.problems.append(f"{item.path}: governed by {ruling.id}, whose revisit_by "
                                      f"{ruling.revisit_by.isoformat()} has passed")
        for position, first in enumerate(ids):
            for second in ids[position + 1:]:
                if frozenset((first, second)) in unsettled:
                    check.problems.append(f"{item.path}: governed by {first} and {second}, which have not said "
                                          "which stands")
    return check
