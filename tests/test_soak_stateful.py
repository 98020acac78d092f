"""Random sequences of what agents and the owner do, with kills in between, against a real temp vault.

A hypothesis state machine drives the command line in-process (ask, rule, supersede, seal, lint --fix,
watch --once), the owner's hand in Obsidian (rulings written by hand, in-place edits of sealed rulings,
renames with the links Obsidian rewrites, link rewrites, deletions) and kills between a note and its ledger
line (a ledger append that dies once). After every step:

- no text lost: every phrase the owner typed is still in the vault or its ledger;
- no ruling is current that a current ruling supersedes;
- what an agent loads (`context`) stays within the budget;
- once the watcher has reconciled, `lint` finds no error in the supersession chain (VT010-VT015), the
  seals and the ledger (VT020-VT029) or the pages (VT030): the notes agree with the ledger. (Other
  findings are about what the owner wrote, like two rulings on one topic that do not say how they relate.)

`VAULT_TOOLS_SOAK_RUNS` sets the number of sequences (see `sequences`); `make soak` is the long run.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from vault_tools.cli import run
from vault_tools.ledger import Ledger

from .helpers import config_file, judged, ledger_file, make_vault, write

TOPICS = ("article-footer", "author-bio", "image-policy", "reader-replies")
REASON = "The owner changed their mind after the reader survey."
BUDGET_BYTES, BUDGET_LINES = 6000, 80


class Killed(BaseException):
    """kill -9: nothing after it runs."""


class VaultMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.base = Path(tempfile.mkdtemp(prefix="vault-tools-soak-"))
        self.root = make_vault(self.base / "vault")
        config = config_file(self.root)
        config.write_text(config.read_text() + "seal_delay_seconds: 0\ndebounce_ms: 0\n"
                          f"budget:\n  lines: {BUDGET_LINES}\n  bytes: {BUDGET_BYTES}\n")
        write(self.root / "Designs" / "Design A.md", "The first design.\n")
        write(self.root / "Designs" / "Design B.md", "The second design.\n")
        self.phrases: list[str] = []
        self.counter = 0
        self.reconciled = False

    def teardown(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)

    # -- helpers ---------------------------------------------------------------------------------

    def cli(self, *args: str) -> tuple[int, str, str]:
        """The command as an agent runs it (an `ask` shown near decisions judges them: `helpers.judged`)."""
        def once(given: list[str]) -> tuple[int, str, str]:
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = run([*given, "--vault", str(self.root)])
            assert code != 4, (given, err.getvalue())
            return code, out.getvalue(), err.getvalue()
        return judged(args, once, lambda r: r[0], lambda r: r[2])

    def listed(self) -> list[dict]:
        code, out, err = self.cli("list", "--json")
        assert code in (0, 3), err
        return json.loads(out)

    def notes(self) -> list[Path]:
        folder = self.root / "Decisions"
        return sorted(folder.glob("*.md")) if folder.is_dir() else []

    def current(self) -> list[dict]:
        return [d for d in self.listed() if d["status"] == "ruled"]

    def next_number(self) -> int:
        ledger = ledger_file(self.root).read_text(encoding="utf-8")
        names = " ".join(p.name for p in self.notes())
        return max([int(n) for n in re.findall(r"D-(\d+)", ledger + " " + names)] or [0]) + 1

    def changed(self) -> None:
        self.reconciled = False

    # -- the agent, through the command line ------------------------------------------------------

    @initialize()
    def start(self) -> None:
        assert self.cli("rule", "--topic", "article-footer", "--summary", "Footers carry the newsletter link.",
                        "--body", "Follow [[Design A]] for the layout.")[0] == 0

    @rule(topic=st.sampled_from(TOPICS))
    def ask(self, topic: str) -> None:
        self.counter += 1
        self.cli("ask", f"Question number {self.counter} about {topic}?", "--topic", topic)
        self.changed()

    @rule(topic=st.sampled_from(TOPICS), supersede=st.booleans(), link=st.booleans())
    def rule_directly(self, topic: str, supersede: bool, link: bool) -> None:
        self.counter += 1
        args = ["rule", "--topic", topic, "--summary", f"Ruling number {self.counter} on {topic} stands."]
        if link:
            args += ["--body", f"See [[Design {'A' if self.counter % 2 else 'B'}]] for ruling {self.counter}."]
        on_topic = [d for d in self.current() if topic in d["topics"]]
        if supersede and on_topic:
            args += ["--supersedes", on_topic[0]["id"], "--reason", REASON]
        self.cli(*args)
        self.changed()

    @rule(data=st.data())
    def answer_a_question(self, data: st.DataObject) -> None:
        open_ = [d for d in self.listed() if d["status"] == "open"]
        if open_:
            question = data.draw(st.sampled_from(open_))
            self.cli("rule", question["id"], "--summary", f"The answer to {question['id']} is a firm yes.")
            self.changed()

    @rule()
    def seal(self) -> None:
        self.cli("seal")
        self.changed()

    @rule()
    def lint_fix(self) -> None:
        self.cli("lint", "--fix")
        self.changed()

    @rule()
    def watch_once(self) -> None:
        code, _, _ = self.cli("watch", "--once")
        self.reconciled = code == 0

    @rule(point=st.integers(0, 3), topic=st.sampled_from(TOPICS), command=st.sampled_from(["rule", "seal", "ask"]))
    def killed(self, point: int, topic: str, command: str) -> None:
        """A write dies at its `point`th ledger append: the note may be written, its event not."""
        real = Ledger.append
        calls = {"n": 0}

        def append(ledger: Ledger, events) -> None:  # type: ignore[no-untyped-def]
            events = list(events)
            if events:
                calls["n"] += 1
                if calls["n"] - 1 == point:
                    raise Killed
            real(ledger, events)

        self.counter += 1
        on_topic = [d for d in self.current() if topic in d["topics"]]
        args = {"ask": ["ask", f"Question number {self.counter} about {topic}?", "--topic", topic],
                "seal": ["seal"],
                "rule": ["rule", "--topic", topic, "--summary", f"Ruling number {self.counter} on {topic} stands.",
                         *(["--supersedes", on_topic[0]["id"], "--reason", REASON] if on_topic else [])]}[command]
        with mock.patch.object(Ledger, "append", append), contextlib.suppress(Killed):
            self.cli(*args)
        self.changed()

    # -- the owner, in Obsidian ------------------------------------------------------------------

    @rule(topic=st.sampled_from(TOPICS), supersede=st.booleans())
    def owner_rules_by_hand(self, topic: str, supersede: bool) -> None:
        number = self.next_number()
        on_topic = [d for d in self.current() if topic in d["topics"]]
        extra = ""
        if supersede and on_topic:
            title = Path(on_topic[0]["path"]).stem
            extra = f'supersedes: ["[[{title}]]"]\nreason: {REASON}\n'
        write(self.root / "Decisions" / f"D-{number:04d} By hand {number}.md",
              f"---\ntype: decision\nid: D-{number:04d}\nstatus: ruled\ntopics: [{topic}]\n"
              f"summary: The owner ruled by hand on {topic}, number {number}.\n"
              f"ruled_at: 2026-07-17T08:30:00\nruled_by: owner\n{extra}---\n## Ruling\n\nBy hand.\n")
        self.changed()

    @rule(data=st.data())
    def owner_edits_in_place(self, data: st.DataObject) -> None:
        candidates = [p for p in self.notes() if "status: ruled" in p.read_text(encoding="utf-8")]
        if candidates:
            note = data.draw(st.sampled_from(candidates))
            self.counter += 1
            phrase = f"owner-phrase-{self.counter}-typed"
            note.write_text(note.read_text(encoding="utf-8") + f"\n{phrase}\n", encoding="utf-8")
            self.phrases.append(phrase)
            self.changed()

    @rule(data=st.data())
    def owner_rewrites_a_link(self, data: st.DataObject) -> None:
        candidates = [p for p in self.notes() if "[[Design A]]" in p.read_text(encoding="utf-8")]
        if candidates and (self.root / "Designs" / "Design B.md").exists():
            note = data.draw(st.sampled_from(candidates))
            note.write_text(note.read_text(encoding="utf-8").replace("[[Design A]]", "[[Design B]]"), encoding="utf-8")
            self.changed()

    @rule(data=st.data())
    def owner_renames_a_note(self, data: st.DataObject) -> None:
        """As Obsidian renames: the file, then every link to it."""
        files = [*self.notes(), *sorted((self.root / "Designs").glob("*.md"))]
        if not files:
            return
        old = data.draw(st.sampled_from(files))
        self.counter += 1
        match = re.match(r"(D-\d+)", old.stem)
        new = old.with_name(f"{match.group(1) + ' ' if match else ''}Renamed {self.counter}.md")
        old.rename(new)
        for note in [*self.notes(), *sorted((self.root / "Designs").glob("*.md"))]:
            text = note.read_text(encoding="utf-8")
            if f"[[{old.stem}]]" in text:
                note.write_text(text.replace(f"[[{old.stem}]]", f"[[{new.stem}]]"), encoding="utf-8")
        self.changed()

    @rule(data=st.data())
    def owner_deletes_a_note(self, data: st.DataObject) -> None:
        """A design note, or a question nobody answered: nothing the owner typed into a ruling."""
        files = sorted((self.root / "Designs").glob("*.md"))
        files += [p for p in self.notes() if "status: open" in p.read_text(encoding="utf-8")
                  and not any(phrase in p.read_text(encoding="utf-8") for phrase in self.phrases)]
        if files:
            data.draw(st.sampled_from(files)).unlink()
            self.changed()

    # -- what must hold after every step ----------------------------------------------------------

    @invariant()
    def no_text_lost(self) -> None:
        everything = "".join(p.read_text(encoding="utf-8", errors="replace")
                             for p in self.root.rglob("*") if p.is_file() and p.suffix in (".md", ".jsonl"))
        for phrase in self.phrases:
            assert phrase in everything, f"{phrase} was lost"

    @invariant()
    def nothing_current_that_a_current_ruling_supersedes(self) -> None:
        listed = self.listed()
        by_title = {Path(d["path"]).stem.casefold(): d for d in listed}
        by_id = {d["id"]: d for d in listed}
        for ruling in (d for d in listed if d["status"] == "ruled"):
            for link in ruling["supersedes"]:
                target = link.strip().removeprefix("[[").removesuffix("]]").split("|")[0]
                found = by_title.get(target.casefold()) or by_id.get(target.split(" ")[0])
                assert found is None or found["status"] != "ruled", f"{found['id']} is current, yet {ruling['id']} supersedes it"

    @invariant()
    def context_within_budget(self) -> None:
        code, out, err = self.cli("context")
        assert code == 0, err
        assert len(out.encode("utf-8")) <= BUDGET_BYTES and out.count("\n") <= BUDGET_LINES, (len(out), err)

    @precondition(lambda self: self.reconciled)
    @invariant()
    def lint_agrees_with_the_ledger(self) -> None:
        _, out, _ = self.cli("lint")
        errors = [line for line in out.splitlines() if " error: " in line
                  and re.search(r" (VT01[0-5]|VT02\d|VT030) ", line)]
        assert errors == [], errors


def sequences() -> int:
    """One sequence for every 12 soak runs (a sequence is a dozen commands and the checks after each, one
    to two seconds): `make soak-ci` (300 runs) stays under a minute, `make soak` (1000) runs 83 sequences;
    15 without the variable."""
    runs = os.environ.get("VAULT_TOOLS_SOAK_RUNS")
    return max(15, int(runs) // 12) if runs else 15


@pytest.mark.soak
def test_random_operations_keep_the_record_right() -> None:
    run_state_machine_as_test(VaultMachine, settings=settings(
        max_examples=sequences(), stateful_step_count=12, deadline=None, derandomize=False,
        suppress_health_check=list(HealthCheck), print_blob=True))
