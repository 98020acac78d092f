"""`show` and `lookup` give the agent the ruling's own words, not only its one-line summary."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vault_tools import bodies
from vault_tools.bodies import LOOKUP_FULL_LIMIT, SHOW_LIMIT, sections, view, without_comments

from .helpers import CORPORA, vt_here, write

CONDITION = "Not this year: we wait until online sales pass 10,000 EUR a month."
NOTE = f"""---
type: decision
id: D-0005
status: ruled
topics: [online-shop]
summary: No online shop this year; revisit when sales grow.
ruled_at: 2026-11-02T09:00:00
ruled_by: owner
source: chat
---
## Question

Should we open an online shop?

## Ruling

{CONDITION}
Exceptions: gift cards may be sold by email. %%the owner was unsure about this%%

%%
A private note for the owner only.
%%

### Conditions

- A second person to pack orders.

```text
%% inside code this stays %%
## not a heading
```
"""


def _ruled_note(vault, body_extra: str = "") -> None:
    write(vault / "Decisions" / "D-0005 No online shop this year.md", NOTE + body_extra)
    sealed = vt_here("seal", cwd=vault)
    assert sealed.code == 0, sealed.err


def test_show_prints_the_body_without_obsidian_comments(vault):
    _ruled_note(vault)
    shown = vt_here("show", "D-0005", cwd=vault)
    assert shown.code == 0, shown.err
    assert CONDITION in shown.out and "gift cards may be sold by email" in shown.out
    assert "the owner was unsure" not in shown.out and "A private note for the owner only" not in shown.out
    assert "%% inside code this stays %%" in shown.out  # code is text, never a comment
    assert shown.out.index("sealed: yes") < shown.out.index("## Ruling")  # properties, then the body

    data = json.loads(vt_here("show", "D-0005", "--json", cwd=vault).out)
    assert data["body_left_out"] == 0
    assert data["sections"]["Ruling"].startswith(CONDITION)
    assert "### Conditions" in data["sections"]["Ruling"]  # a subsection belongs to its section
    assert data["sections"]["Conditions"].startswith("- A second person to pack orders.")
    assert "not a heading" not in data["sections"]  # a heading inside code is not a heading
    assert CONDITION in data["body"] and "unsure" not in data["body"]


def test_a_long_body_is_cut_out_loud_and_all_shows_everything(vault):
    filler = "\n".join(f"Line {n} of the owner's long reasoning about the shop." for n in range(400))
    _ruled_note(vault, "\n## Reasoning\n\n" + filler + "\nTHE LAST LINE.\n")
    shown = vt_here("show", "D-0005", cwd=vault)
    assert "THE LAST LINE." not in shown.out
    marker = next(line for line in shown.out.splitlines() if "more characters not shown" in line)
    assert "vault-tools show D-0005 --all" in marker
    data = json.loads(vt_here("show", "D-0005", "--json", cwd=vault).out)
    assert data["body_left_out"] > 0 and len(data["body"]) <= SHOW_LIMIT + 200
    assert f"{data['body_left_out']:,} more characters" in data["body"]

    everything = vt_here("show", "D-0005", "--all", cwd=vault)
    assert "THE LAST LINE." in everything.out and "more characters not shown" not in everything.out


def test_lookup_previews_the_ruling_section_and_full_gives_the_body(vault):
    _ruled_note(vault)
    looked = vt_here("lookup", "online-shop", cwd=vault)
    assert looked.code == 0, looked.err
    lines = looked.out.splitlines()
    assert lines[0].startswith("D-0005")
    assert lines[1] == f"    | {CONDITION}"
    assert "unsure" not in looked.out

    data = json.loads(vt_here("lookup", "online-shop", "--json", cwd=vault).out)
    assert data[0]["ruling_preview"][0] == CONDITION and "body" not in data[0]
    full = json.loads(vt_here("lookup", "online-shop", "--full", "--json", cwd=vault).out)
    assert full[0]["sections"]["Ruling"].startswith(CONDITION) and full[0]["body_left_out"] == 0
    text = vt_here("lookup", "online-shop", "--full", cwd=vault).out
    assert "    Should we open an online shop?" in text and "    - A second person to pack orders." in text


def test_body_view_cuts_on_a_line_boundary_and_counts_what_it_left_out():
    body = "\n".join("x" * 79 for _ in range(100))  # 8,000 characters
    shown = view(body, LOOKUP_FULL_LIMIT, how_to_see_all="vault-tools show D-0001 --all")
    kept, marker = shown.text.rsplit("\n", 1)
    assert all(len(line) == 79 for line in kept.split("\n"))
    assert len(kept) + shown.left_out == len(body)
    assert marker == f"[… {shown.left_out:,} more characters not shown: vault-tools show D-0001 --all]"
    assert view(body, None).text == body and view(body, None).left_out == 0


def test_comments_inside_inline_code_are_text():
    assert without_comments("Keep `%%literal%%` but drop %%this%%.") == "Keep `%%literal%%` but drop ."
    # Whatever characters a body holds (NUL and digits among them), what is not a comment stays as written
    assert without_comments("`a` %%b%% \x000\x00 `c`\n\n\n\nd") == "`a`  \x000\x00 `c`\n\nd"
    assert sections("## A\n\none\n\n## A\n\ntwo\n") == {"A": "one"}


LINES = ["## Ruling", "# Question", "### Context ###", "## Why ##  ", "#hashtag", "#5 bolt", "## ##", "#", "##",
         "  ## Indented a little", "####### seven", "Plain text with # inside.", "- item", "- ## heading item",
         "1. ## numbered", "* star", "", " ", "***", "___", "| a | b |", "Text [[link]] and `code #`.",
         "> [!note] callout", "    ## code heading", "\t## tab", "```", "~~~", "<div>", "---", "===",
         "## Heading with \\# escape", "## Émigré ünïcödé", "Setext title", "%% comment %%", "## Trailing #hash",
         "> ## quoted heading", "> text in a quote", ">> nested quote", "> ```", "> ---", ">     quoted code",
         "> - ## quoted item heading", ">\ttab", "> > ## deep heading", "  > indented quote"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(LINES), max_size=12))
def test_a_body_read_without_markdown_finds_the_headings_markdown_finds(lines):
    """Headings are found by a plain reading only where it cannot differ from CommonMark's (markdown-it's)."""
    body = "\n".join(lines)
    if not bodies._NEEDS_COMMONMARK.search(body):
        assert bodies._plain_headings(body.split("\n")) == bodies._markdown_headings(body)


def test_the_plain_reading_is_taken_for_an_ordinary_ruling():
    body = "## Question\n\nWhich day?\n\n## Ruling\n\nThursday, at 07:00.\n- once a week\n"
    assert not bodies._NEEDS_COMMONMARK.search(body)
    assert bodies.sections(body) == {"Question": "Which day?", "Ruling": "Thursday, at 07:00.\n- once a week"}


@pytest.mark.skipif(not CORPORA.is_dir(), reason="the real notes of ../shared/corpora are not beside this checkout")
def test_on_real_notes_the_plain_reading_finds_what_markdown_finds():
    """Every note of the corpora (vaults, ADRs, frontmatter edge cases) that the plain reading takes: the same
    headings as markdown-it. About a third of them take it."""
    taken = 0
    for path in sorted(CORPORA.rglob("*.md")):
        text = path.read_bytes().decode("utf-8", errors="replace").replace("\r\n", "\n")
        if text.startswith("---\n") and (end := text.find("\n---", 4)) > 0:
            text = text[end + 4:]
        if not bodies._NEEDS_COMMONMARK.search(text):
            taken += 1
            assert bodies._plain_headings(text.split("\n")) == bodies._markdown_headings(text), path
    assert taken > 1000
