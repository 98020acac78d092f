"""The agent hooks' engine: JSON in on stdin, JSON out on stdout, fast, and never in the agent's way by accident.

It answers in Claude Code's hook format, which Codex shares; claude.py, codex.py and gemini.py are the
fronts, each with its events and bounds (gemini.py translates Gemini CLI's names and answers).

- session-start: the context an agent loads, as `additionalContext`, within the hook's size bound.
- pre-tool-use: denies writes to the record (Write, Edit, MultiEdit, NotebookEdit, and Bash commands that
  plainly write, move or remove it: see guard.py), and questions (AskUserQuestion) that the record already
  answers, holds open or saw withdrawn, as `ask` refuses them; a question that may be the matter of
  decisions is denied once in a session, showing them. Everything else passes silently.
- user-prompt-submit: the decisions the owner's message is about (rulings, open questions, questions
  withdrawn and rulings retracted), with the command that records a superseding ruling if it changes one.

A hook that cannot read the vault, or whose input is not a JSON object, lets the call through with a one-line
warning (an agent must not be stuck on a broken note), except that a write to a sealed note is always denied;
an internal error does the same, its traceback in the crash log. Formats: each agent's hooks reference (see
docs/agents.md); output over 10,000 characters is cut by Claude Code, so nothing printed here exceeds
`CLAUDE_BOUNDS` unless a front's own `Bounds` says otherwise.
"""
from __future__ import annotations

import json
import os
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ..record_files import (
    agent_call_began,
    begin_agent_call,
    decision_notes_changed_since,
    end_agent_call,
    ledgers_unchanged,
    remember_settings,
    settings_changed_during,
    vault_above,
)
from .guard import Guard, shell_reason

if TYPE_CHECKING:
    pass

# Imports inside functions: an agent waits on every hook call; each event loads only what it answers with (the snapshot, the recall, the glob matcher).

MAX_OUTPUT = 9500  # characters of JSON on stdout; Claude Code cuts hook output past 10,000


class Bounds(NamedTuple):  # not a dataclass: importing dataclasses costs a hook more than its own work
    """How much of a hook's answer an agent keeps whole."""

    session_budget: str  # the `context --budget` the session-start context is made within
    max_json_chars: int | None  # the whole JSON printed
    max_context_bytes: int | None = None  # each additionalContext, in UTF-8 bytes


CLAUDE_BOUNDS = Bounds("claude-hook", MAX_OUTPUT)
WRITE_TOOLS = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}
QUESTION_TOOL = "AskUserQuestion"
SCOPE_CONTEXT_CHARS = 2000  # rulings that govern a file: one line each, at most this much context per call


class VaultUnreadable(Exception):
    """The vault could not be read; the hook lets the call through and says so."""


# -- session start --------------------------------------------------------------------------

def cut_text(text: str, max_chars: int) -> str:
    """`text` within `max_chars`, cut at a line, with a last line counting what was left out."""
    if len(text) <= max_chars:
        return text
    lines = text.splitlines(keepends=True)
    kept: list[str] = []
    used = 0
    for index, line in enumerate(lines):
        left = len(lines) - index
        last = (f"[{left} more line(s) left out to fit this hook; run `vault-tools context` for all of it, "
                "or `vault-tools lookup TOPIC` for one topic]\n")
        if used + len(line) + len(last) > max_chars:
            return "".join(kept) + last[:max(0, max_chars - used)]
        kept.append(line)
        used += len(line)
    return "".join(kept)


# -- the hook -------------------------------------------------------------------------------

# docs/design/0034-hooks-fail-open-never-on-a-sealed-note.md
def answer(event: str, payload: dict[str, Any], vault: Path | None = None,
           bounds: Bounds = CLAUDE_BOUNDS) -> dict[str, Any] | None:
    """The JSON to print for one hook call, or None to pass silently."""
    cwd = Path(str(payload.get("cwd") or os.getcwd()))
    try:
        root = _find_root(vault, cwd)
    except VaultUnreadable as trouble:
        return _warning(str(trouble)) if event != "pre-tool-use" else None
    try:
        if event == "session-start":
            return _session_start(root, bounds)
        if event == "user-prompt-submit":
            return _user_prompt(root, str(payload.get("prompt") or ""), bounds)
        if event == "post-tool-use":
            return _post_tool_use(root, call_of(payload))
        remember_settings(root, call_of(payload))  # what the settings are as this call begins
        begin_agent_call(root, call_of(payload))  # the notes it changes are looked at before they count
        return _pre_tool_use(root, cwd, str(payload.get("tool_name") or ""), payload.get("tool_input") or {}, bounds,
                             str(payload.get("session_id") or ""))
    except Exception as trouble:  # fail open: a broken note must not stop the agent
        return _warning(f"{type(trouble).__name__}: {trouble}; {_logged(trouble, root)}")


def call_of(payload: dict[str, Any]) -> str:
    """What tells one tool call apart, the same before it (pre-tool-use) and after it (post-tool-use)."""
    said = json.dumps([payload.get("session_id"), payload.get("tool_name"), payload.get("tool_input")],
                      sort_keys=True, default=str)
    data = said.encode("utf-8")
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}{len(data)}"  # zlib: hashlib would cost a hook 3 ms


def _post_tool_use(root: Path, call: str) -> dict[str, Any] | None:
    """The tripwire after a tool call: ledger lines the call took out are put back, and the settings it changed
    (the config, the merged topics) as they were when it began; a decision note it changed as only the owner may
    is held for the owner (`commands.held`); the agent is told what was undone or held and how a change is made
    (`tripwire`). A call that changed none of them costs a few stats and a walk of the vault's folders."""
    began = agent_call_began(root, call)
    changed = decision_notes_changed_since(root, began) if began is not None else None
    changed_notes = changed.decision_notes if changed is not None else []
    settings_changed = settings_changed_during(root, call)
    folders_changed = changed is not None and changed.folders_changed
    pages_changed = changed is not None and changed.pages_changed
    if ledgers_unchanged(root) and not settings_changed and not changed_notes and not folders_changed \
            and not pages_changed:
        end_agent_call(root, call)
        return None
    from ..tripwire import put_back_at, put_back_settings, told, told_settings  # only when a file changed
    found = [] if ledgers_unchanged(root) else put_back_at(root)
    settings = put_back_settings(root, call) if settings_changed else []
    said = "\n".join(([told(found)] if found else []) + ([told_settings(settings)] if settings else []))
    if changed_notes or folders_changed or pages_changed:
        from ..commands import build, held  # only when a decision note or a page changed, or a note may have gone
        after = held.after_call(root, changed_notes, folders_changed)
        rebuilt = build.build(after.ws).written if pages_changed or after.held or after.restored else []
        said = "\n".join(filter(None, [said, held.told(after.held) if after.held else "",
                                        held.told_restored(after.restored) if after.restored else "",
                                        held.told_rebuilt(rebuilt) if pages_changed and rebuilt else ""]))
    end_agent_call(root, call)  # only now: until the notes are held, the watcher leaves them alone
    if not said:
        return None
    return {"decision": "block", "reason": said,
            "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": said}}


def _find_root(vault: Path | None, cwd: Path) -> Path:
    """The vault, found as `record_files.find_vault` finds it (`record_files.vault_above`), without importing what
    reading a vault needs (most hook calls never read it)."""
    if vault is not None:
        root = vault if vault.is_absolute() else cwd / vault
        if not root.is_dir():
            raise VaultUnreadable(f"{vault} is not a folder")
        return Path(os.path.abspath(root))
    here = Path(os.path.abspath(cwd))
    found = vault_above(here, lambda path: Path(os.path.abspath(path)))
    if found is not None:
        return found
    raise VaultUnreadable(f"no vault found at {here} or above (no .vault-tools/ or .obsidian/ folder)")


def _warning(why: str, what: str = "the decision record") -> dict[str, Any]:
    first = (why.splitlines() or [""])[0][:300]
    line = f"vault-tools: {what} could not be read ({first}); this hook let the call through"
    return {"systemMessage": line}


def _context(hook_event: str, text: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": hook_event, "additionalContext": text}}


def _fitting(text: str, output_of: Callable[[str], dict[str, Any]], max_json_chars: int) -> int:
    """How many characters of `text` fit in `output_of(text)` printed as JSON within `max_json_chars`: a quote
    or a control character printed escaped takes two characters or six."""
    room = max_json_chars - len(json.dumps(output_of(""), ensure_ascii=False))
    if len(json.dumps(text, ensure_ascii=False)) - 2 <= room:
        return len(text)
    end = 0
    for char in text[:max_json_chars]:
        room -= len(json.dumps(char, ensure_ascii=False)) - 2
        if room < 0:
            break
        end += 1
    return end


def fitted(hook_event: str, text: str, bounds: Bounds = CLAUDE_BOUNDS) -> dict[str, Any]:
    """`text` as additionalContext, cut at a line so the answer stays within `bounds`."""
    limit = len(text) if bounds.max_json_chars is None else \
        _fitting(text, lambda kept: _context(hook_event, kept), bounds.max_json_chars)
    while True:
        kept = cut_text(text, limit)
        output = _context(hook_event, kept)
        over = 0
        if bounds.max_json_chars is not None:
            over = len(json.dumps(output, ensure_ascii=False)) - bounds.max_json_chars
        if bounds.max_context_bytes is not None:  # a character is at least one byte: cutting `over` is enough
            over = max(over, len(kept.encode("utf-8")) - bounds.max_context_bytes)
        if over <= 0:
            return output
        limit -= over


def _session_start(root: Path, bounds: Bounds) -> dict[str, Any]:
    from .snapshot import load
    return fitted("SessionStart", load(root, bounds.session_budget).session_text, bounds)


def _user_prompt(root: Path, prompt: str, bounds: Bounds) -> dict[str, Any] | None:
    from . import recall, snapshot
    found = recall.brought_in(prompt, snapshot.load(root, bounds.session_budget))
    if not found:
        return None
    lines = ["Decisions in the decision record (vault-tools) on what the owner's message is about, "
             "the closest first:"]
    standing = []
    for item, alike in found:
        lines.append(_item_line(item) + (f" ({len(alike)} more alike: {', '.join(a.id for a in alike[:ALIKE_IDS])}"
                                         f"{', ...' if len(alike) > ALIKE_IDS else ''})" if alike else ""))
        if item.text:
            lines.append(f"  {item.text}")
        if isinstance(item, snapshot.RulingView) and not item.conflict:
            standing.append(item)
    if standing:
        first = standing[0]
        lines += ["A message that changes or reverses one of these rulings is recorded as the owner's new ruling with:",
                  f'  vault-tools rule --topic {first.topics[0]} --summary "<the new ruling, one line>" '
                  f'--supersedes {first.id} --reason "<what the owner said, and why>" --source chat',
                  "Until then the record holds the rulings quoted above. `vault-tools show ID` prints a decision's text."]
    return fitted("UserPromptSubmit", "\n".join(lines), bounds)


ALIKE_IDS = 5  # ids of look-alike decisions named on a line


def _item_line(item: Any) -> str:
    """A ruling, an open question, or how one ended (withdrawn) or how a ruling ended (retracted), and why: facts."""
    if not hasattr(item, "closed"):  # a ruling
        return (f"- The owner ruled on {item.day} ({item.id}; topics {', '.join(item.topics)}): {item.summary}"
                + (f" -- {CONFLICT_SAID.format(conflict=item.conflict)}" if item.conflict else ""))
    if item.closed == "withdrawn":
        return f"- The owner withdrew a question ({item.id}, asked {item.day}): {item.summary} Why: {item.reason}"
    concerns = ", ".join(getattr(item, "concerns", ()))
    if item.closed == "retracted":
        return f"- The owner retracted a ruling ({item.id}, ruled {item.day}): {item.summary} Why: {item.reason}"
    if getattr(item, "proposal", False):
        return (f"- A proposed revision of {concerns} since {item.day} ({item.id}), not in force until the owner "
                f"rules on it: {item.summary}")
    on = f", on the matter of {concerns}, which is in force until the owner answers" if concerns else ""
    return f"- An open question since {item.day} ({item.id}{on}): {item.summary}"


def _pre_tool_use(root: Path, cwd: Path, tool: str, tool_input: Any, bounds: Bounds,
                  session: str = "") -> dict[str, Any] | None:
    if not isinstance(tool_input, dict):
        return None
    if tool in WRITE_TOOLS:
        target = tool_input.get(WRITE_TOOLS[tool])
        if not isinstance(target, str) or not target:
            return None
        reason = Guard(root).reason(_absolute(cwd, target), content=_written_text(tool_input))
        if reason:
            return deny(reason)
        return _governing(root, _absolute(cwd, target), bounds, reading=False)
    if tool == "Read" and isinstance(tool_input.get("file_path"), str) and tool_input["file_path"]:
        return _governing(root, _absolute(cwd, tool_input["file_path"]), bounds, reading=True)
    if tool == "Bash" and isinstance(tool_input.get("command"), str):
        reason = shell_reason(Guard(root), tool_input["command"], cwd)
        return deny(reason) if reason else None
    if tool == QUESTION_TOOL:
        return _question(root, tool_input, bounds, session)
    return None


def _written_text(tool_input: dict[str, Any]) -> str | None:
    """The text a file tool puts into a file: Write's content, or the new text of an edit (Edit, MultiEdit,
    Gemini's replace), so that an edit making a plain note a decision note is seen."""
    parts = [tool_input.get("content"), tool_input.get("new_string"), tool_input.get("new_source")]
    edits = tool_input.get("edits")
    if isinstance(edits, list):
        parts += [edit.get("new_string") for edit in edits if isinstance(edit, dict)]
    found = [part for part in parts if isinstance(part, str)]
    return "\n".join(found) if found else None


def _governing(root: Path, target: Path, bounds: Bounds, *, reading: bool) -> dict[str, Any] | None:
    """The current rulings whose `scope` matches the file about to be edited (or read, when the config says so),
    as context for the agent: most specific glob first, within SCOPE_CONTEXT_CHARS. The call goes through."""
    from .snapshot import load
    snapshot = load(root, bounds.session_budget)
    scoped = [(ruling.id, ruling.scope) for ruling in snapshot.rulings if ruling.scope]
    if not scoped or (reading and not snapshot.scope_on_read):
        return None
    from ..scope import governing, scope_path
    rel = scope_path(Path(snapshot.scope_root), target, target.parent)
    found = governing(scoped, rel) if rel is not None else []
    if not found:
        return None
    by_id = {ruling.id: ruling for ruling in snapshot.rulings}
    lines = [f"Current rulings in the decision record that govern {rel} (`vault-tools for {rel}` lists them):"]
    for item in found:
        ruling = by_id[item.ruling_id]
        line = f"- {ruling.id} {ruling.day}: {ruling.summary} (scope {item.glob})" + (
            f" -- {CONFLICT_SAID.format(conflict=ruling.conflict)}" if ruling.conflict else "")
        if sum(len(kept) + 1 for kept in lines) + len(line) > SCOPE_CONTEXT_CHARS:
            lines.append(f"- and {len(found) - len(lines) + 1} more: `vault-tools for {rel}`")
            break
        lines.append(line)
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "\n".join(lines)}}


# What the hooks say of a decision two clones closed differently: the agent follows neither side.
CONFLICT_SAID = ("{conflict}. Neither outcome stands in the record until the owner says which does; that settle "
                 "command records the owner's answer.")


def deny(reason: str) -> dict[str, Any]:
    """A denial whose answer, printed as JSON, stays within MAX_OUTPUT (`_fitting`)."""
    def output(text: str) -> dict[str, Any]:
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                       "permissionDecisionReason": text}}
    return output(reason[:_fitting(reason, output, MAX_OUTPUT)])


def _absolute(cwd: Path, target: str) -> Path:
    return Path(os.path.normpath(cwd / Path(os.path.expanduser(target))))


# -- questions ------------------------------------------------------------------------------

QUESTION_CHARS = 2_000


def _questions(tool_input: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """Each question, and its text with its header and the labels of the options it offers (each cut at
    QUESTION_CHARS: a question is not a book, and the hook answers within its agent's time)."""
    for item in tool_input.get("questions") or []:
        if isinstance(item, dict) and isinstance(item.get("question"), str):
            options = item.get("options")
            labels = [option.get("label") for option in (options if isinstance(options, list) else [])[:10]
                      if isinstance(option, dict)]
            header, question = item.get("header"), item["question"][:QUESTION_CHARS]
            yield question, " ".join(text[:QUESTION_CHARS] for text in (header, question, *labels)
                                     if isinstance(text, str))


def _question(root: Path, tool_input: dict[str, Any], bounds: Bounds, session: str) -> dict[str, Any] | None:
    """A question about to be put to the owner, checked as `ask` checks one (`recall.question_matches`): the same
    matter as a ruling, an open or a withdrawn question is denied; a possible match is denied once in a session,
    with the nearest decisions for the agent to judge, and let through when asked again."""
    from . import recall, snapshot
    RulingView = snapshot.RulingView
    kept = snapshot.load(root, bounds.session_budget)
    for question, offered in _questions(tool_input):
        named = set(recall.named_ids(offered))  # naming the entry: asking knowingly
        found = recall.question_matches(question, kept)
        if offered != question and not (found and found[0].strong):  # the matter may be in its options
            seen = {near.item.id for near in found}
            found = sorted([*found, *(near for near in recall.offered_matches(offered, kept) if near.item.id not in seen)],
                           key=lambda near: -near.score)
        # naming the decision goes through; of a strong match, it is the decision the question is on that counts
        if not found or named & ({near.item.id for near in found if near.strong} or {near.item.id for near in found}):
            continue
        if not found[0].strong:
            if _seen_in_session(root, session, offered):
                continue
            return deny(_possible_match(found[:recall.NEAREST]))
        item = found[0].item
        why = f"words shared: {', '.join(found[0].shared)}"
        topic = item.topics[0] if item.topics else "TOPIC"
        said = f'"{item.summary}"' + (f" {item.text}" if item.text else "")  # and its first lines, as `ask` shows them
        also = _also_near(found[1:recall.NEAREST])
        if isinstance(item, RulingView) and item.conflict:  # the owner is the one to ask: let it through, saying so
            return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext":
                    f"{item.id}: {CONFLICT_SAID.format(conflict=item.conflict)}"[:MAX_OUTPUT - 200]}}
        if not isinstance(item, RulingView) and item.closed == "withdrawn":
            return deny(
                f"The owner withdrew this question ({why}): {item.id}, asked {item.day}: {said} "
                f"Why: {item.reason} The owner is asked again only about what changed since: a question naming "
                f'{item.id} and what changed, or one registered with vault-tools ask "<question>" --topic {topic} '
                '--reask-reason "<what changed, at least 20 characters>".' + also)
        if isinstance(item, RulingView):
            return deny(
                f'The decision record answers this ({why}): the owner ruled on {item.day} ({item.id}): '
                f'{said} (`vault-tools show {item.id}` prints its text). The owner is asked again only '
                f"about what changed since: a question naming {item.id} and what changed, or one registered with "
                f'vault-tools ask "<question>" --topic {topic} --reask-reason "<what changed, at least 20 characters>".'
                + also)
        return deny(
            f'This question is already open in the decision record ({why}): {item.id}, asked {item.day}: '
            f'{said} ({item.path}). A question naming {item.id} puts it to the owner; the answer is recorded '
            f'with `vault-tools rule {item.id} --summary "<the answer>" --source chat`.' + also)
    return None


def _also_near(others: list[Any]) -> str:
    """The next nearest decisions after the one a denial names, for the agent to see if that one is not the
    matter after all (the words that matched may be shared by chance)."""
    if not others:
        return ""
    return "\nAlso near it:\n" + "\n".join(_item_line(near.item) for near in others)


def _possible_match(found: list[Any]) -> str:
    lines = ["This question may be about a matter the decision record already holds; it is not certain:"]
    for near in found:
        lines.append(_item_line(near.item) + f" (words shared: {', '.join(near.shared)})"
                     + (f" {near.item.text}" if near.item.text else ""))
    lines.append("A question on one of them names its id (and, for a ruling or a withdrawn question, what changed "
                 "since). The same question asked again in this session goes to the owner as it is.")
    return "\n".join(lines)


SEEN_FILE = "possible-matches.json"  # in .vault-tools/cache/: the questions let through on their second asking
SEEN_SESSIONS = 50  # sessions remembered
SEEN_PER_SESSION = 200  # questions remembered of each


def _seen_in_session(root: Path, session: str, question: str) -> bool:
    """Whether this question was denied as a possible match in this session already (then it goes through);
    if not, it is remembered as denied once."""
    from ..durable import write_atomic  # only when a question is a possible match
    path = root / ".vault-tools" / "cache" / SEEN_FILE
    key = " ".join(question.lower().split())[:500]
    try:
        seen = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(seen, dict):
            seen = {}
    except (OSError, ValueError):
        seen = {}
    asked = seen.get(session)
    if isinstance(asked, list) and key in asked:
        return True
    seen.pop(session, None)
    seen[session] = [*(asked if isinstance(asked, list) else []), key][-SEEN_PER_SESSION:]
    try:
        write_atomic(path, json.dumps(dict(list(seen.items())[-SEEN_SESSIONS:])).encode("utf-8"))
    except OSError:
        pass  # a read-only vault denies a possible match each time; naming the id still goes through
    return False


def respond(stdin_text: str, answering: Callable[[dict[str, Any]], dict[str, Any] | None]) -> str:
    """What a hook prints: `answering`'s JSON for the event on stdin, or nothing to pass silently. Any input
    lets the call through: what is not a JSON object gets a warning, and so does an internal error, whose
    traceback goes to the crash log."""
    try:
        payload = json.loads(stdin_text or "{}")
    except ValueError as error:
        payload, why = None, f"the hook's input is not JSON: {error}"
    except RecursionError:
        payload, why = None, "the hook's input is JSON nested too deeply to read"
    else:
        why = "the hook's input is not a JSON object"
    if not isinstance(payload, dict):
        output: dict[str, Any] | None = _warning(why, "the hook's input")
    else:
        try:
            output = answering(payload)
        except Exception as error:
            output = _warning(f"{type(error).__name__}: {error}; {_logged(error, None)}")
    return json.dumps(output, ensure_ascii=False) if output is not None else ""


def _logged(error: BaseException, root: Path | None) -> str:
    """The error's traceback written to the vault's crash log (or the temp folder's), said as a clause."""
    from .. import console
    try:
        if root is not None:
            console.vault_root = root
        return f"the traceback is in {console.crash_log(error)}"
    except Exception as log_error:  # the disk may be the trouble: say so, still letting the call through
        return f"the traceback could not be saved ({type(log_error).__name__})"
