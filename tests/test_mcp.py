"""`vault-tools mcp`, driven by the official SDK's own client over stdio, in a real subprocess."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from vault_tools.cli import run

# The SDK is imported by the tests that use it, not when the suite is collected (it takes a second to import).
pytestmark = pytest.mark.skipif(importlib.util.find_spec("mcp") is None,
                                reason="the mcp extra is not installed: pip install 'vault-tools[mcp]'")

FOOTER = "Every article footer carries the newsletter signup link."


def session_calls(vault: Path, steps: list[tuple[str, Any]]) -> list[Any]:
    """Start the server as an agent would and run the steps in one session."""
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def main() -> list[Any]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "vault_tools", "mcp", "--vault", str(vault)])
        results: list[Any] = []
        with anyio.fail_after(60):
            await steps_in(params, results)
        return results

    async def steps_in(params: Any, results: list[Any]) -> None:
        async with stdio_client(params, errlog=sys.__stderr__) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for kind, argument in steps:
                if kind == "tools":
                    results.append([tool.name for tool in (await session.list_tools()).tools])
                elif kind == "resources":
                    results.append([str(r.uri) for r in (await session.list_resources()).resources])
                elif kind == "read":
                    results.append((await session.read_resource(argument)).contents[0].text)
                else:
                    result = await session.call_tool(kind, argument)
                    texts = [item.text for item in result.content]
                    results.append((result.is_error, texts[0] if len(texts) == 1 else texts))

    return anyio.run(main)


def test_the_server_answers_as_the_command_line_does(vault, capsys) -> None:
    assert run(["rule", "--topic", "article-footer", "--summary", FOOTER, "--term", "budget=0",
                "--vault", str(vault)]) == 0
    capsys.readouterr()
    assert run(["lookup", "article-footer", "--json", "--vault", str(vault)]) == 0
    lookup_cli = json.loads(capsys.readouterr().out)
    assert run(["show", "D-0001", "--json", "--vault", str(vault)]) == 0
    show_cli = json.loads(capsys.readouterr().out)
    assert run(["search", "newsletter", "signups", "--json", "--vault", str(vault)]) == 0
    search_cli = json.loads(capsys.readouterr().out)

    tools, lookup, show, found, refused, asked, ruled, gate, context, resources, note = session_calls(vault, [
        ("tools", None),
        ("lookup", {"topics": ["article-footer"]}),
        ("show", {"id": "D-0001"}),
        ("search", {"query": "newsletter signups"}),
        ("ask", {"question": "What should article footers contain?", "topics": ["article-footers"]}),
        ("ask", {"question": "Should the podcast get its own newsletter?", "topics": ["podcast-newsletter"]}),
        ("rule", {"summary": "Article footers carry no promotion at all.", "topics": ["article-footer"],
                  "supersedes": ["D-0001"], "reason": "The owner said in chat that footers must not promote."}),
        ("gate", {"id": "D-0001", "require": ["budget=0"]}),
        ("context", {}),
        ("resources", None),
        ("read", "decision://D-0003"),
    ])
    assert set(tools) >= {"context", "lookup", "search", "ask", "rule", "show", "gate"}
    assert lookup[0] is False and [json.loads(lookup[1])] == lookup_cli  # a list comes as one content item each
    assert show[0] is False and json.loads(show[1]) == show_cli
    assert search_cli[0]["id"] == "D-0001"  # "signups" found "signup": word endings do not matter
    assert found[0] is False and [json.loads(found[1])] == search_cli
    assert refused[0] is True and "settled" in refused[1] and "D-0001" in refused[1]
    assert asked[0] is False and json.loads(asked[1])["id"] == "D-0002"
    assert ruled[0] is False and json.loads(ruled[1])["id"] == "D-0003"
    gate_data = json.loads(gate[1])
    assert gate_data["passed"] is False and gate_data["failures"] == ["D-0001 is superseded by D-0003"]
    assert "Should the podcast get its own newsletter?" in context[1]
    assert resources == ["decision://D-0001", "decision://D-0002", "decision://D-0003"]
    assert "Article footers carry no promotion at all." in note and note.startswith("---\ntype: decision")
