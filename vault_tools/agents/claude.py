"""Claude Code hooks: JSON in on stdin, JSON out on stdout, fast, and never in the agent's way by accident.

- session-start: the context an agent loads, as `additionalContext`, within the hook's size bound.
- pre-tool-use: denies writes to sealed notes, generated pages and the ledger (Write, Edit, MultiEdit,
  NotebookEdit, and Bash commands that plainly write them), and questions (AskUserQuestion) that the
  record already answers or already holds open. Everything else passes silently.
- user-prompt-submit: when the owner's message touches a current ruling, adds it, with the
  instruction to record a superseding ruling if the message changes it.

A hook that cannot read the vault lets the call through with a one-line warning (an agent must not be
stuck on a broken note), except that a write to a sealed note is always denied. Formats: Claude Code's
hooks reference (see docs/agents.md); output over 10,000 characters is cut by Claude Code, so nothing
printed here exceeds `CLAUDE_BOUNDS`. Codex and Gemini CLI answer through this module too (codex.py,
gemini.py), each with its own `Bounds`.
"""
from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from ..commands.workspace import Workspace
    from ..vault import VaultState

MAX_OUTPUT = 9500  # characters of JSON on stdout; Claude Code cuts hook output past 10,000


class Bounds(NamedTuple):  # not a dataclass: importing dataclasses costs a hook more than its own work
    """How much of a hook's answer an agent keeps whole."""

    session_budget: str  # the `context --budget` the session-start context is made within
    max_json_chars: int | None  # the whole JSON printed
    max_context_bytes: int | None = None  # each additionalContext, in UTF-8 bytes


CLAUDE_BOUNDS = Bounds("claude-hook", MAX_OUTPUT)
EVENTS = {"session-start": "SessionStart", "pre-tool-use": "PreToolUse", "user-prompt-submit": "UserPromptSubmit"}
WRITE_TOOLS = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}
QUESTION_TOOL = "AskUserQuestion"
SCOPE_CONTEXT_CHARS = 2000  # rulings that govern a file: one line each, at most this much context per call
LEDGER_REL = ".vault-tools/ledger.jsonl"
SEALABLE_STATUSES = ("ruled", "superseded", "retracted")
_ID_LINE = re.compile(r"""^id:[ \t]*["']?(D-\d+(?:-[0-9a-z]{2,8})?)["']?[ \t]*$""", re.MULTILINE)
_STATUS_LINE = re.compile(r"""^status:[ \t]*["']?([a-z]+)["']?[ \t]*$""", re.MULTILINE)


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


def session_context(ws: Workspace, budget: str, state: VaultState | None = None) -> str:
    """What an agent loads at session start, within `budget` (a `context --budget` value)."""
    from ..commands.build import context
    return context(ws, budget, ws.today(), state).text


# -- the hook -------------------------------------------------------------------------------

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
        return _pre_tool_use(root, cwd, str(payload.get("tool_name") or ""), payload.get("tool_input") or {}, bounds)
    except Exception as trouble:  # fail open: a broken note must not stop the agent
        return _warning(f"{type(trouble).__name__}: {trouble}")


def _find_root(vault: Path | None, cwd: Path) -> Path:
    """The vault, found as `vault.find_vault` finds it, without importing what reading a vault needs
    (most hook calls never read it)."""
    if vault is not None:
        root = vault if vault.is_absolute() else cwd / vault
        if not root.is_dir():
            raise VaultUnreadable(f"{vault} is not a folder")
        return Path(os.path.abspath(root))
    ceiling = os.environ.get("VAULT_TOOLS_CEILING")
    here = Path(os.path.abspath(cwd))
    for folder in (here, *here.parents):
        if (folder / ".vault-tools").is_dir() or (folder / ".obsidian").is_dir():
            return folder
        if ceiling and folder == Path(os.path.abspath(ceiling)):
            break
    raise VaultUnreadable(f"no vault found at {here} or above (no .vault-tools/ or .obsidian/ folder)")


def _warning(why: str) -> dict[str, Any]:
    line = f"vault-tools: the decision record could not be read ({why.splitlines()[0][:300]}); this hook let the call through"
    return {"systemMessage": line}


def _context(hook_event: str, text: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": hook_event, "additionalContext": text}}


def fitted(hook_event: str, text: str, bounds: Bounds = CLAUDE_BOUNDS) -> dict[str, Any]:
    """`text` as additionalContext, cut at a line so the answer stays within `bounds`."""
    limit = len(text)
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
    from .recall import touching
    from .snapshot import RulingView, load
    found = [touch for touch in touching(prompt, load(root, bounds.session_budget).rulings, strict=False)
             if isinstance(touch.item, RulingView)]
    if not found:
        return None
    lines = ["The owner's message touches current rulings in the decision record (vault-tools):"]
    for touch in found:
        ruling = touch.item
        lines.append(f"- {ruling.id} (ruled {ruling.day}; topics {', '.join(ruling.topics)}): {ruling.summary}")
    first = found[0]
    lines += ["If the message changes or reverses one of them, record the owner's new ruling now, before acting on it:",
              f'  vault-tools rule --topic {first.topic} --summary "<the new ruling, one line>" '
              f'--supersedes {first.item.id} --reason "<what the owner said, and why>" --source chat',
              "Until it is recorded, do not cite the old ruling as current. If the message only asks about a ruling, "
              "answer from it (`vault-tools show ID` prints its text)."]
    return fitted("UserPromptSubmit", "\n".join(lines), bounds)


def _pre_tool_use(root: Path, cwd: Path, tool: str, tool_input: Any, bounds: Bounds) -> dict[str, Any] | None:
    if not isinstance(tool_input, dict):
        return None
    if tool in WRITE_TOOLS:
        target = tool_input.get(WRITE_TOOLS[tool])
        reason = protected_reason(root, _absolute(cwd, str(target))) if target else None
        if reason:
            return deny(reason)
        return _governing(root, _absolute(cwd, str(target)), bounds, reading=False) if target else None
    if tool == "Read" and tool_input.get("file_path"):
        return _governing(root, _absolute(cwd, str(tool_input["file_path"])), bounds, reading=True)
    if tool == "Bash":
        for target in bash_write_targets(str(tool_input.get("command") or "")):
            reason = protected_reason(root, _absolute(cwd, target))
            if reason:
                return deny(f"This command writes {target}. {reason}")
        return None
    if tool == QUESTION_TOOL:
        return _question(root, tool_input, bounds)
    return None


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
    lines = [f"Current rulings that govern {rel} (follow them; `vault-tools for {rel}` lists them):"]
    for item in found:
        ruling = by_id[item.ruling_id]
        line = f"- {ruling.id} {ruling.day}: {ruling.summary} (scope {item.glob})"
        if sum(len(kept) + 1 for kept in lines) + len(line) > SCOPE_CONTEXT_CHARS:
            lines.append(f"- and {len(found) - len(lines) + 1} more: `vault-tools for {rel}`")
            break
        lines.append(line)
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "\n".join(lines)}}


def deny(reason: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": reason[:MAX_OUTPUT - 200]}}


def _absolute(cwd: Path, target: str) -> Path:
    return Path(os.path.normpath(cwd / Path(os.path.expanduser(target))))


# -- writes ---------------------------------------------------------------------------------

def protected_reason(root: Path, target: Path) -> str | None:
    """Why a write to `target` is refused: a sealed note, a generated page or the ledger; None if it is not."""
    try:
        rel = target.relative_to(root).as_posix()
    except ValueError:
        try:  # the vault may be reached through a link
            rel = target.resolve().relative_to(root.resolve()).as_posix()
        except (ValueError, OSError):
            return None
    if rel == LEDGER_REL:
        return ("The ledger (.vault-tools/ledger.jsonl) is append-only and written only by vault-tools. Record a change "
                "with `vault-tools ask`, `rule`, `withdraw` or `retract` instead.")
    if not rel.endswith(".md") or any(part.startswith(".") for part in rel.split("/")):
        return None
    sealed = _sealed_id(root, target, rel)
    if sealed:
        return (f"{rel} is {sealed}, a sealed ruling: the owner's rulings are never edited in place. To change it, "
                f'record a new ruling that supersedes it: vault-tools rule --topic TOPIC --summary "<the new ruling>" '
                f'--supersedes {sealed} --reason "<why, at least 20 characters>". `vault-tools show {sealed}` '
                "prints it.")
    from ..page_names import PAGE_NAMES
    if rel.rsplit("/", 1)[-1].removesuffix(".md") in PAGE_NAMES and _is_page(root, rel):
        return (f"{rel} is generated by vault-tools from the decision notes and rewritten on every build. Change "
                "the decisions instead (to change a ruling: `vault-tools rule --supersedes ID --reason ...`), "
                "then `vault-tools build`.")
    return None


def _is_page(root: Path, rel: str) -> bool:
    """Whether `rel` is one of the generated pages (the config names their folder)."""
    from ..vault import load_config
    try:
        pinned = load_config(root).pinned_folder.strip("/")
    except Exception:
        pinned = "Pinned"  # a broken config: the default folder is still generated
    return rel.rsplit("/", 1)[0] == pinned if "/" in rel else pinned in ("", ".")


def _sealed_id(root: Path, target: Path, rel: str) -> str | None:
    """The id of the sealed ruling at `target`, if there is one there. With no readable ledger, a note
    whose status says it was ruled is taken as sealed: a write to a sealed note is always refused."""
    try:
        with open(target, "rb") as handle:
            start = handle.read(4096)
    except OSError:
        return None  # a new note, or not a file
    # As notes.read_head judges a note, without importing what parsing one needs.
    if not start.lstrip(b"\xef\xbb\xbf").startswith(b"---") or (
            b"decision" not in start and (len(start) < 4096 or start.count(b"\n---", 3) > 0)):
        return None
    from ..notes import read_head
    try:
        head = read_head(target)
    except OSError:
        return None
    if head is None:
        return None
    found = _ID_LINE.search(head)
    note_id = found.group(1) if found else None
    try:
        ledger = (root / LEDGER_REL).read_bytes()
        ledger.decode("utf-8")
        sealed = _sealed_in_ledger(ledger, note_id, rel)
    except (OSError, ValueError):
        status = _STATUS_LINE.search(head)
        return (note_id or rel) if status and status.group(1) in SEALABLE_STATUSES else None
    return sealed


def _sealed_in_ledger(ledger: bytes, note_id: str | None, rel: str) -> str | None:
    """The id the ledger sealed for this note: by its id, or (when the note's id cannot be read) by the
    path it was sealed at. Ledger lines are canonical JSON (compact, sorted keys), so only the lines
    naming the id are parsed."""
    if note_id is not None:
        needle = json.dumps({"id": note_id}, separators=(",", ":"))[1:-1].encode()
        at = ledger.find(needle)
        while at != -1:
            line_start = ledger.rfind(b"\n", 0, at) + 1
            line_end = ledger.find(b"\n", at)
            line = ledger[line_start:line_end if line_end != -1 else len(ledger)]
            if b'"event":"sealed"' in line:
                try:
                    if json.loads(line).get("id") == note_id:
                        return note_id
                except ValueError:
                    pass
            at = ledger.find(needle, line_end if line_end != -1 else len(ledger))
        return None
    for line in ledger.splitlines():
        if b'"event":"sealed"' in line:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("path") == rel and isinstance(event.get("id"), str):
                return str(event["id"])
    return None


_SEPARATORS = {";", "&", "&&", "|", "||", "(", ")", "|&", ";;", "&;"}
_FILE_COMMANDS = {"rm", "unlink", "truncate", "shred", "tee"}
_PREFIXES = {"sudo", "command", "env", "nohup", "time", "exec"}


def bash_write_targets(command: str) -> list[str]:
    """The files a shell command plainly writes: redirections, tee, sed -i, rm, truncate, and the
    destinations of mv and cp (and a moved-away source). Not a shell: what it cannot see, it misses."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|<>()")
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        tokens = command.split()
    targets: list[str] = []
    words: list[str] = []
    redirect = False
    for token in [*tokens, ";"]:
        if redirect:
            targets.append(token)
            redirect = False
        elif token and set(token) <= set(";&|<>()") and ">" in token:
            redirect = not token.endswith("&")  # `>&2` duplicates a descriptor
            if token.endswith("&"):
                continue
        elif token in _SEPARATORS:
            targets += _command_targets(words)
            words = []
        else:
            words.append(token)
    return targets


def _command_targets(words: list[str]) -> list[str]:
    while words and (("=" in words[0] and not words[0].startswith("-")) or words[0] in _PREFIXES):
        words = words[1:]
    if not words:
        return []
    name, args = os.path.basename(words[0]), words[1:]
    plain = [arg for arg in args if not arg.startswith("-")]
    if name in _FILE_COMMANDS:
        return plain
    if name == "sed" and any(arg == "--in-place" or arg.startswith("--in-place=")
                             or (arg.startswith("-") and not arg.startswith("--") and "i" in arg) for arg in args):
        return plain
    if name == "dd":
        return [arg[3:] for arg in args if arg.startswith("of=")]
    if name in ("mv", "cp", "install", "ln", "rsync"):
        directory = next((args[i + 1] for i, arg in enumerate(args[:-1]) if arg in ("-t", "--target-directory")), None)
        sources = [arg for arg in plain if arg != directory]
        if directory is None and len(sources) >= 2:
            directory, sources = sources[-1], sources[:-1]
        if directory is None:
            return []
        found = [directory] + [os.path.join(directory, os.path.basename(source.rstrip("/"))) for source in sources]
        return found + (sources if name == "mv" else [])
    return []


# -- questions ------------------------------------------------------------------------------

def _questions(tool_input: dict[str, Any]) -> Iterator[str]:
    for item in tool_input.get("questions") or []:
        if isinstance(item, dict) and isinstance(item.get("question"), str):
            yield item["question"]


def _question(root: Path, tool_input: dict[str, Any], bounds: Bounds) -> dict[str, Any] | None:
    from .recall import touching
    from .snapshot import RulingView, load
    snapshot = load(root, bounds.session_budget)
    for question in _questions(tool_input):
        named = set(re.findall(r"\bD-\d+\b", question))  # naming the record's entry is asking knowingly
        found = touching(question, [*snapshot.rulings, *snapshot.questions], strict=True)
        if not found or named & {touch.item.id for touch in found}:
            continue
        touch = found[0]
        item = touch.item
        topic = touch.topic
        if isinstance(item, RulingView):
            return deny(
                f'The decision record already answers this ({touch.why}): {item.id}, ruled {item.day}: "{item.summary}" '
                f"Do not ask the owner again; follow it (`vault-tools show {item.id}` prints its text). If something "
                f"changed since, say so: ask again naming {item.id} and what changed in the question, or register "
                f'it: vault-tools ask "<question>" --topic {topic} --reask-reason "<what changed, at least 20 characters>".')
        return deny(
            f'This question is already open in the decision record ({touch.why}): {item.id}, asked {item.day}: '
            f'"{item.summary}" ({item.path}). Add to it rather than asking anew; to put it to the owner now, name '
            f"{item.id} in the question, and record the answer with "
            f'`vault-tools rule {item.id} --summary "<the answer>" --source chat`.')
    return None


def run(event: str, stdin_text: str, vault: Path | None = None) -> str:
    """The text a hook prints for one call: a JSON document, or nothing to pass silently."""
    return respond(stdin_text, lambda payload: answer(event, payload, vault))


def respond(stdin_text: str, answering: Callable[[dict[str, Any]], dict[str, Any] | None]) -> str:
    """What a hook prints: `answering`'s JSON for the event on stdin, a warning when that is not a JSON
    object, or nothing to pass silently."""
    try:
        payload = json.loads(stdin_text or "{}")
    except ValueError as error:
        payload = None
        why = f"the hook's input is not JSON: {error}"
    if not isinstance(payload, dict):
        output: dict[str, Any] | None = _warning(why if payload is None else "the hook's input is not a JSON object")
    else:
        output = answering(payload)
    return json.dumps(output, ensure_ascii=False) if output is not None else ""
