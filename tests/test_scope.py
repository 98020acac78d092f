"""Rulings arrive at the point of action: a ruling's `scope` names the files it governs."""
from __future__ import annotations

import json
import subprocess

from .helpers import config_file, hook, succeeded, vt_here, write

NO_PROMOTION = "No promotion in article footers: only the author bio."
BIO_AND_LINK = "Article footers carry the author bio and one link to the archive."


def _edit(vault, path) -> dict | None:
    return hook("pre-tool-use", {"hook_event_name": "PreToolUse", "tool_name": "Edit",
                                 "tool_input": {"file_path": str(path), "old_string": "a", "new_string": "b"}}, vault)


def test_the_footer_story_the_ruling_arrives_when_an_article_is_edited(vault):
    article = write(vault / "Articles" / "2026-10-01 spring.md", "# Spring\n\nText.\n")
    succeeded(vt_here("rule", "--topic", "article-footer", "--summary", NO_PROMOTION, "--source", "chat",
           "--scope", "Articles/**", cwd=vault, counted=True))
    answer = _edit(vault, article)
    assert answer is not None
    output = answer["hookSpecificOutput"]
    assert output["hookEventName"] == "PreToolUse" and "permissionDecision" not in output  # the call goes through
    assert "D-0001" in output["additionalContext"] and NO_PROMOTION in output["additionalContext"]
    assert "(scope Articles/**)" in output["additionalContext"]

    # A file governed by nothing adds nothing.
    other = write(vault / "Notes" / "groceries.md", "milk\n")
    assert _edit(vault, other) is None

    # Superseded: the new ruling comes instead, never the old one.
    succeeded(vt_here("rule", "--topic", "article-footer", "--summary", BIO_AND_LINK, "--source", "chat", "--scope", "Articles/**",
           "--supersedes", "D-0001", "--reason", "The archive link helps readers and is not promotion.", cwd=vault, counted=True))
    context = _edit(vault, article)["hookSpecificOutput"]["additionalContext"]
    assert BIO_AND_LINK in context and NO_PROMOTION not in context and "D-0001" not in context


def test_for_lists_the_governing_rulings_most_specific_glob_first(vault):
    write(vault / "Articles" / "drafts" / "x.md", "draft\n")
    succeeded(vt_here("rule", "--topic", "article-footer", "--summary", NO_PROMOTION, "--source", "chat",
           "--scope", "Articles/**", cwd=vault, counted=True))
    succeeded(vt_here("rule", "--topic", "drafts", "--summary", "Drafts stay out of the newsletter until the owner reads them.",
           "--source", "chat", "--scope", "Articles/drafts/*.md", cwd=vault, counted=True))
    found = json.loads(succeeded(vt_here("for", "Articles/drafts/x.md", "Notes/y.md", "--json", cwd=vault, counted=True)).out)
    assert [r["id"] for r in found[0]["rulings"]] == ["D-0002", "D-0001"]
    assert [r["glob"] for r in found[0]["rulings"]] == ["Articles/drafts/*.md", "Articles/**"]
    assert found[1]["rulings"] == []
    text = succeeded(vt_here("for", "Articles/drafts/x.md", cwd=vault, counted=True)).out
    assert text.startswith("Articles/drafts/x.md: 2 ruling(s)") and "(scope Articles/**)" in text


def test_a_project_outside_the_vault_and_check_changed_for_ci(tmp_path, vault):
    project = tmp_path / "site"
    write(project / "src" / "billing.py", "PRICE = 9\n")
    write(project / "README.md", "site\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q"], cwd=project, check=True)
    subprocess.run([*git, "add", "-A"], cwd=project, check=True)
    subprocess.run([*git, "commit", "-qm", "start"], cwd=project, check=True)
    config = config_file(vault)
    config.write_text(config.read_text() + f"project_root: {json.dumps(str(project))}\n")
    succeeded(vt_here("rule", "--topic", "pricing", "--summary", "Prices change only at the start of a quarter.",
           "--source", "chat", "--scope", "src/billing*.py", "--revisit-by", "2026-01-01", cwd=vault, counted=True))
    write(project / "src" / "billing.py", "PRICE = 12\n")
    write(project / "README.md", "site, changed\n")

    checked = succeeded(vt_here("check", "--changed", "HEAD", "--vault", str(vault), cwd=project, counted=True))
    assert checked.out.splitlines()[0] == "src/billing.py" and "D-0001" in checked.out and "README" not in checked.out
    strict = vt_here("check", "--changed", "HEAD", "--strict", "--vault", str(vault), cwd=project, counted=True)
    assert strict.code == 1 and "revisit_by 2026-01-01 has passed" in strict.err
    # Editing the file from the project (the agent's folder) brings the ruling.
    answer = hook("pre-tool-use", {"hook_event_name": "PreToolUse", "tool_name": "Write",
                                   "tool_input": {"file_path": str(project / "src" / "billing.py"), "content": "x"}},
                  project, "--vault", str(vault))
    assert answer and "Prices change only at the start of a quarter." in answer["hookSpecificOutput"]["additionalContext"]


def test_a_bad_glob_is_refused_and_nothing_is_written(vault):
    from .helpers import snapshot
    before = snapshot(vault)
    refused = vt_here("rule", "--topic", "pricing", "--summary", "Prices change only at the start of a quarter.",
                 "--scope", "../elsewhere/**", cwd=vault, counted=True)
    assert refused.code == 2 and "climbs out" in refused.err
    assert snapshot(vault) == before
