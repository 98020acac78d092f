"""The Decision and Question templates: valid YAML as shipped, valid decisions once filled, installed safely."""
from __future__ import annotations

import datetime as dt
import json
import re

import pytest

from vault_tools import note_edits, notes
from vault_tools.errors import ConfigError
from vault_tools.model import Status, build_decision
from vault_tools.starter import TEMPLATE_NAMES, install_templates, packaged_templates
from vault_tools.vault import Vault

from .helpers import add_to_config, snapshot, vt, write

MOMENT_TO_STRFTIME = {"YYYY": "%Y", "MM": "%m", "DD": "%d", "HH": "%H", "mm": "%M", "ss": "%S"}


def fill_like_obsidian(template: str, title: str, now: dt.datetime) -> str:
    """What Obsidian's core Templates plugin does with `{{date}}`, `{{time}}` and `{{title}}`."""
    def moment(pattern: str) -> str:
        return now.strftime(re.sub("YYYY|MM|DD|HH|mm|ss", lambda m: MOMENT_TO_STRFTIME[m.group()], pattern))

    text = re.sub(r"\{\{date(?::([^}]*))?\}\}", lambda m: moment(m.group(1) or "YYYY-MM-DD"), template)
    text = re.sub(r"\{\{time(?::([^}]*))?\}\}", lambda m: moment(m.group(1) or "HH:mm"), text)
    return text.replace("{{title}}", title)


@pytest.mark.parametrize("name", TEMPLATE_NAMES)
def test_template_frontmatter_is_valid_yaml_before_obsidian_fills_it(name, tmp_path):
    note = notes.parse_text(packaged_templates()[name], tmp_path / name)
    assert note.data["type"] == "decision"
    assert note.data["summary"] == "{{title}}"  # a quoted placeholder, not a YAML flow mapping
    for heading in ("Question", "Context", "Options", "Ruling", "Consequences"):
        assert f"\n## {heading}\n" in note.body


@pytest.mark.parametrize(("name", "status", "stamp"), [("Question.md", Status.OPEN, "asked_at"),
                                                      ("Decision.md", Status.RULED, "ruled_at")])
def test_a_filled_template_is_a_valid_decision_once_id_and_topics_are_set(name, status, stamp, tmp_path):
    now = dt.datetime(2026, 11, 29, 9, 41, 7)
    filled = fill_like_obsidian(packaged_templates()[name], "Should footers carry a sponsor line", now)
    note = notes.parse_text(filled, tmp_path / name)
    completed = notes.parse_text(note_edits.with_fields(note, {"id": "D-0042", "topics": ["article-footer"]}), note.path)
    decision, problems = build_decision(completed.data, path=f"Decisions/{name}", body=completed.body)
    assert problems == []
    assert decision is not None and decision.status is status
    assert getattr(decision, stamp) == now
    if status is Status.RULED:
        assert decision.source == "[[2026-11-29]]" and decision.ruled_by == "owner"


def test_install_puts_both_templates_in_the_default_folder_and_they_never_count_as_decisions(vault):
    assert install_templates(vault) == ["Templates/Decision.md", "Templates/Question.md"]
    for name, text in packaged_templates().items():
        assert (vault / "Templates" / name).read_text(encoding="utf-8") == text
    state = Vault(vault).load()
    assert state.decisions == [] and state.broken == []
    asked = vt("ask", "Should footers carry a sponsor line?", "--topic", "article-footer", cwd=vault)
    assert asked.code == 0, asked.err
    assert vt("build", "--check", cwd=vault).code == 0  # ask left the pages current; the templates are not a problem
    assert vt("build", cwd=vault).code == 0


def test_install_follows_obsidians_templates_folder(vault):
    write(vault / ".obsidian" / "templates.json", json.dumps({"folder": "Blueprints/"}))
    add_to_config(vault, "templates_folder: Blueprints")
    assert install_templates(vault) == ["Blueprints/Decision.md", "Blueprints/Question.md"]
    assert not (vault / "Templates").exists()
    assert vt("list", cwd=vault).code == 0


def test_install_never_overwrites_and_says_only_what_it_created(vault):
    mine = write(vault / "Templates" / "Decision.md", "my own decision template\n")
    assert install_templates(vault) == ["Templates/Question.md"]
    assert mine.read_text(encoding="utf-8") == "my own decision template\n"
    assert install_templates(vault) == []


def test_install_refuses_a_folder_vault_tools_does_not_skip(vault):
    write(vault / ".obsidian" / "templates.json", json.dumps({"folder": "Blueprints"}))
    before = snapshot(vault)
    with pytest.raises(ConfigError, match="templates_folder: Blueprints"):
        install_templates(vault)
    assert snapshot(vault) == before


def test_install_never_leaves_templates_where_they_would_be_read_as_decisions(vault):
    write(vault / ".obsidian" / "templates.json", json.dumps({"folder": "Meta/Templates"}))
    add_to_config(vault, "templates_folder: Meta/Templates")
    try:
        created = install_templates(vault)
    except ConfigError:
        assert not (vault / "Meta").exists()
    else:
        assert created == ["Meta/Templates/Decision.md", "Meta/Templates/Question.md"]
    state = Vault(vault).load()
    assert state.broken == [] and state.decisions == []
