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
from collections.abc import Callable
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


# -- the owner's files, byte for byte ----------------------------------------------------------------
# `init --agent` edits files that are the owner's (CLAUDE.md, AGENTS.md, their settings): it changes only
# the bytes of what it adds, and `--remove` gives back the file as it was before, without keeping any
# state. Text is decoded as is (no newline translation) and a BOM is kept by the caller.


def eol_of(text: str) -> str:
    """A file's own line ending: CRLF when most of its line endings are CRLF, else LF (and LF for a new
    file). What we add is written in it, so in a file that has our part it only gets more of its own."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf > text.count("\n") - crlf else "\n"


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


def json_text(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def toml_block(args: list[str]) -> str:
    quoted = ", ".join(json.dumps(arg, ensure_ascii=False) for arg in args)
    return f'{TOML_START}\n[mcp_servers.{SERVER_NAME}]\ncommand = "vault-tools"\nargs = [{quoted}]\n{TOML_END}\n'


def with_toml_block(existing: str | None, block: str) -> str:
    return _with_block(existing, block, _TOML_BLOCK)


def without_toml_block(existing: str) -> str | None:
    return _without_block(existing, _TOML_BLOCK)


# -- JSON settings, edited in place ----------------------------------------------------------------
# The settings are changed as data (`with_hooks`, `without_mcp`, ...); `edited_json` then writes the change
# into the owner's text touching only the members and elements that differ, laid out as their neighbours
# are (indentation, line endings). An item appended after the last one takes over the whitespace before
# the closing bracket, and taking it out gives that whitespace back, so `--remove` returns the owner's file
# byte for byte. Where that would take state we do not keep, the bytes differ and the data does not: a
# container of the owner's that was empty and that we added to (`"hooks": {}`) goes when it is empty
# again, as `without_hooks` and `without_mcp` take out what they leave empty; a file left holding nothing
# (`{}`, or blank) is deleted, as one that did not exist before is; and a file with a key written twice is
# written anew (two-space indentation), since which of the two to edit is not clear.

_DECODER = json.JSONDecoder()


def _skip(text: str, at: int, blanks: str = " \t\n\r") -> int:
    """Past the whitespace at `at`."""
    while at < len(text) and text[at] in blanks:
        at += 1
    return at


class _NotEditable(ValueError):
    """The text cannot be edited in place (a repeated key): it is written anew instead."""


@dataclass
class _Value:
    """Where a JSON value is in the text; an object's members or an array's elements, None for a scalar."""

    start: int
    end: int
    items: list[_Item] | None = None
    is_object: bool = False


@dataclass
class _Item:
    pre: str  # the whitespace before it, after `{`, `[` or `,`
    head: str  # an object member's `"key": ` as written; empty in an array
    key: str | None
    value: _Value
    post: str  # the whitespace after it, before `,` or the closing bracket


def _parse(text: str, at: int) -> _Value:
    """The value starting at `at` in `text`, which `json.loads` has read already."""
    opening = text[at]
    if opening not in "{[":
        end = _DECODER.raw_decode(text, at)[1]
        return _Value(at, end)
    closing = "}" if opening == "{" else "]"
    items: list[_Item] = []
    index = at + 1
    while True:
        start = _skip(text, index)
        if text[start] == closing and not items:
            return _Value(at, start + 1, items, opening == "{")
        key = None
        value_at = start
        if opening == "{":
            key, key_end = _DECODER.raw_decode(text, start)
            colon = _skip(text, key_end)
            value_at = _skip(text, colon + 1)
        value = _parse(text, value_at)
        after = _skip(text, value.end)
        items.append(_Item(text[index:start], text[start:value_at], key, value, text[value.end:after]))
        if text[after] == closing:
            return _Value(at, after + 1, items, opening == "{")
        index = after + 1  # past the comma


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


@dataclass(frozen=True)
class _Layout:
    eol: str
    unit: str | None  # one level of indentation; None: the file is on one line

    def render(self, value: Any, indent: str | None) -> str:
        """`value` as JSON, its inner lines indented from `indent` (None: on one line)."""
        if indent is None or self.unit is None:
            return json.dumps(value, ensure_ascii=False)
        return json.dumps(value, indent=self.unit, ensure_ascii=False).replace("\n", self.eol + indent)

    def maker(self, value: Any, head: str = "") -> Callable[[str | None], str]:
        """What gives a new item's text (`head`: an object member's `"key": `) from its line's indentation."""
        return lambda indent: head + self.render(value, indent)


def _layout(text: str) -> _Layout:
    if "\n" not in text.strip():
        return _Layout(eol_of(text), None)
    indents = re.findall(r"\n([ \t]+)\S", text)
    if not indents:
        unit = "  "
    elif any("\t" in indent for indent in indents):
        unit = "\t"
    else:
        unit = " " * min(len(indent) for indent in indents)
    return _Layout(eol_of(text), unit)


def _line_indent(text: str, at: int) -> str:
    start = text.rfind("\n", 0, at) + 1
    return text[start:_skip(text, start, " \t")]


Row = list[str]  # an item as it will be written: [whitespace before, text, whitespace after]


def _delete(rows: list[Row], index: int) -> None:
    """Take an item out with the comma and whitespace that `_insert` added with it."""
    if len(rows) == 1:
        rows.clear()
    elif index == len(rows) - 1:
        rows[index - 1][2] = rows[index][2]
        del rows[index]
    elif index == 0:
        rows[1][0] = rows[0][0]
        del rows[0]
    else:
        del rows[index]


def _insert(rows: list[Row], index: int, make: Callable[[str | None], str], outer: str, layout: _Layout) -> None:
    """Put a new item at `index` (`len(rows)`: after the last), laid out as its neighbours are; `make`
    gives its text from the indentation of its line (None: on one line). `outer`: the container's."""
    if not rows:
        if layout.unit is None:
            rows.append(["", make(None), ""])
        else:
            inner = outer + layout.unit
            rows.append([layout.eol + inner, make(inner), layout.eol + outer])
        return
    if index == len(rows):
        last = rows[-1]
        pre = last[0] if "\n" in last[0] or len(rows) > 1 else " "
        rows.append([pre, "", last[2]])
        last[2] = ""
    else:
        rows.insert(index, [rows[index][0], "", ""])
    pre = rows[index][0]
    rows[index][1] = make(pre.rsplit("\n", 1)[1] if "\n" in pre else None)


def _rewrite(text: str, node: _Value, new: Any, layout: _Layout) -> str:
    """The text of `node` changed to hold `new`, keeping what does not change as it is written."""
    written = text[node.start:node.end]
    if _canonical(json.loads(written)) == _canonical(new):
        return written
    outer = _line_indent(text, node.start)
    if node.items is None or not isinstance(new, dict if node.is_object else list):
        return layout.render(new, outer)
    rows: list[Row] = [[item.pre, item.head + text[item.value.start:item.value.end], item.post] for item in node.items]
    if isinstance(new, dict):
        keys = [item.key for item in node.items]
        if len(set(keys)) != len(keys):
            raise _NotEditable("a key is repeated")
        for index in reversed(range(len(node.items))):
            item = node.items[index]
            if item.key not in new:
                _delete(rows, index)
            else:
                rows[index][1] = item.head + _rewrite(text, item.value, new[item.key], layout)
        for key, value in new.items():
            if key not in keys:
                _insert(rows, len(rows), layout.maker(value, json.dumps(key, ensure_ascii=False) + ": "), outer, layout)
    else:
        import difflib
        old = [_canonical(json.loads(text[item.value.start:item.value.end])) for item in node.items]
        matcher = difflib.SequenceMatcher(None, old, [_canonical(value) for value in new], autojunk=False)
        for tag, i1, i2, j1, j2 in reversed(matcher.get_opcodes()):
            if tag == "equal":
                continue
            if tag == "replace" and i2 - i1 == j2 - j1:
                for offset in range(i2 - i1):
                    rows[i1 + offset][1] = _rewrite(text, node.items[i1 + offset].value, new[j1 + offset], layout)
                continue
            for index in reversed(range(i1, i2)):
                _delete(rows, index)
            for offset, value in enumerate(new[j1:j2]):
                _insert(rows, i1 + offset, layout.maker(value), outer, layout)
    opening, closing = written[0], written[-1]
    return opening + ",".join("".join(row) for row in rows) + closing


def edited_json(text: str, data: dict[str, Any]) -> str:
    """`text`, a JSON object, changed to hold `data`, touching only what differs (see above). Text that
    cannot be edited so (a repeated key) is written anew: the owner's keys and values are kept, but not
    their layout, so `--remove` cannot give those bytes back."""
    layout = _layout(text)
    start = _skip(text, 0)
    if start < len(text):
        try:
            root = _parse(text, start)
            if not root.items:  # `{}`: nothing of the owner's to keep (and `--remove` deletes a file left so)
                return json_text(data).replace("\n", layout.eol)
            edited = text[:start] + _rewrite(text, root, data, layout) + text[root.end:]
            if _canonical(json.loads(edited)) == _canonical(data):
                return edited
        except (ValueError, IndexError):
            pass
    return json_text(data).replace("\n", layout.eol)
