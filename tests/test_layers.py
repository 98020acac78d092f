"""The code's structure as docs/architecture.md lays it out: the layers contract holds (no module imports a
layer above its own, no import cycle), and the rule codes the config reader knows are the rules lint has."""
from __future__ import annotations

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
