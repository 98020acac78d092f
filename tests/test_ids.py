"""The owner never types an id: notes made from a template get one, and Untitled notes a name."""
from __future__ import annotations

import json
import os
import time

from vault_tools.starter import packaged_templates

from .helpers import ledger_file, vt_here, write


def _from_template(vault, name: str, template: str, **fill: str) -> None:
    """A note as Obsidian's Templates plugin makes it, then the owner fills in words only."""
    text = packaged_templates()[template].replace("{{title}}", fill.pop("title"))
    text = text.replace("{{date:YYYY-MM-DD}}", "2026-11-30").replace("{{time:HH:mm:ss}}", "10:00:00")
    for key, value in fill.items():
        text = text.replace(f"{key}: []", f"{key}: [{value}]", 1)
    path = write(vault / "Decisions" / f"{name}.md", text)
    past = time.time() - 600  # left alone for longer than the sealing delay
    os.utime(path, (past, past))


def test_notes_from_the_templates_get_ids_and_untitled_ones_a_name(vault):
    assert "id:" not in packaged_templates()["Decision.md"].split("---")[1]
    _from_template(vault, "Untitled", "Question.md", title="Should we start a podcast alongside the newsletter?",
                   topics="podcast")
    _from_template(vault, "Shop", "Decision.md", title="No online shop this year; revisit next spring.",
                   topics="online-shop")
    write(vault / "Daily" / "2026-11-30.md", "Thought about the [[Shop]] today.\n")
    done = vt_here("watch", "--once", cwd=vault, counted=True)
    assert done.code == 0, done.err
    listed = {d["id"]: d for d in json.loads(vt_here("list", "--json", cwd=vault, counted=True).out)}
    assert set(listed) == {"D-0001", "D-0002"}
    paths = sorted(d["path"] for d in listed.values())
    assert "Decisions/Shop.md" in paths  # a name the owner chose, and linked: it stays
    assert any(p.startswith("Decisions/D-000") and "Should we start a podcast" in p for p in paths)
    assert not (vault / "Decisions" / "Untitled.md").exists()
    ledger = [json.loads(line) for line in ledger_file(vault).read_text().splitlines()]
    assert {e["event"] for e in ledger} >= {"asked", "sealed"}  # recorded and sealed like any other
    assert "id-given" in done.err


def test_seal_and_lint_fix_give_ids_too_and_a_linked_untitled_keeps_its_name(vault):
    _from_template(vault, "Untitled 2", "Decision.md", title="Footers carry only the author bio from now on.",
                   topics="article-footer")
    write(vault / "Projects" / "Blog.md", "See [[Untitled 2|the footer rule]].\n")
    fixed = vt_here("lint", "--fix", cwd=vault, counted=True)
    assert "gave Decisions/Untitled 2.md the id D-0001" in fixed.err
    assert (vault / "Decisions" / "Untitled 2.md").exists()  # linked by that name: not renamed
    assert json.loads(vt_here("show", "D-0001", "--json", cwd=vault, counted=True).out)["sealed"] is True
    _from_template(vault, "Untitled", "Decision.md", title="Comments stay closed on every article page.",
                   topics="blog-comments")
    sealed = vt_here("seal", cwd=vault, counted=True)
    assert sealed.code == 0 and "D-0002 sealed" in sealed.out


def test_a_new_id_passes_every_id_named_in_the_decisions_folder(vault):
    """A file in the decisions folder named like an id holds its number even where no decision is read from it
    (a note of another kind, one whose properties do not parse, a name starting `d-`): a new id comes after it."""
    write(vault / "Decisions" / "D-0007 half typed.md", "---\ntags: [unclosed\n---\nBody.\n")
    write(vault / "Decisions" / "d-0011 a plain note.md", "Just a note the owner named so.\n")
    write(vault / "Decisions" / "D-0009.md", "---\ntags: [plain]\n---\nNot a decision.\n")
    write(vault / "Decisions" / "X-0040 other.md", "Not an id.\n")
    asked = vt_here("ask", "Should the newsletter go out on Mondays?", "--topic", "newsletter-day", cwd=vault,
                    counted=True)
    assert asked.code == 0, asked.err
    assert "D-0012" in asked.out
