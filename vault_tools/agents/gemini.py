"""Gemini CLI hooks: the hook engine (hooks.py), asked and answered in Gemini CLI's terms.

Gemini CLI's events are SessionStart, BeforeAgent (the owner's message, `prompt`) and BeforeTool
(`tool_name`, `tool_input`); its tools are `write_file` and `replace` (`file_path`),
`run_shell_command` (`command`) and `ask_user` (`questions[].question`), the same fields as Claude
Code's Write, Edit, Bash and AskUserQuestion. It reads only JSON on stdout: a refusal is
`{"decision": "deny", "reason": ...}` (the reason goes to the model as the tool's error), context is
`hookSpecificOutput.additionalContext`, a warning `systemMessage`. BeforeTool has no way to add
context, so the rulings that govern an edited file are not shown there. AfterTool (every tool) is the
tripwire: what it put back is told as `additionalContext`, appended to the tool's result (a `decision` there
would replace the result with the reason). Sources in docs/agents.md.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from . import hooks

EVENTS = {"session-start": "SessionStart", "before-agent": "BeforeAgent", "before-tool": "BeforeTool",
          "after-tool": "AfterTool"}
CLAUDE_EVENTS = {"session-start": "session-start", "before-agent": "user-prompt-submit", "before-tool": "pre-tool-use",
                 "after-tool": "post-tool-use"}
CLAUDE_TOOLS = {"write_file": "Write", "replace": "Edit", "run_shell_command": "Bash", "ask_user": "AskUserQuestion"}
BOUNDS = hooks.CLAUDE_BOUNDS  # Gemini CLI sets no bound of its own; the same as Claude Code's keeps one context


# docs/design/0035-one-hook-engine-a-front-per-agent.md
def answer(event: str, payload: dict[str, Any], vault: Path | None = None) -> dict[str, Any] | None:
    """The JSON to print for one Gemini CLI hook call, or None to pass silently."""
    if event in ("before-tool", "after-tool"):
        tool = CLAUDE_TOOLS.get(str(payload.get("tool_name") or ""))
        if tool is None and event == "before-tool":
            return None
        if tool is not None:  # the same name before and after: the tripwire tells the call apart by it
            payload = {**payload, "tool_name": tool}
    return _translated(event, hooks.answer(CLAUDE_EVENTS[event], payload, vault, BOUNDS))


def _translated(event: str, found: dict[str, Any] | None) -> dict[str, Any] | None:
    if found is None:
        return None
    # systemMessage; not AfterTool's decision, which would put the reason in place of what the tool returned
    output = {key: value for key, value in found.items() if key != "hookSpecificOutput"
              and not (event == "after-tool" and key in ("decision", "reason"))}
    specific = found.get("hookSpecificOutput") or {}
    if specific.get("permissionDecision") == "deny":
        output.update(decision="deny", reason=specific["permissionDecisionReason"])
    elif specific.get("additionalContext") and event != "before-tool":
        output["hookSpecificOutput"] = {"hookEventName": EVENTS[event], "additionalContext": specific["additionalContext"]}
    return output or None


def run(event: str, stdin_text: str, vault: Path | None = None) -> str:
    """The text a Gemini CLI hook prints for one call: a JSON document, or nothing to pass silently."""
    return hooks.respond(stdin_text, lambda payload: answer(event, payload, vault))
