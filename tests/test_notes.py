from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it.utils import read_fixture_file

from vault_tools import durable, note_edits, notes
from vault_tools.errors import NoteError

from .helpers import SCALARS, typed, write

SUPERSEDE = {"status": "superseded", "superseded_by": "[[D-0009 New footer rule]]",
             "reason": "Promotion ban decided for all articles"}
CASES = read_fixture_file(Path(__file__).parent / "data" / "supersede_edits.md")


@pytest.mark.parametrize("line,title,before,after", CASES, ids=[case[1] for case in CASES])
def test_marking_superseded_changes_only_those_fields(tmp_path, line, title, before, after):
    path = write(tmp_path / "note.md", before)
    note = notes.read_note(path)
    assert note_edits.with_fields(note, SUPERSEDE) == after


def test_crlf_and_bom_are_kept_and_new_lines_use_crlf(tmp_path):
    text = "---\r\ntype: decision\r\nid: D-0001\r\nstatus: ruled\r\n---\r\nBody\r\n"
    path = tmp_path / "note.md"
    path.write_bytes(notes.BOM.encode() + text.encode())
    note = notes.read_note(path)
    assert note.bom and note.newline == "\r\n"
    durable.write_note(note, note_edits.with_fields(note, {"status": "superseded", "reason": "x" * 25}))
    assert path.read_bytes() == (notes.BOM + "---\r\ntype: decision\r\nid: D-0001\r\nstatus: superseded\r\n"
                                 "reason: " + "x" * 25 + "\r\n---\r\nBody\r\n").encode()


def test_unchanged_note_writes_back_identical_bytes(tmp_path):
    text = "---\ntype: decision\nid: D-0001  # x\ntopics: [a]\n---\nBody\n"
    path = write(tmp_path / "n.md", text)
    note = notes.read_note(path)
    assert note_edits.with_fields(note, {}) == text


def test_atomic_write_leaves_no_temp_file(tmp_path):
    path = write(tmp_path / "n.md", "---\nid: D-0001\n---\n")
    note = notes.read_note(path)
    durable.write_note(note, note_edits.with_fields(note, {"status": "open"}))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n.md"]


def test_create_never_overwrites(tmp_path):
    path = write(tmp_path / "n.md", "owner's text")
    with pytest.raises(NoteError, match="already exists"):
        durable.create_note(path, "new")
    assert path.read_text() == "owner's text"


@pytest.mark.parametrize("frontmatter,message,line", [
    ("type: decision\nid: [D-0001\n", "invalid YAML", 3),
    ("type: decision\nx: !!python/object:os.system ls\n", "YAML tag", 3),
    ("type: decision\na: &a [1, 2]\nb: [*a, *a]\n", "anchors and aliases", 3),
    ("type: decision\ntype: decision\n", "invalid YAML", 3),
])
def test_bad_frontmatter_is_reported_with_file_and_line(tmp_path, frontmatter, message, line):
    path = write(tmp_path / "n.md", f"---\n{frontmatter}---\nbody\n")
    with pytest.raises(NoteError, match=message) as caught:
        notes.read_note(path)
    assert caught.value.path == str(path) and caught.value.line == line


def test_split_finds_frontmatter_as_obsidian_does():
    assert notes.split("---\na: 1\n---\nbody") == ("a: 1\n", "body", 13)
    assert notes.split("---\n---\nbody")[0] == ""
    assert notes.split("text\n---\na: 1\n---\n")[0] is None  # not on line 1
    assert notes.split("---\na: 1\nno closing fence\n")[0] is None
    assert notes.split("---\r\na: 1\r\n---\r\nbody")[:2] == ("a: 1\r\n", "body")


# -- property: reading then writing an unchanged note changes no byte ---------------

scalar = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=30),
    st.integers(), st.booleans(), st.dates().map(str))
key = st.from_regex(r"[a-z][a-z_]{0,12}", fullmatch=True)
value_text = st.one_of(
    scalar.map(lambda v: __import__("json").dumps(v, ensure_ascii=False)),
    st.lists(st.from_regex(r"[a-z0-9]+(-[a-z0-9]+)?", fullmatch=True), max_size=3).map(
        lambda items: "[" + ", ".join(items) + "]"),
    st.sampled_from(["", "null", "'single quoted'", "plain text with: colon-free words".replace(":", ""),
                     "2026-07-17T08:30:00", "\n  - a\n  - b"]),
)
body = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=200)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(pairs=st.dictionaries(key, value_text, min_size=1, max_size=6), body=body,
       newline=st.sampled_from(["\n", "\r\n"]), bom=st.booleans(), comment=st.booleans())
def test_round_trip_of_an_unchanged_note_is_byte_identical(tmp_path, pairs, body, newline, bom, comment):
    lines = [f"{k}: {v}" for k, v in pairs.items()]
    if comment:
        lines.insert(1, "# the owner's comment")
    text = "---" + newline + newline.join(lines) + newline + "---" + newline + body
    raw = durable.encode(text, bom=bom)
    path = tmp_path / "n.md"
    path.write_bytes(raw)
    note = notes.read_note(path)
    durable.write_note(note, note_edits.with_fields(note, {}))
    assert path.read_bytes() == raw
    # And changing one field changes only that field's line.
    durable.write_note(note, note_edits.with_fields(note, {"status": "superseded"}))
    after = notes.read_note(path)
    assert after.body == note.body
    assert {k: v for k, v in after.data.items() if k != "status"} == {k: v for k, v in note.data.items() if k != "status"}


def test_writes_keep_the_notes_permissions(tmp_path):
    path = write(tmp_path / "n.md", "---\nid: D-0001\n---\n")
    os.chmod(path, 0o644)
    note = notes.read_note(path)
    durable.write_note(note, note_edits.with_fields(note, {"status": "open"}))
    assert path.stat().st_mode & 0o777 == 0o644
    created = tmp_path / "new.md"
    durable.create_note(created, "text")
    assert created.stat().st_mode & 0o044 == 0o044  # readable by others, as with any new file here


def test_numbers_with_a_leading_zero_read_as_yaml_1_2_does(tmp_path):
    """`08` is eight, as Obsidian reads it; PyYAML's YAML 1.1 reader would refuse it as a bad octal."""
    path = write(tmp_path / "n.md", "---\nepisode: 08\nparts: [08, 010, 0o17, 0x1f]\n---\nbody\n")
    note = notes.read_note(path)
    assert note.data == {"episode": 8, "parts": [8, 10, 15, 31]}
    durable.write_note(note, note_edits.with_fields(note, {}))
    assert path.read_text() == "---\nepisode: 08\nparts: [08, 010, 0o17, 0x1f]\n---\nbody\n"


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(alphabet="abcXYZ019 .,;()'/_-#:|^[]\"\\é", min_size=1, max_size=30),
                 st.text(alphabet="abcXYZ019 .,;()'/_-#|^", max_size=30).map(lambda text: f"[[{text}]]"),
                 st.sampled_from(["superseded", "yes", "No", "null", "n", "y", "On", "a", "A.", "x)"])))
def test_a_value_written_without_ruamel_is_written_as_ruamel_writes_it(value):
    """Plain text and links take a short way round ruamel.yaml (a reconcile marks hundreds of notes
    superseded); whatever takes it must come out byte for byte as ruamel.yaml writes it."""
    import io

    stream = io.StringIO()
    note_edits._dumper().dump({"reason": note_edits._yaml_value(value)}, stream)
    assert note_edits.render_field("reason", value) == stream.getvalue()
    assert note_edits.render_field("reason", value, "\r\n") == stream.getvalue().replace("\n", "\r\n")


KEYS = ["type", "id", "summary", "topics", "tags", "1", "true", "null", '"quoted key"', "'single'", "x y", "? [a]"]


@st.composite
def frontmatters(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        key = draw(st.sampled_from(KEYS))
        shape = draw(st.sampled_from(["scalar", "block list", "block map", "comment", "document end"]))
        if shape == "scalar":
            lines.append(f"{key}: {draw(st.sampled_from(SCALARS))}")
        elif shape == "block list":
            lines += [f"{key}:"] + [f"  - {draw(st.sampled_from(SCALARS))}" for _ in range(draw(st.integers(0, 3)))]
        elif shape == "block map":
            lines += [f"{key}:"] + [f"  {draw(st.sampled_from(KEYS))}: {draw(st.sampled_from(SCALARS))}"
                                    for _ in range(draw(st.integers(0, 3)))]
        else:
            lines.append("# only a comment" if shape == "comment" else "...")
    return "\n".join(lines) + draw(st.sampled_from(["", "\n"]))


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(frontmatter=frontmatters())
def test_reading_properties_from_events_gives_what_the_yaml_constructor_gives(frontmatter):
    """The quick way of reading a note's properties (most notes) agrees with PyYAML's composer and constructor
    wherever it answers; where it does not, the full way reads the note (and names what is wrong)."""
    quick = notes._plain_values(frontmatter)
    if quick is None:
        return
    data, lines = quick
    try:
        full_data, full_lines = notes._full_values(frontmatter, Path("n.md"))
    except NoteError as error:
        pytest.fail(f"the quick way read what the full way refuses ({error}): {frontmatter!r}")
    assert (typed(data), lines) == (typed(full_data), full_lines), frontmatter


def test_several_notes_written_together_each_in_place_or_left_as_it_was(tmp_path):
    """`write_notes`: every note replaced whole (its BOM and mode kept), a note that cannot be written left as it
    was with the reason, no temp file left behind, and each write seen by a process keeping its view."""
    first = write(tmp_path / "a" / "First.md", "---\nstatus: ruled\n---\nBody one.\n")
    second = tmp_path / "a" / "Second.md"
    second.write_bytes(notes.BOM.encode("utf-8") + b"---\nstatus: ruled\n---\nBody two.\n")
    os.chmod(second, 0o640)
    gone = write(tmp_path / "b" / "Gone.md", "---\nstatus: ruled\n---\nBody three.\n")
    read = [notes.read_note(path) for path in (first, second, gone)]
    (tmp_path / "b" / "Gone.md").unlink()
    (tmp_path / "b").rmdir()  # its folder is gone: this one cannot be written
    writes = [(note, note.text.replace("ruled", "superseded"), None) for note in read]
    with durable.recording_writes() as recorded:
        found = durable.write_notes(writes)
    assert found[0] is None and found[1] is None and isinstance(found[2], OSError)
    assert first.read_text() == "---\nstatus: superseded\n---\nBody one.\n"
    assert second.read_bytes() == notes.BOM.encode("utf-8") + b"---\nstatus: superseded\n---\nBody two.\n"
    assert second.stat().st_mode & 0o777 == 0o640
    assert [written.path for written in recorded] == [first, second]
    assert sorted(path.name for path in (tmp_path / "a").iterdir()) == ["First.md", "Second.md"]


def _notes_for_writing(folder: Path, count: int) -> list[Path]:
    return [write(folder / f"note {index}.md", f"old text {index}\n") for index in range(count)]


@pytest.mark.parametrize("threads", ["started for the batch", "kept for every batch"])
def test_several_files_are_synced_before_any_is_replaced_and_the_ledger_before_either(tmp_path, monkeypatch, threads):
    """`write_files` syncs every temp file (from several threads) and makes what `before_writes` asks durable
    before the first file is replaced, so a power cut never leaves a note on disk ahead of the ledger; as much
    when a reconcile keeps the sync threads for all its batches."""
    import contextlib
    paths = _notes_for_writing(tmp_path, 20)
    synced: list[int] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        real_fsync(fd)
        synced.append(fd)

    def replace(source, target):
        assert len(synced) == 21, "a file was replaced before every sync was done"
        real_replace(source, target)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    ledger = tmp_path / "ledger.jsonl"
    ledger.write_text("")

    def sync_ledger():
        with open(ledger, "ab") as handle:
            os.fsync(handle.fileno())

    kept = durable.sync_threads_kept() if threads == "kept for every batch" else contextlib.nullcontext()
    with kept, durable.before_writes(sync_ledger):
        found = durable.write_files([(path, f"new text {index}\n".encode(), None) for index, path in enumerate(paths)])
    assert found == [None] * 20
    assert [path.read_text() for path in paths] == [f"new text {index}\n" for index in range(20)]
    assert not [name for name in os.listdir(tmp_path) if name.startswith(durable.TEMP_PREFIX)]


def test_a_file_whose_sync_fails_is_left_as_it_was_and_the_others_are_written(tmp_path, monkeypatch):
    paths = _notes_for_writing(tmp_path, 5)
    real_fsync = os.fsync

    def fsync(fd):
        if os.pread(fd, 20, 0) == b"new text 3\n":
            raise OSError(5, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    found = durable.write_files([(path, f"new text {index}\n".encode(), None) for index, path in enumerate(paths)])
    assert [error is None for error in found] == [True, True, True, False, True]
    assert [path.read_text() for path in paths] == ["new text 0\n", "new text 1\n", "new text 2\n", "old text 3\n",
                                                    "new text 4\n"]
    assert not [name for name in os.listdir(tmp_path) if name.startswith(durable.TEMP_PREFIX)]


def test_when_the_ledger_cannot_be_synced_no_file_is_replaced(tmp_path):
    paths = _notes_for_writing(tmp_path, 3)

    def failing_sync():
        raise OSError(28, "No space left on device")

    with durable.before_writes(failing_sync), pytest.raises(OSError):
        durable.write_files([(path, b"new text\n", None) for path in paths])
    assert [path.read_text() for path in paths] == [f"old text {index}\n" for index in range(3)]
    assert not [name for name in os.listdir(tmp_path) if name.startswith(durable.TEMP_PREFIX)]


DECISION = "---\ntype: decision\nid: D-0001\nstatus: open\n---\nBody\n"
HEADS = {
    "a decision note": DECISION,
    "with a byte order mark": "\ufeff" + DECISION,
    "an ordinary note with properties": "---\ntags: [daily]\n---\nWe talked about a decision.\n",
    "no frontmatter": "Just text about a decision.\n",
    "empty": "",
    "an opening line only": "---",
    "never closed": "---\ntags: [a]\n" + "x: y\n" * 10,
    "the type after the head": "---\n" + "tags: [a]\n" * (notes.HEAD_BYTES // 10 + 1) + "type: decision\nid: D-0002\n---\n",
    "a long ordinary frontmatter": "---\n" + "tags: [a]\n" * (notes.HEAD_BYTES // 10 + 1) + "---\nbody\n",
}


@pytest.mark.parametrize("text", HEADS.values(), ids=HEADS.keys())
def test_a_note_is_told_a_decision_or_not_from_its_start_however_it_arrives(tmp_path, text):
    """Read from a file at once, or from a pipe that hands the note over a few bytes at a time (as a slow
    network drive may), `read_start` says the same: whether it may be a decision note, and its bytes."""
    import threading

    data = text.encode("utf-8")
    whole = notes.read_start(write(tmp_path / "note.md", text))
    fifo = tmp_path / "arriving.md"
    os.mkfifo(fifo)

    def hand_over() -> None:
        with open(fifo, "wb", buffering=0) as pipe:
            for start in (0, 2, 5, 9):
                pipe.write(data[start:{0: 2, 2: 5, 5: 9}.get(start, len(data))])
                time.sleep(0.01)

    writer = threading.Thread(target=hand_over)
    writer.start()
    try:
        in_pieces = notes.read_start(fifo)
    finally:
        writer.join()
    assert in_pieces == whole
    assert (whole[0] is not None) == ("type: decision" in text)
    if whole[1] is not None:
        assert whole[1] == data


def test_a_body_quoting_a_decisions_properties_leaves_its_note_ordinary(tmp_path):
    """Only the properties make a decision note: a meeting note whose body quotes one's properties, and says
    "decision" all through, is an ordinary note, however its bytes arrive; a decision note saying it in its
    properties is one."""
    from vault_tools import reading

    quoted = "---\ntags: [meeting]\n---\nIts properties:\n\n```yaml\ntype: decision\nstatus: ruled\n```\n"
    for body in ("", "The decision stands.\n" * 2000):  # within the first read, and past it
        path = write(tmp_path / "meeting.md", quoted + body)
        assert notes.read_start(path) == (None, None)
        assert reading.read_payload(tmp_path, path) == ("other", None)
    path = write(tmp_path / "decision.md", DECISION + "The decision stands.\n" * 2000)
    kind, payload = reading.read_payload(tmp_path, path)
    assert kind == "decision" and payload is not None and payload["data"]["type"] == "decision"


@pytest.mark.parametrize("spelt", ["dEcision", "DECISION", "deci\u017fion"])
def test_a_type_spelt_in_other_cases_makes_a_decision_note_however_it_arrives(tmp_path, spelt):
    """The model casefolds `type`: a note saying `type: dEcision` (or `decision` with the long s) is a decision
    note, its body saying "decision" or not, read at once or handed over a few bytes at a time."""
    import threading

    from vault_tools import reading

    for body in ("Body\n", "The decision stands.\n"):
        text = f"---\ntype: {spelt}\nid: D-0001\nstatus: open\n---\n{body}"
        path = write(tmp_path / "note.md", text)
        assert reading.read_payload(tmp_path, path)[0] == "decision"
        fifo = tmp_path / "arriving.md"
        os.mkfifo(fifo)
        data = text.encode("utf-8")

        def hand_over(data: bytes = data, fifo: Path = fifo) -> None:
            with open(fifo, "wb", buffering=0) as pipe:
                for start in range(0, len(data), 3):
                    pipe.write(data[start:start + 3])
                    time.sleep(0.001)

        writer = threading.Thread(target=hand_over)
        writer.start()
        try:
            assert notes.read_start(fifo)[0] is not None
        finally:
            writer.join()
            fifo.unlink()


def test_a_line_like_a_fence_in_a_first_short_read_is_not_taken_for_the_end_of_the_properties(tmp_path):
    """`---x: 1` is a property line, not the closing fence: a note whose first read ends just after it is
    read on, and found to be the decision note it is."""
    import threading

    text = "---\ntags: [a]\n---x: 1\ntype: decision\nid: D-0003\nstatus: open\n---\nBody\n"
    data = text.encode("utf-8")
    first = data.index(b"type")
    fifo = tmp_path / "arriving.md"
    os.mkfifo(fifo)

    def hand_over() -> None:
        with open(fifo, "wb", buffering=0) as pipe:
            pipe.write(data[:first])
            time.sleep(0.05)
            pipe.write(data[first:])

    writer = threading.Thread(target=hand_over)
    writer.start()
    try:
        head, whole = notes.read_start(fifo)
    finally:
        writer.join()
    assert head is not None and "type: decision" in head and whole == data


def test_a_note_a_stopped_merge_left_with_git_markers_is_refused_on_the_first_marker_line(tmp_path):
    kept = "---\ntype: decision\nid: D-0001\nstatus: ruled\n---\n## Ruling\n"
    path = write(tmp_path / "note.md", kept + "<<<<<<< HEAD\nNo ads.\n=======\nAds.\n>>>>>>> theirs\n")
    with pytest.raises(NoteError) as raised:
        notes.read_note(path)
    assert "conflict markers" in raised.value.message and raised.value.line == 7
    quoted = write(tmp_path / "quoted.md", kept + "Git writes `<<<<<<< HEAD` where a merge stopped.\n")
    assert notes.read_note(quoted).data["id"] == "D-0001"
