"""`init --agent`: wiring an agent into a project (its instructions section, hooks and MCP entry) and taking it out,
every byte of the owner's own files kept.
"""
from __future__ import annotations

import codecs
import json
import shlex
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any

from .. import durable
from ..agents import instructions as parts
from ..agents import json_edit
from ..errors import UsageError


def init_agent(project: Path, vault_root: Path, agent: str, *, remove: bool = False) -> list[str]:
    """Wire an agent into a project (or take it out): its instructions section, hooks and MCP entry.
    Returns the project-relative files written or removed, and the folders removed (ending in `/`);
    nothing is written when one of them cannot be read.

    The files are the owner's: they are read and written as bytes, keeping their BOM, line endings and
    final newline or its absence, and what is added is laid out so that `--remove` gives each file back
    byte for byte as it was, without keeping any state (a file that did not exist is deleted again; see
    `agents.instructions` for the JSON settings). `--remove` also removes the folders it emptied."""
    if agent not in parts.AGENTS:
        raise UsageError(f"unknown agent {agent!r} (expected one of: {', '.join(parts.AGENTS)})")
    files = parts.FILES[agent]
    try:
        inside = vault_root.resolve().relative_to(project.resolve()).as_posix()
        vault_arg = "" if inside == "." else inside
    except ValueError:
        vault_arg = str(vault_root.resolve())
    vault_option = f"--vault {shlex.quote(vault_arg)}" if vault_arg else ""
    mcp_args = ["mcp", "--vault", vault_arg] if vault_arg else ["mcp"]

    edit = _ProjectEdit(project)
    _plan_instructions(edit, agent, files.instructions, parts.section(agent, vault_option), remove)
    if files.settings is not None:
        edit.change_json(files.settings, lambda data: parts.without_hooks(data, agent) if remove
                         else parts.with_hooks(data, agent, vault_option))
    if files.mcp.endswith(".toml"):
        _plan_toml_mcp(edit, files.mcp, mcp_args, remove)
    else:
        edit.change_json(files.mcp, lambda data: parts.without_mcp(data) if remove
                         else parts.with_mcp(data, agent, mcp_args))
    return edit.write()


Found = tuple[bytes, str] | None  # a file's BOM and text as read; None when there is no such file


class _ProjectEdit:
    """The changes planned to a project's files, every one read before any is written."""

    def __init__(self, project: Path) -> None:
        self.project = project
        self.planned: dict[str, bytes | None] = {}  # rel -> new bytes, None to delete
        self.json_files: dict[str, tuple[Found, dict[str, Any], dict[str, Any]]] = {}  # as read, as it will be

    def read(self, rel: str) -> Found:
        """A file's BOM and its text as written (no newline translation); None when there is no such file."""
        path = self.project / rel
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as error:
            raise UsageError(f"cannot read: {error}", path=rel) from None
        bom = codecs.BOM_UTF8 if data.startswith(codecs.BOM_UTF8) else b""
        try:
            return bom, data[len(bom):].decode("utf-8")
        except UnicodeDecodeError as error:
            raise UsageError(f"cannot read: {error}", path=rel) from None

    def read_json(self, rel: str) -> tuple[Found, dict[str, Any]]:
        found = self.read(rel)
        text = found[1] if found else ""
        if not text.strip():
            return found, {}
        try:
            data = json.loads(text)
        except ValueError as error:
            if "//" in text or "/*" in text:  # Gemini CLI reads its settings with comments allowed
                raise UsageError(f"is not plain JSON ({error}): if it holds comments, vault-tools cannot keep them "
                                 "when it writes the file; take them out, or add the entries by hand "
                                 "(docs/agents.md); nothing was written", path=rel) from None
            raise UsageError(f"is not valid JSON ({error}); fix it first, nothing was written", path=rel) from None
        if not isinstance(data, dict):
            raise UsageError("is not a JSON object; nothing was written", path=rel)
        return found, data

    def plan(self, rel: str, found: Found, new: str | None) -> None:
        """Write `new` (None: delete the file) with the file's BOM, if it changes anything."""
        if found is None:
            if new is not None:
                self.planned[rel] = new.encode("utf-8")
        elif new is None:
            self.planned[rel] = None
        elif new != found[1]:
            self.planned[rel] = found[0] + new.encode("utf-8")

    def change_json(self, rel: str, change: Any) -> None:
        """Apply `change` to a JSON file's data (two changes to one file, as Gemini CLI's, add up)."""
        found, before, current = self.json_files[rel] if rel in self.json_files else (*self.read_json(rel), None)
        current = before if current is None else current
        try:
            self.json_files[rel] = (found, before, change(current))
        except ValueError as error:
            raise UsageError(f"{error}; nothing was written", path=rel) from None

    def write(self) -> list[str]:
        """Write what was planned; the files written or removed, then the folders emptied (ending in `/`)."""
        for rel, (found, before, after) in self.json_files.items():
            if after == before:
                continue
            if not after:  # nothing left but `{}`: as when the file did not exist before
                self.plan(rel, found, None)
            elif found is None or not found[1].strip():
                self.plan(rel, found, json_edit.json_text(after))
            else:
                self.plan(rel, found, json_edit.edited_json(found[1], after))
        for rel, content in self.planned.items():
            path = self.project / rel
            if content is None:
                path.unlink(missing_ok=True)
            else:
                durable.write_atomic(path, content)
        emptied = []
        deleted = {parent for rel, content in self.planned.items() if content is None
                   for parent in PurePosixPath(rel).parents if parent.parts}
        for folder in sorted(deleted, key=lambda folder: len(folder.parts), reverse=True):  # .cursor/rules first
            try:
                (self.project / folder).rmdir()  # only when empty: never a folder that still holds anything
            except OSError:
                continue
            emptied.append(f"{folder.as_posix()}/")
        return [*self.planned, *emptied]


def _plan_instructions(edit: _ProjectEdit, agent: str, rel: str, section: str, remove: bool) -> None:
    found = edit.read(rel)
    text = found[1] if found else None
    if agent == "cursor":  # the rules file is ours alone: the frontmatter, then the section
        body = text or parts.CURSOR_FRONTMATTER
        if remove:
            left = parts.without_section(body)
            edit.plan(rel, found,
                      None if left in (None, parts.CURSOR_FRONTMATTER.replace("\n", json_edit.eol_of(body))) else left)
        else:
            edit.plan(rel, found, parts.with_section(body, section))
    elif remove:
        edit.plan(rel, found, parts.without_section(text) if text is not None else None)
    else:
        edit.plan(rel, found, parts.with_section(text, section))


def _plan_toml_mcp(edit: _ProjectEdit, rel: str, mcp_args: list[str], remove: bool) -> None:
    """Codex's MCP entry, a block of its TOML config, refused where the owner has one of that name."""
    found = edit.read(rel)
    text = found[1] if found else None
    try:
        servers = tomllib.loads(parts.without_toml_block(text or "") or "").get("mcp_servers", {})
    except tomllib.TOMLDecodeError as error:
        raise UsageError(f"is not valid TOML ({error}); fix it first, nothing was written", path=rel) from None
    if not remove and parts.SERVER_NAME in servers:
        raise UsageError(f"already has [mcp_servers.{parts.SERVER_NAME}] of its own; nothing was written", path=rel)
    if remove:
        new = parts.without_toml_block(text) if text is not None else None
    else:
        new = parts.with_toml_block(text, parts.toml_block(mcp_args))
    tomllib.loads(new or "")  # what is written must stay valid
    edit.plan(rel, found, new)
