"""Every lifecycle step taken in Obsidian, by editing files while the watcher runs."""
from __future__ import annotations

import json

import pytest

from vault_tools import note_edits, notes

from .helpers import Running, configure, ledger_events, made_id, note_path, obsidian_save, write


def _note(fields: str, body: str = "") -> str:
    return f"---\ntype: decision\n{fields.strip()}\n---\n{body}"


def _status(vault, decision_id: str) -> str | None:
    return next((e["event"] for e in reversed(ledger_events(vault))
                 if e["id"] == decision_id and e["event"] in ("asked", "ruled", "superseded", "withdrawn", "retracted")),
                None)


def test_ask_answer_decide_supersede_withdraw_and_retract_in_obsidian(vault):
    configure(vault, debounce_ms=150, settle=0.5)  # quick, and still longer than a save
    folder = vault / "Decisions"
    with Running(vault) as watcher:
        # ask: a question note made by hand
        question = write(folder / "D-0001 Podcast.md", _note(
            "id: D-0001\nstatus: open\ntopics: [podcast]\nsummary: Should we start a podcast alongside the newsletter?",
            "## Question\n\nListeners asked for audio.\n"))
        watcher.until(lambda: _status(vault, "D-0001") == "asked")

        # answer it: status ruled, the answer in summary and under Ruling
        answered = note_edits.with_fields(notes.read_note(question), {
            "status": "ruled", "summary": "No podcast this year; revisit when subscribers pass ten thousand."})
        obsidian_save(question, answered + "\n## Ruling\n\nNot this year.\n")
        watcher.until(lambda: any(e["event"] == "sealed" and e["id"] == "D-0001" for e in ledger_events(vault)))

        # decide without being asked
        write(folder / "D-0002 Send day.md", _note(
            "id: D-0002\nstatus: ruled\ntopics: [newsletter-day]\n"
            "summary: The newsletter goes out every Thursday morning.\nsource: chat"))
        watcher.until(lambda: any(e["event"] == "sealed" and e["id"] == "D-0002" for e in ledger_events(vault)))

        # supersede it with a new ruling that says why
        write(folder / "D-0003 Tuesdays.md", _note(
            "id: D-0003\nstatus: ruled\ntopics: [newsletter-day]\nsummary: The newsletter goes out on Tuesdays from January.\n"
            'source: chat\nsupersedes: ["[[D-0002 Send day]]"]\nreason: Open rates on Thursdays fell from 48% to 39%.'))
        watcher.until(lambda: _status(vault, "D-0002") == "superseded")

        # withdraw a question
        dropped = write(folder / "D-0004 Mastodon.md", _note(
            "id: D-0004\nstatus: open\ntopics: [social-crossposting]\nsummary: Should the agent cross-post to Mastodon?"))
        watcher.until(lambda: _status(vault, "D-0004") == "asked")
        obsidian_save(dropped, note_edits.with_fields(notes.read_note(dropped), {
            "status": "withdrawn", "reason": "The owner left Mastodon, so there is nothing to cross-post to."}))
        watcher.until(lambda: _status(vault, "D-0004") == "withdrawn")

        # retract a sealed ruling recorded in error
        retracted = note_edits.with_fields(notes.read_note(question), {
            "status": "retracted", "reason": "Recorded in error: the owner was talking about another show."})
        obsidian_save(question, retracted)
        watcher.until(lambda: _status(vault, "D-0001") == "retracted")
        watcher.until(lambda: "Retracted rulings (1)" in (vault / "Pinned" / "Decisions archive.md").read_text())

    assert "edit-rejected" not in watcher.kinds() and "invalid" not in watcher.kinds(), watcher.actions
    assert question.read_text() == retracted  # every step stands as the owner typed it
    assert "status: superseded" in (folder / "D-0002 Send day.md").read_text()
    assert [e["actor"] for e in ledger_events(vault) if e["event"] in ("withdrawn", "retracted")] == ["owner", "owner"]
    log = (vault / "Pinned" / "Decisions log.md").read_text()
    assert "D-0003" in log and "No podcast" not in log


def test_a_ruling_whose_summary_still_asks_is_not_sealed_until_it_answers(vault):
    configure(vault, debounce_ms=150, settle=0.5)  # quick, and still longer than a save
    question = write(vault / "Decisions" / "D-0001 Podcast.md", _note(
        "id: D-0001\nstatus: open\ntopics: [podcast]\nsummary: Should we start a podcast alongside the newsletter?",
        "## Question\n\nShould we start a podcast alongside the newsletter?\n"))
    with Running(vault) as watcher:
        watcher.until(lambda: _status(vault, "D-0001") == "asked")
        # The owner answers in place but forgets to rewrite the summary.
        forgot = note_edits.with_fields(notes.read_note(question), {"status": "ruled"})
        obsidian_save(question, forgot + "\n## Ruling\n\nNo podcast this year.\n")
        watcher.until(lambda: any(a.kind == "invalid" and "still asks the question" in a.why for a in watcher.actions))
        page = (vault / "Pinned" / "Open questions.md")
        watcher.until(lambda: page.exists() and "still asks the question" in page.read_text())
        assert not any(e["event"] == "sealed" for e in ledger_events(vault))
        # Now the answer goes where the agent reads it.
        obsidian_save(question, note_edits.with_fields(notes.read_note(question), {
            "summary": "No podcast this year; revisit when subscribers pass ten thousand."}))
        watcher.until(lambda: any(e["event"] == "sealed" and e["id"] == "D-0001" for e in ledger_events(vault)))
        watcher.until(lambda: "still asks" not in page.read_text())
    assert "No podcast this year" in (vault / "Pinned" / "Decisions log.md").read_text()


def test_the_agent_is_told_which_ruling_has_no_answer_yet(vault):
    from .helpers import vt_here

    write(vault / "Decisions" / "D-0001 Podcast.md", _note(
        "id: D-0001\nstatus: ruled\ntopics: [podcast]\nsummary: Should we start a podcast alongside the newsletter?"))
    context = vt_here("context", "--budget", "claude-hook", cwd=vault)
    assert "D-0001 is marked ruled, but its summary still asks the question" in context.out
    sealed = vt_here("seal", "D-0001", cwd=vault)
    assert sealed.code == 1 and "still asks the question" in sealed.err


@pytest.mark.parametrize("sealed_by", ["seal", "watch"])
def test_a_ruling_whose_supersedes_names_an_open_question_answers_it(vault, sealed_by):
    """The owner answers a question by writing a new ruling note that links the question in `supersedes`: the
    ruling is sealed (by `seal`, or by the watcher) and the question closed as answered by it, never open beside
    its answer."""
    from .helpers import vt_here

    configure(vault, debounce_ms=0, settle=0)
    assert vt_here("ask", "Which platform should the newsletter move to?", "--topic", "newsletter-platform",
                   cwd=vault).code == 0
    question = note_path(vault, "D-0001")
    write(vault / "Decisions" / "Buttondown.md", _note(
        "status: ruled\ntopics: [newsletter-platform]\nsummary: The newsletter moves to Buttondown in January.\n"
        f'source: chat\nsupersedes: ["[[{question.stem}]]"]', "## Ruling\n\nButtondown, from January.\n"))
    done = vt_here(*(["seal"] if sealed_by == "seal" else ["watch", "--once"]), cwd=vault)
    assert done.code == 0, done.err
    closed = notes.read_note(question).data
    answer_title = next(p.stem for p in (vault / "Decisions").glob("*.md") if "D-0002" in p.read_text())
    assert closed["status"] == "withdrawn"
    assert closed["reason"] == f"Answered by [[{answer_title}]]: The newsletter moves to Buttondown in January."
    context = json.loads(vt_here("context", "--json", cwd=vault).out)
    assert context["open_questions"] == []
    assert [r["summary"] for r in context["rulings"]] == ["The newsletter moves to Buttondown in January."]
    assert _status(vault, made_id(vault, "D-0001")) == "withdrawn" and _status(vault, made_id(vault, "D-0002")) == "ruled"
    lint = vt_here("lint", cwd=vault)
    assert lint.code == 0, lint.out


def test_seal_with_no_ids_seals_what_it_can_and_names_what_it_cannot(vault):
    write(vault / "Decisions" / "D-0001 Send day.md", _note(
        "id: D-0001\nstatus: ruled\ntopics: [newsletter-day]\nsummary: The newsletter goes out every Thursday morning.\n"
        "source: chat"))
    from .helpers import vt_here

    assert vt_here("seal", "D-0001", cwd=vault).code == 0
    write(vault / "Decisions" / "D-0002 Tuesdays.md", _note(  # supersedes a ruling, but says not why
        "id: D-0002\nstatus: ruled\ntopics: [newsletter-day]\nsummary: The newsletter goes out on Tuesdays.\n"
        'source: chat\nsupersedes: ["[[D-0001 Send day]]"]'))
    write(vault / "Decisions" / "D-0003 Footer.md", _note(
        "id: D-0003\nstatus: ruled\ntopics: [article-footer]\nsummary: Footers carry only the author bio.\nsource: chat"))
    done = vt_here("seal", cwd=vault)
    assert done.code == 1
    assert done.out.strip() == "D-0003 sealed"
    assert "D-0002 not sealed: supersedes a ruling but has no reason" in done.err
    assert _status(vault, "D-0003") == "ruled" and _status(vault, "D-0002") is None


def test_a_note_typed_with_capitals_is_the_decision_the_owner_meant(vault):
    """`type: Decision` and `status: Ruled`, as people type them: read as `decision` and `ruled`."""
    from .helpers import vt_here

    write(vault / "Decisions" / "D-0001 Send day.md", _note(
        "id: D-0001\nstatus: Ruled\ntopics: [newsletter-day]\nsummary: The newsletter goes out every Thursday morning.\n"
        "source: chat").replace("type: decision", "type: Decision"))
    assert vt_here("seal", cwd=vault).out.strip() == "D-0001 sealed"
    found = json.loads(vt_here("lookup", "newsletter-day", "--json", cwd=vault).out)
    assert [(f["id"], f["status"]) for f in found] == [("D-0001", "ruled")]
    lint = vt_here("lint", cwd=vault)
    assert lint.code == 0, lint.out
