"""Reconciling against the ledger in the cases that could lose or launder the owner's text.

Each test drives one watcher pass (`watch --once` semantics, in-process) on a real temp vault,
with the notes' mtimes set in the past so they count as quiet.
"""
from __future__ import annotations

import json
import os
import time
import unicodedata
from pathlib import Path

import pytest

from vault_tools import durable, lint, note_edits, notes
from vault_tools.history import histories_by_id
from vault_tools.ledger import Ledger
from vault_tools.services.workspace import Workspace
from vault_tools.vault import Vault
from vault_tools.watch import Watcher

from .helpers import (
    clock_ahead_source,
    decision,
    kept_dir,
    ledger_file,
    made_id,
    note_path,
    past_the_racy_window,
    snapshot,
    write,
)

FOOTER = "Every article footer carries the newsletter link and the author bio."
REASON = "The owner banned promotion inside articles."


def quiet(vault: Path) -> None:
    past = time.time() - 600
    for path in vault.rglob("*.md"):
        os.utime(path, (past, past))


def one_pass(vault: Path) -> list[str]:
    quiet(vault)
    actions = []
    watcher = Watcher(Workspace(Vault(vault)), on_actions=actions.extend)
    watcher.acquire()
    try:
        watcher.process(everything=True)
    finally:
        watcher.release()
    return [a.kind for a in actions]


def event_names(vault: Path) -> list[str]:
    return [e.event for e in Vault(vault).ledger.read()]


def sealed(cli, vault: Path) -> Path:
    assert cli("rule", "--topic", "article-footer", "--summary", FOOTER, "--source", "[[Call 2026-07-17]] with owner",
               "--body", "See [[Reader mail]] for the complaints.").code == 0
    return note_path(vault, "D-0001")


def test_deleting_a_superseded_note_does_not_set_off_its_successor(cli, vault):
    old = sealed(cli, vault)
    assert cli("rule", "--topic", "article-footer", "--summary", "Footers carry only the author bio now.",
               "--supersedes", "D-0001", "--reason", REASON).code == 0
    old.unlink()
    before = event_names(vault)
    for _ in range(3):
        assert "edit-rejected" not in one_pass(vault)
    assert event_names(vault) == before


def test_renaming_linked_notes_is_not_an_edit(cli, vault):
    path = sealed(cli, vault)
    write(vault / "Call with Anna 2026-07-17.md", "notes of the call\n")
    text = path.read_text().replace("[[Call 2026-07-17]]", "[[Call with Anna 2026-07-17]]")
    text = text.replace("[[Reader mail]]", "[[Inbox/Reader mail]]")  # moved into a folder
    path.write_text(text)
    assert "edit-rejected" not in one_pass(vault)
    assert path.read_text() == text
    assert not [d for d in lint.lint(lint.gather(Vault(vault))).diagnostics if d.code == "VT021"]


def test_superseding_or_retracting_a_ruling_with_an_unreviewed_edit_is_refused(cli, vault):
    path = sealed(cli, vault)
    path.write_text(path.read_text() + "\nTyped in place while the watcher was off.\n")
    before = snapshot(vault)
    superseding = cli("rule", "--topic", "article-footer", "--summary", "Footers carry only the author bio now.",
                      "--supersedes", "D-0001", "--reason", REASON)
    assert superseding.code == 3 and "edited in place since it was sealed" in superseding.err
    retracting = cli("retract", "D-0001", "--reason", "It was recorded in error, says the owner.")
    assert retracting.code == 3 and "edited in place" in retracting.err
    assert snapshot(vault) == before


def test_a_later_burst_is_added_to_the_revision_with_its_properties(cli, vault):
    path = sealed(cli, vault)
    sealed_text = path.read_text()
    path.write_text(sealed_text + "\nFirst sitting.\n")
    assert "restored" in one_pass(vault)
    revision = note_path(vault, "D-0002")
    note = notes.read_note(revision)
    revision.write_text(note_edits.with_fields(note, {"due": "2026-12-31"}) + "\nThe owner's own line.\n")
    path.write_text(sealed_text.replace(FOOTER, "Footers carry the bio and a link to the archive page.")
                    + "\nSecond sitting.\n")
    assert "restored" in one_pass(vault)
    text = revision.read_text()
    for kept in ("First sitting.", "The owner's own line.", "due: 2026-12-31", "Second sitting.",
                 "- summary: Footers carry the bio and a link to the archive page."):
        assert kept in text, kept
    assert len(list((vault / "Decisions").glob("D-*.md"))) == 2


def test_changing_the_id_of_a_sealed_note_is_an_edit_of_it(cli, vault):
    path = sealed(cli, vault)
    sealed_bytes = path.read_bytes()
    path.write_text(path.read_text().replace("id: D-0001", "id: D-0007"))
    kinds = one_pass(vault)
    assert "edit-rejected" in kinds and "sealed" not in kinds
    assert path.read_bytes() == sealed_bytes
    assert "D-0007" not in histories_by_id(Vault(vault).ledger.read())


def test_a_withdrawn_question_stays_withdrawn(cli, vault):
    assert cli("ask", "What should article footers contain?", "--topic", "article-footer").code == 0
    assert cli("withdraw", "D-0001", "--reason", "The owner stopped the newsletter entirely.").code == 0
    path = note_path(vault, "D-0001")
    note = notes.read_note(path)
    path.write_text(note_edits.with_fields(note, {"status": "ruled", "summary": FOOTER}))
    assert "sealed" not in one_pass(vault)
    assert cli("seal").err.strip() == "nothing to seal"
    note = notes.read_note(path)
    path.write_text(note_edits.with_fields(note, {"status": "open"}))
    refused = cli("rule", "D-0001", "--summary", FOOTER)
    assert refused.code == 1 and "withdrawn, which is final" in refused.err
    assert event_names(vault) == ["asked", "withdrawn"]


def test_a_tampered_reason_on_a_superseded_note_is_put_back_and_kept(cli, vault):
    old = sealed(cli, vault)
    assert cli("rule", "--topic", "article-footer", "--summary", "Footers carry only the author bio now.",
               "--supersedes", "D-0001", "--reason", REASON).code == 0
    tool_written = old.read_bytes()
    old.write_text(old.read_text().replace(REASON, "The agent decided this on its own, apparently."))
    kinds = one_pass(vault)
    assert "edit-rejected" in kinds and "restored" in kinds
    assert old.read_bytes() == tool_written
    kept = list(kept_dir(vault).iterdir())
    assert len(kept) == 1 and "on its own" in kept[0].read_text()


def test_a_revision_of_a_superseded_note_proposes_to_replace_the_current_ruling(cli, vault):
    old = sealed(cli, vault)
    assert cli("rule", "--topic", "article-footer", "--summary", "Footers carry only the author bio now.",
               "--supersedes", "D-0001", "--reason", REASON).code == 0
    old.write_text(old.read_text().replace(FOOTER, "Footers carry a sponsor line after all, says the owner."))
    assert "restored" in one_pass(vault)
    revision = notes.read_note(note_path(vault, "D-0003"))
    assert revision.data["supersedes"] == [f"[[{made_id(vault, 'D-0002')} Footers carry only the author bio now]]"]


def test_ruled_at_with_an_offset_is_written_in_the_vaults_time(cli, vault):
    assert cli("rule", "--topic", "article-footer", "--summary", FOOTER, "--ruled-at", "2026-07-17T08:30:00Z").code == 0
    shown = json.loads(cli("show", "D-0001", "--json").out)
    assert shown["ruled_at"] == "2026-07-17T17:30:00"  # Asia/Tokyo


def test_decomposed_unicode_file_names_work(cli, vault):
    name = unicodedata.normalize("NFD", "D-0001 Café footer")
    decision(vault, 1, title=name)
    assert "sealed" in one_pass(vault)
    assert cli("retract", "D-0001", "--reason", "It was recorded in error, says the owner.").code == 0


# -- a large first reconcile ---------------------------------------------------------------------------------

def chains(vault: Path, topics: int, first_number: int = 1) -> None:
    """Two hand-written rulings on each topic, the second superseding the first, none of them sealed: what a
    large import, a pull of many rulings or a vault filled by hand leaves for the watcher."""
    for index in range(topics):
        topic = f"topic-{index}"
        first = decision(vault, first_number + 2 * index, "ruled", (topic,))
        decision(vault, first_number + 2 * index + 1, "ruled", (topic,), supersedes=f'["[[{first.stem}]]"]',
                 reason="The owner changed course on this one later.")


def test_one_run_seals_any_number_of_rulings_and_applies_every_chain(cli, vault):
    chains(vault, 110)  # 220 rulings: more than a reconcile used to seal in one run
    quiet(vault)
    assert cli("watch", "--once").code == 0
    state = Vault(vault).load()
    assert sorted(d.status.value for d in state.decisions) == ["ruled"] * 110 + ["superseded"] * 110
    assert all(d.status.value == ("superseded" if d.number % 2 else "ruled") for d in state.decisions)
    assert event_names(vault).count("sealed") == 220 and event_names(vault).count("superseded") == 110
    assert lint.lint(lint.gather(Vault(vault))).errors == 0
    assert not [p for p in vault.rglob(f"{durable.TEMP_PREFIX}*")]  # no temp file is left
    assert cli("watch", "--once").code == 0 and event_names(vault).count("sealed") == 220  # nothing left to do


def test_rulings_and_questions_that_name_nothing_pending_are_recorded_in_a_few_appends(cli, vault, monkeypatch):
    """Their events are held back and appended together (at most `HELD_EVENTS` at a time), each still recorded
    once; a ruling that names a ruling whose seal is held has that seal appended first, and is sealed on it."""
    from vault_tools.commands.supersede import PendingWrites

    for number in range(1, 151):
        decision(vault, number, "ruled", (f"topic-{number}",))
    for number in range(151, 171):
        decision(vault, number, "open", (f"question-{number}",))
    first = note_path(vault, "D-0001")
    decision(vault, 171, "ruled", ("topic-1",), supersedes=f'["[[{first.stem}]]"]', reason=REASON)
    appends: list[list[str]] = []
    real = Ledger.append

    def append(self, new_events):
        new_events = list(new_events)
        appends.append([event.event for event in new_events])
        return real(self, new_events)

    monkeypatch.setattr(Ledger, "append", append)
    quiet(vault)
    assert cli("watch", "--once").code == 0
    recorded = event_names(vault)
    assert recorded.count("sealed") == 151 and recorded.count("asked") == 20 and recorded.count("superseded") == 1
    # 321 events in three appends here (256 held, the other 65 held, then D-0001's supersession), not 172
    assert 2 <= len(appends) <= 4 and max(map(len, appends)) <= PendingWrites.HELD_EVENTS, appends
    state = Vault(vault).load()
    assert state.get("D-0001").status.value == "superseded" and state.get("D-0171").status.value == "ruled"
    assert lint.lint(lint.gather(Vault(vault))).errors == 0
    assert cli("watch", "--once").code == 0 and event_names(vault) == recorded  # nothing left to do


def test_the_state_a_reconcile_keeps_is_the_vault_as_read_afresh(cli, vault):
    """What the reconcile hands on (to build the pages) was kept current note by note; it must be what reading
    the vault again gives: same notes in the same order, same problems, same ties to the ledger's records."""
    from vault_tools.watch import reconcile
    path = sealed(cli, vault)
    path.write_text(path.read_text() + "\nTyped in place while the watcher was off.\n")  # becomes a revision
    chains(vault, 3, first_number=2)
    write(vault / "Decisions" / "Untitled.md", "---\ntype: decision\nstatus: open\ntopics: [podcast]\n"
          "summary: Should we start a podcast next to the newsletter?\n---\n")  # gets an id and a name
    write(vault / "Decisions" / "Broken.md", "---\ntype: decision\nstatus: [ruled\n---\n")
    write(vault / "Daily" / "2026-11-30.md", "Thought about [[D-0003 Note]] today.\n")
    quiet(vault)
    ws = Workspace(Vault(vault))
    done = reconcile(ws, quiet_before=time.time(), seal_before=time.time())
    assert {"id-given", "edit-rejected", "sealed", "recorded"} <= {a.kind for a in done.actions}
    kept, fresh = done.state, Vault(vault).load()
    assert kept is not None
    assert [d.path for d in kept.decisions] == [d.path for d in fresh.decisions]
    assert kept.decisions == fresh.decisions
    for name in ("properties", "property_lines", "body_lines"):
        assert getattr(kept, name) == getattr(fresh, name), name
    assert {p: list(map(str, found)) for p, found in kept.problems.items()} == \
        {p: list(map(str, found)) for p, found in fresh.problems.items()}
    assert [(e.path, e.message) for e in kept.broken] == [(e.path, e.message) for e in fresh.broken]
    assert sorted(kept.files) == sorted(fresh.files)
    fresh_ws = Workspace(Vault(vault))
    for d in fresh.decisions:
        tied, expected = ws.history_of(kept, d), fresh_ws.history_of(fresh, d)
        assert (tied.record, tied.id, len(tied.events)) == (expected.record, expected.id, len(expected.events))
        assert ws.status_of(kept, d) is fresh_ws.status_of(fresh, d)


def test_watch_once_names_what_it_left_and_exits_1(cli, vault):
    chains(vault, 1)
    quiet(vault)
    ruled = decision(vault, 3, "ruled", ("pricing",), "The spring sale is fifteen percent off.")
    past = time.time() - 30  # left alone for longer than the debounce, not yet for the sealing delay
    os.utime(ruled, (past, past))
    left = cli("watch", "--once")
    assert left.code == 1, left.err
    assert "left 1 decision note not reconciled:" in left.err
    assert "Decisions/D-0003 Note.md: ruled; sealed once left alone for 120 s (seal_delay_seconds)" in left.err
    assert event_names(vault).count("sealed") == 2  # the rest was done
    assert cli("seal").code == 0
    assert cli("watch", "--once").code == 0


def test_a_ruling_sealed_from_the_note_cache_is_sealed_as_read_afresh(cli, vault, monkeypatch):
    """A large reconcile seals a note it read from the cache without parsing it again, when the file is
    certainly unchanged; what it records must be what parsing the file gives: the file's bytes and the same
    seal hash, for a BOM, CRLF, a date with an offset, quoted and plain values alike."""
    import vault_tools.reading as reading_module
    from vault_tools.services import live as live_module
    monkeypatch.setattr(reading_module, "RACY_NANOSECONDS", 0)  # trust the cache and the file times at once
    monkeypatch.setattr(live_module, "RACY_NANOSECONDS", 0)
    text = ("\ufeff---\r\ntype: decision\r\nid: D-0001\r\nstatus: ruled\r\ntopics: [article-footer, \"promotion\"]\r\n"
            f"summary: '{FOOTER}'\r\nruled_at: 2026-07-17T08:30:00+02:00\r\nruled_by: owner\r\n"
            "revisit_by: 2027-01-31\r\nsource: \"[[Call 2026-07-17]] with owner\"\r\n---\r\n## Ruling\r\n\r\nCafé.\r\n")
    path = write(vault / "Decisions" / "D-0001 Footer.md", "")
    path.write_bytes(text.encode("utf-8"))
    quiet(vault)
    assert cli("build").code == 0  # fills the note cache
    assert "sealed" in one_pass(vault)
    sealed_event = Vault(vault).ledger.read()[-1]
    assert sealed_event.event == "sealed" and sealed_event.text == text
    state = Vault(vault).load()
    ws = Workspace(Vault(vault))
    fresh = ws.parse_new(path, notes.read_note(path).text)
    assert sealed_event.hash == ws.seal_hash_of(state, fresh)
    assert lint.lint(lint.gather(Vault(vault))).errors == 0


def test_a_second_ruling_superseding_a_ruling_already_superseded_in_the_same_run_is_refused(cli, vault):
    """Supersessions are written together, but a ruling that names a note whose supersession waits is
    decided on that note as superseded, as if each had been written at once."""
    first = decision(vault, 1, "ruled", ("newsletter-footer",))
    decision(vault, 2, "ruled", ("newsletter-footer",), supersedes=f'["[[{first.stem}]]"]',
             reason="The owner changed course on this one later.")
    decision(vault, 3, "ruled", ("newsletter-footer",), supersedes=f'["[[{first.stem}]]"]',
             reason="The owner changed course on this one again.")
    quiet(vault)
    result = cli("watch", "--once")  # the owner's to fix, shown on the pages: not left for a later run
    assert result.code == 0
    assert "invalid D-0003 Decisions/D-0003 Note.md: D-0001 is superseded by [[D-0002 Note]]; only a current " \
           "ruling can be superseded" in result.err
    state = Vault(vault).load()
    assert {d.id: d.status.value for d in state.decisions} == {"D-0001": "superseded", "D-0002": "ruled",
                                                               "D-0003": "ruled"}
    known = histories_by_id(Vault(vault).ledger.read())
    assert known["D-0002"].sealed and "D-0003" not in known  # refused before anything was recorded


def test_a_note_saved_while_its_supersession_waits_is_not_overwritten(cli, vault):
    from vault_tools.commands.supersede import PendingWrites, plan_superseded

    old = sealed(cli, vault)
    decision(vault, 2, "ruled", supersedes=f'["[[{old.stem}]]"]', reason=REASON)
    ws = Workspace(Vault(vault))
    state = ws.state()
    pending = PendingWrites(ws)
    with ws.vault.ledger.locked():
        pending.add(state, plan_superseded(ws, state, state.get(made_id(vault, "D-0001")), state.get("D-0002"), REASON),
                    "owner")
        typed = old.read_text() + "\nTyped by the owner while the watcher was sealing.\n"
        old.write_text(typed)
        written, left = pending.write()
    assert not written and [plan.updated.id for plan, _ in left] == [made_id(vault, "D-0001")]
    assert old.read_text() == typed and "superseded" not in event_names(vault)


def test_the_seal_command_applies_every_chain_and_refuses_a_second_supersession(cli, vault):
    """`vault-tools seal` writes the notes its rulings supersede together too, deciding each ruling as if
    each had been written at once."""
    chains(vault, 40)
    first = vault / "Decisions" / "D-0001 Note.md"
    decision(vault, 81, "ruled", ("topic-0",), supersedes=f'["[[{first.stem}]]"]',
             reason="The owner changed course on this one again.")
    result = cli("seal")
    assert result.code == 1 and "D-0001 is superseded by [[D-0002 Note]]" in result.err
    state = Vault(vault).load()
    assert all(d.status.value == ("superseded" if d.number % 2 and d.number < 81 else "ruled")
               for d in state.decisions)
    assert event_names(vault).count("sealed") == 80 and event_names(vault).count("superseded") == 40


class Killed(BaseException):
    """Stands for kill -9 in the middle of a step: nothing of that step after it runs."""


def test_a_kill_after_a_chain_of_supersessions_is_written_but_not_recorded_is_finished_cleanly(cli, vault,
                                                                                                monkeypatch):
    """D-0001 <- D-0002 <- D-0003, none sealed. The notes a run marks superseded are written before their
    events: a kill in between leaves each marked by a successor still current, which the next run records as
    the tool's own write, never as an owner's edit to reject."""
    first = decision(vault, 1, "ruled", ("newsletter-footer",))
    second = decision(vault, 2, "ruled", ("newsletter-footer",), supersedes=f'["[[{first.stem}]]"]',
                      reason="The owner changed course on this one later.")
    decision(vault, 3, "ruled", ("newsletter-footer",), supersedes=f'["[[{second.stem}]]"]',
             reason="The owner changed course on this one again.")
    real = Ledger.append

    def append(self, new_events):
        new_events = list(new_events)
        if any(event.event == "superseded" and event.id == "D-0002" for event in new_events):
            raise Killed  # every note marked, this event not written
        return real(self, new_events)

    monkeypatch.setattr(Ledger, "append", append)
    quiet(vault)
    with pytest.raises(Killed):
        cli("watch", "--once")
    monkeypatch.setattr(Ledger, "append", real)
    quiet(vault)
    assert cli("watch", "--once").code == 0
    assert "edit-rejected" not in event_names(vault) and not kept_dir(vault).exists()
    state = Vault(vault).load()
    assert {d.id: d.status.value for d in state.decisions} == {"D-0001": "superseded", "D-0002": "superseded",
                                                               "D-0003": "ruled"}
    assert event_names(vault).count("superseded") == 2 and lint.lint(lint.gather(Vault(vault))).errors == 0


def test_seal_refused_on_a_later_ruling_still_marks_what_the_rulings_before_it_supersede(cli, vault):
    first = decision(vault, 1, "ruled", ("newsletter-footer",))
    decision(vault, 2, "ruled", ("newsletter-footer",), supersedes=f'["[[{first.stem}]]"]', reason=REASON)
    decision(vault, 3, "ruled", ("blog-comments",), supersedes='["[[No such note]]"]', reason=REASON)
    result = cli("seal")
    assert result.code != 0 and "No such note" in result.err
    state = Vault(vault).load()
    assert state.get("D-0001").status.value == "superseded" and "superseded" in event_names(vault)


def test_a_sealed_note_edited_while_its_supersession_waits_is_not_recorded_unreviewed(cli, vault, monkeypatch):
    from vault_tools.commands.supersede import PendingWrites

    first = sealed(cli, vault)
    decision(vault, 2, "ruled", supersedes=f'["[[{first.stem}]]"]', reason=REASON)
    real = PendingWrites.write
    typed = "\nThe owner rewrote what was ruled, in place.\n"

    def write(self):  # the owner saves the old ruling while its supersession waits
        if self.waiting:
            first.write_text(first.read_text() + typed)
        return real(self)

    monkeypatch.setattr(PendingWrites, "write", write)
    quiet(vault)
    result = cli("watch", "--once")
    assert result.code != 0 and "not marked superseded by D-0002 yet: edited in place" in result.err
    assert typed in first.read_text() and "superseded" not in event_names(vault)
    monkeypatch.setattr(PendingWrites, "write", real)
    assert one_pass(vault)[:3] == ["edit-rejected", "restored", "superseded"]
    recorded = Vault(vault).ledger.read()
    assert not any(typed.strip() in (event.text or "") for event in recorded if event.event == "superseded")
    assert any(typed.strip() in (event.text or "") for event in recorded if event.event == "edit-rejected")


def test_a_ruling_naming_a_successor_alongside_is_sealed_before_the_waiting_supersession_and_survives_a_kill(
        cli, vault, monkeypatch):
    """D-0002 supersedes D-0001; D-0003 names D-0002 in `alongside`. Sealing D-0003 looks at neither D-0001 nor
    D-0002's chain, so the held-back supersession of D-0001 is written after it, with the rest of its batch; a
    kill between that note and its event is finished cleanly by the next run."""
    first = decision(vault, 1, "ruled", ("newsletter-footer",))
    second = decision(vault, 2, "ruled", ("newsletter-footer",), supersedes=f'["[[{first.stem}]]"]', reason=REASON)
    decision(vault, 3, "ruled", ("newsletter-footer",), alongside=f'["[[{second.stem}]]"]')
    real = Ledger.append

    def append(self, new_events):
        new_events = list(new_events)
        if any(event.event == "superseded" for event in new_events):
            raise Killed  # D-0001 marked superseded, its event not written
        return real(self, new_events)

    monkeypatch.setattr(Ledger, "append", append)
    quiet(vault)
    with pytest.raises(Killed):
        cli("watch", "--once")
    sealed_ids = [e.id for e in Vault(vault).ledger.read() if e.event == "sealed"]
    assert sealed_ids == ["D-0001", "D-0002", "D-0003"]  # all sealed before the batch was written
    monkeypatch.setattr(Ledger, "append", real)
    quiet(vault)
    assert cli("watch", "--once").code == 0
    assert "edit-rejected" not in event_names(vault) and not kept_dir(vault).exists()
    state = Vault(vault).load()
    assert {d.id: d.status.value for d in state.decisions} == {"D-0001": "superseded", "D-0002": "ruled",
                                                               "D-0003": "ruled"}
    assert event_names(vault).count("superseded") == 1 and lint.lint(lint.gather(Vault(vault))).errors == 0


def test_a_note_the_live_view_knows_unchanged_is_what_reading_it_gives(tmp_path, monkeypatch):
    """Marking a ruling superseded reads it; a live view gives it as it read it, its properties not parsed again,
    only while the file still holds what was read: equal, field for field, to reading it now."""
    import shutil

    from vault_tools.services import live as live_module
    from vault_tools.services.live import LiveState

    vault = tmp_path / "example-vault"
    shutil.copytree(Path(__file__).resolve().parents[1] / "example-vault", vault)
    write(vault / "Decisions" / "D-0901 Windows.md", "\ufeff---\r\ntype: decision\r\nid: D-0901\r\nstatus: ruled\r\n"
          "topics: [line-endings]\r\nsummary: A note saved on Windows, with a BOM and CRLF.\r\n---\r\nBody\r\n")
    monkeypatch.setattr(live_module, "RACY_NANOSECONDS", 0)  # every note is older than the racy window
    ws = Workspace(Vault(vault))
    with LiveState(ws) as live:
        decisions = live.state.decisions
        assert len(decisions) > 10 and ws.read_as_known is not None
        for decision_ in decisions:
            path = vault / decision_.path
            known = ws.read(path)
            assert known == notes.read_note(path), decision_.path
            assert known is not None and known.data is live.state.properties[decision_.path]  # not parsed again
        edited = vault / decisions[0].path
        edited.write_text(edited.read_text() + "An edit.\n")
        assert ws.read(edited) == notes.read_note(edited) and "An edit." in ws.read(edited).body
    assert ws.read_as_known is None


def test_a_ruling_with_keys_json_writes_otherwise_is_marked_superseded_from_the_note_cache(tmp_path, monkeypatch):
    """The note cache keeps properties as JSON, which writes a nested `true:` key as "true": a ruling read from
    it is still marked superseded, its edit checked against a fresh parse."""
    from vault_tools.services import live as live_module

    from .helpers import make_vault

    monkeypatch.setattr(live_module, "RACY_NANOSECONDS", 0)
    monkeypatch.setattr("vault_tools.reading.RACY_NANOSECONDS", 0)
    vault = make_vault(tmp_path / "vault")
    first = decision(vault, 1, "ruled", ("newsletter-footer",), meta="{true: kept, ~: also}")
    past = time.time() - 600
    os.utime(first, (past, past))

    def reconcile_pass() -> list[str]:  # its notes' times left as they are: the cache is used for those unchanged
        watcher = Watcher(Workspace(Vault(vault)), on_actions=lambda actions: None)
        watcher.acquire()
        try:
            return [action.why for action in watcher.process(everything=True)]
        finally:
            watcher.release()

    reconcile_pass()  # sealed; the note cache now holds it
    second = decision(vault, 2, "ruled", ("newsletter-footer",), supersedes=f'["[[{first.stem}]]"]',
                      reason='"The owner banned promotion inside articles."')
    os.utime(second, (past, past))
    problems = reconcile_pass()
    assert not [why for why in problems if "refusing" in why], problems
    assert "status: superseded" in first.read_text() and "true: kept" in first.read_text()
    assert event_names(vault).count("superseded") == 1 and event_names(vault).count("sealed") == 2


def test_a_live_view_takes_no_look_at_the_ledger_from_before_it(tmp_path, monkeypatch):
    """A look at the ledger's files is kept a little while within one live view, never into the next one: a
    device's ledger file made in between (by another process) is seen by the next view at once."""
    from vault_tools.commands.setup import init_vault
    from vault_tools.services import live as live_module
    from vault_tools.services.live import LiveState

    from .helpers import TZ, vt

    monkeypatch.setattr(live_module, "LOOK_KEPT_SECONDS", 60.0)  # as if the next pass came within the window
    vault = tmp_path / "vault"
    (vault / ".obsidian").mkdir(parents=True)
    init_vault(vault, TZ, shared=True)
    ws = Workspace(Vault(vault))
    with ws.vault.ledger.locked(), LiveState(ws) as live:
        live.refresh()
    ruled = vt("rule", "--topic", "footer", "--summary", "Every article footer carries the newsletter link.",
               cwd=vault)
    assert ruled.code == 0, ruled.err
    with ws.vault.ledger.locked(), LiveState(ws) as live:
        live.refresh()
        assert len(live.known) == 1 and len(live.ties) == 1  # the ruling and its note, tied


# A first reconcile run as `watch --once` runs it, in a process of its own (where a child can be forked), with
# the work the child hands over counted: what the reconcile took from it, and what it worked out itself. It
# starts past the racy window, as on a real first start: its view reads the wall clock that much ahead (as
# `past_the_racy_window` has it in this process), so it knows each note unchanged since it read the vault.
_AHEAD_RUN = clock_ahead_source("vault_tools.services.live") + """
import collections, json, sys
from vault_tools.services import prefetch
from vault_tools.services import live
from vault_tools.services import workspace
from vault_tools import launch

vault, mode, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
counts = collections.Counter()
prefetch.free_processors = lambda: 2  # whatever else the machine runs meanwhile (the rest of the suite)
if mode == "no child":
    prefetch.MIN_RULINGS = 10 ** 9
if mode == "fork fails":  # a process limit reached, or memory short
    import errno, os

    def fork():
        raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN))
    os.fork = fork
forked = prefetch.WorkAhead.__init__

def start(self, live_view, rels):
    forked(self, live_view, rels)
    counts["forked"] += self._pid is not None
    if mode == "edited after the fork":  # the owner saves a ruling the child has read already
        import time
        deadline = time.monotonic() + 30
        while extra[0] not in self.texts and time.monotonic() < deadline:
            self.take_in()
        counts["read by the child first"] += extra[0] in self.texts
        path = live_view.state.root / extra[0]
        path.write_text(path.read_text(encoding="utf-8") + "A line added while the reconcile ran.\\n",
                        encoding="utf-8")
    if mode == "child killed":
        import os, signal
        os.kill(self._pid, signal.SIGKILL)

prefetch.WorkAhead.__init__ = start
took_in, taking = prefetch.WorkAhead.take_in, [False]

def take_in(self):
    taking[0] = True
    try:
        return took_in(self)
    finally:
        taking[0] = False

prefetch.WorkAhead.take_in = take_in
remembered = workspace.Workspace.remember_seal_hash

def remember(self, state, decision, digest):
    if taking[0]:  # a hash the child handed over (not one the reconcile made writing a note)
        counts["hashes taken"] += 1
    remembered(self, state, decision, digest)

workspace.Workspace.remember_seal_hash = remember
edited = live.LiveState.edited_as_known

def edited_as_known(self, note, changes):
    found = edited(self, note, changes)
    counts["edits taken"] += found is not None
    return found

live.LiveState.edited_as_known = edited_as_known
sys.argv = ["vault-tools", "watch", "--once", "--vault", vault]
try:
    launch.main()
except SystemExit as done:
    counts["exit"] = done.code or 0
print(json.dumps(counts))
"""


def _first_reconcile(vault: Path, mode: str, *extra: str) -> dict[str, int]:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _AHEAD_RUN, str(vault), mode, *extra], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def _recorded(vault: Path) -> list[dict[str, object]]:
    """The ledger's events without what differs from run to run (when, the record's random name, the checksum)."""
    found = []
    for line in ledger_file(vault).read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        found.append({key: value for key, value in event.items() if key not in ("at", "record", "sum")})
    return found


def _notes(vault: Path) -> dict[str, bytes]:
    """Every note's bytes, the pinned pages among them (what the tool keeps for itself aside)."""
    return {p.relative_to(vault).as_posix(): p.read_bytes() for p in sorted(vault.rglob("*.md"))
            if ".vault-tools" not in p.parts}


def _unsealed_copies(tmp_path: Path, names: list[str]) -> list[Path]:
    """Copies of one vault of 220 unsealed rulings (110 superseding the others), for a first reconcile that
    starts past the racy window (`_AHEAD_RUN`'s clock runs ahead), so it knows each note unchanged since before
    it read the vault (as on a real first start), which is when a child is forked to work ahead."""
    import shutil

    from .helpers import make_vault

    source = make_vault(tmp_path / "source")
    chains(source, 110)
    copies = []
    for name in names:
        copy = tmp_path / name
        shutil.copytree(source, copy)
        quiet(copy)
        copies.append(copy)
    return copies


def test_what_a_child_works_out_ahead_gives_the_notes_and_ledger_the_reconcile_gives_alone(tmp_path):
    """A first reconcile of many rulings forks a child that reads each ruling's text, works out its seal hash
    and the edit of each ruling it supersedes; the reconcile takes them, and the vault ends as it does when
    the reconcile works everything out itself (no child) or when the child dies at once."""
    with_child, alone, killed, unforked = _unsealed_copies(tmp_path, ["with child", "alone", "killed", "unforked"])
    counts = _first_reconcile(with_child, "with child")
    assert counts["forked"] == 1 and counts["exit"] == 0
    # The child's work was used (how much depends on how far ahead it got: on a busy machine the reconcile
    # catches up with it and works some rulings out itself, as it should)
    assert counts["hashes taken"] > 0 and counts["edits taken"] > 0, counts
    counts = _first_reconcile(alone, "no child")
    assert counts == {"forked": 0, "edits taken": 0, "exit": 0}
    counts = _first_reconcile(killed, "child killed")
    assert counts["forked"] == 1 and counts["exit"] == 0  # killed as soon as it was forked (whatever it did first)
    counts = _first_reconcile(unforked, "fork fails")  # the reconcile does it all itself
    assert counts == {"forked": 0, "edits taken": 0, "exit": 0}
    assert _notes(with_child) == _notes(alone) == _notes(killed) == _notes(unforked)
    assert _recorded(with_child) == _recorded(alone) == _recorded(killed) == _recorded(unforked)
    assert [e["event"] for e in _recorded(alone)].count("superseded") == 110


def test_a_ruling_saved_while_the_child_works_is_sealed_as_saved_not_as_the_child_read_it(tmp_path):
    """The child read a ruling's text before the owner saved it again: the reconcile seals what the file holds
    when it seals it, and marks a ruling superseded from its text as it is then."""
    (vault,) = _unsealed_copies(tmp_path, ["vault"])
    successor = note_path(vault, "D-0002")
    counts = _first_reconcile(vault, "edited after the fork", f"Decisions/{successor.name}")
    assert counts["forked"] == 1 and counts["read by the child first"] == 1
    assert counts["exit"] == 1  # it names D-0002 as saved just now, to look at again
    sealed_texts = {e["id"]: e["text"] for e in _recorded(vault) if e["event"] == "sealed"}
    assert "A line added while the reconcile ran." in sealed_texts["D-0002"]
    assert sealed_texts["D-0002"] == successor.read_text(encoding="utf-8")
    assert Vault(vault).load().get("D-0001").status.value == "superseded"


def _ruling_and_its_successor(tmp_path: Path,
                              monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path, Workspace, str]:
    """A vault where D-0002 supersedes D-0001, both unsealed and past the racy window (the view knows both
    notes unchanged since it read them): (vault, D-0001's path, D-0002's path, workspace, D-0001's rel)."""
    from .helpers import make_vault

    vault = make_vault(tmp_path / "vault")
    path = decision(vault, 1, "ruled", ("article-footer",))
    successor = decision(vault, 2, "ruled", ("article-footer",), supersedes=f'["[[{path.stem}]]"]', reason=REASON)
    quiet(vault)
    past_the_racy_window(monkeypatch)
    return vault, path, successor, Workspace(Vault(vault)), "Decisions/" + path.name


def _fed_by_hand(live, rel: str):
    """A child's work ahead for the view `live`, its pipe fed by the test as a child feeds it (too few rulings
    to fork one): (the work ahead, the end to write records to)."""
    import os

    from vault_tools.handover import Receiver
    from vault_tools.services.prefetch import WorkAhead

    ahead = WorkAhead(live, [rel])
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    ahead._receiver, live.ahead = Receiver(read_end), ahead
    return ahead, write_end


def test_what_the_child_hands_over_for_a_note_since_written_again_is_not_taken(tmp_path, monkeypatch):
    """A seal hash, a text, an edit and what sealing needs handed over for a note the reconcile has written
    since (the view read it again): none of them is taken, each is worked out from the note as it is now."""
    import os

    from vault_tools.handover import record
    from vault_tools.ledger_lines import encode_text
    from vault_tools.model import superseded_changes
    from vault_tools.services.live import LiveState
    from vault_tools.services.prefetch import edit_key
    from vault_tools.services.workspace import KnownSeal

    _, path, successor, ws, rel = _ruling_and_its_successor(tmp_path, monkeypatch)
    with LiveState(ws) as live:
        assert live.is_unchanged(rel)  # until written again, what the child hands over for it would be taken
        ahead, write_end = _fed_by_hand(live, rel)
        before = live.decision_at(rel)
        ahead._seen[rel] = before
        note = ws.read(path)
        new = live.decision_at("Decisions/" + successor.name)
        durable.write_note(note, note.text.replace("## Body of D-0001", "## Body of D-0001, written again"))
        assert live.refresh() and live.decision_at(rel) is not before
        stale = note_edits.edited(note, superseded_changes(new, REASON))  # the edit made ahead, of the text as it was
        os.write(write_end, record([("hash", rel, "sha256:stale"), ("text", rel, note.text, encode_text(note.text)),
                                    ("edit", edit_key(rel, note.text, superseded_changes(new, REASON)), stale,
                                     stale.text, encode_text(stale.text), ws.parse_new(path, stale.text, stale),
                                     "sha256:stale"),
                                    ("seal", rel, KnownSeal("stale", "record-stale", ((), ())))]))
        os.close(write_end)
        ahead.take_in()  # as the reconcile does when it asks for a text or an edit not taken in yet
        assert live.unchanged_text(rel) is None  # written since the vault was read: read as it is now
        assert ws.seal_hash_of(live.state, live.decision_at(rel)) != "sha256:stale"
        assert ws.seal_as_known(live.decision_at(rel)) is None and ws.seal_as_known(before) is None
        marked = ws.edited(ws.read(path), superseded_changes(new, REASON))
        assert "written again" in marked.text and "written again" not in stale.text
        ahead.close()


def test_what_is_worked_out_ahead_from_links_is_taken_only_while_they_resolve_as_they_did(tmp_path, monkeypatch):
    """A child hands over the decision a ruling marked superseded will be, and its seal hash: the hash holds
    while no note came, went or changed its id; once one did (a link may name another note now) the
    `superseded` event's hash is worked out again. So do the ids the successor's links resolve to."""
    import os

    from vault_tools.commands.supersede import plan_superseded, superseded_event
    from vault_tools.handover import record
    from vault_tools.ledger_lines import encode_text
    from vault_tools.model import superseded_changes
    from vault_tools.services.live import LiveState
    from vault_tools.services.prefetch import edit_key
    from vault_tools.services.workspace import KnownSeal

    vault, path, successor, ws, rel = _ruling_and_its_successor(tmp_path, monkeypatch)
    for came in (False, True):
        with LiveState(ws) as live:
            assert live.is_unchanged(rel) and live.is_unchanged("Decisions/" + successor.name)
            ahead, write_end = _fed_by_hand(live, rel)
            new = live.decision_at("Decisions/" + successor.name)
            note, changes = ws.read(path), superseded_changes(new, REASON)
            marked = note_edits.edited(note, changes)
            ahead._seen[new.path] = new
            os.write(write_end, record([("edit", edit_key(rel, note.text, changes), marked, marked.text,
                                         encode_text(marked.text), ws.parse_new(path, marked.text, marked),
                                         "sha256:ahead"),
                                        ("seal", new.path, KnownSeal(None, "record-ahead", (("D-0009",), ())))]))
            os.close(write_end)
            ahead.take_in()
            if came:  # a note comes: the links are resolved anew
                write(vault / "Decisions" / "D-0003 Another.md", path.read_text(encoding="utf-8")
                      .replace("D-0001", "D-0003"))
                assert live.refresh(["Decisions/D-0003 Another.md"]) and live.reshaped_at > 0
            plan = plan_superseded(ws, live.state, live.decision_at(rel), new, REASON)
            handed = ws.decided_as_known(plan.parsed)  # the edit and its decision were taken as handed over
            assert plan.parsed.text == marked.text and handed is not None and handed[0] is plan.updated
            event = superseded_event(ws, live.state, plan, "owner")
            assert (event.hash == "sha256:ahead") is not came
            # what sealing the successor needs: its record's identity holds; its links as ids only as they were
            assert ws.seal_as_known(new) == KnownSeal(None, "record-ahead", None if came else (("D-0009",), ()))
            assert ws.seal_as_known(new) is None  # taken once
            ahead.close()


def test_a_note_read_back_as_written_is_what_its_writer_said_and_one_saved_since_is_read_anew(tmp_path):
    """Marking a ruling superseded, the reconcile tells its view what the marked note is (a decision, its seal
    hash): reading the note back, the view takes both while the file holds what was written, and works both
    out again from the file when someone saved it in between. The hash was worked out under the links as
    they were: once a note came in between, the decision is taken but the hash is worked out again."""
    from vault_tools.model import superseded_changes
    from vault_tools.services.live import LiveState

    from .helpers import make_vault

    vault = make_vault(tmp_path / "vault")
    paths = [decision(vault, number, "ruled", ("article-footer",)) for number in (1, 2, 3, 4)]
    quiet(vault)
    ws = Workspace(Vault(vault))
    with LiveState(ws) as live:
        new = live.decision_at("Decisions/" + paths[3].name)
        for path, between in ((paths[0], None), (paths[1], "saved"), (paths[2], "a note came")):
            rel = "Decisions/" + path.name
            marked = ws.edited(ws.read(path), superseded_changes(new, REASON))
            told = ws.parse_new(path, marked.text, marked)
            ws.writing(marked, told, "sha256:told")
            if between == "a note came":  # before the write: the links may resolve otherwise now
                came = path.parent / "D-0005 Came meanwhile.md"
                came.write_text(path.read_text(encoding="utf-8").replace("D-0003", "D-0005"), encoding="utf-8")
                assert live.refresh([f"Decisions/{came.name}"]) and live.decision_at(f"Decisions/{came.name}")
            durable.write_note(ws.read(path), marked.text, marked)
            if between == "saved":  # the owner's save, after the write and before the view reads it back
                path.write_text(marked.text + "\nA line saved since.\n", encoding="utf-8")
            assert live.refresh()
            now = live.decision_at(rel)
            assert (now is told, ws.seal_hash_of(live.state, now) == "sha256:told") == \
                {None: (True, True), "saved": (False, False), "a note came": (True, False)}[between]
            assert now.status.value == "superseded" and ("saved since" in now.body) is (between == "saved")
