from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vault_tools import notes
from vault_tools.errors import InconsistentVault
from vault_tools.ledger import Ledger
from vault_tools.ledger_lines import Event, parse_ledger
from vault_tools.links import LinkResolver
from vault_tools.meaning import seal_hash
from vault_tools.model import Status, build_decision
from vault_tools.record_files import LEDGER_LOCK

from .helpers import write

TZ = ZoneInfo("Asia/Tokyo")

event_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60)
events = st.builds(
    Event, event=st.sampled_from(["asked", "ruled", "sealed", "superseded"]),
    id=st.integers(1, 9999).map(lambda n: f"D-{n:04d}"), at=st.just("2026-11-29T12:00:00Z"),
    actor=event_text, path=event_text, text=st.one_of(st.none(), event_text),
    reason=st.one_of(st.none(), event_text), supersedes=st.lists(st.just("D-0001"), max_size=2).map(tuple))


@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(batch=st.lists(events, max_size=8))
def test_appended_events_read_back_equal(tmp_path, batch):
    ledger = Ledger(tmp_path / f"l{abs(hash(tuple(batch)))}")
    ledger.path.parent.mkdir(exist_ok=True)
    ledger.path.unlink(missing_ok=True)
    with ledger.locked():
        ledger.append(batch)
    assert ledger.read() == batch


@settings(max_examples=200, deadline=None)
@given(event=events, topics=st.lists(event_text, max_size=2).map(tuple), was=st.one_of(st.none(), event_text))
def test_a_text_encoded_ahead_makes_the_line_encoding_it_here_makes(event, topics, was):
    """A child working ahead hands over the texts of events to come as JSON: the line that splices one in
    is the very line (checksum included) that encoding the text here gives, whatever the text holds and
    whichever fields come after `text`."""
    from dataclasses import replace

    from vault_tools.ledger_lines import encode_text, encoded_ahead, event_line, forget_encoded_ahead

    event = replace(event, topics=topics, was=was)
    expected = event_line(event)
    if event.text is not None:
        encoded_ahead(event.text, encode_text(event.text))
    try:
        assert event_line(event) == expected
    finally:
        forget_encoded_ahead()
    assert parse_ledger(expected, "ledger.jsonl") == [replace(event, line=1, position=1)]


def test_a_torn_last_line_is_reported_to_readers_and_cut_off_by_the_next_writer_with_its_bytes_kept(tmp_path):
    """A kill in the middle of an append leaves a partial line that no reader can trust and no writer may
    append after; its events were never acknowledged. The next write on this device cuts it off."""
    ledger = Ledger(tmp_path)
    event = Event("asked", "D-0001", "2026-11-29T12:00:00Z", "agent", "Decisions/D-0001 x.md")
    with ledger.locked():
        ledger.append([event])
    whole = ledger.path.read_bytes()
    with open(ledger.path, "ab") as handle:
        handle.write(b'{"actor":"agent","at":"2026-')
    with pytest.raises(InconsistentVault, match="torn last line") as caught:
        Ledger(tmp_path).read()
    assert caught.value.line == 2
    second = Event("asked", "D-0002", "2026-11-29T12:05:00Z", "agent", "Decisions/D-0002 y.md")
    with ledger.locked():
        ledger.append([second])
    assert [e.id for e in Ledger(tmp_path).read()] == ["D-0001", "D-0002"]
    assert ledger.path.read_bytes().startswith(whole)
    kept = list((tmp_path / "kept").iterdir())
    assert [path.read_bytes() for path in kept] == [b'{"actor":"agent","at":"2026-']
    assert kept[0].name.startswith("torn ledger line ledger.jsonl ")


def test_a_whole_last_event_without_its_newline_is_kept_and_given_one(tmp_path):
    ledger = Ledger(tmp_path)
    event = Event("asked", "D-0001", "2026-11-29T12:00:00Z", "agent", "Decisions/D-0001 x.md")
    with ledger.locked():
        ledger.append([event])
    ledger.path.write_bytes(ledger.path.read_bytes().rstrip(b"\n"))  # an editor that strips the last newline
    with ledger.locked():
        ledger.append([Event("asked", "D-0002", "2026-11-29T12:05:00Z", "agent", "Decisions/D-0002 y.md")])
    assert [e.id for e in Ledger(tmp_path).read()] == ["D-0001", "D-0002"]
    assert not (tmp_path / "kept").exists()


def test_a_changed_line_fails_its_checksum():
    good = Event("asked", "D-0001", "2026-11-29T12:00:00Z", "agent", "p.md")
    from vault_tools.ledger_lines import event_line
    line = event_line(good).replace("agent", "owner")
    with pytest.raises(InconsistentVault, match="checksum") as caught:
        parse_ledger(event_line(good) + line, "ledger.jsonl")
    assert caught.value.line == 2


# -- seal hash: what is and is not an edit ---------------------------------------------

SEALED = """---
type: decision
id: D-0002
status: ruled
topics: [article-footer, promotion]
summary: Footers carry only the author bio, no promotion.
ruled_at: 2026-07-17T08:30:00
ruled_by: owner
supersedes: ["[[D-0001 Old footer rule]]"]
tags: [publishing]
---
## Ruling
Only the bio.
"""


def hash_of(text: str, *, old_title: str = "D-0001 Old footer rule", tmp: Path) -> str:
    path = write(tmp / "D-0002 New.md", text)
    note = notes.read_note(path)
    decision, _problems = build_decision(note.data, path="D-0002 New.md", body=note.body, key_lines=note.key_lines)
    old, _ = build_decision({"type": "decision", "id": "D-0001", "status": "superseded", "topics": ["a"],
                             "summary": "x" * 20, "ruled_at": "2026-01-01", "superseded_by": "[[D-0002 New]]",
                             "reason": "y" * 20}, path=f"Decisions/{old_title}.md")
    return seal_hash(decision, LinkResolver([decision, old]), TZ)


@pytest.mark.parametrize("variant", [
    SEALED.replace("status: ruled", "status: 'ruled'").replace("ruled_by: owner", 'ruled_by: "owner"'),
    SEALED.replace("topics: [article-footer, promotion]", "topics:\n  - article-footer\n  - promotion"),
    SEALED.replace("ruled_by: owner\n", "").replace("type: decision\n", "type: decision\nruled_by: owner\n"),
    SEALED.replace("\n", "\r\n"),
    SEALED.replace("tags: [publishing]", "tags: [publishing, new-tag]\nmodified: 2026-11-29"),
    SEALED.replace("ruled_at: 2026-07-17T08:30:00", "ruled_at: 2026-07-16T23:30:00Z"),
], ids=["requoted", "block-list", "reordered", "crlf", "owner-properties", "same-instant-utc"])
def test_seal_hash_ignores_what_is_not_an_edit(tmp_path, variant):
    assert hash_of(variant, tmp=tmp_path) == hash_of(SEALED, tmp=tmp_path)


def test_seal_hash_follows_a_renamed_linked_note(tmp_path):
    renamed = SEALED.replace("[[D-0001 Old footer rule]]", "[[D-0001 Footer rule, renamed]]")
    assert hash_of(renamed, old_title="D-0001 Footer rule, renamed", tmp=tmp_path) == hash_of(SEALED, tmp=tmp_path)


@pytest.mark.parametrize("edit", [
    ("Only the bio.", "Only the bio, and a newsletter link."),
    ("summary: Footers carry only the author bio, no promotion.", "summary: Footers carry the bio and a promotion."),
    ("topics: [article-footer, promotion]", "topics: [article-footer]"),
    ("ruled_at: 2026-07-17T08:30:00", "ruled_at: 2026-07-18T08:30:00"),
], ids=["body", "summary", "topics", "ruled_at"])
def test_seal_hash_changes_with_meaning(tmp_path, edit):
    assert hash_of(SEALED.replace(*edit), tmp=tmp_path) != hash_of(SEALED, tmp=tmp_path)


# -- property: the seal covers meaning, not formatting -----------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

words = st.lists(st.sampled_from(["footer", "article", "newsletter", "promotion", "reader", "reply", "bio", "link", "sale"]),
                 min_size=4, max_size=10).map(" ".join)
topic = st.from_regex(r"[a-z]{3,8}(-[a-z]{3,8})?", fullmatch=True)


def _scalar(value: str, style: str) -> str:
    if style == "double":
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if style == "single":
        return "'" + value.replace("'", "''") + "'"
    return value


@settings(max_examples=80, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(summary=words, topics=st.lists(topic, min_size=1, max_size=3, unique=True), body=words,
       styles=st.lists(st.sampled_from(["plain", "single", "double"]), min_size=4, max_size=4),
       flow=st.booleans(), order=st.permutations(range(8)), crlf=st.booleans(), old_title=words)
def test_seal_hash_is_unchanged_by_quoting_order_line_endings_and_renames(
        tmp_path, summary, topics, body, styles, flow, order, crlf, old_title):
    summary = summary.capitalize() + " and then some more words."
    link = "[[D-0001 Old footer rule]]"
    topic_lines = ("topics: [" + ", ".join(topics) + "]") if flow else "topics:\n" + "".join(f"  - {t}\n" for t in topics).rstrip("\n")
    canonical = ["type: decision", "id: D-0002", "status: ruled", "topics: [" + ", ".join(topics) + "]",
                 f"summary: {_scalar(summary, 'double')}", "ruled_at: 2026-07-17T08:30:00", "ruled_by: owner",
                 f'supersedes: ["{link}"]']
    variant = ["type: decision", f"id: {_scalar('D-0002', styles[0])}", f"status: {_scalar('ruled', styles[1])}",
               topic_lines, f"summary: {_scalar(summary, styles[2])}", "ruled_at: 2026-07-17T08:30:00",
               f"ruled_by: {_scalar('owner', styles[3])}",
               f'supersedes: ["[[D-0001 {old_title}|old]]"]']
    variant = [variant[i] for i in order]
    text = "---\n" + "\n".join(canonical) + "\n---\n" + body + "\n"
    other = "---\n" + "\n".join(variant) + "\n---\n" + body + "\n"
    if crlf:
        other = other.replace("\n", "\r\n")
    assert hash_of_text(text, "D-0001 Old footer rule", tmp_path) == hash_of_text(other, f"D-0001 {old_title}", tmp_path)


def hash_of_text(text: str, old_title: str, tmp: Path) -> str:
    path = tmp / "D-0002 New.md"
    path.write_bytes(text.encode())
    note = notes.read_note(path)
    decision, problems = build_decision(note.data, path="D-0002 New.md", body=note.body, key_lines=note.key_lines)
    assert decision is not None and not problems, problems
    old, _ = build_decision({"type": "decision", "id": "D-0001", "status": "superseded", "topics": ["a"],
                             "summary": "x" * 20, "ruled_at": "2026-01-01", "superseded_by": "[[D-0002 New]]",
                             "reason": "y" * 20}, path=f"Decisions/{old_title}.md")
    return seal_hash(decision, LinkResolver([decision, old]), TZ)


def test_a_long_lived_reader_sees_exactly_what_is_on_disk_after_appends(tmp_path):
    """The watcher keeps one Ledger for hours: its memory of the file must never drift from the file."""
    ledger = Ledger(tmp_path)
    other_process = Ledger(tmp_path)
    first = Event("asked", "D-0001", "2026-11-29T12:00:00Z", "agent", "a.md")
    with ledger.locked():
        ledger.append([first])
    assert ledger.read() == [first]
    second = Event("ruled", "D-0001", "2026-11-29T12:01:00Z", "owner", "a.md", hash="sha256:x")
    with ledger.locked():
        ledger.append([second])
    third = Event("sealed", "D-0001", "2026-11-29T12:02:00Z", "owner", "a.md", hash="sha256:x", text="t")
    with other_process.locked():
        other_process.append([third])  # written by someone else: the first reader must notice
    on_disk = parse_ledger(ledger.path.read_text(), "ledger.jsonl")
    assert ledger.read() == on_disk == [first, second, third]


def test_appended_events_extend_the_records_as_reading_them_all_again_does(tmp_path):
    """A long-running process that appends (the watcher's reconcile) extends the records it has instead of
    reading every event again: the same records, with the same events, ids and order."""
    from vault_tools.history import histories

    ledger = Ledger(tmp_path)
    first = [Event("asked", "D-0001", "2026-01-01T00:00:00Z", "agent", "Decisions/D-0001 A.md", record="r1"),
             Event("asked", "D-0002", "2026-01-01T00:00:00Z", "agent", "Decisions/D-0002 B.md", record="r2")]
    ledger.append(first)
    before = ledger.histories()
    assert [(s.id, s.status) for s in ledger.summaries()] == [("D-0001", Status.OPEN), ("D-0002", Status.OPEN)]
    later = [Event("ruled", "D-0001", "2026-01-02T00:00:00Z", "owner", "Decisions/D-0001 A.md", record="r1"),
             Event("renumbered", "D-0007", "2026-01-03T00:00:00Z", "owner", "Decisions/D-0007 B.md", record="r2",
                   was="D-0002"),
             Event("asked", "D-0008", "2026-01-03T00:00:00Z", "agent", "Decisions/D-0008 C.md", record="r3"),
             first[0]]  # a line a union merge kept twice
    ledger.append(later)
    extended = ledger.histories()
    again = histories(parse_ledger(ledger.path.read_text(), "ledger"))
    assert extended is not before and before["r1"].events == [first[0]]  # what was handed out stays as it was
    assert list(extended) == list(again)
    for record, history in again.items():
        assert (extended[record].id, extended[record].events) == (history.id, history.events)
    # what each record stands at follows the events appended (worked out once for each record as it stands)
    assert [(s.id, s.status, s.paths) for s in ledger.summaries()] == \
        [(h.id, h.status, h.paths) for h in again.values()] == \
        [("D-0001", Status.RULED, ["Decisions/D-0001 A.md"]), ("D-0007", Status.OPEN,
          ["Decisions/D-0007 B.md", "Decisions/D-0002 B.md"]), ("D-0008", Status.OPEN, ["Decisions/D-0008 C.md"])]
    assert before["r1"].summary.status is Status.OPEN


def test_a_changed_whole_last_line_without_its_newline_is_refused_never_cut(tmp_path):
    ledger = Ledger(tmp_path)
    with ledger.locked():
        ledger.append([Event("asked", "D-0001", "2026-11-29T12:00:00Z", "agent", "Decisions/D-0001 x.md"),
                       Event("asked", "D-0002", "2026-11-29T12:01:00Z", "agent", "Decisions/D-0002 y.md")])
    edited = ledger.path.read_bytes().rstrip(b"\n").replace(b'"agent","at":"2026-11-29T12:01', b'"owner","at":"2026-11-29T12:01')
    assert b'"owner"' in edited
    ledger.path.write_bytes(edited)
    with pytest.raises(InconsistentVault), ledger.locked():
        ledger.append([Event("asked", "D-0003", "2026-11-29T12:05:00Z", "agent", "Decisions/D-0003 z.md")])
    assert ledger.path.read_bytes() == edited and not (tmp_path / "kept").exists()


def test_appends_of_one_synced_block_follow_a_ledger_replaced_between_them(tmp_path):
    """Inside `synced_together` the file is kept open between appends; when something replaces it meanwhile
    (a checkout, a sync engine writing a new copy), the next append goes to the file now at the path, and
    the file is closed when the block ends."""
    import os

    ledger = Ledger(tmp_path)
    first = Event("asked", "D-0001", "2026-11-29T12:00:00Z", "agent", "a.md")
    second = Event("asked", "D-0002", "2026-11-29T12:01:00Z", "agent", "b.md")
    third = Event("asked", "D-0003", "2026-11-29T12:02:00Z", "agent", "c.md")
    with ledger.locked(), ledger.synced_together():
        ledger.append([first])
        copy = ledger.path.with_name("copy.jsonl")
        copy.write_bytes(ledger.path.read_bytes())
        os.replace(copy, ledger.path)
        ledger.append([second])
        ledger.append([third])
    assert Ledger(tmp_path).read() == [first, second, third]
    assert ledger.read() == [first, second, third]
    assert ledger.own._handle is None


def test_what_each_record_stands_at_reads_back_from_its_memo_as_worked_out(tmp_path):
    """`summaries` are remembered under `.vault-tools/cache/`: a fresh process reads them from there, and gets
    what working them out from the events gives, a conflict included."""
    from vault_tools.history import RecordSummary

    ledger = Ledger(tmp_path)
    ledger.append([
        Event("asked", "D-0001", "2026-01-01T00:00:00Z", "agent", "Decisions/D-0001 A.md", record="r1"),
        Event("ruled", "D-0001", "2026-01-02T00:00:00Z", "owner", "Decisions/D-0001 A.md", record="r1", hash="h1"),
        Event("sealed", "D-0001", "2026-01-02T00:00:00Z", "owner", "Decisions/D-0001 A.md", record="r1", hash="h1",
              text="---\nsummary: Yes.\n---\n"),
        Event("withdrawn", "D-0001", "2026-01-03T00:00:00Z", "owner", "Decisions/D-0001 A.md", record="r1",
              reason="Dropped on the other clone, it was moot."),
        Event("asked", "D-0002", "2026-01-01T00:00:00Z", "agent", "Decisions/D-0002 B.md", record="r2"),
    ])
    worked_out = [RecordSummary.of(history) for history in ledger.histories().values()]
    assert worked_out[0].conflict is not None and worked_out[0].conflict.kind == "ruled-and-withdrawn"
    assert ledger.summaries() == worked_out
    assert (tmp_path / "cache" / "ledger-records.json").is_file()
    assert Ledger(tmp_path).summaries() == worked_out


def test_an_event_read_from_a_line_is_the_event_its_constructor_makes():
    """Reading a line builds its event without the dataclass's `__init__` (a third of reading a ledger): every
    event of the example vault's ledger is equal, field for field and in hash, to the one `Event(...)` makes,
    and a line with a field too many or one missing is refused as before."""
    import dataclasses
    import json

    from vault_tools.ledger_lines import SUM_MARK, Event, canonical_json, checksum, event_line, parse_ledger, parse_line

    example = Path(__file__).resolve().parents[1] / "example-vault"
    ledgers = [*example.glob("vault-tools/ledger/*.jsonl"), *example.glob(".vault-tools/ledger.jsonl")]
    events = [event for ledger in ledgers for event in parse_ledger(ledger.read_text(encoding="utf-8"), "ledger")]
    assert len(events) > 20
    for event in events:
        made = Event(**{f.name: getattr(event, f.name) for f in dataclasses.fields(Event)})
        assert (event, hash(event), dataclasses.asdict(event)) == (made, hash(made), dataclasses.asdict(made))
    for fields_ in ({"event": "asked", "id": "D-0001", "at": "2026-07-17T00:00:00Z", "actor": "a", "path": "p.md",
                     "colour": "red"}, {"event": "asked", "id": "D-0001", "at": "2026-07-17T00:00:00Z", "actor": "a"}):
        body = canonical_json(fields_)
        with pytest.raises(InconsistentVault, match="unknown fields"):
            parse_line(f'{body[:-1]}{SUM_MARK}{checksum(body)}"}}', 1, "ledger")
    assert json.loads(canonical_json(events[0].to_json()))  # still written as before
    for ledger in ledgers:  # and each event makes the very line it was read from
        lines = ledger.read_text(encoding="utf-8").splitlines(keepends=True)
        assert [event_line(parse_line(line.rstrip("\n"), number, "ledger")) for number, line in
                enumerate(lines, 1)] == lines


# A process holding the ledger lock through filelock, as an earlier version of this package (or the owner's own tool)
# takes it; it says "held" once it holds it, and keeps it until it is killed.
HOLD_WITH_FILELOCK = """
import sys, time
from filelock import FileLock
lock = FileLock(sys.argv[1], timeout=float(sys.argv[2]))
lock.acquire()
print("held", flush=True)
time.sleep(60)
"""


def _holder(path: Path, timeout: float = 5) -> subprocess.Popen[str]:
    holder = subprocess.Popen([sys.executable, "-c", HOLD_WITH_FILELOCK, str(path), str(timeout)],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def test_the_ledger_lock_waits_for_a_process_holding_it_through_filelock_then_says_so(tmp_path, monkeypatch):
    import vault_tools.ledger as ledger_module
    monkeypatch.setattr(ledger_module, "LOCK_TIMEOUT_SECONDS", 0.3)
    ledger = Ledger(tmp_path)
    holder = _holder(tmp_path / LEDGER_LOCK)
    try:
        started = time.monotonic()
        with pytest.raises(InconsistentVault, match="held the ledger lock"), ledger.locked():
            pass
        assert time.monotonic() - started >= 0.3
    finally:
        holder.kill()
        holder.wait()
    with ledger.locked():  # let go with its process
        pass


def test_the_ledger_lock_is_taken_again_inside_itself_and_kept_from_other_processes_until_let_go(tmp_path):
    ledger = Ledger(tmp_path)
    lock_file = tmp_path / LEDGER_LOCK
    try_lock = [sys.executable, "-c", HOLD_WITH_FILELOCK, str(lock_file), "0"]
    with ledger.locked():
        with ledger.locked():  # a write inside a write of the same process
            pass
        refused = subprocess.run(try_lock, capture_output=True, text=True, timeout=30)
        assert refused.returncode != 0 and "Timeout" in refused.stderr  # still held: the outer one holds it
    _holder(lock_file, timeout=0).kill()  # let go: another process takes it at once


def test_the_ledger_lock_is_let_go_at_once_though_a_child_forked_while_it_was_held_lives_on(tmp_path):
    """A first read of a large vault forks readers while a writer holds the lock; one goes on writing the note
    cache after the command. The lock is free as soon as the command lets go, not when that child ends."""
    ledger = Ledger(tmp_path)
    with ledger.locked():
        child = os.fork()
        if child == 0:
            time.sleep(3)
            os._exit(0)
    try:
        taken = subprocess.run([sys.executable, "-c", TRY_ONCE, str(tmp_path / LEDGER_LOCK)], capture_output=True,
                               text=True, timeout=30)
        assert taken.stdout == "taken\n", taken.stderr
    finally:
        os.waitpid(child, 0)


TRY_ONCE = """
import fcntl, os, sys
descriptor = os.open(sys.argv[1], os.O_RDWR)
fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("taken")
"""


def test_an_older_ledgers_ruled_and_withdrawn_record_is_a_conflict_whatever_was_asked_while_reading_it():
    """Lines written before events carried their record are given one while the histories are built, by asking
    the records so far for their status: what each record settles must be worked out from all its events, not
    from those it had when it was asked (a ruling withdrawn on another clone was then no conflict at all;
    found by an independent review)."""
    from vault_tools.history import histories

    def event(kind: str, **fields: str) -> Event:
        return Event(kind, "D-0001", "2026-01-01T00:00:00Z", "owner", "Decisions/D-0001 Podcast.md", **fields)

    history, = histories([event("asked", text="---\nid: D-0001\n---\n"), event("ruled", hash="sha256:1"),
                          event("sealed", hash="sha256:1", text="---\nid: D-0001\nsummary: No podcast.\n---\n"),
                          event("withdrawn", reason="Out of scope for this year, said on the laptop.")]).values()
    assert history.conflict is not None and history.conflict.kind == "ruled-and-withdrawn"
