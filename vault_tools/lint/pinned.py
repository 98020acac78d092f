"""Pinned page rules (VT030-VT032): the pages are current, and what an agent loads fits its budget."""
from __future__ import annotations

from collections.abc import Iterator

from ..agent_view import FIELD_LIMIT, TOPICS_INDEXED_PER_NOTE
from ..model import Status
from .facts import Facts, first_line
from .registry import ERROR, WARNING, Finding, rule


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
    Reports when the open questions alone do not fit what an agent loads: the pinned pages' budget
    (`budget.lines`, `budget.bytes`), or the Claude Code session-start hook's (`vault-tools context
    --budget claude-hook`, 9,500 characters). Rulings that do not fit are left out with a line saying
    so; open questions are never cut, so `context` exits 1 instead (and a hook, with `--hook`, shows
    the most urgent and counts the rest).

    ## Why
    What goes past an agent's load limit is dropped silently, and open questions must always be seen.

    ## How to fix
    Answer or withdraw questions, or raise the budget in `vault-tools/config.yaml` if your agent loads
    more.
    """
    if facts.over_budget:
        yield Finding(facts.open_questions_page, 1, facts.over_budget)
    for message in facts.context_overflow:
        yield Finding(facts.open_questions_page, 1, message)


@rule("VT032", "cut-for-agents", WARNING, remembered=True)
def cut_for_agents(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports an open question or a current ruling with a field the agent's view cuts: a `summary`,
    `reask_reason` or `reason` longer than 300 characters, or more than 20 topics.

    ## Why
    So that no single note can starve the rest, `vault-tools context` cuts such a field with a marker
    pointing to `vault-tools show ID`: the agent sees the start of it, not all of it.

    ## How to fix
    Shorten the summary to one line that makes sense on its own and move the detail into the note's
    body; split a note with many topics into rulings on fewer. A sealed ruling is changed by a new
    ruling that supersedes it.
    """
    for decision in facts.state.decisions:
        if decision.status not in (Status.OPEN, Status.RULED):
            continue
        for name in ("summary", "reask_reason", "reason"):
            value = getattr(decision, name) or ""
            if len(value) > FIELD_LIMIT:
                yield Finding(decision.path, first_line(decision, name),
                              f"{decision.id}: {name} has {len(value):,} characters; the agent's view shows "
                              f"the first {FIELD_LIMIT}")
        if len(decision.topics) > TOPICS_INDEXED_PER_NOTE:
            yield Finding(decision.path, first_line(decision, "topics"),
                          f"{decision.id} has {len(decision.topics):,} topics; the agent's view names "
                          f"{TOPICS_INDEXED_PER_NOTE}")


@rule("VT033", "git-merge-driver-missing", WARNING)
def git_merge_driver_missing(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    In a git repository, reports that this clone's `.git/config` lacks the merge drivers `vault-tools
    init` sets up (`.gitattributes` names them, but git keeps their definitions per clone, so a fresh
    `git clone` does not have them).

    ## Why
    Without them, two clones that both rebuilt the pinned pages stop every `git pull` with a conflict
    in the pages, and two clones that both closed one decision leave conflict markers in its note.

    ## How to fix
    Run `vault-tools init` once in this clone (it is safe to run again).
    """
    if facts.merge_drivers_missing:
        yield Finding(".git/config", 1, f"this clone lacks the merge driver(s) {', '.join(facts.merge_drivers_missing)}; "
                                        "run `vault-tools init` in it")
