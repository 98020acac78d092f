"""A guided tour of vault-tools on a copy of example-vault/.

Every step runs the real `vault-tools` command line in a subprocess, inside a
copy of the example vault, and shows the command, its output and its exit
code. The example's story is dated up to 2026-11-29, so the tour passes
`--today 2026-11-29` wherever ages and due dates are computed, and runs the
command line with its clock set to that day, so what it records is dated then.

    .venv/bin/python scripts/demo.py                 # copies the vault to a new temp folder
    .venv/bin/python scripts/demo.py --into ~/LowTide  # or to a folder of your choice (must not exist)

Exits 0 when every command exited as expected, 1 otherwise.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.text import Text

REPOSITORY = Path(__file__).resolve().parents[1]
EXAMPLE_VAULT = REPOSITORY / "example-vault"
TODAY = "2026-11-29"
COMMAND_TIMEOUT_SECONDS = 60


# The command line with its clock set to the story's today, so a question the tour asks is dated
# within the story, not after the --today every page is built for.
STORY_CLOCK = (f"import datetime as dt, sys; import vault_tools.dates as dates; "
               f"dates.utc_now = lambda: dt.datetime.fromisoformat('{TODAY}T10:00:00+00:00'); "
               "from vault_tools.cli import main; sys.argv[0] = 'vault-tools'; main()")


def vault_tools_command() -> list[str]:
    """The vault-tools command line of this Python, its clock at the story's today (10:00 UTC)."""
    return [sys.executable, "-c", STORY_CLOCK]


@dataclass
class Tour:
    vault: Path
    console: Console
    command: list[str] = field(default_factory=vault_tools_command)
    failures: list[str] = field(default_factory=list)
    steps: int = 0

    def heading(self, title: str, story: str) -> None:
        self.steps += 1
        self.console.print()
        self.console.rule(f"[bold magenta]{self.steps}. {title}")
        self.console.print(Text(story, style="italic"), soft_wrap=True)
        self.console.print()

    def say(self, text: str, style: str = "") -> None:
        self.console.print(Text(text, style=style), soft_wrap=True)

    def run(self, *args: str, expect: int = 0, quiet: bool = False) -> subprocess.CompletedProcess[str]:
        """Run `vault-tools ARGS` in the vault, show it, and check its exit code."""
        shown = "vault-tools " + shlex.join(args)
        if not quiet:
            self.console.print(Text("$ " + shown, style="bold cyan"), soft_wrap=True)
        env = {**os.environ, "COLUMNS": "120", "PYTHONIOENCODING": "utf-8"}
        done = subprocess.run([*self.command, *args], cwd=self.vault, capture_output=True, text=True,
                              encoding="utf-8", env=env, timeout=COMMAND_TIMEOUT_SECONDS)
        if not quiet:
            if done.stdout:
                self.console.print(Text(done.stdout.rstrip("\n")), soft_wrap=True)
            if done.stderr:
                self.console.print(Text(done.stderr.rstrip("\n"), style="yellow"), soft_wrap=True)
        if done.returncode == expect:
            if not quiet:
                self.say(f"exit {done.returncode}, as expected", "green")
        else:
            self.say(f"exit {done.returncode}, expected {expect}", "bold red")
            if quiet:
                self.say(done.stdout + done.stderr, "red")
            self.failures.append(f"{shown}: exit {done.returncode}, expected {expect}")
        return done

    def show_file(self, relative: str) -> str:
        try:
            text = (self.vault / relative).read_text(encoding="utf-8")
        except FileNotFoundError:
            self.say(f"{relative} is missing", "bold red")
            self.failures.append(f"{relative} is missing")
            return ""
        self.console.print(Text(f"┌── {relative}", style="dim"), soft_wrap=True)
        self.console.print(Text(text.rstrip("\n")), soft_wrap=True)
        self.console.print(Text("└──", style="dim"))
        return text

    def expect_true(self, condition: bool, success: str, failure: str) -> None:
        if condition:
            self.say(success, "green")
        else:
            self.say(failure, "bold red")
            self.failures.append(failure)

    def note_path(self, decision_id: str) -> Path:
        """The note of `decision_id`, given whole (`D-0014-k7q2`) or as its counter alone (`D-0014`)."""
        folder = self.vault / "Decisions"
        found = sorted([*folder.glob(f"{decision_id} *.md"), *folder.glob(f"{decision_id}-???? *.md")])
        if not found:
            raise SystemExit(f"demo: no note for {decision_id} in {self.vault}")
        return found[0]

    def config_path(self) -> Path:
        """The vault's config, wherever its layout keeps it (`vault_tools.layout`)."""
        from vault_tools.layout import layout_of

        return layout_of(self.vault).config_path

    def has_command(self, name: str) -> bool:
        done = subprocess.run([*self.command, "--help"], capture_output=True, text=True, encoding="utf-8",
                              env={**os.environ, "COLUMNS": "200"}, timeout=COMMAND_TIMEOUT_SECONDS)
        return re.search(rf"^\s+{re.escape(name)}\s", done.stdout, re.MULTILINE) is not None


# -- the steps --------------------------------------------------------------------------------

def step_pinned_pages(tour: Tour) -> None:
    tour.heading("What the agent reads at the start of a session",
                 "Low Tide is a newsletter and blog run by an agent for its owner, Ines. Two generated pages "
                 "in Pinned/ hold what is open and what is settled. They are rebuilt from the decision notes, "
                 "so first check they are current:")
    tour.run("build", "--check", "--today", TODAY)
    tour.say("\nOpen questions come first, oldest first, with their age and due date:")
    tour.show_file("Pinned/Open questions.md")
    tour.say("\nThe decisions log: every current ruling, grouped by topic, newest first:")
    tour.show_file("Pinned/Decisions log.md")


def step_settled_question_is_refused(tour: Tour) -> None:
    tour.heading("The agent asks a question that was settled",
                 "In July Ines ruled that footers carry the newsletter link (D-0004). In November she banned "
                 "promotion inside articles (D-0014), which replaced it. A new session of the agent, with no "
                 "memory of either, asks about footers under a slightly different topic:")
    done = tour.run("ask", "What should article footers contain?", "--topic", "article-footers", expect=1)
    tour.expect_true(re.search(r"\bD-0014(-[0-9a-z]{4})? ruled 2026-11-05", done.stderr) is not None,
                     "Refused, with the current ruling and its date: the superseded D-0004 is not offered.",
                     "the refusal does not name D-0014 and its date")


def step_asking_again_with_a_reason(tour: Tour) -> None:
    tour.heading("Asking again, saying what changed",
                 "A settled topic may be asked about again when something changed. The reason is kept on the "
                 "question and shown to the owner:")
    done = tour.run("ask", "Can article footers announce the paid tier once it launches?",
                    "--topic", "article-footer", "--reask-reason",
                    "A paid tier is under discussion (D-0013) and would need a place to be announced.")
    match = re.search(r"\b(D-\d+(?:-[0-9a-z]{4})?) asked", done.stdout)
    if match:
        tour.run("show", match.group(1))


def step_lookup_shows_the_chain(tour: Tour) -> None:
    tour.heading("Looking a topic up",
                 "Do private replies to readers need Ines's sign-off? She said yes in June, no in August, and "
                 "yes again in September. `lookup` gives the current answer with the history and the reasons:")
    tour.run("lookup", "reader-replies")


def step_owner_rules(tour: Tour) -> None:
    tour.heading("The owner answers a question",
                 "The guest-essay question (D-0016) is due tomorrow. Ines answers in chat, and the agent "
                 "records her ruling. It is sealed at once: from now on the note is never edited in place.")
    tour.run("rule", "D-0016",
             "--summary", "The December issue runs the guest essay on slow journalism by Priya Natarajan.",
             "--source", "chat with owner", "--ruled-at", f"{TODAY}T09:40:00")
    tour.say("\nThe pinned pages are rebuilt from the notes:")
    tour.run("build", "--today", TODAY)


def step_context_for_the_agent(tour: Tour) -> None:
    tour.heading("What the next session of the agent sees",
                 "`vault-tools context --budget claude-hook` prints what a Claude Code session-start hook "
                 "loads, never more than 9,500 characters (add --json for a machine-readable copy). D-0016 "
                 "has moved from the open questions to the rulings, and the question asked again in step 3 "
                 "is waiting for Ines:")
    tour.run("context", "--budget", "claude-hook", "--today", TODAY)


def step_watcher_restores_sealed_edit(tour: Tour) -> None:
    tour.heading("The watcher restores an in-place edit of a sealed note",
                 "The watcher runs in the background while Ines works in Obsidian. She opens the footer ruling "
                 "(D-0014) and types an exception straight into it; Obsidian saves as she types. A sealed "
                 "ruling is never edited in place: once she stops typing, the watcher puts the sealed text "
                 "back and keeps what she typed as a proposed revision, pinned with the open questions.")
    config = tour.config_path()
    config.write_text(config.read_text(encoding="utf-8") + "debounce_ms: 700  # the demo's: 2000 by default\n",
                      encoding="utf-8")
    tour.say("$ vault-tools watch &", "bold cyan")
    watcher = subprocess.Popen([*tour.command, "watch"], cwd=tour.vault, stderr=subprocess.PIPE, text=True,
                               encoding="utf-8", env={**os.environ, "PYTHONIOENCODING": "utf-8"})
    log: list[str] = []
    reader = threading.Thread(target=lambda: log.extend(iter(watcher.stderr.readline, "")), daemon=True)  # type: ignore[union-attr]
    reader.start()
    path = tour.note_path("D-0014")
    sealed = path.read_bytes()
    exception = "Exception: the December issue may mention the paid tier in its footer."
    try:
        if not _wait_for(lambda: any(line.startswith("watching") for line in log), 20):
            tour.failures.append("the watcher did not start")
        typed = sealed.rstrip(b"\n") + b"\n\n"
        for word in exception.split(" "):  # Obsidian saves in place every so often while she types
            typed += word.encode("utf-8") + b" "
            path.write_bytes(typed)
            time.sleep(0.05)
        path.write_bytes(typed.rstrip(b" ") + b"\n")
        tour.say(f"Typed at the end of {path.relative_to(tour.vault).as_posix()}, saved as she typed:\n  {exception}")
        restored = _wait_for(lambda: path.read_bytes() == sealed, 20)
        _wait_for(lambda: any("rebuilt" in line for line in log), 5)
    finally:
        watcher.terminate()
        code = watcher.wait(timeout=20)
        reader.join(timeout=5)
    for line in log:
        tour.say(line.rstrip("\n"), "yellow")
    tour.expect_true(code == 0, "The watcher stopped cleanly (exit 0).", f"the watcher exited {code}")
    tour.expect_true(restored, "D-0014 holds its sealed ruling again, byte for byte.",
                     "D-0014 was not restored to its sealed text")
    tour.run("list", "--status", "open")
    listed = tour.run("list", "--status", "open", "--json", quiet=True)
    revisions = [item["id"] for item in json.loads(listed.stdout or "[]")
                 if any(link.startswith("[[D-0014") for link in item["supersedes"])]
    tour.expect_true(len(revisions) == 1,
                     f"What Ines typed is kept as {', '.join(revisions)}, an open revision of D-0014: one note "
                     "for the whole burst of saves.", "no single revision note was made from the edit")


def _wait_for(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


STEPS = (
    step_pinned_pages,
    step_settled_question_is_refused,
    step_asking_again_with_a_reason,
    step_lookup_shows_the_chain,
    step_owner_rules,
    step_context_for_the_agent,
    step_watcher_restores_sealed_edit,
)


def copy_example_vault(into: Path | None) -> Path:
    target = into.expanduser().resolve() if into else Path(tempfile.mkdtemp(prefix="vault-tools-demo-")) / "Low Tide"
    if target.exists():
        raise SystemExit(f"demo: {target} already exists; pass a folder that does not exist yet")
    shutil.copytree(EXAMPLE_VAULT, target, ignore=shutil.ignore_patterns("cache", "*.lock"))
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A guided tour of vault-tools on a copy of example-vault/.")
    parser.add_argument("--into", type=Path, help="where to put the copy of the vault (must not exist)")
    args = parser.parse_args(argv)
    console = Console(highlight=False)
    if not EXAMPLE_VAULT.is_dir():
        console.print(f"[red]demo: {EXAMPLE_VAULT} is missing")
        return 2
    started = time.monotonic()
    vault = copy_example_vault(args.into)
    console.rule("[bold magenta]vault-tools demo")
    console.print(Text(f"A copy of example-vault/ is in {vault}\nThe story's today is {TODAY}: commands that "
                       f"compute ages and due dates get --today {TODAY}."), soft_wrap=True)
    tour = Tour(vault, console)
    for step in STEPS:
        step(tour)
    console.print()
    console.rule("[bold magenta]Done")
    elapsed = time.monotonic() - started
    if tour.failures:
        console.print(Text(f"{len(tour.failures)} step(s) did not go as expected:", style="bold red"))
        for failure in tour.failures:
            console.print(Text(f"  - {failure}", style="red"), soft_wrap=True)
    else:
        console.print(Text(f"Every command exited as expected ({elapsed:.1f} s).", style="green"))
    console.print(Text.assemble("The vault is at ", (str(vault), "bold"),
                                ". Open it in Obsidian (Open folder as vault) to see the notes, the pinned pages "
                                "and the supersession diagrams in Pinned/Decisions archive."), soft_wrap=True)
    return 1 if tour.failures else 0


if __name__ == "__main__":
    sys.exit(main())
