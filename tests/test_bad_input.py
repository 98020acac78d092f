"""Every input a user can get wrong: a clear message naming the file, a non-zero exit, nothing written."""
from __future__ import annotations

import os
import shutil

import pytest

from .helpers import config_file, config_shown, kept_dir, ledger_file, note_path, shown_path, snapshot, write

RULING = "Every article footer carries the newsletter link and the author bio."
FM = "---\ntype: decision\nid: D-0002\nstatus: ruled\ntopics: [x-y]\nsummary: A summary that is long enough.\n" \
     "ruled_at: 2026-07-17T08:30:00\nruled_by: owner\n"

BAD_NOTES = {
    "malformed-yaml": (FM.replace("topics: [x-y]", "topics: [x-y") + "---\n", "invalid YAML", ":5:"),
    "frontmatter-list": ("---\n- type: decision\n- id: D-0002\n---\n", "not a mapping", ":2:"),
    "frontmatter-scalar": ("---\n\"type: decision\"\n---\n", "not a mapping", ":2:"),
    "unknown-status": (FM.replace("status: ruled", "status: accepted") + "---\n", "unknown status 'accepted'", ":4:"),
    "non-kebab-topic": (FM.replace("topics: [x-y]", "topics: [Article Footer]") + "---\n", "kebab-case", ":5:"),
    "short-summary": (FM.replace("A summary that is long enough.", "Too short") + "---\n", "at least 20", ":6:"),
    "yaml-tag": (FM + "x: !!python/object/apply:os.system [ls]\n---\n", "YAML tag", ":9:"),
    "alias-bomb": (FM + "a: &a [lol, lol, lol]\nb: &b [*a, *a, *a]\nc: [*b, *b, *b]\n---\n", "anchors", ":9:"),
    # A control character YAML refuses, on each way the properties are read (a `*` makes them be checked
    # for aliases first; found by the fuzz test, which crashed there)
    "control-character": (FM.replace("type: decision", "type: decision\x80") + "---\n", "control characters", ":2:"),
    "control-character-after-a-star": (FM.replace("type: decision", "type: decision*\x80") + "---\n",
                                       "control characters", ":2:"),
    "control-character-after-accents": (FM.replace("A summary that is long enough.", "Caf\xe9 " * 30)
                                        .replace("ruled_by: owner", "ruled_by: owner\x07") + "---\n", "control characters", ":8:"),
}


@pytest.fixture
def settled(cli, vault):
    assert cli("rule", "--topic", "article-footer", "--summary", RULING).code == 0
    return vault


def assert_refused_untouched(cli, vault, message, where, code=3):
    before = snapshot(vault)
    # On the bad notes' own topics (x-y, Article Footer): a broken note on another topic does not block.
    result = cli("ask", "Should the podcast get a theme tune?", "--topic", "podcast-music", "--topic", "x-y",
                 "--topic", "article-footer")
    assert result.code == code, result
    first = result.err.splitlines()[0]
    assert message in first and where in first, first
    assert snapshot(vault) == before


@pytest.mark.parametrize("name", BAD_NOTES)
def test_bad_decision_note_blocks_writes_and_names_file_and_line(cli, settled, name):
    text, message, line = BAD_NOTES[name]
    write(settled / "Decisions" / "D-0002 Bad.md", text)
    assert_refused_untouched(cli, settled, message, "Decisions/D-0002 Bad.md" + line)
    shown = cli("show", "D-0002")
    assert shown.code == 3 and "D-0002 Bad.md" in shown.err


def test_duplicate_ids_refuse_only_writes_that_touch_that_id(cli, settled):
    original = next((settled / "Decisions").iterdir())
    write(settled / "Decisions" / "Copy.md", original.read_text())
    before = snapshot(settled)
    for args in (("retract", "D-0001", "--reason", "Recorded in error by the agent, not the owner."),
                 ("rule", "--topic", "promotion", "--summary", "Footers promote the newsletter.",
                  "--supersedes", "D-0001", "--reason", "The newsletter matters more than the bio.")):
        refused = cli(*args)
        assert refused.code == 3, refused
        assert "id D-0001 is used by 2 notes" in refused.err and "vault-tools renumber D-0001" in refused.err
        assert snapshot(settled) == before
    assert cli("ask", "Which city hosts the spring meetup?", "--topic", "meetup-city").code == 0


def test_supersedes_cycle(cli, settled):
    def link(target):
        return f'supersedes: ["[[{target}]]"]\nreason: Because the owner said so in a chat.\n'
    write(settled / "Decisions" / "D-0002 A.md", FM + link("D-0003 B") + "---\n")
    write(settled / "Decisions" / "D-0003 B.md", FM.replace("D-0002", "D-0003") + link("D-0002 A") + "---\n")
    assert_refused_untouched(cli, settled, "cycle: D-0002 -> D-0003 -> D-0002", "Decisions/D-0002 A.md:9")


def test_non_utf8_note(cli, settled):
    (settled / "Decisions" / "D-0002 Latin.md").write_bytes(FM.replace("A summary", "Caf\xe9 summary").encode("latin-1") + b"---\n")
    assert_refused_untouched(cli, settled, "not UTF-8", "Decisions/D-0002 Latin.md:6")


def test_huge_note(cli, settled):
    with open(settled / "Decisions" / "D-0002 Huge.md", "w") as handle:
        handle.write(FM + "---\n")
        handle.write(("x" * 1023 + "\n") * 50 * 1024)
    assert_refused_untouched(cli, settled, "over the 5,242,880-byte limit", "Decisions/D-0002 Huge.md")


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks on this platform")
def test_symlink_to_outside_the_vault(cli, settled, tmp_path):
    outside = write(tmp_path / "outside" / "secret.md", FM + "---\n")
    (settled / "Decisions" / "D-0002 Link.md").symlink_to(outside)
    assert_refused_untouched(cli, settled, "outside the vault", "Decisions/D-0002 Link.md")
    assert outside.read_text() == FM + "---\n"


@pytest.mark.parametrize("args,message", [
    (["ask", "Too short?", "--topic", "a-b"], "summary must be at least 20 characters"),
    (["ask", "What should article footers contain?", "--topic", "Article Footer"], "not a kebab-case key"),
    (["ask", "What should article footers contain?", "--topic", "a-b", "--due", "next week"], "--due must be a date"),
    (["ask", "What should article footers contain?", "--topic", "a-b", "--reask-reason", "meh"], "at least 20"),
    (["show", "../../etc/passwd"], "is not a decision id"),
    (["rule", "--topic", "a-b", "--summary", RULING, "--supersedes", "D-0001"], "needs --reason"),
    (["list", "--status", "accepted"], "unknown status 'accepted'"),
    (["build", "--today", "tomorrow"], "--today must be a date"),
    (["context", "--today", "2026-13-45"], "--today must be a date"),
    (["lint", "--format", "xml"], "--format must be one of text, json, github"),
    (["rule", "--topic", "a-b", "--summary", RULING, "--ruled-at", "yesterday"], "--ruled-at must be a date"),
    (["rule", "--topic", "a-b", "--summary", RULING, "--ruled-at", "9999-12-31T23:00:00-05:00"], "--ruled-at must be"),
    (["context", "--today", "0001-01-01"], "--today must be a date"),
    (["rule", "D-0001", "--summary", RULING, "--not-the-same", "D-0001"], "--not-the-same is for a ruling given"),
    (["rule", "--topic", "a-b", "--summary", RULING, "--ruled-at", "2099-01-01T10:00:00"], "is in the future"),
    (["rule", "--topic", "article-footer", "--summary", RULING + " Again.", "--supersedes", "D-0001", "--reason",
      "The owner changed the policy last week.", "--ruled-at", "2001-02-03"], "is before D-0001 was ruled"),
    (["ask", "What should article footers contain now?", "--topic", "a-b", "--by", "agent\n# Injected\n- [[x]]"],
     "--by must be a name on one line"),
])
def test_bad_arguments_exit_2(cli, settled, args, message):
    before = snapshot(settled)
    result = cli(*args)
    assert result.code == 2 and message in result.err, result
    assert snapshot(settled) == before


def test_a_ruling_withdrawn_or_a_question_retracted_is_refused_saying_how_each_ends(cli, settled):
    assert cli("ask", "Which city hosts the spring meetup this year?", "--topic", "meetup-city").code == 0
    before = snapshot(settled)
    withdrawn = cli("withdraw", "D-0001", "--reason", "The owner does not want this any more.")
    assert withdrawn.code == 1 and "a ruling ends by being retracted, or superseded by a new ruling" in withdrawn.err
    retracted = cli("retract", "D-0002", "--reason", "The owner does not want this any more.")
    assert retracted.code == 1 and "a question ends by being answered, or withdrawn" in retracted.err
    assert snapshot(settled) == before


@pytest.mark.parametrize("args,message", [
    (["rule", "--topic", "a-b", "--summary", RULING, "--supersedes", "D-0099",
      "--reason", "The owner changed the policy last week."], "no decision note has id D-0099"),
    (["show", "D-0042"], "no decision note has id D-0042"),
    (["show", "D-01"], "no decision note has id D-01\n  Did you mean D-0001?"),
    (["retract", "D-0042", "--reason", "The owner changed the policy last week."], "no decision note has id D-0042"),
])
def test_missing_ids_are_refused(cli, settled, args, message):
    before = snapshot(settled)
    result = cli(*args)
    assert result.code == 1 and message in result.err, result
    assert snapshot(settled) == before


def test_only_a_current_ruling_can_be_superseded(cli, settled):
    reason = "The owner changed the policy last week."
    assert cli("rule", "--topic", "article-footer", "--summary", "Footers carry only the author bio now.",
               "--supersedes", "D-0001", "--reason", reason).code == 0
    before = snapshot(settled)
    result = cli("rule", "--topic", "article-footer", "--summary", "Footers carry nothing at all from today.",
                 "--supersedes", "D-0001", "--reason", reason)
    assert result.code == 1 and "D-0001 is superseded" in result.err
    assert snapshot(settled) == before


def test_typed_text_cannot_escape_the_vault(cli, vault, tmp_path):
    result = cli("ask", "../../../outside/evil: is this a path? <script>", "--topic", "a-b")
    assert result.code == 0, result.err
    created = [p for p in tmp_path.rglob("*.md") if p.parent != vault / "Pinned"]
    assert len(created) == 1 and created[0].parent == vault / "Decisions"


def test_bad_config_is_exit_2(cli, vault):
    config_file(vault).write_text("timezone: UTC\nsettle_secs: 5\n")
    result = cli("list")
    assert result.code == 2 and f"{config_shown(vault)}:2: unknown key 'settle_secs'" in result.err


def test_no_vault_found(tmp_path):
    from .helpers import vt
    result = vt("list", cwd=tmp_path)
    assert result.code == 2 and "no vault found" in result.err


@pytest.mark.parametrize("writer", ["ask", "lint --fix"])
def test_a_torn_ledger_is_exit_3_for_readers_and_the_next_write_cuts_the_partial_line_off(cli, settled, writer):
    ledger = ledger_file(settled)
    whole = ledger.read_bytes()
    with open(ledger, "ab") as handle:
        handle.write(b'{"event":"ask')
    before = snapshot(settled)
    shown = cli("show", "D-0001")
    assert shown.code == 3 and f"{shown_path(settled, ledger)}:3: torn last line" in shown.err.splitlines()[0]
    assert "the next write on this device cuts it off" in shown.err
    assert snapshot(settled) == before
    if writer == "ask":
        asked = cli("ask", "Should the podcast get a theme tune?", "--topic", "podcast-music")
        assert asked.code == 0, asked
    else:
        fixed = cli("lint", "--fix")
        assert fixed.code == 0 and "cut off the torn last line of the ledger" in fixed.err, fixed
    assert ledger.read_bytes().startswith(whole) and ledger.read_bytes().endswith(b"\n")
    assert [p.read_bytes() for p in kept_dir(settled).iterdir()] == [b'{"event":"ask']
    assert cli("lint").code == 0


def test_init_with_an_unknown_timezone_writes_nothing(tmp_path):
    from .helpers import vt
    (tmp_path / "v" / ".obsidian").mkdir(parents=True)
    result = vt("init", "--timezone", "Mars/Base", cwd=tmp_path / "v")
    assert result.code == 2 and "unknown timezone 'Mars/Base'" in result.err
    assert sorted(p.name for p in (tmp_path / "v").iterdir()) == [".obsidian"]


def test_seal_delay_seconds_may_be_a_fraction(vault):
    from vault_tools.config import load_config

    config_file(vault).write_text("timezone: Asia/Tokyo\nseal_delay_seconds: 0.5\n")
    assert load_config(vault).seal_delay_seconds == 0.5


@pytest.mark.parametrize("layout", ["plain", "full"])  # read by libyaml, and by ruamel.yaml (a "!" in a comment)
def test_a_config_written_with_the_former_name_settle_seconds_still_sets_the_sealing_delay(vault, cli, layout):
    from vault_tools.config import load_config

    comment = "  # written before the key was renamed!" if layout == "full" else ""
    config = config_file(vault)
    config.write_text(f"timezone: Asia/Tokyo\nsettle_seconds: 5{comment}\n")
    assert load_config(vault).seal_delay_seconds == 5
    config.write_text(f"timezone: Asia/Tokyo\nsettle_seconds: -5{comment}\n")
    assert "seal_delay_seconds must be at least 0" in cli("lint").err
    config.write_text(f"timezone: Asia/Tokyo\nseal_delay_seconds: 5\nsettle_seconds: 9{comment}\n")
    refused = cli("lint")
    assert refused.code == 2 and refused.err.strip() == (f"error: {config_shown(vault)}:3: settle_seconds is the "
                                                         "former name of seal_delay_seconds: keep one of them")


# -- a note the record could not read back is never written ---------------------------------------------

BIG = 6 * 1024 * 1024


def test_rule_with_a_body_over_the_note_limit_is_refused_and_writes_nothing(cli, vault):
    before = snapshot(vault)
    done = cli("rule", "--topic", "article-footer", "--summary", RULING, "--source", "chat", "--body", "x" * BIG)
    assert done.code != 0 and "over the 5,242,880-byte limit of a decision note" in done.err
    assert len(done.err.strip().splitlines()) == 1
    assert snapshot(vault) == before


@pytest.mark.shared_layout  # the hidden layout tags no id outside git
def test_a_ruling_over_the_limit_only_with_its_ids_tag_is_refused_as_it_would_be_written(cli, vault, tmp_path,
                                                                                          monkeypatch):
    """A new device checks a ruling under the id it will write, tag drawn (not kept) and all: the note the
    limit refuses is the one it names, and the refusal keeps no tag."""
    import re

    from vault_tools import notes

    other = tmp_path / "other"
    shutil.copytree(vault, other)  # another device's folder: the same note, its own tag of the same length
    args = ("rule", "--topic", "article-footer", "--summary", RULING, "--source", "chat", "--body", "x" * 100)
    assert cli(*args, root=other).code == 0
    monkeypatch.setattr(notes, "MAX_NOTE_BYTES", note_path(other, "D-0001").stat().st_size - 1)
    before = snapshot(vault)
    done = cli(*args)
    assert done.code == 3 and "over the" in done.err, done.err
    assert re.search(r"Decisions/D-0001-[0-9a-z]{4} Every article footer", done.err), done.err
    assert snapshot(vault) == before


def test_an_adr_over_the_note_limit_is_cut_with_its_whole_text_kept(cli, vault, tmp_path):
    from vault_tools import notes

    folder = tmp_path / "adr"
    write(folder / "0001-keep-everything-in-one-repository.md",
          "# 1. Keep everything in one repository\n\n## Status\n\nAccepted\n\n## Context\n\n"
          + "A line of context that goes on and on.\n" * (BIG // 38))
    assert cli("import", "adr", str(folder)).code == 0
    note = note_path(vault, "D-0001")
    assert note.stat().st_size <= notes.MAX_NOTE_BYTES
    assert "_Cut here: the whole text" in note.read_text(encoding="utf-8")
    kept = list(kept_dir(vault).glob("ADR 1 full text *.md"))
    assert len(kept) == 1 and kept[0].stat().st_size > BIG
    assert cli("lint").code == 0
    assert cli("rule", "--topic", "newsletter-day", "--summary", "The newsletter goes out on Thursdays.",
               "--source", "chat").code == 0  # the vault takes writes: nothing unreadable blocks them


def test_a_ruling_sealed_over_the_limit_and_shortened_by_the_owner_is_sealed_as_shortened(cli, vault, monkeypatch):
    """A note an earlier version let through: unreadable, it blocked every write, and cutting it by hand was
    undone as an in-place edit. The owner's cut is sealed."""
    from vault_tools import notes

    monkeypatch.setattr(notes, "MAX_NOTE_BYTES", 50 * 1024 * 1024)
    assert cli("rule", "--topic", "article-footer", "--summary", RULING, "--source", "chat",
               "--body", "A very long ruling.\n" * (BIG // 20)).code == 0
    monkeypatch.undo()
    note = note_path(vault, "D-0001")
    text = note.read_text(encoding="utf-8")
    note.write_text(text[:text.index("A very long ruling.")] + "A very long ruling, cut short by the owner.\n",
                    encoding="utf-8")
    old = os.stat(note).st_mtime - 600
    os.utime(note, (old, old))
    assert cli("watch", "--once").code == 0
    assert "cut short by the owner" in note.read_text(encoding="utf-8")
    assert cli("lint").code == 0
