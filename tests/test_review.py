"""`vault-tools review`: proposals the owner ticks; nothing changes until `--apply`, and then only what was ticked."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.helpers import ask_at, config_file, ledger_events, made_id, snapshot, topics_file, write

TODAY = "2026-08-01"


@pytest.fixture
def messy(vault, cli):
    """One of each thing a review proposes, and one pair the owner already settled.

    D-0001 footer ruling (article-footer); D-0002 on article-footers, a near spelling: merge; and D-0002
      does not say whether it replaces D-0001 (hand-made, as an import might leave it): a pair to settle
    D-0003 on deploy-day, revisit_by 2026-07-10 passed
    D-0004 on deploy-days ... alongside D-0003: settled by the owner, never proposed
    D-0006 says in its text that it replaces D-0005 without linking it
    D-0007 an open question asked 2026-07-01: past stale_after_days (14) on 08-01
    """
    def ok(*args: str) -> None:
        result = cli(*args)
        assert result.code == 0, result.err

    ok("rule", "--summary", "Every footer carries the newsletter link.", "--topic", "article-footer",
       "--ruled-at", "2026-07-01T09:00:00")
    ok("seal")
    write(vault / "Decisions" / "D-0002 Footer bio.md", "\n".join([
        "---", "type: decision", "id: D-0002", "status: ruled", "topics: [article-footers]",
        "summary: Footers show the author bio under each article.", "ruled_at: 2026-07-02T09:00:00",
        "ruled_by: owner", "source: chat", "---", "## Ruling", "", "Footers show the author bio.", ""]))
    ok("seal")
    ok("rule", "--summary", "Deploys happen on any weekday but Friday.", "--topic", "deploy-day",
       "--ruled-at", "2026-07-03T09:00:00", "--revisit-by", "2026-07-10")
    ok("rule", "--summary", "Hotfixes may be deployed on any day of the week.", "--topic", "deploy-day",
       "--ruled-at", "2026-07-04T09:00:00", "--alongside", "D-0003")
    ok("rule", "--summary", "Comments are moderated by the author of the article.", "--topic", "comments",
       "--ruled-at", "2026-07-05T09:00:00")
    ok("rule", "--summary", "Release notes and comments are handled by the editor of the week.", "--topic",
       "release-notes", "--ruled-at", "2026-07-06T09:00:00", "--body", "This replaces D-0005: the rota is gone.")
    ask_at(vault, "2026-07-01T09:00:00", "Which newsletter tool should we move to?", "newsletter")
    return vault


def review_note(vault: Path) -> Path:
    found = list((vault / "Pinned").glob("Review *.md"))
    assert len(found) == 1, found
    return found[0]


def tick(note: Path, *markers: str) -> None:
    text = note.read_text(encoding="utf-8")
    for marker in markers:
        marked = " ".join(re.escape(word) + ("(?:-[0-9a-z]+)?" if re.fullmatch(r"D-\d+", word) else "")
                          for word in marker.split(" "))  # an id as typed, or tagged as a command made it
        text, count = re.subn(r"^- \[ \] (.*%%vt " + marked + "%%)$", r"- [x] \1", text, flags=re.M)
        assert count == 1, marker
    note.write_text(text, encoding="utf-8")


def test_review_proposes_each_kind_and_changes_no_decision(messy, cli):
    before = snapshot(messy)
    result = cli("review", "--today", TODAY, "--json")
    assert result.code == 0, result.err
    found = json.loads(result.out)
    assert found["written"] is True and found["note"] == f"Pinned/Review {TODAY}.md"
    actions = [(p["action"], p["args"]) for p in found["proposals"]]
    assert actions == [
        ("merge", ["article-footers", "article-footer"]),
        ("supersede", ["D-0002", "D-0001"]), ("alongside", ["D-0002", "D-0001"]),
        ("supersede", ["D-0006", "D-0005"]),
        ("withdraw", ["D-0007"]),
        ("reask", ["D-0003"]),
    ]
    # D-0003 and D-0004 share a topic but the owner said both stand: never proposed.
    assert not any({"D-0003", "D-0004"} <= set(p["args"]) for p in found["proposals"])
    after = snapshot(messy)
    changed = {path for path in after.keys() | before.keys() if after.get(path) != before.get(path)}
    digests = {path for path in changed if path.startswith("vault-tools/pages/")}  # travel with the pages (shared layout)
    assert changed - digests == {f"Pinned/Review {TODAY}.md", "Pinned/Open questions.md"}
    note = review_note(messy).read_text(encoding="utf-8")
    assert note.startswith("---\nvault-tools: review\nreview_of: 2026-08-01\nreview_status: waiting\n---\n")
    assert "type: decision" not in note
    assert note.count("- [ ] ") == 6
    assert f"- [ ] Merge `article-footers` (D-0002) into `article-footer` ({made_id(messy, 'D-0001')}) %%vt merge article-footers article-footer%%" in note
    # The owner is told on the page the agent and the owner both read.
    page = (messy / "Pinned" / "Open questions.md").read_text(encoding="utf-8")
    assert f"> [!todo] A review is waiting: [[Review {TODAY}]] proposes 6 changes." in page
    assert cli("build", "--check").code == 0


def test_apply_does_only_what_was_ticked_through_the_normal_commands(messy, cli):
    assert cli("review", "--today", TODAY).code == 0
    note = review_note(messy)
    tick(note, "merge article-footers article-footer", "supersede D-0006 D-0005", "withdraw D-0007",
         "alongside D-0002 D-0001")
    events_before = len(ledger_events(messy))
    result = cli("review", "--apply")
    assert result.code == 0, result.err
    assert result.out.splitlines() == [
        "applied: article-footers merged into article-footer",
        "applied: D-0002 stands alongside D-0001",
        "applied: D-0006 supersedes D-0005",
        "applied: D-0007 withdrawn",
    ]
    events = ledger_events(messy)[events_before:]
    assert [(e["event"], re.sub(r"^(D-\d+)-\w+$", r"\1", e["id"])) for e in events] == [
        ("topics-merged", "topics"), ("amended", "D-0002"), ("amended", "D-0006"), ("superseded", "D-0005"),
        ("withdrawn", "D-0007")]
    assert events[0]["reason"] == "article-footers merged into article-footer in the review of 2026-08-01"
    assert topics_file(messy).read_text(encoding="utf-8").endswith(
        "article-footer: [article-footers]\n")
    shown = {d["id"]: d for d in json.loads(cli("list", "--json").out)}
    assert shown["D-0005"]["status"] == "superseded" and shown["D-0007"]["status"] == "withdrawn"
    assert shown["D-0003"]["status"] == "ruled"  # the revisit item was not ticked
    assert "withdrawn in the review of 2026-08-01" in shown["D-0007"]["reason"].lower()
    # The review is done: marked applied with what happened, and no longer waiting on the page.
    text = note.read_text(encoding="utf-8")
    assert "review_status: applied" in text and "## Applied\n\n- article-footers merged into article-footer" in text
    assert "A review is waiting" not in (messy / "Pinned" / "Open questions.md").read_text(encoding="utf-8")
    assert cli("review", "--apply").code == 1  # nothing waiting any more
    assert cli("lint").code == 0, cli("lint").out


def test_a_reason_typed_under_an_item_is_the_one_recorded(messy, cli):
    assert cli("review", "--today", TODAY).code == 0
    note = review_note(messy)
    tick(note, "supersede D-0002 D-0001")
    text = note.read_text(encoding="utf-8").replace(
        f"%%vt supersede D-0002 {made_id(messy, 'D-0001')}%%\n  - reason:",
        f"%%vt supersede D-0002 {made_id(messy, 'D-0001')}%%\n  - reason: The bio replaced the link long ago.")
    note.write_text(text, encoding="utf-8")
    assert cli("review", "--apply").code == 0
    assert json.loads(cli("show", "D-0001", "--json").out)["reason"] == "The bio replaced the link long ago."


def test_ticking_both_answers_to_one_pair_applies_neither(messy, cli):
    assert cli("review", "--today", TODAY).code == 0
    note = review_note(messy)
    tick(note, "supersede D-0002 D-0001", "alongside D-0002 D-0001", "reask D-0003")
    result = cli("review", "--apply")
    assert result.code == 1
    assert result.err.count("both 'replaces' and 'both stand' are ticked") == 2
    assert result.out.splitlines() == ["applied: D-0008 asks again whether D-0003 still stands"]
    question = json.loads(cli("show", "D-0008", "--json").out)
    assert question["status"] == "open" and question["topics"] == ["deploy-day"]
    assert question["reask_reason"] == "D-0003 was to be revisited by 2026-07-10 (review of 2026-08-01)."
    assert json.loads(cli("show", "D-0001", "--json").out)["status"] == "ruled"


def test_writing_again_keeps_what_the_owner_ticked(messy, cli):
    assert cli("review", "--today", TODAY).code == 0
    note = review_note(messy)
    tick(note, "withdraw D-0007")
    assert cli("review", "--today", "2026-08-02").code == 0
    assert review_note(messy) == note  # the waiting review is updated, not a second one
    text = note.read_text(encoding="utf-8")
    assert "- [x] Withdraw" in text and text.count("- [x] ") == 1


def test_nothing_to_review_writes_nothing(vault, cli):
    before = snapshot(vault)
    result = cli("review", "--today", TODAY)
    assert result.code == 0 and "nothing to review" in result.err
    assert snapshot(vault) == before


def test_the_watcher_writes_the_review_on_its_schedule(messy):
    from tests.helpers import Scripted
    write(config_file(messy),
          config_file(messy).read_text(encoding="utf-8") + "review_every_days: 7\n")
    with Scripted(messy) as scripted:
        kinds = [a.kind for a in scripted.actions]
        assert kinds.count("review") == 1
        note = review_note(messy)
        assert (messy / "Pinned" / "Stats.md").exists()
        assert "A review is waiting" in (messy / "Pinned" / "Open questions.md").read_text(encoding="utf-8")
        # While it waits for the owner, no other review is written, however long it waits.
        scripted.now += 30 * 86400
        scripted.watcher.step()
        assert [a.kind for a in scripted.actions].count("review") == 1
        assert review_note(messy) == note


def test_the_watcher_writes_no_review_by_default(messy):
    from tests.helpers import Scripted
    with Scripted(messy) as scripted:
        scripted.now += 30 * 86400
        scripted.watcher.step()
        assert "review" not in [a.kind for a in scripted.actions]
    assert not list((messy / "Pinned").glob("Review *.md"))
    assert not (messy / "Pinned" / "Stats.md").exists()


def test_an_id_in_a_rulings_text_is_read_as_a_typed_id_is(tmp_path, capsys):
    """"This replaces D-0001-era invoicing": an untagged id followed by a word still names D-0001 (the hidden
    layout's ids carry no tag); a tag typed in capitals names the tagged id."""
    from vault_tools.cli import run

    from .helpers import make_vault

    for shared, said in ((False, "This replaces D-0001-era monthly invoicing for every account."),
                         (True, "This replaces {id} monthly invoicing for every account.")):
        vault = make_vault(tmp_path / f"vault-{shared}", shared=shared)

        def ok(*args: str, root: Path = vault) -> None:
            assert run([*args, "--vault", str(root)]) == 0, capsys.readouterr().err
        ok("rule", "--topic", "pricing", "--summary", "Invoices are sent monthly by email to each customer.",
           "--ruled-at", "2026-07-01T10:00:00", "--source", "chat")
        ok("rule", "--topic", "billing", "--summary", "Quarterly statements go out by post from January.",
           "--ruled-at", "2026-07-02T10:00:00", "--source", "chat",
           "--body", said.format(id=made_id(vault, "D-0001").upper()))
        capsys.readouterr()
        assert run(["review", "--today", TODAY, "--json", "--vault", str(vault)]) == 0
        found = json.loads(capsys.readouterr().out)
        assert [(p["action"], p["args"]) for p in found["proposals"]] == [
            ("supersede", [made_id(vault, "D-0002"), made_id(vault, "D-0001")])], shared
