"""The agent's path through the real CLI, run as a subprocess on a real temp vault."""
from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from vault_tools import durable, note_edits, notes

from .helpers import ledger_events, made_id, snapshot, vt

FOOTER_Q = "What should article footers contain?"
FOOTER_R = "Every article footer carries the newsletter link and the author bio."
BAN_R = "Footers carry only the author bio; no promotion inside articles."
BAN_REASON = "The owner banned promotion inside articles on 2026-10-07."


def test_ask_refuse_reask_rule_supersede_lookup(vault):
    asked = vt("ask", FOOTER_Q, "--topic", "article-footer", "--json", cwd=vault)
    assert asked.code == 0 and asked.err == ""
    question = json.loads(asked.out)
    assert question["id"] == "D-0001" and question["status"] == "open"

    ruled = vt("rule", "D-0001", "--summary", FOOTER_R, "--source", "chat", "--ruled-at", "2026-07-17T08:30:00",
               cwd=vault)
    assert ruled.code == 0, ruled.err

    before = snapshot(vault)
    refused = vt("ask", "Should footers link to the newsletter?", "--topic", "article-footers", cwd=vault)
    assert refused.code == 1 and refused.out == ""
    assert "settled" in refused.err and "D-0001 ruled 2026-07-17" in refused.err and FOOTER_R in refused.err
    assert "matched article-footer" in refused.err and "--reask-reason" in refused.err
    assert snapshot(vault) == before

    reasked = vt("ask", "Should footers link to the newsletter?", "--topic", "article-footer",
                 "--reask-reason", "Promotion policy is being reviewed this month.", "--json", cwd=vault)
    assert reasked.code == 0, reasked.err
    assert json.loads(reasked.out)["reask_reason"] == "Promotion policy is being reviewed this month."

    old_path = vault / question["path"]
    old_before = old_path.read_text()
    superseding = vt("rule", "D-0002", "--summary", BAN_R, "--supersedes", "D-0001", "--reason", BAN_REASON,
                     "--ruled-at", "2026-10-07T09:00:00", cwd=vault)
    assert superseding.code == 0, superseding.err

    # Only the lifecycle lines of the superseded note changed.
    old_after = old_path.read_text()
    changed = set(old_after.splitlines()) ^ set(old_before.splitlines())
    assert changed == {"status: ruled", "status: superseded", f"reason: {BAN_REASON}",
                       f'superseded_by: "[[{made_id(vault, "D-0002")} Should footers link to the newsletter]]"'}

    looked = vt("lookup", "article-footer", "--json", cwd=vault)
    found = json.loads(looked.out)
    assert [item["id"] for item in found] == ["D-0002"]
    assert [old["id"] for old in found[0]["chain"]] == ["D-0001"]
    assert found[0]["chain"][0]["reason"] == BAN_REASON

    text = vt("lookup", "article-footer", cwd=vault).out.splitlines()
    assert text[0].startswith("D-0002") and "superseded D-0001" in text[1] and BAN_REASON in text[2]

    events = [event["event"] for event in ledger_events(vault)]
    assert events == ["asked", "ruled", "sealed", "asked", "ruled", "sealed", "superseded"]


def test_direct_ruling_then_withdraw_and_retract(cli, vault):
    assert cli("rule", "--topic", "reply-policy", "--summary", "Private replies need the owner's sign-off.").code == 0
    assert cli("ask", "Should we run a reader survey this spring?", "--topic", "reader-survey").code == 0
    withdrawn = cli("withdraw", "D-0002", "--reason", "The survey idea was dropped for this year.")
    assert withdrawn.code == 0, withdrawn.err
    again = cli("withdraw", "D-0002", "--reason", "The survey idea was dropped for this year.")
    assert again.code == 1 and "withdrawn, which is final" in again.err
    retracted = cli("retract", "D-0001", "--reason", "Recorded in error: the owner never said this.")
    assert retracted.code == 0
    listed = json.loads(cli("list", "--json").out)
    assert [(d["id"], d["status"]) for d in listed] == [("D-0001", "retracted"), ("D-0002", "withdrawn")]
    shown = json.loads(cli("show", "D-0001", "--json").out)
    assert [e["event"] for e in shown["history"]] == ["ruled", "sealed", "retracted"]


def test_json_output_is_only_json(cli):
    cli("ask", "What should article footers contain?", "--topic", "article-footer")
    result = cli("list", "--status", "open", "--json")
    assert json.loads(result.out)[0]["id"] == "D-0001" and result.err == ""


def test_concurrent_asks_never_share_an_id(vault):
    questions = ("Which colour is the logo?", "Do interns get paid leave?", "Where are backups stored?",
                 "Who approves travel budgets?", "Can readers comment on podcasts?", "How fast must support reply?")

    def ask(n: int) -> int:
        keys = ("logo-colour", "intern-leave", "backup-place", "travel-budget", "podcast-comments", "reply-speed")
        return subprocess.run([sys.executable, "-m", "vault_tools", "ask", questions[n], "--topic", keys[n]],
                              cwd=vault, capture_output=True).returncode

    with ThreadPoolExecutor(6) as pool:
        codes = list(pool.map(ask, range(6)))
    assert codes == [0] * 6
    ids = sorted(p.name.split(" ")[0] for p in (vault / "Decisions").iterdir())
    assert ids == [made_id(vault, f"D-{n:04d}") for n in range(1, 7)]  # one device, one tag (shared layout)


def test_vault_is_found_by_walking_up(vault):
    sub = vault / "Daily"
    sub.mkdir()
    assert vt("ask", "What should article footers contain?", "--topic", "article-footer", cwd=sub).code == 0
    assert (vault / "Decisions").is_dir()


def test_seal_command_stamps_and_seals_a_hand_ruled_note(cli, vault):
    cli("ask", "What should article footers contain?", "--topic", "article-footer")
    path = next((vault / "Decisions").iterdir())
    note = notes.read_note(path)
    durable.write_note(note, note_edits.with_fields(note, {"status": "ruled", "summary": "Footers carry the bio only."}))
    result = cli("seal")
    assert result.code == 0 and "D-0001 sealed" in result.out
    after = notes.read_note(path)
    assert after.data["ruled_by"] == "owner" and "ruled_at" in after.data
    assert cli("seal").err.strip() == "nothing to seal"


def test_init_sets_up_a_vault_with_templates_and_is_idempotent(tmp_path):
    root = tmp_path / "My Vault"
    (root / ".obsidian").mkdir(parents=True)
    (root / ".obsidian" / "templates.json").write_text('{"folder": "Meta/Templates"}')
    first = vt("init", "--templates", "--timezone", "Europe/Paris", cwd=root)
    assert first.code == 0, first.err
    assert 'templates_folder: "Meta/Templates"' in (root / "vault-tools" / "config.yaml").read_text()
    assert {p.name for p in (root / "Meta" / "Templates").iterdir()} == {"Decision.md", "Question.md"}
    assert "vault-tools init --agent claude" in first.out
    assert '"Sync all other types" on' in first.out  # what Obsidian Sync needs, said where it is set up
    assert (root / ".gitattributes").read_text() == ("vault-tools/ledger/*.jsonl merge=union\n"
                                                    "*.md merge=vault-tools-notes\n"
                                                    "Pinned/*.md merge=vault-tools-pages\n"
                                                    "vault-tools/pages/*.json merge=vault-tools-pages\n")
    ignored = (root / ".gitignore").read_text().splitlines()
    assert ".vault-tools/" in ignored  # in this layout it holds only this device's own files
    before = snapshot(root)
    again = vt("init", "--templates", cwd=root)
    assert again.code == 0 and "already set up" in again.err
    assert snapshot(root) == before


def test_a_typo_that_reorders_the_words_is_still_the_same_topic(cli):
    assert cli("rule", "--topic", "hosting-image", "--summary", "Images are hosted on our own server only.").code == 0
    refused = cli("ask", "Where should article images be hosted?", "--topic", "ohsting-image")
    assert refused.code == 1 and "matched hosting-image" in refused.err


def test_a_topic_given_twice_is_written_once(cli, vault):
    assert cli("ask", "What should article footers contain?", "--topic", "article-footer",
               "--topic", "article-footer").code == 0
    assert json.loads(cli("show", "D-0001", "--json").out)["topics"] == ["article-footer"]
