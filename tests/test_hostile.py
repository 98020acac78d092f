"""Broken, hostile and unlucky input (issue 11): each case gave a wrong answer, lost the owner's intent,
wrote where it must not, or crashed. Every test runs the real command line against a real temp vault."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from .helpers import (
    add_to_config,
    config_shown,
    decision,
    ledger_events,
    ledger_file,
    made_id,
    shown_path,
    snapshot,
    write,
)

RULING = "Every article footer carries the newsletter link and the author bio."
REASON = "The owner changed their mind after the reader survey."


def only_note(vault: Path, prefix: str) -> Path:
    found = [p for p in (vault / "Decisions").iterdir() if p.name.startswith(prefix)]
    assert len(found) == 1, found
    return found[0]


def age(*paths: Path, seconds: float = 3600) -> None:
    """Move files' modification times into the past, as if saved before the watcher's quiet period."""
    for path in paths:
        when = path.stat().st_mtime - seconds
        os.utime(path, (when, when))


def lint_errors(cli) -> list[str]:
    """What `lint` reports as errors once the pages are rebuilt (warnings aside)."""
    assert cli("build").code in (0, 1)
    return [line for line in cli("lint").out.splitlines() if " error: " in line]


def codes(result) -> set[str]:
    return {word for line in result.out.splitlines() for word in line.split() if word.startswith("VT0")}


# -- 1, 2: links compared by what they name, code kept as typed -------------------------------------------

@pytest.fixture
def designs(cli, vault):
    write(vault / "Designs" / "Design A.md", "The first design.\n")
    write(vault / "Designs" / "Design B.md", "The second design.\n")
    body = "Use [[Design A]] for the footer.\n\nKeep `[[Design A]]` in the template.\n\n```\n[[Design A]]\n```\n"
    assert cli("rule", "--topic", "article-footer", "--summary", RULING, "--body", body).code == 0
    assert lint_errors(cli) == []
    return only_note(vault, "D-0001")


def test_pointing_a_sealed_ruling_at_another_existing_note_is_an_edit(cli, vault, designs):
    designs.write_text(designs.read_text().replace("Use [[Design A]]", "Use [[Design B]]"))
    result = cli("lint")
    assert result.code == 1 and "VT021" in codes(result) and "body differs" in result.out, result.out
    age(designs)
    assert cli("watch", "--once").code == 0
    assert "Use [[Design A]]" in designs.read_text()  # the sealed text is back; the edit became a revision
    assert any("Design B" in p.read_text() for p in (vault / "Decisions").glob("D-0002*.md"))


def test_renaming_the_linked_note_as_obsidian_does_is_not_an_edit(cli, vault, designs):
    (vault / "Designs" / "Design A.md").rename(vault / "Designs" / "Design C.md")
    designs.write_text(designs.read_text().replace("Use [[Design A]]", "Use [[Design C]]"))
    assert lint_errors(cli) == []
    age(designs)
    typed = designs.read_bytes()
    assert cli("watch", "--once").code == 0
    assert designs.read_bytes() == typed and not list((vault / "Decisions").glob("D-0002*"))


def test_moving_the_linked_note_to_another_folder_is_not_an_edit(cli, vault, designs):
    (vault / "Archive").mkdir()
    (vault / "Designs" / "Design A.md").rename(vault / "Archive" / "Design A.md")
    designs.write_text(designs.read_text().replace("Use [[Design A]]", "Use [[Archive/Design A]]"))
    assert lint_errors(cli) == []


def test_rewording_a_link_that_names_no_note_is_an_edit(cli, vault):
    assert cli("rule", "--topic", "article-footer", "--summary", RULING, "--body", "See [[Plan X]].").code == 0
    note = only_note(vault, "D-0001")
    note.write_text(note.read_text().replace("[[Plan X]]", "[[Plan Y]]"))
    assert "VT021" in codes(cli("lint"))


@pytest.mark.parametrize("old, new", [("`[[Design A]]`", "`[[Design B]]`"), ("```\n[[Design A]]", "```\n[[Design Z]]")])
def test_a_link_inside_code_is_text_and_editing_it_is_an_edit(cli, vault, designs, old, new):
    designs.write_text(designs.read_text().replace(old, new))
    result = cli("lint")
    assert "VT021" in codes(result), result.out


def test_a_link_to_a_decision_still_compares_by_id(cli, vault):
    assert cli("rule", "--topic", "article-footer", "--summary", RULING).code == 0
    footer = made_id(vault, "D-0001")
    assert cli("rule", "--topic", "author-bio", "--summary", "Author bios stay under fifty words each.",
               "--body", f"Follows [[{footer} Every article footer carries the newsletter link and the]].").code == 0
    first = only_note(vault, "D-0001")
    first.rename(first.with_name(f"{footer} Footer rule.md"))
    second = only_note(vault, "D-0002")
    second.write_text(second.read_text().replace(f"[[{footer} Every article footer carries the newsletter link and the]]",
                                                 f"[[{footer} Footer rule]]"))
    assert lint_errors(cli) == []


# -- 3: an exact name wins; a case-only ambiguity is refused ----------------------------------------------

def test_an_exactly_named_note_wins_over_one_that_differs_in_case(cli, vault):
    decision(vault, 1, topics=("upper-case",), title="D-0001 Foo")
    decision(vault, 2, topics=("lower-case",), title="d-0001 foo")
    decision(vault, 3, topics=("lower-case",), supersedes='["[[d-0001 foo]]"]', reason=REASON)
    assert cli("seal", "D-0003").code == 0
    assert "status: superseded" in (vault / "Decisions" / "d-0001 foo.md").read_text()
    assert "status: ruled" in (vault / "Decisions" / "D-0001 Foo.md").read_text()
    assert lint_errors(cli) == []


def test_a_link_only_case_could_resolve_is_refused_naming_both_files(cli, vault):
    decision(vault, 1, topics=("upper-case",), title="D-0001 Foo")
    decision(vault, 2, topics=("lower-case",), title="d-0001 foo")
    decision(vault, 3, topics=("lower-case",), supersedes='["[[D-0001 FOO]]"]', reason=REASON)
    before = snapshot(vault)
    result = cli("seal", "D-0003")
    assert result.code == 1
    assert "Decisions/D-0001 Foo.md or Decisions/d-0001 foo.md" in result.err and "only in case" in result.err
    assert snapshot(vault) == before
    linted = cli("lint")
    assert "VT010" in codes(linted) and "differ only in case" in linted.out


# -- 14: names with characters that break a link -----------------------------------------------------------

@pytest.mark.parametrize("title", ["D-0001 Footer [draft]", "D-0001 Footer | bio", "D-0001 Footer #1", "D-0001 Footer ^2"])
def test_a_note_named_with_link_breaking_characters_can_be_superseded(cli, vault, title):
    decision(vault, 1, title=title)
    assert cli("seal").code == 0
    result = cli("rule", "--topic", "article-footer", "--summary", "Footers carry only the author bio now.",
                 "--supersedes", "D-0001", "--reason", REASON)
    assert result.code == 0, result.err
    assert "status: superseded" in (vault / "Decisions" / f"{title}.md").read_text()
    assert lint_errors(cli) == []
    assert [d["id"] for d in json.loads(cli("lookup", "article-footer", "--json").out)] == ["D-0002"]


def test_a_refused_supersession_names_no_file_that_does_not_exist(cli, vault):
    decision(vault, 1)
    decision(vault, 2, status="withdrawn", topics=("newsletter-day",), reason="Dropped, the owner decides it later.")
    result = cli("rule", "--topic", "newsletter-day", "--summary", "The newsletter goes out on Thursdays now.",
                 "--supersedes", "D-0002", "--reason", REASON)
    assert result.code == 1 and "D-0002 is withdrawn" in result.err
    named = re.match(r"error: (.+?\.md)(:\d+)?: ", result.err)
    assert named is None or (vault / named.group(1)).exists(), result.err


# -- 4: a supersession chain never brings back an old ruling ----------------------------------------------

class Killed(BaseException):
    """Stands for kill -9: nothing after it runs (not even the CLI's error handling)."""


def kill_at_append(monkeypatch, number: int) -> None:
    """The `number`th ledger append (from 0) dies before it writes: a kill between a note and its event."""
    from vault_tools.ledger import Ledger

    real = Ledger.append
    calls = {"n": 0}

    def append(self, events):
        events = list(events)
        if not events:
            return real(self, events)
        calls["n"] += 1
        if calls["n"] - 1 == number:
            raise Killed
        return real(self, events)

    monkeypatch.setattr(Ledger, "append", append)


def current_on(cli, topic: str) -> list[str]:
    return [d["id"] for d in json.loads(cli("lookup", topic, "--json").out)]


@pytest.fixture
def owner_chain(cli, vault):
    """D-0001 sealed; D-0002, written by hand, supersedes it and is not sealed yet."""
    assert cli("rule", "--topic", "article-footer", "--summary", RULING).code == 0
    first = only_note(vault, "D-0001").stem
    decision(vault, 2, summary="Footers carry the newsletter link only.", supersedes=f'["[[{first}]]"]',
             reason=REASON, source="Chat with the owner")
    assert current_on(cli, "article-footer") == ["D-0002"]
    return vault


def supersede_owner_ruling(cli):
    return cli("rule", "--topic", "article-footer", "--summary", "Footers carry the author bio only, no links.",
               "--supersedes", "D-0002", "--reason", REASON, "--source", "Chat with the owner")


def test_superseding_an_unsealed_ruling_keeps_what_it_superseded_superseded(cli, owner_chain):
    assert supersede_owner_ruling(cli).code == 0
    assert current_on(cli, "article-footer") == ["D-0003"]
    listed = json.loads(cli("list", "--json").out)
    assert {d["id"]: d["status"] for d in listed} == {"D-0001": "superseded", "D-0002": "superseded",
                                                      "D-0003": "ruled"}
    assert "superseded_by: \"[[D-0002" in only_note(owner_chain, "D-0001").read_text()
    assert lint_errors(cli) == []


@pytest.mark.parametrize("kill_point", range(4))
def test_a_kill_between_note_and_ledger_never_resurrects_and_lint_fix_finishes(cli, owner_chain, monkeypatch,
                                                                              kill_point):
    kill_at_append(monkeypatch, kill_point)
    with pytest.raises(Killed):
        supersede_owner_ruling(cli)
    monkeypatch.undo()
    assert "D-0001" not in current_on(cli, "article-footer")
    age(*(owner_chain / "Decisions").iterdir())
    fixed = cli("lint", "--fix")
    assert "D-0001" not in current_on(cli, "article-footer")
    assert lint_errors(cli) == [], fixed.err
    assert len(current_on(cli, "article-footer")) == 1
    assert "status: superseded" in only_note(owner_chain, "D-0001").read_text()


def test_watch_once_finishes_a_chain_the_agent_broke(cli, owner_chain, monkeypatch):
    kill_at_append(monkeypatch, 3)
    with pytest.raises(Killed):
        supersede_owner_ruling(cli)
    monkeypatch.undo()
    age(*(owner_chain / "Decisions").iterdir())
    assert cli("watch", "--once").code == 0
    assert current_on(cli, "article-footer") == ["D-0003"]
    assert lint_errors(cli) == []


# -- 5, 9, 15: configured folders and values are checked when the config is read ---------------------------

@pytest.mark.parametrize("setting, message", [
    ("decisions_folder: ../escaped", "must stay inside the vault"),
    ("decisions_folder: /tmp/elsewhere", "relative to it"),
    ("pinned_folder: /abs/path", "relative to it"),
    ("pinned_folder: ../../pages", "must stay inside the vault"),
    ("templates_folder: Decisions", "every ruling would be skipped"),
    ("pinned_folder: Decisions", "every ruling would be skipped"),
    ("templates_folder: Meta\ndecisions_folder: Meta/Decisions", "every ruling would be skipped"),
    ("decisions_folder: .hidden", "hidden folder"),
    ("pinned_folder: Meta\ntemplates_folder: Meta/Templates", "overlap"),
    ("templates_folder: ''", "must name a folder"),
    ("seal_delay_seconds: -5", "seal_delay_seconds must be at least 0"),
    ("budget:\n  bytes: 0", "budget.bytes must be at least 1"),
    ("lint:\n  VT999: off", "'VT999' names no rule"),
])
@pytest.mark.parametrize("command", [["ask", "Should the podcast get a theme tune?", "--topic", "podcast-music"],
                                     ["build"], ["lint"], ["context"], ["list"]])
def test_a_config_that_would_write_outside_or_hide_rulings_is_refused_by_every_command(cli, vault, setting,
                                                                                       message, command):
    decision(vault, 1, topics=("promotion",))
    add_to_config(vault, setting + "\n")
    before = snapshot(vault.parent)
    result = cli(*command)
    assert result.code == 2, result
    assert message in result.err and f"{config_shown(vault)}:" in result.err, result.err
    assert snapshot(vault.parent) == before


def test_a_decisions_folder_linked_out_of_the_vault_is_an_error_not_an_empty_answer(cli, vault, tmp_path):
    outside = tmp_path / "elsewhere"
    decision(outside.parent / "elsewhere-root", 1)
    (outside.parent / "elsewhere-root" / "Decisions").rename(outside)
    (vault / "Decisions").symlink_to(outside, target_is_directory=True)
    before = snapshot(vault)
    for command in (["context"], ["build"], ["lookup", "article-footer"], ["ask", "Should footers have links?",
                                                                          "--topic", "article-footer"]):
        result = cli(*command)
        assert result.code == 2 and "symbolic link" in result.err, (command, result)
    assert snapshot(vault) == before


# -- 7: list says when a decision note cannot be read -------------------------------------------------------

def test_list_warns_and_exits_3_when_a_decision_note_cannot_be_read(cli, vault):
    decision(vault, 1)
    write(vault / "Decisions" / "D-0002 Broken.md", "---\ntype: decision\nid: D-0002\ntopics: [a\n---\n")
    for args in (["list"], ["list", "--json"], ["list", "--status", "ruled"]):
        result = cli(*args)
        assert result.code == 3, result
        assert "D-0001" in result.out and "Decisions/D-0002 Broken.md" in result.err and "warning:" in result.err


# -- 8: init makes exactly the folder named ----------------------------------------------------------------

def test_init_with_a_missing_vault_folder_makes_that_folder_and_not_the_current_one(tmp_path, monkeypatch, capsys):
    from vault_tools.cli import run

    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    assert run(["init", "--vault", str(tmp_path / "new-vault"), "--timezone", "UTC"]) == 0
    assert (tmp_path / "new-vault" / "vault-tools" / "config.yaml").is_file()
    assert list(here.iterdir()) == []
    assert run(["init", "--vault", str(tmp_path / "missing" / "deeper"), "--timezone", "UTC"]) == 2
    assert "create the folder above it first" in capsys.readouterr().err
    assert not (tmp_path / "missing").exists() and list(here.iterdir()) == []
    (tmp_path / "a-file").write_text("x")
    assert run(["init", "--vault", str(tmp_path / "a-file")]) == 2
    assert list(here.iterdir()) == []


# -- 10, 15: a removed or tampered seal line ------------------------------------------------------------------

def drop_ledger_line(vault: Path, number: int) -> None:
    ledger = ledger_file(vault)
    lines = ledger.read_text().splitlines(keepends=True)
    del lines[number - 1]
    ledger.write_text("".join(lines))


def test_a_removed_seal_line_is_put_back_from_this_devices_copy_and_the_edit_is_never_sealed(cli, vault):
    """The tripwire: the device keeps a copy of its ledger; a line taken out is put back, without git."""
    assert cli("rule", "--topic", "article-footer", "--summary", RULING).code == 0
    whole = ledger_file(vault).read_bytes()
    drop_ledger_line(vault, 2)
    note = only_note(vault, "D-0001")
    note.write_text(note.read_text().replace("author bio.", "author bio, and nothing else at all."))
    age(note)
    linted = cli("lint")
    assert "VT055" in codes(linted) and "VT027" in codes(linted), linted.out
    fixed = cli("lint", "--fix")
    assert f"put back 1 ledger line(s) of {shown_path(vault, ledger_file(vault))}" in fixed.err
    assert ledger_file(vault).read_bytes().startswith(whole)
    cli("watch", "--once")  # sealed again: the typed text is kept as a proposed revision, never sealed
    assert [e["event"] for e in ledger_events(vault)][:2] == ["ruled", "sealed"]
    assert "nothing else at all" not in note.read_text()
    assert any("nothing else at all" in path.read_text() for path in (vault / "Decisions").glob("*.md"))


def test_a_removed_seal_line_is_noticed_without_git_or_a_copy_and_the_edit_is_never_sealed(cli, vault):
    assert cli("rule", "--topic", "article-footer", "--summary", RULING).code == 0
    assert [e["event"] for e in ledger_events(vault)] == ["ruled", "sealed"]
    (vault / ".vault-tools" / "ledger-copies" / ledger_file(vault).name).unlink()  # a copy this device never made
    drop_ledger_line(vault, 2)
    note = only_note(vault, "D-0001")
    note.write_text(note.read_text().replace("author bio.", "author bio, and nothing else at all."))
    age(note)
    linted = cli("lint")
    assert "VT027" in codes(linted) and "VT020" not in codes(linted), linted.out
    fixed = cli("lint", "--fix")
    assert "could not seal D-0001" in fixed.err
    cli("watch", "--once")
    assert cli("seal", "D-0001").code == 3
    assert [e["event"] for e in ledger_events(vault)] == ["ruled"]
    assert "nothing else at all" in note.read_text()  # nothing of the owner's is lost either


@pytest.mark.parametrize("how", ["lint --fix", "watch --once", "seal D-0001"])
@pytest.mark.parametrize("old,new", [("[[Design A]]", "[[Design B]]"), ("[[Plan X]]", "[[Plan Y]]")],
                         ids=["to-another-note", "naming-no-note"])
def test_a_link_pointed_elsewhere_after_the_seal_line_was_removed_is_never_sealed(cli, vault, how, old, new):
    """The seal hash reads a link to a note that is not a decision as "a link" (which note it names is checked
    against the sealed text): with the `sealed` line gone, a ruling whose link now names another note is an
    edit the hash cannot see, and is not sealed again (a kill between the two lines leaves such a ruling
    unsealed, for the owner to restore)."""
    write(vault / "Designs" / "Design A.md", "The first design.\n")
    write(vault / "Designs" / "Design B.md", "The second design.\n")
    assert cli("rule", "--topic", "article-footer", "--summary", RULING, "--body", f"Use {old} for the footer.\n",
               "--source", "chat").code == 0
    (vault / ".vault-tools" / "ledger-copies" / ledger_file(vault).name).unlink()  # a copy this device never made
    drop_ledger_line(vault, 2)
    note = only_note(vault, "D-0001")
    note.write_text(note.read_text().replace(old, new))
    age(note)
    assert "VT027" in codes(cli("lint"))
    cli(*how.split())
    assert [e["event"] for e in ledger_events(vault)] == ["ruled"]
    assert new in note.read_text()  # nothing of the owner's is lost either


def test_a_ruling_whose_ledger_line_was_tampered_is_not_promised_a_seal(cli, vault):
    assert cli("rule", "--topic", "article-footer", "--summary", RULING).code == 0
    ledger = ledger_file(vault)
    ledger.write_text(ledger.read_text().replace('"owner"', '"0wner"'))
    result = cli("lint")
    assert "VT024" in codes(result)
    assert "sealed when the sealing delay" not in result.out and "ledger is damaged" in result.out, result.out


# -- 12: temp files a kill left behind -----------------------------------------------------------------------

def test_temp_files_a_kill_left_are_removed_on_the_next_write_and_kept_out_of_git(cli, vault):
    assert cli("rule", "--topic", "article-footer", "--summary", RULING).code == 0
    old = write(vault / "Decisions" / ".vault-tools-abc123.tmp", "---\ntype: decision\nid: D-0001\n---\n")
    old_page = write(vault / "Pinned" / ".vault-tools-def456.tmp", "half a page")
    age(old, old_page, seconds=120)
    fresh = write(vault / "Decisions" / ".vault-tools-new999.tmp", "a write going on now")
    someone_elses = write(vault / "Decisions" / "draft.tmp", "not ours")
    age(someone_elses, seconds=120)
    assert "Decisions/.vault-tools-abc123.tmp" not in cli("lint").out  # out of the vault walk
    assert cli("ask", "Should the podcast get a theme tune?", "--topic", "podcast-music").code == 0
    assert not old.exists() and not old_page.exists()
    assert fresh.exists() and someone_elses.exists()
    assert ".vault-tools-*.tmp" in (vault / ".gitignore").read_text().splitlines()


def test_the_watcher_removes_stale_temp_files_too(cli, vault):
    old = write(vault / "Decisions" / ".vault-tools-abc123.tmp", "---\ntype: decision\n---\n")
    age(old, seconds=120)
    assert cli("watch", "--once").code == 0
    assert not old.exists()


def test_git_does_not_see_temp_files(cli, vault):
    import subprocess

    subprocess.run(["git", "init", "-q", str(vault)], check=True)
    write(vault / "Decisions" / ".vault-tools-abc123.tmp", "x")
    shown = subprocess.run(["git", "-C", str(vault), "status", "--porcelain", "--untracked-files=all"],
                           capture_output=True, text=True, check=True).stdout
    assert ".vault-tools-abc123.tmp" not in shown and ".gitignore" in shown


# -- 11: a full disk and a read-only folder --------------------------------------------------------------------
# A real full file system: a 1 MiB tmpfs mounted for the test (mounting needs root; elsewhere these skip).

@pytest.fixture
def small_disk(tmp_path):
    import subprocess

    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path, leave_pages: int) -> Path:
    """Fill the file system, then free `leave_pages` pages of 4 KiB."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 4096)
        except OSError:
            pass
    size = filler.stat().st_size
    os.truncate(filler, max(0, size - leave_pages * 4096))
    return filler


def temp_files(root: Path) -> list[Path]:
    return [p for p in root.rglob(".vault-tools-*.tmp")]


def assert_failed_cleanly(result, root: Path) -> None:
    assert result.code in (0, 3), result
    if result.code == 3:
        assert "Traceback" not in result.err and len(result.err.strip().splitlines()) == 1, result.err
        assert "cannot write: no space left on device" in result.err, result.err
    assert temp_files(root) == []
    ledger = ledger_file(root).read_bytes() if ledger_file(root).exists() else b""
    assert ledger == b"" or ledger.endswith(b"\n")  # never a torn line


@pytest.mark.parametrize("leave_pages", range(6))
def test_a_full_disk_fails_in_one_line_leaves_no_temp_files_and_lint_fix_finishes(cli, small_disk, leave_pages):
    from .helpers import make_vault

    root = make_vault(small_disk / "vault")
    assert cli("rule", "--topic", "article-footer", "--summary", RULING, root=root).code == 0
    filler = fill(small_disk, leave_pages)
    for args in (["rule", "--topic", "article-footer", "--summary", "Footers carry the author bio only, no links.",
                  "--supersedes", "D-0001", "--reason", REASON],
                 ["ask", "Should the podcast get a theme tune?", "--topic", "podcast-music"],
                 ["build"], ["lint", "--fix"]):
        assert_failed_cleanly(cli(*args, root=root), root)
    filler.unlink()
    age(*(root / "Decisions").iterdir())
    cli("lint", "--fix", root=root)
    assert lint_errors(lambda *a: cli(*a, root=root)) == []
    assert len(current_on(lambda *a: cli(*a, root=root), "article-footer")) == 1
    assert not (root / ".vault-tools" / "crash.log").exists()


def test_a_read_only_file_system_fails_in_one_line(cli, small_disk):
    import subprocess

    from .helpers import make_vault

    root = make_vault(small_disk / "vault")
    assert cli("rule", "--topic", "article-footer", "--summary", RULING, root=root).code == 0
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    result = cli("ask", "Should the podcast get a theme tune?", "--topic", "podcast-music", root=root)
    assert result.code == 3 and "read-only file system" in result.err and "Traceback" not in result.err, result


# -- 13: what blocks the agent's writes ------------------------------------------------------------------------

def test_an_unreadable_plain_note_does_not_block_writes(cli, vault):
    decision(vault, 1)
    (vault / "Attachments").mkdir()
    (vault / "Attachments" / "Meeting notes.md").symlink_to(vault / "nowhere.md")  # cannot be opened
    assert cli("ask", "Should the podcast get a theme tune?", "--topic", "podcast-music").code == 0
    (vault / "Decisions" / "D-0009 Lost.md").symlink_to(vault / "nowhere-either.md")
    blocked = cli("ask", "Should headers show the date?", "--topic", "header-date")
    assert blocked.code == 3 and "Decisions/D-0009 Lost.md" in blocked.err  # it could be a ruling


HALF_TEMPLATE = '---\ntype: decision\nid: "D-"\nstatus: ruled\ntopics: []\nsummary:\nsource:\n---\n## Ruling\n'


def test_a_half_filled_template_does_not_block_writes_on_other_topics(cli, vault):
    decision(vault, 1)
    write(vault / "Untitled.md", HALF_TEMPLATE)
    assert cli("ask", "Should the podcast get a theme tune?", "--topic", "podcast-music").code == 0
    assert cli("rule", "--topic", "header-date", "--summary", "Headers show the date of the last edit.").code == 0


def test_a_broken_note_on_the_topic_at_hand_still_blocks(cli, vault):
    decision(vault, 1)
    write(vault / "Untitled.md", HALF_TEMPLATE.replace("topics: []", "topics: [promotion]"))
    write(vault / "Other.md", "---\ntype: decision\nid: D-0007\ntopics: [a\n---\n")
    before = snapshot(vault)
    result = cli("ask", "Should footers promote the newsletter?", "--topic", "promotion")
    assert result.code == 3 and ("Untitled.md" in result.err or "Other.md" in result.err)
    assert snapshot(vault) == before
    write(vault / "Other.md", "---\ntype: decision\nid: D-0007\nstatus: ruled\ntopics: [Promotions]\nsummary: x\n---\n")
    write(vault / "Untitled.md", HALF_TEMPLATE)
    result = cli("ask", "Should footers promote the newsletter?", "--topic", "promotion")
    assert result.code == 3 and "Other.md" in result.err  # `Promotions` is not kebab-case, but it is this topic


def test_a_revision_note_does_not_repeat_the_old_rulings_summary(cli, vault):
    assert cli("rule", "--topic", "article-footer", "--summary", RULING).code == 0
    note = only_note(vault, "D-0001")
    note.write_text(note.read_text().replace("## Ruling", "## Ruling\n\nAnd a link to the archive."))
    age(note)
    assert cli("watch", "--once").code == 0
    lines = cli("list").out.splitlines()
    assert len(lines) == 2 and "Revision of D-0001: " + RULING in lines[1], lines


# -- 6: one note cannot crowd out the others ---------------------------------------------------------------------

def test_one_note_holding_a_book_stays_within_the_budget_and_crowds_out_no_ruling(cli, vault):
    for number in range(1, 21):
        decision(vault, number, topics=(f"topic-{number}",), summary=f"Ruling number {number} on its own topic.")
    topics = "[" + ", ".join(f"huge-{n}" for n in range(10_000)) + "]"
    decision(vault, 21, summary="A" * 1_000_000, topics=("placeholder",))
    monster = vault / "Decisions" / "D-0021 Note.md"
    monster.write_text(monster.read_text().replace("topics: [placeholder]", f"topics: {topics}"))
    decision(vault, 22, status="open", summary="Q" * 1_000_000, topics=("question-topic",))
    result = cli("context")
    assert result.code == 0, result.err
    assert len(result.out.encode()) <= 25_000, len(result.out.encode())
    for number in range(1, 21):
        assert re.search(rf"\bD-{number:04d}\b", result.out), number
    assert cli("build").code in (0, 1)
    pages = "".join(p.read_text() for p in (vault / "Pinned").glob("*.md"))
    assert "cut: 1,000,000 characters in all" in pages and "… and 9,989 more" in pages
    assert len(pages.encode()) < 100_000
    linted = cli("lint")
    assert "D-0021 Note.md:5: VT009 error: topics must list at most 20 (10,000 given)" in linted.out
    assert "D-0021 Note.md:6: VT009 error: summary must be at most 300 characters (1,000,000 given)" in linted.out
    assert cli("ask", "Should the huge topic be split?", "--topic", "huge-5").code == 1  # still read: settled


def test_the_command_line_refuses_fields_over_their_limits(cli, vault):
    before = snapshot(vault)
    assert cli("ask", "Q" * 301, "--topic", "a-b").code == 2
    assert cli("ask", "Should footers promote the newsletter?", *[a for n in range(21) for a in ("--topic", f"t-{n}")]).code == 2
    assert cli("rule", "--topic", "a-b", "--summary", RULING, "--source", "s" * 2001).code == 2
    assert snapshot(vault) == before


# -- names and characters the output cannot carry as they are -------------------------------------------

def _run(vault: Path, *args: str, **env: str):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "vault_tools", *args], cwd=vault, capture_output=True, text=True,
                          timeout=60, env={**os.environ, **env}, errors="replace")


def test_a_decision_note_whose_file_name_is_not_utf8_is_reported_not_a_crash(cli, vault):
    assert cli("rule", "--topic", "tea-menu", "--summary", "Tea is served at nine every morning, always.",
               "--source", "chat").code == 0
    folder = os.fsencode(vault / "Decisions")
    try:
        with open(folder + b"/Coffee caf\xe9 hours.md", "wb") as handle:  # Latin-1 bytes, not UTF-8
            handle.write(b"---\ntype: decision\nstatus: open\ntopics: [coffee-hours]\n"
                         b"summary: \"When should the coffee machine be switched on?\"\n---\n")
    except OSError as error:  # macOS and Windows file systems refuse such names
        pytest.skip(f"this file system does not take a file name that is not UTF-8 ({error.strerror})")
    linted = _run(vault, "lint")
    assert linted.returncode == 1 and "internal error" not in linted.stderr
    assert r"Decisions/Coffee caf\udce9 hours.md:1: VT001 error: its name is not valid UTF-8" in linted.stdout
    context = _run(vault, "context")
    assert context.returncode == 0 and "Decision notes unreadable or missing (1)" in context.stdout
    assert "Tea is served at nine" in context.stdout  # the rest of the record is as before
    assert _run(vault, "build").returncode == 0


def test_an_ascii_terminal_gets_escapes_not_a_crash(cli, vault):
    summary = "Le café est servi à 8 h → toujours chaud, façon maison."
    assert cli("rule", "--topic", "cafe-menu", "--summary", summary, "--source", "chat").code == 0
    shown = _run(vault, "lookup", "cafe-menu", PYTHONIOENCODING="ascii")
    assert shown.returncode == 0 and r"Le caf\xe9 est servi \xe0 8 h \u2192 toujours chaud" in shown.stdout
    as_json = _run(vault, "lookup", "cafe-menu", "--json", PYTHONIOENCODING="ascii")
    assert as_json.returncode == 0 and json.loads(as_json.stdout)[0]["summary"] == summary
    assert _run(vault, "context", PYTHONIOENCODING="ascii").returncode == 0
