"""A note the owner is still writing: what it still lacks (an id, a field), and a ruling whose summary still asks
its question instead of answering it. Pure.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from .model import ID_PATTERN, Decision, Problem, Status

PLACEHOLDER_IDS = ("", "D-", "D-XXXX", "D-NNNN")  # what templates and hand-made notes leave in `id`


# docs/design/0008-ids-the-owner-never-types.md
def lacks_id(properties: Any) -> bool:
    """A decision note's properties with no id of its own yet (missing, empty or a template's placeholder):
    the owner made it in Obsidian and has not finished it, or it waits for its id to be given."""
    if not hasattr(properties, "get"):
        return False
    value = properties.get("id")
    if value is None:
        return True
    text = str(value).strip()
    return text.upper() in PLACEHOLDER_IDS and not ID_PATTERN.match(text)


def still_missing(problems: Iterable[Problem]) -> list[Problem]:
    """What a note with no id yet still lacks before it can be given one: every problem but the id itself
    and the stamps sealing adds."""
    return [p for p in problems if p.field != "id" and not (p.code == "VT002" and p.field in ("ruled_at", "ruled_by"))
            and p.code != "VT009"]


def being_written(problems: Iterable[Problem]) -> str:
    """How a note with no id yet is shown: what it still lacks, or that its id is on the way."""
    missing = still_missing(problems)
    if missing:
        return "being written (no id yet), still needs: " + "; ".join(map(str, missing))
    return "no id yet: it gets one once left alone (the watcher, `vault-tools lint --fix` or `seal` gives it)"


def _words(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


def unanswered(decision: Decision, *, unchanged_question_counts: bool = True) -> str | None:
    """Why a note marked ruled does not hold an answer yet, in plain words; None when it does.

    Its summary still asks (ends with a question mark), or is still the question's own text (the first
    line of its `## Question` section, punctuation and case aside): the owner set `status: ruled` but has
    not written the answer where the agent reads it. A summary given on purpose (`rule --summary`, a
    harvested statement confirmed as it is) is checked only for the question mark."""
    if decision.status is not Status.RULED:
        return None
    summary = decision.summary.strip()
    if summary.endswith("?"):
        return (f"{decision.id} is marked ruled, but its summary still asks the question: "
                "write the answer in `summary`")
    if unchanged_question_counts and "Question" in decision.body:
        words = _words(summary)
        folded = decision.body.casefold()
        if words and (not all(word in folded for word in words.split()) or words not in _words(decision.body)):
            return None  # no line of the body reads as the summary, so the question's first line does not
        from .bodies import sections

        question = next((line for line in sections(decision.body).get("Question", "").splitlines() if line.strip()), "")
        if question and _words(question) == _words(summary):
            return (f"{decision.id} is marked ruled, but its summary is still the question's text: "
                    "write the answer in `summary`")
    return None
