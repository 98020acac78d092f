"""A ruling on a settled topic says whether it replaces the current one; the owner says it in Obsidian too.

Also: retracting a sealed ruling in Obsidian is a lifecycle step, not an edit to undo.
"""
from __future__ import annotations

import json
import os
import re
import time
from functools import partial

from vault_tools import note_edits, notes

from .helpers import (
    Running,
    configure,
    hook,
    ledger_file,
    made_id,
    note_path,
    obsidian_save,
    snapshot,
    succeeded,
    vt_here,
    write,
)

vt = partial(vt_here, counted=True)  # ids shown by their counter, as a test of anything but the tags compares them

SIGNUP = "Every article footer carries the newsletter signup link."
BIO_ONLY = "No promotion in article footers: only the author bio."
GUESTS = "Article footers of guest posts also credit the guest's own site."
WHY = "Readers complained about the signup line under every article."


def _saved_a_while_ago(path, text: str) -> None:
    """The owner's save, quiet for longer than the watcher's debounce and sealing delay."""
    path.write_text(text)
    past = time.time() - 600
    os.utime(path, (past, past))


def _page(vault, name: str) -> str:
    return (vault / "Pinned" / f"{name}.md").read_text(encoding="utf-8")


def test_the_footer_story_through_the_command_line(vault):
    succeeded(vt("rule", "--topic", "article-footer", "--summary", SIGNUP, "--source", "chat",
           "--ruled-at", "2026-07-17T08:30:00", cwd=vault))
    before = snapshot(vault)
    refused = vt("rule", "--topic", "article-footer", "--summary", BIO_ONLY, "--source", "chat", cwd=vault)
    assert refused.code == 1 and refused.out == ""
    assert "say whether this one replaces" in refused.err and "D-0001 ruled 2026-07-17" in refused.err
    assert SIGNUP in refused.err
    assert "--supersedes D-0001 --reason" in refused.err and "--alongside D-0001" in refused.err
    assert snapshot(vault) == before
    near = vt("rule", "--topic", "article-footers", "--summary", BIO_ONLY, "--source", "chat", cwd=vault)
    assert near.code == 1 and "matched article-footer" in near.err

    succeeded(vt("rule", "--topic", "article-footer", "--summary", BIO_ONLY, "--source", "chat",
           "--supersedes", "D-0001", "--reason", WHY, cwd=vault))
    found = json.loads(vt("lookup", "article-footer", "--json", cwd=vault).out)
    assert [item["id"] for item in found] == ["D-0002"]  # the old answer is no longer current

    # A narrower follow-up that does not replace it stands alongside, recorded in the note and the ledger.
    succeeded(vt("rule", "--topic", "article-footer", "--summary", GUESTS, "--source", "chat",
           "--alongside", "D-0002", cwd=vault))
    note = note_path(vault, "D-0003").read_text()
    assert f'alongside:\n  - "[[{made_id(vault, "D-0002")} No promotion in article footers only the author bio]]"' in note
    ruled = [json.loads(line) for line in ledger_file(vault).read_text().splitlines()]
    assert next(e for e in ruled if e["event"] == "ruled" and e["id"] == made_id(vault, "D-0003"))["alongside"] == [
        made_id(vault, "D-0002")]
    found = json.loads(vt("lookup", "article-footer", "--json", cwd=vault).out)
    assert {item["id"]: item["alongside"] for item in found} == {"D-0003": ["D-0002"], "D-0002": ["D-0003"]}
    assert all(item["not_said_whether_replaces"] == [] for item in found)
    looked = vt("lookup", "article-footer", cwd=vault).out
    assert "stands alongside D-0002" in looked and "NOT SAID" not in looked
    shown = vt("show", "D-0003", cwd=vault).out
    assert "alongside: [[D-0002 No promotion in article footers only the author bio]]" in shown
    succeeded(vt("build", cwd=vault))
    assert succeeded(vt("lint", cwd=vault)).out == ""


def test_alongside_names_current_rulings_only(vault):
    succeeded(vt("rule", "--topic", "article-footer", "--summary", SIGNUP, "--source", "chat", cwd=vault))
    succeeded(vt("rule", "--topic", "article-footer", "--summary", BIO_ONLY, "--source", "chat",
           "--supersedes", "D-0001", "--reason", WHY, cwd=vault))
    before = snapshot(vault)
    stale = vt("rule", "--topic", "article-footer", "--summary", GUESTS, "--alongside", "D-0001", cwd=vault)
    assert stale.code == 1 and "D-0001 is superseded" in stale.err
    both = vt("rule", "--topic", "article-footer", "--summary", GUESTS, "--alongside", "D-0002",
              "--supersedes", "D-0002", "--reason", WHY, cwd=vault)
    assert both.code == 2 and "both supersede and stand alongside D-0002" in both.err
    assert snapshot(vault) == before


HAND_MADE = """---
type: decision
id: D-0002
status: ruled
topics: [article-footer]
summary: "No promotion in article footers: only the author bio."
ruled_at: 2026-10-07T09:00:00
ruled_by: owner
source: chat
---
## Ruling

Only the author bio from now on.
"""


def _owner_rules_in_obsidian(vault):
    succeeded(vt("rule", "--topic", "article-footer", "--summary", SIGNUP, "--source", "chat",
           "--ruled-at", "2026-07-17T08:30:00", cwd=vault))
    path = write(vault / "Decisions" / "D-0002 Bio only.md", HAND_MADE)
    succeeded(vt("seal", cwd=vault))
    succeeded(vt("build", cwd=vault))
    return path


def test_a_ruling_made_in_obsidian_is_sealed_but_flagged_until_the_owner_says(vault):
    path = _owner_rules_in_obsidian(vault)
    open_page = _page(vault, "Open questions")
    section = open_page[open_page.index("## Not said whether it replaces"):]
    assert "has not said whether it replaces [[D-0001" in section
    assert f"newer, 2026-10-07: {BIO_ONLY}".replace(":", "\\:", 0) in section.replace("\\", "")
    assert "older, 2026-07-17: Every article footer carries the newsletter signup link." in section
    log = _page(vault, "Decisions log")
    old_line = next(line for line in log.splitlines() if f"|{made_id(vault, 'D-0001')}]]" in line)
    assert "D-0002, newer, has not said whether it replaces this" in old_line  # never the plain answer
    context = vt("context", "--budget", "claude-hook", cwd=vault).out
    assert "D-0002, newer, has not said whether it replaces this" in context
    assert "## Not said whether it replaces (1)" in context
    assert f"- D-0002 (2026-10-07: {BIO_ONLY}) has not said whether it replaces D-0001 (2026-07-17: {SIGNUP})" in context
    assert json.loads(vt("context", "--json", cwd=vault).out)["not_said_whether_replaces"] == [
        {"newer": "D-0002", "older": "D-0001", "topic": "article-footer"}]
    linted = vt("lint", cwd=vault)
    assert linted.code == 1 and "VT016" in linted.out and "D-0002 has not said whether it replaces D-0001" in linted.out

    # The owner says both stand, in Obsidian: a lifecycle step, recorded; the note keeps what they typed.
    said = note_edits.with_fields(notes.read_note(path), {"alongside": [f"[[{made_id(vault, 'D-0001')} Every article footer carries the newsletter signup link.]]"]})
    _saved_a_while_ago(path, said)
    done = succeeded(vt("watch", "--once", cwd=vault))
    assert "related" in done.err and "stands alongside D-0001" in done.err
    assert path.read_text() == said  # not restored: saying how rulings relate is not an edit
    assert "Not said whether it replaces" not in _page(vault, "Open questions")
    succeeded(vt("build", cwd=vault))
    assert succeeded(vt("lint", cwd=vault)).out == ""
    events = [json.loads(line) for line in ledger_file(vault).read_text().splitlines()]
    assert events[-1]["event"] == "amended" and events[-1]["alongside"] == [made_id(vault, "D-0001")]


def test_the_owner_says_it_replaces_the_older_one_in_obsidian(vault):
    path = _owner_rules_in_obsidian(vault)
    said = note_edits.with_fields(notes.read_note(path), {
        "supersedes": [f"[[{made_id(vault, 'D-0001')} Every article footer carries the newsletter signup link.]]"], "reason": WHY})
    _saved_a_while_ago(path, said)
    done = succeeded(vt("lint", "--fix", cwd=vault))
    assert "D-0002 related: supersedes D-0001" in done.err
    old = note_path(vault, "D-0001").read_text()
    assert "status: superseded" in old and f"reason: {WHY}" in old
    assert [item["id"] for item in json.loads(vt("lookup", "article-footer", "--json", cwd=vault).out)] == ["D-0002"]
    succeeded(vt("build", cwd=vault))
    assert succeeded(vt("lint", cwd=vault)).out == ""


def test_the_owner_ticks_alongside_all_in_obsidian_and_unticking_it_is_an_edit(vault):
    """The checkbox says the ruling stands beside every current ruling on its topics: a lifecycle step like a
    link added to `alongside`, recorded, and the flag is gone; taking it back changes what the ruling said."""
    path = _owner_rules_in_obsidian(vault)
    said = note_edits.with_fields(notes.read_note(path), {"alongside_all": True})
    _saved_a_while_ago(path, said)
    done = succeeded(vt("watch", "--once", cwd=vault))
    assert "stands alongside every current ruling on its topics" in done.err
    assert path.read_text() == said and "alongside_all: true" in said
    succeeded(vt("build", cwd=vault))
    assert succeeded(vt("lint", cwd=vault)).out == ""
    events = [json.loads(line) for line in ledger_file(vault).read_text().splitlines()]
    assert events[-1]["event"] == "amended"
    _saved_a_while_ago(path, said.replace("alongside_all: true", "alongside_all: false"))
    succeeded(vt("watch", "--once", cwd=vault))
    assert "alongside_all: true" in path.read_text()  # put back; the typed change is kept as a proposed revision


def test_relate_says_it_from_the_command_line_and_taking_a_relation_back_is_an_edit(vault):
    path = _owner_rules_in_obsidian(vault)
    given = re.search(r"^id: (\S+)$", path.read_text(), flags=re.M).group(1)  # the watcher gave it its id
    succeeded(vt("relate", given, "--alongside", "D-0001", cwd=vault))
    succeeded(vt("build", cwd=vault))
    assert succeeded(vt("lint", cwd=vault)).out == ""
    # Removing the link again changes what the sealed ruling said: a revision, as any edit.
    text = path.read_text()
    taken_back = re.sub(r"alongside:\n(  - .*\n)+", "", text)
    _saved_a_while_ago(path, taken_back)
    done = succeeded(vt("watch", "--once", cwd=vault))
    assert "edit-rejected" in done.err and path.read_text() == text


def _retractable(vault):
    succeeded(vt("rule", "--topic", "pricing", "--summary", "The starter plan costs 9 EUR a month from January.",
           "--source", "chat", cwd=vault))
    succeeded(vt("build", cwd=vault))
    return note_path(vault, "D-0001")


def test_retracting_in_obsidian_is_recorded_with_the_watcher_running(vault):
    configure(vault)
    path = _retractable(vault)
    with Running(vault) as watcher:
        retracted = note_edits.with_fields(notes.read_note(path), {
            "status": "retracted", "reason": "Recorded in error: the owner quoted last year's price list."})
        obsidian_save(path, retracted)
        watcher.until(lambda: "retracted" in watcher.kinds())
        watcher.until(lambda: "Retracted rulings (1)" in _page(vault, "Decisions archive"))
    assert path.read_text() == retracted  # the owner's change stands
    assert "edit-rejected" not in watcher.kinds()
    assert not list((vault / ".vault-tools").glob("kept/*"))
    events = [json.loads(line) for line in ledger_file(vault).read_text().splitlines()]
    assert events[-1]["event"] == "retracted" and events[-1]["actor"] == "owner"
    assert " ruled " not in vt("lookup", "pricing", cwd=vault).out  # what stands: nothing (it says it was retracted)
    succeeded(vt("build", cwd=vault))
    assert succeeded(vt("lint", cwd=vault)).out == ""


def test_a_retraction_without_a_good_reason_is_shown_not_reverted(vault):
    path = _retractable(vault)
    retracted = note_edits.with_fields(notes.read_note(path), {"status": "retracted", "reason": "wrong"})
    _saved_a_while_ago(path, retracted)
    done = vt("watch", "--once", cwd=vault)
    assert "retraction is not applied until `reason` says why" in done.err
    assert path.read_text() == retracted  # never silently put back
    assert [d["id"] for d in json.loads(vt("lookup", "pricing", "--json", cwd=vault).out)] == ["D-0001"]
    succeeded(vt("build", cwd=vault))
    assert "reason" in _page(vault, "Open questions").split("## Problems", 1)[1]


def test_a_retraction_typed_with_other_changes_becomes_a_revision_and_says_why(vault):
    path = _retractable(vault)
    sealed = path.read_text()
    typed = note_edits.with_fields(notes.read_note(path), {
        "status": "retracted", "reason": "Recorded in error: the owner quoted last year's price list.",
        "summary": "The starter plan costs 12 EUR a month from January."})
    _saved_a_while_ago(path, typed)
    done = succeeded(vt("watch", "--once", cwd=vault))
    assert "edit-rejected" in done.err and path.read_text() == sealed
    revision = note_path(vault, "D-0002").read_text()
    assert "The retraction typed with it is not applied" in revision and "status: open" in revision
    assert "The retraction typed with it is not applied" in _page(vault, "Open questions")


FOOTER_BIO = "Every article footer carries the author bio."
BOTTOM_BIO = "The bottom of every article carries the author bio."  # the same matter, another topic


def test_a_ruling_typed_in_obsidian_on_another_topics_matter_is_flagged_where_the_agent_reads(vault):
    """`rule` refuses BOTTOM_BIO beside FOOTER_BIO as the same matter; typed in Obsidian and sealed by the watcher,
    the same check flags it in lint (VT044), the context and session-start hook, the pages and lookup, until it
    says how it stands to the other."""
    succeeded(vt("rule", "--topic", "article-footer", "--summary", FOOTER_BIO, "--source", "chat", cwd=vault))
    refused = vt("rule", "--topic", "article-endings", "--summary", BOTTOM_BIO, "--source", "chat", cwd=vault)
    assert refused.code == 1 and "is the matter of D-0001" in refused.err
    path = vault / "Decisions" / "D-0002 Bottom.md"
    _saved_a_while_ago(path, "---\ntype: decision\nstatus: ruled\ntopics: [article-endings]\n"
                             f"summary: {BOTTOM_BIO}\nruled_at: 2026-10-07T09:00:00\nruled_by: owner\n---\n"
                             f"## Ruling\n\n{BOTTOM_BIO}\n")
    succeeded(vt("watch", "--once", cwd=vault))
    flagged = "has not said whether it replaces D-0001"
    assert "VT044" in vt("lint", cwd=vault).out
    assert flagged in vt("context", cwd=vault).out
    started = hook("session-start", {}, vault)
    assert flagged in started["hookSpecificOutput"]["additionalContext"]
    assert "has not said whether it replaces [[D-0001" in _page(vault, "Open questions")
    assert "NOT SAID whether one replaces the other: D-0001" in vt("lookup", "article-endings", cwd=vault).out
    # said: it stands beside it; nothing is flagged any more
    given = re.search(r"^id: (\S+)$", path.read_text(), flags=re.M).group(1)  # the watcher gave it its id
    succeeded(vt("relate", given, "--alongside", "D-0001", cwd=vault))
    assert flagged not in vt("context", cwd=vault).out and "VT044" not in vt("lint", cwd=vault).out
