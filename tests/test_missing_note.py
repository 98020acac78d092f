"""A sealed ruling whose note goes (deleted, moved where notes are not read, no longer a decision note) stays in
force in everything the agent reads, marked as missing its note, and the watcher and `lint --fix` write the note
back from the ledger's sealed text; a ruling the ledger closed is not brought back."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import Scripted, configure, kept_dir, made_id, note_path, vt, vt_here

ANALYTICS = "The site uses no analytics and no tracking of any kind."


@pytest.fixture
def sealed(vault) -> Path:
    assert vt_here("rule", "--topic", "analytics", "--summary", ANALYTICS, "--source", "chat", cwd=vault).code == 0
    return note_path(vault, "D-0001")


def lose(way: str, note: Path, vault: Path) -> None:
    if way == "deleted":
        note.unlink()
    elif way == "moved into the templates folder":
        (vault / "Templates").mkdir()
        shutil.move(note, vault / "Templates" / note.name)
    elif way == "moved into Obsidian's trash":
        (vault / ".trash").mkdir()
        shutil.move(note, vault / ".trash" / note.name)
    else:  # no longer a decision note
        note.write_bytes(note.read_bytes().replace(b"type: decision", b"type: note"))


WAYS = ["deleted", "moved into the templates folder", "moved into Obsidian's trash", "no longer a decision note"]


@pytest.mark.parametrize("way", WAYS)
def test_the_ruling_stays_in_force_for_the_agent_marked_as_missing_its_note(vault, sealed, way) -> None:
    lose(way, sealed, vault)
    looked = vt_here("lookup", "analytics", "--json", cwd=vault)
    assert looked.code == 0
    [found] = json.loads(looked.out)
    assert found["id"] == made_id(vault, "D-0001") and found["note_missing"] is True
    context = vt_here("context", cwd=vault).out
    assert ANALYTICS in context and f"{made_id(vault, 'D-0001')} (sealed ruling): its note is missing" in context
    question = {"cwd": str(vault), "tool_name": "AskUserQuestion",
                "tool_input": {"questions": [{"question": "Should the site add analytics?", "header": "Analytics"}]}}
    denial = json.loads(vt_here("hook", "claude", "pre-tool-use", cwd=vault, stdin=json.dumps(question)).out)
    assert "D-0001" in denial["hookSpecificOutput"]["permissionDecisionReason"]
    refused = vt_here("ask", "Should the site add analytics after all?", "--topic", "analytics", cwd=vault)
    assert refused.code == 1 and "D-0001" in refused.err


@pytest.mark.parametrize("way", WAYS)
def test_the_watcher_writes_the_note_back_and_keeps_what_stood_there(vault, sealed, way) -> None:
    original = sealed.read_bytes()
    changed = original.replace(b"type: decision", b"type: note")
    lose(way, sealed, vault)
    done = vt("watch", "--once", cwd=vault)  # a real process, as the owner or a pull's hook runs it
    assert done.code == 0, done.out + done.err
    assert "restored D-0001" in done.out + done.err
    assert sealed.read_bytes() == original
    kept = list(kept_dir(vault).glob("*.md")) if way == "no longer a decision note" else []
    assert [path.read_bytes() for path in kept] == ([changed] if kept else [])
    if way == "no longer a decision note":
        assert kept, "the changed note must be kept before it is replaced"
    lint = vt_here("lint", cwd=vault)
    assert lint.code == 0, lint.out
    assert "its note is missing" not in vt_here("context", cwd=vault).out


def test_lint_fix_writes_the_note_back_too(vault, sealed) -> None:
    original = sealed.read_bytes()
    sealed.unlink()
    assert "VT023" in vt_here("lint", cwd=vault).out
    fixed = vt_here("lint", "--fix", cwd=vault)
    assert "wrote back D-0001" in fixed.out + fixed.err
    assert sealed.read_bytes() == original and vt_here("lint", cwd=vault).code == 0


@pytest.mark.parametrize("closing", ["retract", "supersede"])
def test_a_ruling_the_ledger_closed_is_not_brought_back(vault, sealed, closing) -> None:
    if closing == "retract":
        assert vt_here("retract", "D-0001", "--reason", "Recorded in error, the owner never said this.",
                       cwd=vault).code == 0
    else:
        assert vt_here("rule", "--topic", "analytics", "--summary", "The site counts visits with a private counter.",
                       "--supersedes", "D-0001", "--reason", "The owner wants to know which articles are read.",
                       cwd=vault).code == 0
    sealed_now = note_path(vault, "D-0001")
    sealed_now.unlink()
    assert vt("watch", "--once", cwd=vault).code in (0, 1)
    assert not sealed_now.exists()
    assert ANALYTICS not in vt_here("context", cwd=vault).out


def test_a_running_watcher_waits_the_settle_window_before_writing_a_note_back(vault, sealed) -> None:
    """The owner halfway through retyping `type`, or a sync engine between the two halves of a rename, is
    not answered at once: the note goes back once its absence has lasted the sealing delay."""
    configure(vault, debounce_ms=300, settle=30)
    original = sealed.read_bytes()
    with Scripted(vault) as scripted:
        sealed.unlink()
        os.utime(sealed.parent, (scripted.now, scripted.now))
        scripted.deleted(sealed)
        scripted.advance(10)
        assert not sealed.exists() and "restored" not in scripted.kinds()
        scripted.advance(25)
        assert sealed.read_bytes() == original and "restored" in scripted.kinds()


def test_a_rename_carried_as_a_delete_then_a_create_leaves_one_note(vault, sealed) -> None:
    configure(vault, debounce_ms=300, settle=30)
    text = sealed.read_text(encoding="utf-8")
    with Scripted(vault) as scripted:
        sealed.unlink()
        os.utime(sealed.parent, (scripted.now, scripted.now))
        scripted.deleted(sealed)
        scripted.advance(5)  # the engine brings the other half of the rename
        moved = vault / "Archive" / "Analytics.md"
        moved.parent.mkdir()
        scripted.save(moved, text)
        scripted.advance(60)
        assert "restored" not in scripted.kinds() and not sealed.exists() and moved.read_text(encoding="utf-8") == text
    assert vt_here("lint", cwd=vault).code == 0


QUESTION = "Should the newsletter move to a paid platform?"


@pytest.mark.parametrize("closing", ["open", "withdrawn"])
@pytest.mark.parametrize("way", ["deleted", "moved into Obsidian's trash"])
def test_a_question_whose_note_goes_stays_in_view_and_is_written_back(vault, closing, way) -> None:
    """An open question (or a withdrawn one) is the owner's as much as a ruling: its note deleted, every reader
    keeps it from the text the ledger keeps, lint names it, and the watcher writes the note back."""
    assert vt_here("ask", QUESTION, "--topic", "newsletter-platform", cwd=vault).code == 0
    if closing == "withdrawn":
        assert vt_here("withdraw", "D-0001", "--reason", "The owner settled this on the phone, no ruling needed.",
                       cwd=vault).code == 0
    note = note_path(vault, "D-0001")
    original = note.read_bytes()
    lose(way, note, vault)
    context = json.loads(vt_here("context", "--json", cwd=vault).out)
    assert [q["id"] for q in context["open_questions"]] == ([made_id(vault, "D-0001")] if closing == "open" else [])
    page = vt_here("build", cwd=vault)
    assert page.code == 0
    assert made_id(vault, "D-0001") + " (" + closing + " question): its note is missing" in \
        (vault / "Pinned" / "Open questions.md").read_text(encoding="utf-8")
    lint = vt_here("lint", cwd=vault)
    assert lint.code == 1 and "VT057" in lint.out and "D-0001" in lint.out
    done = vt("watch", "--once", cwd=vault)
    assert done.code == 0, done.out + done.err
    assert note.read_bytes() == original
    assert vt_here("lint", cwd=vault).code == 0


def test_a_question_whose_note_lives_on_under_another_name_is_not_written_back(vault) -> None:
    """Renamed by hand (or renumbered on another clone), the note is the question's own: nothing is written at
    the old path."""
    assert vt_here("ask", QUESTION, "--topic", "newsletter-platform", cwd=vault).code == 0
    note = note_path(vault, "D-0001")
    note.rename(vault / "Decisions" / "Newsletter platform.md")
    assert vt("watch", "--once", cwd=vault).code in (0, 1)
    assert not note.exists()
    assert [p.name for p in (vault / "Decisions").glob("*.md")] == ["Newsletter platform.md"]
