"""The Obsidian base of the decision record: `init` writes it once, the pages embed its views, and an edit made in
one of its table cells is a property edit like any other (Obsidian writes it into the note)."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import yaml

from vault_tools.page_names import BASE_FILE, CURRENT_RULINGS_VIEW, HISTORY_VIEW, OPEN_QUESTIONS_VIEW, RECENT_VIEW

from .helpers import vt_here, write

RULING = "Every article footer carries only the author bio."


def new_vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    (root / ".obsidian").mkdir(parents=True)
    done = vt_here("init", "--timezone", "Asia/Tokyo", cwd=root)
    assert done.code == 0, done.err
    config = root / "vault-tools" / "config.yaml"
    config.write_text(config.read_text(encoding="utf-8") + "debounce_ms: 0\nseal_delay_seconds: 0\n", encoding="utf-8")
    return root


def test_init_writes_a_base_of_the_decisions_with_the_four_views(tmp_path):
    root = new_vault(tmp_path)
    base = yaml.safe_load((root / "Pinned" / BASE_FILE).read_text(encoding="utf-8"))
    assert [view["name"] for view in base["views"]] == [OPEN_QUESTIONS_VIEW, CURRENT_RULINGS_VIEW, RECENT_VIEW,
                                                        HISTORY_VIEW]
    assert base["filters"]["and"][0] == 'type == "decision"'  # by property: decision notes in any folder
    assert base["filters"]["and"][1]["not"] == ['file.inFolder("Templates")', 'file.inFolder("vault-tools")',
                                                'file.inFolder(".vault-tools")']
    views = {view["name"]: view for view in base["views"]}
    assert views[OPEN_QUESTIONS_VIEW]["sort"] == [{"property": "note.due", "direction": "ASC"},
                                                  {"property": "note.asked_at", "direction": "ASC"}]
    assert views[CURRENT_RULINGS_VIEW]["groupBy"] == {"property": "note.topics", "direction": "ASC"}
    assert views[RECENT_VIEW]["sort"] == [{"property": "file.mtime", "direction": "DESC"}]
    assert views[HISTORY_VIEW]["groupBy"]["property"] == "note.status"


def test_the_base_is_the_owners_once_written(tmp_path):
    """`init` never writes over it (saying so and how to get a fresh copy); lint says nothing of the owner's
    changes; the watcher leaves it alone. A vault set up before gets one from `init --templates`."""
    root = new_vault(tmp_path)
    base = root / "Pinned" / BASE_FILE
    mine = base.read_text(encoding="utf-8").replace("limit: 50", "limit: 10") + "# my own view next\n"
    base.write_text(mine, encoding="utf-8")
    done = vt_here("init", "--templates", cwd=root)
    assert done.code == 0 and f"Pinned/{BASE_FILE} is yours: left as it is" in done.err
    assert "init --templates" in done.err and base.read_text(encoding="utf-8") == mine
    assert vt_here("lint", cwd=root).code == 0
    done = vt_here("watch", "--once", cwd=root)
    assert done.code == 0 and BASE_FILE not in done.err and base.read_text(encoding="utf-8") == mine
    base.unlink()
    assert vt_here("init", cwd=root).code == 0 and not base.exists()  # a vault set up before: not unasked
    assert vt_here("init", "--templates", cwd=root).code == 0 and base.exists()


def test_the_pages_embed_the_matching_views_and_the_agent_reads_what_it_read_before(tmp_path):
    root = new_vault(tmp_path)
    assert vt_here("rule", "--topic", "article-footer", "--summary", RULING, "--source", "chat", cwd=root).code == 0
    assert vt_here("ask", "Which day should the newsletter go out?", "--topic", "newsletter-day", cwd=root).code == 0
    questions = (root / "Pinned" / "Open questions.md").read_text(encoding="utf-8")
    log = (root / "Pinned" / "Decisions log.md").read_text(encoding="utf-8")
    assert f"![[{BASE_FILE}#{OPEN_QUESTIONS_VIEW}]]" in questions.split("\n")[:6]
    assert f"![[{BASE_FILE}#{CURRENT_RULINGS_VIEW}]]" in log.split("\n")[:6]
    context = json.loads(vt_here("context", "--json", cwd=root).out)["text"]
    assert BASE_FILE not in context


def cell_edit(note: Path, key: str, value: str) -> None:
    """What Obsidian writes when a base's table cell changes one property: that property's line, or a new line
    at the end of the properties, every other byte as it was; saved a moment ago."""
    value = json.dumps(value) if ": " in value or value[:1] in "[{\"'" else value  # quoted where YAML needs it
    text = note.read_text(encoding="utf-8")
    head, _, body = text.partition("\n---\n")
    lines = head.split("\n")
    found = [i for i, line in enumerate(lines) if line.startswith(f"{key}:")]
    if found:
        lines[found[0]] = f"{key}: {value}"
    else:
        lines.append(f"{key}: {value}")
    note.write_text("\n".join(lines) + "\n---\n" + body, encoding="utf-8")
    past = time.time() - 5
    os.utime(note, (past, past))


def test_a_cell_edit_of_a_sealed_ruling_is_the_lifecycle_step_or_is_restored_as_a_typed_edit_is(tmp_path):
    root = new_vault(tmp_path)
    assert vt_here("rule", "--topic", "article-footer", "--summary", RULING, "--source", "chat", cwd=root).code == 0
    assert vt_here("rule", "--topic", "newsletter-day", "--summary", "The newsletter goes out on Thursdays.",
                   "--source", "chat", cwd=root).code == 0
    footer = next((root / "Decisions").glob("D-0001*.md"))
    day = next((root / "Decisions").glob("D-0002*.md"))

    cell_edit(footer, "status", "retracted")  # the status cell alone: a retraction not applied without its reason
    done = vt_here("watch", "--once", cwd=root)
    assert "is marked retracted, but the retraction is not applied" in done.err
    listed = {d["id"]: d["status"] for d in json.loads(vt_here("list", "--json", cwd=root).out)}
    assert listed[footer.name.split(" ")[0]] == "ruled"  # in effect until the reason is there
    cell_edit(footer, "reason", "Recorded in error: the owner has not decided on footers yet.")
    done = vt_here("watch", "--once", cwd=root)
    assert done.code == 0, done.err
    done = vt_here("show", footer.name.split(" ")[0], "--json", cwd=root)
    assert done.code == 0, done.err
    shown = json.loads(done.out)
    assert shown["status"] == "retracted" and shown["history"][-1]["event"] == "retracted"

    sealed = day.read_text(encoding="utf-8")
    cell_edit(day, "summary", "The newsletter goes out on Tuesdays.")  # an edit of what was ruled: a revision
    assert vt_here("watch", "--once", cwd=root).code == 0
    assert day.read_text(encoding="utf-8") == sealed
    revision = next(p for p in (root / "Decisions").glob("*.md") if "Revision of D-0002" in p.name)
    assert "Tuesdays" in revision.read_text(encoding="utf-8")


def test_rule_body_that_carries_its_own_ruling_heading_gets_no_second_one(tmp_path):
    root = new_vault(tmp_path)
    done = vt_here("rule", "--topic", "article-footer", "--summary", RULING, "--source", "chat", "--body",
                   "## Ruling\n\nOnly the author bio: no newsletter link, no sponsor.", cwd=root)
    assert done.code == 0, done.err
    note = next((root / "Decisions").glob("*.md")).read_text(encoding="utf-8")
    assert note.count("## Ruling") == 1
    assert "Only the author bio" in vt_here("lookup", "article-footer", cwd=root).out


def test_a_ruling_whose_summary_still_asks_is_told_to_the_agent_by_its_answer_and_flagged(tmp_path):
    """The owner set `status: ruled` and wrote the answer under `## Ruling`, but left the question in `summary`:
    the agent reads the answer (and that it is not sealed), never the question as if it were the ruling."""
    root = new_vault(tmp_path)
    write(root / "Decisions" / "Newsletter day.md",
          "---\ntype: decision\nid: D-0001\nstatus: ruled\ntopics: [newsletter-day]\n"
          "summary: Which day should the newsletter go out?\nsource: chat\n---\n"
          "## Ruling\n\nThursdays at seven, before the market opens.\n")
    context = json.loads(vt_here("context", "--json", cwd=root).out)["text"]
    assert "Thursdays at seven, before the market opens. (its summary still asks the question" in context
    assert "Which day should the newsletter go out?" not in context.split("## Rulings")[-1].split("\n")[2:4]
    hook = vt_here("hook", "claude", "user-prompt-submit", cwd=root,
                   stdin=json.dumps({"cwd": str(root), "prompt": "When does the newsletter go out?"}))
    said = json.loads(hook.out)["hookSpecificOutput"]["additionalContext"] if hook.out.strip() else ""
    assert "Thursdays at seven" in said and "still asks the question" in said
