"""Steps only the owner may take, made to decision notes during an agent's tool call, are held until the owner ticks
them (`commands.held`): never sealed or recorded "by owner" meanwhile, in no reader's view, shown to the owner.

Real vaults in both layouts; the agent's commands run for real in a shell between Claude Code's pre-tool-use and
post-tool-use hooks; the watcher's pass is `watch --once`; the owner's edits are plain writes made outside a call."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import config_file, ledger_events, make_vault, vt_here, write
from vault_tools import notes, record_files

RULING = "The site uses no analytics and no tracking of any kind."
ANSWER = "The newsletter moves to Buttondown in January."


@pytest.fixture(params=["hidden", "shared", "hidden, after a session start"])
def layout_vault(request, tmp_path) -> Path:
    """Both layouts; and a vault whose hooks' snapshot was made (a session started), whose list of the decision
    notes the tripwire then stats instead of every note."""
    root = tmp_path / "vault"
    make_vault(root, shared=request.param == "shared")
    config = config_file(root)
    with open(config, "a", encoding="utf-8") as handle:  # the watcher's pass seals a quiet ruling at once
        handle.write("debounce_ms: 0\nseal_delay_seconds: 0\n")
    assert vt_here("rule", "--topic", "analytics", "--summary", RULING, "--source", "chat", cwd=root).code == 0
    assert vt_here("ask", "Should the newsletter move to a paid platform?", "--topic", "newsletter-platform",
                   cwd=root).code == 0
    if request.param.endswith("session start"):
        saved_a_minute_ago(root)
        started = vt_here("hook", "claude", "session-start", cwd=root, stdin=json.dumps({"cwd": str(root)}))
        assert started.code == 0 and (root / ".vault-tools" / "cache" / "decision-paths-v2.json").exists()
    return root


def saved_a_minute_ago(root: Path) -> None:
    """Every file and folder of the vault saved a minute ago: past the racy window, so the hooks keep a snapshot.
    Their ctimes are now: the clock a call's beginning is read from (`record_files.file_clock_ns`, a tick behind)
    is let past them, so a call that begins next finds none of them changed during it."""
    then = time.time() - 60
    for path in [root, *root.rglob("*")]:
        os.utime(path, (then, then), follow_symlinks=False)
    changed = max(os.stat(path, follow_symlinks=False).st_ctime_ns for path in [root, *root.rglob("*")])
    while record_files.file_clock_ns() <= changed:
        time.sleep(0.001)


def payload(root: Path, command: str) -> dict:
    return {"cwd": str(root), "session_id": "s", "tool_name": "Bash", "tool_input": {"command": command}}


def call_begins(root: Path, command: str) -> None:
    before = vt_here("hook", "claude", "pre-tool-use", cwd=root, stdin=json.dumps(payload(root, command)))
    assert before.code == 0 and "deny" not in before.out, before.out


def call_ends(root: Path, command: str) -> dict | None:
    done = vt_here("hook", "claude", "post-tool-use", cwd=root,
                   stdin=json.dumps({**payload(root, command), "hook_event_name": "PostToolUse", "tool_response": {}}))
    assert done.code == 0, done.err
    return json.loads(done.out) if done.out.strip() else None


def agent_call(root: Path, command: str) -> dict | None:
    """One Bash call as Claude Code makes it: pre-tool-use, the command in a shell, post-tool-use's answer."""
    call_begins(root, command)
    subprocess.run(["bash", "-c", command], cwd=root, check=True, capture_output=True)
    return call_ends(root, command)


def note_of(root: Path, decision_id: str) -> Path:
    return next(path for path in (root / "Decisions").glob("*.md")
                if re.search(rf"^id: {decision_id}(-\w+)?$", path.read_text(), re.MULTILINE))


def answered(text: str) -> str:
    """A question's note as typed to answer it: status ruled, the answer as its summary."""
    return (text.replace("status: open", "status: ruled\nruled_by: owner\nsource: chat")
            .replace("summary: Should the newsletter move to a paid platform?", f"summary: {ANSWER}"))


def writes(path: Path, text: str) -> str:
    """A shell command that writes `text` to `path` without any form the pre-tool-use hook reads."""
    return (f"{sys.executable} -c \"import sys; open(sys.argv[1], 'w').write(sys.argv[2])\" "
            f"{shlex.quote(str(path))} {shlex.quote(text)}")


def short(decision_id: str) -> str:
    """An id without its clone tag (the shared layout's ids carry one)."""
    return decision_id[:6]


def context_json(root: Path) -> dict:
    return json.loads(vt_here("context", "--json", cwd=root).out)


def ticked(root: Path, decision_id: str) -> None:
    """The owner ticks the checkbox in Obsidian, outside any agent's call."""
    path = note_of(root, decision_id)
    path.write_text(path.read_text(encoding="utf-8").replace("confirmed_by_owner: false", "confirmed_by_owner: true"),
                    encoding="utf-8")


@pytest.mark.parametrize("writer", ["agent's command", "owner in Obsidian during the call"])
def test_an_answer_written_during_an_agents_call_is_held_and_the_owners_once_ticked(layout_vault, writer):
    question = note_of(layout_vault, "D-0002")
    command = writes(question, answered(question.read_text(encoding="utf-8")))
    if writer == "agent's command":
        told = agent_call(layout_vault, command)
    else:  # nothing tells the owner's save during the call from the command's: both are held alike
        call_begins(layout_vault, "make test")
        question.write_text(answered(question.read_text(encoding="utf-8")), encoding="utf-8")
        told = call_ends(layout_vault, "make test")
    assert told is not None and told["decision"] == "block"
    assert "D-0002" in told["reason"] and "(ruled" in told["reason"] and "confirmed_by_owner" in told["reason"]
    assert notes.read_note(question).data["confirmed_by_owner"] is False
    assert ANSWER in question.read_text(encoding="utf-8")  # every word typed is kept

    assert vt_here("watch", "--once", cwd=layout_vault).code == 0  # seal_delay_seconds 0: it would seal an owner's answer
    assert not [e for e in ledger_events(layout_vault) if short(e["id"]) == "D-0002" and e["event"] != "asked"]
    context = context_json(layout_vault)
    assert [short(q["id"]) for q in context["open_questions"]] == ["D-0002"]  # still the owner's open question
    assert [short(r["id"]) for r in context["rulings"]] == ["D-0001"]
    lint = vt_here("lint", cwd=layout_vault)
    assert "VT056" in lint.out and "D-0002" in lint.out
    page = next((layout_vault / "Pinned").glob("Open questions*.md")).read_text(encoding="utf-8")
    assert "confirmed_by_owner" in page and "D-0002" in page

    ticked(layout_vault, "D-0002")
    assert vt_here("watch", "--once", cwd=layout_vault).code == 0
    sealed = [e for e in ledger_events(layout_vault) if short(e["id"]) == "D-0002" and e["event"] == "sealed"]
    assert len(sealed) == 1
    assert {short(r["id"]) for r in context_json(layout_vault)["rulings"]} == {"D-0001", "D-0002"}
    assert "VT056" not in vt_here("lint", cwd=layout_vault).out


def test_a_retraction_written_during_a_call_waits_for_the_call_and_is_then_held(layout_vault):
    """The watcher passes while the call is under way (a long script): it leaves the note alone, where it would
    apply a retraction typed in Obsidian; post-tool-use then holds it, and the ruling stays in force."""
    ruling = note_of(layout_vault, "D-0001")
    text = ruling.read_text(encoding="utf-8")
    command = writes(ruling, text.replace("status: ruled", "status: retracted\nreason: The analytics ruling no "
                                                           "longer stands after the site moved hosts."))
    call_begins(layout_vault, command)
    subprocess.run(["bash", "-c", command], cwd=layout_vault, check=True, capture_output=True)
    events = ledger_events(layout_vault)
    during = vt_here("watch", "--once", cwd=layout_vault)  # during the call: left for after it, and said so
    assert during.code == 1 and "changed during an agent's command still under way" in during.err
    vt_here("lint", "--fix", cwd=layout_vault)  # pre-commit inside the call
    assert ledger_events(layout_vault) == events
    told = call_ends(layout_vault, command)
    assert told is not None and "D-0001" in told["reason"] and "(retracted" in told["reason"]
    assert vt_here("watch", "--once", cwd=layout_vault).code == 0
    assert ledger_events(layout_vault) == events
    assert [short(r["id"]) for r in context_json(layout_vault)["rulings"]] == ["D-0001"]
    assert "status: retracted" in ruling.read_text(encoding="utf-8")  # kept as typed, for the owner


def test_a_ruling_note_an_agent_made_is_in_no_readers_view_and_never_sealed(layout_vault):
    forged = layout_vault / "Decisions" / "D-0003 Comments.md"
    text = ("---\ntype: decision\nid: D-0003\nstatus: ruled\ntopics: [comments]\nruled_by: owner\nsource: chat\n"
            "summary: Comments stay closed on every article for good.\n---\n## Ruling\n\nClosed.\n")
    told = agent_call(layout_vault, writes(forged, text))
    assert told is not None and "D-0003" in told["reason"] and "(ruled" in told["reason"]
    assert vt_here("watch", "--once", cwd=layout_vault).code == 0
    assert not [e for e in ledger_events(layout_vault) if short(e["id"]) == "D-0003"]
    assert "D-0003" not in json.dumps(context_json(layout_vault))
    assert vt_here("lookup", "comments", cwd=layout_vault).out.count("D-0003") == 0
    sealing = vt_here("seal", "D-0003", cwd=layout_vault)
    assert sealing.code != 0 and "confirmed_by_owner" in sealing.err


def test_the_agent_ticking_the_box_is_held_again(layout_vault):
    question = note_of(layout_vault, "D-0002")
    agent_call(layout_vault, writes(question, answered(question.read_text(encoding="utf-8"))))
    held = question.read_text(encoding="utf-8")
    told = agent_call(layout_vault, writes(question, held.replace("confirmed_by_owner: false", "confirmed_by_owner: true")))
    assert told is not None and "D-0002" in told["reason"]
    assert question.read_text(encoding="utf-8") == held
    assert vt_here("watch", "--once", cwd=layout_vault).code == 0
    assert [short(q["id"]) for q in context_json(layout_vault)["open_questions"]] == ["D-0002"]


def test_what_the_agent_records_through_vault_tools_is_not_held(layout_vault):
    told = agent_call(layout_vault, f"{sys.executable} -m vault_tools rule D-0002 --summary '{ANSWER}' --source chat")
    assert told is None
    assert "confirmed_by_owner" not in note_of(layout_vault, "D-0002").read_text(encoding="utf-8")
    assert {short(r["id"]) for r in context_json(layout_vault)["rulings"]} == {"D-0001", "D-0002"}


def test_an_ordinary_note_an_agent_edits_holds_nothing(layout_vault):
    assert agent_call(layout_vault, writes(layout_vault / "Notes.md", "# Notes\n\nThe agent's own notes.\n")) is None
    question = note_of(layout_vault, "D-0002")
    edited = question.read_text(encoding="utf-8").replace("## Question", "## Question\n\nA clearer question.")
    assert agent_call(layout_vault, writes(question, edited)) is None  # an open question edited: anyone may


def test_the_owners_answer_outside_a_call_is_sealed_as_ever(layout_vault):
    question = note_of(layout_vault, "D-0002")
    assert agent_call(layout_vault, "ls") is None
    question.write_text(answered(question.read_text(encoding="utf-8")), encoding="utf-8")
    assert vt_here("watch", "--once", cwd=layout_vault).code == 0
    assert [e["event"] for e in ledger_events(layout_vault) if short(e["id"]) == "D-0002"][-1] == "sealed"


@pytest.mark.parametrize("then", ["watch --once", "lint --fix"])
def test_a_plain_note_made_a_ruling_in_place_during_a_call_is_held_by_the_next_pass(layout_vault, then):
    """The tripwire stats the decision notes it knows and the notes of folders that changed: a plain note a script
    made a decision note in place is not among them. The watcher's next pass (or `lint --fix`) sees it changed
    while a call was under way, and holds it as the tripwire would have."""
    plain = layout_vault / "Decisions" / "Comments.md"
    plain.write_text("# Comments\n\nWhat readers said about comments.\n", encoding="utf-8")
    saved_a_minute_ago(layout_vault)
    assert vt_here("hook", "claude", "session-start", cwd=layout_vault, stdin=json.dumps({"cwd": str(layout_vault)})).code == 0
    ruling = ("---\ntype: decision\nid: D-0003\nstatus: ruled\ntopics: [comments]\nruled_by: owner\nsource: chat\n"
              "summary: Comments stay closed on every article for good.\n---\n## Ruling\n\nClosed.\n")
    fd_write = (f"{sys.executable} -c \"import os,sys; fd=os.open(sys.argv[1], os.O_WRONLY|os.O_TRUNC); "
                f"os.write(fd, sys.argv[2].encode()); os.close(fd)\" {shlex.quote(str(plain))} {shlex.quote(ruling)}")
    assert (layout_vault / ".vault-tools" / "cache" / "decision-paths-v2.json").exists()
    assert agent_call(layout_vault, fd_write) is None  # in place: the folder does not change, the tripwire does not see it
    done = vt_here(*then.split(), cwd=layout_vault)
    assert "D-0003" in done.out + done.err
    assert "confirmed_by_owner: false" in plain.read_text(encoding="utf-8")
    assert vt_here("watch", "--once", cwd=layout_vault).code in (0, 1)
    assert not [e for e in ledger_events(layout_vault) if short(e["id"]) == "D-0003"]
    assert "D-0003" not in json.dumps(context_json(layout_vault))


def test_a_change_by_another_mcp_servers_tool_is_held(layout_vault, tmp_path):
    """Claude Code runs pre-tool-use for every MCP tool (`mcp__SERVER__TOOL`) too, so a file server's write of
    the owner's question is known as the agent's."""
    project = tmp_path / "project"
    project.mkdir()
    assert vt_here("init", "--agent", "claude", "--vault", str(layout_vault), cwd=project).code == 0
    settings = json.loads((project / ".claude" / "settings.json").read_text(encoding="utf-8"))
    matcher = next(group["matcher"] for group in settings["hooks"]["PreToolUse"]
                   if "vault-tools" in group["hooks"][0]["command"])
    assert re.fullmatch(matcher, "mcp__filesystem__write_file")
    question = note_of(layout_vault, "D-0002")
    call = {"cwd": str(layout_vault), "session_id": "s", "tool_name": "mcp__filesystem__write_file",
            "tool_input": {"path": str(question), "content": "..."}}
    assert vt_here("hook", "claude", "pre-tool-use", cwd=layout_vault, stdin=json.dumps(call)).code == 0
    question.write_text(answered(question.read_text(encoding="utf-8")), encoding="utf-8")  # what the tool did
    done = vt_here("hook", "claude", "post-tool-use", cwd=layout_vault,
                   stdin=json.dumps({**call, "hook_event_name": "PostToolUse", "tool_response": {}}))
    assert "D-0002" in json.loads(done.out)["reason"]
    assert "confirmed_by_owner: false" in question.read_text(encoding="utf-8")


def test_the_same_answer_copied_in_by_cp_r_is_held_even_where_the_guard_failed_open(layout_vault, tmp_path):
    """`cp -r` of a folder holding an answered copy of the owner's question: the pre-tool-use hook refuses it;
    had it let it through (a hook fails open on its own error), the call still never answers in the owner's name."""
    question = note_of(layout_vault, "D-0002")
    source = tmp_path / "elsewhere" / "Decisions"
    source.mkdir(parents=True)
    (source / question.name).write_text(answered(question.read_text(encoding="utf-8")), encoding="utf-8")
    command = f"cp -r {shlex.quote(str(source))} ."
    refused = vt_here("hook", "claude", "pre-tool-use", cwd=layout_vault, stdin=json.dumps(payload(layout_vault, command)))
    assert "deny" in refused.out  # the guard reads cp -r
    subprocess.run(["bash", "-c", command], cwd=layout_vault, check=True, capture_output=True)  # run all the same
    told = call_ends(layout_vault, command)
    assert told is not None and "D-0002" in told["reason"]
    assert vt_here("watch", "--once", cwd=layout_vault).code in (0, 1)
    assert not [e for e in ledger_events(layout_vault) if short(e["id"]) == "D-0002" and e["event"] != "asked"]
    assert [short(q["id"]) for q in context_json(layout_vault)["open_questions"]] == ["D-0002"]


def test_a_commit_inside_the_call_is_refused_by_lint_until_the_change_is_held(layout_vault):
    """An agent's command that answers the question and commits (`git commit` runs the pre-commit lint) inside
    the same call: lint fails, so the answer never reaches another clone unmarked; once the tripwire held it,
    lint only warns."""
    question = note_of(layout_vault, "D-0002")
    command = writes(question, answered(question.read_text(encoding="utf-8")))
    call_begins(layout_vault, command)
    subprocess.run(["bash", "-c", command], cwd=layout_vault, check=True, capture_output=True)
    during = vt_here("lint", cwd=layout_vault)
    assert during.code == 1 and "VT056 error" in during.out and "not held yet" in during.out
    call_ends(layout_vault, command)
    after = vt_here("lint", cwd=layout_vault)
    assert "VT056 warning" in after.out and "VT056 error" not in after.out


def test_a_call_whose_post_tool_use_never_came_is_held_once_it_lapses(layout_vault, monkeypatch):
    """A Bash call that fails (Claude Code then sends no PostToolUse) or is interrupted: while it counts as under
    way the watcher leaves the note alone; once it lapses (15 minutes) it counts as a call that ended, and the
    watcher's next pass holds the step instead of taking it as the owner's."""
    question = note_of(layout_vault, "D-0002")
    command = writes(question, answered(question.read_text(encoding="utf-8")))
    call_begins(layout_vault, command)
    subprocess.run(["bash", "-c", command], cwd=layout_vault, check=True, capture_output=True)
    monkeypatch.setattr(record_files, "MAX_CALL_SECONDS", 1)  # as if 15 minutes had passed
    time.sleep(1.2)
    done = vt_here("watch", "--once", cwd=layout_vault)
    assert "D-0002" in done.out + done.err
    assert "confirmed_by_owner: false" in question.read_text(encoding="utf-8")
    assert not [e for e in ledger_events(layout_vault) if short(e["id"]) == "D-0002" and e["event"] != "asked"]


def test_parallel_calls_each_keep_their_start(layout_vault):
    """Claude Code runs the hooks of parallel tool calls at once: each call's start is kept (the file is locked
    while one hook reads, changes and writes it)."""
    commands = [f"echo {n}" for n in range(6)]
    started = [subprocess.Popen([sys.executable, "-m", "vault_tools", "hook", "claude", "pre-tool-use"], cwd=layout_vault,
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, env={**os.environ})
               for _ in commands]
    for process, command in zip(started, commands, strict=True):
        process.stdin.write(json.dumps(payload(layout_vault, command)).encode())
        process.stdin.close()
    assert all(process.wait(timeout=30) == 0 for process in started)
    calls = json.loads((layout_vault / ".vault-tools" / "agent-calls.json").read_text(encoding="utf-8"))
    assert len(calls["open"]) == len(commands)


def test_every_reader_says_what_is_held(layout_vault):
    """`gate` refuses a held ruling the ledger never saw (it is no one's ruling), `show` prints the note as written
    and says how every other reader takes it."""
    forged = layout_vault / "Decisions" / "D-0003 Comments.md"
    agent_call(layout_vault, writes(forged, "---\ntype: decision\nid: D-0003\nstatus: ruled\ntopics: [comments]\n"
                                     "ruled_by: owner\nsource: chat\nsummary: Comments stay closed on every article.\n"
                                     "---\n## Ruling\n\nClosed.\n"))
    gated = vt_here("gate", "D-0003", cwd=layout_vault)
    assert gated.code == 1 and "not a ruling" in gated.err
    question = note_of(layout_vault, "D-0002")
    agent_call(layout_vault, writes(question, answered(question.read_text(encoding="utf-8"))))
    shown = json.loads(vt_here("show", "D-0002", "--json", cwd=layout_vault).out)
    assert any("read everywhere else as open" in problem["message"] for problem in shown["problems"])


def test_a_merge_copy_written_during_a_call_is_never_recorded_as_the_owners(layout_vault):
    """The watcher records the outcome a merge copy git's notes driver kept; one an agent's command put there is
    not recorded."""
    question = note_of(layout_vault, "D-0002")
    decision_id = re.search(r"^id: (\S+)$", question.read_text(encoding="utf-8"), re.MULTILINE).group(1)
    kept = next(p for p in (layout_vault / "vault-tools" / "kept", layout_vault / ".vault-tools" / "kept") if p.parent.is_dir())
    copy = kept / f"{decision_id} ruled as a merge found it 2026-12-06 120000 ab12.md"
    agent_call(layout_vault, f"mkdir -p {shlex.quote(str(kept))} && " + writes(copy, answered(question.read_text(encoding="utf-8"))))
    vt_here("watch", "--once", cwd=layout_vault)
    assert not [e for e in ledger_events(layout_vault) if short(e["id"]) == "D-0002" and e["event"] != "asked"]


def test_a_note_whose_properties_end_with_yamls_document_end_is_held_too(layout_vault):
    """YAML's document end marker (`...`) before the closing fence: the checkbox goes before it, so the note stays
    readable and held."""
    question = note_of(layout_vault, "D-0002")
    text = answered(question.read_text(encoding="utf-8")).replace("\n---\n", "\n...\n---\n", 1)
    told = agent_call(layout_vault, writes(question, text))
    assert told is not None and "D-0002" in told["reason"]
    written = question.read_text(encoding="utf-8")
    assert "confirmed_by_owner: false\n...\n---\n" in written
    assert [short(q["id"]) for q in context_json(layout_vault)["open_questions"]] == ["D-0002"]


def test_what_the_agent_is_told_stays_short_whatever_the_call_changed(layout_vault):
    """Forty rulings forged in one call: the agent is told ten by name and the rest counted, within the hook's
    limit."""
    script = ";".join(
        f"open('Decisions/D-{n:04d} Forged.md','w').write('---\\\\ntype: decision\\\\nid: D-{n:04d}\\\\nstatus: ruled\\\\n"
        f"topics: [forged-{n}]\\\\nsummary: Forged ruling number {n} says nothing the owner said.\\\\n---\\\\n')"
        for n in range(100, 140))
    told = agent_call(layout_vault, f'{sys.executable} -c "{script}"')
    assert told is not None and "and 30 more" in told["reason"]
    assert len(json.dumps(told)) < 9_500
    assert sum("confirmed_by_owner: false" in p.read_text() for p in (layout_vault / "Decisions").glob("*Forged.md")) == 40


def test_the_calls_the_tripwire_keeps_are_guarded_as_the_ledger_is(layout_vault):
    calls = layout_vault / ".vault-tools" / "agent-calls.json"
    for command in (f"rm {calls}", "rm -f .vault-tools/agent-calls.json", "echo '{}' > .vault-tools/agent-calls.json"):
        denied = vt_here("hook", "claude", "pre-tool-use", cwd=layout_vault, stdin=json.dumps(payload(layout_vault, command)))
        assert "deny" in denied.out, command
    write = {"cwd": str(layout_vault), "session_id": "s", "tool_name": "Write",
             "tool_input": {"file_path": str(calls), "content": "{}"}}
    assert "deny" in vt_here("hook", "claude", "pre-tool-use", cwd=layout_vault, stdin=json.dumps(write)).out


@pytest.mark.parametrize("damage", ["not json", "[1, 2]", '{"open": 3, "ended": "x"}', ""])
def test_a_damaged_calls_file_stops_nothing(layout_vault, damage):
    """The calls' file is this device's state: damaged, it is read as no call, and written anew by the next one."""
    (layout_vault / ".vault-tools" / "agent-calls.json").write_text(damage, encoding="utf-8")
    question = note_of(layout_vault, "D-0002")
    told = agent_call(layout_vault, writes(question, answered(question.read_text(encoding="utf-8"))))
    assert told is not None and "D-0002" in told["reason"]  # the call after it is known again
    assert vt_here("watch", "--once", cwd=layout_vault).code in (0, 1)
    assert vt_here("lint", cwd=layout_vault).code in (0, 1)


@pytest.mark.parametrize("rebase", [False, True], ids=["merge", "rebase"])
def test_a_held_answer_travels_held_to_another_clone_and_is_the_owners_once_ticked_there(tmp_path, capsys, rebase):
    """An agent's call answers the owner's question on the agent's clone (A): held there, committed, pulled by the
    owner's clone (B, merge or rebase, with a note the owner typed before B's watcher ran): B's watcher does not
    record it; the owner ticks it on B, and it is sealed there and, pulled back, on A. Every typed word is kept."""
    from tests.clones import clone, make_origin

    origin = make_origin(tmp_path, capsys, seal_delay_seconds=0)
    a, b = clone(origin, "A"), clone(origin, "B")
    asked = a.ask("Should the newsletter move to a paid platform?", "newsletter-platform")
    a.commit("asked")
    b.pull(a, rebase)
    question = note_of(a.root, asked[:6])
    agent_call(a.root, writes(question, answered(question.read_text(encoding="utf-8"))))
    assert "confirmed_by_owner: false" in question.read_text(encoding="utf-8")
    a.commit("the agent's answer, held")
    typed = write(b.root / "Notes" / "Call notes.md", "The owner's own words, typed on B before its watcher ran.\n")
    b.pull(a, rebase)
    on_b = note_of(b.root, asked[:6])
    assert ANSWER in on_b.read_text(encoding="utf-8") and typed.read_text(encoding="utf-8").startswith("The owner's")
    assert not [e for e in ledger_events(b.root) if e["id"] == asked and e["event"] != "asked"]
    assert [q["id"] for q in json.loads(b.vt("context", "--json")[1])["open_questions"]] == [asked]
    ticked(b.root, asked[:6])
    b.vt("watch", "--once")
    assert "sealed" in [e["event"] for e in ledger_events(b.root) if e["id"] == asked]  # (files in tag order)
    b.commit("the owner's answer")
    a.pull(b, rebase)
    assert "sealed" in [e["event"] for e in ledger_events(a.root) if e["id"] == asked]
    assert ANSWER in note_of(a.root, asked[:6]).read_text(encoding="utf-8")
