"""What the owner types in Obsidian on two clones survives every kind of pull, and two outcomes become a conflict.

The owner closes one decision on two clones (answers it twice, retracts it twice, answers it on one and withdraws
it on the other, supersedes it on one and retracts it on the other). One clone's watcher recorded its outcome
before the commit; the other clone's outcome was committed before its watcher ran (an Obsidian Git auto-commit),
or not committed at all (`git pull --rebase --autostash`). Then a pull, by merge or rebase, either way round.
After it and `watch --once`, every word typed is in a note, the ledger or `vault-tools/kept/`, and two
different outcomes are a conflict that `context` shows and `settle` ends.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from vault_tools.vault import Vault

from .git_repo import git, git_env
from .test_machines import Clone, clone, make_origin

QUESTION = "Which evening should the community call be held?"
RULING = "The community call is on the first Monday of the month."


def clone_note(c: Clone, decision_id: str) -> Path:
    return next(p for p in (c.root / "Decisions").iterdir() if p.name.startswith(decision_id + " "))


def type_in(c: Clone, decision_id: str, status: str, *, summary: str | None = None, reason: str | None = None,
            body: str | None = None) -> None:
    """What the owner types in Obsidian: the status, and the answer or the reason."""
    path = clone_note(c, decision_id)
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"^status: \w+$", f"status: {status}", text, count=1, flags=re.M)
    if summary is not None:
        text = re.sub(r"^summary: .*$", "summary: " + json.dumps(summary), text, count=1, flags=re.M)
    if reason is not None:
        text = text.replace("\n---\n", f"\nreason: {json.dumps(reason)}\n---\n", 1)
    if body is not None:
        text = text.rstrip("\n") + f"\n\n## Ruling\n\n{body}\n"
    path.write_text(text, encoding="utf-8")


def commit_as_typed(c: Clone, message: str) -> None:
    """A commit made before any watcher saw the change (Obsidian Git's auto-commit)."""
    git(c.root, "add", "-A")
    git(c.root, "commit", "-q", "--no-verify", "-m", message)


def pull(c: Clone, other: Clone, mode: str) -> None:
    args = {"merge": ["--no-rebase"], "rebase": ["--rebase"], "autostash": ["--rebase", "--autostash"]}[mode]
    done = subprocess.run(["git", "pull", "-q", *args, "--no-edit", str(other.root), "main"], cwd=c.root,
                          capture_output=True, text=True, env=git_env(), timeout=120)
    assert done.returncode == 0, f"git pull stopped: {done.stdout}{done.stderr}"
    assert "<<<<<<<" not in note_text_everywhere(c), "a note was left with git's markers"
    c.vt("watch", "--once", expect=None)


def note_text_everywhere(c: Clone) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in (c.root / "Decisions").glob("*.md"))


def everything_kept(c: Clone) -> str:
    """Every note, every text and reason the ledger holds, every kept copy: where a typed word may survive."""
    vault = Vault(c.root)
    found = [note_text_everywhere(c)]
    found += [f"{e.text or ''}\n{e.reason or ''}" for e in vault.ledger.read()]
    kept = vault.layout.kept_dir
    found += [p.read_text(encoding="utf-8") for p in kept.glob("*.md")] if kept.is_dir() else []
    return "\n".join(found)


def conflicts(c: Clone) -> list[dict[str, str]]:
    return json.loads(c.vt("context", "--json")[1])["conflicts"]


@pytest.fixture
def two_with_question(tmp_path, capsys):
    origin = make_origin(tmp_path, capsys)
    a, b = clone(origin, "A"), clone(origin, "B")
    question = a.ask(QUESTION, "community-call")
    a.commit("asked")
    b.vt("watch", "--once")
    subprocess.run(["git", "pull", "-q", "--no-rebase", str(a.root), "main"], cwd=b.root, env=git_env(), check=True)
    return a, b, question


@pytest.fixture
def two_with_ruling(tmp_path, capsys):
    origin = make_origin(tmp_path, capsys)
    a, b = clone(origin, "A"), clone(origin, "B")
    ruling = a.rule("--topic", "community-call", "--summary", RULING)
    a.commit("ruled")
    subprocess.run(["git", "pull", "-q", "--no-rebase", str(a.root), "main"], cwd=b.root, env=git_env(), check=True)
    return a, b, ruling


def recorded_here_typed_there(a: Clone, b: Clone, mode: str, puller: str) -> Clone:
    """A's outcome recorded by its watcher and committed; B's committed as typed (or, with autostash, not
    committed); then one pulls the other. Returns the clone that pulled."""
    a.vt("watch", "--once", expect=None)
    a.commit("recorded on A")
    if mode != "autostash":
        commit_as_typed(b, "typed on B")
    if puller == "A":
        if mode == "autostash":
            commit_as_typed(b, "typed on B")
        pull(a, b, mode)
        return a
    pull(b, a, mode)
    return b


MODES = ["merge", "rebase", "autostash"]


@pytest.mark.parametrize("mode", MODES)
def test_a_question_answered_on_two_clones_keeps_both_answers_as_a_conflict(two_with_question, mode):
    a, b, question = two_with_question
    type_in(a, question, "ruled", summary="Community calls are on Thursdays at eight.", body="Thursdays at eight.")
    type_in(b, question, "ruled", summary="Community calls are on Tuesdays at seven.", body="Tuesdays at seven.")
    pulled = recorded_here_typed_there(a, b, mode, "B")
    kept = everything_kept(pulled)
    assert "Tuesdays at seven" in kept and "Thursdays at eight" in kept
    [conflict] = conflicts(pulled)
    assert conflict["id"] == question and "Tuesdays" in conflict["what"] and "Thursdays" in conflict["what"]
    choice = next(c for c in conflict["settle"].split("--keep ")[1].split(" ")[0].split("|")
                  if "Tuesdays" in conflict["what"].split(c + ": ")[1].split(";")[0])
    pulled.vt("settle", question, "--keep", choice, "--reason", "The owner chose Tuesdays when asked again.")
    assert not conflicts(pulled)
    assert "Tuesdays at seven" in clone_note(pulled, question).read_text(encoding="utf-8")
    code, out, _ = pulled.vt("lint", expect=None)
    assert code == 0, out


@pytest.mark.parametrize("puller", ["A", "B"])
def test_answers_typed_on_two_clones_meet_as_a_conflict_whichever_clone_pulls(two_with_question, puller):
    a, b, question = two_with_question
    type_in(a, question, "ruled", summary="Community calls are on Thursdays at eight.", body="Weekly.")
    type_in(b, question, "ruled", summary="Community calls are on Tuesdays at seven.", body="Weekly.")
    pulled = recorded_here_typed_there(a, b, "rebase", puller)
    assert {"Tuesdays at seven", "Thursdays at eight"} <= set(re.findall(r"\w+days at \w+", everything_kept(pulled)))
    assert len(conflicts(pulled)) == 1


@pytest.mark.parametrize("mode", MODES)
def test_an_answer_on_one_clone_and_a_withdrawal_on_the_other_are_a_conflict(two_with_question, mode):
    a, b, question = two_with_question
    type_in(a, question, "ruled", summary="Community calls are on Thursdays at eight.", body="Thursdays at eight.")
    type_in(b, question, "withdrawn", reason="The community call is paused until the spring.")
    pulled = recorded_here_typed_there(a, b, mode, "B")
    kept = everything_kept(pulled)
    assert "paused until the spring" in kept and "Thursdays at eight" in kept
    [conflict] = conflicts(pulled)
    assert conflict["id"] == question and "withdrawn" in conflict["what"]
    code, _, err = pulled.vt("gate", question, expect=None)
    assert code == 1 and "in conflict: ruled on one clone" in err and "edited in place" not in err


@pytest.mark.parametrize("mode", MODES)
def test_a_ruling_retracted_on_two_clones_keeps_both_reasons(two_with_ruling, mode):
    a, b, ruling = two_with_ruling
    type_in(a, ruling, "retracted", reason="Recorded in error: the call was never agreed.")
    type_in(b, ruling, "retracted", reason="Retracted on the laptop: the owner has not decided yet.")
    pulled = recorded_here_typed_there(a, b, mode, "B")
    kept = everything_kept(pulled)
    assert "the call was never agreed" in kept and "the owner has not decided yet" in kept
    assert json.loads(pulled.vt("show", ruling, "--json")[1])["status"] == "retracted"


@pytest.mark.parametrize("mode", MODES)
def test_a_ruling_superseded_on_one_clone_and_retracted_on_the_other_is_a_conflict(two_with_ruling, mode):
    a, b, ruling = two_with_ruling
    successor = a.rule("--topic", "community-call", "--summary",
                       "The community call moves to the last Friday of the month.",
                       "--supersedes", ruling, "--reason", "Mondays clash with the newsletter deadline.")
    type_in(b, ruling, "retracted", reason="Retracted on the laptop: the owner has not decided yet.")
    pulled = recorded_here_typed_there(a, b, mode, "B")
    kept = everything_kept(pulled)
    assert "the owner has not decided yet" in kept and "last Friday" in kept
    [conflict] = conflicts(pulled)
    assert conflict["id"] == ruling and "retracted" in conflict["what"] and "superseded" in conflict["what"]
    keep = successor if mode == "rebase" else "retracted"  # both are choices the conflict offers
    assert f"--keep {successor}|retracted " in conflict["settle"]
    pulled.vt("settle", ruling, "--keep", keep, "--reason", "The owner says which closing stands, asked again.")
    assert not conflicts(pulled)
    shown = json.loads(pulled.vt("show", ruling, "--json")[1])
    assert shown["status"] == ("superseded" if keep == successor else "retracted")
    assert json.loads(pulled.vt("show", successor, "--json")[1])["status"] == "ruled"


def test_every_reader_says_a_decision_in_conflict_is_in_conflict_with_both_outcomes(two_with_question):
    """Answered differently on two clones: no reader presents either answer as the one in effect."""
    from .helpers import hook
    from .test_mcp import session_calls

    a, b, question = two_with_question
    type_in(a, question, "ruled", summary="Community calls are on Thursdays at eight.", body="Thursdays at eight.")
    type_in(b, question, "ruled", summary="Community calls are on Tuesdays at seven.", body="Tuesdays at seven.")
    pulled = recorded_here_typed_there(a, b, "merge", "B")

    def says_both(text: str) -> None:
        assert "in conflict" in text and "Thursdays at eight" in text and "Tuesdays at seven" in text, text
        assert f"vault-tools settle {question} --keep ruling-1|ruling-2" in text, text

    for args in (["lookup", "community-call"], ["show", question], ["search", "community", "call"],
                 ["list", "--status", "ruled"]):
        says_both(pulled.vt(*args)[1])
    for args in (["lookup", "community-call", "--json"], ["show", question, "--json"]):
        found = json.loads(pulled.vt(*args)[1])
        says_both((found[0] if isinstance(found, list) else found)["conflict"])
    says_both(json.loads(pulled.vt("search", "community", "call", "--json")[1])[0]["conflict"])
    code, _, err = pulled.vt("gate", question, expect=None)
    assert code == 1 and "edited in place" not in err
    says_both(err)
    context = json.loads(pulled.vt("context", "--json")[1])
    says_both(next(r for r in context["rulings"] if r["id"] == question)["conflict"])
    assert "IN CONFLICT" in context["text"]
    pages = {name: (pulled.root / "Pinned" / f"{name}.md").read_text(encoding="utf-8")
             for name in ("Open questions", "Decisions log")}
    assert "IN CONFLICT" in pages["Decisions log"]  # its line among the rulings, and the conflict to settle:
    assert f"vault-tools settle {question} --keep ruling-1|ruling-2" in pages["Open questions"]
    code, _, err = pulled.vt("ask", "What evening suits the community call?", "--topic", "call-evening", expect=None)
    assert code == 1
    says_both(err)

    told = hook("user-prompt-submit", {"prompt": "When is the community call this month?"}, pulled.root)
    said = told["hookSpecificOutput"]["additionalContext"]
    says_both(said)
    again = hook("user-prompt-submit", {"prompt": "When is the community call this month?"}, pulled.root)
    assert again == told  # the second call reads the hooks' snapshot from its cache: the conflict is kept
    assert "Neither outcome stands in the record until the owner says which" in said and "new ruling" not in said
    asked = hook("pre-tool-use", {"tool_name": "AskUserQuestion", "tool_input": {"questions": [
        {"question": "Which evening should the community call be held?"}]}}, pulled.root)
    assert asked["hookSpecificOutput"].get("permissionDecision") != "deny"
    says_both(asked["hookSpecificOutput"]["additionalContext"])

    # the readers of the past and of the whole record too: as-of, export (both formats), history and stats
    today = "2099-01-01"  # the end of a day to come: everything recorded by then
    for args in (["as-of", today], ["as-of", today, "--json"], ["history", question], ["history", question, "--json"],
                 ["export"], ["export", "--format", "md"]):
        says_both(pulled.vt(*args)[1])
    exported = [json.loads(line) for line in pulled.vt("export")[1].splitlines() if line.strip()]
    record = next(item for item in exported if item.get("id") == question)
    assert record["status"] != "withdrawn" and "in conflict" in record["conflict"], record
    stats = pulled.vt("stats")[1]
    assert "in conflict: 1" in stats, stats
    assert json.loads(pulled.vt("stats", "--json")[1])["in_conflict"] == [question]

    results = session_calls(pulled.root, [("lookup", {"topics": ["community-call"]}), ("show", {"id": question}),
                                          ("search", {"query": "community call"}), ("gate", {"id": question})])
    for is_error, text in results:
        assert not is_error
        says_both(text)
    assert json.loads(results[3][1])["passed"] is False


def test_a_decision_note_outside_the_decisions_folder_merges_with_the_notes_driver(two_with_question):
    """The README lets a decision note live in any folder: a pull meets it as it meets one in Decisions/. Any other
    note merges as git merges it, markers and all where both sides changed one line."""
    a, b, question = two_with_question
    for each in (a, b):
        (each.root / "Projects").mkdir(exist_ok=True)
    git(a.root, "mv", str(clone_note(a, question).relative_to(a.root)), f"Projects/{question} Community call.md")
    (a.root / "Projects" / "Plan.md").write_text("# Plan\n\nStart in March.\n", encoding="utf-8")
    a.commit("moved to Projects")
    subprocess.run(["git", "pull", "-q", "--no-rebase", str(a.root), "main"], cwd=b.root, env=git_env(), check=True)
    moved = f"Projects/{question} Community call.md"
    for each, words in ((a, "Thursdays at eight"), (b, "Tuesdays at seven")):
        path = each.root / moved
        path.write_text(path.read_text(encoding="utf-8").replace("status: open", "status: ruled").replace(
            "## Question", f"## Ruling\n\n{words}.\n\n## Question"), encoding="utf-8")
        (each.root / "Projects" / "Plan.md").write_text(f"# Plan\n\nStart in {words}.\n", encoding="utf-8")
    a.vt("watch", "--once", expect=None)
    a.commit("answered on A")
    commit_as_typed(b, "answered on B")
    done = subprocess.run(["git", "pull", "-q", "--no-rebase", "--no-edit", str(a.root), "main"], cwd=b.root,
                          capture_output=True, text=True, env=git_env(), timeout=120)
    assert done.returncode == 1 and "Projects/Plan.md" in done.stdout + done.stderr  # the plain note: git's way
    assert moved not in git(b.root, "diff", "--name-only", "--diff-filter=U").stdout  # the decision note merged
    assert "<<<<<<<" in (b.root / "Projects" / "Plan.md").read_text(encoding="utf-8")
    assert "<<<<<<<" not in (b.root / moved).read_text(encoding="utf-8")
    (b.root / "Projects" / "Plan.md").write_text("# Plan\n\nStart in the spring.\n", encoding="utf-8")
    commit_as_typed(b, "merged")
    b.vt("watch", "--once", expect=None)
    _, out, _ = b.vt("lint", expect=None)
    assert "VT021" not in out and "VT026" in out  # two answers to settle, not a sealed note edited in place


def test_init_in_a_vault_set_up_before_adds_the_notes_line_before_the_pages_lines(tmp_path, capsys):
    """A `.gitattributes` written by an earlier `init` names Decisions/ only: `init` adds the line for every note
    where the pinned pages' own line still comes after it (in git, a later line wins)."""
    origin = make_origin(tmp_path, capsys)
    attributes = origin.root / ".gitattributes"
    old = ("vault-tools/ledger/*.jsonl merge=union\nDecisions/**/*.md merge=vault-tools-notes\n"
           "Pinned/*.md merge=vault-tools-pages\nvault-tools/pages/*.json merge=vault-tools-pages\n")
    attributes.write_text(old, encoding="utf-8")
    origin.vt("init")
    lines = attributes.read_text(encoding="utf-8").splitlines()
    assert lines.index("*.md merge=vault-tools-notes") < lines.index("Pinned/*.md merge=vault-tools-pages")
    checked = git(origin.root, "check-attr", "merge", "--", "Pinned/Decisions log.md", "Projects/D-0009 X.md").stdout
    assert "Pinned/Decisions log.md: merge: vault-tools-pages" in checked
    assert "Projects/D-0009 X.md: merge: vault-tools-notes" in checked


@pytest.mark.parametrize("mode", ["merge", "rebase"])
def test_a_note_from_a_template_numbered_on_both_clones_keeps_one_record_after_pulls_both_ways(tmp_path, capsys, mode):
    """The owner's note without an id is committed on A and pulled by B before either watcher numbered it; each
    watcher gives it an id. After pulls both ways, both clones hold one open question, the other closed in its note
    (withdrawn in place in git: a removed note would stop a pull), and nothing typed is lost."""
    origin = make_origin(tmp_path, capsys, seal_delay_seconds=0)
    a, b = clone(origin, "A"), clone(origin, "B")
    typed = "---\ntype: decision\nid:\nstatus: open\ntopics: [back-issues]\nsummary: Should the shop sell printed back issues?\n---\n"
    (a.root / "Decisions" / "Untitled.md").write_text(typed, encoding="utf-8")
    commit_as_typed(a, "made from the template")
    subprocess.run(["git", "pull", "-q", "--no-rebase", str(a.root), "main"], cwd=b.root, env=git_env(), check=True)
    for each in (a, b):
        past = time.time() - 5
        for path in (each.root / "Decisions").glob("*.md"):
            os.utime(path, (past, past))
        each.vt("watch", "--once", expect=None)
        each.commit("numbered")
    pull(b, a, mode)
    b.commit("after pull")
    pull(a, b, mode)
    a.commit("after pull")
    for each in (a, b):
        opened = [q["summary"] for q in json.loads(each.vt("context", "--json")[1])["open_questions"]]
        assert opened == ["Should the shop sell printed back issues?"], (each.root.name, opened)
        assert "Should the shop sell printed back issues?" in everything_kept(each)
    assert a.decision_texts() == b.decision_texts()
