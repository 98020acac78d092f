"""The agent hooks (Claude Code), `gate`, and `init --agent`, on real vaults and real files."""
from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from tests.helpers import (
    FOOTER,
    PAST_RACY_SECONDS,
    ClockAhead,
    config_file,
    decision,
    hook,
    ledger_file,
    note_path,
    sealed_path,
    snapshot,
    vt,
    vt_here,
    write,
)
from vault_tools.agents.snapshot import SNAPSHOT_FILE
from vault_tools.topic_aliases import add_alias


def denied(answer: dict | None) -> str:
    assert answer is not None, "expected a denial"
    output = answer["hookSpecificOutput"]
    assert output["hookEventName"] == "PreToolUse" and output["permissionDecision"] == "deny"
    return output["permissionDecisionReason"]


# -- session start ----------------------------------------------------------------------------

def test_claude_code_runs_the_hooks_as_processes_and_reads_their_stdout(footer_vault) -> None:
    """The rest of this file calls the hooks in-process; here each answer comes from a real process."""
    started = hook("session-start", {"hook_event_name": "SessionStart", "source": "startup"}, footer_vault,
                   process=True)
    assert started is not None and FOOTER in started["hookSpecificOutput"]["additionalContext"]
    sealed = note_path(footer_vault, "D-0001")
    assert "vault-tools" in denied(hook("pre-tool-use", {"tool_name": "Edit", "tool_input": {"file_path": str(sealed)}},
                                        footer_vault, process=True))
    assert hook("pre-tool-use", {"tool_name": "Read", "tool_input": {"file_path": "Home.md"}}, footer_vault,
                process=True) is None


def test_session_start_gives_the_context_as_additional_context(footer_vault) -> None:
    answer = hook("session-start", {"hook_event_name": "SessionStart", "source": "startup"}, footer_vault)
    assert answer is not None
    output = answer["hookSpecificOutput"]
    assert output["hookEventName"] == "SessionStart"
    assert FOOTER in output["additionalContext"] and "Mastodon" in output["additionalContext"]
    assert "additionalContext" not in answer  # a top-level additionalContext is dropped by Claude Code


def test_session_start_stays_within_the_hook_bound_and_says_what_it_left_out(vault, cli) -> None:
    for number in range(1, 400):
        decision(vault, number, topics=(f"topic-number-{number}",),
                 summary=f"Ruling number {number} says something long enough to take a whole line of the log " * 2)
    answer = hook("session-start", {}, vault)
    text = answer["hookSpecificOutput"]["additionalContext"]
    assert len(json.dumps(answer, ensure_ascii=False)) <= 9500
    # Made to fit the hook's answer (JSON escapes counted), never cut after: the count it gives is what it shows.
    assert "left out to fit this hook" not in text
    listed, total = map(int, re.search(r"## Rulings \(([\d,]+) of ([\d,]+) listed", text).groups())
    assert total == 399 and listed == sum(1 for line in text.splitlines() if line.startswith("- D-"))
    assert text.splitlines()[-1].startswith(f"Left out: {total - listed} of {total} current rulings.")


def test_a_second_call_answers_from_the_snapshot_and_sees_a_new_ruling(footer_vault, cli) -> None:
    first = hook("session-start", {}, footer_vault)["hookSpecificOutput"]["additionalContext"]
    assert (footer_vault / ".vault-tools" / "cache" / "agent-snapshot.json").exists() or "D-0001" in first
    assert cli("rule", "--topic", "podcast-length", "--summary", "Podcast episodes stay under forty minutes.").code == 0
    again = hook("session-start", {}, footer_vault)["hookSpecificOutput"]["additionalContext"]
    assert "forty minutes" in again


# -- user prompt ------------------------------------------------------------------------------

def test_the_owners_message_on_a_ruled_topic_brings_the_ruling_and_the_instruction(footer_vault) -> None:
    answer = hook("user-prompt-submit", {"prompt": "why is there still promotion in the footers? I said no"},
                  footer_vault)
    assert answer is not None
    output = answer["hookSpecificOutput"]
    assert output["hookEventName"] == "UserPromptSubmit"
    text = output["additionalContext"]
    assert "D-0001" in text and FOOTER in text
    assert "vault-tools rule --topic article-footer" in text and "--supersedes D-0001" in text
    assert "images" not in text


def test_a_message_on_no_ruled_topic_adds_nothing(footer_vault) -> None:
    assert hook("user-prompt-submit", {"prompt": "please fix the typo in the about page"}, footer_vault) is None


# -- pre-tool-use: writes ---------------------------------------------------------------------

@pytest.mark.parametrize("tool, key", [("Write", "file_path"), ("Edit", "file_path"), ("MultiEdit", "file_path"),
                                       ("NotebookEdit", "notebook_path")])
def test_writes_to_a_sealed_note_are_denied_with_how_to_change_it(footer_vault, tool, key) -> None:
    path = sealed_path(footer_vault, "D-0001")
    reason = denied(hook("pre-tool-use", {"tool_name": tool, "tool_input": {key: str(path)}}, footer_vault))
    assert "D-0001" in reason and "vault-tools rule" in reason and "--supersedes D-0001" in reason


def test_writes_to_pages_and_the_ledger_are_denied_and_others_pass_silently(footer_vault, cli) -> None:
    assert cli("build").code == 0
    page = denied(hook("pre-tool-use", {"tool_name": "Write", "tool_input": {"file_path": "Pinned/Decisions log.md"}},
                       footer_vault))
    assert "generated" in page and "--supersedes" in page
    ledger = denied(hook("pre-tool-use", {"tool_name": "Edit",
                                          "tool_input": {"file_path": ".vault-tools/ledger.jsonl"}}, footer_vault))
    assert "append-only" in ledger
    for target in ("Home.md", "Decisions/D-0099 New note.md", "/tmp/elsewhere.txt"):
        assert hook("pre-tool-use", {"tool_name": "Write", "tool_input": {"file_path": target}}, footer_vault) is None
    assert hook("pre-tool-use", {"tool_name": "Read", "tool_input": {"file_path": "Pinned/Decisions log.md"}},
                footer_vault) is None


@pytest.mark.parametrize("command", [
    "echo no >> '{sealed}'", "cat x | tee -a '{sealed}'", "sed -i 's/link/no link/' '{sealed}'",
    "rm -f '{sealed}'", "mv /tmp/other.md '{sealed}'", "cp /tmp/other.md '{sealed}'",
    "true && echo {{}} > .vault-tools/ledger.jsonl", "mv .vault-tools/ledger.jsonl /tmp/",
    "printf x > 'Pinned/Open questions.md'"])
def test_bash_commands_that_plainly_write_protected_files_are_denied(footer_vault, command) -> None:
    sealed = sealed_path(footer_vault, "D-0001").relative_to(footer_vault)
    reason = denied(hook("pre-tool-use", {"tool_name": "Bash", "tool_input": {"command": command.format(sealed=sealed)}},
                         footer_vault))
    assert "This command writes" in reason


@pytest.mark.parametrize("command", ["cat Decisions/*.md", "grep -r footer .", "echo hi > notes.md",
                                     "git status 2>&1 | head", "mv 'Decisions/D-0001 a.md' Archive/"])
def test_other_bash_commands_pass(footer_vault, command) -> None:
    assert hook("pre-tool-use", {"tool_name": "Bash", "tool_input": {"command": command}}, footer_vault) is None


# -- pre-tool-use: questions ------------------------------------------------------------------

def ask_user(*questions: str) -> dict:
    return {"tool_name": "AskUserQuestion", "tool_input": {"questions": [
        {"question": q, "header": "Q", "options": [{"label": "Yes", "description": "y"}, {"label": "No",
                                                                                         "description": "n"}],
         "multiSelect": False} for q in questions]}}


def test_a_question_on_a_settled_topic_is_denied_quoting_the_ruling(footer_vault) -> None:
    reason = denied(hook("pre-tool-use", ask_user("What should the article footers carry?"), footer_vault))
    assert "D-0001" in reason and FOOTER in reason and "--reask-reason" in reason


def test_a_question_already_open_is_denied_pointing_to_it(footer_vault) -> None:
    reason = denied(hook("pre-tool-use", ask_user("Shall I cross-post new articles to Mastodon as well?"), footer_vault))
    assert "D-0003" in reason and "already open" in reason


def test_questions_on_nothing_recorded_or_naming_the_ruling_pass(footer_vault) -> None:
    assert hook("pre-tool-use", ask_user("Which colour should the new logo be?"), footer_vault) is None
    assert hook("pre-tool-use", ask_user("D-0001 puts the signup link in article footers; readers now complain, "
                                         "should the article footer drop it?"), footer_vault) is None


# -- failing open -----------------------------------------------------------------------------

def test_a_broken_vault_lets_calls_through_with_a_warning_but_never_a_sealed_write(footer_vault) -> None:
    write(config_file(footer_vault), "timezone: [broken\n")
    warned = hook("session-start", {}, footer_vault)
    assert list(warned) == ["systemMessage"] and "could not be read" in warned["systemMessage"]
    assert "\n" not in warned["systemMessage"]
    assert hook("pre-tool-use", ask_user("What should the article footers contain?"), footer_vault)["systemMessage"]
    path = sealed_path(footer_vault, "D-0001")
    denied(hook("pre-tool-use", {"tool_name": "Edit", "tool_input": {"file_path": str(path)}}, footer_vault))


def test_a_torn_ledger_still_denies_writes_to_ruled_notes(footer_vault) -> None:
    ledger_file(footer_vault).write_bytes(b"\xff\xfe not utf-8")
    path = sealed_path(footer_vault, "D-0001")
    denied(hook("pre-tool-use", {"tool_name": "Write", "tool_input": {"file_path": str(path)}}, footer_vault))


def test_input_that_is_not_json_passes_with_a_warning(footer_vault) -> None:
    done = vt_here("hook", "claude", "pre-tool-use", cwd=footer_vault, stdin="not json")
    assert done.code == 0 and "not JSON" in json.loads(done.out)["systemMessage"]


# -- gate -------------------------------------------------------------------------------------

def test_gate_grants_only_a_current_sealed_ruling_with_the_exact_terms(footer_vault, cli) -> None:
    assert vt_here("gate", "D-0002", "--require", "budget=0", cwd=footer_vault).code == 0
    differs = vt_here("gate", "D-0002", "--require", "budget=500", cwd=footer_vault, counted=True)
    assert differs.code == 1 and "term budget differs: D-0002 grants '0', not '500'" in differs.err
    missing = vt_here("gate", "D-0001", "--require", "vendor=acme", cwd=footer_vault)
    assert missing.code == 1 and "term vendor is not granted" in missing.err
    assert cli("rule", "--topic", "article-images", "--summary", "Articles may use licensed stock images too.",
               "--supersedes", "D-0002", "--reason", "The photo budget now allows a stock subscription.",
               "--term", "budget=500").code == 0  # D-0004
    superseded = vt_here("gate", "D-0002", "--require", "budget=0", "--json", cwd=footer_vault, counted=True)
    assert superseded.code == 1
    data = json.loads(superseded.out)
    assert data["passed"] is False and data["failures"][0] == "D-0002 is superseded by D-0004"
    assert vt_here("gate", "D-0004", "--require", "term_budget=500", cwd=footer_vault).code == 0
    assert cli("retract", "D-0004", "--reason", "The stock subscription was never bought after all.").code == 0
    retracted = vt_here("gate", "D-0004", cwd=footer_vault)
    assert retracted.code == 1 and "retracted" in retracted.err
    open_question = vt_here("gate", "D-0003", cwd=footer_vault)
    assert open_question.code == 1 and "is open, not a ruling" in open_question.err


def test_a_term_changed_in_place_is_an_edit_the_gate_refuses(footer_vault) -> None:
    path = sealed_path(footer_vault, "D-0002")
    path.write_text(path.read_text().replace("term_budget: '0'", "term_budget: '900'")
                    .replace('term_budget: "0"', 'term_budget: "900"'))
    assert "900" in path.read_text()
    refused = vt_here("gate", "D-0002", "--require", "budget=900", cwd=footer_vault)
    assert refused.code == 1 and "edited in place" in refused.err
    assert vt_here("lint", cwd=footer_vault).code == 1  # the seal no longer matches


def test_gate_refuses_a_ruling_not_sealed_yet(vault) -> None:
    decision(vault, 1, term_budget="500")
    refused = vt_here("gate", "D-0001", "--require", "budget=500", cwd=vault)
    assert refused.code == 1 and "not sealed yet" in refused.err


# -- init --agent -----------------------------------------------------------------------------

USER_SETTINGS = {"permissions": {"allow": ["Bash(npm test)"]},
                 "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "my-guard"}]}],
                           "Stop": [{"hooks": [{"type": "command", "command": "notify-me"}]}]}}
CODEX_HOOKS = {"hooks": {"PreToolUse": [{"matcher": "^Bash$", "hooks": [
    {"type": "command", "command": "python3 ~/.codex/guard.py", "statusMessage": "checking"}]}]}}
GEMINI_SETTINGS = {"theme": "Dracula", "hooksConfig": {"notifications": False},
                   "hooks": {"BeforeTool": [{"matcher": "run_shell_command", "hooks": [
                       {"name": "audit", "type": "command", "command": "audit-shell", "timeout": 5000}]}]}}


def project_with_own_files(root: Path) -> dict[str, bytes]:
    write(root / "CLAUDE.md", "# My project\n\nUse tabs.\n")
    write(root / "AGENTS.md", "# Agents\n\nRun the tests.\n")
    write(root / ".claude" / "settings.json", json.dumps(USER_SETTINGS, indent=2) + "\n")
    write(root / ".mcp.json", json.dumps({"mcpServers": {"github": {"command": "gh-mcp"}}}, indent=2) + "\n")
    write(root / ".codex" / "config.toml", 'model = "o4"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n')
    write(root / ".codex" / "hooks.json", json.dumps(CODEX_HOOKS, indent=2) + "\n")
    write(root / ".gemini" / "settings.json", json.dumps(GEMINI_SETTINGS, indent=2) + "\n")
    return snapshot(root)


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini", "cursor"])
def test_init_agent_adds_its_parts_once_and_remove_takes_exactly_them_out(vault, agent) -> None:
    before = project_with_own_files(vault)
    assert vt_here("init", "--agent", agent, cwd=vault).code == 0
    added = snapshot(vault)
    assert added != before
    assert vt_here("init", "--agent", agent, cwd=vault).code == 0
    assert snapshot(vault) == added, "a second run changed something"
    if agent == "claude":
        claude_md = (vault / "CLAUDE.md").read_text()
        assert claude_md.startswith("# My project\n\nUse tabs.\n\n<!-- vault-tools:start")
        settings = json.loads((vault / ".claude" / "settings.json").read_text())
        assert settings["permissions"] == USER_SETTINGS["permissions"]
        assert settings["hooks"]["Stop"] == USER_SETTINGS["hooks"]["Stop"]
        assert settings["hooks"]["PreToolUse"][0] == USER_SETTINGS["hooks"]["PreToolUse"][0]
        commands = {event: [h["command"] for g in groups for h in g["hooks"]] for event, groups in settings["hooks"].items()}
        assert commands["SessionStart"] == ["vault-tools hook claude session-start"]
        assert commands["UserPromptSubmit"] == ["vault-tools hook claude user-prompt-submit"]
        assert "AskUserQuestion" in settings["hooks"]["PreToolUse"][1]["matcher"]
        servers = json.loads((vault / ".mcp.json").read_text())["mcpServers"]
        assert servers["github"] == {"command": "gh-mcp"}
        assert servers["vault-tools"] == {"type": "stdio", "command": "vault-tools", "args": ["mcp"], "env": {}}
    elif agent == "codex":
        assert "vault-tools context" in (vault / "AGENTS.md").read_text()
        config = tomllib.loads((vault / ".codex" / "config.toml").read_text())
        assert config["model"] == "o4" and config["mcp_servers"]["docs"] == {"command": "docs-mcp"}
        assert config["mcp_servers"]["vault-tools"] == {"command": "vault-tools", "args": ["mcp"]}
        hooks = json.loads((vault / ".codex" / "hooks.json").read_text())["hooks"]
        assert hooks["PreToolUse"][0] == CODEX_HOOKS["hooks"]["PreToolUse"][0]
        assert hooks["PreToolUse"][1] == {"matcher": "Bash|apply_patch", "hooks": [
            {"type": "command", "command": "vault-tools hook codex pre-tool-use", "timeout": 10}]}
        assert [h["command"] for g in hooks["SessionStart"] + hooks["UserPromptSubmit"] + hooks["PostToolUse"]
                for h in g["hooks"]] == ["vault-tools hook codex session-start", "vault-tools hook codex user-prompt-submit",
                                         "vault-tools hook codex post-tool-use"]
    elif agent == "gemini":
        assert "vault-tools context" in (vault / "GEMINI.md").read_text()
        data = json.loads((vault / ".gemini" / "settings.json").read_text())
        assert {key: data[key] for key in ("theme", "hooksConfig")} == \
            {"theme": "Dracula", "hooksConfig": {"notifications": False}}
        assert data["mcpServers"] == {"vault-tools": {"command": "vault-tools", "args": ["mcp"]}}
        assert data["hooks"]["BeforeTool"] == [GEMINI_SETTINGS["hooks"]["BeforeTool"][0], {
            "matcher": "^(write_file|replace|run_shell_command|ask_user)$", "hooks": [
                {"name": "vault-tools before-tool", "type": "command", "command": "vault-tools hook gemini before-tool",
                 "timeout": 10000}]}]
        assert [h["command"] for g in data["hooks"]["SessionStart"] + data["hooks"]["BeforeAgent"]
                + data["hooks"]["AfterTool"] for h in g["hooks"]] == \
            ["vault-tools hook gemini session-start", "vault-tools hook gemini before-agent",
             "vault-tools hook gemini after-tool"]
    else:
        rules = (vault / ".cursor" / "rules" / "vault-tools.mdc").read_text()
        assert rules.startswith("---\ndescription: ") and "alwaysApply: true" in rules
        assert json.loads((vault / ".cursor" / "mcp.json").read_text())["mcpServers"]["vault-tools"]["args"] == ["mcp"]
    assert vt_here("init", "--agent", agent, "--remove", cwd=vault).code == 0
    after = snapshot(vault)
    assert after.keys() == before.keys()
    for name, data in before.items():
        if name.endswith(".json"):
            assert json.loads(after[name]) == json.loads(data), name
        else:
            assert after[name] == data, name


def test_init_agent_for_a_vault_inside_the_project_passes_it_to_every_command(tmp_path) -> None:
    project = tmp_path / "project"
    (project / "notes" / ".obsidian").mkdir(parents=True)
    assert vt_here("init", "--agent", "claude", "--vault", "notes", cwd=project).code == 0
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert settings["hooks"]["SessionStart"][0]["hooks"][0]["command"] == \
        "vault-tools hook claude session-start --vault notes"
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["vault-tools"]["args"] == \
        ["mcp", "--vault", "notes"]
    assert "--vault notes" in (project / "CLAUDE.md").read_text()
    assert (project / "notes" / "vault-tools" / "config.yaml").exists()


@pytest.mark.parametrize("agent, rel, text, says", [
    ("claude", ".claude/settings.json", "{ not json", "not valid JSON"),
    ("codex", ".codex/hooks.json", '{"hooks": {"PreToolUse": [}}', "not valid JSON"),
    ("gemini", ".gemini/settings.json", '{\n  // my theme\n  "theme": "Dracula"\n}\n', "comments"),
    ("gemini", ".gemini/settings.json", '{"hooks": ["not", "an", "object"]}', "hooks is not an object")])
def test_init_agent_refuses_a_settings_file_it_cannot_read_and_writes_nothing(vault, agent, rel, text, says) -> None:
    write(vault / rel, text)
    before = snapshot(vault)
    done = vt_here("init", "--agent", agent, cwd=vault)
    assert done.code == 2 and rel in done.err and says in done.err and "nothing was written" in done.err
    assert snapshot(vault) == before


def folders(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_dir()}


def section_of(data: bytes) -> bytes:
    start = data.index(b"<!-- vault-tools:start")
    end = data.index(b"<!-- vault-tools:end -->") + len(b"<!-- vault-tools:end -->")
    return data[start:end]


BOM = b"\xef\xbb\xbf"
# The owner's instructions file as it was (None: there was none), and the line ending our section must use.
OWN_INSTRUCTIONS = {
    "crlf": (b"# My project\r\n\r\nUse tabs.\r\n", b"\r\n"),
    "bom": (BOM + b"# My project\n\nUse tabs.\n", b"\n"),
    "bom-crlf": (BOM + b"# My project\r\n\r\nUse tabs.\r\n", b"\r\n"),
    "no-final-newline": (b"# My project\n\nUse tabs.", b"\n"),
    "crlf-no-final-newline": (b"# My project\r\n\r\nUse tabs.", b"\r\n"),
    "mixed": (b"# My project\r\nUse tabs.\nRun the tests.\r\n", b"\r\n"),
    "blank-lines-at-the-end": (b"# My project\n\n\n", b"\n"),
    "empty": (b"", b"\n"),
    "bom-only": (BOM, b"\n"),
    "missing": (None, b"\n"),
}


@pytest.mark.parametrize("agent, name", [("claude", "CLAUDE.md"), ("codex", "AGENTS.md"), ("gemini", "GEMINI.md")])
@pytest.mark.parametrize("case", list(OWN_INSTRUCTIONS))
def test_init_agent_keeps_the_owners_instructions_file_byte_for_byte(vault, agent, name, case) -> None:
    """The section is added in the file's own line endings, every other byte stays, and `--remove` gives the
    file back exactly as it was (a file that was not there is deleted again)."""
    original, eol = OWN_INSTRUCTIONS[case]
    if original is not None:
        (vault / name).write_bytes(original)
    before, before_folders = snapshot(vault), folders(vault)
    assert vt_here("init", "--agent", agent, cwd=vault).code == 0
    written = (vault / name).read_bytes()
    assert written.startswith(original or b""), "the owner's bytes were changed"
    section = section_of(written)
    assert section.count(b"\n") > 5 and section.count(b"\n") == section.count(eol)
    assert written.endswith(section if original is not None and not original.endswith(b"\n") else section + eol)
    assert vt_here("init", "--agent", agent, cwd=vault).code == 0
    assert (vault / name).read_bytes() == written, "a second run changed the file"
    assert vt_here("init", "--agent", agent, "--remove", cwd=vault).code == 0
    assert snapshot(vault) == before
    assert folders(vault) == before_folders
    if original is None:
        assert not (vault / name).exists()


def test_init_agent_removes_a_section_it_wrote_before_files_kept_their_line_endings(vault) -> None:
    """A file whose section was written by an earlier version (LF, after the text with its trailing newlines
    stripped) still comes back as that version gave it back, and one whose every line git turned to CRLF
    loses the section and the blank line before it in CRLF."""
    old = b"# My project\n\nUse tabs.\n\n<!-- vault-tools:start -->\nold\n<!-- vault-tools:end -->\n"
    (vault / "CLAUDE.md").write_bytes(old)
    (vault / "AGENTS.md").write_bytes(old.replace(b"\n", b"\r\n"))
    assert vt_here("init", "--agent", "claude", "--remove", cwd=vault).code == 0
    assert vt_here("init", "--agent", "codex", "--remove", cwd=vault).code == 0
    assert (vault / "CLAUDE.md").read_bytes() == b"# My project\n\nUse tabs.\n"
    assert (vault / "AGENTS.md").read_bytes() == b"# My project\r\n\r\nUse tabs.\r\n"


def test_init_agent_over_the_real_process_keeps_a_crlf_file_and_its_settings(vault) -> None:
    (vault / "CLAUDE.md").write_bytes(b"# My project\r\n\r\nUse tabs.\r\n")
    settings = json.dumps(USER_SETTINGS, indent=2).replace("\n", "\r\n").encode() + b"\r\n"
    write(vault / ".claude" / "settings.json", "")
    (vault / ".claude" / "settings.json").write_bytes(settings)
    before = snapshot(vault)
    assert vt("init", "--agent", "claude", cwd=vault).code == 0
    hooks = (vault / ".claude" / "settings.json").read_bytes()
    assert b"vault-tools hook claude session-start" in hooks and b"\n" not in hooks.replace(b"\r\n", b"")
    assert vt("init", "--agent", "claude", "--remove", cwd=vault).code == 0
    assert snapshot(vault) == before


# The owner's settings as they may be laid out; `--remove` gives each back byte for byte.
SETTINGS_LAYOUTS = {
    "two-spaces": lambda data: json.dumps(data, indent=2) + "\n",
    "four-spaces-crlf": lambda data: json.dumps(data, indent=4).replace("\n", "\r\n") + "\r\n",
    "tabs-no-final-newline": lambda data: json.dumps(data, indent="\t"),
    "one-line": lambda data: json.dumps(data, separators=(",", ":")),
    "bom": lambda data: "\ufeff" + json.dumps(data, indent=2, ensure_ascii=False) + "\n",
    "by-hand": lambda data: "{ " + ",\n  ".join(f'{json.dumps(key)} : {json.dumps(value)}'
                                                  for key, value in data.items()) + " }\n\n",
}
OWN_SETTINGS = [
    ("claude", ".claude/settings.json", {**USER_SETTINGS, "env": {"LANG": "fr_FR.UTF-8", "NOTE": "déjà vu"}}),
    ("claude", ".mcp.json", {"mcpServers": {"github": {"command": "gh-mcp", "args": []}}}),
    ("codex", ".codex/hooks.json", CODEX_HOOKS),
    ("gemini", ".gemini/settings.json", GEMINI_SETTINGS),
    ("gemini", ".gemini/settings.json", {"theme": "Dracula", "mcpServers": {"docs": {"command": "docs-mcp"}}}),
    ("cursor", ".cursor/mcp.json", {"mcpServers": {"docs": {"url": "http://localhost:3000/mcp"}}}),
]


@pytest.mark.parametrize("layout", list(SETTINGS_LAYOUTS))
@pytest.mark.parametrize("agent, rel, data", OWN_SETTINGS)
def test_init_agent_edits_the_owners_json_settings_in_place_and_remove_gives_them_back(
        vault, agent, rel, data, layout) -> None:
    (vault / rel).parent.mkdir(parents=True, exist_ok=True)
    original = SETTINGS_LAYOUTS[layout](data).encode("utf-8")
    (vault / rel).write_bytes(original)
    before = snapshot(vault)
    assert vt_here("init", "--agent", agent, cwd=vault).code == 0
    written = (vault / rel).read_bytes()
    assert written.startswith(BOM) == original.startswith(BOM)
    now = json.loads(written.decode("utf-8-sig"))
    assert all(now[key] == value for key, value in data.items() if key not in ("hooks", "mcpServers"))
    for key in ("hooks", "mcpServers"):
        for name, value in data.get(key, {}).items():
            assert now[key][name][:len(value)] == value if isinstance(value, list) else now[key][name] == value
    assert "vault-tools" in now.get("mcpServers", {}) or any(
        "vault-tools hook" in json.dumps(groups) for groups in now["hooks"].values())
    if b"\r\n" in original:
        assert b"\n" not in written.replace(b"\r\n", b"")
    assert vt_here("init", "--agent", agent, cwd=vault).code == 0
    assert (vault / rel).read_bytes() == written, "a second run changed the file"
    assert vt_here("init", "--agent", agent, "--remove", cwd=vault).code == 0
    assert snapshot(vault) == before


@pytest.mark.parametrize("text", ["{}", "{ }\r\n", "\n"])
def test_init_agent_writes_a_settings_file_that_holds_nothing_anew_and_remove_deletes_it(vault, text) -> None:
    """Nothing of the owner's to keep: the file is written as a new one is, and deleted as one is."""
    write(vault / ".mcp.json", text)
    assert vt_here("init", "--agent", "claude", cwd=vault).code == 0
    assert (vault / ".mcp.json").read_text() == json.dumps({"mcpServers": {"vault-tools": {
        "type": "stdio", "command": "vault-tools", "args": ["mcp"], "env": {}}}}, indent=2) + "\n"
    assert vt_here("init", "--agent", "claude", "--remove", cwd=vault).code == 0
    assert not (vault / ".mcp.json").exists()


def test_init_agent_keeps_the_keys_of_a_settings_file_with_a_repeated_key(vault) -> None:
    """Which of two members with one key to edit is not clear: the file is written anew, JSON's way (the
    last one counts), and the owner's keys and values come back after --remove."""
    write(vault / ".mcp.json", '{"theme": "a", "theme": "b", "mcpServers": {"docs": {"command": "docs-mcp"}}}')
    assert vt_here("init", "--agent", "claude", cwd=vault).code == 0
    assert json.loads((vault / ".mcp.json").read_text())["mcpServers"]["docs"] == {"command": "docs-mcp"}
    assert vt_here("init", "--agent", "claude", "--remove", cwd=vault).code == 0
    assert json.loads((vault / ".mcp.json").read_text()) == {"theme": "b", "mcpServers": {"docs": {"command": "docs-mcp"}}}


def test_init_agent_codex_keeps_a_crlf_config_toml_without_a_final_newline(vault) -> None:
    original = b'model = "o4"\r\n\r\n[mcp_servers.docs]\r\ncommand = "docs-mcp"'
    (vault / ".codex").mkdir()
    (vault / ".codex" / "config.toml").write_bytes(original)
    before = snapshot(vault)
    assert vt_here("init", "--agent", "codex", cwd=vault).code == 0
    written = (vault / ".codex" / "config.toml").read_bytes()
    assert written.startswith(original + b"\r\n\r\n# vault-tools:start") and b"\n" not in written.replace(b"\r\n", b"")
    assert tomllib.loads(written.decode())["mcp_servers"]["vault-tools"] == {"command": "vault-tools", "args": ["mcp"]}
    assert vt_here("init", "--agent", "codex", "--remove", cwd=vault).code == 0
    assert snapshot(vault) == before


@pytest.mark.parametrize("agent, made", [("claude", {".claude"}), ("codex", {".codex"}), ("gemini", {".gemini"}),
                                         ("cursor", {".cursor", ".cursor/rules"})])
def test_init_agent_remove_takes_out_the_folders_it_made_and_only_when_empty(vault, agent, made) -> None:
    before = snapshot(vault)
    assert vt_here("init", "--agent", agent, cwd=vault).code == 0
    assert made <= folders(vault)
    done = vt_here("init", "--agent", agent, "--remove", cwd=vault)
    assert done.code == 0 and all(f"removed {folder}/" in done.err for folder in made)
    assert not made & folders(vault) and snapshot(vault) == before
    # A folder that holds anything of the owner's stays, with it.
    assert vt_here("init", "--agent", agent, cwd=vault).code == 0
    deepest = max(made, key=len)
    write(vault / deepest / "mine.md", "the owner's own\n")
    assert vt_here("init", "--agent", agent, "--remove", cwd=vault).code == 0
    assert made <= folders(vault)
    assert snapshot(vault) == {**before, f"{deepest}/mine.md": b"the owner's own\n"}


def test_init_agent_cursor_remove_keeps_the_owners_other_rules(vault) -> None:
    write(vault / ".cursor" / "rules" / "style.mdc", "---\nalwaysApply: true\n---\nUse tabs.\n")
    before = snapshot(vault)
    assert vt_here("init", "--agent", "cursor", cwd=vault).code == 0
    assert vt_here("init", "--agent", "cursor", "--remove", cwd=vault).code == 0
    assert snapshot(vault) == before and {".cursor", ".cursor/rules"} <= folders(vault)


# -- the README's transcripts -----------------------------------------------------------------

def test_the_readme_hook_transcripts_are_what_the_hooks_answer(tmp_path) -> None:
    """Each `<!-- hook: AGENT EVENT -->` in the README is followed by the input and the exact output."""
    import re
    import shutil

    from markdown_it import MarkdownIt
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    lines = readme.splitlines()
    fences = [token for token in MarkdownIt("commonmark").parse(readme) if token.type == "fence" and token.map]
    copy = tmp_path / "Low Tide"
    shutil.copytree(Path(__file__).resolve().parents[1] / "example-vault", copy,
                    ignore=shutil.ignore_patterns("cache", "*.lock"))
    checked = 0
    for index, token in enumerate(fences[:-1]):
        marker = next(line for line in reversed(lines[:token.map[0]]) if line.strip())
        found = re.fullmatch(r"<!-- hook: (claude|codex|gemini) ([a-z-]+) -->", marker)
        if not found:
            continue
        given = json.loads(token.content)
        expected = json.loads(fences[index + 1].content)
        done = vt_here("hook", found.group(1), found.group(2), cwd=copy, stdin=json.dumps(given))
        assert done.code == 0 and json.loads(done.out) == expected
        checked += 1
    assert checked >= 3


def test_a_renamed_sealed_note_with_a_clone_tagged_id_is_still_denied(vault) -> None:
    """Ids made in a git clone carry the clone's tag (D-0001-k7q2); a write to such a sealed note is refused
    by its id even after the owner renamed the file."""
    path = vault / "Decisions" / "D-0001-k7q2 Footers.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("---\ntype: decision\nid: D-0001-k7q2\nstatus: ruled\ntopics: [article-footer]\n"
                    f"summary: {FOOTER}\nsource: chat\n---\n## Ruling\n\nAs the summary says.\n")
    assert vt_here("seal", cwd=vault).code == 0
    renamed = path.with_name("Footer rule.md")
    path.rename(renamed)
    reason = denied(hook("pre-tool-use", {"hook_event_name": "PreToolUse", "tool_name": "Edit",
                                          "tool_input": {"file_path": str(renamed)}}, vault))
    assert "D-0001-k7q2, a sealed ruling" in reason


def test_the_instructions_ask_once_and_say_how_to_go_on_after_a_possible_match(vault) -> None:
    """An agent with a new question runs `ask` once: it does the looking up that `lookup` and `search` did."""
    assert vt_here("init", "--agent", "claude", cwd=vault).code == 0
    section = (vault / "CLAUDE.md").read_text().split("<!-- vault-tools:start", 1)[1]
    asking = next(line for line in section.splitlines() if "Before asking the owner" in line)
    assert "vault-tools ask" in asking and "lookup" not in section.split("- When the owner decides")[0]
    assert "--not-the-same ID" in section and "--reask-reason" in section


def test_the_hooks_snapshot_is_made_again_when_the_owner_merges_topics(footer_vault, monkeypatch) -> None:
    """What a ruling settles depends on the topics the owner merged: the snapshot the hooks answer from is kept
    while nothing it depends on changed, the merged topics among them."""
    monkeypatch.setattr("vault_tools.agents.snapshot.time", ClockAhead(PAST_RACY_SECONDS))  # just written: as old
    kept = footer_vault / ".vault-tools" / "cache" / SNAPSHOT_FILE
    hook("session-start", {}, footer_vault)
    made = json.loads(kept.read_text(encoding="utf-8"))["made_at"]
    hook("session-start", {}, footer_vault)
    assert json.loads(kept.read_text(encoding="utf-8"))["made_at"] == made  # answered from the snapshot
    add_alias(footer_vault / ".vault-tools", "article-footer", "newsletter-footer")
    hook("session-start", {}, footer_vault)
    assert json.loads(kept.read_text(encoding="utf-8"))["made_at"] != made
