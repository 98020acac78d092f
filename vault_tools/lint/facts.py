"""Everything the rules look at, read once: the vault's notes, the ledger, `git show` of the committed ledger,
file times and the pinned pages. This is the only I/O lint does; every rule is a pure function of `Facts`.
"""
from __future__ import annotations

import datetime as dt
import functools
import hashlib
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from ..commands.build import build, context, page_path
from ..commands.held import agent_steps_not_held
from ..commands.page_inputs import remembered
from ..commands.setup import merge_drivers_missing
from ..config import Config
from ..drafts import lacks_id
from ..errors import InconsistentVault
from ..history import History, histories
from ..ledger_lines import TORN, Event, scan_ledger
from ..links import LinkResolver
from ..meaning import hash_alone_vouching, seal_hash
from ..model import Decision, Problem, Status
from ..page_names import OPEN_QUESTIONS, PAGE_NAMES
from ..record_ties import tie_notes
from ..services.workspace import Workspace
from ..tripwire import damaged_ledgers
from ..vault import Vault, VaultState
from .registry import LEDGER_PATH

GIT_TIMEOUT_SECONDS = 10
# The agent budgets lint checks the open questions against: the Claude Code hook the README sets up.
LINTED_BUDGETS = ("claude-hook",)

# Statuses of a note that took effect as a ruling (it is current, or was later superseded or retracted).
TOOK_EFFECT = frozenset({Status.RULED, Status.SUPERSEDED, Status.RETRACTED})


@dataclass
class LedgerFacts:
    """One ledger file as lint reads it."""

    shown: str  # its vault-relative path
    lines: list[str] = field(default_factory=list)  # one entry per line
    committed: list[str] | None = None  # the file at git HEAD; None when there is none to compare


# The ledger's events that could be read, and each damaged line: (file, line, message).
LedgerReading = tuple[list[Event], list[tuple[str, int, str]]]


@dataclass
class Facts:
    """Everything the rules need, read once. Rules only look at this; they read no files."""

    state: VaultState
    today: dt.date
    now: float  # seconds since the epoch, compared with file modification times
    read_ledger_events: Callable[[], LedgerReading] = lambda: ([], [])  # parsed only when a rule asks
    ledger_files: list[LedgerFacts] = field(default_factory=list)  # each file the ledger is read from
    properties: dict[str, dict[str, Any]] = field(default_factory=dict)  # frontmatter of decision notes
    property_lines: dict[str, dict[str, int]] = field(default_factory=dict)  # the line of each property
    mtimes: dict[str, float] = field(default_factory=dict)
    body_lines: dict[str, int] = field(default_factory=dict)  # the line each decision note's body starts on
    stale_pages: list[str] = field(default_factory=list)
    over_budget: str | None = None  # the budget message, when the pages overflow it
    context_overflow: list[str] = field(default_factory=list)  # agent budgets the open questions alone overflow
    open_questions_page: str = "Pinned/Open questions.md"
    merge_drivers_missing: list[str] = field(default_factory=list)  # git merge drivers this clone lacks
    # Ledger files that lost lines this device's copy holds (`tripwire.damaged_ledgers`): (file, lines lost)
    ledger_lines_lost: list[tuple[str, int]] = field(default_factory=list)
    # Open and withdrawn questions whose note is gone by every name (`Workspace.missing_rulings`), as kept
    missing_questions: list[Decision] = field(default_factory=list)
    # Decision notes an agent's call changed as only the owner may, not held yet (`commands.held`): (note, step)
    agent_steps: list[tuple[Decision, str]] = field(default_factory=list)
    # Takes what the `remembered` rules find (made by the function given) from an earlier run when the
    # decision notes, the vault's file names, the ledger, the config and the date are as they were then;
    # with anew=True, makes it again and keeps that.
    remember: Callable[..., Any] | None = None
    # The first moment a remembered rule would find otherwise with nothing changed but the clock (a note
    # inside its sealing delay leaving it); None: never.
    findings_change_at: float | None = None

    def changes_at(self, moment: float) -> None:
        """Said by a remembered rule whose findings depend on `now`: they stay as found until `moment`."""
        self.findings_change_at = moment if self.findings_change_at is None else min(self.findings_change_at, moment)

    @cached_property
    def _ledger(self) -> LedgerReading:
        return self.read_ledger_events()

    @property
    def events(self) -> list[Event]:
        """The ledger lines that could be read."""
        return self._ledger[0]

    @property
    def config(self) -> Config:
        return self.state.config

    @property
    def ledger_damage(self) -> list[tuple[str, int, str]]:
        """Every damaged ledger line: (file, line, message)."""
        return self._ledger[1]

    @cached_property
    def histories(self) -> dict[str, History]:
        return histories(self.events)

    @cached_property
    def by_id(self) -> dict[str, Decision]:
        return self.state.by_id()

    @cached_property
    def resolve(self) -> LinkResolver:
        return self.state.resolver()

    @cached_property
    def ties(self) -> dict[str, History]:
        """Each note's record, by the note's path (see `record_ties.tie_notes`)."""
        return tie_notes(self.state.decisions, self.histories.values(),
                         lambda d: seal_hash(d, self.resolve, self.config.tz))

    def history_of(self, decision: Decision) -> History | None:
        return self.ties.get(decision.path)

    def seal_lost(self, history: History) -> Event | None:
        """`History.seal_lost_for` the note tied to the record: a `ruled` line left without its `sealed` line is
        reported (VT027) unless that note still means what the line recorded (then it is sealed again, VT020)."""
        lost = history.seal_lost
        if lost is None:
            return None
        tied = (decision for decision in self.state.decisions if self.ties.get(decision.path) is history)
        if any(history.seal_lost_for(hash_alone_vouching(decision, self.resolve,
                                                         seal_hash(decision, self.resolve, self.config.tz))) is None
               for decision in tied):
            return None
        return lost

    def in_conflict(self, decision: Decision) -> bool:
        history = self.history_of(decision)
        return history is not None and history.conflict is not None

    def sealed(self, decision: Decision) -> bool:
        history = self.history_of(decision)
        return history is not None and history.sealed

    def targets(self, decision: Decision) -> Iterator[tuple[str, Decision | None]]:
        """Each `supersedes` link with the note it resolves to (None when it resolves to none)."""
        for link in decision.supersedes:
            target = self.resolve(link)
            yield link, self.by_id.get(target) if target else None

    def successor_of(self, decision: Decision) -> Decision | None:
        target = self.resolve(decision.superseded_by) if decision.superseded_by else None
        return self.by_id.get(target) if target else None

    @cached_property
    def successors(self) -> dict[str, list[Decision]]:
        """For each note, the notes that took effect as rulings and list it in `supersedes` (but for a
        ruling retracted when the owner settled which of two successors stands)."""
        found: dict[str, list[Decision]] = {}
        for decision in self.state.decisions:
            if decision.status in TOOK_EFFECT:
                for _, target in self.targets(decision):
                    if target is not None and target.id != decision.id and not self.settled_away(decision, target):
                        found.setdefault(target.id, []).append(decision)
        return found

    def settled_away(self, decision: Decision, target: Decision) -> bool:
        """`decision` was one of two rulings that superseded `target` on two clones, and the owner settled
        on the other one, or it superseded an answer the owner's settlement dropped (whatever became of
        `decision` since)."""
        history = self.history_of(target)
        settled = history.settled if history is not None else None
        if history is None or settled is None or settled.successor == decision.id:
            return False
        if settled.successor is None:  # the owner kept an answer: this ruling replaced the one dropped
            return any(e.event == "superseded" and e.successor == decision.id
                       and history.closed_a_dropped_answer(e, settled) for e in history.events)
        return any(e.event == "superseded" and e.successor == decision.id for e in history.events)

    def problems(self, *codes: str) -> Iterator[tuple[str, Problem]]:
        """The problems found while reading notes that belong to these rules, with each note's path. A note
        with no id yet is being written: VT045 alone speaks of it, once the owner has left it alone."""
        for path, problems in sorted(self.state.problems.items()):
            if lacks_id(self.properties.get(path)):
                continue
            for problem in problems:
                if problem.code in codes:
                    yield path, problem


def first_line(decision: Decision, *names: str) -> int:
    """The line of the first of these properties the note has; 1 when it has none of them."""
    for name in names:
        line = decision.line_of(name)
        if line:
            return line
    return 1


# -- reading ------------------------------------------------------------------------------------

def _git_env() -> dict[str, str]:
    # Inside a git hook these point at the repository running the hook; `-C` must decide instead.
    return {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}


def committed_text(file: Path) -> str | None:
    """The file as of git HEAD; None when it is not in a git repository or not committed."""
    folder, relative = file.parent, f"./{file.name}"
    if not folder.is_dir():
        folder, relative = folder.parent, f"./{file.parent.name}/{file.name}"
    try:  # `HEAD:./path` is relative to the folder git runs in: one call, no need to find the top first
        shown = subprocess.run(["git", "-C", str(folder), "show", f"HEAD:{relative}"], capture_output=True,
                               timeout=GIT_TIMEOUT_SECONDS, env=_git_env())
    except (OSError, subprocess.TimeoutExpired):
        return None
    if shown.returncode != 0:
        return None  # no commit yet, or the ledger is new since the last one
    return shown.stdout.decode("utf-8", errors="replace")


def read_ledger(path: Path, shown: str = LEDGER_PATH,
                in_transit_ok: bool = False) -> tuple[list[Event], list[tuple[int, str]]]:
    """A ledger file's events that can be read, and every damaged line (line, message). With `in_transit_ok`
    (another device's file), a torn last line is the part a carrier has not brought yet."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return [], []
    except OSError as error:
        return [], [(1, f"cannot be read: {error.strerror}")]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return [], [(raw[:error.start].count(b"\n") + 1, "ledger is not UTF-8")]
    events, damage = scan_ledger(text, shown)
    if in_transit_ok:
        damage = [(line, message) for line, message in damage if message != TORN]
    return [replace(event, source=shown) for event in events], damage


def ledger_lines(path: Path) -> list[str]:
    """A ledger file's lines, as many as it has newlines (plus a last one without its newline); none when it
    cannot be read as UTF-8."""
    try:
        lines = path.read_bytes().decode("utf-8").split("\n")
    except (OSError, UnicodeDecodeError):
        return []
    return lines[:-1] if lines and not lines[-1] else lines


def read_events(vault: Vault) -> LedgerReading:
    """The ledger's events as every command reads them (in the shared layout: the union, in order); when it
    is damaged, what `damaged_ledger` can read of it."""
    try:
        return vault.ledger.read(), []
    except (InconsistentVault, OSError):
        return damaged_ledger(vault)


def damaged_ledger(vault: Vault) -> LedgerReading:
    """What can be read of a damaged ledger, line by line (in the shared layout, in order), with each damaged
    line."""
    found: list[Event] = []
    damage: list[tuple[str, int, str]] = []
    for file in vault.ledger.files():
        events, damaged = read_ledger(file.path, file.display_path, file.in_transit_ok)
        found += events
        damage += [(file.display_path, line, message) for line, message in damaged]
    return (sorted(found, key=lambda e: e.clock or 0) if vault.ledger.shared else found), damage


def _questions_overflow(ws: Workspace, budget: str, today: dt.date, state: VaultState) -> str | None:
    return context(ws, budget, today, state).questions_overflow


def gather(vault: Vault, *, today: dt.date | None = None, now: float | None = None) -> Facts:
    """Read everything the rules look at, once."""
    ws = Workspace(vault)
    state = vault.load()
    facts = Facts(state=state, today=today or ws.today(), now=time.time() if now is None else now,
                  read_ledger_events=functools.partial(read_events, vault))
    for file in vault.ledger.files():
        ledger = LedgerFacts(file.display_path, ledger_lines(file.path))
        committed = committed_text(file.path)
        if committed is not None:
            # A committed last line without its newline is a torn append (VT024), not history: the next
            # write on its device cuts it off.
            ledger.committed = [line.rstrip("\r") for line in committed.split("\n")][:-1]
        facts.ledger_files.append(ledger)
    facts.ledger_lines_lost = [(item.shown, item.lines) for item in damaged_ledgers(vault.ledger)]
    facts.missing_questions = [d for d in ws.missing_rulings(state) if d.status is not Status.RULED]
    facts.agent_steps = agent_steps_not_held(ws, state)
    facts.properties, facts.property_lines, facts.body_lines = state.properties, state.property_lines, state.body_lines
    stat_keys = state.stat_keys or {}
    for path in [decision.path for decision in state.decisions] + [p for p, d in state.properties.items() if lacks_id(d)]:
        if path in stat_keys:  # as the read found it: what a remembered finding's time was taken from
            facts.mtimes[path] = stat_keys[path][1] / 1e9
            continue
        try:
            facts.mtimes[path] = (vault.root / path).stat().st_mtime
        except OSError:
            pass
    pages_exist = any(page_path(ws, name).exists() for name in PAGE_NAMES)
    if state.decisions or state.broken or pages_exist:
        built = build(ws, check=True, state=state, remembered=True)  # only its staleness and size are used
        facts.stale_pages = built.stale
        if built.pages.over_budget:
            facts.over_budget = built.pages.budget_message()
        for budget in LINTED_BUDGETS:
            overflow = remembered(ws, state, f"overflow {budget} {facts.today.isoformat()}",
                                  functools.partial(_questions_overflow, ws, budget, facts.today, state))
            if isinstance(overflow, str):
                facts.context_overflow.append(overflow)
    facts.open_questions_page = vault.relative(page_path(ws, OPEN_QUESTIONS))
    facts.merge_drivers_missing = merge_drivers_missing(vault.root)
    facts.remember = functools.partial(_remembered_findings, ws, state, facts.today)
    return facts


LINT_MEMO_FILE = "cache/lint-v2"


def _remembered_findings(ws: Workspace, state: VaultState, today: dt.date, find: Callable[[], Any],
                         anew: bool = False) -> Any:
    # Beyond what the pages are made from: every file name (a sealed body's link to another note is checked
    # against them), the date, and which ledger files may end in a line still in transit.
    files = hashlib.sha256("\0".join(sorted(state.files)).encode("utf-8")).hexdigest()
    transit = [(file.display_path, file.in_transit_ok) for file in ws.vault.ledger.files()]
    return remembered(ws, state, "findings", find, memo_file=LINT_MEMO_FILE,
                      extra=[today.isoformat(), files, transit], anew=anew)
