"""The Codex and Gemini CLI hooks fed the JSON each agent sends, on real vaults: the first test of each
agent runs the hooks as the agent does, in real processes; the others call the same front door in-process.

The payloads follow each agent's source: Codex's hook input structs (codex-rs/hooks/src/schema.rs) and
Gemini CLI's (packages/core/src/hooks/types.ts); see docs/agents.md, "Formats, verified".
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import FOOTER, config_file, sealed_path, vt, vt_here, write
from vault_tools.commands.setup import init_vault


def codex(event: str, payload: dict, cwd: Path, process: bool = False) -> dict | None:
    """`vault-tools hook codex EVENT` with what Codex puts on stdin."""
    base = {"session_id": "019a0c6e-7d2e-7c30-9a1d-5f0e8c1b2a3d", "transcript_path": None, "cwd": str(cwd),
            "model": "gpt-5-codex", "permission_mode": "default"}
    done = (vt if process else vt_here)("hook", "codex", event, cwd=cwd, stdin=json.dumps({**base, **payload}))
    assert done.code == 0, done.err
    return json.loads(done.out) if done.out.strip() else None


def gemini(event: str, payload: dict, cwd: Path, process: bool = False) -> dict | None:
    """`vault-tools hook gemini EVENT` with what Gemini CLI puts on stdin; it reads nothing but JSON back."""
    base = {"session_id": "8d3c2f4e-1b7a-4c55-9e0d-2a6f1c9b7e41", "transcript_path": str(cwd / "chat.json"),
            "cwd": str(cwd), "timestamp": "2026-12-01T09:00:00.000Z"}
    done = (vt if process else vt_here)("hook", "gemini", event, cwd=cwd, stdin=json.dumps({**base, **payload}))
    assert done.code == 0, done.err
    return json.loads(done.out) if done.out.strip() else None


def patch(*lines: str) -> dict:
    """A Codex apply_patch call: the patch is `tool_input.command`."""
    text = "\n".join(["*** Begin Patch", *lines, "*** End Patch", ""])
    return {"hook_event_name": "PreToolUse", "turn_id": "t1", "tool_name": "apply_patch", "tool_use_id": "call_1",
            "tool_input": {"command": text}}


def codex_denial(answer: dict | None) -> str:
    assert answer is not None, "expected a denial"
    output = answer["hookSpecificOutput"]
    assert output["hookEventName"] == "PreToolUse" and output["permissionDecision"] == "deny"
    return output["permissionDecisionReason"]


# -- Codex --------------------------------------------------------------------------------------

def test_codex_gets_the_context_and_the_owners_message_its_ruling(footer_vault) -> None:
    started = codex("session-start", {"hook_event_name": "SessionStart", "source": "startup"}, footer_vault,
                    process=True)
    context = started["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart"
    assert FOOTER in context["additionalContext"] and "Mastodon" in context["additionalContext"]
    said = codex("user-prompt-submit", {"hook_event_name": "UserPromptSubmit", "turn_id": "t1",
                                        "prompt": "why is there still promotion in the footers? I said no"},
                 footer_vault, process=True)
    text = said["hookSpecificOutput"]["additionalContext"]
    assert said["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert "D-0001" in text and "--supersedes D-0001" in text


def test_codex_context_stays_under_its_limit_and_says_what_it_left_out(vault) -> None:
    """Codex moves a hook's text past 2,500 tokens (UTF-8 bytes / 4) to a file: the context never gets there."""
    from tests.helpers import decision
    for number in range(1, 300):
        decision(vault, number, topics=(f"topic-number-{number}",),
                 summary=f"規則 {number}: 記事のフッターには著者の紹介だけを載せ、宣伝は一切入れないこと。" * 2)
    text = codex("session-start", {"hook_event_name": "SessionStart", "source": "resume"},
                 vault)["hookSpecificOutput"]["additionalContext"]
    assert len(text.encode("utf-8")) <= 9600
    assert "vault-tools lookup" in text.splitlines()[-1]


def test_codex_patches_that_touch_a_sealed_note_are_denied_and_others_pass(footer_vault) -> None:
    sealed = sealed_path(footer_vault, "D-0001").relative_to(footer_vault).as_posix()
    for lines in ([f"*** Update File: {sealed}", "@@", "-a", "+b"],
                  [f"*** Delete File: {sealed}"],
                  [f"*** Update File: {sealed}", "*** Move to: Archive/old.md", "@@", "-a", "+b"],
                  ["*** Add File: notes.md", "+hello", "*** Update File: .vault-tools/ledger.jsonl", "@@", "+{}"]):
        reason = codex_denial(codex("pre-tool-use", patch(*lines), footer_vault))
        assert "vault-tools" in reason
    assert codex("pre-tool-use", patch("*** Add File: Drafts/new.md", "+hello"), footer_vault) is None
    heredoc = f"apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: {sealed}\n*** End Patch\nEOF\n"
    shell = {"hook_event_name": "PreToolUse", "turn_id": "t1", "tool_name": "Bash", "tool_use_id": "call_2"}
    assert "D-0001" in codex_denial(codex("pre-tool-use", {**shell, "tool_input": {"command": heredoc}}, footer_vault))
    assert "This command writes" in codex_denial(codex("pre-tool-use", {
        **shell, "tool_input": {"command": f"sed -i 's/a/b/' '{sealed}'"}}, footer_vault))
    assert codex("pre-tool-use", {**shell, "tool_input": {"command": "git status"}}, footer_vault) is None


def test_codex_patch_to_a_governed_file_brings_the_ruling_that_governs_it(footer_vault, cli) -> None:
    assert cli("rule", "--topic", "article-length", "--summary", "Articles stay under two thousand words.",
               "--scope", "Articles/**").code == 0
    answer = codex("pre-tool-use", patch("*** Add File: Articles/Slow news.md", "+draft"), footer_vault)
    output = answer["hookSpecificOutput"]
    assert "permissionDecision" not in output
    assert "two thousand words" in output["additionalContext"] and "Articles/Slow news.md" in output["additionalContext"]


# -- Gemini CLI ---------------------------------------------------------------------------------

def test_gemini_gets_the_context_and_the_owners_message_its_ruling(footer_vault) -> None:
    started = gemini("session-start", {"hook_event_name": "SessionStart", "source": "startup"}, footer_vault,
                     process=True)
    assert list(started) == ["hookSpecificOutput"]
    assert started["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert FOOTER in started["hookSpecificOutput"]["additionalContext"]
    said = gemini("before-agent", {"hook_event_name": "BeforeAgent",
                                   "prompt": "why is there still promotion in the footers? I said no"}, footer_vault,
                  process=True)
    assert said["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    assert "--supersedes D-0001" in said["hookSpecificOutput"]["additionalContext"]
    assert gemini("before-agent", {"hook_event_name": "BeforeAgent", "prompt": "fix the typo on the about page"},
                  footer_vault) is None


@pytest.mark.parametrize("tool, tool_input, expected", [
    ("write_file", {"file_path": "{sealed}", "content": "x"}, "D-0001"),
    ("replace", {"file_path": "{sealed}", "instruction": "drop the link", "old_string": "a", "new_string": "b"}, "D-0001"),
    ("run_shell_command", {"command": "echo {{}} >> .vault-tools/ledger.jsonl", "is_background": False}, "append-only"),
    ("ask_user", {"questions": [{"question": "What should the article footers contain?", "header": "Footers",
                                 "type": "choice", "options": [{"label": "Bio", "description": "Only the bio"}]}]},
     FOOTER),
])
def test_gemini_before_tool_denies_as_gemini_reads_a_denial(footer_vault, tool, tool_input, expected) -> None:
    sealed = sealed_path(footer_vault, "D-0001").relative_to(footer_vault).as_posix()
    given = json.loads(json.dumps(tool_input).replace("{sealed}", sealed).replace("{{}}", "{}"))
    answer = gemini("before-tool", {"hook_event_name": "BeforeTool", "tool_name": tool, "tool_input": given},
                    footer_vault)
    assert answer is not None and answer["decision"] == "deny" and expected in answer["reason"]
    assert "hookSpecificOutput" not in answer


def test_gemini_lets_other_calls_through_and_a_broken_vault_only_warns(footer_vault) -> None:
    for tool, tool_input in [("write_file", {"file_path": "Drafts/new.md", "content": "x"}),
                             ("ask_user", {"questions": [{"question": "Which colour should the new logo be?",
                                                          "header": "Logo", "type": "text"}]}),
                             ("read_file", {"file_path": "Pinned/Decisions log.md"})]:
        assert gemini("before-tool", {"hook_event_name": "BeforeTool", "tool_name": tool, "tool_input": tool_input},
                      footer_vault) is None
    write(config_file(footer_vault), "timezone: [broken\n")
    warned = gemini("session-start", {"hook_event_name": "SessionStart", "source": "clear"}, footer_vault)
    assert list(warned) == ["systemMessage"] and "could not be read" in warned["systemMessage"]
    sealed = sealed_path(footer_vault, "D-0001").relative_to(footer_vault).as_posix()
    assert gemini("before-tool", {"hook_event_name": "BeforeTool", "tool_name": "write_file",
                                  "tool_input": {"file_path": sealed, "content": "x"}}, footer_vault)["decision"] == "deny"


def test_a_hook_finds_a_clone_of_the_shared_layout_as_the_command_line_does(tmp_path) -> None:
    """A fresh clone on an agent's server: `vault-tools/` came with git, but neither `.vault-tools/` (never
    committed) nor `.obsidian/` (left out of the repository). The command line finds the vault there; so must
    the hooks, or the record is open to the agent's edits."""
    root = tmp_path / "vault"
    root.mkdir()
    init_vault(root, "UTC", shared=True)
    assert vt_here("rule", "--topic", "analytics", "--summary", "The site uses no analytics at all.", "--source",
                   "chat", cwd=root).code == 0
    sealed = next((root / "Decisions").glob("*.md"))
    shutil.rmtree(root / ".vault-tools")
    (root / "Notes").mkdir()
    payload = {"cwd": str(root / "Notes"), "tool_name": "Edit", "tool_input": {"file_path": str(sealed)}}
    answer = json.loads(vt_here("hook", "claude", "pre-tool-use", cwd=root / "Notes",
                                stdin=json.dumps(payload)).out)
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
    listed = vt_here("list", "--json", cwd=root / "Notes")
    assert listed.code == 0 and [item["status"] for item in json.loads(listed.out)] == ["ruled"]
