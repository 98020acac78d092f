"""The state memo (`vault_tools.state_memo`): what a whole read of the vault and the ledger gave, kept signed under
`.vault-tools/cache/` so the next command takes it when nothing changed. It must never change an answer: not
after a change (a note edited in place, a note made a decision, a line another clone appended), not after
`rm -rf .vault-tools/cache`, and a memo this user did not sign (a cloned vault carrying one) is never unpickled."""
from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
import sqlite3
import time
import traceback
from pathlib import Path

import pytest

from tests.helpers import (
    PAST_RACY_SECONDS,
    ClockAhead,
    config_file,
    decision,
    ledger_file,
    note_path,
    topics_file,
    vt,
    vt_here,
    write,
)
from vault_tools import decision_words, ledger_memo, state_memo
from vault_tools import index as index_module
from vault_tools import ledger as ledger_module
from vault_tools import ledger_file as ledger_file_module
from vault_tools import vault as vault_module
from vault_tools.commands import page_inputs
from vault_tools.commands import read as read_module
from vault_tools.commands import same as same_module
from vault_tools.commands.close import withdraw
from vault_tools.index import INDEX_FILE, SearchIndex
from vault_tools.ledger_memo import memo_key_of
from vault_tools.services.workspace import Workspace
from vault_tools.topic_aliases import load_aliases
from vault_tools.topics import use_topic_aliases
from vault_tools.vault import STATE_MEMO, Vault

READS = (("lookup", "article-footer", "--json"), ("show", "D-0002", "--json"), ("list", "--json"),
         ("search", "footer", "--json"), ("context", "--json"), ("lookup", "pricing", "--json"),
         ("search", "sponsors slot", "--history", "--json"))


@pytest.fixture
def aged(monkeypatch):
    """Every file the test wrote counts as past the racy window, so a memo is kept (as on a real machine a
    moment later)."""
    monkeypatch.setattr(vault_module, "time", ClockAhead(PAST_RACY_SECONDS))
    monkeypatch.setattr(ledger_module, "time", ClockAhead(PAST_RACY_SECONDS))
    monkeypatch.setattr(same_module, "time", ClockAhead(PAST_RACY_SECONDS))
    monkeypatch.setattr(page_inputs, "time", ClockAhead(PAST_RACY_SECONDS))  # what `remembered` keeps
    monkeypatch.setattr(index_module, "time", ClockAhead(PAST_RACY_SECONDS))  # the search index's listing


def answers(vault) -> list[tuple[int, str]]:
    return [(found.code, found.out) for found in (vt_here(*args, cwd=vault) for args in READS)]


def small_vault(vault):
    decision(vault, 1, topics=("article-footer",), summary="Footers carry the unsubscribe link.")
    decision(vault, 2, topics=("pricing",), summary="Prices are shown with tax.")
    decision(vault, 3, status="open", topics=("sponsor-policy",), summary="May sponsors choose the slot?")
    write(vault / "Notes" / "Plain.md", "---\ntags: [x]\n---\nA plain note about footers.\n")
    assert vt_here("seal", cwd=vault).code == 0


def test_answers_are_the_same_from_the_memo_cold_and_after_the_cache_is_removed(vault, aged):
    small_vault(vault)
    first = answers(vault)
    read = Vault(vault)
    kept, _ = state_memo.recall_mapping(vault / ".vault-tools" / STATE_MEMO,
                                        read._memo_key(load_aliases(read.record_dir)))
    assert "Notes/Plain.md" in kept
    assert sum(1 for rel in kept if rel.startswith("Decisions/")) == 3  # each decision note's parts
    assert (vault / ".vault-tools" / ledger_module.EVENTS_MEMO).is_file()
    assert answers(vault) == first  # from the memos
    shutil.rmtree(vault / ".vault-tools" / "cache")
    assert answers(vault) == first  # read afresh
    assert answers(vault) == first


def test_after_a_few_notes_changed_only_they_are_kept_beside_the_memo(vault, aged, monkeypatch):
    """The state memo is megabytes on a large vault: after a note is edited or made, the next command keeps
    only the notes that differ from it, in a small memo beside it (its delta), and leaves the whole one as it
    was; past `DELTA_MOST` notes changed it writes the whole again and removes the delta. A delta made for
    another whole memo (an older one copied back) is never taken. Every answer is a fresh read's."""
    small_vault(vault)
    memo = vault / ".vault-tools" / STATE_MEMO
    delta = state_memo.delta_path(memo)
    first = answers(vault)
    whole = memo.read_bytes()
    assert not delta.exists()
    note = note_path(vault, "D-0002")
    write(note, note.read_text(encoding="utf-8").replace("Prices are shown with tax.", "Prices are shown with "
                                                                                       "tax, in euros."))
    decision(vault, 5, topics=("postal-address",), summary="Footers carry the postal address.")
    edited = answers(vault)
    assert edited != first and memo.read_bytes() == whole and delta.is_file()
    read = Vault(vault)
    _, (_, in_delta) = state_memo.recall_mapping(memo, read._memo_key(load_aliases(read.record_dir)))
    assert in_delta == {note.relative_to(vault).as_posix(), "Decisions/D-0005 Note.md"}
    assert answers(vault) == edited  # from the whole memo and its delta
    older = vault / "older.pickle"
    shutil.copyfile(memo, older)
    monkeypatch.setattr(state_memo, "DELTA_MOST", 1)
    (vault / "Notes" / "Plain.md").unlink()
    answers(vault)
    assert memo.read_bytes() != whole and not delta.exists()  # three notes differ: the whole written again
    decision(vault, 6, topics=("podcast-length",), summary="Episodes run under forty minutes.")
    latest = answers(vault)
    assert delta.is_file()
    shutil.copyfile(older, memo)  # the whole memo of before, beside a delta made for the later one
    older.unlink()
    assert state_memo.recall_mapping(memo, read._memo_key(load_aliases(read.record_dir)))[1][1] == frozenset()
    assert answers(vault) == latest
    shutil.rmtree(vault / ".vault-tools" / "cache")
    assert answers(vault) == latest


def kept_then_withdrawn(vault, name: str) -> tuple[Path, Path, bytes, list[tuple[int, str]]]:
    """The small vault read with its memos kept, then D-0003 withdrawn (an append) and read again: the memo `name`,
    its delta, the whole memo's bytes before the append, and the answers after it."""
    small_vault(vault)
    answers(vault)
    memo = vault / ".vault-tools" / name
    whole = memo.read_bytes()
    withdraw(Workspace(Vault(vault)), "D-0003", "The sponsor left the newsletter.")
    return memo, state_memo.delta_path(memo), whole, answers(vault)


def test_after_an_append_only_the_records_it_changed_are_kept_beside_the_histories_memo(vault, aged):
    """The histories memo pickles each record apart (megabytes on a real ledger): after a withdrawal appended to
    one record, the next command keeps that record alone, with the memo's count of events, in its delta, the
    whole memo left as it was; every record shown is what a fresh read shows."""
    memo, delta, whole, after = kept_then_withdrawn(vault, ledger_module.HISTORIES_MEMO)
    shown = [vt_here("show", number, "--json", cwd=vault).out for number in ("D-0001", "D-0002", "D-0003")]
    assert memo.read_bytes() == whole and delta.is_file()
    ledger = Vault(vault).ledger
    _, (_, in_delta) = state_memo.recall_mapping(memo, memo_key_of(ledger.files()))
    assert in_delta == {None, next(summary.record for summary in ledger.summaries() if summary.id == "D-0003")}
    assert '"withdrawn"' in shown[2]
    shutil.rmtree(vault / ".vault-tools" / "cache")
    assert answers(vault) == after
    assert [vt_here("show", number, "--json", cwd=vault).out for number in ("D-0001", "D-0002", "D-0003")] == shown


def test_after_appends_only_the_events_added_are_kept_beside_the_events_memo(vault, aged, monkeypatch):
    """The events memo holds every event, sealed texts included (megabytes on a real ledger): after an append,
    the next command keeps the events added, in the ledger's order and in their file, in a delta beside it, the
    whole memo left as it was; the events it then gives are a fresh read's. Past `DELTA_MOST` events added the
    whole is written again and the delta removed; a delta beside an older whole memo is never taken."""
    memo, delta, whole, after = kept_then_withdrawn(vault, ledger_module.EVENTS_MEMO)
    assert memo.read_bytes() == whole and delta.is_file()
    kept, _ = ledger_memo.recall_events(memo, memo_key_of(Vault(vault).ledger.files()))
    shutil.copytree(vault / ".vault-tools" / "cache", vault / "cache-kept")
    shutil.rmtree(vault / ".vault-tools" / "cache")
    assert answers(vault) == after
    assert kept[1] == Vault(vault).ledger.read()  # the events it gives are a fresh read's
    shutil.rmtree(vault / ".vault-tools" / "cache")
    shutil.copytree(vault / "cache-kept", vault / ".vault-tools" / "cache")
    assert vt_here("rule", "--topic", "podcast-length", "--summary", "Episodes run under forty minutes.",
                   "--source", "chat", cwd=vault).code == 0
    latest = answers(vault)
    assert memo.read_bytes() == whole  # two appends: both in the delta
    assert ledger_memo.recall_events(memo, memo_key_of(Vault(vault).ledger.files()))[0][1] == \
        Vault(vault).ledger.read()
    older = vault / "older.pickle"
    shutil.copyfile(memo, older)
    monkeypatch.setattr(ledger_memo, "DELTA_MOST", 1)
    assert vt_here("rule", "--topic", "podcast-music", "--summary", "Episodes open without a theme tune.",
                   "--source", "chat", cwd=vault).code == 0
    answers(vault)
    assert memo.read_bytes() != whole and not delta.exists()
    monkeypatch.setattr(ledger_memo, "DELTA_MOST", 2048)
    assert vt_here("rule", "--topic", "podcast-guests", "--summary", "Every episode has at most two guests.",
                   "--source", "chat", cwd=vault).code == 0
    latest = answers(vault)
    assert delta.is_file()
    shutil.copyfile(older, memo)  # the whole memo of before, beside a delta made for the later one
    kept, _ = ledger_memo.recall_events(memo, memo_key_of(Vault(vault).ledger.files()))
    assert len(kept[1]) < len(Vault(vault).ledger.read())  # the delta not taken with it
    assert answers(vault) == latest


@pytest.mark.parametrize("vault_layout", ["shared"])
def test_events_another_device_placed_among_those_kept_make_the_events_memo_whole_again(vault, aged, tmp_path):
    """Another device's ledger file, grown by a line whose clock places it among the events the memo holds (that
    device had not read them when it wrote): the events in the ledger's order are no longer the memo's with more
    after them, so the next command writes the whole memo again, and every answer is a fresh read's."""
    small_vault(vault)
    other = tmp_path / "other"
    shutil.copytree(vault, other)  # another device: another folder, so a tag and a ledger file of its own
    assert vt_here("rule", "--topic", "podcast-length", "--summary", "Episodes run under forty minutes.",
                   "--source", "chat", cwd=other).code == 0
    theirs = next(path for path in (other / "vault-tools" / "ledger").glob("*.jsonl")
                  if not (vault / "vault-tools" / "ledger" / path.name).exists())
    shutil.copyfile(theirs, vault / "vault-tools" / "ledger" / theirs.name)  # as a sync engine brings it
    assert vt_here("rule", "--topic", "podcast-music", "--summary", "Episodes open without a theme tune.",
                   "--source", "chat", cwd=vault).code == 0
    memo = vault / ".vault-tools" / ledger_module.EVENTS_MEMO
    delta = state_memo.delta_path(memo)
    for path in (memo, delta):
        path.unlink(missing_ok=True)  # the whole memo made again with our ruling in it: its events end with ours
    answers(vault)
    whole = memo.read_bytes()
    withdraw(Workspace(Vault(other)), "D-0003", "The sponsor left the newsletter.")  # placed before our ruling
    shutil.copyfile(theirs, vault / "vault-tools" / "ledger" / theirs.name)
    after = answers(vault)
    assert memo.read_bytes() != whole and not delta.exists()
    assert '"withdrawn"' in vt_here("show", "D-0003", "--json", cwd=vault).out
    shutil.rmtree(vault / ".vault-tools" / "cache")
    assert answers(vault) == after


def test_records_kept_beside_the_histories_memo_come_back_in_the_ledgers_order(vault, aged):
    """Where two records share an id the later one in the ledger's order stands (`statuses`, the ties of notes):
    records kept in the histories memo's delta come back in that order, not in the order a set of them lists."""
    small_vault(vault)
    answers(vault)
    for topic in ("podcast-music", "podcast-guests", "podcast-length", "podcast-ads", "podcast-notes", "podcast-art"):
        assert vt_here("ask", f"What should we decide about {topic.replace('-', ' ')} now?", "--topic", topic,
                       cwd=vault).code == 0
    answers(vault)
    memo = vault / ".vault-tools" / ledger_module.HISTORIES_MEMO
    assert state_memo.delta_path(memo).is_file()
    kept = list(Vault(vault).ledger.histories())
    shutil.rmtree(vault / ".vault-tools" / "cache")
    assert kept == list(Vault(vault).ledger.histories())


def test_a_warm_command_builds_no_decision_and_parses_no_ledger_line(vault, aged, monkeypatch):
    """What the memos are for: with nothing changed, the next command takes the decisions and the ledger's events
    and histories as kept, without building or parsing any of them again."""
    small_vault(vault)
    expected = answers(vault)

    def not_again(*args, **kwargs):
        raise AssertionError("worked out again, though nothing changed")

    monkeypatch.setattr(vault_module, "build_decision", not_again)
    monkeypatch.setattr(ledger_file_module, "parse_ledger", not_again)
    monkeypatch.setattr(ledger_module, "histories", not_again)
    monkeypatch.setattr(read_module, "unresolved_overlaps", not_again)  # `lookup` takes the pairs as kept
    monkeypatch.setattr(read_module, "unsaid_same_matter", not_again)
    assert answers(vault) == expected


def test_the_same_matter_check_takes_each_decisions_words_from_the_memo(vault, aged, monkeypatch):
    """`ask` refused as the same matter, warm: the words of the decisions it scores are not read again, and the
    refusal is the same; a ruling edited since is read again (its new words count)."""
    small_vault(vault)
    monkeypatch.setattr(same_module, "SHORTLIST", 1)  # shortlisted by the index, as on a large vault
    question = ("Do footers carry the unsubscribe link?", "--topic", "email-footer")
    first = vt_here("ask", *question, cwd=vault)
    assert first.code == 1 and "D-0001" in first.err
    scored: list[str] = []  # the summaries of the decisions whose words are read again (not taken as kept)
    real = decision_words.terms

    def reading(text: str) -> frozenset[str]:
        if "\n" in text:  # a decision's summary, topics and sections (`decision_terms`), not a topic alone
            scored.append(text.split("\n")[0])
        return real(text)
    monkeypatch.setattr(decision_words, "terms", reading)
    assert vt_here("ask", *question, cwd=vault) == first
    assert scored == []
    note = note_path(vault, "D-0001")
    note.write_text(note.read_text(encoding="utf-8").replace("unsubscribe link", "postal address"), encoding="utf-8")
    assert vt_here("ask", *question, cwd=vault) != first
    assert scored == ["Footers carry the postal address."]


def test_words_taken_from_the_memo_are_not_looked_up_there_again_by_the_same_process(vault, aged, monkeypatch):
    """A process answering command after command (the resident process) takes each decision's words from the memo
    once: for the very decisions it holds, the memo is not read again; a decision read again is looked up."""
    small_vault(vault)
    assert vt_here("ask", "Do footers carry the unsubscribe link?", "--topic", "email-footer", cwd=vault).code == 1
    recalled: list[object] = []
    real = state_memo.recall
    monkeypatch.setattr(state_memo, "recall", lambda path, key: recalled.append(key) or real(path, key))
    ws = Workspace(Vault(vault))
    state = ws.state()
    rulings = [d for d in ws.decisions_in_effect(state) if d.status.value == "ruled"]
    for _ in range(3):
        same_module.remember_terms(ws, state, rulings)
    assert recalled.count("decision terms") == 1
    assert all(decision_words._TERMS.get(d) is not None for d in rulings)
    again = Workspace(Vault(vault))
    read_again = again.state()
    same_module.remember_terms(again, read_again, [d for d in again.decisions_in_effect(read_again)
                                                   if d.status.value == "ruled"])
    assert recalled.count("decision terms") == 2


def test_the_words_of_a_ruling_just_written_are_not_looked_up_in_the_memo(vault, monkeypatch):
    """Words are kept in the memo only under a stat key past the racy window: a ruling just written (the pages
    after `rule`) cannot be there, so its words are worked out without reading the memo; once its note has been
    left alone past the window they are kept, and the next process takes them from the memo."""
    small_vault(vault)
    decision(vault, 4, topics=("postal-address",), summary="Footers carry the postal address.")
    recalled: list[object] = []
    real = state_memo.recall
    monkeypatch.setattr(state_memo, "recall", lambda path, key: recalled.append(key) or real(path, key))

    def words_known(*, fresh_process: bool) -> None:
        if fresh_process:
            same_module._REMEMBERED.clear()
        ws = Workspace(Vault(vault))
        state = ws.state()
        same_module.remember_terms(ws, state, [d for d in ws.decisions_in_effect(state) if d.id == "D-0004"])

    words_known(fresh_process=True)
    assert "decision terms" not in recalled
    monkeypatch.setattr(same_module, "time", ClockAhead(PAST_RACY_SECONDS))  # the note left alone since
    words_known(fresh_process=True)
    assert recalled.count("decision terms") == 1  # looked up, worked out, kept
    scored: list[str] = []
    real_terms = decision_words.terms
    monkeypatch.setattr(decision_words, "terms", lambda text: scored.append(text) or real_terms(text))
    decision_words._TERMS.clear()
    words_known(fresh_process=True)
    assert recalled.count("decision terms") == 2 and not [text for text in scored if "\n" in text]  # from the memo


def test_show_takes_one_records_history_from_the_memo_and_it_is_the_one_a_whole_read_ties(vault, aged, monkeypatch):
    """`show` in a process of its own takes the note's record alone from the histories memo (each record is kept
    apart there), tied by the records' summaries: the same history, for every note, as tying every record's
    events gives (a note renamed since it was sealed), and once the ledger has grown since the memo."""
    small_vault(vault)
    renamed = note_path(vault, "D-0001").with_name("D-0001 Footers everywhere.md")
    note_path(vault, "D-0001").rename(renamed)
    ids = ("D-0001", "D-0002", "D-0003")

    def shown() -> list[str]:
        return [vt_here("show", decision_id, "--json", cwd=vault).out for decision_id in ids]

    real_alone = Workspace.history_alone
    monkeypatch.setattr(Workspace, "history_alone", Workspace.history_of)
    assert shown() == shown()  # every memo kept
    tied_whole = shown()
    monkeypatch.setattr(Workspace, "history_alone", real_alone)

    def whole(ledger):
        raise AssertionError("every record's events loaded to show one")
    monkeypatch.setattr(ledger_module.Ledger, "histories", whole)
    assert shown() == tied_whole and json.loads(tied_whole[0])["history"]  # the renamed ruling's, sealed
    monkeypatch.undo()
    withdraw(Workspace(Vault(vault)), "D-0003", "The sponsor left the newsletter.")
    grown = [vt_here("show", decision_id, "--json", cwd=vault).out for decision_id in ids]
    monkeypatch.setattr(Workspace, "history_alone", Workspace.history_of)
    assert grown == shown() != tied_whole


def test_show_meeting_a_write_to_the_ledger_halfway_still_shows_the_notes_record(vault, aged, monkeypatch):
    """`show` looks at the ledger more than once: a look that met an append halfway (and took the ledger as
    unreadable for a moment) does not leave the note without its record once the line is whole."""
    small_vault(vault)
    expected = vt_here("show", "D-0001", "--json", cwd=vault).out
    assert json.loads(expected)["history"]
    ledger = ledger_file(vault)
    whole = ledger.read_bytes()
    last_line = whole.rstrip(b"\n").rfind(b"\n") + 1
    real = Workspace.with_conflict

    def halfway(ws, state, decision):
        ledger.write_bytes(whole[:last_line + 40])  # the last line not all there yet
        try:
            return real(ws, state, decision)
        finally:
            ledger.write_bytes(whole)
    monkeypatch.setattr(Workspace, "with_conflict", halfway)
    assert vt_here("show", "D-0001", "--json", cwd=vault).out == expected


def test_a_refused_ask_takes_the_ledger_as_verified_without_reading_its_events(vault, aged, monkeypatch):
    """A write checks first that the ledger is whole; `ask` refused, warm, takes the ledger a whole read of this
    user's verified, its files as they are now, without reading every event again to refuse."""
    small_vault(vault)
    question = ("Do footers carry the unsubscribe link?", "--topic", "email-footer")
    first = vt_here("ask", *question, cwd=vault)
    assert first.code == 1 and "D-0001" in first.err
    (vault / ".vault-tools" / ledger_module.EVENTS_MEMO).unlink()  # reading the events now parses every line

    def not_again(*args, **kwargs):
        raise AssertionError("the ledger read again, though nothing changed")

    monkeypatch.setattr(ledger_file_module, "parse_ledger", not_again)
    again = vt_here("ask", *question, cwd=vault)
    assert (again.code, again.err) == (first.code, first.err)


def test_a_refused_ruling_reads_no_ledger_event_either(vault, aged, monkeypatch):
    """`rule` refused as the matter of another, warm: no live view is set up for writes it does not make, so the
    ledger's events are not read to refuse it; given `--not-the-same`, it records as before."""
    small_vault(vault)
    ruling = ("rule", "--topic", "email-footer", "--summary", "Footers carry the unsubscribe link.")
    first = vt_here(*ruling, cwd=vault)
    assert first.code == 1 and "D-0001" in first.err
    (vault / ".vault-tools" / ledger_module.EVENTS_MEMO).unlink()
    real = ledger_file_module.parse_ledger

    def not_again(*args, **kwargs):
        raise AssertionError("the ledger read again to refuse a ruling")

    monkeypatch.setattr(ledger_file_module, "parse_ledger", not_again)
    again = vt_here(*ruling, cwd=vault)
    assert (again.code, again.err) == (first.code, first.err)
    monkeypatch.setattr(ledger_file_module, "parse_ledger", real)
    recorded = vt_here(*ruling, "--not-the-same", "D-0001", cwd=vault)
    assert recorded.code == 0, recorded.err
    assert vt_here("build", "--check", cwd=vault).code == 0  # the pages made from the live view, as a build makes them


def test_an_id_only_the_ledger_names_is_not_handed_out_again_from_its_stamp(vault, aged):
    """The stamp a refused command takes the ledger from carries the ids its events name: an id whose note is
    gone is still never given to a new note."""
    small_vault(vault)
    withdraw(Workspace(Vault(vault)), "D-0003", "The sponsor left the newsletter.")
    assert vt_here("ask", "Do footers carry the unsubscribe link?", "--topic", "email-footer", cwd=vault).code == 1
    assert (vault / ".vault-tools" / ledger_module.VERIFIED_MEMO).is_file()
    note_path(vault, "D-0003").unlink()
    asked = vt_here("ask", "Should the podcast get a theme tune?", "--topic", "podcast-music", cwd=vault)
    assert asked.code == 0 and "D-0004" in asked.out, asked.out + asked.err


def test_a_ledger_changed_after_it_was_verified_still_stops_the_next_write(vault, aged):
    small_vault(vault)
    assert vt_here("ask", "Do footers carry the unsubscribe link?", "--topic", "email-footer", cwd=vault).code == 1
    assert (vault / ".vault-tools" / ledger_module.VERIFIED_MEMO).is_file()
    ledger = ledger_file(vault)
    ledger.write_text(ledger.read_text().replace('"owner"', '"0wner"'))  # the same size
    before = sorted(path.name for path in (vault / "Decisions").iterdir())
    asked = vt_here("ask", "Should the podcast get a theme tune?", "--topic", "podcast-music", cwd=vault)
    assert asked.code != 0 and "ledger" in asked.err, asked.err
    assert sorted(path.name for path in (vault / "Decisions").iterdir()) == before


def test_a_ledger_reader_kept_from_command_to_command_writes_no_memo(vault, aged, monkeypatch):
    """The resident process keeps its ledger reader and what it works out in memory, and leaves the memos to the
    commands' own processes and the watcher: after a change, it answers from memory and writes none."""
    small_vault(vault)
    assert vt_here("show", "D-0003", cwd=vault).code == 0
    cache = vault / ".vault-tools" / "cache"
    monkeypatch.setattr(vault_module, "KEEP_LAST_READ", True)
    monkeypatch.setattr(vault_module, "_kept_ledgers", {})
    monkeypatch.setattr(vault_module, "_last_reads", {})
    assert vt_here("show", "D-0003", cwd=vault).code == 0  # the reader kept from here on
    withdraw(Workspace(Vault(vault)), "D-0003", "The sponsor left the newsletter.")
    written = {path.name: path.stat().st_mtime_ns for path in cache.iterdir()}
    shown = json.loads(vt_here("show", "D-0003", "--json", cwd=vault).out)
    assert shown["status"] == "withdrawn"
    for name in (ledger_module.RECORDS_MEMO, ledger_module.HISTORIES_MEMO, ledger_module.EVENTS_MEMO):
        memo = vault / ".vault-tools" / name
        assert written.get(memo.name) == (memo.stat().st_mtime_ns if memo.exists() else None), name
    monkeypatch.setattr(vault_module, "KEEP_LAST_READ", False)
    assert json.loads(vt_here("show", "D-0003", "--json", cwd=vault).out) == shown  # its own process writes them
    assert (vault / ".vault-tools" / ledger_module.RECORDS_MEMO).stat().st_mtime_ns != written[
        ledger_module.RECORDS_MEMO.rsplit("/", 1)[1]]


def test_a_note_read_again_alike_is_the_very_decision_the_process_built_last(vault, monkeypatch):
    """A process keeping its reads (the resident process) hands out the very decision it last built from a note
    read again and found alike in every field (here every note is within the racy window, so read at each load,
    as the note a command has just written is by the next): what it worked out from that object by identity (the
    topic pairing, the pairs on one matter, the words) holds. A note changed in any field, even to a value equal
    under == (the same moment at another offset), or read under other merged topics, is a new decision."""
    small_vault(vault)
    monkeypatch.setattr(vault_module, "KEEP_LAST_READ", True)
    monkeypatch.setattr(vault_module, "_last_reads", {})
    monkeypatch.setattr(vault_module, "_last_built", {})
    note = note_path(vault, "D-0002")
    write(note, note.read_text(encoding="utf-8").replace("T09:00:00", "T10:00:00+01:00"))
    first = Vault(vault).load()
    again = Vault(vault).load()
    assert again is not first and all(new is old for new, old in zip(again.decisions, first.decisions, strict=True))
    write(note, note.read_text(encoding="utf-8").replace("T10:00:00+01:00", "T09:00:00+00:00"))
    moved = Vault(vault).load()
    assert moved.get("D-0002") == first.get("D-0002") and moved.get("D-0002") is not first.get("D-0002")
    assert str(moved.get("D-0002").ruled_at) == "2026-01-03 09:00:00+00:00"
    assert moved.get("D-0001") is first.get("D-0001")
    rel = note_path(vault, "D-0001").relative_to(vault).as_posix()
    assert Vault(vault).read_one(rel).get("D-0001") is first.get("D-0001")  # as a live view reads what it wrote
    write(topics_file(vault), "article-footer: [site-bottom]\n")
    use_topic_aliases({"site-bottom": "article-footer"})  # what every comparison reads from here: as a read sets
    assert Vault(vault).read_one(rel).get("D-0001") is not first.get("D-0001")
    merged = Vault(vault).load()
    assert merged.get("D-0001") == first.get("D-0001") and merged.get("D-0001") is not first.get("D-0001")
    monkeypatch.setattr(vault_module, "KEEP_LAST_READ", False)  # a process of its own keeps none
    assert Vault(vault).load().get("D-0001") is not Vault(vault).load().get("D-0001")


def test_a_note_made_a_decision_in_place_is_seen_at_once(vault, aged):
    small_vault(vault)
    assert vt_here("lookup", "glossary", cwd=vault).code == 1
    plain = vault / "Notes" / "Plain.md"
    write(plain, "---\ntype: decision\nid: D-0004\nstatus: ruled\ntopics: [glossary]\nsummary: Terms are defined "
                 "once.\nruled_at: 2026-07-01T10:00:00\nruled_by: owner\n---\n## Ruling\n\nOnce.\n")
    listed = json.loads(vt_here("list", "--topic", "glossary", "--json", cwd=vault).out)
    assert [(item["id"], item["status"]) for item in listed] == [("D-0004", "ruled")]


def test_a_ruling_edited_in_place_at_the_same_size_is_read_again(vault, aged):
    small_vault(vault)
    assert "unsubscribe" in vt_here("show", "D-0001", cwd=vault).out
    note = note_path(vault, "D-0001")
    text = note.read_text(encoding="utf-8")
    note.write_text(text.replace("unsubscribe", "UNSUBSCRIBE"), encoding="utf-8")
    assert "UNSUBSCRIBE" in vt_here("show", "D-0001", "--json", cwd=vault).out


def test_a_line_another_process_appended_to_the_ledger_is_seen(vault, aged):
    small_vault(vault)
    assert vt_here("show", "D-0003", cwd=vault).code == 0
    ws = Workspace(Vault(vault))  # another process's write, as far as the memo can tell
    withdraw(ws, "D-0003", "The sponsor left the newsletter.")
    shown = json.loads(vt_here("show", "D-0003", "--json", cwd=vault).out)
    assert shown["status"] == "withdrawn"
    assert [event["event"] for event in shown["history"]][-1] == "withdrawn"


class Planted:
    """What a hostile memo would run if it were unpickled."""

    def __reduce__(self):
        return (os.mkdir, (os.environ["PLANTED_AT"],))


@pytest.mark.parametrize("signed_by", ["nobody", "another user", "this user, the way signatures were made before"])
def test_a_memo_this_user_did_not_sign_is_never_unpickled(vault, aged, tmp_path, monkeypatch, signed_by):
    small_vault(vault)
    expected = answers(vault)
    marker = tmp_path / "ran"
    monkeypatch.setenv("PLANTED_AT", str(marker))
    payload = pickle.dumps((state_memo.code_fingerprint(), None)) + pickle.dumps(Planted())
    signature = b"\0" * state_memo.SIGNATURE_BYTES
    if signed_by == "another user":
        signature = state_memo._sign(b"k" * 32, payload)
    elif signed_by.startswith("this user"):  # a keyed BLAKE2b MAC with this user's own key, until 2026-12-07
        key = state_memo._user_key()
        assert key is not None
        signature = hashlib.blake2b(payload, key=key[:64], digest_size=state_memo.SIGNATURE_BYTES).digest()
    for memo in (STATE_MEMO, ledger_module.EVENTS_MEMO, ledger_module.HISTORIES_MEMO):
        (vault / ".vault-tools" / memo).write_bytes(signature + payload)
    assert answers(vault) == expected
    assert not marker.exists()


def test_without_a_home_for_the_key_the_commands_read_the_vault(vault, aged, monkeypatch, tmp_path):
    small_vault(vault)
    expected = answers(vault)
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    shutil.rmtree(vault / ".vault-tools" / "cache")
    assert answers(vault) == expected
    assert not (vault / ".vault-tools" / STATE_MEMO).exists()


def test_a_note_written_within_the_racy_window_is_not_kept(vault):
    """No clock moved ahead: every note was just written, so none is kept (a write in the same tick could
    leave its stat key as it was); the answer is read from the notes."""
    small_vault(vault)
    assert vt_here("lookup", "article-footer", cwd=vault).code == 0
    read = Vault(vault)
    kept, _ = state_memo.recall_mapping(vault / ".vault-tools" / STATE_MEMO,
                                        read._memo_key(load_aliases(read.record_dir)))
    assert kept == {}


def test_after_an_append_the_next_command_reads_only_the_lines_appended(vault, aged, monkeypatch):
    """The first command after a ruling was recorded elsewhere (another process) takes the ledger's events as kept
    and parses only the line added since; what it finds is what a read of the whole ledger finds."""
    small_vault(vault)
    expected = answers(vault)
    withdraw(Workspace(Vault(vault)), "D-0003", "The sponsor left the newsletter.")
    parsed: list[str] = []
    real = ledger_file_module.parse_ledger

    def parse(text: str, *args, **kwargs):
        parsed.append(text)
        return real(text, *args, **kwargs)
    monkeypatch.setattr(ledger_file_module, "parse_ledger", parse)
    shown = json.loads(vt_here("show", "D-0003", "--json", cwd=vault).out)
    assert shown["status"] == "withdrawn" and shown["history"][-1]["event"] == "withdrawn"
    assert len(parsed) == 1 and parsed[0].count("\n") == 1 and '"withdrawn"' in parsed[0]
    monkeypatch.setattr(ledger_file_module, "parse_ledger", real)
    after = answers(vault)
    shutil.rmtree(vault / ".vault-tools" / "cache")
    assert answers(vault) == after != expected


def test_after_a_few_notes_changed_only_they_are_looked_up_in_the_note_cache(vault, aged, monkeypatch):
    """The first command after an edit, a deletion and a note made a decision takes every other note from the
    memo and asks the note cache for the changed ones only; its answers are those of a cold read, and the cache
    forgets the deleted note."""
    small_vault(vault)
    answers(vault)
    answers(vault)
    note = next((vault / "Decisions").glob("D-0002*.md"))
    note.write_text(note.read_text(encoding="utf-8").replace("Prices are shown with tax.",
                                                             "Prices are shown with tax and in euros."))
    next((vault / "Decisions").glob("D-0003*.md")).unlink()
    plain = vault / "Notes" / "Plain.md"
    plain.write_text("---\ntype: decision\nstatus: open\ntopics: [reader-mail]\nsummary: \"Do we answer reader "
                     "mail within a day?\"\n---\n")
    asked: list[object] = []
    load = vault_module.NoteCache.load

    def load_recorded(self, only=None):
        asked.append(None if only is None else sorted(only))
        return load(self, only)

    monkeypatch.setattr(vault_module.NoteCache, "load", load_recorded)
    changed = answers(vault)
    assert asked and all(paths == [note.relative_to(vault).as_posix(), "Notes/Plain.md"] for paths in asked)
    monkeypatch.setattr(vault_module.NoteCache, "load", load)
    stored = vault_module.NoteCache(vault / ".vault-tools" / vault_module.CACHE_FILE).load()
    assert "Notes/Plain.md" in stored and not any(path.startswith("Decisions/D-0003") for path in stored)
    shutil.rmtree(vault / ".vault-tools" / "cache")
    assert changed == answers(vault)  # a cold read
    assert "euros" in changed[0][1] + changed[1][1] and "reader-mail" not in changed[0][1]


def test_a_read_after_writing_a_note_keeps_the_memo_it_took(vault, aged):
    """A command that reads the vault again after writing a note (a ruling's pages) finds only that note new,
    written within the racy window: the memo would hold what it holds already, and is not written again."""
    small_vault(vault)
    answers(vault)
    memo = vault / ".vault-tools" / STATE_MEMO
    before = memo.stat()
    new = decision(vault, 4, topics=("reader-mail",), summary="Reader mail is answered within a day.")
    now_ahead = time.time_ns() + int(PAST_RACY_SECONDS * 1e9)  # as the clock ahead reads it: just written
    os.utime(new, ns=(now_ahead, now_ahead))
    assert vt_here("lookup", "reader-mail", cwd=vault).out.count("D-0004") >= 1
    after = memo.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_ask_and_rule_refuse_on_the_rulings_alone_without_pairing_every_ruling(vault, monkeypatch):
    """The pairs of rulings nobody related are `lookup`'s to show; `ask` refused on a settled topic and `rule`
    told to say how it stands to the ruling on its topic do not work them out (after a change they cost a
    tenth of a second on a large vault)."""
    small_vault(vault)

    def not_needed(*args, **kwargs):
        raise AssertionError("the pairs of every ruling were worked out")

    monkeypatch.setattr(read_module, "unresolved_overlaps", not_needed)
    monkeypatch.setattr(read_module, "unsaid_same_matter", not_needed)
    asked = vt_here("ask", "What do footers carry?", "--topic", "article-footer", cwd=vault)
    assert asked.code == 1 and "topic article-footer is settled" in asked.err
    ruled = vt_here("rule", "--topic", "article-footer", "--summary", "Footers carry the unsubscribe link and the "
                    "address.", "--source", "chat", cwd=vault)
    assert ruled.code == 1 and "say whether this one replaces them" in ruled.err


def test_a_ruling_that_names_no_question_reads_no_records_events_to_be_refused(vault, monkeypatch):
    """A ruling given directly closes the open questions it names in `supersedes` (design 0039): only then are
    the records' events read to check them. Refused as the matter of a ruling under other topics, one that names
    none reads no record's events; one naming an open question still answers and closes it."""
    small_vault(vault)
    real = ledger_module.Ledger.histories
    monkeypatch.setattr(ledger_module.Ledger, "histories", lambda ledger: pytest.fail("every record's events read"))
    refused = vt_here("rule", "--topic", "email-footer", "--summary", "Footers carry the unsubscribe link.",
                      "--source", "chat", cwd=vault)
    assert refused.code == 1 and "D-0001" in refused.err
    monkeypatch.setattr(ledger_module.Ledger, "histories", real)
    answered = vt_here("rule", "--topic", "sponsor-slot", "--summary", "Sponsors may not choose the slot; the "
                       "editor places them.", "--supersedes", "D-0003", "--reason", "The owner answered the "
                       "question in the weekly review.", "--source", "chat", cwd=vault)
    assert answered.code == 0, answered.err
    assert "status: withdrawn" in note_path(vault, "D-0003").read_text(encoding="utf-8")


def test_a_process_keeping_its_last_read_answers_as_one_that_reads_again(vault, aged, monkeypatch):
    """The resident process keeps its last whole read and its ledger reader between commands
    (`vault.KEEP_LAST_READ`): after each change (a note edited at the same size with its time set back, a ledger
    line another process appended, a ledger line taken away, a note made, the config changed) its answers are
    those of a process that keeps nothing; unchanged, it takes the notes as kept without recalling the memo."""
    small_vault(vault)
    recalled: list[str] = []
    for name in ("recall", "recall_mapping"):  # the state memo is a mapping, recalled with its delta
        def recall(path, key, real=getattr(state_memo, name)):
            recalled.append(path.name)
            return real(path, key)
        monkeypatch.setattr(state_memo, name, recall)

    searched: list[str] = []
    real_docs = SearchIndex._docs

    def docs(index, connection):
        searched.append(str(index.path))
        return real_docs(index, connection)
    monkeypatch.setattr(SearchIndex, "_docs", docs)

    memo_name = STATE_MEMO.split("/")[-1]

    def both(kept_before: bool = True) -> list[tuple[int, str]]:
        for keep in (False, True):  # the index's decisions in effect and rows kept too (`index.KEEP_*`)
            monkeypatch.setattr(vault_module, "KEEP_LAST_READ", keep)
            monkeypatch.setattr(index_module, "KEEP_DOCS_IN_EFFECT", keep)
            monkeypatch.setattr(index_module, "KEEP_ROWS", keep)
            if not keep:
                alone = answers(vault)
        recalled.clear()
        assert answers(vault) == alone
        # after a change, the notes it kept stand for the memo: only what changed is read
        assert (memo_name in recalled) is not kept_before, recalled
        recalled.clear()
        searched.clear()
        assert answers(vault) == alone
        return alone

    first = both(kept_before=False)
    assert STATE_MEMO.split("/")[-1] not in recalled and not searched  # taken as kept
    note = note_path(vault, "D-0001")
    before = note.stat()
    note.write_text(note.read_text(encoding="utf-8").replace("unsubscribe", "UNSUBSCRIBE"), encoding="utf-8")
    os.utime(note, ns=(before.st_atime_ns, before.st_mtime_ns))
    edited = both()
    assert edited != first and "UNSUBSCRIBE" in "".join(out for _, out in edited)
    withdraw(Workspace(Vault(vault)), "D-0003", "The sponsor left the newsletter.")
    assert both() != edited
    def history() -> list[str]:
        return [event["event"] for event in json.loads(vt_here("show", "D-0003", "--json", cwd=vault).out)["history"]]
    assert history()[-1] == "withdrawn"  # the process keeping its ledger reader: as the ledger stands
    ledger = ledger_file(vault)  # the withdrawal's line taken away: the ledger alone changed
    ledger.write_bytes(b"".join(ledger.read_bytes().splitlines(keepends=True)[:-1]))
    both()
    assert "withdrawn" not in history()
    decision(vault, 4, topics=("article-footer",), summary="Footers also carry the postal address.")
    both()
    misnamed = vault / "Decisions" / os.fsdecode(b"D-0009 caf\xe9.md")  # a name that is not UTF-8
    misnamed.write_text("just a note\n", encoding="utf-8")
    both(kept_before=False)
    misnamed.write_text("---\ntype: decision\nid: D-0009\nstatus: open\ntopics: [cafe]\nsummary: Should the "
                        "cafe page list prices with tax?\n---\n", encoding="utf-8")  # what is said of it changes
    assert "not valid UTF-8" in vt_here("show", "D-0009", cwd=vault).err
    both(kept_before=False)
    misnamed.unlink()
    broken = write(vault / "Decisions" / "D-0010 Torn.md", "---\ntype: decision\nid: D-0010\nstatus: [open\n---\n")
    both(kept_before=False)
    kept = vault_module._last_reads[str(vault)][1]
    error = next(error for error in kept.broken if error.path == broken.relative_to(vault).as_posix())
    frames = []
    for _ in range(4):  # each command raises the kept note's error again: its frames do not pile up
        assert vt_here("show", "D-0010", cwd=vault).code != 0
        frames.append(len(traceback.extract_tb(error.__traceback__)))
    assert len(set(frames)) == 1, frames
    config = config_file(vault)
    config.write_text(config.read_text(encoding="utf-8") + "pinned_folder: Elsewhere\n", encoding="utf-8")
    both(kept_before=False)  # notes are built with the config: none is taken as kept
    index = vault / ".vault-tools" / INDEX_FILE  # made again by another process: its rows numbered anew
    rows = sqlite3.connect(index)
    rows.execute("UPDATE docs SET rowid = rowid + 1000")
    rows.execute("UPDATE search SET rowid = rowid + 1000")
    rows.execute("UPDATE files SET doc = doc + 1000")
    rows.commit()
    rows.close()
    both()


def test_a_process_keeping_the_index_rows_searches_as_one_that_reads_them(vault, aged, monkeypatch):
    """The resident process keeps the search index's rows of notes between commands (`index.KEEP_ROWS`): after
    each change (a note made, edited, renamed, removed) its searches find what a process reading the rows finds,
    without reading them; once another process wrote the index, or its rows were numbered anew, it reads them.
    While they hold every note, nothing is compared."""
    small_vault(vault)
    monkeypatch.setattr(index_module, "KEEP_ROWS", True)
    steps: list[str] = []  # the rows read from the index, the notes compared with them
    real_rows_read, real_sync_notes = SearchIndex._rows_read, SearchIndex._sync_notes

    def rows_read(connection):
        steps.append("read")
        return real_rows_read(connection)

    def sync_notes(index, connection, listing, rows, *stamp_and_digest):
        steps.append("compared")
        return real_sync_notes(index, connection, listing, rows, *stamp_and_digest)
    monkeypatch.setattr(SearchIndex, "_rows_read", staticmethod(rows_read))
    monkeypatch.setattr(SearchIndex, "_sync_notes", sync_notes)
    words = ("footer", "unsubscribe", "tax", "sponsors", "postal address", "kiosk")

    def searched(*, rows_read: bool, compared: bool = True) -> list[str]:
        steps.clear()
        kept = [vt_here("search", word, "--history", "--json", cwd=vault).out for word in words]
        assert steps == ["read"] * rows_read + ["compared"] * compared, steps
        monkeypatch.setattr(index_module, "KEEP_ROWS", False)
        assert [vt_here("search", word, "--history", "--json", cwd=vault).out for word in words] == kept
        monkeypatch.setattr(index_module, "KEEP_ROWS", True)
        return kept

    monkeypatch.setattr(index_module, "KEEP_ROWS", False)
    assert vt_here("search", "footer", cwd=vault).code == 0  # the index built by a process keeping nothing
    monkeypatch.setattr(index_module, "KEEP_ROWS", True)
    first = searched(rows_read=True, compared=False)  # its rows hold every note: read once, nothing written
    assert "D-0001" in first[0]
    decision(vault, 4, topics=("article-footer",), summary="Footers also carry the postal address.")
    assert "D-0004" in searched(rows_read=False)[4]
    note = note_path(vault, "D-0001")
    note.write_text(note.read_text(encoding="utf-8").replace("unsubscribe link", "kiosk hours"), encoding="utf-8")
    edited = searched(rows_read=False)
    assert "D-0001" in edited[5] and "D-0001" not in edited[1]
    renamed = note.with_name("D-0001 Footers and kiosks.md")
    note.rename(renamed)
    assert searched(rows_read=False) != edited  # the path a hit names
    note_path(vault, "D-0004").unlink()
    assert "D-0004" not in searched(rows_read=False)[4]
    # another process brings the index up to date with an edit; the next edit is compared with the rows it left
    renamed.write_text(renamed.read_text(encoding="utf-8").replace("kiosk hours", "tide tables"), encoding="utf-8")
    assert vt("search", "tide", cwd=vault).code == 0
    renamed.write_text(renamed.read_text(encoding="utf-8").replace("tide tables", "kiosk hours"), encoding="utf-8")
    assert "D-0001" in searched(rows_read=True)[5]
    with sqlite3.connect(vault / ".vault-tools" / INDEX_FILE) as rows:  # numbered anew by another program
        rows.execute("UPDATE docs SET rowid = rowid + 1000")
        rows.execute("UPDATE search SET rowid = rowid + 1000")
        rows.execute("UPDATE files SET doc = doc + 1000")
    renamed.write_text(renamed.read_text(encoding="utf-8").replace("kiosk hours", "unsubscribe link"),
                       encoding="utf-8")
    renumbered = searched(rows_read=True)
    assert "D-0001" in renumbered[1] and "D-0001" not in renumbered[5]


def test_rows_another_process_writes_while_they_are_compared_are_read_again(vault, aged, monkeypatch):
    """A process keeping the index's rows (`index.KEEP_ROWS`) takes them once it has read the listing stamp; if
    another process writes rows before this one takes the write's lock, they are read again under it: each note
    stays one document, and searches find what a process reading the rows finds."""
    small_vault(vault)
    monkeypatch.setattr(index_module, "KEEP_ROWS", True)
    assert vt_here("search", "footer", cwd=vault).code == 0
    note = note_path(vault, "D-0002")

    def edit(old: str, new: str) -> None:
        note.write_text(note.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")

    edit("shown with tax", "shown with tide tables")
    real = SearchIndex._rows_kept
    raced: list[str] = []

    def kept_while_another_writes(index, stamp):
        rows = real(index, stamp)
        if not raced:
            raced.append(stamp)
            edit("tide tables", "kiosk hours")
            assert vt("search", "kiosk", cwd=vault).code == 0  # another process indexes D-0002 meanwhile
        return rows
    monkeypatch.setattr(SearchIndex, "_rows_kept", kept_while_another_writes)
    here = vt_here("search", "prices", "--json", cwd=vault).out
    assert raced
    with sqlite3.connect(vault / ".vault-tools" / INDEX_FILE) as rows:
        assert rows.execute("SELECT count(*) FROM docs WHERE id = 'D-0002'").fetchone() == (1,)
    assert [hit["id"] for hit in json.loads(here)] == ["D-0002"]
    assert vt_here("search", "kiosk", "--json", cwd=vault).out == vt("search", "kiosk", "--json", cwd=vault).out


def test_rule_and_ask_walk_the_vault_once_and_leave_the_pages_a_build_would_make(vault, aged, monkeypatch):
    """`rule` and `ask` read the vault once: the pages they rebuild after writing, and what `ask` says after
    (a retracted ruling on its topic), come from what they read and what they wrote (`services.live`), and
    they are the pages a build from a fresh read makes."""
    small_vault(vault)
    loads: list[str] = []
    real_load = Vault.load

    def load(self):
        loads.append(str(self.root))
        return real_load(self)
    monkeypatch.setattr(Vault, "load", load)
    for args in (("rule", "--topic", "glossary", "--summary", "Every term is defined once, in the glossary note.",
                  "--source", "chat"),
                 ("rule", "--topic", "pricing", "--summary", "Prices are shown without tax for business customers.",
                  "--supersedes", "D-0002", "--reason", "Business customers asked for it twice this spring."),
                 ("ask", "Should the newsletter go out on Tuesdays instead of Thursdays?", "--topic", "newsletter-day"),
                 ("rule", "D-0006", "--summary", "The newsletter goes out on Tuesdays from May on.", "--source", "chat")):
        loads.clear()
        done = vt_here(*args, cwd=vault)
        assert done.code == 0, (args, done.err)
        assert len(loads) == 1, args
        assert vt_here("build", "--check", cwd=vault).code == 0, args
    pages = (vault / "Pinned" / "Decisions log.md").read_text(encoding="utf-8")
    assert "D-0004" in pages and "D-0005" in pages and "Tuesdays" in pages


def test_a_write_after_the_pages_reads_the_vault_again(vault):
    """After the pages, a command says what it says from the state its write left (`Workspace.keeps`); a
    write after that reads the vault as it is then, a note saved meanwhile included."""
    small_vault(vault)
    ws = Workspace(Vault(vault))
    kept = ws.state()
    ws.keeps(kept)
    decision(vault, 9, topics=("podcast",), summary="The podcast stays monthly.")
    assert ws.state() is kept
    assert "D-0009" in ws.state_for_write(("podcast",)).by_id() and ws.state() is not kept


@pytest.mark.parametrize("command", [
    ("rule", "--topic", "glossary", "--summary", "Every term is defined once, in the glossary note.", "--source",
     "chat"),
    ("ask", "Should the newsletter go out on Tuesdays instead of Thursdays?", "--topic", "newsletter-day")])
def test_a_note_the_owner_saves_while_a_command_writes_is_on_the_pages_it_rebuilds(vault, aged, monkeypatch,
                                                                                   command):
    """The owner saves a question in Obsidian while `rule` or `ask` is recording (after it read the vault): the
    pages it rebuilds are made from the vault as it is then, not from what it read and wrote alone."""
    small_vault(vault)
    question = note_path(vault, "D-0003")
    real_append = ledger_module.Ledger.append

    def append(self, events, *args, **kwargs):
        done = real_append(self, events, *args, **kwargs)
        question.write_text(question.read_text(encoding="utf-8").replace(
            "May sponsors choose the slot?", "May sponsors choose the slot and the wording?"), encoding="utf-8")
        return done
    monkeypatch.setattr(ledger_module.Ledger, "append", append)
    assert vt_here(*command, cwd=vault).code == 0
    monkeypatch.setattr(ledger_module.Ledger, "append", real_append)
    assert "and the wording" in (vault / "Pinned" / "Open questions.md").read_text(encoding="utf-8")
    assert vt_here("build", "--check", cwd=vault).code == 0

