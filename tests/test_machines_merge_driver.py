"""git's merge driver for decision notes (`merge-note`, set up by `init`): it merges as the command line does,
keeps both sides of what it cannot merge, and a clone lacking it is told.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vault_tools.cli import run
from vault_tools.vault import Vault

from .git_repo import git_env
from .helpers import write


def test_gits_merge_driver_answers_without_the_command_line_and_merges_as_it_does(tmp_path):
    """git runs `merge-note` once per conflicting decision note of a pull: the front door answers it without
    importing typer, with the result and exit code the full command line gives."""
    base = "---\ntype: decision\nid: D-0001\nstatus: open\ntopics: [footer]\nsummary: What goes in the footer?\n---\n"
    ours = base + "\n## Question\n\nAsked on the laptop.\n"
    theirs = base.replace("topics: [footer]", "topics: [footer, newsletter]")
    clashing = base.replace("What goes in the footer?", "What goes at the very bottom?")
    clashing_ours = base.replace("What goes in the footer?", "What belongs in the footer?")
    merged = {}
    for name, (mine, other, expected) in {"clean": (ours, theirs, 0), "clash": (clashing_ours, clashing, 1)}.items():
        results = []
        for way in ("front door", "command line"):
            folder = tmp_path / name / way.replace(" ", "-")
            paths = [write(folder / f"{part}.md", text) for part, text in (("base", base), ("ours", mine), ("theirs", other))]
            args = ["merge-note", *map(str, paths), "Decisions/D-0001 Footer.md"]
            if way == "front door":
                probe = ("import sys; sys.argv = ['vault-tools', *sys.argv[1:]]\nfrom vault_tools.launch import main\n"
                         "try:\n    main()\n"
                         "except SystemExit as exit_:\n"
                         "    print('typer' in sys.modules, file=sys.stderr); raise\n")
                done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=60)
                assert done.stderr.strip().splitlines()[-1] == "False", done.stderr
                code = done.returncode
            else:
                code = run(args)
            results.append((code, paths[1].read_text(encoding="utf-8")))
        assert results[0] == results[1] and results[0][0] == expected, (name, results)
        merged[name] = results[0][1]
    assert "topics: [footer, newsletter]" in merged["clean"] and "Asked on the laptop." in merged["clean"]
    assert "<<<<<<< ours" in merged["clash"] and "What belongs in the footer?" in merged["clash"]


@pytest.fixture
def in_a_vault(tmp_path, monkeypatch) -> Path:
    """The current folder is a vault's (git runs the notes driver at the top of the clone): where it keeps copies."""
    from .helpers import make_vault

    root = make_vault(tmp_path / "vault")
    monkeypatch.chdir(root)
    return root


def kept_merge_copies(root: Path) -> list[str]:
    staged = Vault(root).layout.merge_copies_dir  # until a watcher files them under kept/
    return sorted(path.read_text(encoding="utf-8") for path in staged.iterdir()) if staged.is_dir() else []


def test_a_ruling_and_its_own_retraction_merge_to_the_retraction_whichever_side_holds_it(tmp_path, in_a_vault):
    """A rebase copied the commit that ruled, so the merge's base is the open question and both sides look
    moved on: this clone holds the ruling (a settlement kept it), the other retracted that same ruling. The
    retraction came later, as the merged ledger says: the note is retracted on either side of the merge
    (it kept this clone's ruling while the ledger said retracted; found by `make soak`, seed 23483)."""
    from vault_tools.commands.gitmerge import merge_note

    head = "---\ntype: decision\nid: D-0003\nstatus: {status}\ntopics: [podcast]\nsummary: {summary}\n"
    question = head.format(status="open", summary="Should we start a podcast?") + "---\n## Question\n\nWhen?\n"
    ruled = head.format(status="ruled", summary="No podcast this year.") + \
        "ruled_at: 2026-12-03T10:00:00\nruled_by: owner\nsource: chat\n---\n## Question\n\nWhen?\n"
    retracted = ruled.replace("status: ruled", "status: retracted").replace(
        "source: chat\n", "source: chat\nreason: Recorded in error, the owner has not decided yet.\n")
    for name, (mine, other) in {"ours-ruled": (ruled, retracted), "ours-retracted": (retracted, ruled)}.items():
        paths = [write(tmp_path / name / f"{part}.md", text)
                 for part, text in (("base", question), ("ours", mine), ("theirs", other))]
        assert merge_note(*paths, "Decisions/D-0003 Podcast.md") == 0, name
        assert paths[1].read_text(encoding="utf-8") == retracted, name


def test_one_closing_with_two_reasons_merges_to_this_clones_reason_and_both_sides_are_kept(tmp_path, in_a_vault):
    """Two clones retracted one ruling with different reasons, then a rebase replays one clone's later commit
    over the other's: the note is retracted on every side and only its `reason` differs. The note keeps this
    clone's reason, a clash in the body too (the note stays readable); both sides are kept whole first."""
    from vault_tools.commands.gitmerge import merge_note

    head = "---\ntype: decision\nid: D-0002\nstatus: retracted\ntopics: [comments]\nsummary: Comments stay closed.\n"
    base = head + "reason: Recorded in error, as first written.\n---\n## Ruling\n\nClosed.\n"
    ours = base.replace("as first written", "step 4")
    theirs = base.replace("as first written", "step 3")
    for name, (mine, other, code, kept) in {
        "reasons": (ours, theirs, 0, "reason: Recorded in error, step 4."),
        "body": (ours.replace("Closed.", "Closed here."), theirs.replace("Closed.", "Closed there."), 0, "Closed here."),
    }.items():
        paths = [write(tmp_path / name / f"{part}.md", text) for part, text in (("base", base), ("ours", mine), ("theirs", other))]
        assert merge_note(*paths, "Decisions/D-0002 Comments.md") == code, name
        merged = paths[1].read_text(encoding="utf-8")
        assert kept in merged and "step 3" not in merged.split("---")[1] and "<<<<<<<" not in merged, (name, merged)
        assert {mine, other} <= set(kept_merge_copies(in_a_vault)), name


def test_a_note_the_vault_reads_as_ordinary_is_merged_as_git_merges_text(tmp_path, in_a_vault):
    """Properties the model would take for `type: decision` only through a YAML form the read does not look for
    (a folded block): the vault reads the note as an ordinary one, so the merge driver merges it as git merges
    text (a clash left marked), keeping no copies; the same note saying `type: decision` is merged as one."""
    from vault_tools.commands.gitmerge import merge_note
    from vault_tools.reading import read_payload

    for form, kind in (("type: >-\n  decision", "other"), ("type: decision", "decision")):
        base = f"---\n{form}\nid: D-0002\nstatus: retracted\ntopics: [comments]\nsummary: Comments stay closed.\n" \
            "reason: Recorded in error, as first written.\n---\n## Ruling\n\nClosed.\n"
        folder = tmp_path / kind
        paths = [write(folder / f"{part}.md", text) for part, text in (
            ("base", base), ("ours", base.replace("as first written", "step 4")),
            ("theirs", base.replace("as first written", "step 3")))]
        assert read_payload(folder, paths[0])[0] == kind
        code = merge_note(*paths, "Decisions/D-0002 Comments.md")
        merged = paths[1].read_text(encoding="utf-8")
        if kind == "other":
            assert code == 1 and "<<<<<<<" in merged and "step 3" in merged and not kept_merge_copies(in_a_vault)
        else:
            assert code == 0 and "<<<<<<<" not in merged and kept_merge_copies(in_a_vault)


def test_two_answers_kept_by_two_settlements_merge_to_this_clones_lines_where_both_changed_them(tmp_path, in_a_vault):
    """The base holds one answer and each side another (two settlements, each keeping its own): the lines both
    sides changed are this clone's (both answers are in the ledger, and both sides are kept whole). Every other
    line merges as git merges it: what only the other side changed stays."""
    from vault_tools.commands.gitmerge import merge_note

    def ruling(summary: str, at: str, body: str = "A podcast?", topics: str = "[podcast]", by: str = "owner") -> str:
        return (f"---\ntype: decision\nid: D-0003\nstatus: ruled\ntopics: {topics}\nsummary: {summary}\n"
                f"asked_at: 2026-12-04T00:12:00\nruled_at: 2026-12-04T00:12:{at}\nruled_by: {by}\n---\n## Question\n\n"
                f"{body}\n")
    base = ruling("Fortnightly, from April.", "10")
    for name, (mine, other, code, kept) in {
        "answers": (ruling("No podcast this year.", "11"), ruling("Monthly, from March.", "10"), 0,
                    ruling("No podcast this year.", "11")),
        "same second": (ruling("No podcast this year.", "10"), ruling("Monthly, from March.", "10"), 0,
                        ruling("No podcast this year.", "10")),
        "one side": (base, ruling("Monthly, from March.", "12"), 0, ruling("Monthly, from March.", "12")),
        "other lines, one side each": (ruling("No podcast this year.", "10"), ruling("Fortnightly, from April.", "10", by="editor"),
                                       0, ruling("No podcast this year.", "10", by="editor")),
        "body": (ruling("No podcast this year.", "11", "A podcast, here?"), ruling("Monthly, from March.", "10", "A podcast, there?"),
                 0, ruling("No podcast this year.", "11", "A podcast, here?")),
        "topics": (ruling("No podcast this year.", "11", topics="[podcast, audio]"),
                   ruling("Monthly, from March.", "10", topics="[podcast, shows]"), 0,
                   ruling("No podcast this year.", "11", topics="[podcast, audio]")),
    }.items():
        paths = [write(tmp_path / name / f"{part}.md", text) for part, text in (("base", base), ("ours", mine), ("theirs", other))]
        assert merge_note(*paths, "Decisions/D-0003 A podcast.md") == code, name
        assert paths[1].read_text(encoding="utf-8") == kept, name
        assert mine == base or {mine, other} <= set(kept_merge_copies(in_a_vault)), name


def test_gits_merge_driver_says_which_note_it_could_not_merge_and_leaves_ours_alone(tmp_path):
    """A side git hands over that cannot be read: one line naming the note, exit 2 (git keeps OURS as it is)."""
    ours = write(tmp_path / "ours.md", "---\ntype: decision\nid: D-0001\nstatus: open\n---\n")
    before = ours.read_bytes()
    done = subprocess.run([sys.executable, "-m", "vault_tools", "merge-note", str(tmp_path / "gone.md"), str(ours),
                           str(tmp_path / "also-gone.md"), "Decisions/D-0001 Footer.md"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: Decisions/D-0001 Footer.md: cannot merge: ") and "gone.md" in line, line
    assert ours.read_bytes() == before


def test_a_clone_lacking_the_merge_drivers_is_told_and_one_holding_them_starts_no_git_to_ask(tmp_path):
    from .git_repo import commit_all
    from .helpers import make_vault

    vault = make_vault(tmp_path / "vault")
    commit_all(vault, "init")
    calls = tmp_path / "git-calls.txt"
    fake = tmp_path / "bin" / "git"  # the real git, each call noted
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\necho "$*" >> "{calls}"\nexec {shutil.which("git")} "$@"\n', encoding="utf-8")
    fake.chmod(0o755)
    env = {**git_env(), "PATH": f"{fake.parent}{os.pathsep}{os.environ['PATH']}"}

    def vt(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "vault_tools", *args, "--vault", str(vault)], env=env,
                              capture_output=True, text=True, timeout=60)

    # `make_vault` ran `init` outside git: this clone's config has no merge drivers
    lacking = vt("build")
    assert lacking.returncode == 0
    assert "this git clone lacks the merge driver(s) vault-tools-pages, vault-tools-notes" in lacking.stderr
    assert vt("init").returncode == 0
    calls.unlink()
    built = vt("build")
    assert built.returncode == 0 and "merge driver" not in built.stderr
    assert not calls.exists()  # the clone's own config said so: git was not started to ask
