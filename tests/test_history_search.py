"""History, as-of, changed, export and search, on real vaults through the command line."""
from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

import pytest

from tests.git_repo import commit_all
from tests.helpers import ledger_file, make_vault, shown_path, vt_here
from vault_tools.index import INDEX_FILE, NO_FTS5_ENV
from vault_tools.ledger_lines import event_line, parse_ledger


def events(vault: Path) -> list:
    return parse_ledger(ledger_file(vault).read_text(encoding="utf-8"), shown_path(vault, ledger_file(vault)))


def as_written_by_an_earlier_version(vault: Path) -> None:
    """The ledger as versions before `asked` carried content wrote it: same events, no question text."""
    old = [dataclasses.replace(e, text=None, summary=None, topics=()) if e.event == "asked" else e
           for e in events(vault)]
    ledger_file(vault).write_text("".join(event_line(e) for e in old), encoding="utf-8")


def footer_story(cli) -> None:
    """A question ruled in the past, then superseded by a later ruling; both recorded today."""
    assert cli("ask", "What should article footers contain?", "--topic", "article-footer").code == 0
    assert cli("rule", "D-0001", "--summary", "Every footer carries the newsletter link.",
               "--ruled-at", "2026-01-10T09:00:00").code == 0
    assert cli("rule", "--summary", "Footers carry the newsletter link and the author bio.", "--topic",
               "article-footer", "--supersedes", "D-0001", "--reason", "Readers asked who wrote each article.",
               "--ruled-at", "2026-03-01T09:00:00").code == 0


# -- the ledger keeps what rebuilds a record ------------------------------------------------------

def test_asked_event_carries_the_questions_text_summary_and_topics(cli, vault):
    cli("ask", "Which day should the newsletter go out?", "--topic", "newsletter-day", "--body", "Readers vary.")
    asked = next(e for e in events(vault) if e.event == "asked")
    assert asked.summary == "Which day should the newsletter go out?"
    assert asked.topics == ("newsletter-day",)
    assert asked.text == (vault / asked.path).read_text(encoding="utf-8")


def test_lines_written_before_the_new_fields_keep_their_checksums(vault):
    line = ('{"actor":"agent","at":"2026-07-16T09:02:00Z","event":"asked","id":"D-0001",'
            '"path":"Decisions/D-0001 Q.md","sum":"%s"}\n')
    body = '{"actor":"agent","at":"2026-07-16T09:02:00Z","event":"asked","id":"D-0001","path":"Decisions/D-0001 Q.md"}'
    import hashlib
    text = line % hashlib.sha256(body.encode()).hexdigest()[:16]
    [event] = parse_ledger(text, ".vault-tools/ledger.jsonl")
    assert event.summary is None and event.topics == ()
    assert event_line(event) == text  # written again, byte for byte the same line


# -- history -------------------------------------------------------------------------------------

def test_history_lists_every_event_oldest_first_with_diffs(cli):
    footer_story(cli)
    result = cli("history", "D-0001")
    assert result.code == 0, result.err
    kinds = [line.split()[1] for line in result.out.splitlines() if line[:1].isdigit()]
    assert kinds == ["asked", "ruled", "sealed", "superseded"]
    assert "-summary: What should article footers contain?" in result.out
    assert "+summary: Every footer carries the newsletter link." in result.out
    assert "+status: superseded" in result.out
    data = json.loads(cli("history", "D-0001", "--json").out)
    assert [e["event"] for e in data["events"]] == kinds
    assert data["events"][0]["taken_from"] == "ledger" and data["remarks"] == []


def test_history_of_an_earlier_ledger_takes_the_question_from_git_and_says_so(cli, vault):
    footer_story(cli)
    as_written_by_an_earlier_version(vault)
    # the note as first committed: the question, before it was ruled
    question = next(vault.glob("Decisions/D-0001*.md"))
    first = next(e for e in events(vault) if e.event == "sealed").text
    assert first is not None
    ruled_text = question.read_bytes()
    question.write_text(first.replace("status: ruled", "status: open"), encoding="utf-8")
    commit_all(vault, "the question")
    question.write_bytes(ruled_text)
    commit_all(vault, "ruled")
    result = cli("history", "D-0001")
    assert result.code == 0, result.err
    assert "(text taken from git " in result.out
    assert "taken from git" in result.err
    assert "+status: open" in result.out


def test_history_of_an_earlier_ledger_without_git_takes_an_open_question_from_its_note(cli, vault):
    cli("ask", "Which day should the newsletter go out?", "--topic", "newsletter-day")
    as_written_by_an_earlier_version(vault)
    result = cli("history", "D-0001")
    assert "taken from the note as it is now" in result.err
    assert "+summary: Which day should the newsletter go out?" in result.out


def test_history_of_an_unknown_id_is_refused(cli):
    result = cli("history", "D-0042")
    assert result.code == 1 and "D-0042" in result.err


# -- as-of: event time and record time -----------------------------------------------------------

def test_as_of_by_event_time_and_by_record_time_differ_for_a_ruling_recorded_after_the_fact(cli):
    footer_story(cli)  # decided in January and March 2026, recorded today
    by_event = json.loads(cli("as-of", "2026-02-01", "--json").out)
    assert [r["id"] for r in by_event] == ["D-0001"]
    assert by_event[0]["status"] == "ruled"
    recorded = cli("as-of", "2026-02-01", "--recorded", "--json")
    assert json.loads(recorded.out) == []
    later = json.loads(cli("as-of", "2026-04-01", "article-footers", "--json").out)
    assert [r["id"] for r in later] == ["D-0002"]  # D-0001 ended when D-0002 was decided, not when recorded


def test_as_of_a_day_counts_rulings_made_that_day(cli):
    footer_story(cli)
    assert "D-0001" in cli("as-of", "2026-01-10").out
    assert cli("as-of", "2026-01-10T08:59:00").out == ""


def test_as_of_refuses_a_date_it_cannot_read(cli):
    result = cli("as-of", "last tuesday")
    assert result.code == 2 and "DATE" in result.err


# -- changed ---------------------------------------------------------------------------------------

def test_changed_lists_what_was_asked_ruled_and_superseded(cli, vault):
    footer_story(cli)
    cli("ask", "Should the blog have comments at all?", "--topic", "blog-comments")
    cli("withdraw", "D-0003", "--reason", "The blog is closing next month anyway.")
    data = json.loads(cli("changed", "--since", "2020-01-01", "--json").out)
    assert [(c["event"], c["id"]) for c in data] == [
        ("asked", "D-0001"), ("ruled", "D-0001"), ("ruled", "D-0002"), ("superseded", "D-0001"),
        ("asked", "D-0003"), ("withdrawn", "D-0003")]
    assert data[1]["ruled_at"] == "2026-01-10T09:00:00"
    assert data[5]["reason"] == "The blog is closing next month anyway."
    assert json.loads(cli("changed", "--since", "2020-01-01", "--until", "2020-12-31", "--json").out) == []
    assert cli("changed", "--since", "2026-02-01", "--until", "2026-01-01").code == 2


# -- export and import -----------------------------------------------------------------------------

def comparable(exported: str) -> list[dict]:
    rows = [json.loads(line) for line in exported.splitlines()]
    for row in rows:
        row.pop("path", None)  # a note's file name follows its summary when it is written
    return rows


def test_export_imported_into_an_empty_vault_gives_the_same_state(cli, vault, tmp_path):
    footer_story(cli)
    cli("ask", "Which day does the newsletter go out each week?", "--topic", "newsletter-day", "--due", "2027-01-01")
    cli("rule", "--summary", "Posts go out on Tuesdays at nine in the morning.", "--topic", "posting-time",
        "--revisit-if", "Readers in Asia grow past half", "--revisit-by", "2027-06-01", "--source", "chat")
    cli("ask", "Do we allow guest posts on the blog at all?", "--topic", "guest-posts")
    cli("withdraw", "D-0005", "--reason", "The blog is closing next month anyway.")
    cli("rule", "--summary", "Sponsors may buy the autumn issues of the letter.", "--topic", "sponsorship")
    cli("retract", "D-0006", "--reason", "This was recorded in error by the agent.")
    cli("rule", "--summary", "Footers are plain text, no images at all.", "--topic", "article-footer",
        "--alongside", "D-0002")
    exported = cli("export", "--format", "jsonl")
    assert exported.code == 0, exported.err
    dump = tmp_path / "decisions.jsonl"
    dump.write_text(exported.out, encoding="utf-8")
    other = make_vault(tmp_path / "other")
    imported = cli("import", "export", str(dump), root=other)
    assert imported.code == 0, imported.err
    again = cli("export", "--format", "jsonl", root=other)
    assert comparable(again.out) == comparable(exported.out)
    assert cli("lint", root=other).code == 0
    assert "imported 0" in cli("import", "export", str(dump), root=other).err  # nothing twice


def test_export_as_of_a_date_and_as_markdown(cli):
    footer_story(cli)
    rows = [json.loads(line) for line in cli("export", "--as-of", "2026-02-01").out.splitlines()]
    assert rows[0]["as_of"] == "2026-02-01"
    assert [(r["id"], r["status"]) for r in rows[1:]] == [("D-0001", "ruled")]
    page = cli("export", "--format", "md").out
    assert "## Superseded (1)" in page and "### D-0002 Footers carry" in page
    assert cli("export", "--format", "csv").code == 2


# -- search ----------------------------------------------------------------------------------------

def search_ids(cli, *args: str) -> list[str]:
    result = cli("search", *args, "--json")
    assert result.code == 0, result.err
    return [hit["id"] for hit in json.loads(result.out)]


def test_search_folds_accents_stems_words_and_marks_history(cli):
    footer_story(cli)
    cli("ask", "Should the café page list its opening hours?", "--topic", "cafe-page")
    assert search_ids(cli, "cafe") == ["D-0003"]
    assert search_ids(cli, "FOOTER") == ["D-0002"]  # footers, stemmed; the superseded one left out
    hits = json.loads(cli("search", "footer", "--history", "--json").out)
    assert {h["id"]: h["historical"] for h in hits} == {"D-0001": True, "D-0002": False}
    text = cli("search", "footer", "--history").out
    assert "[SUPERSEDED]" in text and "**" in text  # marked, with the matched words shown
    assert search_ids(cli, "wrote") == ["D-0002"]  # the reason is searched too


def test_search_follows_edits_deletions_and_closings(cli, vault):
    footer_story(cli)
    assert search_ids(cli, "author") == ["D-0002"]
    ruling = next(vault.glob("Decisions/D-0002*.md"))
    cli("retract", "D-0002", "--reason", "The owner never said this, it was a mistake.")
    assert search_ids(cli, "author") == []
    told = cli("search", "author")  # nothing current; the closed one is counted, with the way to see it
    assert "no decision matches" in told.err
    assert "1 closed decision(s) (superseded, withdrawn or retracted) also match: vault-tools search --history " \
           "author shows them" in told.err
    assert "closed decision" not in cli("search", "author", "--history").err
    cli("ask", "Should tide tables appear on the home page?", "--topic", "home-page")
    assert search_ids(cli, "tide") == ["D-0003"]
    next(vault.glob("Decisions/D-0003*.md")).unlink()
    assert search_ids(cli, "tide") == []
    assert ruling.exists()


def test_a_damaged_index_is_built_again(cli, vault):
    footer_story(cli)
    search_ids(cli, "footer")
    (vault / ".vault-tools" / INDEX_FILE).write_bytes(b"this is not a database" * 100)
    result = cli("search", "footer")
    assert result.code == 0 and "D-0002" in result.out
    assert "damaged" in result.err
    with sqlite3.connect(vault / ".vault-tools" / INDEX_FILE) as connection:
        assert connection.execute("SELECT count(*) FROM docs").fetchone() == (2,)


def test_without_fts5_search_scans_and_says_so_once(cli, monkeypatch):
    footer_story(cli)
    monkeypatch.setenv(NO_FTS5_ENV, "1")
    first = cli("search", "footers")
    assert "D-0002" in first.out and "no FTS5" in first.err
    second = cli("search", "footers")
    assert "D-0002" in second.out and "no FTS5" not in second.err
    assert "1 closed decision(s)" in second.err  # the scan counts the superseded one as the index does


def test_lookup_takes_free_text_and_falls_back_to_search(cli):
    footer_story(cli)
    assert "D-0002" in cli("lookup", "article-footer").out  # the topic path, as before
    result = cli("lookup", "who wrote the article")
    assert result.code == 0 and "D-0002" in result.out and "no topic matches" in result.err
    data = json.loads(cli("lookup", "newsletter link", "--json").out)
    assert [d["id"] for d in data] == ["D-0002"] and data[0]["matched_by"] == "words"
    nothing = cli("lookup", "volcano")
    assert nothing.code == 1 and nothing.out == "" and "no decision mentions it" in nothing.err


def test_lookup_by_words_walks_the_vault_once_and_sees_a_note_changed_before_it(cli, vault, monkeypatch):
    """The fallback search checks the index against the notes as the lookup read them (not a walk of its own),
    so a note edited just before is found by its new words."""
    from vault_tools import index
    from vault_tools import vault as vault_module

    footer_story(cli)
    assert cli("lookup", "newsletter link").code == 0  # the index is built
    note = next((vault / "Decisions").glob("D-0002*.md"))
    note.write_text(note.read_text(encoding="utf-8").replace("the author bio", "the author's pelican"), encoding="utf-8")
    walks = []
    walk = vault_module.iter_markdown

    def counted(*args, **kwargs):
        walks.append(args[0])
        return walk(*args, **kwargs)
    monkeypatch.setattr(vault_module, "iter_markdown", counted)
    monkeypatch.setattr(index, "iter_markdown", counted)
    found = cli("lookup", "pelican", "--json")
    assert found.code == 0 and [d["id"] for d in json.loads(found.out)] == ["D-0002"]
    assert len(walks) == 1


@pytest.mark.parametrize("command", [["history", "D-0001"], ["as-of", "2026-02-01"], ["changed", "--since", "2026-01-01"],
                                     ["search", "footer"]])
def test_new_commands_run_as_a_subprocess_with_json(cli, vault, command):
    footer_story(cli)
    result = vt_here(*command, "--json", cwd=vault)
    assert result.code == 0, result.err
    json.loads(result.out)


def test_history_takes_the_counter_alone_as_every_command_does(tmp_path):
    """In a git clone ids carry the clone's tag (`D-0001-k7q2`); `history D-0001` finds it when it names one."""
    vault = make_vault(tmp_path / "vault")
    commit_all(vault)
    assert vt_here("rule", "--topic", "article-footer", "--summary", "Footers carry only the author bio now.",
                   "--source", "chat", cwd=vault).code == 0
    [tagged] = [e.id for e in events(vault)][:1]
    assert tagged.startswith("D-0001-")
    done = vt_here("history", "D-0001", cwd=vault)
    assert done.code == 0, done.err
    assert tagged in done.out


def test_the_search_claims_of_the_history_page_hold(cli):
    """docs/history.md: `Trackers` finds `tracker`, `naïve` finds `naive`, `footers` finds `footer`; a search of
    words every decision shares says so rather than finding nothing in silence."""
    cli("rule", "--topic", "analytics", "--summary", "No third-party tracker on the blog; page counts only.",
        "--source", "chat")
    cli("rule", "--topic", "onboarding", "--summary", "The onboarding guide keeps a naive reader in mind.",
        "--source", "chat")
    cli("rule", "--topic", "article-footer", "--summary", "Every article footer carries the author bio.",
        "--source", "chat")
    assert search_ids(cli, "Trackers") == ["D-0001"]
    assert search_ids(cli, "naïve") == ["D-0002"]
    assert search_ids(cli, "footers") == ["D-0003"]
    said = cli("search", "décisions")
    assert said.code == 0 and "too common to search for" in said.err


def test_a_superseded_ruling_is_shown_with_the_day_it_was_replaced_apart_from_the_day_it_was_ruled(cli):
    """"superseded 2026-01-10" read as the day it stopped being the answer; the day it was replaced comes first."""
    footer_story(cli)
    said = "D-0001  superseded 2026-03-01 by D-0002 (ruled 2026-01-10)  [article-footer]"
    assert said in cli("lookup", "article-footer").out
    assert cli("show", "D-0001").out.startswith(said)
    assert said in cli("list", "--status", "superseded").out
