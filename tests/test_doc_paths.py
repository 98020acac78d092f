"""Every path of a vault's files the pages name is one a vault made today has.

`vault-tools init` makes the shared layout: the record in `vault-tools/` (`config.yaml`, the ledger as
`ledger/TAG.jsonl`, one file per device), this device's own files in the hidden `.vault-tools/`, the
generated pages in `Pinned/`. A vault set up before keeps the older hidden layout (`.vault-tools/config.yaml`,
`.vault-tools/ledger.jsonl`) until `vault-tools migrate` moves it; a page may name those paths only where it
says so, and each such path is listed below with its reason.

The test makes a vault as the README's install steps do (the command line run for real, in a folder holding
`.obsidian/`), records a question and its ruling, and runs the commands that make the rest of a vault's files
(the pages, the stats page and a review, the watcher's log, the search index, an agent's snapshot, a kept
copy of a page edited by hand). Then every path under `vault-tools/`, `.vault-tools/` or `Pinned/` named in
backticks in README.md and docs/*.md must match a file or folder of that vault. A placeholder matches any
name: `TAG`, `<tag>`, `*`, `YYYY-MM-DD` and the like.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from .helpers import REPOSITORY, page_name

README = REPOSITORY / "README.md"
# The pages a reader learns a vault's files from. Not docs/design/ (historical records) nor docs/install.md
# (how to install the package, written apart).
PAGES = [README, *(path for path in sorted((REPOSITORY / "docs").glob("*.md")) if path.name != "install.md")]
# Sections written apart (the pages of installing), left out where they sit.
SECTIONS_LEFT_OUT = {"docs/owner-guide.md": ("Running the watcher at login",)}
# Pages that must be looked at: those that describe a vault's files.
REQUIRED = {"README.md", "docs/owner-guide.md", "docs/several-machines.md", "docs/agents.md", "docs/lint.md",
            "docs/pinned-pages.md", "docs/configuration.md"}

# Paths of the older hidden layout, each where a page names it as that layout's: (page, path) -> why.
LEDGER, CONFIG, KEPT = ".vault-tools/ledger.jsonl", ".vault-tools/config.yaml", ".vault-tools/kept/"
OLDER_LAYOUT: dict[tuple[str, str], str] = {
    ("docs/agents.md", LEDGER): "the files the hooks guard: the ledger of vaults made before, beside today's",
    ("docs/architecture.md", LEDGER): "the glossary's ledger: that of a vault of the hidden layout, beside today's",
    ("docs/configuration.md", CONFIG): "where the config is in a vault not moved yet, beside today's",
    ("docs/history.md", LEDGER): "the ledger the history reads in a vault not moved yet, beside today's",
    ("docs/lint-rules.md", LEDGER): "VT024, VT025 and VT027 name the ledger of a vault set up before, beside today's",
    ("docs/performance.md", LEDGER): "the benchmark vaults are made in the hidden layout; the page says so",
    ("docs/pinned-pages.md", KEPT): "where a vault not moved yet keeps a page edited by hand, beside today's",
    ("docs/several-machines.md", LEDGER): "the git attribute of a vault not moved yet, beside today's",
    ("docs/several-machines.md", KEPT): "where a settlement keeps a note's text in a vault not moved yet",
}
# Paths in the generated reference pages whose words are kept in the code (a rule's or the config's doc), which
# this test does not change: (page, path) -> where the words are. Fixed there, the page is regenerated
# (`scripts/update_docs.py`) and the entry goes.
STALE_IN_CODE: dict[tuple[str, str], str] = {}
# Files of today's layout that only an event this test does not stage makes, each with the event.
MADE_ONLY_WHEN: dict[str, str] = {
    ".vault-tools/crash.log": "a command fails with a bug (exit 4): its traceback",
    "vault-tools/topics.yaml": "the owner merges two topics (a review item ticked, or written by hand)",
    ".vault-tools/merged/": "git's notes merge driver keeps both sides of a note during a merge",
}

# A path: `vault-tools/...`, `.vault-tools/...` (or `.vault-tools` alone) or `Pinned/...`, at the start of a span or
# after a space, `:` (`HEAD:...`), a bracket or a quote; never the command `vault-tools`.
PATH = re.compile(r"(?:(?<=^)|(?<=[\s:(\"'=]))(?:\.vault-tools(?:/|(?=$|\s))|vault-tools/|Pinned/)")
# A placeholder: `<tag>`, `*`, `TAG`, ..., and `k7q2`, the device tag of the documentation's examples (and of
# example-vault/).
PLACEHOLDER = re.compile(r"<[^>/]+>|\*|\b(?:TAG|ID|NAME|YYYY-MM-DD|DATE|k7q2)\b")
TIMEOUT = 120


def without_sections(text: str, titles: tuple[str, ...]) -> str:
    """The page without the sections of these titles (each up to the next heading of its level or above)."""
    kept: list[str] = []
    skipping_level = 0
    for line in text.splitlines(keepends=True):
        heading = re.match(r"(#{1,6}) (.+)", line)
        if heading:
            level = len(heading.group(1))
            if skipping_level and level <= skipping_level:
                skipping_level = 0
            if heading.group(2).strip() in titles:
                skipping_level = level
        if not skipping_level:
            kept.append(line)
    return "".join(kept)


def inline_code(text: str) -> list[tuple[int, str]]:
    """(line, content) of every inline code span of a Markdown text."""
    found = []
    for token in MarkdownIt("commonmark").enable("table").parse(text):
        if token.type != "inline" or not token.children:
            continue
        line = token.map[0] + 1 if token.map else 0
        found += [(line, child.content) for child in token.children if child.type == "code_inline"]
    return found


def named_paths(span: str) -> list[list[str]]:
    """Each path a code span names, as the readings it may have: a page's name holds spaces
    (`Pinned/Open questions`), so a path is read to the end of each of the words that follow it."""
    readings = []
    for match in PATH.finditer(span):
        words = span[match.start():].split(" ")
        readings.append([" ".join(words[:count]).rstrip(".,;:)") for count in range(1, len(words) + 1)])
    return readings


def pattern(path: str) -> re.Pattern[str]:
    parts = []
    last = 0
    for placeholder in PLACEHOLDER.finditer(path):
        parts += [re.escape(path[last:placeholder.start()]), "[^/]+"]
        last = placeholder.end()
    parts.append(re.escape(path[last:]))
    return re.compile("".join(parts))


def vault_has(files: set[str], folders: set[str], path: str) -> bool:
    """Whether the vault has `path`: a file (a page may leave out `.md`, as Obsidian shows it) or, ending in `/`
    or not, a folder."""
    wanted = pattern(path.rstrip("/"))
    if not path.endswith("/") and any(wanted.fullmatch(file) or wanted.fullmatch(file.removesuffix(".md"))
                                      for file in files):
        return True
    return any(wanted.fullmatch(folder) for folder in folders)


def run(vault: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    done = subprocess.run([sys.executable, "-m", "vault_tools", *args], cwd=vault, capture_output=True,
                          text=True, encoding="utf-8", env=env, timeout=TIMEOUT, input=stdin)
    assert done.returncode == 0, f"vault-tools {' '.join(args)}: exit {done.returncode}\n{done.stdout}{done.stderr}"
    return done


@pytest.fixture(scope="module")
def made_today(tmp_path_factory) -> tuple[set[str], set[str]]:
    """(files, folders) of a vault made today, vault-relative, after a question, a ruling and the commands
    that make the rest of its files."""
    vault = tmp_path_factory.mktemp("made-today") / "Notes"
    (vault / ".obsidian").mkdir(parents=True)
    run(vault, "init")
    run(vault, "init", "--templates")
    asked = run(vault, "ask", "Which day should the newsletter go out?", "--topic", "newsletter-day")
    question = re.search(r"\b(D-\d{4}(?:-[0-9a-z]{4})?) asked", asked.stdout + asked.stderr)
    assert question, asked.stdout + asked.stderr
    run(vault, "rule", question.group(1), "--summary", "The newsletter goes out every Thursday.", "--source", "chat")
    run(vault, "ask", "Should the blog have comments?", "--topic", "blog-comments")
    run(vault, "build")
    page = vault / "Pinned" / "Decisions log.md"  # edited by hand: the next build keeps a copy of the edit
    page.write_text(page.read_text(encoding="utf-8") + "\nA line typed into the page.\n", encoding="utf-8")
    run(vault, "build")
    run(vault, "watch", "--once")
    run(vault, "stats", "--write")
    run(vault, "review", "--today", "2099-01-01")  # the question asked is stale by then: a review is written
    run(vault, "search", "newsletter")
    an_hour_ago = time.time() - 3600  # the agents' snapshot is kept only of files not written a moment ago
    for path in [vault, *vault.rglob("*")]:
        os.utime(path, (an_hour_ago, an_hour_ago))
    run(vault, "hook", "claude", "session-start", stdin='{"hook_event_name": "SessionStart", "cwd": "."}')
    run(vault, "hook", "claude", "user-prompt-submit",
        stdin='{"hook_event_name": "UserPromptSubmit", "cwd": ".", "prompt": "Which day does the newsletter go out?"}')
    run(vault, "hook", "claude", "pre-tool-use", stdin=json.dumps({
        "hook_event_name": "PreToolUse", "cwd": ".", "tool_name": "AskUserQuestion",
        "tool_input": {"questions": [{"question": "Should the blog have comments for readers?",
                                      "header": "Comments", "multiSelect": False,
                                      "options": [{"label": "Yes", "description": "Comments"},
                                                  {"label": "No", "description": "Email only"}]}]}}))
    files, folders = set(), set()
    for path in vault.rglob("*"):
        (folders if path.is_dir() else files).add(path.relative_to(vault).as_posix())
    return files, folders


def test_the_vault_is_of_todays_layout(made_today) -> None:
    files, _ = made_today
    assert "vault-tools/config.yaml" in files and ".vault-tools/config.yaml" not in files
    assert any(re.fullmatch(r"vault-tools/ledger/[0-9a-z]{4}\.jsonl", file) for file in files)
    assert ".vault-tools/ledger.jsonl" not in files


def test_the_pages_that_describe_a_vaults_files_are_looked_at() -> None:
    assert {page_name(path) for path in PAGES} >= REQUIRED


def test_a_path_of_the_older_layout_is_caught() -> None:
    """The check itself: what the README said before (the ledger as `.vault-tools/ledger.jsonl`) is found and
    is not a path of a vault made today."""
    files = {"vault-tools/config.yaml", "vault-tools/ledger/k7q2.jsonl", "Pinned/Open questions.md"}
    folders = {"vault-tools", "vault-tools/ledger", ".vault-tools", "Pinned"}
    said = "Every step is one line in\n`.vault-tools/ledger.jsonl`, an append-only record kept next to your notes."
    spans = [span for _, span in inline_code(said)]
    assert [readings[0] for span in spans for readings in named_paths(span)] == [".vault-tools/ledger.jsonl"]
    assert not vault_has(files, folders, ".vault-tools/ledger.jsonl")
    assert vault_has(files, folders, "vault-tools/ledger/TAG.jsonl")
    assert vault_has(files, folders, "vault-tools/ledger/<tag>.jsonl")
    assert vault_has(files, folders, "Pinned/Open questions")
    assert not vault_has(files, folders, "Pinned/Open question")


@pytest.mark.parametrize("page", PAGES, ids=page_name)
def test_every_path_a_page_names_is_one_a_vault_made_today_has(page: Path, made_today) -> None:
    files, folders = made_today
    text = without_sections(page.read_text(encoding="utf-8"), SECTIONS_LEFT_OUT.get(page_name(page), ()))
    allowed = {path for (name, path) in [*OLDER_LAYOUT, *STALE_IN_CODE] if name == page_name(page)}
    wrong = []
    for line, span in inline_code(text):
        for readings in named_paths(span):
            if any(reading in allowed or reading in MADE_ONLY_WHEN or vault_has(files, folders, reading)
                   for reading in readings):
                continue
            wrong.append(f"{page_name(page)} line {line}: `{span}` names {readings[0]}")
    assert not wrong, ("paths a vault made today does not have (a path of the older layout goes in OLDER_LAYOUT, "
                       "with why, where the page says it is that layout's):\n" + "\n".join(wrong))


def test_every_allowed_path_is_named_where_it_is_allowed() -> None:
    """An allowance no page needs any more goes."""
    named = {(page_name(page), reading) for page in PAGES for _, span in inline_code(page.read_text(encoding="utf-8"))
             for readings in named_paths(span) for reading in readings}
    assert set(OLDER_LAYOUT) | set(STALE_IN_CODE) <= named
    assert set(MADE_ONLY_WHEN) <= {path for _, path in named}
