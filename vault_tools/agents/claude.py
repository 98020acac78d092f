"""Claude Code's hooks: the hook engine (hooks.py) answering in Claude Code's own format, within its bound.

Claude Code cuts a hook's output past 10,000 characters (`CLAUDE_BOUNDS` keeps every answer under 9,500).
Events and payloads: Claude Code's hooks reference (docs/agents.md, "Formats, verified").
"""
from __future__ import annotations

from pathlib import Path

from .hooks import CLAUDE_BOUNDS, answer, respond

EVENTS = {"session-start": "SessionStart", "pre-tool-use": "PreToolUse", "user-prompt-submit": "UserPromptSubmit",
          "post-tool-use": "PostToolUse"}


# docs/design/0035-one-hook-engine-a-front-per-agent.md
def run(event: str, stdin_text: str, vault: Path | None = None) -> str:
    """The text a Claude Code hook prints for one call: a JSON document, or nothing to pass silently."""
    return respond(stdin_text, lambda payload: answer(event, payload, vault, CLAUDE_BOUNDS))
