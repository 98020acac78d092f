"""`review`: proposals for the owner in one note of checkboxes; `review --apply` does what was ticked.

Writing the review changes no decision. Each proposal is one checkbox line carrying, in an Obsidian
comment (`%%vt ...%%`, hidden when reading), what ticking it does. `--apply` runs each ticked item
through the command that does it by hand (`relate`, `withdraw`, `ask`, and for merged topics
`vault-tools/topics.yaml` plus a `topics-merged` ledger event), so each leaves the same record.
"""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .. import durable, note_edits
from ..dates import local_date, utc_stamp
from ..errors import Refused, UsageError, VaultToolsError
from ..ledger_lines import Event
from ..links import Resolve, leading_id
from ..model import Decision, Status, id_matches, newest_first_key
from ..pages import escape, link
from ..record_files import TOPICS_FILE
from ..ruling_graph import unresolved_overlaps
from ..services.workspace import Workspace
from ..topic_aliases import add_alias, shown
from ..topics import TopicIndex, canonical_topic
from ..vault import VaultState
from .review_notes import ITEM_LINE, PROPOSAL_MARKER, REVIEW_PREFIX, WAITING, review_folder, waiting_reviews

AskFunction = Callable[..., Decision]
NOTICE = ("> Proposals from `vault-tools review`. Nothing here has changed a decision. Tick what you accept, "
          "then run `vault-tools review --apply`; what is not ticked is left as it is.")
_REASON = re.compile(r"^\s+- reason:(?P<reason>.*)$")
# Words that say a ruling replaces an earlier one, followed closely by that ruling's id or link.
_REPLACES = re.compile(r"\b(?:replac\w*|supersed\w*|overrid\w*|revers\w*|instead of)\b[^.\n]{0,60}?"
                       r"(?:\[\[)?(?P<id>D-\d+(?:-[0-9a-z]{2,8})?)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Proposal:
    section: str
    text: str  # Markdown, one line
    action: str  # merge, supersede, alongside, withdraw, reask
    args: tuple[str, ...]
    reason: str | None = None  # the default reason, when the action records one
    quote: str = ""  # the words of a ruling that say it replaces another

    @property
    def marker(self) -> str:
        return f"%%vt {self.action} {' '.join(self.args)}%%"


@dataclass
class Review:
    path: str  # vault-relative
    proposals: list[Proposal]
    written: bool


@dataclass
class Applied:
    done: list[str] = field(default_factory=list)
    not_done: list[str] = field(default_factory=list)
    note: str | None = None


SECTIONS = ("Topics to merge", "Two current rulings on one topic", "Rulings that name one they replace",
            "Open questions past their time", "Rulings past their revisit date")


# -- what to propose ---------------------------------------------------------------

def proposals(ws: Workspace, state: VaultState, today: dt.date) -> list[Proposal]:
    in_effect = ws.decisions_in_effect(state)
    resolve = state.resolver()
    found = _merges(in_effect)
    named = _named_replacements(in_effect, resolve, ws.tz)
    quoted = {p.args: p.quote for p in named}
    for overlap in unresolved_overlaps(in_effect, resolve, ws.tz):
        newer, older = overlap.newer, overlap.older
        said = f"{link(newer)} and {link(older)} both rule on `{overlap.topic}`"
        if (newer.id, older.id) in quoted:
            said += f" ({newer.id} says “{quoted[(newer.id, older.id)]}”)"
        found.append(Proposal(SECTIONS[1], f"{said}: {link(newer)} replaces {link(older)}", "supersede",
                              (newer.id, older.id),
                              f"Accepted in review: {newer.id} replaces {older.id} on {overlap.topic}."))
        found.append(Proposal(SECTIONS[1], f"{said}: both stand", "alongside", (newer.id, older.id)))
    proposed = {p.marker for p in found}
    found += [p for p in named if p.marker not in proposed]
    by_asked = sorted((d for d in in_effect if d.status is Status.OPEN and d.asked_at),
                      key=lambda d: (local_date(d.asked_at, ws.tz), d.number))  # type: ignore[arg-type]
    for question in by_asked:
        age = (today - local_date(question.asked_at, ws.tz)).days  # type: ignore[arg-type]
        if age > ws.config.stale_after_days:
            found.append(Proposal(SECTIONS[3], f"Withdraw {link(question)}, open {age} days: "
                                               f"{escape(question.summary)}", "withdraw", (question.id,),
                                  f"Withdrawn in review: open {age} days with no answer."))
    for ruling in sorted(in_effect, key=lambda d: d.number):
        if ruling.is_current and ruling.revisit_by and ruling.revisit_by < today:
            found.append(Proposal(SECTIONS[4], f"Ask again whether {link(ruling)} still stands (revisit by "
                                               f"{ruling.revisit_by.isoformat()}): {escape(ruling.summary)}",
                                  "reask", (ruling.id,)))
    return found


def _merges(decisions: list[Decision]) -> list[Proposal]:
    """Spellings of one topic (plural, word order, a typo) not yet merged: each into the most used."""
    uses: dict[str, list[Decision]] = {}
    for decision in sorted(decisions, key=lambda d: d.number):
        for topic in decision.topics:
            uses.setdefault(topic, []).append(decision)
    index = TopicIndex()
    found = []
    for topic in sorted(uses, key=lambda t: (-len(uses[t]), uses[t][0].number, t)):
        common = next(iter(index.matches(topic)), None)
        if common is None:
            index.add(topic)
        elif canonical_topic(topic) != canonical_topic(common):
            def ids(name: str) -> str:
                return ", ".join(d.id for d in uses[name][:3]) + (", ..." if len(uses[name]) > 3 else "")
            found.append(Proposal(SECTIONS[0], f"Merge `{topic}` ({ids(topic)}) into `{common}` ({ids(common)})",
                                  "merge", (topic, common)))
    return found


def _named_replacements(decisions: list[Decision], resolve: Resolve, tz: dt.tzinfo) -> list[Proposal]:
    """Current rulings whose summary or text says they replace an earlier current ruling they do not link."""
    by_id = {d.id: d for d in decisions}

    def earlier(a: Decision, b: Decision) -> bool:
        return newest_first_key(a, tz) < newest_first_key(b, tz)

    found = []
    for ruling in sorted(decisions, key=lambda d: d.number):
        if not ruling.is_current:
            continue
        links = (*ruling.supersedes, *ruling.alongside)
        linked = {leading_id(item) for item in links} | {resolve(item) for item in links}
        named = []
        for match in _REPLACES.finditer(f"{ruling.summary}\n{ruling.body}"):
            target = _named(decisions, by_id, match.group("id"))
            if target is None or target.id == ruling.id or target.id in linked or target.id in named:
                continue
            if target.is_current and earlier(target, ruling):
                named.append(target.id)
                quote = escape(match.group(0))
                found.append(Proposal(SECTIONS[2], f"{link(ruling)} says \u201c{quote}\u201d: record that it "
                                                   f"supersedes {link(target)}", "supersede", (ruling.id, target.id),
                                      f"Accepted in review: {ruling.id} says it replaces {target.id}.", quote))
    return found


def _named(decisions: list[Decision], by_id: dict[str, Decision], said: str) -> Decision | None:
    """The decision an id in a ruling's text names, as a typed id names it: the whole id (its tag in any case),
    or the counter alone when it names one decision (`D-0005` for `D-0005-k7q2`); and where what follows the
    counter names none ("D-0005-era invoicing"), the counter alone."""
    typed = "D" + said[1:].lower()  # ids are written D-0005-k7q2
    counter = "-".join(typed.split("-")[:2])
    for candidate in dict.fromkeys((typed, counter)):
        found = by_id.get(candidate)
        if found is None:
            named = [d for d in decisions if id_matches(candidate, d.id)]
            found = named[0] if len({d.id for d in named}) == 1 else None
        if found is not None:
            return found
    return None


# -- the review note ---------------------------------------------------------------


def render(proposals_: list[Proposal], today: dt.date, ticked: dict[str, tuple[bool, str]]) -> str:
    fields = [("vault-tools", "review"), ("review_of", today), ("review_status", WAITING)]
    lines = [NOTICE, "", f"# Review {today.isoformat()}", ""]
    for section in SECTIONS:
        items = [p for p in proposals_ if p.section == section]
        if not items:
            continue
        lines += [f"## {section}", ""]
        for item in items:
            mark, reason = ticked.get(item.marker, (False, ""))
            lines.append(f"- [{'x' if mark else ' '}] {item.text} {item.marker}")
            if item.reason is not None:
                lines.append(f"  - reason:{reason}")
        lines.append("")
    return note_edits.render_note(fields, "\n".join(lines).rstrip("\n") + "\n")


def _ticks(text: str) -> tuple[list[tuple[bool, str, tuple[str, ...], str, int]], dict[str, tuple[bool, str]]]:
    """Each item of a review note: (ticked, action, args, reason typed, line number); and by marker."""
    items: list[tuple[bool, str, tuple[str, ...], str, int]] = []
    for number, line in enumerate(text.splitlines(), 1):
        reason = _REASON.match(line)
        if reason and items:
            ticked, action, args, _, at = items[-1]
            items[-1] = (ticked, action, args, reason.group("reason"), at)
            continue
        item = ITEM_LINE.match(line)
        marker = PROPOSAL_MARKER.search(line) if item else None
        if item and marker:
            items.append((item.group("mark").lower() == "x", marker.group("action"),
                          tuple(marker.group("args").split()), "", number))
    by_marker = {f"%%vt {a} {' '.join(args)}%%": (t, r) for t, a, args, r, _ in items}
    return items, by_marker


# docs/design/0032-stats-and-review.md
def write_review(ws: Workspace, today: dt.date | None = None) -> Review:
    """Write the proposals note (into the review still waiting, keeping what the owner ticked and typed)."""
    today = today or ws.today()
    state = ws.state()
    found = proposals(ws, state, today)
    waiting = waiting_reviews(ws)
    path = waiting[-1] if waiting else review_folder(ws) / f"{REVIEW_PREFIX}{today.isoformat()}.md"
    rel = ws.vault.relative(path)
    if not found and not waiting:
        return Review(rel, [], False)
    ticked: dict[str, tuple[bool, str]] = {}
    if waiting:
        ticked = _ticks(path.read_text(encoding="utf-8-sig"))[1]
    text = render(found, today, ticked)
    try:
        current = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        current = None
    if current == text:
        return Review(rel, found, False)
    durable.write_atomic(path, text.encode("utf-8"))
    return Review(rel, found, True)


# -- applying what was ticked --------------------------------------------------------

def apply_review(ws: Workspace, note_path: Path | None = None) -> Applied:
    """Do each ticked item of the waiting review through its command; then mark the review applied."""
    from .amend import relate  # applying a review runs the commands the owner ticked: loaded then
    from .ask import ask
    from .close import withdraw

    if note_path is None:
        waiting = waiting_reviews(ws)
        if not waiting:
            raise Refused("no review is waiting; run `vault-tools review` first")
        note_path = waiting[-1]
    elif note_path not in waiting_reviews(ws):
        raise UsageError(f"{note_path} is not a review waiting to be applied")
    note = ws.read(note_path)
    items, _ = _ticks(note.text)
    result = Applied(note=ws.vault.relative(note_path))
    day = note.data.get("review_of") if hasattr(note.data, "get") else None
    day_text = str(day) if day else ws.today().isoformat()
    for ticked, action, args, typed, line in items:
        if not ticked:
            continue
        alternative = [a for t, a, other, _, _ in items if t and other == args and a != action
                       and {a, action} == {"supersede", "alongside"}]
        label = f"{action} {' '.join(args)}"
        if alternative:
            result.not_done.append(f"{label}: both 'replaces' and 'both stand' are ticked; tick one (line {line})")
            continue
        reason = typed.strip() or None
        try:
            if action == "merge":
                said = _merge(ws, args[0], args[1], day_text)
            elif action == "supersede":
                relate(ws, args[0], supersedes=[args[1]], reason=reason or
                       f"Accepted in the review of {day_text}: {args[0]} replaces {args[1]}.")
                said = f"{args[0]} supersedes {args[1]}"
            elif action == "alongside":
                relate(ws, args[0], alongside=[args[1]])
                said = f"{args[0]} stands alongside {args[1]}"
            elif action == "withdraw":
                withdraw(ws, args[0], reason or f"Withdrawn in the review of {day_text}: no answer came in time.")
                said = f"{args[0]} withdrawn"
            elif action == "reask":
                said = _reask(ws, args[0], day_text, reason, ask)
            else:
                raise UsageError(f"unknown review action {action!r}")
        except VaultToolsError as error:
            result.not_done.append(f"{label}: {error.message}")
            continue
        result.done.append(said)
    lines = ["", "## Applied", ""] + [f"- {escape(line)}" for line in result.done] + \
        [f"- not applied: {escape(line)}" for line in result.not_done]
    if not result.done and not result.not_done:
        lines.append("- nothing was ticked")
    text = note_edits.with_fields(note, {"review_status": f"applied {ws.today().isoformat()}"})
    text = text.rstrip("\r\n") + "\n" + "\n".join(lines) + "\n"
    durable.write_atomic(note_path, text.encode("utf-8"))
    return result


def _merge(ws: Workspace, alias: str, topic: str, day: str) -> str:
    with ws.vault.ledger.locked():
        ws.vault.ledger.verify()  # a damaged ledger stops this write as every other
        if not add_alias(ws.vault.record_dir, topic, alias):
            return f"{alias} was already merged into {canonical_topic(topic)}"
        ws.vault.ledger.append([Event(event="topics-merged", id="topics", at=utc_stamp(ws.now()),
                                      actor=ws.config.default_ruler, path=shown(ws.vault.record_dir / TOPICS_FILE),
                                      reason=f"{alias} merged into {topic} in the review of {day}")])
    return f"{alias} merged into {topic}"


def _reask(ws: Workspace, ruling_id: str, day: str, reason: str | None, ask: AskFunction) -> str:
    state = ws.state()
    ruling = ws.find(state, ruling_id)
    revisit = ruling.revisit_by.isoformat() if ruling.revisit_by else "its revisit date"
    question = ask(ws, f"Does {ruling.id} still stand: {ruling.summary}", ruling.topics,
                   reask_reason=reason or f"{ruling.id} was to be revisited by {revisit} (review of {day}).")
    return f"{question.id} asks again whether {ruling.id} still stands"
