"""A process that keeps its last read (the resident process) takes it again without walking the vault only where
the kernel says that nothing in its folders changed since the walk it came from; every change a walk would see is
seen, and where the kernel cannot be trusted to say so, the vault is walked every time. Real folders, real
inotify; the walks are counted, and each read is compared with a read of a process that keeps nothing."""
from __future__ import annotations

import os
import random
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import CORPORA, PAST_RACY_SECONDS, ClockAhead, decision, make_vault, write
from vault_tools import folder_watch, vault_walk
from vault_tools import vault as vault_module
from vault_tools.vault import Vault, VaultState

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


@pytest.fixture(autouse=True)
def _on_a_local_file_system(tmp_path: Path) -> None:
    if not folder_watch.on_local_file_system(str(tmp_path)):  # CI and `make test` use /dev/shm, a tmpfs
        pytest.skip(f"{tmp_path} is on a file system the watch does not trust (network, FUSE or overlay)")


def seen(state: VaultState) -> tuple[object, ...]:
    """What a command reads of a state: the files (and each note's stat key), each decision as read, what could not
    be read."""
    return (sorted(state.files), sorted((state.stat_keys or {}).items()),
            [(d.path, d.id, d.status, d.summary, d.body) for d in state.decisions],
            sorted(str(error) for error in state.broken))


def keeping_reads(monkeypatch: pytest.MonkeyPatch, root: Path) -> Callable[[], tuple[VaultState, bool]]:
    """Reads of the vault at `root` as the resident process makes them (its last read kept, the kernel watching its
    folders and decision notes), each note past the racy window; each gives the state and whether the vault was
    walked for it."""
    monkeypatch.setattr(vault_module, "time", ClockAhead(PAST_RACY_SECONDS))
    monkeypatch.setattr(vault_module, "KEEP_LAST_READ", True)
    monkeypatch.setattr(vault_module, "WATCH_FOLDERS", folder_watch.watch_of)
    monkeypatch.setattr(vault_module, "_last_reads", {})
    monkeypatch.setattr(folder_watch, "_watches", {})
    walks: list[int] = []
    real_walk = Vault._walk

    def counted(self: Vault, *args: object, **kwargs: object) -> object:
        walks.append(1)
        return real_walk(self, *args, **kwargs)  # type: ignore[arg-type]
    monkeypatch.setattr(Vault, "_walk", counted)

    def read() -> tuple[VaultState, bool]:
        before = len(walks)
        return Vault(root).load(), len(walks) > before
    return read


def close_watches() -> None:
    """Close every watch this process keeps (their inotify descriptors)."""
    for watch in folder_watch._watches.values():
        if watch is not None:
            watch.close()


@pytest.fixture
def kept_reads(vault: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], tuple[VaultState, bool]]:
    yield keeping_reads(monkeypatch, vault)
    close_watches()


def alone(vault: Path, monkeypatch: pytest.MonkeyPatch) -> VaultState:
    """The vault as a process of its own reads it."""
    with monkeypatch.context() as own:
        own.setattr(vault_module, "KEEP_LAST_READ", False)
        own.setattr(vault_module, "WATCH_FOLDERS", None)
        return Vault(vault).load()


def settled(read: Callable[[], tuple[VaultState, bool]]) -> None:
    """Read until no walk is made: the read after a change walks, the next one walks again where a folder or a
    decision note was new to the watch (listed before its watch was there; a first read of a vault with no cache
    watches no note), and the fourth read at the latest takes the last again."""
    for _ in range(4):
        _, walked = read()
    assert not walked


def _edit_in_place(vault: Path) -> None:
    note = vault / "Decisions" / "D-0002 Note.md"
    text = note.read_text(encoding="utf-8")
    with note.open("r+", encoding="utf-8") as handle:  # the same size: only its bytes and times differ
        handle.write(text.replace("Summary of decision number 2.", "Summary of decision number 9.", 1))


def _times_only(vault: Path) -> None:
    note = vault / "Decisions" / "D-0002 Note.md"
    os.utime(note, ns=(note.stat().st_atime_ns, note.stat().st_mtime_ns - 10**9))


def _new_note_here(vault: Path) -> None:
    decision(vault, 4, topics=("topic-four",))


def _new_note_in_a_new_folder(vault: Path) -> None:
    decision(vault / "Projects" / "Later", 4, topics=("project-later",))


def _renamed(vault: Path) -> None:
    (vault / "Decisions" / "D-0002 Note.md").rename(vault / "Decisions" / "D-0002 Renamed.md")


def _removed(vault: Path) -> None:
    (vault / "Decisions" / "D-0002 Note.md").unlink()


def _replaced_by_a_rename(vault: Path) -> None:  # as Obsidian's sync and every careful writer save a file
    note = vault / "Decisions" / "D-0002 Note.md"
    temp = vault / "Decisions" / ".saving.tmp"
    temp.write_text(note.read_text(encoding="utf-8").replace("number 2.", "number two."), encoding="utf-8")
    os.replace(temp, note)


def _ordinary_note_becomes_a_decision(vault: Path) -> None:
    write(vault / "Notes" / "Reading list.md", "---\ntype: decision\nid: D-0005\nstatus: open\ntopics: [reading]\n"
          "summary: \"Which book do we read next?\"\n---\n")


def _folder_removed(vault: Path) -> None:
    for note in (vault / "Notes").iterdir():
        note.unlink()
    (vault / "Notes").rmdir()


@pytest.mark.parametrize("change", [_edit_in_place, _times_only, _new_note_in_a_new_folder, _renamed, _removed,
                                    _replaced_by_a_rename, _ordinary_note_becomes_a_decision, _folder_removed],
                         ids=lambda change: change.__name__.strip("_").replace("_", " "))
def test_a_kept_read_is_taken_again_without_a_walk_until_a_change_and_every_change_is_read(
        vault, monkeypatch, kept_reads, change):
    for number in (1, 2, 3):
        decision(vault, number, topics=(f"topic-{number}",))
    write(vault / "Notes" / "Reading list.md", "# Books\n\nNothing decided here.\n")
    settled(kept_reads)
    taken, walked = kept_reads()
    assert not walked and seen(taken) == seen(alone(vault, monkeypatch))
    change(vault)
    changed, walked = kept_reads()
    assert walked and seen(changed) == seen(alone(vault, monkeypatch)) != seen(taken)
    settled(kept_reads)
    assert seen(kept_reads()[0]) == seen(alone(vault, monkeypatch))


def stat_taken(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The notes each walk from now on stat'ed (those the kernel did not vouch for), one list a walk."""
    walks: list[list[str]] = []
    real_walk = Vault._walk

    def watched(self: Vault, *args: object, **kwargs: object) -> object:
        listed = real_walk(self, *args, **kwargs)  # type: ignore[arg-type]
        known = kwargs.get("known") or {}
        walks.append([rel for rel, path, _ in listed if path not in known])  # type: ignore[attr-defined]
        return listed
    monkeypatch.setattr(Vault, "_walk", watched)
    return walks


@pytest.mark.parametrize("change", [_edit_in_place, _times_only, _replaced_by_a_rename, _new_note_here],
                         ids=lambda change: change.__name__.strip("_").replace("_", " "))
def test_the_first_read_after_a_change_stats_only_what_the_kernel_named(vault, monkeypatch, kept_reads, change):
    """A walk's stats are three quarters of it: the read after a note was edited, touched, saved by a rename or
    made stats that note alone (and what else the kernel named), and answers as a process of its own."""
    for number in (1, 2, 3):
        decision(vault, number, topics=(f"topic-{number}",))
    write(vault / "Notes" / "Reading list.md", "# Books\n\nNothing decided here.\n")
    settled(kept_reads)
    walks = stat_taken(monkeypatch)
    change(vault)
    changed, walked = kept_reads()
    assert walks == [["Decisions/D-0004 Note.md" if change is _new_note_here else "Decisions/D-0002 Note.md"]]
    assert walked and seen(changed) == seen(alone(vault, monkeypatch))


def test_every_note_is_stat_ed_again_once_the_last_walk_that_did_is_old(vault, monkeypatch, kept_reads):
    """What no event says (a write through a memory mapping) is seen by the first walk `MOST_SECONDS_UNWALKED`
    after the last one that stat'ed every note, whatever the kernel named since."""
    for number in (1, 2):
        decision(vault, number, topics=(f"topic-{number}",))
    settled(kept_reads)
    walks = stat_taken(monkeypatch)
    _edit_in_place(vault)
    kept_reads()
    assert walks == [["Decisions/D-0002 Note.md"]]
    monkeypatch.setattr(folder_watch, "MOST_SECONDS_UNWALKED", 0.0)
    _times_only(vault)
    read, _ = kept_reads()
    assert sorted(walks[-1]) == ["Decisions/D-0001 Note.md", "Decisions/D-0002 Note.md"]
    assert seen(read) == seen(alone(vault, monkeypatch))


def _exchange(one: Path, other: Path, spare: Path) -> None:
    """Two notes' names swapped (three renames through a name outside the vault)."""
    os.rename(one, spare)
    os.rename(other, one)
    os.rename(spare, other)


def _written_through_a_passing_link(note: Path, elsewhere: Path, old: str, new: str) -> None:
    """A second name made outside the vault, the note written through it, that name removed (one link again)."""
    os.link(note, elsewhere)
    text = elsewhere.read_text(encoding="utf-8")
    with open(elsewhere, "r+", encoding="utf-8") as handle:
        handle.write(text.replace(old, new))
        handle.truncate()
    os.unlink(elsewhere)


@pytest.mark.parametrize("then", ["written", "one moved out"])
def test_two_notes_swapped_between_a_read_and_its_watch_never_file_a_watch_under_the_other(
        vault, monkeypatch, kept_reads, tmp_path, then):
    """Two notes' names swapped after a read and before the watch it covers (and swapped again later): each
    note's own watch is filed under the note it watches, so a change made through another name of one is read
    (a watch filed under the other note's path said it of that one, or the last one's watch was removed; found
    by an independent review)."""
    a = decision(vault, 1, topics=("topic-one",))
    b = decision(vault, 2, topics=("topic-two",))
    settled(kept_reads)
    spare = tmp_path / "spare"
    _exchange(a, b, spare)
    real_cover = folder_watch.FolderWatch.cover
    swapped: list[bool] = []

    def swapped_back_before_the_watch(self: folder_watch.FolderWatch, *args: object) -> None:
        if not swapped:
            swapped.append(True)
            _exchange(a, b, spare)
        real_cover(self, *args)  # type: ignore[arg-type]
    monkeypatch.setattr(folder_watch.FolderWatch, "cover", swapped_back_before_the_watch)
    kept_reads()
    monkeypatch.setattr(folder_watch.FolderWatch, "cover", real_cover)
    _exchange(a, b, spare)  # `b` holds D-0001's file, `a` D-0002's
    if then == "one moved out":
        os.rename(b, tmp_path / "moved out.md")
    state, walked = kept_reads()
    assert walked and seen(state) == seen(alone(vault, monkeypatch))
    settled(kept_reads)
    if then == "written":
        _written_through_a_passing_link(b, tmp_path / "elsewhere.md", "number 1.", "number one, changed elsewhere.")
    else:
        _written_through_a_passing_link(a, tmp_path / "elsewhere.md", "number 2.", "number two, changed elsewhere.")
    state, _ = kept_reads()
    fresh = alone(vault, monkeypatch)
    assert any("changed elsewhere" in d.summary for d in fresh.decisions)
    assert seen(state) == seen(fresh)


def test_a_note_with_a_second_link_or_that_is_a_link_is_walked_every_time(vault, monkeypatch, kept_reads, tmp_path):
    """A change made through another name of a note, elsewhere, is said to that other folder only: while a note has
    two links, or is a symbolic link (to a note in a folder the walk does not enter), the kernel's silence says
    nothing of it."""
    decision(vault, 1, topics=("topic-one",))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.link(decision(vault, 2, topics=("topic-two",)), elsewhere / "second name.md")
    for _ in range(3):
        assert kept_reads()[1]
    text = (elsewhere / "second name.md").read_text(encoding="utf-8")
    (elsewhere / "second name.md").write_text(text.replace("number 2.", "number two."), encoding="utf-8")
    assert seen(kept_reads()[0]) == seen(alone(vault, monkeypatch))
    assert "Summary of decision number two." in [d.summary for d in kept_reads()[0].decisions]

    (vault / "Decisions" / "D-0002 Note.md").unlink()
    target = decision(vault / ".drafts", 3, topics=("topic-three",))  # a folder no walk enters, nor watches
    (vault / "Decisions" / "D-0003 Note.md").symlink_to(target)
    for _ in range(3):
        assert kept_reads()[1]
    target.write_text(target.read_text(encoding="utf-8").replace("number 3.", "number three."), encoding="utf-8")
    assert "Summary of decision number three." in [d.summary for d in kept_reads()[0].decisions]
    (vault / "Decisions" / "D-0003 Note.md").unlink()
    settled(kept_reads)


def test_a_folder_on_a_file_system_not_known_to_be_local_is_never_trusted(tmp_path):
    """Changes to a network, FUSE or overlay file system may come from elsewhere, unseen by this kernel: a folder
    there leaves the kernel's silence meaning nothing (here /proc, a file system of neither kind)."""
    watch = folder_watch.FolderWatch.start()
    assert watch is not None
    try:
        for folders, trusted in (([str(tmp_path)], True), ([str(tmp_path), "/proc"], False)):
            watch.cover(folders, [], notes_plain=True)  # the first cover of a folder is never trusted
            armed = watch.arm()
            watch.cover(folders, [], notes_plain=True)
            assert watch.quiet_since(armed) is trusted
        armed = watch.arm()
        watch.cover([str(tmp_path)], [], notes_plain=False)
        assert not watch.quiet_since(armed)
        armed = watch.arm()
        watch.cover([str(tmp_path), None], [], notes_plain=True)  # a folder that could not be listed
        assert not watch.quiet_since(armed)
    finally:
        watch.close()


def test_no_two_walks_of_a_process_are_given_the_same_number():
    """A read kept under one watch's number is never taken for a walk of a watch made later (one forgotten and
    started again counts anew)."""
    first, second = folder_watch.FolderWatch.start(), folder_watch.FolderWatch.start()
    assert first is not None and second is not None
    try:
        numbers = [watch.arm() for watch in (first, second, first, second, first)]
        assert len(set(numbers)) == len(numbers)
    finally:
        first.close()
        second.close()

def test_a_change_made_between_a_folder_listed_and_watched_is_read(vault, monkeypatch, kept_reads):
    """A folder first met is walked before its watch is there: a note changed in between, whose parts were taken by
    the stat key the walk met, is said to nobody, so the next read walks again (here the first read of a process
    that kept a read and watches no folder yet)."""
    decision(vault, 1, topics=("topic-one",))
    note = decision(vault, 2, topics=("topic-two",))
    settled(kept_reads)
    close_watches()
    monkeypatch.setattr(folder_watch, "_watches", {})
    real_cover = folder_watch.FolderWatch.cover
    edits = []

    def edited_before_the_watch(self: folder_watch.FolderWatch, folders: list[str | None], notes: list[str],
                                notes_plain: bool) -> None:
        if not edits:
            note.write_text(note.read_text(encoding="utf-8").replace("number 2.", "number 5."), encoding="utf-8")
            edits.append(note)
        real_cover(self, folders, notes, notes_plain)
    monkeypatch.setattr(folder_watch.FolderWatch, "cover", edited_before_the_watch)
    first, walked = kept_reads()
    assert walked and "Summary of decision number 2." in [d.summary for d in first.decisions]  # as walked
    again, walked = kept_reads()
    assert walked and seen(again) == seen(alone(vault, monkeypatch))
    assert "Summary of decision number 5." in [d.summary for d in again.decisions]
    settled(kept_reads)



def test_a_link_made_to_a_decision_note_from_elsewhere_after_the_walk_and_written_through_is_read(
        vault, monkeypatch, kept_reads, tmp_path):
    """A second name made for a decision note outside the vault, after the walk, and a write through it, are said to
    the note's own watch (not to the vault's folder): the next read walks and reads it. So is a write through a
    descriptor opened under a name since removed."""
    decision(vault, 1, topics=("topic-one",))
    note = decision(vault, 2, status="open", topics=("topic-two",), summary="Should the footer name the editor?")
    settled(kept_reads)
    elsewhere = tmp_path / "snapshot.md"
    os.link(note, elsewhere)
    os.unlink(elsewhere)  # the link count back to one: a walk now meets the note as it was
    os.link(note, elsewhere)
    held = os.open(elsewhere, os.O_WRONLY)
    os.unlink(elsewhere)
    settled_text = note.read_text(encoding="utf-8")
    os.pwrite(held, settled_text.replace("status: open", "status: ruled").encode("utf-8"), 0)
    os.close(held)
    read, walked = kept_reads()
    assert walked and seen(read) == seen(alone(vault, monkeypatch))
    assert [d.status.value for d in read.decisions if d.id == "D-0002"] == ["ruled"]


def test_a_vault_whose_folder_was_swapped_for_another_is_walked(tmp_path, monkeypatch):
    """Nothing inside the vault's folders says that another folder now stands at its path (a folder above it
    renamed and another put in its place): the vault's folder is compared at each read."""
    root = make_vault(tmp_path / "home" / "vault", shared=True)
    decision(root, 1, topics=("topic-one",))
    read = keeping_reads(monkeypatch, root)
    try:
        settled(read)
        shutil.copytree(root, tmp_path / "other" / "vault", symlinks=True)
        decision(tmp_path / "other" / "vault", 2, topics=("topic-two",))
        (tmp_path / "home").rename(tmp_path / "before")
        (tmp_path / "other").rename(tmp_path / "home")
        state, walked = read()
        assert walked and [d.id for d in state.decisions] == ["D-0001", "D-0002"]
        assert seen(state) == seen(alone(root, monkeypatch))
    finally:
        close_watches()


def test_a_vault_whose_layout_changed_is_walked(vault, monkeypatch, kept_reads):
    """The record moved out of `vault-tools/` (its config to `.vault-tools/`, its ledger folder renamed) leaves
    that folder the owner's, walked from then on; no folder the walk entered says so: the layout is compared at
    each read."""
    decision(vault, 1, topics=("topic-one",))
    decision(vault / "vault-tools" / "Drafts", 2, topics=("topic-two",))
    settled(kept_reads)
    assert [d.id for d in kept_reads()[0].decisions] == ["D-0001"]
    (vault / "vault-tools" / "config.yaml").replace(vault / ".vault-tools" / "config.yaml")
    (vault / "vault-tools" / "ledger").rename(vault / "vault-tools" / "ledger-before")
    state, walked = kept_reads()
    assert walked and seen(state) == seen(alone(vault, monkeypatch))
    assert [d.id for d in state.decisions] == ["D-0001", "D-0002"]


def test_a_read_kept_is_walked_again_once_its_walk_is_old(vault, monkeypatch, kept_reads):
    """What no event says (a write through a memory mapping) is seen once the last walk is `MOST_SECONDS_UNWALKED`
    old, at the latest."""
    decision(vault, 1, topics=("topic-one",))
    settled(kept_reads)
    monkeypatch.setattr(folder_watch, "MOST_SECONDS_UNWALKED", 0.0)
    assert kept_reads()[1] and kept_reads()[1]


def test_a_folder_that_could_not_be_listed_leaves_the_next_read_walking(vault, monkeypatch, kept_reads):
    """A walk that could not list a folder (its notes missing from that read) is no walk to trust: the next read
    walks again, and reads them."""
    decision(vault, 1, topics=("topic-one",))
    decision(vault / "Projects", 2, topics=("topic-two",))
    settled(kept_reads)
    (vault / "Projects" / "Decisions" / "D-0002 Note.md").write_text(
        (vault / "Projects" / "Decisions" / "D-0002 Note.md").read_text(encoding="utf-8") + "\nLater.\n",
        encoding="utf-8")
    real_scandir = os.scandir
    failed: list[str] = []

    def once_refused(path: str) -> object:  # as a folder whose permission was taken away, then given back
        if path.endswith("Projects") and not failed:
            failed.append(path)
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)
    monkeypatch.setattr(vault_walk.os, "scandir", once_refused)
    partial, walked = kept_reads()
    assert walked and failed and [d.id for d in partial.decisions] == ["D-0001"]
    again, walked = kept_reads()
    assert walked and seen(again) == seen(alone(vault, monkeypatch))


def test_an_ordinary_note_written_through_a_descriptor_opened_under_another_name_is_read(
        vault, monkeypatch, kept_reads, tmp_path):
    """A note brought into the vault under a second name, its first name removed before the walk, then written
    through a descriptor still open under that first name: the write is said to the note's own watch (every note
    has one), not to its folder's."""
    decision(vault, 1, topics=("topic-one",))
    draft = tmp_path / "draft.md"
    draft.write_text("Nothing decided yet.\n", encoding="utf-8")
    held = os.open(draft, os.O_WRONLY)
    os.link(draft, vault / "Decisions" / "Draft.md")
    draft.unlink()
    settled(kept_reads)
    os.pwrite(held, b"---\ntype: decision\nid: D-0002\nstatus: open\ntopics: [topic-two]\n"
                    b"summary: \"Should the draft be kept?\"\n---\n", 0)
    os.close(held)
    read, walked = kept_reads()
    assert walked and [d.id for d in read.decisions] == ["D-0001", "D-0002"]
    assert seen(read) == seen(alone(vault, monkeypatch))


def inotify_watches_held(vault: Path) -> int:
    """The inotify watches the vault's watch holds, as the kernel counts them."""
    watch = folder_watch._watches[str(vault)]
    assert watch is not None
    return sum(line.startswith(b"inotify wd:") for line in Path(f"/proc/self/fdinfo/{watch._fd}").read_bytes().splitlines())


def test_a_vault_needing_more_than_its_share_of_the_users_watches_holds_none(vault, monkeypatch, kept_reads):
    """The watcher beside the resident process, and every other program of the user, need inotify watches too:
    a vault whose folders and notes would take more than an eighth of the user's is walked every time, holding
    none."""
    for number in (1, 2, 3):
        decision(vault, number, topics=(f"topic-{number}",))
    settled(kept_reads)
    assert inotify_watches_held(vault) == 5  # the vault and its Decisions folder, its three notes
    monkeypatch.setattr(folder_watch, "_most_watches", lambda: 8 * 4)  # as if the user had 32 in all
    _edit_in_place(vault)  # the next walk finds five to watch, one more than its share
    for _ in range(3):
        assert kept_reads()[1]
    assert inotify_watches_held(vault) == 0


def test_a_folder_or_note_that_cannot_be_watched_leaves_none_watched(vault, monkeypatch, kept_reads):
    """A watch the kernel refuses (what it names gone since the walk, or the user's watches all taken: the watcher
    beside the resident process needs its own) leaves the vault holding none, walked at every read."""
    decision(vault, 1, topics=("topic-one",))
    decision(vault / "Projects", 2, topics=("topic-two",))
    settled(kept_reads)
    assert inotify_watches_held(vault) > 0
    real_cover = folder_watch.FolderWatch.cover

    def folder_gone_before_its_watch(self: folder_watch.FolderWatch, folders: list[str | None],
                                     notes: list[tuple[str, object]], notes_plain: bool) -> None:
        shutil.rmtree(vault / "Projects")
        real_cover(self, folders, notes, notes_plain)  # type: ignore[arg-type]
    monkeypatch.setattr(folder_watch.FolderWatch, "cover", folder_gone_before_its_watch)
    note = vault / "Decisions" / "D-0001 Note.md"
    note.write_text(note.read_text(encoding="utf-8") + "\nLater.\n", encoding="utf-8")  # the next read walks
    kept_reads()
    assert inotify_watches_held(vault) == 0
    monkeypatch.setattr(folder_watch.FolderWatch, "cover", real_cover)
    again, walked = kept_reads()
    assert walked and seen(again) == seen(alone(vault, monkeypatch))


@pytest.mark.soak
def test_kept_reads_answer_as_a_process_of_its_own_through_random_changes(vault, monkeypatch, kept_reads, tmp_path):
    """Random changes of every kind the watch must see (edits of any size, times, renames within and between
    folders, removals, notes and folders made and moved, saves by rename, ordinary notes made decisions and back,
    writes through a second name or a held descriptor), each followed by one to three reads: every read answers
    as a process that keeps nothing, and reads with nothing changed are taken again without a walk. Bounded by
    VAULT_TOOLS_SOAK_RUNS steps (default 80) and 20 s; VAULT_TOOLS_SOAK_SEED replays a run."""
    seed = int(os.environ.get("VAULT_TOOLS_SOAK_SEED", time.time_ns() % 10_000))
    print(f"seed {seed} (VAULT_TOOLS_SOAK_SEED={seed} replays it)")
    rng = random.Random(f"folder-watch-{seed}")
    outside = tmp_path / "outside"
    outside.mkdir()
    folders = ["Decisions", "Projects/Alpha", "Projects/Beta", "Notes"]
    numbers = iter(range(1, 10_000))

    def notes() -> list[Path]:
        return sorted(path for path in vault.rglob("*.md") if not any(part.startswith(".") or part == "vault-tools"
                                                                      or part == "Pinned" for part in
                                                                      path.relative_to(vault).parts))

    def new_note() -> None:
        folder = vault / rng.choice([*folders, "Projects/New", "Later/Deeper"])
        if rng.random() < 0.6:
            decision(folder.parent if folder.name == "Decisions" else folder, next(numbers),
                     status=rng.choice(["open", "ruled"]), topics=(f"topic-{rng.randrange(6)}",))
        else:
            write(folder / f"Plain {next(numbers)}.md", "# A note\n\nNothing decided here.\n")

    def edit(note: Path) -> None:
        text = note.read_text(encoding="utf-8")
        choice = rng.randrange(5)
        if choice == 0:
            text = text.replace("status: open", "status: ruled") if "status: open" in text else \
                text.replace("status: ruled", "status: open")
        elif choice == 1:
            text = text.replace("topic-", "topik-", 1)  # the same size
        elif choice == 2:
            text += "\nAnother line.\n"
        elif choice == 3 and not text.startswith("---"):
            text = f"---\ntype: decision\nid: D-{next(numbers):04d}\nstatus: open\ntopics: [made]\n" \
                   f"summary: \"Was this note a decision all along?\"\n---\n" + text
        elif text.startswith("---"):
            text = "# No longer a decision\n"
        with note.open("r+", encoding="utf-8") as handle:  # in place, as an editor that writes through
            handle.write(text)
            handle.truncate()

    def change() -> None:
        present = notes()
        kind = rng.randrange(9) if present else 0
        note = rng.choice(present) if present else None
        if kind == 0 or note is None:
            new_note()
        elif kind == 1:
            edit(note)
        elif kind == 2:
            os.utime(note, ns=(note.stat().st_atime_ns, note.stat().st_mtime_ns - rng.randrange(1, 10**9)))
        elif kind == 3:
            target = vault / rng.choice(folders)
            target.mkdir(parents=True, exist_ok=True)
            note.rename(target / f"Moved {next(numbers)}.md")
        elif kind == 4:
            note.unlink()
        elif kind == 5:  # saved by rename, as a careful writer saves
            temp = note.parent / ".saving.tmp"
            temp.write_text(note.read_text(encoding="utf-8").replace("topic-", "topic-x"), encoding="utf-8")
            os.replace(temp, note)
        elif kind == 6:  # a second name outside, written through, then removed
            other = outside / f"link {next(numbers)}.md"
            os.link(note, other)
            edit(other)
            other.unlink()
        elif kind == 7:  # a descriptor held under a name since removed
            other = outside / f"held {next(numbers)}.md"
            os.link(note, other)
            held = os.open(other, os.O_WRONLY | os.O_APPEND)
            other.unlink()
            os.write(held, b"\nWritten through a held descriptor.\n")
            os.close(held)
        else:  # a whole folder moved, or made and left empty
            source = vault / rng.choice(["Projects/Alpha", "Projects/Beta", "Later"])
            if source.is_dir():
                source.rename(vault / f"Moved folder {next(numbers)}")
            else:
                source.mkdir(parents=True)

    keys_taken = []
    real_named_since = folder_watch.FolderWatch.named_since

    def counted(self: folder_watch.FolderWatch, armed: int) -> frozenset[str] | None:
        named = real_named_since(self, armed)
        keys_taken.append(named is not None)
        return named
    monkeypatch.setattr(folder_watch.FolderWatch, "named_since", counted)
    for number in range(1, 6):
        decision(vault, number, topics=(f"topic-{number}",))
    settled(kept_reads)
    steps = int(os.environ.get("VAULT_TOOLS_SOAK_RUNS", "80"))
    deadline = time.monotonic() + 20
    taken_again = 0
    for step in range(steps):
        if time.monotonic() > deadline:
            break
        change()
        for _ in range(rng.randrange(1, 4)):
            read, walked = kept_reads()
            taken_again += not walked
            assert seen(read) == seen(alone(vault, monkeypatch)), f"seed {seed}, step {step}"
    assert taken_again > 0  # the kernel's word was taken, not only the walk's
    assert any(keys_taken)  # and walks stat'ed only what it named


@pytest.mark.skipif(not CORPORA.is_dir(), reason=f"corpora not found at {CORPORA}")
@pytest.mark.parametrize("name", ["obsidian-tasks-vault", "kepano-obsidian", "dendron-site"])
def test_a_real_vault_kept_and_edited_reads_as_a_process_of_its_own(name, tmp_path, monkeypatch):
    """Real vaults written by other people (their folders, names and notes), copied and given a record folder:
    kept reads are taken again without a walk, and an edit is read as a process of its own reads it."""
    root = tmp_path / name
    shutil.copytree(CORPORA / name, root, symlinks=True)
    (root / ".vault-tools").mkdir(exist_ok=True)
    read = keeping_reads(monkeypatch, root)
    try:
        settled(read)
        note = sorted(path for path in root.rglob("*.md")
                      if not any(part.startswith(".") for part in path.relative_to(root).parts))[0]
        note.write_text(note.read_text(encoding="utf-8", errors="replace") + "\nEdited.\n", encoding="utf-8")
        edited, walked = read()
        assert walked and seen(edited) == seen(alone(root, monkeypatch))
        settled(read)
    finally:
        close_watches()
