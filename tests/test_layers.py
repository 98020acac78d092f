"""The code's structure as docs/architecture.md lays it out: the layers contract holds (no module imports a
layer above its own, no import cycle), and the rule codes the config reader knows are the rules lint has."""
from __future__ import annotations

import re
import sys
from pathlib import Path

from tests.helpers import load_script
from vault_tools.lint import RULES
from vault_tools.rule_codes import RULE_CODES

ROOT = Path(__file__).resolve().parents[1]


def test_the_layers_contract_holds(monkeypatch, capsys) -> None:
    check = load_script(ROOT / "scripts" / "check_layers.py", "check_layers", monkeypatch)
    monkeypatch.setattr(sys, "argv", ["check_layers.py"])
    assert check.main() == 0, capsys.readouterr().out
    assert "0 breach(es)" in capsys.readouterr().out


def test_every_listed_rule_code_has_a_rule_and_every_rule_is_listed() -> None:
    assert tuple(RULES) == RULE_CODES


def test_each_command_is_listed_under_the_family_that_registers_it() -> None:
    """Running a command loads its family alone (`cli.COMMANDS`); a command missing there would run after
    loading every family, one listed under the wrong family would not be found."""
    import typer

    from vault_tools import cli

    registered = {str(info.name or typer.main.get_command_name(info.callback.__name__)):
                  info.callback.__module__.rsplit(".", 1)[-1] for info in cli.all_commands().registered_commands}
    assert registered == cli.COMMANDS


def _modules() -> list[str]:
    package = Path(__file__).resolve().parents[1] / "vault_tools"
    return sorted(path.relative_to(package).with_suffix("").as_posix()
                  for path in package.rglob("*.py") if "__pycache__" not in path.parts and path.name != "__init__.py")


def test_the_tests_readme_names_every_module_with_its_tests():
    """tests/README.md says which tests test each module: a module it does not name has no one to look at."""
    said = (Path(__file__).resolve().parent / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`([a-z_/]+)`", said))
    missing = [module for module in _modules() if module and module not in named]
    assert missing == [], f"tests/README.md names no tests for: {', '.join(missing)}"


FILE_SUFFIXES = {"jsonl", "json", "yaml", "md", "py", "base", "toml", "txt", "sqlite", "lock", "log"}


def test_every_module_and_function_docs_architecture_names_exists():
    """docs/architecture.md names modules (`ledger`) and functions (`matter.tier`): each one still exists."""
    import importlib

    text = (Path(__file__).resolve().parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    modules = {module.replace("/", ".") for module in _modules() if module}
    short = {name.rsplit(".", 1)[-1]: name for name in sorted(modules, key=len, reverse=True)}
    wrong = []
    for dotted in sorted(set(re.findall(r"`([a-z_]+(?:\.[a-z_]+)+)`", text))):
        head, _, attribute = dotted.rpartition(".")
        if attribute in FILE_SUFFIXES:
            continue  # a file's name (`ledger.jsonl`), not a function
        module = head if head in modules else short.get(head)
        if dotted in modules or module is None:
            continue  # a whole module, or not a name of this package (`os._exit`, `budget.bytes`)
        if not hasattr(importlib.import_module(f"vault_tools.{module}"), attribute):
            wrong.append(dotted)
    assert wrong == [], f"docs/architecture.md names what does not exist: {', '.join(wrong)}"


def test_this_repositorys_pre_commit_checks_the_layers_as_make_check_does():
    """A commit that breaks the layers contract is stopped before it is made, not only in CI."""
    root = Path(__file__).resolve().parents[1]
    config = (root / ".pre-commit-config.yaml").read_text(encoding="utf-8")
    makefile = (root / "Makefile").read_text(encoding="utf-8")
    assert "scripts/check_layers.py" in makefile and "entry: .venv/bin/python scripts/check_layers.py" in config
