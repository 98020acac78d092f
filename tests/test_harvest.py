"""`vault-tools harvest`: decisions written in passing become candidate decision notes, once."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from vault_tools.importers.harvest import find
from vault_tools.services.workspace import Workspace
from vault_tools.vault import Vault
from vault_tools.watch import Watcher

from .helpers import CORPORA, config_file, made_id, make_vault, snapshot, write

needs_corpora = pytest.mark.skipif(not CORPORA.is_dir(), reason=f"the Obsidian corpora are not at {CORPORA}")

MEETING = """---
tags: [meeting]
---
# Pricing call

- Talked about plans #decision Annual plans only, no monthly billing #pricing
- Nothing decided on trials yet
- `#decision in inline code` does not count

```
#decision inside a fence does not count
decision:: nor does this
```

We will keep the old logo for now. #decision

Later we may revisit [decision:: Hosting stays in the EU region for customer data] if needed.

**Decision**:: Releases ship on Tuesdays after the full test run

> [!decision] Decided: the support inbox closes on weekends
> Customers get an auto-reply with the Monday opening time.

> [!note]
> A plain note about nothing in particular.
"""


def harvest_json(cli, *args: str, root: Path | None = None) -> dict:
    done = cli("harvest", *args, "--json", root=root)
    assert done.code == 0, done.err
    return json.loads(done.out)


def test_every_form_is_found_and_nothing_inside_code():
    found = find(MEETING, "Meetings/Pricing call.md")
    assert [(c.kind, c.line, c.text) for c in found] == [
        ("tag", 6, "Talked about plans Annual plans only, no monthly billing #pricing"),
        ("tag", 15, "We will keep the old logo for now."),
        ("field", 17, "Hosting stays in the EU region for customer data"),
        ("field", 19, "Releases ship on Tuesdays after the full test run"),
        ("callout", 21, "Decided: the support inbox closes on weekends Customers get an auto-reply with the "
                        "Monday opening time."),
    ]
    assert [c.says_ruled for c in found] == [False, False, False, False, True]
    assert found[0].topics == ("pricing",) and found[1].topics == ("pricing-call",)
    assert all(c.heading == "Pricing call" for c in found)


def test_dataview_key_spellings_count_and_other_keys_do_not():
    text = "Decision:: We print invoices in A4 only\n\n[decisions:: not this key]\n\n(decision:: Logos go top left always)\n"
    assert [c.text for c in find(text, "a.md")] == ["We print invoices in A4 only", "Logos go top left always"]


def test_harvest_proposes_open_questions_that_link_back_and_never_touches_the_note(cli, vault):
    source = write(vault / "Meetings" / "Pricing call.md", MEETING)
    original = source.read_bytes()
    preview = harvest_json(cli, "--dry-run")
    assert len(preview["created"]) == 4 and len(preview["to_confirm"]) == 1
    report = harvest_json(cli)
    assert source.read_bytes() == original  # never changed without --link-back
    assert len(report["created"]) == 5 and len(report["to_confirm"]) == 1 and report["confirmed"] == []
    state = Workspace(Vault(vault)).state()
    harvested = sorted(state.decisions, key=lambda d: d.number)
    assert [d.status.value for d in harvested] == ["open"] * 5
    assert harvested[0].source == "[[Meetings/Pricing call#Pricing call]]"
    assert harvested[0].summary == "Talked about plans Annual plans only, no monthly billing #pricing"
    assert "line 6" in harvested[0].body
    assert cli("build", "--check").code == 0
    # Run again: nothing is proposed twice.
    before = snapshot(vault)
    again = harvest_json(cli)
    assert again["created"] == [] and len(again["already_harvested"]) == 5
    assert snapshot(vault) == before


def test_confirm_records_a_harvested_question_as_ruled_in_its_own_words(cli, vault):
    write(vault / "Meetings" / "Pricing call.md", MEETING)
    report = harvest_json(cli)
    callout = report["to_confirm"][0]["id"]
    done = cli("harvest", "--confirm", callout)
    assert done.code == 0 and f"{callout} ruled" in done.out
    ruled = Workspace(Vault(vault)).state().get(made_id(vault, callout))
    assert ruled.status.value == "ruled" and ruled.summary.startswith("Decided: the support inbox closes")
    assert cli("lint").code == 0
    # Only harvested questions can be confirmed this way.
    other = cli("ask", "Should the office close on public holidays?", "--topic", "office-hours")
    asked = other.out.split()[0]
    refused = cli("harvest", "--confirm", asked)
    assert refused.code == 1 and "was not harvested" in refused.err


def test_link_back_adds_a_block_id_and_the_note_links_to_it(cli, vault):
    source = write(vault / "Meetings" / "Pricing call.md", MEETING)
    report = harvest_json(cli, "--link-back")
    assert report["linked_back"] == ["Meetings/Pricing call.md"]
    text = source.read_text()
    ids = [made_id(vault, o["id"]) for o in report["created"]]
    assert f"#pricing ^{ids[0].lower()}\n" in text
    assert f"> Customers get an auto-reply with the Monday opening time.\n\n^{ids[4].lower()}\n\n> [!note]" in text
    # Apart from the block ids, every byte is the owner's.
    assert re.sub(r" ?\^d-\d+(-[0-9a-z]{4})?", "", text).replace("\n", "") == MEETING.replace("\n", "")
    state = Workspace(Vault(vault)).state()
    assert state.get(ids[0]).source == f"[[Meetings/Pricing call#^{ids[0].lower()}]]"
    # The block ids do not make the same decisions new.
    assert harvest_json(cli, "--link-back")["created"] == []


def test_harvest_of_named_paths_only(cli, vault):
    write(vault / "A.md", "- #decision Every invoice is sent on the first of the month\n")
    write(vault / "B" / "C.md", "- #decision Every receipt is kept for seven years at least\n")
    report = harvest_json(cli, str(vault / "B"))
    assert [o["label"] for o in report["created"]] == ["B/C.md:1"]
    assert cli("harvest", str(vault / "missing.md")).code == 2


def test_too_short_to_stand_alone_is_skipped_with_why(cli, vault):
    write(vault / "X.md", "- #decision ok\n")
    report = harvest_json(cli)
    assert report["created"] == []
    assert report["skipped"] == [{"file": "X.md:1", "why": "too short to stand as a decision (under 20 characters): 'ok'"}]


def test_the_watcher_harvests_changed_notes_only_when_switched_on(vault):
    write(vault / "Daily" / "2026-07-17.md", "- #decision The newsletter goes out on Thursdays from now on\n")
    ws = Workspace(Vault(vault))
    watcher = Watcher(ws, on_actions=lambda actions: None, debounce_seconds=0, seal_delay_seconds=0)
    watcher.process(paths=["Daily/2026-07-17.md"])
    assert ws.state().decisions == []  # off by default
    config = config_file(vault)
    config.write_text(config.read_text() + "harvest_on_change: true\n")
    ws = Workspace(Vault(vault))
    watcher = Watcher(ws, on_actions=lambda actions: None, debounce_seconds=0, seal_delay_seconds=0)
    actions = watcher.process(paths=["Daily/2026-07-17.md"])
    assert [a.kind for a in actions][:1] == ["harvested"]
    assert [d.summary for d in ws.state().decisions] == ["The newsletter goes out on Thursdays from now on"]
    assert "harvested" not in [a.kind for a in watcher.process(paths=["Daily/2026-07-17.md"])]  # once only


def test_harvest_on_change_must_be_true_or_false(cli, vault):
    config = config_file(vault)
    config.write_text(config.read_text() + "harvest_on_change: sometimes\n")
    done = cli("harvest")
    assert done.code == 2 and "harvest_on_change must be bool" in done.err


# -- the Obsidian corpora --------------------------------------------------------------

OBSIDIAN_CORPORA = ["kepano-obsidian", "obsidian-tasks-vault", "dendron-site"]
FENCE = re.compile(r"^(```|~~~)[^\n]*\n", re.M)


def copy_corpus(name: str, tmp_path: Path) -> Path:
    root = tmp_path / name
    shutil.copytree(CORPORA / name, root)
    return make_vault(root)


@needs_corpora
@pytest.mark.parametrize("name", OBSIDIAN_CORPORA)
def test_real_vaults_hold_no_false_decisions_even_with_markers_in_their_code(cli, tmp_path, name):
    """Real notes, with `#decision` and `decision::` planted inside every fenced block they have:
    nothing is proposed and nothing is written."""
    root = copy_corpus(name, tmp_path)
    planted = 0
    for path in sorted(root.rglob("*.md")):
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        fences = list(FENCE.finditer(text))
        if len(fences) < 2:
            continue
        first = fences[0]
        text = text[:first.end()] + "#decision planted in code\ndecision:: planted in code\n" + text[first.end():]
        path.write_text(text, encoding="utf-8", errors="surrogateescape")
        planted += 1
    before = snapshot(root)
    report = harvest_json(cli, root=root)
    assert report["notes_read"] > 40 and report["created"] == [] and report["skipped"] == []
    assert snapshot(root) == before
    assert planted > 0 or name == "kepano-obsidian"


@needs_corpora
@pytest.mark.parametrize("name", OBSIDIAN_CORPORA)
def test_decisions_added_to_real_notes_are_found_once_and_linked_back(cli, tmp_path, name):
    root = copy_corpus(name, tmp_path)
    chosen = [p for p in sorted(root.rglob("*.md")) if ".vault-tools" not in p.parts and "Templates" not in p.parts
              and not p.name.startswith(".")][::25][:12]
    for number, path in enumerate(chosen):
        raw = path.read_bytes()
        newline = b"\r\n" if b"\r\n" in raw else b"\n"
        ending = b"" if raw.endswith(newline) or not raw else newline
        path.write_bytes(raw + ending + newline + f"- #decision Planted decision number {number} in a real note".encode()
                         + newline)
    owners = {p: p.read_bytes() for p in chosen}
    report = harvest_json(cli, "--link-back", root=root)
    assert len(report["created"]) == len(chosen), report["skipped"]
    assert sorted(report["linked_back"]) == sorted(p.relative_to(root).as_posix() for p in chosen)
    for outcome in report["created"]:
        note = next(p for p in chosen if p.relative_to(root).as_posix() == outcome["label"].rsplit(":", 1)[0])
        after = note.read_bytes()
        block = f" ^{made_id(root, outcome['id']).lower()}".encode()
        assert block in after and after.replace(block, b"") == owners[note]
    assert harvest_json(cli, root=root)["created"] == []
    assert cli("build", "--check", root=root).code == 0


def test_the_docs_forms_in_any_mix_give_one_proposal_per_marked_line():
    """docs/import.md's own example, each form beside another on neighbouring lines, two tagged lines in one
    paragraph, a tag in a table cell, and markers inside Obsidian comments (which propose nothing)."""
    text = """# Call with the printer

- Call with the printer #decision Covers are printed on recycled paper from now on

> [!decision] Decided: the shop closes for the whole of August
> Orders placed in August ship on September 1.

Decision:: Guest essays are paid on publication, not on delivery
The footer stays as it is [decision:: no sponsor logos in the footer].
Guest posts go out on Tuesdays #decision
Reviews run at most 800 words #decision

| topic | what we said |
|---|---|
| shipping | #decision Parcels go by post, never by courier |

%% #decision Not a decision: a comment %%
%%
Decision:: not shown either
%%
"""
    found = [(c.kind, c.line, c.text) for c in find(text, "Daily/2026-11-30.md")]
    assert found == [
        ("tag", 3, "Call with the printer Covers are printed on recycled paper from now on"),
        ("callout", 5, "Decided: the shop closes for the whole of August Orders placed in August ship on September 1."),
        ("field", 8, "Guest essays are paid on publication, not on delivery"),
        ("field", 9, "no sponsor logos in the footer"),
        ("tag", 10, "Guest posts go out on Tuesdays"),
        ("tag", 11, "Reviews run at most 800 words"),
        ("table", 15, "Parcels go by post, never by courier"),
    ]


def test_link_back_after_a_callout_puts_every_block_id_on_its_own_decision(cli, vault):
    """A callout's id goes on a line of its own, which moves every later line down: each decision's `source`
    still opens that decision's block."""
    note = write(vault / "Daily" / "2026-11-30.md", """# Monday

> [!decision] The shop closes for the whole of August this year
> Orders placed in August ship on September 1.
- Covers are printed on recycled paper from now on #decision
Decision:: Guest essays are paid on publication, not on delivery
""")
    assert cli("harvest", "--link-back").code == 0
    text = note.read_text(encoding="utf-8")
    for decision in Vault(vault).load().decisions:
        block = re.search(r"#\^([\w-]+)\]\]", decision.source or "").group(1)
        [line] = [line for line in text.split("\n") if line.rstrip().endswith(f"^{block}")]
        own_line = text.split("\n").index(line)
        said = "\n".join(text.split("\n")[max(0, own_line - 3):own_line + 1])  # a callout's id: after it
        assert decision.summary.split(" ")[1] in said, (decision.summary, said)


def test_link_back_writes_through_a_symlinked_note(cli, vault):
    real = write(vault / "Archive" / "Pricing call.md", "- Covers are printed on recycled paper from now on #decision\n")
    link = vault / "Meetings" / "Pricing call.md"
    link.parent.mkdir()
    link.symlink_to(real)
    assert cli("harvest", str(link.parent), "--link-back").code == 0
    assert link.is_symlink() and "^d-0001" in real.read_text(encoding="utf-8")
