"""The tripwire: whatever an agent's command does to the ledger, the record comes back whole and the agent is told.

Real vaults in both layouts, with and without git; the commands run for real in a shell, as the agent's tool
would run them (forms the pre-tool-use hook cannot see into), then Claude Code's `post-tool-use` hook or the
watcher runs."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.git_repo import commit_all, git
from tests.helpers import TZ, config_file, ledger_file, vt_here
from vault_tools.commands.setup import init_vault

RULING = "The site uses no analytics and no tracking of any kind."


@pytest.fixture(params=["hidden", "shared"])
def layout_vault(request, tmp_path) -> Path:
    root = tmp_path / "vault"
    (root / ".obsidian").mkdir(parents=True)
    init_vault(root, TZ, shared=request.param == "shared")
    assert vt_here("rule", "--topic", "analytics", "--summary", RULING, "--source", "chat", cwd=root).code == 0
    assert vt_here("ask", "Should the newsletter move to a paid platform?", "--topic", "newsletter-platform",
                   cwd=root).code == 0
    return root


def after_tool(root: Path) -> dict | None:
    payload = {"hook_event_name": "PostToolUse", "cwd": str(root), "session_id": "s", "tool_name": "Bash",
               "tool_input": {"command": "..."}, "tool_response": {}}
    done = vt_here("hook", "claude", "post-tool-use", cwd=root, stdin=json.dumps(payload))
    assert done.code == 0, done.err
    return json.loads(done.out) if done.out.strip() else None


def agent_runs(command: str, root: Path) -> None:
    """The agent's shell tool running `command` in the vault (what no hook stopped)."""
    subprocess.run(["bash", "-c", command], cwd=root, check=True, capture_output=True)


# forms the pre-tool-use hook lets through (it cannot see into them), each taking lines out of the ledger
TAKING_OUT = [
    "python3 -c \"import sys; p=sys.argv[1]; t=open(p).read(); open(p,'w').write(t.splitlines(True)[0])\" {ledger}",
    "f={ledger}; : > \"$f\"",
    "echo {ledger} | xargs rm",
    "python3 -c \"import sys; p=sys.argv[1]; l=open(p).read().splitlines(True); open(p,'w').writelines(l[1:])\" {ledger}",
]


@pytest.mark.parametrize("command", TAKING_OUT)
def test_lines_an_agents_command_took_out_are_put_back_and_the_agent_is_told(layout_vault, command):
    ledger = ledger_file(layout_vault)
    whole = ledger.read_bytes()
    assert after_tool(layout_vault) is None  # nothing changed: nothing said
    agent_runs(command.format(ledger=ledger.relative_to(layout_vault)), layout_vault)
    assert ledger.exists() is False or ledger.read_bytes() != whole  # the command did take lines out
    told = after_tool(layout_vault)
    assert told is not None and told["decision"] == "block"
    assert "put them back" in told["reason"] and ledger.relative_to(layout_vault).as_posix() in told["reason"]
    assert "vault-tools ask" in told["reason"]  # and how a change is made
    assert ledger.read_bytes() == whole  # byte for byte
    assert after_tool(layout_vault) is None  # told once
    assert vt_here("lint", cwd=layout_vault).code == 0


def test_the_look_after_a_call_finds_each_note_the_read_takes_for_a_decision_note(tmp_path):
    """What the tripwire looks at after an agent's call (`decision_notes_changed_since`) finds a changed note in
    every form of `type: decision` the read takes for a decision note, and no other note."""
    import time

    from vault_tools.reading import read_payload
    from vault_tools.record_files import decision_notes_changed_since

    root = tmp_path / "vault"
    (root / "Decisions").mkdir(parents=True)
    # A file's times come from a clock Linux reads once a tick (1-10 ms behind `time_ns`): well before the writes
    began = time.time_ns() - 50_000_000
    forms = {"plain": "type: decision", "commented": "type: decision  # the owner's", "quoted key": '"type": decision',
             "spaced": "type : decision", "capitals": "type: Decision", "long s": "type: deci\u017fion",
             "a list": "- type: decision", "other": "type: decisions", "none": "tags: [decision]"}
    for name, line in forms.items():
        (root / "Decisions" / f"{name}.md").write_text(f"---\n{line}\nid: D-0001\nstatus: open\n---\nBody\n",
                                                       encoding="utf-8")
    read_as = {name: read_payload(root, root / "Decisions" / f"{name}.md")[0] for name in forms}
    assert read_as["plain"] == read_as["long s"] == "decision" and read_as["a list"] == "broken"
    found = decision_notes_changed_since(root, began).decision_notes
    assert found == sorted(f"Decisions/{name}.md" for name, kind in read_as.items() if kind != "other")
    assert "Decisions/other.md" not in found and "Decisions/none.md" not in found


def test_a_note_written_at_once_after_a_call_began_is_the_calls(tmp_path):
    """A file's times come from a clock Linux reads once a tick (1-10 ms behind `time.time_ns`): a call's
    beginning is taken from that clock too, so a note the agent writes within the same tick as the pre-tool-use
    hook noted the call is still one it changed (with the finer clock, most such writes looked older)."""
    import sys
    import time

    from vault_tools.record_files import (
        STATE_DIR,
        agent_call_began,
        agent_calls,
        begin_agent_call,
        decision_notes_changed_since,
    )

    root = tmp_path / "vault"
    (root / "Decisions").mkdir(parents=True)
    (root / STATE_DIR).mkdir()
    for call in range(20):
        note = root / "Decisions" / f"D-{call + 1:04d} Note.md"
        begin_agent_call(root, f"call-{call}")
        note.write_text(f"---\ntype: decision\nid: D-{call + 1:04d}\nstatus: open\n---\nBody\n", encoding="utf-8")
        began = agent_call_began(root, f"call-{call}")
        assert began is not None
        if sys.platform.startswith("linux"):  # a kernel from 6.13 stamps a new file finer: the clock itself, then
            assert began <= time.clock_gettime_ns(5), call  # CLOCK_REALTIME_COARSE, what older kernels stamp with
        assert f"Decisions/{note.name}" in decision_notes_changed_since(root, began).decision_notes, call
        assert agent_calls(root).changed_during(note), call


def test_what_vault_tools_appends_is_the_record_growing_not_a_change_to_undo(layout_vault):
    ledger = ledger_file(layout_vault)
    assert after_tool(layout_vault) is None
    assert vt_here("rule", "D-0002", "--summary", "The newsletter stays on its own free platform.", "--source",
                   "chat", cwd=layout_vault).code == 0  # the agent's own vault-tools command
    grown = ledger.read_bytes()
    assert after_tool(layout_vault) is None and ledger.read_bytes() == grown


def test_the_watcher_puts_back_what_no_hook_saw(layout_vault):
    """The owner's own `git checkout -f`, or a tool with no hook: the next watcher pass puts the lines back."""
    ledger = ledger_file(layout_vault)
    whole = ledger.read_bytes()
    ledger.write_bytes(b"")
    done = vt_here("watch", "--once", cwd=layout_vault)
    assert done.code == 0 and "ledger line(s) another program took out" in done.err
    assert ledger.read_bytes() == whole


def test_a_forced_checkout_throwing_away_uncommitted_lines_is_undone_in_a_git_vault(tmp_path):
    """The shared layout's ledger is carried by git (the hidden layout's is device-local and ignored)."""
    layout_vault = tmp_path / "vault"
    (layout_vault / ".obsidian").mkdir(parents=True)
    init_vault(layout_vault, TZ, shared=True)
    assert vt_here("ask", "Should the newsletter move to a paid platform?", "--topic", "newsletter-platform",
                   cwd=layout_vault).code == 0
    git(layout_vault, "init", "-q")
    assert vt_here("ask", "Should the blog have comments?", "--topic", "blog-comments", cwd=layout_vault).code == 0
    commit_all(layout_vault)  # this clone's ledger file, committed
    ledger = next(path for path in (layout_vault / "vault-tools" / "ledger").glob("*.jsonl")
                  if b"blog-comments" in path.read_bytes())  # the file this clone appends to
    before = ledger.read_bytes()
    assert vt_here("rule", "D-0002", "--summary", "The blog has no comments; readers write by email.", "--source",
                   "chat", cwd=layout_vault).code == 0  # recorded, not committed yet
    assert ledger.read_bytes() != before and "ledger" in git(layout_vault, "ls-files").stdout
    recorded = ledger.read_bytes()
    assert after_tool(layout_vault) is None
    agent_runs("git checkout -f", layout_vault)
    assert ledger.read_bytes() != recorded
    told = after_tool(layout_vault)
    assert told is not None and "put them back" in told["reason"]
    assert ledger.read_bytes() == recorded


def test_lint_names_lines_taken_out_and_lint_fix_puts_them_back(layout_vault):
    ledger = ledger_file(layout_vault)
    whole = ledger.read_bytes()
    ledger.write_bytes(whole.splitlines(keepends=True)[0])
    linted = vt_here("lint", cwd=layout_vault)
    assert linted.code == 1 and "VT055" in linted.out
    fixed = vt_here("lint", "--fix", cwd=layout_vault)
    assert "put back" in fixed.err and ledger.read_bytes() == whole


def test_init_agent_wires_the_tripwire_after_every_claude_tool_call(tmp_path, layout_vault):
    project = tmp_path / "project"
    project.mkdir()
    assert vt_here("init", "--agent", "claude", "--project", str(project), "--vault", str(layout_vault), cwd=layout_vault).code == 0
    settings = json.loads((project / ".claude" / "settings.json").read_text(encoding="utf-8"))
    [entry] = settings["hooks"]["PostToolUse"]
    assert "matcher" not in entry or entry["matcher"] in ("", "*")
    assert "vault-tools hook claude post-tool-use" in entry["hooks"][0]["command"]


def test_init_agent_wires_the_tripwire_after_every_codex_tool_call(tmp_path, layout_vault):
    assert vt_here("init", "--agent", "codex", "--vault", str(layout_vault), cwd=layout_vault).code == 0
    hooks = json.loads((layout_vault / ".codex" / "hooks.json").read_text(encoding="utf-8"))["hooks"]
    [entry] = hooks["PostToolUse"]
    assert "matcher" not in entry
    assert entry["hooks"][0]["command"] == "vault-tools hook codex post-tool-use"


# What Codex's PostToolUse output parser takes (openai/codex, codex-rs/hooks/src/schema.rs,
# PostToolUseCommandOutputWire with deny_unknown_fields; output_parser.rs refuses suppressOutput)
CODEX_POST_TOOL_USE_KEYS = {"continue", "stopReason", "systemMessage", "decision", "reason", "hookSpecificOutput"}
CODEX_POST_TOOL_USE_SPECIFIC = {"hookEventName", "additionalContext", "updatedMCPToolOutput"}


def test_codex_is_told_in_the_shape_its_parser_takes_and_the_ledger_put_back(layout_vault):
    ledger = ledger_file(layout_vault)
    whole = ledger.read_bytes()
    payload = {"cwd": str(layout_vault), "session_id": "c1", "turn_id": "t1", "hook_event_name": "PreToolUse",
               "tool_name": "Bash", "tool_use_id": "call_1", "tool_input": {"command": "python3 -c ..."}}
    assert vt_here("hook", "codex", "pre-tool-use", cwd=layout_vault, stdin=json.dumps(payload)).code == 0
    agent_runs(TAKING_OUT[0].format(ledger=ledger.relative_to(layout_vault)), layout_vault)
    done = vt_here("hook", "codex", "post-tool-use", cwd=layout_vault,
                   stdin=json.dumps({**payload, "hook_event_name": "PostToolUse", "tool_response": "ok"}))
    answer = json.loads(done.out)
    assert set(answer) <= CODEX_POST_TOOL_USE_KEYS and set(answer["hookSpecificOutput"]) <= CODEX_POST_TOOL_USE_SPECIFIC
    assert answer["decision"] == "block" and answer["reason"].strip()
    assert answer["hookSpecificOutput"]["hookEventName"] == "PostToolUse"
    assert ledger.read_bytes() == whole


def test_gemini_is_told_beside_what_its_tool_returned_and_the_ledger_put_back(layout_vault):
    """Gemini CLI's AfterTool: a `decision` would put the reason in place of the tool's result (docs/hooks/
    reference.md of google-gemini/gemini-cli), so what was put back is appended as additionalContext."""
    ledger = ledger_file(layout_vault)
    whole = ledger.read_bytes()
    payload = {"cwd": str(layout_vault), "session_id": "g1", "hook_event_name": "BeforeTool", "tool_name": "run_shell_command",
               "tool_input": {"command": "python3 -c ..."}}
    assert vt_here("hook", "gemini", "before-tool", cwd=layout_vault, stdin=json.dumps(payload)).code == 0
    agent_runs(TAKING_OUT[0].format(ledger=ledger.relative_to(layout_vault)), layout_vault)
    done = vt_here("hook", "gemini", "after-tool", cwd=layout_vault, stdin=json.dumps(
        {**payload, "hook_event_name": "AfterTool", "tool_response": {"llmContent": "done", "returnDisplay": "done"}}))
    answer = json.loads(done.out)
    assert "decision" not in answer and "reason" not in answer
    assert answer["hookSpecificOutput"]["hookEventName"] == "AfterTool"
    assert "put them back" in answer["hookSpecificOutput"]["additionalContext"]
    assert ledger.read_bytes() == whole


def test_gemini_puts_back_the_settings_its_shell_command_changed(layout_vault):
    config = config_file(layout_vault)
    before = config.read_bytes()
    command = f"python3 -c \"import sys; open(sys.argv[1],'a').write('debounce_ms: 1\\n')\" {config.relative_to(layout_vault)}"
    payload = {"cwd": str(layout_vault), "session_id": "g2", "hook_event_name": "BeforeTool", "tool_name": "run_shell_command",
               "tool_input": {"command": command}}
    assert "deny" not in vt_here("hook", "gemini", "before-tool", cwd=layout_vault, stdin=json.dumps(payload)).out
    agent_runs(command, layout_vault)
    done = vt_here("hook", "gemini", "after-tool", cwd=layout_vault,
                   stdin=json.dumps({**payload, "hook_event_name": "AfterTool", "tool_response": {}}))
    assert "config.yaml" in json.loads(done.out)["hookSpecificOutput"]["additionalContext"]
    assert config.read_bytes() == before


def test_the_copies_are_this_devices_alone_never_carried_by_git(tmp_path):
    root = tmp_path / "hidden"
    (root / ".obsidian").mkdir(parents=True)
    init_vault(root, TZ, shared=False)
    assert ".vault-tools/ledger-copies/" in (root / ".gitignore").read_text(encoding="utf-8").splitlines()


def test_a_file_arriving_in_pieces_is_never_cut_into_lines(layout_vault):
    """Another device's file a sync brings in pieces: its last line without a newline is left as it is, and once
    whole it is the record growing."""
    other = (layout_vault / "vault-tools" / "ledger" if (layout_vault / "vault-tools" / "ledger").is_dir() else None)
    ledger = ledger_file(layout_vault)
    whole = ledger.read_bytes()
    target = (other / "zz99.jsonl") if other is not None else ledger
    if other is not None:
        target.write_bytes(whole[:100])  # the first piece
    else:
        ledger.write_bytes(whole + whole.splitlines(keepends=True)[0][:40])  # an append under way
    assert after_tool(layout_vault) is None
    target.write_bytes(whole)  # the rest arrives (or the append is cut off)
    assert after_tool(layout_vault) is None
    assert target.read_bytes() == whole
    assert "VT055" not in vt_here("lint", cwd=layout_vault).out


def test_crlf_line_endings_are_the_same_lines(layout_vault):
    """Git for Windows may check the ledger out with CRLF: no line is lost, nothing is doubled."""
    ledger = ledger_file(layout_vault)
    crlf = ledger.read_bytes().replace(b"\n", b"\r\n")
    ledger.write_bytes(crlf)
    assert after_tool(layout_vault) is None and ledger.read_bytes() == crlf


def test_lines_a_branch_switch_takes_away_are_not_put_back(tmp_path):
    """Lines committed on another branch are not lost: switching branches is not undone (nor can it trap the
    agent between branches)."""
    layout_vault = tmp_path / "vault"
    (layout_vault / ".obsidian").mkdir(parents=True)
    init_vault(layout_vault, TZ, shared=True)
    git(layout_vault, "init", "-q")
    assert vt_here("ask", "Should the blog have comments?", "--topic", "blog-comments", cwd=layout_vault).code == 0
    commit_all(layout_vault)
    git(layout_vault, "branch", "feature")
    assert vt_here("rule", "D-0001", "--summary", "The blog has no comments; readers write by email.", "--source",
                   "chat", cwd=layout_vault).code == 0
    commit_all(layout_vault, "ruled on main")
    assert after_tool(layout_vault) is None
    agent_runs("git checkout -q feature", layout_vault)
    assert after_tool(layout_vault) is None  # main's lines are committed there: nothing to put back
    assert not git(layout_vault, "status", "--porcelain", "--", "vault-tools/ledger").stdout.strip()
    agent_runs("git checkout -q -", layout_vault)  # back to the first branch
    assert after_tool(layout_vault) is None


def test_nothing_is_put_back_while_git_is_in_the_middle_of_a_merge_or_rebase(layout_vault):
    """A pull, a rebase or a merge rewrites the ledger as it goes: the tripwire waits until it is done."""
    git(layout_vault, "init", "-q")  # nothing committed: every line is this device's alone
    ledger = ledger_file(layout_vault)
    whole = ledger.read_bytes()
    marker = layout_vault / ".git" / "MERGE_HEAD"
    marker.write_text("0" * 40 + "\n")
    ledger.write_bytes(whole.splitlines(keepends=True)[0])
    assert after_tool(layout_vault) is None and ledger.read_bytes() != whole
    marker.unlink()
    told = after_tool(layout_vault)
    assert told is not None and ledger.read_bytes() == whole


# -- the settings: the config and the merged topics --------------------------------------------------------------

def bash_call(root: Path, command: str) -> dict | None:
    """One Bash call of an agent, as Claude Code makes it: pre-tool-use (which lets it through), the command run
    in a shell, then post-tool-use; the post-tool-use answer."""
    payload = {"cwd": str(root), "session_id": "s", "tool_name": "Bash", "tool_input": {"command": command}}
    before = vt_here("hook", "claude", "pre-tool-use", cwd=root, stdin=json.dumps(payload))
    assert before.code == 0 and "deny" not in before.out, before.out
    agent_runs(command, root)
    done = vt_here("hook", "claude", "post-tool-use", cwd=root,
                   stdin=json.dumps({**payload, "hook_event_name": "PostToolUse", "tool_response": {}}))
    assert done.code == 0, done.err
    return json.loads(done.out) if done.out.strip() else None


def settings_of(root: Path) -> tuple[Path, Path]:
    folder = root / "vault-tools" if (root / "vault-tools" / "config.yaml").exists() else root / ".vault-tools"
    return folder / "config.yaml", folder / "topics.yaml"


def test_the_config_an_agents_command_changed_is_put_back_and_what_it_wrote_kept(layout_vault):
    config, _ = settings_of(layout_vault)
    before = config.read_bytes()
    answer = bash_call(layout_vault, "python3 -c \"import sys; open(sys.argv[1],'a').write('seal_delay_seconds: 0\\n')\" "
                               f"{config.relative_to(layout_vault)}")
    assert config.read_bytes() == before
    assert answer is not None and answer["decision"] == "block"
    assert "config.yaml" in answer["reason"] and "put them back" in answer["reason"]
    kept = list((config.parent / "kept").glob("config.yaml as an agent's command left it *.txt"))
    assert len(kept) == 1 and kept[0].read_bytes() == before + b"seal_delay_seconds: 0\n"


def test_merged_topics_an_agents_command_wrote_are_taken_away(layout_vault):
    _, topics = settings_of(layout_vault)
    assert not topics.exists()
    answer = bash_call(layout_vault, "python3 -c \"import sys; open(sys.argv[1],'w').write('analytics: [platform]\\n')\" "
                               f"{topics.relative_to(layout_vault)}")
    assert not topics.exists()
    assert answer is not None and "topics.yaml" in answer["reason"]


def test_the_owners_edit_between_two_calls_stays(layout_vault):
    config, _ = settings_of(layout_vault)
    assert bash_call(layout_vault, "ls") is None
    config.write_text(config.read_text(encoding="utf-8") + "stale_after_days: 21\n", encoding="utf-8")  # by hand
    assert bash_call(layout_vault, "ls") is None
    assert config.read_text(encoding="utf-8").endswith("stale_after_days: 21\n")


def test_a_call_no_pre_tool_use_saw_puts_nothing_back(layout_vault):
    """A Read (no pre-tool-use hook is wired for it) during which the owner edits the config: nothing tells the
    owner's edit from the call's, so the edit stays."""
    config, _ = settings_of(layout_vault)
    assert bash_call(layout_vault, "ls") is None
    config.write_text(config.read_text(encoding="utf-8") + "recent_days: 45\n", encoding="utf-8")
    read = {"cwd": str(layout_vault), "session_id": "s", "tool_name": "Read", "tool_input": {"file_path": "Home.md"},
            "hook_event_name": "PostToolUse", "tool_response": {}}
    done = vt_here("hook", "claude", "post-tool-use", cwd=layout_vault, stdin=json.dumps(read))
    assert done.code == 0 and done.out.strip() == ""
    assert config.read_text(encoding="utf-8").endswith("recent_days: 45\n")


def test_vault_tools_own_write_of_the_topics_during_a_call_stays(layout_vault):
    """The agent runs vault-tools, which merges topics (as a ticked review proposal does): its write is the
    record's own."""
    _, topics = settings_of(layout_vault)
    merge = (f"{sys.executable} -c \"from pathlib import Path; from vault_tools.topic_aliases import add_alias; "
             f"add_alias(Path('{topics.parent}'), 'analytics', 'site-analytics')\"")
    assert bash_call(layout_vault, merge) is None
    assert "site-analytics" in topics.read_text(encoding="utf-8")


# -- every form that passes the pre-tool-use hook, end to end ---------------------------------------------------

def _answer_the_question(text: str) -> str:
    return text.replace("status: open", "status: ruled\nruled_by: owner\nsource: chat").replace(
        "summary: Should the newsletter move to a paid platform?",
        "summary: The newsletter moves to Buttondown in January.")


def _forms_that_pass(root: Path, elsewhere: Path) -> dict[str, str]:
    """Commands the pre-tool-use hook lets through (it cannot read what they write), each changing the record a
    way: the ledger, the notes, the settings; as an answer, a retraction, a forged ruling, a deletion."""
    import tarfile

    question = next(p for p in (root / "Decisions").glob("*.md") if "status: open" in p.read_text())
    ruling = next(p for p in (root / "Decisions").glob("*.md") if "status: ruled" in p.read_text())
    answered = elsewhere / "answered" / "Decisions" / question.name
    answered.parent.mkdir(parents=True)
    answered.write_text(_answer_the_question(question.read_text(encoding="utf-8")), encoding="utf-8")
    with tarfile.open(elsewhere / "answered.tar", "w") as archive:
        archive.add(answered, arcname=f"Decisions/{question.name}")
    diff = subprocess.run(["diff", "-u", f"Decisions/{question.name}", str(answered)], cwd=root,
                          capture_output=True, text=True).stdout
    (elsewhere / "answer.diff").write_text(diff, encoding="utf-8")
    retracted = ruling.read_text(encoding="utf-8").replace(
        "status: ruled", "status: retracted\nreason: The analytics ruling was never the owner's own word.")
    (elsewhere / "retracted.md").write_text(retracted, encoding="utf-8")
    forged = ("---\ntype: decision\nid: D-0009\nstatus: ruled\ntopics: [comments]\nruled_by: owner\nsource: chat\n"
              "summary: Comments stay closed on every article for good.\n---\n## Ruling\n\nClosed.\n")
    (elsewhere / "forged.md").write_text(forged, encoding="utf-8")
    ledger = ledger_file(root).relative_to(root)
    config, _ = settings_of(root)
    python = f"{sys.executable} -c"
    return {
        "ledger rewritten by a script": f"{python} \"import sys; open(sys.argv[1],'w').write('')\" {ledger}",
        "notes removed by a variable path": 'f=Decisions; rm -rf "$f"',
        "notes removed through xargs": "echo Decisions/*.md | tr ' ' '\\n' | head -5 | xargs -d '\\n' rm -f; "
                                       "ls Decisions | while read n; do rm -f \"Decisions/$n\"; done",
        "question answered by a patch from a pipe": f"cat {elsewhere}/answer.diff | patch -p0 -s",
        "question answered by an archive from a pipe": f"cat {elsewhere}/answered.tar | tar -x",
        "ruling retracted by a script": f"{python} \"import shutil,sys; shutil.copy(sys.argv[1], sys.argv[2])\" "
                                        f"{elsewhere}/retracted.md '{ruling.relative_to(root)}'",
        "ruling forged by a script": f"{python} \"import shutil,sys; shutil.copy(sys.argv[1], sys.argv[2])\" "
                                     f"{elsewhere}/forged.md 'Decisions/D-0009 Comments.md'",
        "config rewritten by a script": f"{python} \"import sys; open(sys.argv[1],'a').write('seal_delay_seconds: 0\\n')\" "
                                        f"{config.relative_to(root)}",
        "open-questions page rewritten by a script": f"{python} \"import sys; open(sys.argv[1],'w').write('# Nothing')\" "
                                                     "'Pinned/Open questions.md'",
    }


FORMS = ["ledger rewritten by a script", "notes removed by a variable path", "notes removed through xargs",
         "question answered by a patch from a pipe", "question answered by an archive from a pipe",
         "ruling retracted by a script", "ruling forged by a script", "config rewritten by a script",
         "open-questions page rewritten by a script"]


@pytest.mark.parametrize("with_git", [False, True], ids=["no git", "git"])
@pytest.mark.parametrize("form", FORMS)
def test_each_form_that_passes_the_guard_leaves_the_record_whole_after_the_call(layout_vault, tmp_path, form, with_git):
    """Through pre-tool-use (which lets it through), the command, post-tool-use and the watcher's pass: the
    ledger, the config and each note are byte for byte as before, or the note is held for the owner (an answer,
    a retraction, a forged ruling: `commands.held`), and what the agent reads is what it read before."""
    if with_git:
        git(layout_vault, "init", "-q")
        commit_all(layout_vault, "the vault")
    command = _forms_that_pass(layout_vault, tmp_path / "elsewhere")[form]
    ledger, (config, _) = ledger_file(layout_vault), settings_of(layout_vault)
    page = layout_vault / "Pinned" / "Open questions.md"
    before = {path: path.read_bytes() for path in [ledger, config, page, *(layout_vault / "Decisions").glob("*.md")]}
    read_before = vt_here("context", "--json", cwd=layout_vault).out
    told = bash_call(layout_vault, command)
    assert told is not None and told["decision"] == "block", form  # the agent is told
    assert vt_here("watch", "--once", cwd=layout_vault).code in (0, 1)
    held = []
    holding = form.startswith(("question answered", "ruling retracted", "ruling forged"))
    page_now = page.read_bytes().decode("utf-8")
    assert ("## Held for you" in page_now) if holding else page_now.encode("utf-8") == before.pop(page), form
    before.pop(page, None)  # where something is held, the page says so
    for path, data in before.items():
        now = path.read_bytes()
        if now != data:  # held, never taken as the owner's: the unticked box, the typed words kept
            assert b"confirmed_by_owner: false" in now, (form, path)
            held.append(path)
    assert held == [] or form.startswith(("question answered", "ruling retracted")), form
    forged = layout_vault / "Decisions" / "D-0009 Comments.md"
    assert not forged.exists() or b"confirmed_by_owner: false" in forged.read_bytes()
    assert sorted(layout_vault.joinpath("Decisions").glob("*.md")) == sorted(
        [p for p in before if p.parent.name == "Decisions"] + ([forged] if forged.exists() else []))
    assert vt_here("context", "--json", cwd=layout_vault).out == read_before, form
