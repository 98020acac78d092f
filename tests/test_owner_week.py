"""The owner's week in Obsidian, with the watcher running: only words are ever typed.

Notes are made as Obsidian's Templates plugin makes them (the title and the date filled in), and every
field the owner then changes is counted. The owner types topics, summaries, answers, reasons and a link
picked from the note list; never an id, never a date, and no status but `ruled`.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from vault_tools import note_edits, notes
from vault_tools.starter import packaged_templates

from .helpers import Running, configure, counter_of, ledger_events, obsidian_save, write

WORDS = {"topics", "summary", "reason", "supersedes", "status"}


class Owner:
    def __init__(self, vault: Path) -> None:
        self.vault = vault
        self.typed: list[tuple[str, object]] = []  # (property, value) for every property the owner changed

    def new_note(self, name: str, template: str) -> Path:
        """Obsidian: new note (named `name`), then Insert template."""
        text = packaged_templates()[template].replace("{{title}}", name)
        text = text.replace("{{date:YYYY-MM-DD}}", "2026-12-07").replace("{{time:HH:mm:ss}}", "09:12:44")
        return write(self.vault / "Decisions" / f"{name}.md", text)

    def types(self, path: Path, fields: dict[str, object], *, under_ruling: str = "") -> None:
        """The owner fills in properties in the Properties panel and, optionally, writes under `## Ruling`."""
        self.typed += list(fields.items())
        text = note_edits.with_fields(notes.read_note(path), fields)
        if under_ruling:
            text = text.replace("## Ruling\n", f"## Ruling\n\n{under_ruling}\n", 1)
        obsidian_save(path, text)


def _events(vault: Path, event: str) -> set[str]:
    return {e["id"] for e in ledger_events(vault) if e["event"] == event}


def _note_of(vault: Path, decision_id: str) -> Path | None:
    return next((p for p in (vault / "Decisions").glob("*.md") if notes.read_note(p).data.get("id") == decision_id),
                None)


def test_the_owners_week_takes_words_only(vault, cli):
    configure(vault, debounce_ms=150, settle=0.5)
    owner = Owner(vault)
    with Running(vault) as watcher:
        # Monday: a question of the owner's own, from the Question template
        question = owner.new_note("Untitled", "Question.md")
        owner.types(question, {"topics": ["podcast"], "summary": "Should we start a podcast alongside the newsletter?"})
        watcher.until(lambda: _events(vault, "asked"))
        (asked_id,) = _events(vault, "asked")
        monday = _note_of(vault, asked_id)
        assert monday is not None and monday.name.startswith(asked_id) and "podcast" in monday.name
        assert not question.exists()  # Obsidian's "Untitled" became a real name

        # Tuesday: the agent asks; the owner answers in place, rewriting the summary as the answer
        assert cli("ask", "Which tool should send the newsletter from January?", "--topic", "newsletter-tool").code == 0
        tool_id = (_events(vault, "asked") - {asked_id}).pop()
        owner.types(_note_of(vault, tool_id), {"status": "ruled", "summary": "Newsletter moves to Buttondown from January."},
                    under_ruling="Buttondown: cheaper, and it keeps the archive public.")
        watcher.until(lambda: tool_id in _events(vault, "sealed"))
        sealed = notes.read_note(_note_of(vault, tool_id)).data
        assert sealed["ruled_at"] and sealed["ruled_by"]  # stamped on sealing, not typed

        # Wednesday: the owner answers the Monday question but forgets to rewrite the summary
        owner.types(monday, {"status": "ruled"}, under_ruling="No podcast this year; revisit at ten thousand subscribers.")
        page = vault / "Pinned" / "Open questions.md"
        watcher.until(lambda: "summary still asks the question" in page.read_text(encoding="utf-8"))
        assert asked_id not in _events(vault, "sealed")
        shown = json.loads(cli("context", "--json").out)
        assert any(counter_of(asked_id) in p["message"] for p in shown["problems"])
        owner.types(monday, {"summary": "No podcast this year; revisit when subscribers pass ten thousand."})
        watcher.until(lambda: asked_id in _events(vault, "sealed"))

        # Thursday: a decision nobody asked for, from the Decision template
        decided = owner.new_note("Untitled 2", "Decision.md")
        owner.types(decided, {"topics": ["blog-comments"], "summary": "Blog comments stay closed; readers reply by email."},
                    under_ruling="Closed. Moderation took an hour a day.")
        watcher.until(lambda: len(_events(vault, "sealed")) == 3)
        (comments_id,) = _events(vault, "sealed") - {asked_id, tool_id}
        thursday = _note_of(vault, comments_id)
        assert thursday is not None and thursday.name.startswith(comments_id)

        # Friday: the owner changes their mind, with a superseding note from the template
        changed = owner.new_note("Comments for subscribers", "Decision.md")
        owner.types(changed, {"topics": ["blog-comments"],
                              "summary": "Blog comments open for paying subscribers only, from January.",
                              "supersedes": [f"[[{thursday.stem}]]"],  # picked from Obsidian's link suggestions
                              "reason": "Subscribers asked to discuss posts where they are published."},
                    under_ruling="Open to paying subscribers; everyone else still replies by email.")
        watcher.until(lambda: comments_id in _events(vault, "superseded"))

    assert {name for name, _ in owner.typed} <= WORDS
    assert {value for name, value in owner.typed if name == "status"} == {"ruled"}
    for name, value in owner.typed:
        outside_links = re.sub(r"\[\[[^\]]*\]\]", "", json.dumps(value))
        assert not re.search(r"D-\d|\d{4}-\d{2}-\d{2}", outside_links), (name, value)  # no id, no date typed
    listed = {d["id"]: d["status"] for d in json.loads(cli("list", "--json").out)}
    assert list(listed.values()).count("ruled") == 3 and listed[counter_of(comments_id)] == "superseded"
    assert cli("lint").code == 0
