"""`vault-tools mcp`: the decision record as an MCP server on stdio (the official `mcp` SDK, 2.x).

Tools: context, lookup, search, show, ask, rule, gate; each decision note is a resource (`decision://D-0007`).
The JSON a tool returns is what the command line's `--json` prints for the same command, so an agent
gets the same answer whichever way it asks. A refusal (a settled topic, an unknown id, a bad budget) is a tool
error whose text is the command line's message. An argument a tool does not take is refused before the tool
runs, as the command line refuses an unknown option (the SDK alone would drop it and record the rest), and each
tool's input schema says so (`additionalProperties: false`). `ask` and `rule` rebuild the pinned pages after
writing, as the commands do.
"""
from __future__ import annotations

import difflib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, InputRequiredResult
from mcp_types import Resource as MCPResource
from mcp_types import Tool as MCPTool

from ..bodies import SHOW_LIMIT
from ..commands.ask import ask
from ..commands.build import context, refresh_pages
from ..commands.gate import gate
from ..commands.read import body_view, lookup, search, show
from ..commands.rule import rule
from ..errors import VaultToolsError
from ..services.workspace import Workspace
from ..shapes import decision_json, gate_json, lookup_json, show_json
from ..vault import Vault

INSTRUCTIONS = """The owner's decisions, kept in an Obsidian vault. Read `context` at the start of a session.
Before asking the owner anything, call `lookup` on the topic, then `ask`: a refusal names the ruling that answers it.
When the owner decides something in chat, record it with `rule` (with `supersedes` and `reason` when it changes
a ruling). Scripts and actions that depend on a ruling check it with `gate`."""


def _refusal(error: VaultToolsError) -> ToolError:
    return ToolError("\n".join([f"error: {error}", *(f"  {line}" for line in error.details)]))


def _unknown_arguments(tool: str, unknown: list[str], allowed: list[str]) -> ToolError:
    shown = [name[:60] for name in unknown[:10]]  # an agent's arguments are not ours to echo at any length
    more = f" and {len(unknown) - len(shown)} more" if len(unknown) > len(shown) else ""
    lines = [f"error: {tool} takes no argument {', '.join(shown)}{more}; nothing was done"]
    for name in shown:
        if near := difflib.get_close_matches(name, allowed, n=1):
            lines.append(f"  {name}: did you mean {near[0]}?")
    lines.append(f"  {tool} takes: {', '.join(allowed) if allowed else 'no arguments'}")
    return ToolError("\n".join(lines))


class DecisionServer(MCPServer):
    """An MCP server whose resource list is the vault's decision notes as they are now, and whose tools refuse
    arguments they do not take."""

    def __init__(self, root: Path) -> None:
        super().__init__(name="vault-tools", instructions=INSTRUCTIONS)
        self.root = root

    def workspace(self) -> Workspace:
        return Workspace(Vault(self.root))

    def call(self, action: Callable[[Workspace], Any]) -> Any:
        """`action` on a new workspace; a refusal becomes the tool's error, as the command line prints it."""
        try:
            return action(self.workspace())
        except VaultToolsError as error:
            raise _refusal(error) from None

    def write(self, action: Callable[[Workspace], Any]) -> Any:
        """A change to the record, then the pinned pages rebuilt as the command line does after it."""
        def change(ws: Workspace) -> Any:
            done = action(ws)
            _say(refresh_pages(ws))
            return done
        return self.call(change)

    async def list_resources(self) -> list[MCPResource]:
        state = self.workspace().state()
        listed = await super().list_resources()
        return listed + [MCPResource(uri=f"decision://{d.id}", name=d.id, title=f"{d.id} {d.summary}",
                                     description=f"{d.status.value} · {', '.join(d.topics)}", mime_type="text/markdown")
                         for d in sorted(state.decisions, key=lambda d: d.number)]

    async def list_tools(self) -> list[MCPTool]:
        return [tool.model_copy(update={"input_schema": {**tool.input_schema, "additionalProperties": False}})
                for tool in await super().list_tools()]

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context[Any, Any] | None = None) -> CallToolResult | InputRequiredResult:
        """Every tool call comes through here: one with an argument its tool does not take is refused whole
        (the SDK's argument model would ignore it). An unknown tool is left to the SDK's own error."""
        for tool in await super().list_tools():
            if tool.name == name:
                allowed = list(tool.input_schema.get("properties", {}))
                if unknown := [key for key in arguments if key not in allowed]:
                    raise _unknown_arguments(name, unknown, allowed)
                break
        return await super().call_tool(name, arguments, context)


def _say(lines: list[str]) -> None:
    """A warning of the server's own (a page not rebuilt): on stderr, where an MCP client logs what a server says."""
    for line in lines:
        sys.stderr.write(line + "\n")


def build_server(root: Path) -> DecisionServer:
    server = DecisionServer(root)
    _add_reading_tools(server)
    _add_writing_tools(server)
    return server


def _add_reading_tools(server: DecisionServer) -> None:
    call = server.call

    @server.tool(name="context")
    def context_tool(budget: str | int = "config") -> str:
        """The open questions, settled topics and rulings, as an agent reads them at the start of a session.
        budget: what the reader loads without cutting, as `context --budget` takes it: claude-hook (9,500
        characters), codex-hook (2,400 tokens), memory-file (200 lines, 25,000 bytes), config (the vault's own;
        the default) or a number of characters."""
        return str(call(lambda ws: context(ws, str(budget)).text))

    @server.tool(name="lookup")
    def lookup_tool(topics: list[str], full: bool = False) -> list[dict[str, Any]]:
        """The current rulings on these topics (near spellings count), newest first, each with the start of its
        ruling text (the whole text with full=true) and the rulings it superseded."""
        found, _problems = call(lambda ws: lookup(ws, topics))
        return list(lookup_json(found, full))

    @server.tool(name="search")
    def search_tool(query: str, history: bool = False, limit: int = 20) -> list[dict[str, Any]]:
        """Decisions whose words match the query (any of its words; accents and word endings do not matter),
        best first: current rulings and open questions, and with history=true superseded, withdrawn and
        retracted ones too (marked historical). Each with the passage that matched. For text that is not a
        topic key; for a topic, lookup is exact."""
        result = call(lambda ws: search(ws, query, history=history, limit=limit))
        return [hit.as_json() for hit in result.hits]

    @server.tool(name="show")
    def show_tool(id: str, all: bool = False) -> dict[str, Any]:
        """One decision note: its properties, its body and sections, its ledger history."""
        decision, history, problems = call(lambda ws: show(ws, id))
        return dict(show_json(decision, history, problems, body_view(decision, None if all else SHOW_LIMIT)))

    @server.resource("decision://{id}", name="decision", mime_type="text/markdown",
                     description="A decision note as it is on disk: properties and text.")
    def decision(id: str) -> str:
        def read(ws: Workspace) -> str:
            found = ws.find(ws.state(), id)
            return ws.vault.path_of(found).read_text(encoding="utf-8-sig")
        return str(call(read))


def _add_writing_tools(server: DecisionServer) -> None:
    call, write = server.call, server.write

    @server.tool(name="ask")
    def ask_tool(question: str, topics: list[str], body: str | None = None, due: str | None = None,
            reask_reason: str | None = None, not_the_same: list[str] | None = None) -> dict[str, Any]:
        """Register a question for the owner. Refused when a current ruling settles its topic or says the same
        matter (the refusal names it) unless reask_reason says what changed, and when a question on the topic
        is already open. Refused too when it may be the matter of decisions already recorded: the refusal shows
        them; read them, and if none is this matter, ask again naming each in not_the_same (kept in the ledger)."""
        decision = write(lambda ws: ask(ws, question, topics, body=body, due=due, reask_reason=reask_reason,
                                                 not_the_same=not_the_same or ()))
        return dict(decision_json(decision))

    @server.tool(name="rule")
    def rule_tool(summary: str, question_id: str | None = None, topics: list[str] | None = None,
             source: str | None = None, supersedes: list[str] | None = None, alongside: list[str] | None = None,
             alongside_all: bool = False, reason: str | None = None, body: str | None = None,
             terms: list[str] | None = None, not_the_same: list[str] | None = None) -> dict[str, Any]:
        """Record the owner's ruling: the answer to an open question (question_id) or one given directly (topics).
        On a topic with a current ruling say which way it goes: supersedes (with a reason), alongside, or
        alongside_all (beside every current ruling on the topic, whatever their number). One given
        directly that is or may be the matter of a ruling or open question under other topics is refused with
        them: say which way it goes, or name each in not_the_same (kept in the ledger) when none is this matter.
        terms: KEY=VALUE pairs the ruling grants, for gate."""
        decision = write(lambda ws: rule(ws, question_id, summary, topics=topics or [], source=source,
                                                  supersedes=supersedes or [], alongside=alongside or [],
                                                  alongside_all=alongside_all, reason=reason, body=body, terms=terms or [],
                                                  not_the_same=not_the_same or []))
        return dict(decision_json(decision))

    @server.tool(name="gate")
    def gate_tool(id: str, require: list[str] | None = None) -> dict[str, Any]:
        """Whether a ruling is current, sealed and grants every required KEY=VALUE term exactly; passed is false
        with the reasons in failures otherwise. Check before acting on a ruling."""
        return dict(gate_json(call(lambda ws: gate(ws, id, require or []))))


def serve(root: Path) -> None:
    build_server(root).run()
