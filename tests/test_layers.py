"""The code's structure as docs/architecture.md lays it out: the layers contract holds (no module imports a
layer above its own, no import cycle), and the rule codes the config reader knows are the rules lint has."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from vault_tools.lint import RULES
from vault_tools.rule_codes import RULE_CODES

ROOT = Path(__file__).resolve().parents[1]


def test_the_layers_contract_holds() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_layers.py")], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 breach(es)" in done.stdout


def test_every_listed_rule_code_has_a_rule_and_every_rule_is_listed() -> None:
    assert tuple(RULES) == RULE_CODES
