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
                       ("PreToolUse", "Write|Edit|MultiEdit|NotebookEdit|Bash|AskUserQuestion", "pre-tool-use")),
                      timeout=10),  # seconds
    # Codex: a matcher of names and `|` is an exact list; Write and Edit would also select apply_patch.
    "codex": HookSet((("SessionStart", None, "session-start"),
                      ("UserPromptSubmit", None, "user-prompt-submit"),
                      ("PreToolUse", "Bash|apply_patch", "pre-tool-use")),
                     timeout=10),  # seconds
    # Gemini CLI: a tool matcher is a regular expression searched in the name, so it is anchored.
    "gemini": HookSet((("SessionStart", None, "session-start"),
                       ("BeforeAgent", None, "before-agent"),
                       ("BeforeTool", "^(write_file|replace|run_shell_command|ask_user)$", "before-tool")),
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
- Before asking the owner anything, run `vault-tools lookup TOPIC{vault}`, then register the question:
  `vault-tools ask "<question>" --topic TOPIC{vault}`. A refusal names the ruling that answers it.
- When the owner decides something in chat, record it at once: `vault-tools rule --topic TOPIC --summary "<the ruling>"
  --source chat{vault}`; when it changes a ruling, add `--supersedes ID --reason "<why>"`.
- Never edit a decision note, the pinned pages or `.vault-tools/` by hand: a ruling changes only through a new
  ruling that supersedes it.
- A script that acts on a ruling checks it first: `vault-tools gate ID --require KEY=VALUE{vault}` (exit 0: granted).
- The same operations are tools of the `{SERVER_NAME}` MCP server.
{END}
"""


_SECTION = re.compile(re.escape(START.split(":", 2)[0]) + r".*?" + re.escape(END) + r"\n?", re.DOTALL)


def with_section(existing: str, text: str) -> str:
    """`existing` with our section replaced, or added at the end after a blank line."""
    if _SECTION.search(existing):
        return _SECTION.sub(lambda _: text, existing, count=1)
    if not existing:
        return text
    return existing.rstrip("\n") + "\n\n" + text


def without_section(existing: str) -> str:
    """`existing` with our section taken out, and the blank line we added before it."""
    match = _SECTION.search(existing)
    if not match:
        return existing
    before, after = existing[:match.start()], existing[match.end():]
    if not after and before.endswith("\n\n"):
        before = before[:-1]
    return before + after


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


def json_text(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def toml_block(args: list[str]) -> str:
    quoted = ", ".join(json.dumps(arg, ensure_ascii=False) for arg in args)
    return f'{TOML_START}\n[mcp_servers.{SERVER_NAME}]\ncommand = "vault-tools"\nargs = [{quoted}]\n{TOML_END}\n'


_TOML_BLOCK = re.compile(re.escape(TOML_START.split(":", 1)[0]) + r":.*?" + re.escape(TOML_END) + r"\n?", re.DOTALL)


def with_toml_block(existing: str, block: str) -> str:
    if _TOML_BLOCK.search(existing):
        return _TOML_BLOCK.sub(lambda _: block, existing, count=1)
    if not existing:
        return block
    return existing.rstrip("\n") + "\n\n" + block


def without_toml_block(existing: str) -> str:
    return without_section(existing.replace(TOML_START, START, 1).replace(TOML_END, END, 1)) \
        if _TOML_BLOCK.search(existing) else existing
