"""`build`: the pinned pages written from the decisions as they stand, and the agent's view of them."""
from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import durable
from ..agent_view import Budget, Context, agent_context, parse_budget
from ..bodies import sections
from ..carriers import numbered_original, original_name
from ..conflicts import copy_settle_hint, describe_conflict, settle_hint
from ..drafts import unanswered
from ..errors import UsageError, VaultToolsError
from ..layout import git_dir
from ..model import Decision, Status
from ..page_names import PAGE_NAMES
from ..pages import (
    NOTICE,
    PageConflict,
    PageProblem,
    Pages,
    Settings,
    build_pages,
)
from ..services.workspace import Workspace
from ..vault import VaultState
from .held import owner_like_step
from .page_inputs import page_problems, remembered
from .review_notes import waiting_line
from .same import remember_terms, words_while_reading


@dataclass
class BuildResult:
    pages: Pages
    written: list[str] = field(default_factory=list)  # vault-relative paths
    stale: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # copies of pages edited by hand


def page_path(ws: Workspace, name: str) -> Path:
    return ws.vault.root / ws.config.pinned_folder / f"{name}.md"


def problems_of(ws: Workspace, state: VaultState) -> list[PageProblem]:
    """`page_problems` with everything the pages and the agent's view say."""
    return page_problems(state, _recorded(ws), ws.missing_rulings(state), ws.ledgers_not_here(state))


def _recorded(ws: Workspace) -> dict[str, Status]:
    try:
        return ws.vault.ledger.statuses()
    except VaultToolsError:  # a damaged ledger is reported by lint; the pages still show what can be read
        return {}


def settings(ws: Workspace) -> Settings:
    config = ws.config
    return Settings(config.budget_lines, config.budget_bytes, config.stale_after_days, config.recent_days,
                    config.reminder_days)


def page_conflicts(ws: Workspace, state: VaultState) -> list[PageConflict]:
    """Outcomes merged from two clones that the owner has to decide, as the pages and `context` show them."""
    conflicts = ws.conflicts(state)
    if not conflicts and not state.conflict_copies:
        return []  # nearly always: the code that describes them is not even loaded

    found = [PageConflict(conflict.id, note, describe_conflict(conflict), settle_hint(conflict))
             for conflict, note in conflicts]
    by_path = {d.path: d for d in state.decisions}
    found += [PageConflict(copy.id, by_path.get(copy.original), f"has a conflict copy that {copy.carrier} made: "
                           f"{copy.path}", copy_settle_hint(copy)) for copy in state.conflict_copies]
    return found


def config_budget(ws: Workspace) -> Budget:
    """The vault's own budget (`budget.lines`, `budget.bytes` in the config)."""
    return Budget("config", lines=ws.config.budget_lines, bytes=ws.config.budget_bytes)


def pages(ws: Workspace, state: VaultState | None = None) -> Pages:
    state = state or ws.state()
    in_effect = ws.decisions_in_effect(state)
    remember_terms(ws, state, [decision for decision in in_effect if decision.status is Status.RULED])  # the pairs
    return build_pages(in_effect, state.resolver(), ws.tz, settings(ws),
                       problems_of(ws, state), conflicts=page_conflicts(ws, state),
                       review_waiting=waiting_line(ws), held=held_for_the_owner(ws, state))


def held_for_the_owner(ws: Workspace, state: VaultState) -> list[tuple[Decision, str]]:
    """Each note whose change waits for the owner's tick (`commands.held`), as written, with the step it holds."""
    if not any(decision.held for decision in state.decisions):
        return []  # nearly always
    found = []
    for decision in sorted(state.decisions, key=lambda d: d.order):
        step = owner_like_step(ws, state, decision, ws.history_of(state, decision)) if decision.held else None
        if step is not None:
            found.append((decision, step))
    return found


def remembered_pages(ws: Workspace, state: VaultState) -> Pages:
    """`pages` through `remembered`: their texts and sizes only, the lists of decisions they show left empty."""
    def make() -> dict[str, Any]:
        made = pages(ws, state)
        return {"texts": made.texts, "rulings_shown": made.rulings_shown, "rulings_left_out": made.rulings_left_out,
                "used_lines": made.used_lines, "used_bytes": made.used_bytes}

    found = remembered(ws, state, "pages", make)
    try:
        return Pages(dict(found["texts"]), int(found["rulings_shown"]), int(found["rulings_left_out"]),
                     int(found["used_lines"]), int(found["used_bytes"]), settings(ws))
    except (KeyError, TypeError, ValueError):  # kept by hand or damaged: made again
        return pages(ws, state)


def context(ws: Workspace, budget: str = "config", today: dt.date | None = None,
            state: VaultState | None = None) -> Context:
    """What the agent reads, within `budget` (a name from `BUDGETS`, `config` or a number of characters)."""
    try:
        chosen = parse_budget(budget, config_budget(ws))
    except ValueError as error:
        raise UsageError(str(error)) from None
    state = state or ws.state()
    return agent_context(as_the_agent_reads(ws.decisions_in_effect(state)), state.resolver(), today or ws.today(),
                         ws.tz, settings(ws), chosen, problems_of(ws, state), page_conflicts(ws, state))


ASKS_STILL = "its summary still asks the question, so it is not sealed yet"


def as_the_agent_reads(decisions: Sequence[Decision]) -> list[Decision]:
    """The decisions as the agent is told of them: a note the owner marked ruled whose summary still asks the
    question (`drafts.unanswered`) stands for the answer under its `## Ruling`, flagged, never for the question
    as if it were the ruling."""
    shown = []
    for decision in decisions:
        if decision.status is Status.RULED and unanswered(decision):
            answer = next((line.strip() for line in sections(decision.body).get("Ruling", "").splitlines()
                           if line.strip()), None)
            said = f"{answer} ({ASKS_STILL})" if answer else f"{decision.summary} (no answer written yet: {ASKS_STILL})"
            decision = replace(decision, summary=said)
        shown.append(decision)
    return shown


def refresh_pages(ws: Workspace) -> list[str]:
    """After a command changed a decision: the pinned pages as the vault now stands, so nobody opening
    `Pinned/` sees the state before it. The change itself is done; a page that cannot be written is a warning,
    returned as a line to show, with a line for each page edited by hand whose copy was kept."""
    try:
        written = ws.as_written()
        # What the command wrote, read back, unless a note changed since it read the vault (the owner saving).
        # Run by the watcher's resident process (its caller makes the writes), that walk is not paid: the save
        # sets off a pass of the watcher beside it, which waits for the ledger lock this command's caller holds,
        # so it reads the vault after these pages are written and makes them again from it.
        if written is not None and (durable.caller_writes() is not None or ws.vault.unchanged_since(written)):
            ws.keeps(written)
        result = build(ws, state=ws.state())
    except (VaultToolsError, OSError) as error:
        return [f"warning: the pinned pages were not rebuilt ({error}); run `vault-tools build`"]
    return [f"a pinned page was edited by hand; the edited copy is kept in {kept}" for kept in result.kept]


# docs/design/0013-pages-depend-on-the-notes-alone.md
def build(ws: Workspace, *, check: bool = False, state: VaultState | None = None,
          remembered: bool = False) -> BuildResult:
    """Write the pages whose bytes changed (or, with `check`, only say which are stale).

    The pages depend on the decision notes only, never on the date: an unchanged vault is current on
    any later day. A page that is neither what was last generated nor what is generated now
    was edited by hand: a copy goes to `.vault-tools/kept/` before it is replaced. With `remembered`, pages
    made from exactly the same inputs before are taken from `.vault-tools/cache/` (see `remembered_pages`):
    their texts and sizes only, the lists of decisions they show left empty.
    """
    if state is None:
        with words_while_reading():  # the pages pair every current ruling by its words
            state = ws.state()
    result = BuildResult(remembered_pages(ws, state) if remembered else pages(ws, state))
    generated = _generated_digests(ws)
    for name in PAGE_NAMES:
        path = page_path(ws, name)
        data = result.pages.texts[name].encode("utf-8")
        try:
            current = path.read_bytes()
        except FileNotFoundError:
            current = None
        if current == data:
            continue
        rel = ws.vault.relative(path)
        result.stale.append(rel)
        if check:
            continue
        if current is not None and _edited_by_hand(current, generated.get(rel)) and not _from_git(ws, path, current):
            result.kept.append(ws.keep_copy(name, current))
        durable.write_atomic(path, data)
        result.written.append(rel)
    for copy in _page_copies(ws):
        # A sync engine's conflict copy of a page: the page is regenerated, the copy is clutter. One that
        # someone typed into (no longer opening with the generated notice) is kept first.
        rel = ws.vault.relative(copy)
        result.stale.append(rel)
        if check:
            continue
        data = copy.read_bytes()
        if not data.startswith(NOTICE.encode("utf-8")):
            result.kept.append(ws.keep_copy(copy.stem, data))
        durable.remove(copy)
        result.written.append(rel)
    if result.written:
        _remember_pages(ws, {ws.vault.relative(page_path(ws, name)): result.pages.texts[name] for name in PAGE_NAMES})
    return result


def _page_copies(ws: Workspace) -> list[Path]:
    """Conflict copies sync engines made of the pinned pages (see `carriers`)."""

    pages = {page_path(ws, name).name for name in PAGE_NAMES}
    folder = page_path(ws, PAGE_NAMES[0]).parent
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.glob("*.md")):
        named = original_name(path.name)
        original = named[0] if named else numbered_original(path.name)
        if path.name not in pages and original in pages:
            found.append(path)
    return found


def _edited_by_hand(current: bytes, last_generated: set[str] | None) -> bool:
    """Not what vault-tools last wrote there (on this device or, in the shared layout, any). With no record
    (a fresh clone, a cleared cache) a page still opening with the generated notice is taken as generated."""
    if last_generated:
        return _digest(current) not in last_generated
    return not current.startswith(NOTICE.encode("utf-8"))


def _from_git(ws: Workspace, path: Path, current: bytes) -> bool:
    """The page is exactly what git holds for it (another clone generated it, and a pull brought it):
    not an edit to keep a copy of."""
    from .setup import run_git  # git only for a page that looks edited by hand

    if git_dir(ws.vault.root) is None:
        return False
    done = run_git(path.parent, "ls-files", "-s", "--", path.name)
    if done is None or done.returncode != 0:
        return False
    blob = hashlib.sha1(b"blob %d\0" % len(current) + current).hexdigest()  # git names objects by SHA-1
    return any(line.split()[1] == blob for line in done.stdout.splitlines() if len(line.split()) > 1)


def _page_cache(ws: Workspace) -> Path:
    return ws.vault.state_dir / "cache" / "pages.json"


def _published(ws: Workspace) -> Path:
    """In the shared layout, the digests of the pages each device last wrote travel with them (one file per
    device), so a page another device generated, brought by the sync engine, is not taken for a hand edit."""
    return ws.vault.record_dir / "pages"


def _generated_digests(ws: Workspace) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    sources = [_page_cache(ws)]
    if ws.vault.layout.shared and _published(ws).is_dir():
        sources += sorted(_published(ws).glob("*.json"))
    for source in sources:
        try:
            data = json.loads(source.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            for rel, digest in data.items():
                found.setdefault(str(rel), set()).add(str(digest))
    return found


def _remember_pages(ws: Workspace, texts: dict[str, str]) -> None:
    digests = json.dumps({rel: _digest(text.encode("utf-8")) for rel, text in texts.items()}, sort_keys=True).encode()
    durable.write_atomic(_page_cache(ws), digests, derived=True)
    if ws.vault.layout.shared:
        durable.write_atomic(_published(ws) / f"{ws.vault.ledger.own.path.stem}.json", digests)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
