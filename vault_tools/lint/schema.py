"""Schema rules (VT001-VT008): whether each decision note can be read and its properties are well-formed.

Most of these report the problems `model.build_decision` found while the
vault was read; each such problem carries the code of the rule it belongs to.
"""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator

from ..model import DATE_FIELDS, DATETIME_FIELDS, Problem, Status, near_field_name
from ..ruling_graph import duplicate_ids
from ..services.workspace import STAMPED_FIELDS
from .facts import Facts, first_line
from .registry import ERROR, IGNORE_PROPERTY, Finding, ignore_problems, rule

# What Obsidian's Properties panel shows as a date / a date and time.
OBSIDIAN_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
OBSIDIAN_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?$")


def _field_message(problem: Problem) -> str:
    return f"{problem.field} {problem.message}" if problem.field else problem.message


@rule("VT001", "unreadable-note", ERROR, remembered=True)
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


@rule("VT002", "missing-field", ERROR, remembered=True)
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


@rule("VT003", "invalid-field-value", ERROR, remembered=True)
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
        for complaint in ignore_problems(data.get(IGNORE_PROPERTY)):
            yield Finding(path, lines.get(IGNORE_PROPERTY), f"{IGNORE_PROPERTY} {complaint}")


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


@rule("VT004", "topic-not-kebab-case", ERROR, remembered=True)
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


@rule("VT005", "text-too-short", ERROR, remembered=True)
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


@rule("VT006", "unknown-status", ERROR, remembered=True)
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


@rule("VT007", "misspelt-field", ERROR, remembered=True)
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


@rule("VT008", "duplicate-id", ERROR, remembered=True)
def duplicate_id(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports decision notes that share an `id`.

    ## Why
    Commands, links and the ledger name a decision by its id; two notes with one id make every one of
    them ambiguous. It usually comes from copying a note to start a new one.

    ## How to fix
    Run `vault-tools renumber ID --path NOTE`: it gives that note a new id, renames its file when the
    name starts with the id, rewrites the links that point to it and records a `renumbered` event.
    Until then only writes that touch that id are refused. Or delete the copy.
    """
    for decision_id, found in sorted(duplicate_ids(facts.state.decisions).items()):
        newest = sorted(found, key=lambda d: (facts.history_of(d) is not None, d.path))[0]
        for decision in found:
            others = ", ".join(d.path for d in found if d is not decision)
            yield Finding(decision.path, first_line(decision, "id"),
                          f"id {decision_id} is also used by {others}; give one a new id: "
                          f"vault-tools renumber {decision_id} --path \"{newest.path}\"")


@rule("VT009", "field-too-long", ERROR, remembered=True)
def field_too_long(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a field over its limit: a `summary` over 300 characters; a `reason`, `reask_reason`,
    `revisit_if`, `source`, `asked_by` or `ruled_by` over 2,000; more than 20 `topics`, a topic over 64
    characters, or more than 20 `supersedes` links.

    ## Why
    An agent loads every current ruling within a budget. One note holding a book in its summary or
    thousands of topics would push the others out; the pages cut what they show of such a note, and
    this rule says which note to fix. The note is still read: `ask` and `lookup` still find it.

    ## How to fix
    Keep the summary to one sentence and put the rest in the body; split a note that covers many topics
    into several rulings.
    """
    for path, problem in facts.problems("VT009"):
        yield Finding(path, problem.line, _field_message(problem))
