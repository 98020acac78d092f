"""What `init --agent` writes: a marker-delimited section in the agent's instructions file, its hooks
merged into its settings and its MCP entry, each recognisable as ours so a second run changes nothing
and `--remove` takes out exactly what was added.

Formats, as each agent documents them (sources in docs/agents.md): Claude Code reads CLAUDE.md, hooks
from `.claude/settings.json` and project MCP servers from `.mcp.json`; Codex reads AGENTS.md, hooks from
`.codex/hooks.json` and MCP servers from `[mcp_servers.NAME]` in `.codex/config.toml` (a trusted
project); Gemini CLI reads GEMINI.md, and `hooks` and `mcpServers` in `.gemini/settings.json`; Cursor
reads `.cursor/rules/*.mdc` (frontmatter `description`, `globs`, `alwaysApply`) and `mcpServers` in
`.cursor/mcp.json`. The three hook files share one shape: `{"hooks": {EVENT: [{"matcher": "...",
"hooks": [{"type": "command", "command": "...", "timeout": N}]}]}}`.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from .json_edit import eol_of

AGENTS = ("claude", "codex", "gemini", "cursor")
SERVER_NAME = "vault-tools"
START = "<!-- vault-tools:start: written by `vault-tools init --agent`; `--remove` takes it out -->"
END = "<!-- vault-tools:end -->"
TOML_START = "# vault-tools:start: written by `vault-tools init --agent codex`; `--remove` takes it out"
TOML_END = "# vault-tools:end"


@dataclass(frozen=True)
class HookSet:
    """An agent's hooks: its events, each with the matcher it needs (None: every call) and the event
    argument of `vault-tools hook AGENT EVENT`, and the timeout in the unit the agent reads."""

    events: tuple[tuple[str, str | None, str], ...]
    timeout: int
    named: bool = False  # Gemini CLI lists hooks, and enables or disables one, by its name


HOOKS = {
    "claude": HookSet((("SessionStart", None, "session-start"),
                       ("UserPromptSubmit", None, "user-prompt-submit"),
                       ("PreToolUse", "Write|Edit|MultiEdit|NotebookEdit|Bash|AskUserQuestion|mcp__.*", "pre-tool-use"),
                       ("PostToolUse", None, "post-tool-use")),  # the tripwire, after every tool call
                      timeout=10),  # seconds
    # Codex: a matcher of names and `|` is an exact list; Write and Edit would also select apply_patch.
    "codex": HookSet((("SessionStart", None, "session-start"),
                      ("UserPromptSubmit", None, "user-prompt-submit"),
                      ("PreToolUse", "Bash|apply_patch", "pre-tool-use"),
                      ("PostToolUse", None, "post-tool-use")),  # the tripwire, after every tool call
                     timeout=10),  # seconds
    # Gemini CLI: a tool matcher is a regular expression searched in the name, so it is anchored.
    "gemini": HookSet((("SessionStart", None, "session-start"),
                       ("BeforeAgent", None, "before-agent"),
                       ("BeforeTool", "^(write_file|replace|run_shell_command|ask_user)$", "before-tool"),
                       ("AfterTool", None, "after-tool")),  # the tripwire, after every tool call
                      timeout=10_000, named=True),  # milliseconds
}


@dataclass(frozen=True)
class AgentFiles:
    instructions: str  # project-relative
    settings: str | None  # where hooks go
    mcp: str


FILES = {
    "claude": AgentFiles("CLAUDE.md", ".claude/settings.json", ".mcp.json"),
    "codex": AgentFiles("AGENTS.md", ".codex/hooks.json", ".codex/config.toml"),
    "gemini": AgentFiles("GEMINI.md", ".gemini/settings.json", ".gemini/settings.json"),
    "cursor": AgentFiles(".cursor/rules/vault-tools.mdc", None, ".cursor/mcp.json"),
}

CURSOR_FRONTMATTER = """\
---
description: The owner's decision record (vault-tools): check it before asking, record rulings from chat
globs:
alwaysApply: true
---
"""


def section(agent: str, vault_option: str) -> str:
    """The instructions for the agent, between the markers."""
    vault = f" {vault_option}" if vault_option else ""
    where = f"The vault is `{vault_option.split(' ', 1)[1]}`: add `{vault_option}` to every command.\n" if vault_option else ""
    loaded = {"claude": "Claude Code loads it for you at session start, and its hooks refuse a settled question or "
                        "a write to a sealed note.",
              "codex": "Once its hooks are trusted, Codex loads it for you at session start, and they refuse a write "
                       "to a sealed note.",
              "gemini": "Gemini CLI loads it for you at session start, and its hooks refuse a settled question or a "
                        "write to a sealed note."}.get(agent, "Read it before anything else.")
    return f"""{START}
## The owner's decisions (vault-tools)

The owner's decisions are notes in an Obsidian vault with an explicit state (open, ruled, superseded, ...).
{where}- At the start of a session run `vault-tools context{vault}` and follow it. {loaded}
- Before asking the owner anything, register the question: `vault-tools ask "<question>" --topic TOPIC{vault}`.
  It does the looking up: it refuses a question the record answers or holds open, naming the decision, and
  shows the decisions it may be the matter of. If none is, ask again adding `--not-the-same ID` for each;
  if something changed since a ruling, adding `--reask-reason "<what changed>"`.
- When the owner decides something in chat, record it at once: `vault-tools rule --topic TOPIC --summary "<the ruling>"
  --source chat{vault}`; when it changes a ruling, add `--supersedes ID --reason "<why>"`. It refuses a ruling
  that is or may be the matter of another one, showing it: say which way it goes, or add `--not-the-same ID`.
- Never edit a decision note, the pinned pages or the record's folder (`vault-tools/`, `.vault-tools/`) by hand:
  a ruling changes only through a new ruling that supersedes it.
- A script that acts on a ruling checks it first: `vault-tools gate ID --require KEY=VALUE{vault}` (exit 0: granted).
- The same operations are tools of the `{SERVER_NAME}` MCP server.
{END}
"""


# -- the owner's files, byte for byte ----------------------------------------------------------------
# `init --agent` edits files that are the owner's (CLAUDE.md, AGENTS.md, their settings): it changes only
# the bytes of what it adds, and `--remove` gives back the file as it was before, without keeping any
# state. Text is decoded as is (no newline translation) and a BOM is kept by the caller.


_SECTION = re.compile(re.escape(START.split(":", 2)[0]) + r".*?" + re.escape(END), re.DOTALL)
_TOML_BLOCK = re.compile(re.escape(TOML_START.split(":", 1)[0]) + r":.*?" + re.escape(TOML_END), re.DOTALL)


def _with_block(existing: str | None, block: str, pattern: re.Pattern[str]) -> str:
    """`existing` (None: there is no such file) with our block put back where it is, or added at the end
    after a blank line, in the file's line endings. A file without a final newline (an empty one too) keeps
    it missing, so that `_without_block` can tell how many line endings it added."""
    eol = eol_of(existing or "")
    body = block.rstrip("\n").replace("\n", eol)
    if existing is None:
        return body + eol
    found = pattern.search(existing)
    if found:
        return existing[:found.start()] + body + existing[found.end():]
    if not existing:
        return body
    if existing.endswith("\n"):
        return existing + eol + body + eol
    return existing + eol + eol + body


def _without_block(existing: str, pattern: re.Pattern[str]) -> str | None:
    """`existing` with our block taken out, and what `_with_block` added around it: exactly the text it was
    given. None when the file is nothing but the block as `_with_block` writes a file that did not exist."""
    found = pattern.search(existing)
    if not found:
        return existing
    eol = eol_of(existing)
    before, after = existing[:found.start()], existing[found.end():]
    if after in ("\n", "\r\n"):  # the block ends the file, with a final newline: after a blank line, or alone
        if not before:
            return None
        if before.endswith(eol) and before[:-len(eol)].endswith("\n"):
            before = before[:-len(eol)]
        return before
    if not after:  # the block ends the file without a final newline: after two line endings, or alone
        return before[:-2 * len(eol)] if before.endswith(eol + eol) else before
    # Text after the block (moved or written after it by hand): the block goes with its line ending.
    return before + after.removeprefix("\r\n" if after.startswith("\r\n") else "\n")


def with_section(existing: str | None, text: str) -> str:
    """`existing` (None: no such file) with our section replaced, or added at the end after a blank line."""
    return _with_block(existing, text, _SECTION)


def without_section(existing: str) -> str | None:
    """`existing` with our section taken out, as it was before `with_section`; None: delete the file."""
    return _without_block(existing, _SECTION)


def mcp_entry(agent: str, args: list[str]) -> dict[str, Any]:
    if agent == "claude":
        return {"type": "stdio", "command": "vault-tools", "args": args, "env": {}}
    return {"command": "vault-tools", "args": args}


def with_mcp(data: dict[str, Any], agent: str, args: list[str]) -> dict[str, Any]:
    servers = data.get("mcpServers")
    if servers is not None and not isinstance(servers, dict):
        raise ValueError("mcpServers is not an object")
    return {**data, "mcpServers": {**(servers or {}), SERVER_NAME: mcp_entry(agent, args)}}


def without_mcp(data: dict[str, Any]) -> dict[str, Any]:
    servers = data.get("mcpServers")
    if not isinstance(servers, dict) or SERVER_NAME not in servers:
        return data
    rest = {name: entry for name, entry in servers.items() if name != SERVER_NAME}
    result = {key: value for key, value in data.items() if key != "mcpServers"}
    if rest:
        result["mcpServers"] = rest
    return result


def hook_command(agent: str) -> str:
    return f"vault-tools hook {agent}"


def _ours(hook: Any, agent: str) -> bool:
    return isinstance(hook, dict) and str(hook.get("command", "")).startswith(hook_command(agent) + " ")


def without_hooks(data: dict[str, Any], agent: str) -> dict[str, Any]:
    """An agent's settings with our hook commands taken out, and what they leave empty."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return data
    events: dict[str, Any] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            events[event] = groups
            continue
        kept = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list) and any(
                    _ours(hook, agent) for hook in group["hooks"]):
                rest = [hook for hook in group["hooks"] if not _ours(hook, agent)]
                if rest:
                    kept.append({**group, "hooks": rest})
            else:
                kept.append(group)
        if kept:
            events[event] = kept
    result = {key: value for key, value in data.items() if key != "hooks"}
    if events:
        result["hooks"] = events
    return result


def with_hooks(data: dict[str, Any], agent: str, vault_option: str) -> dict[str, Any]:
    """An agent's settings with our hooks, each in a group of its own after the user's."""
    if "hooks" in data and not isinstance(data["hooks"], dict):
        raise ValueError("hooks is not an object")
    result = without_hooks(data, agent)
    hooks = dict(result.get("hooks") or {})
    wanted = HOOKS[agent]
    for event, matcher, argument in wanted.events:
        command = f"{hook_command(agent)} {argument}" + (f" {vault_option}" if vault_option else "")
        group: dict[str, Any] = {"matcher": matcher} if matcher else {}
        hook: dict[str, Any] = {"name": f"vault-tools {argument}"} if wanted.named else {}
        hook.update(type="command", command=command, timeout=wanted.timeout)
        group["hooks"] = [hook]
        existing = hooks.get(event)
        if existing is not None and not isinstance(existing, list):
            raise ValueError(f"hooks.{event} is not a list")
        hooks[event] = [*(existing or []), group]
    return {**result, "hooks": hooks}


def toml_block(args: list[str]) -> str:
    quoted = ", ".join(json.dumps(arg, ensure_ascii=False) for arg in args)
    return f'{TOML_START}\n[mcp_servers.{SERVER_NAME}]\ncommand = "vault-tools"\nargs = [{quoted}]\n{TOML_END}\n'


def with_toml_block(existing: str | None, block: str) -> str:
    return _with_block(existing, block, _TOML_BLOCK)


def without_toml_block(existing: str) -> str | None:
    return _without_block(existing, _TOML_BLOCK)
