"""`vault-tools mcp`, driven by the official SDK's own client over stdio, in a real subprocess."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from vault_tools.cli import run

from .helpers import made_id

# The SDK is imported by the tests that use it, not when the suite is collected (it takes a second to import).
pytestmark = pytest.mark.skipif(importlib.util.find_spec("mcp") is None,
                                reason="the mcp extra is not installed: pip install '.[mcp]'")

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
                elif kind == "schemas":
                    results.append({tool.name: tool.input_schema for tool in (await session.list_tools()).tools})
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

    (tools, lookup, show, found, refused, near, asked, ruled, gate, context, resources, note, near_ruling,
     judged_ruling) = session_calls(vault, [
        ("tools", None),
        ("lookup", {"topics": ["article-footer"]}),
        ("show", {"id": "D-0001"}),
        ("search", {"query": "newsletter signups"}),
        ("ask", {"question": "What should article footers contain?", "topics": ["article-footers"]}),
        ("ask", {"question": "Should article footers show a signup box?", "topics": ["footer-box"]}),
        ("ask", {"question": "Should article footers show a signup box?", "topics": ["footer-box"],
                 "not_the_same": ["D-0001"]}),
        ("rule", {"summary": "Article footers carry no promotion at all.", "topics": ["article-footer"],
                  "supersedes": ["D-0001"], "reason": "The owner said in chat that footers must not promote."}),
        ("gate", {"id": "D-0001", "require": ["budget=0"]}),
        ("context", {}),
        ("resources", None),
        ("read", "decision://D-0003"),
        ("rule", {"summary": "Article footers show a signup box for the podcast.", "topics": ["podcast-box"]}),
        ("rule", {"summary": "Article footers show a signup box for the podcast.", "topics": ["podcast-box"],
                  "not_the_same": ["D-0002"]}),
    ])
    assert set(tools) >= {"context", "lookup", "search", "ask", "rule", "show", "gate"}
    assert lookup[0] is False and [json.loads(lookup[1])] == lookup_cli  # a list comes as one content item each
    assert show[0] is False and json.loads(show[1]) == show_cli
    assert search_cli[0]["id"] == made_id(vault, "D-0001")  # "signups" found "signup": word endings do not matter
    assert found[0] is False and [json.loads(found[1])] == search_cli
    assert refused[0] is True and "settled" in refused[1] and "D-0001" in refused[1]
    assert near[0] is True and "may be the matter of D-0001" in near[1] and "not-the-same D-0001" in near[1]
    assert asked[0] is False and json.loads(asked[1])["id"] == made_id(vault, "D-0002")
    assert ruled[0] is False and json.loads(ruled[1])["id"] == made_id(vault, "D-0003")
    gate_data = json.loads(gate[1])
    assert gate_data["passed"] is False and gate_data["failures"] == [
        f"{made_id(vault, 'D-0001')} is superseded by {made_id(vault, 'D-0003')}"]
    assert "Should article footers show a signup box?" in context[1]
    assert resources == [f"decision://{made_id(vault, f'D-000{number}')}" for number in range(1, 4)]
    assert "Article footers carry no promotion at all." in note and note.startswith("---\ntype: decision")
    assert near_ruling[0] is True and "this ruling is the matter of D-0002" in near_ruling[1]  # it answers it
    assert judged_ruling[0] is False and json.loads(judged_ruling[1])["id"] == made_id(vault, "D-0004")


def files_of(vault: Path) -> dict[str, bytes]:
    """Every file of the vault but the caches, which any reader may write."""
    return {str(path.relative_to(vault)): path.read_bytes() for path in sorted(vault.rglob("*"))
            if path.is_file() and ".vault-tools/cache" not in path.relative_to(vault).as_posix()}


def test_an_argument_a_tool_does_not_take_is_refused_and_nothing_is_written(vault, capsys) -> None:
    """Also, in the same session (a server takes a second to start): `context` takes the budgets of
    `context --budget` and gives what the command line gives for each."""
    assert run(["rule", "--topic", "article-footer", "--summary", FOOTER, "--vault", str(vault)]) == 0
    for topic, summary in [("newsletter-day", "Thursday mornings are when the weekly letter is sent."),
                           ("podcast-length", "Podcast episodes run thirty minutes at most."),
                           ("social-crossposting", "We cross-post to Bluesky and nowhere else.")]:
        assert run(["rule", "--topic", topic, "--summary", summary, "--source", "chat", "--vault", str(vault)]) == 0
    assert run(["ask", "Should the podcast get its own newsletter?", "--topic", "podcast-newsletter",
                "--not-the-same", "D-0001", "--not-the-same", "D-0002", "--not-the-same", "D-0003", "--vault", str(vault)]) == 0
    capsys.readouterr()
    texts = {}
    for budget in ["config", "900"]:
        assert run(["context", "--budget", budget, "--vault", str(vault)]) == 0
        texts[budget] = capsys.readouterr().out
    assert run(["context", "--budget", "huge", "--vault", str(vault)]) == 2
    bad_budget = capsys.readouterr().err.strip()
    before = files_of(vault)

    (schemas, misspelt, term, asked, gated, flood, lookup, resources, default, small, as_number,
     refused) = session_calls(vault, [
        ("schemas", None),
        ("rule", {"summary": "Article footers carry no promotion at all.", "topics": ["article-footer"],
                  "supersede": ["D-0001"], "reasons": "The owner said in chat that footers must not promote.",
                  "ruled_at": "2026-07-17T08:30:00"}),
        # a ruling that would be recorded, without the term a gate needs, if the SDK dropped `term`
        ("rule", {"summary": "Articles run no paid promotion at all.", "topics": ["paid-promotion"],
                  "source": "chat with owner", "term": ["budget=0"]}),
        ("ask", {"question": "Should the podcast get a website of its own?", "topic": ["podcast-website"]}),
        ("gate", {"id": "D-0001", "requires": ["budget=0"]}),
        ("gate", {"id": "D-0001", **{f"x{number}" + "y" * 500: 1 for number in range(200)}}),  # no echo at length
        ("lookup", {"topics": ["article-footer"]}),
        ("resources", None),
        ("context", {}),
        ("context", {"budget": "900"}),
        ("context", {"budget": 900}),
        ("context", {"budget": "huge"}),
    ])
    assert all(schema["additionalProperties"] is False for schema in schemas.values())
    assert misspelt[0] is True
    assert "takes no argument supersede, reasons, ruled_at" in misspelt[1]
    assert "supersede: did you mean supersedes?" in misspelt[1] and "reasons: did you mean reason?" in misspelt[1]
    assert ("rule takes: summary, question_id, topics, source, supersedes, alongside, alongside_all, reason, body, terms"
            in misspelt[1])
    assert term[0] is True and "term: did you mean terms?" in term[1]
    assert asked[0] is True and "topic: did you mean topics?" in asked[1]
    assert gated[0] is True and "requires: did you mean require?" in gated[1] and "gate takes: id, require" in gated[1]
    assert flood[0] is True and "and 190 more" in flood[1] and len(flood[1]) < 2000
    # D-0001 is still the current ruling, and nothing was recorded: no note, no ledger line, no page changed
    assert lookup[0] is False and json.loads(lookup[1])["id"] == made_id(vault, "D-0001")
    assert resources == [f"decision://{made_id(vault, f'D-000{number}')}" for number in range(1, 6)]
    assert files_of(vault) == before
    assert "2 of 4 listed" in texts["900"] and "4 of 4 listed" in texts["config"]  # the small budget cuts
    assert default == (False, texts["config"])
    assert small == (False, texts["900"]) and as_number == small
    assert refused[0] is True and bad_budget.startswith("error: unknown budget 'huge'") and bad_budget in refused[1]


def test_writes_through_the_server_leave_the_pinned_pages_current(vault, capsys) -> None:
    asked, answered, ruled = session_calls(vault, [
        ("ask", {"question": "Should the podcast get its own newsletter?", "topics": ["podcast-newsletter"]}),
        ("ask", {"question": "What should article footers contain?", "topics": ["article-footer"]}),
        ("rule", {"question_id": "D-0002", "summary": FOOTER, "source": "chat with owner"}),
    ])
    assert [asked[0], answered[0], ruled[0]] == [False, False, False]
    open_questions = (vault / "Pinned" / "Open questions.md").read_text(encoding="utf-8")
    assert "Should the podcast get its own newsletter?" in open_questions
    assert "What should article footers contain?" not in open_questions  # answered
    assert FOOTER in (vault / "Pinned" / "Decisions log.md").read_text(encoding="utf-8")
    capsys.readouterr()
    assert run(["lint", "--vault", str(vault)]) == 0  # what pre-commit runs next
    assert "VT030" not in capsys.readouterr().out
    assert run(["build", "--check", "--vault", str(vault)]) == 0
