"""The rule registry guards itself: one code per rule, every code like VT001, every rule documented beside
itself, and every problem found while reading a note carries the code of a rule that reports it."""
from __future__ import annotations

import ast
import json
from collections import Counter
from pathlib import Path

import pytest

import vault_tools
from vault_tools import lint
from vault_tools.lint import registry
from vault_tools.services.workspace import blocking_problems
from vault_tools.vault import Vault

from .helpers import make_vault, write

PACKAGE = Path(vault_tools.__file__).parent
LINT_PACKAGE = PACKAGE / "lint"
# The modules that read notes and may report what is wrong with one as a Problem.
PROBLEM_MAKERS = ("model.py", "notes.py", "vault.py")


def registered_in_source() -> list[tuple[str, str]]:
    """(code, where) for every `@rule("VT...", ...)` written in the lint package, read from the source itself."""
    found = []
    for module in sorted(LINT_PACKAGE.glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef):
                continue
            for decorator in node.decorator_list:
                if (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Name)
                        and decorator.func.id == "rule" and decorator.args
                        and isinstance(decorator.args[0], ast.Constant)):
                    found.append((decorator.args[0].value, f"{module.name}:{node.name}"))
    return found


# -- the table --------------------------------------------------------------------------------

def test_no_two_rules_share_a_code_and_every_written_rule_is_in_the_table() -> None:
    written = registered_in_source()
    shared = {code: [where for c, where in written if c == code]
              for code, count in Counter(code for code, _ in written).items() if count > 1}
    assert not shared, f"codes used by more than one rule: {shared}"
    assert {code for code, _ in written} == set(lint.RULES), "a rule is written but not registered, or the reverse"


def test_no_two_rules_share_a_name() -> None:
    names = Counter(rule.name for rule in lint.RULES.values())
    assert [name for name, count in names.items() if count > 1] == []


def test_registering_a_taken_code_again_is_refused_and_keeps_the_first_rule() -> None:
    first = lint.RULES["VT001"]

    def another_check(facts: lint.Facts) -> list[lint.Finding]:
        return []

    with pytest.raises(ValueError, match="VT001 is registered twice"):
        registry.rule("VT001", "another-rule", lint.ERROR)(another_check)
    assert lint.RULES["VT001"] is first


@pytest.mark.parametrize("code", ["VT1", "vt001", "VT0001", "XX001", "VT00a", ""])
def test_a_code_not_like_vt_and_three_digits_is_refused(code: str) -> None:
    before = dict(lint.RULES)
    with pytest.raises(ValueError, match="is not like VT001"):
        registry.rule(code, "badly-coded-rule", lint.ERROR)
    assert before == lint.RULES


def test_rules_are_listed_in_code_order() -> None:
    # The README table and `lint` run the rules in table order; new families must keep it sorted.
    assert list(lint.RULES) == sorted(lint.RULES)


@pytest.mark.parametrize("code", list(lint.RULES))
def test_each_rule_has_a_stable_code_and_its_doc_beside_it(code: str) -> None:
    rule = lint.RULES[code]
    assert lint.CODE_PATTERN.match(code) and rule.code == code
    assert rule.severity in lint.SEVERITIES
    missing = [heading for heading in lint.DOC_HEADINGS if not rule.section(heading)]
    assert not missing, f"{code} {rule.name} lacks doc sections: {missing}"
    module = rule.check.__module__
    assert module.startswith("vault_tools.lint.") and module not in (
        "vault_tools.lint.registry", "vault_tools.lint.facts", "vault_tools.lint.runner"), (
        f"{code} is not kept in a family module: {module}")


# -- problems carry their rule's code ---------------------------------------------------------------

def problem_calls(source: str) -> list[ast.Call]:
    """Each `Problem(...)`, `problem(...)` and `problems.add(...)` call (the last two take the code third)."""
    return [node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Name) and node.func.id in ("problem", "Problem"))
        or (isinstance(node.func, ast.Attribute) and node.func.attr == "add"
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "problems"))]


def _made_by_problem(call: ast.Call) -> bool:
    return not (isinstance(call.func, ast.Name) and call.func.id == "Problem")


def codes_given_by_the_model() -> set[str]:
    codes = set()
    for name in PROBLEM_MAKERS:
        for call in problem_calls((PACKAGE / name).read_text(encoding="utf-8")):
            if _made_by_problem(call):
                code = call.args[2] if len(call.args) > 2 else None
                if isinstance(code, ast.Constant):
                    codes.add(code.value)
    return codes


@pytest.mark.parametrize("name", PROBLEM_MAKERS)
def test_every_place_that_makes_a_problem_names_a_rule_that_reports_it(name: str) -> None:
    for call in problem_calls((PACKAGE / name).read_text(encoding="utf-8")):
        where = f"{name}:{call.lineno}"
        if not _made_by_problem(call):
            assert len(call.args) >= 4 or any(k.arg == "code" for k in call.keywords), f"{where}: Problem without a code"
        else:
            code = call.args[2] if len(call.args) > 2 else None
            assert isinstance(code, ast.Constant), f"{where}: problem() without a literal code"
            assert code.value in lint.RULES, f"{where}: {code.value!r} names no rule"


BASE = {
    "type": "decision",
    "id": "D-0001",
    "status": "open",
    "topics": "[article-footer]",
    "summary": "Should footers carry the newsletter link?",
}

# (what is wrong, the frontmatter changes (None removes a property), the property at fault, its rule)
BAD_NOTES = [
    ("summary missing", {"summary": None}, "summary", "VT002"),
    ("withdrawn with no reason", {"status": "withdrawn"}, "reason", "VT002"),
    ("summary given as a list", {"summary": "[one, two]"}, "summary", "VT003"),
    ("asked_at not a date and time", {"asked_at": "next tuesday"}, "asked_at", "VT003"),
    ("due not a date", {"due": "soon"}, "due", "VT003"),
    ("topics not a list", {"topics": "article-footer"}, "topics", "VT003"),
    ("a topic that is not text", {"topics": "[article-footer, 7]"}, "topics", "VT003"),
    ("id not like D-0007", {"id": "X-1"}, "id", "VT003"),
    ("summary on two lines", {"summary": json.dumps("Should footers carry\nthe newsletter link?")}, "summary",
     "VT003"),
    ("topic not kebab-case", {"topics": "[Article Footer]"}, "topics", "VT004"),
    ("summary too short", {"summary": "Too short?"}, "summary", "VT005"),
    ("reason too short", {"status": "withdrawn", "reason": "meh"}, "reason", "VT005"),
    ("reask_reason too short", {"reask_reason": "meh"}, "reask_reason", "VT005"),
    ("unknown status", {"status": "accepted"}, "status", "VT006"),
    ("summary of a page", {"summary": "Should footers carry the newsletter link? " * 10}, "summary", "VT009"),
    ("too many topics", {"topics": "[" + ", ".join(f"topic-{n}" for n in range(21)) + "]"}, "topics", "VT009"),
]


def bad_note(root: Path, changes: dict[str, str | None]) -> str:
    properties = {**BASE, **changes}
    lines = ["---", *(f"{key}: {value}" for key, value in properties.items() if value is not None), "---",
             "## Question", "Footers?", ""]
    write(root / "Decisions" / "D-0001 Footers.md", "\n".join(lines))
    return "Decisions/D-0001 Footers.md"


@pytest.mark.parametrize("wrong,changes,field,code", BAD_NOTES, ids=[case[0] for case in BAD_NOTES])
def test_a_problem_read_from_a_real_note_carries_the_code_of_the_rule_that_reports_it(
        tmp_path: Path, wrong: str, changes: dict[str, str | None], field: str, code: str) -> None:
    root = make_vault(tmp_path / "vault")
    path = bad_note(root, changes)
    problems = Vault(root).load().problems[path]
    assert (field, code) in {(p.field, p.code) for p in problems}, problems
    assert all(p.code in lint.RULES for p in problems), problems
    report = lint.lint(lint.gather(Vault(root)))
    reported = {(d.code, d.path) for d in report.diagnostics}
    assert (code, path) in reported, report.diagnostics


def test_every_code_the_model_gives_has_a_real_note_that_shows_it() -> None:
    assert codes_given_by_the_model() == {code for *_, code in BAD_NOTES}


def test_missing_stamps_sealing_adds_do_not_block_but_other_missing_fields_do(tmp_path: Path) -> None:
    root = make_vault(tmp_path / "vault")
    path = bad_note(root, {"status": "ruled", "summary": "Footers carry the newsletter link."})
    problems = Vault(root).load().problems[path]
    assert {(p.field, p.code) for p in problems} == {("ruled_at", "VT002"), ("ruled_by", "VT002")}
    assert blocking_problems(problems) == []
    path = bad_note(root, {"status": "ruled", "summary": None})
    problems = Vault(root).load().problems[path]
    assert [(p.field, p.code) for p in blocking_problems(problems)] == [("summary", "VT002")]
