"""The hooks guard the whole record, in both layouts, for every agent: the ledger files, the config, the merged
topics, the kept copies, the pages and every decision note refuse writes by file tools, shell commands and
patches, and stay readable. Real vaults, the hooks' own front door; the payloads are each agent's (see
test_agent_hooks.py for their sources)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers import make_vault, vt_here, write

ANALYTICS = "The site uses no analytics and no tracking of any kind."
AGENTS = ("claude", "codex", "gemini")


@pytest.fixture(params=["hidden", "shared"])
def guarded(request, tmp_path) -> dict[str, str]:
    """A vault in the layout `init` makes today (shared) or made before (hidden): a sealed ruling, an open
    question, the pages, merged topics and a kept copy. Returns the vault and its record's paths."""
    root = tmp_path / "vault"
    shared = request.param == "shared"
    make_vault(root, shared=shared)
    assert vt_here("rule", "--topic", "analytics", "--summary", ANALYTICS, "--source", "chat", cwd=root).code == 0
    assert vt_here("ask", "Should the newsletter move to a paid platform?", "--topic", "newsletter-platform",
                   cwd=root).code == 0
    record_dir = "vault-tools" if shared else ".vault-tools"
    write(root / record_dir / "topics.yaml", "analytics: [site-analytics]\n")
    write(root / record_dir / "kept" / "Decisions log 2026-12-01.md", "an edited page\n")
    ledger = (next((root / "vault-tools" / "ledger").glob("*.jsonl")).relative_to(root).as_posix() if shared
              else ".vault-tools/ledger.jsonl")
    sealed = next((root / "Decisions").glob("D-0001*.md")).relative_to(root).as_posix()
    question = next((root / "Decisions").glob("D-0002*.md")).relative_to(root).as_posix()
    return {"root": str(root), "record_dir": record_dir, "ledger": ledger, "config": f"{record_dir}/config.yaml",
            "topics": f"{record_dir}/topics.yaml", "kept": f"{record_dir}/kept/Decisions log 2026-12-01.md",
            "page": "Pinned/Decisions log.md", "sealed": sealed, "question": question}


def _hook(agent: str, event: str, payload: dict, root: Path) -> dict | None:
    done = vt_here("hook", agent, event, cwd=root, stdin=json.dumps({"cwd": str(root), **payload}))
    assert done.code == 0, done.err
    return json.loads(done.out) if done.out.strip() else None


def _refusal(agent: str, answer: dict | None) -> str | None:
    """The reason of a denial in the agent's own terms; None when the call goes through."""
    if answer is None:
        return None
    if agent == "gemini":
        return answer.get("reason") if answer.get("decision") == "deny" else None
    output = answer.get("hookSpecificOutput") or {}
    return output.get("permissionDecisionReason") if output.get("permissionDecision") == "deny" else None


def file_write(agent: str, rel: str, root: Path, *, delete: bool = False, content: str = "x") -> str | None:
    """The agent's own file tool writing (or, for Codex, a patch deleting) `rel`."""
    if agent == "claude":
        payload = {"hook_event_name": "PreToolUse", "tool_name": "Write",
                   "tool_input": {"file_path": rel, "content": content}}
        return _refusal(agent, _hook(agent, "pre-tool-use", payload, root))
    if agent == "gemini":
        payload = {"hook_event_name": "BeforeTool", "tool_name": "write_file",
                   "tool_input": {"file_path": rel, "content": content}}
        return _refusal(agent, _hook(agent, "before-tool", payload, root))
    lines = [f"*** Delete File: {rel}"] if delete else [f"*** Update File: {rel}", "@@", "-a", "+b"]
    patch = "\n".join(["*** Begin Patch", *lines, "*** End Patch", ""])
    payload = {"hook_event_name": "PreToolUse", "tool_name": "apply_patch", "tool_input": {"command": patch}}
    return _refusal(agent, _hook(agent, "pre-tool-use", payload, root))


def shell(agent: str, command: str, root: Path) -> str | None:
    if agent == "gemini":
        payload = {"hook_event_name": "BeforeTool", "tool_name": "run_shell_command", "tool_input": {"command": command}}
        return _refusal(agent, _hook(agent, "before-tool", payload, root))
    payload = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": command}}
    return _refusal(agent, _hook(agent, "pre-tool-use", payload, root))


@pytest.mark.parametrize("agent", AGENTS)
def test_every_record_file_refuses_the_agents_file_tools(guarded, agent) -> None:
    root = Path(guarded["root"])
    for part in ("ledger", "config", "topics", "kept", "page", "sealed", "question"):
        reason = file_write(agent, guarded[part], root)
        assert reason and guarded[part] in reason and "vault-tools" in reason, (part, reason)
        if agent == "codex":
            assert file_write(agent, guarded[part], root, delete=True), part
    assert "--supersedes D-0001" in file_write(agent, guarded["sealed"], root)
    assert "vault-tools rule D-0002" in file_write(agent, guarded["question"], root)
    for free in ("Drafts/new.md", f"{guarded['record_dir']}/notes.txt", "Pinned/My own page.md"):
        assert file_write(agent, free, root) is None, free


@pytest.mark.parametrize("agent", AGENTS)
def test_shell_commands_that_write_remove_or_move_the_record_are_refused(guarded, agent) -> None:
    root = Path(guarded["root"])
    commands = [
        f"echo '{{}}' >> {guarded['ledger']}", f"rm -rf {guarded['record_dir']}", "rm -rf Decisions", "rm Decisions/*",
        "sed -i 's/analytics/tracking/' Decisions/*.md", "truncate -s0 Decisions/*.md", "git rm -r Decisions",
        f"mv {guarded['config']} /tmp/elsewhere.yaml", "cd Decisions && rm -f *.md", "bash -c 'rm -rf Decisions'",
        "find Decisions -name '*.md' -delete", f"shred -u '{guarded['sealed']}'", "rm -rf ../vault",
        f"cat /dev/null > '{guarded['topics']}'", f"unlink '{guarded['kept']}'", "rm -rf Pinned",
        # as agents write them: several lines, shell keywords, runners with options, `-lc`
        f"echo start\nrm {guarded['ledger']}", f"if true; then rm {guarded['ledger']}; fi",
        f"for f in x; do rm {guarded['ledger']}; done", f"{{ rm {guarded['ledger']}; }}", f"! rm {guarded['ledger']}",
        f"bash -lc 'rm {guarded['ledger']}'", f"timeout 5 rm {guarded['ledger']}", f"nice -n 5 rm {guarded['ledger']}",
        f"sudo -u owner rm {guarded['ledger']}", f"env A=1 B=2 rm {guarded['ledger']}",
        f"sort -o {guarded['ledger']} {guarded['ledger']}", f"rsync -a --delete /tmp/ {guarded['record_dir']}/",
        f"pushd {guarded['record_dir']} && rm config.yaml",
        # git putting back or throwing away what the record holds since the last commit
        f"git checkout -- {guarded['ledger']}", "git checkout -- .", f"git restore {guarded['ledger']}",
        "git stash -u", "git reset --hard", "git clean -fdx", f"git -C {guarded['record_dir']} rm config.yaml",
        # names as a case-insensitive file system (macOS, Windows) finds them
        f"rm {guarded['config'].upper()}", "rm 'pinned/decisions log.md'",
    ]
    for command in commands:
        reason = shell(agent, command, root)
        assert reason and reason.startswith("This command writes") and "vault-tools" in reason, (command, reason)


@pytest.mark.parametrize("agent", AGENTS)
def test_reading_the_record_and_writing_elsewhere_pass(guarded, agent) -> None:
    root = Path(guarded["root"])
    for command in (f"cat {guarded['ledger']}", "grep -r analytics Decisions", f"cp {guarded['config']} /tmp/copy.yaml",
                    "git log -p -- Decisions", "rm -rf .vault-tools/cache", "ls Decisions/*.md | wc -l",
                    "echo hi > Drafts.md", "rm -rf Drafts", "find . -name '*.md' -exec grep -l analytics {} +",
                    "find Decisions -type f -exec wc -l {} \\;", "find . -name '*.tmp' -delete",
                    f"perl -Mstrict -ne 'print' {guarded['ledger']}", "git rm --cached -r .", "git stash list",
                    "git checkout -b drafts", "git restore --staged .", "cp Drafts.md Decisions/",
                    "mv Drafts.md Notes.md"):
        assert shell(agent, command, root) is None, command


@pytest.mark.parametrize("agent", ["claude", "gemini"])
def test_a_new_decision_note_written_by_hand_is_refused(guarded, agent) -> None:
    """A note an agent writes with `type: decision` would skip `ask`'s refusal on a settled topic."""
    root = Path(guarded["root"])
    note = ("---\ntype: decision\nstatus: open\ntopics: [analytics]\n"
            "summary: Should the site add analytics after all?\n---\n")
    reason = file_write(agent, "Decisions/Analytics again.md", root, content=note)
    assert reason and "vault-tools ask" in reason
    assert file_write(agent, "Drafts/plain.md", root, content="---\ntype: note\n---\ntext\n") is None


def test_an_emptied_ledger_still_denies_the_sealed_ruling(guarded) -> None:
    """With its ledger gone, a note that says it was ruled is taken as sealed: the agent cannot empty the
    ledger and then edit the ruling as if it were new."""
    root = Path(guarded["root"])
    (root / guarded["ledger"]).unlink()
    assert "D-0001" in file_write("claude", guarded["sealed"], root)


@pytest.mark.parametrize("agent", AGENTS)
def test_a_plain_note_made_a_decision_note_by_any_route_is_refused(guarded, agent) -> None:
    """Forging a ruling: a note that says `type: decision`, written past `ask` and `rule`, would be sealed as
    the owner's by the watcher."""
    root = Path(guarded["root"])
    write(root / "Notes" / "plain.md", "---\ntype: note\n---\nSome text.\n")
    forged = "---\ntype: decision\nstatus: ruled\ntopics: [analytics]\nsummary: Analytics are fine after all.\n---\n"
    write(root / "Drafts" / "forged.md", forged)
    for command in (f"cat > Decisions/Tracking.md <<'EOF'\n{forged}EOF", "sed -i 's/type: note/type: decision/' Notes/plain.md",
                    "sed -i 's/type: note/type: Decision/' Notes/plain.md",  # read as `decision` (capitals are meant)
                    "cp Drafts/forged.md Decisions/", "mv Drafts/forged.md Decisions/Tracking.md"):
        reason = shell(agent, command, root)
        assert reason and "vault-tools ask" in reason, command
    if agent == "codex":
        added = "\n".join(["*** Begin Patch", "*** Add File: Decisions/new.md", *("+" + line for line in
                                                                             forged.splitlines()), "*** End Patch"])
        payload = {"hook_event_name": "PreToolUse", "tool_name": "apply_patch", "tool_input": {"command": added}}
        assert "vault-tools ask" in _refusal(agent, _hook(agent, "pre-tool-use", payload, root))
    else:
        tool, event = ("Edit", "pre-tool-use") if agent == "claude" else ("replace", "before-tool")
        payload = {"tool_name": tool, "tool_input": {"file_path": "Notes/plain.md", "old_string": "type: note",
                                                     "new_string": "type: decision"}}
        assert "vault-tools ask" in _refusal(agent, _hook(agent, event, payload, root))


def test_a_decision_note_with_crlf_or_quoted_keys_is_still_guarded(guarded) -> None:
    root = Path(guarded["root"])
    sealed = root / guarded["sealed"]
    sealed.write_bytes(sealed.read_bytes().replace(b"\n", b"\r\n"))
    quoted = write(root / "Decisions" / "Quoted.md", '---\n"type": decision\n"id": D-0099\n"status": open\n---\n')
    for rel in (guarded["sealed"], quoted.relative_to(root).as_posix()):
        assert file_write("claude", rel, root), rel
        assert shell("claude", f"rm '{rel}'", root), rel


def test_a_decision_note_whose_type_is_spelt_otherwise_is_still_guarded(guarded) -> None:
    """`type: dEcision`, and `decision` spelt with the long s (U+017F), read as `decision` (the model casefolds
    `type`): the vault counts such a note as a decision note, and the agent may not write it."""
    from vault_tools.reading import read_payload

    root = Path(guarded["root"])
    for number, spelt in ((97, "dEcision"), (98, "deci\u017fion")):
        note = write(root / "Decisions" / f"D-00{number} Spelt.md",
                     f"---\ntype: {spelt}\nid: D-00{number}\nstatus: open\nsummary: Which one?\n---\nBody\n")
        assert read_payload(root, note)[0] == "decision", spelt
        assert file_write("claude", note.relative_to(root).as_posix(), root), spelt


def test_links_into_the_record_do_not_open_a_way_around_it(guarded) -> None:
    root = Path(guarded["root"])
    (root / "LL").symlink_to(root / guarded["record_dir"])
    (root / "alias.jsonl").symlink_to(root / guarded["ledger"])
    for command in ("echo x > alias.jsonl", "rm -rf LL/", "echo x > LL/config.yaml", "echo x > LL/../Pinned/../" +
                    guarded["config"], f"ln {guarded['ledger']} hard.jsonl"):
        assert shell("claude", command, root), command
    assert file_write("claude", "alias.jsonl", root)


def test_a_fifo_named_like_a_note_does_not_hang_the_hook(guarded) -> None:
    root = Path(guarded["root"])
    os.mkfifo(root / "Notes.md")
    assert shell("claude", f"rm Notes.md {guarded['ledger']}", root)


def test_the_owners_templates_and_view_are_refused_to_the_agent_and_other_templates_are_not(guarded) -> None:
    """The templates `init --templates` writes and the Base of `init` are the owner's, as the pages are; a
    template of the owner's own carries `type: decision` for the notes made from it and is no decision note."""
    root = Path(guarded["root"])
    write(root / "Templates" / "Question.md", "---\ntype: decision\nstatus: open\ntopics: []\nsummary: \n---\n")
    for rel in ("Templates/Question.md", "Templates/Decision.md", "Pinned/Decisions.base"):
        reason = file_write("claude", rel, root)
        assert reason and "the owner's to change" in reason, rel
    assert "the owner's to change" in shell("claude", "sed -i 's/open/ruled/' Templates/Question.md", root)
    assert file_write("claude", "Templates/Ruling.md", root, content="---\ntype: decision\nstatus: ruled\n---\n") is None
    assert file_write("claude", "Templates/Meeting.md", root) is None


def test_the_guarded_template_names_are_the_packaged_templates() -> None:
    from vault_tools.agents.guard import _TEMPLATE_NAMES
    from vault_tools.starter import packaged_templates
    assert {name.casefold() for name in packaged_templates()} == _TEMPLATE_NAMES


def _forms_the_parser_reads(guarded: dict[str, str], root: Path, source: Path) -> list[str]:
    """Shell forms that write the record without naming it plainly: quoting, braces, loops, recursive copies and
    syncs, archives and patches into it, editors without a screen, forced checkouts."""
    import shutil
    import tarfile
    import zipfile

    shutil.copytree(root, source, ignore=shutil.ignore_patterns(".git"))
    with tarfile.open(source.parent / "old.tar", "w") as archive:
        archive.add(source / "Decisions", arcname="Decisions")
    with zipfile.ZipFile(source.parent / "old.zip", "w") as archive:
        for note in (source / "Decisions").iterdir():
            archive.write(note, f"Decisions/{note.name}")
    sealed = guarded["sealed"]
    diff = f"--- a/{sealed}\n+++ b/{sealed}\n@@ -1 +1 @@\n-a\n+b\n"
    (source.parent / "fix.diff").write_text(diff, encoding="utf-8")
    (source.parent / "plain.diff").write_text(diff.replace("a/", "").replace("b/", ""), encoding="utf-8")
    return [
        "rm -rf $'Decisions'", 'rm -rf $"Decisions"', "rm -rf {Decisions,x}", "rm -rf Decisions{,}",
        "rm -rf $'\\x44ecisions'", 'for f in Decisions/*; do rm "$f"; done', "for f in Decisions/*.md\ndo\n  rm $f\ndone",
        f"cp -r {source}/Decisions .", f"cp -R {source}/. .", f"rsync -a {source}/ ./",
        f"tar -xf {source.parent}/old.tar", f"tar xf {source.parent}/old.tar -C .", f"unzip -o {source.parent}/old.zip",
        f"patch -p1 -i {source.parent}/fix.diff", f"patch -p1 < {source.parent}/fix.diff",
        f"patch -i {source.parent}/plain.diff", f"patch -p1 --input={source.parent}/fix.diff",
        f"git apply {source.parent}/fix.diff",
        f"vim -es -c '%s/a/b/' -c wq '{sealed}'", f"ed '{sealed}'",
        "git checkout -f", "git checkout -f main", "git switch -f main", "git read-tree -u --reset HEAD",
    ]


@pytest.mark.parametrize("agent", AGENTS)
def test_shell_forms_that_hide_a_write_to_the_record_are_refused(guarded, agent, tmp_path) -> None:
    root = Path(guarded["root"])
    for command in _forms_the_parser_reads(guarded, root, tmp_path / "elsewhere" / "copy"):
        reason = shell(agent, command, root)
        assert reason and reason.startswith("This command writes") and "vault-tools" in reason, (command, reason)
    for harmless in (f"tar -tf {tmp_path}/elsewhere/old.tar", f"unzip -l {tmp_path}/elsewhere/old.zip",
                     f"cp -r {tmp_path}/elsewhere/copy/Decisions /tmp/", "git apply --check /tmp/none.diff",
                     "for f in Drafts/*; do rm \"$f\"; done", "echo {a,b}", "git checkout main",
                     # what cannot be read beforehand is not refused (the tripwire checks afterwards)
                     "git apply < /tmp/fix.patch", "cat /tmp/p | git apply", "git diff | git apply -R",
                     "wget https://example.org/x.tgz && tar -xzf x.tgz", "curl -s https://example.org/x | tar -xz",
                     "unzip missing.zip", "patch -p1 --input=/tmp/none.diff",
                     "for f in Decisions/*.md; do grep -c x \"$f\"; done; f=/tmp/s.txt; rm -f \"$f\""):
        assert shell(agent, harmless, root) is None, harmless


@pytest.mark.parametrize("agent", AGENTS)
def test_a_merge_copy_waiting_to_be_filed_is_guarded_as_a_kept_copy(guarded, agent) -> None:
    """The watcher records the outcome a merge copy holds: an agent that could write one there would record a
    ruling in the owner's name."""
    root = Path(guarded["root"])
    copy = ".vault-tools/merged/D-0002 ruled as a merge found it 0123456789ab.md"
    reason = file_write(agent, copy, root, content="an outcome, as the watcher would read it\n")
    assert reason and "vault-tools" in reason
    assert shell(agent, f"echo x > '{copy}'", root)
