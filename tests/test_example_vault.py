"""example-vault/: a realistic vault that opens cleanly, tells every lifecycle story and agrees with its ledger."""
from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from pathlib import Path

import pytest

from vault_tools import note_edits, notes
from vault_tools.dates import local_date
from vault_tools.history import History, histories_by_id
from vault_tools.meaning import seal_hash
from vault_tools.model import Decision, Status
from vault_tools.starter import packaged_templates
from vault_tools.vault import Vault, VaultState

from .helpers import snapshot, vt

EXAMPLE_VAULT = Path(__file__).resolve().parents[1] / "example-vault"
TODAY = dt.date(2026, 11, 29)
OWNER_PROPERTIES = ("tags", "aliases", "cssclasses", "pinned")
WIKILINK = re.compile(r"\[\[([^\]|#^]+)(?:[#^][^\]|]*)?(?:\|[^\]]*)?\]\]")


@pytest.fixture(scope="module")
def example(tmp_path_factory) -> Vault:
    copy = tmp_path_factory.mktemp("example") / "example-vault"
    shutil.copytree(EXAMPLE_VAULT, copy)
    return Vault(copy)


@pytest.fixture(scope="module")
def state(example) -> VaultState:
    return example.load()


@pytest.fixture(scope="module")
def ledger(example) -> dict[str, History]:
    return histories_by_id(example.ledger.read())


def successor(state: VaultState, decision: Decision) -> Decision:
    found = state.get(state.resolver()(decision.superseded_by or "") or "")
    assert found is not None, f"{decision.id} has no successor note"
    return found


def without_owner_properties(data: dict) -> dict:
    return {key: value for key, value in data.items() if key not in OWNER_PROPERTIES}


def superseded_ids(state: VaultState, decision: Decision) -> set[str | None]:
    return {state.resolver()(link) for link in decision.supersedes}


def test_opens_cleanly_with_at_least_15_decision_notes(example, state):
    assert state.broken == [] and state.problems == {}
    assert len(state.decisions) >= 15
    for settings in (example.root / ".obsidian").glob("*.json"):
        json.loads(settings.read_text(encoding="utf-8"))
    folder = json.loads((example.root / ".obsidian" / "templates.json").read_text())["folder"]
    assert folder == example.config.templates_folder
    for name, text in packaged_templates().items():
        assert (example.root / folder / name).read_text(encoding="utf-8") == text


def test_is_laid_out_as_a_vault_made_today(example, state):
    """The record in `vault-tools/` (config, one ledger file for the device that made it, tag k7q2, which every
    id ends with); nothing of that device's own (`.vault-tools/`: its tag, cache, locks) is carried with it."""
    assert example.layout.shared
    assert (example.root / "vault-tools" / "config.yaml").is_file()
    assert sorted(path.name for path in (example.root / "vault-tools" / "ledger").iterdir()) == ["k7q2.jsonl"]
    assert not (EXAMPLE_VAULT / ".vault-tools").exists()
    assert state.decisions and all(d.id.endswith("-k7q2") for d in state.decisions)


def test_ordinary_notes_have_frontmatter_links_and_callouts_and_every_link_resolves(example, state):
    names = {path.stem.casefold() for path in example.root.rglob("*.md")}
    names |= {path.name.casefold() for path in example.root.rglob("*.base")}  # a base is named with its extension
    ordinary = [path for path in example.root.rglob("*.md")
                if path.parent.name not in ("Decisions", "Pinned", "Templates")]
    assert len(ordinary) >= 10
    for path in ordinary:
        text = path.read_text(encoding="utf-8")
        assert text.startswith("---\n") and notes.read_head(path) is None, path
    texts = [path.read_text(encoding="utf-8") for path in ordinary]
    assert sum("> [!" in text for text in texts) >= 5
    assert sum(bool(re.search(r"\[\[D-\d{4}-k7q2 ", text)) for text in texts) >= 5
    for path in example.root.rglob("*.md"):
        if path.parent.name == "Templates":
            continue
        for target in WIKILINK.findall(path.read_text(encoding="utf-8")):
            assert target.split("/")[-1].casefold() in names, f"{path.name} links to missing [[{target}]]"


def test_footer_ruling_superseded_by_a_promotion_ban_with_its_reason(state):
    footer = next(d for d in state.decisions if "article-footer" in d.topics and d.status is Status.SUPERSEDED)
    ban = successor(state, footer)
    assert ban.status is Status.RULED and "promotion" in ban.topics and "article-footer" in ban.topics
    assert footer.id in superseded_ids(state, ban)
    assert footer.reason and "promotion" in footer.reason


def test_private_replies_sign_off_went_yes_then_no_then_yes(state, ledger):
    chain = sorted((d for d in state.decisions if "reader-replies" in d.topics and d.ruled_at),
                   key=lambda d: d.ruled_at)
    assert [d.status for d in chain] == [Status.SUPERSEDED, Status.SUPERSEDED, Status.RULED]
    first, second, third = chain
    assert first.summary.startswith("Yes") and "no longer" in second.summary and "again" in third.summary
    assert successor(state, first) == second and successor(state, second) == third
    assert all(d.reason for d in (first, second))


def test_withdrawn_question_and_retracted_ruling_keep_their_reasons(state):
    withdrawn = [d for d in state.decisions if d.status is Status.WITHDRAWN]
    retracted = [d for d in state.decisions if d.status is Status.RETRACTED]
    assert withdrawn and all(d.reason and d.ruled_at is None for d in withdrawn)
    assert retracted and all(d.reason and d.ruled_at for d in retracted)


def test_open_questions_cover_reask_stale_due_tomorrow_and_a_proposed_revision(example, state):
    tz = example.config.tz
    open_notes = [d for d in state.decisions if d.status is Status.OPEN]
    current_topics = {t for d in state.decisions if d.status is Status.RULED for t in d.topics}
    assert any(d.reask_reason and set(d.topics) & current_topics for d in open_notes)
    assert any((TODAY - local_date(d.asked_at, tz)).days == 29 for d in open_notes if d.asked_at)
    assert any(d.due == TODAY + dt.timedelta(days=1) for d in open_notes)
    revisions = [d for d in open_notes if d.supersedes]
    assert revisions
    for revision in revisions:
        targets = [state.get(target) for target in superseded_ids(state, revision)]
        assert targets and all(t is not None and t.status is Status.RULED for t in targets)


def test_ledger_agrees_with_every_note(example, state, ledger):
    resolve = state.resolver()
    assert set(ledger) == {d.id for d in state.decisions}
    for decision in state.decisions:
        history = ledger[decision.id]
        assert history.status is decision.status, decision.id
        if decision.status is Status.OPEN or decision.status is Status.WITHDRAWN:
            assert not history.sealed
            continue
        sealed = [e for e in history.events if e.event == "sealed"]
        assert len(sealed) == 1, decision.id
        assert sealed[0].hash == seal_hash(decision, resolve, example.config.tz), f"{decision.id} seal hash"
        latest = history.seal
        assert latest is not None and latest.text is not None
        current = notes.read_note(example.path_of(decision))
        recorded = notes.parse_text(latest.text, current.path)
        # The ledger holds the exact text; since then only the owner's own properties may have changed.
        assert recorded.body == current.body, decision.id
        assert without_owner_properties(recorded.data) == without_owner_properties(current.data), decision.id
        if recorded.data == current.data:
            assert latest.text == note_edits.file_text(current, current.text), decision.id
    for decision in state.decisions:
        closing = {e.event: e for e in ledger[decision.id].events}
        if decision.status is Status.SUPERSEDED:
            assert closing["superseded"].successor == successor(state, decision).id
            assert closing["superseded"].reason == decision.reason
        if decision.status in (Status.WITHDRAWN, Status.RETRACTED):
            assert closing[decision.status.value].reason == decision.reason


def test_pages_are_current_nothing_is_left_to_seal_and_lint_finds_no_error(tmp_path):
    vault = tmp_path / "example-vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    before = snapshot(vault)
    check = vt("build", "--check", "--today", TODAY.isoformat(), cwd=vault)
    assert check.code == 0, check.out + check.err
    sealed = vt("seal", cwd=vault)
    assert sealed.code == 0 and sealed.out == "" and "nothing to seal" in sealed.err
    if re.search(r"^\s+lint\s", vt("--help", cwd=vault).out, re.MULTILINE):
        linted = vt("lint", "--today", TODAY.isoformat(), cwd=vault)
        assert linted.code == 0 and "Found 0 errors" in linted.out + linted.err, linted.out + linted.err
    assert snapshot(vault) == before
