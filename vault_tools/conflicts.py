"""How a conflict between clones is told: what each clone did, in one line, and the `settle` command that ends it.

Every reader that shows a conflict (the pages, `context`, lint, `show`, `lookup`, `search`, `gate`, the hooks
and the MCP server) says it in these words.
"""
from __future__ import annotations

from .carriers import ConflictCopy
from .history import Conflict


def describe_conflict(conflict: Conflict) -> str:
    """What the clones did, in one line."""
    if conflict.kind == "ruled-and-withdrawn":
        ruling = f" (ruling: {conflict.ruling})" if conflict.ruling else ""
        reason = f" (because: {conflict.reason})" if conflict.reason else ""
        return f"ruled on one clone{ruling} and withdrawn on another{reason}"
    if conflict.kind == "ruled-twice":
        return "answered differently on two clones: " + "; ".join(
            f"{name}: {summary}" for name, summary in zip(conflict.outcomes, conflict.rulings, strict=False))
    if conflict.kind == "kept-and-superseded":
        ruling = f" (ruling: {conflict.ruling})" if conflict.ruling else ""
        return (f"one answer kept on one clone{ruling}, while another clone, not knowing it, "
                f"{conflict.outcomes[1]} the answer that was dropped")
    return " and ".join(conflict.outcomes) + ", on different clones"


def keep_choices(conflict: Conflict) -> tuple[str, ...]:
    if conflict.kind == "ruled-and-withdrawn":
        return ("ruled", "withdrawn")
    if conflict.kind == "kept-and-superseded":
        return ("ruled", *(conflict.successors or ("retracted",)))
    if conflict.kind == "ruled-twice":
        return conflict.outcomes
    return (*conflict.successors, *(("retracted",) if "retracted" in conflict.outcomes else ()))


def settle_hint(conflict: Conflict) -> str:
    return f"vault-tools settle {conflict.id} --keep {'|'.join(keep_choices(conflict))} --reason \"...\""


def copy_settle_hint(copy: ConflictCopy) -> str:
    return f"vault-tools settle {copy.id} --copy \"{copy.path}\" --keep original|copy"


def conflict_line(conflict: Conflict) -> str:
    """What a reader says of a decision in conflict, wherever it shows the decision: neither outcome stands
    until the owner settles it."""
    return (f"in conflict: {describe_conflict(conflict)}; neither stands until the owner settles it "
            f"(`{settle_hint(conflict)}`)")
