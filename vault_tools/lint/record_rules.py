"""Seal and ledger rules (VT020-VT029): rulings are sealed, sealed notes are unchanged and agree with the
ledger, and the ledger is intact and only ever appended to.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from .. import notes
from ..commands.agreement import retargeted
from ..conflicts import describe_conflict, settle_hint
from ..drafts import unanswered
from ..errors import NoteError
from ..history import twin_notes
from ..ledger_lines import Event
from ..meaning import normalise_body, seal_hash, seal_payload
from ..model import Decision, Status, build_decision
from .facts import Facts, LedgerFacts, first_line
from .registry import ERROR, LEDGER_PATH, WARNING, Finding, rule


@rule("VT020", "unsealed-ruling", ERROR, "error (warning inside the sealing delay)", remembered=True)
def unsealed_ruling(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a ruled note that the ledger has not sealed. Inside the sealing delay (`seal_delay_seconds`
    after the note was last saved) it is a warning: the owner may still be fixing typos, and the
    watcher seals it when the window ends. After that it is an error.

    ## Why
    Until it is sealed a ruling can still change without trace, and its `supersedes` have not been
    applied.

    ## How to fix
    Run `vault-tools seal ID` (or `vault-tools lint --fix`, which seals rulings past the window), or
    keep `vault-tools watch` running.
    """
    delay = facts.config.seal_delay_seconds
    for decision in facts.state.decisions:
        if decision.status is not Status.RULED or facts.sealed(decision) or decision.held:
            continue  # (a held ruling is VT056's)
        history = facts.history_of(decision)
        if history is not None and facts.seal_lost(history):
            continue  # VT027
        where = first_line(decision, "status")
        saved = facts.mtimes.get(decision.path, facts.now)
        if facts.ledger_damage:
            yield Finding(decision.path, where, f"{decision.id} is ruled but the ledger shows no seal, and the ledger "
                                                "is damaged (VT024): its seal may be on a damaged line; it cannot be "
                                                "sealed until the ledger is restored")
        elif facts.now - saved < delay:
            facts.changes_at(saved + delay)
            yield Finding(decision.path, where, f"{decision.id} is ruled but not sealed yet; it is sealed when "
                                                f"the sealing delay ({delay:g} s) ends", WARNING)
        else:
            yield Finding(decision.path, where, f"{decision.id} is ruled but not sealed; "
                                                f"run `vault-tools seal {decision.id}`")


@rule("VT021", "sealed-note-edited", ERROR, remembered=True)
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
        history = facts.history_of(decision)
        if history is None or not history.sealed or history.seal is None or not history.seal.hash:
            continue
        if history.conflict is not None:
            continue  # reported once as a conflict (VT026)
        moved = retargeted(facts.state, decision, history.seal) \
            if seal_hash(decision, facts.resolve, facts.config.tz) == history.seal.hash else None
        if moved == []:
            continue
        changed = _changed_parts(decision, history.seal, facts) if moved is None else \
            [(name, decision.line_of(name) if name != "body" else facts.body_lines.get(decision.path))
             for name in moved]
        names = [name for name, _ in changed]
        differ = f"{', '.join(names)} differ" if len(names) > 1 else f"{names[0]} differs" if names else "it differs"
        line = next((line for _, line in changed if line), None)
        yield Finding(decision.path, line or first_line(decision, "id"),
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
        first = next((i for i, (a, b) in enumerate(zip(old_lines, new_lines, strict=False)) if a != b),
                     min(len(old_lines), len(new_lines)))
        # Bodies are compared without their leading blank lines; count those back in for the file's line.
        body = decision.body.replace("\r\n", "\n")
        leading_blank_lines = len(body) - len(body.lstrip("\n"))
        changed.append(("body", start + leading_blank_lines + first if start else None))
    return changed


@rule("VT022", "status-differs-from-ledger", ERROR, remembered=True)
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
        history = facts.history_of(decision)
        recorded = history.status if history else None
        if recorded is None or (history is not None and history.conflict is not None):
            continue
        where = first_line(decision, "status")
        if decision.status is not recorded:
            if recorded is Status.OPEN and decision.status in (Status.RULED, Status.WITHDRAWN):
                continue
            yield Finding(decision.path, where, f"status is {decision.status.value}, but the ledger recorded "
                                                f"{recorded.value}")
            continue
        closing = None
        if history is not None:
            # Two clones may both withdraw a question, each with its own reason: either is what was recorded.
            withdrawals = [e for e in history.events if e.event == "withdrawn"]
            closing = next((e for e in reversed(withdrawals) if e.reason == decision.reason),
                           withdrawals[-1] if withdrawals else None) if recorded is Status.WITHDRAWN else history.closing
        if closing is not None and closing.reason and decision.reason != closing.reason:
            yield Finding(decision.path, first_line(decision, "reason"),
                          f"reason differs from the one the ledger recorded ({closing.reason!r})")
        if recorded is Status.SUPERSEDED and closing is not None:
            successor = facts.successor_of(decision)
            if closing.successor and successor is not None and successor.id != closing.successor:
                yield Finding(decision.path, first_line(decision, "superseded_by"),
                              f"superseded_by names {successor.id}, but the ledger recorded {closing.successor}")


@rule("VT023", "sealed-note-missing", ERROR, remembered=True)
def sealed_note_missing(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a ruling the ledger sealed whose note is no longer in the vault (deleted, moved into a
    skipped folder, or its `type: decision` removed).

    ## Why
    A deleted ruling would be a reversal with no trace. Until its note is back, every reader (`context`,
    `lookup`, the hooks) still treats the ruling as in force, read from the ledger's sealed text and
    marked as missing its note.

    ## How to fix
    `vault-tools lint --fix` (and the watcher, on its own) writes the note back from the ledger's sealed
    text where it was last seen, keeping whatever stands at that path under `kept/`. To drop a ruling,
    keep the note and run `vault-tools retract ID --reason ...`.
    """
    tied = {history.record for history in facts.ties.values()}
    unreadable = [error.path or "" for error in facts.state.broken]
    twins_closed = {record.record for twins in twin_notes(facts.histories) for record in twins.records
                    if record.status is Status.RETRACTED}  # a ruling's second id, closed: its note goes with it
    for history in sorted(facts.histories.values(), key=lambda h: (h.id, h.events[0].position or h.events[0].line or 0)):
        decision_id = history.id
        if not history.sealed or history.record in tied or history.record in twins_closed:
            continue
        if any(path == history.path or path.rsplit("/", 1)[-1].startswith(decision_id + " ") for path in unreadable):
            continue  # the note is there but cannot be read (VT001)
        sealed = next((e for e in reversed(history.events) if e.event == "sealed"), None)
        line, where = (sealed.line, sealed.source or LEDGER_PATH) if sealed else (None, LEDGER_PATH)
        others = [d.path for d in facts.state.decisions if d.id == decision_id]
        if others:
            yield Finding(where, line, f"{decision_id} is sealed in the ledger, but no decision note is that "
                                             f"ruling: {', '.join(others)} is another note with the same id "
                                             f"(last seen at {history.path})")
        else:
            yield Finding(where, line, f"{decision_id} is sealed in the ledger, but no decision note has that "
                                             f"id (last seen at {history.path})")


@rule("VT024", "damaged-ledger-line", ERROR, remembered=True)
def damaged_ledger_line(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a ledger line that is torn (a write was interrupted), is not a JSON event, or whose checksum
    no longer matches its content (it was edited).

    ## Why
    The ledger is the append-only record that seals are checked against; a damaged line means history
    can no longer be trusted, so every write is refused until it is resolved.

    ## How to fix
    A torn last line in this device's own file is an append a kill cut short (its events were never
    acknowledged): the next write on this device cuts it off and keeps its bytes under `kept/`;
    `vault-tools lint --fix` does it now. For any other damage, restore the file the finding names from
    git (`git checkout -- FILE`: `vault-tools/ledger/TAG.jsonl`, or `.vault-tools/ledger.jsonl` in a vault
    set up before the shared layout). Never edit a ledger line.
    """
    for shown, line, message in facts.ledger_damage:
        yield Finding(shown, line, message)


@rule("VT025", "ledger-history-rewritten", ERROR)
def ledger_history_rewritten(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    When the vault is in a git repository, compares each ledger file with the last commit
    (`git show HEAD:vault-tools/ledger/TAG.jsonl`, or `HEAD:.vault-tools/ledger.jsonl` in a vault set up
    before the shared layout) and reports every committed line that was changed or removed. Lines added
    after the committed ones are how the ledger grows.

    ## Why
    The ledger is append-only. A rewritten line can carry a valid checksum, so only the committed copy
    shows that history was changed.

    ## How to fix
    Restore the committed lines of the file the finding names (`git checkout -- FILE`); new events are
    appended again by the commands that make them.
    """
    for file in facts.ledger_files:
        yield from _rewritten(file)


@rule("VT055", "ledger-lines-taken-out", ERROR)
def ledger_lines_taken_out(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Compares each ledger file with the copy this device keeps of it (`.vault-tools/ledger-copies/`, extended
    by every line vault-tools writes) and reports a file that lost lines the copy holds: taken out, rewritten,
    or the file emptied or deleted by another program. Git is not needed.

    ## Why
    The ledger is append-only and written only by vault-tools: a line taken out is a seal, an answer or a
    closing lost. An agent's command can do it in a way no hook refuses beforehand (`python3 -c`, `git
    checkout -f`).

    ## How to fix
    Run `vault-tools lint --fix` or `vault-tools watch --once` (the watcher does it at every pass, and the
    agent hooks after every tool call): the lost lines are put back from the copy, in their order.
    """
    for shown, lost in facts.ledger_lines_lost:
        yield Finding(shown, None, f"{shown} lost {lost} line(s) this device's copy of it holds; `vault-tools "
                                   "lint --fix` puts them back")


@rule("VT057", "question-note-missing", ERROR)
def question_note_missing(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports an open or withdrawn question the ledger recorded whose note is gone by every name it had: no note
    holds any id its record had, and nothing stands at any path the ledger recorded for it.

    ## Why
    A question is the owner's: deleted, it would drop out of the open-questions page and the agent's view, and
    the agent would ask it again or act as if it were settled. Until its note is back every reader keeps it,
    read from the text the ledger keeps of it (as asked, or as withdrawn).

    ## How to fix
    `vault-tools lint --fix` (and the watcher, on its own) writes the note back from that text at the path
    the ledger last recorded. To drop an open question, keep the note and run `vault-tools withdraw ID --reason
    ...`.
    """
    for question in facts.missing_questions:
        yield Finding(question.path, None, f"{question.id} ({question.status.value} question) has no note: it was "
                                           "deleted or moved away; `vault-tools lint --fix` writes it back from "
                                           "the ledger")


@rule("VT056", "held-for-the-owner", WARNING)
def held_for_the_owner(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a decision note whose change waits for the owner: an answer, a retraction, a withdrawal, a relation
    or a whole ruling written during an agent's tool call, which the tripwire after that call marked with an
    unticked `confirmed_by_owner` checkbox. Until it is ticked no reader takes the change as in effect (the
    question stays open, the ruling in force, a ruling written so is in no one's view) and nothing seals it.

    ## Why
    Made in Obsidian these steps are the owner's, recorded "by owner". Made by a command an agent ran, the same
    bytes would be recorded so too: an agent could answer the owner's question, or retract a ruling, in the
    owner's name. Nothing tells an answer the owner typed while the command ran from one the command wrote, so
    both wait for one tick.

    It is an error while the change is not held yet (the note changed during an agent's call, under way or
    ended, and no hook or watcher pass has marked it): a commit made then, inside the agent's command, would
    carry it to the other clones as the owner's step.

    ## How to fix
    Read the note. If the change is yours, tick `confirmed_by_owner` in Obsidian's properties (or set it to
    `true`); the watcher then records it as any step of yours. If not, put the note back (`git checkout --
    PATH`, or undo the change by hand) and remove the property. A change not held yet is held by `vault-tools
    lint --fix`, the watcher's next pass, or the agent's post-tool-use hook when its call ends.
    """
    for decision, step in facts.agent_steps:
        yield Finding(decision.path, first_line(decision, "status"),
                      f"{decision.id} was changed during an agent's command ({step}) and is not held yet: it is not "
                      "the owner's step until they confirm it; `vault-tools lint --fix` holds it", ERROR)
    for decision in facts.state.decisions:
        if not decision.held:
            continue
        history = facts.history_of(decision)
        if history is not None and history.conflict is not None:
            continue
        if history is not None and history.seal is not None:
            pending = decision.status is not history.status or \
                seal_hash(decision, facts.resolve, facts.config.tz) != history.seal.hash
        else:
            pending = decision.status is not (history.status if history is not None else Status.OPEN)
        if pending:
            yield Finding(decision.path, first_line(decision, "confirmed_by_owner"),
                          f"{decision.id} was changed during an agent's command ({decision.status.value}); held "
                          "until you tick `confirmed_by_owner` in Obsidian")


def _rewritten(file: LedgerFacts) -> Iterator[Finding]:
    if file.committed is None:
        return
    current = [line.rstrip("\r") for line in file.lines]
    remaining: dict[str, int] = {}
    for line in current:
        remaining[line] = remaining.get(line, 0) + 1
    committed_set: dict[str, int] = {}
    for line in file.committed:
        committed_set[line] = committed_set.get(line, 0) + 1
    for number, line in enumerate(file.committed, 1):
        if not line.strip():
            continue
        if remaining.get(line, 0) > 0:
            remaining[line] -= 1
            continue
        here = current[number - 1] if number <= len(current) else None
        if here is not None and here.strip() and here not in committed_set:
            yield Finding(file.shown, number, f"line {number} was changed since the last commit")
        else:
            yield Finding(file.shown, number, f"committed line {number} was removed")


@rule("VT029", "ruling-without-answer", ERROR, remembered=True)
def ruling_without_answer(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a note marked `ruled`, not sealed yet, whose `summary` still asks the question: it ends with a
    question mark, or it is still the first line of the note's `## Question` section. Such a ruling is
    not sealed until the summary holds the answer.

    ## Why
    The summary is what the decisions log and the agent's view show. A ruling whose summary is its
    question puts "Should we start a podcast?" where the answer should be, and the answer ("No podcast
    this year") appears nowhere the agent reads.

    ## How to fix
    Rewrite `summary` as the answer, one line that makes sense on its own. The watcher seals the ruling
    once it is left alone for the sealing delay, or run `vault-tools seal ID`.
    """
    for decision in facts.state.decisions:
        if decision.status is not Status.RULED or facts.sealed(decision):
            continue
        why = unanswered(decision)
        if why:
            yield Finding(decision.path, first_line(decision, "summary"), why)


@rule("VT026", "merge-conflict", ERROR, remembered=True)
def merge_conflict(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a decision on which two clones of the vault recorded outcomes that cannot both stand, once
    git merged their ledgers: a question ruled on one machine and withdrawn on another, answered
    differently on two, a ruling superseded by two different rulings (or superseded on one and
    retracted on the other), or an answer the owner kept in a settlement on one machine while
    another, not knowing it, superseded the answer that settlement dropped.

    ## Why
    The tool does not pick a winner for the owner: both outcomes are kept (in the notes and in the
    ledger) and shown on the open-questions page and in `vault-tools context` until the owner decides.

    ## How to fix
    Decide, then run `vault-tools settle ID --keep OUTCOME --reason ...`: `--keep ruled` or
    `--keep withdrawn` for a question ruled and withdrawn; `--keep ruling-1` or `ruling-2` for two
    answers; `--keep D-0007` (the ruling that stays its successor; the other is retracted) or
    `--keep retracted` for a ruling closed twice; `--keep ruled` (the kept answer stands, the ruling
    that replaced the dropped one is retracted) or `--keep D-0007` for an answer kept and superseded.
    """
    notes_of = {history.record: path for path, history in facts.ties.items()}
    by_path = {d.path: d for d in facts.state.decisions}
    for history in sorted(facts.histories.values(), key=lambda h: (h.id, h.record)):
        conflict = history.conflict
        if conflict is None:
            continue
        path = notes_of.get(history.record)
        decision = by_path.get(path) if path else None
        first = next((e for e in history.events if e.line), None)
        line = first_line(decision, "status") if decision else first.line if first else None
        yield Finding(path or (first.source if first and first.source else LEDGER_PATH), line, f"{history.id} is in conflict: {describe_conflict(conflict)}; "
                                                 f"decide with `{settle_hint(conflict)}`")


@rule("VT027", "seal-line-missing", ERROR, remembered=True)
def seal_line_missing(facts: Facts) -> Iterator[Finding]:
    """
    ## What it does
    Reports a ruling whose `ruled` event is in the ledger but whose `sealed` line is not, where the note
    no longer means what the `ruled` line recorded. vault-tools writes the two together, so the `sealed`
    line was removed (by hand, or by a bad merge). A kill in the middle of that one append can leave the
    `ruled` line alone too, but then the note is as ruled: it is sealed again, as any ruling not sealed
    yet (VT020), since that seals nothing but the ruling. Works without git.

    ## Why
    Without its seal line an in-place edit of the ruling would look like a ruling never sealed, and be
    sealed as if new. `seal`, `lint --fix` and the watcher refuse to seal it again.

    ## How to fix
    Restore the ledger file the finding names from git (`git checkout -- FILE`: `vault-tools/ledger/TAG.jsonl`,
    or `.vault-tools/ledger.jsonl` in a vault set up before the shared layout) or a backup. Then
    `vault-tools lint` shows whether the note was edited since it was sealed.
    """
    for history in sorted(facts.histories.values(), key=lambda h: (h.id, h.record)):
        lost = facts.seal_lost(history)
        if lost is None:
            continue
        yield Finding(lost.source or LEDGER_PATH, lost.line, f"{history.id} was ruled and sealed, but its `sealed` line is missing "
                                              "from the ledger")
