"""Real material written by other people: loading it must not crash, misjudge or write anything."""
from __future__ import annotations

import frontmatter
import pytest

from vault_tools import durable, note_edits, notes
from vault_tools.config import Config
from vault_tools.vault import Vault

from .helpers import CORPORA, stat_all

needs_corpora = pytest.mark.skipif(not CORPORA.is_dir(), reason=f"corpora not found at {CORPORA}")
CORPUS_NAMES = sorted(p.name for p in CORPORA.iterdir() if p.is_dir()) if CORPORA.is_dir() else []


@needs_corpora
@pytest.mark.parametrize("name", CORPUS_NAMES)
def test_loading_a_corpus_finds_no_decisions_and_writes_nothing(name):
    root = CORPORA / name
    before = stat_all(root)
    state = Vault(root, Config()).load()
    # None of these hold vault-tools decision notes; ADRs in other formats are not ours.
    assert state.decisions == [] and state.broken == [], state.broken[:3]
    assert stat_all(root) == before


@needs_corpora
def test_every_corpus_note_reads_like_python_frontmatter_reads_it():
    """Our byte-exact splitter agrees with python-frontmatter wherever that can parse a note."""
    compared = 0
    for path in sorted(CORPORA.rglob("*.md")):
        raw = path.read_bytes()
        try:
            text, _ = notes.decode(raw, path)
            reference = frontmatter.loads(raw.decode("utf-8-sig"))
        except Exception:
            continue  # not UTF-8, or YAML that python-frontmatter itself rejects
        head, body, _ = notes.split(text)
        if head is None or not reference.metadata:
            continue
        assert body.strip() == reference.content.strip() or "\r" in text, path
        try:
            data, _ = notes.parse_frontmatter(head, path)
        except Exception:
            continue  # anchors/tags are refused on purpose; broken YAML is reported elsewhere
        if hasattr(data, "keys"):
            assert set(map(str, data.keys())) == set(map(str, reference.metadata.keys())), path
            compared += 1
    assert compared > 3000


@needs_corpora
def test_round_trip_of_every_parseable_corpus_note_is_byte_identical(tmp_path):
    """Every note's text, read and rendered back for writing, is its bytes; one in fifty goes through
    a real write (each costs an fsync, which is the file system's time, not the round trip's)."""
    count = 0
    for path in sorted(CORPORA.rglob("*.md")):
        try:
            note = notes.read_note(path)
        except Exception:
            continue
        if not hasattr(note.data, "items"):
            continue
        original = path.read_bytes()
        text = note_edits.with_fields(note, {})
        assert durable.encode(text, bom=note.bom) == original, path
        if count % 50 == 0:
            copy = tmp_path / "copy.md"
            copy.write_bytes(original)
            note.path = copy
            durable.write_note(note, text)
            assert copy.read_bytes() == original, path
        count += 1
    assert count > 3000


@needs_corpora
@pytest.mark.parametrize("name", ["kepano-obsidian", "obsidian-tasks-vault"])
def test_working_in_a_real_vault_never_touches_its_notes(tmp_path, name):
    """init, ask, rule, build and a watcher pass on a copy of a real vault: its own notes stay as they were."""
    import shutil

    from .helpers import vt_here
    root = tmp_path / name
    shutil.copytree(CORPORA / name, root)
    (root / ".obsidian").mkdir(exist_ok=True)
    before = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert vt_here("init", "--timezone", "UTC", cwd=root).code == 0
    assert vt_here("ask", "Which template should new book notes use?", "--topic", "book-template", cwd=root).code == 0
    assert vt_here("rule", "D-0001", "--summary", "New book notes use the Book template as it is.", cwd=root).code == 0
    assert vt_here("build", cwd=root).code == 0
    assert vt_here("watch", "--once", cwd=root).code == 0
    linted = vt_here("lint", cwd=root)
    assert linted.code == 0, linted.out + linted.err
    after = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert {path: after.get(path) for path in before} == before
    added = set(after) - set(before)
    assert all(path.startswith((".vault-tools/", "vault-tools/", "Decisions/", "Pinned/")) or path in (".gitignore", ".gitattributes")
               for path in added), added


@needs_corpora
def test_what_the_agent_is_told_of_real_decision_records(tmp_path):
    """JabRef's 72 ADRs imported: the owner's message brings in the ADR on its matter with its text (less the
    summary again and HTML comments), a question on a recorded matter is stopped by the hook and refused by
    `ask` alike, and a message about nothing recorded brings nothing."""
    import json

    from .helpers import hook, vt_here
    root = tmp_path / "vault"
    (root / ".obsidian").mkdir(parents=True)
    assert vt_here("init", "--timezone", "UTC", cwd=root).code == 0
    assert vt_here("import", "adr", str(CORPORA / "adr-jabref"), cwd=root).code == 0
    told = hook("user-prompt-submit", {"prompt": "Which build tool should we move to, Maven?"}, root)
    text = told["hookSpecificOutput"]["additionalContext"]
    first = text.splitlines()[1]
    assert "Use Gradle as build tool" in first and "<!--" not in text
    assert not text.splitlines()[2].strip().startswith("Use Gradle as build tool")  # its text, not its summary again
    assert 'Chosen option: "Gradle"' in text and "_Imported from" not in text  # the ADR's decision, not the import
    assert hook("user-prompt-submit", {"prompt": "What is the weather in Lisbon tomorrow?"}, root) is None
    question = "Should we use SLF4J for logging?"
    denied = hook("pre-tool-use", {"session_id": "s", "tool_name": "AskUserQuestion",
                                   "tool_input": {"questions": [{"question": question}]}}, root)
    reason = denied["hookSpecificOutput"]["permissionDecisionReason"]
    asked = vt_here("ask", question, "--topic", "logging-framework", cwd=root)
    assert asked.code == 1 and "SLF4J" in reason and "SLF4J" in asked.err
    ruled = vt_here("rule", "--topic", "logging", "--summary", "Use Log4j2 directly for logging, without SLF4J.",
                    "--source", "chat", cwd=root)  # recorded beside the ADR it reverses: refused
    assert ruled.code == 1 and "the matter of" in ruled.err and "SLF4J with Log4j2" in ruled.err
    started = hook("session-start", {}, root)
    assert len(json.dumps(started, ensure_ascii=False)) <= 9500
