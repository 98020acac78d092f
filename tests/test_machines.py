"""Several clones of one vault, carried between machines by git: what two or three clones record at the
same time merges with `git pull` (merge or rebase) and nothing is lost or overwritten; ids stay unique; copies
and notes given two ids keep one record. Outcomes that cannot both stand are in test_machines_conflicts.py,
git's merge driver in test_machines_merge_driver.py, the random work in test_machines_random.py.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys

import pytest

from vault_tools import notes
from vault_tools.layout import device_tag
from vault_tools.services.workspace import Workspace
from vault_tools.vault import Vault

from .clones import BLOG_COMMENTS, NEWSLETTER_DAY, Clone, check_invariants, clone, make_origin
from .git_repo import git_env
from .helpers import make_vault, note_path, write


def test_the_issues_script_keeps_both_rulings_current(tmp_path):
    """The reproduction from the issue, run by a shell with vault-tools on PATH (less its `sleep 1.5`: the two
    clones record in the same second or not, and both rulings stay current either way)."""
    script = """
git init -q o && cd o && mkdir .obsidian && vault-tools init
vault-tools rule --topic newsletter-day --source chat --summary "The newsletter goes out every Thursday morning."
vault-tools rule --topic blog-comments --source chat --summary "Blog comments stay closed; readers reply by email."
vault-tools build; git add -A; git commit -qm init; cd ..
git clone -q o A; git clone -q o B
(cd A && vault-tools ask "Should we start a podcast alongside the newsletter?" --topic podcast --not-the-same D-0001 &&
  vault-tools rule D-0003 --source chat --summary "No podcast this year; revisit when subscribers pass ten thousand." &&
  vault-tools build && git add -A && git commit -qm A)
(cd B && vault-tools ask "Which tool should send the newsletter from January?" --topic newsletter-tool --not-the-same D-0001 &&
  vault-tools rule D-0003 --source chat --summary "Newsletter moves to Buttondown from January." &&
  vault-tools build && git add -A && git commit -qm B)
cd A && git pull --no-rebase --no-edit ../B master   # conflict in Pinned/Decisions log.md
vault-tools watch --once
"""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "vault-tools").write_text(f"#!/bin/sh\nexec {sys.executable} -m vault_tools \"$@\"\n")
    (bin_dir / "vault-tools").chmod(0o755)
    env = {**git_env(), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "GIT_TEMPLATE_DIR": "",
           "VAULT_TOOLS_CEILING": str(tmp_path)}
    env.pop("GIT_CONFIG_GLOBAL")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = master\n")
    env["HOME"] = str(home)
    done = subprocess.run(["sh", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    a = tmp_path / "A"
    context = subprocess.run([sys.executable, "-m", "vault_tools", "context", "--json"], cwd=a, env=env,
                             capture_output=True, text=True, timeout=60)
    rulings = {r["summary"] for r in json.loads(context.stdout)["rulings"]}
    assert {"No podcast this year; revisit when subscribers pass ten thousand.",
            "Newsletter moves to Buttondown from January.", NEWSLETTER_DAY, BLOG_COMMENTS} == rulings
    lint = subprocess.run([sys.executable, "-m", "vault_tools", "lint"], cwd=a, env=env, capture_output=True,
                          text=True, timeout=60)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    ids = sorted(p.name.split(" ")[0] for p in (a / "Decisions").iterdir())
    assert len(ids) == len(set(ids)) == 4 and sum(i.startswith("D-0003-") for i in ids) == 2


@pytest.mark.parametrize("rebase", [False, True], ids=["merge", "rebase"])
def test_concurrent_asks_and_rulings_merge_without_a_stop(two, rebase):
    a, b = two
    question_a = a.ask("Should we start a podcast alongside the newsletter?", "podcast")
    a.rule(question_a, "--summary", "No podcast this year; revisit at ten thousand subscribers.")
    a.ask("Should the shop sell printed back issues?", "back-issues")
    a.commit("A")
    b.ask("Which tool should send the newsletter from January?", "newsletter-tool")
    b.rule("--topic", "sponsorships", "--summary", "Sponsors appear once per issue, at the bottom.")
    b.commit("B")
    assert question_a.startswith("D-0003-") and a.root.joinpath(".git").is_dir()
    before = [a.decision_texts(), b.decision_texts()]
    a.pull(b, rebase=rebase)
    check_invariants(a, before)
    b.pull(a, rebase=rebase)
    check_invariants(b, before)
    assert a.decision_texts() == b.decision_texts()
    open_questions = {q["summary"] for q in json.loads(a.vt("context", "--json")[1])["open_questions"]}
    assert open_questions == {"Should the shop sell printed back issues?",
                              "Which tool should send the newsletter from January?"}


def test_three_clones_record_at_once_and_each_id_is_unique(tmp_path, capsys):
    origin = make_origin(tmp_path, capsys)
    clones = [clone(origin, name) for name in "ABC"]
    made = []
    subjects = iter(["newsletter-format", "shop-prices", "podcast-plans", "survey-timing", "merch-colours",
                     "events-venue", "sponsor-rules", "archive-access", "footer-links"])
    for index, each in enumerate(clones):
        for round_ in range(3):
            made.append(each.rule("--topic", next(subjects),
                                  "--summary", f"Ruling number {round_} recorded on clone {index} offline."))
        each.commit(f"clone {index}")
    assert len(set(made)) == len(made) == 9
    before = [each.decision_texts() for each in clones]
    a, b, c = clones
    a.pull(b)
    a.pull(c, rebase=True)
    check_invariants(a, before)
    c.pull(a)
    check_invariants(c, before)
    assert len(json.loads(c.vt("context", "--json")[1])["rulings"]) == 11


def test_case_only_twins_keep_their_own_text_until_one_is_renumbered(tmp_path, capsys):
    if sys.platform in ("darwin", "win32"):
        pytest.skip("two names differing only in case cannot exist on this file system")
    origin = make_origin(tmp_path, capsys)
    folder = origin.root / "Decisions"
    sealed = next(folder.glob("D-0001-*.md"))
    decision_id = sealed.name.split(" ")[0]
    twin = folder / ("d" + sealed.name[1:].lower())
    twin_text = sealed.read_text(encoding="utf-8").replace(NEWSLETTER_DAY, "The newsletter moves to a monthly issue.") \
        .replace("newsletter-day", "newsletter-cadence")
    write(twin, twin_text)
    linking = origin.new_id(origin.vt("rule", "--topic", "newsletter-format", "--summary",
                                      "Each issue links the sealed day ruling.", "--source", f"[[{twin.stem}]]")[1])
    linking_note = next(folder.glob(f"{linking} *.md"))
    sealed_text = sealed.read_text(encoding="utf-8")
    for _ in range(2):
        origin.vt("watch", "--once", expect=None)
        origin.vt("lint", "--fix", expect=None)
        origin.vt("build")
        assert sealed.read_text(encoding="utf-8") == sealed_text
        assert twin.read_text(encoding="utf-8") == twin_text
    _, out, _ = origin.vt("lint", expect=1)
    twins = [line for line in out.splitlines() if ": VT008 " in line]
    assert len(twins) == 2 and all(sealed.name in line and twin.name in line for line in twins)
    assert not [line for line in out.splitlines() if ": VT021 " in line]
    assert origin.vt("retract", decision_id, "--reason", "Trying to retract an id two notes share.", expect=3)
    origin.vt("ask", "Which city hosts the spring meetup?", "--topic", "meetup-city")  # other writes go on
    _, renumbered, _ = origin.vt("renumber", decision_id)
    new_id = renumbered.split()[2].rstrip(":")
    assert renumbered.startswith(f"{decision_id} -> ") and sealed.exists() and not twin.exists()
    moved = next(folder.glob(f"{new_id} *.md"))
    assert notes.read_note(moved).data["id"] == new_id and moved.read_text(encoding="utf-8") == twin_text.replace(
        f"id: {decision_id}", f"id: {new_id}")
    assert f"[[{moved.stem}]]" in linking_note.read_text(encoding="utf-8")
    origin.vt("seal")
    origin.vt("build")
    assert origin.vt("lint")[0] == 0
    assert sealed.read_text(encoding="utf-8") == sealed_text
    events = [e for e in Vault(origin.root).ledger.read() if e.event == "renumbered"]
    assert len(events) == 1 and events[0].was == decision_id and events[0].id == new_id


@pytest.mark.parametrize("tagged", [True, False], ids=["tagged", "tagless"])
@pytest.mark.parametrize("rebase", [True])  # as found: replaying one clone's commit over the other's
def test_copies_two_clones_keep_of_one_note_in_the_same_second_both_arrive(two, rebase, tagged):
    a, b = two
    moment = dt.datetime(2026, 12, 3, 14, 55, 1, tzinfo=dt.UTC)
    kept = {}
    for each, words in ((a, "as laptop had it"), (b, "as the agent server had it")):
        if tagged:  # its first id draws its tag
            each.rule("--topic", f"shop-{each.root.name.lower()}", "--summary", f"The shop opens on {each.root.name}.")
        kept[each] = Workspace(Vault(each.root), now=lambda: moment).keep_copy("D-0002 before settling",
                                                                               f"The ruling {words}.\n".encode())
        each.commit("kept a copy")
    assert kept[a] != kept[b]  # each clone's name ends with its own tag, or random digits where it has none
    assert (device_tag(a.root, create=False) is None) is not tagged
    b.pull(a, rebase=rebase)
    folder = b.root / "vault-tools" / "kept"
    assert sorted(p.read_text(encoding="utf-8") for p in folder.iterdir()) == \
        ["The ruling as laptop had it.\n", "The ruling as the agent server had it.\n"]


def test_a_copy_kept_on_a_clone_without_a_tag_gives_it_none(two):
    a, _ = two  # a fresh clone that has recorded nothing: no tag yet, and keeping a copy makes none
    kept = Workspace(Vault(a.root)).keep_copy("Decisions log", b"Edited by hand.\n")
    assert re.fullmatch(r"vault-tools/kept/Decisions log \d{4}-\d\d-\d\d \d{6} [0-9a-f]{4}\.md", kept)
    assert device_tag(a.root, create=False) is None
    tagged = a.new_id(a.vt("ask", "Which day does the shop open?", "--topic", "shop-day")[1])
    assert tagged.rsplit("-", 1)[1] == device_tag(a.root, create=False)  # the first id draws it, as before


def test_a_hand_made_copy_of_a_sealed_ruling_is_never_restored_over(tmp_path, capsys):
    origin = make_origin(tmp_path, capsys)
    folder = origin.root / "Decisions"
    sealed = next(folder.glob("D-0002-*.md"))
    copy = folder / "Copy of the comments ruling.md"
    copy_text = sealed.read_text(encoding="utf-8").replace(BLOG_COMMENTS, "Blog comments open for subscribers only.") \
        .replace("blog-comments", "blog-moderation")
    write(copy, copy_text)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    origin.vt("watch", "--once", expect=None)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    origin.vt("renumber", sealed.name.split(" ")[0], "--path", f"Decisions/{copy.name}")
    _, _, err = origin.vt("watch", "--once", expect=1)  # the copy, renumbered just now, is a ruling left to settle
    assert f"Decisions/{copy.name}: ruled; sealed once left alone for 120 s" in err
    assert origin.vt("lint")[0] == 0


def test_what_a_clone_remembered_is_not_answered_once_a_pull_changed_the_vault(two, monkeypatch):
    """Pages, the agent's view and lint's findings are kept from run to run (`.vault-tools/cache/`, never
    committed): after a `git pull` brought the other clone's ruling and its ledger lines, every answer is the
    one a clone with nothing kept gives."""
    from vault_tools import reading as reading_module
    from vault_tools.commands import page_inputs
    monkeypatch.setattr(page_inputs, "RACY_NANOSECONDS", 0)  # kept at once, not after two seconds
    monkeypatch.setattr(reading_module, "RACY_NANOSECONDS", 0)
    a, b = two
    question = a.ask("Should we start a podcast alongside the newsletter?", "podcast")
    a.commit("asked")
    b.pull(a)

    def answers(clone: Clone) -> list[tuple[int, str]]:
        return [clone.vt(*args, expect=None)[:2] for args in
                (["context", "--json"], ["lint", "--format", "json"], ["build", "--check"])]

    remembered = answers(b)
    assert answers(b) == remembered and (b.root / ".vault-tools" / "cache" / "lint-v2").exists()
    a.rule(question, "--summary", "No podcast this year; revisit at ten thousand subscribers.")
    a.commit("ruled")
    before = [a.decision_texts(), b.decision_texts()]
    done = subprocess.run(["git", "pull", "-q", "--no-rebase", "--no-edit", str(a.root), "main"], cwd=b.root,
                          capture_output=True, text=True, env=git_env(), timeout=120)
    assert done.returncode == 0, done.stderr
    after_pull = answers(b)
    assert after_pull != remembered and "No podcast this year" in after_pull[0][1]
    shutil.rmtree(b.root / ".vault-tools" / "cache")
    assert answers(b) == after_pull
    check_invariants(b, before)


@pytest.mark.parametrize("rebase", [False, True], ids=["merge", "rebase"])
def test_a_ruling_deleted_on_one_clone_comes_back_on_both_and_nothing_typed_is_lost(two, rebase):
    """A sealed ruling's note deleted and committed on A before its watcher ran; B, meanwhile, answered a
    question by typing in Obsidian. B pulls: its watcher writes the ruling back (the ledger never ended it)
    and keeps B's answer; A pulls that back. Both clones hold the ruling once, as sealed, and B's words."""
    a, b = two
    ruling = a.rule("--topic", "analytics", "--summary", "The site uses no analytics and no tracking of any kind.")
    question = a.ask("How long should a podcast episode be at most?", "podcast-length")
    a.commit("ruling and question")
    b.pull(a, rebase)
    sealed_text = note_path(a.root, ruling).read_bytes()
    note_path(a.root, ruling).unlink()
    a.commit("the ruling's note deleted")  # committed before A's watcher ran
    answer = "Podcast episodes run thirty minutes at most."
    note = note_path(b.root, question)
    note.write_text(note.read_text(encoding="utf-8").replace("status: open", "status: ruled").replace(
        "summary: How long should a podcast episode be at most?", f"summary: {answer}"), encoding="utf-8")
    b.vt("seal", question)
    b.commit("answered in Obsidian")
    b.pull(a, rebase)
    a.pull(b, rebase)
    for side in (a, b):
        back = list((side.root / "Decisions").glob(f"{ruling} *.md"))
        assert [path.read_bytes() for path in back] == [sealed_text], side.root.name
        assert any(answer in text for text in side.decision_texts().values()), side.root.name
        side.vt("lint")


def test_a_device_outside_git_keeps_the_tag_it_kept_under_its_host_name(tmp_path):
    """Outside git, in the shared layout, a device's tag is kept in a file named after its host name and folder,
    the host name as the socket module gives it (every version before took it so; it is read now without
    loading that module): a device that kept its tag then still has it, and so its ledger file and its ids."""
    vault = make_vault(tmp_path / "vault", shared=True)
    devices = vault / ".vault-tools" / "devices"
    shutil.rmtree(devices, ignore_errors=True)
    devices.mkdir()
    where = f"{socket.gethostname()}:{vault.resolve()}"
    (devices / (hashlib.sha256(where.encode("utf-8")).hexdigest()[:16] + ".json")).write_text(
        json.dumps({"tag": "k7q2", "for": where}), encoding="utf-8")
    assert device_tag(vault, create=False) == "k7q2"
    assert len(list(devices.iterdir())) == 1  # no other tag drawn beside it
