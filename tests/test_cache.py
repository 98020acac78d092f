"""The note cache is derived data: it may make reading faster, never wrong."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from dataclasses import replace

import pytest

from vault_tools import reading as reading_module
from vault_tools import vault as vault_module
from vault_tools.config import load_config
from vault_tools.errors import ConfigError, VaultToolsError
from vault_tools.lint.facts import LINT_MEMO_FILE
from vault_tools.reading import CACHE_FILE
from vault_tools.vault import Vault

from .helpers import CORPORA, clock_ahead_source, config_file, decision, ledger_file, make_vault, vt, write


def summaries(vault):
    return {d.id: d.summary for d in Vault(vault).load().decisions}


def trust_the_cache_at_once(monkeypatch):
    """What the cache does for notes older than its racy window (2 s), without waiting for it."""
    monkeypatch.setattr(reading_module, "RACY_NANOSECONDS", 0)


def forget_note_cache(vault):
    """Delete the note cache, once what a reader of the last first read is still writing there is written."""
    reading_module.finish_stores()
    (vault / ".vault-tools" / CACHE_FILE).unlink()


def test_a_same_size_edit_with_the_old_mtime_put_back_is_seen(vault, monkeypatch):
    path = decision(vault, 1, summary="Footers carry the newsletter link, always.")
    trust_the_cache_at_once(monkeypatch)
    assert summaries(vault) == {"D-0001": "Footers carry the newsletter link, always."}
    assert (vault / ".vault-tools" / CACHE_FILE).exists()
    before = path.stat()
    path.write_text(path.read_text().replace("always", "NEVER!"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns
    assert summaries(vault) == {"D-0001": "Footers carry the newsletter link, NEVER!."}


def test_an_edit_in_the_same_clock_tick_as_caching_is_seen(vault):
    path = decision(vault, 1, summary="Footers carry the newsletter link, always.")
    assert summaries(vault)["D-0001"].endswith("always.")
    path.write_text(path.read_text().replace("always", "rarely"))
    assert summaries(vault)["D-0001"].endswith("rarely.")


def test_a_note_that_becomes_a_decision_note_and_back_is_read_as_it_is(vault, monkeypatch):
    """Ordinary notes and decision notes are cached apart: a note that turns from one into the other (its
    frontmatter edited) is never also found as what it was."""
    import sqlite3

    def cached_as() -> list[str]:
        with sqlite3.connect(vault / ".vault-tools" / CACHE_FILE) as connection:
            return [table for table in ("notes", "ordinary")
                    if connection.execute(f"SELECT 1 FROM {table} WHERE path = 'Meetings/Sync.md'").fetchone()]

    trust_the_cache_at_once(monkeypatch)
    decision(vault, 1)
    note = write(vault / "Meetings" / "Sync.md", "---\ntags: [meeting]\n---\nWe should decide.\n")
    assert set(summaries(vault)) == {"D-0001"} and cached_as() == ["ordinary"]
    as_decision = decision(vault, 2)
    os.replace(as_decision, note)
    assert set(summaries(vault)) == {"D-0001", "D-0002"} and cached_as() == ["notes"]
    assert set(summaries(vault)) == {"D-0001", "D-0002"}  # from the cache
    write(note, "---\ntags: [meeting]\n---\nDecided elsewhere.\n")
    assert set(summaries(vault)) == {"D-0001"} and cached_as() == ["ordinary"]
    assert set(summaries(vault)) == {"D-0001"}  # from the cache


def test_the_cache_an_earlier_version_kept_is_removed(vault):
    """An earlier version's note cache (another file name) holds bodies of notes perhaps long deleted: the
    first read with this version's cache removes it."""
    decision(vault, 1)
    older = vault / ".vault-tools" / "cache" / "notes-v3.sqlite"
    older.parent.mkdir(parents=True, exist_ok=True)
    older.write_bytes(b"an older cache")
    (older.parent / "notes-v3.sqlite-journal").write_bytes(b"")
    assert set(summaries(vault)) == {"D-0001"}
    assert sorted(path.name for path in older.parent.glob("notes-*")) == [CACHE_FILE.split("/")[-1]]


def test_deleted_and_broken_notes_and_a_corrupt_cache(vault, monkeypatch):
    first = decision(vault, 1)
    decision(vault, 2)
    trust_the_cache_at_once(monkeypatch)
    assert set(summaries(vault)) == {"D-0001", "D-0002"}
    first.unlink()
    assert set(summaries(vault)) == {"D-0002"}
    (vault / ".vault-tools" / CACHE_FILE).write_bytes(b"not a database at all" * 100)
    assert set(summaries(vault)) == {"D-0002"}


def test_a_folder_without_vault_tools_gets_no_cache(tmp_path):
    decision(tmp_path, 1)
    assert [d.id for d in Vault(tmp_path).load().decisions] == ["D-0001"]
    assert not (tmp_path / ".vault-tools").exists()


def test_a_nested_templates_folder_is_not_scanned(vault):
    config_file(vault).write_text("templates_folder: Meta/Templates\n")
    decision(vault / "Meta" / "Templates", 1)  # a template that looks like a ruling
    decision(vault, 2)
    assert [d.id for d in Vault(vault).load().decisions] == ["D-0002"]


def everything_read(vault):
    state = Vault(vault).load()
    return (state.decisions, [(type(e), str(e)) for e in state.broken], state.problems, state.properties,
            state.property_lines, state.body_lines, state.files, list((state.stat_keys or {}).items()))


def test_a_first_read_in_several_processes_gives_what_one_process_gives(vault, monkeypatch):
    decision(vault, 1)
    decision(vault, 2, status="open")
    write(vault / "Decisions" / "D-0003 Broken.md", "---\ntype: decision\nid: D-0003\ntopics: [x-y\n---\n")
    write(vault / "Decisions" / "D-0004 Long.md", "---\ntype: decision\n" + "tags: [a]\n" * 3000 + "---\nbody\n")
    write(vault / "Daily" / "2026-07-17.md", "---\ntags: [daily]\n---\nWe talked about a decision.\n")
    write(vault / "Daily" / "Plain.md", "No frontmatter here.\n")
    (vault / "Daily" / "Gone.md").symlink_to(vault / "nowhere.md")  # cannot be opened
    (vault / "Decisions" / "D-0005 Lost.md").symlink_to(vault / "nowhere-either.md")
    monkeypatch.setattr(reading_module, "PARALLEL_READ_MIN", 10**9)
    one = everything_read(vault)
    forget_note_cache(vault)
    monkeypatch.setattr(reading_module, "PARALLEL_READ_MIN", 1)
    monkeypatch.setattr(reading_module, "free_processors", lambda: 2)  # however busy the machine running the test
    several = everything_read(vault)
    assert several == one
    assert [d.id for d in one[0]] == ["D-0001", "D-0002"] and len(one[1]) == 4
    trust_the_cache_at_once(monkeypatch)
    assert everything_read(vault) == one  # from the cache, each note's key taken by the walk


def test_a_reader_process_that_fails_has_its_share_read_by_the_command(vault, monkeypatch):
    """A forked reader that dies (out of memory, killed) loses nothing: the command reads its notes itself."""
    for number in range(1, 7):
        decision(vault, number, status="open" if number % 2 else "ruled")
    write(vault / "Daily" / "2026-07-17.md", "We talked about a decision.\n")
    monkeypatch.setattr(reading_module, "PARALLEL_READ_MIN", 10**9)
    one = everything_read(vault)
    forget_note_cache(vault)
    command, read_share = os.getpid(), reading_module._read_share

    def dies_in_a_child(root, paths):
        if os.getpid() != command:
            os.kill(os.getpid(), 9)
        return read_share(root, paths)

    monkeypatch.setattr(reading_module, "_read_share", dies_in_a_child)
    monkeypatch.setattr(reading_module, "PARALLEL_READ_MIN", 1)
    monkeypatch.setattr(reading_module, "free_processors", lambda: 3)
    assert everything_read(vault) == one


def test_a_reader_that_fails_after_handing_some_notes_over_loses_and_doubles_nothing(vault, monkeypatch):
    """A reader that hands chunks over (the command builds their notes as they come) and then dies: the command
    reads all it took again, and the vault reads as one process reads it."""
    for number in range(1, 25):
        decision(vault, number, status="open" if number % 2 else "ruled", topics=(f"topic-{number}",))
        write(vault / "Daily" / f"2026-07-{number:02d}.md", f"---\ntags: [daily]\n---\nDay {number}.\n")
    monkeypatch.setattr(reading_module, "PARALLEL_READ_MIN", 10**9)
    one = everything_read(vault)
    forget_note_cache(vault)
    command, read_share, chunks_read = os.getpid(), reading_module._read_share, []

    def dies_after_its_second_chunk(root, paths):
        if os.getpid() != command:
            chunks_read.append(paths)
            if len(chunks_read) > 2:
                os.kill(os.getpid(), 9)
        return read_share(root, paths)

    monkeypatch.setattr(reading_module, "_read_share", dies_after_its_second_chunk)
    monkeypatch.setattr(reading_module, "PARALLEL_READ_MIN", 1)
    monkeypatch.setattr(reading_module, "READ_CHUNK", 2)
    monkeypatch.setattr(reading_module, "free_processors", lambda: 2)
    assert everything_read(vault) == one


def cached_paths(vault):
    with sqlite3.connect(vault / ".vault-tools" / CACHE_FILE) as connection:
        return sorted(path for table in ("notes", "ordinary")
                      for (path,) in connection.execute(f"SELECT path FROM {table}"))


@pytest.mark.parametrize("writer_dies", [False, True])
def test_the_note_cache_a_reader_writes_is_whole_once_the_command_is_done(vault, monkeypatch, writer_dies):
    """A reader writes the note cache while the command goes on to its pages; the command waits for it before
    it is done. Should that reader die (killed, out of memory) before it could, the cache lacks those notes
    and the next command reads them again: what it reads is the same."""
    for number in range(1, 41):
        decision(vault, number, status="open" if number % 3 else "ruled", topics=(f"topic-{number}",))
        write(vault / "Daily" / f"2026-07-{number:03d}.md", f"Day {number}.\n")
    command, save = os.getpid(), reading_module.NoteCache.save

    def save_or_die(self, fresh, cached_at, gone):
        if writer_dies and os.getpid() != command:
            os.kill(os.getpid(), 9)
        save(self, fresh, cached_at, gone)

    monkeypatch.setattr(reading_module.NoteCache, "save", save_or_die)
    monkeypatch.setattr(reading_module, "PARALLEL_READ_MIN", 1)
    monkeypatch.setattr(reading_module, "free_processors", lambda: 2)
    monkeypatch.setattr(reading_module, "READ_CHUNK", 8)
    state = Vault(vault).load()
    assert len(reading_module.stores_running) == 1  # a reader writes it meanwhile
    reading_module.finish_stores()
    stored = (vault / ".vault-tools" / CACHE_FILE).exists()
    assert cached_paths(vault) == sorted(state.files) and len(state.files) == 80 if not writer_dies else not stored
    trust_the_cache_at_once(monkeypatch)
    monkeypatch.setattr(reading_module.NoteCache, "save", save)
    again = Vault(vault)
    assert again.load().decisions == state.decisions
    reading_module.finish_stores()
    assert cached_paths(vault) == sorted(state.files)


def test_the_reader_writing_the_note_cache_is_waited_for_when_the_command_stops_on_the_way(vault, monkeypatch):
    """Stopped after the notes were read (Ctrl-C, an error), the command still waits for the reader writing the
    cache: no process is left behind unwaited, and the cache it wrote is whole."""
    for number in range(1, 21):
        decision(vault, number, status="open", topics=(f"topic-{number}",))
        write(vault / "Daily" / f"2026-07-{number:03d}.md", f"Day {number}.\n")
    monkeypatch.setattr(reading_module, "PARALLEL_READ_MIN", 1)
    monkeypatch.setattr(reading_module, "free_processors", lambda: 2)
    monkeypatch.setattr(reading_module, "READ_CHUNK", 8)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(vault_module, "_place", interrupted)  # each note's parts put in place, once all are read
    with pytest.raises(KeyboardInterrupt):
        Vault(vault).load()
    assert len(reading_module.stores_running) == 1
    reading_module.finish_stores()
    assert len(cached_paths(vault)) == 40


def test_a_first_read_in_chunks_while_the_ledger_is_read_gives_what_one_process_gives(vault, monkeypatch):
    """Several chunks of notes, taken in turn by the readers while the command reads the ledger: the same
    notes in the same order, and the same records; a damaged ledger read meanwhile is said when asked, as
    without."""
    from vault_tools.commands.seal import seal
    from vault_tools.services.workspace import Workspace

    for number in range(1, 121):
        decision(vault, number, status="open" if number % 3 else "ruled", topics=(f"topic-{number}",))
        write(vault / "Daily" / f"2026-07-{number:03d}.md", f"---\ntags: [daily]\n---\nDay {number}.\n")
    seal(Workspace(Vault(vault)))
    monkeypatch.setattr(reading_module, "PARALLEL_READ_MIN", 10**9)
    one = everything_read(vault)
    records = Vault(vault).ledger.summaries()
    monkeypatch.setattr(reading_module, "PARALLEL_READ_MIN", 1)
    monkeypatch.setattr(reading_module, "free_processors", lambda: 2)
    monkeypatch.setattr(reading_module, "READ_CHUNK", 16)
    for cached in (vault / ".vault-tools" / "cache").iterdir():
        cached.unlink()
    assert everything_read(vault) == one and len(one[0]) == 120
    forget_note_cache(vault)
    several = Vault(vault)
    several.load()
    assert several.ledger.summaries() == records and len(records) == 40  # the rulings, sealed
    ledger = ledger_file(vault)
    lines = ledger.read_text().splitlines(keepends=True)
    ledger.write_text("".join([lines[0], "{not an event\n", *lines[1:]]))
    forget_note_cache(vault)
    damaged = Vault(vault)
    assert [d.id for d in damaged.load().decisions] == [d.id for d in one[0]]
    with pytest.raises(VaultToolsError) as error:
        damaged.ledger.summaries()
    assert ledger.name in str(error.value.path) and error.value.line == 2


def test_the_pages_of_a_first_read_in_several_processes_are_those_of_one(vault, monkeypatch):
    """For the pages, the rulings' words are worked out while the readers read (the pages list the pairs on one
    matter): the same words, and the same pages, as a read in one process gives; a ruling's words are known once
    read. A command reading a few decisions does not work them out; and a ruling whose words cannot be worked
    out (here, an error planted for one) leaves the read as it is."""
    from vault_tools import decision_words
    from vault_tools.commands.build import pages
    from vault_tools.commands.same import words_while_reading
    from vault_tools.decision_words import _TERMS, decision_terms
    from vault_tools.services.workspace import Workspace

    for number in range(1, 61):
        decision(vault, number, status="open" if number % 4 == 0 else "ruled", topics=(f"topic-{number}",),
                 summary=f"Newsletter footer {number} keeps the sponsor line." if number % 5 else
                 "Invoices are paid by bank transfer within thirty days.")
        write(vault / "Daily" / f"2026-07-{number:03d}.md", f"---\ntags: [daily]\n---\nDay {number}.\n")
    monkeypatch.setattr(reading_module, "PARALLEL_READ_MIN", 10**9)
    one = pages(Workspace(Vault(vault))).texts
    assert "Invoices are paid" in one["Decisions log"] and "same matter" in "".join(one.values())
    one_read = everything_read(vault)
    forget_note_cache(vault)
    for cached in (vault / ".vault-tools" / "cache").iterdir():
        cached.unlink()
    monkeypatch.setattr(reading_module, "PARALLEL_READ_MIN", 1)
    monkeypatch.setattr(reading_module, "free_processors", lambda: 2)
    monkeypatch.setattr(reading_module, "READ_CHUNK", 8)
    _TERMS.clear()
    assert Vault(vault).load().decisions and not _TERMS._kept  # a reading command's read
    forget_note_cache(vault)
    words = decision_words.decision_terms

    def fails_once(decision):
        if decision.id == "D-0007" and not fails_once.failed:
            fails_once.failed = True
            raise IndexError("planted")
        return words(decision)

    fails_once.failed = False
    monkeypatch.setattr(decision_words, "decision_terms", fails_once)
    monkeypatch.setattr("vault_tools.commands.same.decision_terms", fails_once)
    with words_while_reading():
        assert everything_read(vault) == one_read
    assert fails_once.failed
    monkeypatch.setattr("vault_tools.commands.same.decision_terms", words)
    forget_note_cache(vault)
    _TERMS.clear()
    workspace = Workspace(Vault(vault))
    with words_while_reading():
        rulings = [d for d in workspace.state().decisions if d.status.value == "ruled"]
    assert len(rulings) == 45 and all(_TERMS.get(d) is not None for d in rulings)  # worked out as they were read
    assert all(_TERMS.get(d) == decision_terms(replace(d)) for d in rulings)  # a copy's words are worked out anew
    assert pages(workspace).texts == one


@pytest.mark.skipif(not hasattr(__import__("fcntl"), "F_SETPIPE_SZ"), reason="pipe sizes are set on Linux only")
def test_a_first_read_never_waits_on_a_pipe_too_small_for_its_chunks(vault, monkeypatch):
    """A user past the kernel's pipe quota gets pipes of one page: the chunks' numbers then do not fit, and
    the command reads chunks itself while handing the rest out, rather than wait for readers forever."""
    import fcntl
    import signal

    for number in range(1, 31):
        decision(vault, number, status="open" if number % 3 else "ruled", topics=(f"topic-{number}",))
    for number in range(1500):
        write(vault / "Daily" / f"Day {number}.md", f"Day {number}.\n")
    monkeypatch.setattr(reading_module, "PARALLEL_READ_MIN", 10**9)
    one = everything_read(vault)
    forget_note_cache(vault)
    real_pipe = os.pipe

    def one_page_pipe():
        reading, writing = real_pipe()
        fcntl.fcntl(writing, fcntl.F_SETPIPE_SZ, 4096)
        return reading, writing

    real_write, command = os.write, os.getpid()

    def write_then_let_the_readers_drain(fd, data):  # widens the moment a full pipe is emptied by the readers
        try:
            return real_write(fd, data)
        except BlockingIOError:
            if os.getpid() == command:
                time.sleep(0.005)
            raise

    monkeypatch.setattr(os, "pipe", one_page_pipe)
    monkeypatch.setattr(os, "write", write_then_let_the_readers_drain)
    monkeypatch.setattr(reading_module, "PARALLEL_READ_MIN", 1)
    monkeypatch.setattr(reading_module, "free_processors", lambda: 3)
    monkeypatch.setattr(reading_module, "READ_CHUNK", 1)  # 1,530 chunks: 6,120 bytes of numbers
    previous = signal.signal(signal.SIGALRM, lambda *_: pytest.fail("the first read waited on its own pipe"))
    signal.alarm(30)
    try:
        assert everything_read(vault) == one
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_a_changed_config_is_seen_however_soon(vault):
    """The cached config is keyed by the file's bytes: no clock tick hides an edit."""
    config = config_file(vault)
    config.write_text("timezone: Asia/Tokyo\nstale_after_days: 14\n")
    assert load_config(vault).stale_after_days == 14
    assert load_config(vault).stale_after_days == 14  # from the cache
    before = config.stat()
    config.write_text(config.read_text().replace("14", "41"))
    os.utime(config, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert load_config(vault).stale_after_days == 41
    config.write_text("timezone: Asia/Tokyo\nstale_after_days: -1\n")
    with pytest.raises(ConfigError):
        load_config(vault)


def test_a_warm_read_imports_no_yaml_library_and_no_lock(vault):
    """Reading commands start fast: once the notes and the config are cached, no YAML library, no file
    lock and no terminal library is imported (each costs more than reading a small vault)."""
    decision(vault, 1)
    # The note, older than the racy window, is cached as trusted (in another process: no shortcut): the first
    # read comes as if that long after it was written, its clock ahead (no file's ctime can be set back)
    first = clock_ahead_source("vault_tools.vault") + ("import sys; sys.argv = ['vault-tools', 'context']\n"
                                                      "from vault_tools.launch import main\nmain()\n")
    done = subprocess.run([sys.executable, "-c", first], cwd=vault, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "D-0001" in done.stdout, done.stderr
    probe = ("import sys; sys.argv = ['vault-tools', 'context']\nfrom vault_tools.launch import main\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in ('yaml', 'ruamel', 'filelock', 'rich') if m in sys.modules), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe], cwd=vault, capture_output=True, text=True, timeout=60)
    assert "D-0001" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "[]"


def _open_page(vault) -> str:
    return (vault / "Pinned" / "Open questions.md").read_text(encoding="utf-8")


def test_pages_taken_from_the_last_build_follow_every_change_of_what_they_are_made_from(cli, vault, monkeypatch):
    """`build` takes the pages from its last run when nothing they are made from changed; a same-size edit with
    its mtime put back, a ledger step, a note that no longer parses and a hand-edited page are all seen."""
    from vault_tools.commands import page_inputs
    monkeypatch.setattr(page_inputs, "RACY_NANOSECONDS", 0)
    trust_the_cache_at_once(monkeypatch)
    question = decision(vault, 1, "open", summary="Should footers carry the newsletter link?")
    decision(vault, 2, "ruled", ("blog-comments",), summary="Comments stay closed on every post.")
    assert cli("build").code == 0
    memo = vault / ".vault-tools" / page_inputs.MEMO_FILE
    assert memo.exists() and "footers carry the newsletter link" in _open_page(vault)
    assert cli("build").out == ""  # taken from the memo: nothing to write

    before = question.stat()
    question.write_text(question.read_text().replace("footers carry", "headers carry"))
    os.utime(question, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert cli("build").code == 0 and "headers carry the newsletter link" in _open_page(vault)

    assert cli("withdraw", "D-0001", "--reason", "The owner dropped the newsletter altogether.").code == 0
    assert cli("build").code == 0 and "D-0001" not in _open_page(vault)

    write(vault / "Decisions" / "D-0003 Broken.md", "---\ntype: decision\nid: D-0003\nstatus: [open\n---\n")
    assert cli("build").code == 0 and "D-0003 Broken" in _open_page(vault)

    page = vault / "Pinned" / "Open questions.md"
    generated = page.read_text(encoding="utf-8")
    page.write_text(generated + "\nTyped into the page by hand.\n", encoding="utf-8")
    assert cli("build").code == 0 and page.read_text(encoding="utf-8") == generated


def test_a_damaged_memo_of_the_pages_is_made_again(cli, vault, monkeypatch):
    from vault_tools.commands import page_inputs
    monkeypatch.setattr(page_inputs, "RACY_NANOSECONDS", 0)
    decision(vault, 1, "open", summary="Should footers carry the newsletter link?")
    assert cli("build").code == 0
    memo = vault / ".vault-tools" / page_inputs.MEMO_FILE
    generated = _open_page(vault)
    key = memo.read_text().split("\n", 1)[0]
    for damage in ("not json at all", f"{key}\nnot json", f"{key}\n[]", f'{key}\n{{"pages": {{"texts": []}}}}',
                   f'{key}\n{{"pages": 1}}', f"{key}\n" + '{"pages": {"texts": {"Open questions": 1}}}'):
        memo.write_text(damage)
        (vault / "Pinned" / "Open questions.md").unlink()
        assert cli("build").code == 0 and _open_page(vault) == generated


def test_pages_are_not_remembered_from_inputs_written_within_the_racy_window(cli, vault):
    """An edit in the clock tick the pages were made in may leave the note's size and times as they were: such
    pages are never taken from the memo."""
    from vault_tools.commands import page_inputs
    question = decision(vault, 1, "open", summary="Should footers carry the newsletter link?")
    assert cli("build").code == 0
    assert not (vault / ".vault-tools" / page_inputs.MEMO_FILE).exists()
    before = question.stat()
    question.write_text(question.read_text().replace("footers carry", "headers carry"))
    os.utime(question, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert cli("build").code == 0 and "headers carry the newsletter link" in _open_page(vault)


def test_the_pages_are_made_anew_when_only_the_ledger_or_the_config_changed(cli, vault, monkeypatch):
    """A pull can bring ledger lines (another clone's steps) or a config without touching any note."""
    from vault_tools.commands import page_inputs
    from vault_tools.services.workspace import Workspace
    decision(vault, 1, "open", summary="Should footers carry the newsletter link?")
    assert cli("ask", "Should the blog keep comments open?", "--topic", "blog-comments").code == 0

    def key() -> str | None:
        ws = Workspace(Vault(vault))
        return page_inputs.inputs_key(ws, ws.state())[0]

    first = key()
    assert first is not None and key() == first
    with open(ledger_file(vault), "a", encoding="utf-8") as ledger:
        ledger.write("")  # no new byte: nothing changed
    assert key() == first
    source = ledger_file(vault)
    source.write_bytes(source.read_bytes())  # the same lines, rewritten (a checkout): its times changed
    assert key() != first
    second = key()
    config = config_file(vault)
    config.write_text(config.read_text() + "\nstale_after_days: 3\n")
    assert key() != second


def test_the_agents_view_taken_from_an_earlier_run_follows_the_notes_the_day_and_the_budget(cli, vault, monkeypatch):
    from vault_tools.commands import page_inputs
    monkeypatch.setattr(page_inputs, "RACY_NANOSECONDS", 0)
    trust_the_cache_at_once(monkeypatch)
    decision(vault, 1, "open", summary="Should footers carry the newsletter link?", asked_at="2026-11-01T09:00:00")
    decision(vault, 2, "ruled", ("blog-comments",), summary="Comments stay closed on every post.")
    first = cli("context", "--today", "2026-11-03")
    assert first.code == 0 and "footers carry the newsletter link" in first.out
    assert (vault / ".vault-tools" / page_inputs.MEMO_FILE).exists()
    assert cli("context", "--today", "2026-11-03").out == first.out  # the same, from the memo
    later = cli("context", "--today", "2026-12-20")
    assert later.code == 0 and later.out != first.out  # the question has grown old since
    assert cli("context", "--today", "2026-11-03", "--budget", "200").out != first.out
    as_json = cli("context", "--today", "2026-11-03", "--json")
    assert json.loads(as_json.out)["text"] == first.out
    decision(vault, 3, "open", ("podcast",), summary="Should the podcast get its own newsletter?")
    assert "podcast get its own newsletter" in cli("context", "--today", "2026-11-03").out
    assert "podcast get its own newsletter" in json.loads(cli("context", "--today", "2026-11-03", "--json").out)["text"]


def test_lint_takes_the_agents_budget_check_from_an_earlier_run_only_while_the_questions_are_the_same(
        cli, vault, monkeypatch):
    from vault_tools.commands import page_inputs
    monkeypatch.setattr(page_inputs, "RACY_NANOSECONDS", 0)
    trust_the_cache_at_once(monkeypatch)
    questions = [decision(vault, number, "open", (f"topic-{number}",),
                          summary=f"Question number {number}: " + "should the footer carry this link " * 6 + "?")
                 for number in range(1, 121)]
    assert "VT031" in cli("lint").out
    assert "VT031" in cli("lint").out  # from the memo
    for path in questions[10:]:
        path.unlink()
    assert "VT031" not in cli("lint").out


def _codes(cli) -> list[str]:
    return [d["code"] for d in json.loads(cli("lint", "--format", "json").out)["diagnostics"]]


def test_lint_findings_from_an_earlier_run_follow_the_names_of_the_vaults_files(cli, vault, monkeypatch):
    """A sealed ruling's link may follow its note to a new name; when a note of the old name appears again,
    the link points elsewhere than the seal said. Only a file name changed, no decision note: lint sees it."""
    from vault_tools.commands import page_inputs
    monkeypatch.setattr(page_inputs, "RACY_NANOSECONDS", 0)
    trust_the_cache_at_once(monkeypatch)
    write(vault / "Style guide.md", "# Style guide\n\nHouse rules.\n")
    assert cli("rule", "--topic", "article-footer", "--summary", "Every article footer follows the style guide.",
               "--body", "Footers follow [[Style guide]] to the letter.", "--source", "chat").code == 0
    ruling = next((vault / "Decisions").glob("D-0001*.md"))
    (vault / "Style guide.md").rename(vault / "House style.md")
    ruling.write_text(ruling.read_text().replace("[[Style guide]]", "[[House style]]"))  # as Obsidian does
    assert "VT021" not in _codes(cli)
    assert (vault / ".vault-tools" / LINT_MEMO_FILE).exists()
    assert "VT021" not in _codes(cli)  # from the memo
    write(vault / "Style guide.md", "# Style guide\n\nA new note under the old name.\n")
    assert "VT021" in _codes(cli)


def test_lint_findings_inside_the_settle_window_are_found_again_when_it_ends(vault, monkeypatch):
    """A ruling not sealed yet is a warning while the owner may still be typing, an error after; a note with
    no id says nothing while it is being written. Nothing but the clock changes between the runs."""
    from vault_tools.commands import page_inputs
    from vault_tools.lint import gather, lint
    monkeypatch.setattr(page_inputs, "RACY_NANOSECONDS", 0)
    trust_the_cache_at_once(monkeypatch)
    ruling = decision(vault, 1, "ruled", summary="Comments stay closed on every post, always.")
    write(vault / "Decisions" / "Draft.md", "---\ntype: decision\nstatus: open\ntopics: [podcast]\n---\n")
    saved = ruling.stat().st_mtime
    settle = Vault(vault).config.seal_delay_seconds

    def found(now: float) -> dict[str, str]:
        return {d.code: d.severity for d in lint(gather(Vault(vault), now=now)).diagnostics
                if d.code in ("VT020", "VT045")}

    assert found(saved + 1) == {"VT020": "warning"}
    assert (vault / ".vault-tools" / LINT_MEMO_FILE).exists()
    assert found(saved + 2) == {"VT020": "warning"}
    memo = vault / ".vault-tools" / LINT_MEMO_FILE
    key, kept = memo.read_text().split("\n", 1)
    memo.write_text(f"{key}\n" + kept.replace('"change_at": ', '"change_at": NaN, "was": '))  # by hand: never
    assert found(saved + settle + 1) == {"VT020": "error", "VT045": "warning"}
    assert json.loads(memo.read_text().split("\n", 1)[1])["findings"]["change_at"] is None  # kept again: nothing changes with the clock now
    assert found(saved + settle + 2) == {"VT020": "error", "VT045": "warning"}
    assert found(saved + 1) == {"VT020": "warning"}  # a clock set back is not trusted either


def test_a_damaged_lint_memo_is_found_again_and_a_damaged_ledger_is_seen(cli, vault, monkeypatch):
    from vault_tools.commands import page_inputs
    monkeypatch.setattr(page_inputs, "RACY_NANOSECONDS", 0)
    trust_the_cache_at_once(monkeypatch)
    decision(vault, 1, "open", summary="Should footers carry the newsletter link?")
    decision(vault, 2, "ruled", ("blog-comments",), summary="Comments stay closed on every post.")
    assert cli("seal", "D-0002").code == 0
    first = cli("lint", "--format", "json").out
    memo = vault / ".vault-tools" / LINT_MEMO_FILE
    key, kept = memo.read_text().split("\n", 1)
    found = json.loads(kept)["findings"]
    severity_changed = {code: [[*f[:3], "bogus"] for f in made] for code, made in found["found"].items()}
    assert any(severity_changed.values())  # findings whose severity a hand can change
    for damage in ("not json at all", f"{key}\n[]", f"{key}\n{{", f"{key}\n" + "[" * 100_000,
                   f"{key}\n" + json.dumps({"findings": {"found": {"VT044": 3}}}),
                   f"{key}\n" + json.dumps({"findings": {**found, "made_at": "soon"}}),
                   f"{key}\n" + json.dumps({"findings": {**found, "found": severity_changed}}),
                   f"{key}\n" + json.dumps({"findings": {**found, "change_at": float("nan")}})):
        memo.write_text(damage)
        assert cli("lint", "--format", "json").out == first
    memo.unlink()
    os.mkfifo(memo)  # read, it would wait for a writer forever
    assert vt("lint", "--format", "json", cwd=vault, timeout=30).out == first
    ledger = ledger_file(vault)
    ledger.write_text(ledger.read_text().replace('"event"', '"evnet"', 1))
    assert "VT024" in _codes(cli)


def test_a_watchers_view_behind_the_ledger_is_never_remembered(tmp_path, monkeypatch, capsys):
    """Another device's ledger file arrives (its note not yet) while the watcher's pass has the vault in view: the
    pages it then builds are from the ledger as it was, so they are not remembered for the ledger as it is."""
    import shutil

    from vault_tools.cli import run
    from vault_tools.commands import build as build_module
    from vault_tools.commands import page_inputs
    from vault_tools.commands.setup import init_vault
    from vault_tools.services.live import LiveState
    from vault_tools.services.workspace import Workspace
    monkeypatch.setattr(page_inputs, "RACY_NANOSECONDS", 0)
    trust_the_cache_at_once(monkeypatch)
    laptop, phone = tmp_path / "laptop", tmp_path / "phone"
    (laptop / ".obsidian").mkdir(parents=True)
    init_vault(laptop, "UTC")

    def cli(root, *args):
        capsys.readouterr()
        code = run([*args, "--vault", str(root)])
        return code, capsys.readouterr().out

    code, out = cli(laptop, "ask", "Should footers carry the newsletter link?", "--topic", "article-footer")
    assert code == 0
    question = out.split()[0]
    shutil.copytree(laptop, phone, ignore=shutil.ignore_patterns(".vault-tools"))  # a device of its own
    assert cli(phone, "withdraw", question, "--reason", "The owner dropped the newsletter altogether.")[0] == 0
    ws = Workspace(Vault(laptop))
    with LiveState(ws) as live:
        ours = {p.name for p in (laptop / "vault-tools" / "ledger").iterdir()}
        for carried in (phone / "vault-tools" / "ledger").iterdir():  # the ledger file comes first
            if carried.name not in ours:
                shutil.copy2(carried, laptop / "vault-tools" / "ledger" / carried.name)
        build_module.build(ws, state=live.state, remembered=True)
    with_memo = cli(laptop, "build", "--check")
    (laptop / ".vault-tools" / page_inputs.MEMO_FILE).unlink(missing_ok=True)
    assert with_memo == cli(laptop, "build", "--check")


@pytest.mark.skipif(not (CORPORA / "adr-jabref").is_dir(), reason=f"the ADR corpora are not at {CORPORA}")
def test_real_decision_records_get_from_the_memo_what_they_get_with_nothing_kept(cli, vault, monkeypatch):
    """JabRef's 70 architecture decision records, imported: lint, the agent's view and the pages, taken from
    what was kept, are what they are made afresh."""
    import shutil

    from vault_tools.commands import page_inputs
    monkeypatch.setattr(page_inputs, "RACY_NANOSECONDS", 0)
    trust_the_cache_at_once(monkeypatch)
    assert cli("import", "adr", str(CORPORA / "adr-jabref")).code == 0
    commands = (["lint", "--format", "json"], ["context", "--json"], ["context", "--budget", "codex-hook"],
                ["build", "--check"])
    first = [cli(*args) for args in commands]
    assert (vault / ".vault-tools" / LINT_MEMO_FILE).exists() and (vault / ".vault-tools" / page_inputs.MEMO_FILE).exists()
    assert [cli(*args) for args in commands] == first
    shutil.rmtree(vault / ".vault-tools" / "cache")
    assert [cli(*args) for args in commands] == first


def test_a_vault_set_up_in_the_shared_layout_keeps_its_caches_from_the_first_read(tmp_path):
    """`init` makes this device's own folder (`.vault-tools/`), where a read keeps its caches: a read never makes
    it (a clone this device never set up is left as it was), so a second vault set up by the same process,
    whose config this process had read already, must have it too."""
    for name in ("first", "second"):
        root = make_vault(tmp_path / name, shared=True)
        decision(root, 1)
        assert [d.id for d in Vault(root).load().decisions] == ["D-0001"]
        reading_module.finish_stores()
        assert (root / ".vault-tools" / CACHE_FILE).exists(), name
