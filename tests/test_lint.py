"""Lint rules, each run on real temp vaults described as data in tests/lint/VT0xx.md.

A fixture file holds titled cases (`## title`). Each case is a sequence of
fenced blocks applied in order to a fresh vault:

- ```` ```file PATH ````: write the file (again later = an edit);
- ```` ```edit PATH ````: replace the `-` lines with the `+` lines;
- ```` ```run ````: one command a line: `vault-tools ARGS` (in-process, must succeed), `git commit`,
  `age PATH SECONDS` (move the file's mtime into the past), `rm PATH`, `mv FROM TO`, `crlf PATH`,
  `replace PATH OLD NEW` (first occurrence), `truncate PATH BYTES`, `delete-line PATH N`,
  `forge-line PATH N FIELD=VALUE` (the ledger line rewritten with a valid checksum);
- ```` ```expect [LINT ARGS] ````: the `vault-tools lint` output lines of this file's rule;
  an empty block is a clean case, and a line ending in `...` matches any line it starts.
"""
from __future__ import annotations

import json
import os
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from vault_tools import lint
from vault_tools.cli import run
from vault_tools.errors import UsageError
from vault_tools.ledger_lines import event_line, parse_line
from vault_tools.model import TOPIC_PATTERN
from vault_tools.vault import Vault

from .git_repo import commit_all
from .helpers import CORPORA, config_file, config_shown, decision, make_vault, note_path, snapshot, write

FIXTURES = Path(__file__).parent / "lint"
RULES_PAGE = Path(__file__).resolve().parents[1] / "docs" / "lint-rules.md"


@dataclass
class Case:
    code: str
    title: str
    line: int
    steps: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, argument, content)
    lint_args: list[str] = field(default_factory=list)
    expected: list[str] | None = None

    @property
    def id(self) -> str:
        return f"{self.code}: {self.title}"


def read_cases(path: Path) -> list[Case]:
    tokens = MarkdownIt("commonmark").parse(path.read_text(encoding="utf-8"))
    cases: list[Case] = []
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and token.tag == "h2":
            cases.append(Case(path.stem, tokens[index + 1].content, token.map[0] + 1))
        elif token.type == "fence" and cases:
            kind, _, argument = token.info.strip().partition(" ")
            if kind == "expect":
                cases[-1].lint_args = shlex.split(argument)
                cases[-1].expected = [line for line in token.content.splitlines() if line.strip()]
            else:
                cases[-1].steps.append((kind, argument.strip(), token.content))
    return cases


ALL_CASES = [case for path in sorted(FIXTURES.glob("VT*.md")) for case in read_cases(path)]


def in_process(root: Path, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = run([*args, "--vault", str(root)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def apply_step(root: Path, kind: str, argument: str, content: str, capsys: pytest.CaptureFixture[str]) -> None:
    if kind == "file":
        write(root / argument, content)
    elif kind == "edit":
        path = root / argument
        lines = path.read_text(encoding="utf-8").split("\n")
        old = [line[2:] for line in content.splitlines() if line.startswith("-")]
        new = [line[2:] for line in content.splitlines() if line.startswith("+")]
        at = next((i for i in range(len(lines)) if lines[i:i + len(old)] == old), None)
        assert at is not None, f"edit: lines {old!r} not found in {argument}"
        lines[at:at + len(old)] = new
        path.write_text("\n".join(lines), encoding="utf-8")
    elif kind == "run":
        for command in content.splitlines():
            if command.strip():
                run_command(root, shlex.split(command), capsys)
    else:
        raise AssertionError(f"unknown step {kind!r}")


def run_command(root: Path, words: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    name, args = words[0], words[1:]
    if name == "vault-tools":
        code, _out, err = in_process(root, *args, capsys=capsys)
        assert code == 0, f"vault-tools {' '.join(args)} exited {code}: {err}"
    elif words == ["git", "commit"]:
        commit_all(root)
    elif name == "age":
        then = time.time() - float(args[1])
        os.utime(root / args[0], (then, then))
    elif name == "rm":
        (root / args[0]).unlink()
    elif name == "mv":
        (root / args[1]).parent.mkdir(parents=True, exist_ok=True)
        (root / args[0]).rename(root / args[1])
    elif name == "crlf":
        path = root / args[0]
        path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    elif name == "replace":
        path = root / args[0]
        text = path.read_text(encoding="utf-8")
        assert args[1] in text, f"replace: {args[1]!r} not found in {args[0]}"
        path.write_text(text.replace(args[1], args[2], 1), encoding="utf-8")
    elif name == "truncate":
        path = root / args[0]
        path.write_bytes(path.read_bytes()[:-int(args[1])])
    elif name == "append-event":  # a line another clone wrote, as git's union merge brings it in
        path = root / args[0]
        lines = path.read_text(encoding="utf-8").splitlines()
        last = [event for event in (parse_line(line, n, args[0]) for n, line in enumerate(lines, 1))
                if event.id == args[1]][-1]
        fields = dict(pair.partition("=")[::2] for pair in args[3:])
        event = last.__class__(**{**last.__dict__, "event": args[2], "text": None, "hash": None, **fields})
        with path.open("a", encoding="utf-8") as handle:
            handle.write(event_line(event))
    elif name in ("delete-line", "forge-line"):
        path = root / args[0]
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        number = int(args[1])
        if name == "delete-line":
            del lines[number - 1]
        else:
            key, _, value = args[2].partition("=")
            event = parse_line(lines[number - 1].rstrip("\n"), number, args[0])
            lines[number - 1] = event_line(event.__class__(**{**event.__dict__, key: value}))
        path.write_text("".join(lines), encoding="utf-8")
    else:
        raise AssertionError(f"unknown command {words!r}")


@pytest.mark.parametrize("case", ALL_CASES, ids=[case.id for case in ALL_CASES])
def test_rule_fixture(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert case.expected is not None, f"{case.id} has no expect block"
    root = make_vault(tmp_path / "vault", shared=False)  # the fixtures name ids and files untagged, as written
    for kind, argument, content in case.steps:
        apply_step(root, kind, argument, content, capsys)
    code, out, err = in_process(root, "lint", *case.lint_args, capsys=capsys)
    assert code in (0, 1), err
    found = [line for line in out.splitlines() if f": {case.code} " in line]
    # An expected line ending in "..." leaves the rest to the YAML parser's own wording.
    shown = [want if want.endswith("...") and got.startswith(want[:-3]) else got
             for got, want in zip(found, case.expected, strict=False)] + found[len(case.expected):]
    assert shown == case.expected


# -- the rules themselves -------------------------------------------------------------------

def test_every_rule_has_a_fixture_with_a_triggering_and_a_clean_case() -> None:
    for code in lint.RULES:
        cases = [case for case in ALL_CASES if case.code == code]
        assert any(case.expected for case in cases), f"{code}: no case triggers it (tests/lint/{code}.md)"
        assert any(case.expected == [] for case in cases), f"{code}: no clean case (tests/lint/{code}.md)"
    assert {case.code for case in ALL_CASES} <= set(lint.RULES)


def test_every_rule_is_documented_with_a_stable_code_and_kebab_case_name() -> None:
    names = set()
    for code, rule in lint.RULES.items():
        assert lint.CODE_PATTERN.match(code) and rule.code == code
        assert rule.name not in names and TOPIC_PATTERN.match(rule.name), rule.name
        names.add(rule.name)
        assert rule.severity in lint.SEVERITIES
        for heading in lint.DOC_HEADINGS:
            assert rule.section(heading), f"{code} has no '## {heading}' in its doc"


def test_documented_rule_table_is_generated_from_the_rules() -> None:
    text = RULES_PAGE.read_text(encoding="utf-8")
    start, end = "<!-- lint-rules:start -->\n", "<!-- lint-rules:end -->"
    assert start in text and end in text, "docs/lint-rules.md lacks the lint-rules markers"
    section = text[text.index(start) + len(start):text.index(end)]
    assert section.strip("\n") == lint.rules_table().strip("\n"), (
        "docs/lint-rules.md's rule table is out of date; paste the output of "
        "`python -c 'from vault_tools.lint import rules_table; print(rules_table())'` between the markers")


# -- the command line -----------------------------------------------------------------------

FOOTER = "Every article footer carries the newsletter link."


@pytest.fixture
def sealed_vault(vault: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A vault with one sealed ruling and its pages built: lint finds nothing."""
    ruled = ["rule", "--topic", "article-footer", "--summary", FOOTER, "--source", "chat", "--vault", str(vault)]
    assert run(ruled) == 0
    assert run(["build", "--vault", str(vault)]) == 0
    capsys.readouterr()
    return vault


def footer_note(vault: Path) -> Path:
    return note_path(vault, "D-0001")


def test_clean_vault_exits_0_and_says_so(cli, sealed_vault) -> None:
    result = cli("lint")
    assert (result.code, result.out, result.err.strip()) == (0, "", "No problems found.")


def test_errors_exit_1_warnings_alone_exit_0_unless_strict(cli, vault) -> None:
    decision(vault, 1, "open", summary="Should footers carry the newsletter link?", asked_at="2026-01-05T09:00:00")
    assert cli("build", "--today", "2026-08-01").code == 0
    warned = cli("lint", "--today", "2026-08-01")
    assert warned.code == 0 and ": VT040 warning: D-0001 has been open for 208 days" in warned.out
    assert warned.err.strip() == "Found 0 errors and 1 warning."
    assert cli("lint", "--today", "2026-08-01", "--strict").code == 1
    decision(vault, 2, "open", summary="Too short?")
    failed = cli("lint", "--today", "2026-08-01")
    assert failed.code == 1 and ": VT005 error: summary must be at least 20 characters" in failed.out


def test_usage_and_config_problems_exit_2(cli, vault, tmp_path) -> None:
    assert cli("lint", "--format", "xml").code == 2
    outside = cli("lint", str(tmp_path))
    assert outside.code == 2 and "is not inside the vault" in outside.err
    assert cli("lint", str(vault / "No such note.md")).code == 2
    config = config_file(vault)
    config.write_text(config.read_text() + "lint:\n  VT999: off\n")
    result = cli("lint")
    assert result.code == 2 and "'VT999' names no rule" in result.err and config_shown(vault) in result.err


def test_config_changes_a_rules_severity_or_turns_it_off(cli, vault) -> None:
    decision(vault, 1, summary="Every article footer carries the newsletter link.")
    age = time.time() - 3600
    os.utime(footer_note(vault), (age, age))
    cli("build")
    assert ": VT020 error:" in cli("lint").out
    config = config_file(vault)
    original = config.read_text()
    config.write_text(original + "lint:\n  VT020: warning\n  VT043: off\n")
    softened = cli("lint")
    assert softened.code == 0 and ": VT020 warning:" in softened.out and "VT043" not in softened.out
    config.write_text(original + "lint:\n  VT043: error\n")
    assert ": VT043 error: D-0001 is a ruling with no source" in cli("lint").out


def test_a_note_opts_out_of_a_rule_and_the_summary_counts_it(cli, sealed_vault) -> None:
    decision(sealed_vault, 2, topics=("reply-policy",), summary="Private replies need the owner's sign-off.",
             **{"vault-tools-ignore": "[VT043]", "source": "chat"})
    decision(sealed_vault, 3, topics=("pricing",), summary="Prices are shown with tax included.",
             **{"vault-tools-ignore": "[VT043]"})
    cli("build")
    result = cli("lint")
    assert "VT043" not in result.out
    assert "(1 finding ignored by vault-tools-ignore)" in result.err


def test_paths_restrict_what_is_reported_not_what_is_checked(cli, vault) -> None:
    decision(vault, 1, "superseded", summary="Footers carry the newsletter link.", superseded_by='"[[D-0002 Note]]"',
             reason="Promotion was banned inside articles.")
    decision(vault, 2, summary="Footers carry only the author bio.", title="D-0002 Note")
    whole = cli("lint")
    assert "D-0001 Note.md:7: VT013 error: superseded by D-0002, but D-0002 does not list it in supersedes" in whole.out
    assert "Pinned/" in whole.out
    only = cli("lint", str(vault / "Decisions" / "D-0001 Note.md"))
    assert only.out and all(line.startswith("Decisions/D-0001 Note.md:") for line in only.out.splitlines())
    assert "VT013" in only.out  # found by looking at D-0002, reported on the path asked for
    folder = cli("lint", str(vault / "Decisions"))
    assert "Pinned/" not in folder.out and "D-0002 Note.md" in folder.out


def test_json_and_github_formats(cli, sealed_vault, monkeypatch) -> None:
    note = footer_note(sealed_vault)
    note.write_text(note.read_text().replace(FOOTER, "Every article footer carries only the author bio."))
    data = json.loads(cli("lint", "--json").out)
    assert data["errors"] == 2 and data["warnings"] == 0 and data["ignored"] == 0
    first = data["diagnostics"][0]
    assert (first["code"], first["name"], first["severity"]) == ("VT021", "sealed-note-edited", "error")
    assert first["line"] == 7
    assert first["path"] == note.relative_to(sealed_vault).as_posix()
    assert json.loads(cli("lint", "--format", "json").out) == data

    monkeypatch.chdir(sealed_vault.parent)
    github = cli("lint", "--format", "github")
    assert github.code == 1
    expected_file = f"vault/{note.relative_to(sealed_vault).as_posix()}"
    assert github.out.splitlines()[0].startswith(
        f"::error file={expected_file},line=7,title=VT021 sealed-note-edited::D-0001 was edited after it was sealed")


def test_explain_prints_the_rules_doc(cli) -> None:
    result = cli("lint", "--explain", "vt021")
    assert result.code == 0
    assert result.out.startswith("# VT021 sealed-note-edited\n\nDefault severity: error.")
    for heading in lint.DOC_HEADINGS:
        assert f"## {heading}\n" in result.out
    assert cli("lint", "--explain", "VT999").code == 2


def test_fix_seals_settled_rulings_rebuilds_pages_and_keeps_the_owners_text(cli, vault) -> None:
    old = decision(vault, 1, summary="Every article footer carries the newsletter link.", source="chat",
                   title="D-0001 Footer")
    fresh = decision(vault, 2, topics=("reply-policy",), summary="Private replies need the owner's sign-off.",
                     source="chat", title="D-0002 Replies")
    age = time.time() - 3600
    os.utime(old, (age, age))
    old_text, fresh_text = old.read_text(), fresh.read_text()
    before = cli("lint")
    assert ": VT020 error:" in before.out and ": VT030 error:" in before.out
    fixed = cli("lint", "--fix")
    assert fixed.code == 0, fixed.out
    assert "sealed D-0001" in fixed.err and "rebuilt Pinned/Decisions log.md" in fixed.err
    assert old.read_text() == old_text and fresh.read_text() == fresh_text
    assert ": VT020 warning: D-0002 is ruled but not sealed yet" in fixed.out  # inside its sealing delay
    assert json.loads(cli("show", "D-0001", "--json").out)["sealed"] is True
    assert json.loads(cli("show", "D-0002", "--json").out)["sealed"] is False


def test_fix_reports_what_it_cannot_seal(cli, vault) -> None:
    decision(vault, 1, supersedes='["[[D-0009 Missing]]"]', reason="Replaces a ruling that never existed.")
    age = time.time() - 3600
    os.utime(next((vault / "Decisions").iterdir()), (age, age))
    result = cli("lint", "--fix")
    assert result.code == 1
    assert "could not seal D-0001" in result.err and "no decision note is called that" in result.err
    assert ": VT010 error:" in result.out and ": VT020 error:" in result.out


# -- the entry point the command line calls ----------------------------------------------------

def unsealed_old_ruling(vault: Path) -> Path:
    note = decision(vault, 1, summary="Every article footer carries the newsletter link.", source="chat")
    age = time.time() - 3600
    os.utime(note, (age, age))
    return note


def test_run_lint_refuses_a_path_outside_the_vault_before_fixing_anything(vault: Path, tmp_path: Path) -> None:
    unsealed_old_ruling(vault)
    before = snapshot(vault)
    with pytest.raises(UsageError, match="is not inside the vault"):
        lint.run_lint(Vault(vault), paths=[tmp_path], fix=True)
    assert snapshot(vault) == before


def test_run_lint_fixes_first_and_shows_github_files_from_the_folder_given(vault: Path) -> None:
    unsealed_old_ruling(vault)
    fixed = lint.run_lint(Vault(vault), fix=True, output_format="github", cwd=vault.parent)
    assert "sealed D-0001" in fixed.fix_lines and not fixed.failed
    assert fixed.as_json()["fixed"] == fixed.fix_lines
    assert fixed.lines == [] and fixed.summary() == "No problems found."
    note = note_path(vault, "D-0001")
    note.write_text(note.read_text().replace("newsletter link", "author bio"))
    edited = lint.run_lint(Vault(vault), output_format="github", cwd=vault.parent)
    assert edited.failed and edited.fix_lines == []
    assert edited.lines[0].startswith("::error file=vault/Decisions/D-0001 Note.md,line=6,title=VT021 ")


# -- real material --------------------------------------------------------------------------

@pytest.mark.skipif(not CORPORA.is_dir(), reason=f"corpora not found at {CORPORA}")
@pytest.mark.parametrize("name", sorted(p.name for p in CORPORA.iterdir() if p.is_dir()) if CORPORA.is_dir() else [])
def test_every_corpus_lints_without_errors_or_writes(name, capsys) -> None:
    root = CORPORA / name
    before = {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}
    code = run(["lint", "--json", "--vault", str(root)])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["errors"] == 0, report["diagnostics"][:5]
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()} == before
