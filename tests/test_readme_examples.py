"""Every shell example in README.md and docs/*.md runs, and exits as the page says.

Each ```sh block runs, line by line, in its own fresh copy of example-vault/ (the
current folder is the copy, so vault discovery finds it). A line exits 0 unless it
ends with a comment `# exit N: why`. Lines that must not run in a test are skipped
by one of the rules in SKIPPED, each with its reason; any other line that is not a
`vault-tools` command fails the test, so nothing is skipped silently.

A ```text block right after `<!-- output: ARGS -->` is the exact output of
`vault-tools ARGS` in a fresh copy of the example vault.

The examples are chosen so that their exit codes do not depend on the date (the
example vault's story ends on 2026-11-29): a command whose result does passes
`--today 2026-11-29`, or comes after `vault-tools build` or `lint --fix`. To keep
it so, every block runs twice: today, and with the commands' clock set to
ANOTHER_DAY.
"""
from __future__ import annotations

import datetime as dt
import inspect
import logging
import re
import shlex
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from vault_tools.cli import run
from vault_tools.services.workspace import Workspace

from .helpers import REPOSITORY, page_name

README = REPOSITORY / "README.md"
# Every page a reader may copy an example from.
PAGES = [README, *sorted((REPOSITORY / "docs").glob("*.md"))]
EXAMPLE_VAULT = REPOSITORY / "example-vault"
MAKEFILE = REPOSITORY / "Makefile"

# Lines that are not run, and why. Each rule must match at least one line of the pages.
SKIPPED: tuple[tuple[str, str], ...] = (
    (r"make (demo|test)\b", "runs the whole demo or test suite (the demo has its own test, tests/test_demo.py)"),
    (r"pipx? install\b", "installs software"),
    (r"cd\b", "the test runs each block inside its own fresh copy of example-vault/"),
    (r"vault-tools watch\b(?!.*--once)", "runs until it is stopped"),
    (r"(systemctl|journalctl|launchctl)\b", "changes or reads the machine's services"),
    (r"vault-tools service (install|remove)\b", "changes the machine's services"),
    (r"pre-commit\b", "needs the vault's git repository and a package index"),
)
EXIT_COMMENT = re.compile(r"\s#\s*exit\s+(\d+)\b")
OUTPUT_COMMENT = re.compile(r"^<!-- output: (.+) -->$")


@dataclass(frozen=True)
class Line:
    page: str  # README.md, docs/agents.md, ...
    number: int  # in that page
    text: str  # continuation lines joined, comment kept
    argv: tuple[str, ...]  # the command, without the comment
    expected: int

    @property
    def skipped_by(self) -> str | None:
        command = shlex.join(self.argv)
        for pattern, _ in SKIPPED:
            if re.match(pattern, command):
                return pattern
        return None

    @property
    def where(self) -> str:
        return f"{self.page} line {self.number}"


@dataclass(frozen=True)
class Block:
    page: str
    number: int
    lines: tuple[Line, ...]


def _parse_line(page: str, number: int, text: str) -> Line:
    argv = tuple(shlex.split(text, comments=True))
    expected = 0
    match = EXIT_COMMENT.search(text)
    # a `# exit N` marker counts only where it is a comment, not inside a quoted argument
    if match and tuple(shlex.split(text[:match.start()])) == argv:
        expected = int(match.group(1))
    return Line(page, number, text, argv, expected)


def shell_blocks(text: str, page: str = "README.md") -> list[Block]:
    blocks = []
    for token in MarkdownIt("commonmark").parse(text):
        if token.type != "fence" or token.info.strip() not in ("sh", "shell", "bash", "console"):
            continue
        assert token.info.strip() == "sh", f"{page} line {token.map and token.map[0] + 1}: use ```sh for shell"
        first = token.map[0] + 2 if token.map else 0
        lines: list[Line] = []
        pending, start = "", 0
        for offset, raw in enumerate(token.content.splitlines()):
            if not pending:
                start = first + offset
            if raw.rstrip().endswith("\\"):
                pending += raw.rstrip()[:-1] + " "
                continue
            joined = (pending + raw).strip()
            pending = ""
            if joined and not joined.startswith("#"):
                lines.append(_parse_line(page, start, joined))
        assert not pending, f"{page} line {start}: a line continues past the end of its block"
        blocks.append(Block(page, first - 1, tuple(lines)))
    return blocks


BLOCKS = [block for path in PAGES for block in shell_blocks(path.read_text(encoding="utf-8"), page_name(path))]
ALL_LINES = [line for block in BLOCKS for line in block.lines]


@pytest.fixture
def example_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    copy = tmp_path / "Low Tide"
    shutil.copytree(EXAMPLE_VAULT, copy, ignore=shutil.ignore_patterns("cache", "*.lock"))
    monkeypatch.chdir(copy)
    yield copy
    logger = logging.getLogger("vault_tools.watch")  # `watch --once` logs to a file in the copy
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()


def test_the_pages_have_shell_examples() -> None:
    assert len(BLOCKS) >= 5
    runnable = [line for line in ALL_LINES if not line.skipped_by]
    assert len(runnable) >= 20
    assert any(line.expected == 1 for line in runnable), "no example shows a refusal (`# exit 1: ...`)"


def test_examples_are_collected_from_every_page_that_has_them() -> None:
    """A page under docs/ is not left out: its ```sh blocks are run like the README's."""
    pages_with_shell = {page_name(path) for path in PAGES if "\n```sh\n" in "\n" + path.read_text(encoding="utf-8")}
    assert len(pages_with_shell) > 1, "no page under docs/ has a shell example: were the pages found?"
    assert {block.page for block in BLOCKS} == pages_with_shell


def test_every_code_block_names_its_language() -> None:
    """An unlabelled block could hide a shell example from these tests."""
    unlabelled = [f"{page_name(path)} line {token.map[0] + 1 if token.map else '?'}" for path in PAGES
                  for token in MarkdownIt("commonmark").parse(path.read_text(encoding="utf-8"))
                  if token.type == "fence" and not token.info.strip()]
    assert not unlabelled, f"code blocks without a language (```sh, ```text, ...): {unlabelled}"


def test_every_line_is_run_or_skipped_by_a_listed_rule() -> None:
    unknown = [f"{line.where}: {line.text}" for line in ALL_LINES
               if not line.skipped_by and line.argv[:1] != ("vault-tools",)]
    assert not unknown, ("the pages have shell lines the test neither runs nor skips; make them `vault-tools` "
                         f"commands or add a rule with its reason to SKIPPED: {unknown}")


def test_every_skip_rule_is_used() -> None:
    used = {line.skipped_by for line in ALL_LINES}
    unused = [pattern for pattern, _ in SKIPPED if pattern not in used]
    assert not unused, f"rules in SKIPPED that match no line of the pages (remove them): {unused}"


def test_make_targets_in_the_examples_exist() -> None:
    targets = set(re.findall(r"^([\w-]+):", MAKEFILE.read_text(encoding="utf-8"), re.MULTILINE))
    for line in ALL_LINES:
        if line.argv[:1] == ("make",):
            assert set(line.argv[1:]) <= targets, f"{line.where}: no such make target: {line.text}"


ANOTHER_DAY = dt.datetime(2027, 6, 15, 10, 0, tzinfo=dt.UTC)


def run_on_another_day(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the commands believe it is ANOTHER_DAY: an example must not pass only on the day it was written."""
    clock = inspect.signature(Workspace.__init__).parameters.get("now")
    if clock is None or clock.default is inspect.Parameter.empty:
        pytest.skip("Workspace no longer takes a clock; update run_on_another_day in this test")
    monkeypatch.setattr(Workspace.__init__, "__defaults__", (lambda: ANOTHER_DAY,))


@pytest.mark.parametrize("day", ["today", "another day"])
@pytest.mark.parametrize("block", [block for block in BLOCKS if any(not line.skipped_by for line in block.lines)],
                         ids=lambda block: f"{block.page} line {block.number}")
def test_shell_block_runs(block: Block, day: str, example_copy: Path, capsys: pytest.CaptureFixture[str],
                          monkeypatch: pytest.MonkeyPatch) -> None:
    if day == "another day":
        run_on_another_day(monkeypatch)
    for line in block.lines:
        if line.skipped_by:
            continue
        assert line.argv[:1] == ("vault-tools",), (
            f"{line.where}: not run, it is not a `vault-tools` command: {line.text}")
        capsys.readouterr()
        code = run(list(line.argv[1:]))
        captured = capsys.readouterr()
        assert code == line.expected, (
            f"{line.where}: exit {code} ({day}), the page says {line.expected}\n$ {line.text}\n"
            f"{captured.out[-2000:]}{captured.err[-2000:]}")


def output_examples() -> list[tuple[str, str, str]]:
    """(page and line, vault-tools arguments, expected output) of each `<!-- output: ... -->` example."""
    found = []
    for path in PAGES:
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for token in MarkdownIt("commonmark").parse(text):
            if token.type != "fence" or not token.map:
                continue
            before = next((lines[i] for i in range(token.map[0] - 1, -1, -1) if lines[i].strip()), "")
            match = OUTPUT_COMMENT.match(before.strip())
            if match:
                found.append((f"{page_name(path)} line {token.map[0] + 1}", match.group(1), token.content))
    return found


def test_the_pages_have_output_examples() -> None:
    assert output_examples()


@pytest.mark.parametrize("where, args, expected", output_examples(), ids=lambda value: str(value)[:50])
def test_output_example_is_what_the_command_prints(where: str, args: str, expected: str, example_copy: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    run(shlex.split(args))
    captured = capsys.readouterr()
    printed = "\n".join(line.rstrip() for line in (captured.out + captured.err).splitlines())
    assert printed == expected.rstrip("\n"), f"{where}: `vault-tools {args}` now prints:\n{printed}"
