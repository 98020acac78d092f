"""Pinned page rules (VT030-VT031): the pages an agent loads are current and fit its budget."""
from __future__ import annotations

from collections.abc import Iterator

from .facts import Facts
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


@rule("VT032", "git-merge-driver-missing", WARNING)
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
