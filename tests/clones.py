"""Clones of one vault carried by git, for the tests of several machines (`test_machines*.py`): a clone runs
vault-tools in its own folder, pulls and pushes; `check_invariants` holds after every merge: every ruling ever
sealed is one note (or in history), `context` lists every current ruling, every note's text from before the
merge is still in a note, in the ledger or in a kept copy, and lint exits 0 or reports exactly the conflicts
expected.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from vault_tools import notes
from vault_tools.cli import run
from vault_tools.errors import NoteError
from vault_tools.history import histories
from vault_tools.layout import CLONE_FILE, _where
from vault_tools.record_ties import tie_notes
from vault_tools.services.workspace import Workspace
from vault_tools.vault import Vault

from .git_repo import git, git_env
from .helpers import TZ, judged

NEWSLETTER_DAY = "The newsletter goes out every Thursday morning."


BLOG_COMMENTS = "Blog comments stay closed; readers reply by email."


class Clone:
    """One clone of the vault, driven through the real command line in-process."""

    def __init__(self, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.root = root
        self.capsys = capsys

    def vt(self, *args: str, expect: int | None = 0) -> tuple[int, str, str]:
        """The command run as an agent runs it (an `ask` shown near decisions judges them: `judged`)."""
        def once(given: list[str]) -> tuple[int, str, str]:
            self.capsys.readouterr()
            ran = run([*given, "--vault", str(self.root)])
            captured = self.capsys.readouterr()
            return ran, captured.out, captured.err
        code, out, err = judged(args, once, lambda r: r[0], lambda r: r[2])
        if expect is not None:
            assert code == expect, f"vault-tools {' '.join(args)} exited {code}: {out}{err}"
        return code, out, err

    def new_id(self, out: str) -> str:
        return out.split()[0]

    def ask(self, summary: str, topic: str) -> str:
        return self.new_id(self.vt("ask", summary, "--topic", topic)[1])

    def rule(self, *args: str) -> str:
        return self.new_id(self.vt("rule", "--source", "chat", *args)[1])

    def commit(self, message: str) -> None:
        self.vt("build")
        git(self.root, "add", "-A")
        if git(self.root, "status", "--porcelain").stdout.strip():
            git(self.root, "commit", "-q", "--no-verify", "-m", message)

    def pull(self, other: Clone, rebase: bool = False) -> None:
        """`git pull` from another clone, then what the owner's watcher does: reconcile and rebuild; then commit."""
        mode = "--rebase" if rebase else "--no-rebase"
        done = subprocess.run(["git", "pull", "-q", mode, "--no-edit", str(other.root), "main"], cwd=self.root,
                              capture_output=True, text=True, env=git_env(), timeout=120)
        assert done.returncode == 0, f"git pull stopped: {done.stdout}{done.stderr}{self.unmerged()}"
        self.vt("watch", "--once")
        self.commit("after pull")

    def unmerged(self) -> str:
        """The three sides (base, ours, theirs) of each file a stopped merge left unmerged, to say why."""
        listed = subprocess.run(["git", "diff", "--name-only", "--diff-filter=U"], cwd=self.root,
                                capture_output=True, text=True, env=git_env(), timeout=60).stdout.split("\n")
        said = []
        for path in filter(None, listed):
            for stage, side in (("1", "base"), ("2", "ours"), ("3", "theirs")):
                shown = subprocess.run(["git", "show", f":{stage}:{path}"], cwd=self.root, capture_output=True,
                                       text=True, env=git_env(), timeout=60)
                said.append(f"\n--- {side} of {path}:\n{shown.stdout if shown.returncode == 0 else '(none)'}")
        return "".join(said)

    def decision_texts(self) -> dict[str, str]:
        state = Vault(self.root).load()
        return {d.path: (self.root / d.path).read_text(encoding="utf-8") for d in state.decisions}


def make_origin(tmp_path: Path, capsys: pytest.CaptureFixture[str], seal_delay_seconds: int | None = None,
                tag: str | None = None) -> Clone:
    root = tmp_path / "origin"
    (root / ".obsidian").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    if tag:
        given_tag(root, tag)
    origin = Clone(root, capsys)
    origin.vt("init", "--timezone", TZ)
    config = root / "vault-tools" / "config.yaml"  # the watcher looks at a pulled note at once
    config.write_text(config.read_text(encoding="utf-8") + "debounce_ms: 0\n" +
                      (f"seal_delay_seconds: {seal_delay_seconds}\n" if seal_delay_seconds is not None else ""), encoding="utf-8")
    origin.rule("--topic", "newsletter-day", "--summary", NEWSLETTER_DAY)
    origin.rule("--topic", "blog-comments", "--summary", BLOG_COMMENTS)
    origin.commit("init")
    return origin


def clone(origin: Clone, name: str, tag: str | None = None) -> Clone:
    root = origin.root.parent / name
    git(origin.root.parent, "clone", "-q", str(origin.root), name)
    if tag:
        given_tag(root, tag)
    made = Clone(root, origin.capsys)
    made.vt("init")  # the merge drivers live in each clone's own .git/config
    return made


def given_tag(root: Path, tag: str) -> None:
    """Give a clone the device tag `tag` before it draws one: new ids end with it and the shared layout's ledger
    files are named and read in its order, so a seeded run is the same run whatever tags chance would draw."""
    where = _where(root)  # as `device_tag` keys the tag it keeps in the git directory
    (root / ".git" / CLONE_FILE).write_text(json.dumps({"tag": tag, "for": where}), encoding="utf-8")


def _words(text: str) -> tuple[str, str]:
    """A note's properties (in any order) and body, as a key for `check_invariants`."""
    try:
        note = notes.parse_text(text, Path("note.md"))
    except NoteError:
        return text, ""
    data = dict(note.data) if hasattr(note.data, "items") else note.data
    return json.dumps(data, sort_keys=True, default=str), note.body


def answered_on_a(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Clone, Clone, Clone, str]:
    """Three clones; a question asked on A, pulled by B, then answered on A: (a, b, c, the question)."""
    origin = make_origin(tmp_path, capsys)
    a, b, c = (clone(origin, name) for name in "ABC")
    return a, b, c, ask_and_answer_on(a, b)


def ask_and_answer_on(a: Clone, *pulling: Clone) -> str:
    """The podcast question asked on `a` and pulled by each of `pulling`, then answered on `a` (no podcast this
    year): the question's id."""
    question = a.ask("Should we start a podcast alongside the newsletter?", "podcast")
    a.commit("asked")
    for each in pulling:
        each.pull(a)
    a.vt("rule", question, "--summary", "No podcast this year; revisit at ten thousand subscribers.", "--source", "chat")
    a.commit("answered on A")
    return question


def answer_choice(clone: Clone, words: str) -> str:
    """The `--keep` choice of the clone's first conflict whose answer holds `words`."""
    conflict = json.loads(clone.vt("context", "--json")[1])["conflicts"][0]
    return next(choice for choice in conflict["settle"].split("--keep ")[1].split(" ")[0].split("|")
                if words in conflict["what"].split(choice + ": ")[1].split(";")[0])


def _stamped_in(text: str, found: set[str]) -> bool:
    """Whether a ruling typed without its time or ruler is among `found` as the watcher sealed it: the same
    body and properties, and those stamps added."""
    try:
        typed = notes.parse_text(text, Path("note.md"))
    except NoteError:
        return False
    stamps = {"ruled_at", "ruled_by"}
    if typed.data.get("status") != "ruled" or stamps <= set(typed.data):
        return False
    for other in found:
        try:
            sealed = notes.parse_text(other, Path("note.md"))
        except NoteError:
            continue
        if sealed.body == typed.body and hasattr(sealed.data, "items") and set(sealed.data) - set(typed.data) <= stamps \
                and all(sealed.data.get(key) == value for key, value in typed.data.items()):
            return True
    return False


def check_invariants(merged: Clone, before: list[dict[str, str]], conflicts: int = 0,
                     also: tuple[str, ...] = ()) -> None:
    vault = Vault(merged.root)
    ws = Workspace(vault)
    state = vault.load()
    assert not state.broken, state.broken
    known = histories(vault.ledger.read())
    tied = tie_notes(state.decisions, known.values(), lambda d: ws.seal_hash_of(state, d))
    # Every ruling ever sealed is exactly one note (its record), whatever became of it since.
    for history in known.values():
        if history.sealed:
            notes_of = [path for path, record in tied.items() if record.record == history.record]
            assert len(notes_of) == 1, f"{history.id} is {len(notes_of)} notes"
    # `context` lists every current ruling.
    context = json.loads(merged.vt("context", "--json")[1])
    listed = {ruling["id"] for ruling in context["rulings"]}
    current = {d.id for d in ws.decisions_in_effect(state) if d.status.value == "ruled"}
    left_out = current - listed  # only what the load budget moved to the archive, and counted
    assert len(left_out) == context["rulings_left_out"], f"context leaves out {left_out}"
    assert len(context["conflicts"]) == conflicts, context["conflicts"]
    # Nothing was overwritten: every note's text from every clone is in a note, the ledger or a kept copy.
    kept = vault.layout.kept_dir
    found = set(merged.decision_texts().values())
    found |= {event.text.removeprefix(notes.BOM) for event in vault.ledger.read() if event.text}
    found |= {path.read_text(encoding="utf-8") for path in kept.iterdir()} if kept.is_dir() else set()
    # git may put a note's properties in another order than a clone had them (two clones closing it alike,
    # one in the tool's order, one as an earlier merge left it): the same properties and body are not a loss.
    words = {_words(text) for text in found}
    for texts in before:
        for path, text in texts.items():
            assert text in found or _words(text) in words or _stamped_in(text, found), \
                f"the text of {path} was lost in the merge"
    # Lint: clean, or exactly the conflicts.
    code, out, _ = merged.vt("lint", expect=None)
    errors = [line for line in out.splitlines() if " error: " in line
              and not any(f": {code} error: " in line for code in also)]
    assert all(": VT026 error: " in line for line in errors), errors
    assert len(errors) == conflicts and (code == (1 if conflicts else 0) or also), out
