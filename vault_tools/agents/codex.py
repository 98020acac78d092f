"""Codex hooks: the hook engine (hooks.py), answered as Codex reads them.

Codex takes Claude Code's hook JSON in and out for SessionStart, UserPromptSubmit and PreToolUse
(`hookSpecificOutput` with `additionalContext`, or `permissionDecision: deny` and its reason), so the
answers are those of hooks.py, with three differences (sources in docs/agents.md):

- each `additionalContext` past 2,500 tokens, counted as UTF-8 bytes / 4, is moved to a file and the
  model sees a preview: the session-start context is made for `--budget codex-hook`, and every text is
  kept within `MAX_CONTEXT_BYTES`;
- edits arrive as `apply_patch`, `tool_input.command` holding the patch, whose `*** Add File:`,
  `*** Update File:`, `*** Delete File:` and `*** Move to:` lines name the files it writes;
- Codex has no question tool a hook sees, so there is nothing to refuse there.

Its PostToolUse takes Claude Code's answer too (`{"decision": "block", "reason": ...}` with `additionalContext`;
only `suppressOutput` is refused there): the tripwire answers it as it answers Claude Code.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from . import hooks

EVENTS = {"session-start": "SessionStart", "user-prompt-submit": "UserPromptSubmit", "pre-tool-use": "PreToolUse",
          "post-tool-use": "PostToolUse"}
PATCH_TOOL = "apply_patch"
PATCH_START = "*** Begin Patch"
PATCH_FILE_LINES = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")
MAX_CONTEXT_BYTES = 9600  # 2,400 tokens as Codex counts them (bytes / 4); it moves a text past 2,500 to a file
BOUNDS = hooks.Bounds("codex-hook", None, MAX_CONTEXT_BYTES)


def patch_targets(patch: str) -> list[tuple[str, str]]:
    """The files a patch in Codex's format adds, updates, deletes or moves to, in order, each with the lines
    the patch adds to it (`+` lines, without the `+`)."""
    found: list[tuple[str, list[str]]] = []
    for raw in patch.splitlines():
        line = raw.strip()  # Codex accepts the markers padded with spaces
        marker = next((m for m in PATCH_FILE_LINES if line.startswith(m) and line[len(m):].strip()), None)
        if marker is not None:
            found.append((line[len(marker):].strip(), []))
        elif found and raw.startswith("+"):
            found[-1][1].append(raw[1:])
    return [(path, "\n".join(added)) for path, added in found]


# docs/design/0035-one-hook-engine-a-front-per-agent.md
def answer(event: str, payload: dict[str, Any], vault: Path | None = None) -> dict[str, Any] | None:
    """The JSON to print for one Codex hook call, or None to pass silently."""
    tool_input = payload.get("tool_input")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if event == "pre-tool-use" and isinstance(command, str) and (
            payload.get("tool_name") == PATCH_TOOL or PATCH_START in command):
        return _patch(payload, command, vault)
    return hooks.answer(event, payload, vault, BOUNDS)


def _patch(payload: dict[str, Any], patch: str, vault: Path | None) -> dict[str, Any] | None:
    """A patch (or a shell command carrying one) judged as a write of each file it names: the first
    refusal wins; otherwise the rulings that govern the files, together."""
    calls = [{**payload, "tool_name": "Write", "tool_input": {"file_path": target, "content": added}}
             for target, added in patch_targets(patch)]
    calls.append(payload)  # the shell command may write other files besides; and the call as the tripwire knows it
    contexts: list[str] = []
    warnings: list[str] = []
    for call in calls:
        found = hooks.answer("pre-tool-use", call, vault, BOUNDS) or {}
        specific = found.get("hookSpecificOutput") or {}
        if specific.get("permissionDecision") == "deny":
            return found
        if specific.get("additionalContext"):
            contexts.append(specific["additionalContext"])
        if found.get("systemMessage"):
            warnings.append(found["systemMessage"])
    output = hooks.fitted("PreToolUse", "\n".join(contexts), BOUNDS) if contexts else {}
    if warnings:
        output["systemMessage"] = warnings[0]
    return output or None


def run(event: str, stdin_text: str, vault: Path | None = None) -> str:
    """The text a Codex hook prints for one call: a JSON document, or nothing to pass silently."""
    return hooks.respond(stdin_text, lambda payload: answer(event, payload, vault))
