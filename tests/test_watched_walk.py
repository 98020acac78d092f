"""The resident process's walk (`watched_walk`): each note's stat key kept between walks and taken again only
for notes its own watchdog observer heard of, must give what a walk stat'ing every note gives, whatever
happened to the notes between two walks. Each test runs a real observer on a real temp vault."""
from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest

from tests.helpers import make_vault
from vault_tools import vault as vault_module
from vault_tools.vault import Vault
from vault_tools.watched_walk import HEARD_FILE_SYSTEMS, WatchedWalk, mount_type


@pytest.fixture
def watched(tmp_path):
    """A vault of a few folders of notes, and its watched walk running (skipped only where this machine's temp
    folder is on a file system the walk does not trust its observer on: then it is never used there)."""
    root = make_vault(tmp_path / "vault")
    for folder in ("a", "b", "a/deep"):
        (root / folder).mkdir(parents=True, exist_ok=True)
        for number in range(4):
            (root / folder / f"n{number}.md").write_text(f"# {folder} {number}\n", encoding="utf-8")
    if mount_type(str(root)) not in HEARD_FILE_SYSTEMS:
        pytest.skip(f"{tmp_path} is on {mount_type(str(root))}: the watched walk stats every note there")
    walk = WatchedWalk(str(root))
    assert walk.start()
    try:
        yield root, walk
    finally:
        walk.stop()


def _shown(listed):
    return [(rel, path, key if isinstance(key, tuple) else type(key).__name__) for rel, path, key in listed]


def both_walks(root: Path, walk: WatchedWalk):
    """What the watched walk lists, and what a walk stat'ing every note lists, one after the other."""
    vault = Vault(root)
    vault_module.WATCHED_WALK = walk
    try:
        watched = vault._walk([], [], [], stat=True)
    finally:
        vault_module.WATCHED_WALK = None
    return _shown(watched), _shown(vault._walk([], [], [], stat=True))


def settled(root: Path, walk: WatchedWalk, *, never_kept: int = 0) -> None:
    """Walk until a walk stats no note (the marker made and heard, the cache folder's making heard): every test
    begins from there, so what it checks is the keys kept, not a walk that stats every note."""
    for _ in range(5):
        listed, full = both_walks(root, walk)
        assert listed == full
        if walk.spared == len(full) - never_kept:
            return
    raise AssertionError("the watched walk never spared a stat")


def test_a_walk_after_nothing_changed_stats_no_note_and_agrees(watched):
    root, walk = watched
    settled(root, walk)
    listed, full = both_walks(root, walk)
    assert listed == full
    assert walk.spared == len(full) > 0  # every key taken as kept: no note stat'ed


def _same_size_edit_with_old_times(path: Path) -> None:
    """A write in place of the same size, its modification time put back: only ctime tells (and the observer)."""
    before = path.stat()
    text = path.read_text(encoding="utf-8")
    path.write_text(text[:-2] + ("X" if text[-2] != "X" else "Y") + "\n", encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def _replace_by_rename(path: Path) -> None:
    temp = path.with_name(".tmp-replace")
    temp.write_text(path.read_text(encoding="utf-8") + "more\n", encoding="utf-8")
    os.replace(temp, path)


CHANGES = {
    "edit in place": lambda root: (root / "a/n1.md").write_text("# changed\n", encoding="utf-8"),
    "same size, old times": lambda root: _same_size_edit_with_old_times(root / "a/deep/n2.md"),
    "chmod": lambda root: os.chmod(root / "b/n0.md", 0o600),
    "replaced by a rename": lambda root: _replace_by_rename(root / "b/n1.md"),
    "renamed": lambda root: os.rename(root / "a/n2.md", root / "a/renamed.md"),
    "moved to another folder": lambda root: os.rename(root / "a/n3.md", root / "b/moved.md"),
    "removed": lambda root: os.unlink(root / "b/n2.md"),
    "made": lambda root: (root / "a/new.md").write_text("# new\n", encoding="utf-8"),
    "folder made with notes": lambda root: (
        (root / "c").mkdir(), (root / "c/x.md").write_text("# x\n", encoding="utf-8")),
    "folder moved": lambda root: os.rename(root / "a/deep", root / "b/deep"),
    "folder removed": lambda root: shutil.rmtree(root / "b"),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_the_watched_walk_sees_each_kind_of_change(watched, change):
    root, walk = watched
    settled(root, walk)
    CHANGES[change](root)
    listed, full = both_walks(root, walk)
    assert listed == full
    if not change.startswith("folder"):  # a folder made, moved or removed: every note is stat'ed once
        assert walk.spared >= len(full) - 2  # the others' keys taken as kept
    listed, full = both_walks(root, walk)
    assert listed == full


def test_a_note_moved_out_of_the_vault_and_another_moved_in_under_its_name(watched, tmp_path):
    root, walk = watched
    settled(root, walk)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.rename(root / "a/n0.md", outside / "n0.md")
    (outside / "other.md").write_text("# another note, same name\n", encoding="utf-8")
    os.rename(outside / "other.md", root / "a/n0.md")
    listed, full = both_walks(root, walk)
    assert listed == full


def test_a_note_with_a_second_name_in_the_vault_written_through_it(watched):
    root, walk = watched
    settled(root, walk)
    os.link(root / "a/n1.md", root / "b/twin.md")
    with open(root / "b/twin.md", "a", encoding="utf-8") as twin:
        twin.write("written through the other name\n")
    listed, full = both_walks(root, walk)
    assert listed == full
    with open(root / "b/twin.md", "a", encoding="utf-8") as twin:  # and again, once both are known linked
        twin.write("and again\n")
    listed, full = both_walks(root, walk)
    assert listed == full


def test_a_second_name_outside_the_vault_is_caught_once_the_commands_pause(watched, tmp_path):
    """The observer hears nothing of a write through a name outside the vault; the look while the commands
    pause (`look_again`) catches the note given that name."""
    root, walk = watched
    settled(root, walk)
    os.link(root / "a/n1.md", tmp_path / "outside-name.md")
    walk.look_again()
    with open(tmp_path / "outside-name.md", "a", encoding="utf-8") as other:
        other.write("written from outside the vault\n")
    listed, full = both_walks(root, walk)
    assert listed == full


def test_a_note_reached_through_a_symbolic_link_is_stat_ed_each_time(watched, tmp_path):
    root, walk = watched
    target = tmp_path / "elsewhere.md"
    target.write_text("# elsewhere\n", encoding="utf-8")
    (root / "a/linked.md").symlink_to(target)
    settled(root, walk, never_kept=1)
    target.write_text("# elsewhere, changed there\n", encoding="utf-8")
    listed, full = both_walks(root, walk)
    assert listed == full


def test_a_stopped_observer_leaves_every_note_stat_ed(watched):
    root, walk = watched
    settled(root, walk)
    walk.stop()
    (root / "a/n1.md").write_text("# changed after the observer stopped\n", encoding="utf-8")
    listed, full = both_walks(root, walk)
    assert listed == full
    assert walk.spared == 0


def test_the_marker_file_removed_with_the_cache(watched):
    """`rm -rf .vault-tools/cache` takes the marker with it: that walk stats every note, the next ones spare them
    again."""
    root, walk = watched
    settled(root, walk)
    shutil.rmtree(root / ".vault-tools/cache")
    (root / "a/n1.md").write_text("# changed\n", encoding="utf-8")
    listed, full = both_walks(root, walk)
    assert listed == full and walk.spared == 0
    both_walks(root, walk)
    listed, full = both_walks(root, walk)
    assert listed == full and walk.spared == len(full)


def test_mount_type_names_this_file_system_and_refuses_one_with_a_mount_inside(tmp_path):
    assert mount_type(str(tmp_path)) is not None
    assert mount_type("/") is None  # /proc is mounted inside it


@pytest.mark.soak
def test_random_changes_between_walks(watched, tmp_path):
    """Random edits, touches, renames, moves (out of the vault and back too), removals, new folders and links
    between walks: the watched walk lists what a walk stat'ing every note lists, every time."""
    root, walk = watched
    settled(root, walk)
    rng = random.Random(int(os.environ.get("VAULT_TOOLS_SOAK_SEED", "65")))
    outside = tmp_path / "outside"
    outside.mkdir()
    runs = int(os.environ.get("VAULT_TOOLS_SOAK_RUNS", "300")) // 3
    spared_walks = 0
    for step in range(runs):
        notes = sorted(p for p in root.rglob("*.md") if ".vault-tools" not in p.parts and "vault-tools" not in p.parts)
        folders = sorted({p.parent for p in notes} | {root})
        done: list = []
        for _ in range(rng.randint(0, 4)):
            action = rng.choice(["edit", "same-size", "touch", "chmod", "rename", "move", "out", "in", "remove",
                                 "make", "folder", "link", "replace"])
            note = rng.choice(notes) if notes else None
            if note is None or not note.exists() or note.is_symlink():
                action = "make"
            done.append((action, note))
            try:
                if action == "edit":
                    with open(note, "a", encoding="utf-8") as opened:
                        opened.write(f"line {step}\n")
                elif action == "same-size":
                    _same_size_edit_with_old_times(note)
                elif action == "touch":
                    os.utime(note)
                elif action == "chmod":
                    os.chmod(note, rng.choice([0o600, 0o644]))
                elif action == "rename":
                    os.rename(note, note.with_name(f"r{step}-{note.name}"))
                elif action == "move":
                    os.rename(note, rng.choice(folders) / f"m{step}-{note.name}")
                elif action == "out":
                    os.rename(note, outside / f"{step}-{note.name}")
                elif action == "in":
                    away = sorted(outside.glob("*.md"))
                    if away:
                        os.rename(rng.choice(away), rng.choice(folders) / f"i{step}.md")
                elif action == "remove":
                    note.unlink()
                elif action == "make":
                    (rng.choice(folders) / f"new{step}.md").write_text(f"# {step}\n", encoding="utf-8")
                elif action == "folder":
                    made = rng.choice(folders) / f"f{step}"
                    made.mkdir()
                    (made / "inside.md").write_text("# inside\n", encoding="utf-8")
                elif action == "link":
                    os.link(note, rng.choice(folders) / f"l{step}.md")
                elif action == "replace":
                    _replace_by_rename(note)
            except OSError:
                pass
        if rng.random() < 0.2:
            walk.look_again()
        listed, full = both_walks(root, walk)
        assert listed == full, f"step {step}: {done}"
        spared_walks += walk.spared > 0
    assert spared_walks > runs // 4  # the kept keys were taken, not only every note stat'ed
