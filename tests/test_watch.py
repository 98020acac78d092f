"""The watcher with a real watchdog observer on real temp vaults."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from vault_tools import lint, notes
from vault_tools.ledger import Ledger, histories_by_id, seal_hash
from vault_tools.commands.workspace import Workspace
from vault_tools.vault import Vault
from vault_tools.watch import Action, Debouncer, Watcher, is_ignored

from .conftest import decision, snapshot

FOOTER = "Every article footer carries the newsletter link and the author bio."


def configure(vault: Path, debounce_ms: int = 300, settle: float = 1) -> None:
    (vault / ".vault-tools" / "config.yaml").write_text(
        f"timezone: Asia/Tokyo\ndebounce_ms: {debounce_ms}\nsettle_seconds: {settle}\n")


def wait_until(predicate, timeout: float = 15, step: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout} s waiting for {predicate.__name__}")


class Running:
    def __init__(self, vault: Path) -> None:
        self.actions: list[Action] = []
        self.ws = Workspace(Vault(vault))
        self.watcher = Watcher(self.ws, on_action=self.actions.append)
        self.thread = threading.Thread(target=self.watcher.run, daemon=True)

    def __enter__(self) -> "Running":
        self.watcher.start()
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.watcher.stop()
        self.thread.join(timeout=10)
        self.watcher.release()
        assert not self.thread.is_alive()

    def kinds(self) -> list[str]:
        return [a.kind for a in self.actions]


def sealed_vault(cli, vault: Path) -> Path:
    """A vault with one sealed ruling (D-0001); returns its path."""
    assert cli("rule", "--topic", "article-footer", "--summary", FOOTER).code == 0
    assert cli("build").code == 0
    return next((vault / "Decisions").glob("D-0001 *.md"))


def obsidian_save(path: Path, text: str) -> None:
    """Obsidian saves in place: the same file, truncated and rewritten."""
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)


# -- logic without time ----------------------------------------------------------------

def test_debouncer_waits_for_quiet_and_coalesces_saves():
    now = [0.0]
    debouncer = Debouncer(2.0, clock=lambda: now[0])
    for second in range(10):  # a save every second for ten seconds
        now[0] = float(second)
        debouncer.touch("a.md")
        assert debouncer.due() == []
    debouncer.touch("b.md")
    now[0] = 10.9
    assert debouncer.due() == []
    now[0] = 11.0
    assert debouncer.due() == ["a.md", "b.md"] and debouncer.due() == [] and len(debouncer) == 0


@pytest.mark.parametrize("path,ignored", [
    ("Decisions/D-0001 x.md", False), (".obsidian/workspace.json", True), (".trash/D-0001 x.md", True),
    ("Decisions/.#D-0001 x.md", True), ("Decisions/D-0001 x.md~", True), ("Decisions/x.md.tmp", True),
    (".vault-tools/ledger.jsonl", True), ("Daily/2026-11-29.md", False), ("image.png", True),
])
def test_what_the_watcher_ignores(path, ignored):
    assert is_ignored(path) is ignored


# -- with a real observer ----------------------------------------------------------------

def test_a_question_ruled_in_obsidian_is_sealed_after_settling(cli, vault):
    configure(vault)
    assert cli("ask", "What should article footers contain?", "--topic", "article-footer").code == 0
    path = next((vault / "Decisions").iterdir())
    with Running(vault) as running:
        note = notes.read_note(path)
        obsidian_save(path, notes.with_fields(note, {"status": "ruled", "summary": FOOTER}))
        wait_until(lambda: "sealed" in running.kinds())
        log = wait_until(lambda: "D-0001" in (vault / "Pinned/Decisions log.md").read_text()
                         and (vault / "Pinned/Decisions log.md").read_text())
    assert FOOTER in log
    data = notes.read_note(path).data
    assert data["ruled_by"] == "owner" and data["ruled_at"]
    assert histories_by_id(Ledger(vault / ".vault-tools").read())["D-0001"].sealed


def test_an_in_place_edit_is_restored_and_kept_as_a_revision_and_then_all_is_quiet(cli, vault):
    configure(vault)
    path = sealed_vault(cli, vault)
    sealed = path.read_bytes()
    typed = sealed.decode().replace("the newsletter link and ", "") + "\nA paragraph the owner typed.\n"
    with Running(vault) as running:
        obsidian_save(path, typed)
        wait_until(lambda: "restored" in running.kinds())
        wait_until(lambda: "D-0002" in (vault / "Pinned/Open questions.md").read_text())
        assert path.read_bytes() == sealed
        revisions = sorted((vault / "Decisions").glob("D-0002 *.md"))
        assert len(revisions) == 1
        revision = notes.read_note(revisions[0])
        assert revision.body == notes.split(typed)[1]
        assert revision.data["summary"] == FOOTER.replace("the newsletter link and ", "")
        assert revision.data["status"] == "open" and revision.data["supersedes"] == [f"[[{path.stem}]]"]
        events = [e.event for e in Ledger(vault / ".vault-tools").read()]
        assert events[-2:] == ["edit-rejected", "asked"]
        assert "Proposed revisions" in (vault / "Pinned/Open questions.md").read_text()

        # No reaction loop: once the pages are rebuilt the watcher stays quiet.
        time.sleep(1)
        before, count = snapshot(vault), len(running.actions)
        time.sleep(10)
        assert snapshot(vault) == before and len(running.actions) == count


def test_fifty_saves_in_ten_seconds_give_one_revision_with_the_last_text(cli, vault):
    configure(vault, debounce_ms=1000)
    path = sealed_vault(cli, vault)
    sealed = path.read_text()
    with Running(vault) as running:
        for n in range(50):
            obsidian_save(path, sealed + f"\nTyping, save number {n}.\n")
            time.sleep(0.2)
        wait_until(lambda: "restored" in running.kinds())
        time.sleep(1.5)
    revisions = list((vault / "Decisions").glob("D-0002 *.md"))
    assert len(revisions) == 1 and running.kinds().count("edit-rejected") == 1
    assert notes.read_note(revisions[0]).body.endswith("Typing, save number 49.\n")
    assert path.read_text() == sealed
    assert not list((vault / "Decisions").glob("D-0003 *.md"))


def test_a_later_burst_updates_the_same_revision_and_never_drops_the_owners_words(cli, vault):
    configure(vault)
    path = sealed_vault(cli, vault)
    sealed = path.read_text()
    with Running(vault) as running:
        obsidian_save(path, sealed + "\nFirst sitting.\n")
        wait_until(lambda: running.kinds().count("restored") == 1)
        revision = next((vault / "Decisions").glob("D-0002 *.md"))
        obsidian_save(revision, revision.read_text() + "\nThe owner's own note in the revision.\n")
        time.sleep(0.8)
        obsidian_save(path, sealed + "\nSecond sitting.\n")
        wait_until(lambda: running.kinds().count("restored") == 2)
    text = revision.read_text()
    assert "First sitting." in text and "The owner's own note in the revision." in text and "Second sitting." in text
    assert len(list((vault / "Decisions").glob("D-*.md"))) == 2


def test_malformed_yaml_is_never_touched(cli, vault):
    configure(vault)
    path = sealed_vault(cli, vault)
    broken = path.read_text().replace("status: ruled", "status: [ruled")
    with Running(vault) as running:
        obsidian_save(path, broken)
        wait_until(lambda: "invalid" in running.kinds())
        wait_until(lambda: "## Problems" in (vault / "Pinned/Open questions.md").read_text())
        time.sleep(1)
    assert path.read_text() == broken
    invalid = [a for a in running.actions if a.kind == "invalid"]
    assert len(invalid) == 1 and "invalid YAML" in invalid[0].why and ":4" in (invalid[0].path or "")


def test_a_hand_written_superseding_ruling_marks_the_old_one(cli, vault):
    configure(vault)
    old = sealed_vault(cli, vault)
    with Running(vault):
        decision(vault, 2, "ruled", ("article-footer",), "Footers carry only the author bio from now on.",
                 supersedes=f'["[[{old.stem}]]"]', reason="The owner banned promotion inside articles.",
                 ruled_at=time.strftime("%Y-%m-%dT%H:%M:%S"))
        wait_until(lambda: "superseded" in notes.read_note(old).data["status"])
        wait_until(lambda: notes.read_note(old).data.get("reason"))
        log = wait_until(lambda: "because:" in (vault / "Pinned/Decisions log.md").read_text()
                         and (vault / "Pinned/Decisions log.md").read_text())
    assert "[[D-0002 Note|D-0002]] 20" in log and "because: The owner banned promotion inside articles." in log
    assert notes.read_note(old).data["superseded_by"] == "[[D-0002 Note]]"


def test_a_hand_edited_page_is_kept_then_regenerated(cli, vault):
    configure(vault)
    sealed_vault(cli, vault)
    page = vault / "Pinned" / "Decisions log.md"
    generated = page.read_text()
    with Running(vault) as running:
        obsidian_save(page, generated + "\nMy own note on the log.\n")
        wait_until(lambda: "page-kept" in running.kinds())
        wait_until(lambda: page.read_text() == generated)
    kept = list((vault / ".vault-tools" / "kept").iterdir())
    assert len(kept) == 1 and kept[0].read_text().endswith("My own note on the log.\n")


def test_edits_made_while_stopped_are_reconciled_at_start(cli, vault):
    configure(vault)
    path = sealed_vault(cli, vault)
    sealed = path.read_bytes()
    obsidian_save(path, sealed.decode() + "\nEdited while the watcher was off.\n")
    past = time.time() - 60
    os.utime(path, (past, past))
    decision(vault, 2, "ruled", ("pricing",), "The spring sale is fifteen percent off.")
    os.utime(vault / "Decisions" / "D-0002 Note.md", (past, past))
    with Running(vault) as running:
        assert {"edit-rejected", "restored", "sealed"} <= set(running.kinds())
    assert path.read_bytes() == sealed
    assert histories_by_id(Ledger(vault / ".vault-tools").read())["D-0002"].sealed


def test_typing_at_obsidian_speed_with_default_scale_timings_is_not_sealed_mid_ruling(cli, vault):
    configure(vault, debounce_ms=2000, settle=4)
    assert cli("ask", "What should article footers contain?", "--topic", "article-footer").code == 0
    path = next((vault / "Decisions").iterdir())
    with Running(vault) as running:
        note = notes.read_note(path)
        text = notes.with_fields(note, {"status": "ruled", "summary": FOOTER})
        for n in range(4):  # an autosave every 1.5 s while the owner is still writing the ruling
            text += f"\nMore of the ruling, part {n}."
            obsidian_save(path, text)
            time.sleep(1.5)
            assert "sealed" not in running.kinds()
        wait_until(lambda: "sealed" in running.kinds(), timeout=20)
    assert path.read_text().endswith("part 3.")
    assert "edit-rejected" not in running.kinds()


def test_second_watcher_exits_2_and_sigterm_stops_the_first(vault):
    configure(vault)
    first = subprocess.Popen([sys.executable, "-m", "vault_tools", "watch", "--vault", str(vault)],
                             stderr=subprocess.PIPE, text=True)
    try:
        lines = [first.stderr.readline() for _ in range(2)]
        assert any(line.startswith("watching") for line in lines), lines
        second = subprocess.run([sys.executable, "-m", "vault_tools", "watch", "--vault", str(vault)],
                                capture_output=True, text=True, timeout=30)
        assert second.returncode == 2
        assert f"another watcher is already running on this vault (pid {first.pid}" in second.stderr
    finally:
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=15) == 0


def test_json_log_lines(cli, vault):
    configure(vault)
    path = sealed_vault(cli, vault)
    obsidian_save(path, path.read_text() + "\nedit\n")
    past = time.time() - 60
    os.utime(path, (past, past))
    done = subprocess.run([sys.executable, "-m", "vault_tools", "watch", "--once", "--json", "--vault", str(vault)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    lines = [json.loads(line) for line in done.stderr.splitlines()]
    assert [line["action"] for line in lines][:2] == ["edit-rejected", "restored"]
    assert (vault / ".vault-tools" / "watch.log").read_text().count("edit-rejected") == 1


# -- fault injection ---------------------------------------------------------------------

def _scenario(vault: Path, cli) -> dict[str, bytes]:
    """A sealed note edited in place, a hand ruling that supersedes, and a question ruled by hand."""
    configure(vault, debounce_ms=0, settle=0)
    path = sealed_vault(cli, vault)
    assert cli("ask", "Which newsletter platform should we use next year?", "--topic", "newsletter").code == 0
    assert cli("rule", "--topic", "pricing", "--summary", "The spring sale is fifteen percent off.").code == 0
    typed = path.read_text() + "\nTyped in place by the owner.\n"
    obsidian_save(path, typed)
    decision(vault, 4, "ruled", ("pricing",), "The spring sale is twenty percent off now.",
             supersedes='["[[D-0003 The spring sale is fifteen percent off]]"]',
             reason="Stock is higher than planned this spring.")
    question = next((vault / "Decisions").glob("D-0002 *.md"))
    note = notes.read_note(question)
    obsidian_save(question, notes.with_fields(note, {"status": "ruled", "summary": "We move the newsletter to Buttondown."}))
    past = time.time() - 60
    for p in (vault / "Decisions").iterdir():
        os.utime(p, (past, past))
    return {"typed": typed.encode()}


def _check_invariants(vault: Path, typed: bytes) -> None:
    ws = Workspace(Vault(vault))
    events = ws.vault.ledger.read()  # verifies every line
    known = histories_by_id(events)
    state = ws.state()
    assert not state.broken
    by_id = state.by_id()
    resolve = state.resolver()
    for decision_ in state.decisions:
        history = known.get(decision_.id)
        if decision_.status.value in ("ruled", "superseded"):
            assert history and history.seal and seal_hash(decision_, resolve, ws.tz) == history.seal.hash
            assert history.status is decision_.status
    assert by_id["D-0003"].status.value == "superseded" and by_id["D-0004"].status.value == "ruled"
    assert by_id["D-0002"].status.value == "ruled"
    typed_body = notes.split(typed.decode())[1]
    revisions = [d for d in state.decisions if d.status.value == "open" and d.supersedes]
    assert len(revisions) == 1 and revisions[0].body == typed_body
    original = next(p for p in (vault / "Decisions").glob("D-0001 *.md"))
    assert original.read_bytes() == known["D-0001"].seal.text.encode()
    report = lint.lint(lint.gather(Vault(vault)))
    assert report.errors == 0, [str(d) for d in report.diagnostics]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fault injection forks a child to kill -9")
def test_kill_9_at_random_moments_loses_nothing(cli, tmp_path):
    from .conftest import make_vault
    rng = random.Random(20261129)
    # How long an uninterrupted reconcile of the scenario takes here: kills land within it.
    calibration = make_vault(tmp_path / "calibration")
    _scenario(calibration, lambda *a: cli(*a, root=calibration))
    started = time.perf_counter()
    Watcher(Workspace(Vault(calibration)), on_action=lambda action: None).process(everything=True)
    duration = time.perf_counter() - started
    runs = killed_mid_work = 0
    for run in range(52):
        vault = make_vault(tmp_path / f"v{run}")
        typed = _scenario(vault, lambda *a: cli(*a, root=vault))["typed"]
        pid = os.fork()
        if pid == 0:  # the child: a watcher reconciling the vault at start
            try:
                watcher = Watcher(Workspace(Vault(vault)), on_action=lambda action: None)
                watcher.acquire()
                watcher.process(everything=True)
            finally:
                os._exit(0)
        time.sleep(rng.uniform(0, duration))
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        killed_mid_work += os.WIFSIGNALED(status)
        # Restart: the next watcher reconciles whatever state the kill left.
        restarted = Watcher(Workspace(Vault(vault)), on_action=lambda action: None)
        restarted.acquire()
        try:
            restarted.process(everything=True)
        finally:
            restarted.release()
        _check_invariants(vault, typed)
        runs += 1
    assert runs >= 50 and killed_mid_work >= 15, killed_mid_work  # most kills land mid-work, not after it


def test_the_owners_own_properties_survive_a_restore(cli, vault):
    configure(vault)
    path = sealed_vault(cli, vault)
    sealed = path.read_text()
    tagged = sealed.replace("type: decision\n", "type: decision\ntags: [publishing]\naliases: [Footer rule]\n")
    obsidian_save(path, tagged)  # not an edit: tags and aliases are the owner's
    edited = tagged + "\nA paragraph typed into the sealed ruling.\n"
    past = time.time() - 60
    with Running(vault) as running:
        assert "edit-rejected" not in running.kinds()
        obsidian_save(path, edited)
        os.utime(path, (past, past))
        wait_until(lambda: "restored" in running.kinds())
    assert path.read_text() == tagged


def test_a_rename_or_move_is_followed_by_id_and_is_not_an_edit(cli, vault):
    configure(vault)
    old = sealed_vault(cli, vault)
    reason = "The owner banned promotion inside articles."
    assert cli("rule", "--topic", "article-footer", "--summary", "Footers carry only the author bio now.",
               "--supersedes", "D-0001", "--reason", reason).code == 0
    newer = next((vault / "Decisions").glob("D-0002 *.md"))
    with Running(vault) as running:
        moved = vault / "Archive" / "2026" / "D-0001 Footer rule.md"
        moved.parent.mkdir(parents=True)
        os.rename(old, moved)  # the owner renames and moves it in Obsidian
        # Obsidian then rewrites the links to it across the vault.
        obsidian_save(newer, newer.read_text().replace(f"[[{old.stem}]]", "[[D-0001 Footer rule]]"))
        # A sync tool moving a note shows up as a delete and a create.
        content = newer.read_bytes()
        newer.unlink()
        elsewhere = vault / "Decisions" / "Moved" / newer.name
        elsewhere.parent.mkdir()
        elsewhere.write_bytes(content)
        wait_until(lambda: "[[D-0001 Footer rule|D-0001]]" in (vault / "Pinned/Decisions archive.md").read_text())
        time.sleep(1)
    assert not {"edit-rejected", "restored", "invalid"} & set(running.kinds()), running.actions
    assert len(list(vault.rglob("D-*.md"))) == 2


def test_once_exits_3_on_a_torn_ledger_and_touches_nothing(cli, vault):
    configure(vault)
    path = sealed_vault(cli, vault)
    obsidian_save(path, path.read_text() + "\nAn edit waiting for the watcher.\n")
    with open(vault / ".vault-tools" / "ledger.jsonl", "ab") as handle:
        handle.write(b'{"event": "sea')
    before = snapshot(vault)
    done = subprocess.run([sys.executable, "-m", "vault_tools", "watch", "--once", "--vault", str(vault)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 3 and "torn last line" in done.stderr
    after = snapshot(vault)
    assert {k: v for k, v in after.items() if k != ".vault-tools/watch.log"} == before
