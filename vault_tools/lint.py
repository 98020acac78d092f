"""Lint: the vault's state turned into diagnostics, one stable code per rule, in the style of ruff.

`gather` does all the reading (notes, ledger, `git show`, file times, pinned
pages) and hands back `Facts`; every rule is a pure function of those facts.
`lint` runs the rules, applies the severities set in `config.yaml`, the
per-note `vault-tools-ignore` property and the paths asked for. `fix` does
the safe, mechanical repairs and nothing else: it never edits what the owner
wrote.
"""
from __future__ import annotations

import datetime as dt
import inspect
import os
import re
import subprocess
import time
import unicodedata
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, NamedTuple, Sequence

from . import notes
from .errors import ConfigError, InconsistentVault, NoteError, UsageError, VaultToolsError
from .ledger import LEDGER_FILE, Event, History, histories, normalise_body, scan_ledger, seal_hash, seal_payload
from .model import (
    DATE_FIELDS, DATETIME_FIELDS, Decision, LinkResolver, Problem, Status, build_decision, duplicate_ids,
    near_field_name, supersedes_cycle, TopicIndex,
)
from .dates import local_date
from .pages import OPEN_QUESTIONS, PAGE_NAMES
from .commands.build import build, page_path
from .commands.seal import seal
from .commands.workspace import STAMPED_FIELDS, Workspace
from .vault import CONFIG_FILE, STATE_DIR, Config, Vault, VaultState

ERROR = "error"
WARNING = "warning"
SEVERITIES = (ERROR, WARNING)
IGNORE_PROPERTY = "vault-tools-ignore"
LEDGER_PATH = f"{STATE_DIR}/{LEDGER_FILE}"
CONFIG_PATH = f"{STATE_DIR}/{CONFIG_FILE}"
FORMATS = ("text", "json", "github")
GIT_TIMEOUT_SECONDS = 10
CODE_PATTERN = re.compile(r"^VT\d{3}$")

# What Obsidian's Properties panel shows as a date / a date and time.
OBSIDIAN_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
OBSIDIAN_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?$")

# Statuses of a note that took effect as a ruling (it is current, or was later superseded or retracted).
TOOK_EFFECT = frozenset({Status.RULED, Status.SUPERSEDED, Status.RETRACTED})


@dataclass(frozen=True)
class Diagnostic:
    code: str
    severity: str
    path: str  # vault-relative, forward slashes
    line: int
    message: str

    @property
    def name(self) -> str:
        return RULES[self.code].name

    def sort_key(self) -> tuple[str, int, str, str]:
        return self.path, self.line, self.code, self.message


class Finding(NamedTuple):
    """What a rule reports; the rule's code and severity are added by `lint`."""

    path: str
    line: int | None
    message: str
    severity: str | None = None  # only for a rule whose severity depends on the case


# -- the facts every rule works from ------------------------------------------------------

@dataclass
class Facts:
    """Everything the rules need, read once. Rules only look at this; they read no files."""

    state: VaultState
    today: dt.date
    now: float  # seconds since the epoch, compared with file modification times
    events: list[Event] = field(default_factory=list)  # the ledger lines that could be read
    ledger_damage: list[tuple[int, str]] = field(default_factory=list)  # (line, message)
    ledger_lines: list[str] = field(default_factory=list)  # current ledger, one entry per line
    committed_ledger: list[str] | None = None  # the ledger at git HEAD; None when there is none to compare
    properties: dict[str, Mapping[str, Any]] = field(default_factory=dict)  # frontmatter of decision notes
    property_lines: dict[str, Mapping[str, int]] = field(default_factory=dict)  # the line of each property
    mtimes: dict[str, float] = field(default_factory=dict)
    body_lines: dict[str, int] = field(default_factory=dict)  # the line each decision note's body starts on
    stale_pages: list[str] = field(default_factory=list)
    over_budget: str | None = None  # the budget message, when the pages overflow it
    open_questions_page: str = "Pinned/Open questions.md"

    @property
    def config(self) -> Config:
        return self.state.config

    @cached_property
    def histories(self) -> dict[str, History]:
        return histories(self.events)

    @cached_property
    def by_id(self) -> dict[str, Decision]:
        return self.state.by_id()

    @cached_property
    def resolve(self) -> LinkResolver:
        return self.state.resolver()

    def sealed(self, decision: Decision) -> bool:
        history = self.histories.get(decision.id)
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
        """For each note, the notes that took effect as rulings and list it in `supersedes`."""
        found: dict[str, list[Decision]] = {}
        for decision in self.state.decisions:
            if decision.status in TOOK_EFFECT:
                for _, target in self.targets(decision):
                    if target is not None and target.id != decision.id:
                        found.setdefault(target.id, []).append(decision)
        return found

    def problems(self, *codes: str) -> Iterator[tuple[str, Problem]]:
        for path, problems in sorted(self.state.problems.items()):
            for problem in problems:
                if problem_code(problem) in codes:
                    yield path, problem


# -- the rules ------------------------------------------------------------------------------

Check = Callable[[Facts], Iterable[Finding]]


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: str
    check: Check
    severity_shown: str  # how the table shows the default severity

    @property
    def doc(self) -> str:
        return inspect.cleandoc(self.check.__doc__ or "")

    def section(self, heading: str) -> str:
        """One `## heading` section of the doc, as a single line of Markdown."""
        parts = re.split(r"^## +(.+)$", self.doc, flags=re.MULTILINE)
        sections = {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}
        return " ".join(sections.get(heading, "").split())


RULES: dict[str, Rule] = {}
DOC_HEADINGS = ("What it does", "Why", "How to fix")


def rule(code: str, name: str, severity: str, severity_shown: str | None = None) -> Callable[[Check], Check]:
    def register(check: Check) -> Check:
        assert code not in RULES, f"{code} is registered twice"
        RULES[code] = Rule(code, name, severity, check, severity_shown or severity)
        return check

    return register


def problem_code(problem: Problem) -> str:
    """Which rule a schema problem found while reading a note belongs to."""
    if problem.message.startswith("is required"):
        return "VT002"
    if problem.field == "status" and problem.message.startswith("unknown status"):
        return "VT006"
    if problem.field == "topics" and "kebab-case" in problem.message:
        return "VT004"
    if problem.message.startswith("must be at least"):
        return "VT005"
    return "VT003"


def _at(decision: Decision, *names: str) -> int:
    for name in names:
        line = decision.line_of(name)
        if line:
            return line
    return 1


def _field_message(problem: Problem) -> str:
    return f"{problem.field} {problem.message}" if problem.field else problem.message


# schema ---------------------------------------------------------------------------------------

@rule("VT001", "unreadable-note", ERROR)
def unreadable_note(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a decision note (its frontmatter says `type: decision`) that cannot be read at all: broken
    YAML, frontmatter that is not a mapping of properties, text that is not UTF-8, YAML anchors or tags.

    ## Why
    A note the tool cannot read is invisible to `ask`, `lookup` and the pinned pages, so a ruling hidden
    by a typo would let a settled question be asked again. Every write is refused until it is fixed.

    ## How to fix
    Open the note at the line named and correct the frontmatter (an unclosed bracket or quote is the
    usual cause). Obsidian's Properties panel shows "invalid properties" for the same notes.
    """
    with_problems = set(facts.state.problems)
    for error in facts.state.broken:
        if error.path not in with_problems:  # notes with schema problems are reported field by field
            yield Finding(error.path or "?", error.line, error.message)


@rule("VT002", "missing-field", ERROR)
def missing_field(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a property the note's status requires but the note lacks: `id`, `status`, `topics` and
    `summary` always; `ruled_at`/`ruled_by` on a ruling; `superseded_by`, `reason` and `ruled_at` on a
    superseded note; `reason` on a withdrawn or retracted one. A ruled note that is not sealed yet may
    lack `ruled_at`/`ruled_by`: sealing stamps them.

    ## Why
    Without these the note's place in the lifecycle cannot be told, dated or explained.

    ## How to fix
    Add the property named in the message, in Obsidian's Properties panel or in the frontmatter.
    """
    by_path = {d.path: d for d in facts.state.decisions}
    for path, problem in facts.problems("VT002"):
        decision = by_path.get(path)
        if (decision is not None and decision.status is Status.RULED and problem.field in STAMPED_FIELDS
                and not facts.sealed(decision)):
            continue
        yield Finding(path, problem.line, _field_message(problem))


@rule("VT003", "invalid-field-value", ERROR)
def invalid_field_value(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a property of the wrong type or format: text given as a list (or the reverse), an `id` not
    like `D-0007`, a multi-line `summary`, a date that is not a date, a date not written in Obsidian's
    own format (`2026-07-17`, `2026-07-17T08:30:00`), or a `vault-tools-ignore` naming no rule.

    ## Why
    A value of the wrong type is misread or dropped; a date in another format shows as plain text in
    Obsidian's Properties panel and sorts wrongly.

    ## How to fix
    Write the value as the message says; for dates, pick the date in the Properties panel and Obsidian
    writes the right format.
    """
    for path, problem in facts.problems("VT003"):
        yield Finding(path, problem.line, _field_message(problem))
    for path, data in sorted(facts.properties.items()):
        lines = facts.property_lines.get(path, {})
        refused = {problem.field for problem in facts.state.problems.get(path, [])}  # reported above
        for names, pattern, example in ((DATETIME_FIELDS, OBSIDIAN_DATETIME, "2026-07-17T08:30:00"),
                                        (DATE_FIELDS, OBSIDIAN_DATE, "2026-07-17")):
            for key in names:
                value = data.get(key)
                if key in refused or value in (None, "") or isinstance(value, list | dict) or hasattr(value, "items"):
                    continue
                text = str(value).strip()
                if not pattern.match(text) and _parses_as_date(text):
                    yield Finding(path, lines.get(key),
                                  f"{key} {text!r} is not in Obsidian's date format; write it as {example}")
        for problem in ignore_problems(data.get(IGNORE_PROPERTY)):
            yield Finding(path, lines.get(IGNORE_PROPERTY), f"{IGNORE_PROPERTY} {problem}")


def _parses_as_date(text: str) -> bool:
    try:
        dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        return True
    except ValueError:
        try:
            dt.date.fromisoformat(text)
            return True
        except ValueError:
            return False


@rule("VT004", "topic-not-kebab-case", ERROR)
def topic_not_kebab_case(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a topic that is not a kebab-case key: lower-case letters and digits in words joined by
    single hyphens (`article-footer`, not `Article Footer` or `article_footer`).

    ## Why
    Topics are how `ask` finds settled questions; one spelling per topic keeps the match reliable.

    ## How to fix
    Rewrite the topic in kebab-case, matching the spelling other notes use for it.
    """
    for path, problem in facts.problems("VT004"):
        yield Finding(path, problem.line, f"topic {problem.message}")


@rule("VT005", "text-too-short", ERROR)
def text_too_short(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a `summary`, `reason` or `reask_reason` shorter than 20 characters.

    ## Why
    The summary is what an agent reads on the pinned pages and must make sense on its own; a reason is
    the only record of why a ruling changed or a settled question was asked again.

    ## How to fix
    Write a full sentence that stands on its own.
    """
    for path, problem in facts.problems("VT005"):
        yield Finding(path, problem.line, _field_message(problem))


@rule("VT006", "unknown-status", ERROR)
def unknown_status(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a `status` that is not one of `open`, `ruled`, `superseded`, `withdrawn`, `retracted`.

    ## Why
    The status is the note's whole lifecycle state; an unknown one (`accepted`, `done`) leaves the
    note out of every page and lookup.

    ## How to fix
    Use one of the five statuses: an answered question is `ruled`.
    """
    for path, problem in facts.problems("VT006"):
        yield Finding(path, problem.line, problem.message)


@rule("VT007", "misspelt-field", ERROR)
def misspelt_field(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a property of a decision note whose name is close to one the ledger gives a meaning to but
    is not it: `supercedes`, `ruledAt`, `revisit-by`.

    ## Why
    A misspelt property is silently ignored: a `supercedes` never supersedes anything, so two rulings
    on one topic both stay current.

    ## How to fix
    Rename the property to the name suggested. If it really is a property of your own, add
    `vault-tools-ignore: [VT007]` to the note or rename it further away.
    """
    for path, data in sorted(facts.properties.items()):
        lines = facts.property_lines.get(path, {})
        for key in data:
            known = near_field_name(str(key))
            if known is not None and str(key) != IGNORE_PROPERTY:
                yield Finding(path, lines.get(str(key)), f"unknown property {str(key)!r}: did you mean {known!r}?")


@rule("VT008", "duplicate-id", ERROR)
def duplicate_id(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports decision notes that share an `id`.

    ## Why
    Commands, links and the ledger name a decision by its id; two notes with one id make every one of
    them ambiguous. It usually comes from copying a note to start a new one.

    ## How to fix
    Give the newer note a fresh id (`vault-tools ask` and `rule` allocate one), or delete the copy.
    """
    for decision_id, found in sorted(duplicate_ids(facts.state.decisions).items()):
        for decision in found:
            others = ", ".join(d.path for d in found if d is not decision)
            yield Finding(decision.path, _at(decision, "id"), f"id {decision_id} is also used by {others}")


# lifecycle ------------------------------------------------------------------------------------

@rule("VT010", "dangling-supersedes", ERROR)
def dangling_supersedes(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a `supersedes` link that leads to no decision note.

    ## Why
    The ruling it names stays current: an agent keeps citing a ruling the owner meant to replace.

    ## How to fix
    Point the link at the right note (`"[[D-0003 Title]]"`); if that note was renamed, Obsidian updates
    links when the rename is done inside Obsidian.
    """
    for decision in facts.state.decisions:
        for link, target in facts.targets(decision):
            if target is None:
                yield Finding(decision.path, _at(decision, "supersedes"),
                              f"supersedes {link!r}, but no decision note is called that")


@rule("VT011", "supersedes-not-applied", ERROR)
def supersedes_not_applied(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a ruling whose `supersedes` did not take effect: the note it names is not `superseded` by
    this one. Either that note cannot be superseded (it is open, withdrawn, retracted or superseded by
    another ruling), or this ruling is sealed and the note it replaced is still `ruled`. A ruling that
    is not sealed yet is left alone while its target is still current: sealing applies the link.

    ## Why
    Only a current ruling can be superseded, and a sealed supersession that did not apply leaves two
    current rulings on one topic.

    ## How to fix
    Remove the link if it names the wrong note. If the old note was put back to `ruled` by hand, restore
    it from git; `vault-tools show ID` lists what the ledger recorded.
    """
    for decision in facts.state.decisions:
        if decision.status not in TOOK_EFFECT:
            continue  # on an open note, supersedes is a proposal
        for _, target in facts.targets(decision):
            if target is None or target.id == decision.id or len(facts.successors.get(target.id, [])) > 1:
                continue  # reported as dangling, as a cycle, or as two successors
            where = _at(decision, "supersedes")
            if target.status is Status.SUPERSEDED:
                successor = facts.successor_of(target)
                if successor is None or successor.id != decision.id:
                    other = successor.id if successor else target.superseded_by or "nothing"
                    yield Finding(decision.path, where, f"supersedes {target.id}, but {target.id} says it was "
                                                        f"superseded by {other}")
            elif target.status is Status.RULED:
                if facts.sealed(decision) or decision.status is not Status.RULED:
                    yield Finding(decision.path, where, f"supersedes {target.id}, but {target.id} is still ruled")
            else:
                yield Finding(decision.path, where, f"supersedes {target.id}, which is {target.status.value}; "
                                                    "only a current ruling can be superseded")


@rule("VT012", "supersedes-cycle", ERROR)
def supersedes_cycle_rule(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports `supersedes` links that lead in a circle (D-0002 supersedes D-0001, which supersedes
    D-0002), including a note that supersedes itself.

    ## Why
    In a circle no ruling is the latest, so there is no current answer to give an agent.

    ## How to fix
    Remove the link from the older note: only the newer ruling says what it replaces.
    """
    seen: set[frozenset[str]] = set()
    for decision in sorted(facts.state.decisions, key=lambda d: d.number):
        cycle = supersedes_cycle(decision, facts.by_id, facts.resolve)
        if cycle and frozenset(cycle) not in seen:
            seen.add(frozenset(cycle))
            yield Finding(decision.path, _at(decision, "supersedes"),
                          f"supersedes links form a cycle: {' -> '.join(cycle)}")


@rule("VT013", "superseded-without-successor", ERROR)
def superseded_without_successor(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a `superseded` note whose `superseded_by` leads to no decision note, or to a note that does
    not list it in `supersedes`. (A successor that lists it but never became a ruling is VT015.)

    ## Why
    A superseded ruling must say what replaced it; otherwise an agent finds no current answer and
    cannot tell why the old one stopped counting.

    ## How to fix
    Point `superseded_by` at the ruling that replaced it and make that ruling list it in `supersedes`.
    If nothing replaced it, the note was meant to be `retracted`: restore it and run
    `vault-tools retract ID --reason ...`.
    """
    for decision in facts.state.decisions:
        if decision.status is not Status.SUPERSEDED or not decision.superseded_by:
            continue
        where = _at(decision, "superseded_by")
        successor = facts.successor_of(decision)
        if successor is None:
            yield Finding(decision.path, where,
                          f"superseded by {decision.superseded_by!r}, but no decision note is called that")
            continue
        points_back = any(target is not None and target.id == decision.id for _, target in facts.targets(successor))
        if not points_back:
            yield Finding(decision.path, where,
                          f"superseded by {successor.id}, but {successor.id} does not list it in supersedes")
        # a successor that points back but never became a ruling is reported on the successor (VT015)


@rule("VT014", "multiple-successors", ERROR)
def multiple_successors(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a ruling that two or more rulings both claim to supersede.

    ## Why
    Each ruling has at most one successor; with two, the supersession chain forks and an agent cannot
    tell which answer is current.

    ## How to fix
    Keep the link in the ruling that really replaced it (the one its `superseded_by` names); the other
    should supersede that ruling instead, or not at all.
    """
    for target_id, found in sorted(facts.successors.items()):
        if len(found) < 2:
            continue
        target = facts.by_id[target_id]
        recorded = facts.successor_of(target)
        for successor in sorted(found, key=lambda d: d.number):
            if recorded is not None and successor.id == recorded.id:
                continue
            others = ", ".join(d.id for d in found if d is not successor)
            yield Finding(successor.path, _at(successor, "supersedes"),
                          f"supersedes {target_id}, which {others} also supersedes; a ruling has one successor")


@rule("VT015", "supersession-without-ruling", ERROR)
def supersession_without_ruling(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports an open or withdrawn note that acts as if it were a ruling: a note it lists in `supersedes`
    has been marked `superseded` by it. On an open note `supersedes` is only a proposal.

    ## Why
    Only a ruling can supersede. Here a question, or a dropped question, has knocked a current ruling
    off the log without the owner ruling on it.

    ## How to fix
    If the owner did decide, set this note's status to `ruled` (it is then sealed). Otherwise restore
    the superseded note from git so it is current again.
    """
    for decision in facts.state.decisions:
        if decision.status not in (Status.OPEN, Status.WITHDRAWN):
            continue
        for _, target in facts.targets(decision):
            if target is not None and target.status is Status.SUPERSEDED:
                successor = facts.successor_of(target)
                if successor is not None and successor.id == decision.id:
                    yield Finding(decision.path, _at(decision, "supersedes", "status"),
                                  f"is {decision.status.value}, but {target.id} is marked superseded by it; "
                                  "only a ruling can supersede")


# seals and ledger -----------------------------------------------------------------------------

@rule("VT020", "unsealed-ruling", ERROR, "error (warning inside the settle window)")
def unsealed_ruling(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a ruled note that the ledger has not sealed. Inside the settle window (`settle_seconds`
    after the note was last saved) it is a warning: the owner may still be fixing typos, and the
    watcher seals it when the window ends. After that it is an error.

    ## Why
    Until it is sealed a ruling can still change without trace, and its `supersedes` have not been
    applied.

    ## How to fix
    Run `vault-tools seal ID` (or `vault-tools lint --fix`, which seals rulings past the window), or
    keep `vault-tools watch` running.
    """
    settle = facts.config.settle_seconds
    for decision in facts.state.decisions:
        if decision.status is not Status.RULED or facts.sealed(decision):
            continue
        where = _at(decision, "status")
        age = facts.now - facts.mtimes.get(decision.path, facts.now)
        if age < settle:
            yield Finding(decision.path, where, f"{decision.id} is ruled but not sealed yet; it is sealed when "
                                                f"the settle window ({settle:g} s) ends", WARNING)
        else:
            yield Finding(decision.path, where, f"{decision.id} is ruled but not sealed; "
                                                f"run `vault-tools seal {decision.id}`")


@rule("VT021", "sealed-note-edited", ERROR)
def sealed_note_edited(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a sealed note whose meaning no longer matches its seal: a sealed property (`summary`,
    `topics`, `ruled_at`, `source`, `supersedes`, ...) or the body was edited in place. Renaming or
    moving the note, Obsidian rewriting links, re-quoting YAML, line endings and properties the ledger
    does not cover (`tags`, `aliases`, a linter's `modified`) are not edits.

    ## Why
    A ruling is immutable: an agent that cited it must be able to trust it still says the same. A
    change is a new ruling that supersedes the old one, with a reason.

    ## How to fix
    Undo the edit (`git checkout -- PATH`, or `git diff` to see it). To change the ruling, write a new
    note with `supersedes: ["[[old note]]"]` and a `reason`, or run
    `vault-tools rule --supersedes ID --reason ...`. The watcher does this for you while it runs.
    """
    for decision in facts.state.decisions:
        history = facts.histories.get(decision.id)
        if history is None or not history.sealed or history.seal is None or not history.seal.hash:
            continue
        if seal_hash(decision, facts.resolve, facts.config.tz) == history.seal.hash:
            continue
        changed = _changed_parts(decision, history.seal, facts)
        names = [name for name, _ in changed]
        differ = f"{', '.join(names)} differ" if len(names) > 1 else f"{names[0]} differs" if names else "it differs"
        line = next((line for _, line in changed if line), None)
        yield Finding(decision.path, line or _at(decision, "id"),
                      f"{decision.id} was edited after it was sealed ({differ} from the sealed text); "
                      "supersede a sealed ruling instead of editing it")


def _changed_parts(decision: Decision, sealed: Event, facts: Facts) -> list[tuple[str, int | None]]:
    """Which sealed fields (and the body) differ from the text the seal event kept, with the line of each."""
    if not sealed.text:
        return []
    try:
        note = notes.parse_text(sealed.text.removeprefix(notes.BOM), Path(decision.path))
        before, _ = build_decision(note.data, path=decision.path, body=note.body, key_lines=note.key_lines)
    except (NoteError, TypeError, AttributeError):
        return []
    if before is None:
        return []
    old = seal_payload(before, facts.resolve, facts.config.tz)
    new = seal_payload(decision, facts.resolve, facts.config.tz)
    changed: list[tuple[str, int | None]] = []
    for name in new:
        if old.get(name) == new[name]:
            continue
        if name != "body":
            changed.append((name, decision.line_of(name)))
            continue
        start = facts.body_lines.get(decision.path)
        old_lines, new_lines = normalise_body(before.body).split("\n"), normalise_body(decision.body).split("\n")
        first = next((i for i, (a, b) in enumerate(zip(old_lines, new_lines)) if a != b),
                     min(len(old_lines), len(new_lines)))
        # Bodies are compared without their leading blank lines; count those back in for the file's line.
        body = decision.body.replace("\r\n", "\n")
        leading_blank_lines = len(body) - len(body.lstrip("\n"))
        changed.append(("body", start + leading_blank_lines + first if start else None))
    return changed


@rule("VT022", "status-differs-from-ledger", ERROR)
def status_differs_from_ledger(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a note whose `status` (or `superseded_by`, or the `reason` of its end) disagrees with
    what the ledger recorded: a superseded or retracted note put back to `ruled`, a ruling marked
    `superseded` or `retracted` by hand, a withdrawn question reopened, a reason rewritten. A question the owner has just ruled or withdrawn in Obsidian
    is not a disagreement: the ledger catches up when it is sealed.

    ## Why
    `superseded`, `withdrawn` and `retracted` are final, and moving a ruling to them is the tool's job,
    so that the reason and the successor are recorded.

    ## How to fix
    Put the status back to what `vault-tools show ID` says the ledger recorded, then use
    `vault-tools rule --supersedes`, `retract` or `withdraw` for the change you meant.
    """
    for decision in facts.state.decisions:
        history = facts.histories.get(decision.id)
        recorded = history.status if history else None
        if recorded is None:
            continue
        where = _at(decision, "status")
        if decision.status is not recorded:
            if recorded is Status.OPEN and decision.status in (Status.RULED, Status.WITHDRAWN):
                continue
            yield Finding(decision.path, where, f"status is {decision.status.value}, but the ledger recorded "
                                                f"{recorded.value}")
            continue
        closing = next((e for e in reversed(history.events) if e.event in ("superseded", "withdrawn", "retracted")),
                       None) if history is not None else None
        if closing is not None and closing.reason and decision.reason != closing.reason:
            yield Finding(decision.path, _at(decision, "reason"),
                          f"reason differs from the one the ledger recorded ({closing.reason!r})")
        if recorded is Status.SUPERSEDED and closing is not None:
            successor = facts.successor_of(decision)
            if closing.successor and successor is not None and successor.id != closing.successor:
                yield Finding(decision.path, _at(decision, "superseded_by"),
                              f"superseded_by names {successor.id}, but the ledger recorded {closing.successor}")


@rule("VT023", "sealed-note-missing", ERROR)
def sealed_note_missing(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a ruling the ledger sealed whose note is no longer in the vault (deleted, moved into a
    skipped folder, or its `type: decision` removed).

    ## Why
    A deleted ruling is a reversal with no trace: the question it settled can be asked again.

    ## How to fix
    Restore the note (`git checkout`, or Obsidian's `.trash`). To drop a ruling, keep the note and run
    `vault-tools retract ID --reason ...`.
    """
    present = {d.id for d in facts.state.decisions}
    unreadable = [error.path or "" for error in facts.state.broken]
    for decision_id, history in sorted(facts.histories.items()):
        if not history.sealed or decision_id in present:
            continue
        if any(path == history.path or path.rsplit("/", 1)[-1].startswith(decision_id + " ") for path in unreadable):
            continue  # the note is there but cannot be read (VT001)
        line = next((e.line for e in reversed(history.events) if e.event == "sealed"), None)
        yield Finding(LEDGER_PATH, line, f"{decision_id} is sealed in the ledger, but no decision note has that id "
                                         f"(last seen at {history.path})")


@rule("VT024", "damaged-ledger-line", ERROR)
def damaged_ledger_line(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a ledger line that is torn (a write was interrupted), is not a JSON event, or whose checksum
    no longer matches its content (it was edited).

    ## Why
    The ledger is the append-only record that seals are checked against; a damaged line means history
    can no longer be trusted, so every write is refused until it is resolved.

    ## How to fix
    Restore `.vault-tools/ledger.jsonl` from git (`git checkout -- .vault-tools/ledger.jsonl`), or remove
    a torn last line by hand. Never edit a ledger line.
    """
    for line, message in facts.ledger_damage:
        yield Finding(LEDGER_PATH, line, message)


@rule("VT025", "ledger-history-rewritten", ERROR)
def ledger_history_rewritten(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    When the vault is in a git repository, compares the ledger with the last commit
    (`git show HEAD:.vault-tools/ledger.jsonl`) and reports every committed line that was changed or
    removed. Lines added after the committed ones are how the ledger grows.

    ## Why
    The ledger is append-only. A rewritten line can carry a valid checksum, so only the committed copy
    shows that history was changed.

    ## How to fix
    Restore the committed lines (`git checkout -- .vault-tools/ledger.jsonl`); new events are appended
    again by the commands that make them.
    """
    if facts.committed_ledger is None:
        return
    current = [line.rstrip("\r") for line in facts.ledger_lines]
    remaining: dict[str, int] = {}
    for line in current:
        remaining[line] = remaining.get(line, 0) + 1
    committed_set: dict[str, int] = {}
    for line in facts.committed_ledger:
        committed_set[line] = committed_set.get(line, 0) + 1
    for number, line in enumerate(facts.committed_ledger, 1):
        if not line.strip():
            continue
        if remaining.get(line, 0) > 0:
            remaining[line] -= 1
            continue
        here = current[number - 1] if number <= len(current) else None
        if here is not None and here.strip() and here not in committed_set:
            yield Finding(LEDGER_PATH, number, f"line {number} was changed since the last commit")
        else:
            yield Finding(LEDGER_PATH, number, f"committed line {number} was removed")


# pinned pages ---------------------------------------------------------------------------------

@rule("VT030", "stale-pinned-page", ERROR)
def stale_pinned_page(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a pinned page (open questions, decisions log, archive) that is missing or differs from what
    `vault-tools build` would write for today. A vault with no decision notes and no pages is left alone.

    ## Why
    Agents load these pages at the start of every session; a stale page shows rulings that were
    reversed and hides questions that are open.

    ## How to fix
    Run `vault-tools build` (or `vault-tools lint --fix`), or keep `vault-tools watch` running. Never
    edit the pages by hand.
    """
    for path in facts.stale_pages:
        yield Finding(path, 1, "is out of date with the decision notes; run `vault-tools build`")


@rule("VT031", "pages-over-budget", ERROR)
def pages_over_budget(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports when the open questions alone make the pages an agent loads larger than the budget
    (`budget.lines`, `budget.bytes`). Rulings that do not fit move to the archive with a note saying so;
    open questions are never cut.

    ## Why
    What goes past an agent's load limit is dropped silently, and open questions must always be seen.

    ## How to fix
    Answer or withdraw questions, or raise the budget in `.vault-tools/config.yaml` if your agent loads
    more.
    """
    if facts.over_budget:
        yield Finding(facts.open_questions_page, 1, facts.over_budget)


# hygiene --------------------------------------------------------------------------------------

@rule("VT040", "stale-question", WARNING)
def stale_question(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a question open for longer than `stale_after_days` (default 14), counted from `asked_at`.

    ## Why
    An open question is work the owner has not done; left long enough it stops being seen.

    ## How to fix
    Rule on it, or withdraw it with `vault-tools withdraw ID --reason ...`.
    """
    limit = facts.config.stale_after_days
    for decision in facts.state.decisions:
        if decision.status is not Status.OPEN or decision.asked_at is None:
            continue
        age = (facts.today - local_date(decision.asked_at, facts.config.tz)).days
        if age > limit:
            yield Finding(decision.path, _at(decision, "asked_at"),
                          f"{decision.id} has been open for {age} days (stale_after_days is {limit})")


@rule("VT041", "revisit-date-passed", WARNING)
def revisit_date_passed(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a current ruling whose `revisit_by` date has passed.

    ## Why
    The owner asked to look at this ruling again by that date.

    ## How to fix
    Review it with the owner: confirm it with a new ruling that supersedes it (with a new `revisit_by`),
    or retract it. To keep it as it is, add `vault-tools-ignore: [VT041]` to the note.
    """
    for decision in facts.state.decisions:
        if decision.status is Status.RULED and decision.revisit_by and decision.revisit_by < facts.today:
            yield Finding(decision.path, _at(decision, "revisit_by"),
                          f"{decision.id} was to be revisited by {decision.revisit_by.isoformat()}")


@rule("VT042", "similar-topics", WARNING)
def similar_topics(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports topics that look like variants of each other: plural and singular, another word order, a
    missing hyphen, or one typo (`article-footer`, `article-footers`, `footer-article`,
    `artcle-footer`). It uses the same near-match as `ask`. The less used spelling is reported.

    ## Why
    `ask` and `lookup` treat them as one topic anyway, but pages group by exact spelling, and a reader
    cannot tell whether two topics were meant to differ.

    ## How to fix
    Use one spelling in notes that are not sealed yet. For sealed notes add
    `vault-tools-ignore: [VT042]`, since their topics cannot change.
    """
    uses: dict[str, list[Decision]] = {}
    for decision in sorted(facts.state.decisions, key=lambda d: d.number):
        for topic in decision.topics:
            uses.setdefault(topic, []).append(decision)
    # The most used spelling (then the earliest) of each group is the one the others are measured against.
    canonical = TopicIndex()
    for topic in sorted(uses, key=lambda t: (-len(uses[t]), uses[t][0].number, t)):
        common = next(iter(canonical.matches(topic)), None)
        if common is None:
            canonical.add(topic)
            continue
        users = ", ".join(d.id for d in uses[common][:3]) + (", ..." if len(uses[common]) > 3 else "")
        for decision in uses[topic]:
            yield Finding(decision.path, _at(decision, "topics"),
                          f"topic {topic!r} looks like a variant of {common!r} (used by {users})")


@rule("VT043", "ruling-without-source", WARNING)
def ruling_without_source(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a current ruling with no `source`.

    ## Why
    The source (a link to a note, "chat", a message id) is how anyone checks later that the owner
    really said this.

    ## How to fix
    Add `source` before the ruling is sealed. A sealed ruling cannot take one any more: add
    `vault-tools-ignore: [VT043]` to acknowledge it, or turn the rule off in `.vault-tools/config.yaml`.
    """
    for decision in facts.state.decisions:
        if decision.status is Status.RULED and not decision.source:
            yield Finding(decision.path, _at(decision, "status"), f"{decision.id} is a ruling with no source")


# -- running the rules ----------------------------------------------------------------------

def ignore_problems(value: Any) -> list[str]:
    """What is wrong with a `vault-tools-ignore` value (nothing when it is absent)."""
    if value is None:
        return []
    codes = ignored_codes(value)
    if codes is None:
        return ["must be a list of rule codes, like [VT043]"]
    return [f"names no rule: {code!r}" for code in sorted(codes) if code not in RULES]


def ignored_codes(value: Any) -> set[str] | None:
    if value is None:
        return set()
    if isinstance(value, str):
        items: list[Any] = [part for part in re.split(r"[,\s]+", value) if part]
    elif isinstance(value, list):
        items = list(value)
    else:
        return None
    if not all(isinstance(item, str) for item in items):
        return None
    return {item.strip().upper() for item in items}


def check_config(config: Config) -> dict[str, str]:
    """The severity overrides of `config.yaml`; refuses a code that names no rule."""
    for code, setting in config.lint.items():
        if code not in RULES:
            raise ConfigError(f"lint: {code!r} names no rule (known: {', '.join(RULES)})", path=CONFIG_PATH)
        if setting not in (ERROR, WARNING, "off"):
            raise ConfigError(f"lint: {code} must be error, warning or off, not {setting!r}", path=CONFIG_PATH)
    return dict(config.lint)


@dataclass
class Report:
    diagnostics: list[Diagnostic]
    ignored: int = 0  # findings a note opted out of with vault-tools-ignore
    fixed: list[str] = field(default_factory=list)  # what --fix did
    not_fixed: list[str] = field(default_factory=list)  # what --fix could not do, and why

    @property
    def errors(self) -> int:
        return sum(1 for d in self.diagnostics if d.severity == ERROR)

    @property
    def warnings(self) -> int:
        return sum(1 for d in self.diagnostics if d.severity == WARNING)

    def failed(self, strict: bool = False) -> bool:
        return self.errors > 0 or (strict and self.warnings > 0)


def _within(path: str, scopes: Sequence[str]) -> bool:
    path = unicodedata.normalize("NFC", path)  # a name typed on one system may be spelt otherwise on disk
    return any(scope in ("", ".") or path == scope or path.startswith(scope.rstrip("/") + "/")
               for scope in (unicodedata.normalize("NFC", scope) for scope in scopes))


def lint(facts: Facts, paths: Sequence[str] | None = None) -> Report:
    """Every rule over the facts; `paths` (vault-relative) limit what is reported, not what is checked."""
    overrides = check_config(facts.config)
    diagnostics: list[Diagnostic] = []
    ignored = 0
    for code, rule_ in RULES.items():
        setting = overrides.get(code)
        if setting == "off":
            continue
        for finding in rule_.check(facts):
            if paths is not None and not _within(finding.path, paths):
                continue
            if code in (ignored_codes(facts.properties.get(finding.path, {}).get(IGNORE_PROPERTY)) or set()):
                ignored += 1
                continue
            severity = setting or finding.severity or rule_.severity
            diagnostics.append(Diagnostic(code, severity, finding.path, finding.line or 1, finding.message))
    diagnostics.sort(key=Diagnostic.sort_key)
    return Report(diagnostics, ignored)


# -- gathering (all the I/O) ----------------------------------------------------------------

def _git_env() -> dict[str, str]:
    # Inside a git hook these point at the repository running the hook; `-C` must decide instead.
    return {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}


def committed_text(file: Path) -> str | None:
    """The file as of git HEAD; None when it is not in a git repository or not committed."""
    folder = file.parent if file.parent.is_dir() else file.parent.parent
    try:
        top = subprocess.run(["git", "-C", str(folder), "rev-parse", "--show-toplevel"], capture_output=True,
                             text=True, timeout=GIT_TIMEOUT_SECONDS, env=_git_env())
        if top.returncode != 0:
            return None
        toplevel = Path(top.stdout.strip()).resolve()
        relative = file.resolve().relative_to(toplevel).as_posix()
        shown = subprocess.run(["git", "-C", str(toplevel), "show", f"HEAD:{relative}"], capture_output=True,
                               timeout=GIT_TIMEOUT_SECONDS, env=_git_env())
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None
    if shown.returncode != 0:
        return None  # no commit yet, or the ledger is new since the last one
    return shown.stdout.decode("utf-8", errors="replace")


def read_ledger(path: Path) -> tuple[list[str], list[Event], list[tuple[int, str]]]:
    """The ledger's lines, the events that can be read, and every damaged line (line, message)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return [], [], []
    except OSError as error:
        return [], [], [(1, f"cannot be read: {error.strerror}")]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return [], [], [(raw[:error.start].count(b"\n") + 1, "ledger is not UTF-8")]
    events, damage = scan_ledger(text, LEDGER_PATH)
    lines = text.split("\n")
    return lines[:-1] if lines and not lines[-1] else lines, events, damage


def gather(vault: Vault, *, today: dt.date | None = None, now: float | None = None) -> Facts:
    """Read everything the rules look at, once."""
    ws = Workspace(vault)
    state = vault.load()
    facts = Facts(state=state, today=today or ws.today(), now=time.time() if now is None else now)
    try:  # an intact ledger is read once, and remembered for the page check below
        facts.events = vault.ledger.read()
        text = vault.ledger.path.read_text(encoding="utf-8") if vault.ledger.path.exists() else ""
        facts.ledger_lines = text.split("\n")[:-1] if text.endswith("\n") else text.split("\n") if text else []
    except (InconsistentVault, OSError):  # damaged: read what can be read, line by line
        facts.ledger_lines, facts.events, facts.ledger_damage = read_ledger(vault.ledger.path)
    committed = committed_text(vault.ledger.path)
    if committed is not None:
        facts.committed_ledger = [line.rstrip("\r") for line in committed.split("\n")]
        if facts.committed_ledger and not facts.committed_ledger[-1]:
            facts.committed_ledger.pop()
    facts.properties, facts.property_lines, facts.body_lines = state.properties, state.property_lines, state.body_lines
    for decision in state.decisions:
        try:
            facts.mtimes[decision.path] = (vault.root / decision.path).stat().st_mtime
        except OSError:
            pass
    pages_exist = any(page_path(ws, name).exists() for name in PAGE_NAMES)
    if state.decisions or state.broken or pages_exist:
        built = build(ws, facts.today, check=True, state=state)
        facts.stale_pages = built.stale
        if built.pages.over_budget:
            facts.over_budget = built.pages.budget_message()
    facts.open_questions_page = vault.relative(page_path(ws, OPEN_QUESTIONS))
    return facts


def report_paths(root: Path, paths: Iterable[Path], cwd: Path | None = None) -> list[str] | None:
    """The paths asked for, relative to the vault; None when none were given."""
    given = list(paths)
    if not given:
        return None
    found = []
    for path in given:
        absolute = (cwd or Path.cwd()) / path.expanduser()
        if not absolute.exists():
            raise UsageError("no such file or folder", path=str(path))
        try:
            relative = absolute.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            raise UsageError("is not inside the vault", path=str(path)) from None
        found.append("" if relative == "." else relative)
    return found


# -- fixing ---------------------------------------------------------------------------------

def fix(vault: Vault, *, today: dt.date | None = None, now: float | None = None) -> tuple[list[str], list[str]]:
    """Seal rulings past their settle window, then rebuild stale pages. Returns (done, not done)."""
    ws = Workspace(vault)
    state = vault.load()
    moment = time.time() if now is None else now
    _, events, _ = read_ledger(vault.ledger.path)
    known = histories(events)
    due = []
    for decision in sorted(state.decisions, key=lambda d: d.number):
        history = known.get(decision.id)
        if decision.status is not Status.RULED or (history is not None and history.sealed):
            continue
        try:
            age = moment - vault.path_of(decision).stat().st_mtime
        except OSError:
            continue
        if age >= vault.config.settle_seconds:
            due.append(decision.id)
    done: list[str] = []
    not_done: list[str] = []
    if due:
        try:
            done += [f"sealed {d.id}" for d in seal(ws, due)]
        except VaultToolsError:
            for decision_id in due:  # seal what can be sealed, say why the rest cannot
                try:
                    done += [f"sealed {d.id}" for d in seal(ws, [decision_id])]
                except VaultToolsError as error:
                    not_done.append(f"could not seal {decision_id}: {error}")
    built = build(ws, today)
    done += [f"rebuilt {path}" for path in built.written]
    return done, not_done


# -- output ---------------------------------------------------------------------------------

def format_text(diagnostic: Diagnostic) -> str:
    return f"{diagnostic.path}:{diagnostic.line}: {diagnostic.code} {diagnostic.severity}: {diagnostic.message}"


def _github_escape(text: str, *, property_: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if property_ else text


def format_github(diagnostic: Diagnostic, file: str) -> str:
    """A GitHub Actions workflow command that annotates `file` (relative to the workspace)."""
    level = "error" if diagnostic.severity == ERROR else "warning"
    title = f"{diagnostic.code} {diagnostic.name}"
    return (f"::{level} file={_github_escape(file, property_=True)},line={diagnostic.line},"
            f"title={_github_escape(title, property_=True)}::{_github_escape(diagnostic.message)}")


def report_json(report: Report) -> dict[str, Any]:
    return {
        "diagnostics": [{"code": d.code, "name": d.name, "severity": d.severity, "path": d.path, "line": d.line,
                         "message": d.message} for d in report.diagnostics],
        "errors": report.errors, "warnings": report.warnings, "ignored": report.ignored,
        "fixed": report.fixed, "not_fixed": report.not_fixed,
    }


def summary(report: Report) -> str:
    def plural(count: int, word: str) -> str:
        return f"{count} {word}{'' if count == 1 else 's'}"

    found = (f"Found {plural(report.errors, 'error')} and {plural(report.warnings, 'warning')}"
             if report.diagnostics else "No problems found")
    if report.ignored:
        found += f" ({plural(report.ignored, 'finding')} ignored by {IGNORE_PROPERTY})"
    return found + "."


def explain(code: str) -> str:
    rule_ = RULES.get(code.strip().upper())
    if rule_ is None:
        raise UsageError(f"{code!r} names no rule (known: {', '.join(RULES)})")
    return f"# {rule_.code} {rule_.name}\n\nDefault severity: {rule_.severity_shown}.\n\n{rule_.doc}\n"


def check_format(value: str) -> str:
    if value not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, not {value!r}")
    return value


def rules_table() -> str:
    """The README's rule table, rendered from the rules' docs."""
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    rows = ["| Code | Name | Default | What triggers it | How to fix |", "|---|---|---|---|---|"]
    for rule_ in RULES.values():
        rows.append(f"| `{rule_.code}` | {rule_.name} | {rule_.severity_shown} | "
                    f"{cell(rule_.section('What it does'))} | {cell(rule_.section('How to fix'))} |")
    return "\n".join(rows) + "\n"

